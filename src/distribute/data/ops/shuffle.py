"""Dataset.shuffle: a random order through a buffer of ``buffer_size`` elements.

The buffer holds the next ``buffer_size`` input elements; each output is a uniformly chosen
buffer slot, refilled with the next input element (or dropped once the input is over).
Randomness is reproducible: the random numbers come in blocks, block ``k`` from a
``torch.Generator`` seeded with ``mix(seed, k)``, so the state is just a counter. The seed of
an iterator mixes the user's seed (or the pipeline's random seed when None) with its salt
(the iteration number and repeat epoch) when ``reshuffle_each_iteration`` is on.

Over a random-access input the buffer holds indices, not elements, and each batch is
gathered with one ``index_select``: ``from_tensor_slices(x).shuffle(n).batch(b)`` does no
per-element work. Both paths give the same order.
"""

from __future__ import annotations

import random
import threading
from typing import Any, Callable, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_bool, check_int
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, mix
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["RandomStream", "ShuffleDataset"]

_BLOCK = 1024
_UNBOUNDED = 1 << 62


class RandomStream:
    """Reproducible random non-negative ints; the state is how many were drawn."""

    def __init__(self, seed: int, drawn: int = 0) -> None:
        self._seed = seed
        self._values: List[int] = []
        self.drawn = 0
        self._skip_to(drawn)

    def _skip_to(self, drawn: int) -> None:
        block, offset = divmod(drawn, _BLOCK)
        self._load(block)
        if offset:
            del self._values[-offset:]
        self.drawn = drawn

    def _load(self, block: int) -> None:
        generator = torch.Generator().manual_seed(mix(self._seed, block))
        values = torch.randint(0, 1 << 62, (_BLOCK,), generator=generator, dtype=torch.int64)
        self._values = values.tolist()
        self._values.reverse()

    def below(self, n: int) -> int:
        """A random int in [0, n)."""
        if not self._values:
            self._load(self.drawn // _BLOCK)
        self.drawn += 1
        return self._values.pop() % n

    def draw(self, k: int) -> List[int]:
        """The next ``k`` raw random ints (``below(n)`` is ``draw(1)[0] % n``)."""
        out: List[int] = []
        while len(out) < k:
            if not self._values:
                self._load(self.drawn // _BLOCK)
            take = min(k - len(out), len(self._values))
            chunk = self._values[len(self._values) - take:]
            del self._values[len(self._values) - take:]
            chunk.reverse()
            out += chunk
            self.drawn += take
        return out


class _ShuffleBase(IteratorImpl):
    """The buffer algorithm, over elements (subclass: over indices)."""

    op = "shuffle"

    def __init__(self, dataset: "ShuffleDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._size = dataset._buffer_capacity()
        self._seed = dataset._iterator_seed(ctx)
        self._rng = RandomStream(self._seed)
        self._buffer: List[Any] = []
        self._input_done = False
        self._filled = False

    #: Returns the next input (an element, or an index for the index variant) or END;
    #: set by each subclass, as a method or as the input iterator's bound ``next``.
    _pull: Callable[[], Any]

    def _step(self) -> Any:
        """One output of the buffer algorithm (an element or index), or END."""
        buffer = self._buffer
        if not self._filled:
            while len(buffer) < self._size and not self._input_done:
                item = self._pull()
                if item is END:
                    self._input_done = True
                else:
                    buffer.append(item)
            self._filled = True
        if not buffer:
            return END
        slot = self._rng.below(len(buffer))
        out = buffer[slot]
        item = END if self._input_done else self._pull()
        if item is END:
            self._input_done = True
            buffer[slot] = buffer[-1]
            buffer.pop()
        else:
            buffer[slot] = item
        return out

    def _common_state(self) -> Dict[str, Any]:
        return {"seed": self._seed, "drawn": self._rng.drawn, "input_done": self._input_done,
                "filled": self._filled}

    def _restore_common(self, state: Dict[str, Any]) -> None:
        self._seed = int(state["seed"])
        self._rng = RandomStream(self._seed, int(state["drawn"]))
        self._input_done, self._filled = bool(state["input_done"]), bool(state["filled"])


class _ShuffleIterator(_ShuffleBase):
    def __init__(self, dataset: "ShuffleDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._input = dataset._input_dataset._make_iterator(ctx)
        self._pull = self._input.next

    def next(self) -> Any:
        return self._step()

    def _state(self) -> Dict[str, Any]:
        return {**self._common_state(), "buffer": [_structure.encode(e) for e in self._buffer],
                "input": self._input.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._restore_common(state)
        self._input.set_state(state["input"])
        spec = self._dataset.element_spec
        self._buffer = [_structure.decode(e, spec) for e in state["buffer"]]

    def close(self) -> None:
        self._input.close()


class _IndexShuffleIterator(_ShuffleBase):
    """The same algorithm over indices of a random-access input; batches are gathers.

    Thread-safe without the top-level lock, like ``RandomAccessIterator``: the chosen
    elements are gathered 64 at a time and handed out by atomic ``list.pop()``; drawing and
    gathering the next chunk, the bulk path and the state take ``_lock``. The indices not yet
    returned are derived from how many elements are left, not popped per element.
    """

    fast_rows = True
    thread_safe = True

    def __init__(self, dataset: "ShuffleDataset", ctx: IterContext, ra: RandomAccess) -> None:
        super().__init__(dataset, ctx)
        self._ra, self._next_index = ra, 0
        self._length = _UNBOUNDED if ra.length is None else ra.length
        self._ahead: List[int] = []  # indices of the current chunk (first last)
        self._ahead_elements: List[Any] = []  # its elements not yet returned (first last)
        self._gathered = True  # False after a restore: _ahead holds indices not yet gathered
        self._lock = threading.Lock()

    def _remaining(self) -> List[int]:
        """The chosen indices not yet returned (first last)."""
        return self._ahead[:len(self._ahead_elements)] if self._gathered else self._ahead

    def _pull(self) -> Any:
        if self._next_index >= self._length:
            return END
        self._next_index += 1
        return self._next_index - 1

    def _indices(self, n: int) -> List[int]:
        """The next ``n`` chosen indices: ``_step`` repeated, with its phases in tight loops."""
        if not self._filled:
            self._fill_indices()
        out: List[int] = []
        while len(out) < n and self._buffer:
            if self._input_done:
                out += self._drain(n - len(out))
                continue
            steady = min(n - len(out), self._length - self._next_index)
            out += self._steady(steady) if steady > 0 else [self._step()]
        return out

    def _fill_indices(self) -> None:
        """The initial fill of ``_step``, at once."""
        take = min(self._size - len(self._buffer), self._length - self._next_index)
        self._buffer.extend(range(self._next_index, self._next_index + take))
        self._next_index += take
        self._input_done = len(self._buffer) < self._size
        self._filled = True

    def _steady(self, count: int) -> List[int]:
        """``count`` steps while the input lasts: each chosen slot takes the next index."""
        buffer, size, following = self._buffer, len(self._buffer), self._next_index
        out = []
        for value in self._rng.draw(count):
            slot = value % size
            out.append(buffer[slot])
            buffer[slot] = following
            following += 1
        self._next_index = following
        return out

    def _drain(self, count: int) -> List[int]:
        """Steps after the input ended: the chosen slot takes the last one's index."""
        buffer, out = self._buffer, []
        for value in self._rng.draw(min(count, len(buffer))):
            slot = value % len(buffer)
            out.append(buffer[slot])
            buffer[slot] = buffer[-1]
            buffer.pop()
        return out

    def next(self) -> Any:
        try:
            return self._ahead_elements.pop()
        except IndexError:
            return self._next_refilling()

    def _next_refilling(self) -> Any:
        with self._lock:
            while True:
                try:
                    return self._ahead_elements.pop()
                except IndexError:
                    if not self._refill():
                        return END

    def _refill(self) -> bool:
        """Gathers the next chunk of chosen elements (the current one is used up)."""
        ahead = self._remaining() or self._indices(64)[::-1]
        if not ahead:
            self._ahead, self._gathered = [], True
            return False
        rows = self._ra.gather(torch.tensor(ahead[::-1], dtype=torch.int64))
        self._ahead, self._gathered = ahead, True
        self._ahead_elements = _structure.unstack(rows, _structure.Structure(rows))[::-1]
        return True

    def next_rows(self, n: int) -> Any:
        with self._lock:
            chunk = self._ahead_elements
            if chunk:
                count = min(n, len(chunk))
                elements = chunk[len(chunk) - count:][::-1]
                del chunk[len(chunk) - count:]
                return _structure.batch_elements(elements, _structure.Structure(elements[0]))
            if self._ahead and not self._gathered:
                indices = self._ahead[::-1][:n]
                del self._ahead[len(self._ahead) - len(indices):]
            else:
                indices = self._indices(n)
            if not indices:
                return END
        return self._ra.gather(torch.tensor(indices, dtype=torch.int64))

    def _state(self) -> Dict[str, Any]:
        with self._lock:
            return {**self._common_state(), "indices": torch.tensor(self._buffer, dtype=torch.int64),
                    "next_index": self._next_index, "ahead": list(reversed(self._remaining()))}

    def _restore(self, state: Dict[str, Any]) -> None:
        with self._lock:
            self._restore_common(state)
            self._buffer = state["indices"].tolist()
            self._next_index = int(state["next_index"])
            self._ahead, self._ahead_elements = list(reversed(state["ahead"])), []
            self._gathered = False


class ShuffleDataset(UnaryDataset):
    """``ds.shuffle(buffer_size, seed, reshuffle_each_iteration)``; those are its attributes."""

    _op = "shuffle"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, buffer_size: int, seed: Optional[int] = None,
                 reshuffle_each_iteration: Optional[bool] = None, name: Optional[str] = None) -> None:
        self.buffer_size = check_int("buffer_size", buffer_size)
        if self.buffer_size <= 0 and self.buffer_size != UNKNOWN_CARDINALITY:
            raise InvalidArgumentError(
                f"Expected `buffer_size` to be a positive int (or UNKNOWN_CARDINALITY for the "
                f"whole dataset); received buffer_size={self.buffer_size}. A buffer of 1 keeps "
                f"the order; use about the dataset's size for a full shuffle."
            )
        self.seed = None if seed is None else check_int("seed", seed)
        self.reshuffle_each_iteration = check_bool(
            "reshuffle_each_iteration", True if reshuffle_each_iteration is None else reshuffle_each_iteration
        )
        self._depth = sum(1 for _ in input_dataset._walk())
        super().__init__(input_dataset, name)

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._unseeded = random.getrandbits(63)  # for seed=None, reshuffle_each_iteration=False

    def _buffer_capacity(self) -> int:
        return _UNBOUNDED if self.buffer_size == UNKNOWN_CARDINALITY else self.buffer_size

    def _iterator_seed(self, ctx: IterContext) -> int:
        """The seed of one iterator: the user's seed, or a random one (distinct per node)."""
        if self.seed is not None:
            base = mix(self.seed)
        elif self.reshuffle_each_iteration:
            base = mix(ctx.seed, self._depth)
        else:
            base = mix(self._unseeded, self._depth)
        return mix(base, ctx.salt) if self.reshuffle_each_iteration else base

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        ra = self._input_dataset._random_access()
        if ra is not None:
            return _IndexShuffleIterator(self, ctx, ra)
        return _ShuffleIterator(self, ctx)
