"""Running the task processes: start them, relay their output, stop them, reap them.

Each task runs in a new session, hence its own process group, so that a signal to the group
reaches the task and everything it started, and nothing outside it. One loop in the caller's
thread (no helper threads) reads every pipe through a selector, notices exits, forwards
signals and enforces the deadline:

* a task that exits with a non-zero status is the *failed task*: every other task's group
  gets SIGTERM, then SIGKILL after the grace period;
* when the chief and all workers have succeeded, the parameter servers (which serve them
  and never finish on their own) are stopped the same way, and that is a success (this is
  for ps tasks without a chief, which :func:`~distribute.launch.launch` never plans);
* a *parameter-server job* (ps tasks and a chief, the coordinator) ends with its chief
  instead: a worker or ps that fails is only reported (``[launch] worker:1 exited with
  status 1; the coordinator carries on``), since the coordinator retries its work on other
  workers or gives up by itself; when the chief exits, its status is the job's, and the
  other tasks get the grace period to exit on their own (they do once their coordinator is
  gone), then SIGTERM, then SIGKILL after another grace period;
* a caught signal is forwarded to every group; a second one kills them at once;
* when the deadline expires every task is stopped.

An exit is noticed with ``waitid(WNOWAIT)``, which leaves the task unreaped, so its process
id, which is also its group id, cannot be reused until the end: the final SIGKILL to every
group (which removes anything a task left behind) can never reach an unrelated process.
Whatever happens, even an exception in the launcher, every group is killed and every task
reaped before :meth:`Supervisor.run` returns or raises.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import IO, Dict, List, Mapping, Optional, Sequence, Tuple

from distribute.launch.output import OutputCollector
from distribute.launch.results import (EXIT_TIMEOUT, LaunchResult, TaskResult, describe_status,
                                       exit_status)
from distribute.launch.signals import SignalCatcher

__all__ = ["Supervisor", "TaskCommand"]

POLL_SECONDS = 0.05
DRAIN_SECONDS = 1.0
REAP_SECONDS = 5.0
_READ_BYTES = 1 << 16


@dataclass(frozen=True)
class TaskCommand:
    """What to run for one task."""

    task: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(repr=False)  # holds the job secret: never shown
    is_ps: bool = False
    is_chief: bool = False


@dataclass
class _Child:
    task: str
    is_ps: bool
    is_chief: bool
    proc: "subprocess.Popen[bytes]"
    status: Optional[int] = None
    stopped: bool = False

    @property
    def running(self) -> bool:
        return self.status is None


def _peek_exit(proc: "subprocess.Popen[bytes]") -> Optional[int]:
    """The exit status of a finished task, without reaping it where the OS allows."""
    if not hasattr(os, "waitid"):  # macOS: fall back to reaping (a reused-pid risk remains)
        code = proc.poll()
        return None if code is None else exit_status(code)
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None or info.si_pid == 0:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return 128 + info.si_status


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


class Supervisor:
    """Runs a cluster's task processes to the end (see the module docstring).

    Args:
        commands: one command per task, in start order.
        collector: receives the tasks' output.
        catcher: the launcher's caught signals, to forward.
        timeout: seconds from the start until every task is stopped, or None.
        grace_period: seconds between SIGTERM and SIGKILL when stopping tasks.
        cwd: the tasks' working directory, or None for this process's.
    """

    def __init__(self, commands: Sequence[TaskCommand], collector: OutputCollector,
                 catcher: SignalCatcher, timeout: Optional[float], grace_period: float,
                 cwd: Optional[str] = None) -> None:
        self._commands = list(commands)
        self._collector = collector
        self._catcher = catcher
        self._timeout = timeout
        self._grace = grace_period
        self._cwd = cwd
        self._children: List[_Child] = []
        self._selector = selectors.DefaultSelector()
        self._streams: Dict[int, Tuple[str, str, IO[bytes]]] = {}
        self._failed: Optional[_Child] = None
        self._timed_out = False
        self._signal: Optional[int] = None
        self._deadline = float("inf")
        self._kill_at: Optional[float] = None
        self._killed = False
        # A parameter-server job ends with its chief; then, at _term_at, the rest get SIGTERM.
        self._ps_job = (any(c.is_ps for c in self._commands)
                        and any(c.is_chief for c in self._commands))
        self._term_at: Optional[float] = None

    def run(self) -> None:
        """Starts every task and returns when all have exited and been reaped."""
        try:
            if self._timeout is not None:
                self._deadline = time.monotonic() + self._timeout
            for command in self._commands:
                self._start(command)
            self._watch()
        finally:
            self._cleanup()

    def record_signals(self, signums: List[int]) -> None:
        """Notes signals caught after the tasks ended (nothing is left to forward them to)."""
        if signums and self._signal is None:
            self._signal = signums[0]

    def result(self, cluster_spec: Dict[str, List[str]]) -> LaunchResult:
        """The outcome of :meth:`run`."""
        tasks = {c.task: TaskResult(c.task, c.status if c.status is not None else -1,
                                    self._collector.task_output(c.task), c.stopped)
                 for c in self._children}
        return LaunchResult(self._returncode(), self._failed.task if self._failed else None,
                            self._timed_out, tasks, self._collector.output(), cluster_spec,
                            self._signal)

    def _returncode(self) -> int:
        if self._failed is not None and self._failed.status is not None:
            return self._failed.status
        if self._timed_out:
            return EXIT_TIMEOUT
        if self._signal is not None:
            return 128 + self._signal
        return 0

    def _start(self, command: TaskCommand) -> None:
        proc = subprocess.Popen(
            list(command.argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(command.env), cwd=self._cwd,
            start_new_session=True, close_fds=True)
        self._children.append(_Child(command.task, command.is_ps, command.is_chief, proc))
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert stream is not None  # both are pipes
            self._streams[stream.fileno()] = (command.task, name, stream)
            self._selector.register(stream, selectors.EVENT_READ)

    def _watch(self) -> None:
        while True:
            self._read(self._wait_seconds())
            self._check_exits()
            self._forward_signals()
            self._check_deadline()
            self._escalate()
            if not any(child.running for child in self._children):
                break
        self._signal_all(signal.SIGKILL, everyone=True)  # what the tasks left behind
        self._drain()

    def _wait_seconds(self) -> float:
        now = time.monotonic()
        limits = [POLL_SECONDS, self._deadline - now]
        if self._kill_at is not None and not self._killed:
            limits.append(self._kill_at - now)
        if self._term_at is not None and self._kill_at is None:
            limits.append(self._term_at - now)
        return max(0.0, min(limits))

    def _read(self, timeout: float) -> None:
        if not self._streams:
            time.sleep(timeout)
            return
        for key, _ in self._selector.select(timeout):
            task, name, stream = self._streams[key.fd]
            data = os.read(key.fd, _READ_BYTES)
            if data:
                self._collector.feed(task, name, data)
            else:
                self._close_stream(key.fd)

    def _close_stream(self, fd: int) -> None:
        task, name, stream = self._streams.pop(fd)
        self._selector.unregister(stream)
        stream.close()
        self._collector.close(task, name)

    def _check_exits(self) -> None:
        for child in self._children:
            if not child.running:
                continue
            child.status = _peek_exit(child.proc)
            if child.status is not None and not child.stopped and not self._stopping:
                self._on_exit(child)
        servers_only = all(c.is_ps for c in self._children if c.running)
        if servers_only and not self._stopping and not self._ps_job:
            self._stop(signal.SIGTERM)  # the chief and workers succeeded: ps are done

    def _on_exit(self, child: _Child) -> None:
        """A task exited on its own while the job runs (see the module docstring)."""
        if not self._ps_job:
            if child.status:
                self._failed = child
                self._stop(signal.SIGTERM)
        elif child.is_chief:  # the coordinator is done: so is the job
            self._failed = child if child.status else None
            self._term_at = time.monotonic() + self._grace
        elif child.status:
            self._collector.note(f"{child.task} {describe_status(child.status)}; "
                                 "the coordinator carries on")

    @property
    def _stopping(self) -> bool:
        return self._kill_at is not None or self._term_at is not None

    def _stop(self, signum: int) -> None:
        self._signal_all(signum)
        if self._kill_at is None:
            self._kill_at = time.monotonic() + self._grace

    def _signal_all(self, signum: int, everyone: bool = False) -> None:
        for child in self._children:
            if everyone or child.running:
                _signal_group(child.proc.pid, signum)
                child.stopped = child.stopped or child.running

    def _forward_signals(self) -> None:
        for signum in self._catcher.take():
            if self._signal is None:
                self._signal = signum
                self._stop(signum)
            else:  # asked twice: do not wait for the grace period
                self._signal_all(signal.SIGKILL)
                self._killed = True

    def _check_deadline(self) -> None:
        if time.monotonic() >= self._deadline and not self._stopping:
            self._timed_out = True
            self._stop(signal.SIGTERM)

    def _escalate(self) -> None:
        if self._term_at is not None and self._kill_at is None and time.monotonic() >= self._term_at:
            self._stop(signal.SIGTERM)  # the tasks a parameter-server job's chief left running
        if self._kill_at is not None and not self._killed and time.monotonic() >= self._kill_at:
            self._signal_all(signal.SIGKILL)
            self._killed = True

    def _drain(self) -> None:
        """Reads what is left in the pipes (a task's last lines), for a bounded time."""
        end = time.monotonic() + DRAIN_SECONDS
        while self._streams and time.monotonic() < end:
            self._read(min(POLL_SECONDS, max(0.0, end - time.monotonic())))
        for fd in list(self._streams):  # held open by a process that escaped its group
            self._close_stream(fd)

    def _cleanup(self) -> None:
        """Kills every group and reaps every task; closes the pipes (runs even on errors)."""
        try:
            self._signal_all(signal.SIGKILL, everyone=True)
            for child in self._children:
                self._reap(child)
        finally:
            for _task, _name, stream in self._streams.values():
                stream.close()
            self._streams.clear()
            self._selector.close()

    @staticmethod
    def _reap(child: _Child) -> None:
        try:
            code = child.proc.wait(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:
            return  # stuck in the kernel after SIGKILL; nothing more can be done
        if child.status is None:
            child.status = exit_status(code)
