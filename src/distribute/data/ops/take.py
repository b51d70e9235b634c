"""Dataset.take: the first ``count`` elements (all of them for ``count=-1``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, check_int
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["TakeDataset", "check_count"]


def check_count(name: str, count: Any) -> int:
    """A count argument: an int >= 0, or -1 for "all"."""
    count = check_int("count", count)
    if count < -1:
        raise InvalidArgumentError(
            f"Expected `count` of {name} to be >= 0, or -1 for all elements; received count={count}."
        )
    return count


class _TakeAccess(RandomAccess):
    def __init__(self, inner: RandomAccess, length: Optional[int]) -> None:
        self._inner, self.length, self.returns_views = inner, length, inner.returns_views

    def rows(self, start: int, stop: int) -> Any:
        return self._inner.rows(start, stop)

    def gather(self, index: torch.Tensor) -> Any:
        return self._inner.gather(index)

    def elements(self, start: int, stop: int) -> List[Any]:
        return self._inner.elements(start, stop)


class _TakeIterator(UnaryIteratorImpl):
    op = "take"

    def __init__(self, dataset: "TakeDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._left = dataset.count
        self.fast_rows = self._input.fast_rows

    def next(self) -> Any:
        if self._left == 0:
            return END
        value = self._input.next()
        if value is END:
            self._left = 0
            return END
        self._left -= 1
        return value

    def next_list(self, n: int) -> List[Any]:
        if self._left == 0:
            return []
        out = self._input.next_list(n if self._left < 0 else min(n, self._left))
        if not out:
            self._left = 0
        elif self._left > 0:
            self._left -= len(out)
        return out

    def next_rows(self, n: int) -> Any:
        if self._left == 0:
            return END
        rows = self._input.next_rows(n if self._left < 0 else min(n, self._left))
        if rows is END:
            self._left = 0
        elif self._left > 0:
            self._left -= _structure.num_rows(rows)
        return rows

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "left": self._left}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._left = int(state["left"])
        super()._restore(state)


class TakeDataset(UnaryDataset):
    """``ds.take(count)``; attribute ``count``."""

    _op = "take"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, count: int, name: Optional[str] = None) -> None:
        self.count = check_count("take", count)
        super().__init__(input_dataset, name)

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if self.count == -1:
            return n
        if n == INFINITE_CARDINALITY:
            return self.count
        if n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        return min(n, self.count)

    def _build_random_access(self) -> Optional[RandomAccess]:
        inner = self._input_dataset._random_access()
        if inner is None:
            return None
        if self.count == -1:
            return _TakeAccess(inner, inner.length)
        return _TakeAccess(inner, self.count if inner.length is None else min(inner.length, self.count))

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _TakeIterator(self, ctx)
