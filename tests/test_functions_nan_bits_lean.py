"""`nan_bits`'s lean path on numpy (oracle/functions.py `_nan_bits_lean`,
switch `NAN_BITS_LEAN`) against its general path, bit for bit.

The lean path leaves out the steps that cannot change the bits (the
packets' index array where no one-element form reads it, a layer of the
pick whose mask is all False, the layers under one whose mask is all
True); these tests run both on the same arguments and compare the result's
bits, dtype, shape and strides: NaNs of every payload and sign, signaling
and quiet, in one operand, the other or both, in every proportion (none,
some, all), every broadcast and one-element form of a commutative op (the
packets' rule), rank-0 operands, a leading batch axis (`lead`), and the
float dtypes it takes; then the registry's arithmetic functions, their
`.ftz` variants and the batched forms through `impl`, and generated
programs' runs and a stored Grappler check's verdict with the switch on
and off."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor, exact
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import UINT

DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
NANS = {"float32": [0x7fc00001, 0xffc00002, 0x7f800001, 0xff812345, 0xffc00000, 0x7fc00000],
        "float64": [0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000001,
                    0xfff8000000000000, 0x7ff8000000000000],
        "float16": [0x7e01, 0xfe02, 0x7c01, 0xfe00, 0x7e00]}
SPECIALS = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf]


def _both(*args, **kw):
    """nan_bits on the general path and on the lean one (the switch off, on)."""
    old = fns.NAN_BITS_LEAN
    try:
        fns.NAN_BITS_LEAN = False
        ref = fns.nan_bits(np, *args, **kw)
        fns.NAN_BITS_LEAN = True
        lean = fns.nan_bits(np, *args, **kw)
    finally:
        fns.NAN_BITS_LEAN = old
    return ref, lean


def _same(ref, lean, what):
    assert type(ref) is type(lean), what
    assert ref.dtype == lean.dtype and ref.shape == lean.shape, what
    assert ref.strides == lean.strides, what
    u = UINT[ref.dtype.itemsize]
    assert np.array_equal(np.ascontiguousarray(ref).view(u), np.ascontiguousarray(lean).view(u)), what


def _operand(rng, dt: str, shape, kind: str) -> np.ndarray:
    """An array of `shape` whose elements are plain values, specials and
    NaNs of `dt`'s payloads: `kind` none, some or all NaN."""
    d = np.dtype(DTYPES[dt])
    u = UINT[d.itemsize]
    n = int(np.prod(shape))
    vals = rng.choice(SPECIALS + list(rng.standard_normal(4)), size=n).astype(d)
    raw = vals.view(u).copy()
    if kind != "none":
        nan_raw = rng.choice(np.array(NANS[dt], dtype=np.uint64), size=n).astype(u)
        where = np.ones(n, bool) if kind == "all" else rng.random(n) < 0.4
        raw[where] = nan_raw[where]
    return raw.view(d).reshape(shape)


#: (a's shape, b's shape) pairs: equal shapes, rows and columns, outer
#: broadcasts, one element on either side, rank 0 on either side
SHAPES = [((17,), (17,)), ((3, 9), (3, 9)), ((3, 9), (9,)), ((9,), (3, 9)), ((4, 1), (1, 6)),
          ((1,), (19,)), ((19,), (1,)), ((), (11,)), ((11,), ()), ((1, 1), (5, 3)),
          ((5, 3), (1, 1)), ((), ()), ((1,), (1,)), ((2, 3, 8), (1, 3, 1)), ((40,), (40,))]


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_binary_forms_bit_for_bit(dt):
    rng = np.random.default_rng(7)
    for (sa, sb), ka, kb, commutes in itertools.product(
            SHAPES, ("none", "some", "all"), ("none", "some", "all"), (False, True)):
        for rep in range(2):
            a, b = _operand(rng, dt, sa, ka), _operand(rng, dt, sb, kb)
            with np.errstate(all="ignore"):
                r = np.add(a, b) if rep == 0 else np.multiply(a, b)
                # (and results with NaNs of their own: 0 * inf, inf - inf)
                if rep == 1 and r.size:
                    flat = r.reshape(-1)
                    flat[:: 3] = np.asarray(np.inf, r.dtype) - np.asarray(np.inf, r.dtype)
            ref, lean = _both(r, a, b, commutes)
            _same(ref, lean, (dt, sa, sb, ka, kb, commutes, rep))


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_unary_and_scalar_a_forms(dt):
    rng = np.random.default_rng(11)
    for shape, k in itertools.product([(), (1,), (7,), (3, 8), (33,)], ("none", "some", "all")):
        a = _operand(rng, dt, shape, k)
        with np.errstate(all="ignore"):
            r = np.sqrt(a)
        ref, lean = _both(r, a)
        _same(ref, lean, (dt, shape, k))
        # the scalar_a the batched forms pass, both ways
        b = _operand(rng, dt, (2,) + shape, "some")
        with np.errstate(all="ignore"):
            r2 = np.add(a, b)
        for scalar_a in (None, True, False):
            ref, lean = _both(r2, a, b, True, 0, scalar_a)
            _same(ref, lean, (dt, shape, k, scalar_a))


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_a_leading_batch_axis(dt):
    rng = np.random.default_rng(3)
    for (sa, sb), ka, kb in itertools.product(
            [((4, 1), (4, 9)), ((4, 9), (4, 1)), ((4, 9), (4, 9)), ((4, 1, 1), (4, 3, 8))],
            ("none", "some", "all"), ("some", "all")):
        a, b = _operand(rng, dt, sa, ka), _operand(rng, dt, sb, kb)
        with np.errstate(all="ignore"):
            r = np.add(a, b)
        for commutes in (False, True):
            ref, lean = _both(r, a, b, commutes, 1)
            _same(ref, lean, (dt, sa, sb, ka, kb, commutes))


def test_not_taken_where_the_general_path_must_run():
    """bfloat16, a result that is not C-contiguous, one without NaN: the
    general path (or no change), the same object or bits either way."""
    a = np.full((6, 4), np.nan, np.float32).T          # Fortran order
    b = np.ones((4, 6), np.float32)
    r = a + b
    r = np.asfortranarray(r)
    ref, lean = _both(r, a, b, True)
    _same(ref, lean, "fortran")
    plain = np.ones(9, np.float32)
    ref, lean = _both(plain, plain, plain, True)
    assert ref is plain and lean is plain


FUNCTIONS = ["Add", "Sub", "Mul", "RealDiv", "SquaredDifference", "Square", "Sqrt",
             "Add.ftz", "Sub.ftz", "Mul.ftz", "RealDiv.ftz", "SquaredDifference.ftz",
             "Square.ftz", "Sqrt.ftz"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_registry_functions_bit_for_bit(name, monkeypatch):
    try:
        fn = fns.get(name)
    except Exception:  # noqa: BLE001 (a name this registry lacks)
        pytest.skip(f"no {name}")
    rng = np.random.default_rng(5)
    for dt in ("float16", "float32", "float64"):
        for (sa, sb), ka, kb in itertools.product(SHAPES[:11], ("none", "some", "all"),
                                                  ("none", "some", "all")):
            args = (_operand(rng, dt, sa, ka), _operand(rng, dt, sb, kb))[:fn.n_in]
            outs = []
            for on in (False, True):
                monkeypatch.setattr(fns, "NAN_BITS_LEAN", on)
                try:
                    with np.errstate(all="ignore"):
                        outs.append(("ok", fn.impl(np, args, {})))
                except Exception as exc:  # noqa: BLE001 (the same failure both ways)
                    outs.append(("raised", type(exc).__name__))
            (k0, r0), (k1, r1) = outs
            assert k0 == k1, (name, dt, sa, sb)
            if k0 == "ok":
                for x, y in zip(r0, r1):
                    _same(np.asarray(x), np.asarray(y), (name, dt, sa, sb, ka, kb))
            else:
                assert r0 == r1


def _count_lean(monkeypatch) -> list:
    """A counter of the lean path's calls (so that a test shows it ran)."""
    taken = [0]
    real = fns._nan_bits_lean

    def counted(*a):
        taken[0] += 1
        return real(*a)
    monkeypatch.setattr(fns, "_nan_bits_lean", counted)
    return taken


def _with_payloads(values: dict) -> dict:
    """σ with every other float element a NaN of a payload (quiet and
    signaling, both signs): the probe's NaN σ, and more."""
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor) and v.dtype in ("float16", "float32", "float64") and v.array.size:
            u = UINT[v.array.dtype.itemsize]
            raw = np.ascontiguousarray(v.array).view(u).copy().reshape(-1)
            payloads = np.asarray(NANS[v.dtype], dtype=np.uint64).astype(u)
            raw[::2] = payloads[np.arange(raw[::2].size) % payloads.size]
            out[k] = Tensor(raw.view(v.array.dtype).reshape(v.array.shape))
        else:
            out[k] = v
    return out


def _exact_outcome(o):
    return [(k, exact(v)) for k, v in o.outputs] + [(k, exact(v)) for k, v in (o.state or ())]


def test_runs_of_generated_programs_are_the_same_bits(monkeypatch):
    """Generated programs' canonical runs at plain σ and at σ full of NaN
    payloads, switch off and on, outside any memo: the same outcomes, bit
    for bit (`values.exact` keys NaN payloads)."""
    from tfsem.checking import check as C
    from tfsem.checking import refute as ref
    from tfsem.generators.strategies import random_programs
    monkeypatch.setenv(A.ENV, "0")
    taken = _count_lean(monkeypatch)
    compared = 0
    settings = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
    programs = random_programs(200, 23, max_nodes=14, dtype="float32") + \
        random_programs(100, 29, max_nodes=14, dtype="float64")
    for i, p in enumerate(programs):
        if p.has_control_flow:
            continue
        sem, obs = settings[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        feeds, init = next(gen)
        for f, s in ((feeds, init), (_with_payloads(feeds), _with_payloads(init))):
            got = []
            for on in (False, True):
                monkeypatch.setattr(fns, "NAN_BITS_LEAN", on)
                try:
                    got.append(_exact_outcome(ref.canonical_outcome(p, f, s, sem, obs)[0]))
                except (fns.CannotRun, C.BudgetExceeded) as exc:
                    got.append(type(exc))
            assert got[0] == got[1], i
            compared += 1
    assert compared >= 300 and taken[0] >= 40, (compared, taken[0])


GRAPPLER = Path(__file__).parent / "grappler"


def _summary(v):
    cx = v.counterexample
    out = [v.verdict]
    if cx is not None:
        out += [sorted((k, exact(x)) for k, x in cx.feeds.items()),
                sorted((k, exact(x)) for k, x in (cx.init or {}).items()),
                list(cx.schedule), _exact_outcome(cx.outcome)]
    return out


def test_a_grappler_check_is_the_same_with_and_without(monkeypatch):
    """A stored Grappler check whose probe runs a NaN σ (the Adagrad MLP's
    arithmetic rewrite): the same verdict and counterexample with the lean
    path and without (TensorFlow's kernels on: without them the check is
    `unknown` before any NaN σ)."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    stem = "keras_mlp_adagrad"
    doc = json.loads((GRAPPLER / f"{stem}.json").read_text())
    taken = _count_lean(monkeypatch)
    compared = 0
    for opt, rewritten_doc in doc["rewritten"].items():
        got = []
        for on in (True, False):
            monkeypatch.setattr(fns, "NAN_BITS_LEAN", on)
            A.clear()
            p = program_from_json(doc["original"])
            q = program_from_json(rewritten_doc)
            with kernels.use(True):
                v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                                  classify=False)
            got.append(_summary(v))
        assert got[0] == got[1], (stem, opt)
        compared += 1
    assert compared >= 1 and taken[0] > 0, (compared, taken[0])
