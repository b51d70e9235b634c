"""``distribute.compat.v1``: the v1 strategies' ``reduce(reduce_op, value)`` (issue 25.2) and the
v1 ``Strategy`` page's example, translated."""

import inspect

import pytest
import torch

import distribute
from distribute.compat import v1
from distribute.data import Dataset

V1_FACTORIES = {
    "mirrored_2": lambda: v1.MirroredStrategy(["CPU:0", "CPU:1"]),
    "one_device": lambda: v1.OneDeviceStrategy("CPU:0"),
    "central_storage_2": lambda: v1.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"]),
}


@pytest.mark.parametrize("make_strategy", V1_FACTORIES.values(), ids=V1_FACTORIES.keys())
def test_v1_reduce_defaults_axis_to_none(make_strategy):
    strategy = make_strategy()
    n = strategy.num_replicas_in_sync
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda ctx: torch.tensor([1.0, 2.0]) * (ctx.replica_id_in_sync_group + 1))
    expected = torch.tensor([1.0, 2.0]) * sum(range(1, n + 1))
    assert torch.equal(strategy.reduce("sum", per_replica), expected)
    assert torch.equal(strategy.reduce(distribute.ReduceOp.SUM, per_replica, axis=None), expected)
    assert float(strategy.reduce("sum", per_replica, axis=0)) == float(expected.sum())
    assert isinstance(strategy, v1.Strategy) and isinstance(strategy, distribute.Strategy)


def test_v2_reduce_keeps_axis_required():
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(TypeError, match="axis"):
        strategy.reduce("sum", torch.tensor(1.0))
    assert inspect.signature(distribute.Strategy.reduce).parameters["axis"].default is inspect.Parameter.empty


def test_every_v1_strategy_class_has_the_v1_reduce():
    classes = [v1.MirroredStrategy, v1.OneDeviceStrategy, v1.experimental.CentralStorageStrategy,
               v1.experimental.MultiWorkerMirroredStrategy]
    for cls in classes:
        assert inspect.signature(cls.reduce).parameters["axis"].default is None, cls
    assert issubclass(v1.experimental.MultiWorkerMirroredStrategy, distribute.MultiWorkerMirroredStrategy)
    assert sorted(v1.__all__) == ["MirroredStrategy", "OneDeviceStrategy", "Strategy", "StrategyExtended",
                                  "experimental"]


def test_v1_reduce_still_validates():
    strategy = V1_FACTORIES["mirrored_2"]()
    with pytest.raises(ValueError):
        strategy.reduce("max", torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="Method requires being in cross-replica context"):
        strategy.run(lambda: strategy.reduce("sum", torch.tensor(1.0)))


def test_v1_page_example():
    """The v1 Strategy page's loop: an initializable iterator, call_for_each_replica with the
    input passed directly, and reduce without axis."""
    strategy = v1.MirroredStrategy(["CPU:0", "CPU:1"])
    with strategy.scope():
        weight = distribute.Variable(2.0)
        dataset = Dataset.from_tensor_slices(torch.arange(8.0)).batch(4)
        iterator = strategy.make_dataset_iterator(dataset)
        iterator.initializer
        totals = []
        for _ in range(2):
            replica_results = strategy.extended.call_for_each_replica(lambda x: (x * weight).sum(),
                                                                      iterator.get_next())
            totals.append(float(strategy.reduce(distribute.ReduceOp.SUM, replica_results)))
    assert totals == [2.0 * (0 + 1 + 2 + 3), 2.0 * (4 + 5 + 6 + 7)]
