"""from_generator: a yielded value that does not fit the signature raises InvalidArgumentError
at its element, and iteration goes on with the next one (tf.data's from_generator tests)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distribute.data import Dataset, Iterator
from distribute.data.ops.from_generator import GeneratorElementError
from distribute.errors import InvalidArgumentError


def test_string_where_int64_is_declared():
    def generator():
        yield np.array([1, 2, 3], dtype=np.int64)
        yield np.array([4, 5, 6], dtype=np.int64)
        yield "ERROR"
        yield np.array([7, 8, 9], dtype=np.int64)

    ds = Dataset.from_generator(generator, output_types=torch.int64, output_shapes=[3])
    with Iterator(ds) as it:
        assert next(it).tolist() == [1, 2, 3]
        assert next(it).tolist() == [4, 5, 6]
        with pytest.raises(InvalidArgumentError, match="string"):
            next(it)
        assert next(it).tolist() == [7, 8, 9]


def test_structure_mismatch_is_invalid_argument():
    def generator():
        yield 1, 2
        yield 3
        yield 4, 5

    ds = Dataset.from_generator(generator, output_types=(torch.int64, torch.int64))
    with Iterator(ds) as it:
        assert [int(v) for v in next(it)] == [1, 2]
        with pytest.raises(InvalidArgumentError, match="expected structure"):
            next(it)
        assert [int(v) for v in next(it)] == [4, 5]


def test_unconvertible_object_is_invalid_argument():
    ds = Dataset.from_generator(lambda: iter([object()]), output_types=torch.int64)
    with pytest.raises(InvalidArgumentError, match="cannot be converted"):
        list(ds)


def test_the_error_is_also_a_type_error():
    assert issubclass(GeneratorElementError, TypeError)
    ds = Dataset.from_generator(lambda: iter(["x"]), output_types=torch.int64)
    with pytest.raises(TypeError):
        list(ds)
