"""Dataset.scan: a running state through the elements (``tf.data.Dataset.scan``).

``scan_func(state, element)`` returns ``(new_state, output)``; the outputs are the elements.
The element is passed as one argument (a tuple element is not unpacked), as in tf.data. The
new state must keep the initial state's structure and dtypes; its shapes may change.

State: the running scan state (encoded like an element) and the input's state.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, check_callable, user_stop_error
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._probe import (
    first_element_spec, placeholder, placeholders_only, probe_spec, unknown_dims,
)

__all__ = ["ScanDataset", "ScanFuncError"]


class ScanFuncError(TypeError):
    """``scan_func`` returned something else than ``(new_state, output)`` of the right kind."""


def _pair_error(out: Any) -> TypeError:
    return ScanFuncError(
        f"Invalid `scan_func`. `scan_func` should return a pair consisting of new state and "
        f"the output value but it returned {type(out).__name__}: {out!r:.100}. Return "
        f"`(new_state, output)`."
    )


def _state_error(expected: Any, received: Any) -> TypeError:
    return ScanFuncError(
        f"Invalid `scan_func`. The new state must have the structure and dtypes of the initial "
        f"state: expected {expected}, received {received}. Cast it inside `scan_func`."
    )


def apply_scan(dataset: "ScanDataset", state: Any, element: Any) -> tuple:
    """One step: the normalised ``(new_state, output)`` of ``scan_func(state, element)``."""
    try:
        out = dataset.scan_func(state, element)
    except StopIteration as exc:
        raise user_stop_error(exc, "scan_func") from exc
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise _pair_error(out)
    new_state = _structure.normalize(out[0], "scan_func's new state")
    signature = _structure.signature(new_state)
    if signature != dataset._state_signature:
        raise _state_error(dataset._state_signature, signature)
    return new_state, _structure.normalize(out[1], "scan_func's output")


class _ScanIterator(UnaryIteratorImpl):
    op = "scan"

    def __init__(self, dataset: "ScanDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._dataset = dataset
        self._scan_state = dataset.initial_state

    def next(self) -> Any:
        element = self._input.next()
        if element is END:
            return END
        self._scan_state, output = apply_scan(self._dataset, self._scan_state, element)
        return output

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "scan_state": _structure.encode(self._scan_state)}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        spec = unknown_dims(_structure.spec_of(self._dataset.initial_state))
        self._scan_state = _structure.decode(state["scan_state"], spec)


class ScanDataset(UnaryDataset):
    """``ds.scan(initial_state, scan_func)``; attributes ``initial_state``, ``scan_func``."""

    _op = "scan"
    _runs_python = True

    def __init__(self, input_dataset: Dataset, initial_state: Any, scan_func: Callable[..., Any],
                 name: Optional[str] = None) -> None:
        self.initial_state = _structure.normalize(initial_state, "scan's initial_state")
        self.scan_func = check_callable("scan_func", scan_func)
        self._state_signature = _structure.signature(self.initial_state)
        super().__init__(input_dataset, name)
        self._check_function()

    def _check_function(self) -> None:
        """tf.data traces ``scan_func`` when the dataset is built: run it on a placeholder."""
        try:
            with placeholders_only(), torch.no_grad():
                apply_scan(self, self.initial_state, placeholder(self._input_dataset.element_spec, 1))
        except ScanFuncError:
            raise
        except Exception:  # noqa: BLE001  cannot run on placeholders: checked per element
            pass

    def _compute_element_spec(self) -> Any:
        def output(element: Any) -> Any:
            with torch.no_grad():
                return _structure.spec_of(apply_scan(self, self.initial_state, element)[1])
        return probe_spec(output, self._input_dataset.element_spec, lambda: first_element_spec(self))

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ScanIterator(self, ctx)
