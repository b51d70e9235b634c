"""The TF1 input API as TensorFlow's strategy tests use it (issue 23.4): ``initializer`` and
``input_fn``s that return a ``get_next`` callable."""

import pytest
import torch

import distribute
from distribute.data import Dataset
from distribute.distributed_input.v1 import CallableIterator
from distribute.errors import OutOfRangeError
from tests.strategies import input_workers, local_replica_ids, named_strategies
from tests.unit.distributed_input._helpers import mirrored, plain_step


def test_initializer_restarts_a_dataset_iterator():
    it = mirrored(2).make_dataset_iterator(Dataset.range(4).batch(2))
    assert it.initializer is None  # an eager initializer op: reading it runs it
    assert plain_step(it.get_next()) == [[0], [1]]
    assert plain_step(it.get_next()) == [[2], [3]]
    with pytest.raises(OutOfRangeError):
        it.get_next()
    it.initializer
    assert plain_step(it.get_next()) == [[0], [1]]


def test_initializer_restarts_an_input_fn_iterator():
    it = mirrored(2).make_input_fn_iterator(lambda ctx: Dataset.range(2).batch(1))
    it.initializer
    assert plain_step(it.get_next()) == [[0], [1]]
    it.initializer
    assert plain_step(it.get_next()) == [[0], [1]]


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_input_fn_returning_get_next(make_strategy):
    strategy = make_strategy()
    n = len(local_replica_ids(strategy))  # input_fn runs once per worker, for its own replicas
    contexts = []

    def input_fn(ctx):
        contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync))
        rows = iter(Dataset.range(2 * n).batch(1))
        return lambda: next(rows)
    it = strategy.make_input_fn_iterator(input_fn)
    assert isinstance(it, CallableIterator) and isinstance(it, distribute.DistributedIterator)
    assert contexts == [(*input_workers(strategy), strategy.num_replicas_in_sync)]
    it.initializer
    first = it.get_next()
    assert plain_step(first) == ([[i] for i in range(n)] if n > 1 else [0])
    assert plain_step(next(it)) == ([[n + i] for i in range(n)] if n > 1 else [1])
    with pytest.raises(OutOfRangeError, match="End of sequence"):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
    assert not it.get_next_as_optional().has_value()
    assert it.element_spec is None


def test_get_next_callable_raising_out_of_range_ends_the_data():
    calls = []

    def get_next():
        calls.append(1)
        if len(calls) > 2:
            raise OutOfRangeError()
        return {"x": torch.tensor([float(len(calls))])}
    strategy = mirrored(2)
    it = strategy.make_input_fn_iterator(lambda ctx: get_next)
    step = it.get_next()
    assert isinstance(step["x"], distribute.PerReplica) and plain_step(step) == {"x": [[1.0], [2.0]]}
    with pytest.raises(OutOfRangeError):
        it.get_next()


def test_experimental_run_over_a_callable_iterator():
    rows = iter(range(10))
    strategy = mirrored(2)
    it = strategy.make_input_fn_iterator(lambda ctx: lambda: torch.tensor(float(next(rows))))
    out = strategy.experimental_run(lambda x: x * 2, it)
    assert [float(t) for t in out.values] == [0.0, 2.0]


def test_input_fn_returning_something_else_is_refused():
    with pytest.raises(TypeError, match="Expected the result of dataset_fn"):
        mirrored(2).make_input_fn_iterator(lambda ctx: 42)
