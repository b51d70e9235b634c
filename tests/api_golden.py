"""The public API of ``distribute`` as text: every exported name with its signature.

``python tests/api_golden.py > tests/golden_api.txt`` rewrites the golden file after a
deliberate change; ``tests/test_public_api.py`` compares it with the package.
"""

from __future__ import annotations

import enum
import re
import inspect
import types
from typing import Iterator, List

NAMESPACES = ("distribute", "distribute.experimental", "distribute.experimental.coordinator",
              "distribute.experimental.partitioners", "distribute.coordinator", "distribute.errors", "distribute.data",
              "distribute.data.experimental", "distribute.cluster_resolver", "distribute.optim",
              "distribute.nn", "distribute.launch", "distribute.compat.v1")


def _signature(obj: object) -> str:
    try:
        text = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # sentinel defaults: no addresses


def _members(cls: type) -> Iterator[str]:
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(value, property):
            yield f"    {name}: property"
        elif isinstance(value, (staticmethod, classmethod)):
            yield f"    {name}{_signature(value.__func__)}  [{type(value).__name__}]"
        elif inspect.isfunction(value):
            yield f"    {name}{_signature(value)}"


def _describe(qualified: str, obj: object) -> Iterator[str]:
    if isinstance(obj, types.ModuleType):
        yield f"{qualified}: module"
    elif inspect.isclass(obj):
        bases = ", ".join(b.__name__ for b in obj.__bases__)
        yield f"{qualified}: class({bases})"
        if issubclass(obj, enum.Enum):
            yield from (f"    {m.name} = {m.value!r}" for m in obj)  # type: ignore[var-annotated]
        else:
            yield from _members(obj)
    elif callable(obj):
        yield f"{qualified}{_signature(obj)}"
    else:
        yield f"{qualified}: {type(obj).__name__} = {obj!r}"


def golden_lines() -> List[str]:
    """One line per public name, and per public method of each public class."""
    import importlib

    lines: List[str] = []
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name in sorted(getattr(module, "__all__", ())):
            if namespace == "distribute" and name == "__version__":
                continue  # changes with every release
            lines.extend(_describe(f"{namespace}.{name}", getattr(module, name)))
    return lines


if __name__ == "__main__":
    print("\n".join(golden_lines()))
