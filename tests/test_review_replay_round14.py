"""Adversarial review of this round's shortcuts in the numpy replay
(backends/execute.py: the memo's interning of results up to 4 KiB, the
flushed variants' argument marks, HostValues) and in the control-flow
engine (a replay that goes on along another kept path where the first
leaves off).  Each shortcut's answer is compared with the slow path's
(the shortcut switched off by monkeypatching), bit for bit where values
are compared, on σ biased toward what could tell them apart: NaN
payloads, -0.0, subnormals, byte orders, views."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.backends import execute as E
from tfsem.backends.arraymodule import get_backend
from tfsem.backends.execute import HostValues, Memo, device_machine, download, run_schedule, upload
from tfsem.checking import check as C
from tfsem.generators.control_flow import control_flow_programs
from tfsem.generators.strategies import inputs_for, random_programs
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.values import Tensor, sigma_key
from tfsem.rewrites import get_pass
from test_check_canonical_memo import exact_outcome


def _same_array(a, b):
    return (a.dtype == b.dtype and a.dtype.str == b.dtype.str and a.shape == b.shape
            and a.strides == b.strides and a.tobytes() == b.tobytes())


# -- interning (Memo._interned) ---------------------------------------------

def test_interning_never_merges_arrays_of_other_bits_dtype_or_layout():
    """Pairs equal by value (or by bytes) but not by dtype, byte order,
    shape, sign of zero or NaN payload stay two; an array equal in all of
    them becomes the first; a view that is not C-contiguous is not
    interned."""
    memo = Memo(np)
    nan1 = np.array([0x7FC00001], np.uint32).view(np.float32)
    nan2 = np.array([0x7FC00002], np.uint32).view(np.float32)
    pairs = [(np.array([0.0]), np.array([-0.0])),
             (nan1.copy(), nan2.copy()),
             (np.array([1.0], "<f8"), np.array([1.0], ">f8")),
             (np.zeros(4, np.float32), np.zeros(2, np.float64)),
             (np.zeros((2, 2), np.float32), np.zeros(4, np.float32)),
             (np.array([1], np.int32), np.array([1], np.uint32)),
             (np.array([True]), np.array([1], np.uint8)),
             (np.zeros(1, np.float32), np.zeros(1, np.int32))]
    for a, b in pairs:
        ia, ib = memo._interned(a), memo._interned(b)
        assert _same_array(ia, a) and _same_array(ib, b)
        assert ia is not ib
    twin = np.array([-0.0])
    assert memo._interned(twin) is pairs[0][1]
    strided = np.arange(8.0)[::2]
    assert memo._interned(strided) is strided
    # a C-contiguous view is interned as it is: its bits, not its base's
    row = np.arange(6.0).reshape(2, 3)[1]
    assert _same_array(memo._interned(row), row)


def test_interned_byte_cap_holds():
    memo = Memo(np)
    memo.INTERNED_MAX_BYTES = 64
    for k in range(100):
        memo._interned(np.full(4, k, np.float64))
    assert memo.interned_bytes <= 64 and len(memo.interned) == 2


def _adversarial_sigma(values, rng):
    """σ with NaN payloads, -0.0 and subnormals put into float tensors."""
    out = {}
    for name, v in values.items():
        if isinstance(v, Tensor) and v.array.dtype in (np.float32, np.float64) and v.array.size:
            a = v.array.copy().reshape(-1)
            tiny = np.finfo(a.dtype).tiny
            choices = [a.dtype.type(-0.0), a.dtype.type(tiny / 4), a.dtype.type(-tiny / 8),
                       np.array([0x7FC00001 if a.dtype == np.float32 else 0x7FF8000000000001],
                                np.uint32 if a.dtype == np.float32 else np.uint64
                                ).view(a.dtype)[0]]
            for k in range(a.size):
                if rng.random() < 0.5:
                    a[k] = choices[rng.randrange(len(choices))]
            out[name] = Tensor(a.reshape(v.array.shape))
        else:
            out[name] = v
    return out


def _runs(p, q, feeds, init, sem, seed, *, intern, marks, known):
    """The outcomes of random schedules of q then p then p again, run as a
    confirmation does (one σ upload, one memo), each downloaded with or
    without HostValues; the shortcuts on or off."""
    b = get_backend("numpy")
    memo = Memo(np)
    if not intern:
        memo.INTERN_BYTES = -1
    if not marks:
        memo._ftz = lambda a: fns.ftz(np, a)
        memo._is_flushed = lambda a: False
    dev = (upload(feeds, b), upload(init, b))
    host = HostValues() if known else None
    if host is not None:
        host.add_sigma(dev[0], feeds)
        host.add_sigma(dev[1], init)
    rng = random.Random(seed)
    got = []
    for m in (device_machine(q, b, sem), device_machine(p, b, sem), device_machine(p, b, sem)):
        schedule = m.run_random(m.start(*dev), rng).schedule
        try:
            outputs, variables = run_schedule(m, *dev, schedule, None, memo)
        except Exception as exc:   # noqa: BLE001 (the same kind either way)
            got.append(("raised", type(exc).__name__))
            continue
        got.append(exact_outcome(download(outputs, variables, b, "outputs+state", host)))
    return got


_FLUSHED = {"Add", "Sub", "Mul", "Max", "Min", "RealDiv", "Square", "Sqrt",
            "SquaredDifference", "BiasAdd"}


def _flushed(p):
    """`p` with every function that has a flushed variant (`.ftz`) replaced
    by it, in nodes and in Assigns."""
    j = program_to_json(p)
    for n in j["nodes"]:
        if n["op"] in _FLUSHED:
            n["op"] += fns.FTZ_SUFFIX
        if n.get("fn") in _FLUSHED:
            n["fn"] += fns.FTZ_SUFFIX
    return program_from_json(j)


@pytest.mark.parametrize("seed,dtype,flush,rewrite", [
    (3, "int64", False, "cse"), (17, "float32", False, "cse"), (5, "float32", True, "cse"),
    (11, "float64", True, "cse"), (23, "float32", True, "const-fold"),
    (29, "float32", False, "hoist-reads"), (31, "float64", True, "fuse-assign")])
def test_memo_shortcuts_give_the_slow_paths_bits_on_adversarial_sigma(seed, dtype, flush,
                                                                      rewrite):
    """Interning, the flushed variants' marks and HostValues on vs all off:
    the same outcomes bit for bit, on random programs (their functions
    swapped for the flushed variants, for `flush`) and a rewrite of them
    (CSE makes the two runs share results, constant folding makes a Const
    of what the other run computes, read hoisting and Assign fusion change
    outcomes) at σ full of NaN payloads, -0.0 and subnormals, in both
    modes."""
    rewrite_pass = get_pass(rewrite)
    compared = 0
    for i, p in enumerate(random_programs(40, seed, max_nodes=12, dtype=dtype)):
        if p.has_control_flow:
            continue
        if flush:
            p = _flushed(p)
        rng = random.Random(i)
        try:
            feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
            q = rewrite_pass(p)
        except Exception:   # noqa: BLE001 (a program the back end does not run)
            continue
        feeds, init = _adversarial_sigma(feeds, rng), _adversarial_sigma(init, rng)
        sem = ("atomic", "decomposed")[i % 2]
        slow = _runs(p, q, feeds, init, sem, i, intern=False, marks=False, known=False)
        fast = _runs(p, q, feeds, init, sem, i, intern=True, marks=True, known=True)
        assert fast == slow, (i, sem)
        compared += sum(type(o) is tuple and o[0] != "raised" for o in fast)
    assert compared >= 40, compared


# -- the flushed variants' marks (Memo._ftz) --------------------------------

def test_a_dead_marked_arrays_id_reused_is_searched_again():
    """An array marked flushed dies; a new array with subnormals that gets
    its id is flushed all the same (the mark is a weak reference checked
    by identity).  Counted: the id was reused at least once."""
    memo = Memo(np)
    tiny = np.finfo(np.float32).tiny
    reused = 0
    for _ in range(200):
        a = np.ones(16, np.float32)
        memo._ftz(a)
        old = id(a)
        del a
        # (the young generation only: the array has no cycle and went with
        # its last reference; a full collection walks all the session
        # holds, TensorFlow's objects too where a test imported it: 0.6 s
        # each there, two minutes for the 200)
        gc.collect(0)
        b = np.full(16, tiny / 4, np.float32)
        reused += id(b) == old
        f = memo._ftz(b)
        assert not np.any((f != 0) & (np.abs(f) < tiny))
    assert reused >= 1


# -- HostValues --------------------------------------------------------------

def test_a_host_value_is_never_another_arrays():
    """Device arrays downloaded, dropped by the run, and new arrays of other
    bits made after: a host value taken for any of them is its own bits (a
    table by id alone would hand a dead array's Tensor to the array that
    reuses its id)."""
    b = get_backend("numpy")
    known = HostValues()
    for k in range(300):
        a = np.full(8, k, np.float32)
        download({"o": a}, {}, b, "outputs", known)
        del a
        new = np.full(8, -k - 0.5, np.float32)
        got = known.get(new)
        assert got is None or got.array.tobytes() == new.tobytes()
        out = download({"o": new}, {}, b, "outputs", known)
        assert dict(out.outputs)["o"].array.tobytes() == new.tobytes()


# -- σ's key ----------------------------------------------------------------

def test_sigma_keys_differ_by_dtype_shape_sign_payload_and_side():
    nan1 = np.array([0x7FC00001], np.uint32).view(np.float32)
    nan2 = np.array([0x7FC00002], np.uint32).view(np.float32)
    variants = [Tensor(np.zeros(2, np.float32)), Tensor(np.zeros(2, np.int32)),
                Tensor(np.zeros((1, 2), np.float32)), Tensor(np.array([0.0, -0.0], np.float32)),
                Tensor(nan1), Tensor(nan2), Tensor(np.array([np.nan], np.float32)),
                Tensor(np.zeros(2, np.uint32)), Tensor(np.zeros(1, np.float64))]
    keys = set()
    for v in variants:
        keys.add(sigma_key({"x": v}, {}))
        keys.add(sigma_key({}, {"x": v}))
    assert len(keys) == 2 * len(variants)
    assert sigma_key({"x": Tensor(nan1.copy())}, {}) == sigma_key({"x": Tensor(nan1)}, {})


# -- control flow: going on along another kept path -------------------------

CF = settings(max_examples=8, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))


@CF
@given(control_flow_programs(max_blocks=3, bounded_trips=True),
       st.sampled_from(["atomic", "decomposed"]), st.data())
def test_continued_replays_answer_as_the_exploration(p, mode, data):
    """Many σ in a row on one Machine, so that several paths are kept and
    a replay leaves one for another; each answer (outcomes, schedules,
    states, exception) is the exploration's."""
    cf._machines.cache = {}
    old = (cf.remember_outcomes, cf.replay_traces)
    cf.remember_outcomes = False
    try:
        for _ in range(8):
            feeds, init = data.draw(inputs_for(p))
            got = []
            for replay in (True, False):
                cf.replay_traces = replay
                try:
                    got.append(cf.outcomes(p, feeds, init, mode, "outputs+state", 20_000,
                                           None, 6))
                except cf.LoopBoundExceeded as exc:
                    got.append(("bound", exc.frame, exc.limit))
                except Exception as exc:   # noqa: BLE001
                    got.append(("raised", type(exc).__name__, str(exc)))
            assert got[0] == got[1]
    finally:
        cf.remember_outcomes, cf.replay_traces = old


def _loop(tag, var, after=None):
    """A counting loop over Read(var) in frame `tag` (fetching its count and
    a sum of `a`), then var += count; after the Assign `after` when given."""
    e = lambda n: f"{tag}_{n}"
    nodes = [
        {"name": e("v"), "op": "Var", "var": var},
        {"name": e("r"), "op": "Read", "inputs": [e("v")] + ([f"^{after}"] if after else [])},
        {"name": e("i0"), "op": "Const", "value": 0, **({"inputs": [f"^{after}"]} if after else {})},
        {"name": e("s0"), "op": "Const", "value": {"dtype": "float32", "value": 0.0}},
        {"name": e("enter"), "op": "Enter", "frame_name": tag, "inputs": [e("i0")]},
        {"name": e("s_enter"), "op": "Enter", "frame_name": tag, "inputs": [e("s0")]},
        {"name": e("lim"), "op": "Enter", "frame_name": tag, "is_constant": True, "inputs": [e("r")]},
        {"name": e("ae"), "op": "Enter", "frame_name": tag, "is_constant": True, "inputs": ["$a"]},
        {"name": e("merge"), "op": "Merge", "inputs": [e("enter"), e("next")]},
        {"name": e("s_merge"), "op": "Merge", "inputs": [e("s_enter"), e("s_next")]},
        {"name": e("less"), "op": "Less", "inputs": [e("merge"), e("lim")]},
        {"name": e("cond"), "op": "LoopCond", "inputs": [e("less")]},
        {"name": e("sw"), "op": "Switch", "inputs": [e("merge"), e("cond")]},
        {"name": e("s_sw"), "op": "Switch", "inputs": [e("s_merge"), e("cond")]},
        {"name": e("body"), "op": "Identity", "inputs": [e("sw") + ":1"]},
        {"name": e("one"), "op": "Const", "value": 1, "inputs": ["^" + e("body")]},
        {"name": e("inc"), "op": "Add", "inputs": [e("body"), e("one")]},
        {"name": e("next"), "op": "NextIteration", "inputs": [e("inc")]},
        {"name": e("s_add"), "op": "Add", "inputs": [e("s_sw") + ":1", e("ae")]},
        {"name": e("s_next"), "op": "NextIteration", "inputs": [e("s_add")]},
        {"name": e("exit"), "op": "Exit", "inputs": [e("sw")]},
        {"name": e("s_exit"), "op": "Exit", "inputs": [e("s_sw")]},
        {"name": e("w"), "op": "Assign", "fn": "Add", "inputs": [e("v"), e("exit")]}]
    return nodes



TRIPS = (-1, 0, 1, 2, 2, 3, 3, 7)   # (-1: x or y uninitialized; 7: past the bound)


def _two_loops():
    """Loop L over x, then (after L's Assign) loop M over y: paths share
    L's prefix and part with each trip count, so a replay leaves one kept
    path for another at L's or M's predicate, and a prefix of one kept
    path joined to the suffix of another would be a path no run takes
    (the trip counts (3, 1) and (2, 3) kept, σ of (3, 3))."""
    return program_from_json({
        "format": "tfsem.program/1", "variables": ["x", "y"],
        "feeds": {"a": {"dtype": "float32", "shape": []}},
        "nodes": _loop("L", "x") + _loop("M", "y", after="L_w"),
        "outputs": {"s": "M_s_exit", "i": "L_exit", "j": "M_exit"}})


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_two_loops_continued_replays_answer_as_the_exploration(monkeypatch, mode):
    """σ of random trip counts (TRIPS: up to 7 against a bound of 6, an uninitialized
    variable for an error predicate, a NaN or -0.0 fed), in a row on one
    Machine, with replays and without: the same outcomes, schedules,
    counts of states and exceptions; a state budget the kept path's count
    passes too.  Counted: replays continued on another path, and replays
    that gave the answer."""
    p = _two_loops()
    counts = {"other": 0, "replayed": 0}
    real_other, real_replay = cf._other_path, cf._replay

    def other(*a):
        got = real_other(*a)
        counts["other"] += got is not None
        return got

    def replay(*a, **k):
        got = real_replay(*a, **k)
        counts["replayed"] += got is not None
        return got
    monkeypatch.setattr(cf, "_other_path", other)
    monkeypatch.setattr(cf, "_replay", replay)
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())

    def answer(feeds, init, replays, max_states):
        monkeypatch.setattr(cf, "replay_traces", replays)
        try:
            return cf.outcomes(p, feeds, init, mode, "outputs+state", max_states, None, 6)
        except cf.LoopBoundExceeded as exc:
            return ("bound", exc.frame, exc.limit)
        except BudgetExceeded as exc:
            return ("budget", exc.which)

    rng = random.Random(7)
    pairs = [(3, 1), (2, 3), (3, 3)] + [(rng.choice(TRIPS), rng.choice(TRIPS))
                                        for _ in range(120)]
    for k, (x, y) in enumerate(pairs):
        feeds = {"a": Tensor(rng.choice([0.5, -0.0, float("nan")]), "float32")}
        init = {n: Tensor(v, "int64") for n, v in (("x", x), ("y", y)) if v >= 0}
        max_states = 60 if k % 7 == 6 else 20_000
        assert answer(feeds, init, True, max_states) == answer(feeds, init, False, max_states), \
            (k, x, y)
    assert counts["other"] >= 20 and counts["replayed"] >= 10, counts


def _two_conds():
    """if x: a else -a; then (after it) if y: ... else -...: each branch
    one step, so the paths of (x, y) = (True, True) and (False, False)
    have the same length and the second Switch at the same index, with
    different steps before it (the live and the dead branch swapped);
    `late` reads the first branch's True side after the second Switch, so
    it is dead or live by the prefix: a path joined at the second Switch
    from another prefix fires it as the other path did."""
    def cond(tag, var, src, after=None):
        e = lambda n: f"{tag}_{n}"
        return [
            {"name": e("v"), "op": "Var", "var": var},
            {"name": e("r"), "op": "Read", "inputs": [e("v")] + ([f"^{after}"] if after else [])},
            {"name": e("sw"), "op": "Switch", "inputs": [src, e("r")]},
            {"name": e("t"), "op": "Identity", "inputs": [e("sw") + ":1"]},
            {"name": e("f"), "op": "Neg", "inputs": [e("sw")]},
            {"name": e("m"), "op": "Merge", "inputs": [e("f"), e("t")]}]
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "bool", "shape": []}, "y": {"dtype": "bool", "shape": []}},
        "feeds": {"a": {"dtype": "float32", "shape": []}},
        "nodes": cond("A", "x", "$a") + cond("B", "y", "A_m", after="A_m") + [
            {"name": "late", "op": "Add", "inputs": ["A_t", "B_m"]}],
        "outputs": {"o": "B_m", "k": "B_m:1", "late": "late"}})


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_a_replay_goes_on_only_along_a_path_with_its_prefix(monkeypatch, mode):
    """Paths (True, True) and (False, False) kept, then σ (True, False):
    the first leaves off at the second Switch, where the other path has
    the same step and writes but another prefix; its schedule is not this
    run's.  The answers, with replays and without, are the same at every
    σ of a random sequence (so a continuation that checked only the step
    at the switch point would be caught: it would answer with the other
    path's schedule)."""
    p = _two_conds()
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    replayed = []
    real_replay = cf._replay

    def replay(*a, **k):
        got = real_replay(*a, **k)
        replayed.append(got is not None)
        return got
    monkeypatch.setattr(cf, "_replay", replay)

    def answer(x, y, a, replays):
        monkeypatch.setattr(cf, "replay_traces", replays)
        feeds = {"a": Tensor(a, "float32")}
        init = {n: Tensor(v, "bool") for n, v in (("x", x), ("y", y)) if v is not None}
        return cf.outcomes(p, feeds, init, mode, "outputs+state", 20_000, None, 6)

    rng = random.Random(3)
    sigmas = [(True, True), (False, False), (True, False), (False, True)] + [
        (rng.choice([True, False, None]), rng.choice([True, False, None])) for _ in range(40)]
    for x, y in sigmas:
        a = rng.choice([1.5, -0.0, float("nan")])
        assert answer(x, y, a, True) == answer(x, y, a, False), (x, y)
    assert sum(replayed) >= 10, replayed


def test_vectors_between_256_bytes_and_4_kib_give_the_slow_paths_bits():
    """The sizes this round's interning added (256 B to 4 KiB): a variable
    updated by Assign-Add.ftz and read before and after, results equal by
    value to σ's (x + 0, a feed of zeros and -0.0) and to each other, the
    rewritten run hoisting the second Read; random schedules of both, at σ
    of NaN payloads, -0.0 and subnormals: interning, marks and HostValues
    on and off give the same bits."""
    nodes = [{"name": "vx", "op": "Var", "var": "x"},
             {"name": "r1", "op": "Read", "inputs": ["vx"]},
             {"name": "a", "op": "Add.ftz", "inputs": ["r1", "$f"]},
             {"name": "b", "op": "Add.ftz", "inputs": ["r1", "$f"]},
             {"name": "w", "op": "Assign", "fn": "Add.ftz", "inputs": ["vx", "$f"]},
             {"name": "r2", "op": "Read", "inputs": ["vx", "^w"]},
             {"name": "c", "op": "Mul.ftz", "inputs": ["r2", "$g"]},
             {"name": "d", "op": "Sub", "inputs": ["c", "a"]}]
    compared = 0
    for n in (64, 250, 1024):
        spec = {"dtype": "float32", "shape": [n]}
        p = program_from_json({"format": "tfsem.program/1", "variables": {"x": spec},
                               "feeds": {"f": spec, "g": spec}, "nodes": nodes,
                               "outputs": {"a": "a", "b": "b", "c": "c", "d": "d"}})
        q = get_pass("hoist-reads")(p)
        for k in range(6):
            rng = random.Random(k)
            base = np.zeros(n, np.float32) if k % 2 else np.ones(n, np.float32)
            feeds = _adversarial_sigma({"f": Tensor(np.zeros(n, np.float32)),
                                        "g": Tensor(base)}, rng)
            init = _adversarial_sigma({"x": Tensor(base)}, rng)
            for sem in ("atomic", "decomposed"):
                slow = _runs(p, q, feeds, init, sem, k, intern=False, marks=False, known=False)
                fast = _runs(p, q, feeds, init, sem, k, intern=True, marks=True, known=True)
                assert fast == slow, (n, k, sem)
                compared += sum(o[0] != "raised" for o in fast)
    assert compared >= 100, compared
