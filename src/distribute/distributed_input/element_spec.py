"""Element specs of distributed input, and the empty batches given to replicas without data.

A distributed dataset describes its elements with the dataset's structure where every leaf
``TensorSpec`` becomes a :class:`PerReplicaSpec` of one spec per local replica (a dict dataset
gives a dict of ``PerReplicaSpec``). With a single local replica the plain spec is used, as the
values themselves are then bare tensors.

The batch dimension of a replica's spec is ``B // N`` when the global batch size ``B`` is static
and divisible by the ``N`` replicas in sync (and no partial batches can occur across workers),
else unknown (``None``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import StringDType, TensorSpec
from distribute._core.values import PerReplica

__all__ = ["PerReplicaSpec", "empty_like", "empty_from_spec", "is_fully_static", "per_replica_spec",
           "replica_leaf_spec"]


class PerReplicaSpec:
    """The spec of a ``PerReplica`` value: one ``TensorSpec`` per local replica.

    Example:
        >>> spec = PerReplicaSpec(TensorSpec((None,), torch.int64), TensorSpec((None,), torch.int64))
        >>> len(spec.component_specs)
        2
    """

    __slots__ = ("_specs",)

    def __init__(self, *component_specs: TensorSpec) -> None:
        if not component_specs or not all(isinstance(s, TensorSpec) for s in component_specs):
            raise TypeError("PerReplicaSpec expects one or more TensorSpec arguments, received "
                            f"{component_specs!r}.")
        self._specs: Tuple[TensorSpec, ...] = tuple(component_specs)

    @property
    def component_specs(self) -> Tuple[TensorSpec, ...]:
        """The spec of each replica's component, in replica order."""
        return self._specs

    def is_compatible_with(self, value: Any) -> bool:
        """True if ``value`` (a ``PerReplica`` or a ``PerReplicaSpec``) fits this spec."""
        if isinstance(value, PerReplicaSpec):
            others: Sequence[Any] = value.component_specs
        elif isinstance(value, PerReplica):
            others = value.values
        else:
            return False
        return len(others) == len(self._specs) and all(
            s.is_compatible_with(o) for s, o in zip(self._specs, others))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerReplicaSpec) and self._specs == other._specs

    def __hash__(self) -> int:
        return hash(self._specs)

    def __repr__(self) -> str:
        return f"PerReplicaSpec({', '.join(repr(s) for s in self._specs)})"


def replica_leaf_spec(leaf: TensorSpec, num_replicas: int, static_batch: bool) -> TensorSpec:
    """One replica's spec for a leaf of the global element spec (batch dim split ``N`` ways)."""
    if leaf.shape is None or not leaf.shape:
        return leaf
    first = leaf.shape[0]
    if not static_batch or first is None or first % num_replicas:
        first = None
    else:
        first //= num_replicas
    return TensorSpec((first,) + leaf.shape[1:], leaf.dtype, leaf.name)


def per_replica_spec(specs: Sequence[Any]) -> Any:
    """Combines one element spec per local replica into the distributed element spec."""
    if len(specs) == 1:
        return specs[0]
    flat = [nest.flatten(s) for s in specs]
    leaves = [PerReplicaSpec(*column) for column in zip(*flat)]
    return nest.pack_sequence_as(specs[0], leaves)


def is_fully_static(spec: Any) -> bool:
    """True when every leaf of ``spec`` has a known rank and known dimensions."""
    return all(leaf.is_fully_defined() for leaf in nest.flatten(spec))


def _empty_leaf(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return leaf.new_empty((0,) + tuple(leaf.shape[1:]))
    if isinstance(leaf, np.ndarray):
        return np.empty((0,) + leaf.shape[1:], dtype=leaf.dtype)
    return np.empty((0,), dtype=object)


def empty_like(element: Any) -> Any:
    """An element of the same structure whose leaves have no rows (feature dims kept)."""
    if not nest.is_nested(element):
        return _empty_leaf(element)
    return nest.map_structure(_empty_leaf, element)


def _empty_from_leaf_spec(leaf: TensorSpec) -> Any:
    dims = tuple(0 if d is None else d for d in (leaf.shape or (None,)))
    dims = (0,) + dims[1:] if dims else (0,)
    if isinstance(leaf.dtype, StringDType):  # the one instance, ``string``
        return np.empty(dims, dtype=object)
    return torch.zeros(dims, dtype=leaf.dtype)


def empty_from_spec(spec: Any, template: Optional[Any] = None) -> Any:
    """An empty batch for a replica with no data: shaped like ``template`` (a real batch seen
    before, to keep its feature dims) when given, else from ``spec`` with unknown dims 0."""
    if template is not None:
        return empty_like(template)
    if isinstance(spec, TensorSpec):
        return _empty_from_leaf_spec(spec)
    return nest.map_structure(_empty_from_leaf_spec, spec)
