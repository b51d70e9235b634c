"""The training workload shared by every child: MLP 784-512-512-10, global batch 256, SGD."""

import argparse
import json
import time

import numpy as np

BATCH = 256
STEPS = 60
WARMUP = 5
NUM_BATCHES = 8


def make_arrays():
    """Synthetic, memory-resident data: ``NUM_BATCHES`` global batches of (x float32, y int64)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_BATCHES, BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, size=(NUM_BATCHES, BATCH)).astype(np.int64)
    return x, y


def make_batches():
    """The batches as torch tensors (imported lazily so the TensorFlow child never loads torch)."""
    import torch

    x, y = make_arrays()
    return [(torch.from_numpy(x[i]), torch.from_numpy(y[i])) for i in range(NUM_BATCHES)]


def time_us(fn, seconds, warmup, inner):
    """Microseconds per call of ``fn``: ``warmup`` calls, then batches of ``inner`` for ``seconds``."""
    for _ in range(warmup):
        fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(inner):
            fn()
        calls += inner
    return (time.perf_counter() - start) / calls * 1e6


def medians(runners, cases, repeats):
    """Runs ``runners[case]()`` for every case, round-robin ``repeats`` times; the median of each."""
    samples = {name: [] for name in cases}
    for _ in range(repeats):
        for name in cases:
            samples[name].append(runners[name]())
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()}


def main(run_overhead, training):
    """A child's entry point: prints {"run_us": ..., "train_eps": ...} as one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps({"run_us": run_overhead(args.seconds, args.repeats), "train_eps": training(args.repeats)}))
