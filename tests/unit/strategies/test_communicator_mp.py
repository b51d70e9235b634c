"""ProcessGroupCommunicator on two real worker processes (gloo on localhost), through the launcher."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from distribute.launch import launch

SCRIPTS = Path(__file__).resolve().parent / "mw_scripts"
sys.path.insert(0, str(SCRIPTS))
from _common import parse_results  # noqa: E402  (from mw_scripts, put on the path above)

pytestmark = pytest.mark.multiprocess


@pytest.fixture(scope="module")
def results() -> Dict[str, Dict[str, Any]]:
    result = launch([sys.executable, str(SCRIPTS / "mw_communicator.py")], workers=2, timeout=90.0,
                    grace_period=5.0)
    assert not result.timed_out, result.output
    assert result.returncode == 0, result.output
    found = {task: parse_results(r.output) for task, r in result.tasks.items()}
    assert all(r.get("done") for r in found.values()), result.output
    return found


@pytest.mark.timeout(120)
def test_collectives_over_the_process_group(results: Dict[str, Dict[str, Any]]) -> None:
    for rank, task in enumerate(["worker:0", "worker:1"]):
        got = results[task]["collectives"]
        assert (got["kind"], got["workers"], got["rank"]) == ("ProcessGroupCommunicator", 2, rank)
        assert got["sum"] == [3.0, 20.0] and got["mean"] == [1.5, 10.0]
        assert got["int_mean"] == [1.5] and got["inplace_mean"] == [1.5]
        assert "in-place MEAN all-reduce needs floating-point tensors" in got["int_mean_error"]
        assert got["gathered"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]] and got["offset"] == rank
        assert got["broadcast"] == [1.0]
        assert got["any_rank1"] is True and got["any_none"] is False


@pytest.mark.timeout(120)
def test_gradient_of_an_uneven_all_gather_is_this_workers_slice(results: Dict[str, Dict[str, Any]]) -> None:
    # Both workers back-propagate weights [1, 2, 3]: the summed upstream is [2, 4, 6].
    assert results["worker:0"]["gather_gradient"] == {"gathered": [1.0, 1.0, 1.0], "grad": [2.0]}
    assert results["worker:1"]["gather_gradient"] == {"gathered": [1.0, 1.0, 1.0], "grad": [4.0, 6.0]}
