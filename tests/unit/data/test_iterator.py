import json

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset, Iterator, Optional
from distribute.errors import InvalidArgumentError, OutOfRangeError

from ._helpers import roundtrip, values


def test_next_and_get_next_at_the_end():
    it = iter(Dataset.range(2))
    assert isinstance(it, Iterator)
    assert int(it.get_next()) == 0 and int(next(it)) == 1
    with pytest.raises(OutOfRangeError, match="End of sequence"):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(OutOfRangeError):
        it.get_next()
    assert iter(it) is it


def test_get_next_as_optional():
    it = iter(Dataset.range(1))
    opt = it.get_next_as_optional()
    assert opt.has_value() and int(opt.get_value()) == 0
    empty = it.get_next_as_optional()
    assert not empty.has_value()
    assert empty.element_spec == TensorSpec((), torch.int64)
    with pytest.raises(InvalidArgumentError, match="no value"):
        empty.get_value()


def test_optional_from_value():
    opt = Optional.from_value((1, [2.0, 3.0]))
    assert opt.has_value()
    assert opt.element_spec == (TensorSpec((), torch.int64), TensorSpec((2,), torch.float32))
    assert "empty" in repr(Optional.empty(None))


def test_state_dict_is_plain_and_json_friendly_without_tensors():
    it = iter(Dataset.range(10).filter(lambda x: x > 2).batch(2))
    next(it)
    state = it.state_dict()
    json.dumps(state)
    roundtrip(state)
    assert state["format"] == "distribute.data.Iterator/1"


def test_state_of_an_exhausted_iterator():
    it = iter(Dataset.range(2))
    values(it)
    fresh = iter(Dataset.range(2))
    fresh.load_state_dict(it.state_dict())
    with pytest.raises(StopIteration):
        next(fresh)


def test_load_state_dict_errors():
    it = iter(Dataset.range(3).batch(2))
    with pytest.raises(InvalidArgumentError, match="state_dict"):
        it.load_state_dict({"position": 1})
    other = iter(Dataset.range(3).map(lambda x: x)).state_dict()
    with pytest.raises(InvalidArgumentError, match="expected the state of a 'batch' node, found 'map'"):
        it.load_state_dict(other)


def test_load_state_dict_into_a_used_iterator():
    it = iter(Dataset.range(10))
    values(it, 3)
    state = it.state_dict()
    values(it, 4)
    it.load_state_dict(state)
    assert values(it) == [3, 4, 5, 6, 7, 8, 9]


def test_close_and_context_manager():
    with iter(Dataset.range(5)) as it:
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(InvalidArgumentError, match="closed"):
        it.state_dict()
    assert "Iterator" in repr(iter(Dataset.range(1)))


def test_element_spec_of_the_iterator():
    assert iter(Dataset.range(3).batch(2)).element_spec == TensorSpec((None,), torch.int64)
