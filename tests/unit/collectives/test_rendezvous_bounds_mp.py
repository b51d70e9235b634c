"""Issue 15, point 4: every rendezvous wait is bounded, and tasks that disagree both say how.

A listener on the chief's port that accepts and never answers, one that answers garbage, and
a chief frozen by SIGSTOP before worker:1 arrives each give worker:1 a
``RendezvousTimeoutError`` naming the task and the address within ``timeout_seconds`` + 3 s.
Two tasks given different clusters both raise ``ClusterConfigError`` showing the differing
entries side by side.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from distribute.cluster_resolver import ClusterSpec
from distribute.collectives.authstore import StoreTimeoutError, connect_store
from distribute.collectives.connect import connect
from distribute.collectives.failures import RendezvousTimeoutError
from ._secret_job import ROOT, Task, cluster, fake_listener, free_ports

pytestmark = pytest.mark.multiprocess
SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "bounds_worker.py"
TIMEOUT = 3.0
SLACK = 3.0


@pytest.fixture
def tasks() -> Iterator[List[Task]]:
    started: List[Task] = []
    yield started
    for task in started:
        if task.proc.poll() is None:
            os.kill(task.proc.pid, signal.SIGCONT)
        task.kill()


def _outcome(task: Task) -> Dict[str, object]:
    assert task.finish(30) == 0, task.output
    line = next(line for line in task.output.splitlines() if line.startswith("RESULT outcome "))
    return json.loads(line.split(" ", 2)[2])


@pytest.mark.parametrize("answer", [b"", b"\x00\xff junk " * 64], ids=["mute-listener", "garbage-server"])
def test_a_chief_port_that_does_not_speak_the_protocol_times_out(answer: bytes) -> None:
    fake = fake_listener(answer)
    address = f"127.0.0.1:{fake.getsockname()[1]}"
    spec = ClusterSpec({"worker": [address, f"127.0.0.1:{free_ports(1)[0]}"]})
    started = time.monotonic()
    try:
        with pytest.raises(RendezvousTimeoutError) as info:
            connect(spec, "worker", 1, rendezvous_timeout=TIMEOUT)
    finally:
        fake.shutdown(socket.SHUT_RDWR)
        fake.close()
    elapsed = time.monotonic() - started
    assert elapsed <= TIMEOUT + SLACK, elapsed
    message = str(info.value)
    assert message.startswith(f"worker:1 reached {address} but the rendezvous store of worker:0 did not answer")
    assert info.value.task == "worker:1" and info.value.address == address
    assert ("did not greet" if not answer else "is not a distribute task") in message


def _listening(task: Task, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while port not in task.listening_ports():
        assert time.monotonic() < deadline and task.proc.poll() is None, task.output
        time.sleep(0.05)


def test_a_frozen_chief_times_out(tasks: List[Task], tmp_path: Path) -> None:
    spec, go = cluster(), tmp_path / "go"
    tasks.append(Task(spec, 0, {}, ["20"], script=SCRIPT))
    tasks.append(Task(spec, 1, {}, [str(TIMEOUT), str(go)], script=SCRIPT))  # starts now, connects on `go`
    _listening(tasks[0], int(spec["worker"][0].rsplit(":", 1)[1]))
    os.kill(tasks[0].proc.pid, signal.SIGSTOP)
    go.touch()
    outcome = _outcome(tasks[1])
    assert outcome["type"] == "RendezvousTimeoutError", outcome
    assert float(outcome["elapsed"]) <= TIMEOUT + SLACK, outcome  # type: ignore[arg-type]
    assert str(outcome["message"]).startswith(f"worker:1 reached {spec['worker'][0]} but the rendezvous store "
                                              "of worker:0 did not answer"), outcome


def test_different_clusters_fail_on_both_tasks_side_by_side(tasks: List[Task]) -> None:
    ports = free_ports(3)
    ours = {"worker": [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"]}
    theirs = {"worker": [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[2]}"]}
    tasks.append(Task(ours, 0, {}, ["10"], script=SCRIPT))
    tasks.append(Task(theirs, 1, {}, ["10"], script=SCRIPT))
    outcomes = [_outcome(task) for task in tasks]
    a, b, c = (f"127.0.0.1:{p}" for p in ports)
    for outcome, me, other in zip(outcomes, ("worker:0", "worker:1"), ("worker:1", "worker:0")):
        assert outcome["type"] == "ClusterConfigError", outcomes
        message = str(outcome["message"])
        mine, yours = (f"[{a}, {b}]", f"[{a}, {c}]") if me == "worker:0" else (f"[{a}, {c}]", f"[{a}, {b}]")
        assert f"{me} sees worker: {mine} but {other} (pid " in message and f"sees worker: {yours}" in message
        assert float(outcome["elapsed"]) < 10, outcome  # type: ignore[arg-type]  # found, not timed out


_SERVE = """
import socket, sys, time
from distribute.collectives.authstore_server import StoreServer
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(16)
print(sock.getsockname()[1], flush=True)
StoreServer(sock, sys.argv[1].encode(), "worker:0")
time.sleep(120)
"""


def _wait_until_stopped(pid: int, limit: float = 5.0) -> None:
    """Waits until ``/proc`` shows ``pid`` stopped (state T)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not stop within {limit} s of SIGSTOP")


def test_a_client_finds_a_paused_store_again_and_a_dead_one_fails_fast() -> None:
    secret = "p" * 64
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    host = subprocess.Popen([sys.executable, "-c", _SERVE, secret], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert host.stdout is not None
        port = int(host.stdout.readline())
        store = connect_store("127.0.0.1", port, secret.encode(), time.monotonic() + 20)
        store.set("a", "1")
        store.set_timeout(datetime.timedelta(seconds=0.5))
        os.kill(host.pid, signal.SIGSTOP)
        _wait_until_stopped(host.pid)  # kill() returns before the process has stopped
        with pytest.raises(StoreTimeoutError, match="did not answer"):
            store.get("a")
        os.kill(host.pid, signal.SIGCONT)
        store.set_timeout(datetime.timedelta(seconds=5))
        assert store.get("a") == b"1"  # a new, authenticated connection
        host.kill()
        host.wait(timeout=10)
        started = time.monotonic()
        with pytest.raises(ConnectionError):
            store.set("b", "2")
        with pytest.raises(ConnectionError):
            store.set("b", "2")
        assert time.monotonic() - started < 2.0  # gone for good: no waiting for the timeout
        store.close()
    finally:
        if host.poll() is None:
            os.kill(host.pid, signal.SIGCONT)
            host.kill()
        host.wait(timeout=10)
