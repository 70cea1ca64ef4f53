"""The installed package is the source tree: every Python package under a
folder that pyproject.toml maps into `tfsem` is listed in its `packages`, so a
non-editable install (`pip install .`, a wheel) has every module the
editable install has.  (A missing `tfsem.commands` once left `pip install .`
with a `tfsem` command that could not find any command.)"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk(package_dir: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for name, folder in package_dir.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


def test_every_package_on_disk_is_installed():
    cfg = _setuptools()
    on_disk = _packages_on_disk(cfg["package-dir"])
    missing = sorted(on_disk - set(cfg["packages"]))
    assert not missing, f"packages not listed in pyproject.toml [tool.setuptools] packages: {missing}"


def test_every_listed_package_exists():
    cfg = _setuptools()
    on_disk = _packages_on_disk(cfg["package-dir"])
    absent = sorted(set(cfg["packages"]) - on_disk)
    assert not absent, f"listed packages with no __init__.py: {absent}"


def test_the_command_modules_are_inside_an_installed_package():
    cfg = _setuptools()
    commands = ROOT / "tfsem" / "commands"
    assert (commands / "__init__.py").exists()
    assert "tfsem.commands" in cfg["packages"]
