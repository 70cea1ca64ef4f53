"""The original's canonical run remembered across checks
(checking/canonical_memo.py): a hit gives exactly the answer a fresh run
gives, bit for bit; σ is keyed by its exact bits (NaN payloads, -0.0); a
run that fails is not remembered; a recycled id() never finds another
program's entry; a program's runs go with it, at once; the kernels a run evaluated are named again on a hit; and
the checker's verdicts with the memo equal those without it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from tfsem.checking import canonical_memo as M
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor, exact

from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401
from test_check_race_free_confirm import LEFT, RIGHT, _pairs, _step

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


@pytest.fixture(autouse=True)
def fresh_memo():
    M.clear()
    yield
    M.clear()


def test_a_hit_is_the_fresh_runs_answer_on_generated_programs():
    hits = 0
    for i, p in enumerate(random_programs(40, 3, max_nodes=10)):
        sem, obs = SETTINGS[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(2):
            feeds, init = next(gen)
            try:
                fresh = ref.canonical_outcome(p, feeds, init, sem, obs)
            except fns.CannotRun:
                continue
            before = M.counts["hits"]
            first = M.canonical_outcome(p, feeds, init, sem, obs)
            # σ rebuilt from other objects of the same bits: a hit
            feeds2 = {k: Tensor(v.array.copy()) if isinstance(v, Tensor) else v
                      for k, v in feeds.items()}
            init2 = {k: Tensor(v.array.copy()) if isinstance(v, Tensor) else v
                     for k, v in init.items()}
            second = M.canonical_outcome(p, feeds2, init2, sem, obs)
            assert M.counts["hits"] == before + 1
            for got in (first, second):
                assert exact_outcome(got[0]) == exact_outcome(fresh[0]), (i, sem, obs)
                assert got[1] == fresh[1]
            second[1].append("not a step")      # (the caller's own list)
            assert M.canonical_outcome(p, feeds, init, sem, obs)[1] == fresh[1]
            hits += 1
    assert hits >= 30, hits


def _f32(bits: int) -> Tensor:
    return Tensor(np.array([bits], np.uint32).view(np.float32))


# o = the bytes of $a (PackScatter shows a float's bits); z = $a + 0
SHOWS_BITS = program_from_json({
    "format": "tfsem.program/1", "variables": {},
    "feeds": {"a": {"dtype": "float32", "shape": [1]}},
    "nodes": [{"name": "i", "op": "Const", "value": [0]},
              {"name": "o", "op": "PackScatter", "inputs": ["i", "$a"]}],
    "outputs": {"o": "o"}})


@pytest.mark.parametrize("first,second", [(0x7FC00001, 0x7FC00002), (0x7FC00001, 0xFFC00001),
                                          (0x00000000, 0x80000000), (0x00000001, 0x00000002)])
def test_sigma_is_keyed_by_its_exact_bits(first, second):
    """NaNs SPEC equality calls equal (payload, sign), and +0.0 against
    -0.0, subnormals: each σ its own run, whose bytes the output shows."""
    a, b = _f32(first), _f32(second)
    hits = M.counts["hits"]
    o1, _ = M.canonical_outcome(SHOWS_BITS, {"a": a}, {}, "atomic", "outputs")
    o2, _ = M.canonical_outcome(SHOWS_BITS, {"a": b}, {}, "atomic", "outputs")
    f1, _ = ref.canonical_outcome(SHOWS_BITS, {"a": a}, {}, "atomic", "outputs")
    f2, _ = ref.canonical_outcome(SHOWS_BITS, {"a": b}, {}, "atomic", "outputs")
    assert o1 == f1 and o2 == f2 and o1 != o2
    assert M.counts["hits"] == hits and M.remembered() == 2


def test_a_run_that_fails_is_not_remembered(monkeypatch):
    """A function that cannot run at this σ (CannotRunHere) fails again on
    the next call: nothing was kept."""
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    calls = []

    def impl(xp, args, attrs):
        calls.append(1)
        if len(calls) == 1:
            raise fns.CannotRunHere("not at this σ (the first time)")
        return (args[0],)
    fns.register(fns.Function("memo_test_flaky", 1, 1, impl))
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "int64", "shape": [1]}},
        "nodes": [{"name": "o", "op": "memo_test_flaky", "inputs": ["$a"]}],
        "outputs": {"o": "o"}})
    sigma = {"a": Tensor(np.array([3]))}
    with pytest.raises(fns.CannotRunHere):
        M.canonical_outcome(p, sigma, {}, "atomic", "outputs")
    assert M.remembered() == 0
    o, _ = M.canonical_outcome(p, sigma, {}, "atomic", "outputs")
    assert len(calls) == 2 and dict(o.outputs)["o"] == sigma["a"]
    # a function replaced: the registry's version is part of the key
    fns.register(fns.Function("memo_test_flaky", 1, 1, lambda xp, a, at: (a[0] + 1,)),
                 replace=True)
    o2, _ = M.canonical_outcome(p, sigma, {}, "atomic", "outputs")
    assert dict(o2.outputs)["o"] == Tensor(np.array([4]))


def _const_program(v: int):
    return program_from_json({
        "format": "tfsem.program/1", "variables": {}, "feeds": {},
        "nodes": [{"name": "c", "op": "Const", "value": [v]}], "outputs": {"o": "c"}})


def test_a_recycled_id_finds_no_other_programs_run():
    for v in range(30):
        p = _const_program(v)
        o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
        assert dict(o.outputs)["o"] == Tensor(np.array([v])), v
        del p
        if v % 10 == 9:
            gc.collect()
    # an entry under another program's id (what a recycled id would find,
    # which CPython often but not always gives): its weak reference is to
    # the program it was made for, not this one, so it is not taken
    p, q = _const_program(1), _const_program(2)
    M.canonical_outcome(p, {}, {}, "atomic", "outputs")
    (key, entry), = [(k, e) for k, e in M._memo.items() if e[0]() is p]
    M._memo[(id(q),) + key[1:]] = entry
    o, _ = M.canonical_outcome(q, {}, {}, "atomic", "outputs")
    assert dict(o.outputs)["o"] == Tensor(np.array([2]))
    # a program gone: its runs are dropped (the first loop's 30, and p's)
    assert M.remembered() == 2
    del p
    gc.collect()
    assert M.remembered() == 1 and [e[0]() for e in M._memo.values()] == [q]


def _held_outcome(v: int):
    """A program remembered with one run, and a weak reference to the
    outcome that run holds (the caller's copy of it dropped)."""
    import weakref
    p = _const_program(v)
    o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
    held = weakref.ref(dict(o.outputs)["o"].array)
    assert M.remembered() == 1 and held() is not None
    return p, held


def test_a_program_collected_takes_its_runs_with_it_at_once():
    """Its runs were purged only at the memo's next call: a long-lived
    process (`tfsem serve`) kept a dead original's outcomes (up to
    MEMO_BYTES of them) until the next check, and counted their bytes
    against the live programs' runs."""
    p, held = _held_outcome(7)
    del p
    gc.collect()
    assert held() is None                      # no call to the memo in between
    assert not M._memo and M._memo_bytes == 0


def test_a_program_collected_while_the_memo_is_busy_is_dropped_when_it_is_done(monkeypatch):
    """The weak reference's callback may run in the middle of the memo's own
    update (its lock held, in this thread or another): it cannot drop the
    runs then; the update drops them when it ends, before its call returns."""
    p, held = _held_outcome(7)
    box = [p]
    del p

    armed = []

    class Busy(type(M._memo)):
        def __setitem__(self, key, value):
            if armed:
                box.clear()          # p's last reference goes, under the memo's lock
                gc.collect()
            super().__setitem__(key, value)

    busy = Busy(M._memo)
    M._memo.clear()                 # (p's run is in `busy` alone)
    monkeypatch.setattr(M, "_memo", busy)
    armed.append(True)
    q = _const_program(8)
    M.canonical_outcome(q, {}, {}, "atomic", "outputs")
    assert held() is None and not box
    assert [e[0]() for e in busy.values()] == [q]
    assert M._memo_bytes == busy[next(iter(busy))][4]


def test_programs_dropped_in_several_threads_leave_nothing_and_count_right():
    import threading

    wrong: list = []

    def work(base: int) -> None:
        for v in range(40):
            p = _const_program(base + v)
            o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
            if dict(o.outputs)["o"] != Tensor(np.array([base + v])):
                wrong.append(base + v)
            del p, o
            if v % 7 == 0:
                gc.collect()

    threads = [threading.Thread(target=work, args=(1000 * k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert not wrong
    assert not M._memo and M._memo_bytes == 0 and not M._dead


def test_the_kernels_a_run_evaluated_are_named_again_on_a_hit(monkeypatch):
    real = ref.canonical_outcome

    def evaluating(*args, **kw):
        kernels._note("MatMul")
        return real(*args, **kw)
    monkeypatch.setattr(ref, "canonical_outcome", evaluating)
    p = _const_program(1)
    hits = M.counts["hits"]
    for _ in range(2):
        with kernels.record() as used:
            M.canonical_outcome(p, {}, {}, "atomic", "outputs")
        assert used == {"MatMul"}
    assert M.counts["hits"] == hits + 1


def test_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(M.ENV, "0")
    p = _const_program(1)
    M.canonical_outcome(p, {}, {}, "atomic", "outputs")
    assert M.remembered() == 0


def test_verdicts_with_the_memo_equal_those_without(monkeypatch):
    """Generated race-free originals, each checked against every pass's
    rewrite (one original object, several checks: the memo's case), with
    the memo and without: the same verdicts and counterexamples."""
    unsound = hits = 0
    for i, name, p, q, (sem, obs) in _pairs(60, 12, 17):
        monkeypatch.setenv(M.ENV, "1")
        before = M.counts["hits"]
        v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                          classify=False, minimize=False)
        hits += M.counts["hits"] - before
        monkeypatch.setenv(M.ENV, "0")
        w = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                          classify=False, minimize=False)
        assert v.verdict == w.verdict, (i, name, v.reason, w.reason)
        if v.verdict == "unsound":
            unsound += 1
            a, b = v.counterexample, w.counterexample
            assert exact_outcome(a.outcome) == exact_outcome(b.outcome), (i, name)
            assert a.schedule == b.schedule
    assert unsound >= 3, unsound


def _variants():
    """LEFT's rewrites (tests/test_check_race_free_confirm.py): by rounding
    (RIGHT), by operand order, by another op: one original object, checked
    against each, as `tfsem grappler` checks one graph against five
    optimizers."""
    def step(expr):
        return _step(expr)
    return [RIGHT, LEFT,
            step([{"name": "s", "op": "Add.ftz", "inputs": ["fa", "r0"]},
                  {"name": "o", "op": "Add.ftz", "inputs": ["fa", "s"]}]),
            step([{"name": "s", "op": "Mul.ftz", "inputs": ["r0", "fa"]},
                  {"name": "o", "op": "Add.ftz", "inputs": ["s", "fa"]}]),
            RIGHT]


def test_one_original_checked_against_several_rewrites_with_and_without(
        monkeypatch, no_solver_candidates):  # noqa: F811
    """The probe's canonical runs of the original at its plain σ, made once
    with the memo for all five checks: the same verdicts, counterexamples
    and probe path as five fresh checks without it (unminimized:
    minimization is time-boxed, and under load stops at other steps)."""
    with_memo, without = [], []
    hits = M.counts["hits"]
    for env, into in (("1", with_memo), ("0", without)):
        monkeypatch.setenv(M.ENV, env)
        for q in _variants():
            with as_if_kernels():
                into.append(check_rewrite(LEFT, q, timeout=10, structural=False, backends=False,
                                          minimize=False))
    assert M.counts["hits"] - hits >= 2
    for v, w in zip(with_memo, without):
        assert (v.verdict, v.stats.get("path")) == (w.verdict, w.stats.get("path")), \
            (v.reason, w.reason)
        assert v.stats.get("probe", {}).get("found") == w.stats.get("probe", {}).get("found")
        if v.verdict == "unsound":
            a, b = v.counterexample, w.counterexample
            assert exact_outcome(a.outcome) == exact_outcome(b.outcome)
            assert [exact_outcome(o) for o, _ in a.original_outcomes] == \
                [exact_outcome(o) for o, _ in b.original_outcomes]
    assert [v.verdict for v in with_memo].count("unsound") >= 2


def test_a_function_put_in_the_registry_by_hand_is_run_again(monkeypatch):
    """review22: a registry entry changed without `register` (a test's
    monkeypatch.setitem, or the fixture undoing it) leaves functions.version
    as it was; a remembered run of the same program object at the same σ
    must not stand for a run of the function now registered."""
    def plus(k):
        return lambda xp, args, attrs: (args[0] + xp.float32(k),)

    def acc(k):
        return lambda xp, args, attrs: (args[1] + xp.float32(k),)
    monkeypatch.setitem(fns._REGISTRY, "Review22Stale",
                        fns.Function("Review22Stale", 1, 1, plus(1)))
    monkeypatch.setitem(fns._REGISTRY, "Review22Acc", fns.Function("Review22Acc", 2, 1, acc(1)))
    p = program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [2]}},
        "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "u", "op": "Review22Stale", "inputs": ["$f"]},
                  {"name": "v", "op": "Var", "var": "x"},
                  {"name": "a", "op": "Assign", "fn": "Review22Acc", "inputs": ["v", "$f"]}],
        "outputs": {"out": "u"}})
    feeds = {"f": Tensor(np.array([1.0, 2.0], np.float32))}
    init = {"x": Tensor(np.array([0.0, 0.0], np.float32))}
    o, _ = M.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
    assert dict(o.outputs)["out"].array.tolist() == [2.0, 3.0]
    assert M.canonical_outcome(p, feeds, init, "atomic", "outputs+state")[0] == o   # (a hit)
    monkeypatch.setitem(fns._REGISTRY, "Review22Stale",
                        fns.Function("Review22Stale", 1, 1, plus(10)))
    o2, _ = M.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
    assert dict(o2.outputs)["out"].array.tolist() == [11.0, 12.0]
    # (the Assign's function, named by its `fn`, is looked up too)
    monkeypatch.setitem(fns._REGISTRY, "Review22Acc", fns.Function("Review22Acc", 2, 1, acc(5)))
    o2, _ = M.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
    assert dict(o2.state)["x"].array.tolist() == [6.0, 7.0]
    assert o2 == ref.canonical_outcome(p, feeds, init, "atomic", "outputs+state")[0]
    assert dict(o2.outputs)["out"].array.tolist() == [11.0, 12.0]
