"""The σ remembered per original between checks (checking/sigma_memo.py) and
the minimization box bounded by what finding the counterexample cost
(minimize.find_box).

- minimize_concrete asks about a remembered σ first, as one step, kept only
  where it is confirmed; the members that refused before are tried last,
  together, never halved.
- Differential: one original's rewrites minimized one after the other
  with the memory, every σ checked by the enumerating oracle; the σ the
  first leaves is no counterexample for the second, so a mutant that
  takes the remembered σ without its confirmation returns a σ that is no
  counterexample, which the test sees.  Checks with the memory and
  without: the same verdicts, every σ shown confirmed.
- The box: its policy on made-up costs (no clock read by the test)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import minimize as mini
from tfsem.checking import sigma_memo
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Tensor

from tfsem.oracle.jsonio import program_from_json

from test_check_demand_confirm import confirmed_by_the_oracle
from test_check_one_outcome import as_if_kernels


def _t(values, dtype="float32"):
    return Tensor(np.array(values, dtype=dtype), dtype)


@pytest.fixture(autouse=True)
def fresh_memo():
    sigma_memo.clear()
    yield
    sigma_memo.clear()


def test_the_remembered_sigma_is_one_step_and_the_members_that_refused_go_last_together():
    init = {f"x{i}": _t(np.full(10, 5.0)) for i in range(8)}
    # x0 and x1 must stay non-zero
    def confirm(sigma):
        calls.append(dict(sigma[1]))
        return all(np.any(sigma[1][f"x{i}"].array) for i in (0, 1))

    calls: list = []
    refusals: dict = {}
    stats: dict = {}
    _, first = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30, stats=stats,
                                      refusals=refusals)
    cold = len(calls)
    assert refusals[0] == {(1, "x0"), (1, "x1"), (1, "x0", 9), (1, "x1", 9)}
    assert "remembered" not in stats
    # a later check, from the found σ again: the remembered σ first
    calls.clear()
    stats = {}
    again: dict = {}
    _, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30, stats=stats,
                                    start=({}, first), known=refusals, refusals=again)
    assert stats["remembered"] == "taken" and stats["finished"]
    assert {k: v.array.tolist() for k, v in out.items()} == \
        {k: v.array.tolist() for k, v in first.items()}
    # (the remembered σ; then x0 and x1 refuse 0 together, one step; their
    # elements that refused 0 alone refuse it together, one step; each
    # tensor holds only 0 and 1 already: not set to 1 all over); a step
    # whose σ was refused already in this minimization is not asked again
    # (`repeated`)
    assert len(calls) + stats.get("repeated", 0) == 3 and 3 * len(calls) < cold, \
        (len(calls), stats, cold)
    assert {(1, "x0"), (1, "x1")} <= again[0]


def test_a_warm_minimization_goes_on_where_the_earlier_one_was_cut(monkeypatch):
    init = {f"x{i:02}": _t(np.full(100, 5.0)) for i in range(16)}
    asked: list = []
    real_take = mini._take

    def take(group, small, *a, **k):
        asked.append((frozenset(group), small))
        return real_take(group, small, *a, **k)

    monkeypatch.setattr(mini, "_take", take)

    def confirm(sigma):
        if cut and len(asked) > 4:
            raise mini.OutOfTime
        return bool(np.any(sigma[1]["x00"].array))

    cut = True
    refusals: dict = {}
    _, first = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30,
                                      refusals=refusals)
    # (the whole group, then halves down to x00 and x01: refused, then the cut)
    refused_groups = {g for g, _ in asked[:4]}
    assert refusals[("group", 0)] == refused_groups and len(refused_groups) == 4
    cut = False
    asked.clear()
    stats: dict = {}
    _, out = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30,
                                    stats=stats, start=({}, first), known=refusals)
    assert stats["remembered"] == "same" and stats["finished"]
    assert not refused_groups & {g for g, small in asked if small == 0}, asked
    assert [k for k, v in out.items() if np.any(v.array)] == ["x00"]
    assert len(asked) == 6, asked      # x00, x01, x02-03, x04-07, x08-15; x00 to 1


def test_a_remembered_sigma_that_is_refused_leaves_the_minimization_as_without_it():
    init = {f"x{i}": _t(np.full(4, 3.0)) for i in range(6)}

    def confirm(sigma):
        return bool(np.any(sigma[1]["x2"].array)) and bool(np.any(sigma[1]["x5"].array))

    _, plain = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30)
    remembered = {k: _t(np.zeros(4)) for k in init}       # (no counterexample)
    stats: dict = {}
    _, out = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30,
                                    stats=stats, start=({}, remembered),
                                    known={0: {(1, "x2")}})
    assert stats["remembered"] == "refused"
    assert {k: v.array.tolist() for k, v in out.items()} == \
        {k: v.array.tolist() for k, v in plain.items()}
    # (other shapes or dtypes: not proposed)
    stats = {}
    other = {k: _t(np.zeros(5)) for k in init}
    mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30, stats=stats,
                           start=({}, other))
    assert stats["remembered"] == "unusable"


def _program(expr):
    """out = expr(Read x, Read y) over two float32[3] variables and a feed."""
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {v: {"dtype": "float32", "shape": [3]} for v in ("x", "y")},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": [{"name": "vx", "op": "Var", "var": "x"}, {"name": "vy", "op": "Var", "var": "y"},
                  {"name": "rx", "op": "Read", "inputs": ["vx"]},
                  {"name": "ry", "op": "Read", "inputs": ["vy"]},
                  {"name": "two", "op": "Const", "value": {"dtype": "float32", "value": 2.0}},
                  *expr],
        "outputs": {"out": "o"}})


#: the original: x + y
P = _program([{"name": "o", "op": "Add", "inputs": ["rx", "ry"]}])
#: rewrites that differ where y is not 0 (x - y; x + 2y) and where x is not
#: 0 (2x + y): the σ the first leaves (x zero) is a counterexample for the
#: second, and the second's none for the third
REWRITES = {
    "x-y": _program([{"name": "o", "op": "Sub", "inputs": ["rx", "ry"]}]),
    "x+2y": _program([{"name": "m", "op": "Mul", "inputs": ["ry", "two"]},
                      {"name": "o", "op": "Add", "inputs": ["rx", "m"]}]),
    "2x+y": _program([{"name": "m", "op": "Mul", "inputs": ["rx", "two"]},
                      {"name": "o", "op": "Add", "inputs": ["m", "ry"]}]),
}
SIGMA = ({"a": _t([3.0, -5.0, 7.0])}, {"x": _t([2.0, 9.0, -4.0]), "y": _t([6.0, -3.0, 8.0])})


def _is_counterexample(q, sigma, sem="atomic", obs="outputs+state") -> bool:
    """The enumerating oracle's word: q's run at σ gives an outcome that is
    none of P's."""
    state = run_schedule(q, sigma[0], sigma[1], list(q.topological_order), sem)
    return outcome_of(q, graph_of(q), state, obs) not in \
        outcome_set(P, sigma[0], sigma[1], sem, obs, max_seconds=5)



def minimized_with_memory(memory, q) -> tuple:
    """SIGMA minimized as a counterexample of P against `q`, with `memory`
    (checking/sigma_memo.py) asked first and told after, as check.py's
    minimization does: (σ, minimize_concrete's stats)."""
    recalled = memory.recall(P, "atomic", "outputs+state")
    stats: dict = {}
    refusals: dict = {}
    sigma = mini.minimize_concrete(
        (dict(SIGMA[0]), dict(SIGMA[1])), lambda s: _is_counterexample(q, s),
        time.monotonic() + 60, stats=stats, start=recalled and recalled[0],
        known=recalled and recalled[1], refusals=refusals)
    memory.remember(P, "atomic", "outputs+state", sigma, refusals)
    return sigma, stats

def _minimize_in_turn():
    """Each rewrite's σ minimized as check.py does it, one after the other:
    the memory asked, then told (name -> (σ, what the memory did))."""
    out = {}
    for name, q in REWRITES.items():
        assert _is_counterexample(q, SIGMA)
        sigma, stats = minimized_with_memory(sigma_memo, q)
        out[name] = (sigma, stats.get("remembered"))
    return out


def test_the_remembered_sigma_is_kept_only_where_the_oracle_confirms_it():
    out = _minimize_in_turn()
    assert [r for _, r in out.values()] == [None, "taken", "refused"]
    for name, (sigma, _) in out.items():
        assert _is_counterexample(REWRITES[name], sigma), name
    # (small: x + 2y's σ is x - y's, taken in one step)
    assert not np.any(out["x+2y"][0][1]["x"].array)
    assert np.count_nonzero(out["x+2y"][0][1]["y"].array) == 1


def test_a_mutant_that_takes_the_remembered_sigma_unconfirmed_is_caught(monkeypatch):
    real = mini._start_from

    def unconfirmed(start, whole, edit, confirm, sigma, deadline):
        return real(start, whole, edit, lambda s: True, sigma, deadline)

    monkeypatch.setattr(mini, "_start_from", unconfirmed)
    out = _minimize_in_turn()
    assert not _is_counterexample(REWRITES["2x+y"], out["2x+y"][0])


@pytest.mark.parametrize("sem,obs", [("atomic", "outputs+state"), ("decomposed", "outputs")])
def test_checks_of_one_original_with_and_without_the_memory(monkeypatch, sem, obs):
    rows = {}
    for remember in (True, False):
        monkeypatch.setattr(sigma_memo, "REMEMBER", remember)
        sigma_memo.clear()
        for name, q in REWRITES.items():
            with as_if_kernels():
                v = check_rewrite(P, q, sem, obs, timeout=100, structural=False, backends=False,
                                  classify=False)
            assert v.verdict == "unsound", (name, v.reason)
            cx = v.counterexample
            confirmed_by_the_oracle(P, q, cx, sem, obs, (name, remember))
            record = v.stats.get("minimization", {})
            rows[(name, remember)] = record.get("remembered")
            # (the warm box only where the remembered σ was taken)
            assert ("warm_box" in record) == (record.get("remembered") == "taken"), record
    assert [rows[(n, True)] for n in REWRITES] == [None, "taken", "refused"], rows
    assert all(rows[(n, False)] is None for n in REWRITES)


@pytest.mark.parametrize("warm", [True, False])
def test_the_box_is_bounded_by_what_finding_the_counterexample_cost(warm):
    floor, ratio = (mini.MINIMIZE_FIND_FLOOR, mini.MINIMIZE_FIND_RATIO) if warm else \
        (mini.MINIMIZE_COLD_FLOOR, mini.MINIMIZE_COLD_RATIO)
    # found fast: the floor; found slowly: the box as it was
    assert mini.find_box(0.5, 0.0, warm) == floor
    assert mini.find_box(0.5, 0.1, warm) == max(floor, min(0.5, ratio * 0.1))
    assert mini.find_box(0.5, 100.0, warm) == 0.5
    # never more than the box it bounds
    assert mini.find_box(0.1, 100.0, warm) == 0.1 and \
        mini.find_box(0.1, 0.0, warm) == min(0.1, floor)


def test_a_first_check_is_given_more_than_a_warm_one():
    # (the σ a first check leaves is the one later checks start from)
    for spent in (0.0, 0.01, 0.1, 0.2):
        assert mini.find_box(0.5, spent, warm=False) > mini.find_box(0.5, spent, warm=True)


@pytest.mark.parametrize("cost", [0.0, 0.4])
def test_the_checkers_box_is_bounded_by_the_finding_time_more_tightly_where_warm(cost):
    from test_check_one_outcome import step
    p = step([{"name": "o", "op": "Identity", "inputs": ["r"]}])
    checker = C._Checker(p, p, "atomic", "outputs+state", time.monotonic(), 10.0, True, 0,
                         False)
    checker.confirm_seconds = cost       # (one confirmation's cost, made up)
    checker.failing = None
    cap = max(mini.MINIMIZE_MAX_SECONDS_FLOOR, mini.MINIMIZE_SHARE * 10.0)
    cold = cap if cost <= C.MINIMIZE_CHEAP_SECONDS else \
        min(cap, max(C.MINIMIZE_MIN_SECONDS, C.MINIMIZE_CONFIRMS * cost))
    # (the check's start moved back: what finding took, made up; the clock
    # moves a little between the test's read and the box's, find_box is
    # monotone in it)
    for spent in (0.0, 0.3, 50.0):
        checker.started = time.monotonic() - spent
        for warm in (False, True):
            box = checker.minimize_box(warm=warm)
            assert mini.find_box(cold, spent, warm) <= box <= \
                mini.find_box(cold, spent + 0.5, warm), (spent, warm, box)
            assert box <= cold
    checker.started = time.monotonic() - 50.0
    assert checker.minimize_box() == cold
    checker.started = time.monotonic()
    assert checker.minimize_box(warm=True) <= mini.MINIMIZE_FIND_FLOOR + 1e-3 < \
        checker.minimize_box()


def test_the_memory_is_per_program_object_and_mode():
    import gc
    sigma = ({}, {"x": _t([1.0, 0.0, 0.0]), "y": _t([0.0, 0.0, 0.0])})
    sigma_memo.remember(P, "atomic", "outputs", sigma, {0: {(1, "x")}})
    got, known, minimized = sigma_memo.recall(P, "atomic", "outputs")
    assert got[1]["x"] is sigma[1]["x"] and known == {0: {(1, "x")}} and minimized
    assert sigma_memo.recall(P, "decomposed", "outputs") is None
    assert sigma_memo.recall(REWRITES["x-y"], "atomic", "outputs") is None
    saved = sigma_memo.snapshot()
    sigma_memo.clear()
    assert sigma_memo.recall(P, "atomic", "outputs") is None
    sigma_memo.restore(saved)
    assert sigma_memo.recall(P, "atomic", "outputs") is not None
    # (a program gone takes its σ with it)
    q = _program([{"name": "o", "op": "Add", "inputs": ["rx", "ry"]}])
    sigma_memo.remember(q, "atomic", "outputs", sigma, None)
    del q, saved
    gc.collect()
    assert len(sigma_memo.snapshot()) == 1


def test_only_a_sigma_some_step_made_smaller_earns_the_warm_box():
    smaller = (None, None, True)
    as_found = (None, None, False)
    # (steps of its own taken, besides the remembered σ)
    assert mini.progressed({"taken": 2, "remembered": "taken"}, as_found)
    assert mini.progressed({"taken": 1}, None)
    # (only the remembered σ taken: as good as what it was)
    assert mini.progressed({"taken": 1, "remembered": "taken"}, smaller)
    assert not mini.progressed({"taken": 1, "remembered": "taken"}, as_found)
    assert mini.progressed({"taken": 0, "remembered": "same"}, smaller)
    assert not mini.progressed({"taken": 0, "remembered": "refused"}, smaller)
    assert not mini.progressed({"taken": 0}, None)


def test_a_remembered_sigma_as_found_is_taken_without_the_warm_box():
    sem, obs = "atomic", "outputs+state"
    # (a counterexample of x + 2y that no step made smaller)
    sigma = ({"a": _t([0.0, 0.0, 0.0])}, {"x": _t([0.0, 0.0, 0.0]), "y": _t([4.0, 0.0, 0.0])})
    for minimized in (False, True):
        sigma_memo.clear()
        with as_if_kernels():
            # (within: kernels on or off is part of the memory's key)
            sigma_memo.remember(P, sem, obs, sigma, {}, minimized=minimized)
            v = check_rewrite(P, REWRITES["x+2y"], sem, obs, timeout=100, structural=False,
                              backends=False, classify=False)
        record = v.stats["minimization"]
        assert record["remembered"] == "taken", record
        assert ("warm_box" in record) == minimized, record
        confirmed_by_the_oracle(P, REWRITES["x+2y"], v.counterexample, sem, obs, minimized)
