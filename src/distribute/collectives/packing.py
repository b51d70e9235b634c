"""Packing tensors into a few flat buffers ("frames") for collectives between processes.

One collective per tensor is slow (each costs a network round trip), so tensors travel packed:
one flat buffer per dtype, split further into packs of at most ``bytes_per_pack`` bytes when
that option is set (a tensor is never split). The *plan* is computed from shapes and dtypes
only, so every worker that passes the same shapes and dtypes gets the same plan and the same
buffer sizes. Frame 0 carries one extra element at its end, the *header* slot used by
``verify.py`` to agree on the collective without an extra exchange.

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
from typing import Any, Hashable, List, NamedTuple, Optional, Sequence, Tuple

import torch

__all__ = ["Frame", "Meta", "Slot", "SlotPool", "check_tensors", "metas_of", "plan_frames"]

Meta = Tuple[Tuple[int, ...], torch.dtype]
"""The shape and dtype of one tensor."""


class Frame(NamedTuple):
    """One flat buffer: its dtype, its tensors (index into the list) and its element count."""

    dtype: torch.dtype
    members: Tuple[int, ...]
    numel: int


def check_tensors(tensors: Any, what: str) -> List[torch.Tensor]:
    """``tensors`` as a list, checked: a non-empty list or tuple of tensors on one device."""
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what} expects a list or tuple of tensors, received {type(tensors).__name__}.")
    if not tensors:
        raise ValueError(f"{what} needs at least one tensor; received an empty list.")
    bad = [type(t).__name__ for t in tensors if not isinstance(t, torch.Tensor)]
    if bad:
        raise TypeError(f"{what} expects tensors, received {', '.join(bad)}.")
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"{what} needs all tensors on one device, received {sorted(map(str, devices))}.")
    return list(tensors)


def metas_of(tensors: Sequence[torch.Tensor]) -> Tuple[Meta, ...]:
    """The ``(shape, dtype)`` of each tensor (shapes are ``torch.Size``, a tuple)."""
    return tuple((t.shape, t.dtype) for t in tensors)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


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


class Slot:
    """A flat buffer for one frame, with a view per member tensor and one for the header slot.

    Slots are kept between collectives (see :class:`SlotPool`): a fresh 64 MB buffer costs
    tens of milliseconds in page faults here, as much as the collective itself, and building
    views costs microseconds per call on a path whose budget is a few tens.
    """

    __slots__ = ("buffer", "views", "header", "_base")

    def __init__(self, frame: Frame, metas: Sequence[Meta], device: torch.device, header: bool) -> None:
        self.buffer = torch.empty(frame.numel + (1 if header else 0), dtype=frame.dtype, device=device)
        views = []
        offset = 0
        for i in frame.members:
            numel = math.prod(metas[i][0])
            views.append(self.buffer.narrow(0, offset, numel).view(metas[i][0]))
            offset += numel
        self.views: Tuple[torch.Tensor, ...] = tuple(views)
        self.header: Optional[torch.Tensor] = self.buffer.narrow(0, frame.numel, 1) if header else None
        self._base = _storage_uses(self.buffer)

    def fill(self, tensors: Sequence[torch.Tensor], frame: Frame, header: Optional[float]) -> torch.Tensor:
        """Copies the frame's tensors (and ``header``) in; returns the flat buffer."""
        for view, i in zip(self.views, frame.members):
            source = tensors[i]
            view.copy_(source.detach() if source.requires_grad else source)
        if header is not None and self.header is not None:
            self.header.fill_(header)
        return self.buffer

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

    def get(self, key: Hashable, frame: Frame, metas: Sequence[Meta], device: torch.device, header: bool) -> Slot:
        """The slot kept for ``key`` if it is idle, else a new one (kept from now on)."""
        slot = self._slots.get(key)
        if slot is not None and slot.idle():
            self._slots.move_to_end(key)
            return slot
        slot = self._slots[key] = Slot(frame, metas, device, header)
        self._slots.move_to_end(key)
        while len(self._slots) > self._capacity:
            self._slots.popitem(last=False)
        return slot


def _storage_uses(buffer: torch.Tensor) -> int:
    try:
        return int(torch._C._storage_Use_Count(buffer.untyped_storage()._cdata))
    except (AttributeError, RuntimeError):  # pragma: no cover - older torch: never reuse
        return -1
