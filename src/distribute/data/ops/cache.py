"""Dataset.cache: keeps the elements of the first complete iteration, in memory or in files.

The first iterator that reaches the end publishes what it saw; later iterators (later
epochs of a ``repeat``, later ``for`` loops) read that instead of running the input again.
An iteration that stops early, or that was restored from a saved state mid-way, publishes
nothing. With ``filename=""`` the cache lives in the dataset object; otherwise in files
(see ``_cache_files``) that later programs reuse.

State: in writing mode, the input's position and how many elements were recorded; a restore
replays those from the input (same seed and salt, so the same elements) before continuing,
so the cache it publishes is complete. In reading mode, the position in the cache. A memory
cache does not survive the process, so restoring a reading iterator elsewhere first rebuilds
the cache by running the input with the seed and salt of the iteration that filled it.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, cast

from distribute.data._common import END
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._cache_files import CHUNK_ELEMENTS, CacheFiles

__all__ = ["CacheDataset"]


class _WriteIterator(IteratorImpl):
    """Passes the input through and records it."""

    op = "cache"

    def __init__(self, dataset: "CacheDataset", ctx: IterContext) -> None:
        self._dataset, self._ctx = dataset, ctx
        self._input = dataset._input_dataset._make_iterator(ctx)
        self._recorded: Optional[List[Any]] = [] if not dataset.filename else None
        self._writer: Optional[Any] = None  # made at the first element (it takes the lock file)
        self._count = 0
        self._open = True  # False once published or abandoned
        self._published_memory = False  # published by this iterator before its input ended
        # a memory cache is complete once it holds as many elements as the input has (tf.data)
        known = dataset._input_dataset.cardinality() if not dataset.filename else -1
        self._complete_at = known if known >= 0 else None

    def next(self) -> Any:
        if self._open and self._writer is None and self._dataset.filename:
            self._writer = self._dataset._checked_files.new_writer()  # before any input is consumed
        value = self._input.next()
        if not self._open:
            return value
        if value is END:
            self._publish()
        else:
            self._record(value)
        return value

    def _record(self, value: Any) -> None:
        self._count += 1
        if self._dataset.filename:
            if self._writer is None:
                self._writer = self._dataset._checked_files.new_writer()
            self._writer.add(value)
        else:
            assert self._recorded is not None, "a memory cache records until it is abandoned"
            self._recorded.append(value)
            if self._count == self._complete_at:
                self._publish()

    def _publish(self) -> None:
        self._open = False
        if self._dataset.filename:
            if self._writer is None:  # an empty input: an empty cache
                self._writer = self._dataset._checked_files.new_writer()
            self._writer.commit()
            self._writer = None
            return
        self._published_memory = True
        if self._dataset._memory is None:
            self._dataset._memory = self._recorded
            self._dataset._memory_source = (self._ctx.seed, self._ctx.salt)

    def _state(self) -> Dict[str, Any]:
        # a memory cache published here is rebuilt by the same replay in a new process
        recording = self._open or self._published_memory
        return {"mode": "write", "recording": recording, "recorded": self._count,
                "input": self._input.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        """Replays the part already recorded (same seed and salt), then takes the saved position."""
        if state["recording"]:
            replay = self._dataset._input_dataset._make_iterator(self._ctx)
            try:
                for _ in range(int(state["recorded"])):
                    value = replay.next()
                    if value is END:
                        break
                    self._record(value)
            finally:
                replay.close()
        else:
            self._abandon()
        self._input.set_state(state["input"])

    def _abandon(self) -> None:
        self._open, self._recorded = False, None
        if self._writer is not None:
            self._writer.discard()
            self._writer = None

    def close(self) -> None:
        if self._open:
            self._abandon()
        self._input.close()


class _MemoryReadIterator(IteratorImpl):
    op = "cache"

    def __init__(self, elements: List[Any], source: tuple) -> None:
        self._elements, self._source = elements, source
        self._position = 0

    def next(self) -> Any:
        if self._position >= len(self._elements):
            return END
        self._position += 1
        return self._elements[self._position - 1]

    def _state(self) -> Dict[str, Any]:
        seed, salt = self._source
        return {"mode": "read", "position": self._position, "seed": seed, "salt": salt}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._position = int(state["position"])


class _FileReadIterator(IteratorImpl):
    op = "cache"

    def __init__(self, dataset: "CacheDataset") -> None:
        self._files, self._spec = dataset._checked_files, lambda: dataset.element_spec
        self._count = int(self._files.read_index()["count"])
        self._position = 0
        self._chunk_index = -1
        self._chunk: List[Any] = []

    def next(self) -> Any:
        if self._position >= self._count:
            return END
        index, offset = divmod(self._position, CHUNK_ELEMENTS)
        if index != self._chunk_index:
            self._chunk, self._chunk_index = self._files.read_chunk(index, self._spec()), index
        self._position += 1
        return self._chunk[offset]

    def _state(self) -> Dict[str, Any]:
        return {"mode": "read", "position": self._position}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._position = int(state["position"])


class CacheDataset(UnaryDataset):
    """``ds.cache(filename)``; attribute ``filename`` ("" for memory)."""

    _op = "cache"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, filename: Any = "", name: Optional[str] = None) -> None:
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(
                f"Expected `filename` to be a str or path (\"\" for memory); received {filename!r}."
            )
        self.filename = os.fspath(filename)
        self._files = CacheFiles(self.filename) if self.filename else None
        super().__init__(input_dataset, name)
        self._runs_python = bool(self.filename)  # reads and writes files

    @property
    def _checked_files(self) -> CacheFiles:
        """The cache's files (only a file cache, one with a ``filename``, has them)."""
        assert self._files is not None, "a memory cache has no files"
        return self._files

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._memory: Optional[List[Any]] = None
        self._memory_source: Optional[tuple] = None

    def _fill(self, ctx: IterContext) -> List[Any]:
        """Runs the input to the end with ``ctx`` and returns (and keeps) its elements."""
        iterator, elements = self._input_dataset._make_iterator(ctx), []
        try:
            while (value := iterator.next()) is not END:
                elements.append(value)
        finally:
            iterator.close()
        if self._memory is None:
            self._memory, self._memory_source = elements, (ctx.seed, ctx.salt)
        return elements

    def _reader(self) -> Optional[IteratorImpl]:
        """A reader of the published cache, or None when there is none yet."""
        if not self.filename:
            if self._memory is None:
                return None
            return _MemoryReadIterator(self._memory, cast(tuple, self._memory_source))  # set with _memory
        return _FileReadIterator(self) if self._checked_files.complete() else None

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _CacheIterator(self, ctx)


class _CacheIterator(IteratorImpl):
    """Reads the published cache if there is one, else writes; a restore picks the saved mode."""

    op = "cache"
    next: Callable[[], Any]  # the inner iterator's own next, bound per instance (no extra call per element)

    def __init__(self, dataset: CacheDataset, ctx: IterContext) -> None:
        self._dataset, self._ctx = dataset, ctx
        self._inner = dataset._reader() or _WriteIterator(dataset, ctx)
        self.next = self._inner.next

    def _state(self) -> Dict[str, Any]:
        return self._inner._state()

    def _restore(self, state: Dict[str, Any]) -> None:
        self._inner.close()
        if state["mode"] == "write":
            self._inner = _WriteIterator(self._dataset, self._ctx)
        elif self._dataset.filename:
            self._inner = _FileReadIterator(self._dataset)
        else:
            source = (int(state["seed"]), int(state["salt"]))
            elements = self._dataset._memory
            if elements is None or self._dataset._memory_source != source:
                elements = self._dataset._fill(IterContext(self._ctx.options, *source))
            self._inner = _MemoryReadIterator(elements, source)
        self._inner._restore(state)
        self.next = self._inner.next

    def close(self) -> None:
        self._inner.close()
