"""Attacks on the proof by cases for loop-free programs with control flow
(checking/control_flow.py, oracle/deadness.py): small pairs where a false
`sound` was sought.  Each asserts the verdict the reference control-flow
engine (oracle/controlflow.py) agrees with, in both modes and under both
observations."""

from __future__ import annotations

import pytest

from tfsem.checking.check import check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

CELLS = [(m, o) for m in ("atomic", "decomposed") for o in ("outputs", "outputs+state")]


def program(nodes, outputs, feeds=None, variables=("x",)):
    return program_from_json({"format": "tfsem.program/1", "variables": list(variables),
                              "feeds": feeds or {}, "nodes": nodes, "outputs": outputs})


BOOL = {"dtype": "bool", "shape": []}


def dead_merge_orders(control: bool):
    """Under p = true, m1 is a Merge whose inputs are all dead; it fires (dead)
    only after `a`, which waits for the Read r.  The live Merge m2 waits for
    m1 (a control input, dead or not), and the Write w for m2: so w comes
    after r and r reads x0.  Without the control input w may come first."""
    return program([
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "c", "op": "Const", "value": 1},
        {"name": "s", "op": "Switch", "inputs": ["c", "$p"]},
        {"name": "r", "op": "Read", "inputs": ["vx"]},
        {"name": "a", "op": "Add", "inputs": ["s:0", "r"]},
        {"name": "d", "op": "Add", "inputs": ["s:0", "s:1"]},
        {"name": "m1", "op": "Merge", "inputs": ["a", "d"]},
        {"name": "m2", "op": "Merge", "inputs": ["s:1"] + (["^m1"] if control else [])},
        {"name": "five", "op": "Const", "value": 5},
        {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vx", "five", "^m2"]}],
        {"r": "r"}, {"p": BOOL})


@pytest.mark.parametrize("mode,observe", CELLS)
def test_a_dead_merge_waits_for_its_dead_inputs(mode, observe):
    """Was a false `sound` in every cell: the specialization let the dead
    Merge m1 fire before the dead Add it waits for in the original."""
    p, q = dead_merge_orders(True), dead_merge_orders(False)
    sigma = ({"p": Tensor(True, "bool")}, {"x": Tensor(0, "int64")})
    assert not set(outcome_set(q, *sigma, mode, observe)) <= set(outcome_set(p, *sigma, mode,
                                                                              observe))
    v = check_rewrite(p, q, mode, observe=observe, timeout=10, backends=False)
    assert v.verdict == "unsound", v.reason
    assert v.counterexample.feeds["p"] == Tensor(True, "bool")


# ---------------------------------------------------------------------------
# The importer's alias of a DT_RESOURCE Identity (graphdef/importer.py)


def _int64_const(name, v):
    return {"name": name, "op": "Const", "attr": {"dtype": {"type": "DT_INT64"}, "value": {
        "tensor": {"dtype": "DT_INT64", "tensor_shape": {}, "int64_val": [v]}}}}


def _handle(name, shared):
    return {"name": name, "op": "VarHandleOp", "attr": {
        "dtype": {"type": "DT_INT64"}, "shape": {"shape": {}}, "shared_name": {"s": shared}}}


def switched_alias_graph(wait: str):
    """`w: u := 7` waits for Identity(Switch(v, p):1), a DT_RESOURCE Identity
    with no control input.  In TensorFlow the Identity, and so w, is dead
    when p is false: u keeps its value."""
    return {"node": [
        {"name": "p", "op": "Placeholder", "attr": {"dtype": {"type": "DT_BOOL"},
                                                    "shape": {"shape": {}}}},
        _handle("v", "x0"), _handle("u", "y0"), _int64_const("c", 7),
        {"name": "sw", "op": "Switch", "input": ["v", "p"], "attr": {"T": {"type": "DT_RESOURCE"}}},
        {"name": "alias", "op": "Identity", "input": ["sw:1"],
         "attr": {"T": {"type": "DT_RESOURCE"}}},
        {"name": "w", "op": "AssignVariableOp", "input": ["u", "c", "^" + wait],
         "attr": {"dtype": {"type": "DT_INT64"}}}]}


def test_a_control_edge_from_an_identity_of_a_switched_handle_is_dead_with_its_port():
    """Was imported as a control edge from the Switch itself (live whatever p
    is), so w wrote when p was false (TensorFlow 2.21 leaves u at 0 there),
    and the pair below (w waiting for the Switch instead, so unconditional)
    imported as the same program: `sound`."""
    from tfsem.graphdef.importer import import_graph
    p = import_graph(switched_alias_graph("alias"), [], ["w"]).program
    q = import_graph(switched_alias_graph("sw"), [], ["w"]).program
    init = {"x0": Tensor(1, "int64"), "y0": Tensor(0, "int64")}
    for b, y in ((False, 0), (True, 7)):
        got = set(outcome_set(p, {"p": Tensor(b, "bool")}, init, "atomic", "outputs+state"))
        assert {dict(o.state)["y0"] for o in got} == {Tensor(y, "int64")}, b
    v = check_rewrite(p, q, "atomic", observe="outputs+state", timeout=10, backends=False)
    assert v.verdict == "unsound", v.reason


def test_a_merge_of_the_handles_of_two_variables_is_refused():
    """`ResourceApplyAdagrad(var=Merge(Switch(u, p):1, Switch(v, p):0), accum=u)`
    aliases var and accum when p is true.  The Merge's variable was the one
    of its last input (here v), so the aliased-slot refusal did not see it
    and the model (every read before every write) stood for TensorFlow's
    in-place kernel; with the inputs the other way round it was refused."""
    from tfsem.graphdef.importer import GraphImportError, import_graph

    def graph(order):
        f = {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {}}}
        res = {"T": {"type": "DT_RESOURCE"}}
        consts = [{"name": k, "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {
            "tensor": {"dtype": "DT_FLOAT", "tensor_shape": {}, "float_val": [0.5]}}}}
            for k in ("lr", "g")]
        return {"node": consts + [
            {"name": "p", "op": "Placeholder", "attr": {"dtype": {"type": "DT_BOOL"},
                                                        "shape": {"shape": {}}}},
            {"name": "v", "op": "VarHandleOp", "attr": {**f, "shared_name": {"s": "x0"}}},
            {"name": "u", "op": "VarHandleOp", "attr": {**f, "shared_name": {"s": "y0"}}},
            {"name": "s1", "op": "Switch", "input": ["v", "p"], "attr": res},
            {"name": "s2", "op": "Switch", "input": ["u", "p"], "attr": res},
            {"name": "m", "op": "Merge", "input": order, "attr": {**res, "N": {"i": 2}}},
            {"name": "w", "op": "ResourceApplyAdagrad", "input": ["m", "u", "lr", "g"],
             "attr": {"T": {"type": "DT_FLOAT"}}}]}

    for order in (["s1:0", "s2:1"], ["s2:1", "s1:0"]):
        with pytest.raises(GraphImportError, match="aliased-variables|merged-handles"):
            import_graph(graph(order), [], ["w"])


# ---------------------------------------------------------------------------
# --float real: a predicate computed in IEEE arithmetic is not the real one


def test_a_float_predicate_is_not_fixed_under_float_real():
    """`if 0.1 + 0.2 == 0.3: 1 else 1 + 2` -> `3`: sound bit for bit (the
    IEEE sum is not 0.3), not over the reals (it is).  The static deadness
    computed the predicate with numpy, and the case it fixed was proved:
    `sound` under --float real, where the same rewrite without control flow
    (the fetch of the Equal -> false) is not proved."""
    def f(v):
        return {"dtype": "float64", "value": v}
    p = program([
        {"name": "a", "op": "Const", "value": f(0.1)}, {"name": "b", "op": "Const", "value": f(0.2)},
        {"name": "c", "op": "Const", "value": f(0.3)},
        {"name": "s", "op": "Add", "inputs": ["a", "b"]},
        {"name": "pred", "op": "Equal", "inputs": ["s", "c"]},
        {"name": "k", "op": "Const", "value": 1},
        {"name": "sw", "op": "Switch", "inputs": ["k", "pred"]},
        {"name": "two", "op": "Const", "value": 2},
        {"name": "t0", "op": "Add", "inputs": ["sw:0", "two"]},
        {"name": "t1", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "m", "op": "Merge", "inputs": ["t0", "t1"]}], {"o": "m"}, variables=())
    q = program([{"name": "t0", "op": "Const", "value": 3}], {"o": "t0"}, variables=())
    assert check_rewrite(p, q, "atomic", timeout=10, backends=False).verdict == "sound"
    v = check_rewrite(p, q, "atomic", timeout=10, backends=False, float_mode="real")
    assert v.verdict == "unknown" and "not fixed" in v.reason, v.reason


@pytest.mark.parametrize("mode", ("atomic", "decomposed"))
def test_dead_branch_keeps_the_wait_of_a_dead_merge(mode):
    """The dead-branch pass (static deadness, partial) on the program above
    with a constant predicate and a Merge it cannot remove (m2, whose other
    input is switched on a feed): the dead Merge m1 becomes a waiter, which
    must still wait for its dead inputs (the partial mode always kept that
    wait), so the Write stays after the Read."""
    from tfsem.oracle.jsonio import program_to_json
    from tfsem.rewrites.registry import get_pass
    raw = program_to_json(dead_merge_orders(True))
    raw["feeds"] = {"q": BOOL}
    raw["nodes"] = [{"name": "pr", "op": "Const", "value": {"dtype": "bool", "value": True}},
                    {"name": "s2", "op": "Switch", "inputs": ["c", "$q"]}] + raw["nodes"]
    for n in raw["nodes"]:
        if n["name"] == "s":
            n["inputs"] = ["c", "pr"]
        if n["name"] == "m2":
            n["inputs"] = ["s:1", "s2:1", "^m1"]
    p = program_from_json(raw)
    q = get_pass("dead-branch")(p)
    assert q.node["m1"].op == "Const"      # the dead Merge became a waiter
    for b in (False, True):
        sigma = ({"q": Tensor(b, "bool")}, {"x": Tensor(0, "int64")})
        assert set(outcome_set(q, *sigma, mode)) <= set(outcome_set(p, *sigma, mode))


# ---------------------------------------------------------------------------
# Attacks that found no false `sound`: each verdict agrees with the reference


def _agrees(p, q, sigmas, want):
    for mode, observe in CELLS:
        v = check_rewrite(p, q, mode, observe=observe, timeout=4, backends=False)
        assert v.verdict in want, (mode, observe, v.verdict, v.reason)
        included = all(set(outcome_set(q, f, i, mode, observe))
                       <= set(outcome_set(p, f, i, mode, observe)) for f, i in sigmas)
        assert included or v.verdict == "unsound", (mode, observe)
        assert not included or v.verdict != "unsound", (mode, observe)


BASE = [{"name": "vx", "op": "Var", "var": "x"}, {"name": "c", "op": "Const", "value": 1}]
X0 = {"x": Tensor(0, "int64")}


def test_a_predicate_that_is_not_a_bool_is_no_case():
    """Switch(1, 1): the predicate is an int, so both ports are dead (as
    TensorFlow fails the step); fetching the Merge is the error
    `bad-predicate`, not 1."""
    p = program(BASE + [{"name": "k", "op": "Const", "value": 1},
                        {"name": "s", "op": "Switch", "inputs": ["c", "k"]},
                        {"name": "m", "op": "Merge", "inputs": ["s:0", "s:1"]}], {"o": "m"})
    q = program(BASE + [{"name": "k", "op": "Const", "value": 1}], {"o": "k"})
    _agrees(p, q, [({}, X0)], {"unsound"})


def test_a_predicate_read_from_a_variable_the_program_writes_is_no_case():
    from tfsem.oracle.values import Error, UNINITIALIZED
    b = {"b": {"dtype": "bool", "shape": []}}
    t = {"name": "t", "op": "Const", "value": {"dtype": "bool", "value": True}}
    p = program([{"name": "vb", "op": "Var", "var": "b"}, {"name": "rb", "op": "Read", "inputs": ["vb"]},
                 t, {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vb", "t"]},
                 {"name": "c", "op": "Const", "value": 1}, {"name": "two", "op": "Const", "value": 2},
                 {"name": "s", "op": "Switch", "inputs": ["c", "rb"]},
                 {"name": "s2", "op": "Switch", "inputs": ["two", "rb"]},
                 {"name": "m", "op": "Merge", "inputs": ["s:1", "s2:0"]}], {"o": "m"}, variables=b)
    # (the rewrite: the Read after the Write, so the predicate is always true)
    q = program([{"name": "vb", "op": "Var", "var": "b"}, t,
                 {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vb", "t"]},
                 {"name": "c", "op": "Const", "value": 1, "inputs": ["^w"]}], {"o": "c"}, variables=b)
    _agrees(p, q, [({}, {"b": Tensor(False, "bool")}), ({}, {"b": Error(UNINITIALIZED)})],
            {"no-counterexample"})


def test_a_control_edge_from_a_fixed_feed():
    def prog(control):
        return program(BASE + [{"name": "s", "op": "Switch", "inputs": ["c", "$p"]},
                               {"name": "r", "op": "Read", "inputs": ["vx"] + control},
                               {"name": "m", "op": "Merge", "inputs": ["s:0", "s:1"]}],
                       {"o": "m", "r": "r"}, {"p": BOOL})
    _agrees(prog(["^$p"]), prog([]), [({"p": Tensor(b, "bool")}, X0) for b in (False, True)],
            {"sound"})


def test_a_rewrite_into_a_loop_is_never_proved():
    """P' a zero-trip loop that fetches its initial sum (0), P the constant 0."""
    from tfsem.generators.control_flow import summing_loop
    q = summing_loop("0")
    p = program(BASE[:1] + [{"name": "z", "op": "Const", "value": 0}], {"s": "z"})
    _agrees(p, q, [({}, X0)], {"no-counterexample"})


@pytest.mark.parametrize("left,op,right,taken", [("nan", "Equal", "nan", 0),
                                                 ("nan", "NotEqual", "nan", 1),
                                                 ("-0.0", "Equal", 0.0, 1),
                                                 ("-0.0", "Less", 0.0, 0)])
def test_predicates_on_nan_and_signed_zero_pick_the_ieee_branch(left, op, right, taken):
    """The static predicate is computed as the engine computes it: a rewrite
    to the branch IEEE takes is sound, to the other one unsound."""
    def f(v):
        return {"dtype": "float32", "value": v}
    p = program([{"name": "a", "op": "Const", "value": f(left)},
                 {"name": "b", "op": "Const", "value": f(right)},
                 {"name": "pred", "op": op, "inputs": ["a", "b"]},
                 {"name": "k", "op": "Const", "value": 1},
                 {"name": "sw", "op": "Switch", "inputs": ["k", "pred"]},
                 {"name": "two", "op": "Const", "value": 2},
                 {"name": "t0", "op": "Add", "inputs": ["sw:0", "two"]},
                 {"name": "t1", "op": "Identity", "inputs": ["sw:1"]},
                 {"name": "m", "op": "Merge", "inputs": ["t0", "t1"]}], {"o": "m"}, variables=())
    for value, sound in ((3, taken == 0), (1, taken == 1)):
        q = program([{"name": "t", "op": "Const", "value": value}], {"o": "t"}, variables=())
        _agrees(p, q, [({}, {})], {"sound"} if sound else {"unsound"})


def test_a_rewrite_that_switches_on_the_other_feed():
    def prog(pred):
        return program(BASE + [{"name": "two", "op": "Const", "value": 2},
                               {"name": "s", "op": "Switch", "inputs": ["c", pred]},
                               {"name": "s2", "op": "Switch", "inputs": ["two", "$p"]},
                               {"name": "m", "op": "Merge", "inputs": ["s:1", "s2:0"]}],
                       {"o": "m"}, {"p": BOOL, "q": BOOL})
    sigmas = [({"p": Tensor(a, "bool"), "q": Tensor(b, "bool")}, X0)
              for a in (False, True) for b in (False, True)]
    _agrees(prog("$p"), prog("$q"), sigmas, {"unsound"})


# ---------------------------------------------------------------------------
# Review: what a fetch behind a failed predicate is (oracle/controlflow.py)


def _if_converted(converted: bool):
    """out = a, through a conditional on the bool variable b whose branches
    are both the identity, or (converted) as a + 0 * Cast(b): arithmetic on
    the predicate instead of a Switch.  With b uninitialized TensorFlow fails
    both steps alike, with the Read's error (FailedPrecondition)."""
    base = [{"name": "hb", "op": "Var", "var": "b"}, {"name": "r", "op": "Read", "inputs": ["hb"]}]
    if converted:
        nodes = base + [{"name": "zero", "op": "Const", "value": 0},
                        {"name": "c", "op": "Cast", "inputs": ["r"], "DstT": "int64"},
                        {"name": "z", "op": "Mul", "inputs": ["c", "zero"]},
                        {"name": "m", "op": "Add", "inputs": ["$a", "z"]}]
    else:
        nodes = base + [{"name": "s", "op": "Switch", "inputs": ["$a", "r"]},
                        {"name": "t", "op": "Identity", "inputs": ["s:1"]},
                        {"name": "f", "op": "Identity", "inputs": ["s:0"]},
                        {"name": "m", "op": "Merge", "inputs": ["f", "t"]}]
    return program_from_json({"format": "tfsem.program/1",
                              "variables": {"b": {"dtype": "bool", "shape": []}},
                              "feeds": {"a": {"dtype": "int64", "shape": []}},
                              "nodes": nodes, "outputs": {"out": "m"}})


def test_a_fetch_behind_a_failed_predicate_is_the_predicates_error():
    """Was a false `unsound` both ways: the fetch behind the failed Switch was
    the error `dead` (a dead fetch: TensorFlow's InvalidArgument "does not
    have value"), the converted program's the Read's `uninitialized`; but
    TensorFlow fails the original at the Read as well, with its error."""
    from tfsem.oracle.values import Error
    p, q = _if_converted(False), _if_converted(True)
    feeds = {"a": Tensor(3, "int64")}
    for prog in (p, q):
        (o,) = outcome_set(prog, feeds, {}, "atomic", "outputs")
        assert dict(o.outputs)["out"] == Error("uninitialized")
    for a, b in ((p, q), (q, p)):
        v = check_rewrite(a, b, "atomic", observe="outputs", timeout=10, backends=False)
        assert v.verdict == "no-counterexample", v.reason
