"""Constants and argument checks shared by every node of the input pipeline.

Every public entry validates its arguments through the helpers here, so that errors read
alike: what was expected, what was received (``name=value``) and how to fix it.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, overload

from distribute.errors import InvalidArgumentError

__all__ = [
    "AUTOTUNE",
    "END",
    "INFINITE_CARDINALITY",
    "SHARD_HINT",
    "UNKNOWN_CARDINALITY",
    "check_bool",
    "check_callable",
    "check_int",
    "check_positive",
    "check_positive_or_autotune",
    "user_stop_error",
]

AUTOTUNE = -1
"""Lets the pipeline choose a parallelism or buffer size itself (``tf.data.AUTOTUNE``)."""

INFINITE_CARDINALITY = -1
"""The cardinality of a dataset that never ends (``ds.repeat()``)."""

UNKNOWN_CARDINALITY = -2
"""The cardinality of a dataset whose length is known only by iterating it (``filter``)."""

SHARD_HINT = -1
"""Placeholder for ``shard(SHARD_HINT, SHARD_HINT)``; distributed input fills in (W, w)."""


class _End:
    """The end-of-sequence marker returned by internal iterators (never a user element)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END"


END = _End()


def check_int(name: str, value: Any, fix: str = "") -> int:
    """Returns ``value`` as an int, or raises TypeError if it is not an integer."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 and not isinstance(value, bool):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"Expected `{name}` to be an int; received {name}={value!r} "
            f"(type {type(value).__name__}).{(' ' + fix) if fix else ''}"
        )
    return value


def check_positive(name: str, value: Any, fix: str = "") -> int:
    """Returns ``value`` if it is an int > 0, else raises InvalidArgumentError (or TypeError)."""
    value = check_int(name, value, fix)
    if value <= 0:
        raise InvalidArgumentError(
            f"Expected `{name}` to be a positive int; received {name}={value}."
            f"{(' ' + fix) if fix else ''}"
        )
    return value


def check_positive_or_autotune(name: str, value: Any, allow_none: bool = True) -> Optional[int]:
    """Returns ``value`` if it is None (when allowed), AUTOTUNE or an int > 0."""
    if value is None and allow_none:
        return None
    value = check_int(name, value)
    if value != AUTOTUNE and value <= 0:
        raise InvalidArgumentError(
            f"Expected `{name}` to be a positive int or AUTOTUNE ({AUTOTUNE}); "
            f"received {name}={value}."
        )
    return value


@overload
def check_bool(name: str, value: Any, allow_none: Literal[False] = False) -> bool: ...
@overload
def check_bool(name: str, value: Any, allow_none: bool) -> Optional[bool]: ...
def check_bool(name: str, value: Any, allow_none: bool = False) -> Optional[bool]:
    """Returns ``value`` if it is a bool (or None when allowed), else raises TypeError."""
    if value is None and allow_none:
        return None
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if not isinstance(value, bool):
        raise TypeError(f"Expected `{name}` to be a bool; received {name}={value!r}.")
    return value


def check_callable(name: str, value: Any) -> Any:
    """Returns ``value`` if it is callable, else raises TypeError."""
    if not callable(value):
        raise TypeError(
            f"Expected `{name}` to be a callable (a function or lambda); received "
            f"{name}={value!r} of type {type(value).__name__}."
        )
    return value


def user_stop_error(exc: StopIteration, what: str) -> InvalidArgumentError:
    """The error for a ``StopIteration`` that escaped user code (raise it ``from exc``).

    A ``StopIteration`` from a map function, predicate, generator call or the like is a bug in
    that code, not the end of the data: passed through, it would end the consumer's ``for``
    loop silently and lose the remaining elements. tf.data raises InvalidArgumentError.
    """
    return InvalidArgumentError(
        f"The {what} raised StopIteration ({exc!r}). A function in the input pipeline must not "
        f"raise StopIteration: it would look like the end of the data and silently drop the "
        f"remaining elements. Raise another exception, or end the data with take() or filter()."
    )
