"""Dataset.concatenate: the elements of one dataset, then those of another.

Both must have the same structure, dtypes and ranks; dimensions that differ become ``None``
in the element_spec.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec
from distribute.data import _structure
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._random_access import RandomAccess

__all__ = ["ConcatenateDataset"]


class _ConcatAccess(RandomAccess):
    def __init__(self, first: RandomAccess, second: RandomAccess, split: int) -> None:
        """``split`` is ``first.length`` (the first input must be finite)."""
        self._first, self._second = first, second
        self._split = split
        self.length = None if second.length is None else split + second.length
        self.returns_views = first.returns_views or second.returns_views

    def rows(self, start: int, stop: int) -> Any:
        if stop <= self._split:
            return self._first.rows(start, stop)
        if start >= self._split:
            return self._second.rows(start - self._split, stop - self._split)
        return self.gather(torch.arange(start, stop))

    def gather(self, index: torch.Tensor) -> Any:
        in_first = index < self._split
        parts = []
        if bool(in_first.any()):
            parts.append(self._first.gather(index[in_first]))
        if not bool(in_first.all()):
            parts.append(self._second.gather(index[~in_first] - self._split))
        if len(parts) == 1:
            return parts[0]
        if bool((in_first[:-1] >= in_first[1:]).all()):  # first-part rows come first
            return _structure.concat_rows(parts)
        order = torch.cat([index[in_first], index[~in_first]]).argsort()
        return _structure.index_rows(_structure.concat_rows(parts), order)

    def elements(self, start: int, stop: int) -> List[Any]:
        out: List[Any] = []
        if start < self._split:
            out += self._first.elements(start, min(stop, self._split))
        if stop > self._split:
            out += self._second.elements(max(start, self._split) - self._split, stop - self._split)
        return out


class _ConcatIterator(IteratorImpl):
    op = "concatenate"

    def __init__(self, dataset: "ConcatenateDataset", ctx: IterContext) -> None:
        self._datasets = dataset._inputs()
        self._ctx = ctx
        self._index = 0
        self._it: Optional[IteratorImpl] = dataset._inputs()[0]._make_iterator(ctx.derive(0))

    def next(self) -> Any:
        while self._it is not None:
            value = self._it.next()
            if value is not END:
                return value
            self._advance(self._it)
        return END

    def _advance(self, finished: IteratorImpl) -> None:
        """Closes ``finished`` (the current input's iterator) and starts the next input."""
        finished.close()
        self._index += 1
        self._it = None
        if self._index < len(self._datasets):
            self._it = self._datasets[self._index]._make_iterator(self._ctx.derive(self._index))

    def _state(self) -> Dict[str, Any]:
        return {"index": self._index, "input": None if self._it is None else self._it.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self.close()
        self._index = int(state["index"])
        if self._index < len(self._datasets):
            self._it = self._datasets[self._index]._make_iterator(self._ctx.derive(self._index))
            self._it.set_state(state["input"])

    def close(self) -> None:
        if self._it is not None:
            self._it.close()
            self._it = None


def _common_spec(a: TensorSpec, b: TensorSpec) -> TensorSpec:
    if a.dtype != b.dtype or (a.rank is not None and b.rank is not None and a.rank != b.rank):
        raise TypeError(f"Incompatible dataset elements: {a} vs. {b}.")
    return a.most_specific_compatible_type(b)


class ConcatenateDataset(Dataset):
    """``a.concatenate(b)``; inputs ``_input_dataset`` and ``dataset_to_concatenate``."""

    _op = "concatenate"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, dataset_to_concatenate: Dataset,
                 name: Optional[str] = None) -> None:
        if not isinstance(dataset_to_concatenate, Dataset):
            raise TypeError(
                f"Expected `dataset` to be a Dataset; received {type(dataset_to_concatenate).__name__}."
            )
        self._input_dataset = input_dataset
        self.dataset_to_concatenate = dataset_to_concatenate
        super().__init__(name)
        self._spec_cache = self._compute_element_spec()  # validates now, as tf.data does

    def _inputs(self) -> Tuple[Dataset, ...]:
        return (self._input_dataset, self.dataset_to_concatenate)

    def _set_inputs(self, inputs: Tuple[Dataset, ...]) -> None:
        self._input_dataset, self.dataset_to_concatenate = inputs

    def _compute_element_spec(self) -> Any:
        a, b = self._input_dataset.element_spec, self.dataset_to_concatenate.element_spec
        if not nest.same_structure(a, b):
            raise TypeError(
                f"Incompatible dataset elements: the datasets to concatenate have different "
                f"structures: {a} vs. {b}. Map them to one structure first."
            )
        try:
            return nest.map_structure(_common_spec, a, b)
        except TypeError as exc:
            raise TypeError(f"{exc} Cast or reshape one of the datasets with map() first.") from None

    def _cardinality(self) -> int:
        a, b = self._input_dataset.cardinality(), self.dataset_to_concatenate.cardinality()
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b

    def _static_batch_size(self) -> int:
        a, b = (d._static_batch_size() for d in self._inputs())
        return a if a == b else -1

    def _build_random_access(self) -> Optional[RandomAccess]:
        first, second = (d._random_access() for d in self._inputs())
        if first is None or second is None or first.length is None:
            return None
        return _ConcatAccess(first, second, first.length)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ConcatIterator(self, ctx)
