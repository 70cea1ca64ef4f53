"""The predicates of conditionals and loops (oracle/opdefs/math.py: Less,
LessEqual, Greater, GreaterEqual, Equal, NotEqual, LogicalNot, LogicalAnd)
against TensorFlow's CPU kernels, bit for bit, on every dtype's edge values
(NaN, signed zeros, infinities, subnormals, integer extremes): on every pair
at once.  A dtype TensorFlow has no kernel for must be the `no-kernel` error.
Skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, FLOAT_DTYPES, Error, Tensor, finfo

tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")


def edges(name: str) -> np.ndarray:
    d = DTYPES[name]
    if name == "bool":
        return np.array([False, True])
    if name not in FLOAT_DTYPES:
        i = np.iinfo(d)
        v = {int(i.min), int(i.min) + 1, 0, 1, 2, int(i.max) - 1, int(i.max)}
        if d.kind == "i":
            v |= {-1, -2}
        return np.array(sorted(v), dtype=d)
    fi = finfo(d)
    sub = float(fi.tiny) / 4
    v = [np.nan, 0.0, -0.0, np.inf, -np.inf, float(fi.max), -float(fi.max), float(fi.tiny),
         -float(fi.tiny), sub, -sub, 1.0, -1.0, 1.5]
    return np.array(v, dtype=d)


def kernel(op: str, *arrays, dtype: str):
    try:
        ts = [tf.constant(a, tf.as_dtype(dtype)) for a in arrays]
        fn = getattr(tf.raw_ops, op)
        kw = dict(zip(("x", "y"), ts))
        return fn(**kw).numpy()
    except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError):
        return "no-kernel"


def model(op: str, *arrays):
    out = fns.get(op).apply([Tensor(a) for a in arrays], {})[0]
    return out.reason if isinstance(out, Error) else out.array


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
                                "NotEqual"])
def test_comparisons_are_tensorflows(op, dtype):
    e = edges(dtype)
    a, b = np.meshgrid(e, e)
    a, b = a.reshape(-1), b.reshape(-1)
    want = kernel(op, a, b, dtype=dtype)
    got = model(op, a, b)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert got.dtype == np.bool_ and want.dtype == np.bool_
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{op} {dtype}: at {list(zip(a[bad][:4], b[bad][:4]))} model " \
                         f"{got[bad][:4]}, TensorFlow {want[bad][:4]}"


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_logical_ops_are_tensorflows(dtype):
    e = edges(dtype)
    a, b = np.meshgrid(e, e)
    a, b = a.reshape(-1), b.reshape(-1)
    for op, args in (("LogicalNot", (a,)), ("LogicalAnd", (a, b))):
        want = kernel(op, *args, dtype=dtype)
        got = model(op, *args)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want, (op, dtype, got, want)
        else:
            assert (got == want).all(), (op, dtype)
