"""Review of two float-result shortcuts (oracle/functions.py): `nan_bits`'s
lean path on numpy float16/32/64 (`_nan_bits_lean`, switch NAN_BITS_LEAN)
and `_none_low`'s one loop over a product of at most 32 elements
(switch SMALL_NONE_LOW).

The references: TensorFlow's own kernels (tf.raw_ops on CPU), bit for
bit, and the model with both switches off.  Attacks: NaN payloads
(signalling and quiet, both signs, in either operand, in both with
different payloads, NaN against infinity, all-NaN operands), broadcasts
(0-d, [1] against [n], empty, zero dims), float16, bfloat16 and float64,
the results that round up to the smallest normal from below (the x86
tininess-after-rounding case), ±tiny and -0.0 results, subnormal inputs,
results of 32 and 33 elements, Fortran-order, strided and read-only
operands, integer dtypes, the batched forms, and the other models that
call `nan_bits` (scatter rows, the optimizers' arithmetic, StepToward,
ScaleAdd, ReluGrad, BiasAdd)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs import math as M
from tfsem.oracle.opdefs import state as S
from tfsem.oracle.values import DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import UINT

#: TensorFlow's op -> the model the graph importer gives it
OPS = {"AddV2": "Add.ftz", "Sub": "Sub.ftz", "Mul": "Mul.ftz", "RealDiv": "RealDiv.ftz",
       "Square": "Square.ftz", "SquaredDifference": "SquaredDifference.ftz",
       "DivNoNan": "DivNoNan.ftz", "Sqrt": "Sqrt.ftz"}
UNARY = ("Square", "Sqrt")
NANS = {"float32": [0x7fc00001, 0xffc00002, 0x7f800001, 0xff812345, 0xffc00000, 0x7fc00000,
                    0x7fbfffff],
        "float64": [0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000001,
                    0xfff0000000000003, 0xfff8000000000000, 0x7ff8000000000000],
        "float16": [0x7e01, 0xfe02, 0x7c01, 0xfc03, 0xfe00, 0x7e00],
        "bfloat16": [0x7fc1, 0xffc2, 0x7f81, 0xff83, 0xffc0, 0x7fc0]}
#: (a's shape, b's shape): 0-d, one element, 32 and 33 elements (both sides
#: of the small loop's bound), broadcasts, empty and zero dims
SHAPES = [((), ()), ((1,), (1,)), ((), (7,)), ((7,), ()), ((1,), (9,)), ((9,), (1,)),
          ((), (1,)), ((1,), ()), ((32,), (32,)), ((33,), (33,)), ((32,), ()), ((), (33,)),
          ((1,), (33,)), ((33,), (1,)), ((4, 8), (8,)), ((3, 11), (3, 1)), ((0,), (0,)),
          ((0,), ()), ((2, 0), (1,)), ((1, 1), (1,)), ((1,), (1, 1)), ((17,), (17,)),
          ((40,), (40,)), ((5, 1), (1, 7))]
SETTINGS = [(False, False), (True, True), (True, False), (False, True)]


def _finfo(dt):
    import ml_dtypes
    return ml_dtypes.finfo(DTYPES[dt])


def _edge(dt: str) -> np.ndarray:
    """Edge values of `dt`: zeros, ±tiny and its neighbours, subnormals, the
    tininess-after-rounding operands, 2^-63/2^-64 (products near tiny),
    the largest values, infinities, then NaNs of every payload."""
    d = DTYPES[dt]
    fi = _finfo(dt)
    tiny, sub = float(fi.tiny), float(fi.smallest_subnormal)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, tiny, -tiny, tiny * 0.75, -tiny * 0.5,
            2 * tiny, sub, -sub, tiny * 0.99, tiny * 1.01, 0.9486069, 1.2391796e-38,
            2.0 ** -63, 2.0 ** -64, 2.0 ** -75, 2.0 ** -20, float(fi.max), -float(fi.max),
            np.inf, -np.inf, float(np.sqrt(tiny)), 1.0842022e-19, 1.0842021e-19]
    a = np.array(vals, np.float64).astype(d)
    nans = np.array(NANS[dt], dtype=np.uint64).astype(UINT[a.dtype.itemsize]).view(d)
    return np.concatenate([a, nans])


def _bits(x) -> list:
    x = np.asarray(x)
    return np.ascontiguousarray(x).view(UINT[x.dtype.itemsize]).reshape(-1).tolist()


def _model(fn, args, lean: bool, small: bool, monkeypatch):
    monkeypatch.setattr(fns, "NAN_BITS_LEAN", lean)
    monkeypatch.setattr(fns, "SMALL_NONE_LOW", small)
    with np.errstate(all="ignore"):
        return [np.asarray(r) for r in fn.impl(np, tuple(args), {})]


def _tf(op: str, args):
    tf = pytest.importorskip("tensorflow")
    with tf.device("/CPU:0"):
        ts = [tf.constant(a) for a in args]
        if len(ts) == 1:
            return getattr(tf.raw_ops, op)(x=ts[0]).numpy()
        if op == "BiasAdd":
            return tf.raw_ops.BiasAdd(value=ts[0], bias=ts[1]).numpy()
        if op == "ReluGrad":
            return tf.raw_ops.ReluGrad(gradients=ts[0], features=ts[1]).numpy()
        return getattr(tf.raw_ops, op)(x=ts[0], y=ts[1]).numpy()


def _layout(x: np.ndarray, how: int) -> np.ndarray:
    """`x` as another layout of the same elements: 1 Fortran order, 2 a
    strided view, 3 read-only (0: as it is)."""
    if how == 1 and x.ndim == 2:
        return np.asfortranarray(x)
    if how == 2 and x.ndim >= 1:
        return np.repeat(x, 2, axis=-1)[..., ::2]
    if how == 3:
        x = x.copy()
        x.flags.writeable = False
    return x


def _all_settings_and_tf(op, fn, args, monkeypatch):
    """The model's bits under every switch setting, and TensorFlow's."""
    got = {s: _bits(_model(fn, args, *s, monkeypatch)[0]) for s in SETTINGS}
    return got, _bits(_tf(op, args))


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_arithmetic_bits_are_tensorflows_with_the_switches_on_and_off(dt, monkeypatch):
    """Every op the change reaches, on edge grids with NaNs in one operand,
    the other, both (all of an operand NaN a quarter of the time each),
    every broadcast form, and operands in four layouts: the bits of every
    switch setting and TensorFlow's kernel are one."""
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(2300 + len(dt))
    ev = _edge(dt)
    nans = ev[-len(NANS[dt]):]
    compared = nan_results = low_results = 0
    for op, (sa, sb), t in itertools.product(OPS, SHAPES, range(8)):
        a = rng.choice(ev, size=int(np.prod(sa))).reshape(sa)
        b = rng.choice(ev, size=int(np.prod(sb))).reshape(sb)
        if t % 4 in (1, 3) and a.size:
            a = rng.choice(nans, size=a.size).reshape(sa)
        if t % 4 in (2, 3) and b.size:
            b = rng.choice(nans, size=b.size).reshape(sb)
        a, b = _layout(a, t // 2 % 4), _layout(b, (t + 1) // 2 % 4)
        args = [a] if op in UNARY else [a, b]
        got, ref = _all_settings_and_tf(op, fns.get(OPS[op]), args, monkeypatch)
        for s, bits in got.items():
            assert bits == ref, (dt, op, sa, sb, t, s, _bits(a), _bits(b))
        r = _model(fns.get(OPS[op]), args, True, True, monkeypatch)[0]
        nan_results += bool(np.isnan(r).any())
        low_results += bool(r.size and r.dtype in (np.float32, np.float64)
                            and not fns._none_low(r))
        compared += 1
    # (the grid reached NaN results and small results with a low element)
    assert compared == len(OPS) * len(SHAPES) * 8
    assert nan_results >= compared // 3, nan_results
    if dt in ("float32", "float64"):
        assert low_results >= 20, low_results


def _rounds_up_pair(dt: str) -> tuple[float, float]:
    """Operands x, y of `dt` whose exact product lies in
    [tiny - ulp(tiny)/2, tiny - ulp(tiny)/4]: the IEEE product (numpy's,
    rounded on the subnormal grid) is tiny, the CPU's (tininess after
    rounding to the dtype's precision) is flushed to zero."""
    d = DTYPES[dt]
    fi = np.finfo(d)
    tiny, ulp = Fraction(float(fi.tiny)), Fraction(float(fi.smallest_subnormal))
    lo, hi = tiny - ulp / 2, tiny - ulp / 4
    for k in range(1, 4000):
        y = d.type(0.5 + (k * 0.6180339887498949) % 0.5)         # spread over [0.5, 1)
        x = np.nextafter(d.type(float(tiny / Fraction(float(y)))), d.type(0))
        for _ in range(4):
            p = Fraction(float(x)) * Fraction(float(y))
            if lo <= p <= hi:
                return x, y
            x = np.nextafter(x, d.type(1))
    raise AssertionError(f"no {dt} pair found")


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_a_product_rounded_up_to_tiny_is_flushed_at_every_size(dt, monkeypatch):
    """The x86 case (a result that rounds up to ±tiny from below is 0 on
    TensorFlow: Mul of 1.2391796e-38 and 0.9486069 in float32) at sizes 0-d,
    1, 31, 32 (the loop's bound), 33 and 40, at the first and last place,
    as a scalar against a vector, with its sign flipped, next to a ±tiny
    that stays (tiny * 1) and a -0.0: every switch setting gives
    TensorFlow's bits, and the rounded-up element is zero."""
    pytest.importorskip("tensorflow")
    d = DTYPES[dt]
    x, y = (d.type(1.2391796e-38), d.type(0.9486069)) if dt == "float32" else _rounds_up_pair(dt)
    with np.errstate(all="ignore"):
        assert np.multiply(x, y) == d.type(np.finfo(d).tiny)   # numpy rounds it up to tiny
    tiny = d.type(np.finfo(d).tiny)
    checked = 0
    for n, place, sign, shape_form in itertools.product(
            (1, 31, 32, 33, 40), ("first", "last"), (1, -1), ("equal", "scalar_b", "0-d")):
        if shape_form == "0-d" and n != 1:
            continue
        a = np.full(n, 1.5, d)
        b = np.full(n, 1.25, d)
        i = 0 if place == "first" else n - 1
        a[i], b[i] = d.type(sign) * x, y
        if n > 2:
            a[1 - i // (n - 1)] = tiny      # tiny * 1.25: normal, stays
            a[n // 2], b[n // 2] = -tiny, d.type(1)   # ±tiny exactly: stays
        if shape_form == "scalar_b":
            a, b = np.full(n, d.type(sign) * x, d), np.asarray(y)
        elif shape_form == "0-d":
            a, b = a.reshape(()), b.reshape(())
        got, ref = _all_settings_and_tf("Mul", fns.get("Mul.ftz"), [a, b], monkeypatch)
        for s, bits in got.items():
            assert bits == ref, (dt, n, place, sign, shape_form, s)
        checked += 1
        out = _model(fns.get("Mul.ftz"), [a, b], True, True, monkeypatch)[0].reshape(-1)
        j = 0 if shape_form != "equal" else i
        assert out[j] == 0 and np.signbit(out[j]) == (sign < 0), (dt, n, place, sign)
    # RealDiv's case: (2^-125 - 2^-149) / 2 in float32 (the quotient's analogue in float64)
    m = {"float32": (125, 149), "float64": (1021, 1074)}[dt]
    q = d.type(2.0 ** -m[0] - 2.0 ** -m[1])
    for n in (1, 32, 33):
        a, b = np.full(n, q, d), np.full(n, 2, d)
        for op in ("RealDiv", "DivNoNan"):
            got, ref = _all_settings_and_tf(op, fns.get(OPS[op]), [a, b], monkeypatch)
            for s, bits in got.items():
                assert bits == ref, (dt, op, n, s)
            checked += 1
    assert checked == 50


@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_integer_dtypes_pass_through(dt, monkeypatch):
    """Integer products go neither shortcut's way (`_none_low` has no
    answer, `nan_bits` returns them): wrap-around at the extremes is
    TensorFlow's under every switch setting."""
    pytest.importorskip("tensorflow")
    d = np.dtype(dt)
    info = np.iinfo(d)
    vals = np.array([0, 1, -1, 2, -2, 3, info.max, info.min, info.max - 1, info.min + 1,
                     1 << (info.bits // 2), -(1 << (info.bits // 2))], d)
    rng = np.random.default_rng(23)
    assert not fns._none_low(vals) and fns.nan_bits(np, vals, vals, vals) is vals
    for op in ("AddV2", "Sub", "Mul", "Square", "SquaredDifference"):
        for n in (1, 12, 32, 33):
            a, b = rng.choice(vals, n), rng.choice(vals, n)
            args = [a] if op in UNARY else [a, b]
            got, ref = _all_settings_and_tf(op, fns.get(OPS[op]), args, monkeypatch)
            for s, bits in got.items():
                assert bits == ref, (dt, op, n, s)


@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "RealDiv", "SquaredDifference",
                                  "Square", "Sqrt", "DivNoNan", "ReluGrad"])
def test_batched_forms_are_each_rows_run_alone(name, monkeypatch):
    """The batched forms (a leading batch axis: `nan_bits`' `lead` = 1)
    give each row the bits of that row run alone, NaN payloads in either
    operand, a one-element operand on either side (the packets' rule), with
    the switches on and off."""
    fn = fns.get(name)
    if fn.batched_impl is None:
        pytest.skip(f"{name} has no batched form")
    rng = np.random.default_rng(sum(map(ord, name)))
    for dt in ("float16", "float32", "float64"):
        ev = _edge(dt)
        for sa, sb in [((9,), (9,)), ((1,), (9,)), ((9,), (1,)), ((), (9,)), ((9,), ()),
                       ((3, 4), (3, 4)), ((33,), (33,)), ((), ())]:
            if name == "ReluGrad" and sa != sb:
                continue
            rows = 5
            a = rng.choice(ev, (rows,) + sa)
            b = rng.choice(ev, (rows,) + sb)
            a[0] = ev[-1]                         # a whole row of one NaN
            args = (a, b)[:fn.n_in]
            for lean, small in SETTINGS[:2]:
                monkeypatch.setattr(fns, "NAN_BITS_LEAN", lean)
                monkeypatch.setattr(fns, "SMALL_NONE_LOW", small)
                with np.errstate(all="ignore"):
                    batched = np.asarray(fn.batched_impl(np, args, {})[0])
                    for k in range(rows):
                        alone = np.asarray(fn.impl(np, tuple(np.asarray(x[k]) for x in args), {})[0])
                        assert _bits(batched[k]) == _bits(alone), (name, dt, sa, sb, k, lean)


def _other_callers(dt: str):
    """The models outside the arithmetic functions that call `nan_bits`:
    (label, a thunk) for each."""
    d = DTYPES[dt]
    ev = _edge(dt)
    rng = np.random.default_rng(7 + d.itemsize)
    out = []
    for k in range(6):
        p = rng.choice(ev, 10)
        u = rng.choice(ev, 10)
        if k % 3 == 1:
            p = rng.choice(ev[-len(NANS[dt]):], 10)
        for kind in ("Add", "Sub", "Mul", "Div"):
            for form in ("rows", "scalar"):
                uu = u[:1].reshape(()) if form == "scalar" else u
                out.append((f"scatter {kind} {form} {k}",
                            lambda kind=kind, form=form, p=p, uu=uu: S._row_op(kind, form)(p, uu)))
        K = S._ops()
        for meth in ("add", "sub", "mul", "div"):
            out.append((f"ops {meth} {k}", lambda meth=meth, p=p, u=u: getattr(K, meth)(p, u)))
            out.append((f"ops {meth} scalar {k}",
                        lambda meth=meth, p=p, u=u: getattr(K, meth)(u[:1].reshape(()), p)))
        for meth in ("sqrt", "square"):
            out.append((f"ops {meth} {k}", lambda meth=meth, p=p: getattr(K, meth)(p)))
        w = rng.choice(ev, (3, 4))
        v = rng.choice(ev, (2, 3, 4))
        for fname in ("StepToward", "ScaleAdd"):
            out.append((f"{fname} {k}", lambda fname=fname, w=w, v=v:
                        fns.get(fname).impl(np, (w, v), {})[0]))
        out.append((f"BiasAdd.ftz {k}", lambda w=w, p=p: fns.get("BiasAdd.ftz").impl(
            np, (w, p[:4]), {})[0]))
        out.append((f"ReluGrad {k}", lambda p=p, u=u: fns.get("ReluGrad").impl(np, (p, u), {})[0]))
    return out


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_the_other_callers_are_the_same_with_the_switches_on_and_off(dt, monkeypatch):
    """Scatter rows, the optimizers' arithmetic, StepToward, ScaleAdd,
    BiasAdd and ReluGrad on NaN payloads: the same bits (or the same error)
    with both switches on as with both off."""
    compared = 0
    for label, thunk in _other_callers(dt):
        got = []
        for lean, small in SETTINGS[:2]:
            monkeypatch.setattr(fns, "NAN_BITS_LEAN", lean)
            monkeypatch.setattr(fns, "SMALL_NONE_LOW", small)
            try:
                with np.errstate(all="ignore"):
                    got.append(_bits(thunk()))
            except Exception as exc:  # noqa: BLE001 (the same failure both ways)
                got.append(type(exc).__name__)
        assert got[0] == got[1], (dt, label)
        compared += not isinstance(got[0], str)
    assert compared >= 100, compared


def test_bias_add_and_relu_grad_bits_are_tensorflows(monkeypatch):
    """BiasAdd and ReluGrad (two more `nan_bits` callers) on NaN payloads
    against TensorFlow's kernels, every switch setting."""
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(231)
    for dt in ("float16", "float32", "float64"):
        ev = _edge(dt)
        for rows, cols in ((1, 1), (3, 4), (4, 8), (5, 7), (1, 33)):
            v = rng.choice(ev, (rows, cols))
            bias = rng.choice(ev, cols)
            got, ref = _all_settings_and_tf("BiasAdd", fns.get("BiasAdd.ftz"), [v, bias],
                                            monkeypatch)
            assert all(g == ref for g in got.values()), (dt, rows, cols)
            g, f = rng.choice(ev, (rows, cols)), rng.choice(ev, (rows, cols))
            got, ref = _all_settings_and_tf("ReluGrad", fns.get("ReluGrad"), [g, f], monkeypatch)
            assert all(x == ref for x in got.values()), (dt, rows, cols)


def test_hostile_direct_calls_agree_or_fail_alike(monkeypatch):
    """`nan_bits` called directly with forms its callers rarely use: an
    explicit `scalar_a` that its shapes contradict, commutes with no second
    operand, a lead axis with 0-d rows, an operand that is a numpy scalar,
    a result that is a view of an operand, operands of zero strides: the
    lean path gives the general path's bits or its error."""
    rng = np.random.default_rng(2323)
    compared = 0
    for dt in ("float16", "float32", "float64"):
        d = DTYPES[dt]
        ev = _edge(dt)
        nan = ev[-3]
        cases = []
        a = rng.choice(ev, 9)
        b = rng.choice(ev, 9)
        a[::3] = nan
        with np.errstate(all="ignore"):
            r = a * b
        for sa in (None, True, False):
            cases.append(((r, a, b), dict(commutes=True, scalar_a=sa)))
            cases.append(((r, a[:1], b), dict(commutes=True, scalar_a=sa)))
            cases.append(((r, a, b[:1]), dict(commutes=True, scalar_a=sa)))
        cases.append(((r, a), dict(commutes=True)))
        cases.append(((a, a), {}))                                  # r is the operand itself
        cases.append(((a, a, a), dict(commutes=True)))
        cases.append(((a, d.type(nan), a), dict(commutes=True)))    # numpy scalars
        cases.append(((a, a, d.type(1)), dict(commutes=True)))
        cases.append(((a, np.broadcast_to(d.type(nan), (9,)), a), dict(commutes=True)))
        rows = rng.choice(ev, (4,))
        rows[1] = nan
        with np.errstate(all="ignore"):
            rr = rows * rows
        cases.append(((rr, rows, rows), dict(commutes=True, lead=1)))
        cases.append(((rr, rows[:, None][:, 0], np.ones(4, d)), dict(commutes=True, lead=1,
                                                                    scalar_a=True)))
        for args, kw in cases:
            snapshot = [_bits(x) for x in args]
            got = []
            for lean in (False, True):
                monkeypatch.setattr(fns, "NAN_BITS_LEAN", lean)
                try:
                    with np.errstate(all="ignore"):
                        got.append(_bits(fns.nan_bits(np, *args, **kw)))
                except Exception as exc:  # noqa: BLE001 (the same failure both ways)
                    got.append(type(exc).__name__)
            assert got[0] == got[1], (dt, kw)
            assert [_bits(x) for x in args] == snapshot, (dt, kw)   # nothing written
            compared += 1
    assert compared >= 45


def test_large_one_element_forms_are_tensorflows(monkeypatch):
    """100,003 elements (TensorFlow's evaluation split over threads and
    blocks): a one-element operand on either side and a row broadcast, both
    operands NaN of other payloads, every eighth element plain; Mul and
    AddV2 (the commutative ops, whose pick depends on the place) give the
    kernel's bits with the lean path and without."""
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(100003)
    for dt in ("float32", "float64", "float16"):
        d = DTYPES[dt]
        u = UINT[d.itemsize]
        nans = np.array(NANS[dt][:3], dtype=np.uint64).astype(u)
        big = rng.choice(nans, 100003).view(d)
        big[::8] = 1.5
        one = nans[-1:].view(d)
        for a, b in ((one.reshape(()), big), (big, one), (one, big),
                     (big[:100000].reshape(-1, 1000), rng.choice(nans, 1000).view(d))):
            for op in ("Mul", "AddV2"):
                ref = _bits(_tf(op, [a, b]))
                for lean in (True, False):
                    got = _bits(_model(fns.get(OPS[op]), [a, b], lean, lean, monkeypatch)[0])
                    assert got == ref, (dt, op, a.shape, b.shape, lean)


def _clear_memos():
    from tfsem.backends import reuse
    from tfsem.checking import canonical_memo, sigma_memo
    from tfsem.oracle import applications
    for m in (applications, canonical_memo, sigma_memo, reuse):
        m.clear()


def test_grappler_checks_that_reach_both_shortcuts_are_the_same_on_and_off(monkeypatch):
    """Two stored Grappler checks (TensorFlow's kernels on) whose probes and
    replays reach both shortcuts (the CNN's constant folding: small
    flushed products; the Adagrad MLP's arithmetic rewrite: NaN σ), with
    both switches off and both on, every memo cleared between: the same
    verdict and the same counterexample, bit for bit (minimization off),
    and each shortcut taken."""
    import json
    from pathlib import Path
    from tfsem.checking import check_rewrite
    from tfsem.oracle import kernels
    from tfsem.oracle.jsonio import program_from_json
    from tfsem.oracle.values import exact
    pytest.importorskip("tensorflow")
    taken = {"lean": 0, "small": 0}
    real_lean, real_low = fns._nan_bits_lean, fns._none_low

    def lean(*a):
        taken["lean"] += 1
        return real_lean(*a)

    def low(r):
        if fns.SMALL_NONE_LOW and type(r) is np.ndarray and r.size <= fns._SMALL_FLUSH \
                and r.dtype in (np.float32, np.float64):
            taken["small"] += 1
        return real_low(r)
    monkeypatch.setattr(fns, "_nan_bits_lean", lean)
    monkeypatch.setattr(fns, "_none_low", low)

    def summary(v):
        out = [v.verdict, "internal_error" in v.stats]
        cx = v.counterexample
        if cx is not None:
            out += [sorted((k, exact(x)) for k, x in cx.feeds.items()),
                    sorted((k, exact(x)) for k, x in (cx.init or {}).items()),
                    list(cx.schedule),
                    [(k, exact(x)) for k, x in cx.outcome.outputs]]
        return out
    for stem, opt in (("keras_cnn_batchnorm", "constfold"), ("keras_mlp_adagrad", "arithmetic")):
        doc = json.loads((Path(__file__).parent / "grappler" / f"{stem}.json").read_text())
        got = []
        for on in (False, True):
            monkeypatch.setattr(fns, "NAN_BITS_LEAN", on)
            monkeypatch.setattr(fns, "SMALL_NONE_LOW", on)
            _clear_memos()
            with kernels.use(True):
                v = check_rewrite(program_from_json(doc["original"]),
                                  program_from_json(doc["rewritten"][opt]), timeout=20,
                                  minimize=False, classify=False)
            got.append(summary(v))
        assert got[0] == got[1], (stem, opt)
        assert not got[0][1]
    assert taken["lean"] > 0 and taken["small"] > 0, taken


def test_an_all_nan_fortran_operand_leaves_the_result_c_ordered(monkeypatch):
    """Where an operand is all NaN the lean path takes its bits as they lie
    (a view, here of Fortran order or transposed): the result still has the
    general path's strides, C-contiguous, and its bits."""
    for dt in (np.float16, np.float32, np.float64):
        f = np.asfortranarray(np.full((4, 6), np.nan, dt))
        t = np.full((6, 4), np.nan, dt).T
        c = np.ones((4, 6), dt)
        for a, b in ((f, c), (c, f), (f, f), (t, c), (t, c[:1]), (c[:1], t)):
            with np.errstate(all="ignore"):
                r = np.ascontiguousarray(a + b)
            got = []
            for lean in (False, True):
                monkeypatch.setattr(fns, "NAN_BITS_LEAN", lean)
                x = fns.nan_bits(np, r, a, b, True)
                got.append((x.strides, x.flags.c_contiguous, _bits(x)))
            assert got[0] == got[1] and got[1][1], (dt, a.strides, b.strides)
