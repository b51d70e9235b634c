"""The coordinator's queue of scheduled functions and what it knows of their failures.

Error rules, as in TensorFlow: the first error a function raises is kept; the functions still
queued are cancelled; ``schedule``, ``join`` and ``done`` raise the kept error once and clear it.
A parameter server that fails is fatal: every later call raises its ``UnavailableError``.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Deque, List, Optional

from distribute.errors import CancelledError

__all__ = ["Closure", "ClosureQueue"]


class Closure:
    """One scheduled call: the function's payload, its pickled arguments, its ``RemoteValue``."""

    def __init__(self, function: Any, args_blob: bytes, args_tensors: list, output: Any) -> None:
        self.function, self.args_blob, self.args_tensors, self.output = function, args_blob, args_tensors, output


class ClosureQueue:
    """Closures waiting for a worker, those in flight, and the first error."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: Deque[Closure] = collections.deque()
        self._inflight = 0
        self._error: Optional[BaseException] = None
        self.fatal: Optional[BaseException] = None
        self.stopped = False

    def put(self, closure: Closure) -> None:
        """Queues ``closure`` unless an error is pending (then raises it)."""
        with self._cond:
            self._raise_pending()
            self._queue.append(closure)
            self._cond.notify()

    def take(self, workers: int, limit: int = 32, timeout: float = 0.5) -> List[Closure]:
        """Up to ``limit`` closures (a fair share among ``workers``); [] after ``timeout`` or when stopped."""
        with self._cond:
            if not self._queue and not self.stopped:
                self._cond.wait(timeout)
            if not self._queue or self.stopped or self.fatal is not None:
                return []
            count = max(1, min(limit, -(-len(self._queue) // max(1, workers))))
            batch = [self._queue.popleft() for _ in range(min(count, len(self._queue)))]
            self._inflight += len(batch)
            return batch

    def put_back(self, batch: List[Closure]) -> None:
        """Returns closures whose worker failed to the front of the queue (they run again)."""
        with self._cond:
            self._inflight -= len(batch)
            if self.fatal is not None or self._error is not None:
                for closure in batch:
                    closure.output._abort(self.fatal)
            else:
                self._queue.extendleft(reversed(batch))
            self._cond.notify_all()

    def finished(self, count: int) -> None:
        """``count`` closures in flight have their results."""
        with self._cond:
            self._inflight -= count
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        """A function raised ``error``: keep the first error; cancel the queued closures."""
        with self._cond:
            if self._error is None:
                self._error = error
            self._cancel_queued(None)
            self._cond.notify_all()

    def fail_fatally(self, error: BaseException) -> None:
        """A parameter server failed: every closure fails with ``error``, now and later."""
        with self._cond:
            if self.fatal is None:
                self.fatal = error
            self._cancel_queued(error)
            self._cond.notify_all()

    def _cancel_queued(self, error: Optional[BaseException]) -> None:
        while self._queue:
            self._queue.popleft().output._abort(error or CancelledError(
                "The corresponding function is aborted. Please reschedule the function."))

    def _raise_pending(self) -> None:
        if self.fatal is not None:
            raise self.fatal
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def join(self) -> None:
        """Waits until nothing is queued or in flight, then raises the pending error, if any."""
        with self._cond:
            while (self._queue or self._inflight) and self._error is None and self.fatal is None:
                self._cond.wait(0.5)
            self._raise_pending()

    def done(self) -> bool:
        """Whether nothing is queued or in flight; raises the pending error, if any."""
        with self._cond:
            self._raise_pending()
            return not self._queue and not self._inflight

    def stop(self) -> None:
        """Wakes and ends every worker thread."""
        with self._cond:
            self.stopped = True
            self._cond.notify_all()
