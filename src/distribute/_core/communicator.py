"""Communicator: what crosses worker processes, behind one small interface.

A strategy reduces a value in two stages. Its ``CrossDeviceOps`` combines the local replicas'
tensors on one device (the only place a reduction is chosen); its ``Communicator`` then
combines that result with the other worker processes. ``LocalCommunicator`` is the one
process of every in-process strategy: each collective returns its input. The implementation
over a process group (``distribute.collectives.communicator.ProcessGroupCommunicator``) lives
with the collectives; this module sits in ``_core`` so that ``StrategyExtended`` can declare
the seam without importing anything above it.

Every worker must make the same sequence of calls with the same notes, shapes and dtypes.
"""

from __future__ import annotations

import abc
from typing import List, NamedTuple, Optional, Sequence

import torch

from distribute._base.reduce_op import ReduceOp

__all__ = ["LOCAL", "Communicator", "Gathered", "LocalCommunicator", "check_op"]


class Gathered(NamedTuple):
    """One tensor gathered from every worker, and where this worker's part starts along the axis."""

    tensor: torch.Tensor
    offset: int


class Communicator(abc.ABC):
    """Collectives over the worker processes of a strategy (one process: identities).

    ``note`` names a call in fingerprints and error messages; ``timeout`` (seconds) bounds it,
    ``None`` meaning the communicator's default.
    """

    @property
    @abc.abstractmethod
    def num_workers(self) -> int:
        """How many processes take part (1: every collective returns its input)."""

    @property
    @abc.abstractmethod
    def rank(self) -> int:
        """This process's index among them, from 0."""

    @abc.abstractmethod
    def all_reduce(self, tensors: Sequence[torch.Tensor], op: ReduceOp = ReduceOp.SUM, *, note: str = "all_reduce",
                   timeout: Optional[float] = None, inplace: bool = False) -> List[torch.Tensor]:
        """Each tensor combined over the workers by ``op`` (MEAN divides by ``num_workers``).

        With ``inplace`` the results are written into ``tensors`` and those are returned.
        """

    @abc.abstractmethod
    def all_gather(self, tensors: Sequence[torch.Tensor], axis: int, *, note: str = "all_gather",
                   timeout: Optional[float] = None) -> List[Gathered]:
        """Each tensor concatenated over the workers along ``axis`` in rank order (sizes may differ there)."""

    @abc.abstractmethod
    def broadcast(self, tensors: Sequence[torch.Tensor], source: int = 0, *, note: str = "broadcast",
                  timeout: Optional[float] = None) -> None:
        """Overwrites ``tensors`` in place with worker ``source``'s values."""

    @abc.abstractmethod
    def any_true(self, flag: bool, *, note: str = "flag", timeout: Optional[float] = None) -> bool:
        """True when ``flag`` is true on any worker."""


class LocalCommunicator(Communicator):
    """The single process of an in-process strategy: every collective returns its input."""

    @property
    def num_workers(self) -> int:
        """Always 1."""
        return 1

    @property
    def rank(self) -> int:
        """Always 0."""
        return 0

    def all_reduce(self, tensors: Sequence[torch.Tensor], op: ReduceOp = ReduceOp.SUM, *, note: str = "all_reduce",
                   timeout: Optional[float] = None, inplace: bool = False) -> List[torch.Tensor]:
        """``tensors`` themselves (a sum or mean over one worker)."""
        check_op(op)
        return list(tensors)

    def all_gather(self, tensors: Sequence[torch.Tensor], axis: int, *, note: str = "all_gather",
                   timeout: Optional[float] = None) -> List[Gathered]:
        """``tensors`` themselves, each at offset 0."""
        return [Gathered(t, 0) for t in tensors]

    def broadcast(self, tensors: Sequence[torch.Tensor], source: int = 0, *, note: str = "broadcast",
                  timeout: Optional[float] = None) -> None:
        """Nothing to do: this process is worker ``source``."""
        if isinstance(source, bool) or source != 0:
            raise ValueError(f"source must be 0 (the only worker of a local communicator), received {source!r}.")

    def any_true(self, flag: bool, *, note: str = "flag", timeout: Optional[float] = None) -> bool:
        """``flag``."""
        return bool(flag)

    def __repr__(self) -> str:
        return "LocalCommunicator()"


def check_op(op: ReduceOp) -> None:
    """Raises ``TypeError`` unless ``op`` is a ``ReduceOp``."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a distribute.ReduceOp (SUM or MEAN), received {op!r}.")

LOCAL = LocalCommunicator()
"""The communicator of every strategy that runs in one process."""
