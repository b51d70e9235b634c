"""Dataset.map: applies a function to every element (``tf.data.Dataset.map``).

Three ways to run the function, chosen per iterator, all giving the same elements in the
same order:

* inline, in the consumer's thread (the default: no thread hand-off per element);
* vectorized: when the map feeds a ``batch`` over in-memory rows, once per batch through
  ``torch.func.vmap``, after checking it matches the per-element result (see ``_vectorize``);
* parallel: with ``num_parallel_calls`` > 1 or AUTOTUNE, chunks of elements on worker
  threads, but only once the function proves expensive enough for threads to pay
  (see ``_parallel``).

An exception from the function reaches the consumer with its type and traceback, at the
element that raised it; iteration may continue with the next element.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Callable, Deque, Dict, List, Optional, cast

import torch

from distribute.data import _structure
from distribute.data._common import (
    END, check_bool, check_callable, check_positive_or_autotune, user_stop_error,
)
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._parallel import POLICY, Failure, WorkerPool, run_chunk
from distribute.data.ops._probe import (
    UnsupportedOutputError, first_element_spec, output_spec, placeholders_only, probe_spec,
)
from distribute.data.ops._vectorize import Vectorizer
from distribute.errors import InvalidArgumentError

__all__ = ["MapDataset"]


def structure_error(what: str, expected: Any, received: Any) -> InvalidArgumentError:
    """The error for a function whose output structure or dtypes change between elements."""
    return InvalidArgumentError(
        f"The {what} returned an element whose structure or dtypes differ from the earlier "
        f"elements': expected {expected}, received {received}. It must return the same "
        f"structure and dtypes for every element (shapes may vary); cast or restructure the "
        f"output inside the function."
    )


def list_as_tuple(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with a returned top-level list made a tuple (tf.data's rule for map functions:
    the list usually holds separate results, e.g. of a numpy function, not rows to stack)."""
    def wrapped(*args: Any) -> Any:
        out = fn(*args)
        return tuple(out) if type(out) is list else out
    return wrapped


class _MapIterator(IteratorImpl):
    op = "map"

    def __init__(self, dataset: "MapDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._fn = dataset.map_func
        self._input = dataset._input_dataset._make_iterator(ctx)
        self._input_next = self._input.next
        self._pending: Deque[Any] = collections.deque()  # input elements not yet mapped
        self._out: Deque[Any] = collections.deque()  # mapped elements not yet returned
        self._sig: Any = None
        self._vec = Vectorizer(list_as_tuple(self._fn)) if ctx.options.map_vectorization_enabled else None
        self.fast_rows = self._input.fast_rows and self._vec is not None
        workers = WorkerPool.size_for(dataset.num_parallel_calls or 1)
        self._probe_left = POLICY.probe_elements if workers > 0 else 0
        self._workers = workers
        self._pool: Optional[WorkerPool] = None  # threads, once the probe found the function slow
        self._elapsed, self._timed, self._chunk = 0.0, 0, 0
        self._inline_us = 0.0  # measured per-element cost inline, to compare the threads with
        self._fills: List[float] = []  # per-element cost of the first threaded fills

    # --------------------------------------------------------------- applying the function
    def _apply(self, element: Any) -> Any:
        fn = self._fn
        try:
            out = fn(*element) if type(element) is tuple else fn(element)
        except StopIteration as exc:
            raise user_stop_error(exc, "map function") from exc
        if type(out) is torch.Tensor:
            sig = out.dtype
        else:
            if type(out) is list:  # as in tf.data: a returned list is a tuple of components
                out = tuple(out)
            out = _structure.normalize(out, "the map function's result")
            sig = _structure.signature(out)
        if sig != self._sig:
            self._check_signature(sig)
        return out

    def _check_signature(self, sig: Any) -> None:
        if self._sig is None:
            self._sig = sig
        else:
            raise structure_error("map function", self._sig, sig)

    def _timed_apply(self, element: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._apply(element)
        finally:
            self._elapsed += time.perf_counter() - start
            self._timed += 1
            self._probe_left -= 1
            if self._probe_left == 0:
                self._decide()

    def _decide(self) -> None:
        self._inline_us = self._elapsed / max(self._timed, 1) * 1e6
        if self._inline_us >= POLICY.min_us:
            self._chunk = POLICY.chunk_size(self._inline_us)
            self._pool = WorkerPool(self._workers)

    def _review(self, pool: WorkerPool, seconds: float, count: int) -> None:
        """Goes back inline if the first threaded fills (on ``pool``) were not faster than inline."""
        self._fills.append(seconds / max(count, 1) * 1e6)
        if len(self._fills) == POLICY.review_fills:
            if min(self._fills) > POLICY.keep_ratio * self._inline_us:
                pool.close()
                self._pool = None

    # --------------------------------------------------------------- per element
    def next(self) -> Any:
        if self._out or self._pending or self._pool is not None or self._probe_left:
            return self._next_slow()
        element = self._input_next()
        if element is END:
            return END
        return self._apply(element)

    def _next_slow(self) -> Any:
        if not self._out and self._pool is not None:
            self._fill_parallel(self._pool)
        if self._out:
            value = self._out.popleft()
            if type(value) is Failure:
                raise value.exception
            return value
        element = self._pending.popleft() if self._pending else self._input_next()
        if element is END:
            return END
        return self._timed_apply(element) if self._probe_left else self._apply(element)

    def _take_inputs(self, n: int) -> List[Any]:
        elements: List[Any] = []
        while len(elements) < n:
            element = self._pending.popleft() if self._pending else self._input_next()
            if element is END:
                break
            elements.append(element)
        return elements

    def _fill_parallel(self, pool: WorkerPool) -> None:
        start = time.perf_counter()
        chunks = [self._take_inputs(self._chunk) for _ in range(self._workers + 1)]
        tasks = [pool.submit(self._apply, c) for c in chunks[1:] if c]
        results = run_chunk(self._apply, chunks[0])
        for task in tasks:
            task.done.wait()
            results += cast(List[Any], task.result)  # set by the worker before it sets done
        self._out.extend(results)
        if len(self._fills) < POLICY.review_fills:
            self._review(pool, time.perf_counter() - start, len(results))

    def next_list(self, n: int) -> List[Any]:
        if self._out or self._pending or self._pool is not None or self._probe_left:
            return super().next_list(n)
        elements = self._input.next_list(n)
        out: List[Any] = []
        apply = self._apply
        try:
            for element in elements:
                out.append(apply(element))
        except Exception:
            self._pending.extend(elements[len(out) + 1:])  # the rest is mapped on later calls
            raise
        return out

    # --------------------------------------------------------------- batches of rows
    def next_rows(self, n: int) -> Any:
        if self._vec is None or not self._vec.usable or self._out or self._pending:
            return super().next_rows(n)
        rows = self._input.next_rows(n)
        if rows is END:
            return END
        out, rows = self._vec(rows)
        if out is None:
            self.fast_rows = False
            self._pending.extend(_structure.unstack(rows, _structure.Structure(rows)))
            return super().next_rows(n)
        sig = _structure.signature(out)
        if sig != self._sig:
            self._check_signature(sig)
        return out

    # --------------------------------------------------------------- state
    def _state(self) -> Dict[str, Any]:
        out = [v.to_state() if type(v) is Failure else _structure.encode(v) for v in self._out]
        return {
            "pending": [_structure.encode(e) for e in self._pending], "out": out,
            "input": self._input.get_state(),
        }

    def _restore(self, state: Dict[str, Any]) -> None:
        self._input.set_state(state["input"])
        in_spec = self._dataset._input_dataset.element_spec
        self._pending = collections.deque(_structure.decode(e, in_spec) for e in state["pending"])
        out_spec = self._dataset.element_spec if state["out"] else None
        self._out = collections.deque(
            Failure.from_state(v) if isinstance(v, dict) else _structure.decode(v, out_spec)
            for v in state["out"]
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._input.close()


class MapDataset(UnaryDataset):
    """``ds.map(map_func, num_parallel_calls, deterministic)``; those are its attributes."""

    _op = "map"
    _batch_size_passthrough = True
    _runs_python = True

    def __init__(self, input_dataset: Dataset, map_func: Callable[..., Any],
                 num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        self.map_func = check_callable("map_func", map_func)
        self.num_parallel_calls = check_positive_or_autotune("num_parallel_calls", num_parallel_calls)
        self.deterministic = check_bool("deterministic", deterministic, allow_none=True)
        super().__init__(input_dataset, name)
        self._check_on_placeholders()

    def _check_on_placeholders(self) -> None:
        """Raises now, as tf.data does when it traces the function, if the function returns
        something that cannot be an element; a function that cannot run on placeholders is
        checked at its first element instead."""
        try:
            with placeholders_only():
                self._spec_cache = self._compute_element_spec()
        except UnsupportedOutputError:
            raise
        except Exception:  # noqa: BLE001  needs real input: element_spec is computed later
            pass

    def _compute_element_spec(self) -> Any:
        fn = output_spec(list_as_tuple(self.map_func), "Dataset.map()")
        return probe_spec(fn, self._input_dataset.element_spec, lambda: first_element_spec(self))

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _MapIterator(self, ctx)

