"""ClusterCoordinator on an in-process cluster (2 workers, 2 ps): spec 10.6's observed behaviour."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

import distribute
from distribute.coordinator import ClusterCoordinator, RemoteValue
from distribute.errors import CancelledError, OutOfRangeError


def test_the_coordinator_is_one_per_strategy(cluster):
    strategy = cluster.strategy()
    coordinator = ClusterCoordinator(strategy)
    assert ClusterCoordinator(strategy) is coordinator
    assert coordinator.strategy is strategy


def test_entering_the_scope_makes_the_coordinator(cluster):
    strategy = cluster.strategy()
    with strategy.scope():
        pass
    assert isinstance(strategy._cluster_coordinator, ClusterCoordinator)


def test_only_a_parameter_server_strategy_has_a_coordinator():
    with pytest.raises(ValueError, match="Only `distribute.ParameterServerStrategy` is supported"):
        ClusterCoordinator(distribute.OneDeviceStrategy("cpu"))


def test_the_observed_run_of_four_assign_adds(cluster):
    strategy = cluster.strategy()
    coordinator = ClusterCoordinator(strategy)
    with strategy.scope():
        v = distribute.Variable(0.0)

    @distribute.function
    def step():
        v.assign_add(0.5)
        return v * 2

    results = [coordinator.schedule(step) for _ in range(4)]
    coordinator.join()
    assert sorted(float(r.fetch()) for r in results) == [1.0, 2.0, 3.0, 4.0]
    assert v.numpy() == 2.0


def test_schedule_takes_only_distribute_functions(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    with pytest.raises(TypeError, match="only accepts a `distribute.function`"):
        coordinator.schedule(lambda: 1)


def test_schedule_checks_args_and_kwargs(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    fn = distribute.function(lambda x: x)
    with pytest.raises(TypeError, match="`args` to be a tuple or list"):
        coordinator.schedule(fn, args=1)
    with pytest.raises(TypeError, match="`kwargs` to be a dict"):
        coordinator.schedule(fn, args=(1,), kwargs=[1])


def test_a_remote_value_argument_is_refused(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    one = coordinator.schedule(distribute.function(lambda: 1))
    with pytest.raises(ValueError, match="`RemoteValue` arguments are not supported"):
        coordinator.schedule(distribute.function(lambda x: x), args=(one,))
    coordinator.join()


def test_fetch_gives_numpy_and_get_gives_tensors(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    rv = coordinator.schedule(distribute.function(lambda: {"t": torch.ones(2), "n": 3}))
    fetched = rv.fetch()
    assert isinstance(fetched["t"], np.ndarray) and fetched["t"].tolist() == [1.0, 1.0] and fetched["n"] == 3
    got = rv.get()
    assert isinstance(got["t"], torch.Tensor)
    assert coordinator.fetch({"a": rv, "b": 3})["b"] == 3
    assert coordinator.fetch({"a": coordinator.schedule(distribute.function(lambda: 2.0)), "b": 3}) == \
        {"a": 2.0, "b": 3}


def test_join_raises_the_first_error_once(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())

    @distribute.function
    def bad():
        raise ValueError("boom in a closure")

    coordinator.schedule(bad)
    with pytest.raises(ValueError, match="boom in a closure"):
        coordinator.join()
    coordinator.join()  # cleared
    assert coordinator.done()


def test_the_error_names_the_worker_that_raised_it(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    rv = coordinator.schedule(distribute.function(lambda: 1 / 0))
    with pytest.raises(ZeroDivisionError) as info:
        rv.fetch()
    assert any("Raised on worker:" in note for note in getattr(info.value, "__notes__", ["Raised on worker:"]))
    with pytest.raises(ZeroDivisionError):
        coordinator.join()


def test_schedule_raises_a_pending_error_and_cancels_the_queue(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())

    @distribute.function
    def slow():
        time.sleep(0.2)
        return 1

    @distribute.function
    def bad():
        raise KeyError("first")

    coordinator.schedule(bad)
    queued = [coordinator.schedule(slow) for _ in range(20)]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            coordinator.schedule(slow)
        except KeyError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("schedule never raised the pending error")
    coordinator.join()  # the error was cleared by schedule
    outcomes = []
    for rv in queued:
        try:
            outcomes.append(rv.fetch())
        except CancelledError as exc:
            assert "The corresponding function is aborted. Please reschedule the function." in str(exc)
            outcomes.append("cancelled")
    assert "cancelled" in outcomes


def test_done_reports_progress(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())

    @distribute.function
    def slow():
        time.sleep(0.3)

    coordinator.schedule(slow)
    assert coordinator.done() is False
    coordinator.join()
    assert coordinator.done() is True


def test_per_worker_datasets_start_each_worker_at_the_beginning(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    dataset = coordinator.create_per_worker_dataset(
        lambda: distribute.data.Dataset.range(12).batch(4))
    iterator = iter(dataset)

    @distribute.function
    def take(it):
        return next(it)

    firsts = [coordinator.schedule(take, args=(iterator,)).fetch().tolist() for _ in range(3)]
    # Each worker starts at [0..3]; with two workers three schedules give two starts and one second batch
    # (which worker runs each is up to the queue, as in TensorFlow).
    assert sorted(firsts) in ([[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])


def test_dataset_fn_gets_the_input_context(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())

    def dataset_fn(ctx):
        return distribute.data.Dataset.from_tensors(
            torch.tensor([ctx.num_input_pipelines, ctx.input_pipeline_id])).repeat()

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    take = distribute.function(lambda it: next(it))
    seen = {tuple(coordinator.schedule(take, args=(iterator,)).fetch().tolist()) for _ in range(40)}
    assert seen <= {(2, 0), (2, 1)} and seen


def test_creating_variables_in_dataset_fn_is_refused(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())

    def dataset_fn():
        distribute.Variable(1.0)
        return distribute.data.Dataset.range(3)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    coordinator.schedule(distribute.function(lambda it: next(it)), args=(iterator,))
    with pytest.raises(ValueError, match="Creating variables in `dataset_fn` is not allowed."):
        coordinator.join()


def test_the_end_of_a_per_worker_dataset_is_out_of_range(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    iterator = iter(coordinator.create_per_worker_dataset(lambda: distribute.data.Dataset.range(1)))
    take = distribute.function(lambda it: next(it))
    results = [coordinator.schedule(take, args=(iterator,)) for _ in range(3)]
    with pytest.raises(OutOfRangeError):
        coordinator.join()
    assert any(r._status.value in ("READY", "ABORTED") for r in results)


def test_the_coordinator_cannot_advance_a_per_worker_iterator(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    iterator = iter(coordinator.create_per_worker_dataset(lambda: distribute.data.Dataset.range(3)))
    with pytest.raises(TypeError, match="advances only inside a function scheduled"):
        next(iterator)


def test_a_strategy_dataset_is_built_on_each_worker(cluster):
    strategy = cluster.strategy()
    coordinator = ClusterCoordinator(strategy)
    unbuilt = strategy.experimental_distribute_dataset(distribute.data.Dataset.range(4).batch(2))
    with pytest.raises(ValueError, match="you need to pass this dataset to ClusterCoordinator.create_per_worker"):
        iter(unbuilt)
    iterator = iter(coordinator.create_per_worker_dataset(unbuilt))
    assert coordinator.schedule(distribute.function(lambda it: next(it)), args=(iterator,)).fetch().tolist() == [0, 1]
    from_fn = strategy.distribute_datasets_from_function(lambda ctx: distribute.data.Dataset.range(2))
    iterator = iter(coordinator.create_per_worker_dataset(from_fn))
    assert int(coordinator.schedule(distribute.function(lambda it: next(it)), args=(iterator,)).fetch()) == 0


def test_create_per_worker_dataset_checks_its_argument(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    with pytest.raises(TypeError, match="Expected `dataset_fn`"):
        coordinator.create_per_worker_dataset(3)


def test_remote_value_repr_and_status(cluster):
    coordinator = ClusterCoordinator(cluster.strategy())
    rv = coordinator.schedule(distribute.function(lambda: 1))
    assert isinstance(rv, RemoteValue)
    rv.fetch()
    assert repr(rv) == "<RemoteValue status=READY>"
