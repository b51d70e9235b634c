"""What a replica asks for at a synchronisation point: one small class per kind.

A replica that reaches ``merge_call``, a collective or, during backward, the gradient of a
collective hands the runner one of these requests and waits. When every local replica has
arrived, the runner asks replica 0's request whether the others agree with it
(``disagreement``: the same kind, then the same structure, shapes and dtypes), then calls its
``merge`` once, in the caller's cross-replica context, with every replica's request; ``merge``
returns one result per replica. A request reaches the strategy only through ``MergeHost``.

============  ===========================  ==========================================
class         made by                      merge
============  ===========================  ==========================================
MergeCall     ``ReplicaContext.merge_call``  ``merge_fn`` once, arguments regrouped
AllReduce     ``ReplicaContext.all_reduce``  ``MergeHost._merge_all_reduce``
AllGather     ``ReplicaContext.all_gather``  ``MergeHost._merge_all_gather``
GradientSync  backward of a collective      ``MergeHost._reduce_to_replicas`` (a sum)
============  ===========================  ==========================================
"""

from __future__ import annotations

import abc
from typing import Any, Callable, List, Optional, Protocol, Sequence

import torch

from distribute._base.nest import flatten
from distribute._base.reduce_op import ReduceOp
from distribute._core import context
from distribute._core.context import Mode
from distribute._core.values import regroup, select_replica
from distribute.errors import CollectiveError, GatherShapeMismatchError

__all__ = ["AllGather", "AllReduce", "GradientSync", "MergeCall", "MergeHost", "SyncRequest",
           "leaf_signature", "repr_structure"]


class MergeHost(Protocol):
    """What a request's ``merge`` needs from the strategy that runs the replicas."""

    def _container_strategy(self) -> Any:
        """The strategy, passed to ``merge_fn``."""

    def _merge_all_reduce(self, requests: Sequence["AllReduce"]) -> list:
        """One reduced structure per replica."""

    def _merge_all_gather(self, requests: Sequence["AllGather"]) -> list:
        """One gathered structure per replica."""

    def _reduce_to_replicas(self, op: ReduceOp, tensors: List[torch.Tensor]) -> List[torch.Tensor]:
        """``op`` over one tensor per replica, a copy on every replica's device."""


class SyncRequest(abc.ABC):
    """One replica's request at a synchronisation point.

    Attributes:
        describe: the operation as errors name it, e.g. ``all_reduce(SUM)``; requests of
            different replicas agree only when their classes and descriptions are equal.
        requires_grad: True when the result must be differentiable, so a backward pass in
            the replica function will synchronise the replicas again.
    """

    __slots__ = ("describe", "requires_grad")
    describe: str
    requires_grad: bool

    def signature(self) -> Any:
        """What must be equal on every replica besides the operation (None: nothing)."""
        return None

    def disagreement(self, requests: Sequence["SyncRequest"]) -> Optional[Exception]:
        """The error to raise when ``requests`` (every replica's, this one first) disagree."""
        mine = self.signature()
        for i, other in enumerate(requests[1:], start=1):
            if type(other) is not type(self) or other.describe != self.describe:
                return CollectiveError(
                    f"Replicas called different synchronisation operations: replica 0 called "
                    f"{self.describe} but replica {i} called {other.describe}. Every replica "
                    "must make the same collective calls in the same order.")
            theirs = other.signature()
            if mine is not None and theirs != mine:
                return self._mismatch(requests, i, mine, theirs)
        return None

    def _mismatch(self, requests: Sequence["SyncRequest"], index: int, mine: Any, theirs: Any) -> Exception:
        return CollectiveError(
            f"Replicas disagree on {self.describe}: replica 0 passed {mine} but replica {index} "
            f"passed {theirs}. Structures, dtypes and shapes must match (all_gather: shapes may "
            "differ only along the gather axis).")

    @abc.abstractmethod
    def merge(self, host: MergeHost, requests: Sequence[Any]) -> list:
        """One result per replica, from every replica's request (this one first)."""


class MergeCall(SyncRequest):
    """``merge_call(merge_fn, args, kwargs)``: ``merge_fn`` runs once on the regrouped arguments."""

    __slots__ = ("args", "kwargs", "merge_fn")

    def __init__(self, merge_fn: Callable, args: tuple, kwargs: dict) -> None:
        self.describe, self.requires_grad = "merge_call", False
        self.merge_fn, self.args, self.kwargs = merge_fn, args, kwargs

    def merge(self, host: MergeHost, requests: Sequence["MergeCall"]) -> list:
        strategy = host._container_strategy()
        args = regroup([r.args for r in requests])
        kwargs = regroup([r.kwargs for r in requests])
        context.push(Mode(strategy, strategy, None))
        try:
            result = self.merge_fn(strategy, *args, **kwargs)
        finally:
            context.pop()
        return [select_replica(i, result) for i in range(len(requests))]


class _Collective(SyncRequest):
    """A collective over a nested structure ``value`` whose leaves every replica must match."""

    __slots__ = ("_signature", "value")
    value: Any
    _signature: Optional[tuple]

    def signature(self) -> Any:
        if self._signature is None:
            self._signature = (repr_structure(self.value), leaf_signature(flatten(self.value), self._free_axis()))
        return self._signature

    def _free_axis(self) -> Optional[int]:
        """The axis along which shapes may differ between replicas (None: none)."""
        return None


class AllReduce(_Collective):
    """``all_reduce(op, value)``."""

    __slots__ = ("op",)

    def __init__(self, op: ReduceOp, value: Any, requires_grad: bool) -> None:
        self.describe, self.requires_grad = f"all_reduce({op.value})", requires_grad
        self.op, self.value, self._signature = op, value, None

    def merge(self, host: MergeHost, requests: Sequence["AllReduce"]) -> list:
        return host._merge_all_reduce(requests)


class AllGather(_Collective):
    """``all_gather(value, axis)``: shapes may differ along ``axis`` only."""

    __slots__ = ("axis",)

    def __init__(self, axis: int, value: Any, requires_grad: bool) -> None:
        self.describe, self.requires_grad = f"all_gather(axis={axis})", requires_grad
        self.axis, self.value, self._signature = axis, value, None

    def _free_axis(self) -> Optional[int]:
        return self.axis

    def _mismatch(self, requests: Sequence[SyncRequest], index: int, mine: Any, theirs: Any) -> Exception:
        if _strip_shapes(mine) == _strip_shapes(theirs):
            return self._shape_error(requests)
        return super()._mismatch(requests, index, mine, theirs)

    def _shape_error(self, requests: Sequence[Any]) -> GatherShapeMismatchError:
        shapes = [[tuple(x.shape) for x in flatten(r.value) if isinstance(x, torch.Tensor)] for r in requests]
        listing = ", ".join(f"replica {i}: {s[0] if len(s) == 1 else s}" for i, s in enumerate(shapes))
        return GatherShapeMismatchError(
            f"Shape mismatch in all_gather(axis={self.axis}): {listing}. The values gathered must "
            "have the same rank and the same size in every dimension except the gather axis "
            f"({self.axis}).")

    def merge(self, host: MergeHost, requests: Sequence["AllGather"]) -> list:
        return host._merge_all_gather(requests)


class GradientSync(SyncRequest):
    """The backward of a collective: ``op`` over every replica's upstream gradient."""

    __slots__ = ("grad", "op")

    def __init__(self, what: str, op: ReduceOp, grad: torch.Tensor) -> None:
        self.describe, self.requires_grad = f"gradient of {what}", False
        self.op, self.grad = op, grad

    def signature(self) -> Any:
        return (tuple(self.grad.shape), str(self.grad.dtype))

    def merge(self, host: MergeHost, requests: Sequence["GradientSync"]) -> list:
        return host._reduce_to_replicas(self.op, [r.grad for r in requests])


def _strip_shapes(signature: Any) -> tuple:
    """A collective signature without the shapes of its tensors."""
    return (signature[0],) + tuple(x[1] if isinstance(x, tuple) else x for x in signature[1])


def leaf_signature(leaves: Sequence[Any], skip_axis: Optional[int] = None) -> tuple:
    """Shapes and dtypes of tensor leaves, for the agreement check."""
    out: List[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            shape: List[Any] = list(leaf.shape)
            if skip_axis is not None and shape:
                shape[skip_axis % len(shape)] = "*"
            out.append((tuple(shape), str(leaf.dtype).replace("torch.", "")))
        else:
            out.append(type(leaf).__name__)
    return tuple(out)


def repr_structure(value: Any) -> str:
    """A short description of a nested structure's shape (types and keys), for mismatch errors."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{k!r}: {repr_structure(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(repr_structure(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return "tensor" if isinstance(value, torch.Tensor) else type(value).__name__
