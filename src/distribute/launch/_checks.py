"""Argument checks of the launcher: each returns the checked value or raises a clear error."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional

from distribute.cluster_resolver.address import format_address, parse_address
from distribute.cluster_resolver.tf_config import TF_CONFIG
from distribute.errors import InvalidArgumentError, NotFoundError

__all__ = ["check_argv", "check_bool", "check_count", "check_cwd", "check_env", "check_host",
           "check_seconds", "describe"]

_WILDCARDS = ("0.0.0.0", "::", "0:0:0:0:0:0:0:0")


def describe(name: str, expected: str, received: Any, fix: str = "") -> str:
    """``'name: expected ...; received ... . fix'``, the shape of every launcher error."""
    text = repr(received)
    text = text if len(text) <= 120 else text[:117] + "..."
    message = f"{name}: expected {expected}; received {text}."
    return f"{message} {fix}" if fix else message


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool."""
    if not isinstance(value, bool):
        raise TypeError(describe(name, "True or False", value))
    return value


def check_count(name: str, value: Any, minimum: int, fix: str = "") -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(describe(name, f"an int >= {minimum}", value, fix))
    if value < minimum:
        raise InvalidArgumentError(describe(name, f"an int >= {minimum}", value, fix))
    return value


def check_seconds(name: str, value: Any, allow_none: bool, allow_zero: bool) -> Optional[float]:
    """``value`` as a float number of seconds (positive, or >= 0 with ``allow_zero``)."""
    expected = ("a number of seconds " + (">= 0" if allow_zero else "> 0")
                + (" or None" if allow_none else ""))
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(describe(name, expected, value))
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not allow_zero):
        raise InvalidArgumentError(describe(name, expected, value))
    return float(value)


def check_env(env: Any) -> Dict[str, Optional[str]]:
    """``env`` as a dict of variable -> value (None removes the variable)."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(describe("env", "a dict of environment variables or None", env))
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidArgumentError(describe("env key", "a variable name", key))
        if value is not None and (not isinstance(value, str) or "\0" in value):
            raise TypeError(describe(f"env[{key!r}]", "a str, or None to remove it", value))
    if TF_CONFIG in env:
        raise InvalidArgumentError(describe(
            f"env[{TF_CONFIG!r}]", "no TF_CONFIG", env[TF_CONFIG],
            "The launcher writes each task's own TF_CONFIG; remove it from env."))
    return dict(env)


def check_cwd(cwd: Any) -> Optional[str]:
    """``cwd`` as a str, if it is None or an existing directory."""
    if cwd is None:
        return None
    if not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(describe("cwd", "a directory path or None", cwd))
    path = os.fspath(cwd)
    if not os.path.isdir(path):
        raise NotFoundError(describe("cwd", "an existing directory", path))
    return str(path)


def check_host(host: Any) -> str:
    """``host`` if it is one specific IP address or host name (not a wildcard)."""
    if not isinstance(host, str):
        raise TypeError(describe("host", "an address such as '127.0.0.1'", host))
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        parse_address(format_address(bare, 1), field="host")
    except ValueError:
        raise InvalidArgumentError(describe(
            "host", "an IP address or host name such as '127.0.0.1'", host)) from None
    if bare in _WILDCARDS:
        raise InvalidArgumentError(describe(
            "host", "one address of this machine", host,
            "A wildcard would make every task listen on every interface; use '127.0.0.1'."))
    return bare


def _executable_found(program: str, cwd: Optional[str], path: Optional[str]) -> bool:
    if os.sep in program or (os.altsep and os.altsep in program):
        full = program if os.path.isabs(program) else os.path.join(cwd or os.curdir, program)
        return os.path.isfile(full) and os.access(full, os.X_OK)
    return shutil.which(program, path=path) is not None


def check_argv(argv: Any, cwd: Optional[str], path: Optional[str]) -> List[str]:
    """``argv`` as a list of str whose program exists (looked up in ``path``, like a shell)."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence) or not argv:
        raise TypeError(describe("argv", "a non-empty list of strings", argv,
                                 "Pass e.g. [sys.executable, 'train.py']."))
    if not all(isinstance(arg, (str, os.PathLike)) for arg in argv):
        raise TypeError(describe("argv", "a list of strings", argv))
    checked = [str(os.fspath(arg)) for arg in argv]
    if not _executable_found(checked[0], cwd, path):
        raise NotFoundError(describe("argv[0]", "an executable program", checked[0],
                                     "Give its full path, e.g. sys.executable."))
    return checked
