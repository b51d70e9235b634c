"""Options: settings that apply to a whole pipeline, wherever they are attached.

``dataset.with_options(options)`` attaches an :class:`Options`; ``dataset.options()`` merges
every options object attached anywhere upstream (a later attachment wins where both set the
same field). Fields left unset (``None``) mean "the default". The distributed-input layer reads
``experimental_distribute.auto_shard_policy``; the pipeline itself reads ``deterministic`` and
``experimental_optimization.map_vectorization``.
"""

from __future__ import annotations

import enum
from typing import Any, Dict, Optional, TypeVar

from distribute.data._common import AUTOTUNE, SHARD_HINT

__all__ = [
    "AUTOTUNE",
    "AutoShardPolicy",
    "DistributeOptions",
    "OptimizationOptions",
    "Options",
    "SHARD_HINT",
]


class AutoShardPolicy(enum.IntEnum):
    """How distributed input splits a dataset between workers.

    * ``OFF``: no sharding; every worker reads everything.
    * ``AUTO``: shard by files when the pipeline reads files, else by data.
    * ``FILE``: each worker reads a disjoint subset of the files.
    * ``DATA``: every worker reads everything and keeps every W-th element.
    * ``HINT``: replace ``shard(SHARD_HINT, SHARD_HINT)`` placeholders by ``(W, w)``.
    """

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


_GroupT = TypeVar("_GroupT", bound="_OptionsGroup")


class _OptionsGroup:
    """A group of optional fields with validation; unset fields are ``None``."""

    _FIELDS: Dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        for name in self._FIELDS:
            object.__setattr__(self, name, None)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(
                f"{type(self).__name__} has no option {name!r}; the options are "
                f"{sorted(self._FIELDS)}."
            )
        object.__setattr__(self, name, self._FIELDS[name](name, value))

    def _merge(self: _GroupT, other: _GroupT) -> _GroupT:
        merged = type(self)()
        for name in self._FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, _OptionsGroup):
                object.__setattr__(merged, name, mine._merge(theirs))
            else:
                object.__setattr__(merged, name, theirs if theirs is not None else mine)
        return merged

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS
        )

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS)
        return f"{type(self).__name__}({fields})"


def _optional_bool(name: str, value: Any) -> Optional[bool]:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"Expected option `{name}` to be a bool or None; received {name}={value!r}.")
    return value


def _policy(name: str, value: Any) -> Optional[AutoShardPolicy]:
    if value is None:
        return None
    try:
        return AutoShardPolicy(value)
    except ValueError:
        raise ValueError(
            f"Expected `{name}` to be an AutoShardPolicy (OFF, AUTO, FILE, DATA or HINT); "
            f"received {name}={value!r}."
        ) from None


def _optional_positive(name: str, value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Expected option `{name}` to be a positive int or None; received {name}={value!r}.")
    return value


class DistributeOptions(_OptionsGroup):
    """How distributed input treats the dataset (``tf.data.experimental.DistributeOptions``).

    Example:
        >>> options = Options()
        >>> options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA
    """

    _FIELDS = {"auto_shard_policy": _policy, "num_devices": _optional_positive}
    auto_shard_policy: Optional[AutoShardPolicy]
    num_devices: Optional[int]

    @property
    def effective_auto_shard_policy(self) -> AutoShardPolicy:
        """The policy to apply: the one set, or AUTO."""
        return self.auto_shard_policy if self.auto_shard_policy is not None else AutoShardPolicy.AUTO


class OptimizationOptions(_OptionsGroup):
    """Rewrites the pipeline may apply (``tf.data.experimental.OptimizationOptions``).

    ``map_vectorization`` (default on): when a ``map`` feeds a ``batch`` over in-memory
    rows, run the function once per batch with ``torch.func.vmap`` instead of once per
    element, after checking on the first batch that both give the same result.
    """

    _FIELDS = {"map_vectorization": _optional_bool, "apply_default_optimizations": _optional_bool}
    map_vectorization: Optional[bool]
    apply_default_optimizations: Optional[bool]


def _group(cls: type) -> Any:
    def check(name: str, value: Any) -> Any:
        if not isinstance(value, cls):
            raise TypeError(f"Expected `{name}` to be a {cls.__name__}; received {value!r}.")
        return value
    return check


class Options(_OptionsGroup):
    """Pipeline-wide settings (``tf.data.Options``).

    Example:
        >>> options = Options()
        >>> options.deterministic = True
        >>> options.experimental_distribute.auto_shard_policy = AutoShardPolicy.OFF
        >>> ds = Dataset.range(8).with_options(options)
    """

    _FIELDS = {
        "deterministic": _optional_bool,
        "experimental_distribute": _group(DistributeOptions),
        "experimental_optimization": _group(OptimizationOptions),
    }
    deterministic: Optional[bool]
    experimental_distribute: DistributeOptions
    experimental_optimization: OptimizationOptions

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "experimental_distribute", DistributeOptions())
        object.__setattr__(self, "experimental_optimization", OptimizationOptions())

    @property
    def experimental_deterministic(self) -> Optional[bool]:
        """Deprecated alias of ``deterministic``."""
        return self.deterministic

    @experimental_deterministic.setter
    def experimental_deterministic(self, value: Optional[bool]) -> None:
        self.deterministic = value

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "experimental_deterministic":
            object.__setattr__(self, "deterministic", _optional_bool("deterministic", value))
            return
        super().__setattr__(name, value)

    def merge(self, options: "Options") -> "Options":
        """Returns new options: these, overridden by the fields ``options`` sets."""
        if not isinstance(options, Options):
            raise TypeError(f"Expected `options` to be an Options; received {options!r}.")
        return self._merge(options)

    @property
    def map_vectorization_enabled(self) -> bool:
        """Whether map functions may be vectorized (the default)."""
        value = self.experimental_optimization.map_vectorization
        return value is not False
