"""Dataset.padded_batch: batches elements of different shapes by padding them.

Each component is padded at the end of every dimension, to ``padded_shapes`` where given
(a dimension of None or -1 means "the largest in this batch") or else to the largest shape in
the batch, with ``padding_values`` (0, or ``b""`` for strings, by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, List, Optional, Sequence

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import _structure
from distribute.data._common import END, check_bool, check_positive
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops.batch import batched_cardinality
from distribute.errors import InvalidArgumentError

__all__ = ["PaddedBatchDataset"]


def _as_padded_shape(shape: Any, spec: TensorSpec) -> Optional[tuple]:
    if shape is None:
        return spec.shape
    if isinstance(shape, int) or not hasattr(shape, "__iter__"):
        raise TypeError(f"Expected each padded shape to be a list of dimensions; received {shape!r}.")
    dims = tuple(None if d is None or d == -1 else int(d) for d in shape)
    if spec.shape is not None and len(dims) != len(spec.shape):
        raise InvalidArgumentError(
            f"The padded shape {list(shape)} has rank {len(dims)}, but the component it pads has "
            f"shape {spec.shape} (rank {len(spec.shape)}). Give one dimension per dimension."
        )
    if spec.shape is not None:
        for d, s in zip(dims, spec.shape):
            if d is not None and s is not None and d < s:
                raise InvalidArgumentError(
                    f"The padded shape {list(shape)} is smaller than the component's shape {spec.shape}."
                )
    return dims


def _flatten_along(value: Any, spec: Any, what: str) -> List[Any]:
    """Flattens ``value`` (whose leaves are shapes or scalars) along the nesting of ``spec``."""
    if not nest.is_nested(spec):
        return [value]
    if isinstance(spec, Mapping):
        ok = isinstance(value, Mapping) and set(value) == set(spec)
    else:
        ok = isinstance(value, (tuple, list)) and len(value) == len(spec)
    if not ok:
        raise InvalidArgumentError(
            f"`{what}` must have the structure of the elements {spec}; received {value!r}."
        )
    if isinstance(spec, Mapping):
        return [x for k in sorted(spec) for x in _flatten_along(value[k], spec[k], what)]
    return [x for v, s in zip(value, spec) for x in _flatten_along(v, s, what)]


def _flat_shapes(padded_shapes: Any, spec: Any) -> List[Optional[tuple]]:
    specs = nest.flatten(spec)
    if padded_shapes is None:
        return [s.shape for s in specs]
    flat = _flatten_along(padded_shapes, spec, "padded_shapes")
    return [_as_padded_shape(p, s) for p, s in zip(flat, specs)]


def _flat_values(padding_values: Any, spec: Any) -> List[Any]:
    specs = nest.flatten(spec)
    if padding_values is None:
        return [b"" if s.dtype is string else 0 for s in specs]
    if not isinstance(padding_values, (tuple, Mapping)):
        return [padding_values] * len(specs)
    return _flatten_along(padding_values, spec, "padding_values")


def _pad_component(leaves: Sequence[Any], target: Optional[tuple], value: Any, index: int) -> Any:
    shapes = [tuple(leaf.shape) if not isinstance(leaf, bytes) else () for leaf in leaves]
    ranks = {len(s) for s in shapes}
    if len(ranks) > 1:
        raise InvalidArgumentError(
            f"Cannot pad component {index}: its elements have different ranks {sorted(ranks)}."
        )
    rank = ranks.pop()
    dims = [max(s[d] for s in shapes) for d in range(rank)]
    if target is not None:
        for d, t in enumerate(target):
            if t is not None:
                if dims[d] > t:
                    raise InvalidArgumentError(
                        f"Attempted to pad to a smaller size than the input element: component "
                        f"{index} has dimension {d} of size {dims[d]} but the padded shape is "
                        f"{list(target)}. Make padded_shapes at least as large as every element."
                    )
                dims[d] = t
    return _fill(leaves, shapes, dims, value, index)


def _fill(leaves: Sequence[Any], shapes: List[tuple], dims: List[int], value: Any, index: int) -> Any:
    first = leaves[0]
    if isinstance(first, torch.Tensor):
        try:
            out = torch.full([len(leaves)] + dims, value, dtype=first.dtype)
        except (TypeError, RuntimeError) as exc:
            raise InvalidArgumentError(
                f"Padding value {value!r} does not fit component {index} of dtype {first.dtype}: {exc}"
            ) from None
        for i, (leaf, shape) in enumerate(zip(leaves, shapes)):
            out[(i,) + tuple(slice(0, n) for n in shape)] = leaf
        return out
    if not isinstance(value, (bytes, str)):
        raise InvalidArgumentError(
            f"Padding value {value!r} does not fit string component {index}; use b'' or a string."
        )
    out = np.empty([len(leaves)] + dims, dtype=object)
    out[...] = value.encode() if isinstance(value, str) else value
    for i, (leaf, shape) in enumerate(zip(leaves, shapes)):
        out[(i,) + tuple(slice(0, n) for n in shape)] = leaf
    return out


class _PaddedBatchIterator(UnaryIteratorImpl):
    op = "padded_batch"

    def __init__(self, dataset: "PaddedBatchDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._size, self._drop = dataset.batch_size, dataset.drop_remainder
        self._shapes, self._values = dataset._flat_shapes, dataset._flat_values

    def next(self) -> Any:
        elements = self._input.next_full_list(self._size)
        if not elements or (self._drop and len(elements) < self._size):
            return END
        structure = _structure.Structure(elements[0])
        columns = zip(*[structure.flatten(e) for e in elements])
        padded = [_pad_component(list(c), t, v, i)
                  for i, (c, t, v) in enumerate(zip(columns, self._shapes, self._values))]
        return structure.pack(padded)


class PaddedBatchDataset(UnaryDataset):
    """``ds.padded_batch(...)``; attributes ``batch_size``, ``padded_shapes``,
    ``padding_values``, ``drop_remainder``."""

    _op = "padded_batch"

    def __init__(self, input_dataset: Dataset, batch_size: int, padded_shapes: Any = None,
                 padding_values: Any = None, drop_remainder: bool = False,
                 name: Optional[str] = None) -> None:
        self.batch_size = check_positive("batch_size", batch_size)
        self.drop_remainder = check_bool("drop_remainder", drop_remainder)
        self.padded_shapes, self.padding_values = padded_shapes, padding_values
        super().__init__(input_dataset, name)
        spec = input_dataset.element_spec
        self._flat_shapes = _flat_shapes(padded_shapes, spec)
        self._flat_values = _flat_values(padding_values, spec)

    def _compute_element_spec(self) -> Any:
        dim = self.batch_size if self.drop_remainder else None
        specs = nest.flatten(self._input_dataset.element_spec)
        out = [TensorSpec(None if s is None else (dim,) + tuple(s), spec.dtype)
               for s, spec in zip(self._flat_shapes, specs)]
        return nest.pack_sequence_as(self._input_dataset.element_spec, out)

    def _cardinality(self) -> int:
        return batched_cardinality(self._input_dataset.cardinality(), self.batch_size, self.drop_remainder)

    def _static_batch_size(self) -> int:
        return self.batch_size

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _PaddedBatchIterator(self, ctx)
