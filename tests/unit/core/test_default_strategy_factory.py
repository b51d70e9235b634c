"""The default strategy is defined in strategies/ and registered with _core.context on import."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import distribute
from distribute._core import context
from distribute.strategies.default import DefaultExtended, DefaultStrategy


def test_get_strategy_is_the_registered_default():
    strategy = distribute.get_strategy()
    assert type(strategy) is DefaultStrategy and isinstance(strategy.extended, DefaultExtended)
    assert context.default_strategy() is strategy


def test_registering_the_same_factory_again_keeps_the_default():
    before = distribute.get_strategy()
    context.set_default_strategy_factory(DefaultStrategy._create)
    assert distribute.get_strategy() is before


def test_a_second_factory_after_the_default_exists_is_refused():
    before = distribute.get_strategy()
    with pytest.raises(RuntimeError, match="already made"):
        context.set_default_strategy_factory(lambda: before)
    assert distribute.get_strategy() is before


@pytest.mark.parametrize("bad", [None, 3, "DefaultStrategy"])
def test_the_factory_must_be_callable(bad):
    with pytest.raises(TypeError, match="Expected `factory` to be a callable"):
        context.set_default_strategy_factory(bad)


def test_without_a_registered_factory_the_error_says_what_to_import(monkeypatch):
    monkeypatch.setattr(context, "_defaults", {})
    with pytest.raises(RuntimeError, match="No default strategy is registered: import distribute"):
        context.default_strategy()


def test_a_registered_factory_makes_the_default_once(monkeypatch):
    monkeypatch.setattr(context, "_defaults", {})
    made = []
    context.set_default_strategy_factory(lambda: made.append(1) or "the default")
    assert context.default_strategy() == "the default" and context.default_strategy() == "the default"
    assert made == [1]


def test_importing_only_core_context_still_has_the_default():
    # Importing any submodule runs distribute/__init__.py, which imports distribute.strategies.
    src = Path(distribute.__file__).parent.parent
    code = ("import distribute._core.context as c; s = c.get_strategy(); "
            "print(type(s).__name__, type(s).__module__)")
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["DefaultStrategy", "distribute.strategies.default"]
