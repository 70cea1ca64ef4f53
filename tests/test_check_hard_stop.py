"""A check called from Python (`check_rewrite`) stops its concrete stages by
its timeout plus a margin (oracle/budget.py `hard_stop`, checking/check.py
`overrun_margin`; docs/budgets.md): no process to end, so the searches and
runs read the hard stop with their own clocks.  A hard stop only makes a
budget shorter: the differential test checks that a check cut by one at
once never contradicts the same check with its full time (`sound` against
`unsound`), only says less.  The other makes the concrete stages slow (each
step of a run 4 ms: a run of the 300 increments takes over a second) after
a symbolic path that gives up at the deadline, where the σ owed to the
refutation stage ran uncut: the check now ends by the margin."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tfsem.checking import check as check_module
from tfsem.checking import check_rewrite
from tfsem.oracle.budget import Budget, BudgetExceeded, bounded, current_hard_stop, hard_stop
from tfsem.oracle.jsonio import load_case, program_from_json

CASES = Path(__file__).parent / "cases"
#: sound and unsound rewrites: structural proofs, symbolic proofs, counterexamples
NAMES = ["pass_cse.json", "pass_cse_ignore_control.json", "pass_dce_drops_control.json",
         "pass_hoist_reads_atomic.json", "pass_hoist_reads_safe.json",
         "pass_split_assign_atomic.json", "alg_float_reassociate.json",
         "err_drop_initializing_write.json", "seed002_writes_reads_unorder_stores.json",
         "seed000_figure4_split_decomposed.json", "state_drop_write_back.json",
         "pass_prune_outputs_state.json"]


def test_a_hard_stop_shortens_budgets_and_deadlines_and_nests():
    assert current_hard_stop() is None and bounded(5.0) == 5.0 and bounded(None) is None
    now = time.monotonic()
    with hard_stop(now + 10):
        assert bounded(None) == now + 10 and bounded(now + 1) == now + 1
        with hard_stop(now + 20):                 # (an outer stop that ends first stays)
            assert current_hard_stop() == now + 10
        with hard_stop(now + 2):
            assert bounded(now + 5) == now + 2
        assert current_hard_stop() == now + 10
    assert current_hard_stop() is None
    with hard_stop(time.monotonic() - 1):
        budget = Budget(10 ** 9, 3600.0)
    with pytest.raises(BudgetExceeded):
        for _ in range(256):
            budget.tick()               # (its hard stop is the context it was made in)


def test_past_a_hard_stop_no_outcome_set_and_no_run_is_started():
    """An outcome set and the refutation stage's runs build their components
    before they read a clock (seconds on a large graph): past the hard stop
    they are not started; with time left they run as before."""
    import numpy as np

    from tfsem.checking import refute as ref
    from tfsem.oracle.dispatch import outcome_set
    case = load_case(CASES / "pass_cse.json")
    p = case.original
    feeds, init = next(check_module._generated_sigmas(p, np.random.default_rng(0)))
    with hard_stop(time.monotonic() + 60):
        assert outcome_set(p, feeds, init).count >= 1
        assert ref.sample_outcomes(p, feeds, init, "atomic", "outputs+state",
                                   np.random.default_rng(0), 2, time.monotonic() + 60)
    with hard_stop(time.monotonic() - 1):
        with pytest.raises(BudgetExceeded):
            outcome_set(p, feeds, init)
        # (the first run's own bound is none: only the hard stop stops it)
        assert ref.sample_outcomes(p, feeds, init, "atomic", "outputs+state",
                                   np.random.default_rng(0), 2, time.monotonic() + 60) == {}


@pytest.mark.parametrize("name", NAMES)
def test_a_check_cut_at_once_never_contradicts_the_full_check(name):
    case = load_case(CASES / name)
    full = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                         timeout=5.0, backends=False)
    with hard_stop(time.monotonic()):       # (every concrete search and run cut at once)
        cut = check_rewrite(case.original, case.rewritten_json, case.semantics,
                            case.observe, timeout=5.0, backends=False)
    assert cut.verdict in (full.verdict, "unknown", "no-counterexample"), \
        (name, full.verdict, cut.verdict, cut.reason)
    if full.verdict == "sound":
        assert cut.verdict != "unsound"
    if full.verdict == "unsound":
        assert cut.verdict != "sound"


def _chain(n: int, renamed: bool = False) -> dict:
    """`n` increments of x, each after the one before it (a control
    dependency), and a read of x concurrent with them; `renamed`: the same
    with the constant renamed (a sound rewrite, which the symbolic path,
    made to give up here, would prove).  Each increment is a step that
    touches x: a run is `n` steps of the oracle's step function."""
    one = "one_b" if renamed else "one"
    nodes = [{"name": "v", "op": "Var", "var": "x"}, {"name": one, "op": "Const", "value": 1},
             {"name": "r", "op": "Read", "inputs": ["v"]}]
    prev = None
    for k in range(n):
        nodes.append({"name": f"a{k}", "op": "Assign", "fn": "Add",
                      "inputs": ["v", one] + ([f"^{prev}"] if prev else [])})
        prev = f"a{k}"
    return {"format": "tfsem.program/1", "variables": ["x"], "nodes": nodes,
            "outputs": {"o": "r"}}


def test_slow_concrete_stages_end_by_the_margin(monkeypatch):
    from tfsem.oracle import explore
    real_fire = explore._Component.fire

    def slow_fire(self, st, t):
        time.sleep(0.004)
        return real_fire(self, st, t)

    def give_up_late(self):
        # the symbolic path gives up when the whole budget is gone
        time.sleep(max(0.0, self.deadline - time.monotonic()))
        raise check_module._GiveUp("budget", "injected: the symbolic search ran out")

    p, q = program_from_json(_chain(300)), _chain(300, renamed=True)
    monkeypatch.setattr(explore._Component, "fire", slow_fire)
    monkeypatch.setattr(check_module._Checker, "prove", give_up_late)
    timeout = 0.5
    t = time.monotonic()
    v = check_rewrite(p, q, timeout=timeout, backends=False, structural=False, minimize=False)
    seconds = time.monotonic() - t
    # the margin, and one reading of a run's clock (64 steps of 4 ms) and
    # 2 s more for a loaded machine (without the stop the check ran 5.2 s)
    assert seconds < timeout + check_module.overrun_margin(timeout) + 64 * 0.004 + 2.0, \
        (seconds, v.verdict, v.reason)
    assert v.verdict in ("unknown", "no-counterexample"), v.reason
