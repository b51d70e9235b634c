import pytest
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import Dataset
from distribute.errors import DataLossError, InvalidArgumentError

from .._helpers import assert_restores, values


def _ragged(n=4):
    return Dataset.range(1, n + 1).map(lambda x: torch.full((int(x),), int(x)))


def test_padded_batch_matches_tf():
    assert values(_ragged().padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    ds = _ragged().padded_batch(2, padded_shapes=[5], padding_values=torch.tensor(-1))
    assert values(ds) == [[[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]], [[3, 3, 3, -1, -1], [4, 4, 4, 4, -1]]]
    assert ds.element_spec == TensorSpec((None, 5), torch.int64)
    assert _ragged().padded_batch(2, drop_remainder=True).element_spec == TensorSpec((2, None), torch.int64)


def test_padded_batch_structures_and_strings():
    ds = Dataset.zip(_ragged(3), Dataset.from_tensor_slices([["a"], ["b"], ["c"]]))
    out = values(ds.padded_batch(2, padded_shapes=([None], [2]), padding_values=(0, "-")))
    assert out[0] == ([[1, 0], [2, 2]], [[b"a", b"-"], [b"b", b"-"]])
    assert out[1] == ([[3, 3, 3]], [[b"c", b"-"]])
    assert ds.padded_batch(2).element_spec == (TensorSpec((None, None), torch.int64), TensorSpec((None, 1), string))


def test_padding_to_a_smaller_shape_is_an_error():
    with pytest.raises(DataLossError, match="smaller size"):
        list(_ragged().padded_batch(2, padded_shapes=[2]))
    with pytest.raises(InvalidArgumentError, match="rank"):
        _ragged().padded_batch(2, padded_shapes=[2, 2])
    with pytest.raises(InvalidArgumentError, match="structure"):
        Dataset.zip(_ragged(), _ragged()).padded_batch(2, padded_shapes=[None])
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        _ragged().padded_batch(0)


def test_padded_batch_restores():
    assert_restores(lambda: _ragged(9).padded_batch(2), positions=(0, 1, 3))
