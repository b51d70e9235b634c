"""The size budget of the source tree: no file over 600 lines, no function over 60."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List, Tuple

import distribute

ROOT = Path(distribute.__file__).parent
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60


def long_functions(source: str) -> List[Tuple[str, int]]:
    """(name, lines) of every function or method in ``source`` longer than the budget."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append((node.name, length))
    return found


def test_no_source_file_is_over_the_budget():
    big = [(str(p.relative_to(ROOT)), n) for p in ROOT.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not big, f"files over {MAX_FILE_LINES} lines, split them by concept: {big}"


def test_no_function_is_over_the_budget():
    long = [(str(p.relative_to(ROOT)), name, n) for p in ROOT.rglob("*.py")
            for name, n in long_functions(p.read_text())]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines, split them: {long}"


def test_the_function_check_counts_lines():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", MAX_FUNCTION_LINES + 1)]
    assert long_functions("def g():\n    return 1\n") == []
