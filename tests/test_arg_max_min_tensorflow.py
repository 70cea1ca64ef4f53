"""ArgMax and ArgMin's numpy models for integers and bool
(oracle/opdefs/math.py) against TensorFlow's CPU kernels: the first index
of the extreme (ties go to the first), every integer dtype's edge values,
every dimension (negative too, int32 and int64), each output_type; a
dimension out of range or not a scalar, a scalar input and an empty
reduction axis fail as TensorFlow's kernel does (an error value).  Floats
(NaN, ties of signed zeros) are left to TensorFlow's kernel.  More shapes
under the `nightly` Hypothesis profile; the TensorFlow comparisons are
skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values

from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
SHAPES = [(1,), (9,), (3, 7), (7, 3), (2, 0, 3)] + ([(2, 9, 3), (33,), (4, 4, 4)]
                                                    if NIGHTLY else [])
TRIALS = 10 if NIGHTLY else 3


def apply(op, a, dim, out="int64"):
    return fns.get(op).apply([Tensor(np.asarray(a)), Tensor(np.asarray(dim))],
                             {"output_type": out})[0]


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_integer_arg_extremes_are_tensorflows(op, dt):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(67)
    e = edge_values(dt)
    for shape in SHAPES:
        for _ in range(TRIALS):
            a = rng.choice(e[:3] if _ % 2 else e, size=shape).astype(DTYPES[dt])   # ties often
            for d in range(-len(shape), len(shape)):
                if shape[d] == 0:
                    continue
                outs = ("int16", "uint16", "int32", "int64") if op == "ArgMax" else ("int32", "int64")
                out = outs[(d + _) % len(outs)]
                index = np.int64 if d % 2 else np.int32
                want = getattr(tf.raw_ops, op)(input=tf.constant(a), dimension=tf.constant(index(d)),
                                               output_type=tf.as_dtype(out)).numpy()
                got = apply(op, a, index(d), out)
                assert isinstance(got, Tensor), (op, dt, shape, d, got)
                assert got.array.dtype == want.dtype and got.array.shape == want.shape
                assert got.array.tobytes() == want.tobytes(), (op, dt, a, d, got, want)


@pytest.mark.parametrize("case", ["high", "low", "vector", "scalar_input", "empty_axis"])
def test_bad_dimensions_fail_as_tensorflow_fails(case):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    a, d = np.array([[3, 1, 3], [0, 5, 5]], np.int32), np.int32(0)
    if case == "high":
        d = np.int32(2)
    elif case == "low":
        d = np.int32(-3)
    elif case == "vector":
        d = np.array([1], np.int32)
    elif case == "scalar_input":
        a = np.int32(3)
    else:
        a = np.zeros((0, 3), np.int32)
    got = apply("ArgMax", a, d)
    assert isinstance(got, Error) and got.reason == "shape-mismatch", got
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.ArgMax(input=tf.constant(a), dimension=tf.constant(d))


def test_floats_are_left_to_the_kernel():
    tf = pytest.importorskip("tensorflow", reason="compares the kernel path with TensorFlow")
    a = np.array([[np.nan, 1.0, -0.0], [0.0, -0.0, 2.0]], np.float32)
    with kernels.use(False), pytest.raises(fns.CannotRun, match="ArgMin"):
        apply("ArgMin", a, np.int32(1))
    with kernels.use(True), kernels.record() as used:
        got = apply("ArgMin", a, np.int32(1), "int32")
    assert used
    want = tf.raw_ops.ArgMin(input=tf.constant(a), dimension=1, output_type=tf.int32).numpy()
    assert got.array.tobytes() == want.tobytes()


def test_graph_import_and_an_output_type_argmin_lacks():
    nodes = [placeholder("x", (2, 3), "DT_INT32"), const("d", 1, "DT_INT32"),
             node("m", "ArgMax", ["x", "d"], T="DT_INT32", Tidx={"type": "DT_INT32"},
                  output_type={"type": "DT_INT32"})]
    p = import_graph({"node": nodes}, ["m"], []).program
    (m,) = [n for n in p.nodes if n.op == "ArgMax"]
    assert m.attrs["output_type"] == "int32"
    from tfsem.graphdef.importer import GraphImportError
    nodes[2] = node("m", "ArgMin", ["x", "d"], T="DT_INT32", Tidx={"type": "DT_INT32"},
                    output_type={"type": "DT_INT16"})
    with pytest.raises(GraphImportError, match="output_type must be one of int32, int64"):
        import_graph({"node": nodes}, ["m"], [])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_an_output_type_left_out_is_its_opdef_default(op):
    """A SavedModel strips an attribute equal to its OpDef default
    (output_type int64): TensorFlow fills it in, and so does graph import
    (the model's build once refused such a node as missing the attribute)."""
    nodes = [placeholder("x", (2, 3), "DT_INT32"), const("d", 1, "DT_INT32"),
             node("m", op, ["x", "d"], T="DT_INT32", Tidx={"type": "DT_INT32"})]
    p = import_graph({"node": nodes}, ["m"], []).program
    (m,) = [n for n in p.nodes if n.op == op]
    assert m.attrs["output_type"] == "int64"
