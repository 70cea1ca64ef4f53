"""tfsem's Relu against TensorFlow 2.21's CPU kernel on -0.0, subnormals,
NaN and infinities: the result depends on the element's position in the
flattened tensor (Eigen's whole packets vs. its scalar tail), which the model
follows (oracle/opdefs/nn.py `_relu`).  The numpy-only tests state the rule;
the TensorFlow tests compare bit for bit with the kernel (skipped without
TensorFlow; the graph-mode sweep with known shapes and the threads run under
the nightly Hypothesis profile)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

from tfsem.oracle import functions as fns
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:                                   # pragma: no cover
    BF16 = None

RELU = fns.get("Relu")
SIZES = list(range(1, 41))
SHAPES = [(n,) for n in SIZES] + [(3, 5), (4, 8), (5, 7)]
NIGHTLY = settings.get_current_profile_name() == "nightly"


def relu(x):
    return RELU.impl(np, (x,), {})[0]


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def specials(dt):
    fi = ml_dtypes.finfo(dt) if BF16 is not None and dt == BF16 else np.finfo(dt)
    sub = fi.smallest_subnormal
    return np.array([-0.0, 0.0, sub, -sub, fi.tiny / 2, -(fi.tiny / 2), np.nan, -np.nan, np.inf,
                     -np.inf, 1.5, -1.5, fi.tiny, -fi.tiny, fi.max, -fi.max], dtype=dt)


def dtypes():
    return [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)] + (
        [BF16] if BF16 is not None else [])


def inputs(dt, shapes=SHAPES, trials=3, seed=0):
    """For each shape: all -0.0, all the smallest positive subnormal, and
    random mixes of the special values."""
    rng = np.random.default_rng(seed)
    sp = specials(dt)
    for sh in shapes:
        yield np.full(sh, sp[0], dt)
        yield np.full(sh, sp[2], dt)
        for _ in range(trials):
            yield rng.choice(sp, size=sh).astype(dt)


# -- the rule, numpy only -------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_float32_minus_zero_is_kept_past_the_last_whole_packet_only(n):
    y = relu(np.full(n, -0.0, np.float32))
    m = n // 8 * 8
    assert (np.signbit(y) == (np.arange(n) >= m)).all()
    assert (y == 0).all()


@pytest.mark.parametrize("n", SIZES)
def test_float64_packets_are_four_elements(n):
    y = relu(np.full(n, -0.0, np.float64))
    assert (np.signbit(y) == (np.arange(n) >= n // 4 * 4)).all()


@pytest.mark.parametrize("dt,p", [(np.float32, 8), (np.float64, 4)])
def test_a_subnormal_is_kept_only_as_the_first_element_of_an_odd_tail(dt, p):
    sub = np.finfo(dt).smallest_subnormal
    for n in SIZES:
        for x in (np.full(n, sub, dt), np.full(n, -sub, dt)):
            y = relu(x)
            m, t = n // p * p, n % p
            kept = bits(y) == bits(x)
            assert kept.tolist() == [t % 2 == 1 and i == m for i in range(n)], n
            # elsewhere the flushed zero: +0.0 in packets, its sign in the tail's pairs
            want_sign = (np.arange(n) >= m) & (x < 0)
            assert (np.signbit(y[~kept]) == want_sign[~kept]).all(), n


def test_the_33_element_float32_case_of_the_finding():
    y = relu(np.full(33, -0.0, np.float32))
    assert np.signbit(y).tolist() == [False] * 32 + [True]
    y = relu(np.full(33, 1e-45, np.float32))
    assert y[32] == np.float32(1e-45) and (y[:32] == 0).all()


def test_nan_infinities_and_normals_do_not_depend_on_the_position():
    for dt in dtypes():
        x = np.array([np.nan, -np.nan, np.inf, -np.inf, 2.0, -2.0] * 7, dtype=dt)
        for n in range(1, len(x) + 1):
            y, xs = relu(x[:n]), x[:n]
            f = xs.astype(np.float64)
            assert (bits(y)[np.isnan(f)] == bits(xs)[np.isnan(f)]).all()
            ok = ~np.isnan(f)
            assert (y[ok].astype(np.float64) == np.maximum(f[ok], 0)).all()
            assert not np.signbit(y[ok & (f < 0)].astype(np.float64)).any()


def test_float16_keeps_minus_zero_and_subnormals_everywhere():
    x = np.full(33, -0.0, np.float16)
    assert np.signbit(relu(x)).all()
    sub = np.finfo(np.float16).smallest_subnormal
    assert (bits(relu(np.full(33, sub, np.float16))) == bits(np.full(33, sub, np.float16))).all()
    assert (bits(relu(np.full(33, -sub, np.float16))) == 0).all()


def test_the_batched_model_counts_positions_within_each_valuation():
    for dt in dtypes():
        for x in inputs(dt, shapes=[(1,), (3,), (9,), (5, 7), (4, 8)], trials=2, seed=1):
            xb = np.stack([x, x[::-1].copy() if x.ndim == 1 else x, x])
            yb = RELU.batched_impl(np, (xb,), {})[0]
            for k in range(3):
                assert (bits(yb[k]) == bits(relu(xb[k]))).all(), (dt, x.shape)


def test_integers_are_max_with_zero():
    x = np.array([np.iinfo(np.int32).min, -1, 0, 1, np.iinfo(np.int32).max] * 3, np.int32)
    assert relu(x).tolist() == [0, 0, 0, 1, np.iinfo(np.int32).max] * 3


# -- against TensorFlow's kernel ---------------------------------------------------

def _tf():
    return pytest.importorskip("tensorflow", reason="TensorFlow's Relu kernel: needs the extra "
                               "tfsem[tensorflow]")


def _check(run, dt, shapes, trials):
    bad = []
    for x in inputs(dt, shapes, trials):
        y = np.asarray(run(x))
        if not (bits(y) == bits(relu(x))).all():
            bad.append((x.shape, x.reshape(-1).tolist(), y.reshape(-1).tolist()))
    assert not bad, bad[:2]


@pytest.mark.parametrize("dt", dtypes(), ids=str)
def test_the_model_is_tensorflows_relu_in_eager_mode(dt):
    tf = _tf()
    _check(lambda x: tf.raw_ops.Relu(features=tf.constant(x)).numpy(), dt, SHAPES, 2)


@pytest.mark.parametrize("dt", dtypes(), ids=str)
def test_the_model_is_tensorflows_relu_in_a_tf_function(dt):
    """Graph mode with Grappler and oneDNN's rewrites as a user runs it (one
    trace: the shape is unknown in the graph; the nightly run traces every
    known shape)."""
    tf = _tf()
    g = tf.function(lambda x: tf.raw_ops.Relu(features=x),
                    input_signature=[tf.TensorSpec(None, tf.as_dtype(dt))])
    _check(lambda x: g(tf.constant(x)).numpy(), dt, SHAPES, 1)


@pytest.mark.skipif(not NIGHTLY, reason="nightly: a trace per shape, 10**6 elements, threads")
@pytest.mark.parametrize("threads", [1, 16])
def test_known_shapes_large_tensors_and_threads(threads):
    """In a child process (the thread count is fixed once per process)."""
    _tf()
    import subprocess
    import sys
    code = f"""
import numpy as np, tensorflow as tf, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
tf.config.threading.set_intra_op_parallelism_threads({threads})
import test_relu_signed_zero as t
for dt in t.dtypes():
    g = tf.function(lambda x: tf.raw_ops.Relu(features=x))
    t._check(lambda x: g(tf.constant(x)).numpy(), dt, t.SHAPES + [(100003,), (1000005,)], 1)
    t._check(lambda x: tf.raw_ops.Relu(features=tf.constant(x)).numpy(), dt,
             [(100003,), (1000005,), (999, 1001)], 2)
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_relu_stays_uninterpreted_in_proofs():
    """No proof reads the numpy model's -0.0 handling: Relu has no Z3
    encoding and is not folded on constants by the checker."""
    from tfsem.checking import symbolic
    from tfsem.oracle.opdefs import registry
    assert RELU.encoding is None and registry.elementwise_of(RELU) is None
    assert not registry.folds_on_constants(RELU) and not symbolic.has_encoding(RELU)
