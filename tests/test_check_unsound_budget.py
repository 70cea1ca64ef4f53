"""The work after an `unsound` difference is confirmed obeys the check's
budget (issue 23, item 3; checking/check.py `unsound`, `minimized`,
`minimized_witnesses`, `replay_on_backends`): σ and schedule minimization,
the witness schedules' minimization and the numpy replay stop at the
deadline, and the concrete runs read the clock inside a run (every 32 or 64
steps), not only between σ.  A stage the budget cut is named in `stats`; the
verdict stays `unsound` with the counterexample the oracle confirmed.

No timing is asserted here: each test sets the deadline in the past and
asserts that the run stopped and says why (benchmarks/unsound_budget.py
measures the wall time)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tfsem.backends.confirm import BUDGET_REASON, confirm_details
from tfsem.backends.execute import device_machine, upload
from tfsem.backends.arraymodule import get_backend
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import minimize as mini
from tfsem.checking import refute as ref
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule

from test_check_one_outcome import as_if_kernels
from test_check_unsound_probe import LEFT, RIGHT
from backends_support import CONFIRMED_ORACLE_ARRAYS


def chain(n: int):
    """x := ((x + 1) + 1) ... n Adds, and its output: a run of n + 4 steps."""
    from tfsem.oracle.jsonio import program_from_json
    nodes = [{"name": "v", "op": "Var", "var": "x"}, {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "one", "op": "Const", "value": {"dtype": "int64", "value": 1}}]
    prev = "r"
    for i in range(n):
        nodes.append({"name": f"a{i}", "op": "Add", "inputs": [prev, "one"]})
        prev = f"a{i}"
    nodes.append({"name": "w", "op": "Write", "inputs": ["v", prev]})
    return program_from_json({"format": "tfsem.program/1",
                              "variables": {"x": {"dtype": "int64", "shape": []}},
                              "feeds": {}, "nodes": nodes, "outputs": {"o": prev}})


@pytest.fixture(scope="module")
def long_run():
    from tfsem.oracle.values import Tensor
    p = chain(200)
    init = {"x": Tensor(np.array(5, dtype=np.int64))}
    outcome, schedule = ref.canonical_outcome(p, {}, init, "atomic", "outputs+state")
    return p, init, outcome, schedule


def test_a_replay_reads_the_clock_inside_the_run(long_run):
    p, init, outcome, schedule = long_run
    assert len(schedule) > 64
    state = run_schedule(p, {}, init, schedule, deadline=time.monotonic() + 60)
    assert outcome_of(p, graph_of(p), state, "outputs+state") == outcome
    with pytest.raises(BudgetExceeded) as exc:
        run_schedule(p, {}, init, schedule, deadline=time.monotonic() - 1.0)
    assert exc.value.explored < 32   # (stopped at the first reading of the clock)


def test_the_backend_machine_reads_the_clock_inside_the_run(long_run):
    p, init, _, schedule = long_run
    b = get_backend("numpy")
    m = device_machine(p, b)
    m.replay(m.start({}, upload(init, b)), schedule, time.monotonic() + 60)
    with pytest.raises(BudgetExceeded):
        m.replay(m.start({}, upload(init, b)), schedule, time.monotonic() - 1.0)


def test_a_numpy_replay_past_the_deadline_does_not_confirm_and_says_budget(long_run):
    p, init, _, schedule = long_run
    q = chain(201)   # (one Add more: another final value)
    o2, s2 = ref.canonical_outcome(q, {}, init, "atomic", "outputs+state")
    oset = outcome_set(p, {}, init)
    (ok,) = confirm_details(p, q, {}, init, s2, backends=["numpy"], original_outcomes=oset,
                            deadline=time.monotonic() + 60)
    assert ok.confirmed, ok.reason
    (cut,) = confirm_details(p, q, {}, init, s2, backends=["numpy"], original_outcomes=oset,
                             deadline=time.monotonic() - 1.0)
    assert not cut.confirmed and cut.reason.startswith(BUDGET_REASON), cut.reason


def test_schedule_minimization_past_the_deadline_keeps_the_confirmed_schedule(long_run):
    p, init, outcome, schedule = long_run
    shuffled = list(reversed(schedule[:2])) + schedule[2:]   # (Const before Var: both ready)
    assert run_schedule(p, {}, init, shuffled) is not None
    kept = mini.minimize_schedule(p, {}, init, shuffled, outcome, "atomic", "outputs+state",
                                  time.monotonic() - 1.0)
    assert kept == shuffled
    moved = mini.minimize_schedule(p, {}, init, shuffled, outcome, "atomic", "outputs+state",
                                   time.monotonic() + 60)
    assert moved == mini.canonical_order(p, shuffled)


def test_random_runs_after_the_first_stop_inside_a_run(long_run):
    p, init, _, _ = long_run
    rng = np.random.default_rng(0)
    found = ref.sample_outcomes(p, {}, init, "atomic", "outputs+state", rng, 5,
                                time.monotonic() - 1.0)
    # (the first run completes unless told otherwise: a σ is tried once at least)
    assert len(found) == 1
    cut = ref.sample_outcomes(p, {}, init, "atomic", "outputs+state", rng, 5,
                              time.monotonic() - 1.0, first_deadline=time.monotonic() - 1.0)
    assert cut == {}


@pytest.mark.parametrize("late", [0.01, 1.0])
def test_an_unsound_verdict_found_at_the_end_of_the_budget_keeps_its_counterexample(
        monkeypatch, late):
    found_at = {}
    unsound = C._Checker.unsound

    def at_the_deadline(self, found):
        # (the difference is confirmed just as the budget runs out, or
        # well past it)
        self.deadline = time.monotonic() - late
        found_at["original"] = found.original
        return unsound(self, found)

    monkeypatch.setattr(C._Checker, "unsound", at_the_deadline)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert "budget" in v.stats["minimize"], v.stats
    if late < C.REPLAY_MARGIN_SECONDS:
        # (within the replay's small margin past the deadline: replayed)
        assert v.confirmed == CONFIRMED_ORACLE_ARRAYS, (v.confirmed, v.stats)
    else:
        # the oracle's confirmation stands; the replay the budget cut is named
        assert v.confirmed == ["oracle"], v.confirmed
        assert v.stats["backends"].startswith("numpy replay skipped: budget"), v.stats
        # (and the text says so, under "confirmed on")
        text = v.describe()
        assert "confirmed on: oracle\n" in text and "numpy replay skipped: budget" in text, text
    assert v.stats["minimize_witnesses"] == C.POST_SKIPPED
    cex = v.counterexample
    state = run_schedule(RIGHT, cex.feeds, cex.init, cex.schedule)
    assert outcome_of(RIGHT, graph_of(RIGHT), state, "outputs+state") == cex.outcome
    assert cex.outcome not in found_at["original"]
    # with the budget not out, the same check replays on numpy
    monkeypatch.setattr(C._Checker, "unsound", unsound)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound" and "numpy" in v.confirmed, (v.confirmed, v.stats)
    assert "backends" not in v.stats and "minimize_witnesses" not in v.stats, v.stats


def test_the_probe_does_not_replay_the_rewrites_canonical_run(monkeypatch):
    # (the probe's run of P' in canonical order gave its outcome on that very
    # schedule: its confirmation reuses it instead of a second whole run)
    replayed = []
    run = C.run_schedule

    def recorded(p, *args, **kwargs):
        replayed.append(p)
        return run(p, *args, **kwargs)

    monkeypatch.setattr(C, "run_schedule", recorded)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False, minimize=False,
                          backends=False, classify=False)
    assert v.verdict == "unsound" and v.stats["path"] == "probe", (v.verdict, v.stats)
    assert not any(p is RIGHT or p == RIGHT for p in replayed), len(replayed)
    cex = v.counterexample
    state = run(RIGHT, cex.feeds, cex.init, cex.schedule)
    assert outcome_of(RIGHT, graph_of(RIGHT), state, "outputs+state") == cex.outcome
    assert cex.outcome not in outcome_set(LEFT, cex.feeds, cex.init)


def test_an_enumeration_of_the_originals_outcomes_stops_at_the_deadline(long_run):
    # (a projected verdict's replay enumerates P's outcomes itself: within
    # the check's time, and a budget that runs out is said to be one)
    p, init, _, _ = long_run
    q = chain(201)
    o2, s2 = ref.canonical_outcome(q, {}, init, "atomic", "outputs+state")
    (cut,) = confirm_details(p, q, {}, init, s2, backends=["numpy"],
                             deadline=time.monotonic() - 1.0)
    assert not cut.confirmed and cut.reason.startswith(BUDGET_REASON), cut.reason
