"""Review of minimization's demand-driven test (checking/demand.py;
docs/review-demand-and-chain.md): the cone of one differing part decides
whether a candidate σ is still a counterexample.

Each program pair here aims at a step of the cone argument: a Read ordered
after a write only through a chain of control edges, a write outside an
output's cone that changes the variable the output's cone reads (after the
Read), Assign-f reading its own variable from `uninitialized`, a variable
read after its last write, an output whose two programs differ only at
-0.0 (NaN payloads equal), and decomposed Assign-f.  At every σ listed,
in both semantics modes and both observations, the cone test of every
part says "differs" exactly where the enumerating oracle (the reference
engine, not the race-free one-run shortcut) finds the part different,
and then the rewritten outcome is none of the original's.  End to end,
the σ an `unsound` verdict shows is confirmed by the enumeration, its
schedule gives the outcome shown, and numpy's replay confirms it.
"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import demand as D
from tfsem.checking.structural import race_free
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

MODES = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _prog(nodes, outputs, variables=("x",), feeds=None) -> object:
    return program_from_json({"format": "tfsem.program/1", "variables": list(variables),
                              "feeds": feeds or {}, "nodes": nodes, "outputs": outputs})


def _i(v) -> Tensor:
    return Tensor(np.int64(v), "int64")


def _f(v) -> Tensor:
    return Tensor(np.float32(v), "float32")


# A write ordered before the Read only through control edges (w1 -> c -> r),
# and a second write after the Read (outside the output's cone in P, inside
# it in P', where it comes before the Read): the output differs, the final
# value does not.
_CONTROL_CHAIN = [
    {"name": "v1", "op": "Var", "var": "x"},
    {"name": "w1", "op": "Assign", "fn": "Snd", "inputs": ["v1", "$a"]},
    {"name": "c", "op": "Const", "value": 0, "inputs": ["^w1"]},
    {"name": "v2", "op": "Var", "var": "x"},
    {"name": "r", "op": "Read", "inputs": ["v2", "^c"]},
    {"name": "v3", "op": "Var", "var": "x"},
    {"name": "w2", "op": "Assign", "fn": "Add", "inputs": ["v3", "$k", "^r"]},
]
_CONTROL_CHAIN_2 = [
    _CONTROL_CHAIN[0], _CONTROL_CHAIN[1], _CONTROL_CHAIN[2], _CONTROL_CHAIN[3],
    {"name": "w2", "op": "Assign", "fn": "Add", "inputs": ["v3", "$k", "^c"]},
    {"name": "r", "op": "Read", "inputs": ["v2", "^w2"]},
    _CONTROL_CHAIN[5],
]

# Assign-f reading its variable (Add on `uninitialized` keeps the error),
# then a Write; P' swaps them.
_ASSIGN_F = [
    {"name": "v1", "op": "Var", "var": "x"},
    {"name": "a1", "op": "Assign", "fn": "Add", "inputs": ["v1", "$k"]},
    {"name": "five", "op": "Const", "value": 5},
    {"name": "v2", "op": "Var", "var": "x"},
    {"name": "a2", "op": "Assign", "fn": "Snd", "inputs": ["v2", "five", "^a1"]},
    {"name": "v3", "op": "Var", "var": "y"},
    {"name": "ry", "op": "Read", "inputs": ["v3"]},
]
_ASSIGN_F_2 = [
    _ASSIGN_F[0], _ASSIGN_F[2], _ASSIGN_F[3],
    {"name": "a2", "op": "Assign", "fn": "Snd", "inputs": ["v2", "five"]},
    {"name": "a1", "op": "Assign", "fn": "Add", "inputs": ["v1", "$k", "^a2"]},
    _ASSIGN_F[5], _ASSIGN_F[6],
]

# A variable read after its last write; P' forwards the written value past
# a later AssignAdd (a wrong store-to-load forwarding).
_FORWARD = [
    {"name": "v1", "op": "Var", "var": "x"},
    {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["v1", "$a"]},
    {"name": "v2", "op": "Var", "var": "x"},
    {"name": "w2", "op": "Assign", "fn": "Add", "inputs": ["v2", "$k", "^w"]},
    {"name": "v3", "op": "Var", "var": "x"},
    {"name": "r", "op": "Read", "inputs": ["v3", "^w2"]},
]
_FORWARD_2 = _FORWARD[:4] + [{"name": "r", "op": "Identity", "inputs": ["$a", "^w2"]}]

# -0.0: Add(f, 0.0) is +0.0 where f is -0.0; P' fetches f itself.  A Read of
# a variable nobody writes sits beside it (its cone is one Read).
_SIGNED_ZERO = [
    {"name": "z", "op": "Const", "value": {"dtype": "float32", "value": 0.0}},
    {"name": "o", "op": "Add", "inputs": ["$f", "z"]},
    {"name": "v", "op": "Var", "var": "x"},
    {"name": "r", "op": "Read", "inputs": ["v"]},
]
_SIGNED_ZERO_2 = [_SIGNED_ZERO[0], {"name": "o", "op": "Identity", "inputs": ["$f"]},
                  _SIGNED_ZERO[2], _SIGNED_ZERO[3]]

F32 = {"dtype": "float32", "shape": []}
X32 = {"x": {"dtype": "float32", "shape": []}}

PAIRS = {
    "control chain": (_prog(_CONTROL_CHAIN, {"o": "r"}), _prog(_CONTROL_CHAIN_2, {"o": "r"}),
                      [({"a": _i(a), "k": _i(k)}, {"x": x})
                       for a in (0, 7) for k in (0, 3) for x in (_i(1), Error(UNINITIALIZED))]),
    "assign-f": (_prog(_ASSIGN_F, {"oy": "ry"}, ("x", "y")),
                 _prog(_ASSIGN_F_2, {"oy": "ry"}, ("x", "y")),
                 [({"k": _i(k)}, {"x": x, "y": _i(2)})
                  for k in (0, -5, 4) for x in (_i(1), Error(UNINITIALIZED))]),
    "forwarding": (_prog(_FORWARD, {"o": "r"}), _prog(_FORWARD_2, {"o": "r"}),
                   [({"a": _i(a), "k": _i(k)}, {"x": x})
                    for a in (0, 2) for k in (0, 1) for x in (_i(9), Error(UNINITIALIZED))]),
    "signed zero": (_prog(_SIGNED_ZERO, {"o": "o", "r": "r"}, X32, {"f": F32}),
                    _prog(_SIGNED_ZERO_2, {"o": "o", "r": "r"}, X32, {"f": F32}),
                    [({"f": _f(f)}, {"x": x}) for f in (-0.0, 0.0, np.nan, 1.5)
                     for x in (_f(-0.0), Error(UNINITIALIZED))]),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_cone_tests_agree_with_the_enumeration_part_by_part(name):
    p, q, sigmas = PAIRS[name]
    assert race_free(p) and race_free(q) and D.Demand.usable(p, q, True)
    differed = agreed = 0
    for sem, obs in MODES:
        demand = D.Demand(p, q, sem, obs)
        for feeds, init in sigmas:
            (o1,) = list(outcome_set(p, feeds, init, sem, obs, engine="reference"))
            (o2,) = list(outcome_set(q, feeds, init, sem, obs, engine="reference"))
            theirs = dict(o1.parts())
            for part, value in o2.parts():
                full = (value,) != (theirs[part],)
                cone = demand.confirm(feeds, init, part) is True
                assert cone == full, (name, sem, obs, part, feeds, init)
                if cone:
                    # (a part that differs: σ is a counterexample)
                    assert o2 not in {o1}
                differed += cone
                agreed += not cone
    assert differed and agreed, (differed, agreed)


def test_the_control_chain_pair_differs_in_the_output_only():
    # (what the pair is for: w2 writes x outside the output's cone in P)
    p, q, _ = PAIRS["control chain"]
    assert "w2" not in D.cone(p, ("output", "o")) and "w2" in D.cone(q, ("output", "o"))
    demand = D.Demand(p, q, "atomic", "outputs+state")
    sigma = ({"a": _i(7), "k": _i(3)}, {"x": _i(1)})
    assert demand.confirm(*sigma, ("output", "o")) is True
    assert demand.confirm(*sigma, ("variable", "x")) is None


@pytest.mark.parametrize("name", ["control chain", "signed zero", "forwarding"])
def test_the_sigma_shown_is_confirmed_by_the_enumeration_and_numpy(name, monkeypatch):
    p, q, sigmas = PAIRS[name]
    # (cone tests even where a full confirmation is cheap, as on these small
    # programs: where the checker has that threshold, it is lowered)
    monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0, raising=False)
    v = check_rewrite(p, q, "atomic", "outputs+state", timeout=10, structural=False,
                      classify=False)
    assert v.verdict == "unsound", v.reason
    cx = v.counterexample
    state = run_schedule(q, cx.feeds, cx.init, cx.schedule, "atomic")
    assert outcome_of(q, graph_of(q), state, "outputs+state") == cx.outcome
    full = outcome_set(p, cx.feeds, cx.init, "atomic", "outputs+state", engine="reference")
    assert cx.outcome not in full
    assert "numpy" in v.confirmed, (v.confirmed, v.stats.get("backends"))
    record = v.stats.get("minimization", {})
    # (the cone test ran, and it or the σ of a part's cones left unchanged,
    # check.py `minimized`, took steps; the σ taken last was confirmed in full)
    assert record.get("cone_tests", 0) > 0, record
    assert record.get("cone_accepted", 0) + record.get("unchanged_cones", 0) > 0, record
    assert "final" not in record, record
    if name == "signed zero":
        # (the only σ: f is -0.0, which minimization's 0 (+0.0) would lose)
        assert np.signbit(cx.feeds["f"].array) and float(cx.feeds["f"].array) == 0.0


def test_no_cone_test_under_float_real():
    # (`--float real`: the demand test is off, and the counterexample is one
    # over the reals, confirmed as such)
    p, q, _ = PAIRS["forwarding"]
    v = check_rewrite(p, q, "atomic", "outputs+state", timeout=10, structural=False,
                      classify=False, float_mode="real")
    assert v.verdict == "unsound"
    assert not v.stats.get("minimization", {}).get("cone_tests"), v.stats
