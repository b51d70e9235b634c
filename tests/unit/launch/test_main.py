"""Tests of ``python -m distribute.launch``: the command line, end to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from distribute.launch.__main__ import EXIT_USAGE, _split, main

from ._helpers import SRC, assert_gone, read_pids, script, wait_for_files


@pytest.mark.parametrize("argv, expected", [
    (["--workers", "2", "t.py", "--workers", "3"],
     (["--workers", "2"], None, ["t.py", "--workers", "3"])),
    (["--chief", "-m", "pkg.mod", "-x", "--ps"], (["--chief"], "pkg.mod", ["-x", "--ps"])),
    (["--timeout=5", "--", "-weird.py"], (["--timeout=5"], None, ["-weird.py"])),
    (["--bogus", "t.py"], (["--bogus"], None, ["t.py"])),
    (["-m"], (["-m"], None, [])),
    ([], ([], None, [])),
])
def test_split_command_line(argv, expected):
    assert _split(argv) == expected


@pytest.mark.parametrize("argv, message", [
    (["--workers", "0", "t.py"], "workers: expected an int >= 1; received 0"),
    (["--ps", "-1", "t.py"], "ps: expected an int >= 0; received -1"),
    (["--timeout", "0", "t.py"], "timeout: expected a number of seconds > 0"),
    (["--grace", "-1", "t.py"], "grace_period: expected a number of seconds >= 0"),
    (["--host", "0.0.0.0", "t.py"], "host: expected one address of this machine"),
    (["--host", "192.0.2.1", "t.py"], "where binding a port failed"),
    (["missing.py"], "script: expected an existing Python file; received 'missing.py'"),
    ([], "expected a script to run (or -m module); received none"),
    (["-m", "not a module"], "-m: expected a module name"),
    (["--workers", "two", "t.py"], "argument --workers: invalid int value: 'two'"),
    (["--bogus", "t.py"], "unrecognized arguments: --bogus"),
])
def test_command_line_errors(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and "python -m distribute.launch" in err


def test_help(capsys):
    assert main(["--help"]) == 0
    assert "--workers" in capsys.readouterr().out


@pytest.mark.multiprocess
def test_module_mode_in_process(tmp_path, monkeypatch, capfd):
    (tmp_path / "launched_mod.py").write_text(
        "import json, os, sys\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "print(task['type'], task['index'], sys.argv[1:])\n"
        "print('to stderr', file=sys.stderr)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert main(["--workers", "2", "--timeout", "20", "-m", "launched_mod", "--flag"]) == 0
    out, err = capfd.readouterr()
    assert sorted(out.splitlines()) == ["[worker:0] worker 0 ['--flag']",
                                        "[worker:1] worker 1 ['--flag']"]
    assert sorted(err.splitlines()) == ["[worker:0] to stderr", "[worker:1] to stderr"]


def _start_cli(tmp_path, args):
    env = {**os.environ, "PYTHONPATH": SRC, "PID_DIR": str(tmp_path / "pids")}
    return subprocess.Popen([sys.executable, "-m", "distribute.launch", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _finish(proc, timeout):
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@pytest.mark.multiprocess
def test_cli_end_to_end_exits_with_the_failed_tasks_status(tmp_path):
    body = """
    print("hello from", task, sys.argv[1:])
    if task == "worker:1":
        sys.exit(7)
    pid_file()
    time.sleep(30)
    """
    argv = script(tmp_path, body)
    proc = _start_cli(tmp_path, ["--workers", "2", "--chief", "--grace", "1",
                                 "--timeout", "20", argv[1], "a", "--b"])
    out, err = _finish(proc, timeout=30)
    assert proc.returncode == 7, err
    assert "[worker:1] hello from worker:1 ['a', '--b']" in out.splitlines()
    assert "[launch] worker:1 exited with status 7" in err
    assert_gone(read_pids(tmp_path / "pids"))


@pytest.mark.multiprocess
def test_cli_forwards_sigterm_and_leaves_nothing(tmp_path):
    body = """
    pid_file()
    time.sleep(30)
    """
    argv = script(tmp_path, body)
    proc = _start_cli(tmp_path, ["--workers", "2", "--grace", "1", "--timeout", "30", argv[1]])
    try:
        wait_for_files([tmp_path / "pids" / f"worker_{i}.pid" for i in range(2)], timeout=20)
        proc.send_signal(signal.SIGTERM)
    finally:
        out, err = _finish(proc, timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "[launch] interrupted by SIGTERM; stopped worker:0, worker:1" in err
    assert_gone(read_pids(tmp_path / "pids"))
