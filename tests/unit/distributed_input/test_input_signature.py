"""``distribute.function(input_signature=[dist_dataset.element_spec])`` as the distributed-input
guide and TensorFlow's input_lib tests use it (issue 24), over every named strategy."""

import pytest
import torch

import distribute
from distribute.data import Dataset
from distribute.distributed_input import InputOptions, PerReplicaSpec
from tests.strategies import local_pieces, named_strategies


def pairs(rows):
    """``rows`` elements of ``([1.], [1.])``, batched by 4 (the guide's dataset)."""
    return Dataset.from_tensors(([1.0], [1.0])).repeat(rows).batch(4)


def distributed(strategy, kind, dataset, options=None):
    if kind == "dataset":
        return strategy.experimental_distribute_dataset(dataset, options)
    def dataset_fn(ctx):  # the guide's: each input pipeline reads its own shard, in per-replica batches
        rows = dataset.unbatch().shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return rows.batch(ctx.get_per_replica_batch_size(4))
    return strategy.distribute_datasets_from_function(dataset_fn, options)


KINDS = ["dataset", "from_function"]


def local_rows(strategy, value):
    return [int(t.shape[0]) for t in strategy.experimental_local_results(value)]


def global_rows(strategy, value):
    """The rows of ``value`` over every replica of every worker."""
    rows = strategy.run(lambda t: torch.tensor(t.shape[0]), args=(value,))
    return int(strategy.reduce("sum", rows, axis=None))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_guide_example_with_partial_last_batch(make_strategy, kind):
    strategy = make_strategy()
    dist = distributed(strategy, kind, pairs(9))  # the last global batch has one row

    @distribute.function(input_signature=[dist.element_spec])
    def train_step(inputs):
        return strategy.run(lambda x: 2 * x[0], args=(inputs,))
    seen, local = [], []
    for inputs in dist:
        out = train_step(inputs)
        seen.append(global_rows(strategy, out))
        local.append(local_rows(strategy, out))
        assert all(float(v) == 2.0 for t in strategy.experimental_local_results(out) for v in t.flatten())
    assert seen == [4, 4, 1]
    if kind == "dataset":  # this worker's pieces of each global batch
        assert local == [[len(rows) for rows in local_pieces(strategy, b)] for b in (4, 4, 1)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_values_pass_through_unchanged(make_strategy, kind):
    strategy = make_strategy()
    dist = distributed(strategy, kind, pairs(8))
    received = []
    f = distribute.function(lambda inputs: received.append(inputs), input_signature=[dist.element_spec])
    element = next(iter(dist))
    f(element)
    assert received[0] is element or all(a is b for a, b in zip(received[0], element))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_iterator_element_spec_and_iterating_inside_the_function(make_strategy, kind):
    strategy = make_strategy()
    dist = distributed(strategy, kind, pairs(10), InputOptions(experimental_fetch_to_device=False))
    iterator = iter(dist)
    step = distribute.function(lambda x, y: strategy.run(lambda a, b: (a + b).sum(), args=(x, y)),
                               input_signature=list(iterator.element_spec))

    @distribute.function
    def loop():
        total = torch.tensor(0.0)
        for x, y in iterator:
            total = total + strategy.reduce("sum", step(x, y), axis=None)
        return total
    assert float(loop()) == 20.0


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_nested_dict_and_tuple_specs(make_strategy):
    strategy = make_strategy()
    data = Dataset.from_tensor_slices({"x": torch.arange(6.0).reshape(6, 1), "label": torch.arange(6)}).batch(4)
    dist = strategy.experimental_distribute_dataset(data)
    spec = dist.element_spec
    if strategy.num_replicas_in_sync > 1:
        assert isinstance(spec["x"], PerReplicaSpec)
    f = distribute.function(lambda pair: strategy.run(lambda d, k: d["label"] * k, args=pair),
                            input_signature=[(spec, distribute.TensorSpec((), torch.int64))])
    out = [f((element, torch.tensor(10))) for element in dist]
    got = [[t.tolist() for t in strategy.experimental_local_results(o)] for o in out]
    assert got == [[[10 * (start + i) for i in rows] for rows in local_pieces(strategy, size)]
                   for start, size in ((0, 4), (4, 2))]  # this worker's pieces of the two batches


def test_two_replica_spec_errors_name_the_argument_and_the_difference():
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    dist = strategy.experimental_distribute_dataset(pairs(8))
    f = distribute.function(lambda inputs: inputs, input_signature=[dist.element_spec])
    good = next(iter(dist))
    wrong_dtype = (distribute.PerReplica([t.double() for t in good[0].values]), good[1])
    with pytest.raises(TypeError, match=r"argument `inputs\[0\]`, replica 0: .*dtype torch.float64 instead of "
                                        r"torch.float32"):
        f(wrong_dtype)
    wrong_shape = (good[0], distribute.PerReplica([torch.ones(2, 1), torch.ones(2, 3)]))
    with pytest.raises(TypeError, match=r"argument `inputs\[1\]`, replica 1: .*shape \(2, 3\) instead of \(None, 1\)"):
        f(wrong_shape)
    with pytest.raises(TypeError, match=r"argument `inputs\[0\]` must be a PerReplica of 2 component\(s\)"):
        f((torch.ones(4, 1), good[1]))
    with pytest.raises(TypeError, match=r"argument `inputs\[0\]` has 3 per-replica component\(s\), its spec 2"):
        f((distribute.PerReplica([torch.ones(1, 1)] * 3), good[1]))
    with pytest.raises(TypeError, match=r"argument `inputs`: Can not cast"):
        f(good[0])


def test_spec_of_another_strategy_size_is_refused_at_call():
    three = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    two = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    spec = two.experimental_distribute_dataset(pairs(8)).element_spec
    f = distribute.function(lambda inputs: inputs, input_signature=[spec])
    with pytest.raises(TypeError, match="has 3 per-replica component"):
        f(next(iter(three.experimental_distribute_dataset(Dataset.from_tensors(([1.0], [1.0])).repeat(6).batch(6)))))
