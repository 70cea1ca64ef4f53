"""All and Any's numpy models (oracle/opdefs/math.py) against TensorFlow's
CPU kernels: every set of axes (negative ones too), keep_dims, empty
tensors (All of nothing true, Any false), scalars; an axis out of range or
given twice is an error value as TensorFlow's kernel fails; a non-bool
tensor has no kernel.  Graph import keeps axes computed at run time as the
uninterpreted tf.All/2/1.  More shapes under the `nightly` Hypothesis
profile; the TensorFlow comparisons are skipped without TensorFlow."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Error, Tensor

from axes_support import axes_of
from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
SHAPES = [(), (0,), (5,), (2, 0, 3), (3, 4), (2, 3, 4)] + ([(6, 5), (2, 2, 2, 3), (33,)]
                                                           if NIGHTLY else [])
TRIALS = 10 if NIGHTLY else 3


def model(op, a, axes, keep_dims):
    return fns.get(op).apply([Tensor(a)], {"axes": list(axes), "keep_dims": keep_dims})[0]


@pytest.mark.parametrize("op", ["All", "Any"])
def test_all_and_any_are_tensorflows(op):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(37)
    for shape in SHAPES:
        arrays = [np.zeros(shape, bool), np.ones(shape, bool)] + [
            rng.random(shape) < p for p in (0.2, 0.5, 0.9) for _ in range(TRIALS)]
        for a in arrays:
            for axes in axes_of(len(shape)):
                for keep in (False, True):
                    want = getattr(tf.raw_ops, op)(input=tf.constant(a),
                                                   axis=tf.constant(axes, tf.int32),
                                                   keep_dims=keep).numpy()
                    got = model(op, a, axes, keep)
                    assert isinstance(got, Tensor), (op, shape, axes, got)
                    assert got.array.dtype == want.dtype and got.array.shape == want.shape
                    assert got.array.tobytes() == want.tobytes(), (op, a, axes, got, want)


@pytest.mark.parametrize("axes", [[2], [-3], [0, 0], [1, -1]])
@pytest.mark.parametrize("op", ["All", "Any"])
def test_a_bad_axis_is_an_error_as_tensorflow_fails(op, axes):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    a = np.array([[True, False, True], [True, True, True]])
    assert isinstance(model(op, a, axes, False), Error)
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        getattr(tf.raw_ops, op)(input=tf.constant(a), axis=tf.constant(axes, tf.int32),
                                keep_dims=False)


def test_the_empty_reductions_and_the_dtype_numpy_only():
    e = np.zeros((2, 0), bool)
    assert model("All", e, [1], False).array.tolist() == [True, True]
    assert model("Any", e, [1], False).array.tolist() == [False, False]
    assert model("All", np.array([1, 0], np.int32), [0], False).reason == "no-kernel"


def test_graph_import_models_constant_axes_and_keeps_computed_ones_uninterpreted():
    nodes = [placeholder("x", (2, 3), "DT_BOOL"), const("ax", [1], "DT_INT32"),
             node("r", "All", ["x", "ax"], T=None, Tidx={"type": "DT_INT32"},
                  keep_dims={"b": False})]
    p = import_graph({"node": nodes}, ["r"], []).program
    ops = {n.op for n in p.nodes}
    assert "All" in ops and not any(o.startswith("tf.") for o in ops)
    nodes[1] = placeholder("ax", (1,), "DT_INT32")
    p = import_graph({"node": nodes}, ["r"], []).program
    assert "tf.All/2/1" in {n.op for n in p.nodes}
