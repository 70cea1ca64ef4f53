"""`tfsem mlir --timeout T`: the replay of an `unsound` verdict on TensorFlow
comes out of the mode's budget (tfsem/commands/mlir.py, docs/budgets.md).
No TensorFlow: the pipeline's child is replaced by one that gives the
output module at once (examples/mlir/cluster_store_load.broken-up.mlir, an
unsound rewrite of cluster_store_load.mlir), and the replay by one that
never looks at the clock, as TensorFlow's import and graph loading do not."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tfsem.cli import EXIT_FOUND, main

EX = Path(__file__).resolve().parent.parent / "examples" / "mlir"


@pytest.fixture
def fake_tensorflow(monkeypatch):
    from tfsem.backends import tensorflow as tfb
    from tfsem.graphdef import mlir_tf
    calls = []

    def run_pipeline(pipeline, *, mlir_text=None, timeout=300.0, **kw):
        return mlir_tf.PipelineRun("ok", input_text=mlir_text,
                                   output_text=(EX / "cluster_store_load.broken-up.mlir")
                                   .read_text(), seconds=0.01)

    def stuck(p, cx, *, observe="outputs+state", mode="tensorflow",
              label="the rewritten program, exported", deadline=None):
        calls.append(deadline)
        time.sleep(3.0)
        return tfb.Replay(True, "confirmed, too late", label)

    monkeypatch.setattr(mlir_tf, "run_pipeline", run_pipeline)
    monkeypatch.setattr(tfb, "replay_program", stuck)
    return calls


def test_a_replay_past_the_budget_is_left_behind_and_said(fake_tensorflow, capsys):
    argv = ["mlir", str(EX / "cluster_store_load.mlir"), "--pipeline", "p",
            "--semantics", "atomic"]
    main([*argv, "--timeout", "5", "--no-replay", "--json"])     # (the checker imported)
    capsys.readouterr()
    t = time.monotonic()
    rc = main([*argv, "--timeout", "0.6", "--json"])
    assert time.monotonic() - t < 0.6 + 0.4
    v = json.loads(capsys.readouterr().out)["verdicts"]["atomic"]
    assert rc == EXIT_FOUND and v["verdict"] == "unsound"         # the verdict stands
    assert "tensorflow" not in v["confirmed"]
    rep = v["tensorflow_replay"]
    assert rep["status"] == "not-replayed" and rep["budget"] is True and not rep["confirmed"]
    assert rep["reason"] == ("the time budget of 0.6 s ran out while TensorFlow was imported or "
                             "ran the graph")
    assert fake_tensorflow and fake_tensorflow[0] is not None     # given the mode's deadline
    assert v["text"].endswith("not replayed on TensorFlow within the time budget: the time "
                              "budget of 0.6 s ran out while TensorFlow was imported or ran the "
                              "graph (the verdict is the oracle's alone)")
