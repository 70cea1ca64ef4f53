"""Shapes computed at run time: TensorFlow's shape and index ops as functions.

`Shape`, `Size`, `Rank`, `Range`, `StridedSlice`, `Slice`, `GatherV2`,
`UnpackPart`, `FillDims`, `BroadcastToShape`, `BroadcastGradientArgs`,
`DynamicStitch/N`, and the forms of `Reshape`, `Transpose`, `ExpandDims`,
`Tile` and the reductions whose shape, permutation, axis, multiples or axes
are a tensor operand (an int32/int64 tensor like any other) instead of a
constant attribute.  Each follows TensorFlow's CPU kernel (array_ops.cc,
strided_slice_op.cc, gather_op.cc, bcast.h, ...): the result, and the
arguments it refuses.  A refused argument gives an error value: a shape
that does not fit gives `shape-mismatch` (as the constant-operand forms in
functions.py do); so does an index or value out of range (TensorFlow's
InvalidArgumentError: one error value for all of them, so that folding a
computed operand into a constant never changes the error).

These functions take arguments of different dtypes (the tensor and its int32
shape: `mixed_dtypes`) and choose their result's dtype (`casts`).  The
checker has no encoding of them: in proofs their results are opaque (an
uninterpreted function of the arguments, whose kind, shape included, is
unknown), see docs/semantics.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functions as fns
from .functions import (TENSORFLOW, CannotRun, OpError, ShapeError, _bool_attr, _dtype_attr,
                        _int_attr)

INDEX_DTYPES = ("int32", "int64")


def _op(name: str, n_in: int, n_out: int = 1, **kw: Any):
    register = fns.function(name, n_in, n_out, batched=False, family=TENSORFLOW, casts=True,
                            mixed_dtypes=True, **kw)

    def deco(impl):
        def on_host(xp, args, attrs):
            # index arithmetic on the host: a device array module (cupy) gets
            # its arrays back from numpy
            if xp is np:
                return impl(np, args, attrs)
            host = tuple(a if a is None or isinstance(a, np.ndarray) else a.get() for a in args)
            return tuple(xp.asarray(r) for r in impl(np, host, attrs))
        on_host.__doc__ = impl.__doc__
        register(on_host)
        return impl
    return deco


def _index(a, what: str, *, rank: int | None = None):
    """An int32/int64 operand as a list of Python ints."""
    if a.dtype.name not in INDEX_DTYPES:
        raise OpError("no-kernel", f"{what} must be int32 or int64, not {a.dtype.name}")
    if rank is not None and a.ndim != rank:
        raise _invalid(f"{what} must have rank {rank}")
    return [int(x) for x in a.reshape(-1)]


def _invalid(msg: str) -> ShapeError:
    # TensorFlow's InvalidArgumentError on these ops is the error value
    # `shape-mismatch`, the one the constant-operand forms (functions.py)
    # give: a graph whose shape computation a pass folds into a constant
    # must fail with the same error value
    return ShapeError(msg)


def _out_type(attrs) -> np.dtype:
    return np.dtype(attrs.get("out_type", "int32"))


_OUT = {"out_type": _dtype_attr}


@_op("Shape", 1, attrs=_OUT)
def _shape(xp, args, attrs):
    """The input's shape as a 1-D tensor of `out_type` (int32 or int64)."""
    return (np.array(args[0].shape, dtype=_out_type(attrs)),)


@_op("Size", 1, attrs=_OUT)
def _size(xp, args, attrs):
    """The input's number of elements, a scalar of `out_type`."""
    return (np.array(args[0].size, dtype=_out_type(attrs)),)


@_op("Rank", 1)
def _rank(xp, args, attrs):
    """The input's rank, an int32 scalar."""
    return (np.array(args[0].ndim, dtype=np.int32),)


@_op("Range", 3, tf_kernel=lambda a, attrs: ("Range", list(a), {}))
def _range(xp, args, attrs):
    """start, start+delta, ... up to (not including) limit; integer dtypes:
    the size is (|limit-start| + |delta| - 1) / |delta| (range_op.cc)."""
    start, limit, delta = args
    for a, what in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if a.ndim != 0:
            raise _invalid(f"Range: {what} must be a scalar")
    if len({start.dtype, limit.dtype, delta.dtype}) > 1:
        raise ShapeError("Range: operands of different dtypes")
    if start.dtype.kind not in "iu":
        raise CannotRun("cannot run Range on floating-point operands concretely (its size and "
                        "its accumulated values are not modelled); in proofs it is uninterpreted")
    s, l, d = int(start), int(limit), int(delta)
    if d == 0:
        raise _invalid("Range: requires delta != 0")
    if (d > 0 and s > l) or (d < 0 and s < l):
        raise _invalid("Range: requires start <= limit when delta > 0 (>= when < 0)")
    n = (abs(l - s) + abs(d) - 1) // abs(d)
    if n > fns.MAX_TENSOR_ELEMENTS:
        raise fns.too_large("Range", n)
    return (np.array([s + i * d for i in range(n)], dtype=start.dtype),)


_SS_ATTRS = {"begin_mask": _int_attr, "end_mask": _int_attr, "ellipsis_mask": _int_attr,
             "new_axis_mask": _int_attr, "shrink_axis_mask": _int_attr}


def strided_slice_spec(shape, begin, end, strides, attrs):
    """TensorFlow's ValidateStridedSliceOp: (per-dimension (begin, size,
    stride) of the input, the result's shape)."""
    if not (len(begin) == len(end) == len(strides)):
        raise _invalid("StridedSlice: begin, end and strides must have the same length")
    bm, em = attrs.get("begin_mask", 0), attrs.get("end_mask", 0)
    ell, new, shrink = (attrs.get("ellipsis_mask", 0), attrs.get("new_axis_mask", 0),
                        attrs.get("shrink_axis_mask", 0))
    if ell & (ell - 1):
        raise _invalid("StridedSlice: multiple ellipses in slice spec not allowed")
    sparse = len(begin)
    seen, after = False, 0
    for i in range(sparse):
        if seen and new >> i & 1:
            after += 1
        if ell >> i & 1:
            seen = True
    begin, end, strides = list(begin), list(end), list(strides)
    if not seen:
        ell |= 1 << sparse
        sparse += 1
        begin.append(0); end.append(0); strides.append(1)
    dims = len(shape)
    d_begin, d_end, d_stride = [0] * dims, [0] * dims, [1] * dims
    d_bm = d_em = d_shrink = 0
    gather: list[int | str] = []
    full = 0
    for i in range(sparse):
        if ell >> i & 1:
            nxt = min(dims - (sparse - i) + 1 + after, dims)
            while full < nxt:
                d_bm |= 1 << full
                d_em |= 1 << full
                gather.append(full)
                full += 1
        elif new >> i & 1:
            gather.append("new")
        else:
            if full == dims:
                raise _invalid(f"StridedSlice: index out of range using input dim {full}; input "
                               f"has only {dims} dims")
            d_begin[full], d_end[full], d_stride[full] = begin[i], end[i], strides[i]
            if bm >> i & 1:
                d_bm |= 1 << full
            if em >> i & 1:
                d_em |= 1 << full
            if shrink >> i & 1:
                gather.append("shrink")
                d_shrink |= 1 << full
            else:
                gather.append(full)
            full += 1
    spec, dense_shape = [], []
    for i in range(dims):
        n, st = shape[i], d_stride[i]
        if st == 0:
            raise _invalid(f"StridedSlice: strides[{i}] must be non-zero")
        masks = (d_bm >> i & 1, d_em >> i & 1)
        lo, hi = (0, n) if st > 0 else (-1, n - 1)

        def canonical(x, c):
            if masks[c]:
                return (lo, hi)[c] if st > 0 else (lo, hi)[(c + 1) & 1]
            fwd = n + x if x < 0 else x
            return lo if fwd < lo else hi if fwd > hi else fwd

        if d_shrink >> i & 1:
            fwd = n + d_begin[i] if d_begin[i] < 0 else d_begin[i]
            if fwd < 0 or fwd >= n:
                raise _invalid(f"StridedSlice: slice index {d_begin[i]} of dimension {i} out of "
                               "bounds")
            if st <= 0:
                raise _invalid("StridedSlice: only stride 1 allowed on non-range indexing")
            b, size = fwd, 1
        else:
            b, e = canonical(d_begin[i], 0), canonical(d_end[i], 1)
            length = e - b
            if length == 0 or (length < 0) != (st < 0):
                size = 0
            else:
                size = length // st + (length % st != 0)
        spec.append((b, size, st))
        dense_shape.append(size)
    final = [1 if g == "new" else dense_shape[g] for g in gather if g != "shrink"]
    return spec, final


def _take(a, spec):
    for ax, (b, size, st) in enumerate(spec):
        a = np.take(a, np.arange(size, dtype=np.int64) * st + b, axis=ax)
    return a


@_op("StridedSlice", 4, attrs=_SS_ATTRS)
def _strided_slice(xp, args, attrs):
    """input[begin:end:strides] with TensorFlow's five masks."""
    a, b, e, s = args
    if not (b.dtype == e.dtype == s.dtype):
        raise ShapeError("StridedSlice: begin, end, strides of different dtypes")
    begin, end, strides = (_index(x, w, rank=1) for x, w in ((b, "begin"), (e, "end"),
                                                              (s, "strides")))
    spec, final = strided_slice_spec(a.shape, begin, end, strides, attrs)
    return (np.ascontiguousarray(_take(a, spec)).reshape(final),)


@_op("StridedSliceGrad", 5, attrs=_SS_ATTRS)
def _strided_slice_grad(xp, args, attrs):
    """Zeros of shape `shape` with dy in the region StridedSlice(begin, end,
    strides, masks) reads (the gradient of StridedSlice)."""
    sh, b, e, s, dy = args
    if not (sh.dtype == b.dtype == e.dtype == s.dtype):
        raise ShapeError("StridedSliceGrad: shape, begin, end, strides of different dtypes")
    shape = _index(sh, "shape", rank=1)
    begin, end, strides = (_index(x, w, rank=1) for x, w in ((b, "begin"), (e, "end"),
                                                              (s, "strides")))
    if any(d < 0 for d in shape):
        raise _invalid(f"StridedSliceGrad: shape {shape} has a negative dimension")
    fns.check_size("StridedSliceGrad", [tuple(shape)])
    spec, final = strided_slice_spec(tuple(shape), begin, end, strides, attrs)
    if tuple(final) != dy.shape:
        raise _invalid(f"StridedSliceGrad: shape of dy was {list(dy.shape)} instead of {final}")
    out = np.zeros(tuple(shape), dtype=dy.dtype)
    if out.ndim == 0:   # only new axes: the kernel's identity case, dy reshaped
        return (dy.reshape(()).copy(),)
    index = np.ix_(*(np.arange(size, dtype=np.int64) * st + lo for lo, size, st in spec))
    out[index] = dy.reshape([size for _, size, _ in spec])
    return (out,)


@_op("Slice", 3)
def _slice(xp, args, attrs):
    """input[begin : begin+size] on every axis (size -1: to the end)."""
    a, b, sz = args
    if b.dtype != sz.dtype:
        raise ShapeError("Slice: begin and size of different dtypes")
    begin, size = _index(b, "begin", rank=1), _index(sz, "size", rank=1)
    if len(begin) != a.ndim or len(size) != a.ndim:
        raise _invalid("Slice: begin and size must have one entry per input dimension")
    spec = []
    for i, (lo, n) in enumerate(zip(begin, size)):
        if n == -1:
            n = a.shape[i] - lo
        if not (0 <= lo <= lo + n <= a.shape[i]) or n < 0:
            raise _invalid(f"Slice: expected begin[{i}] in [0, {a.shape[i]}] and size in "
                           f"[0, {a.shape[i]} - begin]")
        spec.append((lo, n, 1))
    return (np.ascontiguousarray(_take(a, spec)),)


@_op("GatherV2", 3, attrs={"batch_dims": _int_attr})
def _gather(xp, args, attrs):
    """params gathered along `axis` at `indices`, the first `batch_dims` axes
    of both matched; an index out of [0, dim) fails (the CPU kernel)."""
    params, indices, axis_t = args
    idx = _index(indices, "indices")
    (axis,) = _index(axis_t, "axis", rank=0)
    if params.ndim == 0:
        raise _invalid("GatherV2: params must be at least 1-D")
    if not -params.ndim <= axis < params.ndim:
        raise _invalid(f"GatherV2: expected axis in the range [{-params.ndim}, {params.ndim})")
    axis %= params.ndim
    bd = attrs.get("batch_dims", 0)
    if bd < 0:
        bd += indices.ndim
    if not 0 <= bd <= indices.ndim or bd > axis and not (bd == 0):
        raise _invalid(f"GatherV2: batch_dims {attrs.get('batch_dims', 0)} out of range")
    if params.shape[:bd] != indices.shape[:bd]:
        raise _invalid("GatherV2: params and indices differ on the batch dimensions")
    n = params.shape[axis]
    for i in idx:
        if not 0 <= i < n:
            raise _invalid(f"GatherV2: indices = {i} is not in [0, {n})")
    ind = np.asarray(idx, dtype=np.int64).reshape(indices.shape)
    batch = int(np.prod(params.shape[:bd], dtype=np.int64))
    p = params.reshape((batch,) + params.shape[bd:])
    q = ind.reshape((batch,) + indices.shape[bd:])
    rows = [np.take(p[k], q[k], axis=axis - bd) for k in range(batch)]
    shape = params.shape[:axis] + indices.shape[bd:] + params.shape[axis + 1:]
    out = np.stack(rows) if rows else np.zeros((0,), params.dtype)
    return (out.reshape(shape).astype(params.dtype, copy=False),)


@_op("UnpackPart", 1, attrs={"axis": _int_attr, "num": _int_attr, "index": _int_attr})
def _unpack_part(xp, args, attrs):
    """Output `index` of TensorFlow's Unpack (Unstack) along `axis`."""
    (a,) = args
    ax = attrs["axis"]
    if not -a.ndim <= ax < a.ndim:
        raise _invalid("Unpack: axis out of range")
    ax %= a.ndim
    if a.shape[ax] != attrs["num"]:
        raise _invalid(f"Unpack: input dimension {ax} is {a.shape[ax]}, not num={attrs['num']}")
    return (np.ascontiguousarray(np.take(a, attrs["index"], axis=ax)),)


@_op("FillDims", 2)
def _fill_dims(xp, args, attrs):
    """Fill: a tensor of shape `dims` (a 1-D operand) holding the scalar value."""
    d, v = args
    dims = _index(d, "dims", rank=1)
    if v.ndim != 0:
        raise _invalid("Fill: value must be a scalar")
    if any(x < 0 for x in dims):
        raise _invalid(f"Fill: dims {dims} has a negative dimension")
    fns.check_size("Fill", [tuple(dims)])
    return (np.full(tuple(dims), v, dtype=v.dtype),)


@_op("BroadcastToShape", 2)
def _broadcast_to(xp, args, attrs):
    """BroadcastTo: the input broadcast to `shape` (a 1-D operand)."""
    x, s = args
    shape = _index(s, "shape", rank=1)
    if any(d < 0 for d in shape):
        raise _invalid(f"BroadcastTo: shape {shape} has a negative dimension")
    if x.ndim > len(shape) or any(a not in (1, b) for a, b in
                                  zip(x.shape[::-1], shape[::-1])):
        raise _invalid(f"BroadcastTo: incompatible shapes {list(x.shape)} vs. {shape}")
    fns.check_size("BroadcastTo", [tuple(shape)])
    return (np.ascontiguousarray(np.broadcast_to(x, tuple(shape))),)


@_op("BroadcastGradientArgs", 2, 2)
def _bcast_grad_args(xp, args, attrs):
    """The axes to sum each operand's gradient over (BCast with
    fewer_dims_optimization off: an axis where all are 1 is listed for both)."""
    a, b = args
    if a.dtype != b.dtype:
        raise ShapeError("BroadcastGradientArgs: operands of different dtypes")
    x, y = _index(a, "s0", rank=1), _index(b, "s1", rank=1)
    if x == y:   # BCastList: equal shapes reduce nothing (even axes of 1)
        return (np.array([], dtype=a.dtype), np.array([], dtype=a.dtype))
    n = max(len(x), len(y))
    x, y = [1] * (n - len(x)) + x, [1] * (n - len(y)) + y
    r0, r1 = [], []
    for k in range(n):
        if x[k] == 1 and y[k] == 1:
            r0.append(k); r1.append(k)
        elif x[k] == y[k]:
            continue
        elif x[k] == 1:
            r0.append(k)
        elif y[k] == 1:
            r1.append(k)
        else:
            raise _invalid(f"BroadcastGradientArgs: incompatible shapes: {x} vs. {y}")
    return (np.array(r0, dtype=a.dtype), np.array(r1, dtype=a.dtype))


def _dynamic_stitch(n: int):
    def impl(xp, args, attrs):
        """DynamicStitch of n (indices, data) pairs: merged[indices[m][i]] =
        data[m][i], later pairs overwriting earlier ones; an index not covered
        is refused (TensorFlow leaves that row unspecified)."""
        idx, data = args[:n], args[n:]
        if len({d.dtype for d in data}) > 1:
            raise ShapeError("DynamicStitch: data of different dtypes")
        if any(i.dtype != np.int32 for i in idx):   # the kernel takes int32 indices only
            raise OpError("no-kernel", "DynamicStitch: indices must be int32")
        flat = [_index(i, f"indices[{m}]") for m, i in enumerate(idx)]
        rest = None
        for m, (i, d) in enumerate(zip(idx, data)):
            if d.shape[:i.ndim] != i.shape:
                raise _invalid(f"DynamicStitch: data[{m}].shape must start with "
                               f"indices[{m}].shape")
            r = d.shape[i.ndim:]
            if rest is not None and r != rest:
                raise _invalid("DynamicStitch: data shapes do not agree past the indices")
            rest = r
        top = max((v for f in flat for v in f), default=-1)
        if any(v < 0 for f in flat for v in f):
            raise _invalid("DynamicStitch: an index is negative")
        out = np.zeros((top + 1,) + tuple(rest), dtype=data[0].dtype)
        seen = np.zeros(top + 1, dtype=bool)
        for f, d in zip(flat, data):
            rows = d.reshape((len(f),) + tuple(rest))
            for k, v in enumerate(f):
                out[v] = rows[k]
                seen[v] = True
        if not seen.all():
            raise CannotRun("cannot run DynamicStitch with indices that leave a row unset "
                            "(TensorFlow leaves its contents unspecified)")
        return (out,)
    return impl


#: DynamicStitch with N pairs is the function `DynamicStitch/N` (2N arguments).
MAX_STITCH = 16
for _n in range(1, MAX_STITCH + 1):
    _op(f"DynamicStitch/{_n}", 2 * _n)(_dynamic_stitch(_n))


# -- the forms with a tensor operand of ops whose constant-operand form is in
# functions.py: the operand read at run time, then the same implementation


def _with(name: str, key: str, convert):
    base = fns.get(name)

    def impl(xp, args, attrs):
        a, operand = args
        value = convert(_index(operand, key), operand)
        return base.impl(xp, (a,), {**attrs, key: value})
    impl.__doc__ = f"{name} with `{key}` an int32/int64 tensor operand."
    return impl


def _axis_scalar(vals, t):
    if t.ndim > 1 or len(vals) != 1:
        raise _invalid("the axis must be a scalar (or a 1-element vector)")
    return vals[0]


def _vector(vals, t):
    if t.ndim != 1:
        raise _invalid("the operand must be a 1-D tensor")
    return vals


def _axes_list(vals, t):
    if t.ndim > 1:
        raise _invalid("axes must be a scalar or a 1-D tensor")
    return vals


#: name -> (the constant-operand function, its attribute, the conversion)
OPERAND_FORMS = {"ReshapeTo": ("Reshape", "shape", _vector),
                 "TileBy": ("Tile", "multiples", _vector),
                 "ExpandDimsAt": ("ExpandDims", "axis", _axis_scalar),
                 **{n + "Along": (n, "axes", _axes_list)
                    for n in ("Sum", "Mean", "ReduceMax", "ReduceMin")}}
for _name, (_base, _key, _conv) in OPERAND_FORMS.items():
    _op(_name, 2, attrs={"keep_dims": _bool_attr} if _key == "axes" else {})(
        _with(_base, _key, _conv))

#: Functions whose result depends on their argument's kind alone.
KIND_ONLY = frozenset({"Shape", "Size", "Rank"})


def constant_operand_form(name: str, attrs, operand: np.ndarray):
    """For `name` in OPERAND_FORMS with operand `operand` known: the
    constant-operand function and its attributes, which compute the same
    thing; raises ShapeError/OpError where `name` fails on that operand."""
    base, key, convert = OPERAND_FORMS[name]
    return fns.get(base), {**attrs, key: convert(_index(operand, key), operand)}


@_op("Transpose", 2)
def _transpose(xp, args, attrs):
    """The input's axes permuted by `perm` (a 1-D operand): output axis i is
    input axis perm[i]; perm must be a permutation of 0..rank-1 (an entry in
    [-rank, 0) counts from the end, as TensorFlow's kernel accepts)."""
    a, p = args
    perm = _index(p, "perm", rank=1)
    perm = [d + a.ndim if -a.ndim <= d < 0 else d for d in perm]   # as TensorFlow's kernel
    if len(perm) != a.ndim:
        raise _invalid(f"Transpose: expected perm of length {a.ndim}, got {len(perm)}")
    if sorted(perm) != list(range(a.ndim)):
        raise _invalid(f"Transpose: {perm} is not a permutation of 0..{a.ndim - 1}")
    return (np.ascontiguousarray(np.transpose(a, perm)),)


#: The functions above whose result's shape (or whether they fail) depends on
#: their arguments' values, not on their kinds alone: static type inference
#: (graphdef/exporter.py) must not evaluate them on zeros.
VALUE_DEPENDENT = frozenset(n for n, f in fns.registered(TENSORFLOW).items()
                            if f.mixed_dtypes and n not in KIND_ONLY)


def result_dtype(name: str, attrs, arg_dtypes) -> str | None:
    """The dtype of the results of `name` (all its results share one), from
    its attributes and its arguments' dtypes (None where unknown)."""
    if name in ("Shape", "Size"):
        return attrs.get("out_type", "int32")
    if name == "Rank":
        return "int32"
    if name == "FillDims":
        return arg_dtypes[1]
    if name == "StridedSliceGrad":
        return arg_dtypes[4]
    if name.startswith("DynamicStitch/"):
        return arg_dtypes[int(name.split("/")[1])]
    return arg_dtypes[0] if arg_dtypes else None
