"""Iterators: the stateful side of a pipeline, whose position can be saved and restored.

A :class:`~distribute.data.Dataset` is an immutable description; ``iter(dataset)`` builds a
tree of internal iterators, one per node, and wraps its root in an :class:`Iterator`.

Every internal iterator implements :class:`IteratorImpl`: ``next()`` returns an element or
:data:`END`, ``next_rows(n)`` returns up to ``n`` elements already batched (nodes that hold
in-memory rows answer it with tensor slicing, the bulk path), and ``get_state()`` /
``set_state()`` turn the position into plain data: ints, floats, strings, bools, lists, dicts
and tensors, never arbitrary objects, so a state dict can be saved without pickle.

Randomness is derived, never drawn from global state: each top-level iterator has a ``seed``
(the user's, or a random one drawn once and kept in the state) and each sub-iterator a
``salt`` that says where it sits (which repeat epoch, which interleave input), so a restored
iterator recomputes exactly the random choices the original would have made.
"""

from __future__ import annotations

import random
import threading
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Optional as Opt

from distribute.data import _structure
from distribute.data._common import END, user_stop_error
from distribute.data.optional import Optional
from distribute.errors import InvalidArgumentError, OutOfRangeError

if TYPE_CHECKING:
    from distribute.data.dataset import Dataset
    from distribute.data.options import Options

__all__ = ["END", "IterContext", "Iterator", "IteratorImpl", "mix"]

STATE_FORMAT = "distribute.data.Iterator/1"
_MASK64 = (1 << 64) - 1


def mix(*values: int) -> int:
    """A deterministic 63-bit hash of integers (splitmix64 steps), for seeds and salts."""
    state = 0x9E3779B97F4A7C15
    for value in values:
        state = (state ^ (value & _MASK64)) & _MASK64
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        state = z ^ (z >> 31)
    return state >> 1


class IterContext:
    """What an internal iterator needs to know beyond its dataset: options, seed and salt."""

    __slots__ = ("options", "seed", "salt")

    def __init__(self, options: "Options", seed: int, salt: int) -> None:
        self.options = options
        self.seed = seed
        self.salt = salt

    def derive(self, *keys: int) -> "IterContext":
        """The context of a sub-iterator identified by ``keys`` (an epoch, an input index)."""
        return IterContext(self.options, self.seed, mix(self.salt, *keys))


class IteratorImpl:
    """Base of the per-node internal iterators (not public)."""

    op = "iterator"
    fast_rows = False
    #: True when ``next()`` may be called from several threads at once without a lock (each
    #: element returned exactly once); the top-level Iterator then skips its own lock.
    thread_safe = False

    def next(self) -> Any:
        """The next element, or :data:`END`."""
        raise NotImplementedError(f"{type(self).__name__} must implement next()")

    def next_list(self, n: int) -> List[Any]:
        """Between 1 and ``n`` next elements as a list; an empty list at the end.

        The per-element bulk path: one call per batch instead of one per element.
        """
        elements: List[Any] = []
        for _ in range(n):
            element = self.next()
            if element is END:
                break
            elements.append(element)
        return elements

    def next_full_list(self, n: int) -> List[Any]:
        """The next ``n`` elements as a list, fewer only at the end (``next_list`` may stop
        early, for example at the end of a reader's block)."""
        elements = self.next_list(n)
        while elements and len(elements) < n:
            more = self.next_list(n - len(elements))
            if not more:
                break
            elements += more
        return elements

    def next_rows(self, n: int) -> Any:
        """Between 1 and ``n`` next elements stacked into one batched element, or END."""
        elements = self.next_list(n)
        if not elements:
            return END
        return _structure.batch_elements(elements, _structure.Structure(elements[0]))

    def get_state(self) -> Dict[str, Any]:
        """The position as plain data."""
        return {"op": self.op, **self._state()}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a position saved by :meth:`get_state` from an iterator of the same node."""
        if not isinstance(state, dict) or state.get("op") != self.op:
            found = state.get("op") if isinstance(state, dict) else type(state).__name__
            raise InvalidArgumentError(
                f"The state does not belong to this pipeline: expected the state of a "
                f"{self.op!r} node, found {found!r}. Restore a state only into an iterator of "
                f"the same pipeline (same transformations in the same order)."
            )
        self._restore(state)

    def _state(self) -> Dict[str, Any]:
        return {}

    def _restore(self, state: Dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        """Releases threads, files and sub-iterators."""


class UnaryIteratorImpl(IteratorImpl):
    """An internal iterator reading one input node: its position and resources include the input's.

    Subclasses add their own fields with ``{**super()._state(), ...}`` and ``super()._restore``.
    """

    def __init__(self, dataset: Any, ctx: "IterContext") -> None:
        self._input = dataset._input_dataset._make_iterator(ctx)

    def _state(self) -> Dict[str, Any]:
        return {"input": self._input.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._input.set_state(state["input"])

    def close(self) -> None:
        self._input.close()


def _always_end() -> Any:
    return END


class Iterator:
    """Iterates a dataset; its position can be saved and restored (``tf.data.Iterator``).

    ``next()`` raises ``StopIteration`` at the end; :meth:`get_next` raises
    :class:`~distribute.errors.OutOfRangeError`. Background threads (prefetch, parallel map)
    stop when the iterator is closed or garbage-collected. An iterator may be shared between
    threads: each element goes to exactly one ``next()`` call.

    ``Iterator(dataset, seed=s)`` fixes the seed of the shuffles that have none of their own
    (distributed input gives every worker the same one); ``iter(dataset)`` draws it at random.

    Example:
        >>> it = iter(Dataset.range(10).shuffle(10, seed=1).batch(4))
        >>> first = next(it)
        >>> state = it.state_dict()            # plain data and tensors
        >>> again = iter(Dataset.range(10).shuffle(10, seed=1).batch(4))
        >>> again.load_state_dict(state)
        >>> bool((next(again) == next(it)).all())
        True
    """

    def __init__(self, dataset: "Dataset", seed: Opt[int] = None) -> None:
        """Iterates ``dataset``; ``seed`` seeds the shuffles that have no seed of their own
        (a random seed by default; it is part of the state either way)."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"Expected `seed` to be an int or None; received seed={seed!r}.")
        self._dataset = dataset
        self._options = dataset.options()
        self._impl: Opt[IteratorImpl] = None
        self._finalizer: Opt[weakref.finalize] = None
        self._lock = threading.RLock()  # serialises next() unless the pipeline is thread-safe
        self._guarded = True
        self._build(random.getrandbits(63) if seed is None else mix(seed), dataset._next_iteration_salt())

    def _build(self, seed: int, salt: int) -> IteratorImpl:
        """Starts a fresh pipeline iterator for ``seed`` and ``salt``; returns it."""
        self.close()
        self._seed, self._salt = seed, salt
        impl = self._dataset._make_iterator(IterContext(self._options, seed, salt))
        self._impl = impl
        self._guarded = not impl.thread_safe
        self._next = impl.next
        self._finalizer = weakref.finalize(self, impl.close)
        return impl

    def _pull(self) -> Any:
        """The next element or END, under the lock (one caller at a time)."""
        with self._lock:
            try:
                return self._next()
            except StopIteration as exc:  # from user code: never the end of the data
                raise user_stop_error(exc, "input pipeline (a user function)") from exc

    @property
    def element_spec(self) -> Any:
        """The structure of TensorSpecs of the elements (as the dataset's)."""
        return self._dataset.element_spec

    def __iter__(self) -> "Iterator":
        return self

    def __next__(self) -> Any:
        if self._guarded:
            # acquire/release rather than ``with``: half the cost on this per-element path
            lock = self._lock
            lock.acquire()
            try:
                element = self._next()
            except StopIteration as exc:  # from user code: never the end of the data
                raise user_stop_error(exc, "input pipeline (a user function)") from exc
            finally:
                lock.release()
        else:
            try:
                element = self._next()
            except StopIteration as exc:
                raise user_stop_error(exc, "input pipeline (a user function)") from exc
        if element is END:
            self._next = _always_end
            raise StopIteration
        return element

    def get_next(self) -> Any:
        """The next element; raises :class:`~distribute.errors.OutOfRangeError` at the end."""
        element = self._pull()
        if element is END:
            self._next = _always_end
            raise OutOfRangeError("End of sequence")
        return element

    def get_next_as_optional(self) -> Optional:
        """The next element wrapped in an :class:`Optional`, empty at the end."""
        element = self._pull()
        if element is END:
            self._next = _always_end
            return Optional.empty(self._dataset.element_spec)
        return Optional.from_value(element)

    def state_dict(self) -> Dict[str, Any]:
        """The position as plain data (ints, strings, lists, dicts) and tensors.

        Elements already read ahead (a prefetch buffer, a shuffle buffer, parallel map
        results) are part of the state, so nothing is lost or repeated on restore.
        """
        with self._lock:
            if self._impl is None:
                raise InvalidArgumentError("The iterator is closed; its state cannot be saved.")
            exhausted = self._next is _always_end
            return {
                "format": STATE_FORMAT, "seed": self._seed, "salt": self._salt,
                "exhausted": exhausted, "pipeline": self._impl.get_state(),
            }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from a position saved by :meth:`state_dict` of the same pipeline."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise InvalidArgumentError(
                f"Expected a state dict made by Iterator.state_dict() (format "
                f"{STATE_FORMAT!r}); received {type(state).__name__} with format "
                f"{state.get('format') if isinstance(state, dict) else None!r}."
            )
        with self._lock:
            impl = self._build(int(state["seed"]), int(state["salt"]))
            impl.set_state(state["pipeline"])
            if state.get("exhausted"):
                self._next = _always_end

    def close(self) -> None:
        """Stops background threads and releases files; later calls to next() end."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
                self._finalizer = None
            self._impl = None
            self._next = _always_end

    def __enter__(self) -> "Iterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<distribute.data.Iterator over {self._dataset!r}>"
