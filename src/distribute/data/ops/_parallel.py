"""Worker threads for ``map(num_parallel_calls=...)``, used only when they pay.

On these machines waking a thread on another core costs about 50 us, more than a cheap
element, so a parallel map starts inline and measures its function on the first elements.
Only if one call takes at least :data:`POLICY.min_us` does it switch to threads, and then it
hands over whole chunks (enough elements for about :data:`POLICY.chunk_us` of work), never
single elements. The consumer's thread computes one chunk while the workers compute the
others; torch operations release the GIL, so the chunks really overlap. The first few
threaded rounds are timed too: if an element does not get at least 15% cheaper than inline
(intra-op threads may already use both cores), the threads stop and the map goes back
inline. Results come back in input order; an exception is kept at the position of the
element that raised it.
"""

from __future__ import annotations

import builtins
import os
import queue
import threading
from typing import Any, Callable, Dict, List, Optional

__all__ = ["Failure", "POLICY", "WorkerPool", "run_chunk"]


class _Policy:
    """Thresholds of the parallel path (tests lower them to force threads)."""

    def __init__(self) -> None:
        self.min_us = 20.0  # per-element cost from which threads pay
        self.chunk_us = 2000.0  # work handed to a thread at once
        self.probe_elements = 16  # elements timed inline before deciding
        self.max_chunk = 256
        self.review_fills = 3  # threaded fills timed before keeping the threads
        self.keep_ratio = 0.85  # keep them if an element costs at most this share of inline

    def chunk_size(self, per_element_us: float) -> int:
        """Elements per chunk for a function taking ``per_element_us``."""
        return max(1, min(self.max_chunk, int(self.chunk_us / max(per_element_us, 1.0))))


POLICY = _Policy()


class Failure:
    """An exception raised by a user function, kept at its element's position."""

    __slots__ = ("exception",)

    def __init__(self, exception: BaseException) -> None:
        self.exception = exception

    def to_state(self) -> Dict[str, str]:
        """Plain data for a state dict: the exception's type name and message."""
        return {"error": type(self.exception).__name__, "message": str(self.exception)}

    @staticmethod
    def from_state(state: Dict[str, str]) -> "Failure":
        """Rebuilds a failure saved by :meth:`to_state` (builtin types keep their type)."""
        cls = getattr(builtins, state["error"], None)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            cls = RuntimeError
        return Failure(cls(f"{state['error']}: {state['message']} (restored from a saved state)"))


def run_chunk(fn: Callable[[Any], Any], elements: List[Any]) -> List[Any]:
    """``fn`` over ``elements``; an exception becomes a :class:`Failure` in its slot."""
    out: List[Any] = []
    for element in elements:
        try:
            out.append(fn(element))
        except Exception as exc:  # noqa: BLE001  re-raised in the consumer at this element
            out.append(Failure(exc))
    return out


class _Task:
    __slots__ = ("fn", "elements", "result", "done")

    def __init__(self, fn: Callable[[Any], Any], elements: List[Any]) -> None:
        self.fn, self.elements = fn, elements
        self.result: Optional[List[Any]] = None
        self.done = threading.Event()


class WorkerPool:
    """A few daemon threads running chunks; stopped and joined by :meth:`close`."""

    def __init__(self, workers: int) -> None:
        self._tasks: "queue.SimpleQueue[Optional[_Task]]" = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"distribute.data.map-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def size_for(num_parallel_calls: int) -> int:
        """Worker threads for a parallelism: the consumer's thread counts as one."""
        cores = os.cpu_count() or 1
        wanted = cores if num_parallel_calls < 0 else min(num_parallel_calls, cores)
        return max(wanted - 1, 0)

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            task.result = run_chunk(task.fn, task.elements)
            task.done.set()

    def submit(self, fn: Callable[[Any], Any], elements: List[Any]) -> _Task:
        """Queues a chunk; wait on ``task.done`` and read ``task.result``."""
        task = _Task(fn, elements)
        self._tasks.put(task)
        return task

    def close(self) -> None:
        """Stops the threads after the chunks already queued, and joins them."""
        for _ in self._threads:
            self._tasks.put(None)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join()
        self._threads = []
