"""Issue 15, point 1: only processes that know the job secret can join, read, write or stall a job.

Real 2-worker jobs on localhost, started by hand (``_secret_job.Task``) so that a rogue
process can claim a task, reach the chief's store with a plain ``torch.distributed.TCPStore``
client or raw sockets, and try the gloo ports of both tasks while they train (sealed by then:
``collectives/gloo_listener.py``; what gloo does with connections it does accept is measured
by ``scripts/probe_gloo_port.py``).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import threading
from pathlib import Path
from typing import Iterator, List

import pytest
import torch.distributed as dist

from distribute.cluster_resolver.job_secret import make_secret
from ._secret_job import Task, cluster

pytestmark = pytest.mark.multiprocess
BOUNDS = Path(__file__).resolve().parent / "pg_scripts" / "bounds_worker.py"
SECRET_ENV = "DISTRIBUTE_JOB_SECRET"
ALLOW_ENV = "DISTRIBUTE_ALLOW_UNAUTHENTICATED"


@pytest.fixture
def tasks() -> Iterator[List[Task]]:
    started: List[Task] = []
    yield started
    for task in started:
        task.kill()


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_a_rogue_without_the_secret_cannot_join_and_the_real_task_can(tasks: List[Task], tmp_path: Path) -> None:
    spec, secret, go = cluster(), make_secret(), tmp_path / "go"
    tasks.append(Task(spec, 0, {SECRET_ENV: secret}, ["15", "3", "0"]))  # the rogues retry until it listens
    rogues = [Task(spec, 1, {SECRET_ENV: None, ALLOW_ENV: "1"}, ["5", "3", "0", "1000"]),
              Task(spec, 1, {SECRET_ENV: make_secret()}, ["5", "3", "0", "1000"])]
    tasks.extend(rogues)
    tasks.append(Task(spec, 1, {SECRET_ENV: secret, "GO_FILE": str(go)}, ["15", "3", "0"]))  # joins after them
    for rogue in rogues:
        assert rogue.finish(30) != 0
        assert "UnauthenticatedError" in rogue.output and "cannot join the rendezvous of worker:0" in rogue.output
        assert "RESULT" not in rogue.output
    go.touch()
    codes = [task.finish(40) for task in (tasks[0], tasks[3])]
    assert codes == [0, 0], tasks[0].output + tasks[3].output
    for task in (tasks[0], tasks[3]):
        assert "RESULT sums [3.0]" in task.output  # not 1001.0: no rogue value entered a sum
    chief = tasks[0].output
    assert chief.count("worker:0 refused a connection from 127.0.0.1:") == 2, chief
    assert "it does not know the job secret" in chief


def _forge_with_tcpstore(address: str, outcome: List[str]) -> None:
    """A plain TCPStore client writes a forged error report of rank 1 (it must not get through)."""
    try:
        store = dist.TCPStore("127.0.0.1", _port(address), None, False, datetime.timedelta(seconds=3))
        store.set("distribute/error/1", json.dumps({"type": "ValueError", "message": "forged by a rogue client",
                                                    "doing": "x", "primary": True, "culprit": "worker:1"}))
        store.add("distribute/errors", 1)
        outcome.append("forged")
    except Exception as exc:  # noqa: BLE001 - the expected outcome
        outcome.append(f"refused: {type(exc).__name__}")


def test_attacks_during_training_change_nothing(tasks: List[Task]) -> None:
    spec, secret = cluster(), make_secret()
    tasks.extend(Task(spec, i, {SECRET_ENV: secret}, ["15", "60", "0.05"]) for i in range(2))
    tasks[1].wait_for("RESULT training", 40)
    chief = spec["worker"][0]
    outcome: List[str] = []
    forger = threading.Thread(target=_forge_with_tcpstore, args=(chief, outcome))
    forger.start()
    garbage = socket.create_connection(("127.0.0.1", _port(chief)), timeout=5)
    garbage.sendall(os.urandom(256) + b"GET / HTTP/1.0\r\n\r\n" * 8)
    garbage_port = garbage.getsockname()[1]
    silent = [socket.create_connection(("127.0.0.1", _port(chief)), timeout=5) for _ in range(8)]
    gloo_ports = [port for task in tasks for port in task.listening_ports() if port != _port(chief)]
    sealed = []
    for port in gloo_ports:  # sealed once the group was built (gloo_listener.py): attempts time out
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except (TimeoutError, socket.timeout):
            sealed.append(port)
    try:
        codes = [task.finish(60) for task in tasks]
    finally:
        forger.join(timeout=10)
        for sock in [garbage] + silent:
            sock.close()
    assert codes == [0, 0], tasks[0].output + tasks[1].output
    assert len(gloo_ports) == 2 and sealed == gloo_ports  # each task had one gloo listener, now sealed
    assert outcome and outcome[0].startswith("refused"), outcome
    for task in tasks:
        assert "RESULT sums [3.0]" in task.output and "forged" not in task.output
    log = tasks[0].output
    assert f"worker:0 refused a connection from 127.0.0.1:{garbage_port} to its rendezvous store" in log, log
    assert "it is not a distribute task" in log and "it gave no proof of the job secret (it stayed silent or hung up)" in log
    assert log.count("worker:0 refused a connection from 127.0.0.1:") >= 2  # the garbage and the TCPStore


def test_a_job_without_a_secret_fails_unless_it_opts_in(tasks: List[Task]) -> None:
    tasks.append(Task(cluster(), 0, {SECRET_ENV: None, ALLOW_ENV: None}, ["5", "1", "0"]))
    spec = cluster()
    tasks.extend(Task(spec, i, {SECRET_ENV: None, ALLOW_ENV: "1"}, ["15", "2", "0"]) for i in range(2))
    assert tasks[0].finish(30) != 0
    assert "ClusterConfigError: DISTRIBUTE_JOB_SECRET is not set on worker:0" in tasks[0].output
    codes = [task.finish(40) for task in tasks[1:]]
    assert codes == [0, 0], tasks[1].output + tasks[2].output
    for task in tasks[1:]:
        assert "RESULT sums [3.0]" in task.output
        assert task.output.count("UnauthenticatedJobWarning") == 1, task.output


def test_a_task_given_another_secret_fails_at_once_naming_the_secret(tasks: List[Task]) -> None:
    spec = cluster()
    tasks.append(Task(spec, 0, {SECRET_ENV: make_secret()}, ["4"], script=BOUNDS))
    tasks.append(Task(spec, 1, {SECRET_ENV: make_secret()}, ["4"], script=BOUNDS))  # retries until worker:0 listens
    assert tasks[1].finish(30) == 0, tasks[1].output
    line = next(line for line in tasks[1].output.splitlines() if line.startswith("RESULT outcome "))
    outcome = json.loads(line.split(" ", 2)[2])
    assert outcome["type"] == "UnauthenticatedError", outcome
    assert outcome["message"].startswith(f"worker:1 cannot join the rendezvous of worker:0 at {spec['worker'][0]}")
    assert "refused this task's proof of the job secret" in outcome["message"] and SECRET_ENV in outcome["message"]
    assert outcome["elapsed"] < 4.0  # at once, not at the deadline (which is 4 s)
    assert tasks[0].finish(30) == 0
    chief = tasks[0].output
    assert '"type": "RendezvousTimeoutError"' in chief and "refused 1 connection(s) that did not prove the job secret" in chief
