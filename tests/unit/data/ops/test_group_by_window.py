"""group_by_window and bucket_by_sequence_length against outputs recorded from TensorFlow 2.21."""

from __future__ import annotations

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, values


def test_windows_reduce_when_full_then_remaining_groups_in_key_order():
    ds = Dataset.range(10).group_by_window(lambda x: x % 3, lambda k, w: w.batch(2), window_size=2)
    assert values(ds) == [[0, 3], [1, 4], [2, 5], [6, 9], [7], [8]]
    assert ds.cardinality() == -2
    big = Dataset.range(10).group_by_window(lambda x: x % 3, lambda k, w: w.batch(4), window_size=4)
    assert values(big) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    keyed = Dataset.range(10).group_by_window(
        lambda x: (x % 3) * -1 + 5, lambda k, w: w.batch(10).map(lambda b: (k, b)), window_size=10)
    assert values(keyed) == [(3, [2, 5, 8]), (4, [1, 4, 7]), (5, [0, 3, 6, 9])]
    order = Dataset.from_tensor_slices([70, 2, 9, 1000, 5, -4, 3]).group_by_window(
        lambda x: x, lambda k, w: w.batch(5), window_size=5)
    assert values(order) == [[-4], [2], [3], [5], [9], [70], [1000]]


def test_window_size_func_and_tuple_elements():
    ds = Dataset.range(12).group_by_window(lambda x: x % 2, lambda k, w: w.batch(10),
                                           window_size_func=lambda k: k + 2)
    assert values(ds) == [[0, 2], [1, 3, 5], [4, 6], [8, 10], [7, 9, 11]]
    pairs = Dataset.from_tensor_slices(([1, 2, 3, 4], [5, 6, 7, 8])).group_by_window(
        lambda a, b: a % 2, lambda k, w: w.batch(2), window_size=2)
    assert values(pairs) == [([1, 3], [5, 7]), ([2, 4], [6, 8])]


def test_group_by_window_errors():
    message = "Either the `window_size` argument or the `window_size_func` argument must be specified."
    with pytest.raises(ValueError, match=message):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w)
    with pytest.raises(ValueError, match=message):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w, 2, lambda k: 2)
    with pytest.raises(ValueError, match="scalar int64"):  # tf: ValueError (int32 key)
        Dataset.range(3).group_by_window(lambda x: x.to(torch.int32), lambda k, w: w, window_size=2)
    with pytest.raises(InvalidArgumentError, match="Window size must be greater than zero, but got 0"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w, window_size=0)
    with pytest.raises(InvalidArgumentError, match="Window size must be greater than zero, but got 0"):
        list(Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w, window_size_func=lambda k: k))
    with pytest.raises(TypeError, match="Invalid `reduce_func`"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: 3, window_size=2)


def test_group_by_window_restores_inside_a_window_and_between():
    assert_restores(lambda: Dataset.range(23).group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(2), window_size=4))
    assert_restores(lambda: Dataset.range(23).shuffle(23, seed=2).group_by_window(
        lambda x: x % 4, lambda k, w: w.map(lambda v: v + k), window_size_func=lambda k: k + 1))


_LENGTHS = [1, 3, 2, 5, 4, 7, 1, 6, 2]


def _sequences() -> Dataset:
    from distribute import TensorSpec as Spec

    return Dataset.from_generator(lambda: (list(range(1, n + 1)) for n in _LENGTHS),
                                  output_signature=Spec([None], torch.int64))


def _length(x):
    return x.shape[0]


# recorded: ds.bucket_by_sequence_length(len, boundaries, [2, 2, 3], **kwargs) for these sequences
BUCKETS = [
    ([3, 5], {}, [[[1, 0], [1, 2]], [[1, 2, 3, 0], [1, 2, 3, 4]],
                  [[1, 2, 3, 4, 5, 0, 0], [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 0]], [[1, 0], [1, 2]]],
     (None, None)),
    ([3, 8], dict(pad_to_bucket_boundary=True),
     [[[1, 0], [1, 2]], [[1, 2, 3, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0, 0]],
      [[1, 2, 3, 4, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7]], [[1, 0], [1, 2]], [[1, 2, 3, 4, 5, 6, 0]]], (None, None)),
    ([3, 5], dict(drop_remainder=True), [[[1, 0], [1, 2]], [[1, 2, 3, 0], [1, 2, 3, 4]],
                                         [[1, 2, 3, 4, 5, 0, 0], [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 0]],
                                         [[1, 0], [1, 2]]], (None, None)),
    ([3, 5], dict(padding_values=torch.tensor(-1)),
     [[[1, -1], [1, 2]], [[1, 2, 3, -1], [1, 2, 3, 4]],
      [[1, 2, 3, 4, 5, -1, -1], [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, -1]], [[1, -1], [1, 2]]], (None, None)),
    ([3, 5], dict(padded_shapes=[8]),
     [[[1, 0, 0, 0, 0, 0, 0, 0], [1, 2, 0, 0, 0, 0, 0, 0]], [[1, 2, 3, 0, 0, 0, 0, 0], [1, 2, 3, 4, 0, 0, 0, 0]],
      [[1, 2, 3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 0], [1, 2, 3, 4, 5, 6, 0, 0]],
      [[1, 0, 0, 0, 0, 0, 0, 0], [1, 2, 0, 0, 0, 0, 0, 0]]], (None, 8)),
]


@pytest.mark.parametrize("boundaries, kwargs, expected, shape", BUCKETS)
def test_bucket_by_sequence_length_matches_tf(boundaries, kwargs, expected, shape):
    ds = _sequences().bucket_by_sequence_length(_length, boundaries, [2, 2, 3], **kwargs)
    assert values(ds) == expected
    assert ds.element_spec == TensorSpec(shape, torch.int64)


def test_bucket_no_padding_and_tuple_elements():
    rows = Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]])
    assert values(rows.bucket_by_sequence_length(_length, [3], [2, 2], no_padding=True)) == [
        [[1, 2], [3, 4]], [[5, 6]]]
    pairs = Dataset.from_generator(lambda: iter([([1], 5), ([1, 2, 3], 6), ([1, 2], 7)]),
                                   output_types=(torch.int64, torch.int64), output_shapes=([None], []))
    out = pairs.bucket_by_sequence_length(lambda x, y: x.shape[0], [2], [2, 2])
    assert values(out) == [([[1, 2, 3], [1, 2, 0]], [6, 7]), ([[1]], [5])]
    padded = pairs.bucket_by_sequence_length(lambda x, y: x.shape[0], [2, 4], [1, 1, 1],
                                             pad_to_bucket_boundary=True)
    assert values(padded) == [([[1]], [5]), ([[1, 2, 3]], [6]), ([[1, 2, 0]], [7])]


def test_bucket_errors():
    with pytest.raises(ValueError, match=r"`len\(bucket_batch_sizes\)` must equal `len\(bucket_boundaries\) \+ 1`"):
        _sequences().bucket_by_sequence_length(_length, [3, 5], [2, 2])
    with pytest.raises(InvalidArgumentError, match="pad_to_bucket_boundary=True, elements must have length"):
        list(_sequences().bucket_by_sequence_length(_length, [3, 5], [2, 2, 3], pad_to_bucket_boundary=True))
    with pytest.raises(TypeError, match="bucket_boundaries"):
        _sequences().bucket_by_sequence_length(_length, [3.0], [2, 2])
    with pytest.raises(InvalidArgumentError, match="bucket_batch_sizes"):  # tf fails at iteration
        _sequences().bucket_by_sequence_length(_length, [3, 5], [2, 0, 2])


def test_bucket_restores():
    assert_restores(lambda: _sequences().repeat(3).bucket_by_sequence_length(_length, [3, 5], [2, 2, 3]))
