"""Dataset.save / load / snapshot: round trips, integrity checks, atomic writes, resumption."""

from __future__ import annotations

import json
import os
import threading

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import DataLossError, InvalidArgumentError, NotFoundError

from tests.unit.data._helpers import assert_restores, values


def _mixed() -> Dataset:
    return Dataset.from_tensor_slices((
        {"a": torch.arange(6.0).reshape(3, 2)}, [b"x", b"yy", b""],
        torch.tensor([True, False, True]), torch.tensor([1, 2, 3], dtype=torch.bfloat16)))


def test_round_trip_keeps_values_dtypes_and_order(tmp_path):
    _mixed().save(tmp_path / "s")
    loaded = Dataset.load(tmp_path / "s")
    assert loaded.element_spec == _mixed().element_spec
    assert loaded.cardinality() == 3
    assert values(loaded) == values(_mixed())
    assert [e[3].dtype for e in loaded] == [torch.bfloat16] * 3
    Dataset.range(0).save(tmp_path / "empty")
    assert values(Dataset.load(tmp_path / "empty")) == [] and Dataset.load(tmp_path / "empty").cardinality() == 0


def test_files_load_without_running_code(tmp_path):
    Dataset.range(3).map(lambda x: (x, None)).save(tmp_path / "s")
    names = sorted(os.listdir(tmp_path / "s"))
    assert names == ["manifest.json", "shard-00000.tfrecord"]  # no temporary file left
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["shards"] == [{"file": "shard-00000.tfrecord", "elements": 3}]
    assert values(Dataset.load(tmp_path / "s")) == [(0, None), (1, None), (2, None)]


def test_shards_compression_and_reader_func(tmp_path):
    # tf 2.21: range(10).save(path, shard_func=lambda x: x % 3) writes 3 shards; loading with
    # reader_func=lambda ds: ds.flat_map(lambda x: x) gives [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    Dataset.range(10).save(tmp_path / "s", shard_func=lambda x: x % 3, compression="GZIP")
    assert values(Dataset.load(tmp_path / "s")) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    flat = Dataset.load(tmp_path / "s", reader_func=lambda ds: ds.flat_map(lambda x: x))
    assert values(flat) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    mixed = Dataset.load(tmp_path / "s", reader_func=lambda ds: ds.interleave(lambda x: x, cycle_length=3))
    assert values(mixed) == list(range(10))
    Dataset.range(4).save(tmp_path / "gap", shard_func=lambda x: 2 * x)
    assert values(Dataset.load(tmp_path / "gap")) == [0, 1, 2, 3]


def test_load_resumes_mid_stream(tmp_path):
    Dataset.range(50).map(lambda x: (x, x * 0.5)).save(tmp_path / "s", shard_func=lambda x, y: x % 2)
    assert_restores(lambda: Dataset.load(tmp_path / "s").shuffle(10, seed=1).batch(3))


def test_corrupt_and_truncated_files_are_data_loss(tmp_path):
    Dataset.range(20).map(lambda x: torch.full((8,), x)).save(tmp_path / "s")
    shard = tmp_path / "s" / "shard-00000.tfrecord"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(DataLossError):
        list(Dataset.load(tmp_path / "s"))
    Dataset.range(20).save(tmp_path / "t")
    manifest = tmp_path / "t" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"elements": 20', '"elements": 21'))
    with pytest.raises(DataLossError, match="holds 20 elements; its manifest says 21"):
        list(Dataset.load(tmp_path / "t"))
    manifest.write_text("{not json")
    with pytest.raises(DataLossError, match="corrupt"):
        Dataset.load(tmp_path / "t")


def test_interrupted_save_publishes_nothing(tmp_path):
    def failing(x):
        if x == 5:
            raise ValueError("boom")
        return x

    with pytest.raises(ValueError, match="boom"):
        Dataset.range(10).map(failing).save(tmp_path / "s")
    assert os.listdir(tmp_path / "s") == []
    with pytest.raises(NotFoundError, match="manifest.json is missing"):
        Dataset.load(tmp_path / "s")


def test_argument_errors(tmp_path):
    with pytest.raises(NotFoundError):
        Dataset.load(tmp_path / "missing")
    with pytest.raises(InvalidArgumentError, match="compression"):
        Dataset.range(3).save(tmp_path / "g", compression="BAD")
    with pytest.raises(InvalidArgumentError, match="shard_func"):
        Dataset.range(3).save(tmp_path / "h", shard_func=lambda x: -1)
    with pytest.raises(InvalidArgumentError, match="checkpoint_args"):
        Dataset.range(3).save(tmp_path / "c", checkpoint_args={"checkpoint_interval": 1})
    with pytest.raises(InvalidArgumentError, match="datasets"):
        Dataset.range(2).window(1).save(tmp_path / "w")
    Dataset.range(3).save(tmp_path / "s")
    with pytest.raises(ValueError, match="differs from the saved one"):
        Dataset.load(tmp_path / "s", element_spec=TensorSpec((), torch.int32))
    assert values(Dataset.load(tmp_path / "s", element_spec=TensorSpec((), torch.int64))) == [0, 1, 2]
    with pytest.raises(InvalidArgumentError, match="saved with compression"):
        Dataset.load(tmp_path / "s", compression="GZIP")


def test_snapshot_writes_once_then_reads(tmp_path):
    calls = []

    def square(x):
        calls.append(int(x))
        return x * x

    ds = Dataset.range(5).map(square).snapshot(tmp_path / "snap")
    calls.clear()
    assert values(ds) == [0, 1, 4, 9, 16]
    assert calls == [0, 1, 2, 3, 4]
    (fingerprint,) = os.listdir(tmp_path / "snap")
    assert values(ds) == [0, 1, 4, 9, 16] and calls == [0, 1, 2, 3, 4]  # read, not recomputed
    other = Dataset.range(5).map(lambda x: x + 1).snapshot(tmp_path / "snap")
    assert values(other) == [1, 2, 3, 4, 5]
    assert len(os.listdir(tmp_path / "snap")) == 2 and fingerprint in os.listdir(tmp_path / "snap")


def test_snapshot_interrupted_iteration_publishes_nothing_and_restores(tmp_path):
    ds = Dataset.range(30).snapshot(tmp_path / "snap")
    it = iter(ds)
    head = [int(next(it)) for _ in range(4)]
    state = it.state_dict()
    it.close()
    assert head == [0, 1, 2, 3]
    assert all(not os.path.exists(os.path.join(tmp_path, "snap", d, "manifest.json"))
               for d in os.listdir(tmp_path / "snap"))
    resumed = iter(ds)
    resumed.load_state_dict(state)
    assert values(resumed) == list(range(4, 30))
    assert values(ds) == list(range(30))  # a full iteration writes it
    assert_restores(lambda: Dataset.range(30).snapshot(tmp_path / "snap"))  # reading restores too
    with pytest.raises(InvalidArgumentError, match="compression"):
        Dataset.range(3).snapshot(tmp_path / "x", compression="SNAPPY")


def test_load_wait_waits_for_a_save_to_finish(tmp_path):
    saver = threading.Timer(0.2, lambda: Dataset.range(3).save(tmp_path / "late"))
    saver.start()
    try:
        assert values(Dataset.load(tmp_path / "late", wait=True)) == [0, 1, 2]
    finally:
        saver.join()
    with pytest.raises(TypeError, match="wait"):
        Dataset.load(tmp_path / "late", wait="yes")


def test_snapshot_fingerprint_sees_the_data(tmp_path):
    first = Dataset.from_tensor_slices(torch.tensor([1, 2, 3])).snapshot(tmp_path / "snap")
    second = Dataset.from_tensor_slices(torch.tensor([4, 5, 6])).snapshot(tmp_path / "snap")
    assert values(first) == [1, 2, 3] and values(second) == [4, 5, 6]
    assert values(first) == [1, 2, 3] and values(second) == [4, 5, 6]
    assert len(os.listdir(tmp_path / "snap")) == 2
