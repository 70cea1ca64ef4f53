"""`minimize.commutes_to` against every run of small hand-written programs
built to attack it (docs/review-counterexample-stages.md): two Assigns of one
variable (Assign-Add and a plain Write), Reads of it, a NoOp ordering some
of them by control edges, an uninitialized variable's error value flowing
through a function and an Assign, in both semantics modes (the decomposed
Assign's read and write steps).  On runs of them (one per final state of the
reference semantics' enumeration, and 400 drawn step by step at random) and
pairs s, t of them:

- commutes_to(s, t) implies that s and t give the same outcome;
- commutes_to(s, canonical_order(s)) implies that the canonical order gives
  s's outcome (what minimize_schedule takes without a replay);
- a sequence that is no run (a step before its edge's source, a step twice,
  a write step before its read step) is never taken as a run's equal."""

from __future__ import annotations

import itertools
import random

import pytest

from tfsem.checking import minimize as mini
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.semantics import behaviours, enabled, fire, graph_of, initial_state, outcome_of
from tfsem.oracle.values import Error, Tensor

import numpy as np


def _program():
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": ["x", "y"],
        "nodes": [
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "vy", "op": "Var", "var": "y"},
            {"name": "one", "op": "Const", "value": 1},
            {"name": "add", "op": "Assign", "fn": "Add", "inputs": ["vx", "one"]},
            {"name": "r1", "op": "Read", "inputs": ["vx"]},
            {"name": "ry", "op": "Read", "inputs": ["vy"]},
            {"name": "s", "op": "Add", "inputs": ["ry", "one"]},
            {"name": "wx", "op": "Write", "inputs": ["vx", "s"]},
            {"name": "nop", "op": "NoOp", "inputs": ["^r1"]},
            {"name": "r2", "op": "Read", "inputs": ["vx", "^nop"]},
            {"name": "wy", "op": "Write", "inputs": ["vy", "r2"]},
        ],
        "outputs": {"a": "r1", "b": "r2", "c": "s"}})


def _random_runs(p, init, semantics, count, seed):
    """`count` runs, each step drawn uniformly among the enabled ones (the
    naive enumeration of every run: 121,920 runs in decomposed mode)."""
    g = graph_of(p)
    rng = random.Random(seed)
    for _ in range(count):
        st, sched = initial_state(p, g, {}, init), []
        while steps := enabled(p, g, st, semantics):
            step = rng.choice(steps)
            st = fire(p, g, st, step)
            sched.append(step)
        yield tuple(sched), outcome_of(p, g, st, "outputs+state")


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@pytest.mark.parametrize("y_init", [None, 5])
def test_commutes_to_on_every_pair_of_runs(semantics, y_init):
    p = _program()
    g = graph_of(p)
    init = {"x": Tensor(np.array(0, np.int64), "int64")}
    if y_init is not None:
        init["y"] = Tensor(np.array(y_init, np.int64), "int64")
    runs = [(tuple(s), outcome_of(p, g, st, "outputs+state"))
            for s, st in behaviours(p, {}, init, semantics)]
    runs += list(_random_runs(p, init, semantics, 400, len(runs)))
    outcomes = dict(runs)
    assert len(set(outcomes.values())) > 1            # (the races give several outcomes)
    if y_init is None:
        assert any(isinstance(v, Error) for o in outcomes.values() for _, v in o.outputs)
    accepted = commuted = 0
    for s, o in runs:
        canonical = tuple(mini.canonical_order(p, s))
        if mini.commutes_to(p, s, canonical):
            commuted += 1
            if canonical not in outcomes:
                outcomes[canonical] = next(o2 for c, o2 in _replayed(p, init, semantics,
                                                                     [canonical]))
            assert outcomes[canonical] == o, (s, canonical)
    step = max(1, len(runs) // 150)
    sample = runs[::step]
    for (s, o), (t, u) in itertools.combinations(sample, 2):
        if mini.commutes_to(p, s, t):
            accepted += 1
            assert o == u, (s, t)
            assert mini.commutes_to(p, t, s)
    assert commuted > 0 and accepted > 0 and commuted < len(runs)


def _replayed(p, init, semantics, schedules):
    from tfsem.oracle.semantics import run_schedule
    g = graph_of(p)
    for c in schedules:
        yield c, outcome_of(p, g, run_schedule(p, {}, init, list(c), semantics), "outputs+state")


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_no_run_is_never_a_runs_equal(semantics):
    p = _program()
    init = {"x": Tensor(np.array(0, np.int64), "int64")}
    s, _ = next(iter(behaviours(p, {}, init, semantics)))
    s = list(s)
    canonical = mini.canonical_order(p, s)
    # a Read before its Var handle
    i, j = canonical.index("vx"), canonical.index("r1")
    bad = canonical[:i] + canonical[i + 1:j + 1] + ["vx"] + canonical[j + 1:]
    assert not mini.commutes_to(p, bad, canonical)
    assert not mini.commutes_to(p, canonical, bad)
    # a step twice (and another missing)
    twice = canonical[:-1] + [canonical[0]]
    assert not mini.commutes_to(p, twice, canonical)
    if semantics == "decomposed":
        k = canonical.index("add@read")
        swapped = canonical[:k] + ["add@write", "add@read"] + canonical[k + 2:]
        assert not mini.commutes_to(p, swapped, canonical)
