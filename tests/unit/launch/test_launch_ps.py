"""Parameter-server jobs (``ps > 0``): a chief is implied, and the job ends with the chief."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from distribute.launch import launch
from distribute.launch.__main__ import main
from distribute.launch.launcher import plan_launch, run_plan

from ._helpers import assert_gone, read_pids, script

LIMIT = 30.0  # every launch's deadline; no test comes near it
GRACE = 0.5

# Task scripts: `flag(name)` marks an event; `wait_for(name)` waits for one (bounded).
_FLAGS = """
def flag(name):
    open(os.path.join(os.environ["FLAG_DIR"], name), "w").close()
def wait_for(*names, limit=20.0):
    end = time.monotonic() + limit
    while not all(os.path.exists(os.path.join(os.environ["FLAG_DIR"], n)) for n in names):
        if time.monotonic() > end:
            sys.exit(99)
        time.sleep(0.01)
"""


def _plan(tmp_path, body, **kwargs):
    (tmp_path / "flags").mkdir(exist_ok=True)
    kwargs.setdefault("timeout", LIMIT)
    kwargs.setdefault("grace_period", GRACE)
    env = {"PID_DIR": str(tmp_path / "pids"), "FLAG_DIR": str(tmp_path / "flags")}
    return plan_launch(script(tmp_path, _FLAGS + textwrap.dedent(body)), env=env, **kwargs)


def _run(tmp_path, body, **kwargs):
    lines = []
    result = run_plan(_plan(tmp_path, body, **kwargs), lambda stream, line: lines.append((stream, line)))
    return result, lines


def test_ps_implies_a_chief(tmp_path):
    argv = [sys.executable, "-c", "pass"]
    names = [t.name for t in plan_launch(argv, workers=2, ps=1).tasks]
    assert names == ["chief:0", "worker:0", "worker:1", "ps:0"]
    assert [t.name for t in plan_launch(argv, workers=1, chief=False, ps=2).tasks] == [
        "chief:0", "worker:0", "ps:0", "ps:1"]
    assert [t.name for t in plan_launch(argv, workers=2, chief=True, ps=1).tasks] == names
    assert [t.name for t in plan_launch(argv, workers=2).tasks] == ["worker:0", "worker:1"]


@pytest.mark.multiprocess
def test_failed_workers_and_ps_do_not_stop_the_job(tmp_path):
    body = """
    pid_file()
    flag(task.replace(":", "_"))
    if task == "worker:1":
        sys.exit(1)
    if task == "ps:1":
        os.kill(os.getpid(), signal.SIGKILL)
    if task == "chief:0":
        wait_for("worker_1", "ps_1")
        time.sleep(2)  # the coordinator carries on without them
        print("done", flush=True)
        flag("chief")
        sys.exit(0)
    wait_for("chief")  # worker:0 and ps:0 serve until the coordinator ends
    """
    result, lines = _run(tmp_path, body, workers=2, ps=2)
    assert result.returncode == 0 and result.failed_task is None and not result.timed_out
    assert {name: (t.returncode, t.stopped) for name, t in result.tasks.items()} == {
        "chief:0": (0, False), "worker:0": (0, False), "worker:1": (1, False),
        "ps:0": (0, False), "ps:1": (137, False)}
    worker_note = "[launch] worker:1 exited with status 1; the coordinator carries on\n"
    ps_note = "[launch] ps:1 was killed by SIGKILL (status 137); the coordinator carries on\n"
    assert ("stderr", worker_note) in lines and ("stderr", ps_note) in lines
    assert result.output.index(worker_note) < result.output.index("[chief:0] done\n")
    assert result.output.index(ps_note) < result.output.index("[chief:0] done\n")
    assert result.output.count("[launch]") == 2
    assert result.summary() == ("chief:0 succeeded; carried on after worker:1 exited with status 1, "
                                "ps:1 was killed by SIGKILL (status 137)")
    assert_gone(read_pids(tmp_path / "pids"))


@pytest.mark.multiprocess
def test_the_chief_status_is_the_job_status_and_the_rest_are_stopped(tmp_path):
    body = """
    if task == "worker:1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # needs the SIGKILL
    pid_file()
    if task == "chief:0":
        while len(os.listdir(os.environ["PID_DIR"])) < 5:
            time.sleep(0.01)
        sys.exit(3)
    time.sleep(30)  # ps and workers that never end on their own
    """
    start = time.monotonic()
    result, lines = _run(tmp_path, body, workers=2, ps=2)
    assert time.monotonic() - start < 15  # two grace periods after the chief (slack for a loaded machine)
    assert result.returncode == 3 and result.failed_task == "chief:0" and not result.timed_out
    assert {name: (t.returncode, t.stopped) for name, t in result.tasks.items()} == {
        "chief:0": (3, False), "worker:0": (143, True), "worker:1": (137, True),
        "ps:0": (143, True), "ps:1": (143, True)}
    assert result.summary() == "chief:0 exited with status 3; stopped worker:0, worker:1, ps:0, ps:1"
    assert "[launch]" not in result.output and not any("[launch]" in line for _, line in lines)
    assert_gone(read_pids(tmp_path / "pids"))


@pytest.mark.multiprocess
def test_after_the_chief_the_others_get_the_grace_period_to_end(tmp_path):
    body = """
    pid_file()
    if task == "chief:0":
        wait_for("worker_0", "ps_0")
        flag("chief")
        sys.exit(0)
    flag(task.replace(":", "_"))
    wait_for("chief")
    time.sleep(0.3)  # ends by itself, a little after the chief
    sys.exit(2 if task == "ps:0" else 0)  # a status after the chief does not count
    """
    result, lines = _run(tmp_path, body, workers=1, ps=1, grace_period=5.0)
    assert result.returncode == 0 and result.failed_task is None
    assert {name: (t.returncode, t.stopped) for name, t in result.tasks.items()} == {
        "chief:0": (0, False), "worker:0": (0, False), "ps:0": (2, False)}
    assert "[launch]" not in result.output
    assert_gone(read_pids(tmp_path / "pids"))


@pytest.mark.multiprocess
def test_deadline_of_a_ps_job(tmp_path):
    body = """
    pid_file()
    time.sleep(30)
    """
    result, _ = _run(tmp_path, body, workers=1, ps=1, timeout=1.0)
    assert result.timed_out and result.returncode == 124 and result.failed_task is None
    assert result.summary() == "the deadline expired; stopped chief:0, worker:0, ps:0"
    assert_gone(read_pids(tmp_path / "pids"))


@pytest.mark.multiprocess
def test_launch_function_with_ps(tmp_path):
    body = """
    print(json.loads(os.environ["TF_CONFIG"])["task"]["type"])
    if task == "worker:0":
        sys.exit(4)
    """
    (tmp_path / "flags").mkdir()
    result = launch(script(tmp_path, body), workers=1, ps=1, timeout=LIMIT, grace_period=5.0,
                    env={"PID_DIR": str(tmp_path / "pids")})
    assert list(result.cluster_spec) == ["chief", "worker", "ps"]
    assert result.returncode == 0  # the worker's failure did not fail the job
    assert result.tasks["worker:0"].returncode == 4 and not result.tasks["worker:0"].stopped
    assert result.tasks["chief:0"].output == "chief\n"


@pytest.mark.multiprocess
def test_command_line_ps_job(tmp_path, capsys):
    body = """
    if task == "worker:0":
        sys.exit(1)
    if task == "chief:0":
        time.sleep(1)
        sys.exit(2)
    """
    argv = script(tmp_path, body)
    (tmp_path / "flags").mkdir()
    code = main(["--workers", "1", "--ps", "1", "--grace", "5", "--timeout", str(LIMIT), argv[1]])
    err = capsys.readouterr().err
    assert code == 2
    assert "[launch] worker:0 exited with status 1; the coordinator carries on\n" in err
    assert err.endswith("[launch] chief:0 exited with status 2\n")
