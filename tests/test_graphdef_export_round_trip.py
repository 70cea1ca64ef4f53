"""export -> import -> export is a fixed point (graphdef/exporter.py
`_import_shapes`, `_collapse_state_groups`, `_merge_output_parts`): the
second export has the same nodes, names, ops, attributes and edges as the
first, and the re-imported program has the outcomes of the original.

Each round used to add nodes: a feed's Identity written as a renamed
Identity of its Placeholder, an output's Identity written twice, a state
op's NoOp parts and its closing NoOp kept beside the re-imported op, and a
Split or Unpack written once per output (6 -> 9 -> 12 nodes for a float32
ResourceApplyGradientDescent, doubling for a Split)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from test_graphdef_export_state import outcomes, sinks
from test_optimizer_nan_bits import imported
from tfsem.generators import grappler as gen
from tfsem.graphdef import import_path
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

ROOT = Path(__file__).parents[1]


def nodes(g: dict) -> dict:
    """name -> (op, data inputs in order, control inputs as a set, attrs);
    `x:0` written `x` (one tensor)."""
    return {n["name"]: (n["op"], [i.removesuffix(":0") for i in n.get("input", [])
                                  if not i.startswith("^")],
                        sorted({i for i in n.get("input", []) if i.startswith("^")}),
                        repr(sorted(n.get("attr", {}).items())))
            for n in g["node"]}


def reimported(g: dict, p):
    return import_graph(g, list(p.outputs), sinks(g, p.outputs)).program


def fixed_point(p, exact: bool = True):
    """(export(p), import of it, export of that): asserts the two exports
    are the same graph (`exact`; else the same size, and the graph the same
    from the second export on) and a third round changes nothing."""
    g1 = export_graph(p)
    q = reimported(g1, p)
    g2 = export_graph(q)
    assert len(g2["node"]) == len(g1["node"])
    if exact:
        assert nodes(g2) == nodes(g1)
    assert nodes(export_graph(reimported(g2, q))) == nodes(g2)
    return g1, q, g2


def f32(v):
    return Tensor(np.asarray(v, dtype=np.float32))


OPTIMIZERS = {"ResourceApplyGradientDescent": (["var"], ["alpha", "delta"]),
              "ResourceApplyMomentum": (["var", "accum"], ["lr", "grad", "momentum"]),
              "ResourceApplyAdam": (["var", "m", "v"], ["beta1_power", "beta2_power", "lr",
                                                        "beta1", "beta2", "epsilon", "grad"])}


@pytest.mark.parametrize("op", sorted(OPTIMIZERS))
def test_an_imported_optimizer_step_is_a_fixed_point(op):
    p = imported(op, (3,))
    g1, q, _ = fixed_point(p)
    ops = [n["op"] for n in g1["node"]]
    assert ops.count(op) == 1 and "NoOp" not in ops and "Identity" not in ops
    # the op under the name it was imported from, the program the same
    assert op in {n["op"] for n in g1["node"] if n["name"] == "step"}
    assert q == p
    variables, inputs = OPTIMIZERS[op]
    feeds = {x: f32([0.5, -1.0, 2.0] if x in ("grad", "delta") else 0.25) for x in inputs}
    init = {v: f32([1.0, -2.0, 3.0]) for v in variables}
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


FEED_AND_CONTROL = {
    "format": "tfsem.program/1", "variables": ["x"],
    "feeds": {"a": {"dtype": "int64", "shape": []}},
    "nodes": [{"name": "x", "op": "Var", "var": "x"},
              {"name": "w", "op": "Assign", "fn": "Add", "inputs": ["x", "$a"]},
              {"name": "r", "op": "Read", "inputs": ["x", "^w"]},
              {"name": "s", "op": "Add", "inputs": ["r", "$a"]}],
    "outputs": {"out": "s", "read": "r"}}


def int64(v):
    return Tensor(np.asarray(v, dtype=np.int64))


def test_a_feed_and_a_control_dependency_are_a_fixed_point():
    p = program_from_json(FEED_AND_CONTROL)
    g1, q, _ = fixed_point(p)
    by = {n["name"]: n for n in g1["node"]}
    assert by["a"]["op"] == "Placeholder" and "a_1" not in by
    assert by["r"]["input"][-1] == "^w"
    init, feeds = {"x": int64(4)}, {"a": int64(3)}
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


CASES = ["seed000_figure1_add_fix_order.json", "alg_float_add_zero.json",
         "alg_float_reassociate.json", "tensorflow/counter_drop_control_dependency.json"]


@pytest.mark.parametrize("case", CASES)
def test_a_case_program_is_a_fixed_point(case):
    """Including a Split of two outputs (seed000: the importer makes one
    node per output; each round wrote each as a Split of its own)."""
    p = program_from_json(json.loads((ROOT / "tests" / "cases" / case).read_text())["original"])
    g1, q, g2 = fixed_point(p)
    assert [n["op"] for n in g1["node"]].count("Split") <= 1
    # a first import renames nothing the second export keeps
    assert fixed_point(q)[0]["node"] and nodes(export_graph(q)) == nodes(g2)


CORPUS = ["counter.pbtxt", "scatter_then_read.pbtxt", "group_fanin.pbtxt",
          "keras_mlp_sgd.pbtxt", "v1_mlp_adam.pbtxt", "batchnorm.pbtxt"]


@pytest.mark.parametrize("name", CORPUS)
def test_a_corpus_graph_is_a_fixed_point(name):
    p = import_path(ROOT / "examples" / "tensorflow" / name).program
    g1, q, _ = fixed_point(p)
    assert len(g1["node"]) <= len(p.nodes) + len(p.outputs) + len(p.variables) + \
        len(p.feed_names)
    if name == "counter.pbtxt":
        assert q == p
    if name == "scatter_then_read.pbtxt":   # (its fetched Read is renamed once: not p)
        init = {"emb": f32([[1, 2], [3, 4], [5, 6]])}
        feeds = {"ids": Tensor(np.asarray([2, 0], dtype=np.int32)), "u": f32([[1, 1], [2, 2]])}
        assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


@settings(max_examples=settings.default.max_examples // 4)
@given(gen.strategy(8, "outputs+state"))
def test_generated_programs_are_a_fixed_point_with_their_outcomes(case):
    """A generated program is not what the importer makes (a Copy, a lone
    output of a Split): its first export may name a node's constants
    otherwise than the second, at the same size; from then on it stays."""
    p, feeds, init = case
    g1, q, _ = fixed_point(p, exact=False)
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


def test_a_node_reading_one_tensor_twice_keeps_both_inputs():
    """Redirecting the edges of merged parts keeps repeated data inputs
    (Max(r, r) is not Max(r)); only control inputs are deduplicated."""
    p = program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "nodes": [{"name": "x", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["x"]},
                  {"name": "c", "op": "Copy", "inputs": ["r"]},
                  {"name": "m", "op": "Max", "inputs": ["r", "r"]},
                  {"name": "s", "op": "Add", "inputs": ["c:1", "c:1"]}],
        "outputs": {"max": "m", "sum": "s"}})
    g1, q, g2 = fixed_point(p)
    by = {n["name"]: n for n in g2["node"]}
    assert by["m"]["input"] == ["r", "r"] and by["s"]["input"] == ["c:1", "c:1"]
    assert by["c"]["op"] == "IdentityN"
    init = {"x": int64(-3)}
    assert outcomes(q, init) == outcomes(p, init)
