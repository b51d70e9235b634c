"""Helpers shared by the distributed-input tests."""

from __future__ import annotations

import itertools
import os
from typing import Any, List, Sequence

import torch

import distribute
from distribute.data import AutoShardPolicy, Dataset, Options, TextLineDataset
from distribute.distributed_input import InputOptions, RebatchedDistributedDataset
from tests.unit.data._helpers import plain

__all__ = ["in_lockstep", "mirrored", "on_worker", "plain_step", "steps", "text_files", "text_numbers", "with_policy"]


def mirrored(n: int) -> distribute.MirroredStrategy:
    """MirroredStrategy over ``n`` logical CPU replicas."""
    return distribute.MirroredStrategy([f"CPU:{i}" for i in range(n)])


def plain_step(element: Any) -> Any:
    """One step as nested Python values: a list per replica for PerReplica leaves."""
    if isinstance(element, distribute.PerReplica):
        return [plain(v) for v in element.values]
    if isinstance(element, (tuple, list)):
        return type(element)(plain_step(e) for e in element)
    if isinstance(element, dict):
        return {k: plain_step(v) for k, v in element.items()}
    return plain(element)


def steps(iterable: Any) -> List[Any]:
    """Every step of a distributed dataset or iterator, as Python values."""
    return [plain_step(step) for step in iterable]


def with_policy(dataset: Dataset, policy: AutoShardPolicy) -> Dataset:
    """``dataset`` with the auto-shard policy set."""
    options = Options()
    options.experimental_distribute.auto_shard_policy = policy
    return dataset.with_options(options)


def on_worker(dataset: Any, num_workers: int, index: int, local_replicas: int = 1,
              seed: int = 7) -> RebatchedDistributedDataset:
    """The distributed dataset worker ``index`` of ``num_workers`` would iterate (explicit layout)."""
    strategy = distribute.OneDeviceStrategy("CPU:0") if local_replicas == 1 else mirrored(local_replicas)
    return RebatchedDistributedDataset(strategy, dataset, InputOptions(), input_workers=(num_workers, index),
                                       seed=seed)


def text_files(directory: str, contents: Sequence[Sequence[int]]) -> List[str]:
    """Writes one text file of numbers (one per line) per entry of ``contents``."""
    paths = []
    for i, numbers in enumerate(contents):
        path = os.path.join(str(directory), f"part-{i}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{n}\n" for n in numbers))
        paths.append(path)
    return paths


def text_numbers(files: Any) -> Dataset:
    """The numbers of text files, one element per line (int64 scalars)."""
    return TextLineDataset(files).map(lambda line: torch.tensor(int(line)))


def in_lockstep(*dists: Any) -> None:
    """Makes the distributed datasets of several workers (one process) agree on the end of the
    data as the workers of a cluster do: every worker steps until none has data left."""
    most = max(len(steps(d)) for d in dists)
    for d in dists:
        calls = itertools.count(1)
        d._workers.any_worker_has_data = lambda has, calls=calls: next(calls) <= most
