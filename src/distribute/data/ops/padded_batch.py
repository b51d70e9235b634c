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
from distribute.data._specs import DatasetSpec, NoneTensorSpec
from distribute.data._common import END, check_bool, check_positive
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops.batch import batched_cardinality
from distribute.errors import DataLossError, InvalidArgumentError

__all__ = ["PaddedBatchDataset"]


def _shape_error(shape: Any, problem: str, kind: type = InvalidArgumentError) -> Exception:
    return kind(
        f"Padded shape {shape!r} must be a 1-D tensor of int64 values, but {problem}. Give one "
        f"int per dimension, with None or -1 for 'the largest in the batch'."
    )


def _dim(d: Any, shape: Any) -> Optional[int]:
    """One padded dimension: an int >= 0, or None for -1/None."""
    if d is None:
        return None
    if isinstance(d, torch.Tensor) and d.dim() == 0:
        d = d.item()
    elif isinstance(d, np.ndarray) and d.ndim == 0:
        d = d.item()
    if isinstance(d, (list, tuple, np.ndarray, torch.Tensor)):
        raise _shape_error(shape, f"its shape was {tuple(np.shape(np.asarray(shape, dtype=object)))}")
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise _shape_error(shape, f"its element type was {type(d).__name__}", TypeError)
    d = int(d)
    if d < -1:
        raise _shape_error(shape, f"it has the negative dimension {d}")
    return None if d == -1 else d


def _as_padded_shape(shape: Any, spec: TensorSpec) -> Optional[tuple]:
    if shape is None:
        return spec.shape
    if isinstance(shape, (torch.Tensor, np.ndarray)):
        if shape.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64) or (
                isinstance(shape, np.ndarray) and shape.dtype.kind not in "iu"):
            raise _shape_error(shape.tolist(), f"its element type was {shape.dtype}", TypeError)
        if shape.ndim != 1:
            raise _shape_error(shape.tolist(), f"its shape was {tuple(shape.shape)}")
        shape = shape.tolist()
    if isinstance(shape, (int, str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"Expected each padded shape to be a list of dimensions; received {shape!r}.")
    dims = tuple(_dim(d, shape) for d in shape)
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


def _flatten_along(value: Any, spec: Any, what: str, none_fills: bool = False) -> List[Any]:
    """Flattens ``value`` (whose leaves are shapes or scalars) along the nesting of ``spec``;
    with ``none_fills`` a None stands for None at every leaf below it."""
    if value is None and none_fills:
        return [None] * len(nest.flatten(spec))
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
        return [x for k in sorted(spec) for x in _flatten_along(value[k], spec[k], what, none_fills)]
    return [x for v, s in zip(value, spec) for x in _flatten_along(v, s, what, none_fills)]


def _flat_shapes(padded_shapes: Any, spec: Any) -> List[Optional[tuple]]:
    specs = nest.flatten(spec)
    flat = [None] * len(specs) if padded_shapes is None else _flatten_along(padded_shapes, spec, "padded_shapes")
    for i, (p, s) in enumerate(zip(flat, specs)):
        if isinstance(s, DatasetSpec):
            raise InvalidArgumentError(
                f"padded_batch cannot pad component {i}, a dataset (spec {s}); use batch() for "
                f"elements that hold datasets."
            )
        if isinstance(s, NoneTensorSpec):
            continue
        if p is None and s.shape is None:
            raise InvalidArgumentError(
                f"`padded_shapes` must be given because component {i} of the elements has unknown "
                f"rank (spec {s}); pass a padded shape for it, for example [None, None] for a "
                f"matrix padded to the largest in each batch."
            )
    return [None if isinstance(s, NoneTensorSpec) else _as_padded_shape(p, s) for p, s in zip(flat, specs)]


def _flat_values(padding_values: Any, spec: Any) -> List[Any]:
    specs = nest.flatten(spec)
    if not isinstance(padding_values, (tuple, Mapping)):
        flat = [padding_values] * len(specs)
    else:
        flat = _flatten_along(padding_values, spec, "padding_values", none_fills=True)
    return [None if isinstance(s, NoneTensorSpec) else (b"" if s.dtype is string else 0) if v is None else v
            for v, s in zip(flat, specs)]


def _pad_component(leaves: Sequence[Any], target: Optional[tuple], value: Any, index: int) -> Any:
    if leaves[0] is None:
        return None
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
                    raise DataLossError(
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
    strings = np.empty([len(leaves)] + dims, dtype=object)
    strings[...] = value.encode() if isinstance(value, str) else value
    for i, (leaf, shape) in enumerate(zip(leaves, shapes)):
        strings[(i,) + tuple(slice(0, n) for n in shape)] = leaf
    return strings


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
        out = [spec if isinstance(spec, NoneTensorSpec) else
               TensorSpec(None if s is None else (dim,) + tuple(s), spec.dtype)
               for s, spec in zip(self._flat_shapes, specs)]
        return nest.pack_sequence_as(self._input_dataset.element_spec, out)

    def _cardinality(self) -> int:
        return batched_cardinality(self._input_dataset.cardinality(), self.batch_size, self.drop_remainder)

    def _static_batch_size(self) -> int:
        return self.batch_size

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _PaddedBatchIterator(self, ctx)
