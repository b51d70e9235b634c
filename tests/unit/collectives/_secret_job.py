"""Hand-made 2-worker jobs for the job-secret tests: real processes with their own TF_CONFIG.

The launcher is not used, so a test can start a rogue process claiming a task, give tasks
different secrets or none, and reach the chief's port while the job runs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "secret_worker.py"


def free_ports(count: int) -> List[int]:
    """Ports of 127.0.0.1 that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster(count: int = 2) -> Dict[str, List[str]]:
    """A fresh local cluster of ``count`` workers."""
    return {"worker": [f"127.0.0.1:{p}" for p in free_ports(count)]}


class Task:
    """One worker process (``secret_worker.py``) whose output lines are collected as they come."""

    def __init__(self, spec: Dict[str, List[str]], index: int, env: Dict[str, Optional[str]],
                 args: List[str], script: Path = SCRIPT) -> None:
        child_env = {k: v for k, v in os.environ.items() if k not in env}
        child_env.update({k: v for k, v in env.items() if v is not None})
        child_env.update(TF_CONFIG=json.dumps({"cluster": spec, "task": {"type": "worker", "index": index}}),
                         OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                         PYTHONPATH=os.pathsep.join([str(ROOT / "src"), child_env.get("PYTHONPATH", "")]))
        self.lines: List[str] = []
        self.proc = subprocess.Popen([sys.executable, str(script)] + args, env=child_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        """Everything printed so far."""
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float) -> None:
        """Waits until ``text`` was printed (fails the test after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while text not in self.output and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(timeout=5)
                break
            time.sleep(0.02)
        assert text in self.output, f"never printed {text!r}:\n{self.output}"

    def finish(self, timeout: float) -> int:
        """Waits for the exit (killing the process after ``timeout`` s); returns its status."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"did not end within {timeout} s:\n{self.output}") from None
        self._reader.join(timeout=5)
        return code

    def listening_ports(self) -> List[int]:
        """The TCP ports this process listens on (from /proc, no extra tools)."""
        return listening_ports(self.proc.pid)

    def kill(self) -> None:
        """Kills the process if it still runs, and reaps it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


def listening_ports(pid: int) -> List[int]:
    """The TCP ports (IPv4 and IPv6) that process ``pid`` listens on, read from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def fake_listener(answer: bytes) -> socket.socket:
    """Listens on a free port of 127.0.0.1; accepts every connection and sends ``answer`` (b'': nothing).

    Close the returned socket to stop it (its accepted connections are closed then).
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: List[socket.socket] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                break
            held.append(conn)
            if answer:
                try:
                    conn.sendall(answer)
                except OSError:
                    pass
        for conn in held:
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return sock
