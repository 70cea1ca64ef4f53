"""tf-resource-op-lifting forwards a stored value past an update it keeps
(examples/mlir/lifting_forwards_past_update.mlir; docs/mlir-campaigns.md,
kind F): in a cluster, x := 5; x -= 2; read x gives 3, and after the pass the
cluster returns 5.  The check of TensorFlow's saved output needs no
TensorFlow; running the pass and replaying the counterexample on TensorFlow's
executor is nightly (a TensorFlow process, 10-60 s on the shared machine)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import main

EX = Path(__file__).resolve().parent.parent / "examples" / "mlir"
INPUT = EX / "lifting_forwards_past_update.mlir"
LIFTED = EX / "lifting_forwards_past_update.lifted.mlir"


def _assert_forwarded(verdict: dict) -> None:
    assert verdict["verdict"] == "unsound", verdict
    assert verdict["differs"] == {"output": "out"}
    cex = verdict["counterexample"]
    assert cex["outcome"]["outputs"] == {"out": 5}            # the stored value, forwarded
    assert [o["outputs"] for o in cex["original_outcomes"]] == [{"out": 3}]   # 5 - 2
    assert cex["outcome"]["state"] == {"x": 3}                 # the update itself still runs


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_tensorflows_output_reads_the_stored_value_past_the_update(mode, capsys):
    rc = main(["check", str(INPUT), str(LIFTED), "--semantics", mode, "--json",
               "--no-tensorflow", "--timeout", "30"])
    _assert_forwarded(json.loads(capsys.readouterr().out))
    assert rc == 1
    out = LIFTED.read_text()
    assert '"tf.AssignSubVariableOp"' in out and '"tf.ReadVariableOp"' not in out


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")
@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="a TensorFlow process and a replay on TensorFlow: nightly profile only")
def test_tensorflow_lifts_it_so_and_its_executor_gives_the_new_outcome(capsys, tmp_path):
    rc = main(["mlir", str(INPUT), "--pipeline", "tf-resource-op-lifting", "--json",
               "--timeout", "60", "--save", str(tmp_path)])
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "checked", d
    for mode in ("atomic", "decomposed"):
        v = d["verdicts"][mode]
        _assert_forwarded(v)
        # the output module exported and run by TensorFlow's executor gives out = 5
        assert v["tensorflow_replay"]["confirmed"] is True, v["tensorflow_replay"]
        assert "tensorflow" in v["confirmed"]
    assert rc == 1
    assert (tmp_path / "output.mlir").read_text().count('"tf.ReadVariableOp"') == 0
