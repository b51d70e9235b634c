"""Differentiable collectives: autograd functions whose backward is a collective.

The one family for every strategy, in one process or across workers. The gradient of
``all_reduce(op, x)`` is ``all_reduce(op, upstream)``; the gradient of ``all_gather(x, axis)``
is this replica's slice of ``all_reduce(SUM, upstream)`` (``offset`` counts every replica
before it, on this worker and the workers of lower rank). The backward hands a
``GradientSync`` request to ``sync``: with several local replicas that synchronises them again
(on the replicas' threads, or on the helper threads of ``backward_relay.py``); with one it is
merged at once. Either way the strategy reduces
the gradients as it reduces values: its ``CrossDeviceOps`` over the local replicas, then its
``Communicator`` over the workers.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

import torch

from distribute._base.reduce_op import ReduceOp
from distribute.strategies.sync_requests import GradientSync, SyncRequest

__all__ = ["AllGatherGrad", "AllReduceGrad", "Sync"]

Sync = Callable[[SyncRequest], Any]


class AllReduceGrad(torch.autograd.Function):
    """Identity on the already-reduced value; backward all-reduces the upstream gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, reduced: torch.Tensor, sync: Sync, op: ReduceOp) -> torch.Tensor:
        ctx.sync, ctx.op = sync, op
        return reduced

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Any, ...]:
        summed = ctx.sync(GradientSync(f"all_reduce({ctx.op.value})", ctx.op, grad))
        return summed, None, None, None


class AllGatherGrad(torch.autograd.Function):
    """Identity on the gathered value; backward takes this replica's slice of the summed gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, gathered: torch.Tensor, sync: Sync, axis: int,
                offset: int) -> torch.Tensor:
        ctx.sync, ctx.axis, ctx.offset, ctx.length = sync, axis, offset, x.shape[axis]
        return gathered

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Any, ...]:
        summed = ctx.sync(GradientSync("all_gather", ReduceOp.SUM, grad))
        return summed.narrow(ctx.axis, ctx.offset, ctx.length), None, None, None, None
