"""Without TensorFlow, `tfsem grappler` says which extra to install (exit 2,
no traceback).  Runs everywhere: the missing import is simulated."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfsem.cli import main
from tfsem.graphdef import grappler

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow"


def test_grappler_without_tensorflow_names_the_extra(monkeypatch, capsys):
    def missing():
        raise grappler.TensorFlowMissing(grappler.INSTALL_HINT)
    monkeypatch.setattr(grappler, "tensorflow", missing)
    status = main(["grappler", str(CORPUS / "counter.pbtxt")])
    err = capsys.readouterr().err
    assert status == 2
    assert "needs the extra tfsem[tensorflow]: pip install 'tfsem[tensorflow]'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["--optimizer", "bogus"], "unknown Grappler optimizer 'bogus'"),
    (["--optimizer", "autoparallel"], "unknown Grappler optimizer 'autoparallel'"),
])
def test_bad_optimizer_is_refused_before_tensorflow(argv, message, capsys):
    status = main(["grappler", str(CORPUS / "counter.pbtxt"), *argv])
    assert status == 2
    assert message in capsys.readouterr().err


def test_graph_without_fetches_or_manifest_is_refused(tmp_path, capsys):
    g = tmp_path / "g.pbtxt"
    g.write_text((CORPUS / "counter.pbtxt").read_text())
    assert main(["grappler", str(g)]) == 2
    assert "give the fetches with --fetch" in capsys.readouterr().err


def test_not_a_graph_file_is_refused(tmp_path, capsys):
    assert main(["grappler", str(tmp_path / "none.pbtxt")]) == 2
    assert "no such file" in capsys.readouterr().err
    j = tmp_path / "p.json"
    j.write_text("{}")
    assert main(["grappler", str(j)]) == 2
    assert "expected a GraphDef file" in capsys.readouterr().err
