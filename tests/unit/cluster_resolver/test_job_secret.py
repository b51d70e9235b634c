"""DISTRIBUTE_JOB_SECRET: read from an explicit mapping, checked, and the unauthenticated opt-in."""

from __future__ import annotations

import re
import warnings

import pytest

from distribute.cluster_resolver import ClusterConfigError
from distribute.cluster_resolver import job_secret as module
from distribute.cluster_resolver.job_secret import (ALLOW_UNAUTHENTICATED_VARIABLE, SECRET_VARIABLE,
                                                    UnauthenticatedJobWarning, job_secret, make_secret)


def test_make_secret_is_fresh_hex() -> None:
    first, second = make_secret(), make_secret()
    assert re.fullmatch(r"[0-9a-f]{64}", first) and first != second


def test_the_secret_is_read_and_stripped() -> None:
    secret = make_secret()
    assert job_secret({SECRET_VARIABLE: f" {secret}\n"}) == secret.encode()


def test_a_missing_secret_names_the_variable_and_the_fix() -> None:
    with pytest.raises(ClusterConfigError, match=f"{SECRET_VARIABLE} is not set on worker:1") as info:
        job_secret({}, task="worker:1")
    assert "secrets.token_hex(32)" in str(info.value) and ALLOW_UNAUTHENTICATED_VARIABLE in str(info.value)
    assert info.value.field == SECRET_VARIABLE
    with pytest.raises(ClusterConfigError):
        job_secret({SECRET_VARIABLE: "   ", ALLOW_UNAUTHENTICATED_VARIABLE: "0"})


def test_a_short_secret_is_refused_without_showing_it() -> None:
    with pytest.raises(ClusterConfigError, match="at least 32 characters") as info:
        job_secret({SECRET_VARIABLE: "hunter2"})
    assert "hunter2" not in str(info.value)


def test_the_opt_in_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_warned", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert job_secret({ALLOW_UNAUTHENTICATED_VARIABLE: "1"}, task="worker:0") is None
        assert job_secret({ALLOW_UNAUTHENTICATED_VARIABLE: "1"}, task="worker:0") is None
    assert [w.category for w in caught] == [UnauthenticatedJobWarning]
    assert "worker:0 runs without a job secret" in str(caught[0].message)


def test_the_opt_in_must_be_0_or_1() -> None:
    with pytest.raises(ClusterConfigError, match="0 or 1"):
        job_secret({ALLOW_UNAUTHENTICATED_VARIABLE: "yes"})


def test_a_secret_wins_over_the_opt_in() -> None:
    secret = make_secret()
    assert job_secret({SECRET_VARIABLE: secret, ALLOW_UNAUTHENTICATED_VARIABLE: "1"}) == secret.encode()
