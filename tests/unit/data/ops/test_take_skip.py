import pytest

from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def test_take_and_skip_match_tf():
    assert values(Dataset.range(10).take(3)) == [0, 1, 2]
    assert values(Dataset.range(3).take(-1)) == [0, 1, 2]
    assert values(Dataset.range(5).skip(3)) == [3, 4]
    assert values(Dataset.range(5).skip(-1)) == []
    assert Dataset.range(10).repeat().take(5).cardinality() == 5
    assert Dataset.range(10).take(-1).cardinality() == 10
    assert Dataset.range(10).skip(-1).cardinality() == 0
    assert Dataset.range(3).skip(5).cardinality() == 0
    assert Dataset.range(10).repeat().skip(4).cardinality() == -1


def test_take_and_skip_on_sequential_inputs():
    ds = Dataset.range(20).filter(lambda x: x % 2 == 0)
    assert values(ds.skip(3).take(2)) == [6, 8]
    assert values(ds.skip(3).take(4).batch(3)) == [[6, 8, 10], [12]]
    assert values(Dataset.range(100).map(lambda x: x + 1).skip(95).batch(2)) == [[96, 97], [98, 99], [100]]


@pytest.mark.parametrize("method", ["take", "skip"])
def test_counts_below_minus_one_are_errors(method):
    with pytest.raises(InvalidArgumentError, match="count=-2"):
        getattr(Dataset.range(3), method)(-2)


def test_skip_all_of_an_infinite_dataset_would_hang():
    with pytest.raises(InvalidArgumentError, match="never"):
        Dataset.range(3).repeat().skip(-1)


def test_take_and_skip_restore():
    assert_restores(lambda: Dataset.range(30).skip(4).take(11))
    assert_restores(lambda: Dataset.range(30).filter(lambda x: True).skip(4).take(11).batch(3), positions=(0, 1, 2))
