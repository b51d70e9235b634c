"""``DISTRIBUTE_FAST_PATHS``: whether the collective layer's 2-process fast paths are on.

The collective layer (``distribute.collectives``) reads no environment variable itself: its
``connect`` asks :func:`fast_paths_enabled` when the caller does not say, and passes the answer
down to the process group, whose all-reduces then travel by the wire methods of
``collectives/wire.py`` (``1``, the default) or all by the general packed path (``0``; the same
sums bit for bit, for comparing or to rule the fast paths out when hunting a problem). Every
worker of a job must use the same value: workers that differ raise ``CollectiveMismatchError``
at their first collective.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from distribute.cluster_resolver._env import get, resolve_environ
from distribute.cluster_resolver._errors import ClusterConfigError, describe

__all__ = ["FAST_PATHS_VARIABLE", "fast_paths_enabled"]

FAST_PATHS_VARIABLE = "DISTRIBUTE_FAST_PATHS"


def fast_paths_enabled(environ: Optional[Mapping[str, str]] = None) -> bool:
    """False when ``DISTRIBUTE_FAST_PATHS`` is ``0``, True when it is ``1`` or unset.

    Args:
        environ: the variables to read (None: the process environment).

    Raises:
        ClusterConfigError: the variable is set to anything else.
    """
    value = get(resolve_environ(environ), FAST_PATHS_VARIABLE)
    if value is None or value.strip() == "1":
        return True
    if value.strip() == "0":
        return False
    raise ClusterConfigError(describe(FAST_PATHS_VARIABLE, "0 (fast paths off) or 1 (on, the default)", value,
                                      "Unset it or set it to 0 or 1 on every worker."),
                             field=FAST_PATHS_VARIABLE, value=value)
