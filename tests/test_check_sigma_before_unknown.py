"""A concrete σ is always tried before `unknown` (issue 23, item 3): whatever
stops the symbolic path (its search or the encoding out of time, the solver
out of time or undecided, too many variables or combinations, a failure of
the symbolic machinery, candidates that do not reproduce), the refutation
stage runs the rewrite at a σ and searches the original's runs for its
outcomes before the checker gives up, even when an earlier stage overran the
deadline.  And a σ counts as tried by that stage only when every part was
compared: a part whose search ran out is said so, never counted as agreed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tfsem.checking import check as check_module
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.explore import Budget

CASES = Path(__file__).parent / "cases"


def _case(name):
    return load_case(CASES / name)


def _sigma_tried_after_giving_up(v) -> bool:
    """The fallback compared a σ in full, or the refutation stage ran the
    rewrite at a σ after the symbolic path gave up."""
    return v.stats.get("tried", 0) > 0 or v.stats.get("refute", {}).get("after_sigmas", 0) > 0


def _give_up(kind, late):
    def prove(self):
        if late:
            # an earlier stage that overran the whole budget
            time.sleep(max(0.0, self.deadline - time.monotonic()) + 0.05)
        if kind == "internal":
            raise AssertionError("an injected failure of the symbolic machinery")
        raise check_module._GiveUp(kind, f"injected {kind} give-up")
    return prove


@pytest.mark.parametrize("kind, late", [("budget", False), ("budget", True), ("solver", True),
                                        ("unconfirmed", True), ("internal", True)])
def test_every_give_up_tries_a_sigma_first(monkeypatch, kind, late):
    monkeypatch.setattr(check_module._Checker, "prove", _give_up(kind, late))
    # a sound rewrite: nothing to find, so the verdict rests on the σ tried
    case = _case("pass_cse.json")
    v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                      timeout=0.3, backends=False, structural=False, minimize=False)
    assert v.verdict in ("unknown", "no-counterexample"), (v.verdict, v.reason)
    assert _sigma_tried_after_giving_up(v), (v.reason, v.stats)
    if kind != "solver":
        # σ tried, none differs: no-counterexample, never unknown
        assert v.verdict == "no-counterexample", v.reason
    assert "injected" in v.reason or "failed" in v.reason


@pytest.mark.parametrize("late", [False, True], ids=["in-time", "past-deadline"])
def test_an_unsound_rewrite_is_refuted_after_any_give_up(monkeypatch, late):
    monkeypatch.setattr(check_module._Checker, "prove", _give_up("budget", late))
    case = _case("pass_cse_ignore_control.json")
    v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                      timeout=0.3, backends=False, structural=False, minimize=False)
    assert v.verdict == "unsound", (v.verdict, v.reason)


def test_a_late_sigma_overruns_the_budget_by_at_most_its_floor(monkeypatch):
    monkeypatch.setattr(check_module._Checker, "prove", _give_up("budget", True))
    case = _case("pass_cse.json")
    timeout = 0.5
    t0 = time.monotonic()
    check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                  timeout=timeout, backends=False, structural=False, minimize=False)
    floor = min(check_module.SIGMA_FLOOR_SHARE * timeout, check_module.SIGMA_FLOOR_SECONDS)
    # (0.05 s injected overrun, the floor, and a margin for a shared machine)
    assert time.monotonic() - t0 < timeout + 0.05 + floor + 1.0


def test_under_float_real_a_program_with_no_float_is_decided_concretely(monkeypatch):
    # IEEE and real arithmetic agree where no float value arises: the
    # concrete stages decide --float real too
    monkeypatch.setattr(check_module._Checker, "prove", _give_up("budget", False))
    for name, expected in (("pass_cse.json", "no-counterexample"),
                           ("pass_cse_ignore_control.json", "unsound")):
        case = _case(name)
        v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                          timeout=0.3, backends=False, structural=False, float_mode="real")
        assert v.verdict == expected, (name, v.verdict, v.reason)
        assert _sigma_tried_after_giving_up(v)


def test_under_float_real_a_float_program_stays_unknown_naming_why(monkeypatch):
    monkeypatch.setattr(check_module._Checker, "prove", _give_up("budget", False))
    case = _case("alg_float_reassociate.json")
    v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                      timeout=0.3, backends=False, structural=False, float_mode="real")
    assert v.verdict == "unknown"
    assert "IEEE arithmetic" in v.reason


def test_generated_checks_that_give_up_tried_a_sigma():
    # real give-ups, not injected ones: small budgets on generated programs
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites import builtin_passes
    passes = builtin_passes()
    settings = [("atomic", "outputs+state"), ("atomic", "outputs"),
                ("decomposed", "outputs+state"), ("decomposed", "outputs")]
    gave_up = 0
    for i, p in enumerate(random_programs(8, 7, max_nodes=90)):
        for j, name in enumerate(["split-assign", "hoist-reads", "cse-ignore-control", "prune"]):
            q = passes[name].function(p)
            if q == p:
                continue
            semantics, observe = settings[(i + j) % 4]
            v = check_rewrite(p, q, semantics, observe, timeout=0.08, backends=False,
                              minimize=False)
            if v.stats.get("gave_up"):
                gave_up += 1
                assert _sigma_tried_after_giving_up(v) or v.verdict == "unsound", \
                    (name, i, v.verdict, v.reason, v.stats.get("refute"))
    assert gave_up > 0    # (the budgets are small enough that some do)


def test_a_part_whose_search_runs_out_is_reported_not_agreed():
    # unreached() says which parts it skipped; the checker counts such a σ
    # as partly compared, never as agreed
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites import builtin_passes
    import numpy as np
    p = random_programs(15, 0, max_nodes=160)[14]
    q = builtin_passes()["split-assign"].function(p)
    rng = np.random.default_rng(1)
    feeds, init = next(check_module._refute_sigmas(p, rng))
    cands = ref.sample_outcomes(q, feeds, init, "atomic", "outputs", rng, 16, time.monotonic() + 5)
    skipped, compared = [], []
    budget = Budget(check_module.SYMBOLIC_MAX_STATES, 0.002)
    missing = ref.unreached(p, feeds, init, "atomic", "outputs", list(cands), budget,
                            ref.unchanged_components(p, q), joint=False, incomplete=skipped,
                            complete=compared)
    assert not missing
    assert skipped, "a 2 ms budget compares every part of a 112-node program?"


def test_guided_runs_of_the_original_are_its_outcomes():
    # each guided run is a run of P: its outcome is among P's (enumerated)
    from tfsem.oracle.dispatch import outcome_set
    import numpy as np
    case = _case("pass_cse_ignore_control.json")
    p = case.original
    from tfsem.oracle.jsonio import program_from_json
    q = program_from_json(case.rewritten_json)
    rng = np.random.default_rng(0)
    for _ in range(4):
        feeds, init = next(check_module._refute_sigmas(p, rng))
        cands = ref.sample_outcomes(q, feeds, init, case.semantics, case.observe, rng, 8,
                                    time.monotonic() + 5)
        guided = ref.guided_outcomes(p, feeds, init, case.semantics, case.observe,
                                     cands.values(), time.monotonic() + 5)
        full = outcome_set(p, feeds, init, case.semantics, case.observe)
        assert guided and all(o in full for o in guided)
