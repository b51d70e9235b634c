"""``distribute.__version__`` comes from the package metadata, with pyproject.toml as the one
source of truth (issue 25.1)."""

from importlib import metadata

import distribute
from distribute._version import PYPROJECT, UNKNOWN, package_version, pyproject_version


def test_version_is_the_installed_metadata_version():
    assert distribute.__version__ == metadata.version("distribute")


def test_metadata_and_pyproject_agree():
    assert pyproject_version(PYPROJECT) == metadata.version("distribute")


def test_uninstalled_package_falls_back_to_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[build-system]\nversion = "9"\n\n[project]\nname = "x"\nversion = "1.2.3"\n\n'
                         '[tool.other]\nversion = "7"\n')
    assert package_version("distribute-not-installed-for-this-test", pyproject) == "1.2.3"


def test_no_version_anywhere_is_marked_unknown(tmp_path):
    assert pyproject_version(tmp_path / "missing.toml") == UNKNOWN
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert pyproject_version(tmp_path / "pyproject.toml") == UNKNOWN
