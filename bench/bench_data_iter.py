"""Single-thread iteration speed of distribute.data: per-element and map+batch pipelines.

Run from the repository root::

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/bench_data_iter.py

Prints the best of 7 runs (seconds) for each pipeline; used to check that making the
iterator thread-safe did not cost single-thread speed.
"""

from __future__ import annotations

import time
from typing import Callable, Dict

import torch

from distribute.data import Dataset


def _drain(make: Callable[[], Dataset]) -> float:
    start = time.perf_counter()
    for _ in make():
        pass
    return time.perf_counter() - start


def _f(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


PIPELINES: Dict[str, Callable[[], Dataset]] = {
    "range(10**6)": lambda: Dataset.range(10**6),
    "range(200000).map(f).batch(32)": lambda: Dataset.range(200000).map(_f).batch(32),
    "range(20000).map(f) per element": lambda: Dataset.range(20000).map(_f),
    "slices(100000).shuffle(1000) per el.": lambda: Dataset.from_tensor_slices(
        torch.arange(100000)).shuffle(1000, seed=0),
}


def main() -> None:
    torch.set_num_threads(1)
    for name, make in PIPELINES.items():
        best = min(_drain(make) for _ in range(7))
        print(f"{name:36s} best of 7: {best:.4f} s")


if __name__ == "__main__":
    main()
