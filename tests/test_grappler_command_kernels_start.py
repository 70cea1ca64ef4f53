"""`tfsem grappler` starts TensorFlow's kernels' child before it imports
TensorFlow for Grappler (tfsem/commands/grappler.py): a check that needs the
kernels waits for that child inside its own budget, so the two imports go
side by side instead.  Needs TensorFlow; the child itself is not started
here (its start is recorded, not made)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.graphdef import grappler  # noqa: E402
from tfsem.oracle import kernels  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow"


def test_the_kernels_child_starts_before_tensorflow_is_imported_for_grappler(monkeypatch, capsys):
    from tfsem.cli import main
    calls = []
    monkeypatch.setattr(kernels, "prestart", lambda: calls.append("kernels"))
    real = grappler.tensorflow
    monkeypatch.setattr(grappler, "tensorflow", lambda: calls.append("tensorflow") or real())
    status = main(["grappler", str(CORPUS / "counter_function.pbtxt"), "--optimizer", "dependency",
                   "--json"])
    capsys.readouterr()
    assert status == 0
    assert calls[:2] == ["kernels", "tensorflow"], calls


def test_bad_input_starts_no_child(monkeypatch, capsys, tmp_path):
    from tfsem.cli import main
    calls = []
    monkeypatch.setattr(kernels, "prestart", lambda: calls.append("kernels"))
    missing = tmp_path / "missing.pbtxt"
    assert main(["grappler", str(missing), "--optimizer", "dependency"]) == 2
    capsys.readouterr()
    assert calls == []
