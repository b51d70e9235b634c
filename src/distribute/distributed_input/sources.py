"""Batch inputs: where a worker's global (or per-replica) batches come from.

Distributed input reads batches from a ``distribute.data.Dataset`` (through its resumable
:class:`~distribute.data.Iterator`) or from any other iterable of batches, such as a
``torch.utils.data.DataLoader``. Both are wrapped in a :class:`BatchInput`: ``next()`` returns
a batch or :data:`END`, ``state()``/``restore()`` save and restore the position.

Batches from other iterables are normalised once per batch: numpy arrays and numbers become
tensors; tuples, namedtuples, dicts and **lists** are structures (a ``DataLoader`` collates
``(x, y)`` samples into a list ``[x, y]``). Their position is saved as the number of batches
consumed; restoring iterates the iterable again and skips that many, which is exact for
iterables that repeat their sequence, and for a ``DataLoader`` shuffled by its ``generator``
(whose state when the iteration began is saved too).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Dict, Optional, cast

import numpy as np
import torch

from distribute._base import nest
from distribute.data import Dataset, Iterator, UNKNOWN_CARDINALITY
from distribute.data import _structure
from distribute.data._common import END
from distribute.distributed_input.interfaces import DistributedDataset
from distribute.errors import InvalidArgumentError

__all__ = ["BatchInput", "DatasetInput", "END", "IterableInput", "check_input", "input_cardinality",
           "make_input", "normalize_batch", "random_generator"]


class BatchInput(abc.ABC):
    """A worker's stream of batches, with a saveable position."""

    @abc.abstractmethod
    def next(self) -> Any:
        """The next batch, or END."""

    @abc.abstractmethod
    def state(self) -> Dict[str, Any]:
        """The position as plain data."""

    @abc.abstractmethod
    def restore(self, state: Dict[str, Any]) -> None:
        """Continues from a position saved by :meth:`state`."""

    @abc.abstractmethod
    def template(self) -> Any:
        """A structure shaped like the batches (to decode saved batches), or None if unknown."""

    def close(self) -> None:
        """Releases threads and files."""


class DatasetInput(BatchInput):
    """Batches of a ``distribute.data.Dataset``, iterated with an agreed shuffle seed."""

    def __init__(self, dataset: Dataset, seed: int) -> None:
        self._dataset = dataset
        self._iterator = Iterator(dataset, seed=seed)
        self._next = self._iterator.__next__

    def next(self) -> Any:
        try:
            return self._next()
        except StopIteration:
            return END

    def state(self) -> Dict[str, Any]:
        return {"iterator": self._iterator.state_dict()}

    def restore(self, state: Dict[str, Any]) -> None:
        self._iterator.load_state_dict(state["iterator"])
        self._next = self._iterator.__next__

    def template(self) -> Any:
        return self._dataset.element_spec

    def close(self) -> None:
        self._iterator.close()


def _normalize_leaf(value: Any) -> Any:
    if type(value) is torch.Tensor or isinstance(value, (torch.Tensor, bytes)):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind not in "SUO":
        return torch.from_numpy(np.ascontiguousarray(value))
    return _structure.convert_leaf(value, "a batch of the input iterable")


def normalize_batch(batch: Any) -> Any:
    """A batch of an iterable as an element: lists are structures, leaves become tensors."""
    if type(batch) is torch.Tensor:
        return batch
    if isinstance(batch, (list, tuple)):
        children = [normalize_batch(b) for b in batch]
        if nest.is_namedtuple(batch):
            return cast(Any, type(batch))._make(children)
        return children if isinstance(batch, list) else tuple(children)
    if isinstance(batch, Mapping):
        return {k: normalize_batch(v) for k, v in batch.items()}
    return _normalize_leaf(batch)


def random_generator(iterable: Any) -> Optional[torch.Generator]:
    """The ``torch.Generator`` an iterable shuffles with (a DataLoader's ``generator``), if any."""
    generator = getattr(iterable, "generator", None)
    return generator if isinstance(generator, torch.Generator) else None


class IterableInput(BatchInput):
    """Batches of any iterable (a DataLoader, a list of tensors, a generator object).

    A DataLoader with a ``generator`` draws its shuffle order from it when iterated: the
    generator's state at that moment is part of the saved position, so a shuffled DataLoader
    resumes exactly.
    """

    def __init__(self, iterable: Any) -> None:
        self._iterable = iterable
        self._generator = random_generator(iterable)
        self._generator_state = None if self._generator is None else self._generator.get_state()
        self._iterator = iter(iterable)
        self._consumed = 0
        self._first: Optional[Any] = None

    def next(self) -> Any:
        try:
            batch = next(self._iterator)
        except StopIteration:
            return END
        self._consumed += 1
        batch = normalize_batch(batch)
        if self._first is None:
            self._first = batch
        return batch

    def state(self) -> Dict[str, Any]:
        return {"consumed": self._consumed, "generator": self._generator_state}

    def restore(self, state: Dict[str, Any]) -> None:
        target = int(state["consumed"])
        if self._generator is not None and state.get("generator") is not None:
            self._generator.set_state(state["generator"])
            self._generator_state = state["generator"]
        self._iterator = iter(self._iterable)
        self._consumed = 0
        while self._consumed < target:
            if self.next() is END:
                raise InvalidArgumentError(
                    f"Cannot restore the input position: the iterable ended after {self._consumed} "
                    f"batches, but the saved state had consumed {target}. Restore into an iterable "
                    "that yields the same batches (for a DataLoader, give its sampler a seeded generator).")

    def template(self) -> Any:
        return self._first

    def close(self) -> None:
        close = getattr(self._iterator, "close", None)
        if callable(close):  # a generator object
            close()
        self._iterator = iter(())


def check_input(dataset: Any, what: str = "dataset") -> None:
    """Raises unless ``dataset`` is a Dataset or an iterable of batches."""
    if isinstance(dataset, Dataset):
        return
    if isinstance(dataset, DistributedDataset):
        raise TypeError(f"The {what} is already distributed ({type(dataset).__name__}); pass the "
                        "original distribute.data.Dataset (or DataLoader) instead.")
    if isinstance(dataset, (torch.Tensor, np.ndarray, str, bytes, Mapping)) or not hasattr(dataset, "__iter__"):
        raise TypeError(
            f"Expected the {what} to be a distribute.data.Dataset, a torch.utils.data.DataLoader or an "
            f"iterable of batches, received {type(dataset).__name__}. Wrap in-memory tensors with "
            "distribute.data.Dataset.from_tensor_slices(...).batch(global_batch_size).")


def make_input(dataset: Any, seed: int) -> BatchInput:
    """The batch input reading ``dataset``."""
    if isinstance(dataset, Dataset):
        return DatasetInput(dataset, seed)
    return IterableInput(dataset)


def input_cardinality(dataset: Any) -> int:
    """The number of batches: the Dataset's cardinality, ``len()`` of a sized iterable, else UNKNOWN."""
    if isinstance(dataset, Dataset):
        return dataset.cardinality()
    try:
        return len(dataset)
    except TypeError:
        return UNKNOWN_CARDINALITY
