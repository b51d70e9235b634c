"""The public types of distributed input: ``DistributedDataset`` and ``DistributedIterator``.

They are the abstract classes of ``tf.distribute.DistributedDataset`` and
``tf.distribute.DistributedIterator``, for ``isinstance`` checks; strategies return concrete
subclasses from ``experimental_distribute_dataset`` and ``distribute_datasets_from_function``.
"""

from __future__ import annotations

import abc
from typing import Any, Callable

__all__ = ["DistributedDataset", "DistributedIterator"]


class DistributedIterator(abc.ABC):
    """Iterates a distributed dataset: each element holds one batch per local replica.

    ``next()`` raises ``StopIteration`` at the end, ``get_next()`` raises
    :class:`~distribute.errors.OutOfRangeError`, and ``get_next_as_optional()`` returns an
    empty :class:`~distribute.data.Optional`.

    Example:
        >>> import distribute
        >>> from distribute.data import Dataset
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> it = iter(s.experimental_distribute_dataset(Dataset.range(8).batch(4)))
        >>> isinstance(it, distribute.DistributedIterator)
        True
        >>> [t.tolist() for t in next(it).values]
        [[0, 1], [2, 3]]
    """

    @abc.abstractmethod
    def get_next(self) -> Any:
        """The next element; raises OutOfRangeError at the end of the data."""

    @abc.abstractmethod
    def get_next_as_optional(self) -> Any:
        """The next element as an Optional, empty at the end of the data."""

    @property
    @abc.abstractmethod
    def element_spec(self) -> Any:
        """The structure of ``PerReplicaSpec`` (or ``TensorSpec`` with one replica) of the elements."""

    def __iter__(self) -> "DistributedIterator":
        return self

    @abc.abstractmethod
    def __next__(self) -> Any:
        """The next element; raises StopIteration at the end."""


class DistributedDataset(abc.ABC):
    """A dataset whose elements are split over the replicas of a strategy.

    It can be iterated any number of times (each time from the start), but not transformed
    further.

    Example:
        >>> import distribute
        >>> from distribute.data import Dataset
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> dist = s.experimental_distribute_dataset(Dataset.range(9).batch(4))
        >>> for batch in dist:
        ...     s.run(lambda x: x * 2, args=(batch,))
    """

    @abc.abstractmethod
    def __iter__(self) -> DistributedIterator:
        """A new iterator, from the start of the data."""

    @property
    @abc.abstractmethod
    def element_spec(self) -> Any:
        """The structure of ``PerReplicaSpec`` (or ``TensorSpec`` with one replica) of the elements."""

    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Folds the distributed elements: ``state = reduce_func(state, element)``.

        Example:
            >>> total = dist.reduce(torch.tensor(0), lambda acc, x: acc + s.reduce("sum", x, axis=0))
        """
        if not callable(reduce_func):
            raise TypeError(f"Expected `reduce_func` to be callable, received {reduce_func!r}.")
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state
