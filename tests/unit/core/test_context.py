import pytest
import torch

import distribute
from tests.strategies import named_strategies


@pytest.fixture
def mirrored():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def test_top_level_is_default_mode():
    assert not distribute.has_strategy()
    assert not distribute.in_cross_replica_context()
    rid = distribute.get_replica_context().replica_id_in_sync_group
    assert rid == 0 and type(rid) is int


def test_scope_state_and_enter_returns_strategy(mirrored):
    with mirrored.scope() as entered:
        assert entered is mirrored
        assert (distribute.has_strategy(), distribute.in_cross_replica_context(),
                distribute.get_replica_context()) == (True, True, None)
        assert distribute.get_strategy() is mirrored
    assert not distribute.has_strategy()


def test_replica_and_merge_contexts(mirrored):
    seen = []

    def merge_fn(strategy):
        seen.append(("merge", distribute.get_replica_context(), distribute.in_cross_replica_context(),
                     strategy is mirrored))

    def fn():
        ctx = distribute.get_replica_context()
        seen.append(("replica", ctx is not None, distribute.in_cross_replica_context(),
                     distribute.get_strategy() is mirrored))
        ctx.merge_call(merge_fn)

    mirrored.run(fn)
    assert seen == [("replica", True, False, True)] * 2 + [("merge", None, True, True)]


def test_reentering_same_scope_allowed(mirrored):
    with mirrored.scope():
        with mirrored.scope():
            assert distribute.get_strategy() is mirrored
        assert distribute.get_strategy() is mirrored


def test_mixing_strategies_raises(mirrored):
    other = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with mirrored.scope():
        with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
            with other.scope():
                pass
    assert not distribute.has_strategy()


def test_default_scope_nested_raises(mirrored):
    default = distribute.get_strategy()
    with mirrored.scope():
        with pytest.raises(RuntimeError, match="Must not nest distribute.Strategy scopes."):
            with default.scope():
                pass


def test_default_scope_at_top_level():
    default = distribute.get_strategy()
    with default.scope():
        assert not distribute.has_strategy()
        assert not distribute.in_cross_replica_context()
        assert distribute.get_replica_context().replica_id_in_sync_group == 0


def test_set_strategy_inside_scope_raises(mirrored):
    with mirrored.scope():
        with pytest.raises(RuntimeError, match="Must not be called inside a `distribute.Strategy` scope."):
            distribute.experimental_set_strategy(mirrored)


def test_experimental_set_strategy_switches_and_restores(mirrored):
    other = distribute.OneDeviceStrategy("CPU:0")
    try:
        distribute.experimental_set_strategy(mirrored)
        assert distribute.get_strategy() is mirrored
        assert distribute.in_cross_replica_context()
        distribute.experimental_set_strategy(other)
        assert distribute.get_strategy() is other
    finally:
        distribute.experimental_set_strategy(None)
    assert not distribute.has_strategy()
    assert distribute.get_replica_context().replica_id_in_sync_group == 0


def test_run_inside_run_raises(mirrored):
    with pytest.raises(RuntimeError, match="Method requires being in cross-replica context"):
        mirrored.run(lambda: mirrored.run(lambda: 1))
    assert mirrored.run(lambda: 7) == 7


def test_other_strategy_run_inside_run_raises(mirrored):
    other = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
        mirrored.run(lambda: other.run(lambda: 1))


def test_reduce_in_replica_context_raises(mirrored):
    with pytest.raises(RuntimeError, match="Method requires being in cross-replica context"):
        mirrored.run(lambda: mirrored.reduce("sum", torch.tensor(1.0), axis=None))


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_run_gives_replica_context_of_strategy(make_strategy):
    strategy = make_strategy()

    def fn():
        assert distribute.get_strategy() is strategy
        assert not distribute.in_cross_replica_context()
        return distribute.get_replica_context().num_replicas_in_sync

    out = strategy.run(fn)
    assert strategy.experimental_local_results(out)[0] == strategy.num_replicas_in_sync
