"""Exceptions raised by `distribute`.

Each error is a subclass of :class:`DistributeError` and of the builtin exception that
describes its kind, so ``except ValueError`` keeps working for argument errors while
``except distribute.errors.InvalidArgumentError`` catches exactly ours. The names follow
``tf.errors``.
"""

from __future__ import annotations

__all__ = [
    "AbortedError",
    "AlreadyExistsError",
    "CancelledError",
    "CollectiveError",
    "DataLossError",
    "DeadlineExceededError",
    "DistributeError",
    "FailedPreconditionError",
    "GatherShapeMismatchError",
    "InvalidArgumentError",
    "NotFoundError",
    "OutOfRangeError",
    "UnauthenticatedError",
    "UnavailableError",
]


class DistributeError(Exception):
    """Base class of every error that `distribute` defines."""


class InvalidArgumentError(DistributeError, ValueError):
    """An argument has the right type but a wrong value (shape, rank, range)."""


class OutOfRangeError(DistributeError, IndexError):
    """An iterator's ``get_next()`` was called after the end of its data."""

    def __init__(self, message: str = "End of sequence") -> None:
        super().__init__(message)


class DataLossError(DistributeError, OSError):
    """Stored data is corrupt or truncated (a bad checksum, a short record)."""


class NotFoundError(DistributeError, FileNotFoundError):
    """A file, dataset source or task that was asked for does not exist."""


class AlreadyExistsError(DistributeError, FileExistsError):
    """Something that must be new already exists."""


class FailedPreconditionError(DistributeError, RuntimeError):
    """The system is not in a state in which the operation can run."""


class AbortedError(DistributeError, RuntimeError):
    """An operation was aborted, usually because a peer failed."""


class CancelledError(DistributeError, RuntimeError):
    """An operation was cancelled before it finished."""


class CollectiveError(DistributeError, RuntimeError):
    """Replicas or workers disagreed on a collective (operation, order, shapes, dtypes)."""


class DeadlineExceededError(DistributeError, TimeoutError):
    """A rendezvous or collective did not finish within its deadline."""


class UnavailableError(DistributeError, ConnectionError):
    """A peer task could not be reached or went away."""


class UnauthenticatedError(DistributeError, PermissionError):
    """A connection did not prove that it knows the job's secret (or this task does not know it)."""


class GatherShapeMismatchError(InvalidArgumentError, CollectiveError):
    """Values gathered across replicas or workers differ in rank or off the gather axis.

    It is an argument error (``InvalidArgumentError``, a ``ValueError``), as TensorFlow's
    "Shape mismatch", and a ``CollectiveError``; the message names each replica's or worker's
    shape.
    """
