"""Dataset.rebatch: re-splits batched elements into batches of other sizes.

``ds.rebatch(n)`` is ``ds.unbatch().batch(n)``; with a list of sizes, the batch sizes
cycle through the list (tf.data's ``rebatch``). State: the rows taken from the input but
not yet returned, the position in the list of sizes, and the input's state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import torch

from distribute._base import nest
from distribute.data import _structure
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_bool, check_positive
from distribute.data._specs import add_batch_dim, row_spec
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl

__all__ = ["RebatchDataset"]


def _batch_sizes(batch_size: Any) -> List[int]:
    if isinstance(batch_size, (torch.Tensor, np.ndarray)):
        if batch_size.ndim > 1:
            raise ValueError(
                f"Invalid `batch_sizes`. Expected `batch_sizes` to be a scalar or a vector. "
                f"Received `batch_sizes` of rank {batch_size.ndim}."
            )
        batch_size = batch_size.tolist()
    if isinstance(batch_size, (list, tuple)):
        if not batch_size:
            raise ValueError("Invalid `batch_size`: expected at least one batch size; received [].")
        if any(isinstance(b, (list, tuple)) for b in batch_size):
            raise ValueError(
                f"Invalid `batch_sizes`. Expected `batch_sizes` to be a scalar or a vector. "
                f"Received `batch_sizes`={batch_size!r} of rank 2 or more."
            )
        return [check_positive("batch_size", b) for b in batch_size]
    return [check_positive("batch_size", batch_size)]


class _RebatchIterator(UnaryIteratorImpl):
    op = "rebatch"

    def __init__(self, dataset: "RebatchDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._dataset = dataset
        self._rows: List[Any] = []
        self._index = 0  # position in the list of batch sizes
        self._done = False

    def next(self) -> Any:
        size = self._dataset.batch_sizes[self._index]
        while len(self._rows) < size and not self._done:
            batch = self._input.next()
            if batch is END:
                self._done = True
            else:
                self._rows.extend(_structure.unstack(batch, _structure.Structure(batch)))
        if not self._rows or (self._dataset.drop_remainder and len(self._rows) < size):
            self._rows = []
            return END
        out, self._rows = self._rows[:size], self._rows[size:]
        self._index = (self._index + 1) % len(self._dataset.batch_sizes)
        return _structure.batch_elements(out, _structure.Structure(out[0]))

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "rows": [_structure.encode(r) for r in self._rows],
                "index": self._index, "done": self._done}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        spec = self._dataset._row_spec()
        self._rows = [_structure.decode(r, spec) for r in state["rows"]]
        self._index, self._done = int(state["index"]), bool(state["done"])


class RebatchDataset(UnaryDataset):
    """``ds.rebatch(batch_size, drop_remainder)``; attributes ``batch_sizes`` (a list),
    ``drop_remainder``."""

    _op = "rebatch"

    def __init__(self, input_dataset: Dataset, batch_size: Any, drop_remainder: bool = False,
                 name: Optional[str] = None) -> None:
        self.batch_sizes = _batch_sizes(batch_size)
        self.drop_remainder = check_bool("drop_remainder", drop_remainder)
        super().__init__(input_dataset, name)
        for leaf in nest.flatten(input_dataset.element_spec):
            if leaf.shape is not None and not leaf.shape:
                raise ValueError(
                    "Invalid `batch_sizes`. Expected dataset with rank of >= 1 but found a "
                    "dataset with scalar elements. Fix the issue by adding the `batch` "
                    "transformation to the dataset."
                )

    def _row_spec(self) -> Any:
        return nest.map_structure(lambda s: row_spec(s, "rebatch"), self._input_dataset.element_spec)

    def _static_dim(self) -> Optional[int]:
        sizes = set(self.batch_sizes)
        if len(sizes) != 1:
            return None
        size = sizes.pop()
        if self.drop_remainder:
            return size
        dims = [leaf.shape[0] if leaf.shape else None
                for leaf in nest.flatten(self._input_dataset.element_spec)]
        return size if dims and all(d is not None and d % size == 0 for d in dims) else None

    def _compute_element_spec(self) -> Any:
        dim = self._static_dim()
        return nest.map_structure(lambda s: add_batch_dim(s, dim), self._row_spec())

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _static_batch_size(self) -> int:
        dim = self._static_dim()
        return -1 if dim is None else dim

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _RebatchIterator(self, ctx)

