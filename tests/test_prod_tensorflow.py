"""Prod's numpy model for integers (oracle/opdefs/math.py) against
TensorFlow's CPU kernel, bit for bit: wrapping products of every integer
dtype's extremes, over each set of axes (negative, several, none, every
one), keep_dims, empty tensors (the product of nothing is 1), scalars; an
axis out of range or given twice is an error value as TensorFlow's kernel
fails.  A float Prod is TensorFlow's kernel (with the kernels on), and graph
import keeps axes computed at run time as the uninterpreted tf.Prod/2/1.
More shapes under the `nightly` Hypothesis profile; the TensorFlow
comparisons are skipped without TensorFlow."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values, random_array

from axes_support import axes_of
from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SHAPES = [(), (0,), (5,), (2, 0, 3), (3, 4), (2, 3, 4)] + ([(6, 5), (2, 2, 2, 3), (17,)]
                                                           if NIGHTLY else [])
TRIALS = 8 if NIGHTLY else 2


def model(a, axes, keep_dims):
    out = fns.get("Prod").apply([Tensor(a)], {"axes": list(axes), "keep_dims": keep_dims})[0]
    return out


@pytest.mark.parametrize("dt", INTS)
def test_integer_prod_is_tensorflows(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(31)
    d = DTYPES[dt]
    for shape in SHAPES:
        n = int(np.prod(shape))
        arrays = [rng.choice(edge_values(dt), size=shape).astype(d)
                  for _ in range(TRIALS)] + [random_array(dt, n, rng).reshape(shape).astype(d)]
        for a in arrays:
            for axes in axes_of(len(shape)):
                for keep in (False, True):
                    want = tf.raw_ops.Prod(input=tf.constant(a), axis=tf.constant(axes, tf.int32),
                                           keep_dims=keep).numpy()
                    got = model(a, axes, keep)
                    assert isinstance(got, Tensor), (dt, shape, axes, got)
                    assert got.array.dtype == want.dtype and got.array.shape == want.shape
                    assert got.array.tobytes() == want.tobytes(), (dt, a, axes, got, want)


def test_wrapping_and_the_empty_product_numpy_only():
    a = np.array([2 ** 16, 2 ** 16, 3], np.int32)
    assert model(a, [0], False).array.tolist() == 0          # 2^32 wraps to 0
    a = np.array([-128, -1], np.int8)
    assert model(a, [0], False).array.tolist() == -128        # 128 wraps
    assert model(np.zeros((2, 0), np.int64), [1], False).array.tolist() == [1, 1]


@pytest.mark.parametrize("axes", [[2], [-3], [0, 0], [0, -2]])
def test_a_bad_axis_is_an_error_as_tensorflow_fails(axes):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert isinstance(model(a, axes, False), Error)
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.raw_ops.Prod(input=tf.constant(a), axis=tf.constant(axes, tf.int32), keep_dims=False)


def test_a_float_prod_is_tensorflows_kernel():
    tf = pytest.importorskip("tensorflow", reason="compares the kernel path with TensorFlow")
    a = np.array([[1.5, -0.0, 3.0], [np.inf, 2.0, 1e-30]], np.float32)
    with kernels.use(False):
        with pytest.raises(fns.CannotRun, match="Prod"):
            fns.get("Prod").apply([Tensor(a)], {"axes": [1], "keep_dims": False})
    with kernels.use(True), kernels.record() as used:
        (r,) = fns.get("Prod").apply([Tensor(a)], {"axes": [1], "keep_dims": False})
    assert used
    want = tf.raw_ops.Prod(input=tf.constant(a), axis=tf.constant([1]), keep_dims=False).numpy()
    assert r.array.tobytes() == want.tobytes()


def test_graph_import_models_constant_axes_and_keeps_computed_ones_uninterpreted():
    nodes = [placeholder("x", (2, 3), "DT_INT32"), const("ax", [1], "DT_INT32"),
             node("p", "Prod", ["x", "ax"], T="DT_INT32", Tidx={"type": "DT_INT32"},
                  keep_dims={"b": False})]
    p = import_graph({"node": nodes}, ["p"], []).program
    ops = {n.op for n in p.nodes}
    assert "Prod" in ops and not any(o.startswith("tf.") for o in ops)
    nodes[1] = placeholder("ax", (1,), "DT_INT32")
    p = import_graph({"node": nodes}, ["p"], []).program
    assert "tf.Prod/2/1" in {n.op for n in p.nodes}
