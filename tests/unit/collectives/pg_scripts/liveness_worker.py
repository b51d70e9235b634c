"""Worker script: liveness apart from progress (issue 15), on a 2-worker MultiWorkerMirroredStrategy.

Usage: ``liveness_worker.py MODE [TIMEOUT]`` (TIMEOUT: ``timeout_seconds``, default: none set) with MODE

* ``slow``: 70 steps of ``ReplicaContext.all_reduce``; worker:0 does 400 ms of extra work
  (a sleep) before each;
* ``slower``: 4 steps; worker:0 is ``HEARTBEAT_DEADLINE + 1`` s slower in steps 1 and 2;
* ``freeze_worker`` / ``freeze_chief``: worker:1 (or worker:0, the chief, which hosts the
  store) stops itself with SIGSTOP at step 2; the other prints what it raised, then kills it.

Every task prints ``RESULT done <steps>`` or ``RESULT error {...}`` (type, task, message,
``time.time()``); a freezing task prints ``RESULT frozen_at <time.time()>`` first, and the
survivor prints how long leaving the group took (``RESULT left_in``) before it kills the frozen task.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from _script import emit

import distribute
from distribute.collectives import liveness
from distribute.collectives.connect import shutdown_all
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy

STEPS = {"slow": 70, "slower": 4, "freeze_worker": 5, "freeze_chief": 5}


def main() -> None:
    import torch

    mode = sys.argv[1]
    options = CommunicationOptions(timeout_seconds=float(sys.argv[2])) if len(sys.argv) > 2 else None
    strategy = MultiWorkerMirroredStrategy(communication_options=options)
    rank = strategy.extended._rank
    freezer = {"freeze_worker": 1, "freeze_chief": 0}.get(mode, -1)

    def step() -> torch.Tensor:
        return distribute.get_replica_context().all_reduce("sum", torch.ones(4))

    for i in range(STEPS[mode]):
        if rank == 0 and mode == "slow":
            time.sleep(0.4)
        if rank == 0 and mode == "slower" and i in (1, 2):
            time.sleep(liveness.HEARTBEAT_DEADLINE + 1.0)
        if rank == freezer and i == 2:
            emit("frozen_at", time.time())
            os.kill(os.getpid(), signal.SIGSTOP)
        try:
            total = strategy.run(step)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            emit("error", {"type": type(exc).__name__, "task": getattr(exc, "task", None), "message": str(exc),
                           "at": time.time()})
            if freezer >= 0:
                pid = strategy.extended._communicator.group._records[freezer]["pid"]
                started = time.monotonic()
                shutdown_all()  # what exit does: leaving must not wait for the stopped peer
                emit("left_in", time.monotonic() - started)
                os.kill(pid, signal.SIGKILL)
            return
        assert float(total[0]) == 2.0, total
    emit("done", STEPS[mode])


if __name__ == "__main__":
    main()
