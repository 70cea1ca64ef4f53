"""A user's package adds passes through the entry-point group `tfsem.rewrites`.

The package in tests/plugin/ is installed into the test environment (from a
copy, so that building leaves nothing in the repository), listed by
`tfsem passes` and applied by `tfsem rewrite` in fresh processes, then
uninstalled.  A lock file serializes concurrent runs of this test; a package
left behind by an interrupted run is simply reinstalled and removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

from tfsem.rewrites import BUILTINS, UNSOUND, registry

PLUGIN_SRC = Path(__file__).parent / "plugin"
DIST = "tfsem-example-plugin"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "first_example.json"


def _pip(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check",
                           "--no-input"], capture_output=True, text=True, timeout=timeout)


def _tfsem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True,
                          timeout=120)


@contextlib.contextmanager
def _lock():
    with open(Path(tempfile.gettempdir()) / "tfsem-example-plugin-test.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="class")
def installed_plugin(tmp_path_factory):
    """The plugin installed once for the tests of TestInstalledPlugin (pip
    install and uninstall each start pip, seconds), uninstalled when the class
    ends: before test_plugin_is_gone_after_uninstall runs."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not available in this environment")
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not available (needed for --no-build-isolation)")
    src = tmp_path_factory.mktemp("installed") / "plugin"
    shutil.copytree(PLUGIN_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    with _lock():
        done = _pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(src))
        if done.returncode != 0:
            if "Permission denied" in done.stderr or "externally-managed" in done.stderr:
                pytest.skip(f"cannot install into this environment: {done.stderr.strip()[-300:]}")
            pytest.fail(f"pip install failed:\n{done.stdout}\n{done.stderr}")
        try:
            yield
        finally:
            _pip("uninstall", "-y", DIST)


class TestInstalledPlugin:
    """`tfsem passes` and `tfsem rewrite`, in fresh processes, with the plugin installed."""

    def test_installed_plugin_shows_up_in_passes_json(self, installed_plugin):
        done = _tfsem("passes", "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        by_name = {p["name"]: p for p in data["passes"]}
        assert set(BUILTINS) <= set(by_name)
        swap = by_name["example-swap-outputs"]
        assert swap["claims"]["atomic"]["outputs"] == UNSOUND
        assert swap["origin"].startswith("entry point tfsem_example_plugin:SWAP_OUTPUTS")
        assert DIST in swap["origin"]
        ident = by_name["example-identity"]
        assert ident["claims"] == {}
        assert ident["description"] == "Return the program unchanged (an example plugin pass)."
        assert data["errors"] == []

    def test_installed_plugin_in_passes_text_and_rewrite(self, installed_plugin, tmp_path):
        done = _tfsem("passes")
        assert done.returncode == 0, done.stderr
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith("example-swap-outputs"))
        assert line.split()[1:5] == [UNSOUND] * 4
        ident = next(ln for ln in done.stdout.splitlines() if ln.startswith("example-identity"))
        assert ident.split()[1:5] == ["-"] * 4

        program = tmp_path / "two_outputs.json"
        program.write_text(json.dumps({"variables": [], "nodes": [
            {"name": "n", "op": "Neg", "inputs": ["$a"]}, {"name": "m", "op": "Identity", "inputs": ["$a"]}],
            "outputs": {"o1": "n", "o2": "m"}}))
        done = _tfsem("rewrite", "example-swap-outputs", str(program))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["outputs"] == {"o1": "m", "o2": "n"}


def test_plugin_is_gone_after_uninstall():
    """The fixture cleans up: outside it, the example distribution is absent
    (unless another run holds the lock right now)."""
    with _lock():
        with pytest.raises(metadata.PackageNotFoundError):
            metadata.distribution(DIST)


# ---------------------------------------------------------------------------
# Entry-point handling without installing anything


class _FakeEntryPoint:
    def __init__(self, name: str, value: str):
        self.name, self.value, self.group, self.dist = name, value, registry.ENTRY_POINT_GROUP, None

    def load(self):
        return metadata.EntryPoint(self.name, self.value, self.group).load()


def test_entry_points_broken_shadowing_and_functions(monkeypatch):
    fakes = [_FakeEntryPoint("my-prune", "tfsem.rewrites.prune:prune"),
             _FakeEntryPoint("broken", "no_such_module_for_tfsem:x"),
             _FakeEntryPoint("cse", "tfsem.rewrites.dce:PASS"),
             _FakeEntryPoint("renamed-dce", "tfsem.rewrites.dce:PASS")]

    def entry_points(group=None):
        return [e for e in fakes if e.group == group]

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    passes = registry.all_passes()
    errors = registry.load_errors()
    assert passes["cse"] is BUILTINS["cse"]                  # a built-in cannot be taken over
    assert passes["my-prune"].claims == {} and passes["my-prune"].origin.startswith("entry point")
    assert passes["renamed-dce"].name == "renamed-dce"
    assert passes["renamed-dce"].claims == BUILTINS["dce"].claims
    assert "broken" not in passes
    assert any("'broken'" in e and "failed to load" in e for e in errors)
    assert any("'cse'" in e and "built-in" in e for e in errors)
    assert registry.get_pass("my-prune") is not None
