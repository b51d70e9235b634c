"""Dataset.interleave: maps elements to datasets and interleaves their elements.

``cycle_length`` inner datasets are open at a time; each in turn gives ``block_length``
elements. When one ends, its slot takes the next input element when the cycle comes back to
it. The order is tf.data's deterministic order, also with ``num_parallel_calls``: then each
open inner iterator sits behind a :class:`~distribute.data.ops.prefetch.PrefetchIterator`,
which reads ahead on a thread only when that pays (expensive inner elements and a consumer
that does work in between); file readers, cheap per record, stay inline.

State: the outer input's position, the cycle and block position, and for each open slot the
input element that created it (re-mapped on restore) and its inner iterator's state.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

from distribute.data import _structure
from distribute.data._common import (
    AUTOTUNE, END, UNKNOWN_CARDINALITY, check_bool, check_callable, check_positive_or_autotune,
    user_stop_error,
)
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._probe import first_element_spec, placeholder, probe_spec
from distribute.data.ops.prefetch import PrefetchIterator

__all__ = ["InterleaveDataset", "apply_dataset_fn"]


def apply_dataset_fn(fn: Callable[..., Any], element: Any, what: str) -> Dataset:
    """Calls a dataset-returning function and checks that it returned a Dataset."""
    try:
        result = _structure.call(fn, element)
    except StopIteration as exc:
        raise user_stop_error(exc, f"function given to {what}") from exc
    if not isinstance(result, Dataset):
        raise TypeError(
            f"The function given to {what} must return a Dataset; it returned "
            f"{type(result).__name__} for the element {element!r:.100}. Wrap values with "
            f"Dataset.from_tensors() or Dataset.from_tensor_slices()."
        )
    return result


class _Slot:
    __slots__ = ("iterator", "element", "index")

    def __init__(self, iterator: IteratorImpl, element: Any, index: int) -> None:
        self.iterator, self.element, self.index = iterator, element, index


class _InterleaveIterator(IteratorImpl):
    def __init__(self, dataset: "InterleaveDataset", ctx: IterContext) -> None:
        self.op = dataset._op
        self._dataset, self._ctx = dataset, ctx
        self._input = dataset._input_dataset._make_iterator(ctx)
        self._cycle, self._block = dataset._cycle(), dataset.block_length
        self._slots: List[Optional[_Slot]] = [None] * self._cycle
        self._index = self._block_index = 0
        self._consumed = 0  # input elements taken so far
        self._input_done = False
        self._open = 0

    def _make_slot(self, element: Any, index: int) -> _Slot:
        inner = apply_dataset_fn(self._dataset.map_func, element, self.op)
        iterator = inner._make_iterator(self._ctx.derive(index))
        if self._dataset.num_parallel_calls is not None:
            iterator = PrefetchIterator(iterator, lambda: inner.element_spec, self._block)
        return _Slot(iterator, element, index)

    def _advance(self) -> None:
        self._index = (self._index + 1) % self._cycle
        self._block_index = 0

    def next(self) -> Any:
        while True:
            slot = self._slots[self._index]
            if slot is not None:
                if self._block_index < self._block:
                    value = slot.iterator.next()
                    if value is not END:
                        self._block_index += 1
                        return value
                    slot.iterator.close()
                    self._slots[self._index] = None
                    self._open -= 1
                self._advance()
            elif not self._input_done:
                element = self._input.next()
                if element is END:
                    self._input_done = True
                    continue
                self._slots[self._index] = self._make_slot(element, self._consumed)
                self._consumed += 1
                self._open += 1
            elif self._open == 0:
                return END
            else:
                self._advance()

    def _state(self) -> Dict[str, Any]:
        slots = [None if s is None else {"element": _structure.encode(s.element), "index": s.index,
                                          "state": s.iterator.get_state()} for s in self._slots]
        return {"cycle_index": self._index, "block_index": self._block_index, "consumed": self._consumed,
                "input_done": self._input_done, "slots": slots, "input": self._input.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self.close()
        self._input.set_state(state["input"])
        self._index, self._block_index = int(state["cycle_index"]), int(state["block_index"])
        self._consumed, self._input_done = int(state["consumed"]), bool(state["input_done"])
        spec = self._dataset._input_dataset.element_spec
        self._slots = [self._restore_slot(s, spec) for s in state["slots"]]
        self._open = sum(s is not None for s in self._slots)

    def _restore_slot(self, saved: Optional[Dict[str, Any]], spec: Any) -> Optional[_Slot]:
        if saved is None:
            return None
        slot = self._make_slot(_structure.decode(saved["element"], spec), int(saved["index"]))
        slot.iterator.set_state(saved["state"])
        return slot

    def close(self) -> None:
        for i, slot in enumerate(self._slots):
            if slot is not None:
                slot.iterator.close()
                self._slots[i] = None
        self._input.close()


class InterleaveDataset(UnaryDataset):
    """``ds.interleave(map_func, cycle_length, block_length, num_parallel_calls)``.

    Attributes ``map_func``, ``cycle_length``, ``block_length``, ``num_parallel_calls``,
    ``deterministic``. :meth:`_function_dataset_sample` shows a graph rewriter the dataset
    ``map_func`` builds (for example a file reader), see docs/data.md.
    """

    _op = "interleave"
    _runs_python = True

    def __init__(self, input_dataset: Dataset, map_func: Callable[..., Dataset],
                 cycle_length: Optional[int] = None, block_length: Optional[int] = None,
                 num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        self.map_func = check_callable("map_func", map_func)
        self.cycle_length = check_positive_or_autotune("cycle_length", cycle_length)
        self.block_length = check_positive_or_autotune("block_length", block_length, allow_none=True) or 1
        if self.block_length == AUTOTUNE:
            self.block_length = 1
        self.num_parallel_calls = check_positive_or_autotune("num_parallel_calls", num_parallel_calls)
        self.deterministic = check_bool("deterministic", deterministic, allow_none=True)
        super().__init__(input_dataset, name)

    def _cycle(self) -> int:
        if self.cycle_length is None or self.cycle_length == AUTOTUNE:
            return os.cpu_count() or 1
        return self.cycle_length

    def _compute_element_spec(self) -> Any:
        def inner_spec(element: Any) -> Any:
            return apply_dataset_fn(self.map_func, element, self._op).element_spec
        return probe_spec(inner_spec, self._input_dataset.element_spec, lambda: first_element_spec(self))

    def _cardinality(self) -> int:
        return 0 if self._input_dataset.cardinality() == 0 else UNKNOWN_CARDINALITY

    def _function_dataset_sample(self) -> Optional[Dataset]:
        """The dataset ``map_func`` builds (not iterated): for a placeholder input element,
        else for the first real input element; None if neither works."""
        try:
            return apply_dataset_fn(self.map_func, placeholder(self._input_dataset.element_spec, 1), self._op)
        except Exception:  # noqa: BLE001  the function cannot run on a placeholder: try real input
            pass
        iterator = iter(self._input_dataset)
        try:
            return apply_dataset_fn(self.map_func, next(iterator), self._op)
        except Exception:  # noqa: BLE001  no input, or the function fails: nothing to show
            return None
        finally:
            iterator.close()

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _InterleaveIterator(self, ctx)

