"""Elements: nested structures of tensors, and the helpers that convert, batch and save them.

An element is a leaf or a tuple, namedtuple or dict of elements. A leaf is a ``torch.Tensor``,
or, for strings (torch has no string tensors), ``bytes`` for a scalar and a numpy array of
``bytes`` (``dtype=object``) for a string tensor. Values given by users are normalised here:
numpy arrays and Python numbers become tensors (``int`` -> int64, ``float`` -> float32, as in
torch), ``str`` becomes UTF-8 ``bytes``, and a Python ``list`` is a value, not a structure
(as in tf.data): ``[1, 2]`` becomes a tensor of shape ``(2,)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, List, Sequence

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, string
from distribute.errors import InvalidArgumentError

__all__ = [
    "Structure",
    "batch_elements",
    "call",
    "concat_rows",
    "decode",
    "encode",
    "index_rows",
    "normalize",
    "num_rows",
    "signature",
    "slice_rows",
    "spec_of",
    "unstack",
]


def _strings_array(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=object)
    flat = [v.encode() if isinstance(v, str) else bytes(v) for v in array.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(array.shape)


def _is_string_list(value: Any) -> bool:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes))


def _convert_list(value: list, what: str) -> Any:
    if _is_string_list(value):
        return _strings_array(value)
    if value and all(isinstance(v, torch.Tensor) for v in value):
        try:
            return torch.stack(value)
        except RuntimeError as exc:
            raise InvalidArgumentError(
                f"Could not convert a list of tensors in {what} to one tensor: {exc}. "
                f"Use a tuple if the items are separate components."
            ) from exc
    try:
        return torch.as_tensor(np.asarray(value) if not value else value)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise InvalidArgumentError(
            f"Could not convert the list {value!r:.200} in {what} to a tensor ({exc}). Lists "
            f"are values, not structures, in the input pipeline: use a tuple for separate "
            f"components, or make every row the same length."
        ) from exc


def _convert_numpy(value: np.ndarray) -> Any:
    if value.dtype.kind in "SUO":
        return _strings_array(value) if value.ndim else _strings_array(value).item()
    if not value.flags.writeable or not value.flags.c_contiguous:
        value = np.ascontiguousarray(value).copy()
    return torch.from_numpy(value)


def convert_leaf(value: Any, what: str = "an element") -> Any:
    """Converts one leaf value to a tensor, ``bytes`` or a numpy ``bytes`` array."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, np.ndarray):
        return _convert_numpy(value)
    if isinstance(value, np.generic):
        return _convert_numpy(np.asarray(value))
    if isinstance(value, list):
        return _convert_list(value, what)
    if value is None:
        raise TypeError(
            f"None cannot be a component of {what}: every leaf must be a tensor, a number, a "
            f"numpy array or a string. Leave the component out or use an empty tensor."
        )
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(
            f"Could not convert {value!r:.200} (type {type(value).__name__}) in {what} to a "
            f"tensor. Leaves must be tensors, numpy arrays, numbers or strings."
        ) from exc


def normalize(value: Any, what: str = "an element") -> Any:
    """Converts a user value to an element (tuples, namedtuples and dicts stay structures)."""
    if type(value) is torch.Tensor:
        return value
    if isinstance(value, tuple):
        children = [normalize(v, what) for v in value]
        if nest.is_namedtuple(value):
            return type(value)._make(children)
        return tuple(children)
    if isinstance(value, Mapping):
        items = [(k, normalize(v, what)) for k, v in value.items()]
        try:
            return type(value)(items)
        except TypeError:  # a mapping type that cannot be built from items (defaultdict, ...)
            return dict(items)
    return convert_leaf(value, what)


def leaf_spec(leaf: Any) -> TensorSpec:
    """The fully known spec of one leaf."""
    if isinstance(leaf, torch.Tensor):
        return TensorSpec(tuple(leaf.shape), leaf.dtype)
    return TensorSpec.from_tensor(leaf)


def spec_of(element: Any) -> Any:
    """The structure of TensorSpecs that describes ``element`` exactly."""
    return nest.map_structure(leaf_spec, element)


def call(fn: Callable[..., Any], element: Any) -> Any:
    """Calls ``fn`` the way tf.data does: a plain tuple is unpacked into positional arguments."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def _leaf_signature(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.dtype
    return string


def signature(element: Any) -> Any:
    """Nesting plus leaf dtypes: what must stay the same from one element to the next."""
    if isinstance(element, torch.Tensor):
        return element.dtype
    if isinstance(element, tuple):
        kind = type(element) if nest.is_namedtuple(element) else tuple
        return (kind, tuple(signature(e) for e in element))
    if isinstance(element, Mapping):
        return ("dict", tuple((k, signature(element[k])) for k in sorted(element)))
    return _leaf_signature(element)


class Structure:
    """Fast flatten/pack for elements shaped like a template (computed once per iterator)."""

    __slots__ = ("template", "kind", "count")

    def __init__(self, template: Any) -> None:
        self.template = template
        if not nest.is_nested(template):
            self.kind = "leaf"
        elif type(template) is tuple and not any(nest.is_nested(t) for t in template):
            self.kind = "tuple"
        else:
            self.kind = "nested"
        self.count = len(nest.flatten(template))

    def flatten(self, element: Any) -> List[Any]:
        """The leaves of ``element``."""
        if self.kind == "leaf":
            return [element]
        if self.kind == "tuple":
            return list(element)
        return nest.flatten(element)

    def pack(self, leaves: Sequence[Any]) -> Any:
        """Rebuilds an element of this structure from its leaves."""
        if self.kind == "leaf":
            return leaves[0]
        if self.kind == "tuple":
            return tuple(leaves)
        return nest.pack_sequence_as(self.template, list(leaves))


def _stack_error(leaves: Sequence[Any], index: int, exc: Exception) -> InvalidArgumentError:
    shapes = [tuple(getattr(x, "shape", ())) for x in leaves]
    first = shapes[0]
    bad = next((i for i, s in enumerate(shapes) if s != first), None)
    detail = (
        f"the first element has shape {first} and element {bad} has shape {shapes[bad]}"
        if bad is not None else str(exc)
    )
    return InvalidArgumentError(
        f"Cannot batch tensors with different shapes in component {index}: {detail}. "
        f"Use padded_batch() to pad them to a common shape, or map() them to one shape first."
    )


def stack_leaves(leaves: Sequence[Any], index: int = 0) -> Any:
    """Stacks the same component of several elements along a new first dimension."""
    first = leaves[0]
    if isinstance(first, torch.Tensor):
        try:
            return torch.stack(leaves)
        except (RuntimeError, TypeError) as exc:
            raise _stack_error(leaves, index, exc) from None
    if isinstance(first, bytes):
        out = np.empty(len(leaves), dtype=object)
        out[:] = list(leaves)
        return out
    try:
        return np.stack(leaves)
    except ValueError as exc:
        raise _stack_error(leaves, index, exc) from None


def batch_elements(elements: Sequence[Any], structure: Structure) -> Any:
    """Stacks a list of elements of one structure into one batched element."""
    if structure.kind == "leaf":
        return stack_leaves(elements)
    columns = zip(*[structure.flatten(e) for e in elements])
    return structure.pack([stack_leaves(list(c), i) for i, c in enumerate(columns)])


def num_rows(element: Any) -> int:
    """The size of the first dimension of the first leaf of a batched element."""
    leaf = element if not nest.is_nested(element) else nest.flatten(element)[0]
    return len(leaf)


def _map_leaves(fn: Callable[[Any], Any], element: Any) -> Any:
    if not nest.is_nested(element):
        return fn(element)
    return nest.map_structure(fn, element)


def slice_rows(element: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of every leaf (views for tensors)."""
    return _map_leaves(lambda leaf: leaf[start:stop], element)


def index_rows(element: Any, index: torch.Tensor) -> Any:
    """Rows at ``index`` (a 1-D int64 tensor) of every leaf, as new tensors."""
    def take(leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor):
            return leaf.index_select(0, index)
        return leaf[index.numpy()]
    return _map_leaves(take, element)


def clone_rows(element: Any) -> Any:
    """A copy of a batched element that shares no memory with its source."""
    return _map_leaves(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf.copy(), element)


def concat_rows(parts: Sequence[Any]) -> Any:
    """Concatenates batched elements along their first dimension."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    structure = Structure(first)
    columns = zip(*[structure.flatten(p) for p in parts])
    out = []
    for column in columns:
        column = list(column)
        if isinstance(column[0], torch.Tensor):
            out.append(torch.cat(column))
        else:
            out.append(np.concatenate(column))
    return structure.pack(out)


def _unstack_leaf(leaf: Any) -> List[Any]:
    if isinstance(leaf, torch.Tensor):
        if leaf.dim() == 0:
            raise InvalidArgumentError(
                f"Cannot unbatch a scalar component (shape ()): every component must have a "
                f"first dimension. Received a tensor of dtype {leaf.dtype}."
            )
        return list(leaf.unbind(0))
    if isinstance(leaf, bytes) or leaf.ndim == 0:
        raise InvalidArgumentError("Cannot unbatch a scalar string component: it has no rows.")
    return list(leaf)


def unstack(element: Any, structure: Structure) -> List[Any]:
    """Splits a batched element into its rows (views)."""
    if structure.kind == "leaf":
        return _unstack_leaf(element)
    columns = [_unstack_leaf(leaf) for leaf in structure.flatten(element)]
    sizes = {len(c) for c in columns}
    if len(sizes) > 1:
        raise InvalidArgumentError(
            f"Cannot unbatch an element whose components have different first dimensions "
            f"({sorted(sizes)}); every component must have the same number of rows."
        )
    return [structure.pack(list(row)) for row in zip(*columns)]


def _encode_leaf(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.detach().clone()
    if isinstance(leaf, bytes):
        return {"bytes": leaf.decode("latin-1")}
    return {"strings": [b.decode("latin-1") for b in leaf.reshape(-1)], "shape": list(leaf.shape)}


def _decode_leaf(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value
    if "bytes" in value:
        return value["bytes"].encode("latin-1")
    return _strings_array([s.encode("latin-1") for s in value["strings"]]).reshape(value["shape"])


def encode(element: Any) -> List[Any]:
    """An element as plain data for a state dict: its leaves (tensors, or dicts for strings)."""
    return [_encode_leaf(leaf) for leaf in nest.flatten(element)]


def decode(encoded: Sequence[Any], template: Any) -> Any:
    """Rebuilds an element saved by :func:`encode`; ``template`` is its element_spec."""
    leaves = [_decode_leaf(v) for v in encoded]
    return nest.pack_sequence_as(template, leaves)
