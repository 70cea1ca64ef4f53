"""campaigns/mlir_triage.py: the kinds of the MLIR campaigns' unsound findings
(docs/mlir-campaigns.md), each decided by a structural rule on the modules
the store keeps.  Checked on a store built here from one minimized finding of
each kind (tests/cases/mlir/triage_findings.json, from the 30-minute
campaigns) and on the hand-written examples of examples/mlir/, each with the
output TensorFlow gave.  No TensorFlow is imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfsem.campaigns.findings import FindingRecord
from tfsem.campaigns.mlir_triage import classify, main, summary, triage_store
from tfsem.campaigns.store import Store

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "mlir"
FINDINGS = json.loads((ROOT / "tests" / "cases" / "mlir" / "triage_findings.json").read_text())["findings"]
LIFT = "tf-resource-op-lifting"
BOTH = {"atomic": "unsound", "decomposed": "unsound"}


def _record(f: dict) -> FindingRecord:
    return FindingRecord(
        f["pass"], "unsound", f["semantics"], f["observe"], f["original"], f["rewritten"],
        verdict={"verdict": "unsound", "differs": {"output": "out0"},
                 "counterexample": {"init": f["counterexample_init"], "feeds": {}}},
        detail={"mlir": {"input_mlir": f["input_mlir"], "output_mlir": f["output_mlir"],
                         "verdicts": f["verdicts"], "finding_kind": f["finding_kind"]}},
        claim="sound", pass_spec=f["pass"])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("camp")
    with Store(d) as s:
        cid = s.start_campaign(60.0, {}, "test")
        for f in FINDINGS:
            s.record_finding(cid, _record(f))
        s.add_stats(cid, "mlir-cluster:tf-resource-op-lifting", "atomic", "outputs+state",
                    {"programs": 40, "seconds": 20.0, "sound": 25, "no_counterexample": 3,
                     "identical": 8}, "sound")
        s.finish_campaign(cid)
    return d


def test_each_kind_of_the_campaigns_from_a_store(store):
    rows = triage_store(store)
    assert [r["kind"] for r in rows] == [f["expect"] for f in FINDINGS]
    assert {f["expect"] for f in FINDINGS} == {"A", "B", "C", "D", "F", "P", "U"}
    s = summary(rows)
    assert s["mlir:func.func(tf-device-decompose-resource-ops)"]["kinds"] == {"C": 1, "D": 1}
    assert s["mlir-cluster:tf-resource-op-lifting"]["kinds"] == {"A": 1, "B": 1, "F": 1, "P": 1, "U": 1}


def test_the_command_reads_stores_and_refuses_a_directory_without_one(store, tmp_path, capsys):
    assert main([str(store)]) == 0
    out = capsys.readouterr().out
    assert "kinds: A 1, B 1, F 1, P 1, U 1" in out and "kinds: C 1, D 1" in out
    assert main([str(store), "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    # one row per pass with statistics: totals, then the kinds with their cells
    assert len(table) == 3 and table[2].startswith("| `mlir-cluster:tf-resource-op-lifting` | 20 | 40 |")
    assert "| 25 | 3 | 0 | 8 |" in table[2]
    assert "U 1 (decomposed 1; both-semantics); F 1 (atomic 1; both-semantics)" in table[2] and "A 1 (" in table[2]
    assert main([str(tmp_path / "nothing")]) == 2
    assert "no campaign.db" in capsys.readouterr().err


def _finding(kind: str) -> dict:
    return next(f for f in FINDINGS if f["expect"] == kind)


def test_each_rule_rests_on_its_feature():
    """Take the feature away and the rule no longer matches."""
    a = _finding("A")
    # the cluster's read goes through the second handle %outputs_1: make it the first
    one = a["input_mlir"].replace('"tf.ReadVariableOp"(%outputs_1)', '"tf.ReadVariableOp"(%outputs)')
    assert classify(LIFT, a["input_mlir"], a["output_mlir"], BOTH)[0] == "A"
    assert "A" not in classify(LIFT, one, a["output_mlir"], BOTH)[1]
    # A needs lifting in the pipeline
    assert "A" not in classify("func.func(tf-device-decompose-resource-ops)", a["input_mlir"],
                               a["output_mlir"], BOTH)[1]
    d = _finding("D")
    pipe = "func.func(tf-device-decompose-resource-ops)"
    assert classify(pipe, d["input_mlir"], d["output_mlir"], d["verdicts"])[0] == "D"
    # unsound in both modes, with constant-free operands fed from arguments: no kind
    assert classify(pipe, d["input_mlir"], d["output_mlir"], BOTH)[0] == "NEW"
    c = _finding("C")
    assert classify(pipe, c["input_mlir"], c["output_mlir"], c["verdicts"])[0] == "C"
    # the operand a constant: ready when the island starts, so not C
    const = c["input_mlir"].replace(
        '"tf.AssignSubVariableOp"(%outputs, %outputs_0)', '"tf.AssignSubVariableOp"(%outputs, %arg0)')
    assert const != c["input_mlir"]
    assert "C" not in classify(pipe, const, c["output_mlir"], c["verdicts"])[1]
    b = _finding("B")
    assert classify(LIFT, b["input_mlir"], b["output_mlir"], BOTH)[0] == "B"
    pt = _finding("P")    # the cluster kept only `Identity(r)`, which the pass removed
    assert classify(LIFT, pt["input_mlir"], pt["output_mlir"], BOTH)[0] == "P"
    kept = pt["output_mlir"].replace("tf_device.return %outputs_0", "%9 = \"tf.Identity\"(%outputs_0) : (tensor<i64>) -> tensor<i64>\n          tf_device.return %9")
    assert kept != pt["output_mlir"]
    assert classify(LIFT, pt["input_mlir"], kept, BOTH)[0] == "NEW"
    u = _finding("U")
    assert classify(LIFT, u["input_mlir"], u["output_mlir"], BOTH, ["x0"])[0] == "U"
    assert classify(LIFT, u["input_mlir"], u["output_mlir"], BOTH)[0] == "NEW"


def test_the_examples_with_tensorflows_outputs():
    def kind(pipeline, before, after, verdicts=BOTH):
        return classify(pipeline, (EX / before).read_text(), (EX / after).read_text(), verdicts)[0]
    # the new kind: x := 5; x -= 2; read x gives 5 after lifting
    assert kind(LIFT, "lifting_forwards_past_update.mlir", "lifting_forwards_past_update.lifted.mlir") == "F"
    # store buffering inside the cluster (docs/mlir.md's hand-written example)
    assert kind(LIFT, "cluster_store_load.mlir", "cluster_store_load.lifted.mlir") == "S"
    # two concurrent AssignAdd(x, 1) decomposed: executor-only is D ...
    dec = "func.func(tf-device-decompose-resource-ops)"
    assert kind(dec, "concurrent_assign_add.mlir", "concurrent_assign_add.decomposed-by-tf.mlir",
                {"atomic": "unsound", "decomposed": "sound"}) == "D"
    # ... but the operands are constants, so unsound in both modes would fit no kind
    assert kind(dec, "concurrent_assign_add.mlir", "concurrent_assign_add.decomposed-by-tf.mlir") == "NEW"
