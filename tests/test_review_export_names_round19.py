"""Review of the export's node names (graphdef/exporter.py `fresh`,
`_fetch_names`, `valid_node_name`, `_node_name_like`): programs whose names
clash with the names the export invents or rewrites, whose export must
still compute the program's outcomes (the enumerating oracle on the
program, and TensorFlow's session on the graph), import again, and reach a
fixed point of export -> import -> export."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_graphdef_export_state import outcomes, sinks
from tfsem.graphdef.exporter import ExportError, export_graph, valid_node_name
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import encode, format_text
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

F32 = {"type": "DT_FLOAT"}
I32 = {"type": "DT_INT32"}


def i32(v):
    return Tensor(np.asarray(v, dtype=np.int32))


def f32(v):
    return Tensor(np.asarray(v, dtype=np.float32))


def program(nodes, outputs, feeds=None, variables=None):
    return program_from_json({
        "format": "tfsem.program/1", "variables": variables or [],
        "feeds": feeds if feeds is not None else {"x": {"dtype": "int32", "shape": []}},
        "nodes": nodes, "outputs": outputs})


def export(p, **kw) -> tuple[dict, dict[str, str]]:
    """(export(p), output -> its node), checked: each name once and one
    TensorFlow takes, every input naming a node, each output fetched at a
    node of the graph."""
    fetches: dict[str, str] = {}
    g = export_graph(p, fetches=fetches, **kw)
    names = [n["name"] for n in g["node"]]
    assert not [n for n, k in Counter(names).items() if k > 1]
    assert all(valid_node_name(n) for n in names), names
    dangling = {i.lstrip("^").split(":")[0] for n in g["node"] for i in n.get("input", [])} \
        - set(names)
    assert not dangling
    assert set(fetches) == set(p.outputs) and set(fetches.values()) <= set(names)
    assert len(set(fetches.values())) == len(fetches)
    return g, fetches


def reimport(g, fetches, feeds=()):
    return import_graph(g, list(fetches.values()), sinks(g, fetches.values()),
                        feeds=list(feeds), output_names=list(fetches)).program


def tf_outcome(g, fetches, feeds, init=None):
    """One run of the graph on TensorFlow, each output fetched at its node."""
    from tfsem.backends.tensorflow import GraphRunner
    with GraphRunner(format_text("GraphDef", g), fetches, sinks(g, fetches.values())) as runner:
        return runner.run_once(feeds, init or {})


def the_outcome(p, feeds, init=None):
    from tfsem.oracle.dispatch import outcome_set
    (one,) = outcome_set(p, feeds, init or {}, "atomic", "outputs+state").as_dict(5)
    return one


X = {"name": "x", "op": "Identity", "inputs": ["$x"]}


# -- a program node renamed into the name of an output's own node ----------

# Node `a b` is no node name TensorFlow takes: the export names it like it,
# `a_b`.  Output `a_b` is the program's Identity `a_b` itself (the node the
# importer makes of a fetch of `a_b`), written under its own name; the
# renamed `a b` must not take that name, else fetching `a_b` gives the
# Const's 7 where the program gives x.
RENAMED_INTO_AN_OUTPUT = [X, {"name": "a b", "op": "Const", "value": 7},
                          {"name": "a_b", "op": "Identity", "inputs": ["x"]}]


def test_a_node_renamed_like_its_name_does_not_take_an_output_nodes_name():
    p = program(RENAMED_INTO_AN_OUTPUT, {"a_b": "a_b", "c": "a b"})
    g, fetches = export(p)
    by = {n["name"]: n for n in g["node"]}
    assert fetches == {"a_b": "a_b", "c": "c"}
    assert by["a_b"]["op"] == "Identity" and by["a_b"]["input"] == ["x"]
    feeds = {"x": i32(3)}
    assert outcomes(reimport(g, fetches, ["x"]), {}, feeds) == outcomes(p, {}, feeds)


def test_such_an_export_runs_on_tensorflow_to_the_programs_outcome():
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    p = program(RENAMED_INTO_AN_OUTPUT, {"a_b": "a_b", "c": "a b"})
    g, fetches = export(p)
    feeds = {"x": i32(3)}
    assert tf_outcome(g, fetches, feeds) == the_outcome(p, feeds)


def test_a_node_with_a_name_tensorflow_takes_keeps_it():
    """`names`: a node is renamed only where a feed or an output takes its
    name or TensorFlow refuses it; a node renamed like an invalid name
    (`a b` -> `a_b`) or after an output (`o` -> `o_1`) does not push a
    valid node of that name aside."""
    p = program([X, {"name": "a b", "op": "Neg", "inputs": ["x"]},
                 {"name": "o", "op": "Neg", "inputs": ["x"]},
                 {"name": "a_b", "op": "Abs", "inputs": ["x"]},
                 {"name": "o_1", "op": "Abs", "inputs": ["a b"]}],
                {"o": "o", "p": "a_b", "q": "o_1"})
    for kw in ({}, {"names": {}}):
        g, fetches = export(p, **kw)
        by = {n["name"]: n["op"] for n in g["node"]}
        assert by["a_b"] == "Abs" and by["o_1"] == "Abs"
        if "names" in kw:
            assert kw["names"]["a_b"] == "a_b" and kw["names"]["o_1"] == "o_1"
        feeds = {"x": i32(-3)}
        assert outcomes(reimport(g, fetches, ["x"]), {}, feeds) == outcomes(p, {}, feeds)


# -- export -> import -> export of an output fetched at a port -------------

def _split_graph() -> dict:
    """TensorFlow's own naming: a Split `split` and a node `split_1` (what
    tf.split called twice names them), fetched as `split:1` and `split_1`."""
    return {"node": [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": F32, "shape": {"shape": {
            "dim": [{"size": 4}]}}}},
        {"name": "split/split_dim", "op": "Const", "attr": {"dtype": I32, "value": {"tensor": {
            "dtype": "DT_INT32", "tensor_shape": {}, "int_val": [0]}}}},
        {"name": "split", "op": "Split", "input": ["split/split_dim", "x"],
         "attr": {"T": F32, "num_split": {"i": 2}}},
        {"name": "split_1", "op": "Neg", "input": ["split:0"], "attr": {"T": F32}}]}


def test_an_output_at_a_port_beside_a_node_of_its_name_reaches_a_fixed_point():
    """Output `split:1` cannot be fetched as `split_1` (a node of the
    graph): it is `split_1_1`, which the importer makes an Identity
    `split_1_1`; exported again, that Identity is the output's node, not
    the input of a new Identity `split_1_2` (then `split_1_3`, ...: a graph
    one node larger per round).  From the second export on the graph is
    the same (the first writes the program's Neg `split_1`, renamed, before
    the Identities; imported, they come in the graph's order)."""
    g0 = _split_graph()
    p = import_graph(g0, ["split:1", "split_1"], sinks(g0, ["split:1", "split_1"]),
                     feeds=["x"]).program
    g1, f1 = export(p)
    assert f1 == {"split:1": "split_1_1", "split_1": "split_1"}
    q = reimport(g1, f1, ["x"])
    g2, f2 = export(q)
    assert f2 == f1 and len(g2["node"]) == len(g1["node"])
    assert export(reimport(g2, f2, ["x"])) == (g2, f2)
    feeds = {"x": f32([1.0, -2.0, 3.0, -4.0])}
    assert outcomes(q, {}, feeds) == outcomes(p, {}, feeds)
