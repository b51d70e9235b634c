"""``DISTRIBUTE_JOB_SECRET``: the per-job secret every connection into a job must prove.

A multi-worker job listens on ports of its hosts (the rendezvous store, the collective
sockets, parameter servers). Every connection into the job proves, by an HMAC
challenge-response (``distribute.collectives.auth``), that it knows the job's secret before
anything it sends is acted on, so a process on the same host that knows only an address
cannot join, read, change a sum or forge a report.

``python -m distribute.launch`` makes a fresh secret for every launch (:func:`make_secret`)
and passes it to each task in the environment; it is never printed. A cluster started by
hand sets the same value in every task::

    export DISTRIBUTE_JOB_SECRET=$(python -c "import secrets; print(secrets.token_hex(32))")

A job with no secret refuses to start unless ``DISTRIBUTE_ALLOW_UNAUTHENTICATED=1`` is set,
which runs it without authentication (anyone who can reach its ports can join) after one
warning.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Mapping
from typing import List, Optional

from distribute.cluster_resolver._env import get, resolve_environ
from distribute.cluster_resolver._errors import ClusterConfigError, describe

__all__ = ["ALLOW_UNAUTHENTICATED_VARIABLE", "MIN_SECRET_LENGTH", "SECRET_VARIABLE", "UnauthenticatedJobWarning",
           "job_secret", "make_secret"]

SECRET_VARIABLE = "DISTRIBUTE_JOB_SECRET"
ALLOW_UNAUTHENTICATED_VARIABLE = "DISTRIBUTE_ALLOW_UNAUTHENTICATED"
MIN_SECRET_LENGTH = 32
"""The fewest characters a secret may have (``make_secret`` gives 64 hex digits)."""
_HOW = 'python -c "import secrets; print(secrets.token_hex(32))"'
_warned: List[bool] = []


class UnauthenticatedJobWarning(UserWarning):
    """A job runs without a secret: any process that can reach its ports can join it."""


def make_secret() -> str:
    """A fresh job secret: 64 hex digits from :mod:`secrets` (256 bits)."""
    return secrets.token_hex(32)


def job_secret(environ: Optional[Mapping[str, str]] = None, *, task: str = "this task") -> Optional[bytes]:
    """The job's secret from ``DISTRIBUTE_JOB_SECRET``, or None when the job runs unauthenticated.

    Args:
        environ: the variables to read (None: the process environment).
        task: the task asking, for messages (``'worker:1'``).

    Returns:
        The secret's bytes, or None when it is unset and ``DISTRIBUTE_ALLOW_UNAUTHENTICATED=1``
        (a :class:`UnauthenticatedJobWarning` is then issued once per process).

    Raises:
        ClusterConfigError: the secret is unset and unauthenticated jobs are not allowed, the
            secret is shorter than 32 characters, or the opt-in variable is not 0 or 1.

    Example::

        >>> job_secret({"DISTRIBUTE_JOB_SECRET": "ab" * 32})[:4]
        b'abab'
    """
    env = resolve_environ(environ)
    value = get(env, SECRET_VARIABLE)
    if value is not None and value.strip():
        value = value.strip()
        if len(value) < MIN_SECRET_LENGTH:
            raise ClusterConfigError(describe(
                SECRET_VARIABLE, f"a secret of at least {MIN_SECRET_LENGTH} characters", f"<{len(value)} characters>",
                f"Make one with {_HOW} and give the same value to every task."), field=SECRET_VARIABLE,
                value=f"<{len(value)} characters>")
        return value.encode()
    if not _allowed(get(env, ALLOW_UNAUTHENTICATED_VARIABLE)):
        raise ClusterConfigError(
            f"{SECRET_VARIABLE} is not set on {task}: a multi-worker job needs a secret shared by its tasks, so "
            "that no other process on the network can join it. `python -m distribute.launch` sets one; for a "
            f"cluster started by hand, make one with {_HOW} and set it in every task. To run without "
            f"authentication anyway (anyone who can reach the job's ports can join), set "
            f"{ALLOW_UNAUTHENTICATED_VARIABLE}=1.", field=SECRET_VARIABLE, value=None)
    if not _warned:
        _warned.append(True)
        warnings.warn(f"{task} runs without a job secret ({ALLOW_UNAUTHENTICATED_VARIABLE}=1): any process that "
                      "can reach this job's ports can join it, read its tensors and change its sums. Set "
                      f"{SECRET_VARIABLE} in every task to authenticate.", UnauthenticatedJobWarning, stacklevel=2)
    return None


def _allowed(value: Optional[str]) -> bool:
    if value is None or value.strip() in ("", "0"):
        return False
    if value.strip() == "1":
        return True
    raise ClusterConfigError(describe(ALLOW_UNAUTHENTICATED_VARIABLE, "0 or 1", value,
                                      f"Set it to 1 to run without {SECRET_VARIABLE}, or unset it."),
                             field=ALLOW_UNAUTHENTICATED_VARIABLE, value=value)
