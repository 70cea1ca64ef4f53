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
