"""rebatch, rejection_resample, ignore_errors and get_single_element, against TensorFlow 2.21."""

from __future__ import annotations

import collections
import logging

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, values


@pytest.mark.parametrize("make, expected, shape", [
    (lambda: Dataset.range(10).batch(4).rebatch(3), [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], (None,)),
    (lambda: Dataset.range(10).batch(4).rebatch([2, 3]), [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]], (None,)),
    (lambda: Dataset.range(10).batch(4).rebatch(3, drop_remainder=True), [[0, 1, 2], [3, 4, 5], [6, 7, 8]], (3,)),
    (lambda: Dataset.range(12).batch(4, drop_remainder=True).rebatch(2),
     [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]], (2,)),
    (lambda: Dataset.range(10).batch(4, drop_remainder=True).rebatch(3), [[0, 1, 2], [3, 4, 5], [6, 7]], (None,)),
])
def test_rebatch_matches_tf(make, expected, shape):
    ds = make()
    assert values(ds) == expected
    assert ds.element_spec == TensorSpec(shape, torch.int64)
    assert ds.cardinality() == -2
    assert_restores(make)


def test_rebatch_errors():
    # tf: ValueError "Invalid `batch_sizes`. Expected dataset with rank of >= 1 ..."
    with pytest.raises(ValueError, match="rank of >= 1"):
        Dataset.range(10).rebatch(3)
    with pytest.raises(ValueError, match="scalar or a vector"):
        Dataset.range(10).batch(2).rebatch([[1]])
    # tf loops forever on 0; here it is an argument error
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        Dataset.range(10).batch(2).rebatch(0)
    with pytest.raises(ValueError, match="at least one"):
        Dataset.range(10).batch(2).rebatch([])


def test_ignore_errors_drops_failing_elements():
    def inverse(x):
        if x == 0:
            raise ValueError("division by zero")
        return 1.0 / x

    ds = Dataset.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(inverse)
    assert values(ds.ignore_errors()) == [1.0, 0.5, 0.25]  # recorded from tf
    assert ds.ignore_errors().cardinality() == -2
    with pytest.raises(ValueError):
        list(ds)
    with pytest.raises(TypeError, match="log_warning"):
        ds.ignore_errors(log_warning=1)
    assert_restores(lambda: Dataset.range(20).map(lambda x: x if x % 3 else 1 / 0).ignore_errors())


def test_ignore_errors_log_warning(caplog):
    ds = Dataset.from_tensor_slices([1, 0, 2]).map(lambda x: 10 // int(x)).ignore_errors(log_warning=True)
    with caplog.at_level(logging.WARNING, logger="distribute.data"):
        assert values(ds) == [10, 5]
    assert "ZeroDivisionError" in caplog.text


def test_get_single_element_matches_tf():
    assert values([Dataset.range(1).get_single_element()]) == [0]
    element = Dataset.from_tensors(({"a": [1, 2]}, 3)).get_single_element()
    assert values([element]) == [({"a": [1, 2]}, 3)]
    with pytest.raises(InvalidArgumentError, match="^Dataset was empty.$"):
        Dataset.range(0).get_single_element()
    with pytest.raises(InvalidArgumentError, match="^Dataset had more than one element.$"):
        Dataset.range(2).get_single_element()


def _classes():
    return Dataset.from_tensor_slices(torch.tensor([0, 0, 0, 0, 1, 1, 1, 2])).repeat(100)


def test_rejection_resample_balances_classes():
    # tf 2.21 (seed 3): Counter({0: 136, 2: 133, 1: 130}) with initial_dist,
    # Counter({0: 168, 1: 166, 2: 142}) estimated; our stream differs, the balance must not
    ds = _classes().rejection_resample(lambda x: x, [1 / 3, 1 / 3, 1 / 3], [0.5, 3 / 8, 1 / 8], seed=3)
    assert ds.element_spec == (TensorSpec((), torch.int64), TensorSpec((), torch.int64))
    pairs = values(ds)
    assert all(k == v for k, v in pairs)
    counts = collections.Counter(k for k, _ in pairs)
    assert 350 < sum(counts.values()) < 500 and max(counts.values()) - min(counts.values()) < 40
    estimated = collections.Counter(k for k, _ in values(
        _classes().rejection_resample(lambda x: x, [1 / 3, 1 / 3, 1 / 3], seed=3)))
    assert max(estimated.values()) - min(estimated.values()) < 50
    # tf: Counter({0: 304, 1: 300}) for a target without class 2
    none_of_2 = collections.Counter(k for k, _ in values(
        _classes().rejection_resample(lambda x: x, [0.5, 0.5, 0.0], [0.5, 3 / 8, 1 / 8], seed=3)))
    assert set(none_of_2) == {0, 1} and abs(none_of_2[0] - none_of_2[1]) < 60


def test_rejection_resample_is_reproducible_and_restores():
    make = lambda: _classes().rejection_resample(lambda x: x, [0.2, 0.3, 0.5], seed=7)  # noqa: E731
    assert values(make()) == values(make())
    assert_restores(make, positions=(0, 1, 5, 40))


def test_rejection_resample_errors():
    with pytest.raises(InvalidArgumentError, match="same length"):
        Dataset.range(3).rejection_resample(lambda x: x, [0.5, 0.5, 0.1], initial_dist=[0.5, 0.5])
    with pytest.raises(InvalidArgumentError, match="probabilities >= 0"):
        Dataset.range(3).rejection_resample(lambda x: x, [0.5, 0.5, -1.0])
    with pytest.raises(InvalidArgumentError, match="outside"):
        list(Dataset.range(3).rejection_resample(lambda x: x, [0.5, 0.5], seed=1))
    with pytest.raises(TypeError, match="class_func"):
        Dataset.range(3).rejection_resample(None, [0.5, 0.5])
