"""Pure reduction and gathering of per-replica tensors (no strategies, no processes).

``reduce_components`` implements ``Strategy.reduce``'s arithmetic: element-wise SUM/MEAN with
``axis=None``, or a reduction along ``axis`` whose MEAN is weighted by the true number of
elements, so uneven and empty per-replica batches give the right mean. ``gather_components``
concatenates along an axis. A multi-worker strategy passes its ``Communicator``, which extends
the local sums (and the element counts of a MEAN) over the worker processes.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core.communicator import Communicator
from distribute.errors import GatherShapeMismatchError, InvalidArgumentError

__all__ = ["as_tensor", "elementwise_sum", "finish_mean", "gather_components", "normalize_axis", "reduce_components"]

def as_tensor(value: Any) -> torch.Tensor:
    """``value`` as a tensor (numpy arrays and Python numbers are converted)."""
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value)


def check_axis(axis: Any) -> Optional[Tuple[int, ...]]:
    """Validates a reduction axis: None, an int, or a tuple/list of ints."""
    if axis is None:
        return None
    if isinstance(axis, int) and not isinstance(axis, bool):
        return (axis,)
    if isinstance(axis, (tuple, list)) and all(isinstance(a, int) and not isinstance(a, bool) for a in axis):
        return tuple(axis)
    raise TypeError(f"Expected `axis` to be an integer, tuple or list not: {type(axis)}")


def normalize_axis(axis: Sequence[int], rank: int) -> Tuple[int, ...]:
    """Turns negative axes into positive ones; raises ``ValueError`` when out of range."""
    dims = []
    for a in axis:
        if rank == 0 or not -rank <= a < rank:
            raise ValueError(f"`axis` = {a!r} out of range for `value` with rank {rank}")
        dims.append(a % rank)
    return tuple(dims)


def finish_mean(numer: torch.Tensor, denom: Any) -> torch.Tensor:
    """``numer / denom``, in float64 for integer sums."""
    if not (numer.is_floating_point() or numer.is_complex()):
        numer = numer.to(torch.float64)
    return numer / denom


def _check_same_shapes(comps: Sequence[torch.Tensor], what: str) -> None:
    first = comps[0].shape
    if all(c.shape == first for c in comps):
        return
    listing = ", ".join(f"replica {i}: {tuple(c.shape)}" for i, c in enumerate(comps))
    raise InvalidArgumentError(
        f"{what} needs the same shape on every replica; received {listing}. Reduce along "
        "an axis (axis=0) for per-replica batches of different sizes, or use gather.")


def elementwise_sum(comps: Sequence[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Sums same-shaped tensors on ``device``."""
    total = comps[0].to(device, copy=True) if comps[0].device != device else comps[0].clone()
    for c in comps[1:]:
        if c.dtype == total.dtype:
            total.add_(c.to(device, non_blocking=True))  # ``total`` is our own copy
        else:
            total = total + c.to(device, non_blocking=True)
    return total


def reduce_components(op: ReduceOp, comps: List[Any], axis: Any, device: torch.device,
                      communicator: Optional[Communicator] = None) -> torch.Tensor:
    """Reduces one tensor per replica into one tensor on ``device``.

    Args:
        op: SUM or MEAN.
        comps: the local replicas' tensors.
        axis: ``None`` for element-wise, or an int/tuple of ints reduced within each replica.
        device: where the result lives.
        communicator: the worker processes the local sum (and a MEAN's element count) is
            summed over; ``None`` or a single worker: this process only.
    """
    tensors = [c if isinstance(c, torch.Tensor) else torch.as_tensor(c) for c in comps]
    dims = None if axis is None else check_axis(axis)
    if dims is None:
        _check_same_shapes(tensors, "reduce with axis=None")
        total = elementwise_sum(tensors, device)
        count = len(tensors)
    else:
        dims = normalize_axis(dims, tensors[0].dim())
        sums = [t.sum(dim=dims) for t in tensors]
        _check_same_shapes(sums, f"reduce along axis {axis}")
        total = elementwise_sum(sums, device)
        count = sum(math.prod(t.shape[d] for d in dims) for t in tensors)
    if communicator is not None and communicator.num_workers > 1:
        (total,) = communicator.all_reduce([total], note="cross-worker reduction")
        if op is ReduceOp.MEAN:
            counted = torch.tensor(float(count), dtype=torch.float64)
            count = int(communicator.all_reduce([counted], note="cross-worker reduction")[0].item())
    if op is ReduceOp.MEAN:
        return finish_mean(total, count)
    return total


def gather_components(comps: List[Any], axis: int, device: torch.device) -> torch.Tensor:
    """Concatenates one tensor per replica along ``axis`` on ``device``."""
    tensors = [as_tensor(c) for c in comps]
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise ValueError(
                f"gather needs tensors of rank >= 1, but replica {i} has a scalar (shape ()). "
                "Use reduce for scalars, or give each replica's value a leading dimension.")
    rank = tensors[0].dim()
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"gather axis {axis} is out of range for tensors of rank {rank}; "
                                   f"expected -{rank} <= axis < {rank}.")
    axis %= rank
    ref = [s for d, s in enumerate(tensors[0].shape) if d != axis]
    if any(t.dim() != rank or [s for d, s in enumerate(t.shape) if d != axis] != ref for t in tensors):
        listing = ", ".join(f"replica {i}: {tuple(t.shape)}" for i, t in enumerate(tensors))
        raise GatherShapeMismatchError(
            f"Shape mismatch in gather along axis {axis}: {listing}. The values gathered must have "
            f"the same rank and the same size in every dimension except axis {axis}.")
    return torch.cat([t.to(device) for t in tensors], dim=axis)
