"""Liveness apart from progress (issue 15): the heartbeat judges who is dead, the timeout who is slow.

Real 2-worker jobs (``pg_scripts/liveness_worker.py``, started by ``distribute.launch``):

* a healthy peer 400 ms slower per step never fails the job (3 jobs side by side x 70 steps,
  the default 120 s timeout: 0 failures; issue 15 saw all three fail within 34 s);
* a peer slower than the heartbeat deadline, twice, with a 120 s timeout: no failure;
* a stopped (SIGSTOP) worker, and a stopped chief (it hosts the store, so its silence is its
  store's), are named within the heartbeat deadline + 2 s while the collective timeout is 60 s,
  and the survivor can leave its group without waiting for gloo's timeout.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

from distribute.collectives import liveness
from distribute.launch import launch

SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "liveness_worker.py"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "strategies" / "mw_scripts"))
from _common import parse_results  # noqa: E402

pytestmark = pytest.mark.multiprocess


def run(mode: str, *args: str, timeout: float = 90.0) -> Dict[str, Dict[str, Any]]:
    result = launch([sys.executable, str(SCRIPT), mode, *args], workers=2, timeout=timeout, grace_period=5.0,
                    forward_signals=threading.current_thread() is threading.main_thread())
    assert not result.timed_out, f"the job hung and was stopped after {timeout} s:\n{result.output}"
    found = {task: parse_results(task_result.output) for task, task_result in result.tasks.items()}
    return dict(found, output={"text": result.output})


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_peer_400ms_slower_per_step_never_fails_three_jobs_side_by_side() -> None:
    jobs: List[Dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: jobs.append(run("slow", timeout=200.0))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(jobs) == 3
    for job in jobs:
        for task in ("worker:0", "worker:1"):
            assert job[task].get("done") == 70, job["output"]["text"][-3000:]


@pytest.mark.timeout(120)
def test_a_peer_slower_than_the_heartbeat_deadline_is_not_a_failure() -> None:
    job = run("slower", "120")
    for task in ("worker:0", "worker:1"):
        assert job[task].get("done") == 4, job["output"]["text"][-3000:]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode, frozen, survivor", [
    ("freeze_worker", "worker:1", "worker:0"),
    ("freeze_chief", "worker:0", "worker:1"),
])
def test_a_stopped_task_is_named_within_the_heartbeat_deadline(mode: str, frozen: str, survivor: str) -> None:
    job = run(mode, "60")
    error, frozen_at = job[survivor].get("error"), job[frozen].get("frozen_at")
    assert error is not None and frozen_at is not None, job["output"]["text"][-3000:]
    assert error["type"] == "CollectiveTimeoutError" and error["task"] == frozen, error
    assert f"{frozen} stopped responding (its process is stopped)" in error["message"], error
    words = "has not answered for" if frozen == "worker:0" else "no heartbeat for"
    assert words in error["message"], error
    assert error["at"] - frozen_at < liveness.HEARTBEAT_DEADLINE + 2.0, error
    assert job[survivor].get("left_in", 99.0) < 8.0, job["output"]["text"][-3000:]  # not gloo's 60 s
