"""Agreeing on each collective before data moves, so mismatches are errors, not crashes.

Raw gloo turns a collective whose sizes differ between processes into a ``SIGABRT``
(``gloo::EnforceNotMet``) and one whose order differs into a hang. Every collective therefore
has a *fingerprint*: its kind, the caller's description, the shapes and dtypes of its tensors
and their frame plan, hashed into a 63-bit digest. Workers agree on it in one of two ways:

* **Full check**: one small all-gather of ``[sequence number, digest, family, extras...]``
  (int64). If any worker differs, a second all-gather exchanges the human-readable
  descriptions and every worker raises the same :class:`CollectiveMismatchError` naming the
  operation and the workers. Nothing else was exchanged, so the group stays usable. The
  *family* digest leaves the shapes out: workers in the same gather whose shapes differ raise
  :class:`WorkerGatherShapeMismatchError` (an ``InvalidArgumentError``) instead.
* **Prediction** (free in steady state): workers remember which fingerprint followed which
  (identically, since they only record agreed collectives). When a successor is known, a
  worker whose fingerprint matches it sends its data with a header slot of 0 (at the start of
  the first piece); a worker whose fingerprint differs sends, instead, zero-filled pieces of the
  *predicted* sizes and dtypes with a header of 1: as many as a matching worker sends before it
  reads the summed header (up to ``SPECULATIVE_PIECES`` all-reduce pieces; a pairwise exchange
  is only ever started after the header was read). All messages then have the same size, so
  nothing aborts, and the summed header tells every worker whether all matched. If not, they
  fall back to a full check (and send their data again). A NaN-signalled sum (``wire.py``) has
  no header: the differing worker puts a NaN in the first element instead, so a first element
  that sums to a number proves that both sent it. One that sums to NaN (a mismatch, or a NaN in
  the data) sends both workers to a full check: if they agree, the sum stands; if not, the first
  element is put back, and the rest of the tensor was summed with zeros. A training loop
  (gradients, then a loss reduction, repeated) is predicted after its first step, so the
  gradient all-reduce of a step costs no extra exchange at all.

Example:
    >>> import torch
    >>> fp = make_fingerprint("all_reduce", "gradients", [((2,), torch.float32)], 0)
    >>> fp.describe
    'gradients: 1 tensor float32[2]'
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

from distribute.collectives.failures import CollectiveMismatchError, WorkerGatherShapeMismatchError
from distribute.collectives.packing import Bounds, Frame, Meta, packed_bounds, plan_frames

if TYPE_CHECKING:  # pragma: no cover
    from distribute.collectives.wire import WireMethod

__all__ = ["SPECULATIVE_PIECES", "Fingerprint", "Verifier", "family_digest", "make_fingerprint", "mismatch_error"]

SPECULATIVE_PIECES = 2
"""Pieces of a predicted all-reduce sent before its summed header is read (see above)."""

HEADER_INTS = 8
"""Length of the int64 record of a full check: seq, digest, description length, family, extras."""
MAX_EXTRAS = HEADER_INTS - 4
_SHOWN_TENSORS = 6
_MAX_DESCRIPTION = 4000


class Fingerprint(NamedTuple):
    """What a worker is about to do, as agreed between workers.

    ``frames`` is the frame plan for kinds that can carry a header slot (all-reduce); it is
    empty for kinds that always use a full check (gather, broadcast). ``wire`` gives the pieces
    each frame travels in (``WireMethod.bounds`` of ``wire.py``; the header is in the first piece).
    ``method`` is the wire method that moves the data (``wire.py``; None: the general packed
    path). ``direct`` says that a piece holding exactly one tensor may be all-reduced in the
    caller's tensor itself: only for an in-place sum between two processes, where a peer that
    runs something else adds zeros (with more workers, two matching ones would sum each other's
    data into the tensors before the header shows the mismatch). ``nan_signal`` says that the
    first element carries the agreement signal instead of a header (``wire.NanSignalled``).
    """

    kind: str
    describe: str
    digest: int
    frames: Tuple[Frame, ...]
    metas: Tuple[Meta, ...]
    wire: Tuple[Bounds, ...] = ()
    direct: bool = False
    nan_signal: bool = False
    method: Optional["WireMethod"] = None


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def describe_tensors(metas: Sequence[Meta]) -> str:
    """``'2 tensors float32[2,3], int64[]'`` (long lists are cut after a few)."""
    shown = [f"{_dtype_name(d)}[{','.join(str(s) for s in shape)}]" for shape, d in metas[:_SHOWN_TENSORS]]
    more = f", ... ({len(metas) - _SHOWN_TENSORS} more)" if len(metas) > _SHOWN_TENSORS else ""
    noun = "tensor" if len(metas) == 1 else "tensors"
    return f"{len(metas)} {noun} {', '.join(shown)}{more}"


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def family_digest(text: str) -> int:
    """A nonzero digest of a call without its shapes (``full_check``'s ``family``)."""
    return _digest(text) | 1


def make_fingerprint(kind: str, note: str, metas: Sequence[Meta], bytes_per_pack: int,
                     with_frames: bool = True, *, frames: Optional[Tuple[Frame, ...]] = None,
                     method: Optional["WireMethod"] = None, inplace: bool = False, option: str = "") -> Fingerprint:
    """The fingerprint of a collective of ``kind`` over tensors with ``metas``.

    Args:
        kind: ``'all_reduce'``, ``'all_gather'``, ``'broadcast'``, ...
        note: the caller's description (``'gradients'``, ``'strategy.reduce(SUM)'``); it is
            part of the digest, so different call sites never silently combine.
        metas: ``(shape, dtype)`` per tensor (for a gather, with the gather axis left out).
        bytes_per_pack: the packing limit (changes the frame plan).
        with_frames: plan frames (kinds that carry a header slot).
        frames: the frame plan, when the caller made it already.
        method: the wire method (``wire.py``) that plans the pieces; None: one all-reduce per frame.
        inplace: the sums are written into the caller's tensors (shown in the description).
        option: which fast paths are on, as shown (``''`` for all; see ``wire.option_tag``).
    """
    if frames is None:
        frames = plan_frames(metas, bytes_per_pack) if with_frames else ()
    wire = method.bounds(frames) if method is not None else packed_bounds(frames) if frames else ()
    full = ";".join(f"{_dtype_name(d)}{list(s)}" for s, d in metas)
    # The wire plan and the fast-path option are part of the digest: workers whose messages
    # would differ, or whose options differ, never agree (CollectiveMismatchError). Methods
    # whose messages are the same (a piece summed in the caller's tensor or in a buffer) may meet.
    digest = _digest(f"{kind}|{note}|{full}|{[(str(f.dtype), f.members) for f in frames]}|{wire}|{option}")
    where = " (in place)" if inplace else ""
    direct = method is not None and method.direct
    nan_signal = method is not None and not method.header
    return Fingerprint(kind, f"{note}: {describe_tensors(metas)}{where}{option}", digest, frames, tuple(metas), wire,
                       direct, nan_signal, method)


class Verifier:
    """Keeps the agreed history of one process group and runs full checks.

    ``seq`` counts the agreed collectives and ``full_checks`` the exchanges they needed.

    Args:
        gather: all-gathers an int64 tensor from every worker (returns one per worker, in
            rank order).
        tasks: the task name of each rank (``'worker:1'``), for messages.
        rank: this worker's rank.
    """

    def __init__(self, gather: Callable[[torch.Tensor], List[torch.Tensor]], tasks: Sequence[str],
                 rank: int) -> None:
        self._gather = gather
        self._tasks = tuple(tasks)
        self._rank = rank
        self._successor: Dict[Optional[int], Fingerprint] = {}
        self._last: Optional[int] = None
        self.seq = 0
        self.full_checks = 0

    def predicted(self) -> Optional[Fingerprint]:
        """The fingerprint expected next, if it can carry a header slot; else None."""
        fp = self._successor.get(self._last)
        return fp if fp is not None and fp.frames else None

    def agree(self, fp: Fingerprint) -> None:
        """Records that every worker ran ``fp`` as collective number ``seq``."""
        self._successor[self._last] = fp
        self._last = fp.digest
        self.seq += 1

    def full_check(self, fp: Fingerprint, extras: Sequence[int] = (), family: int = 0,
                   shown: str = "") -> List[Tuple[int, ...]]:
        """Checks that every worker runs ``fp`` now; returns each worker's ``extras``.

        Args:
            fp: this worker's collective.
            extras: small ints exchanged with the check (at most ``MAX_EXTRAS``).
            family: a :func:`family_digest` of the call without its shapes (0: none); workers
                whose digests differ but whose families agree differ only in shapes.
            shown: what the error messages show of this worker's call (default ``fp.describe``).

        Raises:
            WorkerGatherShapeMismatchError: on every worker, when only the shapes differ.
            CollectiveMismatchError: on every worker, when any worker differs otherwise.
        """
        if len(extras) > MAX_EXTRAS:
            raise ValueError(f"at most {MAX_EXTRAS} extras fit in a check, received {len(extras)}")
        self.full_checks += 1
        text = (shown or fp.describe).encode()[:_MAX_DESCRIPTION]
        record = [self.seq, fp.digest, len(text), family, *extras] + [0] * (MAX_EXTRAS - len(extras))
        rows = [tuple(int(v) for v in t.tolist()) for t in self._gather(torch.tensor(record, dtype=torch.int64))]
        if any(row[:2] != rows[self._rank][:2] for row in rows):
            raise self._mismatch(fp, rows, text)
        return [row[4:4 + len(extras)] for row in rows]

    def _mismatch(self, fp: Fingerprint, rows: List[Tuple[int, ...]], text: bytes) -> CollectiveMismatchError:
        width = max(row[2] for row in rows)
        padded = torch.zeros(max(width, 1), dtype=torch.uint8)
        if text:
            padded[:len(text)] = torch.tensor(list(text), dtype=torch.uint8)
        texts = self._gather(padded)
        calls = {}
        for rank, (row, raw) in enumerate(zip(rows, texts)):
            what = bytes(raw[:row[2]].tolist()).decode(errors="replace")
            calls[self._tasks[rank]] = f"collective #{row[0] + 1}, {what}"
        mine = rows[self._rank]
        if mine[3] and all(row[0] == mine[0] and row[3] == mine[3] for row in rows):
            return shape_mismatch_error(self._tasks[self._rank], fp.describe, calls)
        return mismatch_error(self._tasks[self._rank], fp.describe, calls)


def mismatch_error(task: str, operation: str, calls: Dict[str, str]) -> CollectiveMismatchError:
    """The error every worker raises when the workers' calls differ."""
    groups: Dict[str, List[str]] = {}
    for name, call in calls.items():
        groups.setdefault(call, []).append(name)
    listing = "; ".join(f"{', '.join(names)} called {call}" for call, names in groups.items())
    message = (f"Workers called different collectives: {listing}. Every worker must make the same "
               "collective calls (strategy.run steps, reduce, gather, optimizer steps, variable "
               "creation) in the same order, with the same shapes and dtypes. Check for "
               "worker-dependent control flow or data shapes. No data was exchanged.")
    return CollectiveMismatchError(message, task=task, operation=operation, calls=calls)


def shape_mismatch_error(task: str, operation: str, calls: Dict[str, str]) -> WorkerGatherShapeMismatchError:
    """The error every worker raises when the workers gather values of incompatible shapes."""
    listing = "; ".join(f"{name} called {call}" for name, call in calls.items())
    message = (f"Shape mismatch: the workers gather values whose shapes differ in rank or off the gather "
               f"axis: {listing}. Every worker must pass values of the same rank and dtype whose sizes agree "
               "on every axis but the gather axis. No data was exchanged.")
    return WorkerGatherShapeMismatchError(message, task=task, operation=operation, calls=calls)
