"""Select, SelectV2 and LogicalOr (oracle/opdefs/math.py) against TensorFlow's
CPU kernels, bit for bit, on every dtype's edge values (NaN with its sign,
signed zeros, infinities, subnormals, integer extremes): Select copies its
elements without flushing.  A non-bool condition or operand is the
`no-kernel` error, x and y of two dtypes `dtype-mismatch`.  Skipped without
TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values

tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")


def model(op, *arrays):
    out = fns.get(op).apply([Tensor(a) for a in arrays], {})[0]
    return out.reason if isinstance(out, Error) else out.array


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"] + ["bool"])
def test_select_copies_tensorflows_bits(dtype):
    e = edge_values(dtype)
    x, y = np.meshgrid(e, e[::-1])
    x, y = x.reshape(-1), y.reshape(-1)
    c = (np.arange(x.size) % 3 == 0)
    tx, ty = tf.constant(x, tf.as_dtype(dtype)), tf.constant(y, tf.as_dtype(dtype))
    want = tf.raw_ops.Select(condition=tf.constant(c), x=tx, y=ty).numpy()
    assert same_bits(model("Select", c, x, y), want), dtype
    # SelectV2 broadcasting a scalar condition, and a [n, 1] one against [n, m]
    for cond in (np.array(True), np.array(False)):
        want = tf.raw_ops.SelectV2(condition=tf.constant(cond), t=tx, e=ty).numpy()
        assert same_bits(model("SelectV2", cond, x, y), want)
    x2 = np.repeat(np.resize(x, 6).reshape(6, 1), 2, axis=1)
    y2, c2 = np.resize(y, 12).reshape(6, 2), np.resize(c, 6).reshape(6, 1)
    want = tf.raw_ops.SelectV2(condition=tf.constant(c2), t=tf.constant(x2, tf.as_dtype(dtype)),
                               e=tf.constant(y2, tf.as_dtype(dtype))).numpy()
    assert same_bits(model("SelectV2", c2, x2, y2), want)
    # Select with a vector condition along the first axis
    want = tf.raw_ops.Select(condition=tf.constant(c2.reshape(-1)), x=tf.constant(x2, tf.as_dtype(dtype)),
                             y=tf.constant(y2, tf.as_dtype(dtype))).numpy()
    assert same_bits(model("Select", c2.reshape(-1), x2, y2), want)


def test_select_refuses_what_tensorflow_refuses():
    x = np.array([1.0, 2.0], np.float32)
    assert model("Select", np.array([1, 0]), x, x) == "no-kernel"
    assert model("Select", np.array([True, False]), x, x.astype(np.float64)) == "dtype-mismatch"
    assert model("Select", np.array([True, False, True]), x, x) == "shape-mismatch"
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.raw_ops.Select(condition=tf.constant([True, False, True]), x=tf.constant(x),
                          y=tf.constant(x))


def test_logical_or_is_tensorflows():
    a, b = np.meshgrid([False, True], [False, True])
    want = tf.raw_ops.LogicalOr(x=tf.constant(a), y=tf.constant(b)).numpy()
    assert same_bits(model("LogicalOr", a, b), want)
    assert model("LogicalOr", np.array([1]), np.array([0])) == "no-kernel"
