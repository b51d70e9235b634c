import pytest

from distribute.data import Dataset

from .._helpers import assert_restores, values


def test_zip_structures_match_tf():
    assert values(Dataset.zip(Dataset.range(2), Dataset.range(5, 7))) == [(0, 5), (1, 6)]
    nested = Dataset.zip((Dataset.range(2), (Dataset.range(3), Dataset.range(4))))
    assert values(nested) == [(0, (0, 0)), (1, (1, 1))]
    assert values(Dataset.zip({"a": Dataset.range(2), "b": Dataset.range(3)})) == [{"a": 0, "b": 0}, {"a": 1, "b": 1}]


def test_zip_cardinality_matches_tf():
    assert Dataset.zip(Dataset.range(3), Dataset.range(10).repeat()).cardinality() == 3
    assert Dataset.zip(Dataset.range(3).filter(lambda x: True), Dataset.range(5)).cardinality() == -2
    assert Dataset.zip(Dataset.range(3).repeat(), Dataset.range(1).repeat()).cardinality() == -1


def test_zip_of_sequential_inputs_and_restore():
    make = lambda: Dataset.zip(Dataset.range(10).filter(lambda x: x % 2 == 0), Dataset.range(100).shuffle(5, seed=2))
    assert [a for a, _ in values(make())] == [0, 2, 4, 6, 8]
    assert_restores(make, positions=(0, 2, 4))
    assert_restores(lambda: Dataset.zip(Dataset.range(9), Dataset.range(9).map(lambda x: -x)).batch(2), positions=(0, 2))


def test_zip_rejects_non_datasets():
    with pytest.raises(TypeError, match="expects Datasets"):
        Dataset.zip(Dataset.range(2), [1, 2])


def test_zip_graph_interface():
    a, b = Dataset.range(2), Dataset.range(3)
    ds = Dataset.zip({"a": a, "b": b})
    assert ds._inputs() == (a, b)
    rebuilt = ds._with_inputs((Dataset.range(5, 7), b))
    assert values(rebuilt) == [{"a": 5, "b": 0}, {"a": 6, "b": 1}]
