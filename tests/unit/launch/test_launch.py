"""Tests of ``launch()`` with real processes: TF_CONFIG, output, failures, deadline, cleanup."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from distribute.cluster_resolver import TFConfigClusterResolver, parse_address
from distribute.launch import EXIT_TIMEOUT, launch
from distribute.launch.cluster import default_threads
from distribute.launch.launcher import plan_launch, run_plan

from ._helpers import SRC, assert_gone, read_pids, script, wait_for_files

pytestmark = pytest.mark.multiprocess

LIMIT = 20.0  # every launch's deadline; no test comes near it
GRACE = 0.5


def _run(tmp_path, body, **kwargs):
    kwargs.setdefault("timeout", LIMIT)
    kwargs.setdefault("grace_period", GRACE)
    env = {"PID_DIR": str(tmp_path / "pids"), **kwargs.pop("env", {})}
    return launch(script(tmp_path, body), env=env, **kwargs)


def test_every_task_gets_its_own_tf_config(tmp_path):
    body = """
    print(os.environ["TF_CONFIG"], flush=True)
    if task == "ps:0":
        pid_file()  # a parameter server serves until the launcher stops it
        time.sleep(30)
    while not os.path.exists(os.path.join(os.environ["PID_DIR"], "ps_0.pid")):
        time.sleep(0.01)
    """
    # A ps job: the workers must end on their own within the grace period after the chief.
    result = _run(tmp_path, body, workers=2, chief=True, ps=1, grace_period=3.0)
    assert result.returncode == 0 and result.failed_task is None and not result.timed_out
    assert list(result.tasks) == ["chief:0", "worker:0", "worker:1", "ps:0"]
    spec = result.cluster_spec
    assert list(spec) == ["chief", "worker", "ps"]
    assert [len(spec[job]) for job in spec] == [1, 2, 1]
    addresses = [parse_address(a) for job in spec.values() for a in job]
    assert {a.host for a in addresses} == {"127.0.0.1"}
    assert len({a.port for a in addresses}) == 4
    for name, task in result.tasks.items():
        config = json.loads(task.output)
        job, index = name.split(":")
        assert config == {"cluster": spec, "task": {"type": job, "index": int(index)}}
        resolver = TFConfigClusterResolver(environ={"TF_CONFIG": task.output})
        assert (resolver.task_type, resolver.task_id) == (job, int(index))
        assert (task.returncode, task.stopped) == ((143, True) if job == "ps" else (0, False))


def test_workers_only_cluster(tmp_path):
    result = _run(tmp_path, "print(os.environ['TF_CONFIG'])\n", workers=1)
    config = json.loads(result.tasks["worker:0"].output)
    assert list(config["cluster"]) == ["worker"] and config["task"] == {"type": "worker",
                                                                       "index": 0}


def test_output_is_prefixed_and_kept_per_task(tmp_path, capsys):
    body = """
    print("out", task)
    print("err", task, file=sys.stderr)
    sys.stdout.write("no newline")
    """
    result = _run(tmp_path, body, workers=2, echo=True)
    for name in ("worker:0", "worker:1"):
        lines = result.tasks[name].output.splitlines(keepends=True)
        assert sorted(lines) == sorted([f"out {name}\n", f"err {name}\n", "no newline"])
        for line in (f"out {name}", f"err {name}", "no newline"):
            assert f"[{name}] {line}\n" in result.output
    assert len(result.output.splitlines()) == 6
    assert all(line.startswith("[worker:") for line in result.output.splitlines())
    echoed = capsys.readouterr().out
    assert sorted(echoed.splitlines()) == sorted(result.output.splitlines())


def test_a_failing_task_stops_the_others_quickly(tmp_path):
    body = """
    pid_file()
    if task == "worker:1":
        while len(os.listdir(os.environ["PID_DIR"])) < 3:
            time.sleep(0.01)
        print("failing", flush=True)
        sys.exit(3)
    time.sleep(30)
    """
    start = time.monotonic()
    result = _run(tmp_path, body, workers=2, chief=True)
    assert time.monotonic() - start < 10
    assert result.returncode == 3 and result.failed_task == "worker:1" and not result.timed_out
    assert result.tasks["worker:1"].returncode == 3 and not result.tasks["worker:1"].stopped
    for name in ("chief:0", "worker:0"):
        assert result.tasks[name].stopped and result.tasks[name].returncode == 143
    assert "[worker:1] failing\n" in result.output
    assert "worker:1 exited with status 3; stopped chief:0, worker:0" == result.summary()
    assert_gone(read_pids(tmp_path / "pids"))


def test_sigterm_ignored_is_followed_by_sigkill(tmp_path):
    body = """
    if task == "worker:0":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pid_file()
        time.sleep(30)
    while not os.listdir(os.environ["PID_DIR"]):
        time.sleep(0.01)
    sys.exit(1)
    """
    result = _run(tmp_path, body, workers=2, grace_period=0.3)
    assert result.failed_task == "worker:1" and result.returncode == 1
    assert result.tasks["worker:0"].returncode == 137 and result.tasks["worker:0"].stopped
    assert_gone(read_pids(tmp_path / "pids"))


def test_death_by_signal_and_what_the_task_started(tmp_path):
    body = """
    if task == "worker:1":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        pid_file(child.pid, "_child")
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(30)
    """
    result = _run(tmp_path, body, workers=2)
    assert result.returncode == 137 and result.failed_task == "worker:1"
    assert result.summary().startswith("worker:1 was killed by SIGKILL (status 137)")
    grandchild = read_pids(tmp_path / "pids")
    assert len(grandchild) == 1
    assert_gone(grandchild)


def test_deadline_stops_every_task(tmp_path):
    body = """
    pid_file()
    time.sleep(30)
    """
    start = time.monotonic()
    result = _run(tmp_path, body, workers=2, ps=1, timeout=1.0)
    assert time.monotonic() - start < 1.0 + GRACE + 6  # right after the deadline (slack for a loaded machine)
    assert result.timed_out and result.returncode == EXIT_TIMEOUT and result.failed_task is None
    assert all(t.stopped and t.returncode == 143 for t in result.tasks.values())
    assert result.summary() == "the deadline expired; stopped chief:0, worker:0, worker:1, ps:0"
    assert_gone(read_pids(tmp_path / "pids"))


def test_parameter_servers_are_stopped_when_the_chief_and_workers_succeed(tmp_path):
    body = """
    if task.startswith("ps"):
        pid_file()
        time.sleep(30)
    print("trained")
    """
    # --ps implies the chief; the workers end on their own within the grace period after it.
    result = _run(tmp_path, body, workers=2, ps=2, grace_period=3.0)
    assert result.returncode == 0 and result.failed_task is None and not result.timed_out
    assert [t.stopped for t in result.tasks.values()] == [False, False, False, True, True]
    assert result.tasks["ps:1"].returncode == 143
    assert_gone(read_pids(tmp_path / "pids"))


def test_environment_and_working_directory(tmp_path):
    body = """
    print(os.environ.get("OMP_NUM_THREADS"), os.environ.get("EXTRA"), os.getcwd(),
          os.environ.get("PYTHONUNBUFFERED"))
    """
    (tmp_path / "wd").mkdir()
    result = _run(tmp_path, body, workers=2, env={"OMP_NUM_THREADS": None, "EXTRA": "x"},
                  cwd=tmp_path / "wd")
    expected = f"{default_threads(2)} x {tmp_path / 'wd'} 1\n"
    assert [t.output for t in result.tasks.values()] == [expected, expected]
    result = _run(tmp_path, body, workers=1, env={"OMP_NUM_THREADS": "3"})
    assert result.tasks["worker:0"].output.startswith("3 None ")


def test_an_error_in_the_launcher_leaves_no_process(tmp_path):
    body = """
    pid_file()
    print("ready", flush=True)
    time.sleep(30)
    """
    argv = script(tmp_path, body)
    plan = plan_launch(argv, workers=2, env={"PID_DIR": str(tmp_path / "pids")}, timeout=LIMIT)

    def sink(stream, line):
        raise RuntimeError("sink broke")

    with pytest.raises(RuntimeError, match="sink broke"):
        run_plan(plan, sink)
    pids = read_pids(tmp_path / "pids")
    assert pids  # the task that printed "ready" had started
    assert_gone(pids)


def test_a_second_signal_kills_at_once(tmp_path):
    body = """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pid_file()
    while len(os.listdir(os.environ["PID_DIR"])) < 2:
        time.sleep(0.01)
    print("ready", flush=True)  # both tasks now ignore SIGTERM
    time.sleep(30)
    """
    plan = plan_launch(script(tmp_path, body), workers=2, timeout=LIMIT, grace_period=LIMIT,
                       env={"PID_DIR": str(tmp_path / "pids")})

    def sink(stream, line):  # each task's "ready" line: SIGTERM to the launcher (this process)
        signal.raise_signal(signal.SIGTERM)

    start = time.monotonic()
    result = run_plan(plan, sink)
    assert time.monotonic() - start < 10  # far less than the 20 s grace period (includes starting 2 tasks)
    assert result.signal == signal.SIGTERM and result.returncode == 143
    assert result.summary() == "interrupted by SIGTERM; stopped worker:0, worker:1"
    assert [t.returncode for t in result.tasks.values()] == [137, 137]
    assert_gone(read_pids(tmp_path / "pids"))


_DRIVER = """
import signal, sys
# Ctrl-C raises KeyboardInterrupt, as in a terminal, even when this test runs in a background
# job of a non-interactive shell, which starts its commands with SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
from distribute.launch import launch
try:
    launch([sys.executable, {task!r}], workers=2, timeout=30, env={{"PID_DIR": {pids!r}}},
           grace_period=0.5)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(5)
print("returned", flush=True)
"""


def test_ctrl_c_reaches_the_tasks_then_raises(tmp_path):
    body = """
    pid_file()
    time.sleep(30)
    """
    task = script(tmp_path, body)[1]
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER.format(task=task, pids=str(tmp_path / "pids")))
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, str(driver)], env=env, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        pid_files = [tmp_path / "pids" / f"worker_{i}.pid" for i in range(2)]
        wait_for_files(pid_files, timeout=15)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    assert (proc.returncode, out) == (5, "KeyboardInterrupt\n")
    assert_gone(read_pids(tmp_path / "pids"))


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_ipv6_host(tmp_path):
    result = _run(tmp_path, "print(os.environ['TF_CONFIG'])\n", workers=2, host="::1")
    assert result.returncode == 0
    assert all(address.startswith("[::1]:") for address in result.cluster_spec["worker"])
    config = json.loads(result.tasks["worker:1"].output)
    assert config["cluster"] == result.cluster_spec
