import numpy as np
import pytest
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def test_slices_of_tuples_dicts_and_lists_match_tf():
    assert values(Dataset.from_tensor_slices(([1, 2], [3, 4]))) == [(1, 3), (2, 4)]
    assert values(Dataset.from_tensor_slices([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": [[1.0, 2.0], [3.0, 4.0]]})
    assert values(ds) == [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}]
    assert ds.element_spec == {"a": TensorSpec((), torch.int64), "b": TensorSpec((2,), torch.float32)}


def test_slices_of_strings_and_numpy():
    ds = Dataset.from_tensor_slices(["a", "bc"])
    assert values(ds) == [b"a", b"bc"]
    assert ds.element_spec == TensorSpec((), string)
    assert values(ds.batch(2)) == [[b"a", b"bc"]]
    array = np.arange(6, dtype=np.float64).reshape(3, 2)
    assert next(iter(Dataset.from_tensor_slices(array))).dtype == torch.float64


def test_slices_of_different_lengths_is_an_error():
    with pytest.raises(InvalidArgumentError, match=r"same size.*tensors\[0\] has 2, tensors\[1\] has 3"):
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))


def test_slices_of_a_scalar_is_an_error():
    with pytest.raises(InvalidArgumentError, match="at least one dimension"):
        Dataset.from_tensor_slices(torch.tensor(3))
    with pytest.raises(InvalidArgumentError, match="Could not convert"):
        Dataset.from_tensor_slices([[1, 2], [3]])


def test_batches_are_copies_and_elements_views():
    source = torch.zeros(4, 2)
    batch = next(iter(Dataset.from_tensor_slices(source).batch(4)))
    batch += 1
    assert source.sum() == 0


def test_slices_restore_and_batch():
    make = lambda: Dataset.from_tensor_slices((torch.arange(30).reshape(10, 3), torch.arange(10))).batch(3)
    assert values(make())[-1] == ([[27, 28, 29]], [9])
    assert_restores(make, positions=(0, 1, 3))
    assert_restores(lambda: Dataset.from_tensor_slices(torch.arange(10.0)))
