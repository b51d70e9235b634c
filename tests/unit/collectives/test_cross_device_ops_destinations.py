"""CrossDeviceOps accept TensorFlow's destination kinds, as ``extended.reduce_to`` does (issue 23.6)."""

import pytest
import torch

import distribute

CPU = torch.device("cpu")
OPS = [distribute.ReductionToOneDevice, distribute.HierarchicalCopyAllReduce, distribute.NcclAllReduce]


def per_replica():
    return distribute.PerReplica([torch.tensor(1.0), torch.tensor(2.0)])


def mirrored_variable():
    with distribute.MirroredStrategy(["CPU:0", "CPU:1"]).scope():
        return distribute.Variable(0.0)


DESTINATIONS = {
    "per_replica": (per_replica, 2),
    "mirrored": (lambda: distribute.Mirrored([torch.tensor(0.0), torch.tensor(0.0)]), 2),
    "mirrored_variable": (mirrored_variable, 2),
    "tensor": (lambda: torch.tensor(0.0), 1),
    "device_string": (lambda: "/cpu:0", 1),
    "tf_device_string": (lambda: "/job:localhost/replica:0/task:0/device:CPU:0", 1),
    "torch_device": (lambda: CPU, 1),
    "list_of_devices": (lambda: [CPU, CPU], 2),
    "list_of_names": (lambda: ["CPU:0"], 1),
}


def copies(result):
    return list(result.values) if isinstance(result, distribute.Mirrored) else [result]


@pytest.mark.parametrize("make_destinations,count", DESTINATIONS.values(), ids=DESTINATIONS.keys())
@pytest.mark.parametrize("cls", OPS)
def test_reduce_batch_reduce_broadcast_accept(cls, make_destinations, count):
    ops, dest = cls(), make_destinations()
    assert [float(t) for t in copies(ops.reduce("sum", per_replica(), dest))] == [3.0] * count
    assert [float(t) for t in copies(ops.reduce("mean", per_replica(), dest))] == [1.5] * count
    (batched,) = ops.batch_reduce("sum", [(per_replica(), dest)])
    assert [float(t) for t in copies(batched)] == [3.0] * count
    assert [float(t) for t in copies(ops.broadcast(torch.tensor(5.0), dest))] == [5.0] * count


@pytest.mark.parametrize("bad", [None, 3, [], [3], {"device": "cpu"}, object()],
                         ids=["none", "int", "empty", "list_of_int", "dict", "object"])
@pytest.mark.parametrize("cls", OPS)
def test_other_destinations_raise_a_clear_error(cls, bad):
    ops = cls()
    for call in (lambda: ops.reduce("sum", per_replica(), bad), lambda: ops.broadcast(torch.tensor(1.0), bad),
                 lambda: ops.batch_reduce("sum", [(per_replica(), bad)])):
        with pytest.raises(ValueError, match="destinations must be a device name .* received"):
            call()


def test_batch_reduce_pairs_are_checked():
    with pytest.raises(ValueError, match="list or tuple of \\(value, destinations\\) pairs"):
        distribute.ReductionToOneDevice().batch_reduce("sum", [per_replica()])


def test_bad_device_name_says_so():
    with pytest.raises(ValueError):
        distribute.ReductionToOneDevice().reduce("sum", per_replica(), "/tpu:0")


def test_strategy_reduce_to_agrees_with_cross_device_ops():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    value = s.experimental_distribute_values_from_function(lambda ctx: torch.tensor(float(ctx.replica_id_in_sync_group + 1)))
    for dest in (value, torch.tensor(0.0), "/cpu:0"):
        via_strategy = copies(s.extended.reduce_to("sum", value, dest))
        via_ops = copies(distribute.ReductionToOneDevice().reduce("sum", value, dest))
        assert [float(t) for t in via_strategy] == [float(t) for t in via_ops]
