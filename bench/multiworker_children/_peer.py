"""What both implementations share: the task from TF_CONFIG, the MLP, the data, timing and output."""

from __future__ import annotations

import json
import statistics
import time
from typing import Callable, Dict, List, Tuple

import torch

from distribute.cluster_resolver import TFConfigClusterResolver, id_in_cluster, worker_count

torch.set_num_threads(1)

GLOBAL_BATCH = 256
SIZES_BYTES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def task() -> Tuple[int, int, str]:
    """(rank, world size, rank 0's address) of this process, from TF_CONFIG."""
    resolver = TFConfigClusterResolver()
    spec = resolver.cluster_spec()
    rank = id_in_cluster(spec, resolver.task_type, resolver.task_id)
    return rank, worker_count(spec, resolver.task_type), spec.task_address("worker", 0)


def mlp() -> torch.nn.Module:
    """The benchmark model: MLP 784-512-512-10 (669,706 parameters)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10))


def local_batch(rank: int, world: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """This worker's share of a synthetic global batch, resident in memory."""
    gen = torch.Generator().manual_seed(1 + rank)
    local = GLOBAL_BATCH // world
    return torch.randn(local, 784, generator=gen), torch.randint(0, 10, (local,), generator=gen)


def examples_per_second(step: Callable[[], None], sync: Callable[[], None], steps: int, repeats: int) -> float:
    """Global examples/s of ``step`` (best of ``repeats`` timed runs of ``steps`` steps)."""
    for _ in range(max(3, steps // 5)):
        step()
    rates = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        rates.append(steps * GLOBAL_BATCH / (time.perf_counter() - start))
    return max(rates)


def seconds_per_call(call: Callable[[], None], reps: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean time of ``reps`` back-to-back calls."""
    call()
    times: List[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(reps):
            call()
        times.append((time.perf_counter() - start) / reps)
    return statistics.median(times)


def paired(calls: Dict[str, Callable[[], None]], baseline: str, reps: int, repeats: int,
           warm: int = 2) -> Dict[str, List[Tuple[float, float]]]:
    """Seconds per call of each of ``calls`` beside ``baseline``, in back-to-back pairs of turns.

    Every repeat times each variant once right next to a turn of the baseline (which goes first
    alternates), so each pair shares the machine's load of that moment; the ratio of a pair is the
    variant's cost relative to the baseline with the load taken out. Each turn starts with
    ``warm`` untimed calls, so that every variant is timed in its steady state (for our layer:
    after the switch from another collective has been learned).

    Returns:
        ``{variant: [(variant seconds per call, baseline seconds per call), ...]}``.
    """
    pairs: Dict[str, List[Tuple[float, float]]] = {name: [] for name in calls if name != baseline}
    for r in range(repeats):
        for name in pairs:
            order = (baseline, name) if r % 2 == 0 else (name, baseline)
            timed = {label: _turn(calls[label], reps, warm) for label in order}
            pairs[name].append((timed[name], timed[baseline]))
    return pairs


def _turn(call: Callable[[], None], reps: int, warm: int) -> float:
    for _ in range(warm):
        call()
    start = time.perf_counter()
    for _ in range(reps):
        call()
    return (time.perf_counter() - start) / reps


def reps_for(nbytes: int, smoke: bool) -> int:
    """Back-to-back calls per turn at this size (about 8 MB moved, 3..40 calls): short turns, so
    that a run has many pairs and a burst of foreign load spoils few of them."""
    reps = max(3, min(40, (8 << 20) // nbytes))
    return max(2, reps // 10) if smoke else reps


def emit(rank: int, result: Dict[str, object]) -> None:
    """Rank 0 prints the result as the last line of its output."""
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)
