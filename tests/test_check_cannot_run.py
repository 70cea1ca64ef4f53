"""A function with no concrete model (an op of an imported graph that tfsem
only knows as an uninterpreted function) never turns into a wrong verdict or
an exception out of the library: where a counterexample would have to be run
concretely, check_rewrite answers `unknown` and names the node; where the
proof needs no run, the proof stands."""

from __future__ import annotations

from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json


def _program(nodes, outputs):
    return program_from_json({"variables": ["x"], "nodes": nodes, "outputs": outputs})


OPAQUE = "tf.Mystery/1/1"   # an op with no model: tf.OP/N_IN/N_OUT


def test_a_difference_through_an_opaque_op_is_unknown_naming_the_node():
    # P: out = Mystery(x + 1); P': out = Mystery(x): Z3 finds a candidate (the
    # uninterpreted function may differ), but confirming it needs Mystery run
    p = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "one", "op": "Const", "value": 1},
                  {"name": "s", "op": "Add", "inputs": ["r", "one"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["s"], "tf_attrs": {}}], {"out": "m"})
    q = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}], {"out": "m"})
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unknown", (v.verdict, v.reason)
    assert "m" in v.reason and "Mystery" in v.reason


def test_a_proof_through_an_opaque_op_needs_no_run():
    # the same argument on both sides: equal whatever Mystery computes
    nodes = [{"name": "v", "op": "Var", "var": "x"},
             {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "m", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}]
    p = _program(nodes, {"out": "m"})
    q = _program(nodes + [{"name": "dead", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}], {"out": "m"})
    assert check_rewrite(p, q, timeout=10).verdict == "sound"
