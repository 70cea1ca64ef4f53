"""The structural rule obeys the check's deadline (issue 23, item 3: every
stage obeying the deadline): `structural_refinement(..., deadline=t)` and
`loops_unchanged(..., deadline=t)` stop once time.monotonic() passes t,
proving nothing ("no proof (budget)"), and `check_rewrite` gives the rule
its own deadline, after which the check goes on by its existing rules.
The program is large (a training-step-like chain of several thousand
nodes over several variables), so that the rule without a deadline takes
much longer than the budget given it."""

from __future__ import annotations

import time

from tfsem.checking import check_rewrite
from tfsem.checking.structural import NO_PROOF_BUDGET, structural_refinement
from tfsem.checking.structural_loops import loops_unchanged
from tfsem.oracle.jsonio import program_from_json

VARIABLES = 8
CHAIN = 250


def big(identity: bool = False, chain: int = CHAIN):
    """Each of 8 variables read, `chain` flushed sums and products with the
    feed, written back; the sum of the chains fetched.  `identity`: every
    chain's last node through an Identity (a rewrite the rule proves)."""
    nodes = []
    outs = []
    for v in range(VARIABLES):
        nodes += [{"name": f"v{v}", "op": "Var", "var": f"x{v}"},
                  {"name": f"r{v}", "op": "Read", "inputs": [f"v{v}"]}]
        prev = f"r{v}"
        for i in range(chain):
            nodes.append({"name": f"n{v}_{i}", "op": "Add.ftz" if i % 2 else "Mul.ftz",
                          "inputs": [prev, "$b"]})
            prev = f"n{v}_{i}"
        if identity:
            nodes.append({"name": f"id{v}", "op": "Identity", "inputs": [prev]})
            prev = f"id{v}"
        nodes.append({"name": f"w{v}", "op": "Write", "inputs": [f"v{v}", prev, f"^r{v}"]})
        outs.append(prev)
    total = outs[0]
    for k, o in enumerate(outs[1:]):
        nodes.append({"name": f"t{k}", "op": "Add.ftz", "inputs": [total, o]})
        total = f"t{k}"
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {f"x{v}": {"dtype": "float32", "shape": [4]} for v in range(VARIABLES)},
        "feeds": {"b": {"dtype": "float32", "shape": [4]}},
        "nodes": nodes, "outputs": {"out": total}})


P, Q = big(), big(identity=True)


def test_the_rule_stops_at_its_deadline_with_no_proof():
    t = time.monotonic()
    free = structural_refinement(P, Q)
    unbounded = time.monotonic() - t
    assert free.proved, free.reason                 # (what the budget takes away)
    budget = unbounded / 10
    t = time.monotonic()
    r = structural_refinement(P, Q, deadline=t + budget)
    took = time.monotonic() - t
    assert not r.proved and r.reason == NO_PROOF_BUDGET and r.stats["budget"]
    # stopped close to the deadline: far sooner than the rule's own time
    assert took < budget + unbounded / 3, (took, budget, unbounded)


def test_a_deadline_already_past_stops_the_rule_at_once():
    t = time.monotonic()
    r = structural_refinement(P, Q, deadline=t - 1.0)
    assert not r.proved and r.stats["budget"] and r.reason.startswith("no proof (budget)")
    assert r.stats["seconds"] < 0.05


def test_a_check_with_a_tiny_budget_does_not_prove_it_structurally():
    # (a smaller program: the stages after the rule are not timed here)
    p, q = big(chain=20), big(identity=True, chain=20)
    assert structural_refinement(p, q).proved
    v = check_rewrite(p, q, timeout=0.001, backends=False)
    assert v.verdict != "sound" or v.stats.get("path") != "structural"
    assert NO_PROOF_BUDGET in str(v.stats.get("structural", "")), v.stats.get("structural")


def test_loops_unchanged_obeys_the_deadline():
    import importlib
    loops = importlib.import_module("test_check_structural_loops")
    p = loops.reading_loop()
    q = loops.with_identity(p)
    assert loops_unchanged(p, q).proved
    r = loops_unchanged(p, q, deadline=time.monotonic() - 1.0)
    assert not r.proved and r.reason == NO_PROOF_BUDGET and r.stats["budget"]
