"""The per-thread mode stack: which strategy is current and in which context code runs.

Four modes exist. In the *default* mode (empty stack) the default strategy and its replica
context are current. ``with strategy.scope()`` pushes a *cross-replica* mode.
``strategy.run`` pushes a *replica* mode for each replica. ``merge_call`` and
``extended.update`` push a cross-replica mode again while their function runs. Each entry
records ``(strategy, cross_replica_strategy_or_None, replica_context_or_None)``.

Replicas that run as greenlets in one thread each have their own stack; the replica runner
swaps stacks at every switch (see ``swap_stack``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, List, NamedTuple, Optional

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.replica_context import ReplicaContext
    from distribute._core.strategy import Strategy

__all__ = [
    "get_cross_replica_context",
    "get_replica_context",
    "get_strategy",
    "has_strategy",
    "in_cross_replica_context",
]


class Mode(NamedTuple):
    """One entry of the mode stack."""

    strategy: "Strategy"
    cross_replica: Optional["Strategy"]
    replica_context: Optional["ReplicaContext"]


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: List[Mode] = []
        self.set_strategy_scope: Any = None
        self.update_replica_id: Optional[int] = None


_state = _State()
_defaults: dict = {}


def set_default_strategy_factory(factory: Callable[[], "Strategy"]) -> None:
    """Registers how the default strategy is made (``distribute.strategies`` does, on import).

    The default strategy is defined in the strategies layer, above this module; it is made by
    ``factory`` on first use. Registering the same factory again does nothing.

    Raises:
        TypeError: when ``factory`` is not callable.
        RuntimeError: when a default strategy was already made by a different factory.
    """
    if not callable(factory):
        raise TypeError(f"Expected `factory` to be a callable returning the default strategy, received "
                        f"{factory!r} of type {type(factory).__name__}.")
    previous = _defaults.get("factory")
    if previous == factory:
        return
    if "strategy" in _defaults:
        raise RuntimeError(
            f"The default strategy was already made by {previous!r}; registering {factory!r} now "
            "would give two default strategies. Register the factory before the first "
            "get_strategy() call.")
    _defaults["factory"] = factory


def default_strategy() -> "Strategy":
    """The process-wide default strategy (made on first use by the registered factory)."""
    strategy = _defaults.get("strategy")
    if strategy is None:
        factory = _defaults.get("factory")
        if factory is None:
            raise RuntimeError(
                "No default strategy is registered: import distribute (its strategies package "
                "registers the default strategy) before asking for the current strategy.")
        strategy = factory()
        _defaults["strategy"] = strategy
    return strategy


def default_replica_context() -> "ReplicaContext":
    """The replica context of the default mode (replica id ``0``)."""
    ctx = _defaults.get("replica_context")
    if ctx is None:
        from distribute._core.replica_context import DefaultReplicaContext

        ctx = DefaultReplicaContext(default_strategy(), 0)
        _defaults["replica_context"] = ctx
    return ctx


def stack() -> List[Mode]:
    """The current thread's (or greenlet's) mode stack; mutable, innermost last."""
    return _state.stack


def swap_stack(new: List[Mode]) -> List[Mode]:
    """Installs ``new`` as the current stack and returns the previous one."""
    old = _state.stack
    _state.stack = new
    return old


def current_mode() -> Optional[Mode]:
    """The innermost mode, or ``None`` in the default mode."""
    s = _state.stack
    return s[-1] if s else None


def push(mode: Mode) -> None:
    """Pushes a mode."""
    _state.stack.append(mode)


def pop() -> Mode:
    """Pops the innermost mode."""
    return _state.stack.pop()


def get_update_replica_id() -> Optional[int]:
    """Inside ``extended.update``'s function: the index of the component being updated."""
    return _state.update_replica_id


def set_update_replica_id(replica_id: Optional[int]) -> Optional[int]:
    """Sets the update replica id and returns the previous one."""
    old = _state.update_replica_id
    _state.update_replica_id = replica_id
    return old


def get_strategy() -> "Strategy":
    """Returns the current strategy: the innermost scope's, or the default strategy.

    Example:
        >>> import distribute
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> with s.scope():
        ...     assert distribute.get_strategy() is s
    """
    s = _state.stack
    return s[-1].strategy if s else default_strategy()


def has_strategy() -> bool:
    """True when a non-default strategy is current (inside a scope or a replica function)."""
    s = _state.stack
    return bool(s) and s[-1].strategy is not _defaults.get("strategy")


def in_cross_replica_context() -> bool:
    """True inside a strategy's scope (or ``merge_call``), False in replica or default mode."""
    s = _state.stack
    return bool(s) and s[-1].cross_replica is not None


def get_replica_context() -> Optional["ReplicaContext"]:
    """The current replica context: a replica's inside ``run``, the default one at top level,
    and ``None`` in a cross-replica context."""
    s = _state.stack
    return s[-1].replica_context if s else default_replica_context()


def get_cross_replica_context() -> Optional["Strategy"]:
    """The current strategy when in a cross-replica context, else ``None``."""
    s = _state.stack
    return s[-1].cross_replica if s else None


def swap_set_strategy_scope(scope: Any) -> Any:
    """Records the scope ``experimental_set_strategy`` entered (or ``None``); returns the previous one."""
    old = _state.set_strategy_scope
    _state.set_strategy_scope = scope
    return old
