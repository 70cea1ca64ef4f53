"""Function applications remembered inside a check (oracle/applications.py):
runs with the memo give the exact outcomes runs without it give (generated
programs, their rewrites at the same σ, NaN payloads and signed zeros in σ);
keys are exact (attributes by their bits, arguments by identity or interned
by exact bits); a failing application fails again; a replaced function's
applications are forgotten; the kernels a hit stands for are named; results
computed while kernels are deferred are not kept; the memory bound holds;
the numpy back end never uses the memo; and check verdicts are the same
with it and without it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from tfsem.backends import execute as backend_execute
from tfsem.checking import canonical_memo
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Error, Tensor, exact
from tfsem.rewrites import builtin_passes
from test_check_refute import _pairs

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


def exact_set(s):
    return sorted(map(repr, (exact_outcome(o) for o in s)))


@pytest.fixture(autouse=True)
def no_kept_memo():
    A.clear()
    yield
    A.clear()


def _f32(*bits: int) -> Tensor:
    return Tensor(np.array(bits, np.uint32).view(np.float32))


def _with_payloads(values):
    """Float tensors of σ with NaNs of other payloads and signs, and -0.0."""
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor) and v.dtype == "float32" and v.array.size >= 2:
            bits = v.array.copy().view(np.uint32)
            bits.reshape(-1)[0] = 0xFFC00123
            bits.reshape(-1)[1] = 0x80000000
            v = Tensor(bits.view(np.float32))
        out[k] = v
    return out


def test_runs_with_the_memo_give_the_outcomes_of_runs_without():
    """P, then each pass's P' at the same σ (what the probe and the
    confirmations do), then P again at σ with NaN payloads: canonical runs
    and whole outcome sets inside one scope, against fresh ones outside."""
    passes = list(builtin_passes().values())
    compared = hits = 0
    for i, p in enumerate(random_programs(30, 11, max_nodes=10)):
        sem, obs = SETTINGS[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        feeds, init = next(gen)
        sigmas = [(feeds, init), (_with_payloads(feeds), _with_payloads(init)), next(gen)]
        programs = [p] + [q for q in (ps.function(p) for ps in passes[:3]) if q != p]
        fresh = []
        for q in programs:
            for f, s in sigmas:
                try:
                    fresh.append((exact_outcome(ref.canonical_outcome(q, f, s, sem, obs)[0]),
                                  exact_set(outcome_set(q, f, s, sem, obs, max_seconds=5))))
                except (fns.CannotRun, C.BudgetExceeded) as exc:
                    fresh.append(type(exc))
        remembered = []
        with A.scope():
            for _round in range(2):             # (the second round: all hits)
                remembered = []
                for q in programs:
                    for f, s in sigmas:
                        try:
                            remembered.append((
                                exact_outcome(ref.canonical_outcome(q, f, s, sem, obs)[0]),
                                exact_set(outcome_set(q, f, s, sem, obs, max_seconds=5))))
                        except (fns.CannotRun, C.BudgetExceeded) as exc:
                            remembered.append(type(exc))
                assert remembered == fresh, (i, _round)
            hits += A.active().hits
        compared += len(fresh)
    assert compared >= 100 and hits >= 100, (compared, hits)


def _fn(name, impl, **kw):
    return fns.register(fns.Function(name, 1, 1, impl, **kw), replace=True)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))


def test_attributes_are_keyed_by_their_bits(registry):
    calls = []

    def impl(xp, args, attrs):
        calls.append(attrs["alpha"])
        return (args[0] * np.float32(attrs["alpha"]),)
    f = _fn("memo_test_scale", impl, attrs={"alpha": lambda v, w: v})
    x = Tensor(np.array([1.0], np.float32))
    nan1 = np.array([0x7FF8000000000001], np.uint64).view(np.float64)[0].item()
    nan2 = np.array([0xFFF8000000000002], np.uint64).view(np.float64)[0].item()
    with A.scope():
        for alpha in (0.0, -0.0, nan1, nan2, 1, 1.0, True):
            f.apply([x], {"alpha": alpha})
            f.apply([x], {"alpha": alpha})
        # (each attribute value computed once, told apart from the others)
        assert len(calls) == 7
        # one dict, changed between two applications: keyed again
        attrs = {"alpha": 2.0}
        assert f.apply([x], attrs)[0] == Tensor(np.array([2.0], np.float32))
        attrs["alpha"] = 3.0
        assert f.apply([x], attrs)[0] == Tensor(np.array([3.0], np.float32))
        attrs["beta"] = 1
        f.apply([x], attrs)
        assert len(calls) == 10


def test_arguments_by_identity_equal_small_ones_interned(registry):
    calls = []

    def impl(xp, args, attrs):
        calls.append(1)
        return (args[0] + args[0].dtype.type(1),)
    f = _fn("memo_test_inc", impl)
    big = np.arange(A.INTERN_ELEMENTS + 10, dtype=np.float32)
    with A.scope():
        a, b = Tensor(big), Tensor(big.copy())
        (ra,) = f.apply([a])
        f.apply([a])
        assert len(calls) == 1       # the same object: remembered
        # an equal tensor from outside (σ made again): interned on the miss,
        # and found
        (rb,) = f.apply([b])
        assert len(calls) == 1 and rb is ra
        # a large result is not interned: an equal one made by another
        # function is another object, whose applications are its own
        g2 = _fn("memo_test_inc_too", impl)
        (rc,) = g2.apply([a])
        assert len(calls) == 2 and rc is not ra
        f.apply([rc])
        assert len(calls) == 3
        other = Tensor(big + np.float32(5))
        f.apply([other])
        assert len(calls) == 4
        # results of at most INTERN_ELEMENTS: one object per exact bits, so
        # that an equal value recomputed elsewhere meets its applications
        g = _fn("memo_test_first", lambda xp, args, attrs: (args[0][:3],))
        (r1,) = g.apply([a])
        (r2,) = g.apply([b])
        assert r1 is r2
        f.apply([r2])
        f.apply([r1])
        assert len(calls) == 5
        # NaN payloads and -0.0 are bits of their own
        (n1,) = g.apply([Tensor(_f32(0x7FC00001, 0, 0, 0).array)])
        (n2,) = g.apply([Tensor(_f32(0x7FC00002, 0, 0, 0).array)])
        (z,) = g.apply([Tensor(_f32(0x80000000, 0, 0, 0).array)])
        assert n1 is not n2 and z is not n1
        assert n1.array.view(np.uint32)[0] == 0x7FC00001
        assert n2.array.view(np.uint32)[0] == 0x7FC00002
        assert z.array.view(np.uint32)[0] == 0x80000000
        # error arguments by their reason
        h = fns.register(fns.Function("memo_test_lenient", 1, 1,
                                      lambda xp, args, attrs: (np.zeros(1),),
                                      strict_args=()), replace=True)
        h.apply([Error("shape-mismatch")])
        h.apply([Error("uninitialized")])
        assert A.active().misses >= 2


def test_a_failing_application_fails_again(registry):
    calls = []

    def impl(xp, args, attrs):
        calls.append(1)
        if len(calls) == 1:
            raise fns.CannotRunHere("not this time")
        return (args[0],)
    f = _fn("memo_test_flaky", impl)
    x = Tensor(np.array([1.0]))
    with A.scope():
        with pytest.raises(fns.CannotRunHere):
            f.apply([x])
        assert f.apply([x])[0] is x and len(calls) == 2
        f.apply([x])
        assert len(calls) == 2


def test_a_replaced_function_is_forgotten(registry):
    x = Tensor(np.array([1]))
    _fn("memo_test_f", lambda xp, args, attrs: (args[0] + 1,))
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "int64", "shape": [1]}},
        "nodes": [{"name": "o", "op": "memo_test_f", "inputs": ["$a"]}], "outputs": {"o": "o"}})
    with A.scope(owner=p):
        assert fns.get("memo_test_f").apply([x])[0] == Tensor(np.array([2]))
        _fn("memo_test_f", lambda xp, args, attrs: (args[0] + 2,))
        assert fns.get("memo_test_f").apply([x])[0] == Tensor(np.array([3]))
    with A.scope(owner=p):       # (kept for p's next check: a third version)
        _fn("memo_test_f", lambda xp, args, attrs: (args[0] + 3,))
        assert fns.get("memo_test_f").apply([x])[0] == Tensor(np.array([4]))


def test_the_kernels_a_hit_stands_for_are_named(registry):
    def impl(xp, args, attrs):
        kernels._note("MatMul")       # (as kernels.evaluate does)
        return (args[0],)
    f = _fn("memo_test_kernel", impl)
    x = Tensor(np.array([1.0]))
    with kernels.use(True), A.scope():
        for _ in range(2):
            with kernels.record() as used:
                f.apply([x])
            assert used == {"MatMul"}
        assert A.active().hits == 1


def test_deferred_evaluations_are_not_kept(registry):
    calls = []

    def impl(xp, args, attrs):
        calls.append(kernels.deferring())
        return (args[0],)
    f = _fn("memo_test_deferred", impl)
    x = Tensor(np.array([1.0]))
    with A.scope():
        with kernels.collecting():
            f.apply([x])
        f.apply([x])
        f.apply([x])
    assert calls == [True, False]


def test_memory_stays_within_its_bound(registry, monkeypatch):
    monkeypatch.setattr(A, "MEMO_BYTES", 64 * 1024)
    monkeypatch.setattr(A, "ENTRY_BYTES", 32 * 1024)
    f = _fn("memo_test_copy", lambda xp, args, attrs: (args[0] * 2,))
    with A.scope():
        memo = A.active()
        for i in range(100):
            f.apply([Tensor(np.full(1000, i, np.int64))])     # 8 KB + 8 KB each
            assert memo.bytes <= A.MEMO_BYTES
            assert memo.bytes == sum(t.array.nbytes + 128 for t, _n in memo.held.values())
        assert 0 < len(memo.entries) < 10


def test_the_memo_is_kept_for_the_same_original_only():
    p = program_from_json({"format": "tfsem.program/1", "variables": {}, "feeds": {},
                           "nodes": [{"name": "c", "op": "Const", "value": [1]}],
                           "outputs": {"o": "c"}})
    q = program_from_json({"format": "tfsem.program/1", "variables": {}, "feeds": {},
                           "nodes": [{"name": "c", "op": "Const", "value": [1]}],
                           "outputs": {"o": "c"}})
    with A.scope(owner=p):
        first = A.active()
    with A.scope(owner=p):
        assert A.active() is first
    with A.scope(owner=q):
        assert A.active() is not first
    with A.scope(owner=p):
        assert A.active() is not first
        second = A.active()
    assert A._kept is second
    del p
    gc.collect()
    assert A._kept is None
    with A.scope():
        assert A.active() is not second


def test_the_numpy_back_end_never_uses_the_memo():
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "s", "op": "Add.ftz", "inputs": ["$a", "$a"]},
                  {"name": "o", "op": "Mul.ftz", "inputs": ["s", "$a"]}],
        "outputs": {"o": "o"}})
    feeds = {"a": Tensor(np.array([1.5, -0.0], np.float32))}
    with A.scope():
        memo = A.active()
        outcome, schedule = ref.canonical_outcome(p, feeds, {}, "atomic", "outputs")
        before = (memo.hits, memo.misses, len(memo.entries))
        for _ in range(2):
            theirs = backend_execute.replay(p, feeds, {}, schedule, "numpy", "atomic", "outputs")
            assert exact_outcome(theirs) == exact_outcome(outcome)
        assert (memo.hits, memo.misses, len(memo.entries)) == before


def test_check_verdicts_with_the_memos_equal_those_without(monkeypatch):
    """Generated originals, each checked against every pass's rewrite (one
    original object, several checks), with both memos and without: the
    same verdicts and, unminimized, the same counterexamples and schedules.
    Minimization is time-boxed (under load it stops at different steps), so
    a minimized counterexample found with the memos is checked instead
    against fresh runs without them: P′ on its schedule at its σ gives its
    outcome, and that outcome is outside Outcomes(P, σ)."""
    unsound = checked = validated = 0
    for i, name, p, q, (sem, obs) in _pairs(40, 10, 29):
        got = []
        for env in ("1", "0"):
            monkeypatch.setenv(A.ENV, env)
            monkeypatch.setenv(canonical_memo.ENV, env)
            got.append(check_rewrite(p, q, sem, obs, timeout=5, structural=False,
                                     backends=False, classify=False, minimize=False))
        v, w = got
        assert v.verdict == w.verdict, (i, name, v.reason, w.reason)
        checked += 1
        if v.verdict == "unsound":
            unsound += 1
            a, b = v.counterexample, w.counterexample
            assert exact_outcome(a.outcome) == exact_outcome(b.outcome), (i, name)
            assert a.schedule == b.schedule
            assert {k: exact(x) for k, x in a.feeds.items()} == \
                {k: exact(x) for k, x in b.feeds.items()}
            if unsound % 3 == 1:
                monkeypatch.setenv(A.ENV, "1")
                monkeypatch.setenv(canonical_memo.ENV, "1")
                m = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                                  classify=False)
                assert m.verdict == "unsound", (i, name, m.reason)
                cx = m.counterexample
                monkeypatch.setenv(A.ENV, "0")
                monkeypatch.setenv(canonical_memo.ENV, "0")
                state = run_schedule(q, cx.feeds, cx.init, cx.schedule, sem)
                assert exact_outcome(outcome_of(q, graph_of(q), state, obs)) == \
                    exact_outcome(cx.outcome)
                assert cx.outcome not in outcome_set(p, cx.feeds, cx.init, sem, obs)
                validated += 1
    assert checked >= 40 and unsound >= 3 and validated >= 1, (checked, unsound, validated)


def test_the_next_check_of_the_original_finds_its_applications():
    """σ made anew (other objects, the same bits) in the next check of the
    same original: interned on the miss, the kept memo's applications are
    found, and the outcome is the fresh run's."""
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [3]}},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "s", "op": "Add.ftz", "inputs": ["r", "$a"]},
                  {"name": "m", "op": "Mul.ftz", "inputs": ["s", "s"]},
                  {"name": "w", "op": "Write", "inputs": ["v", "m"]}],
        "outputs": {"o": "m"}})

    def sigma():
        return ({"a": _f32(0x3FC00000, 0x7FC00001, 0x80000000)},
                {"x": Tensor(np.array([1.5, -2.0, 3.0], np.float32))})
    fresh = exact_outcome(ref.canonical_outcome(p, *sigma(), "atomic", "outputs+state")[0])
    for turn in range(2):
        with A.scope(owner=p):
            got = exact_outcome(ref.canonical_outcome(p, *sigma(), "atomic", "outputs+state")[0])
            assert got == fresh
            if turn:
                assert A.active().hits >= 2


def test_kernels_on_and_off_are_kept_apart(registry, monkeypatch):
    """An op with no model runs on TensorFlow's kernel only where kernels
    are on: an application made with them on is no answer with them off
    (a thread's `kernels.use()`, or the environment at the next scope)."""
    def impl(xp, args, attrs):
        if not kernels.enabled():
            raise fns.CannotRun("no model, and kernels are off")
        return (args[0],)
    f = _fn("memo_test_kernel_only", impl)
    x = Tensor(np.array([1.0]))
    p = _program_of("memo_test_kernel_only")
    with A.scope(owner=p):
        with kernels.use(True):
            assert f.apply([x])[0] is x
        with kernels.use(False), pytest.raises(fns.CannotRun):
            f.apply([x])
    monkeypatch.setenv(kernels.ENV, "0")
    with A.scope(owner=p), pytest.raises(fns.CannotRun):
        f.apply([x])


def _program_of(op):
    return program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "float64", "shape": [1]}},
        "nodes": [{"name": "o", "op": op, "inputs": ["$a"]}], "outputs": {"o": "o"}})
