"""Import of TensorFlow 1 control flow from GraphDefs written by TensorFlow
2.21 (tf.compat.v1 with control flow v2 disabled; the graphs are in
tests/cases/controlflow): the primitives become the program's Switch, Merge,
Enter, Exit, NextIteration and LoopCond, resource handles pass through them,
and `tfsem outcomes` explores them (no TensorFlow needed; the comparison with
TensorFlow's executor is tests/test_controlflow_tensorflow.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfsem.graphdef import import_path
from tfsem.graphdef.importer import GraphImportError, import_graph

CASES = Path(__file__).parent / "cases" / "controlflow"


def run(*args):
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True)


def test_while_loop_imports_with_its_frame_and_back_edge():
    p = import_path(CASES / "tf1_while_loop.pbtxt", fetch=["out"]).program
    ops = {n.op for n in p.nodes}
    assert {"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond", "Less"} <= ops
    merge = p.node["loop/Merge"]
    assert [str(i) for i in merge.data_inputs] == ["loop/Enter", "loop/NextIteration"]
    assert p.frames["loop/AssignAddVariableOp"] == ("loop/while_context",)
    assert p.node["loop/AssignAddVariableOp/Enter"].attrs["is_constant"] is True


def test_outcomes_of_the_imported_loop_and_the_bound():
    loop = str(CASES / "tf1_while_loop.pbtxt")
    ok = run("outcomes", loop, "--fetch", "out", "--feed", "n=4", "--init", "x=1", "--json")
    assert ok.returncode == 0, ok.stderr
    [o] = json.loads(ok.stdout)["outcomes"]
    assert o["outputs"]["out"] == 4 and o["state"]["x"] == 13
    unknown = run("outcomes", loop, "--fetch", "out", "--feed", "n=100", "--init", "x=1")
    assert unknown.returncode == 3
    assert "loop/while_context" in unknown.stdout and "bound of 16" in unknown.stdout


@pytest.mark.parametrize("pred,out,x", [("true", 11, 11), ("false", 2, 1)])
def test_outcomes_of_the_imported_cond(pred, out, x):
    got = run("outcomes", str(CASES / "tf1_cond.pbtxt"), "--fetch", "out", "--feed",
              f'p={{"dtype": "bool", "value": {pred}}}', "--init", "x=1", "--json")
    assert got.returncode == 0, got.stderr
    [o] = json.loads(got.stdout)["outcomes"]
    assert o["outputs"]["out"] == out and o["state"]["x"] == x


def test_check_on_an_imported_loop_is_never_a_wrong_sound(tmp_path):
    loop = CASES / "tf1_while_loop.pbtxt"
    same = run("check", str(loop), str(loop), "--fetch", "out")
    assert same.returncode == 0 and same.stdout.startswith("sound"), same.stderr
    from tfsem.oracle.jsonio import program_to_json
    raw = program_to_json(import_path(loop, fetch=["out"]).program)
    (tmp_path / "original.json").write_text(json.dumps(raw))
    for n in raw["nodes"]:
        if n["name"] == "loop/Const":
            n["value"] = 4          # the body adds 4: unsound
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    broken = run("check", str(tmp_path / "original.json"), str(tmp_path / "broken.json"))
    # refuted by the reference control-flow engine (checking/control_flow.py)
    assert broken.returncode == 1 and broken.stdout.startswith("unsound"), broken.stdout
    assert "@loop/while_context:" in broken.stdout


def test_ref_switch_is_refused_by_name():
    g = {"node": [{"name": "c", "op": "Const", "attr": {
        "dtype": {"type": "DT_BOOL"},
        "value": {"tensor": {"dtype": "DT_BOOL", "tensor_shape": {}, "bool_val": [True]}}}},
        {"name": "s", "op": "RefSwitch", "input": ["c", "c"]}]}
    with pytest.raises(GraphImportError, match="RefSwitch"):
        import_graph(g, ["s"])
