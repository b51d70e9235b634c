"""Gradients of distributed variables: each replica's lands on its own component.

At an optimizer step the strategy moves them into the primary's ``.grad`` (their sum); how the
sum is computed is the strategy's choice (its ``CrossDeviceOps``), passed in as ``sum_fn``.
"""

from __future__ import annotations

from typing import Any, Callable, List, TypeGuard

import torch

from distribute._core.distributed_variables import DistributedVariable

__all__ = ["GradientSum", "is_distributed_variable", "sum_component_grads"]

GradientSum = Callable[[List[torch.Tensor], torch.device], torch.Tensor]
"""``sum_fn(grads, device)``: the sum of one parameter's per-replica gradients on ``device``
(it may sum into ``grads``: they are released afterwards)."""


def is_distributed_variable(value: Any) -> TypeGuard[DistributedVariable]:
    """``isinstance(value, DistributedVariable)``, without the Python-level instance check that
    ``torch.nn.Parameter``'s metaclass adds to every ``isinstance`` against a variable class
    (about 1 us; this runs for every parameter at every optimizer step)."""
    return issubclass(type(value), DistributedVariable)


def sum_component_grads(param: DistributedVariable, sum_fn: GradientSum) -> None:
    """Moves every component's gradient into the primary's ``.grad`` (their sum).

    The other components' gradients are released: they are now part of the primary's, and
    keeping them would count them twice when gradients accumulate over several steps.
    """
    grads = [c.grad for c in param._components() if c.grad is not None]
    if not grads or (len(grads) == 1 and param.grad is grads[0]):
        return
    param.grad = sum_fn(grads, param.device)
    for component in param._others:
        component.grad = None
