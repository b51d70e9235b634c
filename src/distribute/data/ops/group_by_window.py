"""Dataset.group_by_window: groups elements by a key and reduces each window of a group.

``key_func(element)`` gives an int64 key; each key collects its elements until it has
``window_size`` (or ``window_size_func(key)``) of them, then ``reduce_func(key, window)``
turns that window (an ``ElementsDataset``) into a dataset whose elements are returned.
At the end of the input, the incomplete windows are reduced in ascending key order, as
tf.data does.

State: the incomplete groups (their elements), the window being read (its key, elements,
and the reduced dataset's iterator state; the dataset is rebuilt on restore), the count of
windows reduced so far (the salt of their iterators) and the input's state.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_callable, check_int, user_stop_error
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._elements import ElementsDataset
from distribute.data.ops._probe import first_element_spec, placeholder, probe_spec
from distribute.errors import InvalidArgumentError

__all__ = ["GroupByWindowDataset"]


def _as_key(value: Any, what: str) -> int:
    if isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype == torch.int64:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    kind = (f"a {value.dtype} tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor)
            else type(value).__name__)
    raise ValueError(f"`{what}` must return a scalar int64 (an int or an int64 tensor of shape ()); "
                     f"it returned {kind}. Cast it with `.to(torch.int64)`.")


def _call(fn: Callable[..., Any], *args: Any, what: str) -> Any:
    try:
        return fn(*args)
    except StopIteration as exc:
        raise user_stop_error(exc, what) from exc


def _check_reduced(result: Any) -> Dataset:
    if not isinstance(result, Dataset):
        raise TypeError(
            f"Invalid `reduce_func`. `reduce_func` must return a single Dataset object but "
            f"it returned {type(result).__name__}. Return a dataset, e.g. `window.batch(n)`."
        )
    return result


class _Window:
    __slots__ = ("key", "elements", "iterator")

    def __init__(self, key: int, elements: List[Any], iterator: IteratorImpl) -> None:
        self.key, self.elements, self.iterator = key, elements, iterator


class _GroupByWindowIterator(UnaryIteratorImpl):
    op = "group_by_window"

    def __init__(self, dataset: "GroupByWindowDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._dataset, self._ctx = dataset, ctx
        self._groups: Dict[int, List[Any]] = {}
        self._current: Optional[_Window] = None
        self._reduced = 0
        self._done = False

    def _open(self, key: int, elements: List[Any], index: int) -> _Window:
        reduced = self._dataset._reduce(key, elements)
        return _Window(key, elements, reduced._make_iterator(self._ctx.derive(index)))

    def _add(self, element: Any) -> None:
        key = self._dataset._key(element)
        group = self._groups.setdefault(key, [])
        group.append(element)
        if len(group) >= self._dataset._window_size(key):
            del self._groups[key]
            self._current = self._open(key, group, self._reduced)
            self._reduced += 1

    def next(self) -> Any:
        while True:
            if self._current is not None:
                value = self._current.iterator.next()
                if value is not END:
                    return value
                self._current.iterator.close()
                self._current = None
            elif not self._done:
                element = self._input.next()
                if element is END:
                    self._done = True
                else:
                    self._add(element)
            elif self._groups:
                key = min(self._groups)
                self._current = self._open(key, self._groups.pop(key), self._reduced)
                self._reduced += 1
            else:
                return END

    def _state(self) -> Dict[str, Any]:
        current = None if self._current is None else {
            "key": self._current.key, "elements": [_structure.encode(e) for e in self._current.elements],
            "state": self._current.iterator.get_state()}
        groups = [{"key": k, "elements": [_structure.encode(e) for e in v]} for k, v in self._groups.items()]
        return {**super()._state(), "groups": groups, "current": current,
                "reduced": self._reduced, "done": self._done}

    def _restore(self, state: Dict[str, Any]) -> None:
        self.close()
        super()._restore(state)
        spec = self._dataset._input_dataset.element_spec
        self._groups = {int(g["key"]): [_structure.decode(e, spec) for e in g["elements"]]
                        for g in state["groups"]}
        self._reduced, self._done = int(state["reduced"]), bool(state["done"])
        saved = state["current"]
        if saved is not None:
            elements = [_structure.decode(e, spec) for e in saved["elements"]]
            self._current = self._open(int(saved["key"]), elements, self._reduced - 1)
            self._current.iterator.set_state(saved["state"])

    def close(self) -> None:
        if self._current is not None:
            self._current.iterator.close()
            self._current = None
        super().close()


class GroupByWindowDataset(UnaryDataset):
    """``ds.group_by_window(key_func, reduce_func, window_size, window_size_func)``."""

    _op = "group_by_window"
    _runs_python = True
    #: The key ``reduce_func`` is given when the element_spec is inferred (tf.data traces it
    #: with an unknown key; ``bucket_by_sequence_length`` uses -1 for "any bucket").
    spec_key = 0

    def __init__(self, input_dataset: Dataset, key_func: Callable[..., Any],
                 reduce_func: Callable[..., Dataset], window_size: Optional[int] = None,
                 window_size_func: Optional[Callable[[Any], Any]] = None,
                 name: Optional[str] = None) -> None:
        if (window_size is None) == (window_size_func is None):
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified.")
        self.key_func = check_callable("key_func", key_func)
        self.reduce_func = check_callable("reduce_func", reduce_func)
        self.window_size = None if window_size is None else check_int("window_size", window_size)
        if self.window_size is not None:
            self._check_size(self.window_size)
        self.window_size_func = None if window_size_func is None else check_callable(
            "window_size_func", window_size_func)
        super().__init__(input_dataset, name)
        self._check_functions()

    @staticmethod
    def _check_size(size: int) -> int:
        if size <= 0:
            raise InvalidArgumentError(f"Window size must be greater than zero, but got {size}.")
        return size

    def _key(self, element: Any) -> int:
        return _as_key(_call(lambda e: _structure.call(self.key_func, e), element, what="key_func"),
                       "key_func")

    def _window_size(self, key: int) -> int:
        if self.window_size is not None:
            return self.window_size
        assert self.window_size_func is not None  # one of the two is given (checked in __init__)
        size = _call(self.window_size_func, torch.tensor(key), what="window_size_func")
        return self._check_size(_as_key(size, "window_size_func"))

    def _reduce(self, key: int, elements: List[Any]) -> Dataset:
        window = ElementsDataset(elements, self._input_dataset.element_spec)
        return _check_reduced(_call(self.reduce_func, torch.tensor(key), window, what="reduce_func"))

    def _check_functions(self) -> None:
        """tf.data traces the functions when the dataset is built; check them on a placeholder."""
        try:
            element = placeholder(self._input_dataset.element_spec, 1)
            with torch.no_grad():
                key = _structure.call(self.key_func, element)
        except Exception:  # noqa: BLE001  cannot run on placeholders: checked per element
            return
        _as_key(key, "key_func")
        try:
            reduced = self.reduce_func(torch.tensor(0), ElementsDataset([element], self._input_dataset.element_spec))
        except Exception:  # noqa: BLE001  as above
            return
        _check_reduced(reduced)

    def _compute_element_spec(self) -> Any:
        def reduced_spec(element: Any) -> Any:
            return self._reduce(self.spec_key, [element]).element_spec
        return probe_spec(reduced_spec, self._input_dataset.element_spec, lambda: first_element_spec(self))

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _GroupByWindowIterator(self, ctx)
