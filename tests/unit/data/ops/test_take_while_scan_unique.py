"""take_while, scan and unique against outputs recorded from TensorFlow 2.21."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, values


def test_take_while_matches_tf():
    ds = Dataset.range(10).take_while(lambda x: x < 4)
    assert values(ds) == [0, 1, 2, 3]
    assert ds.cardinality() == -2


def test_take_while_stops_for_good_and_restores():
    ds = Dataset.from_tensor_slices([1, 2, 9, 1, 2]).take_while(lambda x: x < 5)
    assert values(ds) == [1, 2]
    assert_restores(lambda: Dataset.range(20).shuffle(20, seed=1).take_while(lambda x: x != 7))


@pytest.mark.parametrize("predicate", [lambda x: x, lambda x: torch.tensor([True, False])])
def test_take_while_predicate_must_be_scalar_bool(predicate):
    # tf: ValueError "Invalid `predicate`. `predicate` must return a `tf.bool` scalar tensor ..."
    with pytest.raises(ValueError, match="Invalid `predicate`"):
        Dataset.range(10).take_while(predicate)


def test_take_while_non_callable():
    with pytest.raises(TypeError, match="predicate"):
        Dataset.range(10).take_while(3)


def test_scan_matches_tf():
    ds = Dataset.range(5).scan(torch.tensor(0), lambda s, x: (s + x, s * 10))
    assert values(ds) == [0, 0, 10, 30, 60]
    assert ds.cardinality() == 5
    pairs = Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).scan(0, lambda s, x: (s + x[0], (s, x[1])))
    assert values(pairs) == [(0, 4), (1, 5), (3, 6)]  # the element is one argument, as in tf


def test_scan_cardinality_and_growing_state():
    assert Dataset.range(3).repeat().scan(0, lambda s, x: (s, x)).cardinality() == -1
    assert Dataset.range(3).filter(lambda x: x >= 0).scan(0, lambda s, x: (s, x)).cardinality() == -2
    grow = Dataset.range(3).scan(torch.tensor([0]), lambda s, x: (torch.cat([s, x.view(1)]), x))
    assert values(grow) == [0, 1, 2]  # tf accepts a state whose shape changes


def test_scan_errors():
    # tf: TypeError "Invalid `scan_func`. `scan_func` should return a pair ..."
    with pytest.raises(TypeError, match="should return a pair"):
        Dataset.range(3).scan(0, lambda s, x: s)
    with pytest.raises(TypeError, match="structure and dtypes of the initial state"):
        list(Dataset.range(3).scan(0, lambda s, x: ((s, s), x)))
    with pytest.raises(TypeError, match="structure and dtypes of the initial state"):
        list(Dataset.range(3).scan(0, lambda s, x: (s + 1.0, x)))
    with pytest.raises(TypeError, match="scan_func"):
        Dataset.range(3).scan(0, "f")


def test_scan_restores():
    assert_restores(lambda: Dataset.range(30).scan((0, torch.tensor(1.0)),
                                                   lambda s, x: ((s[0] + x, s[1] * 1.5), s[0] - x)))


def test_unique_matches_tf():
    ds = Dataset.from_tensor_slices([1, 37, 2, 37, 2, 1]).unique()
    assert values(ds) == [1, 37, 2]
    assert ds.cardinality() == -2
    assert values(Dataset.from_tensor_slices([b"a", b"b", b"a", b"c"]).unique()) == [b"a", b"b", b"c"]
    assert values(Dataset.from_tensor_slices(torch.tensor([3, 1, 3], dtype=torch.int32)).unique()) == [3, 1]
    rows = Dataset.from_tensor_slices([[1, 2], [1, 2], [3, 4]]).unique()
    assert values(rows) == [[1, 2], [3, 4]]


def test_unique_errors():
    # tf: TypeError "`tf.data.Dataset.unique` does not support type float32 -- only ..."
    with pytest.raises(TypeError, match="does not support"):
        Dataset.from_tensor_slices([1.0, 2.0]).unique()
    # tf: InvalidArgumentError "UniqueDataset only supports inputs with a single component."
    with pytest.raises(InvalidArgumentError, match="single component"):
        Dataset.from_tensor_slices(([1], [2])).unique()


def test_unique_restores():
    data = np.array([5, 3, 5, 1, 3, 8, 1, 9, 5, 2, 2, 7])
    assert_restores(lambda: Dataset.from_tensor_slices(data).repeat(2).unique())
    assert_restores(lambda: Dataset.from_tensor_slices([b"x", b"y", b"x", b"z"]).unique())
