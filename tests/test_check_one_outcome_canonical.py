"""The one-outcome comparisons (checking/check.py `_one_outcome_comparisons`)
run each program in its canonical order (`refute.canonical_outcome`, a
compiled component's straight line from its second run on) instead of in a
random order (`ONE_OUTCOME_CANONICAL`).  Where the symbolic search found one
outcome of each program, every run of each gives it, so the comparisons,
and so the verdicts, are the same either way: checked here with the switch
on and off over Grappler's stored rewrites, the case corpus and generated
programs with their mutants, on the path a real graph takes (the checker
told the programs need TensorFlow's kernels)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle import applications as A
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import exact

from test_check_mutated_pairs import _mutants
from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401

HERE = Path(__file__).parent


def _summary(v):
    cx = v.counterexample
    out = [v.verdict, v.stats.get("one_outcome"), v.stats.get("tried")]
    if cx is not None:
        # (the schedule is a run of P' either way, P' has one outcome: the
        # schedules of the two runs may differ, the σ and the outcome not)
        out += [sorted((k, exact(x)) for k, x in cx.feeds.items()),
                sorted((k, exact(x)) for k, x in (cx.init or {}).items()),
                [(k, exact(x)) for k, x in cx.outcome.outputs],
                [(k, exact(x)) for k, x in (cx.outcome.state or ())]]
    return out


def _pairs():
    for path in sorted((HERE / "grappler").glob("*.json")):
        doc = json.loads(path.read_text())
        for opt, rewritten in doc["rewritten"].items():
            yield f"{path.stem}:{opt}", doc["original"], rewritten
    for path in sorted((HERE / "cases").glob("*.json")):
        doc = json.loads(path.read_text())
        if doc.get("expect") != "invalid":
            yield path.stem, doc["original"], doc["rewritten"]


def _both(monkeypatch, make, **kw):
    got = []
    for on in (True, False):
        monkeypatch.setattr(C, "ONE_OUTCOME_CANONICAL", on)
        A.clear()
        p, q = make()
        with as_if_kernels():
            v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                              classify=False, structural=False, **kw)
        got.append(_summary(v))
    return got


def test_stored_rewrites_and_cases_give_the_same_comparisons(monkeypatch,
                                                             no_solver_candidates):  # noqa: F811
    compared = differences = 0
    for name, original, rewritten in _pairs():
        try:
            make = lambda: (program_from_json(original), program_from_json(rewritten))  # noqa: E731
            make()
        except Exception:  # noqa: BLE001 - a case whose programs do not load
            continue
        on, off = _both(monkeypatch, make)
        assert on == off, name
        if on[1] and on[1].get("compared") is not None:
            compared += 1
        differences += bool(on[1] and on[1].get("found"))
    # (the path was taken, and found differences, not only agreements)
    assert compared >= 10 and differences >= 1, (compared, differences)


def test_generated_programs_and_mutants_give_the_same_comparisons(monkeypatch,
                                                                  no_solver_candidates):  # noqa: F811
    rng = random.Random(5)
    taken = 0
    for i, p in enumerate(random_programs(120, 23, max_nodes=10)):
        if p.has_control_flow:
            continue
        for q in [p, *_mutants(p, rng)][:3]:
            on, off = _both(monkeypatch, lambda: (p, q))
            assert on == off, i
            taken += bool(on[1])
    assert taken >= 6, taken


def test_the_comparisons_run_in_the_canonical_order(monkeypatch, no_solver_candidates):  # noqa: F811
    """With the switch on, the comparisons make no random run (so the
    test above compared two different ways of running)."""
    from test_check_one_outcome import DOUBLE_ADD, DOUBLE_MUL
    calls = {"sample": 0, "canonical": 0}
    sample, canonical = ref.sample_outcomes, ref.canonical_outcome

    def counted_sample(*a, **k):
        calls["sample"] += 1
        return sample(*a, **k)

    def counted_canonical(*a, **k):
        calls["canonical"] += 1
        return canonical(*a, **k)
    monkeypatch.setattr(ref, "sample_outcomes", counted_sample)
    monkeypatch.setattr(ref, "canonical_outcome", counted_canonical)
    monkeypatch.setattr(C, "PROBE", False)
    for on in (True, False):
        monkeypatch.setattr(C, "ONE_OUTCOME_CANONICAL", on)
        calls.update(sample=0, canonical=0)
        with as_if_kernels():
            v = check_rewrite(DOUBLE_ADD, DOUBLE_MUL, timeout=10, structural=False)
        assert v.verdict == "no-counterexample"
        n = v.stats["one_outcome"]["compared"]
        assert n >= 4
        if on:
            assert calls["sample"] == 0 and calls["canonical"] == 2 * n, calls
        else:
            assert calls["sample"] >= 2 * n, calls
