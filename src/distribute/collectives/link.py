"""A task's connections (:class:`Connection`) and how collectives wait on them (:class:`Link`).

:func:`~distribute.collectives.connect.connect` fills a :class:`Connection`: the rendezvous
store, the gloo backend (and NCCL's, for CUDA tensors), the health board and monitor. A
:class:`Link` is what the wire methods (``wire.py``, ``stream.py``, ``nan_signal.py``) see of
it: the data backends, per-deadline options, and waits that poll in short slices so that a
peer's reported failure, or its silence (``liveness.py``), stops a blocked collective within
about a second of being known.

An expired slice is never a failure: a wait fails only on the work's own error, on what the
slice check returns (a peer's report, a peer without heartbeat), or past the collective's
limit. A send or receive (the pairwise exchange, ``pairwise.py``) cannot be waited for in
slices (gloo breaks the whole group when a receive's wait expires), so it waits once, for the
whole limit: a peer that stops in the middle of an exchange is found by the timeout alone.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from distribute.collectives import health
from distribute.collectives.torch_private import allgather_options

__all__ = ["Connection", "Link"]

SLICE = datetime.timedelta(milliseconds=200)
"""How long one wait lasts before the peers' reports are looked at again."""
_SLICE_EXPIRED = "Operation timed out"  # what Work.wait(timeout) raises while the work goes on


@dataclass
class Connection:
    """What one task holds open for its process group (fields are None once it has left)."""

    store: Optional[dist.Store] = None
    gloo: Any = None
    nccl: Any = None
    nccl_wanted: bool = False
    board: Optional[health.Board] = None
    monitor_store: Optional[dist.Store] = None
    monitor: Optional[health.Monitor] = None
    forget: Optional[Callable[[Any], None]] = None

    def peer_failure(self) -> Optional[Dict[str, Any]]:
        """The first error report of a peer that the monitor noticed, if any."""
        return self.monitor.failure if self.monitor is not None else None


Fail = Callable[[str, bool, float], BaseException]
"""``fail(torch's error, timed out, limit)``: the error to raise (the group is broken by then)."""
PeerFailed = Callable[[], Optional[BaseException]]
"""The error to raise because a peer reported one, or None."""


def _make_options(kind: str, limit: float, root: int) -> Any:
    if kind == "allgather":
        return allgather_options(limit)
    if kind == "broadcast":
        broadcast = dist.BroadcastOptions()
        broadcast.rootRank, broadcast.rootTensor = root, 0
        broadcast.timeout = datetime.timedelta(seconds=limit)
        return broadcast
    allreduce = dist.AllreduceOptions()
    allreduce.timeout = datetime.timedelta(seconds=limit)
    return allreduce


class Link:
    """The data backends of a group and the waits on their work, with the group's failure handling.

    Args:
        connection: the task's connections.
        fail: builds (and records) the error for a failed or timed-out wait.
        peer_failed: the error to raise now because a peer failed, or None.
    """

    def __init__(self, connection: Connection, fail: Fail, peer_failed: PeerFailed) -> None:
        self._connection = connection
        self._fail = fail
        self._peer_failed = peer_failed
        self._options: Dict[Tuple[str, float, int], Any] = {}

    @property
    def gloo(self) -> Any:
        """The gloo backend (``send``/``recv`` and control traffic use it)."""
        return self._connection.gloo

    def backend(self, cuda: bool) -> Any:
        """The backend that carries data on the wire's device (NCCL for CUDA)."""
        return self._connection.nccl if cuda else self._connection.gloo

    def options(self, kind: str, limit: float, root: int = 0) -> Any:
        """Cached options of a ``kind`` ('allreduce', 'allgather', 'broadcast') with a deadline."""
        key = (kind, limit, root)
        opts = self._options.get(key)
        if opts is None:
            opts = self._options[key] = _make_options(kind, limit, root)
        return opts

    def allreduce(self, tensor: torch.Tensor, limit: float, cuda: bool = False) -> Any:
        """Starts a SUM all-reduce of ``tensor`` in place; returns its work."""
        return self.backend(cuda).allreduce([tensor], self.options("allreduce", limit))

    def allgather(self, outs: List[torch.Tensor], tensor: torch.Tensor, limit: float) -> None:
        """Gathers ``tensor`` of every rank into ``outs`` over gloo, and waits."""
        self.wait(self.gloo.allgather([outs], [tensor], self.options("allgather", limit)), limit)

    def broadcast(self, tensor: torch.Tensor, src: int, limit: float) -> None:
        """Overwrites ``tensor`` with rank ``src``'s over gloo, and waits."""
        self.wait(self.gloo.broadcast([tensor], self.options("broadcast", limit, src)), limit)

    def wait_first(self, work: Any, limit: float, cuda: bool = False) -> None:
        """Waits for ``work``: one plain wait for the common case, then :meth:`wait`'s bookkeeping."""
        if not cuda:
            try:
                work.wait(SLICE)
                return
            except RuntimeError:  # not done within the slice (or failed): the full wait diagnoses
                pass
        self.wait(work, limit, cuda)

    def wait(self, work: Any, limit: float, cuda: bool = False) -> None:
        """Waits for ``work`` in slices until ``limit`` seconds; raises the group's error if it fails.

        Between slices, ``peer_failed`` says whether to stop (a peer's report, a silent peer).
        """
        if cuda:  # pragma: no cover - GPUs only; NCCL's watchdog enforces the timeout
            work.wait()
            return
        start = time.monotonic()
        while True:
            try:
                work.wait(SLICE)
                return
            except RuntimeError as exc:
                elapsed = time.monotonic() - start
                if not str(exc).startswith(_SLICE_EXPIRED) or elapsed > limit + 2.0:
                    raise self._fail(str(exc), elapsed >= 0.9 * limit, limit) from None
                # Only a slice expired (even if the work completed just then: the next wait returns).
                if work.is_completed():
                    time.sleep(0.01)  # it says both: no busy loop while that lasts
                failed = self._peer_failed()
                if failed is not None:
                    raise failed from None

    def wait_p2p(self, work: Any, limit: float) -> None:
        """Waits for a send or receive (gloo cannot wait for those in slices: one wait, the whole limit)."""
        start = time.monotonic()
        try:
            work.wait(datetime.timedelta(seconds=limit))
        except RuntimeError as exc:
            raise self._fail(str(exc), time.monotonic() - start >= 0.9 * limit, limit) from None
