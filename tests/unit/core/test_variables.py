import pytest
import torch

import distribute


def rid():
    return distribute.get_replica_context().replica_id_in_sync_group


@pytest.fixture
def s():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


@pytest.mark.parametrize("agg,assign,assign_add", [
    ("NONE", [10., 11.], [11., 12.]), ("SUM", [21., 21.], [22., 22.]),
    ("MEAN", [10.5, 10.5], [11.5, 11.5]), ("ONLY_FIRST_REPLICA", [10., 10.], [11., 11.])])
def test_replica_context_assign(s, agg, assign, assign_add):
    with s.scope():
        v = distribute.Variable(1.0, aggregation=agg)
        w = distribute.Variable(1.0, aggregation=agg)
    s.run(lambda: v.assign(torch.tensor(10.0 + rid())))
    s.run(lambda: w.assign_add(torch.tensor(10.0 + rid())))
    assert [float(c) for c in v.values] == assign
    assert [float(c) for c in w.values] == assign_add


def test_sum_assign_python_float_raises(s):
    with s.scope():
        v = distribute.Variable(1.0, aggregation="SUM")
    with pytest.raises(ValueError, match="non-DistributedValues value 5.0"):
        s.run(lambda: v.assign(5.0))


@pytest.mark.parametrize("agg", ["NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"])
def test_cross_replica_assign(s, agg):
    with s.scope():
        v = distribute.Variable(1.0, aggregation=agg)
    out = v.assign(3.0)
    assert isinstance(out, distribute.Mirrored)
    assert [float(c) for c in v.values] == [3.0, 3.0]
    assert v.assign_add(1.0, read_value=False) is None
    assert [float(c) for c in v.values] == [4.0, 4.0]


@pytest.mark.parametrize("agg,expected", [("SUM", 3.0), ("MEAN", 1.5), ("ONLY_FIRST_REPLICA", 1.0)])
def test_sync_on_read_reads(s, agg, expected):
    with s.scope():
        v = distribute.Variable(0.0, synchronization="ON_READ", aggregation=agg)
    s.run(lambda: v.assign_add(torch.tensor(float(rid() + 1))))
    assert [float(c) for c in v.values] == [1.0, 2.0]
    assert float(v.read_value()) == expected
    assert float(v.numpy()) == expected
    with s.scope():
        assert float(v.read_value()) == expected


def test_sync_on_read_none_read_raises(s):
    with s.scope():
        v = distribute.Variable(0.0, synchronization="ON_READ", aggregation="NONE")
    with pytest.raises(ValueError, match="Could not convert"):
        v.read_value()


def test_sync_on_read_cross_replica_writes(s):
    with s.scope():
        vs = distribute.Variable(0.0, synchronization="ON_READ", aggregation="SUM")
        vm = distribute.Variable(0.0, synchronization="ON_READ", aggregation="MEAN")
    vs.assign(10.0)
    assert [float(c) for c in vs.values] == [5.0, 5.0]
    with pytest.raises(ValueError, match="assign_add"):
        vs.assign_add(1.0)
    vm.assign(10.0)
    vm.assign_add(1.0)
    assert [float(c) for c in vm.values] == [11.0, 11.0]


def test_sync_on_read_repr(s):
    with s.scope():
        v = distribute.Variable(0.0, synchronization="ON_READ", aggregation="SUM")
    assert repr(v).startswith("SyncOnReadVariable:{\n  0: <distribute.Variable 'Variable:0'")


def test_creation_errors_and_defaults(s):
    with s.scope():
        with pytest.raises(ValueError):
            distribute.Variable(1, aggregation="MEAN")
        with pytest.raises(ValueError):
            distribute.Variable(1.0, synchronization="NONE")
        v = distribute.Variable(1.0, synchronization="ON_READ", aggregation="SUM")
    assert isinstance(v, distribute.SyncOnReadVariable) and v.trainable is False


@pytest.mark.parametrize("make", [distribute.get_strategy, lambda: distribute.OneDeviceStrategy("CPU:0")])
def test_single_device_variables_are_plain(make):
    with make().scope():
        v = distribute.Variable(1.0)
    assert type(v) is distribute.Variable


def test_central_storage_aggregating_sum():
    cs = distribute.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"])
    with cs.scope():
        v = distribute.Variable(0.0, aggregation="SUM")
    assert isinstance(v, distribute.AggregatingVariable)
    cs.run(lambda: v.assign_add(torch.tensor(float(rid() + 1))))
    assert float(v.read_value()) == 3.0


def test_module_in_scope_gets_mirrored_params(s):
    with s.scope():
        m = torch.nn.Linear(3, 2)
    for p in m.parameters():
        assert isinstance(p, distribute.MirroredVariable)
        assert torch.equal(p.values[0].detach(), p.values[1].detach())
    outside = torch.nn.Linear(3, 2)
    assert all(type(p) is torch.nn.Parameter for p in outside.parameters())
