"""Prefetch onto CUDA devices on a side stream (skipped without a GPU)."""

import pytest
import torch

import distribute
from distribute.data import Dataset
from distribute.distributed_input import InputOptions
from tests.unit.data._helpers import roundtrip
from tests.unit.distributed_input._helpers import plain_step, steps

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
@pytest.mark.parametrize("buffer_size", [0, 1, 2])
def test_batches_arrive_on_the_device(buffer_size):
    strategy = distribute.OneDeviceStrategy("GPU:0")
    options = InputOptions(experimental_per_replica_buffer_size=buffer_size)
    dataset = Dataset.from_tensor_slices(torch.arange(40.).reshape(20, 2)).batch(8)
    batches = list(strategy.experimental_distribute_dataset(dataset, options))
    assert all(b.is_cuda for b in batches)
    assert torch.cat([b.cpu() for b in batches]).tolist() == torch.arange(40.).reshape(20, 2).tolist()
    out = strategy.run(lambda x: x * 2, args=(batches[0],))
    assert out.is_cuda


@cuda
def test_fetch_to_device_false_keeps_host_batches():
    strategy = distribute.OneDeviceStrategy("GPU:0")
    dist = strategy.experimental_distribute_dataset(Dataset.range(4).batch(2), InputOptions(experimental_fetch_to_device=False))
    assert all(b.device.type == "cpu" for b in dist)


@cuda
def test_prefetched_steps_are_part_of_the_state():
    strategy = distribute.OneDeviceStrategy("GPU:0")
    dist = strategy.experimental_distribute_dataset(Dataset.range(10).batch(2), InputOptions(experimental_per_replica_buffer_size=2))
    it = iter(dist)
    assert plain_step(next(it)) == [0, 1]  # steps 2 and 3 are in flight
    again = iter(dist)
    again.load_state_dict(roundtrip(it.state_dict()))
    assert steps(again) == steps(it) == [[2, 3], [4, 5], [6, 7], [8, 9]]
