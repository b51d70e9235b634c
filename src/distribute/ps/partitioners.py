"""Partitioners: into how many shards a parameter-server variable is split.

A ``ParameterServerStrategy`` built with a ``variable_partitioner`` asks it about every
variable it creates. The partitioner receives the variable's shape and dtype and answers
with one count per axis, ``[k, 1, ..., 1]``: split the first axis into ``k`` pieces, leave
the others whole. The strategy then makes :func:`check_partitions` shards (never more than
the variable has rows), sized by :func:`shard_sizes` (the first ``rows % n`` shards hold one
row more) and placed round-robin on the ``ps`` tasks.

The three partitioners of ``tf.distribute.experimental.partitioners``:

* :class:`FixedShardsPartitioner` ``(num_shards)``: always ``num_shards`` (one per row at most);
* :class:`MinSizePartitioner` ``(min_shard_bytes, max_shards)``: one shard per
  ``min_shard_bytes`` of the variable (rounded up), at most ``max_shards``;
* :class:`MaxSizePartitioner` ``(max_shard_bytes, max_shards)``: the fewest shards of whole
  rows that keep each at most ``max_shard_bytes`` (a row larger than that is a shard by
  itself), at most ``max_shards``.

Sizes count ``elements x dtype size`` bytes; an element of a string variable counts as
``bytes_per_string`` bytes. Any callable ``(shape, dtype, axis=0) -> list`` may serve as a
partitioner; subclassing :class:`Partitioner` only documents the contract.
"""

from __future__ import annotations

import abc
import math
import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

from distribute._base.tensor_spec import as_dtype, string
from distribute.errors import InvalidArgumentError

__all__ = ["FixedShardsPartitioner", "MaxSizePartitioner", "MinSizePartitioner", "Partitioner",
           "check_partitions", "shard_sizes"]

Shape = Union[torch.Size, Sequence[int]]
Number = Union[int, float]


class Partitioner(abc.ABC):
    """The base of the partitioners: a callable from a variable's shape and dtype to its split.

    Example:
        >>> class TwoShards(Partitioner):
        ...     def __call__(self, shape, dtype, axis=0):
        ...         return [min(2, shape[0])] + [1] * (len(shape) - 1)
        >>> TwoShards()((10, 3), torch.float32)
        [2, 1]
    """

    @abc.abstractmethod
    def __call__(self, shape: Shape, dtype: Any, axis: int = 0) -> List[int]:
        """The number of pieces of each axis of a ``shape``/``dtype`` variable (``[k, 1, ...]``)."""


def _error(owner: str, name: str, expected: str, received: Any, fix: str = "") -> str:
    message = f"{owner}: {name} must be {expected}; received {received!r}."
    return f"{message} {fix}" if fix else message


def _count(owner: str, name: str, value: Any) -> int:
    """``value`` if it is an int (not a bool) >= 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(_error(owner, name, "an int >= 1", value))
    if value < 1:
        raise InvalidArgumentError(_error(owner, name, "an int >= 1", value))
    return value


def _bytes(owner: str, name: str, value: Any) -> Number:
    """``value`` if it is a finite number (not a bool) >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(_error(owner, name, "a number of bytes >= 1", value))
    if not math.isfinite(value) or value < 1:
        raise InvalidArgumentError(_error(owner, name, "a number of bytes >= 1", value))
    return value


def _dims(owner: str, shape: Any) -> Tuple[int, ...]:
    """``shape`` (a torch.Size, tuple or list of ints >= 0, rank >= 1) as a tuple of ints."""
    expected = "a torch.Size, tuple or list of ints >= 0 of rank >= 1"
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(_error(owner, "shape", expected, shape))
    dims = []
    for dim in shape:
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            raise TypeError(_error(owner, "shape", expected, shape))
        dims.append(operator.index(dim))
    if not dims or min(dims) < 0:
        raise InvalidArgumentError(_error(
            owner, "shape", expected, shape, "A rank-0 variable is never partitioned."))
    return tuple(dims)


def _axis(owner: str, axis: Any, rank: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(_error(owner, "axis", f"an int in [{-rank}, {rank})", axis))
    if not -rank <= axis < rank:
        raise InvalidArgumentError(_error(owner, "axis", f"an int in [{-rank}, {rank})", axis))
    return axis % rank


def _element_bytes(dtype: Any, bytes_per_string: Number) -> Number:
    """Bytes per element: the dtype's size, or ``bytes_per_string`` for strings."""
    checked = as_dtype(dtype)
    return bytes_per_string if checked is string else checked.itemsize  # type: ignore[union-attr]


def _split(dims: Tuple[int, ...], axis: int, count: int) -> List[int]:
    result = [1] * len(dims)
    result[axis] = count
    return result


def _ceil_div(a: Number, b: Number) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)  # exact for any size
    return math.ceil(a / b)


def _floor_div(a: Number, b: Number) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return math.floor(a / b)


class FixedShardsPartitioner(Partitioner):
    """Splits every variable into ``num_shards`` shards (or one per row, if it has fewer rows).

    Args:
        num_shards: the number of shards, an int >= 1.

    Raises:
        TypeError: ``num_shards`` is not an int.
        InvalidArgumentError: (a ``ValueError``) ``num_shards`` < 1.

    Example:
        >>> FixedShardsPartitioner(num_shards=2)((10, 3), torch.float32)
        [2, 1]
        >>> FixedShardsPartitioner(3)(torch.Size([2, 4]), torch.float32)
        [2, 1]
    """

    def __init__(self, num_shards: int) -> None:
        self._num_shards = _count("FixedShardsPartitioner", "num_shards", num_shards)

    def __call__(self, shape: Shape, dtype: Any, axis: int = 0) -> List[int]:
        """``[min(num_shards, shape[axis]), 1, ...]`` (at least 1 for an axis of length 0)."""
        dims = _dims(type(self).__name__, shape)
        axis = _axis(type(self).__name__, axis, len(dims))
        as_dtype(dtype)  # checked, though the count does not depend on it
        return _split(dims, axis, max(1, min(self._num_shards, dims[axis])))

    def __repr__(self) -> str:
        return f"FixedShardsPartitioner(num_shards={self._num_shards})"


class MinSizePartitioner(Partitioner):
    """One shard per ``min_shard_bytes`` of the variable (rounded up), at most ``max_shards``.

    A variable of ``B`` bytes and ``R`` rows gets ``max(1, min(R, max_shards,
    ceil(B / min_shard_bytes)))`` shards.

    Args:
        min_shard_bytes: the bytes each shard should hold at least (default 256 KiB).
        max_shards: the most shards a variable is split into (default 1: no split).
        bytes_per_string: the size assumed for each element of a string variable.

    Raises:
        TypeError: an argument is not a number (``max_shards``: not an int).
        InvalidArgumentError: (a ``ValueError``) an argument is < 1.

    Example:
        >>> MinSizePartitioner(min_shard_bytes=4, max_shards=2)((6, 1), torch.float32)
        [2, 1]
        >>> MinSizePartitioner(min_shard_bytes=4, max_shards=10)((6, 1), torch.float32)
        [6, 1]
    """

    def __init__(self, min_shard_bytes: Number = 256 << 10, max_shards: int = 1,
                 bytes_per_string: Number = 16) -> None:
        owner = "MinSizePartitioner"
        self._min_shard_bytes = _bytes(owner, "min_shard_bytes", min_shard_bytes)
        self._max_shards = _count(owner, "max_shards", max_shards)
        self._bytes_per_string = _bytes(owner, "bytes_per_string", bytes_per_string)

    def __call__(self, shape: Shape, dtype: Any, axis: int = 0) -> List[int]:
        """``[k, 1, ...]`` with ``k`` as in the class docstring."""
        dims = _dims(type(self).__name__, shape)
        axis = _axis(type(self).__name__, axis, len(dims))
        total = math.prod(dims) * _element_bytes(dtype, self._bytes_per_string)
        wanted = _ceil_div(total, self._min_shard_bytes)
        return _split(dims, axis, max(1, min(dims[axis], self._max_shards, wanted)))

    def __repr__(self) -> str:
        return (f"MinSizePartitioner(min_shard_bytes={self._min_shard_bytes}, "
                f"max_shards={self._max_shards}, bytes_per_string={self._bytes_per_string})")


class MaxSizePartitioner(Partitioner):
    """The fewest shards of whole rows that keep each at most ``max_shard_bytes``.

    A shard holds ``max(1, floor(max_shard_bytes / row_bytes))`` rows, so a row larger than
    ``max_shard_bytes`` is a shard by itself; ``max_shards`` (when given) caps the count,
    and shards may then be larger than ``max_shard_bytes``.

    Args:
        max_shard_bytes: the most bytes a shard should hold.
        max_shards: the most shards a variable is split into, or None for no limit.
        bytes_per_string: the size assumed for each element of a string variable.

    Raises:
        TypeError: an argument is not a number (``max_shards``: not an int or None).
        InvalidArgumentError: (a ``ValueError``) an argument is < 1.

    Example:
        >>> MaxSizePartitioner(max_shard_bytes=4)((6, 1), torch.float32)
        [6, 1]
        >>> MaxSizePartitioner(max_shard_bytes=8)((6, 1), torch.float32)
        [3, 1]
        >>> MaxSizePartitioner(max_shard_bytes=4, max_shards=2)((6, 1), torch.float32)
        [2, 1]
    """

    def __init__(self, max_shard_bytes: Number, max_shards: Optional[int] = None,
                 bytes_per_string: Number = 16) -> None:
        owner = "MaxSizePartitioner"
        self._max_shard_bytes = _bytes(owner, "max_shard_bytes", max_shard_bytes)
        self._max_shards = None if max_shards is None else _count(owner, "max_shards", max_shards)
        self._bytes_per_string = _bytes(owner, "bytes_per_string", bytes_per_string)

    def __call__(self, shape: Shape, dtype: Any, axis: int = 0) -> List[int]:
        """``[k, 1, ...]`` with ``k`` as in the class docstring (1 for an empty variable)."""
        dims = _dims(type(self).__name__, shape)
        axis = _axis(type(self).__name__, axis, len(dims))
        rows = dims[axis]
        row_elements = math.prod(dims) // rows if rows else 0
        row_bytes = row_elements * _element_bytes(dtype, self._bytes_per_string)
        if row_bytes == 0:
            return _split(dims, axis, 1)  # nothing to spread
        rows_per_shard = max(1, _floor_div(self._max_shard_bytes, row_bytes))
        count = _ceil_div(rows, rows_per_shard)
        if self._max_shards is not None:
            count = min(count, self._max_shards)
        return _split(dims, axis, count)

    def __repr__(self) -> str:
        return (f"MaxSizePartitioner(max_shard_bytes={self._max_shard_bytes}, "
                f"max_shards={self._max_shards}, bytes_per_string={self._bytes_per_string})")


def shard_sizes(rows: int, num_shards: int) -> List[int]:
    """The rows of each of ``num_shards`` shards of ``rows`` rows: the first ``rows % n`` get one more.

    Raises:
        TypeError: an argument is not an int.
        InvalidArgumentError: (a ``ValueError``) ``rows`` < 0 or ``num_shards`` < 1.

    Example:
        >>> shard_sizes(5, 2), shard_sizes(10, 3), shard_sizes(4, 4)
        ([3, 2], [4, 3, 3], [1, 1, 1, 1])
    """
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise TypeError(_error("shard_sizes", "rows", "an int >= 0", rows))
    if rows < 0:
        raise InvalidArgumentError(_error("shard_sizes", "rows", "an int >= 0", rows))
    num_shards = _count("shard_sizes", "num_shards", num_shards)
    base, extra = divmod(rows, num_shards)
    return [base + 1 if i < extra else base for i in range(num_shards)]


def check_partitions(partitions: Any, shape: Shape) -> int:
    """Checks what a partitioner returned for ``shape``; returns the number of shards to make.

    ``partitions`` must be a list (or tuple) of ints ``[k, 1, ..., 1]`` with ``k >= 1`` and
    one entry per axis of ``shape``. The shards are ``min(k, shape[0])``, at least 1.

    Raises:
        InvalidArgumentError: (a ``ValueError``) ``partitions`` is anything else; the message
            shows what the partitioner returned.

    Example:
        >>> check_partitions([2, 1], (5, 2)), check_partitions([8, 1], (5, 2))
        (2, 5)
    """
    dims = _dims("check_partitions", shape)
    expected = (f"a list of {len(dims)} ints [k{', 1' * (len(dims) - 1)}] with k >= 1 (one entry "
                f"per axis of the shape {tuple(dims)}, only the first above 1)")
    fix = "Return e.g. [2] + [1] * (len(shape) - 1) from the variable_partitioner."
    error = InvalidArgumentError(_error("variable_partitioner", "the result", expected,
                                        partitions, fix))
    if not isinstance(partitions, (list, tuple)) or len(partitions) != len(dims) or not all(
            hasattr(p, "__index__") and not isinstance(p, bool) for p in partitions):
        raise error
    counts = [operator.index(p) for p in partitions]
    if counts[0] < 1 or any(p != 1 for p in counts[1:]):
        raise error
    return max(1, min(counts[0], dims[0]))
