"""Where's numpy model (one argument; oracle/opdefs/array.py) against
TensorFlow's CPU kernel: the int64 coordinates of the true elements,
row-major, for every dtype's edge values and random bit patterns (a NaN is
true; a float32/float64 subnormal is not, a bfloat16 one is), ranks 1 to 8
and empty tensors; a scalar or a rank past 8 fails as the kernel does;
float16, which has no CPU kernel, is left to TensorFlow.  More shapes under
the `nightly` Hypothesis profile; the TensorFlow comparisons are skipped
without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values, random_array

from test_graphdef_ops import node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
SHAPES = [(0,), (16,), (2, 0, 3), (3, 4), (2, 3, 4), (1,) * 8] + (
    [(5, 1, 2, 3), (33,), (2, 2, 2, 2, 2), (2,) * 8] if NIGHTLY else [])
DTYPE_NAMES = [d for d in DTYPES if d != "float16"]


def model(a):
    out = fns.get("Where").apply([Tensor(a)], {})[0]
    return out


@pytest.mark.parametrize("dt", DTYPE_NAMES)
def test_where_is_tensorflows(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(53)
    d = DTYPES[dt]
    arrays = [edge_values(dt).astype(d)]
    for shape in SHAPES:
        n = int(np.prod(shape))
        arrays.append(random_array(dt, n, rng).reshape(shape).astype(d))
        arrays.append(rng.choice(edge_values(dt), size=shape).astype(d))
    for a in arrays:
        want = tf.raw_ops.Where(condition=tf.constant(a)).numpy()
        got = model(a)
        assert isinstance(got, Tensor), (dt, a.shape, got)
        assert got.array.dtype == want.dtype and got.array.shape == want.shape, (dt, a.shape)
        assert got.array.tobytes() == want.tobytes(), (dt, a, got, want)


def test_scalars_and_high_ranks_fail_as_tensorflow_fails():
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    for a in (np.array(True), np.ones((1,) * 9, bool)):
        got = model(a)
        assert isinstance(got, Error) and got.reason == "shape-mismatch"
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.raw_ops.Where(condition=tf.constant(a))


def test_float16_is_left_to_the_kernel_and_the_result_is_int64():
    with kernels.use(False), pytest.raises(fns.CannotRun, match="float16"):
        model(np.ones(3, np.float16))
    e = edge_values("float32")     # 0, -0, 1, -1, 0.5, -1.5, 2, nan, inf, -inf, max, -max,
    got = model(e).array           # tiny, -tiny, smallest subnormal, its negative
    assert got.dtype == np.int64 and got.reshape(-1).tolist() == list(range(2, 14))
    nodes = [placeholder("x", (3,), "DT_BOOL"), node("w", "Where", ["x"], T="DT_BOOL")]
    p = import_graph({"node": nodes}, ["w"], []).program
    assert "Where" in {n.op for n in p.nodes}
