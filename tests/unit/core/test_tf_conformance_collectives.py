"""ReplicaContext collectives against the assertions of TensorFlow's own tf.distribute tests.

Issues 21 (points 1, 2, 5) and 23 (points 1, 7): shape mismatches in ``all_gather``, gradients
through collectives with one replica, all-reducing a SyncOnRead variable, and ``ReplicaContext``
as a context manager. Translated from the behaviour of strategy_test_lib.py,
strategy_gather_test.py, values_test.py and distribute_lib_test.py.
"""

import pytest
import torch

import distribute
from distribute.errors import CollectiveError, GatherShapeMismatchError, InvalidArgumentError
from tests.strategies import local_replica_ids, named_strategies

ALL = named_strategies() + [
    pytest.param(lambda: distribute.MirroredStrategy(["CPU:0"]), id="mirrored_1"),
    pytest.param(lambda: distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"]), id="mirrored_3"),
    pytest.param(lambda: distribute.experimental.CentralStorageStrategy(["CPU:0"]), id="central_storage_1"),
]


def ctx():
    return distribute.get_replica_context()


def rid():
    return int(ctx().replica_id_in_sync_group)


def per_replica(strategy, make):
    """``make(replica_id)`` on each replica, as TF's tests feed one input per replica."""
    return strategy.experimental_distribute_values_from_function(
        lambda value_ctx: make(value_ctx.replica_id_in_sync_group))


def local_floats(strategy, value):
    return [v.tolist() for v in strategy.experimental_local_results(value)]


def per_local_replica(strategy, value):
    """``value`` once per replica of this process (each worker sees only its own)."""
    return [value] * len(local_replica_ids(strategy))


# -- 21.2 / 23.1: gradients through collectives, any number of replicas -------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_strategy", ALL)
@pytest.mark.parametrize("op,base", [("sum", 4.0), ("mean", 5.0)])
def test_all_reduce_gradient(make_strategy, op, base):
    s = make_strategy()
    n = s.num_replicas_in_sync

    def step(c):
        x = torch.tensor(42.0, requires_grad=True)
        y = ctx().all_reduce(op, x) * c
        return torch.autograd.grad(y, x)[0]

    factors = [base + i for i in range(n)]
    grads = s.run(step, args=(per_replica(s, lambda i: torch.tensor(factors[i])),))
    expected = sum(factors) if op == "sum" else sum(factors) / n
    assert local_floats(s, grads) == per_local_replica(s, expected)  # one replica: TF's [4.] and [5.]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_strategy", ALL)
def test_all_gather_gradient(make_strategy):
    s = make_strategy()
    n = s.num_replicas_in_sync

    def step():
        x = torch.tensor([[1.0], [2.0]], requires_grad=True)
        y = ctx().all_gather(x, axis=0)
        y.sum().backward()
        return x.grad

    assert local_floats(s, s.run(step)) == per_local_replica(s, [[float(n)], [float(n)]])  # one replica: [[1], [1]]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_strategy", ALL)
def test_backward_through_nested_collectives_reaches_the_variable(make_strategy):
    s = make_strategy()
    n = s.num_replicas_in_sync
    with s.scope():
        w = distribute.Variable([1.0, 2.0])

    def step():
        y = ctx().all_reduce("sum", {"a": w * 2.0, "b": [w]})
        g = ctx().all_gather(y["a"], axis=0)
        return torch.autograd.grad(g.sum() + y["b"][0].sum(), w)[0]

    assert local_floats(s, s.run(step)) == per_local_replica(s, [2.0 * n * n + n] * 2)


# -- 21.1: all_gather shape mismatches are argument errors ----------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("replicas", [2, 3])
def test_all_gather_shapes_differing_off_the_axis_raise_shape_mismatch(replicas):
    s = distribute.MirroredStrategy([f"CPU:{i}" for i in range(replicas)])
    with pytest.raises(GatherShapeMismatchError, match="Shape mismatch") as info:
        s.run(lambda: ctx().all_gather(torch.zeros(2, rid() + 1), axis=0))
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, ValueError)
    assert isinstance(info.value, CollectiveError)
    for i in range(replicas):
        assert f"replica {i}: (2, {i + 1})" in str(info.value)
    assert s.run(lambda: 1) == 1  # nothing is left blocked


@pytest.mark.timeout(30)
def test_all_gather_of_different_ranks_raises_shape_mismatch():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(GatherShapeMismatchError, match=r"replica 0: \(2,\), replica 1: \(2, 2\)"):
        s.run(lambda: ctx().all_gather(torch.zeros([2] * (rid() + 1)), axis=0))


@pytest.mark.timeout(30)
def test_all_gather_mismatch_inside_a_structure_lists_each_replicas_shapes():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(GatherShapeMismatchError, match=r"replica 0: \[\(1,\), \(1, 2\)\], "
                                                       r"replica 1: \[\(1,\), \(1, 3\)\]"):
        s.run(lambda: ctx().all_gather({"a": torch.zeros(1), "b": torch.zeros(1, 2 + rid())}, axis=0))


@pytest.mark.timeout(30)
def test_all_gather_uneven_along_the_axis_still_works_and_other_mismatches_stay_collective_errors():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    out = s.run(lambda: ctx().all_gather(torch.full((rid() + 1,), float(rid())), axis=0))
    assert local_floats(s, out) == [[0.0, 1.0, 1.0]] * 2
    with pytest.raises(CollectiveError, match="Replicas disagree on") as info:
        s.run(lambda: ctx().all_gather(torch.zeros(2, dtype=torch.float32 if rid() == 0 else torch.int64), 0))
    assert not isinstance(info.value, GatherShapeMismatchError)


def test_strategy_gather_shape_mismatch_is_the_same_error():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    value = distribute.PerReplica([torch.zeros(2, 1), torch.zeros(2, 2)])
    with pytest.raises(GatherShapeMismatchError, match=r"Shape mismatch .*replica 0: \(2, 1\), replica 1: \(2, 2\)"):
        s.gather(value, axis=0)
    assert s.gather(value, axis=1).shape == (2, 3)


# -- 21.5: all_reduce of a SyncOnRead variable reduces each replica's own value --------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("aggregation", ["sum", "mean", "only_first_replica", "none"])
@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_all_reduce_of_sync_on_read_variable_uses_the_local_values(aggregation, replicas):
    s = distribute.MirroredStrategy([f"CPU:{i}" for i in range(replicas)])
    with s.scope():
        v = distribute.Variable(0.0, synchronization="on_read", aggregation=aggregation)

    def step():
        v.assign(float(rid() + 1))
        return ctx().all_reduce("sum", v)

    expected = float(sum(range(1, replicas + 1)))  # TF: 1.0 and 2.0 give 3.0
    assert local_floats(s, s.run(step)) == [expected] * replicas
    assert [float(c) for c in v.values] == [float(i + 1) for i in range(replicas)]  # untouched


@pytest.mark.timeout(30)
def test_all_reduce_of_mirrored_variable_and_its_gradient():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable(3.0)

    def step():
        y = ctx().all_reduce("mean", v)
        return y, torch.autograd.grad(y * float(rid() + 1), v)[0]

    total, grads = s.run(step)
    assert local_floats(s, total) == [3.0, 3.0]
    assert local_floats(s, grads) == [1.5, 1.5]  # mean of the upstream gradients 1 and 2


# -- 23.7: ReplicaContext as a context manager ---------------------------------------------------
def test_entering_a_replica_context_makes_it_current_and_exit_restores():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        replica_ctx = distribute.ReplicaContext(s, replica_id_in_sync_group=1)
        with replica_ctx as entered:
            assert entered is replica_ctx
            assert distribute.get_replica_context() is replica_ctx
            assert not distribute.in_cross_replica_context()
            assert distribute.get_strategy() is s
            with replica_ctx:  # re-entering nests
                assert distribute.get_replica_context() is replica_ctx
            assert distribute.get_replica_context() is replica_ctx
        assert distribute.get_replica_context() is None
        assert distribute.in_cross_replica_context()
    assert distribute.get_replica_context() is not None  # the default replica context again


@pytest.mark.parametrize("make_strategy", ALL)
def test_replica_context_inside_run_is_a_context_manager(make_strategy):
    s = make_strategy()

    def step():
        current = ctx()
        with current:
            inner = ctx() is current and current.all_reduce("sum", torch.tensor(1.0))
        return inner, ctx() is current

    total, restored = s.run(step)
    assert local_floats(s, total) == per_local_replica(s, float(s.num_replicas_in_sync))
    assert restored is True


def test_replica_context_exit_out_of_order_raises():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    outer = distribute.ReplicaContext(s, replica_id_in_sync_group=0)
    inner = distribute.ReplicaContext(s, replica_id_in_sync_group=1)
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="ReplicaContext nesting error"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert not distribute.has_strategy()
    with pytest.raises(RuntimeError, match="ReplicaContext nesting error"):
        outer.__exit__(None, None, None)
