"""Fixtures of the input-pipeline tests: no thread may outlive its test."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from distribute.data.ops import _parallel, prefetch


def _pipeline_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("distribute.data")]


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fails a test that leaves a pipeline thread running (after collecting garbage)."""
    yield
    if _pipeline_threads():
        gc.collect()
    deadline = time.monotonic() + 2.0
    while _pipeline_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    leaked = _pipeline_threads()
    assert not leaked, f"pipeline threads still running after the test: {leaked}"


@pytest.fixture
def force_threads(monkeypatch):
    """Makes prefetch and parallel map use their threads from the first elements."""
    monkeypatch.setattr(prefetch.POLICY, "min_us", 0.0)
    monkeypatch.setattr(prefetch.POLICY, "window", 1)
    monkeypatch.setattr(_parallel.POLICY, "min_us", 0.0)
    monkeypatch.setattr(_parallel.POLICY, "probe_elements", 1)
    monkeypatch.setattr(_parallel.POLICY, "chunk_us", 3.0)
    monkeypatch.setattr(_parallel.POLICY, "max_chunk", 3)
    monkeypatch.setattr(_parallel.POLICY, "review_fills", 10**9)
    monkeypatch.setattr("distribute.data.ops._parallel.WorkerPool.size_for", staticmethod(lambda n: 1))
