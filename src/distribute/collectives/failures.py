"""Errors of multi-process collectives, each naming the task at fault and what it was doing.

A multi-worker job fails as a whole: when one task dies, stops, stalls, raises or calls a
different collective, every other task raises one of these errors instead of hanging or aborting
(a task that is only slow is not a failure until a collective exceeds its timeout). Each
carries structured fields (``task`` such as ``'worker:1'``, ``operation``) besides its message,
so programs and tests can tell who failed without parsing text.

The classes subclass the matching ``distribute.errors`` kind (and through it a builtin), so
``except ConnectionError`` or ``except distribute.errors.UnavailableError`` keep working.
"""

from __future__ import annotations

from typing import Optional, Sequence

from distribute.errors import (CollectiveError, DeadlineExceededError, FailedPreconditionError,
                               GatherShapeMismatchError, UnavailableError)

__all__ = [
    "CollectiveMismatchError", "CollectiveTimeoutError", "GroupBrokenError", "PortInUseError",
    "RendezvousTimeoutError", "WorkerFailedError", "WorkerGatherShapeMismatchError",
]


class _TaskError:
    """Mixin: the structured fields every failure carries."""

    task: Optional[str] = None
    operation: Optional[str] = None

    def _keep(self, task: Optional[str], operation: Optional[str]) -> None:
        self.task = task
        self.operation = operation


class WorkerFailedError(UnavailableError, _TaskError):
    """Another task died, raised, shut down early or became unreachable.

    Attributes:
        task: the failed task, e.g. ``'worker:1'``.
        operation: the collective this task was in when it noticed (``None`` outside one).
        cause: what the failed task reported (``'ValueError: boom'``) or what was observed
            (``'the process exited'``).
    """

    def __init__(self, message: str, *, task: Optional[str] = None, operation: Optional[str] = None,
                 cause: Optional[str] = None) -> None:
        super().__init__(message)
        self._keep(task, operation)
        self.cause = cause


class CollectiveTimeoutError(DeadlineExceededError, _TaskError):
    """A collective cannot finish: a live peer did not reach it within its deadline, or a peer stopped.

    A stopped peer (SIGSTOP, a debugger; no heartbeat for ``liveness.HEARTBEAT_DEADLINE``
    seconds, or a chief whose store stopped answering) is a stalled one: it is alive and may be
    resumed. ``stalled`` names the late tasks.
    """

    def __init__(self, message: str, *, task: Optional[str] = None, operation: Optional[str] = None,
                 stalled: Sequence[str] = ()) -> None:
        super().__init__(message)
        self._keep(task, operation)
        self.stalled = tuple(stalled)


class CollectiveMismatchError(CollectiveError, _TaskError):
    """Workers called different collectives (operation, order, shapes or dtypes).

    Attributes:
        calls: ``{task: description of its call}`` for every worker.
    """

    def __init__(self, message: str, *, task: Optional[str] = None, operation: Optional[str] = None,
                 calls: Optional[dict] = None) -> None:
        super().__init__(message)
        self._keep(task, operation)
        self.calls = dict(calls or {})


class WorkerGatherShapeMismatchError(GatherShapeMismatchError, CollectiveMismatchError):
    """Workers gather values whose shapes differ in rank or off the gather axis.

    An ``InvalidArgumentError`` (a ``ValueError``) with "Shape mismatch", as TensorFlow raises,
    and a :class:`CollectiveMismatchError`: raised on every worker, ``calls`` gives each
    worker's call and shape, and no data moved (the group stays usable).
    """

    def __init__(self, message: str, *, task: Optional[str] = None, operation: Optional[str] = None,
                 calls: Optional[dict] = None) -> None:
        CollectiveMismatchError.__init__(self, message, task=task, operation=operation, calls=calls)


class RendezvousTimeoutError(DeadlineExceededError, _TaskError):
    """The tasks did not all meet within the rendezvous deadline.

    Attributes:
        joined: the tasks that did join (as far as this task could see).
        missing: the tasks that did not.
        address: the rendezvous address ``host:port``.
    """

    def __init__(self, message: str, *, task: Optional[str] = None, joined: Sequence[str] = (),
                 missing: Sequence[str] = (), address: str = "") -> None:
        super().__init__(message)
        self._keep(task, "rendezvous")
        self.joined = tuple(joined)
        self.missing = tuple(missing)
        self.address = address


class PortInUseError(UnavailableError, _TaskError):
    """The rendezvous host could not listen on its address because the port is taken."""

    def __init__(self, message: str, *, task: Optional[str] = None, address: str = "") -> None:
        super().__init__(message)
        self._keep(task, "rendezvous")
        self.address = address


class GroupBrokenError(FailedPreconditionError, _TaskError):
    """A collective was called on a process group that already failed or was shut down."""

    def __init__(self, message: str, *, task: Optional[str] = None, operation: Optional[str] = None) -> None:
        super().__init__(message)
        self._keep(task, operation)
