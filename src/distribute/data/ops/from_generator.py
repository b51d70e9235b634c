"""Dataset.from_generator: elements yielded by a Python generator, checked against a signature.

Each yielded value is converted to the signature's dtypes (numbers and numpy arrays become
tensors, ``str`` becomes ``bytes``) and checked: a value of the wrong structure, a lossy
conversion (a float where an integer is expected) or a shape that does not fit the signature
raises at the element where it happens.

State: the number of elements consumed. A restored iterator calls the generator again and
skips that many elements, so restore is exact for generators that yield the same sequence
each time they are called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional, cast

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, as_dtype, string
from distribute.data import _structure
from distribute.data._common import END, check_callable, user_stop_error
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.errors import InvalidArgumentError

__all__ = ["GeneratorDataset", "GeneratorElementError"]


class GeneratorElementError(InvalidArgumentError, TypeError):
    """A yielded value that does not fit ``output_signature`` (its structure or dtype).

    tf.data raises InvalidArgumentError (the TypeError of its conversion, raised inside the
    generator's op); this is also a TypeError, so code written against either catches it.
    """


def _signature_from_types(output_types: Any, output_shapes: Any) -> Any:
    flat_types = nest.flatten(output_types)
    if output_shapes is None:
        flat_shapes: list = [None] * len(flat_types)
    else:
        flat_shapes = _flatten_shapes(output_types, output_shapes)
    specs = [TensorSpec(s, as_dtype(t)) for t, s in zip(flat_types, flat_shapes)]
    return nest.pack_sequence_as(output_types, specs)


def _flatten_shapes(types: Any, shapes: Any) -> list:
    """Flattens ``shapes`` (whose leaves are shapes: tuples or lists) along ``types``."""
    if not nest.is_nested(types):
        return [None if shapes is None else tuple(shapes)]
    if isinstance(types, Mapping):
        return [s for k in sorted(types) for s in _flatten_shapes(types[k], shapes[k])]
    if len(types) != len(shapes):
        raise ValueError(
            f"`output_shapes` must have the structure of `output_types`; received "
            f"output_types={types!r} and output_shapes={shapes!r}."
        )
    return [s for t, sh in zip(types, shapes) for s in _flatten_shapes(t, sh)]


def _leaves(value: Any, signature: Any) -> list:
    """The leaves of ``value`` along the nesting of ``signature`` (lists stay leaves)."""
    if isinstance(signature, Mapping):
        return [x for k in sorted(signature) for x in _leaves(value[k], signature[k])]
    if isinstance(signature, tuple):
        return [x for v, s in zip(value, signature) for x in _leaves(v, s)]
    return [value]


def _matches(value: Any, signature: Any) -> bool:
    """True when ``value`` has the nesting of ``signature`` (any tuple type fits a tuple)."""
    if isinstance(signature, Mapping):
        return isinstance(value, Mapping) and set(value) == set(signature) and all(
            _matches(value[k], signature[k]) for k in signature
        )
    if isinstance(signature, tuple):
        return isinstance(value, tuple) and len(value) == len(signature) and all(
            _matches(v, s) for v, s in zip(value, signature)
        )
    return not isinstance(value, (tuple, Mapping))


def _check_signature(signature: Any) -> Any:
    for spec in nest.flatten(signature):
        if not isinstance(spec, TensorSpec):
            raise TypeError(
                f"Expected `output_signature` to be a structure of distribute.TensorSpec; found "
                f"{spec!r}. Example: output_signature=(TensorSpec((), torch.int64), "
                f"TensorSpec((None,), torch.float32))."
            )
    return signature


def _convert(value: Any, spec: TensorSpec) -> Any:
    if spec.dtype is string:
        leaf = _structure.convert_leaf(value, "the generator's element")
        if isinstance(leaf, torch.Tensor):
            raise GeneratorElementError(f"`generator` yielded {value!r:.100} where a string was expected.")
        return leaf
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, (bytes, str)):
        raise GeneratorElementError(
            f"`generator` yielded the string {value!r:.100} where an element of dtype {spec.dtype} "
            f"was expected."
        )
    else:
        try:
            tensor = torch.as_tensor(np.asarray(value) if isinstance(value, list) else value)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise GeneratorElementError(
                f"`generator` yielded {value!r:.100} (type {type(value).__name__}) where an "
                f"element of dtype {spec.dtype} was expected; it cannot be converted ({exc})."
            ) from exc
    dtype = cast(torch.dtype, spec.dtype)  # not the string dtype: that returned above
    if tensor.dtype != dtype:
        lossy = (tensor.is_floating_point() or tensor.is_complex()) and not (
            dtype.is_floating_point or dtype.is_complex
        )
        if lossy:
            raise GeneratorElementError(
                f"`generator` yielded an element of dtype {tensor.dtype} where {spec.dtype} was "
                f"expected; converting it would truncate the values. Yield {spec.dtype} values "
                f"or change the signature's dtype."
            )
        tensor = tensor.to(dtype)
    return tensor


def _check_shape(leaf: Any, spec: TensorSpec) -> None:
    shape = tuple(getattr(leaf, "shape", ()))
    if spec.shape is None:
        return
    if len(shape) != len(spec.shape) or any(d is not None and d != s for d, s in zip(spec.shape, shape)):
        raise InvalidArgumentError(
            f"`generator` yielded an element of shape {shape} where an element of shape "
            f"{spec.shape} was expected. Yield values of that shape, or use None for the "
            f"dimensions that vary in output_signature."
        )


class _GeneratorIterator(IteratorImpl):
    op = "from_generator"

    def __init__(self, dataset: "GeneratorDataset") -> None:
        self._dataset = dataset
        self._specs = nest.flatten(dataset.element_spec)
        self._single = not nest.is_nested(dataset.element_spec)
        self._it: Any = None
        self._count = 0

    def _open(self) -> None:
        try:
            self._it = iter(self._dataset.generator(*self._dataset.args))
        except StopIteration as exc:
            raise user_stop_error(exc, "`generator` callable") from exc

    def _structure_error(self, value: Any) -> GeneratorElementError:
        expected = nest.map_structure(lambda s: s.dtype, self._dataset.element_spec)
        return GeneratorElementError(
            f"`generator` yielded an element that did not match the expected structure. The "
            f"expected structure was {expected}, but the yielded element was {value!r:.200}."
        )

    def _element(self, value: Any) -> Any:
        if self._single:
            if isinstance(value, (tuple, Mapping)):
                raise self._structure_error(value)
            leaf = _convert(value, self._specs[0])
            _check_shape(leaf, self._specs[0])
            return leaf
        signature = self._dataset.element_spec
        if not _matches(value, signature):
            raise self._structure_error(value)
        leaves = [_convert(v, s) for v, s in zip(_leaves(value, signature), self._specs)]
        for leaf, spec in zip(leaves, self._specs):
            _check_shape(leaf, spec)
        return nest.pack_sequence_as(signature, leaves)

    def next(self) -> Any:
        if self._it is None:
            self._open()
        try:
            value = next(self._it)
        except StopIteration:
            return END
        self._count += 1
        return self._element(value)

    def _state(self) -> Dict[str, Any]:
        return {"consumed": self._count}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._open()
        for _ in range(int(state["consumed"])):
            try:
                next(self._it)
            except StopIteration:
                break
        self._count = int(state["consumed"])

    def close(self) -> None:
        close = getattr(self._it, "close", None)
        self._it = None
        if close is not None:
            close()


def _args(args: Any) -> tuple:
    if args is None:
        return ()
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            f"Expected `args` to be a tuple of arguments for the generator; received args={args!r}."
        )
    return tuple(a.numpy() if isinstance(a, torch.Tensor) else a for a in args)


class GeneratorDataset(Dataset):
    """``Dataset.from_generator``; attributes ``generator``, ``args``."""

    _op = "from_generator"
    _runs_python = True

    def __init__(self, generator: Callable[..., Any], output_types: Any = None, output_shapes: Any = None,
                 args: Any = None, output_signature: Any = None, name: Optional[str] = None) -> None:
        self.generator = check_callable("generator", generator)
        self.args = _args(args)
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError(
                    "Give either `output_signature` or the older `output_types`/`output_shapes`, "
                    "not both."
                )
            self._signature = _check_signature(output_signature)
        elif output_types is not None:
            self._signature = _signature_from_types(output_types, output_shapes)
        else:
            raise TypeError(
                "from_generator needs `output_signature` (a structure of TensorSpec), or the "
                "older `output_types`; received neither."
            )
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return self._signature

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _GeneratorIterator(self)
