"""The NaN-signalled sum: an in-place all-reduce of one floating-point tensor between two processes.

Most collectives carry a header slot that tells the workers whether they all sent the predicted
collective (``verify.py``). That costs a copy of the tensor into a buffer with room for the
header and a copy of the sums back out. For an in-place sum of one floating-point tensor between
two processes (``wire.NanSignalled``) the first element carries the signal instead: gloo sums
the caller's tensor where it is, and a worker that runs something else sends zeros with a NaN
first. So:

* a first element that sums to a number proves that both workers sent this collective;
* one that sums to NaN means a mismatch, or a NaN in the data: a full check tells which. If the
  workers agree, the sum stands. If not, :class:`CollectiveMismatchError` is raised on both,
  and the first element is put back bit for bit (the rest was summed with zeros), so the
  tensor is left as it was.

The first element is read and written through its address (``ctypes``): indexing a tensor costs
about 1 us here, five times as much, and this path runs once per training step, right after a
wait, when every microsecond costs several on a busy 2-core machine.

Example (inside :meth:`ProcessGroup.all_reduce`, for ``inplace=True`` between two workers)::

    group.all_reduce([torch.ones(4096)], note="loss", inplace=True)   # no copies, no header
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type

import torch
from torch.autograd.graph import increment_version

from distribute.collectives.failures import CollectiveMismatchError
from distribute.collectives.packing import Slot

if TYPE_CHECKING:  # pragma: no cover
    from distribute.collectives.link import Link
    from distribute.collectives.verify import Fingerprint, Verifier

__all__ = ["BITS", "SIGNAL_DTYPES", "first_bits", "is_nan", "signalled_sum"]

BITS: Dict[torch.dtype, Tuple[Type[Any], int, int]] = {
    torch.float16: (ctypes.c_uint16, 0x7C00, 0x03FF),
    torch.bfloat16: (ctypes.c_uint16, 0x7F80, 0x007F),
    torch.float32: (ctypes.c_uint32, 0x7F800000, 0x007FFFFF),
    torch.float64: (ctypes.c_uint64, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF),
}
"""Per dtype that can be NaN-signalled: the unsigned type of its bits, the exponent mask, the
mantissa mask (a NaN has every exponent bit set and a mantissa that is not zero)."""
SIGNAL_DTYPES: Tuple[torch.dtype, ...] = tuple(BITS)
"""The floating-point dtypes gloo sums whose first element may carry the signal."""


def first_bits(tensor: torch.Tensor) -> int:
    """The bits of the first element of a contiguous CPU tensor of a :data:`BITS` dtype."""
    return BITS[tensor.dtype][0].from_address(tensor.data_ptr()).value


def is_nan(dtype: torch.dtype, bits: int) -> bool:
    """Whether ``bits`` are a NaN of ``dtype``."""
    _, exponent, mantissa = BITS[dtype]
    return bits & exponent == exponent and bits & mantissa != 0


def _put_first(tensor: torch.Tensor, bits: int) -> None:
    BITS[tensor.dtype][0].from_address(tensor.data_ptr()).value = bits


def signalled_sum(link: "Link", verifier: "Verifier", fp: "Fingerprint", slot: Slot, tensors: List[torch.Tensor],
                  targets: Optional[List[torch.Tensor]], limit: float, check: bool) -> None:
    """Sums ``tensors[0]`` into ``targets[0]`` over ``link``, agreed with ``verifier``.

    gloo sums the target where it is, or the slot (then copied out) for a target that is not
    contiguous or requires grad. With ``check`` (the collective was predicted), the first
    element is checked as described above.
    """
    target = targets[0] if targets is not None else None
    # packing.direct_target's rule, reduced to what this plan leaves open: the plan is one piece
    # holding exactly this one tensor, and it was made for the tensor's (CPU) device. The full
    # rule costs 0.7 us more on the path that runs once per step.
    copied = target is None or target.requires_grad or not target.is_contiguous()
    flat = target if target is not None and not copied else slot.fill_piece(tensors, 0)
    kept = first_bits(flat) if check else 0  # put back if a worker that differs adds its NaN
    work = link.allreduce(flat, limit)
    if not copied:  # written behind torch's back: autograd must see the change, as for copy_()
        increment_version(flat)
    link.wait_first(work, limit)
    if check and is_nan(flat.dtype, first_bits(flat)):
        try:
            verifier.full_check(fp)  # raises on every worker if they differ
        except CollectiveMismatchError:
            _put_first(flat, kept)
            raise
    if copied and targets is not None:
        slot.copy_out(targets, 0)
