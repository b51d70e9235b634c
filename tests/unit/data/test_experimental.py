"""distribute.data.experimental: tf.data.experimental's spellings (recorded from TF 2.21)."""

from __future__ import annotations

import torch

from distribute.data import Dataset, experimental

from tests.unit.data._helpers import values


def test_choose_from_datasets_default_does_not_stop():
    choice = Dataset.from_tensor_slices(torch.tensor([0, 1, 1, 0, 0, 0, 0, 1]))
    ds = experimental.choose_from_datasets([Dataset.range(3), Dataset.range(10, 15)], choice)
    assert values(ds) == [0, 10, 11, 1, 2, 12]  # tf.data.experimental's default: False


def test_sources_and_functions():
    assert values(experimental.Counter(2, 3).take(3)) == [2, 5, 8]
    assert values(experimental.RandomDataset(seed=4).take(3)) == values(Dataset.random(seed=4).take(3))
    assert experimental.get_single_element(Dataset.range(1)).item() == 0
    assert experimental.cardinality(Dataset.range(4).repeat()) == experimental.INFINITE_CARDINALITY
    assert sorted(values(experimental.sample_from_datasets([Dataset.range(2), Dataset.range(5, 6)], seed=0))) == [0, 1, 5]


def test_transformations_for_apply():
    ds = Dataset.range(10)
    assert values(ds.apply(experimental.take_while(lambda x: x < 3))) == [0, 1, 2]
    assert values(ds.apply(experimental.scan(0, lambda s, x: (s + x, s)))) == values(ds.scan(0, lambda s, x: (s + x, s)))
    assert values(Dataset.from_tensor_slices([1, 1, 2]).apply(experimental.unique())) == [1, 2]
    grouped = ds.apply(experimental.group_by_window(lambda x: x % 2, lambda k, w: w.batch(5), 5))
    assert values(grouped) == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
    buckets = ds.map(lambda x: torch.ones(int(x) + 1)).apply(
        experimental.bucket_by_sequence_length(lambda x: x.shape[0], [5], [5, 5]))
    assert [tuple(b.shape) for b in buckets] == [(5, 9), (4, 4), (1, 10)]
    assert values(Dataset.from_tensors([1, 2]).apply(experimental.unbatch())) == [1, 2]
    assert values(Dataset.range(2).apply(experimental.enumerate_dataset(5))) == [(5, 0), (6, 1)]
    failing = Dataset.from_tensor_slices([1, 0]).map(lambda x: 1 // int(x))
    assert values(failing.apply(experimental.ignore_errors())) == [1]
    pairs = ds.apply(experimental.rejection_resample(lambda x: x % 2, [0.5, 0.5], seed=1))
    assert all(int(k) == int(v) % 2 for k, v in pairs)


def test_save_load_snapshot(tmp_path):
    experimental.save(Dataset.range(4), tmp_path / "s")
    assert values(experimental.load(tmp_path / "s")) == [0, 1, 2, 3]
    snap = Dataset.range(3).apply(experimental.snapshot(str(tmp_path / "snap")))
    assert values(snap) == values(snap) == [0, 1, 2]
