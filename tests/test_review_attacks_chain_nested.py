"""Review of the control-flow engine's shortcuts on loops inside loops
(docs/review-demand-and-chain.md): the eager batches (`Machine.batch_eager`),
states fired in place (`Machine.in_place`) and, where this tree has it, the
chain of eager steps after a batch (`Machine.chain_eager`, with the
candidates of a new context found among its frames' nodes only) give the
outcome sets, set for set, of the engine with each of them off; and every
witness schedule of the fast engine replays, on the oracle and on numpy, to
its outcome.

The programs (generators/nested_loops.py): nested while loops with Reads
and Assign-f in both bodies through chains of constant Enters, inner trip
counts from the outer counter or σ (past the iteration bound: compared as
LoopBoundExceeded), conds inside bodies (dead branches), loop-invariant
constant Enters, TensorLists accumulated across iterations, NextIteration
with control inputs and inner Exits waited for by the outer body.  The
campaign of 4,000 such cases against main's engine is
benchmarks/review_chain_engines.py's."""

from __future__ import annotations

import os

import pytest

from tfsem.backends.controlflow import replay_outcome
from tfsem.generators.nested_loops import nested_program
from tfsem.generators.strategies import random_inputs
from tfsem.oracle import controlflow as cf
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.controlflow import LoopBoundExceeded
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json

#: nested loops with 2-9 outcomes (Reads and Assign-f in both bodies), with
#: TensorLists, and past the iteration bound: seeds whose runs take at most
#: 0.4 s with every shortcut off (TFSEM_REVIEW_EXAMPLES=N: the first N seeds
#: of programs with control flow instead, a campaign)
SEEDS = [130, 384, 145, 136, 396, 373, 177, 319, 120, 174, 125, 327, 155, 225,
         15, 49, 35, 115, 86, 40, 3, 14, 61, 56, 58, 11, 73]
if os.environ.get("TFSEM_REVIEW_EXAMPLES"):
    SEEDS = [k for k in range(4 * int(os.environ["TFSEM_REVIEW_EXAMPLES"]))
             if any(n["op"] == "Enter" for n in nested_program(k)["nodes"])][
        :int(os.environ["TFSEM_REVIEW_EXAMPLES"])]
KNOBS = [k for k in ("batch_eager", "in_place", "chain_eager") if hasattr(cf.Machine, k)]


def _outcomes(p, feeds, init, semantics, observe, bound, off: bool):
    """Outcomes(P, σ) as {outcome: witness}, or the exception's kind."""
    m = cf.Machine(p, graph_of(p), semantics, bound)
    if off:
        for knob in KNOBS:
            setattr(m, knob, False)
    out = {}
    try:
        for sched, s in cf.behaviours(p, m.g, feeds, init, semantics, True, None, bound,
                                      2.0, machine=m):
            out.setdefault(m.outcome(s, observe), list(sched))
    except LoopBoundExceeded:
        return "bound"
    except BudgetExceeded:
        return "budget"
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_fast_engine_equals_the_engine_with_its_shortcuts_off(seed):
    p = program_from_json(nested_program(seed))
    semantics = ("atomic", "decomposed")[seed % 2]
    observe = ("outputs+state", "outputs")[seed // 2 % 2]
    bound = (3, 16)[seed % 3 == 0]
    feeds, init = random_inputs(p, seed, edge_p=0.1)
    fast = _outcomes(p, feeds, init, semantics, observe, bound, off=False)
    slow = _outcomes(p, feeds, init, semantics, observe, bound, off=True)
    if "budget" in (fast, slow):
        pytest.skip("the budget ran out")   # (not compared: which one is faster is no fact)
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
        return
    assert set(fast) == set(slow), (seed, KNOBS)
    for outcome, sched in fast.items():
        s = cf.run_schedule(p, graph_of(p), feeds, init, sched, semantics, bound)
        assert cf.Machine(p, graph_of(p), semantics, bound).outcome(s, observe) == outcome
        assert replay_outcome(p, feeds, init, sched, semantics, observe,
                              max_iterations=bound) == outcome
