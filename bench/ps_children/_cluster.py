"""What both parameter-server children share (standard library only: TF's venv has no torch).

Each child is the coordinator. It starts 2 worker and 2 ps server processes on 127.0.0.1 (the
same script with ``serve JOB INDEX``), each with 1 intra-op thread, each killed by the kernel
if the coordinator dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) and killed in a ``finally``
otherwise, and times three workloads through the framework's ``schedule``/``join``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HOST = "127.0.0.1"
WORKERS, PS = 2, 2
READY = "SERVER READY"
BATCH = 256
MLP_SIZES = (64, 256, 256, 10)
VOCAB, EMB_DIM, IDS_PER_EXAMPLE, CLASSES = 100_000, 64, 8, 10
LR = 0.1
_PR_SET_PDEATHSIG = 1


def free_ports(n: int) -> List[int]:
    """``n`` distinct ports free on 127.0.0.1 right now (all held open until every one is picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def cluster_dict() -> Dict[str, List[str]]:
    """The cluster of the benchmark: 1 chief (the coordinator), 2 workers, 2 ps, fresh ports."""
    ports = [f"{HOST}:{p}" for p in free_ports(1 + WORKERS + PS)]
    return {"chief": ports[:1], "worker": ports[1:1 + WORKERS], "ps": ports[1 + WORKERS:]}


def _die_with_parent(parent: int) -> Callable[[], None]:
    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)
    return preexec


class Servers:
    """The worker and ps processes of one child; a context manager that always kills them."""

    def __init__(self, script: str, cluster: Dict[str, List[str]], env: Optional[Dict[str, str]] = None) -> None:
        self._script, self._cluster = script, cluster
        self._env = {**os.environ, "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}
        self._dir = tempfile.TemporaryDirectory(prefix="bench_ps_")
        self.procs: Dict[str, subprocess.Popen] = {}

    def __enter__(self) -> "Servers":
        spec = json.dumps(self._cluster)
        for job in ("ps", "worker"):
            for index in range(len(self._cluster[job])):
                log = open(Path(self._dir.name) / f"{job}{index}.log", "wb")
                self.procs[f"{job}:{index}"] = subprocess.Popen(
                    [sys.executable, self._script, "serve", job, str(index), spec], stdout=log,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env,
                    preexec_fn=_die_with_parent(os.getpid()))
                log.close()
        return self

    def log(self, name: str) -> str:
        path = Path(self._dir.name) / f"{name.replace(':', '')}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Waits until every server printed READY; raises with its log if one exits or is late."""
        deadline = time.monotonic() + timeout
        pending = set(self.procs)
        while pending:
            for name in sorted(pending):
                if READY in self.log(name):
                    pending.discard(name)
                elif self.procs[name].poll() is not None:
                    raise RuntimeError(f"server {name} exited with {self.procs[name].returncode}:\n"
                                       f"{self.log(name)[-4000:]}")
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"servers {sorted(pending)} not ready after {timeout:.0f} s:\n"
                                   + "\n".join(self.log(n)[-2000:] for n in sorted(pending)))
            time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._dir.cleanup()


def time_closures(schedule: Callable[[], Any], join: Callable[[], None], seconds: float,
                  repeats: int = 3) -> Dict[str, float]:
    """Closures/s of ``schedule`` N times then ``join`` (best of ``repeats``), and the median
    coordinator cost of one ``schedule`` call in µs; N is sized so a repeat takes ``seconds``."""
    n = _calibrate(schedule, join, seconds)
    rates, costs = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            schedule()
        scheduled = time.perf_counter()
        join()
        end = time.perf_counter()
        rates.append(n / (end - start))
        costs.append((scheduled - start) / n * 1e6)
    return {"per_second": max(rates), "schedule_us": sorted(costs)[len(costs) // 2], "n": n}


def _calibrate(schedule: Callable[[], Any], join: Callable[[], None], seconds: float) -> int:
    """Warms up (tracing, first transfers) and returns how many calls take about ``seconds``."""
    for count in (2, 8):
        for _ in range(count):
            schedule()
        join()
    n, elapsed = 8, 0.0
    while elapsed < 0.25 * seconds and n < 1_000_000:
        n *= 2
        start = time.perf_counter()
        for _ in range(n):
            schedule()
        join()
        elapsed = time.perf_counter() - start
    return max(4, int(n * seconds / max(elapsed, 1e-9)))


def emit(result: Dict[str, Any]) -> None:
    """Prints the result as the last line of the child's output."""
    print(json.dumps(result), flush=True)


def child_main(script: str, doc: str, serve: Callable[[str, int, dict], None],
               measure: Callable[[dict, float], Dict[str, Any]]) -> None:
    """The ``main`` of both sides' children: ``serve JOB INDEX CLUSTER`` runs one server; otherwise
    start the cluster's servers, measure as its coordinator, print the JSON line and leave at once
    (a coordinator's threads may still wait on the killed servers)."""
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per timed repeat")
    args = parser.parse_args()
    cluster = cluster_dict()
    status = 1
    try:
        with Servers(os.path.abspath(script), cluster) as servers:
            servers.wait_ready()
            emit(measure(cluster, args.seconds))
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

