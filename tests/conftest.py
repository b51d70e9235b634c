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

# Multi-worker jobs need a job secret (issue 15). Tests that start workers by hand (threads
# calling connect(), subprocess children) share this one; launched children inherit it.
os.environ.setdefault("DISTRIBUTE_JOB_SECRET", __import__("secrets").token_hex(32))


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


# -- the multi-worker entry of the named-strategy matrix (see tests/multi_worker_matrix.py) ----
import multi_worker_matrix as _matrix  # noqa: E402

_matrix_job: list = []


def pytest_sessionstart(session):
    if _matrix.in_worker():
        _matrix.multi_worker_strategy()  # joined before any test, so its threads are no leak


def pytest_collection_modifyitems(session, config, items):
    cases = [item for item in items if _matrix.is_matrix_case(item)]
    for item in cases:
        item.add_marker(pytest.mark.multiprocess)
        item.add_marker(pytest.mark.timeout(_matrix.JOB_TIMEOUT + 60))
    if cases and not _matrix.in_worker():
        _matrix_job.append(_matrix.MatrixJob(cases, Path(str(config.rootpath))))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if _matrix.in_worker() or not _matrix.is_matrix_case(pyfuncitem):
        return None
    _matrix.judge(_matrix_job[0], pyfuncitem.nodeid)
    return True


def pytest_runtest_logreport(report):
    if _matrix.in_worker():
        _matrix.write_report(report)


# -- an in-process parameter-server cluster (tests/ps_cluster.py) ---------------------------------
@pytest.fixture
def cluster():
    from ps_cluster import Cluster

    made = Cluster()
    try:
        yield made
    finally:
        made.close()
