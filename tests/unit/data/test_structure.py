import collections

import numpy as np
import pytest
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import _structure
from distribute.errors import InvalidArgumentError


def test_normalize_rules():
    out = _structure.normalize({"i": 3, "f": 1.5, "b": True, "s": "hé", "l": [[1, 2]], "n": np.arange(2)})
    assert out["i"].dtype == torch.int64 and out["f"].dtype == torch.float32 and out["b"].dtype == torch.bool
    assert out["s"] == "hé".encode() and out["l"].shape == (1, 2) and out["n"].dtype == torch.int64
    Point = collections.namedtuple("Point", "x y")
    assert isinstance(_structure.normalize(Point(1, 2)), Point)
    assert _structure.normalize([torch.zeros(2), torch.ones(2)]).shape == (2, 2)
    strings = _structure.normalize(np.array(["a", "b"]))
    assert strings.dtype == object and list(strings) == [b"a", b"b"]


def test_normalize_errors():
    assert _structure.normalize(None) is None  # a None component, as in tf.data
    with pytest.raises(TypeError, match="Could not convert"):
        _structure.normalize(object())
    with pytest.raises(InvalidArgumentError, match="same length"):
        _structure.normalize([[1], [1, 2]])


def test_specs():
    assert _structure.spec_of((torch.zeros(2, 3), b"x")) == (TensorSpec((2, 3), torch.float32), TensorSpec((), string))


def test_encode_decode_round_trip():
    element = {"a": torch.arange(3), "s": b"\x00\xff", "t": np.array([b"x", b"yz"], dtype=object)}
    spec = _structure.spec_of(element)
    encoded = _structure.encode(element)
    back = _structure.decode(encoded, spec)
    assert back["a"].tolist() == [0, 1, 2] and back["s"] == b"\x00\xff" and list(back["t"]) == [b"x", b"yz"]


def test_batch_unstack_and_errors():
    structure = _structure.Structure((torch.zeros(()), b""))
    batch = _structure.batch_elements([(torch.tensor(1), b"a"), (torch.tensor(2), b"b")], structure)
    assert batch[0].tolist() == [1, 2] and list(batch[1]) == [b"a", b"b"]
    rows = _structure.unstack(batch, structure)
    assert rows[1][1] == b"b"
    with pytest.raises(InvalidArgumentError, match="scalar"):
        _structure.unstack(torch.tensor(1), _structure.Structure(torch.tensor(1)))
    with pytest.raises(InvalidArgumentError, match="different first dimensions"):
        _structure.unstack((torch.zeros(2), torch.zeros(3)), _structure.Structure((0, 0)))
