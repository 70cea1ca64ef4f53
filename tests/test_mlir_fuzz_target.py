"""`tfsem fuzz/verify --target mlir:PIPELINE | mlir-cluster:PIPELINE`:
TensorFlow's MLIR pass pipelines as campaign targets (campaigns/mlir_target.py).

Usage errors and the parts without TensorFlow run everywhere; the pipeline
runs need TensorFlow (imported once, by this process); the whole campaign,
with a worker and a sandbox importing TensorFlow each, is nightly.  This
module is also imported by campaign worker processes (as
`test_mlir_fuzz_target:NAME`, for its generator), so it imports nothing heavy
at its top.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tfsem.cli import main
from tfsem.oracle.jsonio import program_from_json

NIGHTLY = settings.get_current_profile_name() == "nightly"
HAS_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAS_TF, reason="needs the extra tfsem[tensorflow] "
                                                 "(tensorflow-cpu), not installed here")
DECOMPOSE = "mlir:func.func(tf-device-decompose-resource-ops)"

#: two unordered AssignAdd(x, 1), then a read after both
TWO_ASSIGN_ADDS = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "v", "op": "Var", "var": "x"},
              {"name": "one", "op": "Const", "value": 1},
              {"name": "a1", "op": "Assign", "fn": "Add", "inputs": ["v", "one"]},
              {"name": "a2", "op": "Assign", "fn": "Add", "inputs": ["v", "one"]},
              {"name": "r", "op": "Read", "inputs": ["v", "^a1", "^a2"]}],
    "outputs": {"out": "r"},
}

#: AssignAdd(x, 1) through one handle of x, then a read of x through another
TWO_HANDLES = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "h1", "op": "Var", "var": "x"},
              {"name": "h2", "op": "Var", "var": "x"},
              {"name": "one", "op": "Const", "value": 1},
              {"name": "a", "op": "Assign", "fn": "Add", "inputs": ["h1", "one"]},
              {"name": "r", "op": "Read", "inputs": ["h2", "^a"]}],
    "outputs": {"out": "r"},
}


def _sigma(x: int = 0):
    import numpy as np

    from tfsem.oracle.values import Tensor
    return {}, {"x": Tensor(np.array(x, dtype=np.int64))}


def two_assign_adds(max_nodes, observe):
    """Always TWO_ASSIGN_ADDS from x = 0 (a generator of the campaign interface)."""
    return st.just((program_from_json(TWO_ASSIGN_ADDS), *_sigma()))


# ---------------------------------------------------------------------------
# Without TensorFlow


def test_sinks_are_the_nodes_nothing_consumes():
    from tfsem.campaigns.mlir_target import sinks
    graph = {"node": [{"name": "p", "op": "Placeholder"}, {"name": "v", "op": "VarHandleOp"},
                      {"name": "w", "op": "AssignVariableOp", "input": ["v", "p"]},
                      {"name": "r", "op": "ReadVariableOp", "input": ["v", "^w"]},
                      {"name": "w2", "op": "AssignVariableOp", "input": ["v", "p"]},
                      {"name": "out", "op": "Identity", "input": ["r:0"]}]}
    assert sinks(graph, ["out"]) == ["w2"]
    assert sinks(graph, ["out:0", "w2"]) == []


def test_a_variable_whose_unused_handle_a_pass_deleted_stays_declared():
    """The standard pipeline deletes a VarHandleOp nothing uses: the program
    is the same (a handle has no effect), so the variable stays in the
    interface, with its type, and the check says sound (it said `invalid`,
    "variable 'x0' is missing from the rewrite", before)."""
    from tfsem.campaigns.mlir_target import keep_variables
    from tfsem.checking import check_case
    from tfsem.oracle.jsonio import Case, program_to_json
    before = program_from_json({
        "format": "tfsem.program/1", "variables": {"x0": {"dtype": "float32", "shape": []}},
        "nodes": [{"name": "h", "op": "Var", "var": "x0"},
                  {"name": "c", "op": "Const", "value": 0, "inputs": ["^h"]}],
        "outputs": {"t": "c"}})
    after = program_from_json({"format": "tfsem.program/1", "variables": [],
                               "nodes": [{"name": "c", "op": "Const", "value": 0}],
                               "outputs": {"t": "c"}})
    kept = keep_variables(before, after)
    assert kept.variables == before.variables
    assert keep_variables(before, before) is before
    v = check_case(Case(before, program_to_json(kept)), timeout=20, semantics="atomic",
                   observe="outputs+state")
    assert v.verdict == "sound", v.reason


def test_target_names_split_into_pipeline_and_cluster():
    from tfsem.campaigns.targets import TARGET_NAMES
    assert "mlir:PIPELINE" in TARGET_NAMES and "mlir-cluster:PIPELINE" in TARGET_NAMES
    from tfsem.campaigns.mlir_target import is_mlir_target, split_name
    assert split_name("mlir:a,func.func(b)") == ("a,func.func(b)", False)
    assert split_name("mlir-cluster:tf-resource-op-lifting") == ("tf-resource-op-lifting", True)
    assert is_mlir_target("mlir:x") and not is_mlir_target("grappler:x")


@pytest.mark.parametrize("name", ["mlir:", "mlir-cluster:  "])
def test_an_empty_pipeline_exits_2(name, tmp_path, capsys):
    status = main(["fuzz", "--target", name, "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2 and "no pipeline" in err and "Traceback" not in err
    assert not (tmp_path / "c" / "campaign.db").exists()


def test_without_tensorflow_the_target_names_the_extra(tmp_path, monkeypatch, capsys):
    import importlib.util as iu
    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real(name, *a))
    status = main(["fuzz", "--target", DECOMPOSE, "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2 and "pip install 'tfsem[tensorflow]'" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["lifting_two_handles.mlir", "lifting_write_back_race.mlir",
                                  "decompose_read_before_operand.pbtxt"])
def test_the_findings_examples_are_read_with_the_programs_of_the_tests(name):
    """examples/mlir/ keeps the three both-semantics findings as TensorFlow
    imported them (with their cluster): each reads as a program of one
    variable with the resource accesses of the 5-node program its test uses."""
    from pathlib import Path

    from tfsem.commands.mlir import load_program
    path = Path(__file__).resolve().parent.parent / "examples" / "mlir" / name
    args = type("Args", (), {"function": None, "graph_runs": "all", "fetch": [],
                             "target": ["s1", "s2"] if name.endswith(".pbtxt") else [],
                             "feed_node": [], "signature": None, "captures": None})()
    p = load_program(str(path), args)
    assert list(p.variables) == ["x"]
    ops = sorted(n.op for n in p.nodes if n.op in ("Read", "Write", "Assign"))
    expect = {"lifting_two_handles.mlir": ["Assign", "Read"],
              "lifting_write_back_race.mlir": ["Assign", "Assign", "Read", "Read"],
              "decompose_read_before_operand.pbtxt": ["Assign", "Assign", "Read", "Read"]}
    assert ops == expect[name]


def test_the_unknown_target_message_names_the_mlir_targets(tmp_path, capsys):
    assert main(["fuzz", "--target", "tpu", "--budget", "1s", "--out", str(tmp_path / "c")]) == 2
    assert "mlir:PIPELINE" in capsys.readouterr().err


def test_both_modes_names_the_kind_of_a_finding():
    """Decomposing one AssignAdd beside a concurrent one (the rewritten
    program written by hand: read, add, write) is unsound atomic and sound
    decomposed: `executor-only`."""
    from tfsem.campaigns.mlir_target import both_modes
    rewritten = dict(TWO_ASSIGN_ADDS, nodes=[
        *TWO_ASSIGN_ADDS["nodes"][:2],
        {"name": "a1r", "op": "Read", "inputs": ["v"]},
        {"name": "a1s", "op": "Add", "inputs": ["a1r", "one"]},
        {"name": "a1", "op": "Write", "inputs": ["v", "a1s"]},
        TWO_ASSIGN_ADDS["nodes"][3], TWO_ASSIGN_ADDS["nodes"][4]])
    out = both_modes(TWO_ASSIGN_ADDS, rewritten, "outputs+state")
    assert out == {"verdicts": {"atomic": "unsound", "decomposed": "sound"},
                   "finding_kind": "executor-only"}
    same = both_modes(TWO_ASSIGN_ADDS, TWO_ASSIGN_ADDS, "outputs+state")
    assert same["finding_kind"] == "undetermined"


# ---------------------------------------------------------------------------
# With TensorFlow, in this process


def _loop(spec, cell):
    from test_campaigns_loop import InlineRunner

    from tfsem.campaigns.loop import FuzzLoop, LoopConfig
    from tfsem.campaigns.targets import resolve_pass
    target = resolve_pass(spec)
    return FuzzLoop(LoopConfig(spec, *cell, seed=1), target=target,
                    runner=InlineRunner(target.fn.function))


@needs_tf
def test_decomposition_beside_a_concurrent_assign_add_is_an_executor_only_finding():
    """The campaign's judgement of one program: the pipeline's output read
    back and checked against the module before it.  Unsound in the atomic
    cell (a lost update), nothing in the decomposed one; both verdicts
    together name it executor-only."""
    from tfsem.campaigns.findings import UNSOUND
    from tfsem.campaigns.mlir_target import both_modes
    program = program_from_json(TWO_ASSIGN_ADDS)
    atomic = _loop(DECOMPOSE, ("atomic", "outputs+state"))
    rec = atomic.evaluate(program, *_sigma())
    assert rec is not None and rec.kind == UNSOUND, rec
    assert rec.differs in ({"output": "out"}, {"variable": "x"})   # the lost update
    assert both_modes(rec.original, rec.rewritten, "outputs+state")["finding_kind"] == \
        "executor-only"
    decomposed = _loop(DECOMPOSE, ("decomposed", "outputs+state"))
    assert decomposed.evaluate(program, *_sigma()) is None
    assert decomposed.stats.sound + decomposed.stats.no_counterexample == 1


#: the write-back that lifting sinks after the cluster is not ordered before
#: an AssignSub outside that consumes a read the cluster made after its write
WRITE_BACK_RACE = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "h", "op": "Var", "var": "x"},
              {"name": "r0", "op": "Read", "inputs": ["h"]},
              {"name": "a", "op": "Assign", "fn": "Add", "inputs": ["h", "r0"]},
              {"name": "r", "op": "Read", "inputs": ["h", "^a"]},
              {"name": "s", "op": "Assign", "fn": "Sub", "inputs": ["h", "r"]}],
    "outputs": {},
}

#: each AssignSub's operand is a read of x in another island: the decomposed
#: read of x does not wait for it
READ_BEFORE_OPERAND = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "h", "op": "Var", "var": "x"},
              {"name": "r1", "op": "Read", "inputs": ["h"]},
              {"name": "s1", "op": "Assign", "fn": "Sub", "inputs": ["h", "r1"]},
              {"name": "r2", "op": "Read", "inputs": ["h"]},
              {"name": "s2", "op": "Assign", "fn": "Sub", "inputs": ["h", "r2"]}],
    "outputs": {},
}


@needs_tf
@pytest.mark.parametrize("program,pipeline,span,observe", [
    # A: a read through a second VarHandleOp of x is hoisted above the
    # cluster's AssignAdd through the first (two resources to the pass)
    (TWO_HANDLES, "tf-resource-op-lifting", (0, 1), "outputs"),
    # B: the write-back races with a consumer of the cluster's result
    (WRITE_BACK_RACE, "tf-device-decompose-resource-ops-in-cluster,tf-resource-op-lifting",
     (0, 2), "outputs+state"),
    # C: decomposition reads the variable before the update's operand exists
    (READ_BEFORE_OPERAND, "func.func(tf-device-decompose-resource-ops)", None,
     "outputs+state"),
], ids=["A-two-handles", "B-write-back-race", "C-read-before-operand"])
def test_the_campaigns_findings_are_unsound_in_both_modes(program, pipeline, span, observe):
    """The three kinds of both-semantics finding of the campaigns
    (docs/mlir.md, "A campaign over ten pipelines"), each as a 5-node
    program: exported, imported by TensorFlow, a cluster over the given span
    of resource accesses, the pipeline, both modules read back and checked
    in both modes."""
    from tensorflow.python import pywrap_mlir

    from tfsem.campaigns.mlir_target import both_modes, read, sinks
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.mlir_cluster import wrap_cluster
    from tfsem.graphdef.mlir_tf import import_graph_def
    from tfsem.graphdef.proto import encode
    from tfsem.oracle.jsonio import program_to_json
    p = program_from_json(program)
    graph = export_graph(p)
    outs = list(p.outputs)
    text = import_graph_def(encode("GraphDef", graph), outs, sinks(graph, outs))
    if span is not None:
        text = wrap_cluster(text, span)
    out = pywrap_mlir.experimental_run_pass_pipeline(text, pipeline, False)
    before, after = read(text, "input.mlir"), read(out, "output.mlir")
    verdict = both_modes(program_to_json(before), program_to_json(after), observe)
    assert verdict == {"verdicts": {"atomic": "unsound", "decomposed": "unsound"},
                       "finding_kind": "both-semantics"}


@needs_tf
def test_lifting_alone_leaves_an_undecomposed_assign_add_in_the_cluster():
    """Without decomposition first, lifting keeps the AssignAdd in the
    cluster (it lifts only reads and writes): B's program is then sound."""
    from tensorflow.python import pywrap_mlir

    from tfsem.campaigns.mlir_target import both_modes, read, sinks
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.mlir_cluster import wrap_cluster
    from tfsem.graphdef.mlir_tf import import_graph_def
    from tfsem.graphdef.proto import encode
    from tfsem.oracle.jsonio import program_to_json
    graph = export_graph(program_from_json(WRITE_BACK_RACE))
    text = wrap_cluster(import_graph_def(encode("GraphDef", graph), [], sinks(graph, [])),
                        (0, 2))
    out = pywrap_mlir.experimental_run_pass_pipeline(text, "tf-resource-op-lifting", False)
    assert "tf.AssignAddVariableOp" in out
    verdict = both_modes(program_to_json(read(text, "i")), program_to_json(read(out, "o")),
                         "outputs+state")
    assert verdict["verdicts"] == {"atomic": "sound", "decomposed": "sound"}


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only: one more TensorFlow process")
def test_a_pipeline_tensorflow_refuses_is_refused_before_the_campaign(tmp_path, capsys):
    """Every --target mlir: pipeline is tried first, all in one TensorFlow
    process; the one TensorFlow refuses is named, with its message."""
    status = main(["fuzz", "--target", DECOMPOSE, "--target", "mlir:tf-no-such-pass",
                   "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2 and "does not refer to a registered pass" in err
    assert "'tf-no-such-pass'" in err
    assert "Traceback" not in err and not (tmp_path / "c" / "campaign.db").exists()


# ---------------------------------------------------------------------------
# A whole campaign: stored like any other


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly): "
                                        "a campaign with TensorFlow in a worker and a sandbox, "
                                        "~40-120 s")
def test_fuzz_target_mlir_finds_the_lost_update_and_stores_both_verdicts(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--target", DECOMPOSE, "--budget", "40s", "--out", str(out),
                   "--semantics", "atomic", "--observe", "outputs+state",
                   "--generator", "test_mlir_fuzz_target:two_assign_adds",
                   "--pass-timeout", "60", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1, summary
    (row,) = summary["passes"]
    assert row["pass"] == DECOMPOSE and row["findings"]["unsound"] == 1
    with sqlite3.connect(out / "campaign.db") as db:
        (detail, message), = db.execute("select detail, message from findings").fetchall()
    mlir = json.loads(detail)["mlir"]
    assert mlir["finding_kind"] == "executor-only"
    assert mlir["verdicts"] == {"atomic": "unsound", "decomposed": "sound"}
    assert "tf.AssignAddVariableOp" in mlir["input_mlir"]
    assert "tf.AssignAddVariableOp" not in mlir["output_mlir"]
    assert "executor-only" in message
