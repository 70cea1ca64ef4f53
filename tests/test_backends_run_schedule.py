"""backends/execute.py's lean schedule runner (`run_schedule`, the replay
of a counterexample's confirmation) against the machine it stands for
(`Machine.replay` on a RunState) and against the oracle's own run of the
schedule (oracle/semantics.py `run_schedule`): the same outcome, or the same
ScheduleError, on random programs in both semantics, at random σ, under
random schedules, schedules cut short, and schedules with two steps swapped;
with a memo (execute.Memo) shared by the runs of a program and of its
rewrite, as a confirmation shares it, the same outcomes again."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tfsem.backends.arraymodule import get_backend
from tfsem.backends.execute import (Memo, ScheduleError, compiled, device_machine, download,
                                    download_outcome, run_schedule, upload)
from tfsem.checking import check as C
from tfsem.generators.strategies import random_programs
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.semantics import graph_of, outcome_of
from tfsem.oracle.semantics import run_schedule as oracle_run
from tfsem.oracle.values import Tensor
from tfsem.rewrites import get_pass

SEMANTICS = ("atomic", "decomposed")


def _cases(count, seed):
    for i, p in enumerate(random_programs(count, seed, max_nodes=12)):
        if p.has_control_flow:
            continue
        feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
        yield i, p, feeds, init, SEMANTICS[i % 2]


def _machine_outcome(m, b, feeds, init, schedule):
    """The outcome by Machine.replay, or the ScheduleError's text."""
    try:
        st = m.replay(m.start(upload(feeds, b), upload(init, b)), schedule)
    except ScheduleError as exc:
        return f"error: {exc}"
    return download_outcome(st, b, "outputs+state")


def _lean_outcome(m, b, dev_feeds, dev_init, schedule, memo=None):
    try:
        return download(*run_schedule(m, dev_feeds, dev_init, schedule, None, memo), b,
                        "outputs+state")
    except ScheduleError as exc:
        return f"error: {exc}"


def _variants(schedule, rng):
    """The schedule, cut short, with two steps swapped, and with a step
    fired again in place of another (often not runs)."""
    out = [list(schedule)]
    if len(schedule) > 1:
        out.append(list(schedule[:rng.randrange(len(schedule))]))
        s = list(schedule)
        a, c = rng.randrange(len(s)), rng.randrange(len(s))
        s[a], s[c] = s[c], s[a]
        out.append(s)
        d = list(schedule)                      # a step fired twice
        a = rng.randrange(1, len(d))
        d[a] = d[rng.randrange(a)]
        out.append(d)
    return out


def test_run_schedule_is_machine_replay_and_the_oracles_run():
    b = get_backend("numpy")
    cse = get_pass("cse")
    compared = errors = shared = 0
    for i, p, feeds, init, sem in _cases(70, 13):
        rng = random.Random(i)
        try:
            m = device_machine(p, b, sem)
            runs = [m.run_random(m.start(upload(feeds, b), upload(init, b)), rng).schedule
                    for _ in range(3)]
        except Exception:   # noqa: BLE001 (a program the backends do not run)
            continue
        q = cse(p)
        mq = device_machine(q, b, sem)
        dev_feeds, dev_init = upload(feeds, b), upload(init, b)
        memo = Memo(np)
        rq = mq.run_random(mq.start(dev_feeds, dev_init), rng).schedule
        # (the rewrite's run first, as a confirmation does: the memo then
        # holds its applications when the original's runs read it)
        assert _lean_outcome(mq, b, dev_feeds, dev_init, rq, memo) == \
            _machine_outcome(mq, b, feeds, init, rq)
        for schedule in runs:
            for variant in _variants(schedule, rng):
                want = _machine_outcome(m, b, feeds, init, variant)
                assert _lean_outcome(m, b, dev_feeds, dev_init, variant) == want, (i, sem)
                assert _lean_outcome(m, b, dev_feeds, dev_init, variant, memo) == want, (i, sem)
                if isinstance(want, str):
                    errors += 1
                else:
                    oracle = outcome_of(p, graph_of(p), oracle_run(p, feeds, init, variant, sem),
                                        "outputs+state")
                    assert want == oracle, (i, sem, variant)
                compared += 1
        shared += memo.hits
    assert compared >= 300 and errors >= 100 and shared >= 100, (compared, errors, shared)


def test_memo_hits_only_the_same_objects_and_attributes():
    b = get_backend("numpy")
    p = program_from_json({
        "variables": {}, "feeds": {"x": {"dtype": "int64", "shape": [2]}},
        "nodes": [{"name": "c", "op": "Const", "value": [1, 2]},
                  {"name": "d", "op": "Const", "value": [1, 3]},
                  {"name": "a", "op": "Add", "inputs": ["c", "$x"]},
                  {"name": "e", "op": "Add", "inputs": ["d", "$x"]}],
        "outputs": {"a": "a", "e": "e"}})
    m = device_machine(p, b, "atomic")
    memo = Memo(np)
    x1 = upload({"x": Tensor(np.array([5, 6], np.int64))}, b)
    out, _ = run_schedule(m, x1, {}, ["c", "d", "a", "e"], None, memo)
    assert out["a"].tolist() == [6, 8] and out["e"].tolist() == [6, 9]
    assert memo.hits == 0 and memo.misses == 4        # c and d differ by attributes
    again, _ = run_schedule(m, x1, {}, ["d", "c", "e", "a"], None, memo)
    assert memo.hits == 4 and again["a"] is out["a"]
    # (an equal feed that is another object: computed again)
    x2 = {"x": np.array([5, 6], np.int64)}
    third, _ = run_schedule(m, x2, {}, ["c", "d", "a", "e"], None, memo)
    assert memo.hits == 6 and memo.misses == 6
    # (a small result is interned: the same bits, the array seen first)
    assert third["a"] is out["a"] and third["a"].tolist() == [6, 8]
    size = Memo.INTERN_BYTES // 8 + 1            # (past the interned size)
    big = {"x": np.arange(size, dtype=np.int64)}
    m2 = device_machine(program_from_json({
        "variables": {}, "feeds": {"x": {"dtype": "int64", "shape": [size]}},
        "nodes": [{"name": "n", "op": "Neg", "inputs": ["$x"]}], "outputs": {"n": "n"}}),
        b, "atomic")
    one, _ = run_schedule(m2, big, {}, ["n"], None, memo)
    two, _ = run_schedule(m2, {"x": big["x"].copy()}, {}, ["n"], None, memo)
    assert one["n"] is not two["n"] and one["n"].tolist() == two["n"].tolist()


def test_only_c_contiguous_results_are_interned_and_within_the_bound():
    """An interned result is replaced by an array of the same dtype, shape
    and bytes and the same layout (C order): a transposed view of equal
    bits is not; past INTERNED_MAX_BYTES nothing more is interned."""
    memo = Memo(np)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    first = memo._interned(a.copy())
    assert memo._interned(a.copy()) is first
    t = np.ascontiguousarray(a.T).T          # a's values, Fortran order
    assert t.tobytes() == a.tobytes() and not t.flags.c_contiguous
    assert memo._interned(t) is t
    small = Memo(np)
    small.INTERNED_MAX_BYTES = a.nbytes
    small._interned(a.copy())
    other = a + 1
    assert small._interned(other) is other and small._interned((a + 1)) is not other
    assert small.interned_bytes == a.nbytes


def test_tables_are_built_once_per_program_and_semantics():
    p = next(q for _, q, _, _, _ in _cases(5, 3))
    assert compiled(p, "atomic") is compiled(p, "atomic")
    assert compiled(p, "atomic") is not compiled(p, "decomposed")
    with pytest.raises(ValueError):
        device_machine(p, get_backend("numpy"), "sequential")


def _subnormal_rich(rng, dtype, shape):
    """Values of `dtype` with subnormals of both signs, zeros of both
    signs, the smallest normals, infinities, NaN and ordinary values."""
    tiny = float(np.finfo(np.float32 if dtype == "bfloat16" else dtype).tiny)
    pool = np.array([tiny, -tiny, tiny / 2, -tiny / 3, tiny * 0.75, 0.0, -0.0, 1.0, -2.5,
                     np.inf, -np.inf, np.nan, 3e-39, -1e-45, 1e-310, 0.5], np.float64)
    from tfsem.oracle.values import DTYPES
    return rng.choice(pool, size=shape).astype(DTYPES[dtype] if dtype == "bfloat16" else dtype)


def test_flushed_variants_skip_only_flushes_that_change_nothing():
    """Memo's run of a flushed variant (functions.run_flushed, the
    arguments a flushed variant returned not flushed again) gives fn.impl's
    bits, on chains of the flushed variants over subnormal-rich float32,
    float64 and bfloat16."""
    from tfsem.backends import execute as EX
    from tfsem.oracle import functions as fns
    assert EX._flushed_base(fns.flushed_variant(fns.get("Add"))) is fns.get("Add")
    names = [n for n in ("Add.ftz", "Sub.ftz", "Mul.ftz", "RealDiv.ftz", "Square.ftz",
                         "SquaredDifference.ftz", "Sqrt.ftz") if fns.lookup(n) is not None]
    assert len(names) >= 5 and all(EX._flushed_base(fns.get(n)) is not None for n in names)
    assert EX._flushed_base(fns.get("Add")) is None
    rng = np.random.default_rng(5)
    skipped = 0
    for dtype in ("float32", "float64", "bfloat16"):
        memo = Memo(np)
        pool = [_subnormal_rich(rng, dtype, (64,)) for _ in range(3)]
        for _ in range(40):
            f = fns.get(names[rng.integers(len(names))])
            args = [pool[rng.integers(len(pool))] for _ in range(f.n_in)]
            skipped += sum(memo._is_flushed(a) for a in args)
            with np.errstate(all="ignore"):
                want = f.impl(np, tuple(args), {})
                got = memo._flushed_impl(EX._flushed_base(f), np, tuple(args), {})
            assert [(r.dtype, r.tobytes()) for r in got] == \
                [(np.asarray(r).dtype, np.asarray(r).tobytes()) for r in want], (f.name, dtype)
            pool.append(got[0])
    assert skipped >= 30, skipped


def test_the_memo_holds_at_most_its_bounds():
    """Past `max_bytes`, or for a result over MAX_ENTRY_BYTES, nothing is
    remembered (the results are the same: computed again)."""
    from tfsem.backends.controlflow import BoundedMemo
    b = get_backend("numpy")
    p = program_from_json({
        "variables": {}, "feeds": {"x": {"dtype": "float64", "shape": [1000]}},
        "nodes": [{"name": "n", "op": "Neg", "inputs": ["$x"]},
                  {"name": "a", "op": "Abs", "inputs": ["$x"]}],
        "outputs": {"n": "n", "a": "a"}})
    m = device_machine(p, b, "atomic")
    x = {"x": np.linspace(-1, 1, 1000)}
    roomy, tight = Memo(np), Memo(np, max_bytes=8000)
    first = run_schedule(m, x, {}, ["n", "a"], None, roomy)[0]
    run_schedule(m, x, {}, ["n", "a"], None, tight)
    assert roomy.bytes == 16000 and len(roomy.entries) == 2
    assert tight.bytes == 8000 and len(tight.entries) == 1
    again = run_schedule(m, x, {}, ["a", "n"], None, tight)[0]
    assert tight.hits == 1 and tight.misses == 3
    assert all(np.array_equal(first[k], again[k]) for k in first)
    small = Memo(np)
    small.MAX_ENTRY_BYTES = 4000
    run_schedule(m, x, {}, ["n", "a"], None, small)
    assert small.bytes == 0 and not small.entries
    bounded = BoundedMemo(100)
    assert bounded.room(60) and not bounded.room(60) and bounded.room(40) and bounded.bytes == 100


def _one_to_one(pairs):
    """Whether (key, other key) pairs pair the keys one to one: each key
    with one other key and each other key with one key, so that the two
    keys tell apart exactly the same attributes."""
    pairs = set(pairs)
    return len({a for a, _ in pairs}) == len({b for _, b in pairs}) == len(pairs)


#: attributes told apart by their kinds and bits alone, and equal ones
#: written otherwise (keys in another order, another list object)
ATTACKS = [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": "1"}, {"a": "True"}, {"a": None},
           {"a": "None"}, {"a": [1]}, {"a": (1,)}, {"a": [1, 2]}, {"a": (1, 2)}, {"a": [[1], 2]},
           {"a": [(1,), 2]}, {"a": ["1", 2]}, {"a": 'x"y'}, {"a": "x'y"}, {"a": "x\\y"},
           {"a": [True, False]}, {"a": [1, 0]}, {"a": {"b": 1}}, {"a": {"b": True}},
           {"a": float("nan")}, {"a": -0.0}, {"a": 0.0}, {"a": 0}, {"a": False},
           {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": [1, 2][:]}, {"a": 2 ** 70},
           {"a": -1}, {"a": []}, {"a": ()}, {"a": ""}, {"b": 1}, {1: 1},
           {"value": Tensor(np.float32(0.0))}, {"value": Tensor(np.float32(-0.0))},
           {"value": Tensor(np.int32(0))}, {"value": Tensor(np.array([0.0], np.float32))},
           {"value": Tensor(np.uint32(0x7fc00001).view(np.float32))},
           {"value": Tensor(np.uint32(0x7fc00002).view(np.float32))},
           {"value": Tensor(np.float32(np.nan))}, {"value": Tensor(np.float32(1.0)), "k": 1},
           {"value": Tensor(np.float32(1.0)), "k": True}, {"value": Tensor(np.float32(1.0)), "k": 1.0},
           {"value": Tensor(np.float64(1.0))}, {"value": Tensor(np.array([1.0], np.float32))},
           {"value": Tensor(np.array([[1.0]], np.float32))}, {"value": Tensor(np.float32(1.0))},
           {"value": Tensor(np.array(1.0, np.float32))}]


def test_the_tables_attribute_keys_are_the_exact_keys():
    """Tables.attrs_key (execute._exact_key: the plain form of TensorFlow's
    kernels' cache key where it applies, tensors by their exact bits, else
    the key a node's frozen attributes keep) tells apart exactly the attributes `functions.attrs_key`
    tells apart: over every node of generated programs and of the cases
    with attributes of every kind (floats, NaN, tensors, -0.0), and over
    attributes that differ only in kind (1, 1.0, True, "1"; a list and a
    tuple; an int32 and a float32 zero) or bits (-0.0, NaN payloads) or
    shape, or are equal though written otherwise, so that the memo shares
    and tells apart the applications it did before."""
    from pathlib import Path

    from tfsem.backends.execute import _exact_key
    from tfsem.oracle import functions as fns
    from tfsem.oracle.jsonio import case_from_json, read_json_file
    from tfsem.oracle.program import _FrozenDict
    programs = [p for _, p, _, _, _ in _cases(40, 7)]
    for path in sorted((Path(__file__).resolve().parent / "cases").rglob("*.json"))[:400]:
        try:
            case = case_from_json(read_json_file(str(path)), where=path.name)
        except Exception:   # noqa: BLE001 (a case of another kind)
            continue
        programs.append(case.original)
    pairs, plain = [], 0
    for p in programs:
        if p.has_control_flow:
            continue
        t = compiled(p, "atomic")
        for i in range(t.n):
            key = t.attrs_key(i)
            plain += isinstance(key, str) and key.startswith("F")
            pairs.append((key, fns.attrs_key(dict(t.attrs[i]))))
    assert len(pairs) >= 1000 and plain >= 100, (len(pairs), plain)
    assert _one_to_one(pairs)
    attacks = [(_exact_key(a), fns.attrs_key(a)) for a in ATTACKS] + \
        [(_exact_key(_FrozenDict(a)), fns.attrs_key(a)) for a in ATTACKS]
    assert _one_to_one(attacks + pairs)
    assert len({k for k, _ in attacks}) == len(ATTACKS) - 3    # (the three written otherwise)
    assert sum(type(_exact_key(a)) is tuple for a in ATTACKS) >= 10   # (the tensor form)
