"""Elements: nested structures of tensors, and the helpers that convert, batch and save them.

Two more leaf kinds exist, as in tf.data: ``None`` (spec ``NoneTensorSpec``), which
batches to None and unbatches to None rows, and a ``Dataset`` (spec ``DatasetSpec``),
which batches to a numpy array of ``Dataset`` objects (``dtype=object``, like strings).

An element is a leaf or a tuple, namedtuple or dict of elements. A leaf is a ``torch.Tensor``,
or, for strings (torch has no string tensors), ``bytes`` for a scalar and a numpy array of
``bytes`` (``dtype=object``) for a string tensor. Values given by users are normalised here:
numpy arrays and Python numbers become tensors (``int`` -> int64, ``float`` -> float32, as in
torch), ``str`` becomes UTF-8 ``bytes``, and a Python ``list`` is a value, not a structure
(as in tf.data): ``[1, 2]`` becomes a tensor of shape ``(2,)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, List, Sequence, cast

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, string
from distribute.data._specs import DatasetSpec, NoneTensorSpec
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


_DATASET_TYPES: tuple = ()  # (Dataset,), registered by distribute.data.dataset


def register_dataset_type(cls: type) -> None:
    """Makes instances of ``cls`` dataset components (dataset.py imports this module, so it
    registers its class instead of being imported here)."""
    global _DATASET_TYPES
    _DATASET_TYPES = (cls,)


_SAVABLE_DATASET: Any = None  # (class, rebuild): datasets that are plain lists of elements


def register_savable_dataset(cls: type, rebuild: Callable[[List[Any], Any], Any]) -> None:
    """Makes instances of ``cls`` (a dataset over a list of elements, kept in ``elements``:
    the windows of ``window`` and ``group_by_window``) savable in iterator states;
    ``rebuild(elements, element_spec)`` makes one again on restore."""
    global _SAVABLE_DATASET
    _SAVABLE_DATASET = (cls, rebuild)


def _is_dataset(value: Any) -> bool:
    return isinstance(value, _DATASET_TYPES)


def is_dataset_array(value: Any) -> bool:
    """True for a numpy array of Dataset objects (a batch of dataset components)."""
    return (isinstance(value, np.ndarray) and value.dtype == object and value.size > 0
            and _is_dataset(value.flat[0]))


def dataset_array(datasets: Sequence[Any]) -> np.ndarray:
    """A 1-D numpy array of Dataset objects (numpy must not iterate them)."""
    out = np.empty(len(datasets), dtype=object)
    for i, ds in enumerate(datasets):
        out[i] = ds
    return out


def _convert_list(value: list, what: str) -> Any:
    if value and all(_is_dataset(v) for v in value):
        return dataset_array(value)
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
    if value is None or _is_dataset(value):
        return value
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(
            f"Could not convert {value!r:.200} (type {type(value).__name__}) in {what} to a "
            f"tensor. Leaves must be tensors, numpy arrays, numbers, strings, datasets or None."
        ) from exc


def normalize(value: Any, what: str = "an element") -> Any:
    """Converts a user value to an element (tuples, namedtuples and dicts stay structures)."""
    if type(value) is torch.Tensor:
        return value
    if isinstance(value, tuple):
        children = [normalize(v, what) for v in value]
        if nest.is_namedtuple(value):
            return cast(Any, type(value))._make(children)
        return tuple(children)
    if isinstance(value, Mapping):
        items = [(k, normalize(v, what)) for k, v in value.items()]
        try:
            return cast(Any, type(value))(items)  # a Mapping subclass, most built from items
        except TypeError:  # a mapping type that cannot be built from items (defaultdict, ...)
            return dict(items)
    return convert_leaf(value, what)


def leaf_spec(leaf: Any) -> Any:
    """The fully known spec of one leaf: a TensorSpec, NoneTensorSpec or DatasetSpec."""
    if isinstance(leaf, torch.Tensor):
        return TensorSpec(tuple(leaf.shape), leaf.dtype)
    if leaf is None:
        return NoneTensorSpec()
    if _is_dataset(leaf):
        return DatasetSpec(leaf.element_spec)
    if is_dataset_array(leaf):
        return DatasetSpec(leaf.flat[0].element_spec, leaf.shape)
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
    if leaf is None:
        return "none"
    if _is_dataset(leaf) or is_dataset_array(leaf):
        return "dataset"
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
    if first is None:
        return None
    if _is_dataset(first):
        return dataset_array(leaves)
    if isinstance(first, torch.Tensor):
        try:
            return torch.stack(list(leaves))
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
    """The size of the first dimension of the first non-None leaf of a batched element."""
    leaves = [element] if not nest.is_nested(element) else nest.flatten(element)
    for leaf in leaves:
        if leaf is not None:
            return len(leaf)
    raise InvalidArgumentError("A batch whose components are all None has no number of rows.")


def _map_leaves(fn: Callable[[Any], Any], element: Any) -> Any:
    """``fn`` on every leaf except None leaves, which stay None."""
    if not nest.is_nested(element):
        return None if element is None else fn(element)
    return nest.map_structure(lambda leaf: None if leaf is None else fn(leaf), element)


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
    out: List[Any] = []
    for column in columns:
        pieces = list(column)
        if pieces[0] is None:
            out.append(None)
        elif isinstance(pieces[0], torch.Tensor):
            out.append(torch.cat(pieces))
        else:
            out.append(np.concatenate(pieces))
    return structure.pack(out)


def _unstack_leaf(leaf: Any) -> List[Any]:
    if isinstance(leaf, torch.Tensor):
        if leaf.dim() == 0:
            raise InvalidArgumentError(
                f"Cannot unbatch a scalar component (shape ()): every component must have a "
                f"first dimension. Received a tensor of dtype {leaf.dtype}."
            )
        return list(leaf.unbind(0))
    if isinstance(leaf, bytes) or _is_dataset(leaf) or leaf.ndim == 0:
        raise InvalidArgumentError(
            f"Cannot unbatch a scalar {'dataset' if _is_dataset(leaf) else 'string'} component: "
            f"it has no rows."
        )
    return list(leaf)


def unstack(element: Any, structure: Structure) -> List[Any]:
    """Splits a batched element into its rows (views)."""
    if structure.kind == "leaf":
        if element is None:
            raise InvalidArgumentError("Cannot unbatch an element that is None: it has no rows.")
        return _unstack_leaf(element)
    leaves = structure.flatten(element)
    columns = [None if leaf is None else _unstack_leaf(leaf) for leaf in leaves]
    known = [c for c in columns if c is not None]
    if not known:
        raise InvalidArgumentError(
            "Cannot unbatch an element whose components are all None: it has no rows."
        )
    filled = [[None] * len(known[0]) if c is None else c for c in columns]
    sizes = {len(c) for c in filled}
    if len(sizes) > 1:
        raise InvalidArgumentError(
            f"Cannot unbatch an element whose components have different first dimensions "
            f"({sorted(sizes)}); every component must have the same number of rows."
        )
    return [structure.pack(list(row)) for row in zip(*filled)]


def _encode_leaf(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.detach().clone()
    if leaf is None:
        return {"none": True}
    if _SAVABLE_DATASET is not None and isinstance(leaf, _SAVABLE_DATASET[0]):
        return {"dataset_elements": [encode(e) for e in leaf.elements]}
    if _is_dataset(leaf) or is_dataset_array(leaf):
        raise InvalidArgumentError(
            "The iterator's state would have to hold an element that is a Dataset, which is "
            "not plain data, so it cannot be saved. Save the state where no dataset element "
            "is buffered, or build the inner datasets inside a map/flat_map function."
        )
    if isinstance(leaf, bytes):
        return {"bytes": leaf.decode("latin-1")}
    return {"strings": [b.decode("latin-1") for b in leaf.reshape(-1)], "shape": list(leaf.shape)}


def _decode_leaf(value: Any, spec: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value
    if "dataset_elements" in value:
        inner = spec.element_spec
        return _SAVABLE_DATASET[1]([decode(e, inner) for e in value["dataset_elements"]], inner)
    if "none" in value:
        return None
    if "bytes" in value:
        return value["bytes"].encode("latin-1")
    return _strings_array([s.encode("latin-1") for s in value["strings"]]).reshape(value["shape"])


def encode(element: Any) -> List[Any]:
    """An element as plain data for a state dict: its leaves (tensors, or dicts for strings)."""
    return [_encode_leaf(leaf) for leaf in nest.flatten(element)]


def decode(encoded: Sequence[Any], template: Any) -> Any:
    """Rebuilds an element saved by :func:`encode`; ``template`` is its element_spec."""
    specs = nest.flatten(template)
    leaves = [_decode_leaf(v, s) for v, s in zip(encoded, specs)]
    return nest.pack_sequence_as(template, leaves)
