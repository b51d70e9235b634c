"""A stopped (SIGSTOP) peer is a stalled worker, whichever timer fires first (issue 20).

``health.diagnose`` runs here on a real store (a HashStore) with a real stopped child process
as the peer, so both orders of the timers are reproduced exactly: gloo's recv timeout first
(the library's deadline not yet reached), and the library's deadline first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Iterator

import pytest
import torch.distributed as dist

from distribute.collectives import health
from distribute.collectives.failures import CollectiveTimeoutError, WorkerFailedError

TASKS = ("worker:0", "worker:1")
GLOO_RECV_TIMEOUT = ("[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 2000ms "
                     "for recv operation to complete")


def _record_of(pid: int) -> Dict[str, Any]:
    record = dict(health.process_identity(), pid=pid)
    with open(f"/proc/{pid}/stat") as f:
        record["start"] = f.read().rsplit(")", 1)[1].split()[19]
    return record


def _wait_state(pid: int, wanted: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while health.local_process_state(_record_of(pid)) != wanted:
        assert time.monotonic() < deadline, f"process {pid} never became {wanted}"
        time.sleep(0.01)


@pytest.fixture
def stopped_peer() -> Iterator[Dict[str, Any]]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = _record_of(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        _wait_state(child.pid, "stopped")
        yield record
    finally:
        child.kill()
        child.wait(timeout=10)


def _diagnose(peer: Dict[str, Any], error: str, timed_out: bool) -> Exception:
    board = health.Board(dist.HashStore(), TASKS, 0)
    status = health.LocalStatus()
    status.seq, status.op, status.inside = 2, "gradients: 2 tensors float32[1,3], float32[1]", True
    return health.diagnose(board, TASKS, 0, status, [health.process_identity() | {"pid": os.getpid()}, peer],
                           error, timed_out, 2.0)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error, timed_out", [
    (GLOO_RECV_TIMEOUT, False),  # gloo's recv timeout reported before the library's deadline
    (GLOO_RECV_TIMEOUT, True),  # the library's deadline first
    ("Operation timed out!", True),
    ("Connection reset by peer", False),  # whatever else gloo says: a stopped process is stalled
])
def test_a_stopped_peer_is_a_collective_timeout(stopped_peer: Dict[str, Any], error: str, timed_out: bool) -> None:
    exc = _diagnose(stopped_peer, error, timed_out)
    assert type(exc) is CollectiveTimeoutError, exc
    assert exc.task == "worker:1" and exc.stalled == ("worker:1",)
    assert "worker:1 stopped responding (its process is stopped)" in str(exc)
    assert "timed out after 2 s on worker:0" in str(exc)


@pytest.mark.timeout(60)
def test_an_exited_peer_is_still_a_failed_worker() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    record = _record_of(child.pid)
    child.wait(timeout=10)
    for error, timed_out in ((GLOO_RECV_TIMEOUT, False), ("Connection closed by peer", False)):
        exc = _diagnose(record, error, timed_out)
        assert type(exc) is WorkerFailedError, exc
        assert exc.task == "worker:1" and "worker:1 died (its process exited)" in str(exc)
