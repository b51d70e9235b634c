"""Entering a strategy: the scope context manager and the cross-replica context check.

``with strategy.scope()`` pushes a cross-replica mode on the mode stack (see
:mod:`distribute._core.context`); :func:`check_not_in_replica_context` is the rule every
cross-replica method (``reduce``, ``gather``, ``reduce_to``, ...) applies before it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from distribute._core import context
from distribute._core.context import Mode

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.strategy import Strategy

__all__ = ["CROSS_REPLICA_ERROR", "check_not_in_replica_context"]

CROSS_REPLICA_ERROR = ("Method requires being in cross-replica context, use "
                       "get_replica_context().merge_call()")


def check_not_in_replica_context(strategy: "Strategy", message: str = CROSS_REPLICA_ERROR) -> None:
    """Raises unless the caller may use ``strategy``'s cross-replica API here."""
    mode = context.current_mode()
    default = context.default_strategy()
    if mode is None or (mode.strategy is default and strategy is default):
        return  # the default mode, or the default strategy's own scope (cross-replica for it)
    if mode.strategy is not strategy and mode.strategy is not default:
        raise RuntimeError(f"Mixing different distribute.Strategy objects: {strategy} is not {mode.strategy}")
    if mode.strategy is strategy and mode.replica_context is not None and mode.cross_replica is None:
        raise RuntimeError(message)


class _Scope:
    """The context manager returned by ``Strategy.scope()``; one object may be re-entered
    while active (``with s: with s:``), each entry exited in turn."""

    __slots__ = ("_strategy", "_modes")

    def __init__(self, strategy: "Strategy") -> None:
        self._strategy = strategy
        self._modes: List[Mode] = []

    def __enter__(self) -> "Strategy":
        strategy = self._strategy
        default = context.default_strategy()
        mode = context.current_mode()
        if mode is not None and mode.strategy is not strategy:
            if strategy is default:
                raise RuntimeError("Must not nest distribute.Strategy scopes.")
            if mode.strategy is not default:
                raise RuntimeError(f"Mixing different distribute.Strategy objects: {strategy} is not {mode.strategy}")
        if mode is not None and mode.strategy is strategy and mode.cross_replica is None \
                and strategy is not default:
            raise RuntimeError(CROSS_REPLICA_ERROR)
        if strategy is default:
            mode = Mode(strategy, None, context.default_replica_context())
        else:
            mode = Mode(strategy, strategy, None)
        self._modes.append(mode)
        context.push(mode)
        return strategy

    def __exit__(self, *exc: Any) -> None:
        current = context.current_mode()
        if not self._modes or current is not self._modes[-1]:
            raise RuntimeError(
                "Strategy scope nesting error: a scope entered inside this one was not exited "
                "first. Exit inner `with` blocks (and call experimental_set_strategy(None)) "
                "before leaving the strategy scope.")
        self._modes.pop()
        context.pop()
