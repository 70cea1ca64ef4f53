"""Every stage of the checker obeys its time budget (issue 23, item 3): the
symbolic search (also inside one state, where functions build terms), the
encoding of the solver queries, the solver, and the concrete stages after
them.  A budget that runs out is `unknown` (or `no-counterexample` when σ
were tried), and names the budget."""

from __future__ import annotations

import time

import pytest

from tfsem.checking import check_rewrite
from tfsem.checking.encode import Encoder, EncodingTimeout
from tfsem.checking.symbolic import Algebra
from tfsem.generators.strategies import random_programs
from tfsem.oracle.program import TensorType
from tfsem.rewrites import builtin_passes


def test_the_encoder_stops_at_its_deadline():
    algebra = Algebra()
    (x,) = algebra.leaf("feed", "x", TensorType("float32", ())).elems
    t = x
    for _ in range(200):
        t = algebra.apply_elem("add", (algebra.apply_elem("mul", (t, t)), x))
    enc = Encoder()
    enc.deadline = time.monotonic() - 1.0
    with pytest.raises(EncodingTimeout):
        enc.elem(t)
    # without a deadline the same terms are built, each once
    enc = Encoder()
    enc.elem(t)
    assert enc._built == 401


def test_a_symbolic_state_stops_at_the_deadline():
    # functions applied during one state look at the clock too
    from tfsem.oracle import functions as fns
    from tfsem.oracle.explore import Budget, BudgetExceeded
    algebra = Algebra()
    algebra.budget = Budget(10, 0.0)
    algebra.budget.started -= 1.0
    leaf = algebra.leaf("feed", "x", TensorType("int64", (4,)))
    add = fns.lookup("Add")
    with pytest.raises(BudgetExceeded):
        value = leaf
        for _ in range(64):
            (value,) = algebra.apply(add, (value, leaf))


@pytest.fixture(scope="module")
def large_program():
    # a 215-node generated program on which the symbolic search of the
    # original explores a few dozen states per second (every state builds
    # large terms)
    return random_programs(5, 0, max_nodes=400)[4]


@pytest.mark.parametrize("budget", [1.0, 2.0])
def test_a_small_budget_on_a_large_program_is_kept(large_program, budget):
    p = large_program
    assert len(p.nodes) > 150
    q = builtin_passes()["cse-stateful"].function(p)
    assert q != p
    t0 = time.monotonic()
    v = check_rewrite(p, q, "atomic", "outputs+state", timeout=budget, backends=False)
    wall = time.monotonic() - t0
    # (a generous margin: the test machine is shared)
    assert wall < budget * 1.5 + 2.0, (wall, v.reason)
    assert v.verdict in ("unknown", "no-counterexample"), (v.verdict, v.reason)
    assert f"time budget ({budget:g} s)" in v.reason, v.reason
    assert "tried" in v.stats
