"""The probe runs a race-free original at its own σ (ones, the largest
float) in its canonical order, remembered across the checks of one
original (checking/check.py `PROBE_RACE_FREE_ORIGINAL`), instead of in a
random order.  A race-free program has one outcome at every σ, so the
comparison is the same: the verdicts, the probe's findings and the
counterexamples (σ, schedule, outcome) are checked equal with the switch on
and off over Grappler's stored rewrites, the case corpus and generated
programs with their mutants, on the path a real graph takes."""

from __future__ import annotations

import random

from tfsem.checking import canonical_memo
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import random_programs
from tfsem.oracle import applications as A
from tfsem.oracle.jsonio import program_from_json

from test_check_mutated_pairs import _mutants
from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401
from test_check_one_outcome_canonical import _pairs, _summary


def _probe(v):
    return {k: x for k, x in (v.stats.get("probe") or {}).items() if k != "seconds"}


def _both(monkeypatch, make):
    # (the probe on small programs too: it runs where a program has this
    # many variable accesses)
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    got = []
    for on in (True, False):
        monkeypatch.setattr(C, "PROBE_RACE_FREE_ORIGINAL", on)
        A.clear()
        canonical_memo.clear()
        p, q = make()
        with as_if_kernels():
            v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                              classify=False, structural=False)
        summary = _summary(v)
        if v.counterexample is not None:
            summary.append(list(v.counterexample.schedule))
        got.append((summary, _probe(v)))
    return got


def test_stored_rewrites_and_cases_give_the_same_probe(monkeypatch,
                                                       no_solver_candidates):  # noqa: F811
    probed = found = 0
    for name, original, rewritten in _pairs():
        try:
            make = lambda: (program_from_json(original), program_from_json(rewritten))  # noqa: E731
            p, _ = make()
        except Exception:  # noqa: BLE001 - a case whose programs do not load
            continue
        on, off = _both(monkeypatch, make)
        assert on == off, name
        if on[1].get("sigmas") and race_free(p):
            probed += 1
            found += bool(on[1].get("found"))
    assert probed >= 10 and found >= 1, (probed, found)


def test_generated_programs_and_mutants_give_the_same_probe(monkeypatch,
                                                            no_solver_candidates):  # noqa: F811
    rng = random.Random(7)
    probed = 0
    for i, p in enumerate(random_programs(80, 29, max_nodes=10)):
        if p.has_control_flow:
            continue
        for q in [p, *_mutants(p, rng)][:3]:
            on, off = _both(monkeypatch, lambda: (p, q))
            assert on == off, i
            probed += bool(on[1].get("sigmas")) and race_free(p)
    assert probed >= 10, probed


def test_a_racy_original_is_still_run_in_a_random_order(monkeypatch):
    """Only a race-free original's run is the canonical one: a racy
    original's runs at the probe's σ stay random runs (its canonical run
    is one of its outcomes, not all of them)."""
    from test_check_one_outcome import program, const
    racy = program([{"name": "v", "op": "Var", "var": "x"},
                    const("one", 1.0), const("two", 2.0),
                    {"name": "w1", "op": "Write", "inputs": ["v", "one"]},
                    {"name": "w2", "op": "Write", "inputs": ["v", "two"]},
                    {"name": "o", "op": "Identity", "inputs": ["$a"]}])
    forced = program([{"name": "v", "op": "Var", "var": "x"},
                      const("one", 1.0), const("two", 2.0),
                      {"name": "w1", "op": "Write", "inputs": ["v", "one"]},
                      {"name": "w2", "op": "Write", "inputs": ["v", "two", "^w1"]},
                      {"name": "o", "op": "Identity", "inputs": ["$a"]}])
    assert not race_free(racy)
    calls = []
    real = canonical_memo.canonical_outcome
    monkeypatch.setattr(canonical_memo, "canonical_outcome",
                        lambda p, *a, **k: calls.append(p) or real(p, *a, **k))
    monkeypatch.setattr(C, "PROBE_RACE_FREE_ORIGINAL", True)
    with as_if_kernels():
        v = check_rewrite(racy, forced, timeout=10, structural=False)
    assert v.verdict in ("sound", "no-counterexample"), v.reason
    assert racy not in calls
