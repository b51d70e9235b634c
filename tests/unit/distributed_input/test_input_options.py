"""InputOptions and InputReplicationMode (spec 9.2)."""

import pytest

import distribute
from distribute.distributed_input.device_prefetch import DevicePlacer

import torch


def test_defaults_and_repr():
    options = distribute.InputOptions()
    assert options.experimental_fetch_to_device is True
    assert options.experimental_replication_mode is distribute.InputReplicationMode.PER_WORKER
    assert repr(options) == (
        "InputOptions(experimental_fetch_to_device=True, experimental_replication_mode="
        "<InputReplicationMode.PER_WORKER: 'PER_WORKER'>, experimental_place_dataset_on_device=False, "
        "experimental_per_replica_buffer_size=1)")
    assert isinstance(options, tuple)
    assert distribute.InputOptions(experimental_replication_mode="PER_REPLICA").experimental_replication_mode \
        is distribute.InputReplicationMode.PER_REPLICA
    assert distribute.InputReplicationMode("PER_WORKER").value == "PER_WORKER"


@pytest.mark.parametrize("kwargs,error,match", [
    ({"experimental_fetch_to_device": "yes"}, TypeError, "experimental_fetch_to_device"),
    ({"experimental_replication_mode": "PER_HOST"}, ValueError, "PER_WORKER or PER_REPLICA"),
    ({"experimental_place_dataset_on_device": 1}, TypeError, "experimental_place_dataset_on_device"),
    ({"experimental_per_replica_buffer_size": -1}, ValueError, "0 disables prefetching"),
])
def test_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        distribute.InputOptions(**kwargs)


def test_cpu_placement_is_the_identity():
    placer = DevicePlacer([torch.device("cpu")] * 2, fetch_to_device=True, buffer_size=1)
    assert not placer.needed and placer.buffer_size == 0
    step = [torch.arange(2), torch.arange(2, 4)]
    assert all(a is b for a, b in zip(placer.finish(placer.launch(step)), step))
