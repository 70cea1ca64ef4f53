"""OneHot's numpy model (oracle/opdefs/array.py) against TensorFlow's CPU
kernel, bit for bit: every index dtype (uint8, int8, int32, int64) with
indices negative, past depth and at the integer extremes, depths 0 to 5,
every axis (-1 and 0 to rank), on/off values of every dtype taken from
random bit patterns (NaN payloads and -0.0 copied), empty and scalar
indices; an axis out of range, a negative depth, or a depth, on_value or
off_value that is not a scalar fail as TensorFlow's kernel does (an error
value).  More cases under the `nightly` Hypothesis profile; the TensorFlow
comparisons are skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values, random_array

from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
INDEX = ["uint8", "int8", "int32", "int64"]
SHAPES = [(), (0,), (6,), (2, 3)] + ([(2, 0, 2), (3, 1, 2)] if NIGHTLY else [])
VALUE_DTYPES = list(DTYPES) if NIGHTLY else ["float32", "bfloat16", "int64", "bool"]


def apply(idx, depth, on, off, axis):
    return fns.get("OneHot").apply([Tensor(np.asarray(x)) for x in (idx, depth, on, off)],
                                   {"axis": axis})[0]


@pytest.mark.parametrize("ti", INDEX)
def test_one_hot_is_tensorflows_bit_for_bit(ti):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(61)
    edges = np.concatenate([edge_values(ti), np.arange(-2, 6)]).astype(DTYPES[ti]) \
        if ti.startswith("int") else np.concatenate([edge_values(ti), np.arange(6)]).astype(DTYPES[ti])
    for dt in VALUE_DTYPES:
        on, off = (random_array(dt, 2, rng).astype(DTYPES[dt]))
        for shape in SHAPES:
            idx = rng.choice(edges, size=shape).astype(DTYPES[ti])
            for depth in (0, 1, 3, 5):
                for axis in [-1] + list(range(len(shape) + 1)):
                    want = tf.raw_ops.OneHot(indices=tf.constant(idx), depth=np.int32(depth),
                                             on_value=tf.constant(on), off_value=tf.constant(off),
                                             axis=axis).numpy()
                    got = apply(idx, np.int32(depth), on, off, axis)
                    assert isinstance(got, Tensor), (ti, dt, shape, depth, axis, got)
                    assert got.array.dtype == want.dtype and got.array.shape == want.shape
                    assert got.array.tobytes() == want.tobytes(), (ti, dt, idx, depth, axis)


@pytest.mark.parametrize("case", ["axis_high", "axis_minus_two", "depth_negative", "depth_vector",
                                  "on_vector"])
def test_bad_arguments_fail_as_tensorflow_fails(case):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    idx = np.array([0, 2, 1], np.int32)
    depth, on, off, axis = np.int32(3), np.float32(1), np.float32(0), -1
    if case == "axis_high":
        axis = 2
    elif case == "axis_minus_two":
        axis = -2
    elif case == "depth_negative":
        depth = np.int32(-1)
    elif case == "depth_vector":
        depth = np.array([3], np.int32)
    else:
        on = np.array([1], np.float32)
    got = apply(idx, depth, on, off, axis)
    assert isinstance(got, Error) and got.reason == "shape-mismatch", got
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.raw_ops.OneHot(indices=tf.constant(idx), depth=tf.constant(depth),
                          on_value=tf.constant(on), off_value=tf.constant(off), axis=axis)


def test_dtypes_and_the_size_budget_numpy_only():
    on, off = np.float32(1), np.float32(0)
    assert apply(np.array([0], np.int16), np.int32(2), on, off, -1).reason == "no-kernel"
    assert apply(np.array([0], np.int32), np.int64(2), on, off, -1).reason == "no-kernel"
    assert apply(np.array([0], np.int32), np.int32(2), on, np.float64(0), -1).reason \
        == "dtype-mismatch"
    with pytest.raises(fns.BudgetExceeded, match="tensor size limit"):
        apply(np.zeros(1 << 12, np.int32), np.int32(1 << 13), on, off, -1)


def test_graph_import_and_an_index_dtype_refused_by_name():
    def graph(ti):
        return [placeholder("i", (3,), ti), const("d", 4, "DT_INT32"), const("on", 1.0),
                const("off", 0.0), node("o", "OneHot", ["i", "d", "on", "off"],
                                        TI={"type": ti}, axis={"i": 0})]
    p = import_graph({"node": graph("DT_INT64")}, ["o"], []).program
    (o,) = [n for n in p.nodes if n.op == "OneHot"]
    assert o.attrs["axis"] == 0
    with pytest.raises(GraphImportError, match="TI must be one of"):
        import_graph({"node": graph("DT_INT16")}, ["o"], [])
