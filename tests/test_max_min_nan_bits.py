"""The bits of the NaN that tfsem's Max and Min (and their .ftz variants)
return, against TensorFlow 2.21's CPU Maximum/Minimum: the first operand's
NaN where it is one, else the second's, verbatim -- a signaling NaN is not
quieted, a bfloat16 payload is kept -- on every float dtype, at every
position of the result (measured: sizes 1 to 40, 100 and 1,003, equal shapes
and a scalar on either side).  The model used to return numpy's NaN, which
on bfloat16 is the canonical 0x7fc0/0xffc0, quiets a signaling NaN, and in
numpy's scalar tail is the second of two NaNs.  Outcome equality makes all
NaNs equal, but Bitcast shows the bits (docs/semantics.md, "NaN payloads").

The numpy-only tests state the rule on measured values; the last one
compares with the kernel bit for bit (skipped without TensorFlow)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)

FLOATS = ["float16", "bfloat16", "float32", "float64"]
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
#: NaNs of each dtype: quiet with a payload, negative with a payload,
#: signaling, the x86 default NaN (negative), numpy's NaN
NANS = {"float32": [0x7fc00001, 0xffc00002, 0x7f800001, 0xffc00000, 0x7fc00000],
        "float64": [0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000001,
                    0xfff8000000000000, 0x7ff8000000000000],
        "float16": [0x7e01, 0xfe02, 0x7c01, 0xfe00, 0x7e00],
        "bfloat16": [0x7fc1, 0xffc2, 0x7f81, 0xffc0, 0x7fc0]}


def nan_array(dt: str) -> np.ndarray:
    d = DTYPES[dt]
    return np.array(NANS[dt], dtype=UINT[d.itemsize]).view(d)


def bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize])


def values(dt: str) -> np.ndarray:
    d = DTYPES[dt]
    plain = np.array([1.0, -2.0, np.inf, -np.inf, 0.0, -0.0], np.float64).astype(d)
    return np.concatenate([nan_array(dt), plain])


def rule(a, b) -> np.ndarray:
    """TensorFlow's NaN: the first operand's bits where it is NaN, else the
    second's (elements where neither is NaN: 0, not compared)."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    na = np.isnan(a.astype(np.float64))
    return np.where(na, bits(a), bits(b))


def nan_mask(a, b) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    return np.isnan(a.astype(np.float64)) | np.isnan(b.astype(np.float64))


def model(name: str, a, b) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(fns.get(name).impl(np, (np.asarray(a), np.asarray(b)), {})[0])


def cases(dt: str, seed: int = 0):
    """(a, b) pairs: sizes 1..40 and 100, equal shapes and a scalar on
    either side, random mixes of NaNs and plain values."""
    rng = np.random.default_rng(seed)
    v = values(dt)
    for n in list(range(1, 41)) + [100]:
        x = v[rng.integers(0, len(v), n)]
        y = v[rng.integers(0, len(v), n)]
        yield x, y
        yield x, y[:1].reshape(())
        yield x[:1].reshape(()), y


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", ["Max", "Min", "Max.ftz", "Min.ftz"])
def test_a_nan_operand_is_returned_verbatim_first_operand_first(dt, name):
    for a, b in cases(dt):
        r = model(name, a, b)
        m = nan_mask(a, b)
        assert (bits(r)[m] == rule(a, b)[m]).all(), (name, dt, bits(a), bits(b), bits(r))


def test_the_measured_cases_that_differed():
    """Three of the measured differences, by value: a bfloat16 payload
    (numpy gave 0x7fc0), a float32 signaling NaN (numpy quiets it to
    0x7fc00001), and two float32 NaNs in numpy's scalar tail (17 elements:
    numpy returned the second, 0x7fc00001 quieted; TensorFlow the first)."""
    bf = DTYPES["bfloat16"]
    a = np.array([0x7fc1], np.uint16).view(bf)
    b = np.array([0x3f80], np.uint16).view(bf)         # 1.0
    assert bits(model("Max.ftz", a, b)).tolist() == [0x7fc1]
    assert bits(model("Min.ftz", b, a)).tolist() == [0x7fc1]
    s = np.array([0x7f800001], np.uint32).view(np.float32)
    one = np.array([1.0], np.float32)
    assert bits(model("Max.ftz", s, one)).tolist() == [0x7f800001]
    a = np.full(17, 0xffc00000, np.uint32).view(np.float32)
    b = np.full(17, 0x7f800001, np.uint32).view(np.float32)
    assert set(bits(model("Min.ftz", a, b)).tolist()) == {0xffc00000}


def test_the_batched_model_returns_the_same_nans():
    rng = np.random.default_rng(3)
    v = values("float32")
    for name in ("Max", "Min"):
        f = fns.get(name)
        for sa, sb in (((9,), (9,)), ((9,), ()), ((), (5,)), ((3, 5), (5,))):
            a = v[rng.integers(0, len(v), (3,) + sa)]
            b = v[rng.integers(0, len(v), (3,) + sb)]
            got = f.batched_impl(np, (a, b), {})[0]
            for k in range(3):
                assert (bits(got[k]) == bits(model(name, a[k], b[k]))).all(), (name, sa, sb)


@pytest.mark.parametrize("dt", FLOATS)
def test_the_nan_bits_are_tensorflows_kernel(dt):
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    from tfsem.graphdef.ops import flushed
    bad = []
    for tf_op, name in (("Maximum", "Max"), ("Minimum", "Min")):
        raw = getattr(tf.raw_ops, tf_op)
        f = flushed(name, dt)
        for a, b in cases(dt, seed=1):
            with tf.device("/CPU:0"):
                got = raw(x=tf.constant(a, tf.as_dtype(dt)), y=tf.constant(b, tf.as_dtype(dt))).numpy()
            want = model(f, a, b)
            m = nan_mask(a, b)
            assert m.shape == got.shape
            if not (bits(got)[m] == bits(want)[m]).all():
                bad.append((tf_op, dt, bits(a).tolist(), bits(b).tolist(), bits(got).tolist(),
                            bits(want).tolist()))
    assert not bad, bad[:2]
