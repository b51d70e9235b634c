"""Dataset.unique: each distinct element once, at its first occurrence.

As in tf.data, the elements must be a single component of dtype int32, int64 or string
(of any shape: whole tensors are compared). State: the elements seen so far (as plain
lists) and the input's state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, string
from distribute.data._common import END, UNKNOWN_CARDINALITY
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.errors import InvalidArgumentError

__all__ = ["UniqueDataset"]

_DTYPES = (torch.int32, torch.int64, string)


def _key(element: Any) -> tuple:
    """A hashable plain-data key of one element (kept in the state as nested lists)."""
    if isinstance(element, torch.Tensor):
        return (tuple(element.shape), tuple(element.reshape(-1).tolist()))
    if isinstance(element, bytes):
        return ((), (element.decode("latin-1"),))
    array = np.asarray(element, dtype=object)
    return (array.shape, tuple(b.decode("latin-1") for b in array.reshape(-1)))


def _freeze(key: List[Any]) -> tuple:
    return (tuple(key[0]), tuple(key[1]))


class _UniqueIterator(UnaryIteratorImpl):
    op = "unique"

    def __init__(self, dataset: "UniqueDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._seen: Set[tuple] = set()
        self._order: List[tuple] = []

    def next(self) -> Any:
        while True:
            element = self._input.next()
            if element is END:
                return END
            key = _key(element)
            if key not in self._seen:
                self._seen.add(key)
                self._order.append(key)
                return element

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "seen": [[list(k[0]), list(k[1])] for k in self._order]}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        self._order = [_freeze(k) for k in state["seen"]]
        self._seen = set(self._order)


class UniqueDataset(UnaryDataset):
    """``ds.unique()``."""

    _op = "unique"

    def __init__(self, input_dataset: Dataset, name: Optional[str] = None) -> None:
        super().__init__(input_dataset, name)
        spec = input_dataset.element_spec
        if nest.is_nested(spec):
            raise InvalidArgumentError(
                f"UniqueDataset only supports inputs with a single component; the elements have "
                f"spec {spec}. Apply unique() to a dataset of one tensor (map to one component)."
            )
        if not isinstance(spec, TensorSpec) or spec.dtype not in _DTYPES:
            raise TypeError(
                f"`Dataset.unique` does not support elements of spec {spec} -- only "
                f"int32, int64 and string are supported. Cast the elements first."
            )

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _UniqueIterator(self, ctx)
