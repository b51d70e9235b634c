"""Runs a per-element function on a whole batch of rows with ``torch.func.vmap``.

The speed path for ``map`` (and ``filter``) over in-memory rows: one call per batch instead of
one per element. It is used only when it gives what the per-element calls would give. On the
first batch the function runs both ways, on a copy of the rows, and the vectorized result
must match the per-element results of the first rows (same structure and dtypes, equal
integers, floats equal up to rounding: batched kernels may round differently in the last
bits). Anything vmap cannot run (data-dependent Python control flow, ``.item()``, random
ops, numpy calls, non-tensor outputs, ops without a batching rule) makes it fall back to
per-element calls for good. Like tf.data, which traces a function once, Python side effects
in the function are not guaranteed to run once per element.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import torch

from distribute._base import nest
from distribute.data import _structure

__all__ = ["Vectorizer"]

_CHECK_ROWS = 2  # rows checked against per-element calls on the first batch


def _all_tensors(rows: Any) -> bool:
    return all(isinstance(leaf, torch.Tensor) for leaf in nest.flatten(rows))


def _close(a: Any, b: Any) -> bool:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(torch.equal(a, b))


class Vectorizer:
    """Calls ``fn`` once per batch through vmap while that is known to be equivalent."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self._vmapped = torch.func.vmap(lambda element: _structure.call(fn, element))
        self.usable = True
        self._checked = False

    def _vmap(self, rows: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = self._vmapped(rows)
        if any("performance drop" in str(w.message) for w in caught):
            raise RuntimeError("vmap fell back to a per-example loop")
        return out

    def _matches(self, out: Any, pristine: Any) -> bool:
        per_row = _structure.unstack(out, _structure.Structure(out))
        inputs = _structure.unstack(pristine, _structure.Structure(pristine))
        for row, element in zip(per_row[:_CHECK_ROWS], inputs[:_CHECK_ROWS]):
            expected = _structure.normalize(_structure.call(self._fn, _structure.clone_rows(element)))
            if _structure.signature(expected) != _structure.signature(row):
                return False
            if not all(_close(a, b) for a, b in zip(nest.flatten(expected), nest.flatten(row))):
                return False
        return True

    def __call__(self, rows: Any) -> "tuple[Optional[Any], Any]":
        """Returns ``(batched output or None, rows)``; on None, map ``rows`` per element."""
        if not self.usable or not _all_tensors(rows):
            self.usable = False
            return None, rows
        pristine = _structure.clone_rows(rows) if not self._checked else rows
        try:
            out = self._vmap(rows)
            if not self._checked and not _all_tensors(out):
                raise TypeError("the function returns components that are not tensors")
            if not self._checked and not self._matches(out, pristine):
                raise RuntimeError("vectorized and per-element results differ")
        except Exception:  # noqa: BLE001  anything vmap cannot do means: map per element
            self.usable = False
            return None, pristine
        self._checked = True
        return out, rows
