"""The typed wire format: headers and raw tensors; objects with their tensors taken out."""

from __future__ import annotations

import pytest
import torch

from distribute.errors import DataLossError
from distribute.ps import wire


@pytest.mark.parametrize("tensor", [torch.arange(6.0).reshape(2, 3), torch.tensor(3), torch.zeros(0, 4),
                                    torch.tensor([True, False]), torch.ones(2, dtype=torch.bfloat16),
                                    torch.arange(10)[::2]])
def test_tensors_round_trip(tensor):
    meta, buffers = wire.decode(wire.encode({"op": "x", "n": [1, 2]}, [tensor, b"raw"]))
    assert meta == {"op": "x", "n": [1, 2]}
    assert buffers[0].dtype == tensor.dtype and torch.equal(buffers[0], tensor)
    assert buffers[1] == b"raw"


def test_an_unsupported_dtype_is_refused():
    with pytest.raises(TypeError, match="dtypes"):
        wire.encode({}, [torch.ones(1, dtype=torch.float8_e4m3fn)])


@pytest.mark.parametrize("data, message", [
    (b"junk", "Not a distribute message"),
    (b"DSTW\x00\x00\x00\x05{bad}", "header is not valid"),
    (wire.encode({}, [torch.ones(100)])[:-8], "truncated"),
])
def test_malformed_messages_are_data_loss(data, message):
    with pytest.raises(DataLossError, match=message):
        wire.decode(data)


def test_a_header_naming_an_unknown_dtype_is_data_loss():
    good = wire.encode({}, [torch.ones(1)])
    with pytest.raises(DataLossError, match="does not carry"):
        wire.decode(good.replace(b'"float32"', b'"object!"'))


def test_objects_travel_with_their_tensors_outside_the_pickle():
    big = torch.arange(1000.0)
    blob, tensors = wire.dumps({"t": big, "p": torch.nn.Parameter(torch.ones(2)), "f": lambda x: x + 1})
    assert len(blob) < 2000 and len(tensors) == 2
    back = wire.loads(blob, tensors, lambda ref: None)
    assert torch.equal(back["t"], big) and isinstance(back["p"], torch.nn.Parameter) and back["f"](1) == 2


def test_named_objects_travel_as_names():
    marker = object()
    blob, tensors = wire.dumps([marker, 1], lambda obj: ("thing", 7) if obj is marker else None)
    assert wire.loads(blob, tensors, lambda ref: ref) == [("thing", 7), 1]
