"""MultiWorkerMirroredStrategy on real worker processes (gloo on localhost), started by the launcher.

Each test launches one worker script (``mw_scripts/``) in every task and compares what the
tasks printed. Every launch has a deadline, and the launcher kills every task before it returns.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from distribute.launch import launch

SCRIPTS = Path(__file__).resolve().parent / "mw_scripts"
sys.path.insert(0, str(SCRIPTS))
from _common import parse_results  # noqa: E402

pytestmark = pytest.mark.multiprocess


def run_script(name: str, *args: str, workers: int = 2, chief: bool = False, timeout: float = 90.0,
               grace_period: float = 5.0) -> Any:
    result = launch([sys.executable, str(SCRIPTS / name), *args], workers=workers, chief=chief,
                    timeout=timeout, grace_period=grace_period)
    assert not result.timed_out, f"the job hung and was stopped after {timeout} s:\n{result.output}"
    return result


def results_of(result: Any) -> Dict[str, Dict[str, Any]]:
    return {task: parse_results(task_result.output) for task, task_result in result.tasks.items()}


@pytest.fixture(scope="module")
def api_results() -> Dict[str, Dict[str, Any]]:
    result = run_script("mw_api.py")
    assert result.returncode == 0, result.output
    found = results_of(result)
    assert all(r.get("done") for r in found.values()), result.output
    return found


@pytest.mark.timeout(120)
def test_identity_and_roles(api_results: Dict[str, Dict[str, Any]]) -> None:
    for rank, task in enumerate(["worker:0", "worker:1"]):
        identity = api_results[task]["identity"]
        assert identity["replicas"] == 2
        assert identity["task"] == ["worker", rank]
        assert identity["devices"] == [f"/job:worker/replica:0/task:{rank}/device:CPU:0"]
        assert identity["should_checkpoint"] is (rank == 0)
        assert identity["should_save_summary"] is (rank == 0)
        assert identity["between_graph"] and identity["should_init"] and identity["multi_worker"]
        assert identity["resolver"] == "TFConfigClusterResolver"
        assert identity["replica_id"] == rank
        assert identity["input_workers"] == [2, rank]


@pytest.mark.timeout(120)
def test_reduce_gather_and_reduce_to_span_workers(api_results: Dict[str, Dict[str, Any]]) -> None:
    for task in ("worker:0", "worker:1"):
        reduce = api_results[task]["reduce"]
        assert reduce["sum"] == 3.0 and reduce["mean"] == 1.5
        assert reduce["sum_axis0"] == 6.0 and reduce["mean_axis0"] == 2.0  # 1+2 on worker 0, 3 on worker 1
        assert reduce["gather"] == [0.0, 1.0, 1.0]
        assert reduce["local_results"] == 1
        assert reduce["reduce_to"] == 3.0
        assert reduce["batch_reduce_to"] == [1.5, 15.0]


@pytest.mark.timeout(120)
def test_replica_context_collectives(api_results: Dict[str, Dict[str, Any]]) -> None:
    for task in ("worker:0", "worker:1"):
        replica = api_results[task]["replica"]
        assert replica["sum"] == {"a": [3.0, 6.0], "b": [3]}
        assert replica["mean"] == 1.5
        assert replica["gather"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert replica["merge"] == 21.0
    # The gradient of all_reduce(SUM, w * (rid + 1)) is all_reduce(SUM, 1) * (rid + 1).
    assert api_results["worker:0"]["grad_all_reduce"] == {"value": 3.0, "grad": 2.0}
    assert api_results["worker:1"]["grad_all_reduce"] == {"value": 3.0, "grad": 4.0}


@pytest.mark.timeout(120)
def test_variables_start_from_worker_0_and_aggregate(api_results: Dict[str, Dict[str, Any]]) -> None:
    first, second = api_results["worker:0"]["variables"], api_results["worker:1"]["variables"]
    assert first["weight"] == second["weight"] and first["bias"] == second["bias"]  # seeded differently
    assert first["v"] == second["v"] == 0.0
    assert first["on_read"] == second["on_read"] == 3.0  # SyncOnRead SUM of 1 and 2
    assert first["mean_var"] == second["mean_var"] == 0.5
    assert first["types"] == ["MirroredVariable", "SyncOnReadVariable"]


@pytest.mark.timeout(120)
def test_training_matches_one_device(api_results: Dict[str, Dict[str, Any]]) -> None:
    first, second = api_results["worker:0"]["training"], api_results["worker:1"]["training"]
    assert first["max_diff"] < 1e-6 and second["max_diff"] < 1e-6
    assert first["checksum"] == second["checksum"]
    assert first["losses"] == second["losses"]


@pytest.mark.timeout(120)
def test_listeners_bind_the_task_address_only(api_results: Dict[str, Dict[str, Any]]) -> None:
    for task in ("worker:0", "worker:1"):
        listeners = api_results[task]["listeners"]
        assert listeners["addresses"], "expected the gloo (and, on worker 0, the store) listeners"
        assert listeners["wildcard"] == []
        assert all(a.startswith("127.0.0.1:") for a in listeners["addresses"])
        assert listeners["seed"] == 1000  # worker 0's input seed everywhere


@pytest.mark.timeout(120)
def test_chief_hosts_the_group() -> None:
    result = run_script("mw_api.py", workers=1, chief=True)
    assert result.returncode == 0, result.output
    found = results_of(result)
    chief, worker = found["chief:0"]["identity"], found["worker:0"]["identity"]
    assert chief["replica_id"] == 0 and worker["replica_id"] == 1
    assert chief["should_checkpoint"] and not worker["should_checkpoint"]
    assert chief["devices"] == ["/job:chief/replica:0/task:0/device:CPU:0"]
    assert found["chief:0"]["training"]["max_diff"] < 1e-6
    assert found["worker:0"]["reduce"]["sum"] == 3.0


def _error(result: Any, task: str) -> Dict[str, Any]:
    found = results_of(result)[task]
    assert "error" in found, f"{task} reported no error:\n{result.output}"
    return found["error"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode, failing, survivor, kind, words", [
    ("die", "worker:1", "worker:0", "WorkerFailedError", ["worker:1 died", "collective #"]),
    ("chief_die", "worker:0", "worker:1", "WorkerFailedError", ["worker:0 (the rendezvous host) is unreachable"]),
    ("raise", "worker:1", "worker:0", "WorkerFailedError", ["worker:1 failed with ValueError: boom from worker 1"]),
    ("chief_raise", "worker:0", "worker:1", "WorkerFailedError",
     ["worker:0 failed with ValueError: boom from worker 0"]),
    ("stall", "worker:1", "worker:0", "CollectiveTimeoutError", ["timed out after 2 s", "worker:1 did not reach it"]),
    ("freeze", "worker:1", "worker:0", "CollectiveTimeoutError",
     ["worker:1 stopped responding (its process is stopped)"]),
    ("extra_step", "worker:0", "worker:1", "WorkerFailedError", ["worker:0 shut down after collective #"]),
])
def test_a_failed_worker_is_named_by_the_others(mode: str, failing: str, survivor: str, kind: str,
                                                words: list, tmp_path: Path) -> None:
    # A stopped (SIGSTOP) worker is a stalled one: CollectiveTimeoutError, whether gloo's recv
    # timeout or the library's deadline fires first (issue 20). The stalled worker sleeps until
    # the survivor has reported (a file in tmp_path), not for a fixed time that load could shorten.
    result = run_script("mw_failures.py", mode, str(tmp_path), timeout=60.0, grace_period=20.0)
    error = _error(result, survivor)
    assert error["type"] == kind, error
    assert error["task"] == failing, error
    for word in words:
        assert word in error["message"], error
    limit = 2.0 + 8.0 if mode in ("stall", "freeze") else 10.0  # the 2 s deadline, + slack for a loaded machine
    assert error["elapsed"] < limit, error
    if kind == "CollectiveTimeoutError":
        assert "DeadlineExceededError" in error["bases"] and "TimeoutError" in error["bases"]
    else:
        assert "UnavailableError" in error["bases"] and "ConnectionError" in error["bases"]


@pytest.mark.timeout(120)
def test_mismatched_collectives_raise_on_every_worker() -> None:
    result = run_script("mw_failures.py", "mismatch", timeout=60.0)
    assert result.returncode == 0, result.output
    found = results_of(result)
    expected = {"shape": ["float32[1000]", "float32[999]"], "dtype": ["float32[4]", "float64[4]"],
                "order": ["all_reduce(SUM)", "all_gather"], "gradients": ["2 tensors", "3 tensors"]}
    for task in ("worker:0", "worker:1"):
        for case, words in expected.items():
            outcome = found[task][case]
            assert outcome["type"] == "CollectiveMismatchError", (task, case, outcome)
            assert set(outcome["calls"]) == {"worker:0", "worker:1"}
            for word in words:
                assert word in outcome["message"], (task, case, outcome)
            # found by the agreement, not the 20 s deadline; the first worker to arrive also waits
            # for the other, which a loaded machine can delay by seconds
            assert outcome["elapsed"] < 10.0
        assert found[task]["after"] == 3.0  # the group is still usable afterwards


@pytest.mark.timeout(120)
def test_distributed_input_across_workers() -> None:
    result = run_script("mw_input.py")
    assert result.returncode == 0, result.output
    found = results_of(result)
    first, second = found["worker:0"], found["worker:1"]
    # The seed tables: 2 workers x 1 replica, global batch 4.
    assert first["FILE"] == [[0, 1], [2, 3], [4], [5]] and second["FILE"] == [[6, 7], [8, 9], [10], [11]]
    assert first["DATA"] == [[0, 1], [4, 5], [8, 9]] and second["DATA"] == [[2, 3], [6, 7], [10, 11]]
    assert first["OFF"] == second["OFF"] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    # Worker 1 runs out first; both stop on the same step (it gets an empty batch).
    assert first["partial"] == [[0, 1], [4]] and second["partial"] == [[2, 3], []]
    assert first["from_function"] == [[0, 1], [4, 5]] and second["from_function"] == [[2, 3], []]
    # input_signature=[dist.element_spec] (issue 24): the same batches, partial step included.
    assert first["signature"] == [[0, 10], [40]] and second["signature"] == [[20, 30], []]
    assert first["signature_from_function"] == [[0, 10], [40, 50]]
    assert second["signature_from_function"] == [[20, 30], []]
    # One shuffle order for both workers (worker 0's seed): disjoint halves covering everything.
    seen = [x for batch in first["shuffle"] + second["shuffle"] for x in batch]
    assert sorted(seen) == list(range(16))
