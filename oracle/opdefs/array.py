"""The array family: data movement and shapes (one OpDef per TensorFlow op:
its import, its functions' value semantics, exports; oracle/opdefs).

Data movement with constant operands (`Reshape`, `Tile`, `Fill`,
`ExpandDims`, `Squeeze`, `ConcatAxis`, `SplitPart`, read as attributes at
import), and shapes computed at run time: `Shape`, `Size`, `Rank`, `Range`,
`StridedSlice`, `Slice`, `GatherV2`, `UnpackPart`, `FillDims`,
`BroadcastToShape`, `BroadcastGradientArgs`, `DynamicStitch/N`, and the forms
of `Reshape`, `Transpose`, `ExpandDims`, `Tile`, `ConcatV2` and the
reductions whose shape, permutation, axis, multiples or axes are a tensor
operand (an int32/int64 tensor like any other) instead of a constant
attribute.  Each follows TensorFlow's CPU kernel (array_ops.cc,
strided_slice_op.cc, gather_op.cc, bcast.h, ...): the result, and the
arguments it refuses.  A refused argument gives an error value: a shape
that does not fit gives `shape-mismatch` (as the constant-operand forms
do); so does an index or value out of range (TensorFlow's
InvalidArgumentError: one error value for all of them, so that folding a
computed operand into a constant never changes the error).

The run-time forms take arguments of different dtypes (the tensor and its
int32 shape: `mixed_dtypes`) and choose their result's dtype (`casts`).
The checker has no encoding of any function here: in proofs their results
are opaque (an uninterpreted function of the arguments, whose kind, shape
included, is unknown; checking/symbolic.py folds them on constants), see
docs/semantics.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as fns
from ..functions import (TENSORFLOW, CannotRun, CannotRunHere, OpError, ShapeError, _axes,
                         _bool_attr, _dtype_attr, _int_attr, _int_list)
from ..program import DataIn
from ..values import DTYPE_MISMATCH, Tensor
from .registry import (FOLDS_ON_CONSTANTS, OpDef, define, export_as, index_dtype, int_list,
                       kernels_are_functions, known,
                       one_function)

FAMILY = "array"

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


# -- exports: each function written back as its TensorFlow op -----------------

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask",
          "batch_dims")


def _export_op(tf_op: str, types: dict[str, int]):
    """TensorFlow's `tf_op` on the same inputs; `types` names each type
    attribute and the input whose dtype it is; integer masks, batch_dims and
    keep_dims copied from the node's attributes."""
    def export(e) -> list:
        a = {k: e.T(i) for k, i in types.items()}
        for k in _MASKS:
            if k in e.attrs:
                a[k] = {"i": int(e.attrs[k])}
        if "keep_dims" in e.attrs:
            a["keep_dims"] = {"b": bool(e.attrs["keep_dims"])}
        return [{"name": e.name, "op": tf_op, "input": e.data + e.ctrl, "attr": a}]
    return export


def _export_out_type(tf_op: str):
    def export(e) -> list:
        return [{"name": e.name, "op": tf_op, "input": e.data + e.ctrl,
                 "attr": {"T": e.T(), "out_type": {"type": e.tf_dtype(e.attrs["out_type"])}}}]
    return export


def _export_stitch(n: int):
    def export(e) -> list:
        return [{"name": e.name, "op": "DynamicStitch", "input": e.data + e.ctrl,
                 "attr": {"T": e.T(n), "N": {"i": n}}}]
    return export


def _export_unpack_part(e) -> list:
    a = e.attrs
    unpack = e.fresh(f"{e.name}/unpack")
    return [{"name": unpack, "op": "Unpack", "input": e.data + e.ctrl,
             "attr": {"T": e.T(), "num": {"i": a["num"]}, "axis": {"i": a["axis"]}}},
            {"name": e.name, "op": "Identity", "input": [f"{unpack}:{a['index']}"],
             "attr": {"T": e.T()}}]


def _export_const_operand(tf_op: str, key: str, tkey: str):
    """`tf_op` with attribute `key` as an int32 constant input after the tensor."""
    def export(e) -> list:
        c = e.int32_const(f"{e.name}/{key}", e.attrs[key])
        return [c, {"name": e.name, "op": tf_op, "input": e.data + [c["name"]] + e.ctrl,
                    "attr": {"T": e.T(), tkey: {"type": "DT_INT32"}}}]
    return export


def _export_fill(e) -> list:
    c = e.int32_const(f"{e.name}/dims", e.attrs["dims"])
    return [c, {"name": e.name, "op": "Fill", "input": [c["name"]] + e.data + e.ctrl,
                "attr": {"T": e.T(), "index_type": {"type": "DT_INT32"}}}]


def _export_expand_dims(e) -> list:
    c = e.int32_const(f"{e.name}/dim", e.attrs["axis"], scalar=True)
    return [c, {"name": e.name, "op": "ExpandDims", "input": e.data + [c["name"]] + e.ctrl,
                "attr": {"T": e.T(), "Tdim": {"type": "DT_INT32"}}}]


def _export_squeeze(e) -> list:
    return [{"name": e.name, "op": "Squeeze", "input": e.data + e.ctrl,
             "attr": {"T": e.T(), "squeeze_dims": {"list": {"i": list(e.attrs["squeeze_dims"])}}}}]


def _export_concat(e) -> list:
    """ConcatAxis, and the language's Concat (1-D, axis 0)."""
    c = e.int32_const(f"{e.name}/axis", e.attrs.get("axis", 0), scalar=True)
    return [c, {"name": e.name, "op": "ConcatV2", "input": e.data + [c["name"]] + e.ctrl,
                "attr": {"T": e.T(), "N": {"i": 2}, "Tidx": {"type": "DT_INT32"}}}]


def _export_split_part(e) -> list:
    a = e.attrs
    c = e.int32_const(f"{e.name}/split_dim", a["axis"], scalar=True)
    split = e.fresh(f"{e.name}/split")
    return [c, {"name": split, "op": "Split", "input": [c["name"]] + e.data + e.ctrl,
                "attr": {"T": e.T(), "num_split": {"i": a["num_split"]}}},
            {"name": e.name, "op": "Identity", "input": [f"{split}:{a['index']}"],
             "attr": {"T": e.T()}}]


# -- constant operands: read at import, attributes of the function -------------


def _fn(name: str, n_in: int, n_out: int, batched: Any = False, **kw: Any):
    return fns.function(name, n_in, n_out, batched=batched, family=TENSORFLOW, **kw)


def _contiguous(a) -> np.ndarray:
    """`a` in C order, of its own shape: np.ascontiguousarray makes a 0-d
    array 1-d (a scalar Unpack, Slice, BroadcastTo or Transpose gave a
    [1] tensor where TensorFlow gives a scalar)."""
    a = np.asarray(a)
    return np.ascontiguousarray(a).reshape(a.shape)


@_fn("Reshape", 1, 1, batched=False, attrs={"shape": _int_list},
     export=_export_const_operand("Reshape", "shape", "Tshape"))
def _reshape(xp, args, attrs):
    """The elements in row-major order, in shape `shape` (one -1 is
    inferred), the shape as TensorFlow's kernel computes it
    (`reshape_shape`: an empty tensor's -1 included, which numpy refuses)."""
    (a,) = args
    shape = reshape_shape(tuple(a.shape), attrs["shape"])
    try:
        return (xp.reshape(a, shape),)
    except ValueError:   # numpy holds no such array: "array is too big" (an empty
        #                    shape of huge dimensions), or more than 64 dimensions
        raise CannotRun(f"cannot run Reshape to a shape of {len(shape)} dimensions, "
                        f"{_brief(shape)}, concretely: numpy holds no {a.dtype} array of "
                        "that shape (too many dimensions, or too large to allocate)") from None


def _brief(shape: tuple[int, ...]) -> str:
    return str(list(shape)) if len(shape) <= 8 else f"[{', '.join(map(str, shape[:8]))}, ...]"


_INT64_MAX = 2 ** 63 - 1


def reshape_shape(in_shape: tuple[int, ...], sizes) -> tuple[int, ...]:
    """The shape TensorFlow's Reshape kernel (reshape_op.h, 2.21) gives a
    tensor of shape `in_shape` for the requested `sizes`, or ShapeError
    where it fails (InvalidArgument).  Zero dimensions are left out of the
    products, so that a -1 is still inferred on an empty tensor: [0] to
    [-1, 0] is [1, 0], [0] to [0, -1] is [0, 1], [2, 0, 3] to [-1, 3, 0] is
    [2, 3, 0], where numpy's reshape refuses all three; and a requested
    shape whose dimensions before its first zero multiply past int64 fails
    ("has too many elements": [M, M, M, 0] for M = 2^31-1, where [0, M, M,
    M] does not)."""
    out: list[int] = []
    unknown, product, elements, has_zero = -1, 1, 1, False
    for d in sizes:
        d = int(d)
        if d == -1:
            if unknown != -1:
                raise ShapeError("Reshape: only one size may be -1")
            unknown = len(out)
            out.append(1)
        elif d < 0:
            raise ShapeError("Reshape: a size is negative")
        elif d == 0:
            out.append(0)
            elements, has_zero = 0, True
        else:
            if elements * d > _INT64_MAX:
                raise ShapeError("Reshape: the shape has too many elements")
            elements *= d
            product *= d
            out.append(d)
    size = 1
    for d in in_shape:
        size *= d
    if unknown != -1:
        if product > _INT64_MAX:   # (TensorFlow's product wraps around: not modelled)
            raise CannotRun(f"cannot run Reshape to {list(sizes)} concretely: TensorFlow's "
                            "product of its sizes overflows int64")
        counted, input_has_zero = 1, False
        for d in in_shape:
            if d > 0 or not has_zero:
                counted *= d
            else:
                input_has_zero = True
        missing = counted // product
        if not input_has_zero and product * missing != counted:
            raise ShapeError("Reshape: the size is not a multiple of the requested shape's")
        out[unknown] = missing
    total = 1
    for d in out:
        total *= d
    if total != size:
        raise ShapeError("Reshape: the sizes differ")
    return tuple(out)


@_fn("Tile", 1, 1, batched=False, attrs={"multiples": _int_list},
     export=_export_const_operand("Tile", "multiples", "Tmultiples"))
def _tile(xp, args, attrs):
    """The input repeated `multiples[i]` times along axis i."""
    (a,) = args
    m = attrs["multiples"]
    if len(m) != a.ndim or any(x < 0 for x in m):
        raise ShapeError("Tile: multiples must match the rank")
    return (xp.tile(a, tuple(m)),)


@_fn("Fill", 1, 1, batched=False, attrs={"dims": _int_list}, export=_export_fill)
def _fill(xp, args, attrs):
    """A tensor of shape `dims` holding the scalar input everywhere."""
    (v,) = args
    if v.ndim != 0 or any(d < 0 for d in attrs["dims"]):
        raise ShapeError("Fill needs a scalar value and non-negative dims")
    return (xp.full(tuple(attrs["dims"]), v, dtype=v.dtype),)


@_fn("ZerosLike", 1, 1, batched=True, export=export_as("ZerosLike"))
def _zeros_like(xp, args, attrs):
    """Zeros of the input's dtype and shape."""
    return (xp.zeros_like(args[0]),)


@_fn("OnesLike", 1, 1, batched=True, export=export_as("OnesLike"))
def _ones_like(xp, args, attrs):
    """Ones of the input's dtype and shape."""
    return (xp.ones_like(args[0]),)


@_fn("ExpandDims", 1, 1, batched=False, attrs={"axis": _int_attr}, export=_export_expand_dims)
def _expand_dims(xp, args, attrs):
    """A new axis of length 1 at `axis` (negative counts from the end)."""
    (a,) = args
    ax = attrs["axis"]
    if not -a.ndim - 1 <= ax <= a.ndim:
        raise ShapeError("ExpandDims: axis out of range")
    return (xp.expand_dims(a, ax if ax >= 0 else a.ndim + 1 + ax),)


@_fn("Squeeze", 1, 1, batched=False, attrs={"squeeze_dims": _int_list}, export=_export_squeeze)
def _squeeze(xp, args, attrs):
    """Axes of length 1 removed (those listed, or all when the list is empty)."""
    (a,) = args
    dims = attrs["squeeze_dims"]
    if not dims:
        return (xp.reshape(a, tuple(d for d in a.shape if d != 1)),)
    # (a dimension named twice, as 0 and -rank or twice alike, is squeezed
    # once: TensorFlow's kernel keeps a set of them, measured on 2.21;
    # the reductions' duplicates fail there, and in _axes)
    axes = _axes(a, sorted({d % a.ndim if -a.ndim <= d < 0 else d for d in dims}))
    if any(a.shape[x] != 1 for x in axes):
        raise ShapeError("Squeeze: an axis is not of length 1")
    return (xp.reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes)),)


@_fn("ConcatAxis", 2, 1, batched=False, attrs={"axis": _int_attr}, export=_export_concat)
def _concat_axis(xp, args, attrs):
    """Concatenation of two tensors of one rank along `axis` (TensorFlow's
    ConcatV2 of n inputs is a chain of these: concatenation is associative)."""
    a, b = args
    if a.ndim != b.ndim or a.ndim == 0:
        raise ShapeError("ConcatAxis needs tensors of one rank >= 1")
    ax = attrs["axis"]
    if not -a.ndim <= ax < a.ndim:
        raise ShapeError("ConcatAxis: axis out of range")
    return (xp.concatenate([a, b], axis=ax),)


@_fn("SplitPart", 1, 1, batched=False,
     attrs={"axis": _int_attr, "num_split": _int_attr, "index": _int_attr},
     export=_export_split_part)
def _split_part(xp, args, attrs):
    """Part `index` of `num_split` equal parts along `axis` (TensorFlow's Split
    output `index`)."""
    (a,) = args
    ax, n, k = attrs["axis"], attrs["num_split"], attrs["index"]
    if a.ndim == 0 or not -a.ndim <= ax < a.ndim or n < 1 or not 0 <= k < n:
        raise ShapeError("SplitPart: bad axis or index")
    ax %= a.ndim
    if a.shape[ax] % n:
        raise ShapeError("Split: the axis is not a multiple of num_split")
    size = a.shape[ax] // n
    return (xp.take(a, range(k * size, (k + 1) * size), axis=ax),)


# -- shapes computed at run time ------------------------------------------------


@_op("Shape", 1, attrs=_OUT, export=_export_out_type("Shape"), encoding=FOLDS_ON_CONSTANTS)
def _shape(xp, args, attrs):
    """The input's shape as a 1-D tensor of `out_type` (int32 or int64)."""
    return (np.array(args[0].shape, dtype=_out_type(attrs)),)


@_op("Size", 1, attrs=_OUT, export=_export_out_type("Size"), encoding=FOLDS_ON_CONSTANTS)
def _size(xp, args, attrs):
    """The input's number of elements, a scalar of `out_type`."""
    return (np.array(args[0].size, dtype=_out_type(attrs)),)


@_op("Rank", 1, export=_export_op("Rank", {"T": 0}), encoding=FOLDS_ON_CONSTANTS)
def _rank(xp, args, attrs):
    """The input's rank, an int32 scalar."""
    return (np.array(args[0].ndim, dtype=np.int32),)


@_op("Range", 3, tf_kernel=lambda a, attrs: ("Range", list(a), {}),
     export=_export_op("Range", {"Tidx": 0}), encoding=FOLDS_ON_CONSTANTS)
def _range(xp, args, attrs):
    """start, start+delta, ... up to (not including) limit; integer dtypes:
    the size is (|limit-start| + |delta| - 1) / |delta| (range_op.cc)."""
    start, limit, delta = args
    for a, what in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if a.ndim != 0:
            raise _invalid(f"Range: {what} must be a scalar")
    if len({start.dtype, limit.dtype, delta.dtype}) > 1:
        raise ShapeError("Range: operands of different dtypes")
    if start.dtype.kind in "iu" and start.dtype.name not in ("int32", "int64"):
        # (TensorFlow 2.21 registers Range's CPU kernel for int32, int64 and
        # the floats only: int8, int16 and the unsigned integers have none)
        raise OpError("no-kernel", f"Range has no kernel for {start.dtype.name}")
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


@_op("StridedSlice", 4, attrs=_SS_ATTRS, export=_export_op("StridedSlice", {"T": 0, "Index": 1}),
     encoding=FOLDS_ON_CONSTANTS)
def _strided_slice(xp, args, attrs):
    """input[begin:end:strides] with TensorFlow's five masks."""
    a, b, e, s = args
    if not (b.dtype == e.dtype == s.dtype):
        raise ShapeError("StridedSlice: begin, end, strides of different dtypes")
    begin, end, strides = (_index(x, w, rank=1) for x, w in ((b, "begin"), (e, "end"),
                                                              (s, "strides")))
    spec, final = strided_slice_spec(a.shape, begin, end, strides, attrs)
    return (np.ascontiguousarray(_take(a, spec)).reshape(final),)


@_op("StridedSliceGrad", 5, attrs=_SS_ATTRS, export=_export_op("StridedSliceGrad", {"T": 4,
     "Index": 0}), encoding=FOLDS_ON_CONSTANTS)
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


@_op("Slice", 3, export=_export_op("Slice", {"T": 0, "Index": 1}), encoding=FOLDS_ON_CONSTANTS)
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
    return (_contiguous(_take(a, spec)),)


@_op("GatherV2", 3, attrs={"batch_dims": _int_attr}, export=_export_op("GatherV2", {"Tparams": 0,
     "Tindices": 1, "Taxis": 2}), encoding=FOLDS_ON_CONSTANTS)
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


@_op("UnpackPart", 1, attrs={"axis": _int_attr, "num": _int_attr, "index": _int_attr},
     export=_export_unpack_part, encoding=FOLDS_ON_CONSTANTS)
def _unpack_part(xp, args, attrs):
    """Output `index` of TensorFlow's Unpack (Unstack) along `axis`."""
    (a,) = args
    ax = attrs["axis"]
    if not -a.ndim <= ax < a.ndim:
        raise _invalid("Unpack: axis out of range")
    ax %= a.ndim
    if a.shape[ax] != attrs["num"]:
        raise _invalid(f"Unpack: input dimension {ax} is {a.shape[ax]}, not num={attrs['num']}")
    return (_contiguous(np.take(a, attrs["index"], axis=ax)),)


@_op("FillDims", 2, export=_export_op("Fill", {"T": 1, "index_type": 0}),
     encoding=FOLDS_ON_CONSTANTS)
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


@_op("BroadcastToShape", 2, export=_export_op("BroadcastTo", {"T": 0, "Tidx": 1}),
     encoding=FOLDS_ON_CONSTANTS)
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
    return (_contiguous(np.broadcast_to(x, tuple(shape))),)


@_op("BroadcastGradientArgs", 2, 2, export=_export_op("BroadcastGradientArgs", {"T": 0}),
     encoding=FOLDS_ON_CONSTANTS)
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
            raise CannotRunHere("cannot run DynamicStitch with indices that leave a row unset "
                                "(TensorFlow leaves its contents unspecified)")
        return (out,)
    return impl


#: DynamicStitch with N pairs is the function `DynamicStitch/N` (2N arguments).
MAX_STITCH = 16
for _n in range(1, MAX_STITCH + 1):
    _op(f"DynamicStitch/{_n}", 2 * _n, export=_export_stitch(_n))(_dynamic_stitch(_n))


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


#: the TensorFlow op each form is exported as, and its operand's type attribute
_OPERAND_TF_OPS = {"ReshapeTo": "Reshape", "TileBy": "Tile", "ExpandDimsAt": "ExpandDims",
                   "SumAlong": "Sum", "MeanAlong": "Mean", "ReduceMaxAlong": "Max",
                   "ReduceMinAlong": "Min"}
_OPERAND_TYPE_ATTRS = {"ReshapeTo": "Tshape", "TileBy": "Tmultiples", "ExpandDimsAt": "Tdim",
                       **{n + "Along": "Tidx" for n in ("Sum", "Mean", "ReduceMax", "ReduceMin")}}
#: name -> (the constant-operand function, its attribute, the conversion)
OPERAND_FORMS = {"ReshapeTo": ("Reshape", "shape", _vector),
                 "TileBy": ("Tile", "multiples", _vector),
                 "ExpandDimsAt": ("ExpandDims", "axis", _axis_scalar),
                 **{n + "Along": (n, "axes", _axes_list)
                    for n in ("Sum", "Mean", "ReduceMax", "ReduceMin")}}
for _name, (_base, _key, _conv) in OPERAND_FORMS.items():
    _op(_name, 2, attrs={"keep_dims": _bool_attr} if _key == "axes" else {},
        export=_export_op(_OPERAND_TF_OPS[_name], {"T": 0, _OPERAND_TYPE_ATTRS[_name]: 1}),
        encoding=FOLDS_ON_CONSTANTS)(
        _with(_base, _key, _conv))

def _export_concat_at(e) -> list:
    return [{"name": e.name, "op": "ConcatV2", "input": e.data + e.ctrl,
             "attr": {"T": e.T(), "N": {"i": 2}, "Tidx": e.T(2)}}]


@_op("ConcatAxisAt", 3, export=_export_concat_at)
def _concat_axis_at(xp, args, attrs):
    """ConcatAxis of the first two arguments along the axis the third gives
    (an int32/int64 scalar or 1-element vector, as TensorFlow's ConcatV2
    takes it): a link of ConcatV2's chain when its axis is computed at run
    time.  An axis out of range fails as the constant form does."""
    a, b, axis = args
    if a.dtype != b.dtype:
        raise OpError(DTYPE_MISMATCH, "ConcatV2: values of different dtypes")
    ax = _axis_scalar(_index(axis, "axis"), axis)
    return _concat_axis(np, (a, b), {"axis": ax})


#: Functions whose result depends on their argument's kind alone.
KIND_ONLY = frozenset({"Shape", "Size", "Rank"})


def constant_operand_form(name: str, attrs, operand: np.ndarray):
    """For `name` in OPERAND_FORMS with operand `operand` known: the
    constant-operand function and its attributes, which compute the same
    thing; raises ShapeError/OpError where `name` fails on that operand."""
    base, key, convert = OPERAND_FORMS[name]
    return fns.get(base), {**attrs, key: convert(_index(operand, key), operand)}


@_op("Transpose", 2, export=_export_op("Transpose", {"T": 0, "Tperm": 1}),
     encoding=FOLDS_ON_CONSTANTS)
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
    return (_contiguous(np.transpose(a, perm)),)


#: The highest rank TensorFlow's ReverseV2 kernel handles (reverse_op.cc:
#: `Unimplemented` past it; that case is left to the kernel itself)
REVERSE_MAX_RANK = 8


@_op("ReverseV2", 2, export=_export_op("ReverseV2", {"T": 0, "Tidx": 1}),
     tf_kernel=lambda a, attrs: ("ReverseV2", list(a), {}))
def _reverse_v2(xp, args, attrs):
    """The input with the order of its elements reversed along each axis of
    `axis` (a 1-D int32/int64 operand; an entry in [-rank, 0) counts from
    the end), bit for bit (no arithmetic: NaN payloads, signed zeros and
    subnormals copied).  A scalar or empty input is passed on whatever
    `axis` holds, as the kernel does.  An axis out of range, or given twice
    (once negative counts), fails as TensorFlow's kernel does; a rank past 8,
    which TensorFlow's kernel does not implement, is left to that kernel.
    No encoding: uninterpreted in proofs, as it was as TensorFlow's kernel."""
    a, axis = args
    _index(axis, "axis")                  # (the kernels are int32's and int64's)
    if a.ndim == 0 or a.size == 0:
        # (the kernel passes a scalar or an empty input on as it is, before
        # it reads `axis` at all: reverse_op.cc)
        return (a,)
    axes = _index(axis, "axis", rank=1)
    if a.ndim > REVERSE_MAX_RANK:
        raise CannotRun(f"cannot run TensorFlow op ReverseV2 on a tensor of rank {a.ndim} "
                        f"concretely: its kernel handles ranks up to {REVERSE_MAX_RANK} only")
    seen = _axes(a, axes)   # (out of range, or twice: the error value, as the reductions')
    return (_contiguous(np.flip(a, axis=seen)) if seen else a,)


#: The highest rank TensorFlow's Pad and PadV2 kernels pad (pad_op.cc: "Only
#: ranks up to 6 supported"; past 8 `Unimplemented`); MirrorPad's (mirror_pad_op.cc)
PAD_MAX_RANK = 6
MIRROR_PAD_MAX_RANK = 5


#: Pad's and PadV2's kernel (pad_op.cc) forwards an input it does not pad
#: and merges runs of adjacent unpadded axes into one before its rank limit
#: (CollapseAdjacentNonPaddedDimensions): up to this rank an input is
#: modelled so (tests/test_review_new_op_models_round17.py pins the kernel)
PAD_COLLAPSE_MAX_RANK = 8


def _collapsed_rank(pairs) -> int:
    """The rank Pad's kernel pads at: each run of adjacent unpadded axes
    counts as one axis."""
    rank, prev_unpadded = 0, False
    for lo, hi in pairs:
        unpadded = lo == 0 and hi == 0
        if not (unpadded and prev_unpadded):
            rank += 1
        prev_unpadded = unpadded
    return rank


def _paddings(op: str, a, paddings, max_rank: int,
              collapse: bool = False) -> list[tuple[int, int]]:
    """The (before, after) pairs of a [rank, 2] int32/int64 operand, checked
    as TensorFlow's kernel checks them (each failure its InvalidArgumentError:
    the error value `shape-mismatch`); a rank the kernel does not pad is left
    to the kernel (CannotRun, TensorFlow's own error there).  `collapse`
    (Pad, PadV2): past `max_rank`, up to PAD_COLLAPSE_MAX_RANK, an input
    that no padding changes, or whose unpadded runs of axes merged leave
    at most `max_rank` axes, is padded as the kernel pads it (np.pad of the
    whole shape: merging axes is a reshape)."""
    if a.ndim > (PAD_COLLAPSE_MAX_RANK if collapse else max_rank):
        raise CannotRun(f"cannot run TensorFlow op {op} on a tensor of rank {a.ndim} concretely: "
                        f"its kernel pads ranks up to {max_rank} only")
    vals = _index(paddings, "paddings")
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise _invalid(f"{op}: paddings must be a matrix with 2 columns, not {list(paddings.shape)}")
    if paddings.shape[0] != a.ndim:
        raise _invalid(f"{op}: the first dimension of paddings must be the rank {a.ndim}")
    pairs = [(vals[2 * i], vals[2 * i + 1]) for i in range(a.ndim)]
    if any(x < 0 for p in pairs for x in p):
        raise _invalid(f"{op}: paddings must be non-negative")
    n = 1
    for (lo, hi), d in zip(pairs, a.shape):
        n *= lo + d + hi
    if n > fns.MAX_TENSOR_ELEMENTS:
        raise fns.too_large(op, n)
    if a.ndim > max_rank and n != a.size and _collapsed_rank(pairs) > max_rank:
        raise CannotRun(f"cannot run TensorFlow op {op} on a tensor of rank {a.ndim} concretely: "
                        f"its kernel pads ranks up to {max_rank} only, after merging "
                        "adjacent unpadded axes")
    return pairs


def _pad_with(a, pairs, value) -> np.ndarray:
    """`a` inside a tensor of `value` (a 0-d array of a's dtype), bits
    copied: no arithmetic, a NaN's payload and -0.0 as they are."""
    out = np.empty(tuple(lo + d + hi for (lo, hi), d in zip(pairs, a.shape)), a.dtype)
    out[...] = value
    out[tuple(slice(lo, lo + d) for (lo, _), d in zip(pairs, a.shape))] = a
    return out


@_op("Pad", 2, export=_export_op("Pad", {"T": 0, "Tpaddings": 1}),
     tf_kernel=lambda a, attrs: ("Pad", list(a), {}))
def _pad(xp, args, attrs):
    """The input with `paddings[i]` (before, after) zeros around axis i (+0.0,
    0, false), its own elements copied bit for bit.  Paddings not a [rank, 2]
    matrix or negative fail as TensorFlow's kernel does; a rank past 6 is
    padded where the kernel pads it (nothing to pad, or at most 6 axes once
    adjacent unpadded axes are merged), else left to the kernel.  No
    encoding: uninterpreted in proofs, as it was as TensorFlow's kernel."""
    a, paddings = args
    pairs = _paddings("Pad", a, paddings, PAD_MAX_RANK, collapse=True)
    return (_pad_with(a, pairs, np.zeros((), a.dtype)),)


@_op("PadV2", 3, export=_export_op("PadV2", {"T": 0, "Tpaddings": 1}),
     tf_kernel=lambda a, attrs: ("PadV2", list(a), {}))
def _pad_v2(xp, args, attrs):
    """Pad with `constant_values` (a scalar of the input's dtype, its bits
    copied) instead of zeros."""
    a, paddings, value = args
    if value.dtype != a.dtype:
        raise OpError(DTYPE_MISMATCH, f"PadV2: constant_values is {value.dtype.name}, the input "
                                      f"{a.dtype.name}")
    pairs = _paddings("PadV2", a, paddings, PAD_MAX_RANK, collapse=True)
    if value.ndim != 0:
        raise _invalid(f"PadV2: constant_values must be a scalar, not {list(value.shape)}")
    return (_pad_with(a, pairs, value),)


def _mode_attr(raw: Any, where: str) -> str:
    if raw not in ("REFLECT", "SYMMETRIC"):
        raise fns.ValueFormatError(f"{where}: expected REFLECT or SYMMETRIC, got {raw!r}")
    return raw


def _export_mirror_pad(e) -> list:
    return [{"name": e.name, "op": "MirrorPad", "input": e.data + e.ctrl,
             "attr": {"T": e.T(0), "Tpaddings": e.T(1), "mode": {"s": e.attrs["mode"].encode()}}}]


@_op("MirrorPad", 2, attrs={"mode": _mode_attr}, export=_export_mirror_pad,
     tf_kernel=lambda a, attrs: ("MirrorPad", list(a), {"mode": attrs["mode"]}))
def _mirror_pad(xp, args, attrs):
    """The input padded with its own mirror image along each axis
    (`paddings` (before, after) per axis; REFLECT leaves the edge element
    out of the mirror, SYMMETRIC repeats it), elements copied bit for bit.
    A padding not below the axis's size (REFLECT) or past it (SYMMETRIC)
    fails as TensorFlow's kernel does; a rank past 5, which that kernel does
    not pad, is left to it."""
    a, paddings = args
    pairs = _paddings("MirrorPad", a, paddings, MIRROR_PAD_MAX_RANK)
    reflect = attrs["mode"] == "REFLECT"
    for (lo, hi), d in zip(pairs, a.shape):
        if max(lo, hi) > d - (1 if reflect else 0):
            raise _invalid(f"MirrorPad: paddings must be {'less than' if reflect else 'no greater than'} "
                           f"the dimension size: {lo}, {hi} against {d}")
    if all(p == (0, 0) for p in pairs):
        return (a,)
    return (_contiguous(np.pad(a, pairs, mode="reflect" if reflect else "symmetric")),)


#: OneHot's index dtypes (its OpDef's TI)
ONE_HOT_INDICES = ("uint8", "int8", "int32", "int64")


def _export_one_hot(e) -> list:
    return [{"name": e.name, "op": "OneHot", "input": e.data + e.ctrl,
             "attr": {"T": e.T(2), "TI": e.T(0), "axis": {"i": int(e.attrs.get("axis", -1))}}}]


@_op("OneHot", 4, attrs={"axis": _int_attr}, export=_export_one_hot,
     tf_kernel=lambda a, attrs: ("OneHot", list(a), {"axis": int(attrs.get("axis", -1))}))
def _one_hot(xp, args, attrs):
    """A new axis of `depth` at `axis` (-1: last): on_value where the index
    equals the position along it, off_value elsewhere (an index negative or
    not below depth: off_value all along), both scalars of the result's
    dtype, their bits copied.  An axis outside -1 and [0, rank], a depth,
    on_value or off_value that is not a scalar, or a negative depth fail as
    TensorFlow's kernel does (one_hot_op.cc: InvalidArgument)."""
    idx, depth, on, off = args
    if idx.dtype.name not in ONE_HOT_INDICES:
        raise OpError("no-kernel", f"OneHot has no kernel for indices of {idx.dtype.name}")
    if depth.dtype.name != "int32":
        raise OpError("no-kernel", f"OneHot: depth must be int32, not {depth.dtype.name}")
    if on.dtype != off.dtype:
        raise OpError(DTYPE_MISMATCH, f"OneHot: on_value is {on.dtype.name}, off_value "
                                      f"{off.dtype.name}")
    axis = int(attrs.get("axis", -1))
    if not (axis == -1 or 0 <= axis <= idx.ndim):
        raise _invalid(f"OneHot: expected axis to be -1 or in [0, {idx.ndim + 1}), got {axis}")
    for what, t in (("depth", depth), ("on_value", on), ("off_value", off)):
        if t.ndim != 0:
            raise _invalid(f"OneHot: {what} must be a scalar, not {list(t.shape)}")
    d = int(depth)
    if d < 0:
        raise _invalid(f"OneHot: depth must be non-negative, got {d}")
    if idx.size * d > fns.MAX_TENSOR_ELEMENTS:
        raise fns.too_large("OneHot", idx.size * d)
    if idx.size == 0 or d == 0:
        # (a result of no elements: no arange of the depth, which may be
        # 2**31 - 1 beside empty indices, as TensorFlow's kernel makes none)
        shape = list(idx.shape)
        shape.insert(idx.ndim if axis == -1 else axis, d)
        return (np.zeros(shape, dtype=on.dtype),)
    hot = idx.astype(np.int64)[..., None] == np.arange(d, dtype=np.int64)
    hot = np.moveaxis(hot, -1, idx.ndim if axis == -1 else axis)
    return (_contiguous(np.where(hot, on, off).astype(on.dtype, copy=False)),)


#: The ranks TensorFlow's Where kernel handles (where_op.cc: past them, and
#: for a scalar, "Unhandled input dimensions")
WHERE_MAX_RANK = 8


@_op("Where", 1, export=_export_op("Where", {"T": 0}),
     tf_kernel=lambda a, attrs: ("Where", list(a), {}))
def _where(xp, args, attrs):
    """The coordinates of the true (non-zero) elements, row-major, as an
    int64 [count, rank] tensor (TensorFlow's Where of one argument).  A NaN
    is true; a float32 or float64 subnormal is not (the kernel's comparison
    runs under denormals-are-zero), a bfloat16 one is (measured on
    TensorFlow 2.21: tests/test_where_tensorflow.py).  A scalar or a rank
    past 8 fails as the kernel does; float16, for which the kernel refuses
    to run on the CPU (Unimplemented), is left to it."""
    (a,) = args
    if a.ndim == 0 or a.ndim > WHERE_MAX_RANK:
        raise _invalid(f"Where: unhandled input dimensions: {a.ndim}")
    name = a.dtype.name
    if name == "float16":
        raise CannotRun("cannot run TensorFlow op Where on float16 concretely: TensorFlow has "
                        "no CPU kernel of it")
    truth = a if name == "bool" else (
        fns._flush(np, a) if name in ("float32", "float64") else a) != 0
    return (np.argwhere(truth).astype(np.int64).reshape(-1, a.ndim),)


#: The functions above whose result's shape (or whether they fail) depends on
#: their arguments' values, not on their kinds alone: static type inference
#: (graphdef/exporter.py) must not evaluate them on zeros.
#: Only this family's (and oracle/functions.py's) count: another family's
#: mixed-dtype function registered before this module (math's Select, whose
#: result is x's type) must not depend on the order families load in.
VALUE_DEPENDENT = frozenset(n for n, f in fns.registered(TENSORFLOW).items()
                            if f.mixed_dtypes and n not in KIND_ONLY
                            and f.impl.__module__ in (__name__, fns.__name__))


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
    if name == "Where":
        return "int64"
    if name == "OneHot":
        return arg_dtypes[2]
    return arg_dtypes[0] if arg_dtypes else None


# -- the ops ----------------------------------------------------------------------


def _define(name: str, doc: str, **kw: Any):
    """Decorator: `build` is the import of TensorFlow's `name`, an OpDef of
    this family with the keywords given (functions, static, exports, ...)."""
    def deco(build):
        define(OpDef(name, doc, build, FAMILY, **kw))
        return build
    return deco


def _export_halves(e) -> list:
    """The language's Split (two halves of a 1-D tensor)."""
    c = e.int32_const(f"{e.name}/split_dim", 0, scalar=True)
    return [c, {"name": e.name, "op": "Split", "input": [c["name"]] + e.data + e.ctrl,
                "attr": {"T": e.T(), "num_split": {"i": 2}}}]


for _tf_op in ("ZerosLike", "OnesLike"):
    define(OpDef(_tf_op, f"the function {_tf_op}", one_function(_tf_op), FAMILY,
                 functions=(_tf_op,)))


def _import_identity(b):
    if b.attr("T", "") == "DT_VARIANT":   # a TensorList (oracle/opdefs/lists.py) passes through
        return [b.add("Identity", [b.input(0)])]
    return one_function("Identity")(b)


for _tf_op in ("Identity", "StopGradient", "PreventGradient", "Snapshot"):
    define(OpDef(_tf_op, "the function Identity (a node of its own: control edges on it keep "
                 "their meaning); a TensorList passes through", _import_identity, FAMILY,
                 functions=("Identity",),
                 exports={"Identity": export_as("Identity")} if _tf_op == "Identity" else {}))



@_define("Const", "the function Const (TensorProto: typed *_val fields, tensor_content, a splat)",
         functions=("Const",))
def _import_const(b):
    value = b.tensor_attr("value")
    return [b.add("Const", [], {"value": value})]


@_define("NoOp", "the function NoOp: a join of control edges (tf.group)",
         functions=("NoOp",), exports={"NoOp": export_as("NoOp", typed=False)})
def _import_noop(b):
    b.add("NoOp", [])
    return []


@_define("IdentityN", "one Identity per input, joined by a NoOp named after the node",
         functions=("Identity", "NoOp"))
def _import_identity_n(b):
    n = b.n_inputs
    # a resource input (a function returning a handle it was given, a While
    # passing one through) is passed on as the handle: nothing to compute
    handles = {i: h for i in range(n) if (h := b.handle(i)) is not None}
    if n == 1 and not handles:
        return [b.add("Identity", [b.input(0)])]
    outs = [handles[i] if i in handles else
            b.add("Identity", [b.input(i)], part=f"output_{i}") for i in range(n)]
    b.add("NoOp", [])   # the join; the builder puts the parts under it
    return outs


@_define("Reshape", "the function Reshape (shape: a constant input), or ReshapeTo (shape "
    "computed at run time)", static=(1,),
         functions=("Reshape", "ReshapeTo"))
def _import_reshape(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("ReshapeTo", [b.input(0), b.input(1)])]
    return [b.add("Reshape", [b.input(0)], {"shape": int_list(b.static(1))})]


@_define("Tile", "the function Tile (multiples: a constant input), or TileBy (multiples computed "
    "at run time)", static=(1,),
         functions=("Tile", "TileBy"))
def _import_tile(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("TileBy", [b.input(0), b.input(1)])]
    return [b.add("Tile", [b.input(0)], {"multiples": int_list(b.static(1))})]


@_define("Fill", "the function Fill (dims: a constant input), or FillDims (dims computed at run "
    "time)", static=(0,),
         functions=("Fill", "FillDims"))
def _import_fill(b):
    b.dtype("T")
    if not b.is_static(0):
        return [b.add("FillDims", [b.input(0), b.input(1)])]
    return [b.add("Fill", [b.input(1)], {"dims": int_list(b.static(0))})]


@_define("BroadcastTo", "Reshape(Tile(Mul(x, ones(shape)), [1]*rank), shape) (shape: a constant "
    "input, else BroadcastToShape; Mul without flushing: x*1 is x bit for bit; the error of an input that does not "
    "broadcast to the shape)", static=(1,),
         functions=("BroadcastToShape", "Const", "Mul", "Tile", "Reshape"))
def _import_broadcast_to(b):
    # x * ones(shape) has x's values (x*1 == x bit for bit in IEEE arithmetic:
    # -0.0, subnormals, infinities; NaN stays NaN; integers exactly) and the
    # shape broadcast(x.shape, shape), which is `shape` exactly when
    # BroadcastTo is defined: x of rank <= len(shape), each dimension 1 or
    # equal.  Otherwise TensorFlow fails and so does the model: Mul fails on
    # incompatible dimensions; Tile with len(shape) multiples fails when the
    # rank is larger; Reshape to `shape` fails when a dimension is larger (the
    # element count is then larger too).  Constant folding emits BroadcastTo
    # (x*1, x+0 with a larger constant) with an int32 shape constant.
    t = b.dtype("T")
    if not b.is_static(1):   # shape computed at run time (oracle/opdefs/array.py)
        return [b.add("BroadcastToShape", [b.input(0), b.input(1)])]
    shape = int_list(b.static(1))
    if any(d < 0 for d in shape):
        b.reject(f"the shape {shape} has a negative dimension")
    ones = b.add("Const", [], {"value": Tensor(np.ones(shape, dtype=t), t)}, part="ones")
    y = b.add("Mul", [b.input(0), ones], part="broadcast")
    y = b.add("Tile", [y], {"multiples": [1] * len(shape)}, part="rank")
    return [b.add("Reshape", [y], {"shape": shape})]


@_define("ExpandDims", "the function ExpandDims (axis: a constant input), or ExpandDimsAt (axis "
    "computed at run time)", static=(1,),
         functions=("ExpandDims", "ExpandDimsAt"))
def _import_expand_dims(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("ExpandDimsAt", [b.input(0), b.input(1)])]
    return [b.add("ExpandDims", [b.input(0)], {"axis": int_list(b.static(1))[0]})]


@_define("Squeeze", "the function Squeeze",
         functions=("Squeeze",))
def _import_squeeze(b):
    b.dtype("T")
    return [b.add("Squeeze", [b.input(0)],
                  {"squeeze_dims": [int(x) for x in b.attr("squeeze_dims", [])]})]


@_define("ConcatV2", "a chain of ConcatAxis (axis: a constant last input), or of ConcatAxisAt "
         "(axis computed at run time: an int32/int64 scalar or 1-element vector)", static=(-1,),
         functions=("Identity", "ConcatAxis", "ConcatAxisAt"), exports={"Concat": _export_concat})
def _import_concat(b):
    b.dtype("T")
    n = b.n_inputs - 1
    acc = b.input(0)
    if not b.is_static(n):   # the axis computed at run time: an operand of every link
        if b.attr("Tidx", False):   # (absent: TensorFlow's default, int32)
            index_dtype(b, "Tidx")
        if n == 1:
            return [b.add("Identity", [acc])]
        for i in range(1, n):
            acc = b.add("ConcatAxisAt", [acc, b.input(i), b.input(n)],
                        part=None if i == n - 1 else f"concat_{i}")
        return [acc]
    axis = int_list(b.static(n))[0]
    if n == 1:
        return [b.add("Identity", [acc])]
    for i in range(1, n):
        acc = b.add("ConcatAxis", [acc, b.input(i)], {"axis": axis},
                    part=None if i == n - 1 else f"concat_{i}")
    return [acc]


@_define("Pack", "ExpandDims of each input, then a chain of ConcatAxis",
         functions=("ExpandDims", "Identity", "ConcatAxis"))
def _import_pack(b):
    b.dtype("T")
    axis = int(b.attr("axis", 0))
    n = b.n_inputs
    parts = [b.add("ExpandDims", [b.input(i)], {"axis": axis}, part=f"expand_{i}")
             for i in range(n)]
    if n == 1:
        return [b.add("Identity", [parts[0]])]
    acc = parts[0]
    for i in range(1, n):
        acc = b.add("ConcatAxis", [acc, parts[i]], {"axis": axis if axis >= 0 else axis},
                    part=None if i == n - 1 else f"concat_{i}")
    return [acc]


@_define("Split", "one SplitPart per output (axis: a constant input), joined by a NoOp",
    static=(0,),
         functions=("SplitPart", "NoOp"), exports={"Split": _export_halves})
def _import_split(b):
    b.dtype("T")
    axis = int_list(b.static(0))[0]
    n = int(b.attr("num_split"))
    outs = [b.add("SplitPart", [b.input(1)], {"axis": axis, "num_split": n, "index": i},
                  part=f"output_{i}") for i in range(n)]
    b.add("NoOp", [])
    return outs


@_define("Shape", "a Const of the input's shape where it is declared (a feed, a constant, a "
    "variable's read where no Assign of the program can change the variable's shape), else "
    "the function Shape (out_type int32 or int64)",
         functions=("Shape", "Const"), type_defaults={"out_type": "DT_INT32"})
def _import_shape(b):
    out_type = b.dtype("out_type")
    if out_type not in ("int32", "int64"):
        b.reject("out_type must be int32 or int64")
    shape = b.declared_shape(0)
    if shape is None:
        return [b.add("Shape", [b.input(0)], {"out_type": out_type})]
    # (TensorFlow's Shape runs after its input: so does the constant; of a
    # variable's read, it becomes the function Shape again where an Assign
    # may change the variable's shape: graphdef/importer.py shape_const)
    return [b.shape_const(0, shape, out_type)]


# -- state ------------------------------------------------------------------


@_define("ShapeN", "one Shape per input (a Const where the input's shape is declared, as "
         "Shape's)",
         functions=("Shape", "Const", "NoOp"), type_defaults={"out_type": "DT_INT32"})
def _import_shape_n(b):
    out_type = index_dtype(b, "out_type")
    outs = []
    for i in range(b.n_inputs):
        shape = b.declared_shape(i)
        if shape is None:
            outs.append(b.add("Shape", [b.input(i)], {"out_type": out_type}, part=f"output_{i}"))
        else:
            outs.append(b.shape_const(i, shape, out_type, part=f"output_{i}"))
    b.add("NoOp", [])
    return outs


@_define("Size", "the function Size (out_type int32 or int64)",
         functions=("Size",), type_defaults={"out_type": "DT_INT32"})
def _import_size(b):
    return [b.add("Size", [b.input(0)], {"out_type": index_dtype(b, "out_type")})]


@_define("Rank", "the function Rank (int32)",
         functions=("Rank",))
def _import_rank(b):
    return [b.add("Rank", [b.input(0)])]


@_define("Range", "the function Range (integer Tidx; float operands stop a concrete run)",
         functions=("Range",))
def _import_range(b):
    b.dtype("Tidx")
    return [b.add("Range", [b.input(0), b.input(1), b.input(2)])]


@_define("StridedSlice", "the function StridedSlice (begin, end, strides: tensors; the five masks)",
         functions=("StridedSlice",))
def _import_strided_slice(b):
    b.dtype("T")
    index_dtype(b, "Index")
    attrs = {k: int(b.attr(k, 0)) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                            "new_axis_mask", "shrink_axis_mask")}
    return [b.add("StridedSlice", [b.input(i) for i in range(4)], attrs)]


@_define("StridedSliceGrad", "the function StridedSliceGrad (zeros of the shape operand, dy where "
    "StridedSlice reads)",
         functions=("StridedSliceGrad",))
def _import_strided_slice_grad(b):
    b.dtype("T")
    index_dtype(b, "Index")
    attrs = {k: int(b.attr(k, 0)) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                            "new_axis_mask", "shrink_axis_mask")}
    return [b.add("StridedSliceGrad", [b.input(i) for i in range(5)], attrs)]


@_define("Slice", "the function Slice (begin, size: tensors)",
         functions=("Slice",))
def _import_slice(b):
    b.dtype("T")
    index_dtype(b, "Index")
    return [b.add("Slice", [b.input(i) for i in range(3)])]


@_define("GatherV2", "the function GatherV2 (batch_dims; an index out of range: shape-mismatch)",
         functions=("GatherV2",))
def _import_gather_v2(b):
    b.dtype("Tparams")
    index_dtype(b, "Tindices")
    return [b.add("GatherV2", [b.input(i) for i in range(3)],
                  {"batch_dims": int(b.attr("batch_dims", 0))})]


@_define("Unpack", "one UnpackPart per output, joined by a NoOp",
         functions=("UnpackPart", "NoOp"))
def _import_unpack(b):
    b.dtype("T")
    num, axis = int(b.attr("num")), int(b.attr("axis", 0))
    outs = [b.add("UnpackPart", [b.input(0)], {"axis": axis, "num": num, "index": i},
                  part=f"output_{i}") for i in range(num)]
    b.add("NoOp", [])
    return outs


@_define("BroadcastGradientArgs", "the function BroadcastGradientArgs (two results)",
    output_args=("r0", "r1"),
         functions=("BroadcastGradientArgs",))
def _import_bcast_grad_args(b):
    index_dtype(b, "T")
    r0 = b.add("BroadcastGradientArgs", [b.input(0), b.input(1)])
    return [r0, DataIn(r0.node, 1)]


@_define("DynamicStitch", "the function DynamicStitch/N (N pairs of indices and data, N <= 16; "
    "indices that leave a row unset stop a concrete run)",
         functions=tuple(f"DynamicStitch/{n}" for n in range(1, MAX_STITCH + 1)))
def _import_dynamic_stitch(b):
    b.dtype("T")
    n = int(b.attr("N"))
    if not 1 <= n <= MAX_STITCH or b.n_inputs != 2 * n:
        b.reject(f"DynamicStitch of N={n} pairs is not modelled (1 to {MAX_STITCH})")
    return [b.add(f"DynamicStitch/{n}", [b.input(i) for i in range(2 * n)])]


@_define("Transpose", "the function Transpose (perm: a tensor)",
         functions=("Transpose",))
def _import_transpose(b):
    b.dtype("T")
    index_dtype(b, "Tperm")
    return [b.add("Transpose", [b.input(0), b.input(1)])]


@_define("MirrorPad", "the function MirrorPad (paddings: a tensor; mode REFLECT or SYMMETRIC)",
         functions=("MirrorPad",))
def _import_mirror_pad(b):
    b.dtype("T")
    index_dtype(b, "Tpaddings")
    mode = b.attr("mode", "")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("REFLECT", "SYMMETRIC"):
        b.reject(f"MirrorPad's mode must be REFLECT or SYMMETRIC, not {mode!r}")
    return [b.add("MirrorPad", [b.input(0), b.input(1)], {"mode": mode})]


@_define("OneHot", "the function OneHot (depth, on_value, off_value: tensors; axis)",
         functions=("OneHot",))
def _import_one_hot(b):
    b.dtype("T")
    ti = b.dtype("TI")
    if ti not in ONE_HOT_INDICES:
        b.reject(f"OneHot's TI must be one of {', '.join(ONE_HOT_INDICES)}, not {ti}")
    return [b.add("OneHot", [b.input(i) for i in range(4)], {"axis": int(b.attr("axis", -1))})]


@_define("Where", "the function Where (one argument: the coordinates of its true elements)",
         functions=("Where",))
def _import_where(b):
    b.dtype("T")
    return [b.add("Where", [b.input(0)])]


@_define("Pad", "the function Pad (paddings: a tensor)", functions=("Pad",))
def _import_pad(b):
    b.dtype("T")
    index_dtype(b, "Tpaddings")
    return [b.add("Pad", [b.input(0), b.input(1)])]


@_define("PadV2", "the function PadV2 (paddings, constant_values: tensors)", functions=("PadV2",))
def _import_pad_v2(b):
    b.dtype("T")
    index_dtype(b, "Tpaddings")
    return [b.add("PadV2", [b.input(0), b.input(1), b.input(2)])]


@_define("ReverseV2", "the function ReverseV2 (axis: a tensor)", functions=("ReverseV2",))
def _import_reverse_v2(b):
    b.dtype("T")
    index_dtype(b, "Tidx")
    return [b.add("ReverseV2", [b.input(0), b.input(1)])]


# -- TensorFlow's kernels as functions, and the pure ops tfsem does not compute
# (math.py says how an entry's `kernel` and `known(..., uninterpreted=True)`
# are read) --------------------------------------------------------------------

#: Data movement and index ops: no arithmetic on the elements, only their
#: positions (a function of the inputs whatever the thread count).
MOVEMENT_KERNEL = "data movement or index computation: no arithmetic on the elements"
#: ScatterNd on CPU: one loop over the indices, in order (its sums of
#: duplicate indices in that order).
SCATTER_KERNEL = "a scatter on CPU: one loop over the indices, in order"

kernels_are_functions("""
    BroadcastGradientArgs BroadcastTo ConcatV2 ExpandDims Fill GatherV2 Identity OnesLike Pack
    Range Rank Reshape Shape ShapeN Size Slice Split Squeeze StridedSlice StridedSliceGrad Tile
    Transpose Unpack ZerosLike ReverseV2 Pad PadV2 Where MirrorPad OneHot
""", MOVEMENT_KERNEL)

known("""
    ConjugateTranspose Gather Reverse SplitV
    InvertPermutation
""", FAMILY, uninterpreted=True, kernel=MOVEMENT_KERNEL)
known("ScatterNd", FAMILY, uninterpreted=True, kernel=SCATTER_KERNEL)
#: Kernels run as functions (a program may name `tf.Bitcast/1/1`) whose ops
#: graph import refuses: not known to be free of effects there.
known("Bitcast BroadcastArgs", FAMILY, kernel=MOVEMENT_KERNEL)
#: Refused at import, but its output args name the ports of a function body.
known("Unique", FAMILY, output_args=("y", "idx"))
