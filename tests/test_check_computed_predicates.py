"""The proof by cases on *computed* Switch predicates (issue 23;
oracle/deadness.py `computed_predicates`, checking/control_flow.py stage 1):
a predicate computed from feeds by comparisons and logical ops is cased on
as a bool term, one case variable per distinct term of both programs.

What could make it wrong, each tested here against the reference
control-flow engine (oracle/controlflow.py):
 - a case whose specialization does not have the program's outcomes at the
   σ of that case (the fixed port must take its real value there);
 - a predicate that is not a bool scalar, or is an error, at some σ (then
   no case covers that σ): refused unless decided by dtypes and shapes;
 - a predicate that depends on a Read (its value depends on the schedule):
   refused;
 - a rewrite that drops an ordering inside a branch: still `unsound`.
The corpus graph tf_cond_assign (`if x > 10: total += x else: count += 1`)
and Grappler's dependency, CSE and default-pipeline outputs for it (stored
in tests/grappler/tf_cond_assign.json, TensorFlow 2.21) are proved: before,
each ended `no-counterexample` ("the predicate of Switch 'cond/switch_1' is
not fixed by constants and the bool feeds given")."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking.check import check_rewrite
from tfsem.oracle.controlflow import DEAD_REASON
from tfsem.oracle.deadness import Undecided, computed_predicates, specialize
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.outcomes import make_outcome
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

MODES = ("atomic", "decomposed")
I64 = np.iinfo(np.int64)
#: feed values on both sides of each threshold, and the integer extremes
XS = (I64.min, -11, -1, 0, 9, 10, 11, 12, I64.max)


def cond_program(pred_nodes, pred="g", control=True, feeds=None):
    """if pred: x += $v; r = Read x (after it)   else: r = Read x  -- r fetched.
    `pred_nodes` compute the predicate (node `pred`) from the feeds."""
    raw = {"format": "tfsem.program/1", "variables": ["x"],
           "feeds": feeds or {"v": {"dtype": "int64", "shape": []},
                              "w": {"dtype": "int64", "shape": []},
                              "b": {"dtype": "bool", "shape": []}},
           "nodes": pred_nodes + [
               {"name": "ten", "op": "Const", "value": 10},
               {"name": "vx", "op": "Var", "var": "x"},
               {"name": "sx", "op": "Switch", "inputs": ["vx", pred]},
               {"name": "sv", "op": "Switch", "inputs": ["$v", pred]},
               {"name": "add", "op": "Assign", "fn": "Add", "inputs": ["sx:1", "sv:1"]},
               {"name": "rt", "op": "Read", "inputs": ["sx:1"] + (["^add"] if control else [])},
               {"name": "rf", "op": "Read", "inputs": ["sx:0"]},
               {"name": "m", "op": "Merge", "inputs": ["rf", "rt"]}],
           "outputs": {"r": "m"}}
    return program_from_json(raw)


GREATER = [{"name": "g", "op": "Greater", "inputs": ["$v", "ten"]}]
#: (b and v < w) or not (v == 10): three functions, a bool feed and two int feeds
MIXED = [{"name": "lt", "op": "Less", "inputs": ["$v", "$w"]},
         {"name": "and", "op": "LogicalAnd", "inputs": ["$b", "lt"]},
         {"name": "eq", "op": "Equal", "inputs": ["$v", "ten"]},
         {"name": "ne", "op": "LogicalNot", "inputs": ["eq"]},
         {"name": "g", "op": "LogicalOr", "inputs": ["and", "ne"]}]


def sigma(v, w=0, b=False, x=0):
    feeds = {"v": Tensor(np.int64(v), "int64"), "w": Tensor(np.int64(w), "int64"),
             "b": Tensor(np.bool_(b), "bool")}
    return feeds, {"x": Error(UNINITIALIZED) if x is None else Tensor(np.int64(x), "int64")}


def _truth(p, feeds, port):
    """The predicate's value at σ, by the reference engine: the program
    with the port as its only output."""
    q = program_from_json({**program_to_json(p), "outputs": {"t": f"{port[0]}:{port[1]}"}})
    (o,) = set(outcome_set(q, feeds, {"x": Tensor(np.int64(0), "int64")}, "atomic"))
    return bool(dict(o.outputs)["t"].array)


@pytest.mark.parametrize("nodes", [GREATER, MIXED], ids=["greater", "mixed"])
@pytest.mark.parametrize("mode", MODES)
def test_each_case_has_the_programs_outcomes_at_its_sigma(nodes, mode):
    """The specialization of the case a σ falls in has the outcomes of the
    program with control flow at σ (the reference engine's), and the case
    of the other value is never taken for it."""
    p = cond_program(nodes)
    (port,) = computed_predicates(p)
    for v, w, b, x in itertools.product(XS, (0, 11), (False, True), (0, None)):
        feeds, init = sigma(v, w, b, x)
        value = _truth(p, feeds, port)
        sp = specialize(p, predicates={port: value})
        assert not sp.program.has_control_flow
        want = set(outcome_set(p, feeds, init, mode))
        got = set(outcome_set(sp.program, feeds, init, mode))
        dead = {o: Error(DEAD_REASON) for o in sp.dead_outputs}
        got = {make_outcome({**dict(o.outputs), **dead}, dict(o.state), "outputs+state")
               for o in got}
        assert got == want, (v, w, b, x, mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_comparison_predicate_is_proved_and_a_dropped_edge_refuted(mode):
    p = cond_program(GREATER)
    from tfsem.rewrites.edit import renamed
    v = check_rewrite(p, renamed(p), mode, timeout=5)
    assert v.verdict == "sound" and "computed predicates 'g'" in v.reason, v.reason
    assert v.stats["computed_predicates"] == 1
    v = check_rewrite(p, cond_program(GREATER, control=False), mode, timeout=5)
    assert v.verdict == "unsound" and v.differs == {"output": "r"}, v.reason
    cx = v.counterexample
    assert int(cx.feeds["v"].array) > 10      # only the true branch differs
    q = cond_program(GREATER, control=False)
    state = run_schedule(q, cx.feeds, cx.init, cx.schedule, mode)
    assert outcome_of(q, graph_of(q), state, v.observe) == cx.outcome
    assert cx.outcome not in set(outcome_set(p, cx.feeds, cx.init, mode))


def test_the_same_term_in_both_programs_is_one_case_variable():
    p = cond_program(MIXED)
    # the rewrite computes the same predicate under other node names
    raw = json.loads(json.dumps(program_to_json(p)).replace('"lt"', '"lt2"')
                     .replace('"and"', '"and2"'))
    q = program_from_json(raw)
    assert set(computed_predicates(p).values()) == set(computed_predicates(q).values())
    v = check_rewrite(p, q, "atomic", timeout=5)
    assert v.verdict == "sound" and "(4 cases)" in v.reason, v.reason   # b, and the term


@pytest.mark.parametrize("nodes, feeds, why", [
    # a Read's value depends on the schedule
    ([{"name": "vy", "op": "Var", "var": "x"},
      {"name": "ry", "op": "Read", "inputs": ["vy"]},
      {"name": "g", "op": "Greater", "inputs": ["ry", "ten"]}], None, "read"),
    # not a scalar: no Switch takes it, at no σ
    ([{"name": "g", "op": "Greater", "inputs": ["$v", "ten"]}],
     {"v": {"dtype": "int64", "shape": [2]}}, "vector"),
    # a function whose errors depend on values (integer division by zero)
    ([{"name": "d", "op": "FloorDiv", "inputs": ["ten", "$v"]},
      {"name": "g", "op": "Greater", "inputs": ["d", "ten"]}], None, "value-dependent"),
    # a dtype mismatch: an error at every σ
    ([{"name": "g", "op": "Greater", "inputs": ["$v", "$b"]}], None, "error"),
])
def test_predicates_that_no_case_covers_are_refused(nodes, feeds, why):
    p = cond_program(nodes, feeds=feeds)
    assert computed_predicates(p) == {}, why
    v = check_rewrite(p, p, "atomic", timeout=2)
    assert v.verdict != "sound" or "computed predicates" not in v.reason


def test_float_predicates_are_not_cased_over_the_reals():
    nodes = [{"name": "h", "op": "Const", "value": {"dtype": "float32", "value": 0.5}},
             {"name": "g", "op": "Greater", "inputs": ["$f", "h"]}]
    p = cond_program(nodes, feeds={"v": {"dtype": "int64", "shape": []},
                                   "f": {"dtype": "float32", "shape": []}})
    assert len(computed_predicates(p)) == 1
    assert computed_predicates(p, real=True) == {}
    with pytest.raises(Undecided):
        specialize(p, real=True)


# ---------------------------------------------------------------------------
# The corpus graph

FIXTURE = json.loads((Path(__file__).parent / "grappler" / "tf_cond_assign.json").read_text())
ORIGINAL = program_from_json(FIXTURE["original"])


@pytest.mark.parametrize("optimizer", sorted(FIXTURE["rewritten"]))
def test_grappler_on_the_corpus_cond_is_proved(optimizer):
    q = program_from_json(FIXTURE["rewritten"][optimizer])
    v = check_rewrite(ORIGINAL, q, timeout=10)
    assert v.verdict == "sound", v.reason
    assert "computed predicates 'Greater'" in v.reason and v.stats["path"] == "control-flow/cases"


def test_a_dropped_edge_in_the_corpus_cond_is_unsound():
    """Grappler's default output for the corpus cond with the Read of
    `total` in the true branch no longer waiting for the AssignAdd."""
    raw = json.loads(json.dumps(FIXTURE["rewritten"]["dependency"]))
    dropped = 0
    for n in raw["nodes"]:
        if n.get("op") == "Read" and "then" in n["name"]:
            before = len(n["inputs"])
            n["inputs"] = [i for i in n["inputs"] if not (i.startswith("^") and "Assign" in i)]
            dropped += before - len(n["inputs"])
    assert dropped == 1
    q = program_from_json(raw)
    v = check_rewrite(ORIGINAL, q, timeout=10)
    assert v.verdict == "unsound", v.reason
    assert int(v.counterexample.feeds["x"].array) > 10
    assert v.counterexample.outcome not in set(
        outcome_set(ORIGINAL, v.counterexample.feeds, v.counterexample.init, "atomic"))
