"""The run-time shape functions (oracle/opdefs/array.py) against TensorFlow's
eager CPU kernels, bit for bit, on edge values: negative axes, empty
tensors, masks, out-of-range indices (TensorFlow raises, tfsem gives an
error value).  Skipped without TensorFlow."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import Error, Tensor

tf = pytest.importorskip("tensorflow")


def ours(name, args, attrs=None):
    return fns.get(name).apply([Tensor(np.asarray(a)) for a in args], attrs or {})


def _tf_const(x):
    # explicit dtypes: raw_ops would turn some numpy arrays into int32 tensors
    if isinstance(x, list):
        return [_tf_const(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic)):
        return tf.constant(x, dtype=tf.as_dtype(x.dtype))
    return x


def theirs(op, **kw):
    try:
        with tf.device("/CPU:0"):
            r = op(**{k: _tf_const(v) for k, v in kw.items()})
    except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, ValueError):
        return None
    return [np.asarray(x) for x in (r if isinstance(r, (list, tuple)) else [r])]


def same(mine, ref):
    if ref is None:
        assert all(isinstance(m, Error) for m in mine), mine
        return
    assert len(mine) == len(ref)
    for m, r in zip(mine, ref):
        assert isinstance(m, Tensor), m
        assert m.array.dtype == r.dtype and m.array.shape == r.shape, (m, r)
        assert m.array.tobytes() == r.tobytes(), (m.array, r)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
E = np.zeros((2, 0, 3), dtype=np.int64)


@pytest.mark.parametrize("x", [X, E, np.float32(-0.0), np.zeros((0,), np.int8)])
def test_shape_size_rank(x):
    for t in ("int32", "int64"):
        same(ours("Shape", [x], {"out_type": t}), theirs(tf.raw_ops.Shape, input=x, out_type=t))
        same(ours("Size", [x], {"out_type": t}), theirs(tf.raw_ops.Size, input=x, out_type=t))
    same(ours("Rank", [x]), theirs(tf.raw_ops.Rank, input=x))


@pytest.mark.parametrize("s,l,d", [(0, 5, 1), (5, 0, -2), (0, 0, 1), (3, 10, 3), (0, 5, 0),
                                   (5, 0, 1), (0, 5, -1), (-7, 7, 4), (2**31 - 3, 2**31 - 1, 1)])
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_range(s, l, d, dt):
    a = [dt(s), dt(l), dt(d)]
    same(ours("Range", a), theirs(tf.raw_ops.Range, start=a[0], limit=a[1], delta=a[2]))


SS = [([0], [2], [1], {}), ([-1], [0], [-1], {}), ([1, 0], [2, 3], [1, 2], {}),
      ([0, 0, 0], [0, 0, 0], [1, 1, 1], {"begin_mask": 7, "end_mask": 7}),
      ([1], [2], [1], {"shrink_axis_mask": 1}), ([-1], [0], [1], {"shrink_axis_mask": 1}),
      ([5], [6], [1], {"shrink_axis_mask": 1}), ([0, 1], [0, 2], [1, 1], {"ellipsis_mask": 1}),
      ([0, 0], [1, 1], [1, 1], {"new_axis_mask": 1}), ([0], [0], [0], {}),
      ([0, 1, 0], [0, 2, 0], [1, 1, 1], {"ellipsis_mask": 1, "new_axis_mask": 4}),
      ([3], [-5], [-1], {}), ([-100], [100], [2], {}), ([0], [3], [1], {"end_mask": 1}),
      ([0, 0], [1, 1], [1, 1], {"ellipsis_mask": 3}), ([0, 0, 0, 0], [1, 1, 1, 1], [1] * 4, {}),
      ([1, 2], [2, 3], [1, 1], {"shrink_axis_mask": 2, "begin_mask": 1}),
      ([0], [1], [-1], {"shrink_axis_mask": 1})]


@pytest.mark.parametrize("b,e,s,masks", SS)
@pytest.mark.parametrize("x", [X, E, np.arange(5, dtype=np.int32)])
def test_strided_slice(x, b, e, s, masks):
    idx = [np.array(v, np.int32) for v in (b, e, s)]
    full = {k: masks.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                         "new_axis_mask", "shrink_axis_mask")}
    same(ours("StridedSlice", [x, *idx], full),
         theirs(tf.raw_ops.StridedSlice, input=x, begin=idx[0], end=idx[1], strides=idx[2],
                **full))


@pytest.mark.parametrize("b,sz", [([0, 0, 0], [-1, -1, -1]), ([1, 1, 1], [1, 2, 3]),
                                  ([0, 3, 0], [2, 0, 4]), ([0, 0, 0], [3, 1, 1]),
                                  ([-1, 0, 0], [1, 1, 1]), ([0, 0], [1, 1]),
                                  ([1, 2, 3], [-1, -1, -1]), ([0, 0, 0], [1, -2, 1])])
def test_slice(b, sz):
    for dt in (np.int32, np.int64):
        bb, ss = np.array(b, dt), np.array(sz, dt)
        same(ours("Slice", [X, bb, ss]), theirs(tf.raw_ops.Slice, input=X, begin=bb, size=ss))


@pytest.mark.parametrize("idx,axis", [([0, 2], 1), ([[1], [0]], 0), ([], 2), ([3], -1),
                                      (2, -3), ([4], 2), ([-1], 0), ([0], 3), ([0], -4)])
def test_gather(idx, axis):
    i = np.array(idx, np.int64 if axis == 2 else np.int32)
    a = np.int32(axis)
    same(ours("GatherV2", [X, i, a], {"batch_dims": 0}),
         theirs(tf.raw_ops.GatherV2, params=X, indices=i, axis=a))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3, 3])
def test_unpack(axis):
    num = X.shape[axis] if -3 <= axis < 3 else 2
    ref = theirs(tf.raw_ops.Unpack, value=X, num=num, axis=axis)
    mine = [ours("UnpackPart", [X], {"axis": axis, "num": num, "index": k})[0]
            for k in range(num)]
    same(mine, ref)


@pytest.mark.parametrize("dims", [[2, 3], [], [0, 4], [2, -1]])
def test_fill(dims):
    d, v = np.array(dims, np.int32), np.float32(-0.0)
    same(ours("FillDims", [d, v]), theirs(tf.raw_ops.Fill, dims=d, value=v))


@pytest.mark.parametrize("x,shape", [(np.arange(3, dtype=np.int8), [2, 3]),
                                     (np.float32(np.nan), [0, 2]),
                                     (np.arange(3, dtype=np.int8), [3, 2]),
                                     (np.ones((2, 1), np.float16), [2, 2, 4]),
                                     (np.ones((2, 1), np.float16), [4])])
def test_broadcast_to(x, shape):
    s = np.array(shape, np.int64)
    same(ours("BroadcastToShape", [x, s]), theirs(tf.raw_ops.BroadcastTo, input=x, shape=s))


@pytest.mark.parametrize("s0,s1", [([2, 3], [3]), ([1], [1]), ([], [2, 1]), ([4, 1, 3], [1, 5, 1]),
                                   ([2, 3], [4]), ([1, 1], [1]), ([0, 3], [1, 3]), ([0], [1])])
def test_broadcast_gradient_args(s0, s1):
    for dt in (np.int32, np.int64):
        a, b = np.array(s0, dt), np.array(s1, dt)
        same(ours("BroadcastGradientArgs", [a, b]),
             theirs(tf.raw_ops.BroadcastGradientArgs, s0=a, s1=b))


@pytest.mark.parametrize("case", [
    ([[0, 2], [1]], [[1., 2.], [3.]]),
    ([[0, 1], [1]], [[1., 2.], [-0.]]),
    ([[[0, 1]], [2]], [[[[1., 2.], [3., 4.]]], [[5., 6.]]]),
    ([[0], [-1]], [[1.], [2.]]),
    ([[0, 1], []], [[1., 2.], np.zeros((0,), np.float32)]),
])
def test_dynamic_stitch(case):
    idx = [np.array(i, np.int32) for i in case[0]]
    data = [np.array(d, np.float32) for d in case[1]]
    same(ours(f"DynamicStitch/{len(idx)}", [*idx, *data]),
         theirs(tf.raw_ops.DynamicStitch, indices=idx, data=data))


@pytest.mark.parametrize("perm", [[2, 0, 1], [0, 1, 2], [0, 0, 1], [0, 1], [-1, 0, 1], [3, 0, 1]])
def test_transpose(perm):
    p = np.array(perm, np.int32)
    same(ours("Transpose", [X, p]), theirs(tf.raw_ops.Transpose, x=X, perm=p))


@pytest.mark.parametrize("shape", [[4, 6], [-1], [-1, 2, 2], [5, -1], [-1, -1], [24, 0]])
def test_reshape_to(shape):
    s = np.array(shape, np.int64)
    same(ours("ReshapeTo", [X, s]), theirs(tf.raw_ops.Reshape, tensor=X, shape=s))


@pytest.mark.parametrize("axis", [0, -1, 3, -4, 4])
def test_expand_dims_at(axis):
    a = np.int32(axis)
    same(ours("ExpandDimsAt", [X, a]), theirs(tf.raw_ops.ExpandDims, input=X, axis=a))


@pytest.mark.parametrize("m", [[1, 2, 1], [0, 1, 2], [2, 2], [1, -1, 1]])
def test_tile_by(m):
    mm = np.array(m, np.int32)
    same(ours("TileBy", [X, mm]), theirs(tf.raw_ops.Tile, input=X, multiples=mm))


XI = np.array([[2**31 - 1, 5, -3], [1, -2**31, 7]], np.int32)


@pytest.mark.parametrize("axes", [[0], [1], [-1], [0, 1], [], [1, 1], [2], 0])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions_along(axes, keep):
    a = np.array(axes, np.int32)
    for ours_name, op in (("SumAlong", tf.raw_ops.Sum), ("MeanAlong", tf.raw_ops.Mean),
                          ("ReduceMaxAlong", tf.raw_ops.Max), ("ReduceMinAlong", tf.raw_ops.Min)):
        same(ours(ours_name, [XI, a], {"keep_dims": keep}),
             theirs(op, input=XI, axis=a, keep_dims=keep))


def test_strided_slice_random_specs():
    # seeded random specs (100; 2000 in the nightly profile): every mask
    # combination on ranks 0-3, indices past both ends, negative strides
    rng = np.random.default_rng(30)
    for _ in range(2000 if os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly" else 100):
        rank = int(rng.integers(0, 4))
        x = np.arange(int(np.prod(s := tuple(rng.integers(0, 4, rank)))),
                      dtype=np.int16).reshape(s)
        n = int(rng.integers(1, 5))
        b, e = (rng.integers(-5, 6, n).astype(np.int64) for _ in range(2))
        st = rng.choice([-3, -2, -1, 1, 2, 3], n).astype(np.int64)
        masks = {k: int(rng.integers(0, 1 << n)) for k in ("begin_mask", "end_mask",
                                                            "new_axis_mask", "shrink_axis_mask")}
        masks["ellipsis_mask"] = int(1 << rng.integers(0, n)) if rng.random() < 0.3 else 0
        same(ours("StridedSlice", [x, b, e, st], masks),
             theirs(tf.raw_ops.StridedSlice, input=x, begin=b, end=e, strides=st, **masks))


def test_strided_slice_grad_random_specs():
    rng = np.random.default_rng(31)
    for _ in range(2000 if os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly" else 100):
        rank = int(rng.integers(0, 4))
        shape = rng.integers(0, 4, rank).astype(np.int32)
        n = int(rng.integers(1, 5))
        b, e = (rng.integers(-5, 6, n).astype(np.int32) for _ in range(2))
        st = rng.choice([-2, -1, 1, 2], n).astype(np.int32)
        masks = {k: int(rng.integers(0, 1 << n)) for k in ("begin_mask", "end_mask",
                                                            "new_axis_mask", "shrink_axis_mask")}
        masks["ellipsis_mask"] = int(1 << rng.integers(0, n)) if rng.random() < 0.3 else 0
        x = np.zeros(tuple(shape), np.float32)
        fwd = theirs(tf.raw_ops.StridedSlice, input=x, begin=b, end=e, strides=st, **masks)
        if fwd is None:
            continue
        dy = (np.arange(fwd[0].size, dtype=np.float32) - 0.0).reshape(fwd[0].shape) * -1
        same(ours("StridedSliceGrad", [shape, b, e, st, dy], masks),
             theirs(tf.raw_ops.StridedSliceGrad, shape=shape, begin=b, end=e, strides=st, dy=dy,
                    **masks))
        bad = np.zeros(fwd[0].shape + (1,), np.float32)
        same(ours("StridedSliceGrad", [shape, b, e, st, bad], masks),
             theirs(tf.raw_ops.StridedSliceGrad, shape=shape, begin=b, end=e, strides=st,
                    dy=bad, **masks))


def test_a_tf_function_computing_shapes_imports_and_runs_as_tensorflow(tmp_path):
    # the graph TensorFlow itself writes for run-time shapes (tf.shape,
    # tf.range over tf.rank, slicing, stacking, gathering, broadcasting),
    # imported and run by tfsem: the same values as TensorFlow's run
    from tfsem.graphdef import import_path
    from tfsem.oracle.dispatch import outcome_set

    @tf.function
    def f(x, y):
        s = tf.shape(x)
        flat = tf.reshape(x, tf.concat([[-1], s[-1:]], 0))
        total = tf.reduce_sum(x, axis=tf.range(tf.rank(x)))
        rows = tf.gather(flat, tf.range(s[0] - 1, -1, -1), axis=0)
        big = tf.broadcast_to(y, tf.stack([s[0], s[1], tf.size(y)]))
        parts = tf.unstack(tf.transpose(x, tf.constant([1, 0, 2])))
        r0, r1 = tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(x), s1=tf.shape(y))
        filled = tf.fill(s[1:], total)
        sn = tf.shape_n([flat, big, x], out_type=tf.int64)
        return (flat, total, rows, big, parts[-1], r0, r1, filled, tf.tile(y, s[2:]), *sn,
                tf.raw_ops.Size(input=rows, out_type=tf.int64), tf.raw_ops.Rank(input=big))

    x = np.arange(-12, 12, dtype=np.int32).reshape(2, 3, 4) * 178956970
    y = np.array([1, -2, 3, 2**31 - 1], np.int32)
    cf = f.get_concrete_function(tf.TensorSpec(x.shape, tf.int32), tf.TensorSpec(y.shape, tf.int32))
    path = tmp_path / "shapes.pb"
    path.write_bytes(cf.graph.as_graph_def().SerializeToString())
    fetches = [t.op.name for t in cf.outputs]
    p = import_path(path, fetches).program
    assert {"ReshapeTo", "SumAlong", "Range", "StridedSlice", "GatherV2", "BroadcastToShape",
            "Transpose", "UnpackPart", "BroadcastGradientArgs", "FillDims",
            "TileBy", "Shape", "Size", "Rank"} <= {n.op for n in p.nodes}
    feeds = {n: Tensor(v) for n, v in zip([t.op.name for t in cf.inputs], (x, y))}
    (o,) = outcome_set(p, feeds, {}, "atomic", "outputs").as_dict(10)
    got = dict(o.outputs)
    want = [np.asarray(t) for t in f(tf.constant(x), tf.constant(y))]
    assert set(got) == set(fetches)
    for name, w in zip(fetches, want):
        m = got[name]
        assert m.array.dtype == w.dtype and m.array.shape == w.shape and \
            m.array.tobytes() == w.tobytes(), (name, m, w)


@pytest.mark.parametrize("pshape,ishape,axis,bd", [
    ((2, 3, 4), (2, 5), 1, 1), ((2, 3, 4), (2, 5), 2, 1), ((2, 3, 4), (2, 3), 2, 2),
    ((2, 3, 4), (2, 5), 2, -1), ((2, 3, 4), (3, 5), 1, 1), ((2, 3, 4), (2, 5), 0, 1),
    ((0, 3), (0, 2), 1, 1), ((2, 3), (2,), 1, 1), ((2, 3), (2, 2), -1, 1)])
def test_gather_batch_dims(pshape, ishape, axis, bd):
    rng = np.random.default_rng(7)
    params = np.arange(int(np.prod(pshape)), dtype=np.float32).reshape(pshape) - 5
    ax = axis % len(pshape)
    n = pshape[ax]
    indices = rng.integers(0, max(n, 1), ishape).astype(np.int32)
    a = np.int32(axis)
    same(ours("GatherV2", [params, indices, a], {"batch_dims": bd}),
         theirs(tf.raw_ops.GatherV2, params=params, indices=indices, axis=a, batch_dims=bd))


@pytest.mark.parametrize("axis", [np.int32(0), np.int32(1), np.int32(-1), np.int64(-2),
                                  np.array([1], np.int32), np.int32(2), np.int64(-3),
                                  np.array([0, 1], np.int32)])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 0), (2, 3)), ((0, 3), (4, 3)),
                                    ((2, 3), (3, 3)), ((2, 3), (2,))])
def test_concat_with_a_run_time_axis(shapes, axis):
    # ConcatV2's chain of ConcatAxisAt (axis an operand), against TensorFlow's
    # ConcatV2 given the axis as a tensor; NaN and signed zeros travel bit for bit
    a = np.full(shapes[0], -0.0, np.float32)
    b = np.full(shapes[1], np.nan, np.float32)
    if b.size:
        b.reshape(-1)[0] = 1e-45
    same(ours("ConcatAxisAt", [a, b, axis]),
         theirs(tf.raw_ops.ConcatV2, values=[a, b], axis=axis))
