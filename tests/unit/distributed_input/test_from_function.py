"""distribute_datasets_from_function (spec 9.6) and the InputContext it passes (spec 9.1)."""

import pytest
import torch

import distribute
from distribute.data import AutoShardPolicy, Dataset
from distribute.distributed_input import DistributedDatasetsFromFunction, InputOptions, InputReplicationMode
from tests.strategies import named_strategies
from tests.unit.data._helpers import roundtrip
from tests.unit.distributed_input._helpers import in_lockstep, mirrored, plain_step, steps, with_policy

PER_REPLICA = InputReplicationMode.PER_REPLICA


def recording(dataset_fn):
    contexts = []

    def fn(ctx):
        contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync))
        return dataset_fn(ctx)
    return fn, contexts


@pytest.mark.parametrize("make_strategy", named_strategies("mirrored_2", "central_storage_2"))
def test_per_worker_batches_are_dealt_in_turn(make_strategy):
    fn, contexts = recording(lambda ctx: Dataset.range(10).batch(2))
    dist = make_strategy().distribute_datasets_from_function(fn)
    assert contexts == [(1, 0, 2)]
    assert steps(dist) == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], []]]
    assert dist.cardinality == 5
    assert [c.shape for c in dist.element_spec.component_specs] == [(None,), (None,)]


@pytest.mark.parametrize("make_strategy", named_strategies("default", "one_device"))
def test_single_replica_strategies(make_strategy):
    strategy = make_strategy()
    fn, contexts = recording(lambda ctx: Dataset.range(4).batch(2))
    dist = strategy.distribute_datasets_from_function(fn)
    assert contexts == [(1, 0, 1)]
    if strategy is distribute.get_strategy():
        assert isinstance(dist, Dataset)
    assert steps(dist) == [[0, 1], [2, 3]]


@pytest.mark.parametrize("make_strategy", named_strategies("mirrored_2", "central_storage_2"))
def test_per_replica_mode(make_strategy):
    fn, contexts = recording(lambda ctx: Dataset.range(100 * ctx.input_pipeline_id, 100 * ctx.input_pipeline_id + 4).batch(2))
    options = InputOptions(experimental_replication_mode=PER_REPLICA, experimental_fetch_to_device=False)
    dist = make_strategy().distribute_datasets_from_function(fn, options)
    assert contexts == [(2, 0, 2), (2, 1, 2)]
    assert steps(dist) == [[[0, 1], [100, 101]], [[2, 3], [102, 103]]]


def test_per_replica_mode_leaves_the_strategy_unchanged():
    # TensorFlow's Mirrored keeps one input worker per replica after PER_REPLICA (spec 9.6).
    strategy = mirrored(2)
    options = InputOptions(experimental_replication_mode=PER_REPLICA, experimental_fetch_to_device=False)
    strategy.distribute_datasets_from_function(lambda ctx: Dataset.range(4).batch(2), options)
    dataset = with_policy(Dataset.from_tensor_slices(torch.arange(4)).batch(4), AutoShardPolicy.FILE)
    assert steps(strategy.experimental_distribute_dataset(dataset)) == [[[0, 1], [2, 3]]]
    fn, contexts = recording(lambda ctx: Dataset.range(4).batch(2))
    strategy.distribute_datasets_from_function(fn)
    assert contexts == [(1, 0, 2)]


def test_option_errors():
    strategy = mirrored(2)
    with pytest.raises(ValueError, match="you must also specify `PER_REPLICA` for the replication mode"):
        strategy.distribute_datasets_from_function(lambda ctx: Dataset.range(2).batch(1),
                                                   InputOptions(experimental_place_dataset_on_device=True))
    with pytest.raises(ValueError, match="can not be set to True when experimental_fetch_to_device is True"):
        strategy.distribute_datasets_from_function(lambda ctx: Dataset.range(2).batch(1), InputOptions(
            experimental_replication_mode=PER_REPLICA, experimental_place_dataset_on_device=True))
    with pytest.raises(NotImplementedError, match="only supported in `experimental_distribute_datasets_from_function` "
                                                  "of distribute.MirroredStrategy"):
        distribute.OneDeviceStrategy("CPU:0").distribute_datasets_from_function(
            lambda ctx: Dataset.range(2).batch(1), InputOptions(experimental_replication_mode=PER_REPLICA))
    with pytest.raises(TypeError, match="`dataset_fn` to be a callable"):
        strategy.distribute_datasets_from_function(Dataset.range(2))
    with pytest.raises(TypeError, match="result of dataset_fn"):
        strategy.distribute_datasets_from_function(lambda ctx: 3)


def test_place_dataset_on_device():
    options = InputOptions(experimental_replication_mode=PER_REPLICA, experimental_place_dataset_on_device=True,
                           experimental_fetch_to_device=False)
    dist = mirrored(2).distribute_datasets_from_function(lambda ctx: Dataset.range(4).batch(2), options)
    assert steps(dist) == [[[0, 1], [0, 1]], [[2, 3], [2, 3]]]


def test_multi_worker_context_and_sharding():
    # 2 workers x 1 replica; dataset_fn shards itself: worker 1's last step is empty.
    def fn(ctx):
        return Dataset.range(6).batch(2).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
    one = distribute.OneDeviceStrategy("CPU:0")
    workers = [DistributedDatasetsFromFunction(one, fn, InputOptions(), input_workers=(2, w)) for w in (0, 1)]
    assert [steps(d) for d in workers] == [[[0, 1], [4, 5]], [[2, 3]]]  # each on its own
    in_lockstep(*workers)
    assert [steps(d) for d in workers] == [[[0, 1], [4, 5]], [[2, 3], []]]
    contexts = []
    DistributedDatasetsFromFunction(one, lambda ctx: contexts.append(str(ctx)) or Dataset.range(2), InputOptions(),
                                    input_workers=(2, 1))
    assert contexts == ["distribute.InputContext(input pipeline id 1, total: 2)"]


def test_state_round_trip():
    options = InputOptions(experimental_replication_mode=PER_REPLICA)
    dist = mirrored(2).distribute_datasets_from_function(
        lambda ctx: Dataset.range(10 * ctx.input_pipeline_id, 12 * ctx.input_pipeline_id + 5).batch(2),
        options)
    expected = steps(dist)
    assert expected[-2:] == [[[4], [14, 15]], [[], [16]]]
    for k in range(len(expected) + 1):
        it = iter(dist)
        head = [plain_step(next(it)) for _ in range(k)]
        again = iter(dist)
        again.load_state_dict(roundtrip(it.state_dict()))
        assert head + steps(again) == expected


def test_input_context():
    ctx = distribute.InputContext(1, 0, 2)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 2)
    assert ctx.get_per_replica_batch_size(8) == 4
    with pytest.raises(ValueError) as info:
        ctx.get_per_replica_batch_size(7)
    assert str(info.value) == "The `global_batch_size` 7 is not divisible by `num_replicas_in_sync` 2 "
    assert str(distribute.InputContext()) == "distribute.InputContext(input pipeline id 0, total: 1)"
    with pytest.raises(TypeError, match="global_batch_size"):
        ctx.get_per_replica_batch_size(8.0)
    with pytest.raises(ValueError, match="input_pipeline_id"):
        distribute.InputContext(2, 2, 2)
