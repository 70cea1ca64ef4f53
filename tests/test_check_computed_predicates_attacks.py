"""Attacks on the proof by cases on *computed* Switch predicates
(oracle/deadness.py `computed_predicates`, checking/control_flow.py stage 1),
each compared with the reference control-flow engine (oracle/controlflow.py):
small pairs where a false verdict was sought.

A float comparison is false both ways at NaN: `f < 0.5` and `!(f >= 0.5)`
are two terms, one case variable each, and their combination (false, true)
holds at NaN alone.  The case's counterexample must be confirmed at a σ of
the case, and NaN must be among the σ tried for it."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking.check import check_rewrite
from tfsem.oracle.deadness import computed_predicates
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

MODES = ("atomic", "decomposed")
F32 = {"f": {"dtype": "float32", "shape": []}}


def program(nodes, outputs=None, feeds=None, variables=("x",)):
    return program_from_json({"format": "tfsem.program/1", "variables": list(variables),
                              "feeds": feeds if feeds is not None else F32, "nodes": nodes,
                              "outputs": outputs or {}})


def write_cond(pred_nodes):
    """if g: x := 1 else: x := 2, the predicate `g` computed by `pred_nodes`."""
    return program(pred_nodes + [
        {"name": "h", "op": "Const", "value": {"dtype": "float32", "value": 0.5}},
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "sx", "op": "Switch", "inputs": ["vx", "g"]},
        {"name": "k", "op": "Const", "value": 0},
        {"name": "sk", "op": "Switch", "inputs": ["k", "g"]},
        {"name": "t", "op": "Identity", "inputs": ["sk:1"]},
        {"name": "e", "op": "Identity", "inputs": ["sk:0"]},
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^t"]},
        {"name": "two", "op": "Const", "value": 2, "inputs": ["^e"]},
        {"name": "wt", "op": "Assign", "fn": "Snd", "inputs": ["sx:1", "one"]},
        {"name": "wf", "op": "Assign", "fn": "Snd", "inputs": ["sx:0", "two"]}])


LESS = [{"name": "g", "op": "Less", "inputs": ["$f", "h"]}]
NOT_GE = [{"name": "ge", "op": "GreaterEqual", "inputs": ["$f", "h"]},
          {"name": "g", "op": "LogicalNot", "inputs": ["ge"]}]


def nan_sigma():
    return {"f": Tensor(np.float32("nan"), "float32")}, {"x": Tensor(np.int64(0), "int64")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("before, after, at_nan", [(LESS, NOT_GE, "false"), (NOT_GE, LESS, "true")],
                         ids=["less->not-ge", "not-ge->less"])
def test_a_comparison_rewritten_to_the_negated_complement_differs_at_nan(mode, before, after,
                                                                           at_nan):
    """Was `no-counterexample`: the case (f < 0.5 false, !(f >= 0.5) true)
    holds at f = NaN only, and the σ tried for it (_in_case: 0, ±1, the
    constants ± 1, ±inf) had no NaN; the refutation stage's σ had none
    either."""
    p, q = write_cond(before), write_cond(after)
    sigma = nan_sigma()
    assert not set(outcome_set(q, *sigma, mode)) <= set(outcome_set(p, *sigma, mode))
    v = check_rewrite(p, q, mode, timeout=10, backends=False, classify=False)
    assert v.verdict == "unsound", v.reason
    # (both nodes are named g: the case names the rewrite's term as such)
    other = "true" if at_nan == "false" else "false"
    assert f"the predicate 'g' = {at_nan}, the predicate 'g' of the rewrite = {other}" in v.reason
    assert np.isnan(v.counterexample.feeds["f"].array)
    assert v.counterexample.outcome not in set(
        outcome_set(p, v.counterexample.feeds, v.counterexample.init, mode))


def identity_chain(n: int, add: int):
    """x += add when a > 0, the predicate passed through n - 1 Identities."""
    nodes = [{"name": "zero", "op": "Const", "value": 0},
             {"name": "g0", "op": "Greater", "inputs": ["$a", "zero"]}]
    nodes += [{"name": f"g{i}", "op": "Identity", "inputs": [f"g{i - 1}"]} for i in range(1, n)]
    nodes += [{"name": "vx", "op": "Var", "var": "x"},
              {"name": "sx", "op": "Switch", "inputs": ["vx", f"g{n - 1}"]},
              {"name": "k", "op": "Const", "value": add},
              {"name": "w", "op": "Assign", "fn": "Add", "inputs": ["sx:1", "k"]}]
    return program(nodes, feeds={"a": {"dtype": "int64", "shape": []}})


def test_a_predicate_deeper_than_the_stack_is_not_cased_and_no_crash():
    """Was a RecursionError out of check_rewrite (computed_predicates' term()
    recursed once per node): a predicate through 1,200 Identities.  Now it
    is not cased; the refutation stage decides (before this round the same)."""
    p, q = identity_chain(1200, 1), identity_chain(1200, 2)
    assert computed_predicates(p) == {}
    v = check_rewrite(p, q, "atomic", timeout=10, backends=False, classify=False)
    assert v.verdict == "unsound", v.reason
    assert int(v.counterexample.feeds["a"].array) > 0
    # a short chain is cased as before
    assert len(computed_predicates(identity_chain(20, 1))) == 1
