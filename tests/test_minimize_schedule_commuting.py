"""Schedule minimization without replays where the canonical order is the
schedule with commuting steps exchanged (checking/minimize.py `commutes_to`,
`minimize_schedule`), against the replaying minimization it shortcuts.

- `commutes_to(s, t)` implies that t replays to s's outcome: checked on
  random runs of generated programs (both semantics modes), pairs of runs at
  one σ, with the pairs it accepts counted (the claim is not vacuous).
- minimize_schedule gives, on random runs of generated programs, the same
  schedule with the shortcut as with it off (COMMUTE_WITHOUT_REPLAY), and
  the shortcut was taken on many of them.
- Two writes of one variable, or a write and a read, exchanged: not
  commuting; two reads exchanged: commuting."""

from __future__ import annotations

import random
import time

import numpy as np

from tfsem.backends.arraymodule import get_backend
from tfsem.backends.execute import device_machine, upload
from tfsem.checking import check as C
from tfsem.checking import minimize as mini
from tfsem.generators.strategies import random_programs
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule

SEMANTICS = ("atomic", "decomposed")


def _runs(p, feeds, init, semantics, count, seed):
    """`count` random schedules of p at σ (a uniformly drawn enabled step each time)."""
    b = get_backend("numpy")
    m = device_machine(p, b, semantics)
    rng = random.Random(seed)
    return [m.run_random(m.start(upload(feeds, b), upload(init, b)), rng).schedule
            for _ in range(count)]


def _outcome(p, feeds, init, schedule, semantics):
    return outcome_of(p, graph_of(p), run_schedule(p, feeds, init, schedule, semantics),
                      "outputs+state")


def _cases(count, seed, max_nodes=10):
    for i, p in enumerate(random_programs(count, seed, max_nodes=max_nodes)):
        if p.has_control_flow or not p.variables:
            continue
        feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
        yield i, p, feeds, init, SEMANTICS[i % 2]


def test_commuting_schedules_give_the_same_outcome():
    accepted = rejected_differing = 0
    for i, p, feeds, init, sem in _cases(80, 31):
        try:
            runs = _runs(p, feeds, init, sem, 6, i)
        except Exception:   # noqa: BLE001 (a program the backends do not run)
            continue
        outcomes = [_outcome(p, feeds, init, s, sem) for s in runs]
        for a in range(len(runs)):
            canonical = mini.canonical_order(p, runs[a])
            if mini.commutes_to(p, runs[a], canonical):
                accepted += 1
                assert _outcome(p, feeds, init, canonical, sem) == outcomes[a], (i, sem)
            for b in range(a + 1, len(runs)):
                if mini.commutes_to(p, runs[a], runs[b]):
                    accepted += 1
                    assert outcomes[a] == outcomes[b], (i, sem, runs[a], runs[b])
                elif outcomes[a] != outcomes[b]:
                    rejected_differing += 1
    assert accepted >= 400, accepted
    assert rejected_differing >= 50, rejected_differing


def test_minimize_schedule_is_the_replaying_one(monkeypatch):
    taken = compared = 0
    for i, p, feeds, init, sem in _cases(60, 47):
        try:
            runs = _runs(p, feeds, init, sem, 3, i)
        except Exception:   # noqa: BLE001
            continue
        for schedule in runs:
            outcome = _outcome(p, feeds, init, schedule, sem)
            far = time.monotonic() + 60
            monkeypatch.setattr(mini, "COMMUTE_WITHOUT_REPLAY", True)
            fast = mini.minimize_schedule(p, feeds, init, schedule, outcome, sem,
                                          "outputs+state", far)
            monkeypatch.setattr(mini, "COMMUTE_WITHOUT_REPLAY", False)
            slow = mini.minimize_schedule(p, feeds, init, schedule, outcome, sem,
                                          "outputs+state", far)
            assert fast == slow, (i, sem, schedule)
            assert _outcome(p, feeds, init, fast, sem) == outcome
            compared += 1
            canonical = mini.canonical_order(p, schedule)
            taken += canonical != list(schedule) and mini.commutes_to(p, schedule, canonical)
    assert compared >= 120 and taken >= 40, (compared, taken)


def _program():
    # x written twice (two Assigns of independent constants), read once
    return program_from_json({
        "variables": {"x": {"dtype": "int64", "shape": []}},
        "nodes": [
            {"name": "v", "op": "Var", "var": "x"},
            {"name": "c1", "op": "Const", "value": 1},
            {"name": "c2", "op": "Const", "value": 2},
            {"name": "a1", "op": "Assign", "fn": "Snd", "inputs": ["v", "c1"]},
            {"name": "a2", "op": "Assign", "fn": "Snd", "inputs": ["v", "c2"]},
            {"name": "r1", "op": "Read", "inputs": ["v"]},
            {"name": "r2", "op": "Read", "inputs": ["v"]},
        ],
        "outputs": {"o1": "r1", "o2": "r2"},
    })


def test_conflicting_accesses_do_not_commute():
    p = _program()
    base = ["v", "c1", "c2", "a1", "a2", "r1", "r2"]
    assert mini.commutes_to(p, base, ["v", "c2", "c1", "a1", "a2", "r1", "r2"])
    assert mini.commutes_to(p, base, ["v", "c1", "c2", "a1", "a2", "r2", "r1"])
    assert not mini.commutes_to(p, base, ["v", "c1", "c2", "a2", "a1", "r1", "r2"])
    assert not mini.commutes_to(p, base, ["v", "c1", "c2", "a1", "r1", "a2", "r2"])
    # (not a run: an Assign before its value's node)
    assert not mini.commutes_to(p, base, ["v", "c2", "a1", "c1", "a2", "r1", "r2"])
