"""The layers of ``docs/architecture.md`` are checked: no module imports a layer above its own.

Every ``import distribute...`` in ``src/distribute`` (module level or inside a function) is read
with :mod:`ast`; an import from a higher layer, or from a package of the same layer, fails.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import distribute

# Bottom first. A package may import its own package and the packages of lower layers only.
LAYERS: List[Tuple[str, ...]] = [
    ("errors", "_version"),
    ("_base",),
    ("cluster_resolver", "data"),
    ("_core",),
    ("collectives", "distributed_input"),
    ("ps",),
    ("strategies",),
    ("function", "nn", "optim"),
    ("coordinator",),
    ("experimental", "compat"),
    ("<root>",),  # distribute/__init__.py: the facade that re-exports every layer below
    ("launch",),
]
RANK: Dict[str, int] = {name: i for i, layer in enumerate(LAYERS) for name in layer}
ROOT = Path(distribute.__file__).parent


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[Tuple[int, str]]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "distribute":
                for alias in node.names:
                    yield node.lineno, f"distribute.{alias.name}"
            else:
                yield node.lineno, target


def upward_imports() -> List[str]:
    """Every import in the package that points to its own layer's sibling or a layer above."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        source = _package_of(_module_name(path))
        for line, target in _imports(path):
            if not (target == "distribute" or target.startswith("distribute.")):
                continue
            dest = _package_of(target)
            if dest == source or dest not in RANK:
                continue
            if RANK[dest] >= RANK[source]:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {target} "
                             f"({source} is below or beside {dest})")
    return found


def test_every_package_is_in_a_layer():
    packages = {_package_of(_module_name(p)) for p in ROOT.rglob("*.py")}
    assert packages <= set(RANK), f"packages missing from LAYERS: {sorted(packages - set(RANK))}"


def test_no_module_imports_a_layer_above_it():
    assert upward_imports() == []


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "distribute"
    (fake / "data").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "data" / "__init__.py").write_text("from distribute.strategies import mirrored\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", fake)
    assert len(upward_imports()) == 1
