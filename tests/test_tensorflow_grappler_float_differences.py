"""The floating-point differences of Grappler found by the 30-minute
campaigns (docs/grappler-findings.md 5.6), on TensorFlow's runtime: eager
execution against the same computation under `tf.function` (Grappler's
default pipeline), and the function again with the responsible optimizer
off.  These are the checks (D)-(H) of 5.6; the cases of
tests/cases/tensorflow/ hold the same programs for tfsem.  A TensorFlow
that no longer shows a difference fails here, so the cases and the page can
be updated.  Needs TensorFlow; nightly profile (about 10 s once imported)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

pytestmark = pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                                reason="TensorFlow's runtime, eager and tf.function: nightly profile")

F32 = np.float32
TINY = 1.401298464324817e-45          # the smallest float32 subnormal
BIG = 3.4028234663852886e+38          # the largest float32


@pytest.fixture(scope="module")
def tf():
    tf = pytest.importorskip("tensorflow")
    yield tf
    tf.config.optimizer.set_experimental_options(
        {"remapping": True, "constant_folding": True, "debug_stripper": False})


def _bits(x):
    return np.asarray(x, F32).view(np.uint32).tolist()


def _run(tf, fn, *args, off: str):
    """(eager, tf.function with Grappler's defaults, tf.function with `off` off)."""
    eager = np.asarray(fn(*args))
    tf.config.optimizer.set_experimental_options({off: True})
    graph = np.asarray(tf.function(lambda *a: fn(*a))(*args))
    tf.config.optimizer.set_experimental_options({off: False})
    without = np.asarray(tf.function(lambda *a: fn(*a))(*args))
    tf.config.optimizer.set_experimental_options({off: True})
    return eager, graph, without


def _fbn(tf, y, scale, offset, mean, var):
    return tf.raw_ops.FusedBatchNormV3(x=y, scale=scale, offset=offset, mean=mean, variance=var,
                                       epsilon=1e-5, is_training=False)[0]


def test_fused_conv2d_batchnorm_computes_in_another_order(tf):
    # (D) remap finding 12: -0.0 unfused, NaN fused
    x = F32([[[[-0.5], [0.0], [-0.5]]]])
    filt = F32([[[[-BIG, -1.5]]]])
    args = (x, filt, F32([-0.0, 0.0]), F32([-0.0, 1.0]), F32([-1.5, 1.0]), F32([-0.0, 1.0]))
    fn = lambda x, f, s, o, m, v: _fbn(tf, tf.nn.conv2d(x, f, 1, "SAME"), s, o, m, v)  # noqa: E731
    eager, graph, without = _run(tf, fn, *args, off="remapping")
    assert _bits(eager.ravel()) == _bits([-0.0, 1, -0.0, 1, -0.0, 1])
    assert np.isnan(graph.ravel()[[0, 4]]).all() and _bits(graph.ravel()[[1, 2, 3, 5]]) == _bits([1, -0.0, 1, 1])
    assert _bits(without) == _bits(eager)


def test_batchnorm_decomposition_makes_inf_nan(tf):
    # (E) pipeline finding 5: scale = inf and variance constants, mean = 0
    fn = lambda x, o, m: _fbn(tf, x, tf.constant(F32([np.inf])), o, m, tf.constant(F32([TINY])))  # noqa: E731
    eager, graph, without = _run(tf, fn, F32([[[[1.0]]]]), F32([0.0]), F32([0.0]), off="remapping")
    assert eager.ravel().tolist() == [np.inf] and without.ravel().tolist() == [np.inf]
    assert np.isnan(graph.ravel()).all()


def test_constant_folding_of_an_overflowing_matmul_gives_nan(tf):
    # (F) pipeline finding 17: the kernel's -inf, the folded constant's NaN
    c0 = F32([[-BIG, TINY, -BIG]])
    c1 = F32([[BIG, 2.0, 2.0], [-TINY, -TINY, -1.5], [2.0, -1.5, 1.1754943508222875e-38]])
    fn = lambda: tf.matmul(tf.constant(c0), tf.constant(c1))  # noqa: E731
    eager, graph, without = _run(tf, fn, off="constant_folding")
    assert eager.ravel().tolist() == [-np.inf] * 3 and without.ravel().tolist() == [-np.inf] * 3
    assert graph.ravel()[0] == -np.inf and np.isnan(graph.ravel()[1]) and graph.ravel()[2] == -np.inf


def test_constant_folding_of_biasadd_of_zeros_keeps_a_subnormal(tf):
    # (G) pipeline finding 54: BiasAdd flushes 1e-45, its folded BroadcastTo keeps it
    fn = lambda b: tf.nn.bias_add(tf.zeros([1, 1, 1, 1]), b)  # noqa: E731
    eager, graph, without = _run(tf, fn, F32([TINY]), off="constant_folding")
    assert _bits(eager.ravel()) == [0] and _bits(without.ravel()) == [0]
    assert _bits(graph.ravel()) == _bits([TINY])


def _relu_of_constant(tf, c):
    return lambda: tf.nn.relu(tf.constant(c))


def test_relu_keeps_negative_zero_and_subnormals_on_small_tensors(tf):
    # (H) why 3 pipeline findings are tfsem's (its Relu model makes +0.0):
    # eager Relu and its folded constant agree
    for v in ([-np.inf, -TINY], [-0.0], [-TINY]):
        c = F32(v)
        eager = tf.nn.relu(c).numpy()
        folded = tf.function(_relu_of_constant(tf, c))().numpy()
        assert _bits(eager) == _bits(folded)
        assert _bits(eager)[-1] != 0          # not +0.0: -0.0 or the subnormal kept
