"""The structural rule's memo of the original's half (checking/structural.py
`ORIGINAL_MEMO`: the original's term plan and static-shape passes,
remembered per program object while the registry's functions it names are
unchanged).  On generated pairs (benchmarks/review_structural_campaign.py's
generator: products by ones, Reshapes to the argument's own shape,
Identity), one original checked against several rewrites in a row, as a
check of Grappler's optimizers does: the rule with the memo gives the same
result, proof and reason, as the rule computing everything each time."""

from __future__ import annotations

import gc
import random

from hypothesis import settings

from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from test_review_attacks_structural_speedups import _campaign

NIGHTLY = settings.get_current_profile_name() == "nightly"


def _families(n: int, rewrites: int = 4, seed: int = 2314, modes: bool = True):
    """n originals, each with `rewrites` rewrites (the same object each
    time); with `modes`, each rewrite with a semantics and an observation
    drawn, else the rewrite alone."""
    camp = _campaign()
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        nodes, outputs, writes = camp._gen(rng)
        opts = [x["name"] for x in nodes if x.get("opt")]
        if not opts:
            continue
        keep_p = {o for o in opts if rng.random() < 0.5}
        p = camp._instance(nodes, outputs, writes, keep_p)
        qs = [camp._instance(nodes, outputs, writes, keep_p ^ {rng.choice(opts)})
              for _ in range(rewrites)]
        if modes:
            qs = [(q, rng.choice(["atomic", "decomposed"]), rng.choice(["outputs", "outputs+state"]))
                  for q in qs]
        out.append((p, qs))
    return out


def _answers(families):
    return [[(r.proved, r.reason) for r in (structural_refinement(p, q, s, o) for q, s, o in qs)]
            for p, qs in families]


def test_the_original_memo_changes_no_result(monkeypatch):
    families = _families(120 if NIGHTLY else 25)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    with_memo = _answers(families)
    # (every original was remembered, and its entry is used by the next rewrites)
    assert all(structural._ORIGINALS.get(id(p), (lambda: None,))[0]() is p for p, _ in families)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    without = _answers(families)
    assert with_memo == without
    flat = [a for row in with_memo for a in row]
    assert any(proved for proved, _ in flat) and not all(proved for proved, _ in flat)


def test_the_original_memo_goes_with_the_program(monkeypatch):
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    (p, qs), = _families(1, rewrites=1)
    q, s, o = qs[0]
    structural_refinement(p, q, s, o)
    key = id(p)
    assert key in structural._ORIGINALS
    del p
    gc.collect()
    assert key not in structural._ORIGINALS


def test_a_replaced_function_is_not_answered_from_the_memo(monkeypatch):
    """An entry holds while the functions the original names are the
    registry's: a function replaced by hand (no `register`, no version)
    makes the next call compute the original's half again."""
    from tfsem.oracle import functions as fns
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    (p, qs), = _families(1, rewrites=1)
    q, s, o = qs[0]
    structural_refinement(p, q, s, o)
    first = structural._ORIGINALS[id(p)][3]
    name = next(n for n, f in structural._ORIGINALS[id(p)][2] if f is not None)
    monkeypatch.setitem(fns._REGISTRY, name, fns._REGISTRY[name])   # the same: still used
    structural_refinement(p, q, s, o)
    assert structural._ORIGINALS[id(p)][3] is first
    import dataclasses
    monkeypatch.setitem(fns._REGISTRY, name, dataclasses.replace(fns._REGISTRY[name]))
    structural_refinement(p, q, s, o)
    assert structural._ORIGINALS[id(p)][3] is not first


def test_the_originals_steps_and_reads_kept_change_no_result(monkeypatch):
    """What the rule's proof keeps of the original besides its plan (its
    step DAG with ancestor sets, its unobserved Reads, its exact plan,
    whether it is blind to NaN payloads: `_of_original`), and `race_free`
    reading the steps kept: the same proofs, reasons and counts, and the
    same race-freedom, as computing them each time."""
    from tfsem.checking.structural import race_free
    families = _families(60 if NIGHTLY else 20)

    def answers():
        rows = []
        for p, qs in families:
            for q, s, o in qs:
                r = structural_refinement(p, q, s, o)
                stats = {k: v for k, v in r.stats.items() if k != "seconds"}
                rows.append((r.proved, r.reason, stats, race_free(p), race_free(q)))
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    kept = answers()
    keys = set()
    for p, _ in families:
        keys |= {k if isinstance(k, str) else k[0] for k in structural._original_memo(p)}
    # (the proofs reached the kept steps, unobserved Reads and exact plan)
    assert {"steps", "unobserved", "exact_plan", "nan_blind"} <= keys
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    assert answers() == kept
    assert any(row[0] for row in kept) and not all(row[0] for row in kept)
