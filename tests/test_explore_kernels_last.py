"""The eager steps that need no kernel fired before those that may
(oracle/explore.py `KERNELS_LAST`, `_Component.close`), against the order
before (last in, first out): the same state after every close, the same
outcomes (one run by priority, every run of a search), the same steps in
each schedule, in as many turns to the kernels' child or fewer.

Skipped without TensorFlow.  Shares the TensorFlow child with the other
kernel tests of the session."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

from tfsem.oracle import explore, kernels
from tfsem.oracle.budget import Budget
from tfsem.oracle.values import Tensor, exact

pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs the extra tfsem[tensorflow]")


@pytest.fixture(scope="module", autouse=True)
def kernels_on():
    old = os.environ.get(kernels.ENV)
    os.environ[kernels.ENV] = "1"
    kernels.prestart()
    import tfsem.oracle.opdefs  # noqa: F401  (the registry supplies DETERMINISTIC)
    yield
    if old is None:
        os.environ.pop(kernels.ENV, None)
    else:
        os.environ[kernels.ENV] = old


EXP = {"tf_attrs": {"T": "DT_FLOAT"}}


def _ladder(rungs: int = 4):
    """Two chains of kernels joined at each rung by numpy steps (an unrolled
    recurrent cell's shape): fired last in, first out, a chain's kernel
    waits for the other's numpy step and goes alone.  (No writes: the reads
    are eager, and one close runs both chains.)"""
    from tfsem.oracle.jsonio import program_from_json
    nodes = [{"name": "vx", "op": "Var", "var": "x"}, {"name": "vy", "op": "Var", "var": "y"},
             {"name": "rx", "op": "Read", "inputs": ["vx"]},
             {"name": "ry", "op": "Read", "inputs": ["vy"]}]
    a, b = "rx", "ry"
    for k in range(rungs):
        nodes += [{"name": f"ea{k}", "op": "tf.Exp/1/1", "inputs": [a], **EXP},
                  {"name": f"sb{k}", "op": "tf.Softmax/1/1", "inputs": [b], **EXP},
                  {"name": f"na{k}", "op": "Neg", "inputs": [f"ea{k}"]},
                  {"name": f"mb{k}", "op": "Mul", "inputs": [f"sb{k}", f"na{k}"]},
                  {"name": f"ab{k}", "op": "Add", "inputs": [f"mb{k}", b]}]
        a, b = f"na{k}", f"ab{k}"
    return program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [8]},
                      "y": {"dtype": "float32", "shape": [8]}},
        "nodes": nodes, "outputs": {"oa": a, "ob": b}})


def _race():
    """Two read-compute-assign threads on one variable, kernels in each: a
    search has several outcomes."""
    from tfsem.oracle.jsonio import program_from_json
    return program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [8]},
                      "y": {"dtype": "float32", "shape": [8]}},
        "nodes": [{"name": "vx", "op": "Var", "var": "x"}, {"name": "vy", "op": "Var", "var": "y"},
                  {"name": "r1", "op": "Read", "inputs": ["vx"]},
                  {"name": "r2", "op": "Read", "inputs": ["vx"]},
                  {"name": "ry", "op": "Read", "inputs": ["vy"]},
                  {"name": "e1", "op": "tf.Exp/1/1", "inputs": ["r1"], **EXP},
                  {"name": "n1", "op": "Neg", "inputs": ["e1"]},
                  {"name": "s2", "op": "tf.Softmax/1/1", "inputs": ["r2"], **EXP},
                  {"name": "m2", "op": "Mul", "inputs": ["s2", "ry"]},
                  {"name": "e3", "op": "tf.Exp/1/1", "inputs": ["m2"], **EXP},
                  {"name": "w1", "op": "Assign", "fn": "Add", "inputs": ["vx", "n1"]},
                  {"name": "w2", "op": "Assign", "fn": "Snd", "inputs": ["vx", "e3"]},
                  {"name": "wy", "op": "Assign", "fn": "Snd", "inputs": ["vy", "n1"]}],
        "outputs": {"o1": "n1", "o3": "e3"}})


INIT = {"x": Tensor(np.array([0.5, -1.0, 2.0, -0.0, 3.0, 1e-40, -7.5, 0.25], np.float32)),
        "y": Tensor(np.array([1.0, 2.0, -3.0, 0.5, -0.5, 4.0, 1.5, -2.0], np.float32))}


def _turns(monkeypatch):
    count = [0]
    real = kernels._Client._call

    def counted(self, request, op):
        count[0] += 1
        return real(self, request, op)
    monkeypatch.setattr(kernels._Client, "_call", counted)
    return count


def _exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


def _closes(p, last: bool, monkeypatch):
    """Each component run by priority (the smallest ready step first), as
    `run_by_priority` runs it: after every close, the state's key, its
    ready steps and the steps fired so far (a multiset); and the schedule."""
    from tfsem.checking import refute as ref
    monkeypatch.setattr(explore, "KERNELS_LAST", last)
    kernels._cache.clear()
    out, schedule = [], []
    for names, variables, outputs in explore.components(p):
        comp = ref._compiled(p, names, "atomic", "outputs+state", {}, variables, outputs)
        st = comp.root(INIT)
        while True:
            comp.close(st)
            fired = explore._schedule(st.sched)
            out.append((comp.key(st), tuple(sorted(st.ready)), Counter(fired)))
            if not st.ready:
                out.append(_exact_outcome(comp.outcome(st)))
                schedule += fired
                break
            t = min(st.ready)
            st.ready.discard(t)
            comp.fire(st, t)
    return out, schedule


@pytest.mark.parametrize("make", [_ladder, _race], ids=["ladder", "race"])
def test_the_state_after_every_close_is_the_same(make, monkeypatch):
    p = make()
    before, sched_before = _closes(p, False, monkeypatch)
    after, sched_after = _closes(p, True, monkeypatch)
    assert after == before
    assert Counter(sched_after) == Counter(sched_before)


def test_the_canonical_run_has_the_same_outcome_in_fewer_turns(monkeypatch):
    from tfsem.checking import refute as ref
    runs = {}
    for last in (False, True):
        monkeypatch.setattr(explore, "KERNELS_LAST", last)
        kernels._cache.clear()
        turns = _turns(monkeypatch)
        # (compiled again: the straight line a run by priority builds is
        # kept with the compiled program, shared by equal programs, and
        # holds the order of the run that built it)
        explore._COMPILED.clear()
        p = _ladder()
        o, sched = ref.canonical_outcome(p, {}, INIT, "atomic", "outputs+state")
        runs[last] = (_exact_outcome(o), sched, turns[0])
        monkeypatch.undo()
    (o0, s0, n0), (o1, s1, n1) = runs[False], runs[True]
    assert o1 == o0
    assert Counter(s1) == Counter(s0) and s1 != s0     # (the order is what changed)
    assert n1 < n0, (n0, n1)
    # the new schedule is a run of the program: replayed, it gives the outcome
    from tfsem.backends.execute import replay
    from tfsem.oracle.values import Tensor as T
    replayed = replay(p, {}, {k: T(v.array) for k, v in INIT.items()}, s1)
    assert _exact_outcome(replayed) == o1


@pytest.mark.parametrize("make", [_ladder, _race], ids=["ladder", "race"])
def test_a_search_finds_the_same_outcomes(make, monkeypatch):
    from tfsem.checking import refute as ref
    p = make()
    found = {}
    for last in (False, True):
        monkeypatch.setattr(explore, "KERNELS_LAST", last)
        kernels._cache.clear()
        outcomes = []
        for names, variables, outputs in explore.components(p):
            comp = ref._compiled(p, names, "atomic", "outputs+state", {}, variables, outputs)
            outcomes.append(sorted(map(repr, map(_exact_outcome,
                                                 explore._explore(comp, INIT, Budget())))))
        found[last] = outcomes
    assert found[True] == found[False]
    if make is _race:
        assert len(found[True][0]) >= 2      # (a race: the search has something to find)
