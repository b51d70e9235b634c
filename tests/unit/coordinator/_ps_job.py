"""A real parameter-server job on 127.0.0.1 for multi-process tests: worker and ps processes.

Importing torch costs a task process seconds of CPU on a loaded 2-core machine, so the tasks
are forked from one :class:`Forker` process that imported ``distribute`` once (no thread and
no gRPC object exists in it when it forks). Each task is a process of its own, with its own
pid, job secret (``DISTRIBUTE_JOB_SECRET``, set after the fork), ``OMP_NUM_THREADS=1``, and
stdout/stderr in files; it runs ``distribute.Server(spec, job, i).join()`` (:data:`TASK`) or a
child coordinator (:data:`COORDINATOR`). The forker reaps its children and writes each exit
status to ``<pid>.rc``. Leaving a :class:`PsJob` kills the children it started; closing the
forker kills its whole process group, so no task outlives the tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from distribute.launch.ports import free_ports

SRC = str(Path(__file__).resolve().parents[3] / "src")
START_TIMEOUT = 30.0
"""Seconds a task may take to start listening on a loaded 2-core machine."""

FORKER = r"""
import atexit, json, os, select, sys, traceback
os.environ["OMP_NUM_THREADS"] = "1"
import grpc, distribute, distribute.coordinator, distribute.ps.rpc
rc_dir, children = sys.argv[1], set()

def reap():
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        with open(f"{rc_dir}/{pid}.rc.tmp", "w") as f:
            f.write(str(os.waitstatus_to_exitcode(status)))
        os.replace(f"{rc_dir}/{pid}.rc.tmp", f"{rc_dir}/{pid}.rc")

def run(order):
    code = 1
    try:
        for fd, path in ((1, order["stdout"]), (2, order["stderr"]), (0, os.devnull)):
            os.dup2(os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.environ.pop("DISTRIBUTE_JOB_SECRET", None)
        if order["secret"] is not None:
            os.environ["DISTRIBUTE_JOB_SECRET"] = order["secret"]
        sys.argv = ["-c", *order["argv"]]
        try:
            exec(compile(order["code"], "<task>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

print("ready", flush=True)
while True:
    ready = select.select([sys.stdin], [], [], 0.02)[0]
    reap()
    if not ready:
        continue
    line = sys.stdin.readline()
    if not line:
        break
    pid = os.fork()
    if pid == 0:
        run(json.loads(line))
    children.add(pid)
    print(pid, flush=True)
for pid in children:
    os.kill(pid, 9)
"""

TASK = """
import json, logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
import distribute
spec, job, index = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
server = distribute.Server(spec, job, index)
print("listening", flush=True)
server.join()
print("ended", flush=True)
"""

COORDINATOR = """
import json, sys, time
import distribute
from distribute.cluster_resolver import ClusterSpec, SimpleClusterResolver
spec, mode = json.loads(sys.argv[1]), sys.argv[2]
resolver = SimpleClusterResolver(ClusterSpec(spec), task_type="chief", task_id=0)
strategy = distribute.ParameterServerStrategy(resolver)
coordinator = distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    v = distribute.Variable(0.0)

@distribute.function
def step():
    v.assign_add(1.0)
    return 1

for _ in range(4):
    coordinator.schedule(step)
coordinator.join()
print("trained", float(v.numpy()), flush=True)
if mode == "hold":  # a job in its middle: heartbeats have gone out; killed by the test
    time.sleep(1.0)
    print("holding", flush=True)
    time.sleep(600)
"""


def environment(secret: Optional[str]) -> Dict[str, str]:
    """A child's environment: this one, ``src`` first on the path, one thread, ``secret`` (None: none)."""
    env = {k: v for k, v in os.environ.items() if k != "DISTRIBUTE_JOB_SECRET"}
    env.update(PYTHONPATH=SRC + os.pathsep + env.get("PYTHONPATH", ""), OMP_NUM_THREADS="1",
               PYTHONUNBUFFERED="1")
    if secret is not None:
        env["DISTRIBUTE_JOB_SECRET"] = secret
    return env


class Child:
    """A process forked by the :class:`Forker`: its pid, output files and exit status."""

    def __init__(self, pid: int, out: Path, err: Path, rc: Path) -> None:
        self.pid, self.out, self.err, self._rc = pid, out, err, rc

    @property
    def returncode(self) -> Optional[int]:
        """The exit status (``-9`` for SIGKILL) once it ended, else None."""
        return int(self._rc.read_text()) if self._rc.exists() else None

    def wait(self, timeout: float) -> Optional[int]:
        """Waits up to ``timeout`` seconds for the end; returns :attr:`returncode`."""
        deadline = time.monotonic() + timeout
        while self.returncode is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.returncode

    def kill(self) -> float:
        """SIGKILLs the process (unless it ended); returns when (``time.monotonic()``)."""
        if self.returncode is None:  # not reaped yet, so the pid is still this process's
            os.kill(self.pid, signal.SIGKILL)
        return time.monotonic()

    def stdout(self) -> str:
        """What it printed so far."""
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def stderr(self) -> str:
        """What it wrote to stderr so far."""
        return self.err.read_text(errors="replace") if self.err.exists() else ""

    def wait_for_line(self, text: str, timeout: float = START_TIMEOUT) -> None:
        """Waits until a line of its stdout is ``text``; fails if it ends first or takes too long."""
        deadline = time.monotonic() + timeout
        while text not in self.stdout().splitlines():
            assert self.returncode is None, f"ended ({self.returncode}) before {text!r}: {self.stderr()[-3000:]}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout} s: {self.stderr()[-3000:]}"
            time.sleep(0.02)


class Forker:
    """One process that imported ``distribute`` and forks the test's task processes.

    Args:
        tmp_dir: where the exit statuses and output files go.
    """

    def __init__(self, tmp_dir: Path) -> None:
        self._dir = tmp_dir
        self._count = 0
        self._proc = subprocess.Popen([sys.executable, "-c", FORKER, str(tmp_dir)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=environment(None), text=True,
                                      start_new_session=True)
        assert self._readline() == "ready", "the forker did not start"

    def _readline(self) -> str:
        assert self._proc.stdout is not None
        return self._proc.stdout.readline().strip()

    def spawn(self, code: str, argv: List[str], name: str, secret: Optional[str]) -> Child:
        """Forks a child running ``code`` with ``sys.argv[1:] == argv`` and the job secret ``secret``."""
        assert self._proc.stdin is not None and self._proc.poll() is None, "the forker is gone"
        self._count += 1
        out, err = self._dir / f"{name}.{self._count}.out", self._dir / f"{name}.{self._count}.err"
        order = {"code": code, "argv": argv, "stdout": str(out), "stderr": str(err), "secret": secret}
        self._proc.stdin.write(json.dumps(order) + "\n")
        self._proc.stdin.flush()
        pid = int(self._readline())
        return Child(pid, out, err, self._dir / f"{pid}.rc")

    def close(self) -> None:
        """Kills the forker and everything it forked."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - already gone
            pass
        self._proc.wait(10)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()


class PsJob:
    """``workers`` worker and ``ps`` ps processes of one job (and a chief address for the coordinator).

    Args:
        forker: forks the task processes.
        workers: the number of worker tasks.
        ps: the number of ps tasks.
    """

    def __init__(self, forker: Forker, workers: int = 2, ps: int = 1) -> None:
        ports = free_ports("127.0.0.1", 1 + workers + ps)
        addresses = [f"127.0.0.1:{p}" for p in ports]
        self.spec = {"chief": addresses[:1], "worker": addresses[1:1 + workers], "ps": addresses[1 + workers:]}
        self._forker = forker
        self.tasks: Dict[str, Child] = {}
        self._children: List[Child] = []
        self._coordinator: Any = None

    def __enter__(self) -> "PsJob":
        try:
            for job in ("ps", "worker"):
                for i in range(len(self.spec[job])):
                    self.start(f"{job}:{i}", wait=False)
            for task in self.tasks.values():
                task.wait_for_line("listening")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self, task: str, wait: bool = True) -> Child:
        """Starts (or restarts, at the same address) ``task`` (``'worker:1'``)."""
        job, index = task.split(":")
        child = self._forker.spawn(TASK, [json.dumps(self.spec), job, index], task.replace(":", "-"),
                                   os.environ["DISTRIBUTE_JOB_SECRET"])
        self._children.append(child)
        self.tasks[task] = child
        if wait:
            child.wait_for_line("listening")
        return child

    def kill(self, task: str) -> float:
        """SIGKILLs ``task`` and waits for its end; returns the time of the kill."""
        killed = self.tasks[task].kill()
        assert self.tasks[task].wait(10) is not None, f"{task} survived SIGKILL"
        return killed

    def wait_all_exit(self, timeout: float) -> Tuple[float, Dict[str, Optional[int]]]:
        """Waits up to ``timeout`` for every task to end; returns how long it took and their exit statuses."""
        start = time.monotonic()
        for task in self.tasks.values():
            task.wait(max(0.0, timeout - (time.monotonic() - start)))
        return time.monotonic() - start, {name: task.returncode for name, task in self.tasks.items()}

    def start_coordinator(self, mode: str) -> Child:
        """A child coordinator running :data:`COORDINATOR` (``mode``: ``'hold'`` sleeps, ``'end'`` returns)."""
        child = self._forker.spawn(COORDINATOR, [json.dumps(self.spec), mode], "chief",
                                   os.environ["DISTRIBUTE_JOB_SECRET"])
        self._children.append(child)
        return child

    def coordinator(self, partitioner: Any = None) -> Tuple[Any, Any]:
        """A strategy and its ``ClusterCoordinator`` in this process (ended by :meth:`close`)."""
        import distribute
        from distribute.cluster_resolver import ClusterSpec, SimpleClusterResolver

        resolver = SimpleClusterResolver(ClusterSpec(self.spec), task_type="chief", task_id=0)
        strategy = distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
        self._coordinator = distribute.coordinator.ClusterCoordinator(strategy)
        return strategy, self._coordinator

    def close(self) -> None:
        """Ends this process's coordinator, then kills every child and waits for their ends."""
        if self._coordinator is not None:
            self._coordinator._shutdown()
            self._coordinator.strategy.extended._conns.close()
            self._coordinator = None
        for child in self._children:
            child.kill()
        for child in self._children:
            assert child.wait(10) is not None, f"process {child.pid} survived SIGKILL"
