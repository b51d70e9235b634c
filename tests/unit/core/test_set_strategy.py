"""experimental_set_strategy (in _core/strategy.py, beside the Strategy class it checks for)."""

import pytest

import distribute


def test_refused_inside_a_scope_keeps_the_set_strategy_restorable():
    mirrored = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    other = distribute.OneDeviceStrategy("CPU:0")
    try:
        distribute.experimental_set_strategy(mirrored)
        with mirrored.scope():
            with pytest.raises(RuntimeError, match="Must not be called inside a `distribute.Strategy` scope."):
                distribute.experimental_set_strategy(other)
            assert distribute.get_strategy() is mirrored
        assert distribute.get_strategy() is mirrored
    finally:
        distribute.experimental_set_strategy(None)
    assert not distribute.has_strategy()


@pytest.mark.parametrize("bad", ["mirrored", 1, distribute.MirroredStrategy])
def test_only_a_strategy_or_none(bad):
    with pytest.raises(TypeError, match="experimental_set_strategy expects a distribute.Strategy or None"):
        distribute.experimental_set_strategy(bad)
    assert not distribute.has_strategy()
