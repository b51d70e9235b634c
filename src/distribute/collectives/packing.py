"""Packing tensors into a few flat buffers ("frames") for collectives between processes.

One collective per tensor is slow (each costs a network round trip), so tensors travel packed:
one flat buffer per dtype, split further into packs of at most ``bytes_per_pack`` bytes when
that option is set (a tensor is never split). The *plan* is computed from shapes and dtypes
only, so every worker that passes the same shapes and dtypes gets the same plan and the same
buffer sizes. Frame 0 starts with a *header* region (one element used by ``verify.py`` to
agree on the collective without an extra exchange, padded to 64 bytes so that the tensors
after it stay aligned).

A frame travels as one or more *pieces* (``Bounds``): one all-reduce each by default
(:func:`packed_bounds`); the wire methods of ``wire.py`` plan others (a pairwise exchange, a
tensor summed where it is, a header piece of its own).

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

from distribute.collectives.torch_private import storage_use_count

__all__ = ["Bounds", "Frame", "Meta", "Piece", "Slot", "SlotPool", "check_tensors", "direct_target", "frame_bytes",
           "header_len", "itemsize", "metas_of", "packed_bounds", "plan_frames"]

Meta = Tuple[Tuple[int, ...], torch.dtype]
"""The shape and dtype of one tensor."""
Bounds = Tuple[Tuple[int, int, bool], ...]
"""``(start, stop, pairwise)`` of each piece of a frame, in elements of its buffer (header included);
``pairwise`` marks a piece sent as a pairwise exchange instead of an all-reduce."""

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


def itemsize(dtype: torch.dtype) -> int:
    """Bytes per element of ``dtype``."""
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return size


def frame_bytes(frame: Frame) -> int:
    """The size of a frame's tensors in bytes (its header region left out)."""
    return frame.numel * itemsize(frame.dtype)


def header_len(dtype: torch.dtype) -> int:
    """Elements reserved at the start of frame 0 (the header element is the first)."""
    return max(1, HEADER_BYTES // itemsize(dtype))


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
        limit = bytes_per_pack // itemsize(dtype) if bytes_per_pack > 0 else 0
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


def packed_bounds(frames: Sequence[Frame]) -> Tuple[Bounds, ...]:
    """Every frame as one all-reduce piece, frame 0 with its header region first (the general plan)."""
    return tuple(((0, (header_len(frame.dtype) if f == 0 else 0) + frame.numel, False),)
                 for f, frame in enumerate(frames))


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
        bounds: the pieces (see ``wire.py``); default one all-reduce piece.
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
        self._base = storage_use_count(self.buffer)

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
        if storage_use_count(self.buffer) != self._base:
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
