"""Collectives across worker processes over ``torch.distributed``, with deadlines and blame.

This layer (this module with its helpers ``connect.py``, ``rendezvous.py``, ``health.py``,
``verify.py``, ``packing.py``, ``pairwise.py``, ``nan_signal.py`` and ``fast_reduce.py``) is
the only place in ``distribute`` that creates a TCPStore or a torch process group.
:func:`distribute.collectives.connect.connect` meets the other tasks of the cluster (see
``rendezvous.py``), builds a gloo process group whose sockets bind this task's own address (plus
an NCCL group for CUDA tensors when asked), and starts a heartbeat thread.
:class:`ProcessGroup` then offers packed ``all_reduce`` (SUM), uneven ``all_gather`` and
``broadcast``:

* every collective is agreed between workers first (``verify.py``), so differing shapes,
  dtypes or order raise :class:`CollectiveMismatchError` on every worker instead of a
  ``SIGABRT`` or a hang; in a steady training loop this costs no extra exchange;
* every collective has a deadline (``timeout``); waiting happens in short slices, so a peer
  that reports an exception stops the others within about a second;
* a failed collective raises :class:`WorkerFailedError` or :class:`CollectiveTimeoutError`
  naming the task at fault and what it was doing (``health.py``); the group is then broken
  and every later call raises :class:`GroupBrokenError` (restart the job);
* an exception that ends the program is reported to the peers, and the group is closed at
  exit (idempotent :meth:`ProcessGroup.shutdown`).

Example (in each of two processes with the same cluster and its own task)::

    group = connect(ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}), "worker", rank)
    total, = group.all_reduce([torch.ones(3)], note="example")   # tensor([2., 2., 2.])
"""

from __future__ import annotations

import datetime
import functools
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch._C import _distributed_c10d as _c10d
from torch.autograd.graph import increment_version

from distribute.collectives import health
from distribute.collectives.failures import CollectiveMismatchError, GroupBrokenError, WorkerFailedError
from distribute.collectives.fast_reduce import FastReduce
from distribute.collectives.nan_signal import signalled_sum
from distribute.collectives.pairwise import exchange
from distribute.collectives.packing import Meta, Slot, SlotPool, check_tensors, direct_target, metas_of, plan_frames
from distribute.collectives.rendezvous import Layout
from distribute.collectives.verify import SPECULATIVE_PIECES, Fingerprint, Verifier, family_digest, make_fingerprint

__all__ = ["ProcessGroup"]
_SLICE = datetime.timedelta(milliseconds=200)
_SLICE_EXPIRED = "Operation timed out"  # what Work.wait(timeout) raises while the work goes on
_LINGER = 10.0
_CPU = torch.device("cpu")


class ProcessGroup:
    """The collectives of one task with the other tasks of its cluster (see :func:`connect`)."""

    def __init__(self, layout: Layout, parts: Dict[str, Any], records: List[dict], timeout: float) -> None:
        self._layout = layout
        self._parts = parts
        self._records = records
        self._timeout = timeout
        self._status = health.LocalStatus()
        self._verifier = Verifier(self._gather_ints, layout.tasks, layout.rank)
        self._fingerprints: Dict[tuple, Fingerprint] = {}
        self._reduce_plans: Dict[tuple, Tuple[Fingerprint, torch.device]] = {}
        self._options: Dict[tuple, Any] = {}
        self._broken: Optional[BaseException] = None
        self._closed = False
        self._limit = timeout
        self._pool = SlotPool()
        self._fast = FastReduce()

    # -- who -----------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """This task's rank (its id in the cluster: the chief is 0)."""
        return self._layout.rank

    @property
    def world_size(self) -> int:
        """The number of tasks in the group."""
        return self._layout.world_size

    @property
    def task(self) -> str:
        """This task's name, e.g. ``'worker:1'``."""
        return self._layout.task

    @property
    def tasks(self) -> Tuple[str, ...]:
        """Every task's name, by rank."""
        return self._layout.tasks

    @property
    def backend(self) -> str:
        """``'gloo'``, or ``'nccl+gloo'`` when CUDA tensors travel over NCCL."""
        return "nccl+gloo" if self._parts.get("nccl") is not None else "gloo"

    @property
    def sequence(self) -> int:
        """How many collectives this group has completed."""
        return self._verifier.seq

    # -- collectives ---------------------------------------------------------------------
    def all_reduce(self, tensors: Sequence[torch.Tensor], *, note: str = "all_reduce", timeout: Optional[float] = None,
                   bytes_per_pack: int = 0, inplace: bool = False) -> List[torch.Tensor]:
        """Sums each tensor over all workers (packed into few buffers).

        Args:
            tensors: the tensors to sum; every worker passes the same shapes and dtypes.
            note: what this is, for fingerprints and error messages.
            timeout: seconds to wait for the peers (None: the group's default).
            bytes_per_pack: pack size limit in bytes (0: one pack per dtype).
            inplace: write the sums into ``tensors`` (and return them) instead of new tensors.

        Returns:
            The sums, one per tensor (views of an internal buffer unless ``inplace``).
        """
        if inplace and timeout is None and type(bytes_per_pack) is int and bytes_per_pack == 0:
            summed = self._fast.run(self, tensors, note)  # a steady small sum (fast_reduce.py)
            if summed is not None:
                return summed
        tensors = check_tensors(tensors, "all_reduce")
        if not isinstance(bytes_per_pack, int) or isinstance(bytes_per_pack, bool) or bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be a non-negative int, received {bytes_per_pack!r}.")
        metas = metas_of(tensors)
        device = tensors[0].device
        plan = self._reduce_plans.get((note, metas, bytes_per_pack, device, inplace))
        if plan is None:  # cached: this lookup is most of the per-call bookkeeping
            wire = self._wire(device)
            plan = self._reduce_plans[(note, metas, bytes_per_pack, device, inplace)] = (
                self._fingerprint(f"all_reduce/{wire.type}", note, metas, bytes_per_pack, True,
                                  inplace and wire == device), wire)
        fp, wire = plan
        out = inplace and wire == device  # sums copied out piece by piece as they arrive
        limit = self._begin(fp, timeout)
        try:
            slots = self._reduce(fp, tensors, tensors if out else None, limit, wire)
        finally:
            self._end()
        if inplace:
            if not out:
                with torch.no_grad():
                    for frame, slot in zip(fp.frames, slots):
                        for i, view in zip(frame.members, slot.views):
                            tensors[i].copy_(view)
            return tensors
        outputs: List[torch.Tensor] = list(tensors)
        for frame, slot in zip(fp.frames, slots):
            for i, view in zip(frame.members, slot.views):
                outputs[i] = view if view.device == device else view.to(device)
        return outputs

    def all_gather(self, tensor: torch.Tensor, axis: int, *, note: str = "all_gather",
                   timeout: Optional[float] = None, with_offset: bool = False) -> Any:
        """Concatenates every worker's ``tensor`` along ``axis`` in rank order (sizes may differ there).

        With ``with_offset``, returns ``(result, offset)`` where ``offset`` is where this
        worker's part starts along ``axis``.
        """
        (tensor,) = check_tensors([tensor], "all_gather")
        if isinstance(axis, bool) or not isinstance(axis, int) or tensor.dim() == 0 or \
                not -tensor.dim() <= axis < tensor.dim():
            raise ValueError(f"all_gather needs an int axis with -rank <= axis < rank; received axis={axis!r} for "
                             f"shape {tuple(tensor.shape)}.")
        moved = tensor.detach().movedim(axis, 0).contiguous().cpu()
        meta: Meta = (torch.Size((-1,) + tuple(moved.shape[1:])), moved.dtype)
        fp = self._fingerprint("all_gather", note, (meta,), 0, False)
        limit = self._begin(fp, timeout)
        family = family_digest(f"all_gather|{note}|{moved.dtype}|{axis}")
        shown = f"{fp.describe} (a value of shape {list(tensor.shape)}, gathered along axis {axis})"
        try:
            sizes = [s[0] for s in self._agree_fully(fp, [moved.shape[0]], limit, family, shown)]
            padded = torch.zeros((max(sizes),) + tuple(moved.shape[1:]), dtype=moved.dtype)
            padded[:moved.shape[0]] = moved
            outs = [torch.empty_like(padded) for _ in sizes]
            self._wait(self._parts["gloo"].allgather([outs], [padded], self._opts("allgather", limit)), limit)
            self._verifier.agree(fp)
        finally:
            self._end()
        joined = torch.cat([o[:n] for o, n in zip(outs, sizes)]).movedim(0, axis).to(tensor.device)
        return (joined, sum(sizes[:self.rank])) if with_offset else joined

    def broadcast(self, tensors: Sequence[torch.Tensor], *, note: str = "broadcast", src: int = 0,
                  timeout: Optional[float] = None) -> None:
        """Overwrites ``tensors`` on every worker with rank ``src``'s values (in place)."""
        tensors = check_tensors(tensors, "broadcast")
        if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < self.world_size:
            raise ValueError(f"src must be a rank in [0, {self.world_size}), received {src!r}.")
        metas = metas_of(tensors)
        fp = self._fingerprint(f"broadcast(from {self.tasks[src]})", note, metas, 0, False)
        limit = self._begin(fp, timeout)
        try:
            self._agree_fully(fp, [], limit)
            for frame in plan_frames(metas, 0):
                slot = Slot(frame, metas, _CPU, False)
                slot.fill(tensors, frame, None)
                self._wait(self._parts["gloo"].broadcast([slot.buffer], self._opts("broadcast", limit, src)), limit)
                with torch.no_grad():
                    for i, view in zip(frame.members, slot.views):
                        tensors[i].copy_(view)
            self._verifier.agree(fp)
        finally:
            self._end()

    def any_true(self, flag: bool, *, note: str = "flag", timeout: Optional[float] = None) -> bool:
        """True when ``flag`` is true on any worker."""
        (total,) = self.all_reduce([torch.tensor([1 if flag else 0], dtype=torch.int64)], note=note, timeout=timeout)
        return bool(total.item() > 0)

    # -- the agreement protocol (see verify.py) ---------------------------------------------
    def _fingerprint(self, kind: str, note: str, metas: Tuple[Meta, ...], bytes_per_pack: int,
                     frames: bool, direct: bool = False) -> Fingerprint:
        key = (kind, note, metas, bytes_per_pack, direct)
        fp = self._fingerprints.get(key)
        if fp is None:
            if len(self._fingerprints) > 4096:
                self._fingerprints.clear()
                self._reduce_plans.clear()
                self._fast.clear()
            pairwise = frames and self.world_size == 2 and kind == "all_reduce/cpu"
            fp = self._fingerprints[key] = make_fingerprint(kind, note, metas, bytes_per_pack, frames, pairwise,
                                                            direct)
        return fp

    def _wire(self, device: torch.device) -> torch.device:
        return device if device.type == "cuda" and "nccl" in self._parts else _CPU

    def _data_group(self, kind: str) -> Any:
        return self._parts["nccl"] if kind.endswith("/cuda") else self._parts["gloo"]

    def _reduce(self, fp: Fingerprint, tensors: List[torch.Tensor], targets: Optional[List[torch.Tensor]],
                limit: float, wire: torch.device, slots: Optional[List[Slot]] = None) -> List[Slot]:
        """Sums through ``slots`` (default: the pool's for ``fp``), agreed by prediction or in full."""
        cuda = wire.type == "cuda"
        group = self._parts["nccl"] if cuda else self._parts["gloo"]
        if slots is None:
            get, digest = self._pool.get, fp.digest
            lead = not fp.nan_signal  # the header region (none where the first element signals)
            slots = [get((digest, i), frame, fp.metas, wire, lead and i == 0, fp.wire[i])
                     for i, frame in enumerate(fp.frames)]
        predicted = self._verifier.predicted()
        if predicted is not None:
            if predicted.digest == fp.digest:
                if self._stream(group, fp, slots, tensors, targets, limit, cuda, True):
                    self._verifier.agree(fp)
                    return slots
            else:
                self._send_markers(predicted, limit)
        self._verifier.full_check(fp)
        self._stream(group, fp, slots, tensors, targets, limit, cuda, False)
        self._verifier.agree(fp)
        return slots

    def _stream(self, group: Any, fp: Fingerprint, slots: List[Slot], tensors: List[torch.Tensor],
                targets: Optional[List[torch.Tensor]], limit: float, cuda: bool, check: bool) -> bool:
        """Fills and sends every piece (all-reduces run while later pieces are filled).

        With ``check`` (a predicted collective), the summed header is read after at most
        ``SPECULATIVE_PIECES`` all-reduce pieces and before any pairwise exchange; False means
        a worker did something else (nothing more was sent, and everything sent has arrived).
        A NaN-signalled collective has no header and is settled in ``nan_signal.py``.
        """
        if fp.nan_signal:  # one floating-point tensor in place between two processes
            signalled_sum(self, fp, slots[0], tensors, targets, limit, check)
            return True
        opts = self._opts("allreduce", limit)
        works: List[Tuple[Any, Slot, int]] = []
        for slot in slots:
            for k, piece in enumerate(slot.pieces):
                if check and (piece.pairwise or len(works) == SPECULATIVE_PIECES):
                    if not self._header_clear(works, slots[0], limit, cuda):
                        return False
                    check = False
                if piece.pairwise:
                    self._exchange(slot, k, tensors, targets, limit)
                    continue
                target = direct_target(piece, targets) if fp.direct else None
                if target is None:
                    works.append((group.allreduce([slot.fill_piece(tensors, k)], opts), slot, k))
                else:  # summed where it is: a predicted peer that differs sends zeros here (see verify.py)
                    works.append((group.allreduce([target], opts), slot, -1))
                    increment_version(target)  # written behind torch's back: tell autograd
        if check and not self._header_clear(works, slots[0], limit, cuda):
            return False
        for work, slot, k in works:
            if cuda or not work.is_completed():
                self._wait(work, limit, cuda)
            if targets is not None and k >= 0:
                slot.copy_out(targets, k)
        return True

    def _exchange(self, slot: Slot, k: int, tensors: List[torch.Tensor], targets: Optional[List[torch.Tensor]],
                  limit: float) -> None:
        """Sums piece ``k`` with the peer by a pairwise exchange, reading a lone tensor in place."""
        piece = slot.pieces[k]
        lone = piece.parts[0][0] if len(piece.parts) == 1 else None
        direct = False  # the sums are written into the target itself
        if lone is not None and tensors[lone].device == slot.buffer.device and tensors[lone].is_contiguous():
            source = tensors[lone].detach().view(-1)
            direct = targets is not None
            out = source if direct else piece.wire
        else:
            source = out = slot.fill_piece(tensors, k)
        timeout = datetime.timedelta(seconds=limit)
        wait = functools.partial(self._wait_p2p, timeout=timeout, limit=limit)
        for work in exchange(self._parts["gloo"], source, out, self.rank, slot.scratch, wait):
            wait(work)
        if direct:
            increment_version(source)  # written behind torch's back: tell autograd
        if targets is not None and not direct:
            slot.copy_out(targets, k)

    def _wait_p2p(self, work: Any, timeout: datetime.timedelta, limit: float) -> None:
        """Waits for a send or receive (gloo cannot wait for those in slices: one wait, the whole limit)."""
        start = time.monotonic()
        try:
            work.wait(timeout)
        except RuntimeError as exc:
            raise self._fail(str(exc), time.monotonic() - start >= 0.9 * limit, limit) from None

    def _header_clear(self, works: List[Tuple[Any, Slot, int]], first: Slot, limit: float, cuda: bool) -> bool:
        """Whether every worker sent the predicted collective (waits for all sent when not)."""
        self._wait_first(works[0][0], limit, cuda)
        if not first.header.item():  # type: ignore[union-attr]
            return True
        first.dirty = True
        for work, _, _ in works[1:]:
            self._wait(work, limit, cuda)
        return False

    def _send_markers(self, predicted: Fingerprint, limit: float) -> None:
        """Sends zero pieces shaped like the predicted ones, flagged 'not this collective'.

        As many as a worker running the predicted collective sends before reading the header.
        """
        cuda = predicted.kind.endswith("/cuda")
        group, opts = self._data_group(predicted.kind), self._opts("allreduce", limit)
        shapes = []
        for frame, bounds in zip(predicted.frames, predicted.wire):
            for start, stop, pair in bounds:
                if pair or len(shapes) == SPECULATIVE_PIECES:
                    break
                shapes.append((frame.dtype, stop - start))
            else:
                continue
            break
        markers = [torch.zeros(numel, dtype=dtype, device="cuda" if cuda else "cpu") for dtype, numel in shapes]
        markers[0][0] = float("nan") if predicted.nan_signal else 1
        works = [group.allreduce([marker], opts) for marker in markers]
        for work in works:
            self._wait(work, limit, cuda)

    def _agree_fully(self, fp: Fingerprint, extras: Sequence[int], limit: float, family: int = 0,
                     shown: str = "") -> List[Tuple[int, ...]]:
        """Full check for kinds without a header slot (after a marker if a header was expected)."""
        predicted = self._verifier.predicted()
        if predicted is not None:
            self._send_markers(predicted, limit)
        return self._verifier.full_check(fp, extras, family, shown)

    def _gather_ints(self, tensor: torch.Tensor) -> List[torch.Tensor]:
        outs = [torch.empty_like(tensor) for _ in range(self.world_size)]
        limit = self._limit
        self._wait(self._parts["gloo"].allgather([outs], [tensor], self._opts("allgather", limit)), limit)
        return outs

    def _opts(self, kind: str, limit: float, root: int = 0) -> Any:
        key = (kind, limit, root)
        opts: Any = self._options.get(key)
        if opts is None:
            opts = {"allreduce": _c10d.AllreduceOptions, "allgather": _c10d.AllgatherOptions,
                    "broadcast": _c10d.BroadcastOptions}[kind]()
            opts.timeout = datetime.timedelta(seconds=limit)
            if kind == "broadcast":
                opts.rootRank, opts.rootTensor = root, 0
            self._options[key] = opts
        return opts

    # -- state, waiting and failures ---------------------------------------------------------
    def _begin(self, fp: Fingerprint, timeout: Optional[float]) -> float:
        if self._broken is not None or self._closed:
            raise self._broken_error(fp.describe)
        monitor = self._parts.get("monitor")
        if monitor is not None and monitor.failure is not None:
            raise self._break(health.reported_failure(self.tasks, self.task, monitor.failure,
                                                      self._status.describe(), fp.describe))
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, received {timeout!r}.")
        limit = float(timeout) if timeout else self._timeout
        self._limit = limit
        self._status.op = fp.describe
        self._status.inside = True
        return limit

    def _end(self) -> None:
        self._status.inside = False
        self._status.seq = self._verifier.seq

    def _wait_first(self, work: Any, limit: float, cuda: bool = False) -> None:
        """Waits for ``work``: one plain wait for the common case, then :meth:`_wait`'s bookkeeping."""
        if not cuda:
            try:
                work.wait(_SLICE)
                return
            except RuntimeError:  # not done within the slice (or failed): the full wait diagnoses
                pass
        self._wait(work, limit, cuda)

    def _wait(self, work: Any, limit: float, cuda: bool = False) -> None:
        if cuda:  # pragma: no cover - GPUs only; NCCL's watchdog enforces the timeout
            work.wait()
            return
        start = time.monotonic()
        while True:
            try:
                work.wait(_SLICE)
                return
            except RuntimeError as exc:
                elapsed = time.monotonic() - start
                sliced = str(exc).startswith(_SLICE_EXPIRED) and not work.is_completed()
                if not sliced or elapsed > limit + 2.0:
                    raise self._fail(str(exc), elapsed >= 0.9 * limit, limit) from None
                monitor = self._parts.get("monitor")
                if monitor is not None and monitor.failure is not None:
                    raise self._break(health.reported_failure(
                        self.tasks, self.task, monitor.failure, self._status.describe(), self._status.op)) from None

    def _fail(self, error: str, timed_out: bool, limit: float) -> BaseException:
        board = self._parts.get("board")
        if board is None:
            return self._break(WorkerFailedError(f"A collective failed on {self.task}: {error}",
                                                 operation=self._status.op))
        return self._break(health.diagnose(board, self.tasks, self.rank, self._status, self._records, error,
                                           timed_out, limit))

    def _break(self, exc: BaseException) -> BaseException:
        if self._broken is None:
            self._broken = exc
        return exc

    def _broken_error(self, operation: str) -> GroupBrokenError:
        why = f"it failed earlier: {self._broken}" if self._broken is not None else "it was shut down"
        return GroupBrokenError(
            f"Cannot run {operation} on {self.task}: the process group cannot be used because {why}. "
            "A multi-worker job must restart after a failure (resume from the last checkpoint).",
            task=self.task, operation=operation)

    # -- leaving ---------------------------------------------------------------------------
    def report_failure(self, exc: BaseException) -> None:
        """Tells the other tasks that this one fails with ``exc`` (called when it ends the program)."""
        board = self._parts.get("board")
        if board is None or self._closed:
            return
        primary = not isinstance(exc, (WorkerFailedError, GroupBrokenError, CollectiveMismatchError)) and \
            getattr(exc, "stalled", None) is None
        doing = self._status.describe()
        self._status.state = "failed"
        try:
            board.report(type(exc).__name__, str(exc), doing, primary, None if primary else getattr(exc, "task", None))
        except Exception:  # noqa: BLE001 - the store host may be gone already
            pass

    def shutdown(self) -> None:
        """Leaves the group: stops the heartbeat, closes the process groups (idempotent)."""
        if self._closed:
            return
        if self._broken is not None and self._status.state == "running":
            self.report_failure(self._broken)  # the program caught the error and ended normally
        self._closed = True
        if self._status.state == "running":
            self._status.state = "finished"
        monitor, board = self._parts.pop("monitor", None), self._parts.get("board")
        if monitor is not None:
            monitor.stop()
        for name in ("nccl", "gloo"):
            self._parts.pop(name, None)
        if board is not None:
            try:
                board.publish(self._status.record(-1))
                if self.rank == 0:
                    health.linger(board, self._records, self.world_size, _LINGER)
            except Exception:  # noqa: BLE001 - the store host is gone; nothing left to tell
                pass
        for name in ("monitor_store", "board", "store"):
            self._parts.pop(name, None)
        forget = self._parts.pop("forget", None)
        if forget is not None:
            forget(self)

    def _key(self) -> Tuple[str, int, bool]:
        return (self._layout.digest, self.rank, self._parts.get("nccl_wanted", False))

    def __deepcopy__(self, memo: dict) -> "ProcessGroup":
        return self  # one connection per task: copies share it

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.task} rank {self.rank}/{self.world_size} {self.backend}>"
