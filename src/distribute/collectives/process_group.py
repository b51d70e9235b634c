"""Collectives across worker processes over ``torch.distributed``, with deadlines and blame.

This layer (this module with its helpers ``connect.py``, ``rendezvous.py``, ``authstore.py``,
``authstore_server.py``, ``auth.py``, ``data_auth.py``, ``gloo_listener.py``, ``health.py``,
``liveness.py``, ``link.py``, ``verify.py``, ``plans.py``, ``packing.py``, ``torch_private.py``,
and the wire methods: ``wire.py``, ``stream.py``, ``pairwise.py``, ``nan_signal.py``,
``thresholds.py``) is the only place in ``distribute`` that creates a store, a listener or a
torch process group.
:func:`distribute.collectives.connect.connect` meets the other tasks of the cluster (see
``rendezvous.py``), builds a gloo process group whose sockets bind this task's own address (plus
an NCCL group for CUDA tensors when asked), and starts a heartbeat thread.
:class:`ProcessGroup` then offers packed ``all_reduce`` (SUM), uneven ``all_gather`` and
``broadcast``:

* every all-reduce travels by the first wire method of ``wire.py`` that applies (the 2-process
  fast paths, or the general packed path; ``fast_paths=False`` keeps every call on the
  general path, with the same results);
* every collective is agreed between workers first (``verify.py``), so differing shapes,
  dtypes or order raise :class:`CollectiveMismatchError` on every worker instead of a
  ``SIGABRT`` or a hang; in a steady training loop this costs no extra exchange;
* every collective has a deadline (``timeout``): it alone judges a live peer that is slow;
  waiting happens in short slices, between which the heartbeats judge liveness
  (``liveness.py``): a peer that reported an exception, a peer without heartbeat for
  ``liveness.HEARTBEAT_DEADLINE`` seconds or a chief whose store stopped answering stops the
  wait at once;
* a failed collective raises :class:`WorkerFailedError` or :class:`CollectiveTimeoutError`
  naming the task at fault and what it was doing (``health.py``); the group is then broken
  and every later call raises :class:`GroupBrokenError` (restart the job);
* an exception that leaves ``strategy.run`` is reported provisionally
  (:meth:`ProcessGroup.report_raised`, withdrawn by the next collective); one that ends the
  program is reported finally, and the group is closed at exit (idempotent
  :meth:`ProcessGroup.shutdown`). Store requests made after a failure are bounded, so a
  frozen chief cannot hang the others.

Example (in each of two processes with the same cluster and its own task)::

    group = connect(ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}), "worker", rank)
    total, = group.all_reduce([torch.ones(3)], note="example")   # tensor([2., 2., 2.])
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

import torch

from distribute.collectives import health, liveness
from distribute.collectives.failures import (CollectiveMismatchError, CollectiveTimeoutError, GroupBrokenError,
                                             WorkerFailedError)
from distribute.collectives.link import Connection, Link
from distribute.collectives.packing import Meta, Slot, SlotPool, check_tensors, metas_of, plan_frames
from distribute.collectives.plans import Plan, PlanCache
from distribute.collectives.rendezvous import Layout
from distribute.collectives.stream import Channel, reduce, send_markers
from distribute.collectives.verify import Fingerprint, Verifier, family_digest, make_fingerprint
from distribute.collectives.wire import PlanInputs, choose, fast_path_set, option_tag

__all__ = ["ProcessGroup"]
_LINGER = 10.0
_STORE_CALL = 5.0  # seconds a report or withdrawal may take before the store counts as silent
_CPU = torch.device("cpu")
_PEER_CAUSED = (WorkerFailedError, GroupBrokenError, CollectiveMismatchError, CollectiveTimeoutError)


class ProcessGroup:
    """The collectives of one task with the other tasks of its cluster (see :func:`connect`).

    Args:
        layout: the training group as this task sees it.
        connection: the task's open connections (``link.Connection``).
        records: every rank's join record (for diagnosis).
        timeout: the default seconds a collective waits for its peers.
        status: what this task is doing (published by the connection's monitor).
        fast_paths: True (all 2-process fast paths on), False (every all-reduce on the general
            path) or some names of ``wire.FAST_PATHS``.
    """

    def __init__(self, layout: Layout, connection: Connection, records: List[dict], timeout: float,
                 status: Optional[health.LocalStatus] = None, fast_paths: Any = True) -> None:
        self._layout = layout
        self._connection = connection
        self._records = records
        self._timeout = timeout
        self._status = status if status is not None else health.LocalStatus()
        self._link = Link(connection, self._fail, self._waiting)
        self._verifier = Verifier(self._gather_ints, layout.tasks, layout.rank)
        self._channel = Channel(self._link, self._verifier, layout.rank)
        self._plans = PlanCache()
        self._pool = SlotPool()
        self._enabled = fast_path_set(fast_paths)
        self._counts: Dict[str, int] = {}
        self._broken: Optional[BaseException] = None
        self._closed = False
        self._limit = timeout
        self._reports = 0  # provisional reports made (their ids)
        self._store_silent = False

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
    def layout(self) -> Layout:
        """The training group as this task sees it (tasks, addresses, rendezvous)."""
        return self._layout

    @property
    def connection(self) -> Connection:
        """This task's open connections (the gloo backend is ``connection.gloo``)."""
        return self._connection

    @property
    def backend(self) -> str:
        """``'gloo'``, or ``'nccl+gloo'`` when CUDA tensors travel over NCCL."""
        return "nccl+gloo" if self._connection.nccl is not None else "gloo"

    @property
    def key(self) -> Tuple[str, int, bool]:
        """What identifies this group among a process's groups: cluster digest, rank, NCCL asked."""
        return (self._layout.digest, self.rank, self._connection.nccl_wanted)

    # -- state -----------------------------------------------------------------------------
    @property
    def sequence(self) -> int:
        """How many collectives this group has completed."""
        return self._verifier.seq

    @property
    def full_checks(self) -> int:
        """How many of them needed a full check (an extra exchange) to be agreed."""
        return self._verifier.full_checks

    @property
    def closed(self) -> bool:
        """True once :meth:`shutdown` ran."""
        return self._closed

    @property
    def fast_paths(self) -> FrozenSet[str]:
        """The 2-process fast paths that are on (``wire.FAST_PATHS``; empty: the general path only)."""
        return self._enabled

    @property
    def wire_counts(self) -> Dict[str, int]:
        """How many all-reduces each wire method (``wire.py``) carried, by name."""
        return dict(self._counts)

    def use_fast_paths(self, fast_paths: Any) -> None:
        """Turns fast paths on or off from the next collective: True, False or names of ``wire.FAST_PATHS``.

        Every worker must make the same change at the same point: the option is part of every
        collective's fingerprint, so workers that differ raise ``CollectiveMismatchError``.
        """
        self._enabled = fast_path_set(fast_paths)

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
        tensors = check_tensors(tensors, "all_reduce")
        if not isinstance(bytes_per_pack, int) or isinstance(bytes_per_pack, bool) or bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be a non-negative int, received {bytes_per_pack!r}.")
        metas = metas_of(tensors)
        device = tensors[0].device
        key = ("all_reduce", note, metas, bytes_per_pack, device, inplace, self._enabled)
        plan = self._plans.get(key) or self._plans.add(key, self._plan_reduce(note, metas, bytes_per_pack, device,
                                                                                inplace))
        fp, out = plan.fp, plan.out  # out: sums copied out piece by piece as they arrive
        limit = self._begin(fp, timeout)
        try:
            slots = reduce(self._channel, fp, self._slots(fp, plan.wire), tensors, tensors if out else None, limit)
            self._count(fp)
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
        fp = self._fingerprint("all_gather", note, (meta,))
        limit = self._begin(fp, timeout)
        family = family_digest(f"all_gather|{note}|{moved.dtype}|{axis}")
        shown = f"{fp.describe} (a value of shape {list(tensor.shape)}, gathered along axis {axis})"
        try:
            sizes = [s[0] for s in self._agree_fully(fp, [moved.shape[0]], limit, family, shown)]
            padded = torch.zeros((max(sizes),) + tuple(moved.shape[1:]), dtype=moved.dtype)
            padded[:moved.shape[0]] = moved
            outs = [torch.empty_like(padded) for _ in sizes]
            self._link.allgather(outs, padded, limit)
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
        fp = self._fingerprint(f"broadcast(from {self.tasks[src]})", note, metas)
        limit = self._begin(fp, timeout)
        try:
            self._agree_fully(fp, [], limit)
            for frame in plan_frames(metas, 0):
                slot = Slot(frame, metas, _CPU, False)
                slot.fill(tensors, frame, None)
                self._link.broadcast(slot.buffer, src, limit)
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

    # -- plans (plans.py) and the wire methods (wire.py) --------------------------------------
    def _plan_reduce(self, note: str, metas: Tuple[Meta, ...], bytes_per_pack: int, device: torch.device,
                     inplace: bool) -> Plan:
        wire = device if device.type == "cuda" and self._connection.nccl is not None else _CPU
        out = inplace and wire == device
        inputs = PlanInputs(plan_frames(metas, bytes_per_pack), self.world_size == 2 and wire.type == "cpu", out,
                            self._enabled)
        fp = make_fingerprint(f"all_reduce/{wire.type}", note, metas, bytes_per_pack, frames=inputs.frames,
                              method=choose(inputs), inplace=out, option=option_tag(self._enabled))
        return Plan(fp, wire, out)

    def _fingerprint(self, kind: str, note: str, metas: Tuple[Meta, ...]) -> Fingerprint:
        key = (kind, note, metas, self._enabled)
        plan = self._plans.get(key) or self._plans.add(key, Plan(make_fingerprint(
            kind, note, metas, 0, False, option=option_tag(self._enabled)), _CPU))
        return plan.fp

    def _slots(self, fp: Fingerprint, wire: torch.device) -> List[Slot]:
        get, digest, lead = self._pool.get, fp.digest, not fp.nan_signal  # no header where the first element signals
        return [get((digest, i), frame, fp.metas, wire, lead and i == 0, fp.wire[i])
                for i, frame in enumerate(fp.frames)]

    def _count(self, fp: Fingerprint) -> None:
        name = fp.method.name if fp.method is not None else "packed"
        self._counts[name] = self._counts.get(name, 0) + 1

    # -- the agreement protocol (see verify.py) ---------------------------------------------
    def _agree_fully(self, fp: Fingerprint, extras: Sequence[int], limit: float, family: int = 0,
                     shown: str = "") -> List[Tuple[int, ...]]:
        """Full check for kinds without a header slot (after a marker if a header was expected)."""
        predicted = self._verifier.predicted()
        if predicted is not None:
            send_markers(self._link, predicted, limit)
        return self._verifier.full_check(fp, extras, family, shown)

    def _gather_ints(self, tensor: torch.Tensor) -> List[torch.Tensor]:
        outs = [torch.empty_like(tensor) for _ in range(self.world_size)]
        self._link.allgather(outs, tensor, self._limit)
        return outs

    # -- state and failures ----------------------------------------------------------------
    def _begin(self, fp: Fingerprint, timeout: Optional[float]) -> float:
        if self._broken is not None or self._closed:
            raise self._broken_error(fp.describe)
        failed = self._peer_failed(fp.describe)
        if failed is not None:
            raise failed
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, received {timeout!r}.")
        limit = float(timeout) if timeout else self._timeout
        self._limit = limit
        if self._status.raised is not None:
            self._withdraw()
        self._status.op = fp.describe
        self._status.inside = True
        return limit

    def _end(self) -> None:
        self._status.inside = False
        self._status.seq = self._verifier.seq

    def _peer_failed(self, operation: Optional[str] = None) -> Optional[BaseException]:
        failure = self._connection.peer_failure()
        if failure is None:
            return None
        return self._break(health.reported_failure(self.tasks, self.task, failure, self._status.describe(),
                                                   operation if operation is not None else self._status.op))

    def _waiting(self) -> Optional[BaseException]:
        """Checked by every wait slice: a peer's final report, or what the heartbeats say (health.py)."""
        failed = self._peer_failed()
        if failed is not None:
            return failed
        monitor = self._connection.monitor
        if monitor is None:
            return None
        found = health.waiting_failure(monitor.observer, self.tasks, self.rank, self._status, self._records)
        return self._break(found) if found is not None else None

    def _fail(self, error: str, timed_out: bool, limit: float) -> BaseException:
        board = self._connection.board
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

    # -- reports -----------------------------------------------------------------------------
    def report_raised(self, exc: BaseException) -> None:
        """Tells the peers at once that ``exc`` left ``strategy.run`` here (provisionally).

        Peers blocked in a collective fail on it while this thread still handles ``exc`` (a
        ``finally:`` that lingers); entering the next collective withdraws it, so a program
        that catches the error goes on. An error caused by a peer is not reported (the peers
        know), nor one on a group that failed or shut down.
        """
        board = self._connection.board
        if board is None or self._closed or self._broken is not None or isinstance(exc, _PEER_CAUSED):
            return
        if self._status.raised is not None and self._status.raised[2] == id(exc):
            return  # the same exception, seen again by an outer call
        self._reports += 1
        report, doing, seq = self._reports, self._status.describe(), self._verifier.seq
        if not self._store_call(lambda: board.report_raised(report, type(exc).__name__, str(exc), doing, seq)):
            return  # the store host is gone or stopped: the peers' heartbeat checks will tell
        self._status.raised = (self._reports, threading.get_ident(), id(exc))

    def _withdraw(self) -> None:
        raised, self._status.raised = self._status.raised, None
        board = self._connection.board
        if raised is None or board is None:
            return
        self._store_call(lambda: board.withdraw(raised[0]))

    def report_failure(self, exc: BaseException) -> None:
        """Tells the other tasks that this one fails with ``exc`` (called when it ends the program)."""
        board = self._connection.board
        if board is None or self._closed:
            return
        culprit = exc.task if isinstance(exc, _PEER_CAUSED) else None  # another task's failure, seen from here
        doing = self._status.describe()
        self._status.state = "failed"
        self._status.raised = None
        self._store_call(lambda: board.report(type(exc).__name__, str(exc), doing, not isinstance(exc, _PEER_CAUSED),
                                              culprit))

    def _store_call(self, fn: Any, seconds: float = _STORE_CALL) -> bool:
        """Runs ``fn`` (store requests) within ``seconds``; False if the store failed or did not answer.

        A store that once did not answer is not asked again (its host is stopped or gone).
        """
        if self._note_store_silence():
            return False
        try:
            health.bounded(fn, seconds)
            return True
        except TimeoutError:
            self._store_silent = True
        except Exception:  # noqa: BLE001 - the store host may be gone already
            pass
        return False

    def _note_store_silence(self) -> bool:
        """True once the store counts as silent (a call timed out, or the heartbeat waits past the deadline)."""
        monitor = self._connection.monitor
        if monitor is not None and monitor.observer.store_silence(time.monotonic()) > liveness.HEARTBEAT_DEADLINE:
            self._store_silent = True  # the heartbeat already waits for an answer that does not come
        return self._store_silent

    # -- leaving ---------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Leaves the group: stops the heartbeat, closes the process groups (idempotent)."""
        if self._closed:
            return
        if self._broken is not None and self._status.state == "running":
            self.report_failure(self._broken)  # the program caught the error and ended normally
        self._note_store_silence()
        self._closed = True
        if self._status.state == "running":
            self._status.state = "finished"
        connection = self._connection
        monitor, board = connection.monitor, connection.board
        connection.monitor = None
        if monitor is not None:
            monitor.stop()
        if self._broken is not None:  # a work may still wait for a stopped or lingering peer
            _abandon(connection.gloo)
            _abandon(connection.nccl)
        connection.nccl = connection.gloo = None
        if board is not None:
            def leave() -> None:
                board.publish(self._status.record(-1))
                if self.rank == 0:
                    health.linger(board, self._records, self.world_size, _LINGER)

            self._store_call(leave, _LINGER + _STORE_CALL)
        connection.monitor_store = connection.board = connection.store = None
        forget, connection.forget = connection.forget, None
        if forget is not None:
            forget(self)

    def __deepcopy__(self, memo: dict) -> "ProcessGroup":
        return self  # one connection per task: copies share it

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.task} rank {self.rank}/{self.world_size} {self.backend}>"


def _abandon(backend: Any) -> None:
    """Lets a broken backend go without destroying it.

    Destroying a gloo backend joins its threads, and a thread blocked in a collective with a
    stopped (or lingering) peer returns only at gloo's own timeout (up to the collective
    timeout, 120 s by default): neither ``abort()`` nor ``shutdown()`` unblocks it (measured,
    torch 2.13). So the object is aborted and kept alive for good (one reference that is never
    dropped): its sockets close when the process ends, which then does not wait.
    """
    if backend is None:
        return
    try:
        backend.abort()
    except Exception:  # noqa: BLE001 - not every backend can abort
        pass
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(backend))
