"""How scheduled functions and their arguments travel from the coordinator to the workers.

A function goes by value (``cloudpickle``), once per worker: the first ``schedule`` of a
``distribute.function`` pickles it with everything it captures (the model, the optimizer) and
later closures send only its digest, much as TensorFlow traces a function once. Arguments are
pickled at each ``schedule``. Inside both, objects the workers already know travel as names:

* a variable or shard on a parameter server: its id, task, name, shape and dtype;
* the strategy: the worker's own ``ParameterServerStrategy``;
* a ``PerWorkerValue`` (a per-worker iterator): the resource id of each worker's component.

Tensors travel as raw buffers (``distribute.ps.wire``). A worker unpickles only what arrives
on a connection whose peer proved the job secret.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Dict, List, Optional, Tuple

import torch

from distribute.coordinator.remote_value import PerWorkerValue, RemoteValue
from distribute.ps import wire
from distribute.ps.sharded_variable import ShardedVariable
from distribute.ps.variables import PSVariable, variable_ref
from distribute.strategies.parameter_server import ParameterServerStrategy

__all__ = ["FunctionPayload", "FunctionPayloads", "pickle_arguments", "persist"]


def _sharded_ref(var: ShardedVariable) -> Tuple[Any, ...]:
    return ("sv", var._shards[0]._var_id, var._var_name, var._trainable,
            [variable_ref(s) for s in var._shards])


def persist(obj: Any) -> Optional[Tuple[Any, ...]]:
    """The name ``obj`` travels as, or None to pickle it by value."""
    kind = type(obj)
    if issubclass(kind, torch.Tensor):
        if issubclass(kind, ShardedVariable):
            return _sharded_ref(obj)
        if issubclass(kind, PSVariable):
            return variable_ref(obj)
        return None
    if kind is ParameterServerStrategy:
        return ("strategy",)
    if issubclass(kind, PerWorkerValue):
        return ("pwv", [v.resource_id for v in obj._values])
    if issubclass(kind, RemoteValue):
        raise ValueError("`RemoteValue` arguments are not supported in ClusterCoordinator.schedule: fetch() "
                         "the value first, or pass a PerWorkerValue (such as a per-worker iterator).")
    return None


class FunctionPayload:
    """One function, pickled: its digest, its pickle and the tensors it captured."""

    def __init__(self, function: Any) -> None:
        self.function = function  # kept alive, so its id is not reused
        self.blob, self.tensors = wire.dumps(function, persist)
        self.digest = hashlib.blake2b(self.blob, digest_size=16).hexdigest()


class FunctionPayloads:
    """The payload of each scheduled function, made at its first ``schedule``."""

    def __init__(self) -> None:
        self._payloads: Dict[int, FunctionPayload] = {}
        self._lock = threading.Lock()

    def of(self, function: Any) -> FunctionPayload:
        """The payload of ``function`` (pickled now if it is new)."""
        with self._lock:
            payload = self._payloads.get(id(function))
            if payload is None:
                payload = self._payloads[id(function)] = FunctionPayload(function)
            return payload


def pickle_arguments(args: tuple, kwargs: Dict[str, Any]) -> Tuple[bytes, List[torch.Tensor]]:
    """The pickle of ``(args, kwargs)`` and the tensors in them."""
    return wire.dumps((args, kwargs), persist)
