import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, no_vectorization, values


def test_batch_values_spec_and_cardinality_match_tf():
    assert values(Dataset.range(5).batch(2)) == [[0, 1], [2, 3], [4]]
    assert values(Dataset.range(5).batch(2, drop_remainder=True)) == [[0, 1], [2, 3]]
    assert Dataset.range(10).batch(3).element_spec == TensorSpec((None,), torch.int64)
    assert Dataset.range(10).batch(3, True).element_spec == TensorSpec((3,), torch.int64)
    assert Dataset.range(10).batch(3).cardinality() == 4
    assert Dataset.range(10).batch(3, True).cardinality() == 3
    assert Dataset.range(10).repeat().batch(3).cardinality() == -1


def test_batch_of_structures_and_strings():
    ds = Dataset.from_tensor_slices({"s": ["a", "b", "c"], "n": [[1, 2], [3, 4], [5, 6]]}).batch(2)
    assert values(ds) == [{"s": [b"a", b"b"], "n": [[1, 2], [3, 4]]}, {"s": [b"c"], "n": [[5, 6]]}]


def test_batch_per_element_path():
    ds = Dataset.range(7).map(lambda x: (x, -x)).batch(3).with_options(no_vectorization())
    assert values(ds) == [([0, 1, 2], [0, -1, -2]), ([3, 4, 5], [-3, -4, -5]), ([6], [-6])]


def test_batch_of_different_shapes_is_an_error():
    ds = Dataset.range(1, 4).map(lambda x: torch.full((int(x),), int(x))).batch(2)
    with pytest.raises(InvalidArgumentError, match=r"different shapes in component 0.*\(1,\).*\(2,\).*padded_batch"):
        list(ds)


@pytest.mark.parametrize("size", [0, -3])
def test_non_positive_batch_size(size):
    with pytest.raises(InvalidArgumentError, match=f"batch_size={size}"):
        Dataset.range(3).batch(size)


def test_batch_argument_types():
    with pytest.raises(TypeError, match="drop_remainder"):
        Dataset.range(3).batch(2, drop_remainder="no")
    with pytest.raises(TypeError, match="batch_size"):
        Dataset.range(3).batch(2.0)
    assert values(Dataset.range(3).batch(torch.tensor(2))) == [[0, 1], [2]]


def test_batch_restores():
    assert_restores(lambda: Dataset.range(23).batch(4))
    assert_restores(lambda: Dataset.range(23).batch(4, drop_remainder=True).batch(2), positions=(0, 1, 2))
    assert_restores(lambda: Dataset.range(23).map(lambda x: x + 1).batch(4).with_options(no_vectorization()))


def test_static_batch_size_walk():
    assert Dataset.range(8).batch(4).map(lambda x: x).prefetch(2)._static_batch_size() == 4
    assert Dataset.range(8).batch(4).unbatch()._static_batch_size() == -1
    assert Dataset.range(8)._static_batch_size() == -1
    assert Dataset.range(8).padded_batch(3)._static_batch_size() == 3
    zipped = Dataset.zip(Dataset.range(8).batch(4), Dataset.range(8).batch(2))
    assert zipped._static_batch_size() == -1
    assert Dataset.zip(Dataset.range(8).batch(4), Dataset.range(8).batch(4))._static_batch_size() == 4
