"""Dataset.window against outputs recorded from TensorFlow 2.21 (tf.data.Dataset.window)."""

from __future__ import annotations

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset, DatasetSpec
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, values

# (arguments, windows, cardinality) recorded with tf.data.Dataset.range(7).window(**kwargs)
RECORDED = [
    (dict(size=3), [[0, 1, 2], [3, 4, 5], [6]], 3),
    (dict(size=3, shift=2), [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]], 4),
    (dict(size=3, shift=2, drop_remainder=True), [[0, 1, 2], [2, 3, 4], [4, 5, 6]], 3),
    (dict(size=2, shift=1, stride=3), [[0, 3], [1, 4], [2, 5], [3, 6], [4], [5], [6]], 7),
    (dict(size=3, shift=4), [[0, 1, 2], [4, 5, 6]], 2),
    (dict(size=3, shift=4, stride=2), [[0, 2, 4], [4, 6]], 2),
]


@pytest.mark.parametrize("kwargs, windows, cardinality", RECORDED)
def test_windows_match_tf(kwargs, windows, cardinality):
    ds = Dataset.range(7).window(**kwargs)
    assert [values(w) for w in ds] == windows
    assert ds.cardinality() == cardinality
    assert ds.element_spec == DatasetSpec(TensorSpec((), torch.int64))


@pytest.mark.parametrize("kwargs, expected", [
    # recorded: [Dataset.range(n).window(**kwargs).cardinality() for n in range(12)]
    (dict(size=3, shift=2, drop_remainder=True), [0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5]),
    (dict(size=2, shift=1, stride=3, drop_remainder=True), [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]),
    (dict(size=3, shift=4, drop_remainder=True), [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]),
    (dict(size=3, shift=2), [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]),
])
def test_cardinality_matches_tf_and_the_elements(kwargs, expected):
    assert [Dataset.range(n).window(**kwargs).cardinality() for n in range(12)] == expected
    assert [len(list(Dataset.range(n).window(**kwargs))) for n in range(12)] == expected


def test_unknown_and_infinite_cardinality_pass_through():
    assert Dataset.range(7).repeat().window(3).cardinality() == -1
    assert Dataset.range(7).filter(lambda x: x >= 0).window(3).cardinality() == -2


def test_structure_of_datasets_and_flat_map_batch():
    ds = Dataset.from_tensor_slices(({"a": [1, 2, 3]}, [4, 5, 6])).window(2)
    spec = ds.element_spec
    assert isinstance(spec[0]["a"], DatasetSpec) and isinstance(spec[1], DatasetSpec)
    batched = ds.flat_map(lambda d, e: Dataset.zip(d["a"], e).batch(2))
    assert values(batched) == [([1, 2], [4, 5]), ([3], [6])]
    # recorded: range(7).window(3, 2, 1, True).flat_map(lambda w: w.batch(3))
    windows = Dataset.range(7).window(3, 2, 1, True).flat_map(lambda w: w.batch(3))
    assert values(windows) == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]


@pytest.mark.parametrize("kwargs, word", [
    (dict(size=0), "size"), (dict(size=-1), "size"), (dict(size=2, shift=0), "shift"),
    (dict(size=2, stride=0), "stride"),
])
def test_non_positive_arguments_raise_as_tf(kwargs, word):
    # tf: InvalidArgumentError "Window size must be greater than zero." (shift, stride alike)
    with pytest.raises(InvalidArgumentError, match=f"Window {word} must be greater than zero"):
        Dataset.range(3).window(**kwargs)


def test_non_integer_arguments_raise_type_error():
    with pytest.raises(TypeError, match="size"):
        Dataset.range(3).window(2.5)
    with pytest.raises(TypeError, match="drop_remainder"):
        Dataset.range(3).window(2, drop_remainder="yes")


@pytest.mark.parametrize("kwargs", [dict(size=3, shift=2), dict(size=2, shift=5), dict(size=3, stride=2, shift=1)])
def test_flat_mapped_windows_restore_mid_stream(kwargs):
    assert_restores(lambda: Dataset.range(11).window(**kwargs).flat_map(lambda w: w.batch(3)))
    assert_restores(lambda: Dataset.range(11).window(**kwargs).flat_map(lambda w: w))


def test_flat_map_over_windows_infers_its_spec_without_reading_the_input():
    calls = []

    def generate():
        calls.append(1)
        yield from range(7)

    source = Dataset.from_generator(generate, output_signature=TensorSpec((), torch.int64))
    batched = source.window(3).flat_map(lambda w: w.batch(3, drop_remainder=True))
    assert batched.element_spec == TensorSpec((3,), torch.int64)
    assert source.window(3).flat_map(lambda w: w.batch(3)).element_spec == TensorSpec((None,), torch.int64)
    assert calls == []  # placeholder windows, as tf.data traces the function
