"""Timing loop shared by the children: a warm-up pass, then timed passes; JSON on stdout."""

import argparse
import json
import time


def time_pipelines(builders, names, passes):
    """Elements/s of each pipeline: one warm-up pass, then ``passes`` timed passes, round-robin."""
    results = {name: [] for name in names}
    for name in names:
        _run(builders[name])
    for _ in range(passes):
        for name in names:
            start = time.perf_counter()
            count = _run(builders[name])
            results[name].append(count / (time.perf_counter() - start))
    return {name: max(rates) for name, rates in results.items()}


def _run(build):
    count = 0
    for batch in build():
        first = batch[0] if isinstance(batch, (tuple, list)) else batch
        count += len(first)
    return count


def main(builders, default_names):
    """Parses ``--pipelines`` and ``--passes``, times them, prints one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipelines", default=",".join(default_names))
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--data-dir", default="")
    args = parser.parse_args()
    names = [n for n in args.pipelines.split(",") if n]
    print(json.dumps(time_pipelines(builders(args.data_dir), names, args.passes)))
