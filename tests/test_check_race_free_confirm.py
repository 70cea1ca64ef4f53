"""Shortcuts of the unsound path that rest on race freedom (checking/check.py
`_Checker.original_outcomes`, `probe`, `both_race_free`), against the
enumerating oracle and the enumerating checker.

- A race-free program (checking/structural.py `race_free`) has one outcome
  at every σ, the one its canonical run gives: checked against the oracle's
  enumeration on generated programs, both semantics modes, both observe modes.
- Verdicts with the one-run confirmation equal the verdicts with the
  enumeration, and every `unsound` one's outcome is outside the enumerated set.
- A racy original is never confirmed by one run (a rewrite that picks one
  order of two racing writes stays sound).
- The probe goes on through the edge σ where both programs are race-free: a
  difference there is found before the symbolic search."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import random_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.rewrites import builtin_passes

from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _race_free_programs(count, seed, max_nodes):
    return [p for p in random_programs(count, seed, max_nodes=max_nodes)
            if race_free(p) and any(n.op == "Assign" for n in p.nodes)]


def test_a_race_free_program_has_one_outcome_which_its_canonical_run_gives():
    checked = 0
    for i, p in enumerate(_race_free_programs(120, 5, 9)):
        sem, obs = SETTINGS[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(3):        # (small values, wide ones, uninitialized variables)
            feeds, init = next(gen)
            full = outcome_set(p, feeds, init, sem, obs, max_seconds=5)
            outcome, schedule = ref.canonical_outcome(p, feeds, init, sem, obs)
            assert full.count == 1 and outcome in full, (i, sem, obs)
            # the checker's set is that outcome, with a schedule that gives it
            checker = C._Checker(p, p, sem, obs, 0.0, 10.0, False, 0, False)
            one = checker.original_outcomes(feeds, init, 5.0)
            assert list(one) == [outcome] and one.count == 1
            checked += 1
    assert checked >= 40, checked


def _pairs(count, max_nodes, seed):
    passes = builtin_passes()
    for i, p in enumerate(random_programs(count, seed, max_nodes=max_nodes)):
        if not race_free(p):
            continue
        for j, (name, ps) in enumerate(passes.items()):
            q = ps.function(p)
            if q != p:
                yield i, name, p, q, SETTINGS[(i + j) % 4]


def test_verdicts_equal_the_enumerating_checkers(monkeypatch):
    """Every check of generated pairs with a race-free original, with the
    one-run confirmation and with the enumeration: the same verdict, and an
    `unsound` one's counterexample is outside the enumerated Outcomes(P, σ)."""
    unsound = shortcut = 0
    for i, name, p, q, (sem, obs) in _pairs(60, 12, 17):
        monkeypatch.setattr(C, "RACE_FREE_CONFIRM", True)
        v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                          classify=False)
        monkeypatch.setattr(C, "RACE_FREE_CONFIRM", False)
        w = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                          classify=False)
        assert v.verdict == w.verdict, (i, name, sem, obs, v.reason, w.reason)
        shortcut += "race_free_confirmations" in v.stats
        assert "race_free_confirmations" not in w.stats
        if v.verdict == "unsound":
            unsound += 1
            cx = v.counterexample
            full = outcome_set(p, cx.feeds, cx.init, sem, obs, max_seconds=5)
            assert cx.outcome not in full, (i, name)
            assert list(full) == [o for o, _ in cx.original_outcomes]
    assert unsound >= 5 and shortcut >= 5, (unsound, shortcut)


def _prog(nodes):
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "float32", "shape": [2]}},
        "feeds": {}, "nodes": nodes, "outputs": {"out": "r"}})


def _c(name, v):
    return {"name": name, "op": "Const", "value": {"dtype": "float32", "value": [v, v]}}


# x := 1 and x := 2 unordered, then a read after both: outputs 1 or 2
RACY = _prog([{"name": "v", "op": "Var", "var": "x"}, _c("one", 1.0), _c("two", 2.0),
              {"name": "a1", "op": "Write", "inputs": ["v", "one"]},
              {"name": "a2", "op": "Write", "inputs": ["v", "two"]},
              {"name": "r", "op": "Read", "inputs": ["v", "^a1", "^a2"]}])
# the same, a2 before a1: only 1 (one of the original's outcomes)
ORDERED = _prog([{"name": "v", "op": "Var", "var": "x"}, _c("one", 1.0), _c("two", 2.0),
                 {"name": "a1", "op": "Write", "inputs": ["v", "one", "^a2"]},
                 {"name": "a2", "op": "Write", "inputs": ["v", "two"]},
                 {"name": "r", "op": "Read", "inputs": ["v", "^a1", "^a2"]}])


@pytest.mark.parametrize("kernels", [False, True])
def test_a_racy_original_is_enumerated_not_run_once(kernels, monkeypatch):
    assert not race_free(RACY) and race_free(ORDERED)
    # its canonical run gives one of two outcomes: taken as the whole set, the
    # other order (the rewrite's) would be a false counterexample
    assert outcome_set(RACY, {}, {}, "atomic", "outputs+state").count == 2
    canonical, _ = ref.canonical_outcome(RACY, {}, {}, "atomic", "outputs+state")
    theirs, schedule = ref.canonical_outcome(ORDERED, {}, {}, "atomic", "outputs+state")
    assert theirs != canonical
    checker = C._Checker(RACY, ORDERED, "atomic", "outputs+state", 0.0, 10.0, False, 0, False)
    assert checker._confirm({}, {}, schedule, 5.0) is None and checker.decided
    # (the probe runs on it too, and confirms what differs by the same call)
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    with as_if_kernels(kernels):
        v = check_rewrite(RACY, ORDERED, timeout=5, structural=False, backends=False)
    assert v.verdict == "sound", v.reason
    assert "race_free_confirmations" not in v.stats
    # and the other way round the rewrite gains an outcome: unsound, by the
    # one-run confirmation of the race-free original
    with as_if_kernels(kernels):
        u = check_rewrite(ORDERED, RACY, timeout=5, structural=False, backends=False)
    assert u.verdict == "unsound", u.reason
    assert u.counterexample.outcome not in outcome_set(ORDERED, u.counterexample.feeds,
                                                       u.counterexample.init, "atomic",
                                                       "outputs+state")


# (r0 + a) + a against r0 + (a + a), r0 read from a variable: equal at zeros,
# ones and the largest float in the feeds (the probe's first σ), different
# through rounding at ordinary values (the plain σ)
VARS = [f"x{i}" for i in range(5)]


def _step(expr):
    nodes = []
    for i, x in enumerate(VARS):
        nodes += [{"name": f"v{i}", "op": "Var", "var": x},
                  {"name": f"r{i}", "op": "Read", "inputs": [f"v{i}"]}]
    nodes += expr
    nodes += [{"name": "w0", "op": "Write", "inputs": ["v0", "o", "^r0"]}]
    nodes += [{"name": f"w{i}", "op": "Write", "inputs": [f"v{i}", f"r{i}", f"^r{i}", f"^w{i - 1}"]}
              for i in range(1, 5)]
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {x: {"dtype": "float32", "shape": [3]} for x in VARS},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": nodes + [{"name": "fa", "op": "Identity", "inputs": ["$a"]}],
        "outputs": {"out": "o", "fa": "fa"}})


LEFT = _step([{"name": "s", "op": "Add.ftz", "inputs": ["r0", "fa"]},
              {"name": "o", "op": "Add.ftz", "inputs": ["s", "fa"]}])
RIGHT = _step([{"name": "s", "op": "Add.ftz", "inputs": ["fa", "fa"]},
               {"name": "o", "op": "Add.ftz", "inputs": ["r0", "s"]}])


def test_the_probe_compares_the_plain_sigma_where_both_are_race_free(
        monkeypatch, no_solver_candidates):  # noqa: F811
    assert race_free(LEFT) and race_free(RIGHT)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "probe" and v.stats["probe"]["found"] == "plain", v.stats
    assert v.stats["states"] == 0           # no symbolic state explored
    cx = v.counterexample
    assert cx.outcome not in outcome_set(LEFT, cx.feeds, cx.init, "atomic", "outputs+state")
    # without them the probe stops after its two σ, and the difference is
    # left to the stages after the search
    monkeypatch.setattr(C, "PROBE_PLAIN", False)
    with as_if_kernels():
        w = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert w.stats["probe"]["sigmas"] == 2 and "found" not in w.stats["probe"]


def _same(a, b) -> bool:
    return all(x.array.tobytes() == y.array.tobytes() for x, y in
               ((a[0][f], b[0][f]) for f in a[0])) and \
        all(a[1][x].array.tobytes() == b[1][x].array.tobytes() for x in a[1])


def test_the_fallback_does_not_compare_again_the_sigmas_the_probe_did(monkeypatch):
    """A race-free pair the symbolic search leaves to the full comparisons
    (forced here: not one outcome each): σ ones and the plain σ, which the
    probe compared equal, are counted as tried and not enumerated again."""
    probed = [("ones", (next(C._generated_sigmas(DOUBLE_A, np.random.default_rng(0), 1)))),
              ("plain", C._plain_sigma(DOUBLE_A)),
              ("plain huge", C._plain_sigma(DOUBLE_A, C.HUGE_FEED_SCALE))]
    again = []
    real = C.outcome_set

    def counted(p, feeds, init, *a, **k):
        again.extend(tag for tag, sigma in probed if _same((feeds, init), sigma))
        return real(p, feeds, init, *a, **k)

    monkeypatch.setattr(C, "outcome_set", counted)
    monkeypatch.setattr(C._Checker, "one_outcome_each", lambda self: False)
    with as_if_kernels():
        v = check_rewrite(DOUBLE_A, DOUBLE_B, timeout=10, structural=False)
    assert v.verdict == "no-counterexample", v.reason
    assert v.stats["probe"]["sigmas"] == 5      # ones, edge 0, plain, plain huge, NaN
    assert again == [], again
    assert v.stats["tried"] >= 4      # zeros, compared in full, and the three


# x + x against x * 2 on r0: equal at every σ
DOUBLE_A = _step([{"name": "o", "op": "Add.ftz", "inputs": ["r0", "r0"]}])
DOUBLE_B = _step([{"name": "two", "op": "Const", "value": {"dtype": "float32", "value": 2.0}},
                  {"name": "o", "op": "Mul.ftz", "inputs": ["r0", "two"]}])


# |a| * 0 against |x0| * 0: 0 at every σ of finite values (ones, the largest
# float, the plain σ), NaN against 0 where the feeds are NaN (a rewrite that
# changes how NaN propagates, as Grappler's default pipeline does on the
# Keras MLP steps)
def _k(name, v):
    return {"name": name, "op": "Const", "value": {"dtype": "float32", "value": v}}


NAN_KEPT = _step([_k("zero", 0.0), {"name": "m", "op": "Abs", "inputs": ["fa"]},
                  {"name": "o", "op": "Mul.ftz", "inputs": ["m", "zero"]}])
NAN_DROPPED = _step([_k("zero", 0.0), {"name": "m", "op": "Abs", "inputs": ["r0"]},
                     {"name": "o", "op": "Mul.ftz", "inputs": ["m", "zero"]}])


def test_the_probe_compares_nan_feeds_where_both_are_race_free(no_solver_candidates):  # noqa: F811
    with as_if_kernels():
        v = check_rewrite(NAN_KEPT, NAN_DROPPED, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "probe", v.stats
    assert v.stats["probe"]["found"] == f"edge {3 * C._EDGE_NAN}", v.stats["probe"]
    cx = v.counterexample
    # (minimized: the NaN that shows it is kept)
    assert any(np.isnan(t.array).any() for t in cx.feeds.values())
    assert cx.outcome not in outcome_set(NAN_KEPT, cx.feeds, cx.init, "atomic", "outputs+state")
