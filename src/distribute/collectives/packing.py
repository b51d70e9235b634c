"""Packing tensors into a few flat buffers ("frames") for collectives between processes.

One collective per tensor is slow (each costs a network round trip), so tensors travel packed:
one flat buffer per dtype, split further into packs of at most ``bytes_per_pack`` bytes when
that option is set (a tensor is never split). The *plan* is computed from shapes and dtypes
only, so every worker that passes the same shapes and dtypes gets the same plan and the same
buffer sizes. Frame 0 starts with a *header* region (one element used by ``verify.py`` to
agree on the collective without an extra exchange, padded to 64 bytes so that the tensors
after it stay aligned).

A frame travels as one or more *pieces* (:func:`wire_plan`): between two processes a large
frame is summed by a pairwise exchange that reads a lone input tensor in place (no copy into
the buffer), after a first piece that carries only the header; and a lone tensor summed in
place between two processes travels *direct*: gloo all-reduces the caller's tensor itself, so
neither a copy in nor a copy out is made. A floating-point one below :data:`SIGNAL_MAX_BYTES`
needs no header at all (:func:`nan_signalled`: its first element carries the signal, see
``nan_signal.py``); one of another dtype from :data:`DIRECT_MIN_BYTES` travels after a header
piece.

Example:
    >>> import torch
    >>> plan = plan_frames([((2, 3), torch.float32), ((4,), torch.float32)], bytes_per_pack=0)
    >>> [(f.dtype, f.numel) for f in plan]
    [(torch.float32, 10)]
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from typing import Any, Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

import torch

__all__ = ["DIRECT_MIN_BYTES", "PAIRWISE_MIN_BYTES", "SIGNAL_DTYPES", "SIGNAL_MAX_BYTES", "Bounds", "Frame", "Meta",
           "Piece", "Slot", "SlotPool", "check_tensors", "direct_target", "header_len", "metas_of", "nan_signalled",
           "plan_frames", "wire_plan"]

Meta = Tuple[Tuple[int, ...], torch.dtype]
"""The shape and dtype of one tensor."""
Bounds = Tuple[Tuple[int, int, bool], ...]
"""``(start, stop, pairwise)`` of each piece of a frame, in elements of its buffer (header included);
``pairwise`` marks a piece sent as a pairwise exchange instead of an all-reduce."""

PAIRWISE_MIN_BYTES = 16 << 20
"""Frames from this size travel as a pairwise exchange between two processes (see ``pairwise.py``)."""
DIRECT_MIN_BYTES = 4 << 20
"""From this size a lone tensor that cannot be NaN-signalled (integers, bool, complex) summed in
place between two processes travels direct, after a header piece (see above): below it, the
extra header message costs more than the copies it saves."""
SIGNAL_MAX_BYTES = 32 << 20
"""Below this size a lone floating-point tensor summed in place between two processes is
NaN-signalled (:func:`nan_signalled`): gloo's own all-reduce of it costs about what raw gloo does,
while the pairwise exchange, with its header message, only pays from about 32 MB here (16 MB:
0.85-0.95x raw gloo; 32 MB: even; 64 MB: 1.05-1.09x)."""
SIGNAL_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
"""The floating-point dtypes gloo sums whose first element may carry the signal (:func:`nan_signalled`)."""
HEADER_BYTES = 64
"""Bytes reserved at the start of frame 0 for the header element (keeps the data aligned)."""
_ITEMSIZE: Dict[torch.dtype, int] = {}


class Frame(NamedTuple):
    """One flat buffer: its dtype, its tensors (index into the list) and its element count."""

    dtype: torch.dtype
    members: Tuple[int, ...]
    numel: int


class Piece(NamedTuple):
    """One message of a frame (an all-reduce, or a pairwise exchange): the buffer range, the tensor parts in it.

    ``parts`` holds ``(tensor index, view)`` for each tensor in the range (pieces never cut one).
    """

    wire: torch.Tensor
    parts: Tuple[Tuple[int, torch.Tensor], ...]
    pairwise: bool


def check_tensors(tensors: Any, what: str) -> List[torch.Tensor]:
    """``tensors`` as a list, checked: a non-empty list or tuple of tensors on one device."""
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what} expects a list or tuple of tensors, received {type(tensors).__name__}.")
    if not tensors:
        raise ValueError(f"{what} needs at least one tensor; received an empty list.")
    device = None
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            bad = [type(t).__name__ for t in tensors if not isinstance(t, torch.Tensor)]
            raise TypeError(f"{what} expects tensors, received {', '.join(bad)}.")
        if device is None:
            device = t.device
        elif t.device != device:
            devices = sorted({str(t.device) for t in tensors})
            raise ValueError(f"{what} needs all tensors on one device, received {devices}.")
    return list(tensors)


def metas_of(tensors: Sequence[torch.Tensor]) -> Tuple[Meta, ...]:
    """The ``(shape, dtype)`` of each tensor (shapes are ``torch.Size``, a tuple)."""
    return tuple((t.shape, t.dtype) for t in tensors)


def _itemsize(dtype: torch.dtype) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return size


def header_len(dtype: torch.dtype) -> int:
    """Elements reserved at the start of frame 0 (the header element is the first)."""
    return max(1, HEADER_BYTES // _itemsize(dtype))


def plan_frames(metas: Sequence[Meta], bytes_per_pack: int) -> Tuple[Frame, ...]:
    """Groups tensors by dtype (in order of first appearance) and splits groups into packs.

    Args:
        metas: ``(shape, dtype)`` per tensor.
        bytes_per_pack: the largest pack in bytes; 0 means one pack per dtype.
    """
    groups: dict = {}
    for index, (shape, dtype) in enumerate(metas):
        groups.setdefault(dtype, []).append((index, math.prod(shape)))
    frames: List[Frame] = []
    for dtype, members in groups.items():
        limit = bytes_per_pack // _itemsize(dtype) if bytes_per_pack > 0 else 0
        current: List[int] = []
        size = 0
        for index, numel in members:
            if current and limit and size + numel > limit:
                frames.append(Frame(dtype, tuple(current), size))
                current, size = [], 0
            current.append(index)
            size += numel
        frames.append(Frame(dtype, tuple(current), size))
    return tuple(frames)


def nan_signalled(frames: Sequence[Frame], pairwise: bool, direct: bool) -> bool:
    """Whether a collective's first element carries its agreement signal instead of a header.

    True for an in-place sum between two processes (``pairwise`` and ``direct``) of one
    floating-point tensor (:data:`SIGNAL_DTYPES`) below :data:`SIGNAL_MAX_BYTES`: a worker
    that runs something else sends a NaN there (and zeros elsewhere), so a sum that is not NaN
    proves that both workers sent this collective, and no header region, message or copy is
    needed (see ``nan_signal.py``).
    """
    if not (pairwise and direct and len(frames) == 1 and len(frames[0].members) == 1):
        return False
    frame = frames[0]
    return frame.dtype in SIGNAL_DTYPES and 0 < frame.numel * _itemsize(frame.dtype) < SIGNAL_MAX_BYTES


def wire_plan(frames: Sequence[Frame], pairwise: bool = False, direct: bool = False) -> Tuple[Bounds, ...]:
    """The pieces each frame travels in (frame 0 with its header region first).

    Without ``pairwise`` every frame is one piece (one gloo all-reduce). With ``pairwise``
    (two processes on gloo), a frame of at least :data:`PAIRWISE_MIN_BYTES` travels as a
    pairwise exchange (``pairwise.py``); frame 0's header region is then a piece of its own,
    sent (and checked) first. With ``pairwise`` and ``direct`` (an in-place sum), a lone
    floating-point tensor (:func:`nan_signalled`) is one piece without a header region, and a
    frame 0 holding one tensor of another dtype of at least :data:`DIRECT_MIN_BYTES` travels as a
    header piece and a data piece; the caller may all-reduce either data piece in its own
    tensor. The plan depends only on the frames and the flags, so workers that agree on the
    fingerprint agree on the plan.
    """
    if nan_signalled(frames, pairwise, direct):
        return (((0, frames[0].numel, False),),)
    plan = []
    for f, frame in enumerate(frames):
        lead = header_len(frame.dtype) if f == 0 else 0
        nbytes = frame.numel * _itemsize(frame.dtype)
        if pairwise and nbytes >= PAIRWISE_MIN_BYTES:
            plan.append(((0, lead, False), (lead, lead + frame.numel, True)) if lead else
                        ((0, frame.numel, True),))
        elif pairwise and direct and lead and len(frame.members) == 1 and nbytes >= DIRECT_MIN_BYTES:
            plan.append(((0, lead, False), (lead, lead + frame.numel, False)))
        else:
            plan.append(((0, lead + frame.numel, False),))
    return tuple(plan)


def direct_target(piece: Piece, targets: Optional[List[torch.Tensor]]) -> Optional[torch.Tensor]:
    """The target tensor a piece can be all-reduced in directly, if any.

    For a fingerprint whose plan allows it (``Fingerprint.direct``: an in-place sum between two
    processes, where a differing peer adds zeros, which leaves the values as they were for the
    retry): a piece that is exactly one tensor, contiguous, on the wire's device and not
    tracked by autograd. (gloo reads a contiguous tensor of any shape as flat, so no view is
    made.)
    """
    if targets is None or len(piece.parts) != 1:
        return None
    i, view = piece.parts[0]
    target = targets[i]
    if view.numel() != piece.wire.numel() or target.requires_grad or not target.is_contiguous() or \
            target.device != piece.wire.device:
        return None
    return target


class Slot:
    """A flat buffer for one frame, with a view per member tensor and one for the header slot.

    Slots are kept between collectives (see :class:`SlotPool`): a fresh 64 MB buffer costs
    tens of milliseconds in page faults here, as much as the collective itself, and building
    views costs microseconds per call on a path whose budget is a few tens.

    Args:
        frame: the frame this buffer holds.
        metas: ``(shape, dtype)`` of every tensor of the collective.
        device: where the buffer lives.
        header: reserve the header region at the start (frame 0 of an all-reduce).
        bounds: the pieces (see :func:`wire_plan`); default one all-reduce piece.
    """

    __slots__ = ("buffer", "views", "header", "pieces", "scratch", "dirty", "_base")

    def __init__(self, frame: Frame, metas: Sequence[Meta], device: torch.device, header: bool,
                 bounds: Optional[Bounds] = None) -> None:
        lead = header_len(frame.dtype) if header else 0
        self.buffer = torch.empty(lead + frame.numel, dtype=frame.dtype, device=device)
        if lead:
            self.buffer[:lead].zero_()
        views = []
        offset = lead
        for i in frame.members:
            numel = math.prod(metas[i][0])
            views.append(self.buffer.narrow(0, offset, numel).view(metas[i][0]))
            offset += numel
        self.views: Tuple[torch.Tensor, ...] = tuple(views)
        self.header: Optional[torch.Tensor] = self.buffer.narrow(0, 0, 1) if header else None
        self.dirty = False  # the header holds a non-zero sum (reset before it is sent again)
        bounds = bounds or ((0, lead + frame.numel, False),)
        self.pieces = tuple(self._piece(frame, metas, lead, start, stop, pair) for start, stop, pair in bounds)
        largest = max((stop - start for start, stop, pair in bounds if pair), default=0)
        self.scratch = torch.empty(largest - largest // 2, dtype=frame.dtype, device=device) if largest else None
        self._base = _storage_uses(self.buffer)

    def _piece(self, frame: Frame, metas: Sequence[Meta], lead: int, start: int, stop: int, pair: bool) -> Piece:
        parts = []
        offset = lead
        for i, view in zip(frame.members, self.views):
            numel = math.prod(metas[i][0])
            if start <= offset and offset + numel <= stop:
                # A tensor object of its own: idle() counts the references to the views handed out.
                parts.append((i, view.view(view.shape)))
            elif start < offset + numel and offset < stop:
                raise ValueError(f"a piece must hold whole tensors; elements {start}:{stop} cut tensor {i}.")
            offset += numel
        return Piece(self.buffer.narrow(0, start, stop - start), tuple(parts), pair)

    def fill(self, tensors: Sequence[torch.Tensor], frame: Frame, header: Optional[float]) -> torch.Tensor:
        """Copies the frame's tensors (and ``header``) in; returns the flat buffer."""
        for view, i in zip(self.views, frame.members):
            source = tensors[i]
            view.copy_(source.detach() if source.requires_grad else source)
        if header is not None and self.header is not None:
            self.header.fill_(header)
        return self.buffer

    def fill_piece(self, tensors: Sequence[torch.Tensor], k: int) -> torch.Tensor:
        """Copies the tensors of piece ``k`` in (and clears a dirty header); returns the range to send."""
        piece = self.pieces[k]
        if self.dirty and k == 0:
            self.header.zero_()  # type: ignore[union-attr]
            self.dirty = False
        for i, view in piece.parts:
            source = tensors[i]
            view.copy_(source.detach() if source.requires_grad else source)
        return piece.wire

    def copy_out(self, targets: Sequence[torch.Tensor], k: int) -> None:
        """Copies the sums of piece ``k`` back into ``targets``.

        Runs right after a wait, when every bit of CPU costs the most on a busy machine: the
        grad-mode switch is only paid for targets that require grad.
        """
        for i, view in self.pieces[k].parts:
            target = targets[i]
            if target.requires_grad:
                with torch.no_grad():
                    target.copy_(view)
            else:
                target.copy_(view)

    def idle(self) -> bool:
        """True when nothing outside this slot holds its buffer or one of its views."""
        if _storage_uses(self.buffer) != self._base:
            return False
        for view in self.views:
            if sys.getrefcount(view) > 3:  # self.views, the loop variable, the argument
                return False
        return True


class SlotPool:
    """Slots kept by key (for example a fingerprint and a frame number); least recently used go."""

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = capacity
        self._slots: "OrderedDict[Hashable, Slot]" = OrderedDict()

    def get(self, key: Hashable, frame: Frame, metas: Sequence[Meta], device: torch.device, header: bool,
            bounds: Optional[Bounds] = None) -> Slot:
        """The slot kept for ``key`` if it is idle, else a new one (kept from now on)."""
        slot = self._slots.get(key)
        if slot is not None and slot.idle():
            self._slots.move_to_end(key)
            return slot
        slot = self._slots[key] = Slot(frame, metas, device, header, bounds)
        self._slots.move_to_end(key)
        while len(self._slots) > self._capacity:
            self._slots.popitem(last=False)
        return slot


def _storage_uses(buffer: torch.Tensor) -> int:
    try:
        return int(torch._C._storage_Use_Count(buffer.untyped_storage()._cdata))
    except (AttributeError, RuntimeError):  # pragma: no cover - older torch: never reuse
        return -1
