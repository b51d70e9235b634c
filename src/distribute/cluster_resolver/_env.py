"""Reading environment variables: the one module of `distribute` that touches ``os.environ``.

Every resolver takes an ``environ`` mapping and reads through it; ``None`` means the
process environment. Tests pass a plain dict and never change the real environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from typing import Optional

from distribute.cluster_resolver._errors import (
    ClusterConfigError,
    ClusterConfigTypeError,
    MissingEnvironmentError,
    describe,
)

__all__ = ["get", "read_int", "require", "resolve_environ", "resolve_mutable_environ"]

_INT = re.compile(r"-?[0-9]+\Z")


def resolve_environ(environ: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    """Returns ``environ``, or the process environment when it is None."""
    if environ is None:
        return os.environ
    if not isinstance(environ, Mapping):
        raise ClusterConfigTypeError(
            describe("environ", "a mapping of environment variables (or None for os.environ)",
                     environ, "Pass a dict such as {'TF_CONFIG': '...'}."),
            field="environ", value=environ)
    return environ


def resolve_mutable_environ(environ: Optional[Mapping[str, str]]) -> MutableMapping[str, str]:
    """Like :func:`resolve_environ`, for a resolver that also sets variables."""
    resolved = resolve_environ(environ)
    if not isinstance(resolved, MutableMapping):
        raise ClusterConfigTypeError(
            describe("environ", "a mutable mapping, because this resolver sets variables",
                     environ, "Pass a dict, or turn off the option that sets variables."),
            field="environ", value=environ)
    return resolved


def get(environ: Mapping[str, str], name: str) -> Optional[str]:
    """The value of ``name``, or None when it is unset."""
    return environ.get(name)


def require(environ: Mapping[str, str], name: str, hint: str) -> str:
    """The value of ``name``; raises :class:`MissingEnvironmentError` when it is unset."""
    value = environ.get(name)
    if value is None:
        raise MissingEnvironmentError(f"{name} not found in environment. {hint}", variable=name)
    return value


def read_int(name: str, value: str, minimum: int = 0, maximum: Optional[int] = None) -> int:
    """Parses the decimal integer ``value`` of variable ``name`` and checks its range."""
    bounds = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
    expected = f"a decimal integer {bounds}"
    if not isinstance(value, str) or not _INT.match(value):
        raise ClusterConfigError(describe(name, expected, value), field=name, value=value)
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        raise ClusterConfigError(describe(name, expected, value), field=name, value=value)
    return number
