"""Child (one per worker): the PyTorch DistributedDataParallel peer, and raw gloo all-reduce.

``ddp.py train STEPS REPEATS`` prints global examples/s of the MLP under DDP (gloo, 128 per
rank); ``ddp.py allreduce SMOKE`` prints seconds per ``torch.distributed.all_reduce`` per size.
"""

from __future__ import annotations

import datetime
import os
import sys

import torch
import torch.distributed as dist
from _peer import SIZES_BYTES, emit, examples_per_second, local_batch, mlp, reps_for, seconds_per_call, task


def main() -> None:
    rank, world, address = task()
    dist.init_process_group("gloo", init_method=f"tcp://{address}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        if sys.argv[1] == "train":
            train(rank, world, int(sys.argv[2]), int(sys.argv[3]))
        else:
            allreduce(rank, sys.argv[2] == "smoke")
        dist.barrier()  # both ranks done before the group goes
    finally:
        dist.destroy_process_group()
    # torch's gloo teardown at interpreter exit sometimes aborts ("terminate called without an
    # active exception") after DDP; the work is done and reported, so leave without it.
    sys.stdout.flush()
    os._exit(0)


def train(rank: int, world: int, steps: int, repeats: int) -> None:
    model = torch.nn.parallel.DistributedDataParallel(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = local_batch(rank, world)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    emit(rank, {"examples_per_second": examples_per_second(step, dist.barrier, steps, repeats)})


def allreduce(rank: int, smoke: bool) -> None:
    out = {}
    sizes = SIZES_BYTES[:3] if smoke else SIZES_BYTES
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        out[str(nbytes)] = {"raw": seconds_per_call(lambda x=x: dist.all_reduce(x), reps_for(nbytes, smoke),
                                                    2 if smoke else 5)}
    emit(rank, {"allreduce": out})


if __name__ == "__main__":
    main()
