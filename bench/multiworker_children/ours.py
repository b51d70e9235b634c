"""Child (one per worker): MultiWorkerMirroredStrategy training and all-reduce timings.

``ours.py train STEPS REPEATS`` prints global examples/s of the MLP; ``ours.py allreduce
SMOKE`` prints, per size, seconds per all-reduce through the collective layer
(``ProcessGroup.all_reduce``, in place like raw gloo and into a new tensor) and through the
strategy (``ReplicaContext.all_reduce`` in ``strategy.run``), each timed in turns paired with
turns of raw gloo in the same processes on the same group, and every pair's ratio.
"""

from __future__ import annotations

import statistics
import sys

import torch
from _peer import SIZES_BYTES, emit, examples_per_second, local_batch, mlp, paired, reps_for, task

import distribute
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy


def train(strategy: MultiWorkerMirroredStrategy, rank: int, world: int, steps: int, repeats: int) -> None:
    with strategy.scope():
        model = mlp()
        opt = distribute.optim.SGD(model.parameters(), lr=0.01)
    x, y = local_batch(rank, world)

    def replica_step(x: torch.Tensor, y: torch.Tensor) -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") / 256
        opt.zero_grad()
        loss.backward()
        opt.step()

    def sync() -> None:
        strategy.reduce("sum", strategy.run(lambda: torch.tensor(1.0)), axis=None)

    rate = examples_per_second(lambda: strategy.run(replica_step, args=(x, y)), sync, steps, repeats)
    emit(rank, {"examples_per_second": rate})


def allreduce(strategy: MultiWorkerMirroredStrategy, rank: int, smoke: bool) -> None:
    """Raw gloo, our layer (in place and not) and the strategy path in paired turns, on the same group."""
    group = strategy.extended._communicator.group
    raw = group.connection.gloo
    out = {}
    sizes = SIZES_BYTES[:3] if smoke else SIZES_BYTES
    repeats = 3 if smoke else 15
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        inout = torch.ones(nbytes // 4)  # raw gloo sums in place: a buffer of its own
        mine = torch.ones(nbytes // 4)  # and so does our layer's in-place variant

        def ctx_call(x: torch.Tensor = x) -> None:
            strategy.run(lambda: distribute.get_replica_context().all_reduce("sum", x))

        calls = {"raw": lambda t=inout: raw.allreduce([t]).wait(),
                 "inplace": lambda t=mine: group.all_reduce([t], note="bench in place", inplace=True),
                 "layer": lambda x=x: group.all_reduce([x], note="bench"),
                 "strategy": ctx_call}
        pairs = paired(calls, "raw", reps_for(nbytes, smoke), repeats)
        result = {"raw": statistics.median([base for one in pairs.values() for _, base in one])}
        for name, one in pairs.items():  # a pair's ratio: the load of that moment is shared
            result[name] = statistics.median([mine for mine, _ in one])
            result[f"{name}_ratios"] = [mine / base for mine, base in one]
        out[str(nbytes)] = result
    emit(rank, {"allreduce": out})


def main() -> None:
    rank, world, _ = task()
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=120))
    if sys.argv[1] == "train":
        train(strategy, rank, world, int(sys.argv[2]), int(sys.argv[3]))
    else:
        allreduce(strategy, rank, sys.argv[2] == "smoke")


if __name__ == "__main__":
    main()
