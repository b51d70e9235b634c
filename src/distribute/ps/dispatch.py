"""How torch operations see variables that live on parameter servers.

One ``__torch_function__`` serves ``PSVariable`` and ``ShardedVariable``: before the operation
it reads the coordinator's variables (one call per parameter server) and replaces each sharded
variable by its full value; an embedding lookup of a sharded variable reads only the requested
rows instead. After the operation, a value written in place on the coordinator (a module's
initialiser) is written to the parameter servers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F

from distribute.ps.variables import PSVariable, read_variables

__all__ = ["dispatch"]

_Disable = torch._C.DisableTorchFunctionSubclass


def dispatch(func: Callable, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Runs ``func`` with every remote variable in ``args``/``kwargs`` replaced by its value."""
    from distribute.ps.sharded_variable import ShardedVariable

    if getattr(func, "__name__", "") == "__get__":  # an attribute (shape, grad, is_leaf): no read
        with _Disable():
            return func(*args, **kwargs)
    if func is F.embedding:
        weight = args[1] if len(args) > 1 else kwargs.get("weight")
        if isinstance(weight, ShardedVariable):
            return weight._embedding(*args, **kwargs)
    found: List[Any] = []
    _collect(args, found)
    _collect(tuple(kwargs.values()), found)
    plain = [v for v in found if issubclass(type(v), PSVariable)]
    read_variables(plain)
    substitutes = {id(v): v._dense() for v in found if isinstance(v, ShardedVariable)}
    watched: List[Tuple[Any, torch.Tensor]] = [(v, v) for v in plain]
    watched += [(v, substitutes[id(v)]) for v in found if isinstance(v, ShardedVariable) and not v._on_worker]
    versions = [tensor._version for _, tensor in watched]
    new_args = _replace(args, substitutes)
    new_kwargs = {k: _replace_one(v, substitutes) for k, v in kwargs.items()}
    with _Disable():
        result = func(*new_args, **new_kwargs)
    for (var, tensor), version in zip(watched, versions):
        if tensor._version != version:  # written in place: the parameter servers take the new value
            with _Disable():  # a torch op on a PSVariable would read it again, undoing the write
                value = torch.Tensor.clone(tensor).detach()
            var.assign(value, read_value=False)
    return result


def _collect(values: tuple, found: List[Any]) -> None:
    from distribute.ps.variables import RemoteVariable

    for value in values:
        if issubclass(type(value), RemoteVariable):
            if all(value is not f for f in found):
                found.append(value)
        elif isinstance(value, (list, tuple)):
            _collect(tuple(value), found)


def _replace_one(value: Any, substitutes: Dict[int, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return substitutes.get(id(value), value)
    if isinstance(value, (list, tuple)) and substitutes:
        return type(value)(_replace_one(v, substitutes) for v in value)
    return value


def _replace(args: tuple, substitutes: Dict[int, torch.Tensor]) -> tuple:
    return args if not substitutes else tuple(_replace_one(a, substitutes) for a in args)
