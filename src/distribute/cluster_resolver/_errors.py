"""Exceptions of the cluster_resolver package and the one function that words them.

Every message has the same shape: the field at fault (``TF_CONFIG['task']['index']``,
``SLURM_PROCID``, ``cluster['worker'][1]``), what was expected, what was received, and how
to fix it. Each class subclasses the builtin that describes the mistake, so
``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any, Optional

from distribute.errors import DistributeError, FailedPreconditionError, InvalidArgumentError

__all__ = [
    "ClusterAllocationError",
    "ClusterConfigError",
    "ClusterConfigTypeError",
    "ClusterMergeError",
    "MissingEnvironmentError",
    "TFConfigError",
]

_MAX_REPR = 120


def short_repr(value: Any) -> str:
    """``repr(value)``, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


def describe(field: str, expected: str, received: Any, fix: str = "") -> str:
    """Builds the standard message: field, expected, received, fix."""
    message = f"{field}: expected {expected}; received {short_repr(received)}."
    return f"{message} {fix}" if fix else message


class _FieldError:
    """Mixin that keeps the field at fault and the value received."""

    field: Optional[str]
    value: Any

    def _keep(self, field: Optional[str], value: Any) -> None:
        self.field = field
        self.value = value


class ClusterConfigError(InvalidArgumentError, _FieldError):
    """A cluster description has a value of the right type but a wrong content.

    Attributes:
        field: where the value came from, e.g. ``"cluster['worker'][1]"``.
        value: the value received.
    """

    def __init__(self, message: str, *, field: Optional[str] = None, value: Any = None) -> None:
        super().__init__(message)
        self._keep(field, value)


class ClusterConfigTypeError(DistributeError, TypeError, _FieldError):
    """A cluster description, or an argument of a resolver, has the wrong type."""

    def __init__(self, message: str, *, field: Optional[str] = None, value: Any = None) -> None:
        super().__init__(message)
        self._keep(field, value)


class TFConfigError(ClusterConfigError):
    """The ``TF_CONFIG`` environment variable is malformed (bad JSON, wrong field, bad address)."""


class MissingEnvironmentError(FailedPreconditionError):
    """A variable that a resolver needs is not in the environment.

    Attributes:
        variable: the name of the missing variable, e.g. ``"SLURM_PROCID"``.
    """

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        self.variable = variable


class ClusterAllocationError(FailedPreconditionError):
    """A resolver was asked for more tasks or GPUs than the scheduler assigned."""


class ClusterMergeError(DistributeError, KeyError):
    """Two cluster specs give the same task index of a job to different addresses."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
