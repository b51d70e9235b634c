"""The two rebatching algorithms of spec 9.4, table by table (single worker)."""

import pytest
import torch

from distribute.data import AutoShardPolicy, Dataset
from distribute.distributed_input.rebatch import piece_bounds, stream_sizes
from tests.unit.distributed_input._helpers import mirrored, steps, with_policy

# Spec 9.4, "Observed outputs" (default AUTO policy on in-memory data: per-batch slicing).
PER_BATCH = [
    (6, 4, 2, [[[0, 1], [2, 3]], [[4], [5]]]),
    (8, 4, 3, [[[0, 1], [2, 3], []], [[4, 5], [6, 7], []]]),
    (9, 4, 2, [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8], []]]),
    (10, 4, 3, [[[0, 1], [2, 3], []], [[4, 5], [6, 7], []], [[8], [9], []]]),
    (5, 5, 4, [[[0, 1], [2, 3], [4], []]]),
    (7, 7, 4, [[[0, 1], [2, 3], [4, 5], [6]]]),
    (10, 5, 3, [[[0, 1], [2, 3], [4]], [[5, 6], [7, 8], [9]]]),
    (12, 6, 4, [[[0, 1], [2, 3], [4, 5], []], [[6, 7], [8, 9], [10, 11], []]]),
    (4, 2, 4, [[[0], [1], [], []], [[2], [3], [], []]]),
    (1, 1, 2, [[[0], []]]),
    (3, 3, 2, [[[0, 1], [2]]]),
    (7, 3, 2, [[[0, 1], [2]], [[3, 4], [5]], [[6], []]]),
]

# Spec 9.4, the same datasets with OFF, FILE or HINT (the stream rebatch).
STREAM = [
    (8, 4, 3, [[[0, 1], [2], [3]], [[4, 5], [6], [7]]]),
    (6, 4, 2, [[[0, 1], [2, 3]], [[4, 5], []]]),
    (9, 4, 2, [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8], []]]),
    (10, 4, 3, [[[0, 1], [2], [3]], [[4, 5], [6], [7]], [[8, 9], [], []]]),
    (7, 7, 4, [[[0, 1], [2, 3], [4, 5], [6]]]),
    (10, 5, 3, [[[0, 1], [2, 3], [4]], [[5, 6], [7, 8], [9]]]),
]


@pytest.mark.parametrize("n,batch,replicas,expected", PER_BATCH, ids=[f"range{r[0]}.batch{r[1]}/{r[2]}" for r in PER_BATCH])
def test_per_batch_slicing_table(n, batch, replicas, expected):
    dist = mirrored(replicas).experimental_distribute_dataset(Dataset.range(n).batch(batch))
    assert steps(dist) == expected


@pytest.mark.parametrize("policy", [AutoShardPolicy.OFF, AutoShardPolicy.FILE, AutoShardPolicy.HINT])
@pytest.mark.parametrize("n,batch,replicas,expected", STREAM, ids=[f"range{r[0]}.batch{r[1]}/{r[2]}" for r in STREAM])
def test_stream_rebatch_table(n, batch, replicas, expected, policy):
    dataset = with_policy(Dataset.range(n).batch(batch), policy)
    assert steps(mirrored(replicas).experimental_distribute_dataset(dataset)) == expected


@pytest.mark.parametrize("batch,replicas,expected", [
    (4, 2, [[[0, 1], [2, 3]]]), (3, 2, [[[0, 1], [2]], [[3, 4], [5]]])])
def test_drop_remainder(batch, replicas, expected):
    dist = mirrored(replicas).experimental_distribute_dataset(Dataset.range(6 if batch == 4 else 8).batch(batch, drop_remainder=True))
    assert steps(dist) == expected


def test_drop_remainder_element_specs():
    two = mirrored(2)
    spec = two.experimental_distribute_dataset(Dataset.range(6).batch(4, drop_remainder=True)).element_spec
    assert [c.shape for c in spec.component_specs] == [(2,), (2,)]
    spec = two.experimental_distribute_dataset(Dataset.range(8).batch(3, drop_remainder=True)).element_spec
    assert [c.shape for c in spec.component_specs] == [(None,), (None,)]
    spec = two.experimental_distribute_dataset(Dataset.range(8).batch(4)).element_spec
    assert [c.shape for c in spec.component_specs] == [(None,), (None,)]


@pytest.mark.parametrize("batch,replicas,workers,index,expected", [
    (4, 3, 1, 0, [2, 1, 1]), (7, 4, 2, 0, [2, 2, 2, 1]), (7, 4, 2, 1, [2, 1, 2, 2]), (4, 2, 1, 0, [2, 2]),
    (1, 2, 1, 0, [1, 0])])
def test_stream_sizes(batch, replicas, workers, index, expected):
    assert stream_sizes(batch, replicas, workers, index) == expected


def test_piece_bounds():
    assert piece_bounds(5, 4) == [(0, 2), (2, 4), (4, 5), (5, 5)]
    assert piece_bounds(0, 2) == [(0, 0), (0, 0)]


def test_stream_rebatch_crosses_batch_boundaries():
    # Batches [0..3], [4, 5, 6], [7..10]: the stream ignores where the input batches end,
    # while per-batch slicing cuts every batch on its own.
    dataset = Dataset.range(7).batch(4).concatenate(Dataset.range(7, 11).batch(4))
    assert steps(mirrored(2).experimental_distribute_dataset(with_policy(dataset, AutoShardPolicy.OFF))) == [
        [[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10]]]
    assert steps(mirrored(2).experimental_distribute_dataset(dataset)) == [
        [[0, 1], [2, 3]], [[4, 5], [6]], [[7, 8], [9, 10]]]


def test_stream_rebatch_with_zero_sized_pieces():
    # B=1 over 2 replicas: sizes [1, 0], so the second replica always gets an empty batch.
    dataset = with_policy(Dataset.range(3).batch(1), AutoShardPolicy.OFF)
    assert steps(mirrored(2).experimental_distribute_dataset(dataset)) == [[[0], []], [[1], []], [[2], []]]


def test_unknown_batch_size_falls_back_to_per_batch_slicing():
    dataset = with_policy(Dataset.range(6).batch(4).unbatch().batch(4), AutoShardPolicy.OFF)
    assert dataset._static_batch_size() == 4
    dataset = with_policy(Dataset.range(3).map(lambda x: torch.arange(x + 1)).flat_map(Dataset.from_tensors),
                          AutoShardPolicy.OFF)
    assert dataset._static_batch_size() == -1
    assert steps(mirrored(2).experimental_distribute_dataset(dataset)) == [[[0], []], [[0], [1]], [[0, 1], [2]]]


def test_structures_are_split_leaf_by_leaf():
    x = torch.arange(12.).reshape(6, 2)
    tuples = Dataset.from_tensor_slices((x, torch.arange(6))).batch(4)
    assert steps(mirrored(2).experimental_distribute_dataset(tuples)) == [
        ([[[0., 1.], [2., 3.]], [[4., 5.], [6., 7.]]], [[0, 1], [2, 3]]),
        ([[[8., 9.]], [[10., 11.]]], [[4], [5]])]
    dicts = Dataset.from_tensor_slices({"a": torch.arange(3), "b": torch.ones(3, 2)}).batch(3)
    (step,) = list(mirrored(2).experimental_distribute_dataset(dicts))
    assert set(step) == {"a", "b"}
    assert [v.shape for v in step["b"].values] == [(2, 2), (1, 2)]
