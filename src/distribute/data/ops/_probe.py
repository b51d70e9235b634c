"""Infers the element_spec of a user function's output without a graph to trace.

tf.data traces a function symbolically; here the function is called on two placeholder
elements built from the input spec: unknown dimensions are 1 in the first and 2 in the
second, values are ones in the first and twos in the second. A dimension that differs
between the two outputs is unknown (``None``). When the function cannot run on placeholders
(it parses strings, say), the spec is read from the first real element instead, with every
dimension unknown. Python side effects of the function may therefore run once or twice more.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import _structure
from distribute.data._specs import DatasetSpec, NoneTensorSpec
from distribute.errors import InvalidArgumentError

__all__ = [
    "UnsupportedOutputError", "merge_specs", "placeholder", "placeholders_only", "probe_spec",
    "unknown_dims",
]

_PLACEHOLDERS_ONLY = contextvars.ContextVar("distribute.data.placeholders_only", default=False)


class UnsupportedOutputError(TypeError):
    """A user function returned a value that cannot be an element (a class, an object)."""


@contextlib.contextmanager
def placeholders_only() -> Iterator[None]:
    """Within it, :func:`probe_spec` never reads real elements (it raises instead).

    Used to check a function when its dataset is built, as tf.data does when it traces it,
    without running the pipeline.
    """
    token = _PLACEHOLDERS_ONLY.set(True)
    try:
        yield
    finally:
        _PLACEHOLDERS_ONLY.reset(token)


def _placeholder_leaf(spec: Any, variant: int) -> Any:
    if isinstance(spec, NoneTensorSpec):
        return None
    if isinstance(spec, DatasetSpec):
        if spec.shape:
            raise TypeError("no placeholder for an array of datasets: the first element is used")
        from distribute.data.ops._elements import ElementsDataset  # local: it imports dataset.py

        return ElementsDataset([placeholder(spec.element_spec, variant)], spec.element_spec)
    shape = spec.shape if spec.shape is not None else ()
    dims = [variant if d is None else d for d in shape]
    if spec.dtype is string:
        value = str(variant).encode()
        if not dims:
            return value
        out = np.empty(int(np.prod(dims)), dtype=object)
        out[:] = [value] * out.size
        return out.reshape(dims)
    if spec.dtype == torch.bool:
        return torch.ones(dims, dtype=torch.bool)
    return torch.full(dims, variant, dtype=spec.dtype)


def placeholder(spec: Any, variant: int) -> Any:
    """An element matching ``spec``: unknown dims and values are ``variant`` (1 or 2)."""
    return nest.map_structure(lambda s: _placeholder_leaf(s, variant), spec)


def _merge_leaf(a: Any, b: Any) -> Any:
    if not isinstance(a, TensorSpec) or not isinstance(b, TensorSpec):
        if isinstance(a, DatasetSpec) and isinstance(b, DatasetSpec) and a.is_compatible_with(b):
            return a.most_specific_compatible_type(b)
        if a != b:
            raise InvalidArgumentError(f"the function returns {a} for one input and {b} for another")
        return a
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorSpec(None, a.dtype)
    return TensorSpec(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype)


def merge_specs(a: Any, b: Any) -> Any:
    """Leaf-wise: dimensions that agree are kept, the others become None."""
    return nest.map_structure(_merge_leaf, a, b)


def unknown_dims(spec: Any) -> Any:
    """The same specs with every dimension unknown (rank kept)."""
    def unknown(s: Any) -> Any:
        if isinstance(s, NoneTensorSpec):
            return s
        if isinstance(s, DatasetSpec):  # its shape is always known
            return DatasetSpec(s.element_spec, (None,) * len(s.shape))
        return TensorSpec(None if s.shape is None else (None,) * len(s.shape), s.dtype)
    return nest.map_structure(unknown, spec)


def _run(fn: Callable[[Any], Any], input_spec: Any, variant: int) -> Any:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        return fn(placeholder(input_spec, variant))


def probe_spec(fn: Callable[[Any], Any], input_spec: Any,
               fallback: Optional[Callable[[], Any]] = None) -> Any:
    """The spec of ``fn``'s output, where ``fn`` maps an element to a spec structure."""
    try:
        first = _run(fn, input_spec, 1)
        second = _run(fn, input_spec, 2)
        if not nest.same_structure(first, second):
            raise InvalidArgumentError("the function returns different structures for different inputs")
        return merge_specs(first, second)
    except Exception as exc:  # the function may not run on placeholders; fall back below
        if fallback is None or _PLACEHOLDERS_ONLY.get():
            raise
        try:
            return unknown_dims(fallback())
        except StopIteration:
            raise InvalidArgumentError(
                f"Cannot infer the element_spec: the function does not run on placeholder "
                f"inputs ({type(exc).__name__}: {exc}) and the dataset has no element to read "
                f"it from."
            ) from exc


def first_element_spec(dataset: Any) -> Any:
    """The exact spec of the first element of ``dataset`` (StopIteration if it is empty)."""
    iterator = iter(dataset)
    try:
        return _structure.spec_of(next(iterator))
    finally:
        iterator.close()


def output_spec(fn: Callable[..., Any], what: str) -> Callable[[Any], Any]:
    """Wraps a user function so it returns the spec of its normalised output.

    A value that cannot be an element raises :class:`UnsupportedOutputError`; an exception
    of the function itself passes through unchanged.
    """
    def spec_of_output(element: Any) -> Any:
        out = _structure.call(fn, element)
        try:
            return _structure.spec_of(_structure.normalize(out, what))
        except TypeError as exc:
            raise UnsupportedOutputError(
                f"Unsupported return value from the function passed to {what}: {exc}"
            ) from exc
    return spec_of_output
