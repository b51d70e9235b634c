"""``distribute.function``: the ``tf.function`` counterpart.

Eager torch needs no tracing, so a ``Function`` calls the Python function directly. It checks
each call against an optional ``input_signature`` (a list of ``TensorSpec`` structures) and,
with ``jit_compile=True``, compiles the function with ``torch.compile`` on first call.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

import torch

from distribute._core.nest import flatten, same_structure
from distribute._core.tensor_spec import TensorSpec

__all__ = ["Function", "function"]


class Function:
    """A callable wrapper made by :func:`function`."""

    def __init__(self, python_function: Callable, input_signature: Optional[Sequence[Any]], jit_compile: bool) -> None:
        self._python_function = python_function
        self._input_signature = None if input_signature is None else tuple(input_signature)
        self._jit_compile = jit_compile
        self._compiled: Optional[Callable] = None
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self) -> Callable:
        """The wrapped Python function."""
        return self._python_function

    @property
    def input_signature(self) -> Optional[tuple]:
        """The signature calls are checked against, or ``None``."""
        return self._input_signature

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def _check(self, args: tuple, kwargs: dict) -> None:
        signature = self._input_signature
        if signature is None:
            return
        if kwargs:
            raise TypeError(f"{self.__name__} has an input_signature, so it takes positional arguments "
                            f"only; received keyword arguments {sorted(kwargs)}.")
        positional = [a for a in args]
        if len(positional) != len(signature):
            raise TypeError(f"{self.__name__} expects {len(signature)} positional argument(s) matching "
                            f"input_signature {list(signature)}, received {len(positional)}.")
        for i, (arg, spec) in enumerate(zip(positional, signature)):
            if not same_structure(arg, spec):
                raise ValueError(f"Argument {i} of {self.__name__} does not match the structure of its "
                                 f"input_signature: expected {spec!r}, received {arg!r}.")
            for leaf, leaf_spec in zip(flatten(arg), flatten(spec)):
                if isinstance(leaf_spec, TensorSpec) and not leaf_spec.is_compatible_with(
                        leaf if isinstance(leaf, torch.Tensor) else torch.as_tensor(leaf)):
                    got = torch.as_tensor(leaf)
                    raise ValueError(
                        f"Argument {i} of {self.__name__} is incompatible with input_signature: expected "
                        f"{leaf_spec!r}, received a tensor of shape {tuple(got.shape)} and dtype {got.dtype}.")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._check(args, kwargs)
        if self._jit_compile:
            if self._compiled is None:
                self._compiled = torch.compile(self._python_function)
            return self._compiled(*args, **kwargs)
        return self._python_function(*args, **kwargs)


def function(fn: Optional[Callable] = None, input_signature: Optional[Sequence[Any]] = None,
             jit_compile: bool = False, **unused: Any) -> Any:
    """Wraps ``fn`` like ``tf.function``; usable as ``@function`` or ``@function(...)``.

    Example:
        >>> @function(input_signature=[TensorSpec(shape=(None,), dtype=torch.float32)])
        ... def double(x):
        ...     return 2 * x
        >>> double(torch.ones(3))
        tensor([2., 2., 2.])
    """
    if input_signature is not None and not isinstance(input_signature, (list, tuple)):
        raise TypeError(f"input_signature must be a list or tuple of TensorSpec structures, received "
                        f"{input_signature!r}.")
    if input_signature is not None:
        for spec in flatten(list(input_signature)):
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"input_signature may contain only TensorSpec leaves, received {spec!r}.")
    if not isinstance(jit_compile, bool):
        raise TypeError(f"jit_compile must be a bool, received {jit_compile!r}.")
    if fn is None:
        return lambda f: function(f, input_signature=input_signature, jit_compile=jit_compile)
    if not callable(fn):
        raise TypeError(f"function() expects a callable, received {fn!r}.")
    return Function(fn, input_signature, jit_compile)
