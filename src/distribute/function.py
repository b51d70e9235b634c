"""``distribute.function``: the ``tf.function`` counterpart.

Eager torch needs no tracing, so a ``Function`` calls the Python function directly. With an
``input_signature`` (one ``TensorSpec`` structure per positional parameter), every call is
bound to the function's parameters and checked: tensors must match their spec's dtype and
shape, and Python or numpy values are converted to tensors of the spec's dtype first (as
TensorFlow converts them), so the function always receives tensors. A ``PerReplicaSpec``
(what a distributed dataset's ``element_spec`` holds with several replicas) takes a
``PerReplica`` whose components fit its component specs, passed through unchanged. A call that
does not fit raises ``TypeError`` naming the argument, as ``tf.function`` does. A
``StopIteration`` escaping the function (``next(iterator)`` past the end) becomes
``distribute.errors.OutOfRangeError``, the error ``tf.function`` raises there. With
``jit_compile=True`` the function is compiled with ``torch.compile`` on first call.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np
import torch

from distribute._base.nest import flatten, is_namedtuple
from distribute._base.tensor_spec import StringDType, TensorSpec
from distribute._core.values import DistributedValues, PerReplica
from distribute.distributed_input.element_spec import PerReplicaSpec
from distribute.errors import OutOfRangeError

__all__ = ["Function", "function"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _BindError(TypeError):
    """A value that does not fit its spec (reported by ``Function`` with the call's context)."""


def _leaf_to_tensor(value: Any, spec: TensorSpec) -> Any:
    """``value`` as a tensor matching ``spec``; Python and numpy values are converted."""
    if isinstance(spec.dtype, StringDType):
        if not spec.is_compatible_with(value if isinstance(value, (bytes, np.ndarray)) else np.asarray(value)):
            raise _BindError(f"Can not cast {value!r} to {spec!r}")
        return value
    if not isinstance(value, torch.Tensor):
        value = _convert(value, spec)
    if not spec.is_compatible_with(value):
        raise _BindError(f"Can not cast {TensorSpec.from_tensor(value)!r} to {spec!r}")
    return value


def _convert(value: Any, spec: TensorSpec) -> torch.Tensor:
    try:
        raw = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        raise _BindError(f"Attempt to convert a value ({value!r}) with an unsupported type "
                         f"({type(value)}) to a Tensor") from None
    target = cast(torch.dtype, spec.dtype)  # string specs never get here (see _leaf_to_tensor)
    lossy = (raw.is_complex() and not target.is_complex) or (
        raw.is_floating_point() and not (target.is_floating_point or target.is_complex)) or (
        target == torch.bool and raw.dtype != torch.bool)
    if lossy:
        raise _BindError(f"Cannot convert {value!r} to a tensor of dtype {target}")
    return raw.to(target)


def _conform(value: Any, spec: Any, path: str) -> Any:
    """``value`` rebuilt with every leaf converted and checked against the spec structure;
    ``path`` names the argument (and the position inside it) in errors."""
    if isinstance(spec, PerReplicaSpec):
        return _check_per_replica(value, spec, path)
    if isinstance(spec, TensorSpec):
        if isinstance(value, DistributedValues):
            raise _BindError(f"argument `{path}` is a {type(value).__name__} but its spec is the plain {spec!r}; "
                             "use the distributed dataset's element_spec (a PerReplicaSpec) in input_signature")
        try:
            return _leaf_to_tensor(value, spec)
        except _BindError as exc:
            raise _BindError(f"argument `{path}`: {exc}") from None
    if isinstance(spec, dict):
        return _conform_mapping(value, spec, path)
    if isinstance(spec, (list, tuple)):
        return _conform_sequence(value, spec, path)
    raise _BindError(f"input_signature leaf {spec!r} is not a TensorSpec or PerReplicaSpec")


def _check_per_replica(value: Any, spec: PerReplicaSpec, path: str) -> Any:
    """``value`` itself when it is a ``PerReplica`` whose components fit ``spec``'s."""
    specs = spec.component_specs
    if not isinstance(value, PerReplica):
        raise _BindError(f"argument `{path}` must be a PerReplica of {len(specs)} component(s) for {spec!r}, "
                         f"received {type(value).__name__}: {value!r}")
    if len(value.values) != len(specs):
        raise _BindError(f"argument `{path}` has {len(value.values)} per-replica component(s), its spec "
                         f"{len(specs)}; was it made by a strategy with another number of replicas?")
    for replica, (component, component_spec) in enumerate(zip(value.values, specs)):
        if not component_spec.is_compatible_with(component):
            got = TensorSpec.from_tensor(component) if isinstance(component, (torch.Tensor, np.ndarray, bytes)) \
                else type(component).__name__
            raise _BindError(f"argument `{path}`, replica {replica}: {got!r} does not match {component_spec!r} "
                             f"({_difference(got, component_spec)})")
    return value


def _difference(got: Any, spec: TensorSpec) -> str:
    if not isinstance(got, TensorSpec):
        return "not a tensor"
    if got.dtype != spec.dtype:
        return f"dtype {got.dtype} instead of {spec.dtype}"
    return f"shape {got.shape} instead of {spec.shape}"


def _conform_mapping(value: Any, spec: dict, path: str) -> dict:
    if not isinstance(value, dict) or set(value) != set(spec):
        raise _BindError(f"argument `{path}`: {value!r} has different keys or type than the signature {spec!r}")
    return {k: _conform(value[k], spec[k], f"{path}[{k!r}]") for k in value}


def _conform_sequence(value: Any, spec: Sequence[Any], path: str) -> Any:
    if is_namedtuple(spec):
        same_kind = type(value) is type(spec)
    elif isinstance(spec, list):
        same_kind = isinstance(value, list)
    else:
        same_kind = isinstance(value, tuple) and not is_namedtuple(value)
    if not same_kind or len(value) != len(spec):
        raise _BindError(f"argument `{path}`: Can not cast {value!r} to the structure {spec!r}")
    items = [_conform(v, s, f"{path}[{i}]") for i, (v, s) in enumerate(zip(value, spec))]
    return type(value)(*items) if is_namedtuple(value) else type(value)(items)


def _python_signature(fn: Callable) -> Optional[inspect.Signature]:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none: calls are then checked positionally
        return None


class Function:
    """A callable wrapper made by :func:`function` (see there)."""

    __name__: str  # set from the wrapped function by ``functools.update_wrapper``

    def __init__(self, python_function: Callable, input_signature: Optional[Sequence[Any]], jit_compile: bool) -> None:
        self._python_function = python_function
        self._input_signature = None if input_signature is None else tuple(input_signature)
        self._jit_compile = jit_compile
        self._compiled: Optional[Callable] = None
        self._signature = _python_signature(python_function)
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self) -> Callable:
        """The wrapped Python function."""
        return self._python_function

    @property
    def input_signature(self) -> Optional[tuple]:
        """The signature calls are checked against, or ``None``."""
        return self._input_signature

    @property
    def jit_compile(self) -> bool:
        """Whether calls run the ``torch.compile``d function."""
        return self._jit_compile

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        return functools.partial(self._call, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(None, *args, **kwargs)

    def _call(self, instance: Any, *args: Any, **kwargs: Any) -> Any:
        if self._input_signature is not None:
            args, kwargs = self._bind(self._input_signature, instance, args, kwargs)
        if instance is not None:
            args = (instance,) + tuple(args)
        target = self._python_function
        if self._jit_compile:
            if self._compiled is None:
                self._compiled = torch.compile(self._python_function)
            target = self._compiled
        try:
            return target(*args, **kwargs)
        except StopIteration as exc:  # next(iterator) past the end, as tf.function reports it
            raise OutOfRangeError("End of sequence") from exc

    # -- input_signature ----------------------------------------------------------------
    def _parameters(self, bound_method: bool) -> Optional[List[inspect.Parameter]]:
        if self._signature is None:
            return None
        params = list(self._signature.parameters.values())
        return params[1:] if bound_method and params else params

    def _bind(self, signature: tuple, instance: Any, args: tuple, kwargs: dict) -> Tuple[tuple, dict]:
        params = self._parameters(instance is not None)
        try:
            if params is None:
                if kwargs or len(args) != len(signature):
                    raise _BindError(f"expected {len(signature)} positional argument(s)")
                return tuple(_conform(a, s, f"args[{i}]")
                             for i, (a, s) in enumerate(zip(args, signature))), kwargs
            return self._bind_parameters(signature, params, args, kwargs)
        except _BindError as exc:
            raise TypeError(
                f"Binding inputs to {self.__name__} failed due to `{exc}`. Received args: {args!r} and kwargs: "
                f"{kwargs!r} for input_signature: {list(signature)!r}.") from None

    def _bind_parameters(self, signature: tuple, params: List[inspect.Parameter], args: tuple,
                         kwargs: dict) -> Tuple[tuple, dict]:
        try:
            bound = inspect.Signature(params).bind(*args, **kwargs)
        except TypeError as exc:
            raise _BindError(str(exc)) from None
        specs = list(signature)
        arguments: Dict[str, Any] = bound.arguments
        for param in params:
            if param.kind in _POSITIONAL:
                if specs:
                    spec = specs.pop(0)
                    if param.name in arguments:
                        arguments[param.name] = _conform(arguments[param.name], spec, param.name)
                elif param.name in arguments:
                    raise _BindError(f"input_signature missing type constraint for {param.name}")
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                values = arguments.get(param.name, ())
                if len(values) != len(specs):
                    raise _BindError(f"input_signature has {len(specs)} constraint(s) for *{param.name} but "
                                     f"{len(values)} value(s) were passed")
                arguments[param.name] = tuple(_conform(v, s, f"{param.name}[{i}]")
                                              for i, (v, s) in enumerate(zip(values, specs)))
                specs = []
            elif param.name in arguments:
                raise _BindError(f"input_signature missing type constraint for {param.name}")
        if specs:
            raise _BindError(f"input_signature contains {len(specs)} extra type constraints")
        return bound.args, bound.kwargs


def _check_signature(fn: Callable, input_signature: Optional[Sequence[Any]]) -> None:
    params = _python_signature(fn)
    if input_signature is None or params is None:
        return
    kinds = [p.kind for p in params.parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return
    positional = sum(kind in _POSITIONAL for kind in kinds)
    if len(input_signature) > positional:
        raise TypeError(f"input_signature contains {len(input_signature) - positional} extra type constraints: "
                        f"{getattr(fn, '__name__', fn)!r} takes {positional} positional parameter(s), "
                        f"the signature has {len(input_signature)} entries.")


def function(fn: Optional[Callable] = None, input_signature: Optional[Sequence[Any]] = None,
             jit_compile: Optional[bool] = False, **unused: Any) -> Any:
    """Wraps ``fn`` like ``tf.function``; usable as ``@function`` or ``@function(...)``.

    Args:
        fn: the function to wrap (``None`` to use ``function(...)`` as a decorator factory).
        input_signature: optional list or tuple with one structure of ``TensorSpec`` and
            ``PerReplicaSpec`` (a distributed dataset's or iterator's ``element_spec``) per
            positional parameter. Calls are then bound and checked (``TypeError`` naming the
            argument when they do not fit); Python and numpy values are converted to tensors
            of the spec's dtype, ``PerReplica`` values are passed through.
        jit_compile: compile ``fn`` with ``torch.compile`` on first call (``None`` means False).
        **unused: other ``tf.function`` options (``autograph``, ``reduce_retracing``, ...),
            accepted and ignored: eager torch has nothing to trace.

    Example:
        >>> @function(input_signature=[TensorSpec(shape=(None,), dtype=torch.float32)])
        ... def double(x):
        ...     return 2 * x
        >>> double([1, 2])
        tensor([2., 4.])
    """
    if input_signature is not None and not isinstance(input_signature, (list, tuple)):
        raise TypeError(f"input_signature must be either a tuple or a list, got {type(input_signature)}: "
                        f"{input_signature!r}.")
    if input_signature is not None:
        bad = [spec for spec in flatten(list(input_signature)) if not isinstance(spec, (TensorSpec, PerReplicaSpec))]
        if bad:
            raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec objects, got "
                            f"invalid args {bad!r} with types {[type(b).__name__ for b in bad]}. (PerReplicaSpec "
                            "leaves, as in a distributed dataset's element_spec, are accepted too.)")
    if jit_compile is None:
        jit_compile = False
    if not isinstance(jit_compile, bool):
        raise TypeError(f"jit_compile must be a bool or None, received {jit_compile!r}.")
    if fn is None:
        return lambda f: function(f, input_signature=input_signature, jit_compile=jit_compile)
    if not callable(fn):
        raise TypeError(f"{fn!r} is not a callable object; function() wraps a Python function.")
    _check_signature(fn, input_signature)
    return Function(fn, input_signature, jit_compile)
