"""Minimization's candidates taken with no run where a part that differed
keeps its cones' σ (checking/demand.py `Demand.kept_parts`, check.py
`_Checker.minimized`, `UNCHANGED_CONES_FREE`), against the oracle and
against the minimization without the shortcut.

- A candidate that leaves the feeds and variables a differing part's cones
  read with the same bits is a counterexample, and that part differs there
  (the full confirmation says so); one that changes what they read is not
  said to keep the part.
- Checks with and without the shortcut give the same verdicts on generated
  programs (cone tests on and off) and on tests/cases, and every `unsound`
  one shows a σ the enumerating oracle confirms; where full confirmations
  are cheap (no cone tests) the shortcut is not taken.
- Nothing is kept between checks: a mutated rewrite gets its own cones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import demand as D
from tfsem.checking import refute as ref
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.values import Tensor

from test_check_demand_confirm import _pairs, confirmed_by_the_oracle

CASES = Path(__file__).parent / "cases"


def _zeroed(sigma, keep):
    """σ with every tensor zeroed but those named in `keep` ((feeds, variables))."""
    out = []
    for table, names in zip(sigma, keep):
        out.append({k: v if k in names or not isinstance(v, Tensor) else
                    Tensor(np.zeros_like(v.array), v.dtype) for k, v in table.items()})
    return tuple(out)


def test_a_candidate_keeping_a_differing_parts_cone_reads_is_a_counterexample_there():
    kept = changed = 0
    for i, name, p, q, (sem, obs) in _pairs(300, 10, 23):
        demand = D.Demand(p, q, sem, obs)
        checker = C._Checker(p, q, sem, obs, 0.0, 10.0, False, 0, False)
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(6):
            feeds, init = next(gen)
            _o2, schedule = ref.canonical_outcome(q, feeds, init, sem, obs)
            found = checker.confirm((feeds, init), schedule, 5.0)
            if found is None:
                continue
            parts = D.differing_parts(found.outcome, list(found.original))
            for part in parts:
                reads = demand.part_reads(part)
                candidate = _zeroed((feeds, init), reads)
                assert demand.kept_parts([part], (feeds, init), candidate) == [part]
                o2, sched2 = ref.canonical_outcome(q, *candidate, sem, obs)
                again = checker.confirm(candidate, sched2, 5.0)
                assert again is not None, (i, name, part, sem, obs)
                assert part in D.differing_parts(again.outcome, list(again.original))
                kept += 1
                # (a tensor its cones read, changed: not said to keep it)
                for t, names in enumerate(reads):
                    for k in sorted(names):
                        v = (feeds, init)[t].get(k)
                        if isinstance(v, Tensor) and v.array.size:
                            other = [dict(feeds), dict(init)]
                            flipped = v.array.copy().reshape(-1)
                            flipped[0] = np.array(1 if flipped[0] == 0 else 0, flipped.dtype)
                            other[t][k] = Tensor(flipped.reshape(v.array.shape), v.dtype)
                            assert demand.kept_parts([part], (feeds, init), tuple(other)) == []
                            changed += 1
    assert kept >= 10 and changed >= 10, (kept, changed)


@pytest.mark.parametrize("cheap", [True, False], ids=["full-confirmations", "cone-tests"])
def test_checks_with_and_without_the_shortcut_give_the_same_verdicts(monkeypatch, cheap):
    if not cheap:
        # (cone tests run where a full confirmation is dear: here, everywhere)
        monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0)
    unsound = free = 0
    for i, name, p, q, (sem, obs) in _pairs(90, 10, 17):
        verdicts = []
        for on in (True, False):
            monkeypatch.setattr(D, "UNCHANGED_CONES_FREE", on)
            v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                              classify=False)
            verdicts.append(v.verdict)
            if v.verdict != "unsound":
                continue
            cx = v.counterexample
            full = confirmed_by_the_oracle(p, q, cx, sem, obs, (i, name))
            assert list(full) == [o for o, _ in cx.original_outcomes]
            record = v.stats.get("minimization", {})
            assert "final" not in record, v.stats
            if on:
                unsound += 1
                free += record.get("unchanged_cones", 0) > 0
            else:
                assert "unchanged_cones" not in record
        assert verdicts[0] == verdicts[1], (i, name, sem, obs)
    # (only where cone tests run: where full confirmations are cheap, the
    # minimization is the one without the shortcut)
    assert unsound >= 5 and (free == 0 if cheap else free >= 3), (unsound, free)


def test_the_cases_verdicts_are_the_same_with_and_without_the_shortcut(monkeypatch):
    compared = 0
    for f in sorted(CASES.glob("*.json")):
        case = load_case(f)
        verdicts = []
        for on in (True, False):
            monkeypatch.setattr(D, "UNCHANGED_CONES_FREE", on)
            v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                              timeout=5, backends=False, classify=False)
            verdicts.append(v.verdict)
        assert verdicts[0] == verdicts[1], f.name
        compared += 1
    assert compared >= 50, compared


def test_a_mutated_rewrite_gets_its_own_cones():
    # (the cones and what they read are the Demand's, one per check: a
    # rewrite with one more node feeding a part is not judged by the
    # other rewrite's cones)
    for i, name, p, q, (sem, obs) in _pairs(40, 10, 5):
        d1 = D.Demand(p, q, sem, obs)
        for part, _ in ref.canonical_outcome(p, *next(C._refute_sigmas(
                p, np.random.default_rng(i))), sem, obs)[0].parts():
            d1.part_reads(part)
        d2 = D.Demand(p, p, sem, obs)
        assert d2._reads == {}
        for part in d1._reads:
            assert d2.part_reads(part) == tuple(frozenset(x) for x in d2.reads([part]))
        return
