"""Random access: the bulk path for pipelines over in-memory data.

When every element of a node can be computed from its index (``range``, ``from_tensors``,
``from_tensor_slices`` and ``take``/``skip``/``shard``/``repeat``/``enumerate``/``zip``/
``concatenate`` over such nodes), the node exposes a :class:`RandomAccess` and is iterated
by :class:`RandomAccessIterator`: a position counter. ``next_rows(n)`` is then one tensor
slice (``batch`` uses it), and ``shuffle`` over a random-access input moves indices through
its buffer and gathers the rows with one ``index_select`` per batch.
"""

from __future__ import annotations

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
    """Iterates a RandomAccess by position; its state is the position."""

    fast_rows = True

    def __init__(self, op: str, ra: RandomAccess) -> None:
        self.op = op
        self._ra = ra
        self._length = ra.length
        self._pos = 0
        self._chunk: List[Any] = []

    def _refill(self) -> bool:
        stop = self._pos + _CHUNK
        if self._length is not None:
            stop = min(stop, self._length)
        if stop <= self._pos:
            return False
        chunk = self._ra.elements(self._pos, stop)
        chunk.reverse()
        self._chunk = chunk
        return True

    def next(self) -> Any:
        chunk = self._chunk
        if not chunk and not self._refill():
            return END
        self._pos += 1
        return self._chunk.pop()

    def next_list(self, n: int) -> List[Any]:
        if not self._chunk and not self._refill():
            return []
        count = min(n, len(self._chunk))
        out = self._chunk[len(self._chunk) - count:]
        del self._chunk[len(self._chunk) - count:]
        out.reverse()
        self._pos += count
        return out

    def next_rows(self, n: int) -> Any:
        if self._chunk:
            n = min(n, len(self._chunk))
            elements = [self._chunk.pop() for _ in range(n)]
            self._pos += n
            return _structure.batch_elements(elements, _structure.Structure(elements[0]))
        stop = self._pos + n if self._length is None else min(self._pos + n, self._length)
        if stop <= self._pos:
            return END
        rows = self._ra.rows(self._pos, stop)
        self._pos = stop
        return _structure.clone_rows(rows) if self._ra.returns_views else rows

    def _state(self) -> Dict[str, Any]:
        return {"position": self._pos}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._pos = int(state["position"])
        self._chunk = []
