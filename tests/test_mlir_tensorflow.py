"""`tfsem mlir`: TensorFlow's MLIR passes run in a child process and checked
(docs/mlir.md).  Needs TensorFlow (the extra tfsem[tensorflow]); skipped,
saying so, where it is missing.  Each test starts at most one TensorFlow
process; under the nightly profile the first also replays its counterexample
on TensorFlow (imported into this process)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import main

EX = Path(__file__).resolve().parent.parent / "examples" / "mlir"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")


def mlir(capsys, *argv):
    rc = main(["mlir", *argv, "--json", "--timeout", "60"])
    return rc, json.loads(capsys.readouterr().out)


def test_decomposing_assign_add_beside_a_concurrent_one(capsys):
    """tf-device-decompose-resource-ops: a lost update under the executor's
    atomic AssignAdd, allowed by the concurrency semantics (decomposed)."""
    replay = settings.get_current_profile_name() == "nightly"   # TensorFlow in-process
    rc, d = mlir(capsys, str(EX / "concurrent_assign_add.mlir"),
                 "--pipeline", "func.func(tf-device-decompose-resource-ops)",
                 *([] if replay else ["--no-replay"]))
    assert d["status"] == "checked", d
    assert d["verdicts"]["atomic"]["verdict"] == "unsound"
    assert d["verdicts"]["atomic"]["differs"] == {"variable": "x"}
    assert d["verdicts"]["decomposed"]["verdict"] == "sound"
    if replay:
        # the counterexample, replayed on TensorFlow's executor, gives the lost update
        assert d["verdicts"]["atomic"]["tensorflow_replay"]["confirmed"] is True
        assert "tensorflow" in d["verdicts"]["atomic"]["confirmed"]
    else:
        assert d["verdicts"]["atomic"]["tensorflow_replay"]["status"] == "skipped"
    assert rc == 1


def test_resource_op_lifting_on_a_cluster_with_a_concurrent_write(capsys, tmp_path):
    """tf-resource-op-lifting hoists the cluster's read of y above its write
    of x: the store-buffering outcome r_cluster = r_island = 0 appears, in
    both modes (plain reads and writes: decomposition changes nothing)."""
    rc, d = mlir(capsys, str(EX / "cluster_store_load.mlir"), "--pipeline",
                 "tf-resource-op-lifting", "--save", str(tmp_path), "--no-replay")
    assert d["status"] == "checked", d
    for mode in ("atomic", "decomposed"):
        v = d["verdicts"][mode]
        assert v["verdict"] == "unsound", (mode, v)
        assert v["counterexample"]["outcome"]["outputs"] == {"r_cluster": 0, "r_island": 0}
    assert rc == 1
    out = (tmp_path / "output.mlir").read_text()
    # the pass did what docs/mlir.md says: the read moved before the cluster
    assert out.index('"tf.ReadVariableOp"') < out.index('"tf_device.cluster"')


def test_graphdef_imported_with_its_fetch_then_islands_coarsened(capsys, tmp_path):
    """Pruned to what s and the target aa2 need (both AssignAdds), imported,
    coarsened into one island in an order the graph allowed."""
    rc, d = mlir(capsys, str(EX / "two_assign_adds.pbtxt"), "--fetch", "s", "--target", "aa2",
                 "--pipeline", "func.func(tf-executor-island-coarsening)", "--save", str(tmp_path))
    assert d["status"] == "checked", d
    assert {m: v["verdict"] for m, v in d["verdicts"].items()} == \
        {"atomic": "sound", "decomposed": "sound"}
    assert rc == 0
    inp = (tmp_path / "input.mlir").read_text()
    assert inp.count('"tf.AssignAddVariableOp"') == 2 and "tf.Placeholder" not in inp


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="one more TensorFlow process: nightly profile only")
def test_a_pipeline_tensorflow_refuses_is_bad_input(capsys):
    rc, d = mlir(capsys, str(EX / "concurrent_assign_add.mlir"),
                 "--pipeline", "tf-executor-island-coarsening")   # not nested in func.func
    assert rc == 2 and d["status"] == "tensorflow-error" and d["verdicts"] == {}


def test_a_crash_of_tensorflow_is_a_finding_not_a_crash_of_tfsem(capsys, tmp_path, monkeypatch):
    """TensorFlow's child process aborting (an LLVM ERROR) is reported as
    such, exit 1, with the input kept.  The child here is a stand-in that
    aborts the way TensorFlow does (no TensorFlow process is started)."""
    import os
    import signal
    import stat
    import sys
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\nexec " + sys.executable + " -c '"
        "import json, os, signal, sys; r = json.load(sys.stdin); "
        "open(r[\"dir\"] + \"/input.mlir\", \"w\").write(\"module {}\"); "
        "print(\"LLVM ERROR: a pass crashed\", file=sys.stderr); sys.stderr.flush(); "
        "os.kill(os.getpid(), signal.SIGABRT)'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(sys, "executable", str(fake))
    rc, d = mlir(capsys, str(EX / "concurrent_assign_add.mlir"), "--pipeline", "cse",
                 "--save", str(tmp_path / "saved"))
    assert rc == 1 and d["status"] == "tensorflow-crash", d
    assert "LLVM ERROR: a pass crashed" in d["message"] and "pipeline" in d["message"]
    assert d["tensorflow"]["returncode"] == -signal.SIGABRT
    assert (tmp_path / "saved" / "input.mlir").read_text() == "module {}"
    assert not os.path.exists(tmp_path / "saved" / "output.mlir")
