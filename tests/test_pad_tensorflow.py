"""Pad and PadV2's numpy models (oracle/opdefs/array.py) against
TensorFlow's CPU kernels, bit for bit: random bit patterns of every dtype
(NaN payloads, signed zeros and subnormals copied), paddings of int32 and
int64 including zeros and empty tensors, PadV2's constant a NaN with a
payload or -0.0; paddings that are not a [rank, 2] matrix or are negative,
and PadV2's non-scalar constant, fail as TensorFlow's kernels do (an error
value); a rank past 6 is left to TensorFlow's kernel, a result past the
element budget is refused.  More shapes under the `nightly` Hypothesis
profile; the TensorFlow comparisons are skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, random_array

from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
SHAPES = [(), (0,), (5,), (2, 0, 3), (3, 4), (2, 3, 4)] + (
    [(1, 2, 1, 2, 1), (2, 1, 2, 1, 2, 1), (17,)] if NIGHTLY else [])
DTYPE_NAMES = list(DTYPES) if NIGHTLY else ["float32", "bfloat16", "float16", "float64", "int8",
                                            "uint64", "bool"]
TRIALS = 6 if NIGHTLY else 2


def apply(op, *arrays):
    return fns.get(op).apply([Tensor(np.asarray(a)) for a in arrays], {})[0]


@pytest.mark.parametrize("dt", DTYPE_NAMES)
def test_pad_and_pad_v2_are_tensorflows_bit_for_bit(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    rng = np.random.default_rng(43)
    d = DTYPES[dt]
    for shape in SHAPES:
        a = random_array(dt, int(np.prod(shape)), rng).reshape(shape).astype(d)
        for trial in range(TRIALS):
            index = (np.int32, np.int64)[trial % 2]
            pads = rng.integers(0, 3, size=(len(shape), 2)).astype(index)
            want = tf.raw_ops.Pad(input=tf.constant(a), paddings=tf.constant(pads)).numpy()
            got = apply("Pad", a, pads)
            assert isinstance(got, Tensor), (dt, shape, pads, got)
            assert got.array.dtype == want.dtype and got.array.shape == want.shape
            assert got.array.tobytes() == want.tobytes(), (dt, a, pads, got, want)
            value = random_array(dt, 1, rng).astype(d).reshape(())
            want = tf.raw_ops.PadV2(input=tf.constant(a), paddings=tf.constant(pads),
                                    constant_values=tf.constant(value)).numpy()
            got = apply("PadV2", a, pads, value)
            assert got.array.tobytes() == want.tobytes(), (dt, a, pads, value, got, want)


BAD = [np.array([[0, 0], [-1, 0]], np.int32), np.array([[0, 0, 0], [1, 0, 0]], np.int32),
       np.array([[0, 0]], np.int32), np.array([0, 0, 1, 1], np.int32)]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_paddings_fail_as_tensorflow_fails(k):
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = apply("Pad", a, BAD[k])
    assert isinstance(got, Error) and got.reason == "shape-mismatch", got
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.raw_ops.Pad(input=tf.constant(a), paddings=tf.constant(BAD[k]))


def test_pad_v2_wants_a_scalar_of_the_inputs_dtype():
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    pads = np.array([[1, 0], [0, 1]], np.int32)
    got = apply("PadV2", a, pads, np.array([1.0], np.float32))
    assert isinstance(got, Error) and got.reason == "shape-mismatch"
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.PadV2(input=tf.constant(a), paddings=tf.constant(pads),
                         constant_values=tf.constant([1.0]))
    got = apply("PadV2", a, pads, np.float64(1.0))
    assert isinstance(got, Error) and got.reason == "dtype-mismatch"


def test_ranks_the_kernel_does_not_pad_and_huge_results_numpy_only():
    # (past rank 6 the kernel pads only what merging adjacent unpadded axes
    # brings to rank 6 or less, and forwards what it does not pad: the
    # review's reproducers; past 8, nothing)
    alternate = np.array([[1, 0], [0, 0]] * 3 + [[1, 0]], np.int32)
    with kernels.use(False), pytest.raises(fns.CannotRun, match="rank 7"):
        apply("Pad", np.zeros((2,) * 7, np.float32), alternate)
    with kernels.use(False), pytest.raises(fns.CannotRun, match="rank 9"):
        apply("Pad", np.zeros((1,) * 9, np.float32), np.zeros((9, 2), np.int32))
    with kernels.use(False):
        got = apply("Pad", np.zeros((1,) * 7, np.float32), np.zeros((7, 2), np.int32))
    assert got.array.shape == (1,) * 7
    with pytest.raises(fns.BudgetExceeded, match="tensor size limit"):
        apply("Pad", np.zeros((2, 3), np.float32), np.array([[2 ** 31 - 1, 0], [0, 0]], np.int32))
    got = apply("Pad", np.float32(-0.0), np.zeros((0, 2), np.int64))
    assert got.array.shape == () and got.array.tobytes() == np.float32(-0.0).tobytes()


def test_graph_import_makes_the_functions():
    nodes = [placeholder("x", (2, 3), "DT_FLOAT"), const("p", [[1, 0], [0, 2]], "DT_INT32"),
             const("v", 7.0), node("a", "Pad", ["x", "p"], Tpaddings={"type": "DT_INT32"}),
             node("b", "PadV2", ["x", "p", "v"], Tpaddings={"type": "DT_INT32"})]
    p = import_graph({"node": nodes}, ["a", "b"], []).program
    ops = {n.op for n in p.nodes}
    assert {"Pad", "PadV2"} <= ops and not any(o.startswith("tf.") for o in ops)


def test_ranks_7_and_8_are_padded_where_the_kernel_pads_them():
    """Random paddings of rank-7 and rank-8 inputs: where TensorFlow's kernel
    pads (nothing to pad, or adjacent unpadded axes merged to rank 6 or
    less) the model gives its bits; where the kernel fails ("Only ranks up
    to 6 supported") the model leaves it to the kernel (CannotRun)."""
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    rng = np.random.default_rng(67)
    padded = refused = 0
    for trial in range(24 * TRIALS):
        rank = 7 + trial % 2
        shape = tuple(int(d) for d in rng.integers(1, 3, size=rank))
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        p = np.zeros((rank, 2), np.int32)
        for ax in rng.choice(rank, size=int(rng.integers(0, rank + 1)), replace=False):
            p[ax] = rng.integers(0, 2, size=2)
        try:
            want = tf.raw_ops.Pad(input=tf.constant(a), paddings=tf.constant(p)).numpy()
        except tf.errors.InvalidArgumentError:
            want = None
        with kernels.use(False):
            if want is None:
                with pytest.raises(fns.CannotRun):
                    apply("Pad", a, p)
                refused += 1
                continue
            got = apply("Pad", a, p)
        assert got.array.shape == want.shape and got.array.tobytes() == want.tobytes(), (shape, p)
        padded += 1
    assert padded and refused
