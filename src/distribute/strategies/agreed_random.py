"""One random stream for every worker while variables are created in a multi-worker scope.

``torch.nn`` constructors register their parameters first and initialise them afterwards, in
place, from torch's random generators. So that every worker draws the same initial values,
:class:`AgreedRandom` gives every worker worker 0's generator states at the first variable
creation inside ``MultiWorkerMirroredStrategy.scope()`` (one small broadcast), and gives each
worker its own states back when the outermost scope is left. ``strategy.run`` inside the scope
runs on the worker's own states (dropout and the like stay per worker).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, Optional

import torch

__all__ = ["AgreedRandom"]

Broadcast = Callable[[List[torch.Tensor]], None]


def _states() -> List[torch.Tensor]:
    states = [torch.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states += [s.clone() for s in torch.cuda.get_rng_state_all()]
    return states


def _set_states(states: List[torch.Tensor]) -> None:
    torch.set_rng_state(states[0])
    if len(states) > 1:
        torch.cuda.set_rng_state_all(states[1:])


class AgreedRandom:
    """Swaps torch's generator states between this worker's own and worker 0's."""

    def __init__(self) -> None:
        self.depth = 0
        self._own: Optional[List[torch.Tensor]] = None

    @property
    def active(self) -> bool:
        """Whether worker 0's states are in use now."""
        return self._own is not None

    def enter(self) -> None:
        """A scope was entered."""
        self.depth += 1

    def exit(self) -> None:
        """A scope was left; the outermost gives this worker its own states back."""
        self.depth = max(self.depth - 1, 0)
        if self.depth == 0 and self._own is not None:
            own, self._own = self._own, None
            _set_states(own)

    def agree(self, broadcast: Broadcast) -> None:
        """Inside a scope, takes worker 0's states (once per outermost scope)."""
        if self.depth == 0 or self._own is not None:
            return
        own = _states()
        shared = [s.clone() for s in own]
        broadcast(shared)
        self._own = own
        _set_states(shared)

    @contextlib.contextmanager
    def own_states(self) -> Iterator[None]:
        """Runs the body on this worker's own states (inside an agreed scope)."""
        if self._own is None:
            yield
            return
        shared, own = _states(), self._own
        _set_states(own)
        try:
            yield
        finally:
            self._own = _states()
            _set_states(shared)

    def __deepcopy__(self, memo: dict) -> Any:
        return AgreedRandom()
