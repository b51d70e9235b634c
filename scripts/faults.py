"""Fault injection: one failure of a small 2-worker job on localhost, and what the surviving task saw.

Usage::

    python scripts/faults.py SCENARIO       # e.g. raise-then-linger
    python scripts/faults.py all            # every scenario, one line each
    python scripts/faults.py --list

Each scenario launches a 2-worker ``MultiWorkerMirroredStrategy`` job with
``distribute.launch.launch`` (a ``Linear`` model trained with ``distribute.optim.SGD``: one
gradient all-reduce per step), injects its fault in one task and prints one line::

    <scenario>: <what the surviving task raised: type and the first 120 characters> | <seconds to detection>

The seconds run from the fault (the faulty task prints ``time.time()`` just before it) to the
moment the survivor's call raised; ``-`` where nothing should fail. The survivor then kills a
frozen peer and exits, so no scenario outlives its line.

To add one: a function returning :class:`Outcome` in :data:`SCENARIOS`; a fault injected in a
training job is a worker-side function in :data:`FAULTS` plus ``lambda: job("name", ...)``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

SRC = Path(__file__).resolve().parents[1] / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

STEPS = 8
FAULT_STEP = 3


@dataclass(frozen=True)
class Outcome:
    """What a scenario observed: the survivor's error (or ``'nothing raised ...'``) and the delay."""

    raised: str
    seconds: Optional[float]


# -- in the worker processes -----------------------------------------------------------------------
def _emit(kind: str, value: Any) -> None:
    print(f"FAULTS {kind} {json.dumps(value)}", flush=True)


def _mark_fault() -> None:
    _emit("fault_at", time.time())


def _raise_then_linger(rank: int, step: int, phase: str) -> None:
    if rank == 1 and step == FAULT_STEP and phase == "inside":
        _mark_fault()
        raise ValueError("boom")  # the program's ``finally:`` then takes 20 s (see _worker)


def _raise_uncaught(rank: int, step: int, phase: str) -> None:
    if rank == 1 and step == FAULT_STEP and phase == "inside":
        _mark_fault()
        raise ValueError("boom, to the top of the program")


def _raise_caught_everywhere(rank: int, step: int, phase: str) -> None:
    if step == FAULT_STEP and phase == "inside":
        raise ValueError("the same error on every worker, caught")


def _slow_peer(rank: int, step: int, phase: str) -> None:
    if rank == 0 and phase == "before":
        time.sleep(0.4)


def _stop_self(victim: int) -> Callable[[int, int, str], None]:
    def fault(rank: int, step: int, phase: str) -> None:
        if rank == victim and step == FAULT_STEP and phase == "before":
            _mark_fault()
            os.kill(os.getpid(), signal.SIGSTOP)
    return fault


def _kill_self(victim: int) -> Callable[[int, int, str], None]:
    def fault(rank: int, step: int, phase: str) -> None:
        if rank == victim and step == FAULT_STEP and phase == "before":
            _mark_fault()
            os.kill(os.getpid(), signal.SIGKILL)
    return fault


def _stall(rank: int, step: int, phase: str) -> None:
    if rank == 1 and step == FAULT_STEP and phase == "before":
        _mark_fault()
        time.sleep(30.0)  # alive (it beats) but never reaches the collective: the timeout decides


FAULTS: Dict[str, Callable[[int, int, str], None]] = {
    "raise_then_linger": _raise_then_linger, "raise_uncaught": _raise_uncaught,
    "raise_caught": _raise_caught_everywhere, "slow_peer": _slow_peer,
    "freeze_worker": _stop_self(1), "freeze_chief": _stop_self(0),
    "kill_worker": _kill_self(1), "kill_chief": _kill_self(0), "stall": _stall,
}
"""Worker-side faults: ``fault(rank, step, phase)`` runs before each step (``'before'``) and
inside the replica function (``'inside'``)."""


def _worker(name: str, steps: int, timeout: float) -> None:
    import torch

    import distribute

    torch.set_num_threads(1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the launcher stops the others when one dies: report first
    strategy = distribute.MultiWorkerMirroredStrategy(
        communication_options=distribute.experimental.CommunicationOptions(timeout_seconds=timeout))
    rank, fault = strategy.extended._rank, FAULTS[name]
    with strategy.scope():
        model = torch.nn.Linear(8, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=0.01)

    def step(x: torch.Tensor, i: int) -> torch.Tensor:
        fault(rank, i, "inside")
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    try:
        for i in range(steps):
            fault(rank, i, "before")
            _step(strategy, step, rank, torch.ones(4, 8), i)
    finally:
        if name == "raise_then_linger" and rank == 1:
            time.sleep(20.0)  # a slow cleanup (a flush, a debugger hook): the survivor must not wait for it
    _emit("done", steps)


def _step(strategy: Any, step: Callable, rank: int, x: Any, i: int) -> None:
    try:
        strategy.run(step, args=(x, i))
    except ValueError as exc:
        if "caught" not in str(exc):
            raise
    except Exception as exc:  # noqa: BLE001 - what the survivor saw is the scenario's result
        _emit("seen", {"at": time.time(), "type": type(exc).__name__, "message": str(exc)})
        for peer, record in enumerate(strategy.extended._communicator.group._records):
            if peer != rank:  # a frozen peer would outlive the job
                os.kill(int(record["pid"]), signal.SIGKILL)
        os._exit(1)


# -- in the parent ------------------------------------------------------------------------------------
def job(name: str, timeout: float = 60.0, steps: int = STEPS, limit: float = 120.0) -> Outcome:
    """Launches the 2-worker job with worker-side fault ``name`` and reads what the survivor saw."""
    from distribute.launch import launch

    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    result = launch([sys.executable, str(Path(__file__).resolve()), "--worker", name, str(steps), str(timeout)],
                    workers=2, timeout=limit, grace_period=10.0, env={"PYTHONPATH": path},
                    forward_signals=False)
    found: Dict[str, Any] = {}
    for line in result.output.splitlines():
        if "FAULTS " in line:
            kind, value = line.split("FAULTS ", 1)[1].split(" ", 1)
            found.setdefault(kind, json.loads(value))
    seen = found.get("seen")
    if seen is None:
        status = "timed out" if result.timed_out else f"exit status {result.returncode}"
        done = "every task finished" if "done" in found else "no task finished"
        return Outcome(f"nothing raised ({done}, {steps} steps, {status})", None)
    fault_at = found.get("fault_at")
    seconds = seen["at"] - fault_at if fault_at is not None else None
    return Outcome(f"{seen['type']}: {seen['message'][:120]}", seconds)


SCENARIOS: Dict[str, Callable[[], Outcome]] = {
    "raise-then-linger": lambda: job("raise_then_linger", timeout=120.0),
    "raise-then-linger-5s": lambda: job("raise_then_linger", timeout=5.0),
    "raise-uncaught": lambda: job("raise_uncaught", timeout=120.0),
    "raise-caught": lambda: job("raise_caught", timeout=120.0),
    "slow-peer": lambda: job("slow_peer", timeout=120.0, steps=30),
    "frozen-worker": lambda: job("freeze_worker", timeout=60.0),
    "frozen-chief": lambda: job("freeze_chief", timeout=60.0),
    "kill-worker": lambda: job("kill_worker", timeout=60.0),
    "kill-chief": lambda: job("kill_chief", timeout=60.0),
    "stalled-worker": lambda: job("stall", timeout=5.0),
}
"""Every scenario, by the name given on the command line."""


def _job_secret() -> str:
    from distribute.cluster_resolver.job_secret import make_secret

    return os.environ.get("DISTRIBUTE_JOB_SECRET") or make_secret()


def _hand_made(run: Callable[[], Tuple[str, Optional[float]]]) -> Callable[[], Outcome]:
    return lambda: Outcome(*run())


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rendezvous_faults import scenarios as _rendezvous_scenarios, task_main  # noqa: E402

SCENARIOS.update({name: _hand_made(run) for name, run in _rendezvous_scenarios(_job_secret).items()})


def main(argv: list) -> int:
    if len(argv) == 3 and argv[0] == "--task":
        task_main(float(argv[1]), float(argv[2]))
        return 0
    if len(argv) >= 4 and argv[0] == "--worker":
        _worker(argv[1], int(argv[2]), float(argv[3]))
        return 0
    if len(argv) != 1 or argv[0] not in (*SCENARIOS, "all", "--list"):
        print(f"usage: python scripts/faults.py SCENARIO|all|--list  (scenarios: {', '.join(SCENARIOS)})",
              file=sys.stderr)
        return 2
    if argv[0] == "--list":
        print("\n".join(SCENARIOS))
        return 0
    for name in SCENARIOS if argv[0] == "all" else [argv[0]]:
        outcome = SCENARIOS[name]()
        seconds = "-" if outcome.seconds is None else f"{outcome.seconds:.2f} s"
        print(f"{name}: {outcome.raised} | {seconds}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
