"""The bits of the NaNs tfsem's float arithmetic makes (Add, Sub, Mul,
RealDiv, SquaredDifference, Square, Sqrt, BiasAdd, ReluGrad and their .ftz
variants), against TensorFlow 2.21's CPU kernels (oracle/functions.py
`nan_bits` states the measured rule).  numpy's bits differed: past its
vectorized loop numpy returns the second of two NaNs, ml_dtypes keeps a
bfloat16 NaN's sign where TensorFlow's packets make it 0x7fc0, numpy's
float16 Add returns the second NaN, and TensorFlow's own choice for Add and
Mul with a one-element operand depends on the element's place in Eigen's
packets.  Outcome equality makes all NaNs equal, but Bitcast shows the bits.

The numpy-only tests hold measured results; the last one compares with the
kernels on random mixes of NaNs and plain values (skipped without
TensorFlow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import UINT, arr, bits, runs as runs_of

NANS = {"float32": [0x7fc00001, 0xffc00002, 0x7f800001, 0xff812345, 0xffc00000, 0x7fc00000],
        "float64": [0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000001,
                    0xfff8000000000000, 0x7ff8000000000000],
        "float16": [0x7e01, 0xfe02, 0x7c01, 0xfe00, 0x7e00],
        "bfloat16": [0x7fc1, 0xffc2, 0x7f81, 0xffc0, 0x7fc0]}


def run(name: str, *arrays):
    with np.errstate(all="ignore"):
        return fns.get(name).impl(np, tuple(np.asarray(a) for a in arrays), {})[0]


def runs(values, first: int, second: int) -> str:
    """"F3 S2": which operand's NaN each element holds, as runs."""
    return runs_of("F" if v == first else "S" if v == second else "?" for v in values)


def test_two_nans_of_equal_shapes_give_the_first_quieted():
    for name in ("Add", "Sub", "Mul", "RealDiv.ftz", "SquaredDifference.ftz"):
        for n in (1, 8, 17):
            a = arr("float32", [0x7f800001] * n)          # signaling: quieted
            b = arr("float32", [0xffc00002] * n)
            assert set(bits(run(name, a, b))) == {0x7fc00001}, (name, n)
    # numpy's own loop gave the second past its vectorized part (17 elements)
    r = run("Add", arr("float32", [0xffc00000] * 17), arr("float32", [0x7f800001] * 17))
    assert set(bits(r)) == {0xffc00000}
    # numpy's float16 Add gave the second everywhere
    assert bits(run("Add", arr("float16", [0x7e01]), arr("float16", [0xfe02]))) == [0x7e01]


@pytest.mark.parametrize("dt, packet", [("float32", 8), ("float64", 4)])
def test_add_and_mul_with_a_one_element_operand_pick_by_place(dt, packet):
    f, s = NANS[dt][0], NANS[dt][1]
    for name in ("Add", "Mul"):
        for n in (1, 3, packet, packet + 3, 2 * packet + 1):
            m = n // packet * packet
            left = run(name, arr(dt, f), arr(dt, [s] * n))            # scalar op tensor
            assert runs(bits(left), f, s) == " ".join(
                x for x in (f"F{m}" if m else "", f"S{n - m}" if n > m else "") if x), (name, n)
            right = run(name, arr(dt, [f] * n), arr(dt, s))           # tensor op scalar
            assert runs(bits(right), f, s) == " ".join(
                x for x in (f"S{m}" if m else "", f"F{n - m}" if n > m else "") if x), (name, n)
            # not for Sub: always the first
            assert runs(bits(run("Sub", arr(dt, f), arr(dt, [s] * n))), f, s) == f"F{n}"


def test_the_one_element_forms_at_the_edge_of_rank_zero():
    """() op [1] is "scalar op tensor" (the second, in the tail); [1] op ()
    and [1, 1] op [1] are not (the first)."""
    f, s = NANS["float32"][0], NANS["float32"][1]
    assert bits(run("Add", arr("float32", f), arr("float32", [s]))) == [s]
    assert bits(run("Add", arr("float32", [f]), arr("float32", s))) == [f]
    assert bits(run("Mul", arr("float32", [[f]]), arr("float32", [s]))) == [f]
    # float16 has no packets here: the second with a scalar on the left
    f16, s16 = NANS["float16"][0], NANS["float16"][1]
    assert set(bits(run("Add", arr("float16", f16), arr("float16", [s16] * 9)))) == {s16}
    assert set(bits(run("Add", arr("float16", [f16] * 9), arr("float16", s16)))) == {f16}


def test_invalid_operations_give_the_default_nan():
    inf = arr("float32", [0x7f800000] * 3)
    assert set(bits(run("Sub", inf, inf))) == {0xffc00000}
    assert set(bits(run("Sqrt", arr("float64", [0xbff0000000000000])))) == {0xfff8000000000000}
    assert set(bits(run("Mul", arr("float16", [0x7c00]), arr("float16", [0])))) == {0xfe00}


def test_bfloat16_nans_are_canonical_in_packets_and_signed_in_the_tail():
    for n in (1, 7, 8, 11, 16, 19):
        a = arr("bfloat16", [0xffc2] * n)
        m = n // 8 * 8
        for name in ("Add.ftz", "Mul.ftz", "Sqrt.ftz", "Square.ftz"):
            r = run(name, a, arr("bfloat16", [0x3f80] * n)) if name[:3] in ("Add", "Mul") \
                else run(name, a)
            assert bits(r) == [0x7fc0] * m + [0xffc0] * (n - m), (name, n)


def test_the_batched_forms_count_places_within_each_valuation():
    rng = np.random.default_rng(0)
    for dt in NANS:
        v = np.concatenate([arr(dt, NANS[dt]),
                            np.array([1.0, -2.0, np.inf, -np.inf, 0.0], np.float64).astype(DTYPES[dt])])
        for name in ("Add", "Sub", "Mul", "RealDiv", "SquaredDifference", "Square", "Sqrt",
                     "ReluGrad"):
            f = fns.get(name)
            unary = name in ("Square", "Sqrt")
            for sa, sb in (((9,), (9,)), ((9,), ()), ((), (9,)), ((), (1,)), ((3, 5), (5,))):
                if (unary or name == "ReluGrad") and sa != sb:
                    continue
                a = v[rng.integers(0, len(v), (3,) + sa)]
                b = v[rng.integers(0, len(v), (3,) + sb)]
                args = (a,) if unary else (a, b)
                with np.errstate(all="ignore"):
                    got = f.batched_impl(np, args, {})[0]
                for k in range(3):
                    assert bits(got[k]) == bits(run(name, *(x[k] for x in args))), (dt, name, sa, sb)


def test_the_nan_bits_are_tensorflows_kernels():
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    from tfsem.graphdef.ops import flushed
    raw = tf.raw_ops
    binary = {"Add": lambda x, y: raw.AddV2(x=x, y=y), "Sub": lambda x, y: raw.Sub(x=x, y=y),
              "Mul": lambda x, y: raw.Mul(x=x, y=y), "RealDiv": lambda x, y: raw.RealDiv(x=x, y=y),
              "SquaredDifference": lambda x, y: raw.SquaredDifference(x=x, y=y),
              "BiasAdd": lambda x, y: raw.BiasAdd(value=x, bias=y),
              "ReluGrad": lambda x, y: raw.ReluGrad(gradients=x, features=y)}
    unary = {"Square": lambda x: raw.Square(x=x), "Sqrt": lambda x: raw.Sqrt(x=x)}
    rng = np.random.default_rng(9)
    bad, compared = [], 0
    for dt in NANS:
        v = np.concatenate([arr(dt, NANS[dt]),
                            np.array([1.0, -2.0, np.inf, -np.inf, 0.0, -0.0], np.float64)
                            .astype(DTYPES[dt])])
        tdt = tf.as_dtype(dt)
        for n in (1, 3, 4, 5, 8, 9, 13, 16, 17, 33):
            for name in (*binary, *unary):
                f = flushed(name, dt)
                if name in unary:
                    forms = [((n,), None)]
                elif name == "BiasAdd":
                    forms = [((n, 3), (3,)), ((n, 1), (1,))]
                elif name == "ReluGrad":
                    forms = [((n,), (n,))]
                else:
                    forms = [((n,), (n,)), ((), (n,)), ((n,), ()), ((1,), (n,)), ((n,), (1,)),
                             ((3, n), (n,)), ((3, 1), (1, n)), ((), (1,)), ((1, 1), (1,))]
                for sa, sb in forms:
                    a = v[rng.integers(0, len(v), math.prod(sa))].reshape(sa)
                    args = (a,) if sb is None else (
                        a, v[rng.integers(0, len(v), math.prod(sb))].reshape(sb))
                    fn = unary[name] if name in unary else binary[name]
                    with tf.device("/CPU:0"):
                        want = fn(*(tf.constant(x, tdt) for x in args)).numpy()
                    got = run(f, *args)
                    compared += 1
                    if bits(got) != bits(want):
                        bad.append((dt, name, sa, sb, [hex(b) for b in bits(got)][:8],
                                    [hex(b) for b in bits(want)][:8]))
    assert not bad, bad[:2]
    assert compared > 1000
