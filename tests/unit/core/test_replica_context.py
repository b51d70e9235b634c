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
