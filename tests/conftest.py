"""Suite-wide guards: no test may leak a thread, an environment variable or a strategy scope."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest
import torch._dynamo  # noqa: F401 - imported lazily by the first optimizer step, it sets
# os.environ["TORCHINDUCTOR_CACHE_DIR"]; importing it here keeps that out of the env guard below.

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for tests/strategies.py


@pytest.fixture(autouse=True)
def _no_leaks():
    from distribute._core import context

    threads = set(threading.enumerate())
    env = dict(os.environ)
    yield
    deadline = time.monotonic() + 5.0
    leaked = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    while leaked and time.monotonic() < deadline:
        time.sleep(0.02)
        leaked = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    assert not leaked, f"test leaked threads: {[t.name for t in leaked]}"
    changed = sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST")
    assert not changed, f"test changed os.environ {changed}; use monkeypatch or an explicit mapping"
    assert context.stack() == [], f"test left strategy scopes open: {context.stack()}"
