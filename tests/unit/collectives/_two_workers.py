"""Runs a pg_scripts worker script on launched processes (2 by default) and collects its RESULT lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

BOTH_WAYS = pytest.mark.parametrize("fast_paths", [True, False], ids=["fast-paths", "general-path"])
"""Runs a multi-process test with the 2-process fast paths on, then off (DISTRIBUTE_FAST_PATHS=0)."""


def run_two_workers(script: Path, timeout: float = 60, workers: int = 2,
                    fast_paths: bool = True) -> Dict[str, Dict[str, Any]]:
    """``{task: {name: value}}`` from lines ``RESULT name json`` printed by each worker."""
    from distribute.launch import launch

    env = {"DISTRIBUTE_FAST_PATHS": "1" if fast_paths else "0"}
    result = launch([sys.executable, str(script)], workers=workers, timeout=timeout, env=env)
    assert result.returncode == 0 and not result.timed_out, result.output
    return {task: {line.split()[1]: json.loads(line.split(" ", 2)[2])
                   for line in task_result.output.splitlines() if line.startswith("RESULT ")}
            for task, task_result in result.tasks.items()}
