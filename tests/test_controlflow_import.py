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

from test_campaigns_fuzz import tfsem_here
from tfsem.graphdef import import_path
from tfsem.graphdef.importer import GraphImportError, import_graph

CASES = Path(__file__).parent / "cases" / "controlflow"


def run_here(capsys, *args):
    """`tfsem ARGS` in this process (no interpreter start): (exit status, stdout)."""
    from tfsem.cli import main
    rc = main(list(args))
    return rc, capsys.readouterr().out


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
def test_outcomes_of_the_imported_cond(pred, out, x, capsys):
    got = tfsem_here(capsys, "outcomes", str(CASES / "tf1_cond.pbtxt"), "--fetch", "out", "--feed",
                     f'p={{"dtype": "bool", "value": {pred}}}', "--init", "x=1", "--json")
    assert got.returncode == 0, got.stderr
    [o] = json.loads(got.stdout)["outcomes"]
    assert o["outputs"]["out"] == out and o["state"]["x"] == x


def test_check_on_an_imported_loop_is_never_a_wrong_sound(tmp_path, capsys):
    # (by tfsem.cli.main in this process; the test above runs `tfsem outcomes`
    # on an imported loop as a process)
    loop = CASES / "tf1_while_loop.pbtxt"
    same = tfsem_here(capsys, "check", str(loop), str(loop), "--fetch", "out")
    assert same.returncode == 0 and same.stdout.startswith("sound"), same.stderr
    from tfsem.oracle.jsonio import program_to_json
    raw = program_to_json(import_path(loop, fetch=["out"]).program)
    (tmp_path / "original.json").write_text(json.dumps(raw))
    for n in raw["nodes"]:
        if n["name"] == "loop/Const":
            n["value"] = 4          # the body adds 4: unsound
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    # (--no-tensorflow: the replay of the counterexample on TensorFlow, which
    # starts TensorFlow and took ~9 s of this test's ~13, is held to the
    # oracle by test_controlflow_export::
    # test_a_counterexample_ordered_around_a_loop_is_replayed_on_tensorflow)
    broken = tfsem_here(capsys, "check", str(tmp_path / "original.json"), str(tmp_path / "broken.json"),
                        "--no-tensorflow")
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


# tf2_while_case.pbtxt: TensorFlow 2.21's functional While (named "loop",
# body: x.assign_add(3)) and a Case (named "case") of two branches, each
# x.assign(x * 10 + v), unordered with the loop (graph mode, no automatic
# control dependencies).  TensorFlow's executor gave out=31, x=20 for
# n=3, k=0 and out=22, x=18 for n=2, k=5 (index out of range: the last
# branch) from x=1 (tests/test_controlflow_tensorflow.py compares such
# graphs with TensorFlow's executor directly).
TF2 = str(CASES / "tf2_while_case.pbtxt")


def test_functional_while_and_case_import_as_the_primitives():
    p = import_path(CASES / "tf2_while_case.pbtxt", fetch=["out"]).program
    ops = {n.op for n in p.nodes}
    assert {"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"} <= ops
    assert p.node["loop/enter_4"].attrs["is_constant"] is True   # the resource loop variable
    assert p.frames["loop/body/AssignAddVariableOp"] == ("loop",)
    assert p.frames["case/indexed_case/branch0/AssignVariableOp"] == ()   # a Case is no loop


NIGHTLY = __import__("os").environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"


@pytest.mark.parametrize("n,k,want", [(2, 5, (22, 18))] + ([(3, 0, (31, 20))] if NIGHTLY else []))
def test_outcomes_of_the_functional_loop_and_case_include_tensorflows(n, k, want, capsys):
    rc, out = run_here(capsys, "outcomes", TF2, "--fetch", "out", "--feed", f"n={n}",
                       "--feed", f"k={k}", "--init", "x=1", "--json")
    assert rc == 0, out
    pairs = {(o["outputs"]["out"], o["state"]["x"]) for o in json.loads(out)["outcomes"]}
    assert want in pairs
    # the branch's read and assignment race with the loop's n assign_adds:
    # the branch runs before, between or after them, or loses some of them
    v = 1 if k == 0 else 2
    assert {x for _, x in pairs} == {(1 + 3 * i) * 10 + v + 3 * j
                                     for i in range(n + 1) for j in range(n - i + 1)}


def test_a_functional_loop_beyond_the_bound_is_unknown_naming_it(capsys):
    rc, out = run_here(capsys, "outcomes", TF2, "--fetch", "out", "--feed", "n=4", "--feed",
                       "k=0", "--init", "x=1", "--max-iterations", "3")
    assert rc == 3 and out.startswith("unknown")
    assert "loop 'loop'" in out and "bound of 3" in out


LOWER = 'attr { key: "_lower_using_switch_merge" value { b: true } } '


@pytest.mark.parametrize("node,words", [
    ('op: "While" input: "c" ' + LOWER, "types in its attribute T"),
    ('op: "While" input: "c" attr { key: "T" value { list { type: DT_INT64 } } } ' + LOWER,
     "no function attribute 'cond'"),
    ('op: "Case" input: "c" ' + LOWER, "no branch functions"),
    ('op: "StatelessWhile" input: "c" attr { key: "T" value { list { type: DT_INT64 } } } '
     'attr { key: "cond" value { func { name: "nowhere" } } } '
     'attr { key: "body" value { func { name: "nowhere" } } } ' + LOWER,
     "not in the graph's function library"),
    # without the attribute TensorFlow runs the op as a kernel: not modelled
    ('op: "While" input: "c" attr { key: "T" value { list { type: DT_INT64 } } }',
     "only when its attribute _lower_using_switch_merge is true"),
    ('op: "If" input: "c" input: "c" attr { key: "_lower_using_switch_merge" value { b: false } }',
     "would run as a kernel calling its functions"),
])
def test_a_malformed_functional_op_is_refused_naming_it(node, words):
    from tfsem.graphdef.proto import parse_text
    g = parse_text("GraphDef", 'node { name: "c" op: "Const" attr { key: "dtype" value { type: '
                   'DT_INT64 } } attr { key: "value" value { tensor { dtype: DT_INT64 '
                   'tensor_shape { } int64_val: 1 } } } } node { name: "bad" ' + node + " }")
    with pytest.raises(GraphImportError) as exc:
        import_graph(g, ["bad"])
    (v,) = exc.value.violations
    assert "'bad" in v.where and words in v.message, v


def test_default_outputs_of_a_functional_loop_are_tensorflows_unconsumed_nodes():
    """Without --fetch a graph's outputs are the nodes nothing consumes: the
    lowered While and Case (whose consumers now read their Exits and
    Merges) are not among them, nor the Identity of the While's resource
    output (a handle passed to nobody)."""
    from tfsem.graphdef.functions import flatten
    from tfsem.graphdef.importer import default_roots
    from tfsem.graphdef import read_graph
    graph, _ = read_graph(CASES / "tf2_while_case.pbtxt")
    roots = default_roots(flatten(graph))
    assert "out" in roots and "loop" not in roots and "case" not in roots
    assert "loop/Identity_4" not in roots      # Identity of the resource output



def test_a_tensor_array_loop_reads_what_the_parallel_iterations_allow(capsys):
    """tf2_tensor_array_loop.pbtxt (TensorFlow 2.21, graph mode): a While
    whose iteration i adds v[i] to x, then writes 10 * x into a TensorArray
    (TensorListReserve/FromTensor/GetItem/SetItem/Stack).  Nothing orders
    iteration i's read before iteration i+1's addition (the body has no
    control outputs), so the read of iteration i sees x after the addition
    of any iteration j >= i; TensorFlow's executor gave [50, 50, 50],
    [30, 50, 50] and [30, 80, 50] from v = [1, 5, -3], x = 2
    (tests/test_controlflow_export.py runs it)."""
    rc, out = run_here(capsys, "outcomes", str(CASES / "tf2_tensor_array_loop.pbtxt"),
                       "--fetch", "out", "--feed", "v=[1,5,-3]", "--init", "x=2", "--json")
    assert rc == 0, out
    outs = {tuple(o["outputs"]["out"]) for o in json.loads(out)["outcomes"]}
    after = [2 + 1, 2 + 1 + 5, 2 + 1 + 5 - 3]        # x after the first k+1 additions
    assert outs == {(10 * after[a], 10 * after[b], 10 * after[2])
                    for a in range(3) for b in range(1, 3)}
    assert {(50, 50, 50), (30, 50, 50), (30, 80, 50)} <= outs


def test_a_case_index_out_of_range_takes_the_last_branch_at_the_extremes():
    """TensorFlow's _SwitchN sends an index outside [0, N) to the last
    branch (tf.switch_case's default); tfsem's chain of Switches does the
    same for every int32, the extremes included."""
    import numpy as np
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    p = import_path(CASES / "tf2_while_case.pbtxt", fetch=["out"]).program

    def outcomes(k):
        return set(outcome_set(p, {"n": Tensor(np.int64(1)), "k": Tensor(np.int32(k))},
                               {"x": Tensor(np.int64(1))}))
    last, first = outcomes(1), outcomes(0)
    assert last != first
    for k in (2, -1, 2**31 - 1, -2**31):
        assert outcomes(k) == last, k
