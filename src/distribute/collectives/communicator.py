"""ProcessGroupCommunicator: the ``Communicator`` of a multi-worker strategy, over a ``ProcessGroup``.

It adds the strategy's defaults (the collective timeout of its ``CommunicationOptions`` and
its ``bytes_per_pack``) to the group's collectives and turns ``ReduceOp.MEAN`` into a sum
divided by the number of workers. Everything else (packing, fingerprints, failure reports)
is the group's.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core.communicator import Communicator, Gathered, check_op
from distribute.collectives.process_group import ProcessGroup

__all__ = ["ProcessGroupCommunicator"]


class ProcessGroupCommunicator(Communicator):
    """Collectives over the workers of ``group``.

    Args:
        group: the connected ``ProcessGroup``.
        timeout: seconds a collective waits when the call gives none (None: the group's default).
        bytes_per_pack: pack size limit of all-reduces in bytes (0: one pack per dtype).
    """

    def __init__(self, group: ProcessGroup, timeout: Optional[float] = None, bytes_per_pack: int = 0) -> None:
        if not isinstance(group, ProcessGroup):
            raise TypeError(f"group must be a distribute.collectives.process_group.ProcessGroup, received {group!r}.")
        if isinstance(bytes_per_pack, bool) or not isinstance(bytes_per_pack, int) or bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be a non-negative int, received {bytes_per_pack!r}.")
        self._group = group
        self._timeout = timeout
        self._bytes_per_pack = bytes_per_pack

    @property
    def group(self) -> ProcessGroup:
        """The process group the collectives run on."""
        return self._group

    @property
    def num_workers(self) -> int:
        """The group's world size."""
        return self._group.world_size

    @property
    def rank(self) -> int:
        """This process's rank in the group."""
        return self._group.rank

    def _limit(self, timeout: Optional[float]) -> Optional[float]:
        return self._timeout if timeout is None else timeout

    def all_reduce(self, tensors: Sequence[torch.Tensor], op: ReduceOp = ReduceOp.SUM, *, note: str = "all_reduce",
                   timeout: Optional[float] = None, inplace: bool = False) -> List[torch.Tensor]:
        """The group's packed all-reduce (a sum); MEAN divides the sums by the number of workers."""
        check_op(op)
        if inplace and op is ReduceOp.MEAN and not all(t.is_floating_point() or t.is_complex() for t in tensors):
            raise TypeError("an in-place MEAN all-reduce needs floating-point tensors (the mean is written back); "
                            f"received dtypes {[t.dtype for t in tensors]}. Use inplace=False for integers.")
        sums = self._group.all_reduce(tensors, note=note, timeout=self._limit(timeout),
                                      bytes_per_pack=self._bytes_per_pack, inplace=inplace)
        if op is ReduceOp.SUM:
            return sums
        if inplace:
            with torch.no_grad():
                for total in sums:
                    total.div_(self.num_workers)
            return sums
        return [_mean(total, self.num_workers) for total in sums]

    def all_gather(self, tensors: Sequence[torch.Tensor], axis: int, *, note: str = "all_gather",
                   timeout: Optional[float] = None) -> List[Gathered]:
        """One group all-gather per tensor (sizes along ``axis`` are exchanged first)."""
        out = []
        for tensor in tensors:
            joined, offset = self._group.all_gather(tensor, axis, note=note, timeout=self._limit(timeout),
                                                    with_offset=True)
            out.append(Gathered(joined, offset))
        return out

    def broadcast(self, tensors: Sequence[torch.Tensor], source: int = 0, *, note: str = "broadcast",
                  timeout: Optional[float] = None) -> None:
        """The group's broadcast from rank ``source``, in place."""
        self._group.broadcast(tensors, note=note, src=source, timeout=self._limit(timeout))

    def any_true(self, flag: bool, *, note: str = "flag", timeout: Optional[float] = None) -> bool:
        """The group's agreement on ``flag``."""
        return self._group.any_true(bool(flag), note=note, timeout=self._limit(timeout))

    def __repr__(self) -> str:
        return f"ProcessGroupCommunicator({self._group!r})"


def _mean(total: torch.Tensor, count: int) -> torch.Tensor:
    if not (total.is_floating_point() or total.is_complex()):
        total = total.to(torch.float64)
    return total / count
