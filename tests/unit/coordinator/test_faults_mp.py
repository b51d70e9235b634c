"""Faults and security of a real parameter-server job: worker, ps and ps processes on 127.0.0.1.

Each test starts its own job (forked from one process that imported ``distribute``, see
``_ps_job``); the coordinator is this process, or a child where the test kills it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import distribute
from distribute.coordinator.server import COORDINATOR_SILENCE
from distribute.errors import UnavailableError

from ._ps_job import Forker, PsJob, environment

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(90)]

PS_DETECTION_LIMIT = 8.0
"""The issue asks for 5 s; the slack is for a loaded 2-core machine (the tests print the real figure)."""
COORDINATOR_EXIT_LIMIT = 10.0


@pytest.fixture(scope="module")
def forker(tmp_path_factory):
    forker = Forker(tmp_path_factory.mktemp("ps-job"))
    yield forker
    forker.close()


def _wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)


def test_a_worker_killed_mid_closure_has_its_closures_run_elsewhere(forker):
    with PsJob(forker, workers=2, ps=1) as job:
        strategy, coordinator = job.coordinator()
        with strategy.scope():
            runs = distribute.Variable(0.0)

        @distribute.function
        def slow():
            time.sleep(0.3)
            runs.assign_add(1.0)
            return os.getpid()

        values = [coordinator.schedule(slow) for _ in range(8)]  # a batch of 4 on each worker
        _wait_until(lambda: float(runs.numpy()) >= 2, 20, "two closures")  # both batches are running
        job.kill("worker:1")
        started = time.monotonic()
        coordinator.join()
        assert time.monotonic() - started < 20
        pids = [value.fetch() for value in values]
        assert coordinator.done()
        # worker:1's results never came back: its batch ran again, on worker:0.
        assert pids == [job.tasks["worker:0"].pid] * 8
        assert 8 <= float(runs.numpy()) <= 12  # each ran at least once (worker:1 may have run some)


def test_a_restarted_worker_rejoins_and_gets_work(forker):
    with PsJob(forker, workers=2, ps=1) as job:
        strategy, coordinator = job.coordinator()
        with strategy.scope():
            steps = distribute.Variable(0.0)
        iterator = iter(coordinator.create_per_worker_dataset(
            lambda ctx: distribute.data.Dataset.range(1000).map(lambda x: x * 10 + ctx.input_pipeline_id)))

        @distribute.function
        def step(it):
            steps.assign_add(1.0)
            return os.getpid(), next(it)

        first = [coordinator.schedule(step, args=(iterator,)) for _ in range(4)]
        coordinator.join()
        assert {value.fetch()[0] for value in first} <= {job.tasks["worker:0"].pid, job.tasks["worker:1"].pid}
        ps_pid = job.tasks["ps:0"].pid
        job.kill("worker:1")
        restarted = job.start("worker:1")  # a new process at the same address
        job.kill("worker:0")
        later = [coordinator.schedule(step, args=(iterator,)) for _ in range(6)]
        coordinator.join()
        results = [value.fetch() for value in later]
        assert [pid for pid, _ in results] == [restarted.pid] * 6
        # The restarted worker built its dataset again: it gives its first six elements (in the
        # order the closures reached it, which a failure may change).
        assert sorted(int(x) for _, x in results) == [10 * i + 1 for i in range(6)]
        assert float(steps.numpy()) == 10.0
        assert job.tasks["ps:0"].pid == ps_pid and job.tasks["ps:0"].returncode is None  # nothing else restarted


@pytest.mark.parametrize("busy", [True, False], ids=["mid-step", "idle"])
def test_a_killed_ps_fails_every_call_with_unavailable_naming_it(forker, busy):
    with PsJob(forker, workers=1, ps=2) as job:
        strategy, coordinator = job.coordinator()
        with strategy.scope():
            on_ps0 = distribute.Variable(0.0)
            on_ps1 = distribute.Variable(0.0)
        assert on_ps1.device == "/job:ps/replica:0/task:1/device:CPU:0"

        @distribute.function
        def step():
            time.sleep(0.05)
            on_ps0.assign_add(1.0)
            on_ps1.assign_add(1.0)
            return 1

        coordinator.schedule(step).fetch()
        pending = [coordinator.schedule(step) for _ in range(50 if busy else 1)]
        if not busy:  # only the heartbeats can tell
            coordinator.join()
        killed = job.kill("ps:1")
        while True:
            try:
                coordinator.done()
            except UnavailableError as exc:
                detected = time.monotonic() - killed
                first = exc
                break
            assert time.monotonic() - killed < 30, "the failed ps was never reported"
            time.sleep(0.01)
        print(f"ps:1 killed ({'mid-step' if busy else 'idle'}): UnavailableError after {detected:.2f} s")
        assert "ps:1" in str(first)
        assert detected < PS_DETECTION_LIMIT
        started = time.monotonic()
        for call in (lambda: coordinator.schedule(step), coordinator.join, coordinator.done,
                     lambda: coordinator.fetch(pending[-1])):
            with pytest.raises(UnavailableError, match="ps:1"):
                call()
        for value in pending:  # each has its result or the error; none hangs
            try:
                value.fetch()
            except UnavailableError as exc:
                assert "ps:1" in str(exc)
        assert time.monotonic() - started < 10


def test_every_task_exits_when_the_coordinator_is_killed(forker):
    with PsJob(forker, workers=2, ps=2) as job:
        chief = job.start_coordinator("hold")
        chief.wait_for_line("holding")
        killed = chief.kill()
        assert chief.wait(10) == -9
        _, codes = job.wait_all_exit(COORDINATOR_EXIT_LIMIT + 10)
        exited = time.monotonic() - killed if all(code is not None for code in codes.values()) else None
        print(f"coordinator killed: every task exited after {exited} s (silence limit {COORDINATOR_SILENCE} s)")
        assert codes == {task: 0 for task in job.tasks}, {t: c.stderr()[-2000:] for t, c in job.tasks.items()}
        assert exited is not None and exited < COORDINATOR_EXIT_LIMIT
        assert all("no heartbeat from the coordinator" in task.stderr() for task in job.tasks.values())


def test_every_task_exits_promptly_when_the_coordinator_ends(forker):
    with PsJob(forker, workers=2, ps=1) as job:
        chief = job.start_coordinator("end")
        assert chief.wait(60) == 0, chief.stderr()[-3000:]
        ended = time.monotonic()
        assert "trained 4.0" in chief.stdout()
        _, codes = job.wait_all_exit(COORDINATOR_EXIT_LIMIT)
        took = time.monotonic() - ended
        print(f"coordinator ended: every task exited {took:.2f} s after it")
        assert codes == {task: 0 for task in job.tasks}, {t: c.stderr()[-2000:] for t, c in job.tasks.items()}
        assert took < COORDINATOR_SILENCE - 1  # told to end, not waiting for the silence
        assert all("the coordinator ended the job" in task.stderr() for task in job.tasks.values())


ATTACKER = r"""
import json, os, pickle, sys
import grpc, torch
from distribute.errors import UnauthenticatedError
from distribute.ps import wire
from distribute.ps.rpc import RpcClient

ps, worker, var_id, marker = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
report = {"secret in env": "DISTRIBUTE_JOB_SECRET" in os.environ}

class Evil:
    def __reduce__(self):
        return (open, (marker, "w"))

evil = pickle.dumps(Evil())
for name, secret in (("none", None), ("wrong", b"w" * 64)):
    for task, address in (("ps:0", ps), ("worker:0", worker)):
        try:
            RpcClient(address, secret, task).connect(timeout=10)
            report[f"handshake {task} {name}"] = "accepted"
        except UnauthenticatedError as exc:
            report[f"handshake {task} {name}"] = "UnauthenticatedError: " + str(exc)
calls = {
    "ps Read": (ps, "Read", wire.encode({"ids": [var_id]})),
    "ps Assign": (ps, "Assign", wire.encode({"id": var_id, "op": "assign", "read": True}, [torch.tensor(-1.0)])),
    "ps Shutdown": (ps, "Shutdown", wire.encode({})),
    "worker Run": (worker, "Run", wire.encode({"closures": [{"digest": "d", "fn": 0, "args": 0}]},
                                             [evil, pickle.dumps(((), {}))])),
    "worker Resource": (worker, "Resource", wire.encode({"kind": "dataset", "id": 99}, [evil])),
    "worker Shutdown": (worker, "Shutdown", wire.encode({})),
}
for name, (address, method, request) in calls.items():
    with grpc.insecure_channel(address) as channel:
        stub = channel.unary_unary(f"/distribute.Task/{method}")
        for token_name, metadata in (("no token", None), ("forged token", (("x-distribute-session-bin", os.urandom(32)),))):
            try:
                answer = stub(request, timeout=10, metadata=metadata)
                report[f"{name} {token_name}"] = "answered " + repr(answer[:200])
            except grpc.RpcError as exc:
                report[f"{name} {token_name}"] = exc.code().name
print(json.dumps(report))
"""


def test_a_process_without_the_secret_can_neither_run_code_nor_touch_a_variable(forker, tmp_path):
    marker = tmp_path / "ran"
    with PsJob(forker, workers=1, ps=1) as job:
        strategy, coordinator = job.coordinator()
        with strategy.scope():
            v = distribute.Variable(7.0)
        # A process that never had the secret: not forked from the job's forker.
        attacker = subprocess.run([sys.executable, "-c", ATTACKER, job.spec["ps"][0], job.spec["worker"][0],
                                   str(v._var_id), str(marker)], env=environment(None), capture_output=True,
                                  text=True, timeout=60)
        assert attacker.returncode == 0, attacker.stderr[-3000:]
        report = json.loads(attacker.stdout)
        assert report.pop("secret in env") is False
        for key, outcome in report.items():
            if key.startswith("handshake"):
                assert outcome.startswith("UnauthenticatedError:") and "DISTRIBUTE_JOB_SECRET" in outcome, (key, outcome)
            else:
                assert outcome == "UNAUTHENTICATED", (key, outcome)
        assert len(report) == 4 + 12
        assert not marker.exists(), "a payload from a process without the secret was unpickled"
        assert float(v.numpy()) == 7.0

        @distribute.function
        def bump():
            v.assign_add(1.0)
            return 1

        assert coordinator.schedule(bump).fetch() == 1  # the job goes on, Shutdown was refused
        assert float(v.numpy()) == 8.0
        assert all(task.returncode is None for task in job.tasks.values())
        for task in ("ps:0", "worker:0"):
            assert f"{task} refused a call from" in job.tasks[task].stderr(), job.tasks[task].stderr()[-2000:]
