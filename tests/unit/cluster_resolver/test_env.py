"""Tests of _env, and that only it reads the process environment."""

import ast
import os
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    ClusterConfigTypeError,
    MissingEnvironmentError,
    _env,
)

PACKAGE = Path(_env.__file__).parent
SRC = str(PACKAGE.parents[1])
_OS_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def test_resolve_environ():
    assert _env.resolve_environ(None) is os.environ
    mapping = {"A": "1"}
    assert _env.resolve_environ(mapping) is mapping
    with pytest.raises(ClusterConfigTypeError, match="environ"):
        _env.resolve_environ(["A=1"])
    with pytest.raises(ClusterConfigTypeError, match="mutable"):
        _env.resolve_mutable_environ(MappingProxyType({}))
    assert _env.resolve_mutable_environ(mapping) is mapping


def test_require_and_get():
    assert _env.get({}, "X") is None
    assert _env.require({"X": "1"}, "X", "hint") == "1"
    with pytest.raises(MissingEnvironmentError, match="X not found in environment. hint") as info:
        _env.require({}, "X", "hint")
    assert info.value.variable == "X" and isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("value", ["", "1.0", "0x10", " 1", "one", "-3", "11"])
def test_read_int_errors(value):
    with pytest.raises(ClusterConfigError, match="^N: expected a decimal integer"):
        _env.read_int("N", value, 0, 10)


def test_read_int():
    assert _env.read_int("N", "7") == 7
    assert _env.read_int("N", "-2", minimum=-5) == -2


def _os_environment_uses(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "os" and node.attr in _OS_NAMES:
            yield node.lineno
        if isinstance(node, ast.ImportFrom) and node.module == "os" \
                and any(alias.name in _OS_NAMES for alias in node.names):
            yield node.lineno


def test_only_env_module_touches_os_environ():
    offenders = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "_env.py":
            continue
        lines = list(_os_environment_uses(ast.parse(path.read_text())))
        offenders += [f"{path.name}:{line}" for line in lines]
    assert offenders == []


_CHILD = r"""
import json, os, sys
import distribute.cluster_resolver as cr
from distribute.cluster_resolver.__main__ import describe_setup

class Poison(dict):
    def _boom(self, *args, **kwargs):
        raise AssertionError("os.environ was read")
    __getitem__ = get = __contains__ = __iter__ = keys = items = copy = _boom

os.environ = Poison()
tf = json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})
assert cr.TFConfigClusterResolver(environ={"TF_CONFIG": tf}).master() == "b:1"
assert not cr.TFConfigClusterResolver(environ={}).cluster_spec()
env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
assert cr.TorchrunClusterResolver(environ=env).rank == 0
slurm = {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NODELIST": "n1",
         "SLURM_STEP_TASKS_PER_NODE": "1"}
cr.SlurmClusterResolver(environ=slurm, gpus_per_node=1).cluster_spec()
assert slurm["CUDA_VISIBLE_DEVICES"] == "0"
assert type(cr.detect_cluster_resolver(environ={})).__name__ == "TFConfigClusterResolver"
resolver = cr.detect_cluster_resolver(environ={"TF_CONFIG": tf})
assert describe_setup(resolver, devices=False)["rank"] == 1
print("isolated")
"""


def test_explicit_environ_never_reads_the_process_environment():
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1",
           "TF_CONFIG": "{garbage", "RANK": "x", "SLURM_PROCID": "x"}
    result = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("isolated")
