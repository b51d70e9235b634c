"""Dataset.bucket_by_sequence_length: batches elements of similar length together.

Built as tf.data builds it, on ``group_by_window``: the bucket of an element is the first
``i`` with ``boundaries[i-1] <= length < boundaries[i]`` (the first bucket starts at the
smallest int32, the last one ends at the largest); each bucket is a window of its batch
size, reduced with ``padded_batch`` (or ``batch`` with ``no_padding``). With
``pad_to_bucket_boundary``, unknown dimensions are padded to ``boundary - 1``, and an
element of the last bucket (length >= the largest boundary) raises InvalidArgumentError.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import torch

from distribute._base import nest
from distribute.data._common import check_bool, check_callable, check_int, check_positive
from distribute.data.dataset import Dataset
from distribute.data.ops.group_by_window import GroupByWindowDataset
from distribute.errors import InvalidArgumentError

__all__ = ["bucket_by_sequence_length"]

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _length(value: Any) -> int:
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"`element_length_func` must return a scalar integer; it returned {value!r:.100}.")


def _bucket_id(length: int, boundaries: List[int]) -> int:
    lows, highs = [_INT32_MIN] + boundaries, boundaries + [_INT32_MAX]
    for i, (low, high) in enumerate(zip(lows, highs)):
        if low <= length < high:
            return i
    raise InvalidArgumentError(
        f"No bucket holds an element of length {length} (bucket_boundaries={boundaries}); "
        f"give increasing boundaries."
    )


def _shape_leaves(spec: Any, shapes: Any) -> List[Any]:
    """The padded shape of each component, walking ``shapes`` along the structure of ``spec``."""
    if isinstance(spec, dict):
        return [leaf for k in spec for leaf in _shape_leaves(spec[k], shapes[k])]
    if isinstance(spec, tuple):
        return [leaf for s, v in zip(spec, shapes) for leaf in _shape_leaves(s, v)]
    return [shapes]


def _padded_shapes(spec: Any, shapes: Any, filler: Optional[int]) -> Any:
    """``shapes`` (or the spec's shapes) with unknown dimensions set to ``filler``."""
    if shapes is None:
        leaves = [s.shape for s in nest.flatten(spec)]
    else:
        leaves = _shape_leaves(spec, shapes)
    filled = [None if shape is None else [filler if d is None or d == -1 else d for d in shape]
              for shape in leaves]
    return nest.pack_sequence_as(spec, filled)


def bucket_by_sequence_length(
        dataset: Dataset, element_length_func: Callable[..., Any], bucket_boundaries: Sequence[int],
        bucket_batch_sizes: Sequence[int], padded_shapes: Any = None, padding_values: Any = None,
        pad_to_bucket_boundary: bool = False, no_padding: bool = False,
        drop_remainder: bool = False, name: Optional[str] = None) -> Dataset:
    """See :meth:`Dataset.bucket_by_sequence_length`."""
    check_callable("element_length_func", element_length_func)
    boundaries = [check_int("bucket_boundaries", b) for b in bucket_boundaries]
    sizes = [check_positive("bucket_batch_sizes", b) for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError(
            f"`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + 1` but "
            f"`len(bucket_batch_sizes)={len(sizes)}` and `len(bucket_boundaries)={len(boundaries)}`."
        )
    pad_to_bucket_boundary = bool(check_bool("pad_to_bucket_boundary", pad_to_bucket_boundary))
    no_padding = bool(check_bool("no_padding", no_padding))
    drop_remainder = bool(check_bool("drop_remainder", drop_remainder))
    spec = dataset.element_spec

    def key_func(*element: Any) -> torch.Tensor:
        length = _length(element_length_func(*element))
        return torch.tensor(_bucket_id(length, boundaries), dtype=torch.int64)

    def reduce_func(bucket: torch.Tensor, window: Dataset) -> Dataset:
        batch_size = sizes[max(int(bucket), 0)]
        if no_padding:
            return window.batch(batch_size, drop_remainder=drop_remainder and int(bucket) >= 0, name=name)
        filler = None
        if pad_to_bucket_boundary and int(bucket) >= 0:
            if int(bucket) >= len(sizes) - 1:
                raise InvalidArgumentError(
                    "When pad_to_bucket_boundary=True, elements must have length < "
                    f"max(bucket_boundaries) (max(bucket_boundaries)={max(boundaries, default=None)})."
                )
            filler = boundaries[int(bucket)] - 1
        shapes = _padded_shapes(spec, padded_shapes, filler)
        drop = drop_remainder and int(bucket) >= 0  # the spec (bucket -1) has no static batch size
        return window.padded_batch(batch_size, shapes, padding_values, drop_remainder=drop, name=name)

    grouped = GroupByWindowDataset(dataset, key_func, reduce_func,
                                   window_size_func=lambda bucket: sizes[int(bucket)], name=name)
    grouped.spec_key = -1  # the spec of any bucket: dimensions padded to a boundary unknown
    return grouped

