"""The replica function runs exactly once per replica per ``run``, on either executor.

Side effects (appending to a list) record what ran; the first step whose backward goes through
a differentiable collective used to run the function a second time on threads.
"""

import threading

import pytest
import torch

import distribute
from distribute.errors import CollectiveError
from distribute.strategies.multi_replica import MultiReplicaExtended
from tests.strategies import local_replica_ids, named_strategies

EXECUTORS = {"greenlets": False, "threads": True}


def rid():
    return int(distribute.get_replica_context().replica_id_in_sync_group)


def _strategy(make_strategy, executor):
    s = make_strategy()
    if isinstance(s.extended, MultiReplicaExtended):
        s.extended.experimental_replica_threads = EXECUTORS[executor]
    return s


def _replica_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("distribute-replica") and t.is_alive()]


def _backward(loss, w):
    loss.backward()
    return w.grad


def _autograd_grad(loss, w):
    return torch.autograd.grad(loss, w)[0]


def _sync_first(log):
    distribute.get_replica_context().merge_call(lambda strategy: log.append("merge"))


BODIES = {
    "all_reduce_backward": ("all_reduce", _backward, False),
    "all_gather_backward": ("all_gather", _backward, False),
    "all_reduce_autograd_grad": ("all_reduce", _autograd_grad, False),
    "all_reduce_after_merge_call": ("all_reduce", _backward, True),
}


def _differentiable_step(log, collective, differentiate, merge_first):
    """A replica function with side effects before and after a differentiable collective."""
    def fn():
        ctx = distribute.get_replica_context()
        log.append(("before", rid()))
        if merge_first:
            _sync_first(log)
        w = torch.ones(2, requires_grad=True)
        if collective == "all_reduce":
            y = ctx.all_reduce("sum", w * (rid() + 1))
        else:
            y = ctx.all_gather(w * (rid() + 1), axis=0).narrow(0, 0, 2)
        grad = differentiate(y.sum(), w)
        log.append(("after", rid()))
        return grad
    return fn


def _expected_grads(collective, n, local):
    """The gradient of each local replica (ids ``local``) of ``n`` replicas in sync."""
    if collective == "all_reduce":  # the summed upstream ones, times this replica's factor
        return [[float(n * (r + 1))] * 2 for r in local]
    return [[float(n)] * 2 if r == 0 else [0.0, 0.0] for r in local]  # only replica 0's slice is used


@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", list(EXECUTORS))
@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_differentiable_collective_runs_the_function_once(make_strategy, body, executor):
    collective, differentiate, merge_first = BODIES[body]
    s = _strategy(make_strategy, executor)
    n, local = s.num_replicas_in_sync, local_replica_ids(s)
    log = []
    fn = _differentiable_step(log, collective, differentiate, merge_first)
    for step in range(2):  # the first step with a differentiable collective, then a later one
        log.clear()
        grads = s.experimental_local_results(s.run(fn))
        before = [("before", r) for r in local] + (["merge"] if merge_first else [])
        assert log == before + [("after", r) for r in local], f"step {step}"
        assert [g.tolist() for g in grads] == _expected_grads(collective, n, local), f"step {step}"
    assert _replica_threads() == []
    if len(local) > 1:  # later steps start on threads, where each replica has its own autograd engine
        assert s.extended.experimental_replica_threads


@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", list(EXECUTORS))
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_side_effects_around_merge_call_happen_once_in_tf_order(make_strategy, executor):
    s = _strategy(make_strategy, executor)
    n, local = s.num_replicas_in_sync, local_replica_ids(s)
    log = []

    def fn(x):
        log.append(("a", rid()))
        total = distribute.get_replica_context().merge_call(
            lambda strategy, v: log.append("merge") or strategy.reduce("SUM", v, axis=None), args=(x * (rid() + 1),))
        log.append(("b", rid()))
        return total

    out = s.experimental_local_results(s.run(fn, args=(torch.tensor(1.0),)))
    assert log == [("a", r) for r in local] + ["merge"] + [("b", r) for r in local]
    assert {float(v) for v in out} == {n * (n + 1) / 2}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_strategy", named_strategies("mirrored_2", "central_storage_2"))
def test_ordinary_training_steps_stay_on_greenlets(make_strategy):
    """A step whose backward has no collective (optimizer steps merge_call) never leaves the caller's thread."""
    s = make_strategy()
    with s.scope():
        model = torch.nn.Linear(3, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=0.1)
    threads = []

    def step(x):
        threads.append(threading.current_thread().name)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    for _ in range(3):
        s.run(step, args=(torch.ones(2, 3),))
    assert threads == ["MainThread"] * 6
    assert not s.extended.experimental_replica_threads


@pytest.mark.timeout(60)
def test_first_differentiable_step_moves_only_the_backward_off_the_thread():
    """Greenlet replicas keep running in the caller's thread; their backward runs on a helper."""
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    body, engine = [], []

    def fn():
        body.append(threading.current_thread().name)
        w = torch.ones(2, requires_grad=True)
        w.register_hook(lambda g: engine.append(threading.current_thread().name))
        distribute.get_replica_context().all_reduce("sum", w).sum().backward()
        body.append(threading.current_thread().name)

    s.run(fn)
    assert body == ["MainThread"] * 4
    assert engine == ["distribute-replica-0-backward", "distribute-replica-1-backward"]
    s.run(fn)  # now on threads from the start
    assert body[4:] == ["distribute-replica-0", "distribute-replica-1"] * 2


@pytest.mark.timeout(60)
def test_collective_made_differentiable_inside_a_no_grad_run():
    """Grad mode switched on inside the replica function counts, though the caller's is off."""
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    log = []

    def fn():
        log.append(rid())
        with torch.enable_grad():
            w = torch.ones(2, requires_grad=True)
            y = distribute.get_replica_context().all_gather(w * (rid() + 1), axis=0)
            (y * torch.arange(4.0)).sum().backward()
        return w.grad

    with torch.no_grad():
        grads = s.run(fn).values
    assert log == [0, 1]
    assert [g.tolist() for g in grads] == [[0.0, 2.0], [8.0, 12.0]]  # slices of 2 * [0, 1, 2, 3]


def _wait_in_backward_then(replica_1_does):
    """Replica 0 waits inside its backward for replica 1, which does something else."""
    unwound = []

    def fn():
        w = torch.ones(2, requires_grad=True)
        y = distribute.get_replica_context().all_reduce("sum", w)
        try:
            if rid() == 1:
                replica_1_does()
            y.sum().backward()
        finally:
            unwound.append(rid())
    return fn, unwound


def _raise():
    raise KeyError("replica 1 failed")


def _other_collective():
    distribute.get_replica_context().all_reduce("sum", torch.ones(2))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", list(EXECUTORS))
@pytest.mark.parametrize("replica_1_does,error,match", [
    (_raise, KeyError, "replica 1 failed"),
    (_other_collective, CollectiveError,
     "replica 0 called gradient of all_reduce\\(SUM\\) but replica 1 called all_reduce\\(SUM\\)"),
], ids=["exception", "different_collective"])
def test_failure_while_a_replica_waits_in_backward_unwinds_every_replica(executor, replica_1_does, error, match):
    s = _strategy(lambda: distribute.MirroredStrategy(["CPU:0", "CPU:1"]), executor)
    fn, unwound = _wait_in_backward_then(replica_1_does)
    with pytest.raises(error, match=match):
        s.run(fn)
    assert sorted(unwound) == [0, 1]
    assert _replica_threads() == []
    assert torch._C._len_torch_function_stack() == 0
    out = s.run(lambda: distribute.get_replica_context().all_reduce("sum", torch.ones(1)))
    assert [float(v) for v in out.values] == [2.0, 2.0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", list(EXECUTORS))
def test_error_inside_a_relayed_backward_reaches_the_caller(executor):
    """A hook that raises after the gradient sync: replica 1, not yet resumed, is unwound too."""
    s = _strategy(lambda: distribute.MirroredStrategy(["CPU:0", "CPU:1"]), executor)
    unwound = []

    def fail(grad):
        raise ValueError("hook failed")

    def fn():
        w = torch.ones(2, requires_grad=True)
        if rid() == 0:
            w.register_hook(fail)
        try:
            distribute.get_replica_context().all_reduce("sum", w * 2).sum().backward()
            distribute.get_replica_context().merge_call(lambda strategy: None)
        finally:
            unwound.append(rid())

    with pytest.raises(ValueError, match="hook failed"):
        s.run(fn)
    assert sorted(unwound) == [0, 1]
    assert _replica_threads() == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("executor", list(EXECUTORS))
def test_gradient_of_a_collective_in_merge_fn_raises(executor):
    s = _strategy(lambda: distribute.MirroredStrategy(["CPU:0", "CPU:1"]), executor)

    def fn():
        y = distribute.get_replica_context().all_reduce("sum", torch.ones(2, requires_grad=True))
        distribute.get_replica_context().merge_call(lambda strategy, y: y.values[0].sum().backward(), args=(y,))

    with pytest.raises(RuntimeError, match="gradient of a collective was computed outside the replica function"):
        s.run(fn)
    assert _replica_threads() == []
