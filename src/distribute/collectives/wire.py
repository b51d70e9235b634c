"""The wire methods of an all-reduce: how its data moves, each a class that says when it applies.

Every all-reduce is *planned* once per kind of call (``plans.py``): its frames
(``packing.py``), then the first wire method of :data:`METHODS` whose :meth:`WireMethod.applies`
is true (:func:`choose`, the only place a method is chosen). The method gives the pieces each
frame travels in (:meth:`~WireMethod.bounds`, part of the fingerprint, so workers whose
messages would differ never agree) and moves the data (:meth:`~WireMethod.send`):

* :class:`NanSignalled` (fast path ``nan_signal``): an in-place sum of one floating-point tensor
  between two processes, summed by gloo where it is; its first element carries the agreement
  signal instead of a header (``nan_signal.py``);
* :class:`Pairwise` (``pairwise``): between two processes, frames of at least
  :data:`thresholds.PAIRWISE_MIN_BYTES` travel as a pairwise exchange that reads (and, in
  place, writes) a lone tensor where it is (``pairwise.py``), after a header piece;
* :class:`Direct` (``direct``): an in-place sum between two processes: a piece that is exactly
  one tensor is all-reduced in that tensor (no copy in or out); a lone tensor of at least
  :data:`thresholds.DIRECT_MIN_BYTES` in frame 0 travels after a header piece of its own;
* :class:`Packed` (always): each frame one all-reduce of a buffer, the header in frame 0.

The fast paths can be turned off (``DISTRIBUTE_FAST_PATHS=0``, read by
``cluster_resolver/fast_paths.py``, or ``connect(..., fast_paths=False)``): every all-reduce
then travels :class:`Packed`, with the same sums bit for bit (between two processes every
element is ``a + b`` either way). The option is part of every fingerprint (``option_tag``).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, FrozenSet, List, Optional, Tuple

import torch

from distribute.collectives import thresholds
from distribute.collectives.nan_signal import SIGNAL_DTYPES, signalled_sum
from distribute.collectives.packing import Bounds, Frame, Slot, frame_bytes, header_len, packed_bounds
from distribute.collectives.stream import Channel, stream

if TYPE_CHECKING:  # pragma: no cover
    from distribute.collectives.verify import Fingerprint

__all__ = ["FAST_PATHS", "METHODS", "Direct", "NanSignalled", "Packed", "Pairwise", "PlanInputs", "WireMethod",
           "choose", "fast_path_set", "option_tag"]

FAST_PATHS: FrozenSet[str] = frozenset({"nan_signal", "pairwise", "direct"})
"""The names of the fast paths (every one is on by default)."""


@dataclass(frozen=True)
class PlanInputs:
    """What decides an all-reduce's wire method.

    Attributes:
        frames: its frame plan.
        two_on_gloo: two processes, the data on gloo (CPU).
        inplace: the sums are written into the caller's tensors, which are on the wire's device.
        enabled: the fast paths that are on.
    """

    frames: Tuple[Frame, ...]
    two_on_gloo: bool
    inplace: bool
    enabled: FrozenSet[str]


class WireMethod(abc.ABC):
    """How an all-reduce's data moves; see the module docstring."""

    name: ClassVar[str]
    header: ClassVar[bool] = True
    direct: ClassVar[bool] = False

    @abc.abstractmethod
    def applies(self, inputs: PlanInputs) -> bool:
        """Whether this method can carry an all-reduce with ``inputs``."""

    @abc.abstractmethod
    def bounds(self, frames: Tuple[Frame, ...]) -> Tuple[Bounds, ...]:
        """The pieces each frame travels in (frame 0 with its header region first, if any)."""

    def send(self, channel: Channel, fp: "Fingerprint", slots: List[Slot], tensors: List[torch.Tensor],
             targets: Optional[List[torch.Tensor]], limit: float, check: bool) -> bool:
        """Sends every piece and waits for the sums; False when a predicted collective was not what
        every worker ran (nothing more was sent; see ``stream.stream``)."""
        return stream(channel, fp, slots, tensors, targets, limit, check)


class NanSignalled(WireMethod):
    """One floating-point tensor in place between two processes, below SIGNAL_MAX_BYTES: no header."""

    name = "nan_signal"
    header = False
    direct = True

    def applies(self, inputs: PlanInputs) -> bool:
        frames = inputs.frames
        if not (self.name in inputs.enabled and inputs.two_on_gloo and inputs.inplace and len(frames) == 1
                and len(frames[0].members) == 1):
            return False
        return frames[0].dtype in SIGNAL_DTYPES and 0 < frame_bytes(frames[0]) < thresholds.SIGNAL_MAX_BYTES

    def bounds(self, frames: Tuple[Frame, ...]) -> Tuple[Bounds, ...]:
        return (((0, frames[0].numel, False),),)

    def send(self, channel: Channel, fp: "Fingerprint", slots: List[Slot], tensors: List[torch.Tensor],
             targets: Optional[List[torch.Tensor]], limit: float, check: bool) -> bool:
        signalled_sum(channel.link, channel.verifier, fp, slots[0], tensors, targets, limit, check)
        return True


class Pairwise(WireMethod):
    """Between two processes, frames from PAIRWISE_MIN_BYTES as pairwise exchanges."""

    name = "pairwise"

    def applies(self, inputs: PlanInputs) -> bool:
        return self.name in inputs.enabled and inputs.two_on_gloo and \
            any(frame_bytes(f) >= thresholds.PAIRWISE_MIN_BYTES for f in inputs.frames)

    def bounds(self, frames: Tuple[Frame, ...]) -> Tuple[Bounds, ...]:
        plan: List[Bounds] = []
        for f, frame in enumerate(frames):
            lead = header_len(frame.dtype) if f == 0 else 0
            if frame_bytes(frame) < thresholds.PAIRWISE_MIN_BYTES:
                plan.append(((0, lead + frame.numel, False),))
            elif lead:
                plan.append(((0, lead, False), (lead, lead + frame.numel, True)))
            else:
                plan.append(((0, frame.numel, True),))
        return tuple(plan)


class Direct(WireMethod):
    """In place between two processes: pieces of exactly one tensor summed where the tensor is."""

    name = "direct"
    direct = True

    def applies(self, inputs: PlanInputs) -> bool:
        if not (self.name in inputs.enabled and inputs.two_on_gloo and inputs.inplace):
            return False
        return _lone_first(inputs.frames[0]) or any(len(f.members) == 1 for f in inputs.frames[1:])

    def bounds(self, frames: Tuple[Frame, ...]) -> Tuple[Bounds, ...]:
        plan = packed_bounds(frames)
        if not _lone_first(frames[0]):
            return plan
        lead = header_len(frames[0].dtype)
        return (((0, lead, False), (lead, lead + frames[0].numel, False)),) + plan[1:]


def _lone_first(frame: Frame) -> bool:
    return len(frame.members) == 1 and frame_bytes(frame) >= thresholds.DIRECT_MIN_BYTES


class Packed(WireMethod):
    """The general path: each frame one all-reduce of a buffer, the header in frame 0."""

    name = "packed"

    def applies(self, inputs: PlanInputs) -> bool:
        return True

    def bounds(self, frames: Tuple[Frame, ...]) -> Tuple[Bounds, ...]:
        return packed_bounds(frames)


METHODS: Tuple[WireMethod, ...] = (NanSignalled(), Pairwise(), Direct(), Packed())
"""The wire methods, in the order :func:`choose` tries them."""


def choose(inputs: PlanInputs) -> WireMethod:
    """The wire method of an all-reduce: the first of :data:`METHODS` that applies."""
    return next(method for method in METHODS if method.applies(inputs))


def fast_path_set(fast_paths: object) -> FrozenSet[str]:
    """The fast paths that ``fast_paths`` turns on: True (all), False (none) or some of :data:`FAST_PATHS`."""
    if fast_paths is True or fast_paths is False:
        return FAST_PATHS if fast_paths else frozenset()
    if isinstance(fast_paths, (list, tuple, set, frozenset)) and all(isinstance(n, str) for n in fast_paths):
        unknown = sorted(set(fast_paths) - FAST_PATHS)
        if not unknown:
            return frozenset(fast_paths)
    raise ValueError(f"fast_paths must be True, False or a collection of the names {sorted(FAST_PATHS)}; "
                     f"received {fast_paths!r}.")


def option_tag(enabled: FrozenSet[str]) -> str:
    """How the option shows in fingerprints (part of the digest): '' when every fast path is on."""
    if enabled == FAST_PATHS:
        return ""
    return " [fast paths off]" if not enabled else f" [fast paths: {', '.join(sorted(enabled))}]"
