"""Liveness apart from progress: what a task's heartbeat thread saw of its peers, and when.

A peer is *alive* while its heartbeat advances; it is *slow* when it is alive but has not
reached a collective. Only the collective's timeout judges slowness; this module judges
liveness. The heartbeat thread (``health.Monitor``) feeds an :class:`Observer` every
``health.BEAT_INTERVAL`` (0.5 s): the peers' beat counters, whether the rendezvous store
answered, and the peers' error reports. A collective that waits (``link.Link.wait``) asks it:

* which peers' beats have not advanced for :data:`HEARTBEAT_DEADLINE` seconds, measured
  between two reads this task actually made (a task whose own heartbeat thread was starved
  never blames its peers for the gap);
* whether the store, hosted by rank 0, has failed to answer for that long (a frozen chief:
  nobody can read its beats, so the silence of its store is its silence; a request to a
  stopped store never returns, so the time counts from the first request left unanswered);
* which provisional reports (an exception that left ``strategy.run`` on a peer) have been
  present for :data:`RAISED_GRACE` seconds while that peer's heartbeat says it still handles
  the exception (:func:`still_handling`: its thread is in a ``finally:`` or ``except:`` for it,
  or died of it; a program that caught it and went on is not).

All times are this process's ``time.monotonic()`` when it observed something, so no clocks
are compared between machines.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

__all__ = ["HEARTBEAT_DEADLINE", "RAISED_GRACE", "Observer", "still_handling"]

HEARTBEAT_DEADLINE = 5.0
"""Seconds without a new heartbeat (or without an answer from the store) after which a peer
that a collective waits for is reported as not responding.

Ten missed beats: a live process's heartbeat thread beats every 0.5 s whatever its main thread
does, because torch operations and ``time.sleep`` release the GIL and pure Python code yields it
every 5 ms (measured: a 3 s matmul loop, a 0.7 s SVD and a 3 s pure-Python loop left gaps of
at most 0.51 s between beats). Only C code that holds the GIL (a huge ``json.dumps``, some
extension modules) or a process paused by the system can delay a beat; such code in a step
longer than this deadline, while a peer waits in a collective, is reported as a stalled worker.
A module constant: tests (and a user who needs to) may set it before the first collective."""

RAISED_GRACE = 1.5
"""Seconds a provisional report (an exception that left ``strategy.run``) must stay, with its
task still handling that exception, before a peer waiting in a collective fails on it. A
program that catches the exception and goes on withdraws it (or stops handling it) first."""


class Observer:
    """What the heartbeat thread saw; written by that thread, read by the collectives' waits."""

    def __init__(self, rank: int) -> None:
        self._rank = rank
        self.beats: Dict[int, Dict[str, Any]] = {}
        """The latest heartbeat record of each peer."""
        self._changed: Dict[int, float] = {}
        self._last_read = 0.0
        self._unanswered_since: Optional[float] = None
        self.raised: Dict[int, Tuple[Dict[str, Any], float]] = {}
        """Provisional reports by rank, with when each was first seen."""

    # -- written by the heartbeat thread ----------------------------------------------------
    def saw_beats(self, beats: Dict[int, Dict[str, Any]], now: float) -> None:
        """Records one read of every heartbeat."""
        for rank, record in beats.items():
            if rank == self._rank:
                continue
            if self.beats.get(rank, {}).get("beat") != record.get("beat"):
                self._changed[rank] = now
            self.beats[rank] = record
        self._last_read = now

    def asking(self, now: float) -> None:
        """The heartbeat thread starts its requests to the store (a frozen store never answers them)."""
        if self._unanswered_since is None:
            self._unanswered_since = now

    def store_answered(self, now: float) -> None:
        """The store answered every request of one heartbeat."""
        self._unanswered_since = None

    def saw_reports(self, reports: Dict[int, Dict[str, Any]], now: float) -> None:
        """Keeps the peers' provisional reports that are present (a withdrawn one is dropped)."""
        raised = {}
        for rank, report in reports.items():
            if rank == self._rank or report.get("kind") != "raised":
                continue
            known = self.raised.get(rank)
            same = known is not None and known[0].get("id") == report.get("id")
            raised[rank] = (report, known[1] if same and known is not None else now)
        self.raised = raised

    # -- read by the waits --------------------------------------------------------------------
    def silent(self, deadline: float) -> Dict[int, float]:
        """Peers still running whose beat has not advanced for more than ``deadline`` seconds."""
        found = {}
        for rank, changed in list(self._changed.items()):
            quiet = self._last_read - changed
            if quiet > deadline and self.beats.get(rank, {}).get("state", "running") == "running":
                found[rank] = quiet
        return found

    def store_silence(self, now: float) -> float:
        """Seconds the store has not answered (0 while it answers)."""
        return 0.0 if self._unanswered_since is None else now - self._unanswered_since

    def raising(self, grace: float, seq: int, now: float) -> Optional[Dict[str, Any]]:
        """A provisional report this task should fail on while it waits in collective ``seq + 1``.

        It has been present for ``grace`` seconds, its task had not entered this collective
        (its sequence number is at most ``seq``) and that task's latest beat says it is still
        handling the exception.
        """
        for rank, (report, seen) in sorted(self.raised.items()):
            if now - seen < grace or int(report.get("seq", 0)) > seq:
                continue
            if self.beats.get(rank, {}).get("raising") == report.get("id"):
                return dict(report, rank=rank)
        return None


def still_handling(thread: int, exc: int) -> bool:
    """Whether ``thread`` is handling exception ``exc`` (a ``finally:``, an ``except:``) or died of it."""
    current = getattr(sys, "_current_exceptions", None)
    if current is None:  # pragma: no cover - CPython has it; elsewhere a report stays until withdrawn
        return True
    handled = current().get(thread, _GONE)
    if handled is _GONE:
        return True  # the thread ended: the exception killed it
    value = handled[1] if isinstance(handled, tuple) else handled  # (type, value, tb) before 3.12
    for _ in range(16):  # the exception itself, or one raised while handling it
        if value is None:
            return False
        if id(value) == exc:
            return True
        value = value.__cause__ or value.__context__
    return False


_GONE = object()
