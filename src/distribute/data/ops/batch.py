"""Dataset.batch: stacks consecutive elements along a new first dimension.

Over in-memory rows (``range``, ``from_tensor_slices``, a vectorized ``map``, ``shuffle`` of
those) a batch is one slice or gather of the source tensors; otherwise the elements are
collected in the consumer's thread and stacked with one ``torch.stack`` per component.
``num_parallel_calls`` is accepted for compatibility: stacking is one copy per component,
which threads would not speed up.
"""

from __future__ import annotations

from typing import Any, List, Optional

from distribute._base import nest
from distribute.data._specs import add_batch_dim
from distribute.data import _structure
from distribute.data._common import END, check_bool, check_positive, check_positive_or_autotune
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl

__all__ = ["BatchDataset", "batched_spec", "batched_cardinality"]


def batched_spec(spec: Any, batch_size: int, drop_remainder: bool) -> Any:
    """The element_spec of batches of elements described by ``spec``."""
    dim = batch_size if drop_remainder else None
    return nest.map_structure(lambda leaf: add_batch_dim(leaf, dim), spec)


def batched_cardinality(n: int, batch_size: int, drop_remainder: bool) -> int:
    """The number of batches of ``batch_size`` from ``n`` elements (negative n passes through)."""
    if n < 0:
        return n
    return n // batch_size if drop_remainder else -(-n // batch_size)


class _BatchIterator(UnaryIteratorImpl):
    op = "batch"

    def __init__(self, dataset: "BatchDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._size, self._drop = dataset.batch_size, dataset.drop_remainder
        self._structure: Optional[_structure.Structure] = None

    def next(self) -> Any:
        if self._input.fast_rows:
            return self._next_from_rows()
        elements = self._input.next_full_list(self._size)
        if not elements or (self._drop and len(elements) < self._size):
            return END
        if self._structure is None:
            self._structure = _structure.Structure(elements[0])
        return _structure.batch_elements(elements, self._structure)

    def _next_from_rows(self) -> Any:
        parts: List[Any] = []
        got = 0
        while got < self._size:
            rows = self._input.next_rows(self._size - got)
            if rows is END:
                break
            parts.append(rows)
            got += _structure.num_rows(rows)
        if got == 0 or (self._drop and got < self._size):
            return END
        return _structure.concat_rows(parts)


class BatchDataset(UnaryDataset):
    """``ds.batch(batch_size, drop_remainder)``; attributes ``batch_size``, ``drop_remainder``."""

    _op = "batch"

    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool = False,
                 num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        self.batch_size = check_positive("batch_size", batch_size)
        self.drop_remainder = check_bool("drop_remainder", drop_remainder)
        self.num_parallel_calls = check_positive_or_autotune("num_parallel_calls", num_parallel_calls)
        self.deterministic = check_bool("deterministic", deterministic, allow_none=True)
        super().__init__(input_dataset, name)

    def _compute_element_spec(self) -> Any:
        return batched_spec(self._input_dataset.element_spec, self.batch_size, self.drop_remainder)

    def _cardinality(self) -> int:
        return batched_cardinality(self._input_dataset.cardinality(), self.batch_size, self.drop_remainder)

    def _static_batch_size(self) -> int:
        return self.batch_size

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _BatchIterator(self, ctx)
