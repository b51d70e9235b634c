"""The plan cache of a process group: one plan per kind of call, one rule for forgetting them.

A *plan* is what a collective needs besides its tensors: the fingerprint (``verify.py``: the
frames, the wire method and its pieces, the digest), the device the data travels on, and for an
in-place all-reduce whether the sums are written straight into the caller's tensors. Plans are
keyed by everything that decides them: the kind, the note, the shapes and dtypes, the pack size,
the device, in place or not, and the fast paths that are on. So no plan is ever stale, and the
one invalidation rule is about memory: when :data:`LIMIT` plans are held (a program that makes
ever new shapes or notes), they are all forgotten and made again on demand. Buffers are kept
apart, in ``packing.SlotPool`` (least recently used go).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Hashable, Optional

import torch

if TYPE_CHECKING:  # pragma: no cover
    from distribute.collectives.verify import Fingerprint

__all__ = ["LIMIT", "Plan", "PlanCache"]

LIMIT = 4096
"""Plans held at most; one more forgets them all."""


class Plan:
    """How one kind of collective call travels (see the module docstring)."""

    __slots__ = ("fp", "wire", "out")

    def __init__(self, fp: "Fingerprint", wire: torch.device, out: bool = False) -> None:
        self.fp = fp
        self.wire = wire
        self.out = out  # an in-place sum written straight into the caller's tensors


class PlanCache:
    """The plans of one group, by key."""

    def __init__(self) -> None:
        self._plans: Dict[Hashable, Plan] = {}

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, key: Hashable) -> Optional[Plan]:
        """The plan kept for ``key``, if any."""
        return self._plans.get(key)

    def add(self, key: Hashable, plan: Plan) -> Plan:
        """Keeps ``plan`` for ``key`` (forgetting every plan first when :data:`LIMIT` are held)."""
        if len(self._plans) >= LIMIT:
            self._plans.clear()
        self._plans[key] = plan
        return plan
