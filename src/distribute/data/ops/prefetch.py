"""Dataset.prefetch: prepares elements ahead of the consumer on a producer thread.

With an explicit ``buffer_size`` over an upstream that runs user Python code or does I/O
(a node with ``_runs_python`` upstream), the producer thread starts at the first ``next()`` and
keeps up to ``buffer_size`` elements ready, as in tf.data: the upstream's functions run
ahead of the consumer, which a program may observe (and wait for).

Otherwise (AUTOTUNE, or an upstream of in-memory tensors only, where running ahead changes
nothing a program can see) a thread hand-off, about 50 us on these machines, helps only if
producing an element takes long and the consumer does real work between elements (a
training step) that the producer can overlap with. The iterator then starts inline, in the
consumer's thread, and measures both; it starts the producer thread only when both exceed
:data:`POLICY.min_us` (see ``_Policy``), with a buffer of ``buffer_size`` elements (2 for
AUTOTUNE).

Either way the semantics are those of tf.data: the same elements in the same order, an
exception from upstream raised at its element, and elements already prepared but not
consumed are part of the saved state. The thread stops when the iterator is closed or
garbage-collected.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Deque, Dict, List, Optional

from distribute.data import _structure
from distribute.data._common import AUTOTUNE, END, check_int
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._parallel import Failure
from distribute.errors import InvalidArgumentError

__all__ = ["POLICY", "PrefetchDataset", "PrefetchIterator"]


class _Policy:
    """When the producer thread pays (tests set ``min_us = 0`` to force it)."""

    def __init__(self) -> None:
        self.min_us = 200.0  # both production and consumer work per element
        self.window = 8  # elements measured per decision
        self.recheck_every = 512  # elements between decisions while inline
        self.autotune_buffer = 2


POLICY = _Policy()


class PrefetchIterator(IteratorImpl):
    """Inline until a producer thread would pay; keeps its buffer in the state."""

    op = "prefetch"

    def __init__(self, input_iterator: IteratorImpl, spec_of_input: Any, buffer_size: int,
                 run_ahead: bool = False) -> None:
        """``run_ahead``: start the producer thread at the first ``next()`` (when
        ``buffer_size`` > 0) instead of waiting for the measurements to show it pays."""
        self._input = input_iterator
        self._spec = spec_of_input  # a callable giving the element_spec (for restore)
        self._capacity = POLICY.autotune_buffer if buffer_size == AUTOTUNE else buffer_size
        self._buffer: Deque[Any] = collections.deque()
        self._thread: Optional[threading.Thread] = None
        self._cond = threading.Condition()
        self._input_lock = threading.Lock()
        self._stop = False
        self._seen = 0
        self._produce_s = self._consume_s = 0.0
        self._returned_at = 0.0
        self._run_ahead = run_ahead and self._capacity > 0
        self.fast_rows = input_iterator.fast_rows and not self._run_ahead

    # ------------------------------------------------------------------ inline mode
    def next(self) -> Any:
        if self._thread is not None:
            return self._next_threaded()
        if self._run_ahead and not self._stop:
            self._start()
            return self._next_threaded()
        if self._buffer:
            return self._pop_inline()
        if self._capacity <= 0:
            return self._input.next()
        self._seen += 1
        phase = self._seen % POLICY.recheck_every
        if phase > POLICY.window + 1 or phase == 0:
            return self._input.next()
        return self._measured_next(phase)

    def _measured_next(self, phase: int) -> Any:
        start = time.perf_counter()
        if phase > 1:
            self._consume_s += start - self._returned_at
        value = self._input.next()
        self._returned_at = time.perf_counter()
        if phase > 1:
            self._produce_s += self._returned_at - start
        if phase == POLICY.window + 1:
            self._decide()
        return value

    def next_rows(self, n: int) -> Any:
        if self._thread is None and not self._buffer and not self._run_ahead:
            return self._input.next_rows(n)
        return super().next_rows(n)

    def next_list(self, n: int) -> List[Any]:
        if self._thread is None and not self._buffer and not self._run_ahead:
            return self._input.next_list(n)
        return super().next_list(n)

    def _decide(self) -> None:
        produce_us = self._produce_s / POLICY.window * 1e6
        consume_us = self._consume_s / POLICY.window * 1e6
        self._produce_s = self._consume_s = 0.0
        if produce_us >= POLICY.min_us and consume_us >= POLICY.min_us:
            self._start()

    def _pop_inline(self) -> Any:
        value = self._buffer.popleft()
        if type(value) is Failure:
            raise value.exception
        if value is END:
            self._buffer.appendleft(END)
        return value

    # ------------------------------------------------------------------ thread mode
    def _start(self) -> None:
        self._thread = threading.Thread(target=self._produce, name="distribute.data.prefetch", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        while True:
            with self._cond:
                while len(self._buffer) >= self._capacity and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
            with self._input_lock:  # held until the element is in the buffer (see _state)
                if self._stop:
                    return
                try:
                    value = self._input.next()
                except Exception as exc:  # noqa: BLE001  handed to the consumer at this element
                    value = Failure(exc)
                with self._cond:
                    self._buffer.append(value)
                    self._cond.notify_all()
            if value is END:
                return

    def _next_threaded(self) -> Any:
        with self._cond:
            while not self._buffer:
                self._cond.wait()
            value = self._buffer.popleft()
            if value is END:
                self._buffer.appendleft(END)
            self._cond.notify_all()
        if type(value) is Failure:
            raise value.exception
        return value

    # ------------------------------------------------------------------ state
    def _state(self) -> Dict[str, Any]:
        with self._input_lock:
            with self._cond:
                buffered = list(self._buffer)
            input_state = self._input.get_state()
        return {"buffer": [_encode(v) for v in buffered], "input": input_state}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._input.set_state(state["input"])
        spec = self._spec() if state["buffer"] else None
        self._buffer = collections.deque(_decode(v, spec) for v in state["buffer"])

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            with self._cond:
                self._stop = True
                self._cond.notify_all()
            if thread is not threading.current_thread():
                thread.join()
        self._input.close()


def _encode(value: Any) -> Any:
    if value is END:
        return {"end": True}
    if type(value) is Failure:
        return value.to_state()
    return {"element": _structure.encode(value)}


def _decode(value: Dict[str, Any], spec: Any) -> Any:
    if "end" in value:
        return END
    if "error" in value:
        return Failure.from_state(value)
    return _structure.decode(value["element"], spec)


class PrefetchDataset(UnaryDataset):
    """``ds.prefetch(buffer_size)``; attribute ``buffer_size`` (None is AUTOTUNE)."""

    _op = "prefetch"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, buffer_size: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        self.buffer_size = AUTOTUNE if buffer_size is None else check_int("buffer_size", buffer_size)
        if self.buffer_size < 0 and self.buffer_size != AUTOTUNE:
            raise InvalidArgumentError(
                f"Expected `buffer_size` of prefetch to be >= 0, or AUTOTUNE ({AUTOTUNE}); "
                f"received buffer_size={self.buffer_size}."
            )
        super().__init__(input_dataset, name)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        source = self._input_dataset
        # tf.data's semantics are observable only where upstream runs Python code or does I/O
        run_ahead = self.buffer_size > 0 and any(node._runs_python for node in source._walk())
        return PrefetchIterator(source._make_iterator(ctx), lambda: source.element_spec, self.buffer_size,
                                run_ahead)
