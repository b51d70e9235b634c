"""The README's main job, end to end: 2 worker processes through the launcher, and one process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from distribute.launch import launch

pytest.importorskip("sklearn")
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.mark.multiprocess
@pytest.mark.timeout(120)
def test_two_workers_train_and_only_the_chief_reports():
    result = launch(argv=[sys.executable, str(SCRIPT), "--epochs", "6"], workers=2, timeout=100.0,
                    env={"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.output
    chief, other = result.tasks["worker:0"].output, result.tasks["worker:1"].output
    assert "MultiWorkerMirroredStrategy with 2 replicas" in chief
    assert chief.count("epoch ") == 6 and "test accuracy: 0.9" in chief and "examples/s" in chief
    assert "epoch" not in other and "accuracy" not in other  # progress is shown once, not per worker


@pytest.mark.timeout(120)
def test_one_process_mirrored_variant():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--strategy", "mirrored", "--replicas", "2", "--epochs", "6"],
                          capture_output=True, text=True, timeout=100, env={"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1",
                                                                             "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "MirroredStrategy with 2 replicas (2 logical CPU replicas in one process)" in proc.stdout
    assert "test accuracy: 0.9" in proc.stdout
