"""The input methods validate in _core and build through the strategies' input hooks."""

import pytest
import torch

import distribute
from distribute._core.extended import StrategyExtended
from distribute.data import Dataset
from distribute.strategies.input_hooks import InputExtended
from tests.strategies import local_pieces, named_strategies


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_every_strategy_implements_the_input_hooks(make_strategy):
    assert isinstance(make_strategy().extended, InputExtended)


@pytest.mark.parametrize("hook", ["_experimental_distribute_dataset", "_distribute_datasets_from_function",
                                  "_make_dataset_iterator", "_make_input_fn_iterator", "_run", "_reduce_to"])
def test_an_extended_without_its_hooks_cannot_be_made(hook):
    class NoHooks(StrategyExtended):
        pass

    with pytest.raises(TypeError, match=f"abstract .*{hook}"):
        NoHooks(distribute.get_strategy())


@pytest.mark.parametrize("make_strategy", named_strategies())
@pytest.mark.parametrize("method", ["distribute_datasets_from_function", "make_input_fn_iterator"])
def test_input_function_must_be_callable(make_strategy, method):
    what = "dataset_fn" if method == "distribute_datasets_from_function" else "input_fn"
    with pytest.raises(TypeError, match=f"Expected `{what}` to be a callable taking an InputContext"):
        getattr(make_strategy(), method)(Dataset.range(4))


@pytest.mark.parametrize("make_strategy", named_strategies())
@pytest.mark.parametrize("bad", [torch.ones(4), "data", 7])
def test_dataset_must_be_a_dataset_or_iterable(make_strategy, bad):
    with pytest.raises(TypeError, match="Expected the .* to be a distribute.data.Dataset"):
        make_strategy().experimental_distribute_dataset(bad)


@pytest.mark.parametrize("make_strategy", named_strategies())
@pytest.mark.parametrize("method", ["experimental_distribute_dataset", "distribute_datasets_from_function"])
def test_options_must_be_input_options(make_strategy, method):
    arg = Dataset.range(4).batch(2) if method == "experimental_distribute_dataset" else (
        lambda ctx: Dataset.range(4).batch(2))
    with pytest.raises(TypeError, match="Expected `options` to be a distribute.InputOptions or None"):
        getattr(make_strategy(), method)(arg, {"experimental_fetch_to_device": True})


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_per_replica_mode_is_refused_for_global_batches(make_strategy):
    options = distribute.InputOptions(experimental_replication_mode=distribute.InputReplicationMode.PER_REPLICA)
    expected = "PER_REPLICA is only supported in `distribute_datasets_from_function`"
    with pytest.raises(NotImplementedError, match=expected):
        make_strategy().experimental_distribute_dataset(Dataset.range(4).batch(2), options)


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_input_fn_iterator_refuses_per_replica_and_leaves_no_scope(make_strategy):
    strategy = make_strategy()
    with pytest.raises(ValueError, match="Input replication mode not supported"):
        strategy.make_input_fn_iterator(lambda ctx: Dataset.range(4).batch(1),
                                        distribute.InputReplicationMode.PER_REPLICA)
    assert not distribute.has_strategy()


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_dataset_iterator_reads_every_batch(make_strategy):
    strategy = make_strategy()
    iterator = strategy.make_dataset_iterator(Dataset.range(8).batch(4))
    firsts = [strategy.experimental_local_results(iterator.get_next()) for _ in range(2)]
    rows = sorted(int(x) for batch in firsts for part in batch for x in part.reshape(-1))
    assert rows == sorted(4 * step + row for step in range(2) for piece in local_pieces(strategy, 4)
                          for row in piece)  # every row of 0..7 once, across the workers


def test_default_strategy_builds_nothing():
    default = distribute.get_strategy()
    dataset = Dataset.range(4).batch(2)
    assert default.experimental_distribute_dataset(dataset) is dataset
    seen = []
    result = default.distribute_datasets_from_function(lambda ctx: seen.append(ctx) or dataset)
    assert result is dataset and isinstance(seen[0], distribute.InputContext)
