"""The functional-control-flow Grappler target (campaigns/grappler_functional.py,
generators/functional.py):
the control-flow generator's conditionals and loops raised to If/While, which
tfsem imports (its own lowering), and Grappler's function optimizer lowers.

No TensorFlow here: Grappler's lowering of the raised graph is tested in
tests/test_tensorflow_grappler_control_flow.py."""

from __future__ import annotations

import json

from tfsem.checking import check_rewrite
from tfsem.graphdef.exporter import export_graph
from tfsem.oracle.jsonio import program_from_json

COND = {"format": "tfsem.program/1", "variables": ["x0"],
        "feeds": {"p0": {"dtype": "bool", "shape": []}}, "outputs": {"c0": "c0/m"}, "nodes": [
            {"name": "c0/k", "op": "Const", "value": 0},
            {"name": "c0/sk", "op": "Switch", "inputs": ["c0/k", "$p0"]},
            {"name": "c0/f", "op": "Identity", "inputs": ["c0/sk"]},
            {"name": "c0/t", "op": "Identity", "inputs": ["c0/sk:1"]},
            {"name": "c0/vx0", "op": "Var", "var": "x0"},
            {"name": "c0/sx0", "op": "Switch", "inputs": ["c0/vx0", "$p0"]},
            {"name": "c0/t0", "op": "Read", "inputs": ["c0/sx0:1"]},
            {"name": "c0/t1k", "op": "Const", "value": 4, "inputs": ["^c0/t"]},
            {"name": "c0/t1", "op": "Assign", "fn": "Add", "inputs": ["c0/sx0:1", "c0/t1k"],
             "after": []},
            {"name": "c0/f0k", "op": "Const", "value": 2, "inputs": ["^c0/f"]},
            {"name": "c0/f0", "op": "Assign", "fn": "Snd", "inputs": ["c0/sx0", "c0/f0k"]},
            {"name": "c0/m", "op": "Merge", "inputs": ["c0/f", "c0/t0"]}]}
for _n in COND["nodes"]:
    _n.pop("after", None)


def _gf():
    from tfsem.generators import functional as gf
    return gf


def test_a_conditional_is_raised_to_an_if_of_two_stateful_branch_functions():
    gf = _gf()
    graph, blocks = gf.raise_graph(export_graph(program_from_json(COND)))
    assert blocks == ["c0"]
    ops = {n["name"]: n["op"] for n in graph["node"]}
    assert ops["c0/if"] == "If" and ops["c0/m"] == "Identity"
    assert not {"c0/sk", "c0/sx0", "c0/t0", "c0/f0"} & set(ops)
    fns = {f["signature"]["name"]: f for f in graph["library"]["function"]}
    assert set(fns) == {"c0_then", "c0_else"}
    assert fns["c0_then"]["signature"]["control_output"] == ["c0/t0", "c0/t1"]
    assert fns["c0_then"]["ret"] == {"value": "c0/t0:value:0"}
    assert fns["c0_else"]["ret"] == {"value": "c0/f_zero:output:0"}


def test_tfsems_reading_of_the_raised_if_has_the_conditionals_outcomes():
    """With the If a target (as a tf.function's automatic control
    dependencies make it), the branch's writes run: the reading is the v1
    program's (sound both ways, by cases on p0)."""
    gf = _gf()
    p = program_from_json(COND)
    reading = gf.tfsem_reading(p)
    data = gf.raised(p)
    assert "c0/if" in data[2]                               # a target
    v1 = gf._imported(*_exported_v1(p))
    for a, b in ((v1, reading), (reading, v1)):
        v = check_rewrite(a, b, "atomic", "outputs+state", timeout=10)
        assert v.verdict == "sound", v.reason


def _exported_v1(p):
    """The v1 program exported, every node a target (tfsem fires them all)."""
    from tfsem.graphdef.proto import encode
    graph = export_graph(p)
    return encode("GraphDef", graph), list(p.outputs), [
        n["name"] for n in graph["node"] if n["op"] != "Placeholder" and n["name"] not in p.outputs]


def _loop() -> dict:
    """A loop block as generators/control_flow.py writes it: 2 trips, a Read of
    x0 summed and x0 += 3 after it, a loop-invariant value."""
    f = "l0/while"
    return {"format": "tfsem.program/1", "variables": ["x0"],
            "outputs": {"l0": "l0/exit", "l0_sum": "l0/s_exit"}, "nodes": [
                {"name": "l0/i0", "op": "Const", "value": 0},
                {"name": "l0/enter", "op": "Enter", "frame_name": f, "inputs": ["l0/i0"],
                 "parallel_iterations": 1},
                {"name": "l0/n", "op": "Const", "value": 2},
                {"name": "l0/lim", "op": "Enter", "frame_name": f, "is_constant": True,
                 "inputs": ["l0/n"]},
                {"name": "l0/merge", "op": "Merge", "inputs": ["l0/enter", "l0/next"]},
                {"name": "l0/less", "op": "Less", "inputs": ["l0/merge", "l0/lim"]},
                {"name": "l0/cond", "op": "LoopCond", "inputs": ["l0/less"]},
                {"name": "l0/sw", "op": "Switch", "inputs": ["l0/merge", "l0/cond"]},
                {"name": "l0/body", "op": "Identity", "inputs": ["l0/sw:1"]},
                {"name": "l0/vx0", "op": "Var", "var": "x0"},
                {"name": "l0/hx0", "op": "Enter", "frame_name": f, "is_constant": True,
                 "inputs": ["l0/vx0"]},
                {"name": "l0/a0", "op": "Read", "inputs": ["l0/hx0", "^l0/body"]},
                {"name": "l0/a1k", "op": "Const", "value": 3, "inputs": ["^l0/body"]},
                {"name": "l0/a1", "op": "Assign", "fn": "Add",
                 "inputs": ["l0/hx0", "l0/a1k", "^l0/a0"]},
                {"name": "l0/c", "op": "Const", "value": 1},
                {"name": "l0/ce", "op": "Enter", "frame_name": f, "is_constant": True,
                 "inputs": ["l0/c"]},
                {"name": "l0/inv", "op": "Add", "inputs": ["l0/ce", "l0/lim"]},
                {"name": "l0/s0", "op": "Const", "value": 0},
                {"name": "l0/s_enter", "op": "Enter", "frame_name": f, "inputs": ["l0/s0"]},
                {"name": "l0/s_merge", "op": "Merge", "inputs": ["l0/s_enter", "l0/s_next"]},
                {"name": "l0/s_sw", "op": "Switch", "inputs": ["l0/s_merge", "l0/cond"]},
                {"name": "l0/s_body", "op": "Identity", "inputs": ["l0/s_sw:1"]},
                {"name": "l0/s_add0", "op": "Add", "inputs": ["l0/s_body", "l0/a0"]},
                {"name": "l0/s_add1", "op": "Add", "inputs": ["l0/s_add0", "l0/inv"]},
                {"name": "l0/s_next", "op": "NextIteration", "inputs": ["l0/s_add1"]},
                {"name": "l0/s_exit", "op": "Exit", "inputs": ["l0/s_sw"]},
                {"name": "l0/one", "op": "Const", "value": 1, "inputs": ["^l0/body"]},
                {"name": "l0/add", "op": "Add", "inputs": ["l0/body", "l0/one", "^l0/a1"]},
                {"name": "l0/next", "op": "NextIteration", "inputs": ["l0/add"]},
                {"name": "l0/exit", "op": "Exit", "inputs": ["l0/sw"]}]}


def test_a_loop_is_raised_to_a_while_and_read_back_with_the_same_outcomes():
    from tfsem.oracle import outcome_set
    from tfsem.oracle.values import Error, Tensor
    gf = _gf()
    p = program_from_json(_loop())
    graph, blocks = gf.raise_graph(export_graph(p))
    assert blocks == ["l0"]
    (w,) = [n for n in graph["node"] if n["op"] == "While"]
    assert w["attr"]["T"]["list"]["type"] == ["DT_INT64"] * 3 + ["DT_RESOURCE"]
    assert w["attr"]["parallel_iterations"] == {"i": 1}
    reading = gf.tfsem_reading(p)
    assert reading is not None and reading.has_control_flow
    for x in (Tensor(0, "int64"), Tensor(5, "int64"), Error("uninitialized")):
        want = set(outcome_set(p, {}, {"x0": x}, "atomic"))
        assert set(outcome_set(reading, {}, {"x0": x}, "atomic")) == want
    # 2 trips: x0 read as x, then x + 3; the invariant 1 + 2 added twice
    (o,) = outcome_set(p, {}, {"x0": Tensor(5, "int64")}, "atomic")
    assert o.to_json()["outputs"] == {"l0": 2, "l0_sum": 5 + 8 + 6}


def test_a_block_not_of_the_generators_shape_is_left_alone():
    gf = _gf()
    raw = json.loads(json.dumps(COND))
    # a second consumer of the value index of the Merge: not an If's output
    raw["nodes"].append({"name": "o/idx", "op": "Identity", "inputs": ["c0/m:1"]})
    raw["outputs"]["idx"] = "o/idx"
    graph, blocks = gf.raise_graph(export_graph(program_from_json(raw)))
    assert blocks == [] and "library" not in graph
    assert gf.raised(program_from_json(raw)) is None
