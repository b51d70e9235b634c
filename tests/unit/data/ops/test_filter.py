import numpy as np
import pytest
import torch

from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, no_vectorization, values


def test_filter_values_and_cardinality_match_tf():
    ds = Dataset.range(10).filter(lambda x: x > 2)
    assert values(ds) == [3, 4, 5, 6, 7, 8, 9]
    assert ds.cardinality() == -2
    assert Dataset.range(10).repeat().filter(lambda x: x > 2).cardinality() == -2


def test_filter_accepts_python_and_numpy_bools():
    assert values(Dataset.range(5).filter(lambda x: int(x) % 2 == 1)) == [1, 3]
    assert values(Dataset.range(5).filter(lambda x: np.bool_(int(x) > 3))) == [4]
    assert values(Dataset.zip(Dataset.range(4), Dataset.range(4)).filter(lambda a, b: a + b > 4)) == [(3, 3)]


def test_filter_predicate_must_be_a_scalar_bool():
    with pytest.raises(InvalidArgumentError, match="scalar boolean.*int64"):
        list(Dataset.range(3).filter(lambda x: x))
    with pytest.raises(InvalidArgumentError, match="scalar boolean"):
        list(Dataset.range(3).filter(lambda x: torch.tensor([True, False])))
    with pytest.raises(TypeError, match="callable"):
        Dataset.range(3).filter(None)


@pytest.mark.parametrize("vectorize", [True, False])
def test_filter_then_batch(vectorize):
    ds = Dataset.range(30).filter(lambda x: x % 4 == 1).batch(3)
    if not vectorize:
        ds = ds.with_options(no_vectorization())
    assert values(ds) == [[1, 5, 9], [13, 17, 21], [25, 29]]


def test_filter_restores():
    assert_restores(lambda: Dataset.range(30).filter(lambda x: x % 3 != 0))
    assert_restores(lambda: Dataset.range(60).filter(lambda x: x % 3 != 0).batch(7), positions=(0, 1, 3))
