"""Health of a multi-worker job: status records, error reports, heartbeats and diagnosis.

Gloo reports a failed peer as "Connection closed by peer [127.0.0.1]:36994" and a stalled one
as "Timed out waiting 5000ms for recv": an address or nothing, never a task. This module keeps
enough state in the rendezvous store to name the task and say what it was doing:

* every task publishes a *heartbeat* record twice a second from a daemon thread: a beat
  counter, its collective sequence number, what it is doing (in which collective, or running
  user code after which one) and whether it is still handling an exception it reported;
* an exception that leaves ``strategy.run`` is reported at once, *provisionally* (kind
  ``raised``, with the task's collective sequence number): a peer fails on it only while it
  waits in a collective the raiser has not entered, once the report has stayed for
  ``liveness.RAISED_GRACE`` with the raiser still handling the exception. The raiser withdraws
  it when it enters its next collective, so a program that catches the error goes on;
* an exception that ends the program is reported *finally* before the task leaves the group:
  every peer fails on it at once;
* the heartbeat thread reads the others' beats and reports into a ``liveness.Observer``; a
  collective that waits asks it which peers went silent (:func:`waiting_failure`): liveness
  is the heartbeat's to judge, slowness the collective timeout's;
* after a failed or timed-out collective, :func:`diagnose` reads the reports and heartbeats
  (and, for peers on this machine, their process state) and builds the error to raise.
"""

from __future__ import annotations

import atexit
import datetime
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch.distributed as dist

from distribute.collectives import liveness
from distribute.collectives.failures import CollectiveTimeoutError, WorkerFailedError

__all__ = ["Board", "LocalStatus", "Monitor", "bounded", "diagnose", "install_exit_hooks", "linger", "process_identity",
           "waiting_failure"]

BEAT_INTERVAL = 0.5
"""Seconds between heartbeats."""
_STALE_AFTER = 4 * BEAT_INTERVAL
_STORE_TIMEOUT = datetime.timedelta(seconds=3)
_PREFIX = "distribute/"
_REPORT_WAIT = 2.0
"""Seconds a failed (not timed-out) collective waits for a peer's report, exit or shutdown."""
_DIAGNOSIS_LIMIT = 12.0
"""Seconds a diagnosis may take (its waits and store reads) before the store counts as unreachable."""
GLOO_TIMEOUTS = ("Timed out waiting",)
"""What gloo says when its own timeout (the collective's deadline) expires."""
STOPPED = "stopped responding (its process is stopped)"


class LocalStatus:
    """What this task is doing, written by the main thread and published by the monitor.

    ``raised`` is ``(report id, thread id, id of the exception)`` while a provisional report
    of this task is in the store.
    """

    __slots__ = ("seq", "op", "inside", "state", "raised")

    def __init__(self) -> None:
        self.seq = 0
        self.op = ""
        self.inside = False
        self.state = "running"
        self.raised: Optional[Tuple[int, int, int]] = None

    def describe(self) -> str:
        """``'in collective #4, <op>'`` or ``'running user code after collective #3 (<op>)'``."""
        if self.state != "running":
            return f"{self.state} after collective #{self.seq}" + (f" ({self.op})" if self.op else "")
        if self.inside:
            return f"in collective #{self.seq + 1}, {self.op}"
        if not self.seq:
            return "running user code before its first collective"
        return f"running user code after collective #{self.seq} ({self.op})"

    def raising(self) -> int:
        """The id of the provisional report whose exception the raising thread still handles (else 0)."""
        raised = self.raised
        if raised is None:
            return 0
        report, thread, exc = raised
        return report if liveness.still_handling(thread, exc) else 0

    def record(self, beat: int) -> Dict[str, Any]:
        """The JSON record of a heartbeat."""
        return {"beat": beat, "seq": self.seq, "inside": self.inside, "state": self.state,
                "doing": self.describe(), "raising": self.raising()}


def process_identity() -> Dict[str, Any]:
    """What lets a peer on this machine check whether this process is alive."""
    info: Dict[str, Any] = {}
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            info["boot"] = f.read().strip()
        info["pidns"] = os.readlink("/proc/self/ns/pid")
        info["start"] = _proc_stat(os.getpid())[19]
    except (OSError, IndexError):
        pass
    return info


def _proc_stat(pid: int) -> List[str]:
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()


def local_process_state(record: Dict[str, Any]) -> Optional[str]:
    """``'exited'``, ``'stopped'`` or ``'alive'`` for a peer on this machine; None if unknown."""
    mine = process_identity()
    if not mine.get("boot") or mine.get("boot") != record.get("boot") or mine.get("pidns") != record.get("pidns"):
        return None
    try:
        fields = _proc_stat(int(record["pid"]))
    except (OSError, KeyError, ValueError):
        return "exited"
    if fields[19] != record.get("start") or fields[0] in ("Z", "X"):
        return "exited"
    return "stopped" if fields[0] in ("T", "t") else "alive"


def bounded(fn: Callable[[], Any], seconds: float) -> Any:
    """``fn()``, run on a helper thread and given up after ``seconds`` (raises ``TimeoutError``).

    A request to a store whose host is stopped (SIGSTOP) never returns, whatever the store's
    timeout: the main thread's store work after a failure (reports, diagnosis, leaving) goes
    through this so that a frozen chief cannot hang its peers.
    """
    box: Dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    helper = threading.Thread(target=call, name="distribute-store-call", daemon=True)
    helper.start()
    helper.join(seconds)
    if helper.is_alive():
        raise TimeoutError(f"the rendezvous store did not answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class Board:
    """The status records of every task in the store (one client connection per Board)."""

    def __init__(self, store: dist.Store, tasks: Sequence[str], rank: int) -> None:
        self._store = store
        self._tasks = tuple(tasks)
        self._rank = rank
        store.set_timeout(_STORE_TIMEOUT)

    def publish(self, record: Dict[str, Any]) -> None:
        """Writes this task's heartbeat."""
        self._store.set(_PREFIX + f"beat/{self._rank}", json.dumps(record))

    def report(self, error_type: str, message: str, doing: str, primary: bool, culprit: Optional[str]) -> None:
        """Records this task's failure for the others (final: every peer fails on it).

        ``primary`` is False when the failure was caused by a peer; ``culprit`` then names it.
        """
        self._write({"kind": "final", "type": error_type, "message": message[:2000], "doing": doing,
                     "primary": primary, "culprit": culprit if culprit else self._tasks[self._rank]})

    def report_raised(self, report_id: int, error_type: str, message: str, doing: str, seq: int) -> None:
        """Records an exception that left ``strategy.run`` here, provisionally (see the module)."""
        self._write({"kind": "raised", "id": report_id, "seq": seq, "type": error_type, "message": message[:2000],
                     "doing": doing, "primary": True, "culprit": self._tasks[self._rank]})

    def withdraw(self, report_id: int) -> None:
        """Withdraws provisional report ``report_id`` (this task went on to its next collective)."""
        self._write({"kind": "withdrawn", "id": report_id})

    def _write(self, record: Dict[str, Any]) -> None:
        self._store.set(_PREFIX + f"error/{self._rank}", json.dumps(record))
        self._store.add(_PREFIX + "errors", 1)  # every change: the monitors re-read the reports

    def error_count(self) -> int:
        """How many times an error report was written or withdrawn (by any task)."""
        return int(self._store.add(_PREFIX + "errors", 0))

    def errors(self) -> Dict[int, Dict[str, Any]]:
        """The error reports present (final or provisional), by rank."""
        return {r: rep for r, rep in self._read("error").items() if rep.get("kind", "final") != "withdrawn"}

    def final_errors(self) -> Dict[int, Dict[str, Any]]:
        """The final error reports, by rank."""
        return {r: rep for r, rep in self._read("error").items() if rep.get("kind", "final") == "final"}

    def beats(self) -> Dict[int, Dict[str, Any]]:
        """The latest heartbeats, by rank."""
        return self._read("beat")

    def _read(self, kind: str) -> Dict[int, Dict[str, Any]]:
        keys = {r: _PREFIX + f"{kind}/{r}" for r in range(len(self._tasks))}
        if self._store.check(list(keys.values())):
            present = keys  # the usual case: one request
        else:
            present = {r: k for r, k in keys.items() if self._store.check([k])}
        if not present:
            return {}
        values = self._store.multi_get(list(present.values()))
        return {r: json.loads(v) for r, v in zip(present, values)}


class Monitor:
    """A daemon thread that publishes heartbeats, reads the peers' and notices their error reports.

    What it sees goes into ``observer`` (``liveness.Observer``); ``failure`` is the first final
    report of a peer that failed by itself.
    """

    def __init__(self, board: Board, status: LocalStatus, rank: int) -> None:
        self._board = board
        self._status = status
        self._rank = rank
        self._stop = threading.Event()
        self.failure: Optional[Dict[str, Any]] = None
        self.observer = liveness.Observer(rank)
        self._thread = threading.Thread(target=self._loop, name="distribute-heartbeat", daemon=True)

    def start(self) -> None:
        """Starts the thread."""
        self._thread.start()

    def _loop(self) -> None:
        beat, seen = 0, 0
        while not self._stop.is_set():
            beat += 1
            self.observer.asking(time.monotonic())
            try:
                seen = self._beat(beat, seen)
                self.observer.store_answered(time.monotonic())
            except Exception:  # noqa: BLE001 - the store host may be gone or frozen: the observer keeps count
                pass
            self._stop.wait(BEAT_INTERVAL)

    def _beat(self, beat: int, seen: int) -> int:
        """One heartbeat: publish ours, read theirs, re-read the reports when any changed."""
        self._board.publish(self._status.record(beat))
        count = self._board.error_count()
        if count != seen:  # written or withdrawn
            reports = self._board.errors()
            self._notice(reports)
            self.observer.saw_reports(reports, time.monotonic())
        self.observer.saw_beats(self._board.beats(), time.monotonic())
        return count

    def _notice(self, reports: Dict[int, Dict[str, Any]]) -> None:
        for rank, report in sorted(reports.items()):
            final = report.get("kind", "final") == "final"
            if rank != self._rank and final and report.get("primary") and self.failure is None:
                self.failure = dict(report, rank=rank)

    def stop(self) -> None:
        """Stops and joins the thread (idempotent)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            stuck = self.observer.store_silence(time.monotonic()) > BEAT_INTERVAL  # in a request that may never end
            self._thread.join(timeout=BEAT_INTERVAL if stuck else 5 * BEAT_INTERVAL + _STORE_TIMEOUT.total_seconds())


def reported_failure(tasks: Sequence[str], me: str, report: Dict[str, Any], doing: str,
                     operation: Optional[str]) -> WorkerFailedError:
    """The error for a peer that reported an exception (its own, or one caused by another task)."""
    task = tasks[report["rank"]]
    cause = f"{report.get('type')}: {report.get('message')}"
    culprit = report.get("culprit") or task
    return WorkerFailedError(
        f"{task} failed with {cause} (it was {report.get('doing')}). This task ({me}) was {doing}. "
        "The job cannot continue; restart every task (from the last checkpoint).",
        task=culprit, operation=operation, cause=cause)


def waiting_failure(observer: liveness.Observer, tasks: Sequence[str], rank: int, status: LocalStatus,
                    records: Sequence[Dict[str, Any]]) -> Optional[Exception]:
    """The error to raise now, while this task waits in a collective, or None to go on waiting.

    A peer that reported an exception it is still handling (after ``liveness.RAISED_GRACE``),
    a peer whose heartbeat stopped for ``liveness.HEARTBEAT_DEADLINE`` seconds, or a store
    (rank 0) that stopped answering for as long. A peer that is alive but slow is never one:
    the collective's timeout decides about it.
    """
    now, deadline = time.monotonic(), liveness.HEARTBEAT_DEADLINE
    me, doing, op = tasks[rank], status.describe(), status.op
    raised = observer.raising(liveness.RAISED_GRACE, status.seq, now)
    if raised is not None:
        return reported_failure(tasks, me, raised, doing, op)
    silence = observer.store_silence(now)
    if rank != 0 and silence > deadline:
        return _unresponsive(tasks, rank, status, records, {0: silence}, "the rendezvous store it hosts has not "
                             f"answered for {silence:.1f} s")
    silent = observer.silent(deadline)
    for peer in sorted(silent):
        if peer in observer.raised:  # it raised, then went silent: its error says more
            return reported_failure(tasks, me, dict(observer.raised[peer][0], rank=peer), doing, op)
    if silent:
        return _unresponsive(tasks, rank, status, records, silent, "")
    return None


def _unresponsive(tasks: Sequence[str], rank: int, status: LocalStatus, records: Sequence[Dict[str, Any]],
                  quiet: Dict[int, float], what: str) -> Exception:
    """A peer that stopped responding: exited (WorkerFailedError), else stalled (CollectiveTimeoutError)."""
    me, doing, target = tasks[rank], status.describe(), status.seq + 1
    notes = {}
    for peer, seconds in sorted(quiet.items()):
        state = local_process_state(records[peer]) if peer < len(records) else None
        if state == "exited":
            return WorkerFailedError(
                f"{tasks[peer]} died (its process exited) after collective #{status.seq} while this task ({me}) "
                f"was {doing}. Restart every task (from the last checkpoint).", task=tasks[peer],
                operation=status.op, cause="died (its process exited)")
        why = what or f"no heartbeat for {seconds:.1f} s"
        notes[peer] = f"{STOPPED}: {why}" if state == "stopped" else f"stopped responding: {why}"
    named = "; ".join(f"{tasks[p]} {note}" for p, note in notes.items())
    return CollectiveTimeoutError(
        f"{named}, so collective #{target} ({status.op}) cannot finish on {me} (while it was {doing}; heartbeat "
        f"deadline {liveness.HEARTBEAT_DEADLINE:g} s). A process that is paused (SIGSTOP, a debugger) or holds "
        "the GIL cannot take part; the job cannot go on. Restart every task (from the last checkpoint).",
        task=tasks[min(notes)], operation=status.op, stalled=[tasks[p] for p in notes])


def diagnose(board: Board, tasks: Sequence[str], rank: int, status: LocalStatus, records: Sequence[Dict[str, Any]],
             error: str, timed_out: bool, timeout: float) -> Exception:
    """Explains why the current collective failed, naming the task at fault.

    Args:
        board: the store records (a connection this thread may use).
        tasks: task names by rank; rank 0 hosts the store.
        rank: this task's rank.
        status: what this task is doing.
        records: every rank's join record (pid and machine identity).
        error: what torch.distributed said.
        timed_out: whether the collective exceeded its deadline.
        timeout: that deadline in seconds.
    """
    me, doing, op = tasks[rank], status.describe(), status.op
    try:
        return bounded(lambda: _diagnose(board, tasks, rank, status, records, error, timed_out, timeout),
                       _DIAGNOSIS_LIMIT)
    except Exception:  # noqa: BLE001 - the store is gone with its host, or its host is stopped
        if records and local_process_state(records[0]) == "stopped":
            return _unresponsive(tasks, rank, status, records, {0: _DIAGNOSIS_LIMIT},
                                 "the rendezvous store it hosts does not answer")
        return WorkerFailedError(
            f"{tasks[0]} (the rendezvous host) is unreachable: its process died or its machine is down "
            f"while this task ({me}) was {doing}. Underlying error: {error}",
            task=tasks[0], operation=op, cause="unreachable")


def _diagnose(board: Board, tasks: Sequence[str], rank: int, status: LocalStatus,
              records: Sequence[Dict[str, Any]], error: str, timed_out: bool, timeout: float) -> Exception:
    me, doing, op = tasks[rank], status.describe(), status.op
    # gloo's own recv/send timeout and this library's deadline are the same limit: whichever
    # fires first, the collective timed out (issue 20: the error type must not depend on it).
    timed_out = timed_out or any(words in error for words in GLOO_TIMEOUTS)
    deadline = time.monotonic() + (0.3 if timed_out else _REPORT_WAIT)
    while True:
        reports = {r: dict(rep, rank=r) for r, rep in board.errors().items() if r != rank}
        primary = [rep for rep in reports.values() if rep.get("primary")]
        if primary or time.monotonic() >= deadline or _any_exited(records, rank) or _any_finished(board, rank):
            break
        time.sleep(0.05)
    if primary or reports:
        return reported_failure(tasks, me, (primary or list(reports.values()))[0], doing, op)
    beats = board.beats()
    gone = _gone_peers(board, tasks, rank, records, beats)
    stalled = {peer: what for peer, what in gone if "exited" not in what}
    if gone and len(stalled) == len(gone) and (timed_out or any(STOPPED in what for what in stalled.values())):
        # A stopped (SIGSTOP) process is a stalled worker: it is alive and may be resumed.
        return _stall_error(tasks, rank, status, beats, timeout, stalled)
    if gone:
        peer, what = next((p, w) for p, w in gone if "exited" in w) if len(stalled) < len(gone) else gone[0]
        return WorkerFailedError(
            f"{tasks[peer]} {what} after collective #{status.seq} while this task ({me}) was {doing}. "
            f"Restart every task (from the last checkpoint). Underlying error: {error}",
            task=tasks[peer], operation=op, cause=what)
    finished = [r for r, b in beats.items() if r != rank and b.get("state") == "finished"]
    if finished:
        peer = finished[0]
        return WorkerFailedError(
            f"{tasks[peer]} shut down after collective #{beats[peer].get('seq')} while this task ({me}) was "
            f"{doing}: the workers ran different numbers of collectives (for example different numbers of "
            "steps or batches). Every worker must run the same steps.", task=tasks[peer], operation=op,
            cause="finished early")
    return _stall_error(tasks, rank, status, beats, timeout, {}) if timed_out else WorkerFailedError(
        f"A collective failed on {me} while it was {doing}, and no task reported an error: {error}",
        task=None, operation=op, cause=error)


def _any_finished(board: Board, rank: int) -> bool:
    # A peer that shut down normally closed its sockets first, then published 'finished'.
    return any(b.get("state") == "finished" for r, b in board.beats().items() if r != rank)


def _any_exited(records: Sequence[Dict[str, Any]], rank: int) -> bool:
    # An exited peer wrote its report (if any) before leaving: no need to wait for one.
    return any(local_process_state(rec) == "exited" for r, rec in enumerate(records) if r != rank)


def _gone_peers(board: Board, tasks: Sequence[str], rank: int, records: Sequence[Dict[str, Any]],
                beats: Dict[int, Dict[str, Any]]) -> List[tuple]:
    gone = []
    unknown = []
    for peer in range(len(tasks)):
        if peer == rank:
            continue
        state = local_process_state(records[peer]) if peer < len(records) else None
        if state == "exited":
            gone.append((peer, "died (its process exited)"))
        elif state == "stopped":
            gone.append((peer, STOPPED))
        elif state is None:
            unknown.append(peer)
    if gone or not unknown:
        return gone
    time.sleep(_STALE_AFTER)
    later = board.beats()
    return [(p, "stopped responding (no heartbeat for 2 s)") for p in unknown
            if later.get(p, {}).get("beat") == beats.get(p, {}).get("beat")]


def _last_doing(beat: Optional[Dict[str, Any]], seq: int) -> str:
    """What a peer was doing: its heartbeat, unless older than the last collective we shared."""
    if beat and beat.get("seq", 0) >= seq:
        return str(beat.get("doing"))
    return f"running user code after collective #{seq}" if seq else "running user code before its first collective"


def _stall_error(tasks: Sequence[str], rank: int, status: LocalStatus, beats: Dict[int, Dict[str, Any]],
                 timeout: float, notes: Dict[int, str]) -> CollectiveTimeoutError:
    me, target = tasks[rank], status.seq + 1
    late = [r for r in range(len(tasks)) if r != rank and (r in notes or
            not (beats.get(r, {}).get("inside") and beats[r].get("seq", 0) + 1 == target))]
    late = late or [r for r in range(len(tasks)) if r != rank]
    named = "; ".join(f"{tasks[r]} {notes.get(r, 'is alive')} and was last {_last_doing(beats.get(r), status.seq)}"
                      for r in late)
    return CollectiveTimeoutError(
        f"Collective #{target} ({status.op}) timed out after {timeout:g} s on {me}: "
        f"{', '.join(tasks[r] for r in late)} did not reach it ({named}). A worker is stalled or runs "
        "different code; raise CommunicationOptions(timeout_seconds=...) if it is just slow.",
        task=tasks[late[0]], operation=status.op, stalled=[tasks[r] for r in late])


def linger(board: Board, records: Sequence[Dict[str, Any]], world_size: int, limit: float) -> None:
    """Keeps the store (this process) up until every peer finished, failed or went silent.

    Run by the rendezvous host when it leaves, so that peers can still read its status and
    error report; bounded by ``limit`` seconds.
    """
    deadline = time.monotonic() + limit
    last: Dict[int, Any] = {}
    quiet_since: Dict[int, float] = {}
    while time.monotonic() < deadline:
        beats, errors, now = board.beats(), board.final_errors(), time.monotonic()
        pending = []
        for rank in range(1, world_size):
            beat = beats.get(rank, {})
            if beat.get("state") in ("finished", "failed") or rank in errors or \
                    (rank < len(records) and local_process_state(records[rank]) == "exited"):
                continue
            if beat.get("beat") != last.get(rank):
                last[rank], quiet_since[rank] = beat.get("beat"), now
            if now - quiet_since[rank] < _STALE_AFTER:
                pending.append(rank)
        if not pending:
            return
        time.sleep(0.1)


_HOOKS: Dict[str, Any] = {}


def install_exit_hooks(groups: Callable[[], List[Any]], shutdown_all: Callable[[], None]) -> None:
    """Reports an exception that ends the program to the peers, and leaves the groups at exit.

    The report goes out before the traceback is printed, and the groups are shut down right
    after, so peers blocked in a collective with this task fail at once with its error, even
    when a non-daemon thread keeps this process alive. Installed once per process; the
    previous ``sys.excepthook`` still runs.
    """
    if _HOOKS:
        return
    previous = sys.excepthook

    def report_then_exit(exc_type: Any, exc: BaseException, tb: Any) -> None:
        current = groups()
        for group in current:
            group.report_failure(exc)
        previous(exc_type, exc, tb)
        for group in current:
            group.shutdown()

    _HOOKS["previous"] = previous
    sys.excepthook = report_then_exit
    atexit.register(shutdown_all)
