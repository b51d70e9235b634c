"""Random access: the bulk path for pipelines over in-memory data.

When every element of a node can be computed from its index (``range``, ``from_tensors``,
``from_tensor_slices`` and ``take``/``skip``/``shard``/``repeat``/``enumerate``/``zip``/
``concatenate`` over such nodes), the node exposes a :class:`RandomAccess` and is iterated
by :class:`RandomAccessIterator`: a position counter. ``next_rows(n)`` is then one tensor
slice (``batch`` uses it), and ``shuffle`` over a random-access input moves indices through
its buffer and gathers the rows with one ``index_select`` per batch.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END
from distribute.data.iterator import IteratorImpl

__all__ = ["RandomAccess", "RandomAccessIterator"]

_CHUNK = 64  # elements unstacked at a time on the per-element path


class RandomAccess:
    """Elements computed from their index. ``length`` is None for an infinite sequence."""

    length: Optional[int] = 0
    #: True when :meth:`rows` may return views of memory the node keeps (so callers copy).
    returns_views = False

    def rows(self, start: int, stop: int) -> Any:
        """Elements ``start`` to ``stop - 1`` as one batched element."""
        return self.gather(torch.arange(start, stop, dtype=torch.int64))

    def gather(self, index: torch.Tensor) -> Any:
        """Elements at ``index`` (1-D int64, each within ``length``) as one batched element."""
        raise NotImplementedError(f"{type(self).__name__} must implement gather()")

    def elements(self, start: int, stop: int) -> List[Any]:
        """Elements ``start`` to ``stop - 1`` as a list (the per-element path)."""
        rows = self.rows(start, stop)
        return _structure.unstack(rows, _structure.Structure(rows))


class RandomAccessIterator(IteratorImpl):
    """Iterates a RandomAccess by position; its state is the position.

    Safe to share between threads without the top-level iterator's lock: elements are
    unstacked a chunk at a time into a list and handed out by ``list.pop()``, which is atomic,
    so each element goes to exactly one caller; refilling the chunk and the bulk calls take
    ``_lock``. The position is derived (chunk start + elements popped), never counted per
    element, which is also what keeps the per-element path cheap.
    """

    fast_rows = True
    thread_safe = True

    def __init__(self, op: str, ra: RandomAccess) -> None:
        self.op = op
        self._ra = ra
        self._length = ra.length
        self._start = 0  # position of the current chunk's first element
        self._size = 0  # number of elements in the current chunk
        self._chunk: List[Any] = []  # its elements not yet returned, last one first
        self._lock = threading.Lock()

    def _position(self) -> int:
        return self._start + self._size - len(self._chunk)

    def _refill(self) -> bool:
        """Unstacks the next chunk (the current one is empty); False at the end."""
        position = self._start + self._size
        stop = position + _CHUNK
        if self._length is not None:
            stop = min(stop, self._length)
        if stop <= position:
            return False
        chunk = self._ra.elements(position, stop)
        chunk.reverse()
        self._start, self._size = position, len(chunk)
        self._chunk = chunk
        return True

    def next(self) -> Any:
        try:
            return self._chunk.pop()
        except IndexError:
            return self._next_refilling()

    def _next_refilling(self) -> Any:
        with self._lock:
            while True:
                try:
                    return self._chunk.pop()
                except IndexError:
                    if not self._refill():
                        return END

    def next_list(self, n: int) -> List[Any]:
        with self._lock:
            if not self._chunk and not self._refill():
                return []
            return self._take(n)

    def next_rows(self, n: int) -> Any:
        with self._lock:
            if self._chunk:
                elements = self._take(n)
                return _structure.batch_elements(elements, _structure.Structure(elements[0]))
            position = self._start + self._size
            stop = position + n if self._length is None else min(position + n, self._length)
            if stop <= position:
                return END
            rows = self._ra.rows(position, stop)
            self._start, self._size = stop, 0
        return _structure.clone_rows(rows) if self._ra.returns_views else rows

    def _take(self, n: int) -> List[Any]:
        """Up to ``n`` elements of the current chunk (the caller holds ``_lock``)."""
        chunk = self._chunk
        count = min(n, len(chunk))
        out = chunk[len(chunk) - count:]
        del chunk[len(chunk) - count:]
        out.reverse()
        return out

    def _state(self) -> Dict[str, Any]:
        with self._lock:
            return {"position": self._position()}

    def _restore(self, state: Dict[str, Any]) -> None:
        with self._lock:
            self._start, self._size, self._chunk = int(state["position"]), 0, []
