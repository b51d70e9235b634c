"""Dataset.window: groups consecutive elements into windows, each a structure of datasets.

Window ``k`` starts at input element ``k * shift`` and holds up to ``size`` elements taken
every ``stride`` elements from there (tf.data's rule). A window exists for every start
inside the input, so the last ones may be smaller than ``size``, unless ``drop_remainder``.
Each window is, for every component of the input, an ``ElementsDataset`` of that
component's values: ``ds.window(3).flat_map(lambda w: w.batch(3))`` batches the windows.

State: the buffered input elements (from the next window's start on), how many input
elements remain to be skipped before it (``shift`` larger than the window span), and the
input's state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from distribute._base import nest
from distribute.data import _structure
from distribute.data._common import END, check_bool, check_int
from distribute.data._specs import DatasetSpec
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._elements import component_windows
from distribute.errors import InvalidArgumentError

__all__ = ["WindowDataset"]


def _check_window_arg(what: str, value: Any) -> int:
    value = check_int(what, value)
    if value <= 0:
        raise InvalidArgumentError(
            f"Window {what} must be greater than zero; received {what}={value}."
        )
    return value


class _WindowIterator(UnaryIteratorImpl):
    op = "window"

    def __init__(self, dataset: "WindowDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._dataset = dataset
        self._span = (dataset.size - 1) * dataset.stride + 1
        self._buffer: List[Any] = []
        self._skip = 0
        self._done = False

    def _fill(self) -> None:
        while self._skip and not self._done:
            if self._input.next() is END:
                self._done = True
            else:
                self._skip -= 1
        while len(self._buffer) < self._span and not self._done:
            element = self._input.next()
            if element is END:
                self._done = True
            else:
                self._buffer.append(element)

    def next(self) -> Any:
        ds = self._dataset
        self._fill()
        window = self._buffer[::ds.stride][:ds.size]
        if not window or (ds.drop_remainder and len(window) < ds.size):
            self._buffer, self._done = [], True
            return END
        if ds.shift >= len(self._buffer):
            self._skip = ds.shift - len(self._buffer)
            self._buffer = []
        else:
            del self._buffer[:ds.shift]
        return component_windows(window, ds._input_dataset.element_spec)

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "buffer": [_structure.encode(e) for e in self._buffer],
                "skip": self._skip, "done": self._done}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        spec = self._dataset._input_dataset.element_spec
        self._buffer = [_structure.decode(e, spec) for e in state["buffer"]]
        self._skip, self._done = int(state["skip"]), bool(state["done"])


class WindowDataset(UnaryDataset):
    """``ds.window(size, shift, stride, drop_remainder)``; attributes of the same names."""

    _op = "window"

    def __init__(self, input_dataset: Dataset, size: int, shift: Optional[int] = None,
                 stride: int = 1, drop_remainder: bool = False, name: Optional[str] = None) -> None:
        self.size = _check_window_arg("size", size)
        self.shift = self.size if shift is None else _check_window_arg("shift", shift)
        self.stride = _check_window_arg("stride", stride)
        self.drop_remainder = check_bool("drop_remainder", drop_remainder)
        super().__init__(input_dataset, name)

    def _compute_element_spec(self) -> Any:
        return nest.map_structure(DatasetSpec, self._input_dataset.element_spec)

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if n < 0:
            return n
        if not self.drop_remainder:
            return -(-n // self.shift)
        return max(0, (n - (self.size - 1) * self.stride - 1) // self.shift + 1)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _WindowIterator(self, ctx)
