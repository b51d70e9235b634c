"""Worker script: one failure injected into a 2-worker MultiWorkerMirroredStrategy job.

Usage: ``mw_failures.py MODE [DIR]`` with MODE one of
``die`` (worker:1 exits abruptly between steps), ``stall`` (worker:1 sleeps until the survivor
has reported its error, a file in DIR, so far past the collective timeout whatever the load), ``raise`` (worker:1 raises while a non-daemon thread keeps its process alive),
``chief_raise`` (worker:0, which hosts the rendezvous, raises), ``chief_die`` (worker:0 exits abruptly,
taking the rendezvous store with it), ``mismatch`` (shape, dtype, order
and gradient-set mismatches, each an error on both workers, then normal work again),
``extra_step`` (worker:1 runs one more step than worker:0), ``freeze`` (worker:1 stops itself with
SIGSTOP; the survivor reports, then kills it).

The surviving worker ignores SIGTERM, so that the launcher (which stops every task when one
fails) lets it print what it observed: ``RESULT error {...}`` with the error's type, task,
message and how long the failing call took.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import torch
from _common import emit

import distribute
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy


REPORTED = "reported"
"""The file (in DIR) the survivor writes once it has reported its error."""


def report(exc: BaseException, started: float) -> None:
    emit("error", {"type": type(exc).__name__, "task": getattr(exc, "task", None), "message": str(exc),
                   "elapsed": time.monotonic() - started,
                   "bases": [c.__name__ for c in type(exc).__mro__]})
    if len(sys.argv) > 2:
        with open(os.path.join(sys.argv[2], REPORTED), "w") as f:
            f.write("done")


def wait_for_the_report(limit: float = 60.0) -> None:
    """Sleeps until the survivor reported (or ``limit`` seconds): a stall of any length."""
    deadline = time.monotonic() + limit
    path = os.path.join(sys.argv[2], REPORTED)
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


def make_model(strategy: MultiWorkerMirroredStrategy) -> tuple:
    with strategy.scope():
        model = torch.nn.Linear(3, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=0.01)

    def step(x: torch.Tensor) -> torch.Tensor:
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return model, step


def train(strategy: MultiWorkerMirroredStrategy, step: object, steps: int, fail_at: int, fail: object) -> None:
    for i in range(steps):
        if i == fail_at:
            fail()
        started = time.monotonic()
        try:
            strategy.reduce("sum", strategy.run(step, args=(torch.ones(2, 3),)), axis=None)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            report(exc, started)
            return
    emit("finished", steps)


def expect_error(name: str, strategy: MultiWorkerMirroredStrategy, fn: object) -> None:
    started = time.monotonic()
    try:
        strategy.run(fn)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        emit(name, {"type": type(exc).__name__, "message": str(exc), "elapsed": time.monotonic() - started,
                    "calls": getattr(exc, "calls", None)})
        return
    emit(name, {"type": None})


def mismatches(strategy: MultiWorkerMirroredStrategy, rank: int) -> None:
    ctx = distribute.get_replica_context
    expect_error("shape", strategy, lambda: ctx().all_reduce("sum", torch.ones(1000 if rank == 0 else 999)))
    expect_error("dtype", strategy, lambda: ctx().all_reduce(
        "sum", torch.ones(4, dtype=torch.float32 if rank == 0 else torch.float64)))
    expect_error("order", strategy, lambda: (ctx().all_reduce("sum", torch.ones(2)), ctx().all_gather(torch.ones(2), 0))
                 if rank == 0 else (ctx().all_gather(torch.ones(2), 0), ctx().all_reduce("sum", torch.ones(2))))
    model, step = make_model(strategy)
    extra = torch.nn.Parameter(torch.ones(2))

    def uneven_grads() -> None:
        params = list(model.parameters()) + ([extra] if rank == 1 else [])
        loss = model(torch.ones(1, 3)).sum() + extra.sum()
        loss.backward()
        ctx().merge_call(lambda s: s.extended._reduce_gradients(params))

    expect_error("gradients", strategy, uneven_grads)
    value = strategy.reduce("sum", strategy.run(lambda: torch.tensor(float(rank + 1))), axis=None)
    emit("after", float(value))


def main() -> None:
    mode = sys.argv[1]
    timeout = 2.0 if mode in ("stall", "freeze") else 20.0
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=timeout))
    rank = strategy.extended._rank
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the survivor report; the launcher SIGKILLs later
    if mode == "mismatch":
        mismatches(strategy, rank)
        return
    model, step = make_model(strategy)
    failing = 0 if mode in ("chief_raise", "chief_die") else 1

    def nothing() -> None:
        return None

    def fail() -> None:
        if mode in ("die", "chief_die"):
            os._exit(3)
        if mode == "stall":
            wait_for_the_report()
        if mode == "freeze":
            os.kill(os.getpid(), signal.SIGSTOP)
        if mode in ("raise", "chief_raise"):
            threading.Thread(target=time.sleep, args=(3,), name="lingering").start()
            raise ValueError(f"boom from worker {rank}")

    steps = 4 if mode == "extra_step" and rank == 1 else 3
    train(strategy, step, steps, 2 if rank == failing else -1, fail if rank == failing else nothing)
    if mode == "freeze" and rank != failing:
        os.kill(strategy.extended._communicator.group._records[failing]["pid"], signal.SIGKILL)


if __name__ == "__main__":
    main()
