"""The TF1-style input API kept on ``Strategy``: initializable iterators.

``make_dataset_iterator(dataset)`` and ``make_input_fn_iterator(input_fn)`` return an
:class:`InitializableIterator`: a distributed iterator with ``initializer`` (and the older
``initialize()``), which restarts it from the beginning of the data (TensorFlow 1 ran an
initializer op; eagerly it re-creates the iterator). An ``input_fn`` may also return a
``get_next`` callable instead of a dataset: :class:`CallableIterator` then calls it once per
local replica at every step, as TensorFlow's input-function iterator does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from distribute._core.replica_context import InputContext
from distribute._core.values import regroup
from distribute.data import Optional
from distribute.distributed_input.interfaces import DistributedIterator
from distribute.errors import OutOfRangeError

__all__ = ["CallableIterator", "InitializableIterator", "make_input_fn_iterator"]


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
        """Restarts the iteration from the beginning of the data (deprecated: use ``initializer``)."""
        self._iterator = iter(self._dataset)

    @property
    def initializer(self) -> None:
        """Restarts the iteration (TensorFlow's initializer op, run eagerly when read)."""
        return self.initialize()

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


class CallableIterator(DistributedIterator):
    """The iterator of an ``input_fn`` that returned a ``get_next`` callable: every step calls
    it once per local replica; its ``OutOfRangeError`` or ``StopIteration`` ends the data.

    Example:
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> rows = iter(range(4))
        >>> it = s.make_input_fn_iterator(lambda ctx: lambda: next(rows))
        >>> it.get_next().values
        (0, 1)
    """

    def __init__(self, get_next: Callable[[], Any], num_local_replicas: int) -> None:
        self._fn = get_next
        self._num_local_replicas = num_local_replicas

    def initialize(self) -> None:
        """Nothing to restart: the callable keeps its own position (as in TensorFlow)."""
        return None

    @property
    def initializer(self) -> None:
        """See ``initialize``."""
        return self.initialize()

    @property
    def element_spec(self) -> None:
        """Unknown (``None``): a callable declares no structure."""
        return None

    def get_next(self) -> Any:
        """One call of the callable per local replica (a ``PerReplica`` structure for several)."""
        try:
            values = [self._fn() for _ in range(self._num_local_replicas)]
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None
        return values[0] if len(values) == 1 else regroup(values, always_wrap=True)

    def get_next_as_optional(self) -> Optional:
        """The next element as an Optional, empty at the end."""
        try:
            return Optional(self.get_next(), None)
        except OutOfRangeError:
            return Optional.empty(None)

    def __next__(self) -> Any:
        try:
            return self.get_next()
        except OutOfRangeError:
            raise StopIteration from None

    def __repr__(self) -> str:
        return f"<distribute.CallableIterator over {self._fn!r}>"


def make_input_fn_iterator(strategy: Any, input_fn: Callable[..., Any]) -> DistributedIterator:
    """``strategy.make_input_fn_iterator(input_fn)``: calls ``input_fn`` once with this worker's
    ``InputContext`` and iterates its dataset or ``get_next`` callable."""
    num_workers, worker_index = strategy.extended._input_workers()
    result = input_fn(InputContext(num_workers, worker_index, strategy.num_replicas_in_sync))
    if callable(result) and not isinstance(result, Iterable):
        return CallableIterator(result, strategy.extended._num_local_replicas)
    return InitializableIterator(strategy.distribute_datasets_from_function(lambda ctx: result))
