"""Distributed iterators: end of data, optionals, partial steps, errors and saved positions."""

import pytest
import torch

import distribute
from distribute.data import AutoShardPolicy, Dataset
from distribute.errors import InvalidArgumentError, OutOfRangeError
from tests.unit.data._helpers import roundtrip
from tests.unit.distributed_input._helpers import (in_lockstep, mirrored, on_worker, plain_step, steps, text_files,
                                                   text_numbers, with_policy)


def test_end_of_data():
    it = iter(mirrored(2).experimental_distribute_dataset(Dataset.range(2).batch(2)))
    assert plain_step(next(it)) == [[0], [1]]
    for _ in range(2):
        with pytest.raises(OutOfRangeError, match="End of sequence"):
            it.get_next()
        with pytest.raises(StopIteration):
            next(it)


def test_get_next_as_optional():
    it = iter(mirrored(2).experimental_distribute_dataset(Dataset.range(9).batch(4)))
    optionals = [it.get_next_as_optional() for _ in range(4)]
    assert [o.has_value() for o in optionals] == [True, True, True, False]
    assert plain_step(optionals[2].get_value()) == [[8], []]
    assert [c.shape for c in optionals[2].element_spec.component_specs] == [(1,), (0,)]
    assert optionals[3].element_spec == it.element_spec
    with pytest.raises(InvalidArgumentError, match="has no value"):
        optionals[3].get_value()
    with pytest.raises(OutOfRangeError):
        it.get_next()


def test_empty_batches_keep_the_feature_dims():
    dataset = Dataset.from_tensor_slices(torch.ones(5, 3)).batch(4)
    shapes = [[tuple(v.shape) for v in step.values] for step in mirrored(2).experimental_distribute_dataset(dataset)]
    assert shapes == [[(2, 3), (2, 3)], [(1, 3), (0, 3)]]
    (step,) = mirrored(3).experimental_distribute_dataset(Dataset.from_tensor_slices(torch.ones(1, 2, dtype=torch.int32)).batch(1))
    assert [(tuple(v.shape), v.dtype) for v in step.values] == [((1, 2), torch.int32), ((0, 2), torch.int32), ((0, 2), torch.int32)]


def test_static_specs_disable_partial_steps_for_get_next():
    # Per-replica batches of a static (2,) spec: 3 batches for 2 replicas. get_next() drops the
    # partial step (as TensorFlow does), get_next_as_optional() completes it with an empty batch.
    dist = mirrored(2).distribute_datasets_from_function(lambda ctx: Dataset.range(6).batch(2, drop_remainder=True))
    assert [c.shape for c in dist.element_spec.component_specs] == [(2,), (2,)]
    assert steps(dist) == [[[0, 1], [2, 3]]]
    it = iter(dist)
    optionals = [it.get_next_as_optional() for _ in range(3)]
    assert [o.has_value() for o in optionals] == [True, True, False]
    assert plain_step(optionals[1].get_value()) == [[4, 5], []]
    # Without drop_remainder the spec is not static: get_next() completes the step too.
    dist = mirrored(2).distribute_datasets_from_function(lambda ctx: Dataset.range(6).batch(2))
    assert steps(dist) == [[[0, 1], [2, 3]], [[4, 5], []]]


def test_next_inside_run_is_refused():
    strategy = mirrored(2)
    it = iter(strategy.experimental_distribute_dataset(Dataset.range(8).batch(4)))
    message = r"next\(iterator\) should be called from outside of replica_fn. e.g. strategy.run\(replica_fn, args=\(next\(iterator\),\)\)"
    with pytest.raises(ValueError, match=message):
        strategy.run(lambda: next(it))
    with pytest.raises(ValueError, match=message):
        strategy.run(lambda: it.get_next())
    with strategy.scope():
        assert plain_step(it.get_next()) == [[0, 1], [2, 3]]
    one = distribute.OneDeviceStrategy("CPU:0")
    it = iter(one.experimental_distribute_dataset(Dataset.range(8).batch(4)))
    with pytest.raises(ValueError, match=message):
        one.run(lambda: next(it))


def test_infinite_data():
    it = iter(mirrored(2).experimental_distribute_dataset(Dataset.range(4).batch(4).repeat()))
    assert [plain_step(it.get_next_as_optional().get_value()) for _ in range(3)] == [[[0, 1], [2, 3]]] * 3


def test_empty_dataset():
    it = iter(mirrored(2).experimental_distribute_dataset(Dataset.range(0).batch(4)))
    assert not it.get_next_as_optional().has_value()


def _peer_with_data(extra_steps):
    calls = {"n": 0}

    def agree(local_has_data):
        calls["n"] += 1
        return local_has_data or calls["n"] <= extra_steps
    return agree


def test_workers_agree_to_stop_together(tmp_path):
    # Worker 1 has 2 rows, its peer 6: worker 1 gives empty batches until every worker is done.
    files = text_files(tmp_path, [range(6), range(6, 8)])
    dataset = text_numbers(files).map(lambda x: torch.stack([x, x])).batch(2)
    workers = [on_worker(dataset, 2, w) for w in (0, 1)]
    in_lockstep(*workers)
    assert steps(workers[0]) == [[[0, 0]], [[1, 1]], [[2, 2]], [[3, 3]], [[4, 4]], [[5, 5]]]
    assert [tuple(batch.shape) for batch in workers[1]] == [(1, 2), (1, 2), (0, 2), (0, 2), (0, 2), (0, 2)]
    assert workers[1].element_spec.shape == (None, 2)
    with_data = on_worker(dataset, 2, 1)
    with_data._workers.any_worker_has_data = _peer_with_data(3)
    assert [tuple(batch.shape) for batch in with_data] == [(1, 2), (1, 2), (0, 2)]


@pytest.mark.parametrize("method", ["next", "get_next_as_optional"])
def test_agreement_is_asked_once_per_step(method):
    dist = on_worker(Dataset.range(5).batch(4), 2, 1)
    asked = []
    dist._workers.any_worker_has_data = lambda has: asked.append(has) or has
    it = iter(dist)
    while True:
        value = next(it, None) if method == "next" else it.get_next_as_optional()
        if value is None or (method != "next" and not value.has_value()):
            break
    assert asked == [True, True, False]


def assert_restores(make, deterministic=True, limit=100):
    """Saving after k steps and restoring into a fresh iterator continues exactly."""
    expected = steps(make())[:limit]
    for k in range(len(expected) + 1):
        original = iter(make())
        head = [plain_step(next(original)) for _ in range(k)]
        state = roundtrip(original.state_dict())
        restored = iter(make())
        restored.load_state_dict(state)
        rest = steps(original)
        assert steps(restored) == rest, f"after {k} steps"
        assert len(head + rest) == len(expected)
        if deterministic:
            assert head + rest == expected


@pytest.mark.parametrize("case", ["slice", "shuffle", "stream", "file_two_steps_per_batch", "tuple_partial"])
def test_state_dict_round_trip(case, tmp_path):
    strategy = mirrored(2)
    if case == "slice":
        make = lambda: strategy.experimental_distribute_dataset(Dataset.range(9).batch(4))  # noqa: E731
    elif case == "shuffle":
        dataset = Dataset.range(40).shuffle(16).batch(6)
        make = lambda: strategy.experimental_distribute_dataset(dataset)  # noqa: E731
    elif case == "stream":
        dataset = with_policy(Dataset.range(7).batch(4).concatenate(Dataset.range(7, 17).batch(4)), AutoShardPolicy.OFF)
        make = lambda: mirrored(3).experimental_distribute_dataset(dataset)  # noqa: E731
    elif case == "file_two_steps_per_batch":
        files = text_files(tmp_path, [range(0, 7), range(7, 12)])
        dataset = text_numbers(files).batch(4)
        make = lambda: on_worker(dataset, 2, 0)  # noqa: E731
    else:
        dataset = Dataset.from_tensor_slices((torch.arange(10), torch.ones(10, 2))).batch(4)
        make = lambda: mirrored(3).experimental_distribute_dataset(dataset)  # noqa: E731
    assert_restores(make, deterministic=case != "shuffle")


def test_shuffle_seed_is_part_of_the_state():
    dist = mirrored(2).experimental_distribute_dataset(Dataset.range(64).shuffle(64).batch(8))
    it = iter(dist)
    next(it)
    state = it.state_dict()
    again = iter(dist)
    again.load_state_dict(state)
    assert steps(again) == steps(it)


def test_state_dict_refuses_other_layouts():
    state = iter(mirrored(2).experimental_distribute_dataset(Dataset.range(4).batch(2))).state_dict()
    other = iter(mirrored(3).experimental_distribute_dataset(Dataset.range(4).batch(2)))
    with pytest.raises(InvalidArgumentError, match="with 2 local replicas; this iterator is worker 0 of 1 with 3"):
        other.load_state_dict(state)
    with pytest.raises(InvalidArgumentError, match="DistributedIterator.state_dict"):
        other.load_state_dict({"format": "x"})
