"""Review of the stable export round trip (graphdef/exporter.py
`_collapse_state_groups`, `_merge_output_parts`, `_import_shapes`):
programs whose export, imported back, must have the program's outcomes
and whose exported graph TensorFlow must take (every input names a node
of the graph)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_graphdef_export_state import outcomes, sinks
from tfsem.graphdef.exporter import ExportError, export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.functions import split_ref
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

F32 = {"type": "DT_FLOAT"}


def f32(v):
    return Tensor(np.asarray(v, dtype=np.float32))


def dims(shape):
    return {"shape": {"dim": [{"size": d} for d in shape]}}


def exported(p) -> tuple[dict, object]:
    """export(p), checked to name only its own nodes, and its import."""
    g = export_graph(p)
    names = [n["name"] for n in g["node"]]
    assert len(set(names)) == len(names)
    dangling = {split_ref(i)[0] for n in g["node"] for i in n.get("input", [])} - set(names)
    assert not dangling, f"inputs naming no node: {dangling}"
    return g, import_graph(g, list(p.outputs), sinks(g, p.outputs)).program


# two gradient-descent steps on one variable, as the importer makes them
# (StackBroadcast and Assign parts, a NoOp named after the op), and a Read
STEPS = {
    "format": "tfsem.program/1", "variables": {"v": {"dtype": "float32", "shape": []}},
    "feeds": {"a": {"dtype": "float32", "shape": []}, "d": {"dtype": "float32", "shape": []}},
    "nodes": [{"name": "v", "op": "Var", "var": "v"},
              {"name": "r", "op": "Read", "inputs": ["v"]},
              {"name": "a", "op": "Identity", "inputs": ["$a"]},
              {"name": "d", "op": "Identity", "inputs": ["$d"]},
              {"name": "s1/packed", "op": "StackBroadcast", "inputs": ["d", "a"]},
              {"name": "s1/update", "op": "Assign", "fn": "GradientStep",
               "inputs": ["v", "s1/packed"]},
              {"name": "s1", "op": "NoOp", "inputs": ["^s1/update"]},
              {"name": "s2/packed", "op": "StackBroadcast", "inputs": ["a", "d"]},
              {"name": "s2/update", "op": "Assign", "fn": "GradientStep",
               "inputs": ["v", "s2/packed"]},
              {"name": "s2", "op": "NoOp", "inputs": ["^s2/update"]}],
    "outputs": {"r": "r"}}


def steps(edits: dict[str, list[str]]):
    data = {**STEPS, "nodes": [{**n, "inputs": n.get("inputs", []) + edits.get(n["name"], [])}
                               if "inputs" in n or n["name"] in edits else n
                               for n in STEPS["nodes"]]}
    return program_from_json(data)


@pytest.mark.parametrize("edits", [
    {},                                                  # racy: several outcomes
    {"r": ["^s1/update"]},                               # a Read after one op
    {"r": ["^s1/packed"]},                               # after a part only
    {"s2/packed": ["^s1/update"]},                       # a part after another op
    {"s2/update": ["^s1/update"]},                       # an op after another op
    {"s1/update": ["^s2/update"], "r": ["^s1"]},
    {"s1/packed": ["^s2/update"], "r": ["^s1"]},
    {"s1/packed": ["^r"]},                               # a part after the Read
    {"s2/packed": ["^s1/packed"]}])
def test_state_groups_ordered_on_each_other_keep_their_outcomes(edits):
    """A step ordered after another step's op itself (not its NoOp): each
    op is renamed after its NoOp, and the control input naming the other
    op's old name was left as it was, naming no node (the import refused
    the export)."""
    p = steps(edits)
    _, q = exported(p)
    init, feeds = {"v": f32(1.0)}, {"a": f32(0.5), "d": f32(2.0)}
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


def split(name: str, x: str, extra=()) -> dict:
    return {"name": name, "op": "Split", "input": ["axis", x, *extra],
            "attr": {"T": F32, "num_split": {"i": 2}}}


def identity_n(name: str, x: str) -> dict:
    return {"name": name, "op": "IdentityN", "input": [x, x],
            "attr": {"T": {"list": {"type": ["DT_FLOAT"] * 2}}}}


@pytest.mark.parametrize("ops,fetch", [
    ([split("s1", "x"), split("s2", "s1")], ["s2"]),
    ([split("s1", "x"), split("s2", "s1:1")], ["s2"]),
    ([split("s1", "x"), split("s2", "x", ["^s1"])], ["s2"]),
    ([identity_n("n1", "x"), identity_n("n2", "n1:1")], ["n2"])])
def test_a_merged_op_reading_another_merged_op_names_it(ops, fetch):
    """A Split of a Split's output: the second op, merged from its parts,
    kept its parts' input `s1/output_0`, a part of the first op that the
    merge had dropped (the import refused the export)."""
    graph = {"node": [{"name": "x", "op": "Placeholder", "attr": {"dtype": F32,
                                                                  "shape": dims([4])}},
                      {"name": "axis", "op": "Const", "attr": {
                          "dtype": {"type": "DT_INT32"},
                          "value": {"tensor": {"dtype": "DT_INT32", "tensor_shape": {},
                                               "int_val": [0]}}}}, *ops]}
    p = import_graph(graph, fetch, sinks(graph, fetch)).program
    _, q = exported(p)
    feeds = {"x": f32([1.0, 2.0, 3.0, 4.0])}
    _, q2 = exported(q)            # and a second round
    assert outcomes(q, {}, feeds) == outcomes(p, {}, feeds) == outcomes(q2, {}, feeds)


def test_a_fetched_placeholder_is_exported_once_and_stays():
    """The importer makes a fetched Placeholder `a` node a = Identity($a),
    output `a`: the export wrote the Placeholder `a` and an output Identity
    `a`, two nodes of one name (the import of the export refused it, and
    TensorFlow would)."""
    graph = {"node": [{"name": "a", "op": "Placeholder",
                       "attr": {"dtype": F32, "shape": {"shape": {}}}},
                      {"name": "n", "op": "Neg", "input": ["a"], "attr": {"T": F32}}]}
    p = import_graph(graph, ["a", "n"], []).program
    g, q = exported(p)
    assert [n["op"] for n in g["node"] if n["name"] == "a"] == ["Placeholder"]
    g2, q2 = exported(q)           # (the fetched Neg is renamed once)
    assert export_graph(q2) == g2
    feeds = {"a": f32(2.0)}
    assert outcomes(q, {}, feeds) == outcomes(p, {}, feeds)


def test_an_output_named_like_a_feed_of_another_value_is_refused():
    """Output `G` of another value than feed $G: its Identity and the
    Placeholder `G` would be two nodes of one name; refused, naming the
    output."""
    p = program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "feeds": {"G": {"dtype": "int64", "shape": []}},
        "nodes": [{"name": "x", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["x"]},
                  {"name": "s", "op": "Add", "inputs": ["r", "$G"]}],
        "outputs": {"G": "s"}})
    with pytest.raises(ExportError, match=r"output 'G'.*name of feed \$G"):
        export_graph(p)


def _x_and_axis() -> list:
    """A float32 [4] Placeholder `x` and the int32 Const `axis` = 0 a Split reads."""
    return [{"name": "x", "op": "Placeholder", "attr": {"dtype": F32, "shape": dims([4])}},
            {"name": "axis", "op": "Const", "attr": {
                "dtype": {"type": "DT_INT32"},
                "value": {"tensor": {"dtype": "DT_INT32", "tensor_shape": {}, "int_val": [0]}}}}]


TF_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")


def port_output_program():
    """A Split `s` of x, fetched at port 1: the importer names the output
    `s:1`, a tensor's name, which is no node name."""
    graph = {"node": [*_x_and_axis(), split("s", "x")]}
    return import_graph(graph, ["s:1"], []).program


def test_an_output_fetched_at_a_port_exports_under_a_valid_node_name():
    """Output `s:1` was written as an Identity node named `s:1`, which
    TensorFlow refuses ("Node name contains invalid characters"): it is an
    Identity `s_1` of that tensor, `fetches` mapping the output to it; the
    export imported again (output `s:1` fetched at `s_1`) has the
    program's outcomes, and a second round writes the same graph."""
    p = port_output_program()
    fetches: dict[str, str] = {}
    g = export_graph(p, fetches=fetches)
    assert all(TF_NODE_NAME.fullmatch(n["name"]) for n in g["node"])
    assert fetches == {"s:1": "s_1"}
    assert {n["name"]: n for n in g["node"]}["s_1"]["input"] == ["s:1"]
    q = import_graph(g, ["s_1"], sinks(g, ["s_1"]), output_names=["s:1"]).program
    feeds = {"x": f32([1.0, 2.0, 3.0, 4.0])}
    assert outcomes(q, {}, feeds) == outcomes(p, {}, feeds)
    again: dict[str, str] = {}
    assert export_graph(q, fetches=again) == g and again == fetches


def test_the_fixed_exports_run_on_tensorflow_to_the_oracles_outcome():
    """Two steps, the second's part after the first op itself, a Split
    of a Split's output with a fetched Placeholder, and a Split fetched at
    a port (output `s:1`, fetched at node `s_1`): TensorFlow loads each
    export and runs it to the oracle's one outcome of the program."""
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    from tfsem.backends.tensorflow import GraphRunner
    from tfsem.graphdef.proto import format_text
    from tfsem.oracle.dispatch import outcome_set

    two_steps = steps({"s2/packed": ["^s1/update"], "r": ["^s2"]})
    graph = {"node": [*_x_and_axis(), split("s1", "x"), split("s2", "s1:1"),
                      {"name": "m", "op": "Sub", "input": ["s2:1", "s1"], "attr": {"T": F32}}]}
    splits = import_graph(graph, ["m", "x"], []).program
    for p, init, feeds in [(two_steps, {"v": f32(1.0)}, {"a": f32(0.5), "d": f32(2.0)}),
                           (splits, {}, {"x": f32([1.0, 2.0, 3.0, 4.0])}),
                           (port_output_program(), {}, {"x": f32([1.0, 2.0, 3.0, 4.0])})]:
        fetches: dict[str, str] = {}
        g = export_graph(p, fetches=fetches)
        (want,) = outcome_set(p, feeds, init, "atomic", "outputs+state").as_dict(5)
        with GraphRunner(format_text("GraphDef", g), fetches,
                         sinks(g, fetches.values())) as runner:
            got = runner.run_once(feeds, init)
        assert got == want, (got.describe(), want.describe())


# a Split's parts, two gradient steps and an Assign on one variable, Reads;
# control edges drawn among them (earlier -> later in this order: acyclic)
RANDOM_NODES = [
    {"name": "v", "op": "Var", "var": "v"},
    {"name": "a", "op": "Identity", "inputs": ["$a"]},
    {"name": "d", "op": "Identity", "inputs": ["$d"]},
    {"name": "r", "op": "Read", "inputs": ["v"]},
    {"name": "sp/output_0", "op": "SplitPart", "axis": 0, "num_split": 2, "index": 0,
     "inputs": ["r"]},
    {"name": "sp/output_1", "op": "SplitPart", "axis": 0, "num_split": 2, "index": 1,
     "inputs": ["r"]},
    {"name": "sp", "op": "NoOp", "inputs": ["^sp/output_0", "^sp/output_1"]},
    {"name": "s1/packed", "op": "StackBroadcast", "inputs": ["d", "a"]},
    {"name": "s1/update", "op": "Assign", "fn": "GradientStep", "inputs": ["v", "s1/packed"]},
    {"name": "s1", "op": "NoOp", "inputs": ["^s1/update"]},
    {"name": "s2/packed", "op": "StackBroadcast", "inputs": ["d", "a"]},
    {"name": "s2/update", "op": "Assign", "fn": "GradientStep", "inputs": ["v", "s2/packed"]},
    {"name": "s2", "op": "NoOp", "inputs": ["^s2/update"]},
    {"name": "r2", "op": "Read", "inputs": ["v"]},
    {"name": "w", "op": "Assign", "fn": "Add", "inputs": ["v", "r2"]},
    {"name": "m", "op": "Sub", "inputs": ["sp/output_0", "r2"]}]


@settings(max_examples=120, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(1, len(RANDOM_NODES) - 1),
                          st.integers(1, len(RANDOM_NODES) - 1)), min_size=1, max_size=4),
       st.booleans())
def test_random_control_edges_among_merged_and_collapsed_parts_keep_the_outcomes(edges, part):
    """The enumerating oracle's outcome sets of the program and of its
    export imported back are equal, whatever control edges join the parts
    of a Split, of two steps, and the Reads and Assign around them (before
    the redirect fix, 9 of 244 such programs exported a dangling input)."""
    nodes = [dict(n) for n in RANDOM_NODES]
    for i, j in edges:
        if i != j:
            i, j = min(i, j), max(i, j)
            nodes[j]["inputs"] = nodes[j].get("inputs", []) + ["^" + nodes[i]["name"]]
    outputs = {"m": "m", "r": "r", **({"p1": "sp/output_1"} if part else {})}
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {"v": {"dtype": "float32", "shape": [2]}},
        "feeds": {"a": {"dtype": "float32", "shape": []},
                  "d": {"dtype": "float32", "shape": [2]}},
        "nodes": nodes, "outputs": outputs})
    _, q = exported(p)
    init, feeds = {"v": f32([1.0, 2.0])}, {"a": f32(0.5), "d": f32([2.0, -1.0])}
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


def test_an_identity_part_fetched_under_its_own_name_stays_an_output():
    """Identity parts `g/output_i` of one Read after a NoOp `g` (the shape
    the importer makes of an IdentityN), one fetched as output
    `g/output_0`: the output is that node itself, and the merge into one
    IdentityN `g` dropped it, so the export had no node to fetch."""
    p = program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "nodes": [{"name": "x", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["x"]},
                  {"name": "g/output_0", "op": "Identity", "inputs": ["r"]},
                  {"name": "g/output_1", "op": "Identity", "inputs": ["r"]},
                  {"name": "g", "op": "NoOp", "inputs": ["^g/output_0", "^g/output_1"]},
                  {"name": "n", "op": "Neg", "inputs": ["g/output_1"]}],
        "outputs": {"g/output_0": "g/output_0", "o": "n"}})
    g, q = exported(p)
    assert "g/output_0" in {n["name"] for n in g["node"]}
    init = {"x": Tensor(np.asarray(3, dtype=np.int64))}
    assert outcomes(q, init) == outcomes(p, init)


def test_program_nodes_named_under_a_split_part_are_kept():
    """Constants `s/output_i/k` of the program, named under the Split parts
    `s/output_i`: the merge took them for the parts' own exported nodes,
    moved the first to `s/k` and dropped both (alike: the same
    value), which `m` still read."""
    p = program_from_json({
        "format": "tfsem.program/1", "variables": [],
        "feeds": {"x": {"dtype": "float32", "shape": [4]}},
        "nodes": [{"name": "x", "op": "Identity", "inputs": ["$x"]},
                  *({"name": f"s/output_{i}", "op": "SplitPart", "axis": 0, "num_split": 2,
                     "index": i, "inputs": ["x"]} for i in range(2)),
                  {"name": "s", "op": "NoOp", "inputs": ["^s/output_0", "^s/output_1"]},
                  {"name": "s/output_0/k", "op": "Const", "value": 1},
                  {"name": "s/output_1/k", "op": "Const", "value": 1},
                  {"name": "m", "op": "Sub", "inputs": ["s/output_1/k", "s/output_0/k"]},
                  {"name": "m2", "op": "Sub", "inputs": ["s/output_1", "s/output_0"]}],
        "outputs": {"m": "m", "m2": "m2"}})
    g, q = exported(p)
    assert [n["op"] for n in g["node"]].count("Split") == 1
    feeds = {"x": f32([1.0, 2.0, 3.0, 4.0])}
    assert outcomes(q, {}, feeds) == outcomes(p, {}, feeds)
