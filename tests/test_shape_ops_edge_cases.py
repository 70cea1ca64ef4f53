"""The array family's models on the cases where they differed from
TensorFlow 2.21's CPU kernels (measured):

* a result of rank 0 came back of shape [1] (np.ascontiguousarray makes a
  0-d array 1-d): Unpack of a vector (tf.unstack: every part is a scalar),
  Slice, BroadcastTo and Transpose of a scalar;
* Squeeze with a dimension named twice (as 0 and 0, or as 2 and -1) failed;
  TensorFlow squeezes it once;
* Range of int8, int16 and the unsigned integers ran; TensorFlow has no
  kernel for them (its CPU Range is int32, int64 and the floats).

The first tests hold the measured results without TensorFlow; the last one
compares with the kernels (skipped without TensorFlow)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Error, Tensor
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)


def run(name: str, *arrays, **attrs):
    out = fns.get(name).apply([Tensor(np.asarray(a)) for a in arrays], attrs)[0]
    return out.reason if isinstance(out, Error) else out.array


def i32(v) -> np.ndarray:
    return np.asarray(v, np.int32)


def test_unpacking_a_vector_gives_scalars():
    v = i32([4, 5, 6])
    for k in range(3):
        r = run("UnpackPart", v, axis=0, num=3, index=k)
        assert r.shape == () and int(r) == 4 + k
    r = run("UnpackPart", i32([[1, 2]]), axis=-1, num=2, index=1)
    assert r.shape == (1,) and r.tolist() == [2]


def test_slice_broadcast_and_transpose_of_a_scalar_are_scalars():
    s = i32(3)
    empty = np.zeros(0, np.int32)
    assert run("Slice", s, empty, empty).shape == ()
    assert run("BroadcastToShape", s, empty).shape == ()
    assert run("Transpose", s, empty).shape == ()
    assert run("BroadcastToShape", s, i32([2])).tolist() == [3, 3]


def test_squeeze_takes_a_dimension_named_twice_once():
    a = np.zeros((1, 3, 1), np.int32)
    assert run("Squeeze", a, squeeze_dims=[0, 0]).shape == (3, 1)
    assert run("Squeeze", a, squeeze_dims=[2, -1]).shape == (1, 3)
    assert run("Squeeze", a, squeeze_dims=[1]) == "shape-mismatch"   # not of length 1
    assert run("Squeeze", i32(5), squeeze_dims=[0]) == "shape-mismatch"


@pytest.mark.parametrize("dt", ["int8", "int16", "uint8", "uint16", "uint32", "uint64"])
def test_range_of_a_narrow_or_unsigned_integer_has_no_kernel(dt):
    d = DTYPES[dt]
    assert run("Range", np.array(0, d), np.array(5, d), np.array(1, d)) == "no-kernel"


@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_range_of_int32_and_int64_still_runs(dt):
    d = DTYPES[dt]
    assert run("Range", np.array(0, d), np.array(5, d), np.array(2, d)).tolist() == [0, 2, 4]


def test_the_cases_are_tensorflows_kernels():
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    raw = tf.raw_ops

    def kernel(fn):
        try:
            with tf.device("/CPU:0"):
                return fn().numpy()
        except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError):
            return "error"

    def model(name, *arrays, **attrs):
        r = run(name, *arrays, **attrs)
        return "error" if isinstance(r, str) else r

    s, v, e = i32(3), i32([4, 5, 6]), np.zeros(0, np.int32)
    a = np.zeros((1, 3, 1), np.int32) + i32([[[1], [2], [3]]])
    cases = [
        (model("UnpackPart", v, axis=0, num=3, index=1), lambda: raw.Unpack(value=v, num=3)[1]),
        (model("Slice", s, e, e), lambda: raw.Slice(input=s, begin=e, size=e)),
        (model("BroadcastToShape", s, e), lambda: raw.BroadcastTo(input=s, shape=e)),
        (model("Transpose", s, e), lambda: raw.Transpose(x=s, perm=e)),
        (model("Squeeze", a, squeeze_dims=[0, 0]), lambda: raw.Squeeze(input=a, axis=[0, 0])),
        (model("Squeeze", a, squeeze_dims=[2, -1]), lambda: raw.Squeeze(input=a, axis=[2, -1])),
        (model("Squeeze", a, squeeze_dims=[0, -3, 2]),
         lambda: raw.Squeeze(input=a, axis=[0, -3, 2])),
    ]
    for dt in ("int8", "int16", "uint16", "uint32", "uint64", "int32", "int64"):
        d = DTYPES[dt]
        args = [np.array(x, d) for x in (1, 9, 3)]
        cases.append((model("Range", *args), lambda args=args, dt=dt: raw.Range(**{
            k: tf.constant(x, tf.as_dtype(dt)) for k, x in zip(("start", "limit", "delta"), args)})))
    for got, fn in cases:
        want = kernel(fn)
        if isinstance(want, str) and isinstance(got, str):
            assert got == want, (got, want)
        else:
            assert not isinstance(got, str) and not isinstance(want, str), (got, want)
            assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
            assert (got == want).all(), (got, want)
