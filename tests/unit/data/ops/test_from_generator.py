import numpy as np
import pytest
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def _gen(items):
    return lambda: iter(items)


def test_generator_with_signature_converts_values():
    sig = (TensorSpec((), torch.int64), TensorSpec((None,), torch.float32))
    ds = Dataset.from_generator(_gen([(1, [1.0, 2.0]), (np.int32(2), np.zeros(3))]), output_signature=sig)
    assert values(ds) == [(1, [1.0, 2.0]), (2, [0.0, 0.0, 0.0])]
    assert ds.element_spec == sig
    assert ds.cardinality() == -2
    first = next(iter(ds))
    assert first[0].dtype == torch.int64 and first[1].dtype == torch.float32


def test_generator_with_output_types_and_shapes():
    ds = Dataset.from_generator(_gen([(1, [2, 3])]), output_types=(torch.int64, torch.int64),
                                output_shapes=((), (2,)))
    assert ds.element_spec == (TensorSpec((), torch.int64), TensorSpec((2,), torch.int64))
    assert values(ds) == [(1, [2, 3])]
    ds = Dataset.from_generator(_gen(["a", b"b"]), output_types=str)
    assert ds.element_spec == TensorSpec(None, string)
    assert values(ds) == [b"a", b"b"]


def test_generator_args_are_passed():
    ds = Dataset.from_generator(lambda n: iter(range(int(n))), output_signature=TensorSpec((), torch.int64),
                                args=(torch.tensor(3),))
    assert values(ds) == [0, 1, 2]


def test_generator_wrong_shape_raises_at_the_element():
    ds = Dataset.from_generator(_gen([[1, 2], [1, 2, 3]]), output_signature=TensorSpec((2,), torch.int64))
    it = iter(ds)
    assert next(it).tolist() == [1, 2]
    with pytest.raises(InvalidArgumentError, match=r"shape \(3,\) where an element of shape \(2,\)"):
        next(it)


def test_generator_wrong_structure_and_dtype():
    sig = (TensorSpec((), torch.int64), TensorSpec((), torch.int64))
    with pytest.raises(TypeError, match="did not match the expected structure"):
        list(Dataset.from_generator(_gen([1]), output_signature=sig))
    with pytest.raises(TypeError, match="did not match the expected structure"):
        list(Dataset.from_generator(_gen([(1, 2, 3)]), output_signature=sig))
    with pytest.raises(TypeError, match="truncate"):
        list(Dataset.from_generator(_gen([1.5]), output_signature=TensorSpec((), torch.int64)))
    with pytest.raises(TypeError, match="string"):
        list(Dataset.from_generator(_gen(["x"]), output_signature=TensorSpec((), torch.int64)))


def test_generator_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator([1, 2], output_types=torch.int64)
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(_gen([1]))
    with pytest.raises(TypeError, match="TensorSpec"):
        Dataset.from_generator(_gen([1]), output_signature=torch.int64)
    with pytest.raises(TypeError, match="not both"):
        Dataset.from_generator(_gen([1]), output_types=torch.int64, output_signature=TensorSpec((), torch.int64))


def test_generator_exception_keeps_type_and_traceback():
    def gen():
        yield 1
        raise KeyError("boom in generator")

    it = iter(Dataset.from_generator(gen, output_signature=TensorSpec((), torch.int64)))
    next(it)
    with pytest.raises(KeyError, match="boom") as info:
        next(it)
    assert any(entry.name == "gen" for entry in info.traceback)


def test_generator_state_replays():
    make = lambda: Dataset.from_generator(lambda: iter(range(12)), output_signature=TensorSpec((), torch.int64)).batch(5)
    assert_restores(make, positions=(0, 1, 2, 3))
    assert_restores(lambda: Dataset.from_generator(lambda: iter(range(7)), output_types=torch.int64))
