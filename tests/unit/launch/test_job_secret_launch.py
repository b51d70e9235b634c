"""The launcher gives every task of a launch one fresh job secret, and never shows it."""

from __future__ import annotations

import hashlib
import re
import sys

import pytest

from distribute.launch import launch
from distribute.launch.launcher import plan_launch
from distribute.launch.cluster import with_job_secret

SHOW = [sys.executable, "-c", "import hashlib, os; s = os.environ.get('DISTRIBUTE_JOB_SECRET'); "
        "print('SECRET', len(s) if s else None, hashlib.sha256(s.encode()).hexdigest()[:16] if s else None)"]


def _digest(secret: str) -> str:
    return f"{len(secret)}:{hashlib.sha256(secret.encode()).hexdigest()[:16]}"


def _secrets(output: str) -> list:
    return [f"{n}:{d}" if n != "None" else "None" for n, d in re.findall(r"SECRET (\S+) (\S+)", output)]


def test_each_launch_makes_one_secret_for_all_its_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISTRIBUTE_JOB_SECRET", raising=False)
    first = launch(SHOW, workers=2, chief=True, timeout=60)
    second = launch(SHOW, workers=1, timeout=60)
    seen = _secrets(first.output)
    assert len(seen) == 3 and len(set(seen)) == 1 and seen[0].startswith("64:")  # make_secret: 64 hex digits
    assert _secrets(second.output) != seen[:1]


def test_a_secret_the_caller_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = "c" * 64
    result = launch(SHOW, workers=2, timeout=60, env={"DISTRIBUTE_JOB_SECRET": mine})
    assert _secrets(result.output) == [_digest(mine)] * 2 and mine not in repr(result)
    monkeypatch.setenv("DISTRIBUTE_JOB_SECRET", "d" * 64)
    assert _secrets(launch(SHOW, workers=1, timeout=60).output) == [_digest("d" * 64)]
    assert _secrets(launch(SHOW, workers=1, timeout=60, env={"DISTRIBUTE_JOB_SECRET": None}).output) == ["None"]


def test_plans_and_commands_do_not_show_the_environment() -> None:
    plan = plan_launch(SHOW, env={"DISTRIBUTE_JOB_SECRET": "e" * 64})
    assert "e" * 64 not in repr(plan)
    assert with_job_secret({"DISTRIBUTE_JOB_SECRET": " "}, {})["DISTRIBUTE_JOB_SECRET"].strip() != ""
