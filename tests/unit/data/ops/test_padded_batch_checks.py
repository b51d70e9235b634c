"""padded_batch: the errors and defaults of tf.data's padded_batch tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distribute import TensorSpec
from distribute.data import Dataset
from distribute.errors import DataLossError, InvalidArgumentError

from tests.unit.data._helpers import plain


def _ragged() -> Dataset:
    return Dataset.range(1, 4).map(lambda x: torch.full((int(x),), int(x)))


def test_element_larger_than_padded_shape_is_data_loss():
    def generator():
        yield torch.arange(2)
        yield torch.arange(5)

    ds = Dataset.from_generator(generator, output_signature=TensorSpec((None,), torch.int64))
    with pytest.raises(DataLossError, match="smaller size than the input element"):
        list(ds.padded_batch(2, padded_shapes=[3]))


def test_none_padding_value_is_the_component_default():
    ds = Dataset.zip(_ragged(), _ragged().map(lambda x: x.float()))
    batch = next(iter(ds.padded_batch(2, padding_values=(None, torch.tensor(-1.0)))))
    assert plain(batch) == ([[1, 0], [2, 2]], [[1.0, -1.0], [2.0, 2.0]])


def test_none_padding_value_for_a_nested_component():
    strings = Dataset.from_tensor_slices([[b"a"], [b"b"]])
    ds = Dataset.zip((_ragged(), strings), _ragged())
    batch = next(iter(ds.padded_batch(2, padding_values=(None, 7))))
    assert plain(batch) == (([[1, 0], [2, 2]], [[b"a"], [b"b"]]), [[1, 7], [2, 2]])


def test_shape_not_rank_one_is_value_error():
    ds = Dataset.from_tensors(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"must be a 1-D tensor.*shape was \(2, 2\)"):
        ds.padded_batch(5, padded_shapes=[[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="1-D tensor"):
        ds.padded_batch(5, padded_shapes=torch.ones(2, 2, dtype=torch.int64))


@pytest.mark.parametrize("shape", [[1.5, 2.0, 3.0], torch.tensor([1.5, 2.0, 3.0]),
                                   np.array([1.5, 2.0, 3.0]), [True]])
def test_shape_not_int_is_type_error(shape):
    ds = Dataset.from_tensors(torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="element type"):
        ds.padded_batch(5, padded_shapes=shape)


def test_int_tensor_and_numpy_shapes_are_accepted():
    for shape in (torch.tensor([4]), np.array([4]), [np.int64(4)], [torch.tensor(4)], [-1]):
        batch = next(iter(_ragged().padded_batch(3, padded_shapes=shape)))
        assert batch.shape[0] == 3 and batch.shape[1] in (3, 4)


def test_negative_dimension_is_value_error():
    with pytest.raises(InvalidArgumentError, match="negative dimension -2"):
        _ragged().padded_batch(2, padded_shapes=[-2])


def test_unknown_rank_needs_padded_shapes():
    ds = Dataset.from_generator(lambda: iter([1, 2, 3]), output_types=torch.int32)
    with pytest.raises(ValueError, match="`padded_shapes` must be given.*unknown rank"):
        ds.padded_batch(2)
    assert plain(next(iter(ds.padded_batch(2, padded_shapes=[])))) == [1, 2]
