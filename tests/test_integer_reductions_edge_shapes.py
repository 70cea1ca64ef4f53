"""The integer reductions (Sum, Mean, Max, Min), BiasAdd and BiasAddGrad on
the shapes at the edge: scalars, empty tensors, a last axis of length 0,
rank 1, every axis list (negative, duplicated, out of range, empty) and
keep_dims, against TensorFlow 2.21's CPU kernels.  Three models used to
differ (measured):

* a reduction of a scalar along 0 or -1 gave the scalar; TensorFlow fails
  ("Invalid reduction dimension 0 for input with 0 dimensions");
* the Mean of no elements was the `division-by-zero` error; TensorFlow gives
  0 (an empty reduction is filled with its reducer's identity, for an
  integer Mean NumTraits<T>::quiet_NaN() = 0);
* BiasAdd and BiasAddGrad of a rank-1 value ran; TensorFlow fails ("Input
  tensor must be at least 2D"); BiasAddGrad of a [3, 0] tensor failed, and
  TensorFlow gives an empty [0] result.

The first tests state the measured results without TensorFlow; the last one
compares the whole grid with the kernels (skipped without TensorFlow)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Error, Tensor
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
REDUCTIONS = {"Sum": "Sum", "Mean": "Mean", "Max": "ReduceMax", "Min": "ReduceMin"}


def run(name: str, *arrays, **attrs):
    """The model's result: an array, or the error value's kind."""
    out = fns.get(name).apply([Tensor(np.asarray(a)) for a in arrays], attrs)[0]
    return out.reason if isinstance(out, Error) else out.array


def edge_values(dt: str) -> np.ndarray:
    i = np.iinfo(DTYPES[dt])
    v = {int(i.min), int(i.min) + 1, 0, 1, 2, 7, int(i.max) - 1, int(i.max)}
    if i.min < 0:
        v |= {-1, -7}
    return np.array(sorted(v), dtype=DTYPES[dt])


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_a_scalar_has_no_axis_to_reduce(op):
    x = np.array(5, np.int32)
    for axes in ([0], [-1], [1]):
        assert run(REDUCTIONS[op], x, axes=axes, keep_dims=False) == "shape-mismatch", axes
    assert run(REDUCTIONS[op], x, axes=[], keep_dims=True).tolist() == 5


@pytest.mark.parametrize("dt", INTEGERS)
def test_the_mean_of_no_elements_is_zero(dt):
    for shape, axes, keep, want in (((0,), [0], False, ()), ((3, 0), [1], False, (3,)),
                                    ((3, 0), [1], True, (3, 1)), ((0, 4), [0, 1], False, ())):
        r = run("Mean", np.zeros(shape, DTYPES[dt]), axes=axes, keep_dims=keep)
        assert isinstance(r, np.ndarray) and r.dtype == DTYPES[dt], (shape, axes, r)
        assert r.shape == want and not r.any(), (shape, axes, r)
    # the reduction of an empty tensor along an axis of non-zero length is empty
    r = run("Mean", np.zeros((0, 4), DTYPES[dt]), axes=[1], keep_dims=False)
    assert r.shape == (0,)


def test_bias_add_and_its_gradient_need_rank_two():
    v = np.array([1, 2, 3], np.int32)
    assert run("BiasAdd", v, v) == "shape-mismatch"
    assert run("BiasAddGrad", v) == "shape-mismatch"
    r = run("BiasAddGrad", np.zeros((3, 0), np.int32))
    assert r.shape == (0,) and r.dtype == np.int32
    r = run("BiasAddGrad", np.zeros((0, 3), np.int64))
    assert r.tolist() == [0, 0, 0]
    m = np.array([[1, 2], [3, 4]], np.int32)
    assert run("BiasAdd", m, np.array([10, 20], np.int32)).tolist() == [[11, 22], [13, 24]]


SHAPES = [(), (0,), (5,), (3, 0), (0, 4), (1, 5), (2, 3, 4)]


def axes_lists(rank: int) -> list:
    out = [[]] + [[i] for i in range(-rank, rank)] + [[rank], [-rank - 1]]
    if rank >= 1:
        out.append([0, 0])
    if rank >= 2:
        out += [[0, 1], [1, 0], [0, -rank], [-1, 0, 1]]
    return out


def test_the_reductions_and_bias_ops_are_tensorflows_kernels():
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    raw = tf.raw_ops
    rng = np.random.default_rng(4)

    def kernel(fn, *arrays):
        try:
            with tf.device("/CPU:0"):
                return fn(*(tf.constant(a) for a in arrays)).numpy()
        except tf.errors.InvalidArgumentError:
            return "error"

    def model(name, *arrays, **attrs):
        r = run(name, *arrays, **attrs)
        return "error" if isinstance(r, str) else r

    bad, compared = [], 0

    def compare(what, got, want):
        nonlocal compared
        compared += 1
        same = (isinstance(got, str) and isinstance(want, str)) or (
            not isinstance(got, str) and not isinstance(want, str) and got.dtype == want.dtype
            and got.shape == want.shape and (got == want).all())
        if not same:
            bad.append((what, got, want))

    for dt in INTEGERS:
        e = edge_values(dt)
        for shape in SHAPES:
            x = e[rng.integers(0, len(e), int(np.prod(shape)))].reshape(shape)
            for axes in axes_lists(len(shape)):
                for keep in (False, True):
                    for op, name in REDUCTIONS.items():
                        want = kernel(lambda t, op=op: getattr(raw, op)(
                            input=t, axis=tf.constant(axes, tf.int32), keep_dims=keep), x)
                        compare((op, dt, shape, axes, keep),
                                model(name, x, axes=axes, keep_dims=keep), want)
            compare(("BiasAddGrad", dt, shape), model("BiasAddGrad", x),
                    kernel(lambda t: raw.BiasAddGrad(out_backprop=t), x))
            if shape:
                b = e[rng.integers(0, len(e), shape[-1])]
                compare(("BiasAdd", dt, shape), model("BiasAdd", x, b),
                        kernel(lambda p, q: raw.BiasAdd(value=p, bias=q), x, b))
    assert not bad, bad[:3]
    assert compared > 1000
