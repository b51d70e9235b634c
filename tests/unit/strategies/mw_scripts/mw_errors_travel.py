"""Worker script: an exception in a replica function, reported to the peers when it is raised.

Usage: ``mw_errors_travel.py MODE DIR [TIMEOUT]`` with MODE one of

* ``linger``: worker:1 raises ``ValueError("boom")`` in its third step and then spends up to
  20 s in a ``finally:`` (until worker:0 has written ``DIR/reported``); worker:0 prints what it
  raised (``RESULT error``) and when (``time.time()``); worker:1 prints when it raised;
* ``caught_symmetric``: both workers raise the same error in ``run`` three times, catch it
  (``pytest.raises`` style) and go on; worker:1 spends 3 s after each catch before its next
  step, so worker:0 waits in a collective while worker:1's report is still in the store;
* ``caught_one``: only worker:1 raises and catches, while worker:0 is busy elsewhere; then
  both train on.

The caught modes print ``RESULT sums [...]`` (a sum per step, the same on both workers when
the job kept working) and ``RESULT error null``.
"""

from __future__ import annotations

import os
import sys
import time

import torch
from _common import emit

import distribute
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy

REPORTED = "reported"


def make_step(strategy: MultiWorkerMirroredStrategy, rank: int, raise_at: int) -> object:
    with strategy.scope():
        model = torch.nn.Linear(3, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=0.01)
    calls = [0]

    def step(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == raise_at:
            emit("raised_at", time.time())
            raise ValueError("boom")
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def total(strategy: MultiWorkerMirroredStrategy, step: object) -> float:
    return float(strategy.reduce("sum", strategy.run(step, args=(torch.ones(2, 3),)), axis=None))


def linger(strategy: MultiWorkerMirroredStrategy, rank: int, folder: str) -> None:
    step = make_step(strategy, rank, 3 if rank == 1 else -1)
    try:
        for _ in range(5):
            total(strategy, step)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - what worker:0 saw, reported to the test
        emit("error", {"type": type(exc).__name__, "task": getattr(exc, "task", None),
                       "cause": getattr(exc, "cause", None), "message": str(exc), "at": time.time()})
        with open(os.path.join(folder, REPORTED), "w") as f:
            f.write("done")
        return
    finally:
        if rank == 1:  # cleanup that takes its time: 20 s, or until worker:0 has seen the error
            deadline = time.monotonic() + 20.0
            while not os.path.exists(os.path.join(folder, REPORTED)) and time.monotonic() < deadline:
                time.sleep(0.05)
    emit("error", None)


def bad() -> None:
    raise ValueError("the same error on every worker")


def caught(strategy: MultiWorkerMirroredStrategy, rank: int, symmetric: bool) -> None:
    step = make_step(strategy, rank, -1)
    sums = [total(strategy, step)]
    try:
        for _ in range(3):
            if rank == 0 and not symmetric:
                time.sleep(1.0)  # busy elsewhere, in no collective
            if rank == 1 or symmetric:
                try:
                    strategy.run(bad)
                except ValueError:
                    pass
                if rank == 1:
                    time.sleep(3.0)  # after the catch: worker:0 already waits in the next collective
            sums.append(total(strategy, step))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        emit("error", {"type": type(exc).__name__, "message": str(exc)})
        return
    emit("sums", sums)
    emit("error", None)


def main() -> None:
    mode, folder = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=timeout))
    rank = strategy.extended._rank
    if mode == "linger":
        linger(strategy, rank, folder)
    else:
        caught(strategy, rank, mode == "caught_symmetric")


if __name__ == "__main__":
    main()
