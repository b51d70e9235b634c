"""Timing shared by the children: per (pipeline, mode), a warm-up pass, then timed passes
round-robin; prints one JSON line {pipeline: {mode: elements/s}} (medians over passes)."""

import argparse
import json
import statistics
import time

from _spec import MODES, SIZES


def _consume(iterable):
    steps = 0
    for _ in iterable:
        steps += 1
    return steps


def time_cases(make, pipelines, passes, scale):
    """``make(pipeline, mode, n)`` returns a callable that iterates once and returns the step count."""
    runs = {(p, m): make(p, m, max(SIZES[p] // scale, 4096)) for p in pipelines for m in MODES}
    rates = {key: [] for key in runs}
    for run in runs.values():
        run()
    for _ in range(passes):
        for (p, m), run in runs.items():
            start = time.perf_counter()
            run()
            rates[(p, m)].append(max(SIZES[p] // scale, 4096) / (time.perf_counter() - start))
    out = {}
    for (p, m), values in rates.items():
        out.setdefault(p, {})[m] = statistics.median(values)
    return out


def maker(strategy, pipeline):
    """``make(name, mode, n)`` for a framework: its ``strategy`` and ``pipeline(name, n, batch)``."""
    from _spec import BATCH, REPLICAS

    def make(name, mode, n):
        if mode == "plain":
            dataset = pipeline(name, n, BATCH)
        elif mode == "distributed":
            dataset = strategy.experimental_distribute_dataset(pipeline(name, n, BATCH))
        else:
            dataset = strategy.distribute_datasets_from_function(lambda ctx: pipeline(name, n, BATCH // REPLICAS))
        return lambda: _consume(dataset)
    return make


def main(make, consume_hint=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipelines", default=",".join(SIZES))
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--scale", type=int, default=1, help="divide every size by this (smoke runs)")
    args = parser.parse_args()
    pipelines = [p for p in args.pipelines.split(",") if p]
    print(json.dumps(time_cases(make, pipelines, args.passes, args.scale)))

