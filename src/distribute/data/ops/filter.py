"""Dataset.filter: keeps the elements for which a predicate returns a true scalar boolean.

Over in-memory rows feeding a ``batch``, the predicate runs once per batch through
``torch.func.vmap`` (see ``_vectorize``) and the kept rows are gathered with one
``index_select``; otherwise it runs inline, once per element.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Deque, Dict, Optional

import numpy as np
import torch

from distribute.data import _structure
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_callable, user_stop_error
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._vectorize import Vectorizer
from distribute.errors import InvalidArgumentError

__all__ = ["FilterDataset"]


def _predicate_error(value: Any) -> InvalidArgumentError:
    kind = f"a tensor of dtype {value.dtype} and shape {tuple(value.shape)}" if isinstance(
        value, torch.Tensor) else f"{value!r:.100} of type {type(value).__name__}"
    return InvalidArgumentError(
        f"Invalid `predicate`: it must return a scalar boolean (a Python bool or a torch.bool "
        f"tensor of shape ()), but it returned {kind}. Compare or cast inside the predicate, "
        f"for example `lambda x: x > 0`."
    )


def as_bool(value: Any) -> bool:
    """The truth value of a predicate's result, which must be a scalar boolean."""
    if value is True or value is False:
        return value
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.dim() == 0:
        return bool(value)
    if isinstance(value, np.bool_):
        return bool(value)
    raise _predicate_error(value)


class _FilterIterator(UnaryIteratorImpl):
    op = "filter"

    def __init__(self, dataset: "FilterDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._predicate = dataset.predicate
        super().__init__(dataset, ctx)
        self._pending: Deque[Any] = collections.deque()
        self._vec = Vectorizer(self._predicate) if ctx.options.map_vectorization_enabled else None
        self.fast_rows = self._input.fast_rows and self._vec is not None

    def next(self) -> Any:
        predicate, source = self._predicate, self._input.next
        while True:
            element = self._pending.popleft() if self._pending else source()
            if element is END:
                return END
            try:
                keep = predicate(*element) if type(element) is tuple else predicate(element)
            except StopIteration as exc:
                raise user_stop_error(exc, "filter predicate") from exc
            if keep is True or (keep is not False and as_bool(keep)):
                return element

    def next_rows(self, n: int) -> Any:
        if self._vec is None or not self._vec.usable or self._pending:
            return super().next_rows(n)
        while True:
            rows = self._input.next_rows(n)
            if rows is END:
                return END
            mask, rows = self._vec(rows)
            if mask is None or not _is_mask(mask, rows):
                self._vec.usable = self.fast_rows = False
                self._pending.extend(_structure.unstack(rows, _structure.Structure(rows)))
                return super().next_rows(n)
            keep = mask.nonzero().squeeze(1)
            if len(keep):
                return _structure.index_rows(rows, keep)

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "pending": [_structure.encode(e) for e in self._pending]}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        spec = self._dataset.element_spec
        self._pending = collections.deque(_structure.decode(e, spec) for e in state["pending"])


def _is_mask(mask: Any, rows: Any) -> bool:
    return (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.dim() == 1
            and len(mask) == _structure.num_rows(rows))


class FilterDataset(UnaryDataset):
    """``ds.filter(predicate)``; attribute ``predicate``."""

    _op = "filter"
    _batch_size_passthrough = True
    _runs_python = True

    def __init__(self, input_dataset: Dataset, predicate: Callable[..., Any],
                 name: Optional[str] = None) -> None:
        self.predicate = check_callable("predicate", predicate)
        super().__init__(input_dataset, name)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _FilterIterator(self, ctx)
