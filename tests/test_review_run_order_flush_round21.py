"""Adversarial review of three speedups: the one-outcome comparisons' runs
in each program's canonical order (checking/check.py
`ONE_OUTCOME_CANONICAL`), the probe's remembered canonical run of a
race-free original reused by a difference's confirmation
(`PROBE_RACE_FREE_ORIGINAL`), and a product's or quotient's result searched
once for a subnormal or ±tiny (oracle/functions.py `_none_low`,
`FUSED_TINY_SEARCH`; `_flush`'s min reduction).

Each test is an attack that found nothing, kept as a guard of the property
it attacked: every canonical run these paths take is checked against the
enumerating oracle's whole outcome set at the same σ (one outcome, that
one), in both semantics modes and both observations; the remembered runs
are shared across checks of one original object with the modes varied and
a function re-registered between them; every `unsound` counterexample is
re-confirmed by enumeration; the flush is compared bit for bit with the
switch off and with TensorFlow's CPU kernels."""

from __future__ import annotations

import contextlib
import os
import random

import numpy as np
import pytest

from tfsem.checking import canonical_memo
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import random_programs
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import BITS_DTYPES, DTYPES, Error, Tensor, edge_values

from test_check_mutated_pairs import _mutants
from test_check_one_outcome import as_if_kernels, no_solver_candidates, step  # noqa: F401
from test_check_one_outcome_canonical import _pairs, _summary

MODES = [("atomic", "outputs+state"), ("decomposed", "outputs"),
         ("atomic", "outputs"), ("decomposed", "outputs+state")]


def _check(p, q, semantics="atomic", observe="outputs+state", timeout=10.0):
    with as_if_kernels():
        return check_rewrite(p, q, semantics=semantics, observe=observe, timeout=timeout,
                             minimize=False, backends=False, classify=False, structural=False)


def _confirmed_by_enumeration(p, q, v, semantics, observe) -> bool:
    """An `unsound` verdict's counterexample is one: P' has an outcome at
    its σ that the enumeration of P's outcomes does not hold."""
    cx = v.counterexample
    mine = outcome_set(p, cx.feeds, cx.init or {}, semantics, observe)
    theirs = outcome_set(q, cx.feeds, cx.init or {}, semantics, observe)
    return cx.outcome in theirs and cx.outcome not in mine


def _small_pairs(n, seed, mutants=3):
    rng = random.Random(seed)
    for i, p in enumerate(random_programs(n, seed, max_nodes=9)):
        if p.has_control_flow:
            continue
        for q in [p, *_mutants(p, rng)][:mutants]:
            yield i, p, q


def _float_cases(most_nodes=40):
    """The case corpus's pairs of small programs (the generated ones hold
    integers only: these bring floats, NaN and the largest float)."""
    for name, original, rewritten in _pairs():
        if ":" in name:
            continue      # (Grappler's graphs: too large to enumerate here)
        try:
            p, q = program_from_json(original), program_from_json(rewritten)
        except Exception:  # noqa: BLE001 - a case whose programs do not load
            continue
        if not p.has_control_flow and max(len(p.nodes), len(q.nodes)) <= most_nodes:
            yield name, p, q


@contextlib.contextmanager
def _recording(monkeypatch, where, module, name):
    """Record (program, σ, semantics, observe, outcome) of every call of
    `module.name` made while `where` (a _Checker method) runs."""
    inside = []
    calls = []
    method = getattr(C._Checker, where)

    def wrapped(self, *a, **k):
        inside.append(self)
        try:
            return method(self, *a, **k)
        finally:
            inside.pop()
    real = getattr(module, name)

    def recorded(p, feeds, init, semantics, observe, deadline=None):
        out = real(p, feeds, init, semantics, observe, deadline)
        if inside:
            calls.append((inside[-1], p, dict(feeds), dict(init), semantics, observe, out[0]))
        return out
    monkeypatch.setattr(C._Checker, where, wrapped)
    monkeypatch.setattr(module, name, recorded)
    yield calls


# ---------------------------------------------------------------------------
# (1) the one-outcome comparisons' canonical runs


def test_one_outcome_canonical_runs_are_the_whole_enumerated_sets(monkeypatch,
                                                                  no_solver_candidates):  # noqa: F811
    """Attack: a program the symbolic search gives one outcome whose
    canonical run is not its only outcome (uninitialized variables, NaN and
    the largest float, Assign-f's decomposed steps, outputs only).  Every
    canonical run the comparisons made is checked against the enumeration
    of that program at that σ: exactly one outcome, the run's."""
    monkeypatch.setattr(C, "PROBE", False)    # (every σ compared here, none by the probe)
    checked = decomposed = uninitialized = nan = 0
    with _recording(monkeypatch, "_one_outcome_comparisons", ref, "canonical_outcome") as calls:
        for k, (i, p, q) in enumerate([*_small_pairs(200, 41), *_float_cases()]):
            semantics, observe = MODES[k % len(MODES)]
            A.clear()
            calls.clear()
            v = _check(p, q, semantics, observe)
            if v.verdict == "unsound":
                assert _confirmed_by_enumeration(p, q, v, semantics, observe), i
            for _c, prog, feeds, init, sem, obs, outcome in calls:
                whole = outcome_set(prog, feeds, init, sem, obs)
                assert len(whole) == 1 and outcome in whole, (i, sem, obs)
                checked += 1
                decomposed += sem == "decomposed"
                uninitialized += any(isinstance(x, Error) for x in init.values())
                nan += any(isinstance(x, Tensor) and x.array.dtype.kind == "f"
                           and np.isnan(x.array).any() for x in [*feeds.values(),
                                                                 *init.values()])
    # (the path was taken, in both modes, at uninitialized and NaN σ)
    assert checked >= 25 and decomposed >= 10, (checked, decomposed)
    assert uninitialized >= 1 and nan >= 1, (checked, uninitialized, nan)


def test_one_outcome_verdicts_same_both_ways_in_every_mode(monkeypatch,
                                                           no_solver_candidates):  # noqa: F811
    """The switch on and off in the decomposed semantics and under
    `outputs` (the branch's own differential ran the default modes only)."""
    monkeypatch.setattr(C, "PROBE", False)
    taken = 0
    for k, (i, p, q) in enumerate([*_small_pairs(200, 43), *_float_cases()]):
        semantics, observe = MODES[1 + k % 3]
        got = []
        for on in (True, False):
            monkeypatch.setattr(C, "ONE_OUTCOME_CANONICAL", on)
            A.clear()
            v = _check(p, q, semantics, observe)
            got.append(_summary(v))
        assert got[0] == got[1], (i, semantics, observe)
        taken += bool(got[0][1])
    assert taken >= 5, taken


# ---------------------------------------------------------------------------
# (2) the probe's remembered run of a race-free original


def test_probe_original_runs_are_the_whole_enumerated_sets(monkeypatch,
                                                          no_solver_candidates):  # noqa: F811
    """Attack: the probe's canonical run of P stands for Outcomes(P, σ) in
    a confirmation.  Every such run (through the memo, so possibly a
    remembered one from an earlier check of the same object in another
    mode) is checked against the enumeration at its σ."""
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    canonical_memo.clear()
    checked = 0
    with _recording(monkeypatch, "probe", canonical_memo, "canonical_outcome") as calls:
        for k, (i, p, q) in enumerate([*_small_pairs(60, 47, mutants=4), *_float_cases()]):
            # (the checks of one original object follow each other, the
            # modes varied: the memo is shared across them)
            semantics, observe = MODES[k % len(MODES)]
            A.clear()
            calls.clear()
            v = _check(p, q, semantics, observe)
            if v.verdict == "unsound":
                assert _confirmed_by_enumeration(p, q, v, semantics, observe), i
            for checker, prog, feeds, init, sem, obs, outcome in calls:
                assert prog is p and race_free(p)
                whole = outcome_set(prog, feeds, init, sem, obs)
                assert len(whole) == 1 and outcome in whole, (i, sem, obs)
                checked += 1
    assert checked >= 30 and canonical_memo.counts["hits"] > 0, checked


def test_memo_shared_across_modes_gives_the_verdicts_of_fresh_random_runs(
        monkeypatch, no_solver_candidates):  # noqa: F811
    """One original checked against its mutants in every semantics mode and
    observation in turn, the memo kept across the checks, against the same
    sequence with the switch off and no memo at all: the same verdicts,
    probe findings and counterexamples."""
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    rng = random.Random(11)
    jobs = []
    for p in random_programs(30, 31, max_nodes=10):
        if p.has_control_flow or not race_free(p):
            continue
        qs = [p, *_mutants(p, rng)][:3]
        jobs.append((p, [(q, *MODES[(k + j) % 4]) for j in (0, 1) for k, q in enumerate(qs)]))
    got = {}
    for on in (True, False):
        monkeypatch.setattr(C, "PROBE_RACE_FREE_ORIGINAL", on)
        monkeypatch.setenv(canonical_memo.ENV, "1" if on else "0")
        canonical_memo.clear()
        out = []
        for p, checks in jobs:
            A.clear()
            for q, semantics, observe in checks:
                v = _check(p, q, semantics, observe)
                s = _summary(v)
                if v.counterexample is not None:
                    s.append(list(v.counterexample.schedule))
                s.append({k: x for k, x in (v.stats.get("probe") or {}).items()
                          if k != "seconds"})
                out.append(s)
        got[on] = out
    assert got[True] == got[False]
    assert sum(bool(s[-1].get("sigmas")) for s in got[True]) >= 20


def _bump_program(op):
    return step([{"name": "o", "op": op, "inputs": ["r"]}])


def test_a_function_replaced_between_checks_of_one_original(monkeypatch):
    """Attack: the probe's remembered run of P reused after the function P
    names was replaced (by `register(replace=True)`, and by hand in the
    registry, which changes no version).  A stale run would confirm a
    difference that is not one (a false `unsound`) or miss one."""
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    plus = fns.Function("review21_f", 1, 1, lambda xp, a, at: (a[0] + np.float32(1),))
    same = fns.Function("review21_f", 1, 1, lambda xp, a, at: (a[0],))
    fns.register(plus)
    p = _bump_program("review21_f")      # x := f(x)
    q = _bump_program("Identity")        # x := x
    canonical_memo.clear()
    seen = []
    for how, fn, differs in (("first", plus, True), ("register", same, False),
                             ("register", plus, True), ("by hand", same, False),
                             ("by hand", plus, True)):
        if how == "register":
            fns.register(fn, replace=True)
        elif how == "by hand":
            fns._REGISTRY["review21_f"] = fn
        A.clear()
        v = _check(p, q)
        seen.append((v.stats.get("probe") or {}).get("sigmas"))
        if differs:
            assert v.verdict == "unsound", (how, v.reason)
            assert _confirmed_by_enumeration(p, q, v, "atomic", "outputs+state")
        else:
            assert v.verdict != "unsound", (how, v.reason)
    assert all(seen), seen      # (the probe ran P every time)


def test_a_probe_cut_short_remembers_nothing(monkeypatch):
    """Attack: timeouts.  Checks of one original at budgets too small to
    finish leave no run behind that a later check would take for P's
    outcome: the later checks' verdicts are right (a difference found and
    confirmed by enumeration; an identical rewrite never `unsound`)."""
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    fns.register(fns.Function("review21_g", 1, 1, lambda xp, a, at: (a[0] * np.float32(2),)))
    p = _bump_program("review21_g")
    q = _bump_program("Identity")
    canonical_memo.clear()
    for timeout in (1e-4, 1e-3, 1e-2, 0.05):
        for other in (p, q):
            v = _check(p, other, timeout=timeout)
            if other is p:
                assert v.verdict != "unsound", (timeout, v.reason)
            elif v.verdict == "unsound":
                assert _confirmed_by_enumeration(p, other, v, "atomic", "outputs+state")
    # a run cut short (the engine's BudgetExceeded, here at every P run of
    # the probe's first check) is not kept: the next check runs P again
    canonical_memo.clear()
    real = ref.canonical_outcome

    def cut(prog, *a, **k):
        if prog is p:
            raise BudgetExceeded("seconds", 0.0, 0)
        return real(prog, *a, **k)
    monkeypatch.setattr(ref, "canonical_outcome", cut)
    v = _check(p, q)
    assert v.verdict != "unsound" or _confirmed_by_enumeration(p, q, v, "atomic",
                                                                "outputs+state")
    assert canonical_memo.remembered() == 0
    monkeypatch.setattr(ref, "canonical_outcome", real)
    v = _check(p, q)
    assert v.verdict == "unsound" and _confirmed_by_enumeration(p, q, v, "atomic",
                                                                "outputs+state")
    assert _check(p, p).verdict != "unsound"


# ---------------------------------------------------------------------------
# (3) one search of a product's result


_NAMES = ("Mul", "RealDiv", "Square", "SquaredDifference", "DivNoNan")


def _edge_grid(dtype: str):
    """Every pair of the dtype's edge values and of the values whose
    products and quotients land on, just below and just above the smallest
    normal (1.2391796e-38 * 0.9486069 rounds to tiny on the subnormal grid
    and is flushed by the CPU)."""
    d = DTYPES[dtype]
    tiny = float(fns.finfo(d).tiny)
    extra = np.array([tiny, -tiny, tiny * 0.75, -tiny * 0.5, tiny * 2, 1.0, -1.0, 0.9486069,
                      1.2391796e-38, 2.0 ** -63, 2.0 ** -64, 2.0 ** -20, 0.5, 2.0],
                     dtype=np.float64).astype(d)
    vals = np.concatenate([edge_values(dtype), extra])
    return np.repeat(vals, len(vals)), np.tile(vals, len(vals))


def _run(name, args, fused):
    fns.FUSED_TINY_SEARCH = fused
    try:
        with np.errstate(all="ignore"):
            return fns.run_flushed(fns.lookup(name), np, args, {})
    finally:
        fns.FUSED_TINY_SEARCH = True


def _bits(a):
    a = np.asarray(a)
    u = BITS_DTYPES.get(next((n for n, d in DTYPES.items() if d == a.dtype), ""), None)
    return (a.dtype, a.shape, np.ascontiguousarray(a).view(u).tobytes() if u is not None
            else a.tobytes())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_one_search_is_the_two_searches_bit_for_bit(dtype):
    x, y = _edge_grid(dtype)
    for name in _NAMES:
        args = (x,) if name == "Square" else (x, y)
        on, off = _run(name, args, True), _run(name, args, False)
        assert [_bits(r) for r in on] == [_bits(r) for r in off], (dtype, name)


@pytest.mark.parametrize("shapes", [((), ()), ((0,), (0,)), ((1,), ()), ((1, 1), (1, 1)),
                                    ((40,), ()), ((1, 40), (40, 1)), ((33,), (33,)),
                                    ((0, 40), (40,))])
def test_one_search_on_shapes_and_broadcasts(shapes):
    """Results larger than their arguments (a broadcast), 0-d, empty, and
    just past the element-by-element search's size; the one subnormal or
    ±tiny placed last, where a search stopping early would miss it."""
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float64"):
        d = DTYPES[dtype]
        tiny = fns.finfo(d).tiny
        for special in (tiny, -tiny, tiny / 4, -0.0, np.nan, np.inf, 1.0):
            a = rng.uniform(0.5, 2.0, shapes[0]).astype(d)
            b = rng.uniform(0.5, 2.0, shapes[1]).astype(d)
            if a.size:
                a.reshape(-1)[-1] = special
            for name in _NAMES:
                args = (a,) if name == "Square" else (a, b)
                on, off = _run(name, args, True), _run(name, args, False)
                assert [_bits(r) for r in on] == [_bits(r) for r in off], (shapes, special)


def test_none_low_answers():
    for dtype in ("float32", "float64"):
        d = DTYPES[dtype]
        tiny = d.type(fns.finfo(d).tiny)
        for special, low in ((tiny, True), (-tiny, True), (tiny / d.type(3), True),
                             (np.nextafter(tiny, d.type(1)), False), (-0.0, False),
                             (0.0, False), (np.nan, False), (-np.inf, False)):
            a = np.full(fns._SMALL_FLUSH + 1, 1.5, d)
            a[-1] = special
            assert fns._none_low(a) is (not low), (dtype, special)
        # (small arrays: decided by their own loop where SMALL_NONE_LOW,
        # else no answer, the two searches run; tests/test_functions_small_none_low.py)
        assert fns._none_low(np.ones(fns._SMALL_FLUSH, d)) is fns.SMALL_NONE_LOW
    assert not fns._none_low(np.ones(64, np.int32))
    assert not fns._none_low(np.ones(64, np.float16))


def test_integer_products_pass_through():
    a = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min, 0, -1] * 10, np.int32)
    b = np.array([2, -1, 7, np.iinfo(np.int32).min] * 10, np.int32)
    for name in ("Mul", "Square"):
        args = (a,) if name == "Square" else (a, b)
        assert [_bits(r) for r in _run(name, args, True)] == \
            [_bits(r) for r in _run(name, args, False)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_one_search_is_tensorflows_kernels(dtype):
    """Against TensorFlow's CPU kernels (flush to zero, tininess after
    rounding), bit for bit, NaN payloads included."""
    tf = pytest.importorskip("tensorflow")
    x, y = _edge_grid(dtype)
    u = BITS_DTYPES[dtype]
    for name in _NAMES:
        (mine,) = _run(name, (x,) if name == "Square" else (x, y), True)
        op = getattr(tf.raw_ops, name)
        theirs = (op(x=x) if name == "Square" else op(x=x, y=y)).numpy()
        differ = np.asarray(mine).view(u) != theirs.view(u)
        assert not differ.any(), (dtype, name, x[differ][:3], y[differ][:3])


def test_sigmas_equal_as_values_are_not_one_memo_entry(monkeypatch):
    """Attack: σ that compare equal (+0.0 and -0.0; NaNs of other payloads)
    taken for one another by the probe's remembered run of P.  P: x :=
    1 / x, whose outcome tells the zeros apart; checked against itself
    through the memo at +0.0 and then -0.0, each against a fresh run."""
    p = step([{"name": "one", "op": "Const", "value": {"dtype": "float32", "value": 1.0}},
              {"name": "o", "op": "RealDiv", "inputs": ["one", "r"]}])
    canonical_memo.clear()
    feeds = {"a": Tensor(np.ones(3, np.float32))}
    quiet = np.array([0x7FC00001, 0x7FC00002, 0xFFC00003], np.uint32).view(np.float32)
    for x in (np.zeros(3, np.float32), -np.zeros(3, np.float32), quiet, quiet[::-1].copy()):
        init = {"x": Tensor(x)}
        got, _ = canonical_memo.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
        fresh, _ = ref.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
        assert got == fresh
        out = dict(got.outputs)["out"].array
        with np.errstate(all="ignore"):
            assert (np.signbit(out) == np.signbit(np.float32(1) / x)).all()
    assert canonical_memo.remembered() == 4


def test_checks_of_one_original_in_threads(monkeypatch, no_solver_candidates):  # noqa: F811
    """Attack: the remembered runs shared by checks of one original running
    at once in threads (as `tfsem serve` runs them), the modes varied: each
    verdict and counterexample is the one the same check gives alone."""
    from concurrent.futures import ThreadPoolExecutor
    from tfsem.oracle import kernels
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
    jobs = [(p, q, *MODES[k % 4]) for k, (_i, p, q) in
            enumerate([*_small_pairs(12, 53, mutants=4), *_float_cases(20)])]

    def one(job):
        p, q, semantics, observe = job
        with kernels.use(True):
            v = check_rewrite(p, q, semantics=semantics, observe=observe, timeout=10,
                              minimize=False, backends=False, classify=False,
                              structural=False)
        s = _summary(v)
        if v.counterexample is not None:
            s.append(list(v.counterexample.schedule))
        return s
    with as_if_kernels():
        canonical_memo.clear()
        alone = [one(job) for job in jobs]
        canonical_memo.clear()
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(one, jobs))
    assert together == alone
    assert sum(s[0] == "unsound" for s in alone) >= 3


def test_an_original_cannot_change_under_its_remembered_runs():
    """Attack: a program mutated between checks, under a memo keyed on the
    object.  Its nodes' attributes and its constants' arrays cannot be
    changed in place, nor can a σ tensor's array."""
    p = step([{"name": "one", "op": "Const", "value": {"dtype": "float32", "value": 1.0}},
              {"name": "o", "op": "RealDiv", "inputs": ["one", "r"]}])
    const = next(n for n in p.nodes if n.name == "one")
    with pytest.raises(TypeError):
        const.attrs["value"] = None
    with pytest.raises(ValueError):
        const.attrs["value"].array[...] = 2.0
    with pytest.raises(Exception):  # noqa: B017 - frozen dataclass: FrozenInstanceError
        p.nodes = ()
    t = Tensor(np.ones(3, np.float32))
    with pytest.raises(ValueError):
        t.array[0] = 5.0
