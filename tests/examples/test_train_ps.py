"""The parameter-server example end to end: chief, 2 workers and 2 ps through the launcher."""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import pytest

from distribute.launch import launch

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_ps.py"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _processes_with(tag: str) -> list:
    """The pids of processes whose environment holds ``tag`` (this user's, readable ones)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


@pytest.mark.multiprocess
@pytest.mark.timeout(150)
def test_click_model_trains_on_two_workers_and_two_ps():
    tag = f"TRAIN_PS_TEST={uuid.uuid4().hex}"
    # grace_period 12 s: a task whose Shutdown call was lost under load ends by the 8 s silence limit.
    result = launch(argv=[sys.executable, str(SCRIPT)], workers=2, ps=2, timeout=120.0, grace_period=12.0,
                    env={"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", tag.split("=")[0]: tag.split("=")[1]})
    assert result.returncode == 0, result.output
    assert sorted(result.tasks) == ["chief:0", "ps:0", "ps:1", "worker:0", "worker:1"]
    chief = result.tasks["chief:0"].output
    assert "embedding table (100000, 16) in shards [(50000, 16), (50000, 16)]" in chief
    assert "step 150/300: loss" in chief and "step 300/300: loss" in chief
    final = re.search(r"final accuracy (\d\.\d+), AUC (\d\.\d+)", chief)
    assert final, chief
    assert float(final.group(1)) > 0.8 and float(final.group(2)) > 0.85, final.group(0)
    for name in ("ps:0", "ps:1", "worker:0", "worker:1"):
        task = result.tasks[name]
        assert "accuracy" not in task.output and "step" not in task.output  # only the chief reports
        # Each ended by itself when the coordinator finished (Shutdown), not stopped by the launcher.
        assert task.returncode == 0 and not task.stopped, (name, task.output[-2000:])
    assert _processes_with(tag) == []  # no task is left
