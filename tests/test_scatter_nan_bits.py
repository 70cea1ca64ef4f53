"""The bits of the NaNs tfsem's scatter models make (the assign functions
Scatter{Add,Sub,Mul,Div,Min,Max,Update} and ScatterNd{Add,Sub,Min,Max,Update}
of oracle/opdefs/state.py, `_scatter_nan_bits` states the measured rule),
against TensorFlow 2.21's ResourceScatter* and ResourceScatterNd* kernels,
bit for bit: every float dtype, rows of 1 to 40 elements, vector and
scalar updates, duplicate indices, NaNs of both signs, quiet and
signalling, with payloads, infinities, signed zeros and subnormals.  Values
other than NaN are compared too.

A scatter's row update is an Eigen expression of its own, not the
arithmetic ops' kernel: with a scalar update TensorFlow computes update op
row (Sub as (-update) + row), float64 Add and Mul pick the update's NaN in
the first packet of each 16 elements of Eigen's unrolled loop, and float16
and bfloat16 Min/Max convert whole packets of 8 to float32 and back (a
float16 NaN quieted, a bfloat16 NaN made 0x7fc0, a bfloat16 subnormal
flushed).

The numpy-only tests pin measured results for a machine without
TensorFlow; the Hypothesis test compares with the kernels (skipped without
TensorFlow; 150 draws by default, 20 times that under the `nightly`
profile)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs import state
from nan_bits_support import arr, bits
from test_review_nan_bits_round16 import tf_tensor, values

FLOATS = ("float16", "bfloat16", "float32", "float64")
NIGHTLY = settings.get_current_profile_name() == "nightly"
HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def tensorflow():
    """TensorFlow, or skip.  (Op determinism stays as it is: turned on, it
    is on for the rest of the process, and later tests' random initializers
    would fail without a seed.)"""
    return pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")

#: a quiet NaN with payload, positive, and a signalling one, negative
TWO_NANS = {"float32": (0x7fc00001, 0xff800002),
            "float64": (0x7ff8000000000001, 0xfff0000000000002),
            "float16": (0x7e01, 0xfc02), "bfloat16": (0x7fc1, 0xff82)}
QUIET = {"float16": 1 << 9, "bfloat16": 1 << 6, "float32": 1 << 22, "float64": 1 << 51}
SIGN = {"float16": 1 << 15, "bfloat16": 1 << 15, "float32": 1 << 31, "float64": 1 << 63}


def model(kind: str, var, indices, updates, nd: bool = False) -> np.ndarray:
    """The assign function's new value of the variable (PackScatter, then
    Scatter<kind> / ScatterNd<kind>, as the import builds them)."""
    (packed,) = fns.get("PackScatter").impl(np, (np.asarray(indices), updates), {})
    with np.errstate(all="ignore"):
        return fns.get(("ScatterNd" if nd else "Scatter") + kind).impl(np, (var, packed), {})[0]


_handles = itertools.count()


def kernel(tf, kind: str, var, indices, updates, nd: bool = False) -> np.ndarray:
    """TensorFlow's ResourceScatter<kind> / ResourceScatterNd<kind> on a
    resource variable holding `var`: the variable's value after it."""
    dt = tf.as_dtype(var.dtype.name)
    with tf.device("/CPU:0"):
        h = tf.raw_ops.VarHandleOp(dtype=dt, shape=var.shape,
                                   shared_name=f"scatter_nan_bits_{next(_handles)}")
        tf.raw_ops.AssignVariableOp(resource=h, value=tf_tensor(tf, var))
        if nd:
            getattr(tf.raw_ops, f"ResourceScatterNd{kind}")(
                ref=h, indices=tf.constant(indices), updates=tf_tensor(tf, updates))
        else:
            getattr(tf.raw_ops, f"ResourceScatter{kind}")(
                resource=h, indices=tf.constant(indices), updates=tf_tensor(tf, updates))
        out = tf.raw_ops.ReadVariableOp(resource=h, dtype=dt).numpy()
        tf.raw_ops.DestroyResourceOp(resource=h)
    return out


def row_of_nans(dt: str, n: int, p: int, u: int, kind: str, scalar: bool):
    """A variable of one row of `n` elements of bits `p`, updated at index 0
    by `kind` with updates of bits `u` (one scalar, or a row): its new row's bits."""
    var = arr(dt, [[p] * n])
    upd = arr(dt, u) if scalar else arr(dt, [[u] * n])
    return bits(model(kind, var, np.int32([0]), upd))


# -- measured results, pinned (no TensorFlow needed) ---------------------------

@pytest.mark.parametrize("dt", FLOATS)
def test_a_scalar_update_passes_its_own_nan_first(dt):
    """Add and Mul with a scalar update are computed as update op row: of two
    NaNs, the update's (quieted) at every place; Sub as (-update) + row: the
    update's NaN with its sign flipped; Div as row / update: the row's."""
    p, u = TWO_NANS[dt]
    q, s = QUIET[dt], SIGN[dt]
    for n in (1, 7, 9, 16, 33):
        packets = n // 8 * 8 if dt == "bfloat16" else 0
        for kind, want in (("Add", u | q), ("Mul", u | q), ("Sub", (u ^ s) | q), ("Div", p | q)):
            got = row_of_nans(dt, n, p, u, kind, scalar=True)
            if dt == "bfloat16":   # float32's NaN rounded: 0x7fc0 in packets, signed in the tail
                want = [0x7fc0] * packets + [(want & 0x8000) | 0x7fc0] * (n - packets)
            else:
                want = [want] * n
            assert got == want, (dt, kind, n)


def test_float64_add_and_mul_take_the_updates_nan_in_the_first_packet_of_16():
    """Eigen's unrolled loop (four packets of 4 float64 at a time) over a row
    of n >= 16 elements: of two NaNs the update's at places i % 16 < 4 below
    n // 16 * 16, the row's elsewhere; float32 and Sub/Div: the row's."""
    p, u = TWO_NANS["float64"]
    q = QUIET["float64"]
    for n in (15, 16, 17, 40, 64, 65):
        m = n // 16 * 16
        want = [(u if i < m and i % 16 < 4 else p) | q for i in range(n)]
        for kind in ("Add", "Mul"):
            assert row_of_nans("float64", n, p, u, kind, scalar=False) == want, (kind, n)
        for kind in ("Sub", "Div"):
            assert row_of_nans("float64", n, p, u, kind, scalar=False) == [p | q] * n, (kind, n)
    p, u = TWO_NANS["float32"]
    assert row_of_nans("float32", 40, p, u, "Mul", scalar=False) == [p | QUIET["float32"]] * 40


def test_scatter_nd_float64_add_takes_the_rows_nan_everywhere():
    """ScatterNd's kernel runs on the thread-pool device: no such places."""
    p, u = TWO_NANS["float64"]
    var = arr("float64", [[p] * 40])
    got = bits(model("Add", var, np.int32([[0]]), arr("float64", [[u] * 40]), nd=True))
    assert got == [p | QUIET["float64"]] * 40


@pytest.mark.parametrize("dt", ("float16", "bfloat16"))
def test_half_min_max_convert_whole_packets_of_8(dt):
    """A NaN in the row stays (a NaN update never wins), quieted (float16) or
    made 0x7fc0 (bfloat16) in the row's whole packets of 8, bit for bit in
    the tail; a bfloat16 subnormal is flushed in packets, kept in the tail."""
    sig = TWO_NANS[dt][1]                               # signalling, negative
    one = {"float16": 0x3c00, "bfloat16": 0x3f80}[dt]
    for kind in ("Min", "Max"):
        for n in (5, 8, 13):
            m = n // 8 * 8
            got = row_of_nans(dt, n, sig, one, kind, scalar=True)
            inside = 0x7fc0 if dt == "bfloat16" else sig | QUIET[dt]
            assert got == [inside] * m + [sig] * (n - m), (dt, kind, n)
    if dt == "bfloat16":
        tiny = 0x8021   # a negative subnormal: wins Min against +1.0
        got = bits(model("Min", arr(dt, [[0x3f80] * 9]), np.int32([0]), arr(dt, tiny)))
        assert got == [0x8000] * 8 + [tiny]


# -- against TensorFlow's kernels ---------------------------------------------

@st.composite
def scatter_cases(draw):
    """(kind, nd, dtype, variable shape, indices, scalar update, seed, how
    often an element is special)."""
    nd = draw(st.booleans())
    kind = draw(st.sampled_from(state.SCATTER_ND_KINDS if nd else state.SCATTER_KINDS))
    dt = draw(st.sampled_from(FLOATS))
    rows = draw(st.integers(1, 4))
    row = draw(st.sampled_from(((), (1,), (2,), (3,), (4,), (5,), (7,), (8,), (9,), (15,),
                                (16,), (17,), (24,), (31,), (32,), (33,), (40,), (2, 9),
                                (3, 8), (5, 7))))
    if row == () and nd:
        row = (draw(st.integers(1, 40)),)
    k = draw(st.integers(1, 4))
    scalar = not nd and draw(st.integers(0, 2)) == 0
    if nd:   # index tuples of depth 1 (whole slices) or the full rank (single elements)
        depth = draw(st.sampled_from((1, 1 + len(row))))
        shape = (rows,) + row
        indices = [[draw(st.integers(0, d - 1)) for d in shape[:depth]] for _ in range(k)]
    else:
        indices = [draw(st.integers(0, rows - 1)) for _ in range(k)]
    return (kind, nd, dt, (rows,) + row, np.int32(indices), scalar,
            draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from((0.1, 0.5, 0.9, 1.0))))


@settings(max_examples=150 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(scatter_cases())
def test_scatter_bits_are_tensorflows_kernels(case):
    """The model's new value of the variable is the kernel's, bit for bit:
    NaN signs and payloads included, and every other value."""
    tf = tensorflow()
    kind, nd, dt, shape, indices, scalar, seed, p = case
    rng = np.random.default_rng(seed)
    var = values(dt, shape, rng, p)
    if nd:
        depth = indices.shape[-1]
        ushape = indices.shape[:-1] + shape[depth:]
    else:
        ushape = () if scalar else indices.shape + shape[1:]
    upd = values(dt, ushape, rng, p)
    if kind == "Div":   # a zero update (a subnormal counts) fails the whole op
        with np.errstate(invalid="ignore"):
            wide = np.asarray(fns.ftz(np, upd), np.float64)
        upd = np.where(wide == 0, np.ones_like(upd), upd)
    want = kernel(tf, kind, var, indices, upd, nd)
    got = model(kind, var, indices, upd, nd)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.nonzero(np.asarray(bits(got)) != np.asarray(bits(want)))[0]
    assert not len(bad), (kind, nd, dt, shape, indices.tolist(), scalar,
                          [(int(i), hex(bits(var)[i % var.size]), hex(bits(got)[i]),
                            hex(bits(want)[i])) for i in bad[:4]])


def test_integer_div_on_a_vector():
    # (a row of a vector is a numpy scalar: the integer division raised
    # AttributeError on it; C++'s truncation toward zero, in index order)
    var = np.array([7, -9, 5], np.int32)
    got = model("Div", var, np.array([0, 0, 1]), np.array([2, 2, 4], np.int32))
    assert got.tolist() == [1, -2, 5]
