import pytest

from distribute.data import AUTOTUNE, SHARD_HINT, AutoShardPolicy, DistributeOptions, Options, experimental


def test_policy_values_match_tf():
    assert [p.value for p in AutoShardPolicy] == [-1, 0, 1, 2, 3]
    assert [p.name for p in AutoShardPolicy] == ["OFF", "AUTO", "FILE", "DATA", "HINT"]
    assert AUTOTUNE == -1 and SHARD_HINT == -1
    assert experimental.AutoShardPolicy is AutoShardPolicy
    assert experimental.INFINITE_CARDINALITY == -1 and experimental.UNKNOWN_CARDINALITY == -2


def test_options_fields_and_validation():
    options = Options()
    assert options.deterministic is None
    assert options.experimental_distribute.auto_shard_policy is None
    assert options.experimental_distribute.effective_auto_shard_policy == AutoShardPolicy.AUTO
    options.experimental_distribute.auto_shard_policy = 2
    assert options.experimental_distribute.auto_shard_policy is AutoShardPolicy.DATA
    options.experimental_deterministic = True
    assert options.deterministic is True
    with pytest.raises(ValueError, match="AutoShardPolicy"):
        options.experimental_distribute.auto_shard_policy = 7
    with pytest.raises(TypeError, match="bool"):
        options.deterministic = "yes"
    with pytest.raises(AttributeError, match="no option"):
        options.determinstic = True
    with pytest.raises(TypeError, match="DistributeOptions"):
        options.experimental_distribute = 3
    assert isinstance(options.experimental_distribute, DistributeOptions)


def test_merge():
    a, b = Options(), Options()
    a.deterministic = True
    b.experimental_optimization.map_vectorization = False
    merged = a.merge(b)
    assert merged.deterministic is True and not merged.map_vectorization_enabled
    assert a.map_vectorization_enabled
    with pytest.raises(TypeError, match="Options"):
        a.merge(3)
    assert "deterministic=True" in repr(a)
