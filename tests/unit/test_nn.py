"""distribute.nn: compute_average_loss and scale_regularization_loss (tf.nn's behaviour)."""

import numpy as np
import pytest
import torch

import distribute
from distribute.errors import InvalidArgumentError
from distribute.nn import compute_average_loss, scale_regularization_loss
from tests.strategies import local_replica_ids, named_strategies

LOSS = torch.tensor([1.0, 3.0])
MATRIX = torch.tensor([[1.0, 2.0], [3.0, 4.0]])


def run_per_replica(s, fn):
    """The local results of ``s.run(fn)`` as floats, one per replica."""
    return [float(v) for v in s.experimental_local_results(s.run(fn))]


# -- compute_average_loss -------------------------------------------------------------------
@pytest.mark.parametrize("loss,kwargs,expected", [
    (LOSS, dict(global_batch_size=4), 1.0),
    (LOSS, dict(), 2.0),                                  # batch size 2 on one replica
    (MATRIX, dict(global_batch_size=4), 2.5),             # every element is summed
    (MATRIX, dict(), 5.0),
    ([1.0, 3.0], dict(global_batch_size=4), 1.0),         # lists are converted
    (LOSS, dict(global_batch_size=torch.tensor(4)), 1.0),
    (LOSS, dict(global_batch_size=np.int64(4)), 1.0),
    (LOSS, dict(global_batch_size=0), 0.0),               # no examples anywhere: 0, not nan
    (torch.zeros(0), dict(global_batch_size=4), 0.0),     # this replica has no examples
    (torch.zeros(0), dict(), 0.0),
    (torch.zeros(0, 3), dict(), 0.0),
])
def test_compute_average_loss_values(loss, kwargs, expected):
    out = compute_average_loss(loss, **kwargs)
    assert out.dim() == 0
    assert float(out) == expected


@pytest.mark.parametrize("loss,weight,expected", [
    (LOSS, 2.0, 2.0),                                     # scalar weight
    (LOSS, torch.tensor(2.0), 2.0),
    (LOSS, [1.0, 0.0], 0.25),                             # one weight per example
    (LOSS, [1, 0], 0.25),                                 # integer weights are cast
    (LOSS, [[1.0], [0.0]], 0.25),                         # (batch, 1) weights for a rank-1 loss
    (LOSS, [2.0], 2.0),                                   # broadcast
    (MATRIX, [1.0, 0.0], 0.75),                           # per example on a rank-2 loss: row 0 only
    (MATRIX, [1.0, 2.0], 4.25),
    (MATRIX, [[1.0, 0.0], [0.0, 1.0]], 1.25),             # elementwise
    (MATRIX, [[1.0], [0.0]], 0.75),
    (MATRIX, [[1.0, 2.0]], 4.0),                          # broadcast over examples
    (torch.arange(8.0).reshape(2, 2, 2), [1.0, 0.0], 3.0),  # rank 3, weights broadcast on the last axis
])
def test_compute_average_loss_sample_weight(loss, weight, expected):
    assert float(compute_average_loss(loss, global_batch_size=4, sample_weight=weight)) == expected


def test_compute_average_loss_keeps_dtype_and_gradient():
    loss = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
    out = compute_average_loss(loss, global_batch_size=4, sample_weight=[1, 2])
    assert out.dtype == torch.float64
    out.backward()
    assert loss.grad.tolist() == [0.25, 0.5]
    half = compute_average_loss(torch.tensor([1.0, 3.0], dtype=torch.float16), global_batch_size=2)
    assert half.dtype == torch.float16 and float(half) == 2.0
    assert float(compute_average_loss(torch.tensor([1, 3]), global_batch_size=4)) == 1.0


@pytest.mark.parametrize("loss", [torch.tensor(2.0), 2.0])
@pytest.mark.parametrize("gbs", [None, 4])
def test_scalar_loss_raises(loss, gbs):
    with pytest.raises(ValueError, match="Invalid value passed for `per_example_loss`. Expected a tensor with at "
                                         "least rank 1. Received per_example_loss=2.0 with rank 0"):
        compute_average_loss(loss, global_batch_size=gbs)


@pytest.mark.parametrize("gbs", [4.0, "4", True, torch.tensor(4.0), torch.tensor([4]), [4]])
def test_non_integer_global_batch_size_is_a_type_error(gbs):
    with pytest.raises(TypeError, match="global_batch_size must be an integer"):
        compute_average_loss(LOSS, global_batch_size=gbs)


@pytest.mark.parametrize("gbs", [-1, torch.tensor(-4)])
def test_negative_global_batch_size_raises(gbs):
    with pytest.raises(InvalidArgumentError, match="global_batch_size must be non-negative"):
        compute_average_loss(LOSS, global_batch_size=gbs)
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        compute_average_loss(LOSS, global_batch_size=gbs)


@pytest.mark.parametrize("loss,weight", [(LOSS, [1.0, 0.0, 1.0]), (MATRIX, [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]),
                                         (LOSS, [[1.0, 2.0], [1.0, 1.0]])])
def test_sample_weight_that_does_not_fit_raises(loss, weight):
    with pytest.raises(ValueError, match="cannot be broadcast against per_example_loss of shape"):
        compute_average_loss(loss, global_batch_size=4, sample_weight=weight)


@pytest.mark.parametrize("bad", ["abc", object()])
def test_unconvertible_loss_is_a_type_error(bad):
    with pytest.raises(TypeError, match="Expected `per_example_loss` to be a tensor"):
        compute_average_loss(bad, global_batch_size=2)
    with pytest.raises(TypeError, match="Expected `sample_weight` to be a tensor"):
        compute_average_loss(LOSS, global_batch_size=2, sample_weight=bad)


@pytest.mark.parametrize("n,expected", [(2, 1.0), (3, 2.0 / 3.0)])
def test_default_global_batch_size_counts_every_replica(n, expected):
    s = distribute.MirroredStrategy([f"CPU:{i}" for i in range(n)])
    values = run_per_replica(s, lambda: compute_average_loss(LOSS))
    assert values == pytest.approx([expected] * n)


def test_explicit_global_batch_size_in_replicas():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    assert run_per_replica(s, lambda: compute_average_loss(LOSS, global_batch_size=8)) == [0.5, 0.5]


def test_uneven_replica_batches_add_up_to_the_global_mean():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    losses = torch.arange(7.0)
    batches = s.experimental_distribute_values_from_function(
        lambda ctx: torch.tensor_split(losses, 3)[ctx.replica_id_in_sync_group])
    per_replica = s.run(lambda x: compute_average_loss(x, global_batch_size=7), args=(batches,))
    assert float(s.reduce("sum", per_replica, axis=None)) == pytest.approx(float(losses.mean()))


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_runs_in_replica_context_of_every_strategy(make_strategy):
    s = make_strategy()
    n = s.num_replicas_in_sync  # the global batch and the scaling count every worker's replicas
    local = len(local_replica_ids(s))  # the results are this process's replicas'
    values = run_per_replica(s, lambda: compute_average_loss(LOSS))
    assert values == pytest.approx([4.0 / (2 * n)] * local)
    values = run_per_replica(s, lambda: scale_regularization_loss(torch.tensor(4.0)))
    assert values == pytest.approx([4.0 / n] * local)


@pytest.mark.parametrize("make_strategy", named_strategies("one_device", "mirrored_2", "central_storage_2"))
def test_cross_replica_context_raises(make_strategy):
    s = make_strategy()
    with s.scope():
        with pytest.raises(RuntimeError, match="You are calling `compute_average_loss` in cross replica context, "
                                               "while it was expected to be called in replica context."):
            compute_average_loss(LOSS)
        with pytest.raises(RuntimeError, match="You are calling `scale_regularization_loss` in cross replica"):
            scale_regularization_loss(torch.tensor(1.0))
        # with an explicit global batch size nothing depends on the context
        assert float(compute_average_loss(LOSS, global_batch_size=4)) == 1.0
    inside_merge = s.run(lambda: distribute.get_replica_context().merge_call(
        lambda strategy: _raises(lambda: compute_average_loss(LOSS))))
    assert inside_merge is True


def _raises(fn):
    try:
        fn()
    except RuntimeError:
        return True
    return False


def test_default_strategy_scope_is_one_replica():
    with distribute.get_strategy().scope():
        assert float(compute_average_loss(LOSS)) == 2.0
        assert float(scale_regularization_loss(torch.tensor(4.0))) == 4.0


# -- scale_regularization_loss ----------------------------------------------------------------
@pytest.mark.parametrize("value,expected", [
    (torch.tensor(4.0), 4.0), (4.0, 4.0), (torch.ones(2, 2), 4.0),
    ([torch.tensor(4.0), torch.tensor(2.0)], 6.0), ((torch.ones(3), torch.tensor(1.0)), 4.0),
])
def test_scale_regularization_loss_sums(value, expected):
    out = scale_regularization_loss(value)
    assert out.dim() == 0 and float(out) == expected


@pytest.mark.parametrize("n", [2, 3])
def test_scale_regularization_loss_divides_by_replicas(n):
    s = distribute.MirroredStrategy([f"CPU:{i}" for i in range(n)])
    values = run_per_replica(s, lambda: scale_regularization_loss([torch.tensor(4.0), torch.tensor(2.0)]))
    assert values == pytest.approx([6.0 / n] * n)


def test_scale_regularization_loss_is_differentiable():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        w = distribute.Variable(torch.tensor([1.0, 2.0]))
    opt = distribute.optim.SGD([w], lr=1.0)

    def step():
        opt.zero_grad()
        scale_regularization_loss((w ** 2).sum()).backward()
        opt.step()

    s.run(step)
    # d/dw sum(w^2) / 2 per replica, summed over 2 replicas: 2w; one SGD step of lr 1 gives -w
    assert [c.tolist() for c in w.values] == [[-1.0, -2.0], [-1.0, -2.0]]


@pytest.mark.parametrize("bad,error", [([], ValueError), ("abc", TypeError), (object(), TypeError)])
def test_scale_regularization_loss_bad_input(bad, error):
    with pytest.raises(error):
        scale_regularization_loss(bad)
