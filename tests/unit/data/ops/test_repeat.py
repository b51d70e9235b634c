import pytest

from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def test_repeat_values_and_cardinality_match_tf():
    assert values(Dataset.range(2).repeat(2)) == [0, 1, 0, 1]
    assert values(Dataset.range(3).repeat(), 7) == [0, 1, 2, 0, 1, 2, 0]
    assert Dataset.range(3).repeat(2).cardinality() == 6
    assert Dataset.range(3).filter(lambda x: True).repeat().cardinality() == -1
    assert Dataset.range(0).repeat().cardinality() == 0
    assert Dataset.range(3).repeat(0).cardinality() == 0
    assert values(Dataset.range(3).repeat(0)) == []


def test_repeat_of_an_empty_input_ends():
    assert values(Dataset.range(0).filter(lambda x: True).repeat()) == []
    assert values(Dataset.range(5).filter(lambda x: x > 10).repeat()) == []


def test_repeat_across_batches():
    assert values(Dataset.range(3).repeat(3).batch(4)) == [[0, 1, 2, 0], [1, 2, 0, 1], [2]]
    seq = Dataset.range(3).filter(lambda x: True).repeat(3).batch(4)
    assert values(seq) == [[0, 1, 2, 0], [1, 2, 0, 1], [2]]


def test_repeat_reshuffles_each_epoch():
    epochs = values(Dataset.range(6).shuffle(6, seed=4).repeat(3).batch(6))
    assert all(sorted(e) == list(range(6)) for e in epochs)
    assert len({tuple(e) for e in epochs}) > 1
    fixed = values(Dataset.range(6).shuffle(6, seed=4, reshuffle_each_iteration=False).repeat(3).batch(6))
    assert fixed[0] == fixed[1] == fixed[2]


def test_repeat_bad_count():
    with pytest.raises(InvalidArgumentError, match="count=-2"):
        Dataset.range(3).repeat(-2)


def test_repeat_restores():
    assert_restores(lambda: Dataset.range(4).repeat(5), positions=(0, 3, 4, 9))
    assert_restores(lambda: Dataset.range(5).shuffle(5, seed=1).repeat(4), positions=(0, 4, 5, 12))
    assert_restores(lambda: Dataset.range(5).filter(lambda x: True).repeat().batch(3), positions=(0, 2, 5))
