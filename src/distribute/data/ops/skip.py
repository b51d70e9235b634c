"""Dataset.skip: everything after the first ``count`` elements (nothing for ``count=-1``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._random_access import RandomAccess
from distribute.data.ops.take import check_count
from distribute.errors import InvalidArgumentError

__all__ = ["SkipDataset"]


class _SkipAccess(RandomAccess):
    def __init__(self, inner: RandomAccess, offset: int) -> None:
        self._inner, self._offset, self.returns_views = inner, offset, inner.returns_views
        self.length = None if inner.length is None else max(inner.length - offset, 0)

    def rows(self, start: int, stop: int) -> Any:
        return self._inner.rows(start + self._offset, stop + self._offset)

    def gather(self, index: torch.Tensor) -> Any:
        return self._inner.gather(index + self._offset)

    def elements(self, start: int, stop: int) -> List[Any]:
        return self._inner.elements(start + self._offset, stop + self._offset)


class _SkipIterator(UnaryIteratorImpl):
    op = "skip"

    def __init__(self, dataset: "SkipDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._to_skip = dataset.count
        self.fast_rows = self._input.fast_rows

    def _skip(self) -> bool:
        """Skips what is left to skip; False if the input ended first."""
        while self._to_skip != 0:
            if self._input.fast_rows:
                rows = self._input.next_rows(1024 if self._to_skip < 0 else min(self._to_skip, 1024))
                got = 0 if rows is END else _structure.num_rows(rows)
            else:
                got = 0 if self._input.next() is END else 1
            if got == 0:
                self._to_skip = 0
                return False
            if self._to_skip > 0:
                self._to_skip -= got
        return True

    def next(self) -> Any:
        if self._to_skip != 0 and not self._skip():
            return END
        return self._input.next()

    def next_rows(self, n: int) -> Any:
        if self._to_skip != 0 and not self._skip():
            return END
        return self._input.next_rows(n)

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "to_skip": self._to_skip}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._to_skip = int(state["to_skip"])
        super()._restore(state)


class SkipDataset(UnaryDataset):
    """``ds.skip(count)``; attribute ``count``."""

    _op = "skip"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, count: int, name: Optional[str] = None) -> None:
        self.count = check_count("skip", count)
        super().__init__(input_dataset, name)
        if self.count == -1 and input_dataset.cardinality() == INFINITE_CARDINALITY:
            raise InvalidArgumentError(
                "skip(-1) on an infinite dataset would never produce an element and never end; "
                "skip a finite count, or apply repeat() after skip()."
            )

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if n in (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY):
            return n
        return 0 if self.count == -1 else max(n - self.count, 0)

    def _build_random_access(self) -> Optional[RandomAccess]:
        inner = self._input_dataset._random_access()
        if inner is None or (self.count == -1 and inner.length is None):
            return None
        return _SkipAccess(inner, inner.length if self.count == -1 else self.count)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _SkipIterator(self, ctx)
