"""``RemoteValue`` and ``PerWorkerValue``: results and per-worker objects of scheduled functions."""

from __future__ import annotations

import enum
import threading
from typing import Any, Optional, Sequence

import torch

from distribute._base.nest import map_structure
from distribute.errors import CancelledError

__all__ = ["PerWorkerValue", "RemoteValue", "RemoteValueStatus"]

ABORTED_MESSAGE = "The corresponding function is aborted. Please reschedule the function."


class RemoteValueStatus(enum.Enum):
    """Where a scheduled function's result stands."""

    NOT_READY = "NOT_READY"
    ABORTED = "ABORTED"
    READY = "READY"


class RemoteValue:
    """The result of a function scheduled with ``ClusterCoordinator.schedule``.

    Example:
        >>> # rv = coordinator.schedule(step, args=(iterator,))
        >>> # rv.fetch()   # waits, then gives numpy values (the function's error, if it raised)
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._status = RemoteValueStatus.NOT_READY
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def _set(self, value: Any) -> None:
        if not self._event.is_set():
            self._value, self._status = value, RemoteValueStatus.READY
            self._event.set()

    def _fail(self, error: BaseException) -> None:
        if not self._event.is_set():
            self._error, self._status = error, RemoteValueStatus.READY
            self._event.set()

    def _abort(self, error: Optional[BaseException] = None) -> None:
        if not self._event.is_set():
            self._error = error or CancelledError(ABORTED_MESSAGE)
            self._status = RemoteValueStatus.ABORTED
            self._event.set()

    def _wait(self) -> Any:
        self._event.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def fetch(self) -> Any:
        """Waits for the function and returns its result as numpy values (structure kept).

        Raises:
            Exception: the function's error; ``CancelledError`` if it was aborted and not re-run.
        """
        return map_structure(lambda v: v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v,
                             self._wait())

    def get(self) -> Any:
        """Waits for the function and returns its result as tensors (copied to the coordinator)."""
        return self._wait()

    def __repr__(self) -> str:
        return f"<RemoteValue status={self._status.value}>"


class PerWorkerValue:
    """One value per worker; a scheduled function gets the component of the worker it runs on.

    Args:
        values: one ``RemoteValue`` per worker, in worker order.
    """

    def __init__(self, values: Sequence[Any]) -> None:
        for value in values:
            assert isinstance(value, RemoteValue), f"PerWorkerValue holds RemoteValues, received {value!r}"
        self._values = tuple(values)

    def __repr__(self) -> str:
        return f"PerWorkerValue({list(self._values)!r})"


class WorkerResource(RemoteValue):
    """A per-worker object (a dataset or an iterator) held by a worker, named by ``resource_id``."""

    def __init__(self, resource_id: int, worker: int) -> None:
        super().__init__()
        self.resource_id, self.worker = resource_id, worker
        self._set(None)
