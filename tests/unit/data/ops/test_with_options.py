import pytest

from distribute.data import AutoShardPolicy, Dataset, Options

from .._helpers import assert_restores, no_vectorization, values


def test_options_merge_later_wins():
    a, b = Options(), Options()
    a.deterministic = False
    a.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA
    b.experimental_distribute.auto_shard_policy = AutoShardPolicy.OFF
    ds = Dataset.range(4).with_options(a).map(lambda x: x).with_options(b)
    options = ds.options()
    assert options.deterministic is False
    assert options.experimental_distribute.auto_shard_policy == AutoShardPolicy.OFF
    assert values(ds) == [0, 1, 2, 3]
    assert Dataset.range(3).options() == Options()


def test_options_reach_through_zip():
    a = Options()
    a.experimental_distribute.auto_shard_policy = AutoShardPolicy.FILE
    ds = Dataset.zip(Dataset.range(2).with_options(a), Dataset.range(2))
    assert ds.options().experimental_distribute.auto_shard_policy == AutoShardPolicy.FILE


def test_with_options_rejects_other_types():
    with pytest.raises(TypeError, match="Options"):
        Dataset.range(2).with_options({"deterministic": True})


def test_with_options_is_transparent_to_iteration_and_state():
    assert_restores(lambda: Dataset.range(12).with_options(Options()).shuffle(5, seed=1).batch(5), positions=(0, 1, 2))
    assert_restores(lambda: Dataset.range(12).map(lambda x: x * 2).batch(5).with_options(no_vectorization()),
                    positions=(0, 1, 2))
