"""Auto-sharding across workers (spec 9.4 step 3, 9.7), with explicit (workers, index) layouts."""

import logging

import pytest
import torch

from distribute.data import SHARD_HINT, AutoShardPolicy, Dataset, TextLineDataset
from distribute.distributed_input.auto_shard import DATA, FILE_SHARDED, HINT_FILLED, NONE, apply_auto_shard
from distribute.errors import InvalidArgumentError, NotFoundError
from tests.unit.distributed_input._helpers import on_worker, steps, text_files, text_numbers, with_policy

# The seed table: 2 workers x 1 replica, global batch 4.
SEED = {
    AutoShardPolicy.FILE: ([[0, 1], [2, 3], [4], [5]], [[6, 7], [8, 9], [10], [11]]),
    AutoShardPolicy.DATA: ([[0, 1], [4, 5], [8, 9]], [[2, 3], [6, 7], [10, 11]]),
    AutoShardPolicy.OFF: ([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]],) * 2,
}


@pytest.mark.parametrize("worker", [0, 1])
@pytest.mark.parametrize("policy", list(SEED), ids=lambda p: p.name)
def test_seed_table(tmp_path, policy, worker):
    if policy is AutoShardPolicy.FILE:
        files = text_files(tmp_path, [range(0, 6), range(6, 12)])
    else:
        files = text_files(tmp_path, [range(12)])
    dataset = with_policy(text_numbers(files).batch(4), policy)
    assert steps(on_worker(dataset, 2, worker)) == SEED[policy][worker]


@pytest.mark.parametrize("worker", [0, 1])
def test_auto_on_files_shards_files(tmp_path, worker):
    files = text_files(tmp_path, [range(0, 6), range(6, 12)])
    dataset = text_numbers(files).batch(4)
    assert steps(on_worker(dataset, 2, worker)) == SEED[AutoShardPolicy.FILE][worker]


# Spec 9.4, multi-worker MWMS 2 x 1, default policy (AUTO -> DATA on in-memory data).
MULTI_WORKER = [
    (8, ([[0, 1], [4, 5]], [[2, 3], [6, 7]])),
    (10, ([[0, 1], [4, 5], [8]], [[2, 3], [6, 7], [9]])),
    (5, ([[0, 1], [4]], [[2, 3], []])),
]


@pytest.mark.parametrize("worker", [0, 1])
@pytest.mark.parametrize("n,expected", MULTI_WORKER, ids=[f"range{n}" for n, _ in MULTI_WORKER])
def test_multi_worker_table(n, expected, worker):
    assert steps(on_worker(Dataset.range(n).batch(4), 2, worker)) == expected[worker]


def test_multi_worker_off_duplicates_data():
    dataset = with_policy(Dataset.range(8).batch(4), AutoShardPolicy.OFF)
    assert steps(on_worker(dataset, 2, 0)) == steps(on_worker(dataset, 2, 1)) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_data_sharding_with_two_replicas_per_worker():
    # W=2, R=2, range(16).batch(8): worker w, replica r gets piece r*W + w.
    assert steps(on_worker(Dataset.range(16).batch(8), 2, 0, local_replicas=2)) == [[[0, 1], [4, 5]], [[8, 9], [12, 13]]]
    assert steps(on_worker(Dataset.range(16).batch(8), 2, 1, local_replicas=2)) == [[[2, 3], [6, 7]], [[10, 11], [14, 15]]]


def test_stream_rebatch_is_rotated_per_worker():
    # B=7, W=2, R=2: worker 0 sizes [2, 2, 2, 1], worker 1 [2, 1, 2, 2] (HINT keeps the stream rebatch).
    dataset = with_policy(Dataset.range(14).shard(SHARD_HINT, SHARD_HINT).batch(7), AutoShardPolicy.HINT)
    assert steps(on_worker(dataset, 2, 0, local_replicas=2)) == [[[0, 2], [4, 6]], [[8, 10], [12]]]
    assert steps(on_worker(dataset, 2, 1, local_replicas=2)) == [[[1, 3], [5]], [[7, 9], [11, 13]]]


def test_hint_fills_placeholders():
    dataset = with_policy(Dataset.range(8).shard(SHARD_HINT, SHARD_HINT).batch(2), AutoShardPolicy.HINT)
    assert steps(on_worker(dataset, 2, 0)) == [[0], [2], [4], [6]]
    assert steps(on_worker(dataset, 2, 1)) == [[1], [3], [5], [7]]
    sharding = apply_auto_shard(dataset, 1, 0)
    assert sharding.applied == HINT_FILLED
    assert [n for n in sharding.dataset._walk() if n._op == "shard"][0].num_shards == 1


def test_file_policy_errors(tmp_path):
    files = text_files(tmp_path, [range(3), range(3, 6)])
    with pytest.raises(InvalidArgumentError, match=r"only has 2 file\(s\), which is not enough for the required 3"):
        on_worker(with_policy(text_numbers(files).batch(2), AutoShardPolicy.FILE), 3, 0)
    with pytest.raises(NotFoundError, match="unshardable source dataset: from_tensor_slices.*AutoShardPolicy.DATA"):
        on_worker(with_policy(Dataset.from_tensor_slices(torch.arange(4)).batch(2), AutoShardPolicy.FILE), 2, 0)
    mixed = Dataset.zip((text_numbers(files), Dataset.range(6))).batch(2)
    with pytest.raises(NotFoundError, match="unshardable source dataset: range"):
        on_worker(with_policy(mixed, AutoShardPolicy.FILE), 2, 0)


def test_file_policy_with_one_worker_is_skipped(tmp_path):
    dataset = with_policy(Dataset.range(4).batch(2), AutoShardPolicy.FILE)
    sharding = apply_auto_shard(dataset, 1, 0)
    assert sharding == (dataset, NONE)


def test_auto_falls_back_to_data_with_one_log_line(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="distribute"):
        on_worker(Dataset.range(4).batch(2), 1, 0)
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="distribute"):
        on_worker(Dataset.range(4).batch(2), 2, 0)
    (record,) = caplog.records
    assert record.getMessage() == (
        "AUTO sharding policy will apply DATA sharding policy as it failed to apply FILE sharding policy "
        "because of the following reason: Found an unshardable source dataset: range")


def test_auto_with_fewer_files_than_workers_falls_back_to_data(tmp_path, caplog):
    files = text_files(tmp_path, [range(12)])
    with caplog.at_level(logging.WARNING, logger="distribute"):
        dist = on_worker(text_numbers(files).batch(4), 2, 1)
    assert steps(dist) == SEED[AutoShardPolicy.DATA][1]
    assert "only has 1 file(s)" in caplog.records[0].getMessage()


@pytest.mark.parametrize("method", ["interleave", "flat_map"])
def test_file_sharding_inside_interleave(tmp_path, method):
    text_files(tmp_path, [range(0, 4), range(4, 8), range(8, 12), range(12, 16)])
    names = Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    if method == "interleave":
        lines = names.interleave(TextLineDataset, cycle_length=1)
    else:
        lines = names.flat_map(TextLineDataset)
    dataset = lines.map(lambda line: torch.tensor(int(line))).batch(4)
    assert apply_auto_shard(dataset, 2, 0).applied == FILE_SHARDED
    assert steps(on_worker(dataset, 2, 0)) == [[0, 1], [2, 3], [8, 9], [10, 11]]
    assert steps(on_worker(dataset, 2, 1)) == [[4, 5], [6, 7], [12, 13], [14, 15]]


def test_file_name_shuffle_moves_after_the_shard(tmp_path):
    text_files(tmp_path, [[i] for i in range(6)])
    dataset = text_numbers(Dataset.list_files(str(tmp_path / "*.txt"))).batch(1)  # unseeded shuffle
    rewritten = apply_auto_shard(dataset, 2, 1).dataset
    reader = next(n for n in rewritten._walk() if n._is_file_reader)
    assert reader.filenames._op == "shuffle" and reader.filenames._inputs()[0]._op == "shard"
    seen = [sorted(sum(steps(on_worker(dataset, 2, w, seed=s)), [])) for w in (0, 1) for s in (1, 2)]
    assert seen[0] == seen[1] == [0, 2, 4] and seen[2] == seen[3] == [1, 3, 5]


def test_data_policy_is_applied_on_pieces(tmp_path):
    dataset = with_policy(Dataset.range(12).batch(4), AutoShardPolicy.DATA)
    assert apply_auto_shard(dataset, 2, 0) == (dataset, DATA)
