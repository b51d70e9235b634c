"""The multi-worker entry of the named-strategy matrix: 2 worker processes x 2 logical CPUs.

A test parametrised with ``named_strategies()`` gets a ``multi_worker_2x2`` case. In the pytest
process that collected it, the case does not run its body: the first such case starts a real
2-worker job on localhost (the launcher, one ``TF_CONFIG`` per task) in which each worker runs
pytest on *every* ``multi_worker_2x2`` case of the session, in the same order, and writes one
JSON line per test phase. Each case then passes, fails or skips from both workers' reports. In
the workers the body runs for real against one ``MultiWorkerMirroredStrategy`` per process,
whose 4 replicas sum, gather and train across both processes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

MW_ID = "multi_worker_2x2"
WORKER_ENV = "DISTRIBUTE_TEST_MATRIX_REPORTS"  # set in the workers: where they write their reports
JOB_TIMEOUT = 600.0
_strategy: List[Any] = []


def in_worker() -> bool:
    """True inside a worker process of the matrix job."""
    return WORKER_ENV in os.environ


def multi_worker_strategy() -> Any:
    """This worker's strategy (one per process: the process group is joined once)."""
    if not in_worker():
        raise RuntimeError(f"the {MW_ID} strategy exists only inside the matrix job's workers")
    if not _strategy:
        import distribute
        from distribute.cluster_resolver import SimpleClusterResolver, TFConfigClusterResolver
        from distribute.experimental import CommunicationOptions

        tf_config = TFConfigClusterResolver()
        resolver = SimpleClusterResolver(tf_config.cluster_spec(), task_type=tf_config.task_type,
                                         task_id=tf_config.task_id, num_accelerators={"CPU": 2})
        _strategy.append(distribute.MultiWorkerMirroredStrategy(
            resolver, communication_options=CommunicationOptions(timeout_seconds=60)))
    return _strategy[0]


def is_matrix_case(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)  # only parametrised items have one
    return callspec is not None and MW_ID in callspec.id.split("-")


class MatrixJob:
    """Runs every multi-worker case of the session once, in one 2-worker job."""

    def __init__(self, items: List[pytest.Item], rootdir: Path) -> None:
        self._nodeids = [item.nodeid for item in items]
        self._rootdir = rootdir
        self._reports: Optional[Dict[str, Dict[str, Dict[str, Any]]]] = None
        self._output = ""

    def outcome(self, nodeid: str) -> Dict[str, Dict[str, Any]]:
        """``{task: {phase: report}}`` for one case, running the job the first time."""
        if self._reports is None:
            self._reports = self._run()
        return {task: reports.get(nodeid, {}) for task, reports in self._reports.items()}

    @property
    def output(self) -> str:
        return self._output

    def _run(self) -> Dict[str, Dict[str, Dict[str, Any]]]:
        from distribute.launch import launch

        with tempfile.TemporaryDirectory(prefix="mw-matrix-") as reports:
            argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                    *self._nodeids]
            result = launch(argv, workers=2, timeout=JOB_TIMEOUT, cwd=str(self._rootdir),
                            env={WORKER_ENV: reports, "OMP_NUM_THREADS": "1"}, grace_period=5.0)
            self._output = result.output[-20000:]
            if result.timed_out:
                self._output = f"the matrix job hung and was stopped after {JOB_TIMEOUT} s\n{self._output}"
            return {task: _read_reports(Path(reports) / f"{task.replace(':', '-')}.jsonl")
                    for task in result.tasks}


def _read_reports(path: Path) -> Dict[str, Dict[str, Any]]:
    found: Dict[str, Dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            report = json.loads(line)
            found.setdefault(report["nodeid"], {})[report["when"]] = report
    return found


def judge(job: MatrixJob, nodeid: str) -> None:
    """Passes, skips or fails the parent's case from both workers' reports."""
    per_task = job.outcome(nodeid)
    failed = {task: r for task, phases in per_task.items() for r in phases.values() if r["outcome"] == "failed"}
    if failed:
        details = "\n".join(f"--- {task} ({r['when']}) ---\n{r['longrepr']}" for task, r in failed.items())
        pytest.fail(f"{MW_ID} failed on {sorted(failed)}:\n{details}", pytrace=False)
    if len(per_task) != 2 or not all(per_task.values()):
        pytest.fail(f"{MW_ID}: a worker did not run this case; the job's output:\n{job.output}", pytrace=False)
    skipped = {task: next((r for r in phases.values() if r["outcome"] == "skipped"), None)
               for task, phases in per_task.items()}
    if all(skipped.values()):
        pytest.skip(next(iter(skipped.values()))["longrepr"])  # type: ignore[index]
    if any(skipped.values()):
        pytest.fail(f"{MW_ID}: one worker skipped this case and the other ran it: {skipped}", pytrace=False)


def write_report(report: pytest.TestReport) -> None:
    """In a worker: appends one phase's report to this task's file."""
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    path = Path(os.environ[WORKER_ENV]) / f"{task['type']}-{task['index']}.jsonl"
    longrepr = str(report.longrepr) if report.longrepr else ""
    if report.skipped and isinstance(report.longrepr, tuple):
        longrepr = str(report.longrepr[2])
    line = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome, "longrepr": longrepr}
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")
