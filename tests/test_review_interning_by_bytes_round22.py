"""Adversarial review of the application memo's interning by bytes
(oracle/applications.py `_bits_key`, `INTERN_BY_BYTES`): a tensor is
interned by its (dtype, shape, bytes) instead of `values.exact(t)`, a
function's fresh result without the search for NaNs, a tensor from
outside the memo by the bytes of its own equality key; and functions
`_apply` making `strict()` once.

Each test is an attack that found nothing and now guards the property it
attacked.  Every answer is compared bit for bit (NaN payloads and signs,
signed zeros told apart) three ways: the bytes key, the exact key (the
switch off) and no memo at all (`TFSEM_APPLICATION_MEMO=0`); where the
bits are TensorFlow's to give, with TensorFlow's kernels too."""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from controlflow_support import registry_restored
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import Node, Program, validate
from tfsem.oracle.values import DTYPES, FLOAT_DTYPES, Error, Tensor, exact

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def no_kept_memo():
    A.clear()
    yield
    A.clear()


def _bits(v):
    """A value as its exact bits: (dtype, shape, C-order bytes), an error
    by its reason, anything else as itself."""
    if isinstance(v, Tensor):
        return (v.dtype, v.array.shape, np.ascontiguousarray(v.array).tobytes())
    if isinstance(v, Error):
        return ("error", v.reason)
    return v


def _outcome_bits(o):
    return (tuple((k, _bits(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, _bits(v)) for k, v in o.state))


def _three_ways(monkeypatch, run, hits: bool = True):
    """`run()` with no memo, then inside one memo scope with the bytes key
    and with the exact key (each from an empty memo): the three answers.
    The control-flow engine's own tables of applications and outcome
    sets are off in all three (they answer before the memo and outlive
    it), so that its applications go to the memo.  `hits`: the memo
    answered some (else: it was asked, and interned its misses' results)."""
    from tfsem.oracle import controlflow as cf
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "remember_lists", False)
    monkeypatch.setattr(cf.Machine, "remember_functions", False)
    monkeypatch.setenv(A.ENV, "0")
    A.clear()
    fresh = run()
    monkeypatch.setenv(A.ENV, "1")
    got = {}
    for on in (True, False):
        monkeypatch.setattr(A, "INTERN_BY_BYTES", on)
        A.clear()
        with A.scope():
            got[on] = run()
        # (the memo answered: the attack went through its hits)
        assert A.last["hits"] > 0 if hits else A.last["misses"] > 0
    return fresh, got[True], got[False]


# -- (1) the same bytes, another meaning -----------------------------------------


def _aliases() -> list[Tensor]:
    """Tensors that share their bytes with another of the pool but differ
    in dtype or shape (or share the values but not the bytes)."""
    arrays: list[np.ndarray] = []
    u16 = np.array([0x7FC1, 0x8000, 0x0001, 0x3F80, 0x7E00, 0xFFC0], np.uint16)
    for dt in (np.uint16, np.int16, np.float16, ml_dtypes.bfloat16):
        arrays.append(u16.view(dt))
        arrays.append(u16.view(dt).reshape(2, 3))
        arrays.append(u16.view(dt).reshape(3, 2))
        arrays.append(u16[:1].view(dt).reshape(()))
        arrays.append(u16[:1].view(dt).reshape(1, 1))
    u32 = np.array([0x7FC00001, 0x80000000, 0x00000001, 0x3F800000], np.uint32)
    for dt in (np.uint32, np.int32, np.float32):
        arrays.append(u32.view(dt))
        arrays.append(u32[:1].view(dt).reshape(()))
        arrays.append(u32[:1].view(dt).reshape(1))
    u64 = np.array([0x7FF8000000000001, 0x8000000000000000, 1], np.uint64)
    for dt in (np.uint64, np.int64, np.float64):
        arrays.append(u64.view(dt))
    b = np.array([1, 0, 1], np.uint8)
    for dt in (np.uint8, np.int8, np.bool_):
        arrays.append(b.view(dt))
        arrays.append(b[:1].view(dt).reshape(()))
    for dt in DTYPES.values():
        for shape in ((0,), (0, 3), (3, 0), (0, 0), (1, 0, 1)):
            arrays.append(np.zeros(shape, dt))
    # the same elements in another memory order, and a strided view
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    arrays += [np.asfortranarray(m), m[:, ::2], m.T]
    out = []
    for a in arrays:
        out.append(Tensor(a))
        out.append(pickle.loads(pickle.dumps(Tensor(a))))
    return out


def test_same_bytes_of_another_dtype_or_shape_never_answer_each_other():
    ts = _aliases()
    rng = np.random.default_rng(22)
    for trial in range(4):
        with A.scope():
            memo = A.active()
            for k in rng.permutation(len(ts) * 2) % len(ts):
                t = ts[k]
                way = (k + trial) % 3
                if way == 0:
                    got = A.intern(memo, t)
                elif way == 1:
                    got = A.intern_const(memo, t)
                else:
                    (got,) = A.interned_results(memo, (t,))
                # (the answer is a tensor of the query's very bits, and of
                # its dtype name: never one of the same bytes read otherwise)
                assert type(got) is Tensor
                assert _bits(got) == _bits(t), (t, got)
                assert got.array.dtype == t.array.dtype
    # (the attack reaches the case: pairs of equal bytes and other dtypes)
    raw = {}
    for t in ts:
        raw.setdefault(np.ascontiguousarray(t.array).tobytes(), set()).add((t.dtype, t.shape))
    assert max(len(v) for v in raw.values()) >= 8


def test_applications_of_aliased_tensors_answer_their_own_bits(monkeypatch):
    """Each aliased tensor through functions that show its dtype and shape
    (Shape, Size, Neg, Abs, Identity, Reshape, Cast to float64) inside one
    memo, twice in another order: the bits of the functions applied with
    no memo."""
    ts = [t for t in _aliases() if t.dtype != "bool"]
    f64 = {"DstT": "float64"}
    calls = [("Identity", None), ("Shape", None), ("Size", None), ("Neg", None),
             ("Abs", None), ("Cast", f64)]

    def run():
        out = []
        for order in (range(len(ts)), reversed(range(len(ts)))):
            for k in order:
                for name, attrs in calls:
                    try:
                        r = fns.get(name).apply((ts[k],), attrs)
                    except fns.CannotRun as exc:
                        r = (type(exc).__name__,)
                    out.append((k, name, tuple(_bits(v) for v in r)))
        return sorted(out, key=repr)
    fresh, on, off = _three_ways(monkeypatch, run)
    assert on == fresh and off == fresh


# -- (2) NaN payloads, signed zeros, subnormals, extremes ----------------------------


def _hostile(dtype: str, n: int = 8) -> list[np.ndarray]:
    d = DTYPES[dtype]
    if dtype in FLOAT_DTYPES:
        info = ml_dtypes.finfo(d)
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[d.itemsize]
        nan = np.array(np.nan, d).view(width)
        payload = (nan | width(1)).astype(width)
        vals = [np.array([x] * n, d) for x in (0.0, -0.0, float(info.smallest_subnormal),
                                              -float(info.tiny), float(info.max), float("inf"))]
        vals.append(np.full(n, nan, width).view(d))
        vals.append(np.full(n, payload, width).view(d))
        vals.append(np.full(n, nan | (width(1) << width(8 * d.itemsize - 1)), width).view(d))
        return vals
    if dtype == "bool":
        return [np.zeros(n, bool), np.ones(n, bool)]
    info = np.iinfo(d)
    return [np.full(n, x, d) for x in (info.min, info.max, 0, -1 if info.min else 1)]


def test_nan_payloads_and_zero_signs_come_back_from_the_memo_as_computed(monkeypatch):
    """Unary and binary functions of every float dtype at NaNs of three
    payloads and signs, ±0, subnormals and extremes, each pair applied
    twice in one memo: the same bits as with no memo, either key.  The
    NaN of numpy's own bits and one of another payload are one outcome
    under SPEC equality: a memo that interned by it would answer one with
    the other."""
    unary = ("Neg", "Abs", "Identity", "Square", "Sqrt", "Floor", "Relu")
    binary = ("Add", "Sub", "Mul", "RealDiv", "Max", "Min", "Maximum", "SquaredDifference")
    binary = tuple(b for b in binary if b in fns._REGISTRY)

    def run():
        out = []
        for dtype in sorted(FLOAT_DTYPES):
            vals = [Tensor(a) for a in _hostile(dtype)]
            for _ in range(2):
                for i, x in enumerate(vals):
                    for name in unary:
                        out.append((dtype, name, i, _bits(fns.get(name).apply((x,))[0])))
                    for j, y in enumerate(vals):
                        for name in binary:
                            r = fns.get(name).apply((x, y))
                            out.append((dtype, name, i, j, _bits(r[0])))
        return out
    fresh, on, off = _three_ways(monkeypatch, run)
    assert on == fresh and off == fresh
    # (the attack reaches the case: NaNs of different bits among the answers)
    nans = {r[-1] for r in fresh if r[1] == "Identity" and r[0] == "float32"}
    assert len(nans) == 9


def test_memo_answers_are_tensorflows_bits():
    """Neg, Abs, Identity and Reshape of NaNs of other payloads and signs,
    ±0 and subnormals, inside one memo where another tensor of the same
    SPEC value was interned first: TensorFlow's own kernels' bits."""
    tf = pytest.importorskip("tensorflow")
    ops = {"Neg": lambda x: tf.raw_ops.Neg(x=x), "Abs": lambda x: tf.raw_ops.Abs(x=x),
           "Identity": lambda x: tf.raw_ops.Identity(input=x)}
    compared = 0
    with A.scope():
        for dtype in ("float16", "bfloat16", "float32", "float64"):
            for a in _hostile(dtype, 3):
                t = Tensor(a)
                for name, op in ops.items():
                    got = fns.get(name).apply((t,))[0]
                    want = op(tf.constant(a)).numpy()
                    assert _bits(got) == _bits(Tensor(want)), (dtype, a, name)
                    compared += 1
                got = fns.get("Reshape").apply((t,), {"shape": [1, 3]})[0]
                want = tf.reshape(tf.constant(a), [1, 3]).numpy()
                assert _bits(got) == _bits(Tensor(want))
    assert compared == 4 * 9 * 3


def _program(dtype: str, consts: list[np.ndarray]) -> Program:
    """A program of a feed x of `dtype` [4], Consts of the given arrays
    (their very bits: NaN payloads, which the file format does not write,
    put in the Const nodes in memory), and Add, Mul, Max of x and each
    Const and Neg of it, with a variable v updated by AssignAdd of them."""
    nodes = [{"name": "v", "op": "Var", "var": "v"},
             {"name": "r", "op": "Read", "inputs": ["v"]}]
    outputs = {}
    for i, _ in enumerate(consts):
        nodes.append({"name": f"c{i}", "op": "Const", "value": {"dtype": dtype, "value": 0}})
        for f in ("Add", "Mul", "Max"):
            nodes.append({"name": f"{f}{i}", "op": f, "inputs": ["$x", f"c{i}"]})
            outputs[f"{f}{i}"] = f"{f}{i}"
        nodes.append({"name": f"n{i}", "op": "Neg", "inputs": [f"c{i}"]})
        nodes.append({"name": f"v{i}", "op": "Var", "var": "v"})
        nodes.append({"name": f"w{i}", "op": "AssignAdd", "inputs": [f"v{i}", f"Add{i}"]})
        outputs[f"n{i}"] = f"n{i}"
    outputs["r"] = "r"
    p = program_from_json({"format": "tfsem.program/1",
                           "variables": {"v": {"dtype": dtype, "shape": [4]}},
                           "feeds": {"x": {"dtype": dtype, "shape": [4]}},
                           "nodes": nodes, "outputs": outputs})
    value = {f"c{i}": Tensor(a) for i, a in enumerate(consts)}
    nodes2 = tuple(Node(n.name, n.op, n.inputs, {"value": value[n.name]}) if n.name in value
                   else n for n in p.nodes)
    q = Program(p.variables, nodes2, p.outputs, p.feeds)
    assert not validate(q)
    return q


def _sigma(dtype: str, k: int) -> tuple[dict, dict]:
    vals = _hostile(dtype, 4)
    x = vals[k % len(vals)]
    v = vals[(k + 3) % len(vals)]
    return {"x": Tensor(x)}, {"v": Tensor(v)}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "uint64"])
def test_programs_of_consts_that_differ_in_a_sign_or_payload(monkeypatch, dtype):
    """Two programs whose Consts differ only in a zero's sign or a NaN's
    payload (equal outcomes under SPEC equality, other bits), run in turns
    in one memo at σ of hostile values: every run's bits, and each
    outcome set, are those with no memo.  The Consts of both are
    interned into one table: one program's tensor answering the other's
    would show in Neg's and Add's bits."""
    vals = _hostile(dtype, 4)
    pa = _program(dtype, vals)
    pb = _program(dtype, vals[::-1])
    before = [json.dumps(program_to_json(p), sort_keys=True) for p in (pa, pb)]

    def run():
        out = []
        for k in range(len(vals)):
            feeds, init = _sigma(dtype, k)
            for p in (pa, pb, pa):
                o, _ = ref.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
                out.append(_outcome_bits(o))
            if k < 2:
                out.append(frozenset(o for o, _ in outcome_set(pb, feeds, init).items()))
        return out
    fresh, on, off = _three_ways(monkeypatch, run)
    assert on == fresh and off == fresh
    # (the programs' Consts are their own, as exported: interning replaced
    # only what the runs passed on)
    assert [json.dumps(program_to_json(p), sort_keys=True) for p in (pa, pb)] == before


# -- (3) generated programs, the case corpus and the corpus graphs ---------------------


def _hostile_sigma(p: Program, k: int) -> tuple[dict, dict]:
    """σ of p whose every tensor holds its dtype's hostile values (NaNs of
    three payloads and signs, ±0, subnormals, extremes), shifted by k; a
    variable uninitialized every fifth σ."""
    def tensor(t, j):
        vals = np.concatenate([a[:1] for a in _hostile(t.dtype, 1)])
        vals = np.roll(vals, j)
        return Tensor(np.resize(vals, t.shape) if t.shape else vals[0], t.dtype)
    feeds = {f: tensor(p.feed_type(f), k + i) for i, f in enumerate(p.feed_names)}
    init = {x: Error("uninitialized") if (k + i) % 5 == 4 else tensor(p.variables[x], k + 2 * i)
            for i, x in enumerate(sorted(p.variables))}
    return feeds, init


def _canonical_runs(programs, sigmas_per_program: int, modes=(("atomic", "outputs+state"),)):
    out = []
    for p in programs:
        for k in list(range(sigmas_per_program)) * 2:
            feeds, init = _hostile_sigma(p, k)
            for sem, obs in modes:
                try:
                    if p.has_control_flow:
                        # (the control-flow engine: its outcome set, each
                        # outcome by its bits)
                        got = outcome_set(p, feeds, init, sem, obs, max_seconds=20)
                        out.append(sorted(repr(_outcome_bits(o)) for o, _ in got.items()))
                        continue
                    o, _ = ref.canonical_outcome(p, feeds, init, sem, obs)
                    out.append(_outcome_bits(o))
                except (fns.CannotRun, C.BudgetExceeded) as exc:
                    out.append(type(exc).__name__)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "bool"])
def test_generated_programs_at_hostile_sigma_three_ways(monkeypatch, dtype):
    """Generated programs of each dtype, in one memo one after the other
    (their Consts and results interned into one table), each at three
    hostile σ given twice, under both semantics: the bits of fresh runs."""
    from tfsem.generators.strategies import random_programs
    ps = [p for p in random_programs(30, 2222, max_nodes=12, dtype=dtype)
          if not p.has_control_flow]
    modes = (("atomic", "outputs+state"), ("decomposed", "outputs"))
    fresh, on, off = _three_ways(monkeypatch, lambda: _canonical_runs(ps, 3, modes))
    assert on == fresh and off == fresh
    assert sum(type(r) is tuple for r in fresh) >= 100


def test_nested_loops_at_hostile_sigma_three_ways(monkeypatch):
    from tfsem.generators.nested_loops import nested_program
    ps = [program_from_json(nested_program(seed)) for seed in range(4)]
    fresh, on, off = _three_ways(monkeypatch, lambda: _canonical_runs(ps, 2), hits=False)
    assert on == fresh and off == fresh


CASES = sorted((HERE / "cases").glob("*.json"))


def test_the_case_corpus_at_hostile_sigma_three_ways(monkeypatch):
    """Every case's original and rewrite, one after the other in one memo
    (their Consts differ in signs of zero: alg_float_add_negzero), at two
    hostile σ given twice: the bits of fresh runs."""
    ps = []
    for path in CASES:
        doc = json.loads(path.read_text())
        for side in ("original", "rewritten"):
            try:
                ps.append(program_from_json(doc[side]))
            except Exception:          # (the invalid_ cases)
                pass
    fresh, on, off = _three_ways(monkeypatch, lambda: _canonical_runs(ps, 2))
    assert on == fresh and off == fresh
    assert len(ps) > 100


@pytest.mark.parametrize("name", ["alg_float_add_negzero", "alg_float_add_zero",
                                  "alg_float_mul_zero", "state_float_drop_add_zero",
                                  "alg_float_max_self", "alg_float_add_self_vs_mul2"])
def test_case_verdicts_and_counterexamples_either_way(monkeypatch, name):
    """The cases whose verdict turns on a zero's sign or a NaN: the same
    verdict and counterexample bits with the bytes key, the exact key and
    no memo, and the verdict the case expects."""
    doc = json.loads((HERE / "cases" / f"{name}.json").read_text())
    got = []
    for env, on in (("0", True), ("1", True), ("1", False)):
        monkeypatch.setenv(A.ENV, env)
        monkeypatch.setattr(A, "INTERN_BY_BYTES", on)
        A.clear()
        v = check_rewrite(program_from_json(doc["original"]), program_from_json(doc["rewritten"]),
                          semantics=doc["semantics"], observe=doc["observe"], timeout=20,
                          backends=False, classify=False)
        cx = v.counterexample
        got.append((v.verdict, None if cx is None else (
            sorted((k, _bits(x)) for k, x in cx.feeds.items()),
            sorted((k, _bits(x)) for k, x in (cx.init or {}).items()),
            [(k, _bits(x)) for k, x in cx.outcome.outputs])))
    assert got[0] == got[1] == got[2]
    assert got[0][0] == doc["expect"]


GRAPPLER = HERE / "grappler"


@pytest.mark.parametrize("path", sorted(p.name for p in GRAPPLER.glob("*.json")))
def test_corpus_graphs_and_their_rewrites_at_hostile_sigma_three_ways(monkeypatch, path):
    """A corpus graph and Grappler's rewrites of it, in one memo, at a
    hostile σ given twice: the bits of fresh runs."""
    doc = json.loads((GRAPPLER / path).read_text())
    ps = [program_from_json(doc["original"])]
    ps += [program_from_json(r) for r in doc["rewritten"].values()]

    def run():
        return _canonical_runs(ps, 1)
    fresh, on, off = _three_ways(monkeypatch, run, hits=not ps[0].has_control_flow)
    assert on == fresh and off == fresh


# -- (4) subclasses, writability, the memory cap, a replaced function, threads ----------


class _Marked(Tensor):
    """A Tensor subclass (a caller's own kind of value)."""


def test_a_tensor_subclass_is_never_interned_nor_replaced():
    """Interning looks at `type(t) is Tensor` (results, arguments) and a
    Const's tensor only when its type is Tensor: a subclass passes through
    the memo's applications as itself, unremembered, with the results a
    fresh application gives."""
    a = np.array([np.nan, -0.0, 1.0], np.float32)
    plain, marked = Tensor(a), _Marked(a)
    with A.scope():
        memo = A.active()
        assert A.intern(memo, plain) is plain
        assert A.canonical_args(memo, [marked]) is None
        for _ in range(2):
            for name in ("Neg", "Identity", "Abs"):
                got = fns.get(name).apply((marked,))
                assert _bits(got[0]) == _bits(fns.get(name)._apply((marked,), None, np)[0])
        # a Const whose tensor is a subclass goes the long way, keyed by
        # its attribute's bits: a plain Tensor of those bits
        (c,) = fns.get("Const").apply((), {"value": marked})
        assert _bits(c) == _bits(marked)
        assert all(type(t) is Tensor for t in memo.interned.values())


def test_interned_tensors_stay_read_only():
    with A.scope():
        memo = A.active()
        t = Tensor(np.arange(4, dtype=np.float32))
        (r,) = fns.get("Neg").apply((t,))
        (r2,) = fns.get("Neg").apply((Tensor(np.arange(4, dtype=np.float32)),))
        assert r2 is r
        (c,) = fns.get("Const").apply((), {"value": Tensor(np.arange(4, dtype=np.float32))})
        assert c is A.intern(memo, t)
        for x in (r, c, *memo.interned.values()):
            assert not x.array.flags.writeable
            with pytest.raises(ValueError):
                x.array[0] = 7


def test_the_memory_cap_holds_and_answers_stay_fresh(monkeypatch):
    """A table of 512 bytes, emptied again and again: the same bits as with
    no memo, and after every interning the table within its cap (one
    tensor larger than the cap alone excepted; passed by at most the 64
    bytes an entry counts beyond its tensor's), the bytes its keys copied
    (a fresh result's key holds a copy; a tensor from outside, its own
    equality key's bytes) within what the cap counts."""
    from tfsem.generators.strategies import random_programs
    monkeypatch.setattr(A, "INTERN_BYTES", 512)
    checked = [0, 0]
    real = A.intern

    def checking(memo, t, fresh=False):
        before = memo.intern_bytes
        out = real(memo, t, fresh)
        checked[1] += memo.intern_bytes < before       # (the table was emptied)
        # (the test before an insertion adds the tensor's bytes, its entry
        # counts 64 more: the cap may be passed by those 64, as before)
        if memo.intern_bytes > A.INTERN_BYTES + 64:
            assert len(memo.interned) == 1 or t.array.nbytes + 64 > A.INTERN_BYTES
        copies = 0
        for k, c in memo.interned.items() if A.INTERN_BY_BYTES else ():
            own = c._lazy
            if own is None or (k[2] is not own[0][2] and
                               (own[1] is None or k[2] is not own[1].data)):
                copies += len(k[2])
        assert copies <= memo.intern_bytes
        checked[0] += 1
        return out
    monkeypatch.setattr(A, "intern", checking)
    ps = [p for p in random_programs(20, 2223, max_nodes=12, dtype="float32")
          if not p.has_control_flow]
    fresh, on, off = _three_ways(monkeypatch, lambda: _canonical_runs(ps, 3))
    assert on == fresh and off == fresh
    assert checked[0] > 100 and checked[1] > 5, checked


def test_a_function_replaced_inside_a_scope_answers_anew():
    """A function registered again under its name inside one memo scope,
    with a program of it run before and after: each run gives the bits of
    the function registered then, although its argument and earlier
    results are interned (`register` empties the memo)."""
    def plus(xp, args, attrs):
        return (args[0] + np.float32(1),)

    def minus(xp, args, attrs):
        return (args[0] - np.float32(1),)
    doc = {"format": "tfsem.program/1", "variables": {},
           "feeds": {"x": {"dtype": "float32", "shape": [2]}},
           "nodes": [{"name": "c", "op": "Const", "value": {"dtype": "float32",
                                                             "value": [-0.0, 2.0]}},
                     {"name": "a", "op": "Review22Op", "inputs": ["$x"]},
                     {"name": "b", "op": "Review22Op", "inputs": ["c"]},
                     {"name": "s", "op": "Add", "inputs": ["a", "b"]}],
           "outputs": {"a": "a", "b": "b", "s": "s"}}
    x = {"x": Tensor(np.array([-0.0, 2.0], np.float32))}
    with registry_restored():
        fns.register(fns.Function("Review22Op", 1, 1, plus))
        p = program_from_json(doc)
        with A.scope():
            first, _ = ref.canonical_outcome(p, x, {}, "atomic", "outputs")
            fns.register(fns.Function("Review22Op", 1, 1, minus), replace=True)
            second, _ = ref.canonical_outcome(p, x, {}, "atomic", "outputs")
            fns.register(fns.Function("Review22Op", 1, 1, plus), replace=True)
            third, _ = ref.canonical_outcome(p, x, {}, "atomic", "outputs")
    got = [dict(o.outputs) for o in (first, second, third)]
    assert got[0]["a"].array.tolist() == [1.0, 3.0]
    assert got[1]["a"].array.tolist() == [-1.0, 1.0]
    assert _outcome_bits(first) == _outcome_bits(third) != _outcome_bits(second)


def test_threads_interning_at_once_get_their_own_bits():
    """Four threads intern the aliased tensors and apply Neg to them in one
    memo at once, by every path: every answer of the query's bits."""
    ts = _aliases()
    errors = []
    with A.scope():
        memo = A.active()

        def worker(seed):
            rng = np.random.default_rng(seed)
            try:
                for k in rng.permutation(len(ts) * 3) % len(ts):
                    t = Tensor(ts[k].array)
                    way = int(k + seed) % 3
                    got = (A.intern(memo, t) if way == 0 else A.intern_const(memo, t)
                           if way == 1 else A.interned_results(memo, (t,))[0])
                    assert _bits(got) == _bits(t)
                    if t.dtype != "bool":
                        (n,) = fns.get("Neg").apply((t,))
                        assert _bits(n) == _bits(fns.get("Neg")._apply((t,), None, np)[0])
            except AssertionError as exc:        # pragma: no cover (a failure)
                errors.append(exc)
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors, errors


# -- (5) `_apply`'s strictness made once ---------------------------------------------


@pytest.mark.parametrize("strict", [None, (0,), (1,), (0, 1), (), [1], range(2)])
def test_strict_arguments_decide_errors_and_dtype_mismatches_as_declared(strict):
    """A two-argument function of each strictness (a tuple, a list, a
    range: indices read more than once): an error in a strict argument is
    the result; dtypes are compared among the strict tensor arguments
    only; a non-strict error passes to the implementation."""
    def second(xp, args, attrs):
        return (args[1] if args[1] is not None else np.zeros(1, np.float32),)
    f = fns.Function("Review22Strict", 2, 1, second, strict_args=strict)
    idx = set(range(2)) if strict is None else set(strict)
    i32, f32 = Tensor(np.array([1], np.int32)), Tensor(np.array([2.0], np.float32))
    err = Error("boom")
    for a, b in ((i32, f32), (f32, f32), (err, f32), (f32, err), (err, err)):
        got = f._apply((a, b), None, np)
        first_err = next((x for i, x in enumerate((a, b)) if i in idx and type(x) is Error),
                         None)
        if first_err is not None:
            assert got == (first_err,)
        elif idx == {0, 1} and a.dtype != b.dtype:
            assert got == (Error("dtype-mismatch"),)
        else:
            assert type(got[0]) is Tensor


def test_the_switch_flipped_inside_a_kept_memo(monkeypatch):
    """The switch flipped between checks of one original (its memo kept,
    its table holding keys of both kinds: a tuple never equals a Tensor or
    a Bits): every interning answers the query's bits, and the checks give
    the verdicts and counterexamples of checks with no memo."""
    ts = _aliases()
    with A.scope():
        memo = A.active()
        for k, t in enumerate(ts * 2):
            monkeypatch.setattr(A, "INTERN_BY_BYTES", k % 3 != 0)
            got = A.intern(memo, t) if k % 2 else A.interned_results(memo, (t,))[0]
            assert _bits(got) == _bits(t)
    doc = json.loads((HERE / "cases" / "alg_float_add_negzero.json").read_text())
    other = json.loads((HERE / "cases" / "alg_float_add_zero.json").read_text())
    p = program_from_json(doc["original"])
    # (a + -0.0 against a: sound; against a + 0.0: unsound at a = -0.0)
    rewrites = [program_from_json(doc["rewritten"]), program_from_json(other["original"])]

    def verdicts():
        out = []
        for k, q in enumerate(rewrites * 2):
            monkeypatch.setattr(A, "INTERN_BY_BYTES", k % 2 == 0)
            v = check_rewrite(p, q, timeout=20, backends=False, classify=False)
            cx = v.counterexample
            out.append((v.verdict, None if cx is None else
                        sorted((n, _bits(x)) for n, x in cx.feeds.items())))
        return out
    monkeypatch.setenv(A.ENV, "0")
    fresh = verdicts()
    monkeypatch.setenv(A.ENV, "1")
    A.clear()
    assert verdicts() == fresh
    assert [v for v, _ in fresh] == ["sound", "unsound"] * 2
