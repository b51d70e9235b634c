"""experimental_distribute_dataset over every strategy: types, specs, cardinality, structure."""

import collections

import pytest
import torch

import distribute
from distribute._base.tensor_spec import TensorSpec
from distribute.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from distribute.distributed_input import InputOptions, InputReplicationMode, PerReplicaSpec
from tests.strategies import named_strategies
from tests.unit.distributed_input._helpers import mirrored, steps

ALL = named_strategies("default", "one_device", "mirrored_2", "central_storage_2")
MULTI = named_strategies("mirrored_2", "central_storage_2")


@pytest.mark.parametrize("make_strategy", ALL)
def test_every_strategy_distributes_the_global_batches(make_strategy):
    strategy = make_strategy()
    dataset = Dataset.range(6).batch(4)
    dist = strategy.experimental_distribute_dataset(dataset)
    if strategy is distribute.get_strategy():
        assert dist is dataset
        return
    assert isinstance(dist, distribute.DistributedDataset)
    assert isinstance(iter(dist), distribute.DistributedIterator)
    if strategy.num_replicas_in_sync == 1:
        assert steps(dist) == [[0, 1, 2, 3], [4, 5]]
        assert all(type(x) is torch.Tensor for x in dist)
    else:
        assert steps(dist) == [[[0, 1], [2, 3]], [[4], [5]]]


@pytest.mark.parametrize("make_strategy", MULTI)
def test_runs_on_every_replica(make_strategy):
    strategy = make_strategy()
    dist = strategy.experimental_distribute_dataset(Dataset.range(9).batch(4))
    totals = [strategy.reduce("sum", strategy.run(lambda x: x.sum(), args=(batch,)), axis=None) for batch in dist]
    assert [int(t) for t in totals] == [6, 22, 8]
    assert int(dist.reduce(torch.tensor(0), lambda acc, x: acc + strategy.reduce("sum", x, axis=0))) == 36


@pytest.mark.parametrize("make_strategy", MULTI)
def test_element_spec_is_per_replica(make_strategy):
    strategy = make_strategy()
    spec = strategy.experimental_distribute_dataset(Dataset.range(9).batch(4)).element_spec
    assert spec == PerReplicaSpec(TensorSpec((None,), torch.int64), TensorSpec((None,), torch.int64))
    assert repr(spec) == ("PerReplicaSpec(TensorSpec(shape=(None,), dtype=torch.int64, name=None), "
                          "TensorSpec(shape=(None,), dtype=torch.int64, name=None))")
    dicts = Dataset.from_tensor_slices({"a": torch.arange(6), "b": torch.ones(6, 3)}).batch(4)
    spec = strategy.experimental_distribute_dataset(dicts).element_spec
    assert set(spec) == {"a", "b"} and isinstance(spec["b"], PerReplicaSpec)
    assert spec["b"].component_specs[1] == TensorSpec((None, 3), torch.float32)


@pytest.mark.parametrize("make_strategy", named_strategies("one_device"))
def test_single_replica_spec_is_plain(make_strategy):
    spec = make_strategy().experimental_distribute_dataset(Dataset.range(9).batch(4)).element_spec
    assert spec == TensorSpec((None,), torch.int64)
    assert mirrored(1).experimental_distribute_dataset(Dataset.range(9).batch(4)).element_spec == spec


@pytest.mark.parametrize("dataset,expected", [
    (Dataset.range(4).batch(2), 2), (Dataset.range(4).batch(2).repeat(), INFINITE_CARDINALITY),
    (Dataset.range(10).filter(lambda x: x % 2 == 0).batch(2), UNKNOWN_CARDINALITY)])
def test_cardinality_is_the_global_datasets(dataset, expected):
    assert mirrored(2).experimental_distribute_dataset(dataset).cardinality == expected


def test_reiteration_starts_again():
    dist = mirrored(2).experimental_distribute_dataset(Dataset.range(8).shuffle(8, seed=3).batch(4))
    first, second = steps(dist), steps(dist)
    assert sorted(sum(sum(first, []), [])) == list(range(8))
    assert len(first) == len(second) == 2


def test_structures_are_preserved():
    Point = collections.namedtuple("Point", "x y")
    dataset = Dataset.from_tensor_slices(Point(torch.arange(4), torch.arange(4.0))).batch(4)
    (step,) = mirrored(2).experimental_distribute_dataset(dataset)
    assert type(step) is Point and isinstance(step.x, distribute.PerReplica)
    assert [v.tolist() for v in step.y.values] == [[0.0, 1.0], [2.0, 3.0]]


def test_strings_are_split():
    dataset = Dataset.from_tensor_slices(["a", "b", "c"]).batch(3)
    (step,) = mirrored(2).experimental_distribute_dataset(dataset)
    assert [list(v) for v in step.values] == [[b"a", b"b"], [b"c"]]


def test_unbatched_dataset_is_refused():
    with pytest.raises(ValueError, match="scalar component .* Batch the dataset"):
        mirrored(2).experimental_distribute_dataset(Dataset.range(4))
    assert steps(distribute.OneDeviceStrategy("CPU:0").experimental_distribute_dataset(Dataset.range(2))) == [0, 1]


def test_argument_errors():
    s = mirrored(2)
    with pytest.raises(TypeError, match="distribute.data.Dataset, a torch.utils.data.DataLoader or an iterable"):
        s.experimental_distribute_dataset(torch.arange(4))
    with pytest.raises(TypeError, match="distribute.InputOptions or None"):
        s.experimental_distribute_dataset(Dataset.range(4).batch(2), options={"fetch": True})
    dist = s.experimental_distribute_dataset(Dataset.range(4).batch(2))
    with pytest.raises(TypeError, match="already distributed"):
        s.experimental_distribute_dataset(dist)
    with pytest.raises(NotImplementedError, match="PER_REPLICA is only supported in `distribute_datasets_from_function`"):
        s.experimental_distribute_dataset(Dataset.range(4).batch(2), InputOptions(
            experimental_replication_mode=InputReplicationMode.PER_REPLICA))


@pytest.mark.parametrize("make_strategy", MULTI)
def test_options_are_accepted(make_strategy):
    # TensorFlow's CentralStorageStrategy fails here on a typo (spec 9.2); ours does not.
    options = InputOptions(experimental_fetch_to_device=False, experimental_per_replica_buffer_size=0)
    dist = make_strategy().experimental_distribute_dataset(Dataset.range(4).batch(4), options)
    assert steps(dist) == [[[0, 1], [2, 3]]]


def test_replicas_must_divide_over_workers():
    from distribute.distributed_input.input_workers import InputWorkers

    with pytest.raises(ValueError, match=r"encountered `num_replicas_in_sync` \(3\) that cannot be divided by "
                                         r"`num_workers` \(2\)"):
        InputWorkers(2, 0, (torch.device("cpu"),), 3, lambda has: has)


def test_data_is_exported():
    from distribute import data

    assert data is distribute.data and data.Dataset is Dataset and "data" in distribute.__all__
