import threading

import pytest
import torch

import distribute
from distribute.errors import CollectiveError


def rid():
    return distribute.get_replica_context().replica_id_in_sync_group


def test_merge_call_order_three_replicas():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    log = []

    def fn():
        log.append(f"a{rid()}")
        distribute.get_replica_context().merge_call(lambda strategy: log.append("merge"))
        log.append(f"b{rid()}")

    s.run(fn)
    assert log == ["a0", "a1", "a2", "merge", "b0", "b1", "b2"]


def test_unequal_merge_call_counts():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    def fn():
        if rid() == 0:
            distribute.get_replica_context().merge_call(lambda strategy: None)

    with pytest.raises(RuntimeError, match=r"Some replicas made a different number of "
                       r"replica_context\(\).merge_call\(\) calls."):
        s.run(fn)
    assert s.run(lambda: 1) == 1


def test_exception_in_replica_reraised():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    class Boom(Exception):
        pass

    def fn():
        if rid() == 1:
            raise Boom("replica one failed")

    with pytest.raises(Boom, match="replica one failed"):
        s.run(fn)
    assert [int(v) for v in s.run(lambda: torch.tensor(rid())).values] == [0, 1]


def test_all_reduce_values():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    out = s.run(lambda: distribute.get_replica_context().all_reduce("sum", torch.tensor(1.0)))
    assert [float(v) for v in s.experimental_local_results(out)] == [2.0, 2.0]
    out = s.run(lambda: distribute.get_replica_context().all_reduce("mean", torch.tensor(float(rid()))))
    assert [float(v) for v in s.experimental_local_results(out)] == [0.5, 0.5]


@pytest.mark.parametrize("n,expected", [(2, [2., 4.]), (3, [3., 6., 9.])])
def test_all_reduce_gradient(n, expected):
    s = distribute.MirroredStrategy([f"CPU:{i}" for i in range(n)])

    def fn():
        w = torch.tensor(1.0, requires_grad=True)
        y = distribute.get_replica_context().all_reduce("sum", w * (rid() + 1))
        (g,) = torch.autograd.grad(y, w)
        return g

    assert [float(g) for g in s.run(fn).values] == expected


def test_all_gather_uneven_and_gradient():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    def fn():
        w = torch.tensor(1.0, requires_grad=True)
        x = torch.full((rid() + 1,), float(rid())) * w
        g_all = distribute.get_replica_context().all_gather(x, axis=0)
        (g,) = torch.autograd.grad(g_all.sum(), w)
        return g_all.detach(), g

    gathered, grads = s.run(fn)
    assert [v.tolist() for v in gathered.values] == [[0., 1., 1.]] * 2
    # d/dw of sum over all replicas' gathered outputs: replica 1 contributes 2 elements of value 1*w, twice
    assert [float(g) for g in grads.values] == [0.0, 4.0]


def test_all_reduce_nested():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    out = s.run(lambda: distribute.get_replica_context().all_reduce(
        "sum", {"a": torch.tensor(1.0), "b": [torch.tensor(float(rid()))]}))
    local = s.experimental_local_results(out)
    assert float(local[0]["a"]) == 2.0 and float(local[1]["b"][0]) == 1.0


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(rid() + 1),
    lambda: torch.zeros(2, dtype=torch.float32 if rid() == 0 else torch.float64),
])
def test_mismatched_collectives_raise(make):
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(CollectiveError, match="replica"):
        s.run(lambda: distribute.get_replica_context().all_reduce("sum", make()))
    assert s.run(lambda: 1) == 1


# -- collectives that differ between replicas: a clear error, never a hang ----------------------
def _threads_named(prefix):
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def _all_reduce(x):
    return distribute.get_replica_context().all_reduce("sum", x)


def _all_gather(x):
    return distribute.get_replica_context().all_gather(x, axis=0)


def _merge(x):
    return distribute.get_replica_context().merge_call(lambda strategy, v: v, args=(x,))


ORDERS = {
    "all_reduce_then_all_gather": ((_all_reduce, _all_gather), (_all_gather, _all_reduce), "all_reduce\\(SUM\\)",
                                   "all_gather\\(axis=0\\)"),
    "all_reduce_vs_merge_call": ((_all_reduce, _merge), (_merge, _all_reduce), "all_reduce\\(SUM\\)", "merge_call"),
    "all_gather_vs_merge_call": ((_all_gather,), (_merge,), "all_gather\\(axis=0\\)", "merge_call"),
    "sum_vs_mean": ((_all_reduce,), (lambda x: distribute.get_replica_context().all_reduce("mean", x),),
                    "all_reduce\\(SUM\\)", "all_reduce\\(MEAN\\)"),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("threads", [False, True], ids=["greenlets", "threads"])
@pytest.mark.parametrize("order", ORDERS)
def test_collectives_in_a_different_order_raise(order, threads):
    first, other, first_name, other_name = ORDERS[order]
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    s.extended.experimental_replica_threads = threads
    unwound = []

    def fn():
        try:
            for op in (first if rid() == 0 else other):
                op(torch.ones(2))
        finally:
            unwound.append(int(rid()))

    with pytest.raises(CollectiveError, match=f"replica 0 called {first_name} but replica 1 called {other_name}"):
        s.run(fn)
    assert sorted(unwound) == [0, 1]  # every replica was unwound, none is left parked
    assert _threads_named("distribute-replica") == []
    assert [float(v.sum()) for v in s.run(lambda: _all_reduce(torch.ones(2))).values] == [4.0, 4.0]


@pytest.mark.timeout(30)
def test_divergence_after_agreeing_steps_names_the_replica():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    log = []

    def fn():
        log.append(float(_all_reduce(torch.ones(1))))  # all agree here
        if rid() == 2:
            _merge(torch.ones(1))
        else:
            _all_gather(torch.ones(1))
        log.append("unreachable")

    with pytest.raises(CollectiveError, match="replica 0 called all_gather\\(axis=0\\) but replica 2 called "
                                              "merge_call") as info:
        s.run(fn)
    assert "same collective calls in the same order" in str(info.value)
    assert log == [3.0, 3.0, 3.0]


@pytest.mark.timeout(30)
def test_extra_collective_on_one_replica_raises():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    def fn():
        _all_reduce(torch.ones(1))
        if rid() == 1:
            _all_gather(torch.ones(1))

    with pytest.raises(RuntimeError, match="Some replicas made a different number of replica_context\\(\\)."
                                           "merge_call\\(\\) calls.") as info:
        s.run(fn)
    assert "Replicas [0] returned while replica 1 in all_gather(axis=0) was waiting" in str(info.value)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("make,match", [
    (lambda: _all_gather(torch.zeros(2, dtype=torch.float32 if rid() == 0 else torch.int64)), "int64"),
    (lambda: _all_reduce({"a": torch.ones(1)} if rid() == 0 else {"b": torch.ones(1)}), "'a'.* but .*'b'"),
    (lambda: _all_reduce([torch.ones(1)] * (rid() + 1)), "\\[tensor\\].* but .*\\[tensor, tensor\\]"),
    (lambda: _all_reduce(torch.ones(3) if rid() == 0 else torch.ones(1, 3)), "\\(3,\\).* but .*\\(1, 3\\)"),
])
def test_mismatched_structures_shapes_and_dtypes_name_the_replicas(make, match):
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(CollectiveError, match="Replicas disagree on") as info:
        s.run(make)
    assert info.match(match)
    assert "replica 0 passed" in str(info.value) and "replica 1 passed" in str(info.value)


def test_all_gather_shapes_may_differ_only_along_the_axis():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    out = s.run(lambda: distribute.get_replica_context().all_gather(torch.zeros(2, rid() + 1), axis=1))
    assert [tuple(v.shape) for v in out.values] == [(2, 3), (2, 3)]
    with pytest.raises(CollectiveError,
                       match="Shape mismatch in all_gather\\(axis=0\\): replica 0: \\(2, 1\\), replica 1: \\(2, 2\\)"):
        s.run(lambda: distribute.get_replica_context().all_gather(torch.zeros(2, rid() + 1), axis=0))


@pytest.mark.timeout(30)
def test_mismatch_in_a_differentiable_collective_on_threads_leaves_no_thread():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    def fn():
        w = torch.ones(2, requires_grad=True)
        y = _all_reduce(w * 2) if rid() == 0 else _all_gather(w * 2)
        return torch.autograd.grad(y.sum(), w)

    with pytest.raises(CollectiveError, match="replica 0 called all_reduce\\(SUM\\) but replica 1 called all_gather"):
        s.run(fn)
    assert _threads_named("distribute-replica") == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("threads", [False, True], ids=["greenlets", "threads"])
def test_exception_in_merge_fn_unwinds_every_replica(threads):
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    s.extended.experimental_replica_threads = threads
    unwound = []

    def merge_fn(strategy):
        raise KeyError("merge failed")

    def fn():
        try:
            distribute.get_replica_context().merge_call(merge_fn)
        finally:
            unwound.append(int(rid()))

    with pytest.raises(KeyError, match="merge failed"):
        s.run(fn)
    assert sorted(unwound) == [0, 1]
    assert _threads_named("distribute-replica") == []
