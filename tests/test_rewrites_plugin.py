"""A user's package adds passes through the entry-point group `tfsem.rewrites`.

The package in tests/plugin/ is installed by pip (from a copy, so that
building leaves nothing in the repository) into a folder of its own, which
the fresh `tfsem` processes that list and apply its passes have on their
path (PYTHONPATH): the entry points are found there as in site-packages.  The
test environment itself is never changed, so tests running beside these (in
other processes of the suite, or other runs) never see the plugin's passes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
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


def _tfsem(*args: str, site: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture(scope="class")
def installed_plugin(tmp_path_factory) -> Path:
    """The folder the plugin is installed into, once for the tests of
    TestInstalledPlugin (pip install starts pip, seconds)."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not available in this environment")
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not available (needed for --no-build-isolation)")
    src = tmp_path_factory.mktemp("installed") / "plugin"
    shutil.copytree(PLUGIN_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    site = tmp_path_factory.mktemp("site")
    done = _pip("install", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), str(src))
    if done.returncode != 0:
        if "Permission denied" in done.stderr or "externally-managed" in done.stderr:
            pytest.skip(f"cannot install with pip here: {done.stderr.strip()[-300:]}")
        pytest.fail(f"pip install failed:\n{done.stdout}\n{done.stderr}")
    assert [d.metadata["Name"] for d in metadata.distributions(path=[str(site)])] == [DIST]
    return site


class TestInstalledPlugin:
    """`tfsem passes` and `tfsem rewrite`, in fresh processes, with the plugin installed."""

    def test_installed_plugin_shows_up_in_passes_json(self, installed_plugin):
        done = _tfsem("passes", "--json", site=installed_plugin)
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
        done = _tfsem("passes", site=installed_plugin)
        assert done.returncode == 0, done.stderr
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith("example-swap-outputs"))
        assert line.split()[1:5] == [UNSOUND] * 4
        ident = next(ln for ln in done.stdout.splitlines() if ln.startswith("example-identity"))
        assert ident.split()[1:5] == ["-"] * 4

        program = tmp_path / "two_outputs.json"
        program.write_text(json.dumps({"variables": [], "nodes": [
            {"name": "n", "op": "Neg", "inputs": ["$a"]}, {"name": "m", "op": "Identity", "inputs": ["$a"]}],
            "outputs": {"o1": "n", "o2": "m"}}))
        done = _tfsem("rewrite", "example-swap-outputs", str(program), site=installed_plugin)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["outputs"] == {"o1": "m", "o2": "n"}


def test_the_plugin_is_found_only_where_it_is_installed():
    """Outside its folder the example distribution and its passes are absent:
    the test environment is left as it was."""
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.distribution(DIST)
    done = _tfsem("passes", "--json")
    assert done.returncode == 0, done.stderr
    assert not any(p["name"].startswith("example-") for p in json.loads(done.stdout)["passes"])


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
