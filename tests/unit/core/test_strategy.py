import copy

import pytest
import torch

import distribute
from distribute.experimental import CentralStorageStrategy
from tests.strategies import named_strategies

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


@pytest.fixture
def s():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def per_replica(s, fn):
    return s.experimental_distribute_values_from_function(lambda ctx: fn(ctx.replica_id_in_sync_group))


def test_run_args_must_be_list_or_tuple(s):
    with pytest.raises(ValueError, match="positional args must be a list or tuple, got"):
        s.run(lambda x: x, args=torch.tensor(1.0))
    assert s.run(lambda x: x, args=[4]) == 4


def test_replica_ids(s):
    out = s.run(lambda: distribute.get_replica_context().replica_id_in_sync_group)
    assert isinstance(out, distribute.PerReplica)
    assert [int(v) for v in out.values] == [0, 1]


@pytest.mark.parametrize("op,axis,expected", [
    ("sum", None, [3., 6., 9.]), (distribute.ReduceOp.SUM, 0, 18.), ("MEAN", None, [1.5, 3., 4.5]),
    ("mean", 0, 3.0), ("mean", -1, 3.0)])
def test_reduce(s, op, axis, expected):
    pr = per_replica(s, lambda i: torch.tensor([1., 2., 3.]) * (i + 1))
    assert torch.equal(s.reduce(op, pr, axis=axis), torch.tensor(expected))


def test_reduce_errors(s):
    pr = per_replica(s, lambda i: torch.tensor([1., 2.]))
    with pytest.raises(ValueError, match="'MAX' is not a valid ReduceOp"):
        s.reduce("MAX", pr, axis=None)
    with pytest.raises(TypeError, match="axis"):
        s.reduce("sum", pr)


def test_reduce_plain_tensor(s):
    with pytest.raises(ValueError, match="non-DistributedValues value .* ReduceOp.SUM"):
        s.reduce("sum", torch.tensor(1.0), axis=None)
    assert float(s.reduce("mean", torch.tensor(1.0), axis=None)) == 1.0


def test_mean_of_ints_is_float64(s):
    out = s.reduce("mean", per_replica(s, lambda i: torch.tensor(i, dtype=torch.int32)), axis=None)
    assert out.dtype == torch.float64 and float(out) == 0.5
    assert s.reduce("sum", per_replica(s, lambda i: torch.tensor(i, dtype=torch.int32)), axis=None).dtype == torch.int32


def test_reduce_uneven_and_empty(s):
    uneven = per_replica(s, lambda i: torch.tensor([[0., 1., 2., 3.], [4., 5.]][i]))
    assert float(s.reduce("mean", uneven, axis=0)) == 2.5
    assert float(s.reduce("sum", uneven, axis=0)) == 15.0
    with pytest.raises(ValueError):
        s.reduce("sum", uneven, axis=None)
    empty = per_replica(s, lambda i: torch.tensor([[8.], []][i]))
    assert float(s.reduce("mean", empty, axis=0)) == 8.0
    assert float(s.reduce("sum", empty, axis=0)) == 8.0


def test_reduce_nested(s):
    pr = per_replica(s, lambda i: torch.tensor(float(i + 1)))
    out = s.reduce("sum", {"a": pr, "b": pr}, axis=None)
    assert float(out["a"]) == 3.0 and float(out["b"]) == 3.0


@pytest.mark.parametrize("axis,shape", [(0, (2, 2, 3)), (1, (1, 4, 3)), (2, (1, 2, 6)), (-1, (1, 2, 6))])
def test_gather_shapes(s, axis, shape):
    pr = per_replica(s, lambda i: torch.full((1, 2, 3), float(i)))
    assert tuple(s.gather(pr, axis=axis).shape) == shape


def test_gather_uneven_empty_and_rank0(s):
    assert s.gather(per_replica(s, lambda i: torch.tensor([[0., 1., 2., 3.], [4., 5.]][i])), axis=0).tolist() == \
        [0., 1., 2., 3., 4., 5.]
    assert s.gather(per_replica(s, lambda i: torch.tensor([[8.], []][i])), axis=0).tolist() == [8.]
    with pytest.raises(ValueError):
        s.gather(per_replica(s, lambda i: torch.tensor(float(i))), axis=0)


def test_local_results_and_values_from_function(s):
    pr = per_replica(s, lambda i: 2)
    assert isinstance(pr, distribute.PerReplica)
    assert s.experimental_local_results(pr) == (2, 2)
    assert s.experimental_local_results(3) == (3,)
    t = per_replica(s, lambda i: torch.tensor(i))
    res = s.experimental_local_results({"a": t, "b": 3})
    assert len(res) == 2 and res[1]["b"] == 3 and int(res[1]["a"]) == 1


@pytest.mark.parametrize("make_strategy", named_strategies("default", "one_device"))
def test_single_replica_values_from_function_unwrapped(make_strategy):
    strategy = make_strategy()
    assert strategy.experimental_distribute_values_from_function(lambda ctx: 7) == 7


def test_extended_reduce_broadcast_update(s):
    pr = per_replica(s, lambda i: torch.tensor(float(i + 1)))
    with s.scope():
        v = distribute.Variable(0.0)
    out = s.extended.reduce_to("sum", pr, v)
    assert [float(x) for x in s.experimental_local_results(out)] == [3.0, 3.0]
    outs = s.extended.batch_reduce_to("mean", [(pr, v), (pr, v)])
    assert [float(x) for x in s.experimental_local_results(outs[1])] == [1.5, 1.5]
    b = s.extended.broadcast_to(torch.tensor(4.0), v)
    assert [float(x) for x in s.experimental_local_results(b)] == [4.0, 4.0]
    s.extended.update(v, lambda comp, val: comp.assign_add(val), args=(torch.tensor(2.0),))
    assert [float(c) for c in v.values] == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="cross-replica context"):
        s.run(lambda: s.extended.reduce_to("sum", pr, v))


def test_value_container_and_variable_created_in_scope(s):
    with s.scope():
        v = distribute.Variable(1.0)
    plain = distribute.Variable(1.0)
    assert s.extended.value_container(v.values[1]) is v
    assert s.extended.variable_created_in_scope(v)
    assert not s.extended.variable_created_in_scope(plain)
    assert distribute.get_strategy().extended.variable_created_in_scope(plain)


def test_colocate_vars_with_outside_scope(s):
    with s.scope():
        v = distribute.Variable(1.0)
    with pytest.raises(RuntimeError, match='Need to be inside "with strategy.scope\\(\\)"'):
        s.extended.colocate_vars_with(v)


def test_devices_per_strategy(s):
    assert s.extended.worker_devices == (CPU % 0, CPU % 1)
    assert s.extended.parameter_devices == (CPU % 0, CPU % 1)
    assert distribute.OneDeviceStrategy("CPU:1").extended.worker_devices == (CPU % 1,)
    cs = CentralStorageStrategy(["CPU:0", "CPU:1"])
    assert list(cs.extended.worker_devices) == [CPU % 0, CPU % 1]
    assert cs.num_replicas_in_sync == 2
    with pytest.raises(RuntimeError, match="worker_devices\\(\\) method unsupported by default"):
        distribute.get_strategy().extended.worker_devices


def test_copy_raises_deepcopy_works(s):
    with pytest.raises(RuntimeError):
        copy.copy(s)
    s2 = copy.deepcopy(s)
    assert s2 is not s and s2.num_replicas_in_sync == 2


def test_strategies_of_different_sizes_coexist():
    two = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    three = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    rid = lambda: distribute.get_replica_context().replica_id_in_sync_group  # noqa: E731
    assert len(three.run(rid).values) == 3
    assert len(two.run(rid).values) == 2
    assert float(three.reduce("sum", three.run(lambda: torch.tensor(1.0)), axis=None)) == 3.0
