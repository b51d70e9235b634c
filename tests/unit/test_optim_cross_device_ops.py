"""The strategy's CrossDeviceOps reduces the optimizer's gradients (and replica all-reduces)."""

from typing import List

import pytest
import torch

import distribute
from distribute.collectives.cross_device_ops import (
    HierarchicalCopyAllReduce,
    NcclAllReduce,
    ReductionToOneDevice,
)


class CountingOps(ReductionToOneDevice):
    """Sums as its parent does, and records each call's op and number of tensors."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.calls: List[tuple] = []
        self.scale = scale

    def reduce_implementation(self, op, tensors, destinations):
        self.calls.append((op, len(tensors)))
        return [t * self.scale for t in super().reduce_implementation(op, tensors, destinations)]


def _model_and_step(strategy, opt_lr=0.5):
    with strategy.scope():
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=opt_lr)
    x = torch.arange(12.0).reshape(4, 3) / 10
    n = strategy.num_replicas_in_sync
    per = strategy.experimental_distribute_values_from_function(
        lambda ctx: torch.tensor_split(x, n)[ctx.replica_id_in_sync_group])

    def step(batch):
        opt.zero_grad()
        model(batch).sum().backward()
        opt.step()
    return model, opt, per, step, x


def _reference_weight(x, lr=0.5, scale=1.0):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    model(x).sum().backward()
    with torch.no_grad():
        return model.weight - lr * scale * model.weight.grad


@pytest.mark.parametrize("replicas", [2, 3])
def test_user_cross_device_ops_is_called_for_gradients(replicas):
    ops = CountingOps()
    strategy = distribute.MirroredStrategy([f"CPU:{i}" for i in range(replicas)], cross_device_ops=ops)
    model, _, per, step, x = _model_and_step(strategy)
    strategy.run(step, args=(per,))
    grad_calls = [c for c in ops.calls if c == (distribute.ReduceOp.SUM, replicas)]
    assert len(grad_calls) == 2  # the weight and the bias, each with one gradient per replica
    torch.testing.assert_close(model.weight.detach(), _reference_weight(x))


def test_what_the_user_cross_device_ops_returns_is_the_gradient():
    ops = CountingOps(scale=2.0)  # a deliberately different reduction: twice the sum
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops)
    model, _, per, step, x = _model_and_step(strategy)
    strategy.run(step, args=(per,))
    torch.testing.assert_close(model.weight.detach(), _reference_weight(x, scale=2.0))
    for component in model.weight._components():  # every replica holds the one update
        torch.testing.assert_close(component.detach(), model.weight.detach())


def test_accumulation_fn_is_used_for_gradients():
    seen = []

    def accumulate(tensors):
        seen.append(len(tensors))
        return sum(tensors[1:], tensors[0].clone())

    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ReductionToOneDevice(
        accumulation_fn=accumulate))
    model, _, per, step, x = _model_and_step(strategy)
    strategy.run(step, args=(per,))
    assert seen == [2, 2]
    torch.testing.assert_close(model.weight.detach(), _reference_weight(x))


@pytest.mark.parametrize("ops", [ReductionToOneDevice, HierarchicalCopyAllReduce, NcclAllReduce],
                         ids=["one_device", "hierarchical", "nccl"])
def test_every_built_in_ops_trains_alike(ops):
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops())
    model, _, per, step, x = _model_and_step(strategy)
    strategy.run(step, args=(per,))
    torch.testing.assert_close(model.weight.detach(), _reference_weight(x))


def test_gradients_accumulate_once_per_replica_with_user_ops():
    ops = CountingOps()
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops)
    model, opt, per, _, x = _model_and_step(strategy, opt_lr=0.0)

    def backward_only(batch):
        model(batch).sum().backward()
        opt.step()  # lr 0: only the gradients move

    strategy.run(backward_only, args=(per,))
    strategy.run(backward_only, args=(per,))
    torch.manual_seed(0)
    reference = torch.nn.Linear(3, 1)
    reference(x).sum().backward()
    torch.testing.assert_close(model.weight.grad, 2 * reference.weight.grad)
    assert all(c.grad is None for c in model.weight._others)


def test_replica_all_reduce_goes_through_the_cross_device_ops():
    ops = CountingOps(scale=10.0)
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops)
    out = strategy.run(lambda: distribute.get_replica_context().all_reduce(
        "sum", torch.tensor(float(distribute.get_replica_context().replica_id_in_sync_group) + 1)))
    assert [float(v) for v in strategy.experimental_local_results(out)] == [30.0, 30.0]
    assert ops.calls == [(distribute.ReduceOp.SUM, 2)]


def test_replica_all_reduce_mean_passes_mean_to_the_ops():
    ops = CountingOps()
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops)
    out = strategy.run(lambda: distribute.get_replica_context().all_reduce(
        "mean", torch.tensor(float(distribute.get_replica_context().replica_id_in_sync_group))))
    assert [float(v) for v in strategy.experimental_local_results(out)] == [0.5, 0.5]
    assert ops.calls == [(distribute.ReduceOp.MEAN, 2)]


def test_cross_device_ops_of_the_wrong_type_is_refused():
    with pytest.raises(TypeError, match="cross_device_ops must be a distribute.CrossDeviceOps"):
        distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=lambda op, ts, ds: ts)


def test_a_step_outside_run_sums_the_replicas_gradients_with_the_variables_ops():
    ops = CountingOps()
    strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"], cross_device_ops=ops)
    model, opt, per, _, x = _model_and_step(strategy)
    strategy.run(lambda batch: model(batch).sum().backward(), args=(per,))
    assert ops.calls == []
    opt.step()  # cross-replica context, outside the scope: the variables' strategy still sums
    assert ops.calls == [(distribute.ReduceOp.SUM, 2)] * 2
    torch.testing.assert_close(model.weight.detach(), _reference_weight(x))
