"""Tests of the package surface: exports, docstring examples, sizes, layering."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

import distribute.launch as launch_package

PACKAGE = Path(launch_package.__file__).parent
SRC = PACKAGE.parent
MODULES = ["__init__", "_checks", "cluster", "launcher", "output", "ports", "results",
           "signals", "supervisor", "__main__"]


def test_public_names():
    assert set(launch_package.__all__) == {"EXIT_TIMEOUT", "LaunchResult", "TaskResult",
                                           "free_ports", "launch"}


def test_console_script_target():
    from distribute.launch.__main__ import main

    assert callable(main)
    assert 'distribute-launch = "distribute.launch.__main__:main"' in (
        SRC.parents[1] / "pyproject.toml").read_text()


@pytest.mark.multiprocess  # some examples start processes
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module_name = "distribute.launch" + ("" if name == "__init__" else f".{name}")
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_files_are_small():
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) < 500, path.name


def test_no_library_module_imports_the_launcher():
    offenders = []
    for path in SRC.rglob("*.py"):
        if PACKAGE in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            offenders += [str(path) for n in names if n.startswith("distribute.launch")]
    assert offenders == []
