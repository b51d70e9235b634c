import pytest

from distribute.data import SHARD_HINT, Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, no_vectorization, values


def test_shard_values_and_cardinality_match_tf():
    assert values(Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert Dataset.range(10).shard(3, 0).cardinality() == 4
    assert Dataset.range(10).shard(3, 2).cardinality() == 3
    assert Dataset.range(3).repeat().shard(2, 0).cardinality() == -1


@pytest.mark.parametrize("index", [0, 1, 2])
def test_shard_sequential_and_bulk_paths_agree(index):
    bulk = Dataset.range(20).shard(3, index).batch(2)
    sequential = Dataset.range(20).filter(lambda x: True).shard(3, index).batch(2)
    expected = [list(range(20))[index::3][i:i + 2] for i in range(0, len(range(20)[index::3]), 2)]
    assert values(bulk) == expected
    assert values(sequential) == expected
    assert values(sequential.with_options(no_vectorization())) == expected


@pytest.mark.parametrize("num_shards, index, match", [(2, 2, r"\[0, 1\].*index=2"), (2, -1, "index=-1"),
                                                      (0, 0, "num_shards=0"), (-1, 0, "num_shards=-1")])
def test_shard_index_out_of_range(num_shards, index, match):
    with pytest.raises(InvalidArgumentError, match=match):
        Dataset.range(3).shard(num_shards, index)


def test_shard_hint_placeholder():
    ds = Dataset.range(8).shard(SHARD_HINT, SHARD_HINT)
    assert ds.is_placeholder and ds.cardinality() == -2
    with pytest.raises(InvalidArgumentError, match="placeholder"):
        list(ds)
    filled = ds._with_inputs(ds._inputs())
    filled.num_shards, filled.index = 2, 1
    assert values(filled) == [1, 3, 5, 7]


def test_shard_restores():
    assert_restores(lambda: Dataset.range(40).shard(3, 2))
    assert_restores(lambda: Dataset.range(40).filter(lambda x: x > 1).shard(4, 1).batch(3), positions=(0, 1, 2))
