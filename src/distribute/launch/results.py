"""What a launch returns: one :class:`TaskResult` per task and a :class:`LaunchResult`.

Exit statuses follow the shell's convention: a process killed by signal ``N`` has status
``128 + N`` (143 for SIGTERM, 137 for SIGKILL), never a negative number.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Dict, List, Optional

__all__ = ["EXIT_TIMEOUT", "LaunchResult", "TaskResult", "describe_status", "exit_status",
           "signal_name"]

EXIT_TIMEOUT = 124
"""The launch's status when its deadline expired (as the ``timeout`` command uses)."""


def exit_status(returncode: int) -> int:
    """Maps a ``Popen.returncode`` to a shell exit status (``-15`` -> ``143``).

    Example:
        >>> exit_status(0), exit_status(3), exit_status(-15)
        (0, 3, 143)
    """
    return 128 - returncode if returncode < 0 else returncode


def signal_name(signum: int) -> str:
    """``'SIGTERM'`` for 15; the number as text for an unknown signal."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def describe_status(status: int) -> str:
    """How a task ended, for the launcher's messages.

    Example:
        >>> describe_status(1), describe_status(137)
        ('exited with status 1', 'was killed by SIGKILL (status 137)')
    """
    if status > 128 and status - 128 < signal.NSIG:
        return f"was killed by {signal_name(status - 128)} (status {status})"
    return f"exited with status {status}"


@dataclass(frozen=True)
class TaskResult:
    """How one task ended.

    Attributes:
        task: the task's name, e.g. ``'worker:1'``.
        returncode: its exit status (``128 + N`` when signal ``N`` killed it).
        output: everything it wrote to stdout and stderr, line by line, unprefixed.
        stopped: True when the launcher signalled it (because another task failed, the
            deadline expired or the launcher was interrupted) before it exited on its own.
    """

    task: str
    returncode: int
    output: str
    stopped: bool = False


@dataclass(frozen=True)
class LaunchResult:
    """How a launch ended.

    Attributes:
        returncode: 0 when every task succeeded; else the status of the first task that
            failed; else :data:`EXIT_TIMEOUT` when the deadline expired; else ``128 + N``
            when the launcher received signal ``N``. In a parameter-server job (ps tasks
            and a chief) only the chief's status counts: a worker or ps that failed while
            the chief ran does not make the job fail.
        failed_task: the name of the first task that failed (``'worker:1'``), or None; in a
            parameter-server job, ``'chief:0'`` or None.
        timed_out: True when the deadline expired and the launcher stopped the tasks.
        tasks: ``'worker:0'`` -> :class:`TaskResult`, chief first, then workers, then ps.
        output: every task's lines, prefixed with ``[task]``, in the order they arrived,
            and the launcher's own notes (``[launch] worker:1 exited with status 1; the
            coordinator carries on``).
        cluster_spec: the ``cluster`` dict written into every task's ``TF_CONFIG``.
        signal: the signal that interrupted the launcher (forwarded to the tasks), or None.
    """

    returncode: int
    failed_task: Optional[str]
    timed_out: bool
    tasks: Dict[str, TaskResult]
    output: str
    cluster_spec: Dict[str, List[str]] = field(default_factory=dict)
    signal: Optional[int] = None

    def summary(self) -> str:
        """One line saying how the launch ended, e.g. ``'worker:1 exited with status 3; ...'``."""
        stopped = [name for name, task in self.tasks.items() if task.stopped]
        tail = f"; stopped {', '.join(stopped)}" if stopped else ""
        if self.failed_task is not None:
            status = self.tasks[self.failed_task].returncode
            return f"{self.failed_task} {describe_status(status)}{tail}"
        if self.timed_out:
            return f"the deadline expired{tail}"
        if self.signal is not None:
            return f"interrupted by {signal_name(self.signal)}{tail}"
        failures = [f"{name} {describe_status(task.returncode)}"
                    for name, task in self.tasks.items() if task.returncode and not task.stopped]
        if failures and _is_ps_job(self.tasks):  # the chief carried on without them
            return f"chief:0 succeeded; carried on after {', '.join(failures)}{tail}"
        return f"all {len(self.tasks)} tasks succeeded{tail}"


def _is_ps_job(tasks: Dict[str, TaskResult]) -> bool:
    """True for a parameter-server job (ps tasks and a chief), which ends with its chief."""
    return "chief:0" in tasks and any(name.startswith("ps:") for name in tasks)
