"""The TF1-style input API kept on ``Strategy``: initializable iterators.

``make_dataset_iterator(dataset)`` and ``make_input_fn_iterator(input_fn)`` return an
:class:`InitializableIterator`: a distributed iterator with ``initialize()``, which restarts
it from the beginning of the data (TensorFlow 1 ran an initializer op; eagerly it re-creates
the iterator).
"""

from __future__ import annotations

from typing import Any

from distribute.data import Optional
from distribute.distributed_input.interfaces import DistributedIterator
from distribute.errors import OutOfRangeError

__all__ = ["InitializableIterator"]


class InitializableIterator(DistributedIterator):
    """An iterator over ``dataset`` (distributed or not) that ``initialize()`` restarts.

    Example:
        >>> import distribute
        >>> from distribute.data import Dataset
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> it = s.make_dataset_iterator(Dataset.range(8).batch(4))
        >>> first = it.get_next()
        >>> it.initialize()                       # back to the start
        >>> [t.tolist() for t in it.get_next().values]
        [[0, 1], [2, 3]]
    """

    def __init__(self, dataset: Any) -> None:
        self._dataset = dataset
        self._iterator = iter(dataset)

    def initialize(self) -> None:
        """Restarts the iteration from the beginning of the data."""
        self._iterator = iter(self._dataset)

    @property
    def element_spec(self) -> Any:
        """The element spec of the underlying (distributed) dataset."""
        return self._dataset.element_spec

    def get_next(self) -> Any:
        """The next element; raises :class:`~distribute.errors.OutOfRangeError` at the end."""
        get_next = getattr(self._iterator, "get_next", None)
        if get_next is not None:
            return get_next()
        try:
            return next(self._iterator)
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self) -> Optional:
        """The next element as an Optional, empty at the end."""
        as_optional = getattr(self._iterator, "get_next_as_optional", None)
        if as_optional is not None:
            return as_optional()
        try:
            return Optional(next(self._iterator), None)
        except StopIteration:
            return Optional.empty(None)

    def __next__(self) -> Any:
        return next(self._iterator)

    def state_dict(self) -> Any:
        """The position of the current iteration (see ``DistributedIterator.state_dict``)."""
        return self._iterator.state_dict()

    def load_state_dict(self, state: Any) -> None:
        """Continues the current iteration from a saved position."""
        self._iterator.load_state_dict(state)

    def __repr__(self) -> str:
        return f"<distribute.InitializableIterator over {self._dataset!r}>"
