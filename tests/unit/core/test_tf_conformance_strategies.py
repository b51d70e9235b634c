"""Strategy behaviours asserted by TensorFlow's own strategy tests (issues 21, 23, 25).

Translated from the behaviour of distribute_lib_test, strategy_common_test, mirrored_strategy_test
and parameter_server_strategy_test (CentralStorage), with logical CPU replicas.
"""

import copy

import pytest
import torch

import distribute
from distribute import VariableAggregation
from distribute.data import Dataset
from distribute.experimental import CentralStorageStrategy
from tests.strategies import local_pieces, local_replica_ids, named_strategies


DEFAULT = distribute.get_strategy()


def values_of(result):
    """The replicas' results (one value when they were all the same object)."""
    return list(result.values) if isinstance(result, distribute.PerReplica) else [result]


def mirrored2():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


# -- 21.4: the default strategy's scope is cross-replica for it -----------------------------
def test_default_strategy_reduce_and_gather_inside_its_scope():
    default = distribute.get_strategy()
    with default.scope():
        assert torch.equal(default.reduce("sum", torch.tensor(2.0), axis=None), torch.tensor(2.0))
        assert torch.equal(default.reduce("mean", torch.tensor([1.0, 3.0]), axis=0), torch.tensor(2.0))
        assert torch.equal(default.gather(torch.tensor([1.0, 2.0]), axis=0), torch.tensor([1.0, 2.0]))


def test_default_strategy_reduce_inside_another_scope_still_mixes():
    default, s = distribute.get_strategy(), mirrored2()
    with s.scope():
        with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
            default.reduce("sum", torch.tensor(1.0), axis=None)


def test_reduce_in_a_replica_context_still_raises():
    s = mirrored2()
    with pytest.raises(RuntimeError, match="Method requires being in cross-replica context"):
        s.run(lambda: s.reduce("sum", torch.tensor(1.0), axis=None))


# -- 21.8 and 23.5: CentralStorage variables ----------------------------------------------
def test_central_storage_integer_mean_variable():
    s = CentralStorageStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable([1], aggregation=VariableAggregation.MEAN)
    assert isinstance(v, distribute.AggregatingVariable)
    s.run(lambda: v.assign_add(torch.tensor([2])))
    assert v.dtype == torch.int64 and v.tolist() == [3]
    rid = distribute.get_replica_context
    s.run(lambda: v.assign_add(torch.tensor([1 + rid().replica_id_in_sync_group])))  # mean 1.5
    assert v.dtype == torch.int64 and v.tolist() == [4]


def test_mirrored_still_refuses_integer_mean():
    with mirrored2().scope():
        with pytest.raises(ValueError, match="aggregation=MEAN and a non-floating dtype"):
            distribute.Variable([1], aggregation=VariableAggregation.MEAN)


@pytest.mark.parametrize("aggregation", list(VariableAggregation))
def test_central_storage_cross_replica_update_any_aggregation(aggregation):
    s = CentralStorageStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable(1.0, aggregation=aggregation)
    s.extended.update(v, lambda x, d: x.assign_add(d), args=(torch.tensor(2.0),))
    assert float(v) == 3.0
    assert s.extended.update(v, lambda x: x + 1, group=False)[0].item() == 4.0


def test_central_storage_update_from_a_replica_runs_once():
    s = CentralStorageStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable(1.0)
    s.run(lambda: s.extended.update(v, lambda x: x.assign_add(1.0)))
    assert float(v) == 2.0


def test_central_storage_single_device_gives_plain_variables():
    s = CentralStorageStrategy(["CPU:0"])
    with s.scope():
        v = distribute.Variable(1.0, aggregation=VariableAggregation.SUM)
        layer = torch.nn.Linear(2, 1)
    assert type(v) is distribute.Variable
    assert not isinstance(layer.weight, distribute.AggregatingVariable)
    assert s.extended.variable_created_in_scope(v)
    s.run(lambda: v.assign_add(2.0))
    assert float(v) == 3.0


def test_central_storage_several_devices_keep_aggregating_variables():
    with CentralStorageStrategy(["CPU:0", "CPU:1"]).scope():
        assert isinstance(distribute.Variable(1.0), distribute.AggregatingVariable)


# -- 23.3: scopes ---------------------------------------------------------------------------
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_reentering_an_active_scope_object(make_strategy):
    strategy = make_strategy()
    scope = strategy.scope()
    with scope:
        with scope as inner:
            assert inner is strategy and distribute.get_strategy() is strategy
        assert distribute.get_strategy() is strategy
    assert distribute.get_strategy() is DEFAULT and not distribute.has_strategy()
    with scope:  # and once more after both exits
        assert distribute.get_strategy() is strategy


def test_scope_exit_out_of_order_still_raises():
    s = distribute.MirroredStrategy(["CPU:0"])
    outer, inner = s.scope(), s.scope()
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Strategy scope nesting error"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert not distribute.has_strategy()


@pytest.mark.parametrize("method", ["make_dataset_iterator", "make_input_fn_iterator"])
def test_v1_iterators_inside_another_strategys_scope_raise(method):
    s, other = mirrored2(), distribute.OneDeviceStrategy("CPU:0")
    arg = Dataset.range(4).batch(2)
    if method == "make_input_fn_iterator":
        arg = (lambda data: lambda ctx: data)(arg)
    with other.scope():
        with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
            getattr(s, method)(arg)
    with s.scope():
        assert getattr(s, method)(arg).get_next() is not None


# -- 23.4: update_config_proto --------------------------------------------------------------
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_update_config_proto_returns_a_deep_copy(make_strategy):
    config = {"allow_soft_placement": True, "device_filters": ["/job:worker"]}
    result = make_strategy().update_config_proto(config)
    assert result == config and result is not config
    assert result["device_filters"] is not config["device_filters"]


# -- 25.3: call_for_each_replica with one non-sequence argument ------------------------------
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_call_for_each_replica_wraps_a_single_argument(make_strategy):
    strategy = make_strategy()
    n = strategy.num_replicas_in_sync
    dist = strategy.experimental_distribute_dataset(Dataset.range(2 * n).batch(2 * n))
    batch = next(iter(dist))
    out = strategy.extended.call_for_each_replica(lambda x: x * 10, batch)
    got = [t.tolist() for t in strategy.experimental_local_results(out)]
    assert got == [[10 * i for i in rows] for rows in local_pieces(strategy, 2 * n)]  # this worker's shard
    element = {"a": torch.tensor(1.0)}
    out = strategy.extended.call_for_each_replica(lambda d: d["a"] + 1, element)
    assert [float(t) for t in strategy.experimental_local_results(out)] == [2.0] * len(local_replica_ids(strategy))
    assert set(values_of(strategy.extended.call_for_each_replica(lambda: 7, None))) == {7}
    assert set(values_of(strategy.extended.call_for_each_replica(lambda a, b: a + b, [1, 2]))) == {3}


def test_call_for_each_replica_error_paths():
    s = mirrored2()
    with pytest.raises(TypeError, match="`kwargs` to be a dict or None, received"):
        s.extended.call_for_each_replica(lambda x: x, (1,), kwargs=[("x", 1)])
    with pytest.raises(TypeError, match="fn must be callable"):
        s.extended.call_for_each_replica(3, torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="Method requires being in cross-replica context"):
        s.run(lambda: s.extended.call_for_each_replica(lambda: 1))
    with pytest.raises(ValueError, match="positional args must be a list or tuple"):
        s.run(lambda x: x, args=torch.tensor(1.0))  # run (v2) keeps TensorFlow's check


def test_deepcopy_of_a_strategy_keeps_working_scopes():
    s = copy.deepcopy(mirrored2())
    scope = s.scope()
    with scope, scope:
        assert distribute.get_strategy() is s
