"""TensorFlow's multi-worker test assertions on 2 real worker processes (issue 26), via the launcher.

One launch of ``mw_scripts/mw_tf_tests.py`` (deadline 90 s; the launcher kills every task
before it returns); each test checks one point on what both workers printed.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from .test_multi_worker_mirrored_mp import results_of, run_script

pytestmark = pytest.mark.multiprocess
TASKS = ("worker:0", "worker:1")


@pytest.fixture(scope="module")
def found() -> Dict[str, Dict[str, Any]]:
    result = run_script("mw_tf_tests.py")
    assert result.returncode == 0, result.output
    results = results_of(result)
    assert all(r.get("done") for r in results.values()), result.output
    return results


@pytest.mark.timeout(120)
def test_tf_test_setup_with_environment_none(found: Dict[str, Dict[str, Any]]) -> None:
    for rank, task in enumerate(TASKS):
        assert found[task]["resolver"] == {"environment": None, "task": ["worker", rank]}


@pytest.mark.timeout(120)
def test_variables_are_equal_on_every_worker_from_creation(found: Dict[str, Dict[str, Any]]) -> None:
    first, second = found["worker:0"]["variables"], found["worker:1"]["variables"]
    assert first["before"] != second["before"]  # the workers' own streams differ
    assert first["inside"] == second["inside"], (first["inside"], second["inside"])
    assert first["inside"]["data"] == 0.0  # worker 0's value, read inside the scope
    assert first["inside"]["v"] == first["inside"]["v_again"] == first["after"]["v"]
    assert first["after"] == second["after"]
    assert first["inside"]["weight"] == first["after"]["weight"]  # nothing changed when the scope was left
    assert first["own_stream"] and second["own_stream"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case, shapes", [
    ("off_axis", ["[2, 3]", "[2, 4]"]), ("rank", ["[2, 3]", "[2]"]), ("all_gather", ["[1, 2]", "[1, 3]"])])
def test_gather_shape_mismatch_is_an_invalid_argument_error_on_every_worker(
        found: Dict[str, Dict[str, Any]], case: str, shapes: list) -> None:
    for task in TASKS:
        outcome = found[task][case]
        assert outcome["type"] == "WorkerGatherShapeMismatchError", (task, outcome)
        for base in ("GatherShapeMismatchError", "InvalidArgumentError", "ValueError", "CollectiveMismatchError"):
            assert base in outcome["bases"], (task, outcome["bases"])
        assert "Shape mismatch" in outcome["message"], outcome
        for shape in shapes:
            assert f"shape {shape}" in outcome["message"], (task, shape, outcome["message"])
        assert set(outcome["calls"]) == set(TASKS)
        assert outcome["elapsed"] < 15.0  # found by the agreement, not the 30 s deadline
    assert found["worker:0"]["after"] == found["worker:1"]["after"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
