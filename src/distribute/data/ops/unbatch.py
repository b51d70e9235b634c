"""Dataset.unbatch: splits every element into the rows of its first dimension.

Rows are views of the input batch. Over a bulk input, ``next_rows`` hands out slices of the
current batch, so ``unbatch().batch(k)`` re-slices without per-row Python work.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from distribute._base import nest
from distribute.data._specs import NoneTensorSpec, row_spec
from distribute.data import _structure
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.errors import InvalidArgumentError

__all__ = ["UnbatchDataset"]


class _UnbatchIterator(IteratorImpl):
    op = "unbatch"

    def __init__(self, dataset: "UnbatchDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._input = dataset._input_dataset._make_iterator(ctx)
        self._batch: Any = None  # the current input element
        self._rows: List[Any] = []  # its rows not yet returned, last row first
        self._size = 0
        self.fast_rows = True

    def _load(self) -> bool:
        while True:
            batch = self._input.next()
            if batch is END:
                self._batch = None
                return False
            rows = _structure.unstack(batch, _structure.Structure(batch))
            if rows:
                rows.reverse()
                self._batch, self._rows, self._size = batch, rows, len(rows)
                return True

    def next(self) -> Any:
        if not self._rows and not self._load():
            return END
        return self._rows.pop()

    def next_rows(self, n: int) -> Any:
        if not self._rows and not self._load():
            return END
        offset = self._size - len(self._rows)
        count = min(n, len(self._rows))
        del self._rows[len(self._rows) - count:]
        return _structure.clone_rows(_structure.slice_rows(self._batch, offset, offset + count))

    def _state(self) -> Dict[str, Any]:
        current = None if not self._rows else _structure.encode(self._batch)
        return {"batch": current, "offset": self._size - len(self._rows), "input": self._input.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._input.set_state(state["input"])
        self._rows, self._batch = [], None
        if state["batch"] is not None:
            self._batch = _structure.decode(state["batch"], self._dataset._input_dataset.element_spec)
            rows = _structure.unstack(self._batch, _structure.Structure(self._batch))
            self._size = len(rows)
            self._rows = rows[int(state["offset"]):][::-1]

    def close(self) -> None:
        self._input.close()


def _row_spec(spec: Any) -> Any:
    return row_spec(spec, "unbatch()")


def _check_leading_dims(spec: Any) -> None:
    """Components whose known first dimensions differ cannot be unbatched (tf.data checks it
    when the dataset is built)."""
    known = {s.shape[0] for s in nest.flatten(spec)
             if not isinstance(s, NoneTensorSpec) and s.shape and s.shape[0] is not None}
    if len(known) > 1:
        raise InvalidArgumentError(
            f"unbatch() needs every component of the element to have the same first dimension; "
            f"the element_spec {spec} has first dimensions {sorted(known)}. Slice or pad the "
            f"components to the same number of rows first."
        )


class UnbatchDataset(UnaryDataset):
    """``ds.unbatch()``."""

    _op = "unbatch"

    def __init__(self, input_dataset: Dataset, name: Optional[str] = None) -> None:
        super().__init__(input_dataset, name)
        self._spec_cache = self._compute_element_spec()  # validates now, as tf.data does

    def _compute_element_spec(self) -> Any:
        spec = self._input_dataset.element_spec
        _check_leading_dims(spec)
        return nest.map_structure(_row_spec, spec)

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if n in (INFINITE_CARDINALITY, 0):
            return n
        specs = [s for s in nest.flatten(self._input_dataset.element_spec) if not isinstance(s, NoneTensorSpec)]
        dims = {None if s.shape is None else s.shape[0] for s in specs}
        if n == UNKNOWN_CARDINALITY or len(dims) != 1:
            return UNKNOWN_CARDINALITY
        dim = dims.pop()
        return UNKNOWN_CARDINALITY if dim is None else n * dim

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _UnbatchIterator(self, ctx)
