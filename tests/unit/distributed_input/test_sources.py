"""Inputs other than distribute.data: DataLoaders and iterables of batches."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from distribute._base.tensor_spec import TensorSpec
from distribute.data import UNKNOWN_CARDINALITY
from tests.unit.data._helpers import roundtrip
from tests.unit.distributed_input._helpers import mirrored, on_worker, plain_step, steps


def loader(n=10, batch_size=4, shuffle=False):
    data = TensorDataset(torch.arange(n), torch.arange(n, dtype=torch.float32) * 10)
    generator = torch.Generator().manual_seed(0) if shuffle else None
    return DataLoader(data, batch_size=batch_size, shuffle=shuffle, generator=generator)


def test_dataloader_is_split_like_an_in_memory_dataset():
    dist = mirrored(2).experimental_distribute_dataset(loader())
    assert steps(dist) == [
        [[[0, 1], [2, 3]], [[0.0, 10.0], [20.0, 30.0]]],
        [[[4, 5], [6, 7]], [[40.0, 50.0], [60.0, 70.0]]],
        [[[8], [9]], [[80.0], [90.0]]]]
    (first, *_), = [list(dist)[:1]]
    assert type(first) is list  # the DataLoader's structure is kept
    assert dist.cardinality == 3
    assert dist.element_spec[0].component_specs[0] == TensorSpec((None,), torch.int64)


def test_iterables_of_batches():
    batches = [np.arange(4), np.arange(4, 7)]
    assert steps(mirrored(2).experimental_distribute_dataset(batches)) == [[[0, 1], [2, 3]], [[4, 5], [6]]]
    dicts = ({"x": torch.ones(3, 2) * i} for i in range(2))  # a one-shot generator
    dist = mirrored(3).experimental_distribute_dataset(dicts)
    assert dist.cardinality == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="one-shot iterator"):
        dist.element_spec
    assert [[tuple(v.shape) for v in step["x"].values] for step in dist] == [[(1, 2), (1, 2), (1, 2)]] * 2
    it = iter(mirrored(2).experimental_distribute_dataset(iter([torch.arange(2)])))
    assert it.get_next_as_optional().has_value() and not it.get_next_as_optional().has_value()


def test_iterables_shard_by_data_between_workers():
    batches = [torch.arange(4), torch.arange(4, 8)]
    assert steps(on_worker(batches, 2, 0)) == [[0, 1], [4, 5]]
    assert steps(on_worker(batches, 2, 1)) == [[2, 3], [6, 7]]


def test_dataloader_position_is_restored():
    data = loader(n=20, batch_size=4, shuffle=True)
    dist = mirrored(2).experimental_distribute_dataset(data)
    epochs = [steps(dist), steps(dist)]
    assert epochs[0] != epochs[1]  # a new order each epoch
    for k in (0, 2, 5):
        it = iter(dist)
        head = [plain_step(next(it)) for _ in range(k)]
        state = roundtrip(it.state_dict())
        rest = steps(it)
        again = iter(dist)
        again.load_state_dict(state)
        assert steps(again) == rest and len(head + rest) == 5


def test_restore_into_a_shorter_iterable_fails():
    it = iter(mirrored(2).experimental_distribute_dataset([torch.arange(4)] * 3))
    next(it), next(it)
    state = it.state_dict()
    shorter = iter(mirrored(2).experimental_distribute_dataset([torch.arange(4)]))
    with pytest.raises(ValueError, match="the iterable ended after 1 batches, but the saved state had consumed 2"):
        shorter.load_state_dict(state)
