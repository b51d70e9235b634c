"""Dataset.from_tensors: a dataset of exactly one element (``tf.data.Dataset.from_tensors``)."""

from __future__ import annotations

from typing import Any, Optional

import torch

from distribute._base import nest
from distribute.data import _structure
from distribute.data.dataset import Dataset
from distribute.data.ops._random_access import RandomAccess

__all__ = ["TensorDataset"]


class _OneElement(RandomAccess):
    returns_views = True

    def __init__(self, element: Any) -> None:
        self.length = 1
        self._rows = nest.map_structure(_add_row_dim, element)

    def rows(self, start: int, stop: int) -> Any:
        return _structure.slice_rows(self._rows, start, stop)

    def gather(self, index: torch.Tensor) -> Any:
        return _structure.index_rows(self._rows, index)


def _add_row_dim(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.unsqueeze(0)
    return _structure.stack_leaves([leaf])


class TensorDataset(Dataset):
    """``Dataset.from_tensors(tensors)``; the element is the attribute ``tensors``."""

    _op = "from_tensors"

    def __init__(self, tensors: Any, name: Optional[str] = None) -> None:
        self.tensors = _structure.normalize(tensors, "from_tensors")
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return _structure.spec_of(self.tensors)

    def _cardinality(self) -> int:
        return 1

    def _build_random_access(self) -> RandomAccess:
        return _OneElement(self.tensors)
