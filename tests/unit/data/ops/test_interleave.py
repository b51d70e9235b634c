import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def _repeat_self(x):
    return Dataset.from_tensors(x).repeat(x)


def test_interleave_orders_match_tf():
    ds = Dataset.range(1, 6).interleave(_repeat_self, cycle_length=2, block_length=2)
    assert values(ds) == [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5]
    ds = Dataset.range(1, 6).interleave(_repeat_self, cycle_length=3, block_length=1)
    assert values(ds) == [1, 2, 3, 2, 3, 4, 3, 4, 5, 4, 5, 4, 5, 5, 5]
    parallel = Dataset.range(1, 6).interleave(_repeat_self, cycle_length=3, block_length=1, num_parallel_calls=2)
    assert values(parallel) == values(ds)
    empty = Dataset.range(0, 6).interleave(lambda x: Dataset.range(x % 3), cycle_length=2, block_length=1)
    assert values(empty) == [0, 0, 1, 0, 0, 1]


def test_flat_map_matches_tf():
    assert values(Dataset.range(4).flat_map(lambda x: Dataset.range(x))) == [0, 0, 1, 0, 1, 2]
    ds = Dataset.from_tensor_slices([[1, 2], [3, 4]]).flat_map(Dataset.from_tensor_slices)
    assert values(ds) == [1, 2, 3, 4]
    assert ds.element_spec == TensorSpec((), torch.int64)


def test_interleave_spec_cardinality_and_errors():
    ds = Dataset.range(3).interleave(lambda x: Dataset.range(x).map(lambda y: (y, float(y))), cycle_length=2)
    assert ds.element_spec == (TensorSpec((), torch.int64), TensorSpec((), torch.float32))
    assert ds.cardinality() == -2
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(Dataset.range(3).interleave(lambda x: x, cycle_length=2))
    with pytest.raises(InvalidArgumentError, match="cycle_length"):
        Dataset.range(3).interleave(_repeat_self, cycle_length=0)
    with pytest.raises(InvalidArgumentError, match="block_length"):
        Dataset.range(3).interleave(_repeat_self, cycle_length=1, block_length=-5)


def test_interleave_exception_from_inner_dataset():
    def check(y, x):
        if int(x) == 2:
            raise ZeroDivisionError("inner dataset of element 2")
        return y

    def inner(x):
        return Dataset.range(3).map(lambda y: check(y, x))

    it = iter(Dataset.range(4).interleave(inner, cycle_length=1))
    values(it, 6)
    with pytest.raises(ZeroDivisionError):
        next(it)


def test_interleave_restores_mid_cycle():
    make = lambda: Dataset.range(1, 7).interleave(_repeat_self, cycle_length=3, block_length=2)
    assert_restores(make, positions=(0, 1, 2, 5, 9, 14))
    make_shuffled = lambda: Dataset.range(6).interleave(lambda x: Dataset.range(10 * x, 10 * x + 5).shuffle(5, seed=1),
                                                        cycle_length=2)
    assert_restores(make_shuffled, positions=(0, 3, 7))
    assert_restores(lambda: Dataset.range(5).flat_map(lambda x: Dataset.range(x)), positions=(0, 1, 4))


def test_parallel_interleave_restores(force_threads):
    make = lambda: Dataset.range(1, 7).interleave(_repeat_self, cycle_length=3, block_length=2, num_parallel_calls=3)
    assert_restores(make, positions=(0, 1, 5, 9))


def test_function_dataset_sample_shows_the_inner_dataset():
    ds = Dataset.range(3).interleave(lambda x: Dataset.range(x).batch(2), cycle_length=2)
    sample = ds._function_dataset_sample()
    assert sample is not None and sample._op == "batch"
    assert Dataset.range(3).map(lambda x: x)._function_dataset_sample() is None
