"""What one scheduled function has read and computed on a worker, while it runs.

A worker runs one closure at a time. For its duration :func:`current` returns the closure's
:class:`ClosureState`: the full values of sharded variables it used densely (read once, as
leaves whose gradients the optimizer sends back) and the rows it looked up (each a leaf of only
those rows). The sharded variables a function used densely are read with its other variables
when its next closure starts (``prefetched``). Outside a closure (on the coordinator) it returns None.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Set, Tuple

import torch

__all__ = ["ClosureState", "current", "running"]

_local = threading.local()


class ClosureState:
    """The per-closure caches of one worker."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.dense: Dict[int, torch.Tensor] = {}
        self.dense_users: Dict[int, Any] = {}
        self.prefetched: Set[int] = set()
        self.rows: List[Tuple[Any, torch.Tensor, torch.Tensor]] = []

    def clear_grads(self, variable: Any, set_to_none: bool) -> None:
        """Forgets the gradients a sharded variable collected in this closure."""
        full = self.dense.get(id(variable))
        if full is not None and full.grad is not None:
            if set_to_none:
                full.grad = None
            else:
                full.grad.zero_()
        self.rows = [entry for entry in self.rows if entry[0] is not variable]


def current() -> Optional[ClosureState]:
    """The state of the closure running on this thread, or None."""
    return getattr(_local, "state", None)


class running:
    """``with running(state):`` makes ``state`` current for the block."""

    def __init__(self, state: ClosureState) -> None:
        self._state = state

    def __enter__(self) -> ClosureState:
        self._previous = current()
        _local.state = self._state
        return self._state

    def __exit__(self, *exc: Any) -> None:
        _local.state = self._previous
