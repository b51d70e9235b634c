"""Variable entry points whose signatures follow torch.Tensor's (kept typed with mypy)."""

import numpy as np
import pytest
import torch

import distribute
from distribute._base.tensor_spec import string
from distribute import Variable


def test_string_dtype_is_refused_with_a_type_error():
    with pytest.raises(TypeError, match="cannot hold strings"):
        Variable(1.0, dtype=string)


def test_numpy_accepts_torch_force_keyword():
    v = Variable([1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(force=True), np.array([1.0, 2.0], dtype=np.float32))
    np.testing.assert_array_equal(v.numpy(), np.array([1.0, 2.0], dtype=np.float32))


def test_distributed_numpy_accepts_torch_force_keyword():
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with strategy.scope():
        v = Variable(torch.tensor([3.0]))
    np.testing.assert_array_equal(v.numpy(force=True), np.array([3.0], dtype=np.float32))
