import collections

import numpy as np
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import Dataset

from .._helpers import assert_restores, values


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors([1, 2])
    assert values(ds) == [[1, 2]]
    assert ds.cardinality() == 1
    assert ds.element_spec == TensorSpec((2,), torch.int64)


def test_from_tensors_structures_and_conversion():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensors({"a": np.float32(1.5), "p": Point(1, "s")})
    (element,) = list(ds)
    assert element["a"].dtype == torch.float32 and float(element["a"]) == 1.5
    assert isinstance(element["p"], Point) and element["p"].y == b"s"
    assert ds.element_spec["p"].y == TensorSpec((), string)
    assert ds.element_spec["p"].x == TensorSpec((), torch.int64)


def test_from_tensors_none_is_a_component():
    (x, none), = list(Dataset.from_tensors((1, None)))
    assert int(x) == 1 and none is None


def test_from_tensors_repeat_batch_and_restore():
    make = lambda: Dataset.from_tensors(torch.arange(3)).repeat(5).batch(2)
    assert values(make())[0] == [[0, 1, 2], [0, 1, 2]]
    assert_restores(make, positions=(0, 1, 2))
