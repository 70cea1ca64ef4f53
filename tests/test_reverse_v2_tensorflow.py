"""ReverseV2's numpy model (oracle/opdefs/array.py) against TensorFlow's
CPU kernel, bit for bit: every dtype's edge values and random bit patterns
(NaN payloads, signed zeros and subnormals copied), every set of axes
(negative ones too, int32 and int64), empty tensors and scalars; an axis out
of range, given twice, or not a vector fails as TensorFlow's kernel does (an
error value); a rank past 8 is left to TensorFlow's kernel.  More shapes
under the `nightly` Hypothesis profile; the TensorFlow comparisons are
skipped without TensorFlow."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, random_array

from axes_support import axes_of
from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
SHAPES = [(), (0,), (7,), (2, 0, 3), (3, 4), (2, 3, 4)] + ([(5, 1, 2, 3), (33,), (2, 2, 2, 2, 2)]
                                                           if NIGHTLY else [])
DTYPE_NAMES = list(DTYPES) if NIGHTLY else ["float32", "bfloat16", "float16", "int64", "uint8",
                                            "bool"]


def model(a, axes, index="int32"):
    out = fns.get("ReverseV2").apply([Tensor(a), Tensor(np.asarray(axes, index))], {})[0]
    return out


@pytest.mark.parametrize("dt", DTYPE_NAMES)
def test_reverse_v2_is_tensorflows_bit_for_bit(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(41)
    for shape in SHAPES:
        a = random_array(dt, int(np.prod(shape)), rng).reshape(shape).astype(DTYPES[dt])
        for axes in axes_of(len(shape)):
            index = "int64" if len(axes) % 2 else "int32"
            want = tf.raw_ops.ReverseV2(tensor=tf.constant(a),
                                        axis=tf.constant(axes, tf.as_dtype(index))).numpy()
            got = model(a, axes, index)
            assert isinstance(got, Tensor), (dt, shape, axes, got)
            assert got.array.dtype == want.dtype and got.array.shape == want.shape
            assert got.array.tobytes() == want.tobytes(), (dt, a, axes, got, want)


@pytest.mark.parametrize("axes", [[2], [-3], [0, 0], [1, -1], [[1]], 1])
def test_a_bad_axis_is_an_error_as_tensorflow_fails(axes):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = model(a, axes)
    assert isinstance(got, Error) and got.reason == "shape-mismatch"
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.raw_ops.ReverseV2(tensor=tf.constant(a), axis=tf.constant(axes, tf.int32))


def test_the_axis_dtype_and_a_rank_past_eight_numpy_only():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = fns.get("ReverseV2").apply([Tensor(a), Tensor(np.array([0], np.int16))], {})[0]
    assert isinstance(got, Error) and got.reason == "no-kernel"
    with kernels.use(False), pytest.raises(fns.CannotRun, match="rank 9"):
        fns.get("ReverseV2").apply([Tensor(np.zeros((1,) * 9, np.float32)),
                                    Tensor(np.array([0], np.int32))], {})


def test_graph_import_makes_the_function():
    nodes = [placeholder("x", (2, 3), "DT_FLOAT"), const("ax", [1], "DT_INT32"),
             node("r", "ReverseV2", ["x", "ax"], Tidx={"type": "DT_INT32"})]
    p = import_graph({"node": nodes}, ["r"], []).program
    ops = {n.op for n in p.nodes}
    assert "ReverseV2" in ops and not any(o.startswith("tf.") for o in ops)
