"""Dataset.enumerate: pairs each element with its index, ``(int64 index, element)``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import _structure
from distribute.data._common import END, check_int
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._random_access import RandomAccess

__all__ = ["EnumerateDataset"]


class _EnumerateAccess(RandomAccess):
    def __init__(self, inner: RandomAccess, start: int) -> None:
        self._inner, self._start = inner, start
        self.length, self.returns_views = inner.length, inner.returns_views

    def rows(self, start: int, stop: int) -> Any:
        index = torch.arange(self._start + start, self._start + stop, dtype=torch.int64)
        return (index, self._inner.rows(start, stop))

    def gather(self, index: torch.Tensor) -> Any:
        return (index + self._start, self._inner.gather(index))

    def elements(self, start: int, stop: int) -> List[Any]:
        counts = torch.arange(self._start + start, self._start + stop, dtype=torch.int64).unbind(0)
        return list(zip(counts, self._inner.elements(start, stop)))


class _EnumerateIterator(UnaryIteratorImpl):
    op = "enumerate"

    def __init__(self, dataset: "EnumerateDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._next_index = dataset.start
        self.fast_rows = self._input.fast_rows

    def next(self) -> Any:
        value = self._input.next()
        if value is END:
            return END
        index = torch.tensor(self._next_index)
        self._next_index += 1
        return (index, value)

    def next_rows(self, n: int) -> Any:
        rows = self._input.next_rows(n)
        if rows is END:
            return END
        count = _structure.num_rows(rows)
        index = torch.arange(self._next_index, self._next_index + count, dtype=torch.int64)
        self._next_index += count
        return (index, rows)

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "next_index": self._next_index}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._next_index = int(state["next_index"])
        super()._restore(state)


class EnumerateDataset(UnaryDataset):
    """``ds.enumerate(start)``; attribute ``start``."""

    _op = "enumerate"

    def __init__(self, input_dataset: Dataset, start: int = 0, name: Optional[str] = None) -> None:
        self.start = check_int("start", start)
        super().__init__(input_dataset, name)

    def _compute_element_spec(self) -> Any:
        return (TensorSpec((), torch.int64), self._input_dataset.element_spec)

    def _build_random_access(self) -> Optional[RandomAccess]:
        inner = self._input_dataset._random_access()
        return None if inner is None else _EnumerateAccess(inner, self.start)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _EnumerateIterator(self, ctx)
