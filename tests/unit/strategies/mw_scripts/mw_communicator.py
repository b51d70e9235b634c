"""Worker script: the ProcessGroupCommunicator a MultiWorkerMirroredStrategy holds, on a real cluster.

Run by the launcher in every task; prints RESULT lines that test_communicator_mp.py checks.
"""

from __future__ import annotations

import torch
from _common import as_list, emit

import distribute
from distribute import ReduceOp
from distribute.collectives.communicator import ProcessGroupCommunicator


def collectives(comm: ProcessGroupCommunicator) -> None:
    rank = comm.rank
    value = torch.tensor([float(rank + 1), 10.0])
    counts = torch.tensor([rank + 1])
    inplace = torch.tensor([float(rank + 1)])
    comm.all_reduce([inplace], ReduceOp.MEAN, note="in place mean", inplace=True)
    try:
        comm.all_reduce([counts.clone()], ReduceOp.MEAN, note="int mean", inplace=True)
        int_mean_error = None
    except TypeError as exc:
        int_mean_error = str(exc)
    (gathered,) = comm.all_gather([torch.full((rank + 1, 2), float(rank))], 0, note="uneven")
    source = torch.tensor([float(rank)])
    comm.broadcast([source], 1, note="from worker 1")
    emit("collectives", {
        "kind": type(comm).__name__, "workers": comm.num_workers, "rank": rank,
        "sum": as_list(comm.all_reduce([value], note="sum")[0]),
        "mean": as_list(comm.all_reduce([value], ReduceOp.MEAN, note="mean")[0]),
        "int_mean": as_list(comm.all_reduce([counts], ReduceOp.MEAN, note="int mean")[0]),
        "inplace_mean": as_list(inplace), "int_mean_error": int_mean_error,
        "gathered": as_list(gathered.tensor), "offset": gathered.offset, "broadcast": as_list(source),
        "any_rank1": comm.any_true(rank == 1, note="rank 1"), "any_none": comm.any_true(False, note="none")})


def gather_gradient(strategy: distribute.MultiWorkerMirroredStrategy) -> None:
    rank = strategy.extended._communicator.rank
    x = torch.ones(rank + 1, requires_grad=True)  # worker 0 has 1 row, worker 1 has 2

    def step() -> torch.Tensor:
        gathered = distribute.get_replica_context().all_gather(x * 1.0, 0)
        (gathered * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
        return gathered
    gathered = strategy.run(step)
    emit("gather_gradient", {"gathered": as_list(gathered), "grad": as_list(x.grad)})


def main() -> None:
    strategy = distribute.MultiWorkerMirroredStrategy()
    collectives(strategy.extended._communicator)
    gather_gradient(strategy)
    emit("done", True)


if __name__ == "__main__":
    main()
