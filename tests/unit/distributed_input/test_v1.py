"""The TF1 input methods kept on Strategy: make_dataset_iterator, make_input_fn_iterator, experimental_run."""

import pytest

import distribute
from distribute.data import Dataset
from distribute.distributed_input import InputReplicationMode
from distribute.errors import OutOfRangeError
from tests.unit.distributed_input._helpers import mirrored, plain_step, steps


def test_make_dataset_iterator_restarts_on_initialize():
    it = mirrored(2).make_dataset_iterator(Dataset.range(9).batch(4))
    assert it.initialize() is None
    assert plain_step(it.get_next()) == [[0, 1], [2, 3]]
    assert plain_step(it.get_next()) == [[4, 5], [6, 7]]
    it.initialize()
    assert plain_step(next(it)) == [[0, 1], [2, 3]]
    assert steps(it) == [[[4, 5], [6, 7]], [[8], []]]
    with pytest.raises(OutOfRangeError):
        it.get_next()
    assert not it.get_next_as_optional().has_value()


def test_default_strategy_iterator():
    it = distribute.get_strategy().make_dataset_iterator(Dataset.range(4).batch(2))
    assert plain_step(it.get_next()) == [0, 1]
    it.initialize()
    assert steps(it) == [[0, 1], [2, 3]]


def test_make_input_fn_iterator():
    contexts = []

    def input_fn(ctx):
        contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync))
        return Dataset.range(6).batch(2)
    strategy = mirrored(2)
    it = strategy.make_input_fn_iterator(input_fn)
    it.initialize()
    assert contexts == [(1, 0, 2)]
    assert plain_step(it.get_next()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="Input replication mode not supported: <InputReplicationMode.PER_REPLICA"):
        strategy.make_input_fn_iterator(input_fn, InputReplicationMode.PER_REPLICA)


def test_experimental_run():
    strategy = mirrored(2)
    it = strategy.make_dataset_iterator(Dataset.range(9).batch(4))
    assert plain_step(strategy.experimental_run(lambda x: x * 2, it)) == [[0, 2], [4, 6]]
    strategy.experimental_run(lambda x: x, it)
    assert plain_step(strategy.experimental_run(lambda x: x * 2, it)) == [[16], []]
    assert strategy.experimental_run(lambda: 3) == 3
    with pytest.raises(TypeError, match="distributed iterator"):
        strategy.experimental_run(lambda x: x, [1])
