"""``distribute.__version__``: the installed package's version, from its metadata.

The version is written once, in ``pyproject.toml``; installing the package copies it into the
package metadata. A source checkout that is not installed reads ``pyproject.toml`` itself.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["package_version"]

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
UNKNOWN = "0+unknown"


def package_version(name: str = "distribute", pyproject: Path = PYPROJECT) -> str:
    """The version of the installed package ``name``, else the one in ``pyproject``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return pyproject_version(pyproject)


def pyproject_version(pyproject: Path) -> str:
    """``version`` of the ``[project]`` table of ``pyproject`` (``0+unknown`` without one)."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return UNKNOWN
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    found = section and re.search(r'^version\s*=\s*["\']([^"\']+)["\']', section.group(1), re.MULTILINE)
    return found.group(1) if found else UNKNOWN
