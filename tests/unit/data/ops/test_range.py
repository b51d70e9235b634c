import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


@pytest.mark.parametrize(
    "args, expected",
    [((5,), [0, 1, 2, 3, 4]), ((2, 5), [2, 3, 4]), ((1, 10, 3), [1, 4, 7]), ((5, 1, -2), [5, 3]),
     ((5, 1), []), ((1, 5, -1), []), ((0,), [])],
)
def test_range_values_and_cardinality_match_tf(args, expected):
    ds = Dataset.range(*args)
    assert values(ds) == expected
    assert ds.cardinality() == len(expected)


def test_range_spec_and_output_type():
    assert Dataset.range(3).element_spec == TensorSpec((), torch.int64)
    ds = Dataset.range(3, output_type=torch.int32)
    assert ds.element_spec == TensorSpec((), torch.int32)
    assert all(x.dtype == torch.int32 for x in ds)
    assert next(iter(ds.batch(2))).dtype == torch.int32


def test_range_batches_are_bulk_slices():
    assert values(Dataset.range(1, 12, 2).batch(4)) == [[1, 3, 5, 7], [9, 11]]


def test_range_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="step"):
        Dataset.range(0, 5, 0)
    with pytest.raises(TypeError, match="1 to 3 arguments"):
        Dataset.range()
    with pytest.raises(TypeError, match="int"):
        Dataset.range(2.5)
    with pytest.raises(TypeError, match="numeric dtype"):
        Dataset.range(3, output_type=torch.bool)


def test_range_state_restores():
    assert_restores(lambda: Dataset.range(20))
    assert_restores(lambda: Dataset.range(3, 40, 3).batch(4), positions=(0, 1, 3))
