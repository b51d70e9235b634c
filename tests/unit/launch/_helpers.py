"""Helpers of the launcher tests: tiny task scripts and checks that processes are gone."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterable, List

__all__ = ["SRC", "alive", "assert_gone", "read_pids", "script", "wait_for_files"]

SRC = str(Path(__file__).resolve().parents[3] / "src")

# Prepended to every task script: `task` is "worker:1", `pid_file()` records this process.
_PRELUDE = """
import json, os, signal, subprocess, sys, time
_config = json.loads(os.environ["TF_CONFIG"])
task = f"{_config['task']['type']}:{_config['task']['index']}"
def pid_file(pid=None, suffix=""):
    path = os.path.join(os.environ["PID_DIR"], task.replace(":", "_") + suffix + ".pid")
    with open(path + ".tmp", "w") as f:
        f.write(str(pid or os.getpid()))
    os.replace(path + ".tmp", path)
"""


def script(tmp_path: Path, body: str, name: str = "task.py") -> List[str]:
    """Writes a task script (the prelude, then ``body``); returns the command that runs it."""
    path = tmp_path / name
    path.write_text(_PRELUDE + textwrap.dedent(body))
    (tmp_path / "pids").mkdir(exist_ok=True)
    return [sys.executable, str(path)]


def wait_for_files(paths: Iterable[Path], timeout: float = 10.0) -> None:
    """Waits until every file exists; fails after ``timeout`` seconds."""
    paths = list(paths)
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never written: {[p for p in paths if not p.exists()]}"
        time.sleep(0.02)


def read_pids(directory: Path) -> List[int]:
    """The process ids recorded by ``pid_file()`` in ``directory``."""
    return [int(p.read_text()) for p in sorted(directory.glob("*.pid"))]


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def assert_gone(pids: Iterable[int], timeout: float = 3.0) -> None:
    """Fails unless every process in ``pids`` is gone within ``timeout`` seconds."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise AssertionError(f"still running: {[pid for pid in pids if alive(pid)]}")
        time.sleep(0.02)
