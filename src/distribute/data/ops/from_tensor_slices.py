"""Dataset.from_tensor_slices: one element per row of in-memory tensors.

A random-access source: ``batch`` slices the tensors, ``shuffle`` gathers rows by index.
Per-element access yields views of the source rows; batches are copies.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from distribute._base import nest
from distribute.data._specs import row_spec
from distribute.data import _structure
from distribute.data.dataset import Dataset
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["TensorSliceDataset"]


class _Slices(RandomAccess):
    returns_views = True

    def __init__(self, tensors: Any, length: int) -> None:
        self.length = length
        self._tensors = tensors

    def rows(self, start: int, stop: int) -> Any:
        return _structure.slice_rows(self._tensors, start, stop)

    def gather(self, index: torch.Tensor) -> Any:
        return _structure.index_rows(self._tensors, index)


def _path_name(path: tuple) -> str:
    return "tensors" + "".join(f"[{p!r}]" for p in path)


def _check_rows(tensors: Any) -> int:
    paths = [_path_name(p) for p, leaf in nest.flatten_with_paths(tensors) if leaf is not None]
    leaves = [leaf for leaf in nest.flatten(tensors) if leaf is not None]
    if not leaves:
        raise InvalidArgumentError(
            "from_tensor_slices needs at least one component that is not None to slice."
        )
    for path, leaf in zip(paths, leaves):
        if isinstance(leaf, bytes) or getattr(leaf, "ndim", 0) == 0:
            raise InvalidArgumentError(
                f"from_tensor_slices needs every component to have at least one dimension to "
                f"slice; the component {path} is a scalar. Use from_tensors() "
                f"for a single element."
            )
    sizes = [len(leaf) for leaf in leaves]
    if len(set(sizes)) > 1:
        detail = ", ".join(f"{p} has {s}" for p, s in zip(paths, sizes))
        raise InvalidArgumentError(
            f"from_tensor_slices needs every component to have the same size in its first "
            f"dimension; received sizes {detail}. Give every component the same number of rows."
        )
    return sizes[0]


class TensorSliceDataset(Dataset):
    """``Dataset.from_tensor_slices(tensors)``; the source is the attribute ``tensors``."""

    _op = "from_tensor_slices"

    def __init__(self, tensors: Any, name: Optional[str] = None) -> None:
        self.tensors = _structure.normalize(tensors, "from_tensor_slices")
        if nest.is_nested(self.tensors) and not nest.flatten(self.tensors):
            raise InvalidArgumentError(
                "from_tensor_slices needs at least one component; received an empty structure."
            )
        self._length = _check_rows(self.tensors)
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return nest.map_structure(
            lambda leaf: row_spec(_structure.leaf_spec(leaf), "from_tensor_slices"), self.tensors)

    def _cardinality(self) -> int:
        return self._length

    def _build_random_access(self) -> RandomAccess:
        return _Slices(self.tensors, self._length)
