"""Grappler's control-flow rewrites checked by tfsem (docs/grappler-control-flow.md):
the loop optimizer's dead-branch removal of a Switch of a variable's handle,
the import of what it leaves (an Identity of DT_RESOURCE), and a corpus graph
with a loop through the loop optimizer and the default pipeline.

The import tests need no TensorFlow; the rest are skipped, saying so, where
TensorFlow cannot be imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfsem.graphdef.importer import import_graph
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import ProgramError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"


def _var(name):
    return {"name": name, "op": "VarHandleOp",
            "attr": {"dtype": {"type": "DT_INT64"}, "shape": {"shape": {}},
                     "shared_name": {"s": "x0"}}}


def _graph(identity_inputs):
    """What the loop optimizer leaves of `Read(Switch(handle, false):0)`."""
    return {"node": [
        {"name": "pred", "op": "Const",
         "attr": {"dtype": {"type": "DT_BOOL"},
                  "value": {"tensor": {"dtype": "DT_BOOL", "tensor_shape": {}, "bool_val": [False]}}}},
        {"name": "feed", "op": "Placeholder", "attr": {"dtype": {"type": "DT_INT64"},
                                                       "shape": {"shape": {}}}},
        _var("v"),
        {"name": "alias", "op": "Identity", "input": identity_inputs,
         "attr": {"T": {"type": "DT_RESOURCE"}}},
        {"name": "read", "op": "ReadVariableOp", "input": ["alias"],
         "attr": {"dtype": {"type": "DT_INT64"}}},
    ]}


def test_identity_of_a_handle_after_a_constant_imports_as_that_handle():
    prog = import_graph(_graph(["v", "^pred"]), ["read"], []).program
    assert "alias" not in {n.name for n in prog.nodes}    # no node of its own
    read = next(n for n in prog.nodes if n.op == "Read")
    var = next(n for n in prog.nodes if n.op == "Var")
    assert read.inputs[0].node == var.name       # the alias reads the variable itself
    assert list(prog.variables) == ["x0"]


def test_identity_of_a_handle_waiting_for_a_node_is_a_switch_on_a_live_true():
    """Waiting for a node that may be dead (here a feed): the handle through
    Switch(handle, true):1, the true waiting for that node."""
    prog = import_graph(_graph(["v", "^feed"]), ["read"], []).program
    nodes = {n.name: n for n in prog.nodes}
    sw = nodes["alias"]
    assert sw.op == "Switch" and nodes[sw.inputs[1].node].op == "Const"
    live = nodes[sw.inputs[1].node]
    assert live.attrs["value"].array.dtype == bool and bool(live.attrs["value"].array) is True
    assert [c.node for c in live.inputs] == ["feed"]
    read = next(n for n in prog.nodes if n.op == "Read")
    assert (read.inputs[0].node, read.inputs[0].port) == ("alias", 1)


def test_a_resource_identity_of_no_handle_is_still_refused():
    with pytest.raises(ProgramError, match="DT_RESOURCE"):
        import_graph(_graph(["feed"]), ["read"], [])


# --- with TensorFlow -----------------------------------------------------------


@pytest.fixture(scope="module")
def tf_targets():
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")
    from tfsem.campaigns import grappler_control_flow as cf
    from tfsem.campaigns import tensorflow_target as tt
    return cf, tt


SWITCH_READ = {"format": "tfsem.program/1", "variables": ["x0"], "outputs": {"o": "f0"}, "nodes": [
    {"name": "pred", "op": "Const", "value": {"dtype": "bool", "value": False}},
    {"name": "vx0", "op": "Var", "var": "x0"},
    {"name": "sx0", "op": "Switch", "inputs": ["vx0", "pred"]},
    {"name": "f0", "op": "Read", "inputs": ["sx0:0"]}]}


def test_loop_optimizer_removes_a_switch_on_a_constant_and_it_is_proved_sound(tf_targets):
    """The campaign's first finding (a crash: the result did not import),
    now checked: Grappler turns the Switch into Identity(handle, ^pred)."""
    from tfsem.checking import check_rewrite
    cf, tt = tf_targets
    prog = program_from_json(SWITCH_READ)
    rewritten, given, out = cf.optimize_with_graphs(prog, "loop")
    after = {n.name: n for n in out.node}
    assert after["sx0"].op == "Identity" and list(after["sx0"].input) == ["vx0", "^pred"]
    assert "Switch" not in {n["op"] for n in program_to_json(rewritten)["nodes"]}
    v = check_rewrite(tt.as_tensorflow_sees_it(prog), rewritten, "atomic", "outputs+state",
                      timeout=10)
    assert v.verdict == "sound", v.reason
    # the plain Grappler target preserves only sinks and stateful nodes
    # (campaigns/tensorflow_target.py _preserved), so it removes the Switch
    # too, and its result is proved sound as well
    plain = tt.optimize(prog, "loop")
    assert "Switch" not in {n["op"] for n in program_to_json(plain)["nodes"]}
    assert check_rewrite(tt.as_tensorflow_sees_it(prog), plain, "atomic", "outputs+state",
                         timeout=10).verdict == "sound"


def test_while_corpus_graph_through_grappler_is_never_unsound(tf_targets):
    """tf_while_assign (a While whose body assigns, trip count a feed) in v1
    primitives: the loop optimizer leaves it (sound: the same program), the
    default pipeline rewrites it and the check finds no counterexample (a
    loop is never proved)."""
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import read_captures
    from tfsem.graphdef import grappler as g
    from tfsem.graphdef.proto import decode
    cf, tt = tf_targets
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]
                 if e["name"] == "tf_while_assign")
    gd = decode("tensorflow.GraphDef", g.as_graph_def(CORPUS / entry["file"]).SerializeToString())
    prog = import_graph(gd, entry["fetches"], entry["targets"],
                        captures=read_captures(CORPUS / entry["captures"])).program
    original = tt.as_tensorflow_sees_it(prog)
    assert original is not None and original.has_control_flow
    loop, _, _ = cf.optimize_with_graphs(prog, "loop")
    assert check_rewrite(original, loop, "atomic", "outputs+state", timeout=10).verdict == "sound"
    default, before, after = cf.optimize_with_graphs(prog, "default")
    assert len(after.node) < len(decode("tensorflow.GraphDef", before)["node"])
    v = check_rewrite(original, default, "atomic", "outputs+state", timeout=10)
    assert v.verdict in ("no-counterexample", "unknown"), (v.verdict, v.reason)


def _make_cases():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "tfsem_tf_make_cases", ROOT / "tests" / "cases" / "tensorflow" / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grappler_output_with_a_read_moved_out_of_its_loop_is_unsound_on_tensorflow(
        tf_targets, tmp_path, capsys):
    """Issue 24's hand-broken Grappler output: tf1_while_read_assign (a
    While whose body reads x and writes x + 1) through the default pipeline
    (the While lowered to Enter/Merge/Switch/Exit), checked as Grappler left
    it (never unsound), then with the body's ReadVariableOp moved out of the
    loop: `tfsem check` says unsound, and TensorFlow's executor, running the
    broken graph from the counterexample's σ, gives the counterexample's
    outcome, while the original graph gives another."""
    from tfsem.backends.tensorflow import run_graph
    from tfsem.cli import main
    from tfsem.graphdef import grappler as g
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import Tensor
    import numpy as np
    original = CORPUS / "tf1_while_read_assign.pbtxt"
    out = g.run_grappler(g.as_graph_def(original), ["sum"], g.DEFAULT_PIPELINE).graph_def
    assert {"Enter", "Exit", "NextIteration"} <= {n.op for n in out.node}   # lowered
    (grappled := tmp_path / "grappled.pbtxt").write_text(str(out))
    read = [n.name for n in out.node if n.op == "ReadVariableOp"]
    assert len(read) == 1
    enter = _make_cases().hoist_loop_read(out, read[0])
    assert read[0] not in {n.name for n in out.node}
    (broken := tmp_path / "broken.pbtxt").write_text(str(out))

    rc = main(["check", str(original), str(grappled), "--fetch", "sum", "--timeout", "20",
               "--json", "--no-tensorflow"])
    v = json.loads(capsys.readouterr().out)
    assert v["verdict"] in ("no-counterexample", "unknown"), v["reason"]   # a loop: never proved
    assert rc in (0, 3)

    # (the budget covers the replay on TensorFlow: docs/budgets.md)
    rc = main(["check", str(original), str(broken), "--fetch", "sum", "--timeout", "120",
               "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound", v["reason"]
    assert "tensorflow" in v["confirmed"], v.get("tensorflow_replay")
    replay = v["tensorflow_replay"]
    assert replay["confirmed"] and f"{read[0]}/hoisted" in replay["forced_schedule"]
    assert enter in replay["forced_schedule"]
    cx = v["counterexample"]
    n, x = cx["feeds"]["n"], cx["init"]["x"]
    assert n >= 2                      # one trip reads the same value either way
    # the broken loop read x once: every trip added x0 and wrote x0 + 1
    assert cx["outcome"] == {"outputs": {"sum": n * x}, "state": {"x": x + 1}}
    # and TensorFlow runs the original graph, unforced, to the right sum
    got = run_graph(original, {"sum": "sum:0"}, [], {"n": np.int64(n)}, {"x": np.int64(x)}, 3)
    want = make_outcome({"sum": Tensor(np.int64(n * x + n * (n - 1) // 2))},
                        {"x": Tensor(np.int64(x + n))}, "outputs+state")
    assert list(got.counts) == [want]


def test_grappler_function_optimizer_lowers_the_raised_if_and_it_is_sound(tf_targets):
    """The functional target (campaigns/grappler_functional.py): Grappler's
    function optimizer lowers the If made of a generated conditional, and
    the result is proved sound against tfsem's reading of the If."""
    from tfsem.checking import check_rewrite
    from tfsem.campaigns import grappler_functional as gf
    from tfsem.oracle.program import SWITCH
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "tfsem_test_functional", ROOT / "tests" / "test_campaigns_grappler_functional.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    p = program_from_json(module.COND)
    got, before, after = gf.optimize_with_graphs(p, "function")
    assert "If" not in {n.op for n in after.node}
    assert {"Switch", "Merge"} <= {n.op for n in after.node}
    assert SWITCH in {n.op for n in got.nodes}
    judged = gf.function.prepare(p)
    v = check_rewrite(judged, got, "atomic", "outputs+state", timeout=10)
    assert v.verdict == "sound", v.reason
    # the check has teeth: Grappler's output with its branches swapped (every
    # Switch on p0 switched on !p0 instead) is refuted
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    swapped = [n for n in after.node if n.op == "Switch" and n.input[1] == "p0"]
    assert swapped
    for n in swapped:
        n.input[1] = "notp0"
    notp = after.node.add()
    notp.name, notp.op = "notp0", "LogicalNot"
    notp.input.append("p0")
    data, fetches, targets = gf.raised(p)
    names = {n.name for n in after.node}
    broken = import_graph(decode("tensorflow.GraphDef", after.SerializeToString()), fetches,
                          [t for t in targets if t in names]).program
    v = check_rewrite(judged, broken, "atomic", "outputs+state", timeout=10)
    assert v.verdict == "unsound", v.reason
