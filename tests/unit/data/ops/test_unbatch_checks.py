"""unbatch: components with different known first dimensions are refused when the dataset
is built, where the user's line is on the stack (tf.data's unbatch tests)."""

from __future__ import annotations

import pytest
import torch

from distribute import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import plain


def test_mismatched_leading_dims_fail_when_built():
    ds = Dataset.from_tensors((torch.arange(7), torch.arange(8), torch.arange(9)))
    with pytest.raises(ValueError, match=r"same first dimension.*\[7, 8, 9\]") as info:
        ds.unbatch()
    assert isinstance(info.value, InvalidArgumentError)


def test_mismatch_found_at_iteration_when_dims_are_unknown():
    def generator():
        yield torch.arange(2), torch.arange(3)

    signature = (TensorSpec((None,), torch.int64), TensorSpec((None,), torch.int64))
    ds = Dataset.from_generator(generator, output_signature=signature).unbatch()
    with pytest.raises(InvalidArgumentError, match="different first dimensions"):
        list(ds)


def test_matching_leading_dims_unbatch():
    ds = Dataset.from_tensors((torch.arange(3), torch.arange(3) * 10)).unbatch()
    assert [plain(e) for e in ds] == [(0, 0), (1, 10), (2, 20)]


def test_one_unknown_dim_is_not_a_mismatch():
    signature = (TensorSpec((None,), torch.int64), TensorSpec((2,), torch.int64))
    ds = Dataset.from_generator(lambda: iter([(torch.arange(2), torch.arange(2))]),
                                output_signature=signature).unbatch()
    assert [plain(e) for e in ds] == [(0, 0), (1, 1)]
