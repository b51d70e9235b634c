"""The steady-state shortcut of ``ProcessGroup.all_reduce`` for small in-place sums on gloo.

In a training loop the same small in-place sum (a loss, a metric, the gradients of a small
model) comes back every step. Its full path checks the arguments, looks up the plan, takes a
slot from the pool and streams pieces through a general loop: about 7 us of Python, which on
2 busy cores costs 10-15 times that. Right after a wait the calling thread shares the cores
with gloo's threads in both processes, and every object it touches must come back into cache.
This shortcut keeps, per ``(note, shape, dtype)`` of a single CPU tensor, the call's fingerprint
and slot, and hands them straight to the full path's sum (``ProcessGroup._reduce``): copy in,
one gloo all-reduce, the header check, copy out (or, between two processes, gloo sums the
tensor where it is and its first element is checked).

It is taken only when the result is certain to be the same as the full path's:

* one plain CPU ``torch.Tensor`` of at most :data:`MAX_BYTES`, ``inplace=True``, default
  timeout and pack size;
* the plan is one frame sent as one all-reduce piece (no pairwise exchange and no direct sum
  after a header piece, which both need two pieces; a NaN-signalled sum between two
  processes, see ``nan_signal.py``, is one piece and takes the shortcut);
* the agreement protocol predicts this very collective (``verify.py``), and the group is
  neither broken nor closed.

Everything else, including the first call of each kind and a header that says some worker ran
something else, goes through the full path (the recovery is the full path's own code).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from distribute.collectives.nan_signal import signalled_sum
from distribute.collectives.packing import DIRECT_MIN_BYTES, metas_of

__all__ = ["FastReduce", "MAX_BYTES"]

MAX_BYTES = DIRECT_MIN_BYTES
"""Largest tensor (bytes) that takes the shortcut: below it the Python is a visible share of the
call; above it the plan may sum the tensor where it is anyway."""

_Record = Tuple[Any, Any]  # fingerprint, slot


class FastReduce:
    """Per-group cache of the small in-place sums that can skip the general path."""

    def __init__(self) -> None:
        self._records: Dict[tuple, Union[_Record, bool]] = {}

    def clear(self) -> None:
        """Forgets every record (when the group's plans are forgotten)."""
        self._records.clear()

    def run(self, group: Any, tensors: Sequence[torch.Tensor], note: str) -> Optional[List[torch.Tensor]]:
        """Sums ``tensors`` in place like ``group.all_reduce(..., inplace=True)``, or returns
        None (nothing done) when the call must take the full path."""
        if type(tensors) not in (list, tuple) or len(tensors) != 1:
            return None
        tensor = tensors[0]
        if type(tensor) is not torch.Tensor or not tensor.is_cpu:
            return None
        key = (note, tensor.shape, tensor.dtype)
        record = self._records.get(key)
        if record is None:  # this call takes the full path; the next may not
            record = self._record(group, tensor, note)
            if record is not None:
                self._records[key] = record
            return None
        if record is False or group._broken is not None or group._closed:
            return None
        fp, slot = record  # type: ignore[misc]
        predicted = group._verifier.predicted()
        # A NaN-signalled plan's slot is its own (no other plan has its digest) and only ever
        # copied out of, never handed out, so it is always idle.
        if predicted is None or predicted.digest != fp.digest or not (fp.nan_signal or slot.idle()):
            return None
        return _sum(group, fp, slot, [tensor])

    @staticmethod
    def _record(group: Any, tensor: torch.Tensor, note: str) -> Optional[Union[_Record, bool]]:
        """What the call needs; False if this kind of call cannot take the shortcut; None if it
        has not been planned yet (by a first call through the full path)."""
        plan = group._reduce_plans.get((note, metas_of([tensor]), 0, tensor.device, True))
        if plan is None:
            return None
        fp, wire = plan
        if wire != tensor.device or len(fp.frames) != 1 or len(fp.wire[0]) != 1 or fp.wire[0][0][2]:
            return False
        if tensor.numel() * tensor.element_size() > MAX_BYTES:
            return False
        # The pool's slot (``idle()`` is checked on every call: a call that returns new tensors
        # may hand out views of the same slot).
        slot = group._pool.get((fp.digest, 0), fp.frames[0], fp.metas, wire, not fp.nan_signal, fp.wire[0])
        return fp, slot


def _sum(group: Any, fp: Any, slot: Any, tensors: List[torch.Tensor]) -> List[torch.Tensor]:
    """The full path's sum (``ProcessGroup._reduce``) through the kept slot."""
    limit = group._begin(fp, None)
    try:
        if fp.nan_signal:  # predicted (checked by the caller): straight to the sum
            signalled_sum(group, fp, slot, tensors, tensors, limit, True)
            group._verifier.agree(fp)
        else:
            group._reduce(fp, tensors, tensors, limit, slot.buffer.device, [slot])
    finally:
        group._end()
    return tensors
