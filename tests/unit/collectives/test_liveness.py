"""The liveness bookkeeping in one process: silence between reads, store silence, provisional reports.

The multi-process behaviour (real stopped processes, real slow peers) is in test_liveness_mp.py
and test_errors_travel_mp.py; here the rules themselves, on a real store (``HashStore``).
"""

from __future__ import annotations

import threading

import torch.distributed as dist

from distribute.collectives import health, liveness
from distribute.collectives.failures import CollectiveTimeoutError, WorkerFailedError

TASKS = ("worker:0", "worker:1")


def beat(n: int, raising: int = 0, state: str = "running") -> dict:
    return {"beat": n, "seq": 3, "inside": False, "state": state, "doing": "x", "raising": raising}


def test_silence_counts_only_between_reads_this_task_made() -> None:
    seen = liveness.Observer(0)
    seen.saw_beats({1: beat(1)}, now=100.0)
    assert seen.silent(5.0) == {}
    seen.saw_beats({1: beat(1)}, now=104.0)
    assert seen.silent(5.0) == {}  # 4 s of silence
    seen.saw_beats({1: beat(1)}, now=105.5)
    assert seen.silent(5.0) == {1: 5.5}
    seen.saw_beats({1: beat(2)}, now=112.0)  # this task's own thread was late: the peer beat meanwhile
    assert seen.silent(5.0) == {}


def test_a_peer_that_finished_is_not_silent() -> None:
    seen = liveness.Observer(0)
    seen.saw_beats({1: beat(-1, state="finished")}, now=0.0)
    seen.saw_beats({1: beat(-1, state="finished")}, now=60.0)
    assert seen.silent(5.0) == {}


def test_store_silence_runs_from_the_first_unanswered_request() -> None:
    seen = liveness.Observer(1)
    seen.asking(10.0)
    seen.store_answered(10.1)
    assert seen.store_silence(20.0) == 0.0
    seen.asking(10.5)  # never answered (a stopped store)
    assert seen.store_silence(16.0) == 5.5
    seen.asking(11.0)  # a later try does not restart the count
    assert seen.store_silence(16.0) == 5.5


def test_a_provisional_report_fails_a_waiter_only_after_the_grace_while_still_handled() -> None:
    seen = liveness.Observer(0)
    report = {"kind": "raised", "id": 1, "seq": 3, "type": "ValueError", "message": "boom", "primary": True}
    seen.saw_reports({1: report}, now=50.0)
    seen.saw_beats({1: beat(7, raising=1)}, now=50.2)
    assert seen.raising(1.5, seq=3, now=51.0) is None  # within the grace
    assert seen.raising(1.5, seq=3, now=51.6)["rank"] == 1
    assert seen.raising(1.5, seq=2, now=51.6) is None  # the raiser had completed the collective we wait in
    seen.saw_beats({1: beat(8, raising=0)}, now=51.7)  # caught: no longer handled
    assert seen.raising(1.5, seq=3, now=52.0) is None
    seen.saw_reports({1: report}, now=52.0)  # re-read: the first sighting is kept
    assert seen.raised[1][1] == 50.0
    seen.saw_reports({}, now=53.0)  # withdrawn
    assert seen.raised == {}


def test_a_status_knows_whether_its_thread_still_handles_the_reported_exception() -> None:
    status = health.LocalStatus()
    inside, after = [], []
    try:
        try:
            raise ValueError("boom")
        except ValueError as exc:
            status.raised = (4, threading.get_ident(), id(exc))
            raise
        finally:
            inside.append(status.record(1)["raising"])
    except ValueError:
        pass
    after.append(status.record(2)["raising"])
    assert inside == [4] and after == [0]


def test_reports_and_withdrawals_are_read_back_from_the_store() -> None:
    store = dist.HashStore()
    mine, theirs = health.Board(store, TASKS, 1), health.Board(store, TASKS, 0)
    mine.report_raised(1, "ValueError", "boom", "running user code after collective #3", 3)
    assert theirs.errors()[1]["kind"] == "raised" and theirs.final_errors() == {}
    count = theirs.error_count()
    mine.withdraw(1)
    assert theirs.error_count() == count + 1 and theirs.errors() == {}
    mine.report("ValueError", "boom", "failed", True, None)
    assert theirs.final_errors()[1]["type"] == "ValueError"


def test_the_waiting_check_names_the_silent_peer_and_the_raiser() -> None:
    status = health.LocalStatus()
    status.seq, status.op, status.inside = 3, "gradients", True
    records = [{}, {}]  # no process identity: not on this machine as far as the check knows
    seen = liveness.Observer(0)
    seen.saw_beats({1: beat(1)}, now=0.0)
    seen.saw_beats({1: beat(1)}, now=liveness.HEARTBEAT_DEADLINE + 1.0)
    exc = health.waiting_failure(seen, TASKS, 0, status, records)
    assert isinstance(exc, CollectiveTimeoutError) and exc.task == "worker:1", exc
    assert "worker:1 stopped responding: no heartbeat for" in str(exc)
    seen.saw_reports({1: {"kind": "raised", "id": 1, "seq": 3, "type": "ValueError", "message": "boom",
                          "doing": "x", "primary": True, "culprit": "worker:1"}}, now=0.0)
    exc = health.waiting_failure(seen, TASKS, 0, status, records)
    assert isinstance(exc, WorkerFailedError) and exc.cause == "ValueError: boom", exc
