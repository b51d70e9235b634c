"""Distributed values: one value per replica, and how results are split and regrouped.

``PerReplica`` holds unsynchronised values (each replica's own batch, loss, prediction).
``Mirrored`` holds values known to be equal on every replica; it behaves like its local
component. ``select_replica`` picks replica ``i``'s view of a structure (for the arguments of
``strategy.run``); ``regroup`` turns the per-replica results back into one structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional, Sequence, Tuple, cast

import torch

from distribute._base.nest import is_namedtuple
from distribute._core import context
from distribute._core.replica_context import ReplicaContext
from distribute._core.variables import Variable
from distribute.errors import InvalidArgumentError

__all__ = ["DistributedValues", "Mirrored", "PerReplica", "regroup", "select_replica"]


def local_replica_index() -> Optional[int]:
    """The local index of the replica (or the update component) running now, else ``None``."""
    update_id = context.get_update_replica_id()
    if update_id is not None:
        return update_id
    mode = context.current_mode()
    if mode is None or not isinstance(mode.replica_context, ReplicaContext):
        return None
    return mode.replica_context._local_id


class DistributedValues:
    """Base class of values that have one component per replica.

    Example:
        >>> import torch, distribute
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> v = s.run(lambda: distribute.get_replica_context().replica_id_in_sync_group)
        >>> isinstance(v, distribute.DistributedValues)
        True
    """

    __slots__ = ()  # so that distributed variables (tensors) can be DistributedValues too

    def __init__(self, values: Sequence[Any]) -> None:
        values = tuple(values)
        if not values:
            raise ValueError("A DistributedValues needs at least one component; received none.")
        self._values = values  # type: ignore[misc]  # a slot of PerReplica, else in the subclass's __dict__

    @property
    def values(self) -> Tuple[Any, ...]:
        """The components, one per local replica, in replica order."""
        return self._values

    @property
    def _primary(self) -> Any:
        return self._values[0]

    def _local(self) -> Any:
        index = local_replica_index()
        return self._values[index if index is not None and index < len(self._values) else 0]

    def _select(self, index: int) -> Any:
        """Replica ``index``'s view, as ``strategy.run`` passes it (variables override: whole)."""
        return self._values[index]

    def _regroup_container(self) -> Any:
        """What regrouping this value's components gives back (variables: themselves)."""
        return None

    def _format(self, fmt: Callable[[Any], str]) -> str:
        body = ",\n".join(f"  {i}: {fmt(v)}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{body}\n}}"

    def __repr__(self) -> str:
        return self._format(repr)

    def __str__(self) -> str:
        return self._format(str)


class PerReplica(DistributedValues):
    """Values that differ between replicas. It has no arithmetic operators.

    Passed to ``strategy.run``, each replica receives its own component. Inside a replica
    context torch functions accept it and use the local component; elsewhere they refuse.
    """

    __slots__ = ("_values",)

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        index = local_replica_index()
        if index is None:
            raise ValueError(
                "It looks like you are using a PerReplica object while not inside a replica "
                "context, which is not supported. Try running your op or function inside a "
                "replica context by using `strategy.run`"
            )
        args = tuple(a._values[index] if isinstance(a, DistributedValues) else a for a in args)
        return func(*args, **(kwargs or {}))


def _delegate(name: str) -> Callable:
    def method(self: "Mirrored", *args: Any) -> Any:
        return getattr(self._local(), name)(*args)

    method.__name__ = name
    return method


class Mirrored(DistributedValues):
    """Values that are equal on every replica; behaves like the local component.

    Attribute access, operators and torch functions go to the local replica's component in
    a replica context, and to the primary (component 0) elsewhere. ``MirroredVariable`` is a
    ``Mirrored`` too (as in TensorFlow), so ``Mirrored`` keeps an instance ``__dict__``
    instead of a slot: a slot would not fit the tensor layout of a variable.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._local(), name)

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        args = tuple(a._local() if isinstance(a, Mirrored) else a for a in args)
        return func(*args, **(kwargs or {}))

    def __bool__(self) -> bool:
        return bool(self._local())

    def __len__(self) -> int:
        return len(self._local())


for _op in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow "
    "lt le gt ge eq ne and rand or ror xor rxor invert neg pos abs getitem matmul rmatmul "
    "float int index"
).split():
    setattr(Mirrored, f"__{_op}__", _delegate(f"__{_op}__"))
Mirrored.__hash__ = object.__hash__  # type: ignore[method-assign]  # mypy forbids assigning a method; keep identity hashing


def _container(value: Any) -> Any:
    if isinstance(value, DistributedValues):
        return value._regroup_container()
    return value._distributed_container if isinstance(value, Variable) else None


_IMMUTABLE_EMPTY = (tuple, dict)  # empty args/kwargs: returned as they are (kwargs are unpacked anyway)


def select_replica(index: int, structure: Any) -> Any:
    """Replica ``index``'s view of ``structure``.

    ``PerReplica``/``Mirrored`` values become their ``index``-th component; distributed
    variables are passed whole (each replica substitutes its own component when it uses
    them); everything else is returned unchanged.
    """
    if isinstance(structure, DistributedValues):
        return structure._select(index)
    if isinstance(structure, torch.Tensor) or (not structure and type(structure) in _IMMUTABLE_EMPTY):
        return structure
    if isinstance(structure, (list, tuple)):
        items = [select_replica(index, v) for v in structure]
        if is_namedtuple(structure):
            return cast(Any, type(structure))._make(items)
        return type(structure)(items) if type(structure) not in (list, tuple) else (
            items if type(structure) is list else tuple(items))
    if isinstance(structure, Mapping):
        return cast(Any, type(structure))((k, select_replica(index, v)) for k, v in structure.items())
    return structure


def contains_distributed(structure: Any) -> bool:
    """True when a ``DistributedValues`` appears anywhere in ``structure``."""
    if isinstance(structure, DistributedValues):
        return True
    if isinstance(structure, (list, tuple)):
        return any(contains_distributed(v) for v in structure)
    if isinstance(structure, Mapping):
        return any(contains_distributed(v) for v in structure.values())
    return False


def regroup(values: Sequence[Any], wrap: type = PerReplica, always_wrap: bool = False) -> Any:
    """Combines one result per replica into one structure (the rules of ``strategy.run``).

    Nested lists, tuples, namedtuples and mappings are rebuilt; within them, identical
    objects come back as themselves, components of one distributed variable come back as
    the variable, and anything else becomes ``wrap(values)``. One replica's value comes
    back bare unless ``always_wrap``.

    Raises:
        InvalidArgumentError: when the replicas' structures differ (types, lengths or keys
            of their lists, tuples and mappings); the message names the replicas.
    """
    return _regroup(values, wrap, always_wrap, ())


def _regroup(values: Sequence[Any], wrap: type, always_wrap: bool, path: tuple) -> Any:
    v0 = values[0]
    if _is_nest(v0) or any(_is_nest(v) for v in values[1:]):
        _check_same_structure(values, path)
    if _is_nest(v0) and not isinstance(v0, Mapping):
        items = [_regroup([v[i] for v in values], wrap, always_wrap, path + (i,)) for i in range(len(v0))]
        if is_namedtuple(v0):
            return cast(Any, type(v0))._make(items)
        return items if type(v0) is list else (tuple(items) if type(v0) is tuple else type(v0)(items))
    if isinstance(v0, Mapping):
        return cast(Any, type(v0))((k, _regroup([v[k] for v in values], wrap, always_wrap, path + (k,))) for k in v0)
    container = _container(v0)
    if container is not None and all(_container(v) is container for v in values[1:]):
        return container  # components of one variable (even a single one) give the variable
    if all(v is v0 for v in values[1:]):
        if not always_wrap or isinstance(v0, DistributedValues):
            return v0
    return wrap(values)


def _is_nest(value: Any) -> bool:
    return isinstance(value, (list, tuple, Mapping)) and not isinstance(value, torch.Size)


def _shape_of(value: Any) -> tuple:
    """What must agree between replicas at one level: the container type and its length or keys."""
    if isinstance(value, Mapping):
        return (type(value), frozenset(value))
    if _is_nest(value):
        return (type(value), len(value))
    return (None,)


def _check_same_structure(values: Sequence[Any], path: tuple) -> None:
    first = _shape_of(values[0])
    for i, value in enumerate(values[1:], start=1):
        if _shape_of(value) != first:
            where = f" at {''.join(f'[{k!r}]' for k in path)}" if path else ""
            raise InvalidArgumentError(
                f"The replicas' values have different structures{where}: replica 0 has "
                f"{describe_structure(values[0])} but replica {i} has {describe_structure(value)}. "
                "Every replica must return (and pass to merge_call) the same structure: the same "
                "types of lists, tuples and dicts, with the same lengths and keys.")


def describe_structure(value: Any) -> str:
    """A short description of a nested structure (types, lengths and keys), for error messages."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k!r}: {describe_structure(v)}" for k, v in value.items())
        return f"{type(value).__name__} {{{inner}}}"
    if _is_nest(value):
        inner = ", ".join(describe_structure(v) for v in value)
        return f"{type(value).__name__} of {len(value)} [{inner}]"
    return "tensor" if isinstance(value, torch.Tensor) else type(value).__name__
