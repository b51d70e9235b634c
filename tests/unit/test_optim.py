"""distribute.optim: synchronous training equals single-device training on the same global batches."""

import copy

import pytest
import torch

import distribute
from distribute.experimental import CentralStorageStrategy
from distribute.nn import compute_average_loss
from tests.strategies import FACTORIES

GLOBAL_BATCH = 8
FEATURES = 5


def _mirrored_1():
    return distribute.MirroredStrategy(["CPU:0"])


def _mirrored_3():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])


def _central_storage_3():
    return CentralStorageStrategy(["CPU:0", "CPU:1", "CPU:2"])


STRATEGIES = dict(FACTORIES, mirrored_1=_mirrored_1, mirrored_3=_mirrored_3, central_storage_3=_central_storage_3)
OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "sgd_nesterov_wd": (torch.optim.SGD, dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.01)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
    "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
}


def make_model(seed=1):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def make_batches(sizes=(GLOBAL_BATCH,) * 4, seed=0):
    """Global batches (x, y); sizes may end with a short batch."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, FEATURES, generator=gen), torch.randint(0, 3, (n,), generator=gen)) for n in sizes]


def per_example_loss(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y, reduction="none")


def distribute_batch(s, tensor):
    """Replica ``i`` gets the ``i``-th of ``num_replicas_in_sync`` contiguous slices (possibly empty)."""
    n = s.num_replicas_in_sync
    return s.experimental_distribute_values_from_function(
        lambda ctx: torch.tensor_split(tensor, n)[ctx.replica_id_in_sync_group])


def train_reference(batches, optimizer, kwargs):
    model = make_model()
    opt = optimizer(model.parameters(), **kwargs)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = per_example_loss(model, x, y).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return model, losses


def train_distributed(s, batches, optimizer, kwargs):
    with s.scope():
        model = make_model()
        opt = distribute.optim.Optimizer(optimizer(model.parameters(), **kwargs))

    def step(x, y, global_batch_size):
        opt.zero_grad()
        loss = compute_average_loss(per_example_loss(model, x, y), global_batch_size=global_batch_size)
        loss.backward()
        opt.step()
        return loss

    losses = []
    for x, y in batches:
        out = s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y), len(x)))
        losses.append(float(s.reduce("sum", out, axis=None)) if s.num_replicas_in_sync > 1 else float(out))
    return model, losses


def copies(param):
    """Every copy of a parameter: the components of a distributed variable, or the tensor itself."""
    return param.values if isinstance(param, distribute.DistributedVariable) else (param,)


def components(param):
    """The values of every copy of a parameter, as plain tensors."""
    return [torch.Tensor(c.detach()).clone() for c in copies(param)]


def assert_same_parameters(model, reference):
    for param, expected in zip(model.parameters(), reference.parameters()):
        for component in components(param):
            torch.testing.assert_close(component, expected.detach())


# -- training equivalence -------------------------------------------------------------------
@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("strategy_name", STRATEGIES)
def test_training_matches_single_device(strategy_name, opt_name):
    optimizer, kwargs = OPTIMIZERS[opt_name]
    batches = make_batches()
    reference, ref_losses = train_reference(batches, optimizer, kwargs)
    model, losses = train_distributed(STRATEGIES[strategy_name](), batches, optimizer, kwargs)
    assert_same_parameters(model, reference)
    assert losses == pytest.approx(ref_losses, rel=1e-5)


@pytest.mark.parametrize("strategy_name", ["mirrored_2", "mirrored_3", "central_storage_3"])
def test_short_last_batch_with_empty_replicas(strategy_name):
    """A last global batch of 2 over 3 replicas leaves one replica with no examples."""
    batches = make_batches(sizes=(GLOBAL_BATCH, 7, 2, 1))
    reference, _ = train_reference(batches, *OPTIMIZERS["adam"])
    model, _ = train_distributed(STRATEGIES[strategy_name](), batches, *OPTIMIZERS["adam"])
    assert_same_parameters(model, reference)


@pytest.mark.parametrize("strategy_name", ["mirrored_2", "mirrored_3"])
def test_components_stay_identical(strategy_name):
    s = STRATEGIES[strategy_name]()
    model, _ = train_distributed(s, make_batches(), *OPTIMIZERS["adamw"])
    for param in model.parameters():
        first, *others = components(param)
        assert len(others) == s.num_replicas_in_sync - 1
        assert all(torch.equal(first, other) for other in others)


def test_factories_wrap_torch_optimizers():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    batches = make_batches()
    for factory, optimizer, kwargs in [(distribute.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                                       (distribute.optim.Adam, torch.optim.Adam, dict(lr=0.01)),
                                       (distribute.optim.AdamW, torch.optim.AdamW, dict(lr=0.01))]:
        opt = factory(make_model().parameters(), **kwargs)
        assert isinstance(opt, distribute.optim.Optimizer) and type(opt.optimizer) is optimizer
        assert factory.__name__ == optimizer.__name__
        wrapped = lambda params, optimizer=optimizer, **kw: factory(params, **kw).optimizer  # noqa: E731
        reference, _ = train_reference(batches, optimizer, kwargs)
        model, _ = train_distributed(s, batches, wrapped, kwargs)
        assert_same_parameters(model, reference)


@pytest.mark.parametrize("strategy_name", ["mirrored_2", "mirrored_3", "central_storage_2"])
def test_training_through_a_differentiable_all_reduce(strategy_name):
    """A loss built from an all_reduce runs replicas on threads; the step still equals one device's."""
    s = STRATEGIES[strategy_name]()
    batches = make_batches(sizes=(6, 6, 6))
    reference, _ = train_reference(batches, *OPTIMIZERS["sgd_momentum"])
    with s.scope():
        model = make_model()
        opt = distribute.optim.SGD(model.parameters(), **OPTIMIZERS["sgd_momentum"][1])

    def step(x, y):
        opt.zero_grad()
        ctx = distribute.get_replica_context()
        total = ctx.all_reduce("sum", per_example_loss(model, x, y).sum())  # every replica holds the global sum
        (total / (6 * ctx.num_replicas_in_sync)).backward()  # each replica owns 1/n of the global mean
        opt.step()

    for x, y in batches:
        s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y)))
    assert s.extended.experimental_replica_threads
    assert_same_parameters(model, reference)


# -- gradient accumulation --------------------------------------------------------------------
@pytest.mark.parametrize("strategy_name", ["mirrored_2", "mirrored_3", "central_storage_2"])
def test_steps_without_zero_grad_accumulate_like_torch(strategy_name):
    """Gradients left over from the previous step are counted once, as a plain optimizer counts them."""
    s = STRATEGIES[strategy_name]()
    batches = make_batches(sizes=(GLOBAL_BATCH,) * 3)
    reference = make_model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in batches:
        per_example_loss(reference, x, y).mean().backward()
        ref_opt.step()
    with s.scope():
        model = make_model()
        opt = distribute.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        compute_average_loss(per_example_loss(model, x, y), global_batch_size=GLOBAL_BATCH).backward()
        opt.step()

    for x, y in batches:
        s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y)))
    assert_same_parameters(model, reference)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_micro_batches_accumulate_before_one_step(set_to_none):
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    (x, y), = make_batches(sizes=(GLOBAL_BATCH,))
    reference, _ = train_reference([(x, y)], *OPTIMIZERS["sgd_momentum"])
    with s.scope():
        model = make_model()
        opt = distribute.optim.SGD(model.parameters(), **OPTIMIZERS["sgd_momentum"][1])

    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        for xs, ys in zip(torch.tensor_split(x, 2), torch.tensor_split(y, 2)):
            compute_average_loss(per_example_loss(model, xs, ys), global_batch_size=GLOBAL_BATCH).backward()
        opt.step()

    s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y)))
    assert_same_parameters(model, reference)


def test_zero_grad_in_a_replica_clears_only_its_component():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        w = distribute.Variable(torch.ones(2))
    opt = distribute.optim.SGD([w], lr=0.1)
    seen = []

    def fn():
        (w * 2).sum().backward()
        if distribute.get_replica_context().replica_id_in_sync_group == 1:
            opt.zero_grad(set_to_none=False)
        seen.append(w.grad.tolist())  # in a replica, w.grad is this replica's component's

    s.run(fn)
    assert seen == [[2.0, 2.0], [0.0, 0.0]]
    assert [c.grad.tolist() for c in w.values] == [[2.0, 2.0], [0.0, 0.0]]
    opt.zero_grad()
    assert [c.grad for c in w.values] == [None, None]


# -- outside a replica context --------------------------------------------------------------
def _plain_steps(model, opt, batches, closure=False):
    """Plain training steps (no strategy.run); with ``closure`` the loss comes back from ``step``."""
    losses = []
    for x, y in batches:
        def compute():
            opt.zero_grad()
            loss = per_example_loss(model, x, y).mean()
            loss.backward()
            return loss
        if closure:
            losses.append(float(opt.step(compute)))
        else:
            losses.append(float(compute()))
            opt.step()
    return losses


@pytest.mark.parametrize("closure", [False, True])
def test_default_context_is_the_wrapped_optimizer(closure):
    batches = make_batches()
    reference = make_model()
    ref_losses = _plain_steps(reference, torch.optim.Adam(reference.parameters(), lr=0.01), batches, closure)
    model = make_model()
    opt = distribute.optim.Adam(model.parameters(), lr=0.01)
    assert _plain_steps(model, opt, batches, closure) == ref_losses
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.equal(p, q)
    assert opt.param_groups is opt.optimizer.param_groups and opt.state is opt.optimizer.state


@pytest.mark.parametrize("strategy_name", ["mirrored_2", "central_storage_2", "one_device"])
def test_cross_replica_context_is_a_plain_step_that_reaches_every_component(strategy_name):
    s = STRATEGIES[strategy_name]()
    batches = make_batches()
    reference = make_model()
    ref_losses = _plain_steps(reference, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), batches)
    with s.scope():
        model = make_model()
        opt = distribute.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = _plain_steps(model, opt, batches)
    assert losses == pytest.approx(ref_losses)
    assert_same_parameters(model, reference)
    opt.zero_grad()
    assert all(c.grad is None for p in model.parameters() for c in copies(p))


def test_merge_fn_step_is_cross_replica():
    """Inside merge_call's function the wrapper does a plain step (it is a cross-replica context)."""
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        w = distribute.Variable(torch.ones(2))
    opt = distribute.optim.SGD([w], lr=1.0)

    def merge_fn(strategy):
        opt.zero_grad()
        w.sum().backward()  # cross-replica: reads the primary
        opt.step()

    s.run(lambda: distribute.get_replica_context().merge_call(merge_fn))
    assert [c.tolist() for c in w.values] == [[0.0, 0.0], [0.0, 0.0]]


def test_state_dict_round_trip_resumes_training():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    batches = make_batches(sizes=(GLOBAL_BATCH,) * 4)
    reference, _ = train_reference(batches, *OPTIMIZERS["adam"])
    with s.scope():
        model = make_model()
        opt = distribute.optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        compute_average_loss(per_example_loss(model, x, y), global_batch_size=GLOBAL_BATCH).backward()
        opt.step()

    for x, y in batches[:2]:
        s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y)))
    saved = copy.deepcopy(opt.state_dict())
    opt = distribute.optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.01
    for x, y in batches[2:]:
        s.run(step, args=(distribute_batch(s, x), distribute_batch(s, y)))
    assert_same_parameters(model, reference)


def test_add_param_group_trains_the_new_parameters():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        a = distribute.Variable(torch.ones(2))
        b = distribute.Variable(torch.ones(3))
    opt = distribute.optim.SGD([a], lr=1.0)
    opt.add_param_group({"params": [b], "lr": 0.5})

    def step():
        opt.zero_grad()
        (a.sum() + b.sum()).backward()
        opt.step()

    s.run(step)  # each replica contributes a gradient of ones
    assert [c.tolist() for c in a.values] == [[-1.0, -1.0]] * 2
    assert [c.tolist() for c in b.values] == [[0.0, 0.0, 0.0]] * 2


# -- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [None, torch.nn.Linear(2, 1), [torch.zeros(1)], "SGD"])
def test_optimizer_must_wrap_a_torch_optimizer(bad):
    with pytest.raises(TypeError, match="Expected a torch.optim.Optimizer to wrap"):
        distribute.optim.Optimizer(bad)


@pytest.mark.parametrize("in_run", [False, True])
def test_step_closure_must_be_callable(in_run):
    model = torch.nn.Linear(2, 1)
    opt = distribute.optim.SGD(model.parameters(), lr=0.1)
    call = (lambda: distribute.OneDeviceStrategy("CPU:0").run(opt.step, args=(3,))) if in_run else (lambda: opt.step(3))
    with pytest.raises(TypeError, match="closure must be callable or None, received 3"):
        call()


def test_factory_arguments_are_checked_by_torch():
    params = list(torch.nn.Linear(2, 1).parameters())
    with pytest.raises(ValueError, match="Invalid learning rate"):
        distribute.optim.SGD(params, lr=-1.0)
    with pytest.raises(ValueError, match="Invalid beta parameter"):
        distribute.optim.Adam(params, betas=(1.5, 0.9))


def test_repr_names_the_wrapped_optimizer():
    opt = distribute.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    assert repr(opt).startswith("distribute.optim.Optimizer(SGD (")
