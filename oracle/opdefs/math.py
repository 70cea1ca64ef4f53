"""The math family: element-wise arithmetic, Cast, MatMul, comparisons and the
reductions with constant axes (one OpDef per TensorFlow op: its import, its
functions' value semantics, Z3 encodings and exports; oracle/opdefs).

A model is given only where numpy computes bit for bit what TensorFlow's CPU
kernel computes: integer arithmetic (wrapping), IEEE-exact float operations
(+, -, *, /, sqrt, comparisons), and data movement.  Float reductions,
float MatMul (Eigen's blocked GEMM, its summation order) and transcendental
functions (Eigen's vectorized exp, pow, rsqrt) have no such model: their
implementation raises CannotRun, TensorFlow's kernel stands in where it is
installed (`tf_kernel`, docs/kernels.md), and in proofs they are
uninterpreted functions (no `encoding`).

TensorFlow's Add, AddV2, Sub, Mul, Neg, Maximum and Minimum are the
language's own functions (Add, Sub, Mul, Neg, Max, Min: oracle/functions.py,
encoded by the checker itself) or, on the dtypes TensorFlow's CPU runtime
flushes, their `.ftz` variants, registered here with the TensorFlow
family's own.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import functions as fns
from .. import kernels as _kernels
from ..values import DTYPE_MISMATCH
from ..functions import (_GEMM_ORDER, _REDUCTION_ORDER, BROADCASTING, FLOAT_DTYPES,
                         FLUSHED_DTYPES, NUMERIC, SIGNED, TENSORFLOW, CannotRun, Function,
                         OpError, ShapeError, _axes, _bool_attr, _dtype_attr, _flush,
                         _float_only, _int_list, _is_float, _kernel, _no_float, dtype_name)
from .registry import (Elementwise, OpDef, define, export_as, flushed, function, index_dtype,
                       kernels_are_functions, known, one_function)

FAMILY = "math"

_INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
DTYPES_ALL = frozenset(_INTEGERS | FLOAT_DTYPES | {"bool"})


def _no_encoding(op: str, dtype: str):
    return ValueError(f"no encoding for {op} on {dtype}")


# -- encodings (the generic checker's element terms; checking/generic.py) -----
#
# Each is a function of the z3 module (this package never imports it), the
# dtype and the operands' elements: IEEE division and square root rounded to
# nearest even (numpy's divide and sqrt are correctly rounded), absolute
# value (wrapping at the minimum integer, as numpy's abs), x * x and
# (x - y) * (x - y) with one rounding per operation, as the implementations
# compute them.


def _z3_div(z3, dtype, xs):
    if dtype in FLOAT_DTYPES:
        return z3.fpDiv(z3.RNE(), xs[0], xs[1])
    raise _no_encoding("div", dtype)


def _z3_sqrt(z3, dtype, xs):
    if dtype in FLOAT_DTYPES:
        return z3.fpSqrt(z3.RNE(), xs[0])
    raise _no_encoding("sqrt", dtype)


def _z3_abs(z3, dtype, xs):
    x = xs[0]
    if dtype in _INTEGERS:
        if dtype.startswith("u"):
            raise _no_encoding("abs", dtype)  # no kernel
        return z3.If(x < 0, -x, x)
    if dtype in FLOAT_DTYPES:
        return z3.fpAbs(x)
    raise _no_encoding("abs", dtype)


def _z3_square(z3, dtype, xs):
    x = xs[0]
    if dtype in _INTEGERS:
        return x * x
    if dtype in FLOAT_DTYPES:
        return z3.fpMul(z3.RNE(), x, x)
    raise _no_encoding("square", dtype)


def _z3_sqdiff(z3, dtype, xs):
    if dtype in _INTEGERS:
        d = xs[0] - xs[1]
        return d * d
    if dtype in FLOAT_DTYPES:
        rne = z3.RNE()
        d = z3.fpSub(rne, xs[0], xs[1])
        return z3.fpMul(rne, d, d)
    raise _no_encoding("sqdiff", dtype)


DIV = Elementwise("div", np.divide, _z3_div)
SQRT = Elementwise("sqrt", np.sqrt, _z3_sqrt)
ABS = Elementwise("abs", np.abs, _z3_abs)
SQUARE = Elementwise("square", lambda a: np.multiply(a, a), _z3_square)
SQDIFF = Elementwise("sqdiff", lambda a, b: np.multiply(np.subtract(a, b), np.subtract(a, b)),
                     _z3_sqdiff)


# -- exports ------------------------------------------------------------------


def _export_cast(e) -> list:
    return [{"name": e.name, "op": "Cast", "input": e.data + e.ctrl,
             "attr": {"SrcT": e.T(), "DstT": {"type": e.tf_dtype(e.attrs["DstT"])},
                      "Truncate": {"b": False}}}]


def _export_matmul(e) -> list:
    return [{"name": e.name, "op": "MatMul", "input": e.data + e.ctrl,
             "attr": {"T": e.T(), "transpose_a": {"b": bool(e.attrs.get("transpose_a"))},
                      "transpose_b": {"b": bool(e.attrs.get("transpose_b"))}}}]


def _export_reduction(tf_op: str, typed: bool = True):
    def export(e) -> list:
        c = e.int32_const(f"{e.name}/reduction_indices", e.attrs["axes"])
        return [c, {"name": e.name, "op": tf_op, "input": e.data + [c["name"]] + e.ctrl,
                    "attr": {**({"T": e.T()} if typed else {}), "Tidx": {"type": "DT_INT32"},
                             "keep_dims": {"b": bool(e.attrs.get("keep_dims"))}}}]
    return export


# -- value semantics ------------------------------------------------------------


def _batched(on, binary: bool):
    """The batched form of `on(xp, *arrays, lead)`: the axes after the batch
    axis are one tensor (a NaN's bits depend on its place: fns.nan_bits)."""
    def batched(xp, args, attrs):
        return on(xp, *(fns._pad_batched(args) if binary else args), lead=1)
    return batched


def _realdiv_on(xp, a, b, lead=0):
    _float_only("RealDiv", a, b)
    return (fns.nan_bits(xp, xp.divide(a, b), a, b, lead=lead),)


@function("RealDiv", 2, 1, batched=_batched(_realdiv_on, True), encoding=DIV,
          export=export_as("RealDiv"))
def _realdiv(xp, args, attrs):
    """Elementwise IEEE division of floats (TensorFlow's RealDiv, Div on
    floats; a NaN's bits as TensorFlow's: functions.nan_bits)."""
    return _realdiv_on(xp, *args)


def _int_division(op: str, xp, a, b, fn):
    _kernel(op, NUMERIC, a, b)
    if _is_float(a):
        raise CannotRun(f"cannot run TensorFlow op {op} on floating-point tensors concretely: "
                        "tfsem has no bit-exact model of it; in proofs it is an "
                        "uninterpreted function")
    if xp.any(b == 0):
        raise OpError("division-by-zero", f"{op}: integer division by zero")
    return (fn(a, b),)


@function("FloorMod", 2, 1, batched=BROADCASTING,
          tf_kernel=lambda a, attrs: ("FloorMod", list(a), {}), export=export_as("FloorMod"))
def _floormod(xp, args, attrs):
    """Integer remainder of floor division (sign of the divisor); division by zero fails."""
    return _int_division("FloorMod", xp, args[0], args[1], xp.mod)


@function("FloorDiv", 2, 1, batched=BROADCASTING,
          tf_kernel=lambda a, attrs: ("FloorDiv", list(a), {}), export=export_as("FloorDiv"))
def _floordiv(xp, args, attrs):
    """Integer floor division; division by zero fails."""
    return _int_division("FloorDiv", xp, args[0], args[1], xp.floor_divide)


def _square_on(xp, a, lead=0):
    _kernel("Square", NUMERIC, a)
    return (fns.nan_bits(xp, xp.multiply(a, a), a, lead=lead),)


@function("Square", 1, 1, batched=_batched(_square_on, False), encoding=SQUARE,
          export=export_as("Square"))
def _square(xp, args, attrs):
    """x * x (one rounding, as TensorFlow's Square; a NaN's bits as
    TensorFlow's: functions.nan_bits)."""
    return _square_on(xp, *args)


_SQDIFF_DTYPES = frozenset({"int32", "int64"}) | FLOAT_DTYPES


def _squared_difference_on(xp, a, b, lead=0):
    _kernel("SquaredDifference", _SQDIFF_DTYPES, a, b)
    d = xp.subtract(a, b)
    return (fns.nan_bits(xp, xp.multiply(d, d), a, b, lead=lead),)


@function("SquaredDifference", 2, 1, batched=_batched(_squared_difference_on, True),
          encoding=SQDIFF, export=export_as("SquaredDifference"))
def _squared_difference(xp, args, attrs):
    """(x - y) * (x - y), as TensorFlow's SquaredDifference (kernels for
    int32, int64 and the floats only; a NaN's bits as TensorFlow's:
    functions.nan_bits)."""
    return _squared_difference_on(xp, *args)


def _sqrt_on(xp, a, lead=0):
    _float_only("Sqrt", a)
    return (fns.nan_bits(xp, xp.sqrt(a), a, lead=lead),)


@function("Sqrt", 1, 1, batched=_batched(_sqrt_on, False), encoding=SQRT,
          export=export_as("Sqrt"))
def _sqrt(xp, args, attrs):
    """IEEE square root (correctly rounded, as Eigen's vectorized sqrt; a
    NaN's bits as TensorFlow's: functions.nan_bits)."""
    return _sqrt_on(xp, *args)


@function("Abs", 1, 1, batched=True, encoding=ABS, export=export_as("Abs"))
def _abs(xp, args, attrs):
    """Absolute value (the most negative integer stays itself, as in C++; no
    unsigned or bool kernel)."""
    _kernel("Abs", SIGNED, *args)
    return (xp.abs(args[0]),)


#: Casts from a float to these dtypes give, for NaN, infinities and values
#: whose truncation is out of the dtype's range, results that depend on the
#: element's position in the tensor (TensorFlow 2.21's CPU kernel converts
#: packets and the tail differently: 300.0 -> int8 is 127 in one place, 44 in
#: another).  Such a cast has no defined value: it cannot run.
_CAST_UNDEFINED = frozenset({"int8", "int16", "uint8", "uint16", "uint32"})


def _cast_values(xp, a, dst: str):
    """TensorFlow's CPU Cast of array `a` to dtype `dst`, bit for bit:

    * to bool: x != 0 (a float32/float64 subnormal counts as zero);
    * integer or bool to integer: the low bits (wrapping), bool as 0/1;
    * integer to float: rounded to nearest even;
    * float to float: rounded to nearest even, with the flushes TensorFlow's
      conversions make: a float32 or float64 subnormal argument is zero
      (except float32 -> bfloat16, a bit operation), a bfloat16 subnormal
      going to float64 is zero, float64 -> float32 and float64 -> bfloat16
      (through float32) flush a subnormal float32 result (tininess after
      rounding: docs/subnormal-flush.md); float64 -> float16 rounds through
      float32 too (twice);
    * float to integer: truncated toward zero; NaN, infinities and values out
      of range give the lowest value for int32 and int64, 2**63 for uint64
      (whose range here is [-2**63, 2**64): negatives wrap), and no defined
      result for the narrower integers (_CAST_UNDEFINED: cannot run, and
      TensorFlow's kernel stands in where it is installed: `_cast_kernel`).
    """
    src = dtype_name(a.dtype)
    if src == dst:
        return a
    from ..values import DTYPES
    target = DTYPES[dst]
    if src in FLOAT_DTYPES:
        if (src in ("float32", "float64") and (src, dst) != ("float32", "bfloat16")) \
                or (src, dst) == ("bfloat16", "float64"):
            a = _flush(xp, a)
        if dst == "bool":
            return a != 0
        if dst in FLOAT_DTYPES:
            if src == "float64" and dst in ("float32", "bfloat16"):
                # (the CPU flushes a result below the smallest normal after
                # rounding to 24 bits with an unbounded exponent: a float64
                # just below it that rounds up to it on the subnormal grid
                # is flushed too (measured on TensorFlow 2.21: tiny * (1 -
                # 2^-24.5) is 0.0); the scaled conversion rounds so)
                tiny = np.float32(np.finfo(np.float32).tiny)
                with np.errstate(all="ignore"):
                    r = a.astype(np.float32)
                    up = (xp.abs(r) == tiny) & (xp.abs((a * 2.0 ** 64).astype(np.float32))
                                                < tiny * np.float32(2.0 ** 64))
                if bool(xp.any(up)):
                    r = xp.where(up, xp.copysign(xp.zeros_like(r), r), r)
                return _flush(xp, r).astype(target)
            if src == "float64" and dst == "float16":
                # (through float32, as Eigen's half(double) is: rounded twice,
                # measured on TensorFlow 2.21: 1 + 2^-11 + 2^-40 is 1.0, not
                # 1 + 2^-10; 65520 - 2^-30 is inf, not 65504)
                with np.errstate(over="ignore"):
                    return a.astype(np.float32).astype(target)
            return a.astype(target)
        t = xp.trunc(a.astype(np.float64))
        info = np.iinfo(target)
        lo, hi = float(int(info.min)), float(int(info.max) + 1)   # exact powers of two
        if dst == "uint64":
            lo = -(2.0 ** 63)
        ok = (t >= lo) & (t < hi)
        safe = xp.where(ok, t, 0.0)
        if dst in _CAST_UNDEFINED:
            if not bool(xp.all(ok)):
                raise CannotRun(f"cannot run TensorFlow op Cast to {dst}: a float that is NaN, "
                                f"infinite or out of {dst} range has no value tfsem models "
                                "(TensorFlow's kernel gives different results by the element's "
                                "position; its kernel stands in where TensorFlow is installed)")
            return safe.astype(target)
        if dst == "uint64":
            neg = safe < 0
            r = xp.where(neg, xp.where(neg, safe, 0.0).astype(np.int64).view(np.uint64),
                         xp.where(neg, 0.0, safe).astype(np.uint64))
            return xp.where(ok, r, np.uint64(2 ** 63))
        return xp.where(ok, safe.astype(target), target.type(info.min))
    if dst == "bool":
        return a != 0
    return a.astype(target)


#: The float-to-float casts whose NaN bits numpy does not give as
#: TensorFlow's kernel does (measured on TensorFlow 2.21, tensors of 1 to
#: 40, 78, 100 and 1,003 elements, eager and in a tf.function): float32 ->
#: bfloat16 makes a NaN inside one of Eigen's whole packets (8 elements, by
#: flat index: i < (n // 8) * 8) the canonical 0x7fc0, and one in the
#: scalar tail the canonical NaN of its sign (0x7fc0/0xffc0, which
#: ml_dtypes gives everywhere); float16 -> float32
#: and -> float64 quiet a signaling NaN (F16C's conversion; numpy keeps it
#: signaling); float32, bfloat16 and float64 -> float16 go through float32
#: and convert as F16C does: sign, quiet bit, the top 10 bits of float32's
#: payload (numpy keeps a signaling NaN signaling, ml_dtypes drops a
#: bfloat16 payload).
_NAN_CASTS = frozenset({("float32", "bfloat16"), ("float16", "float32"), ("float16", "float64"),
                        ("float32", "float16"), ("bfloat16", "float16"), ("float64", "float16")})


def _nan_bits_as_tensorflow(xp, a, r, src: str, dst: str, lead: int = 0):
    """`r` (= `a` cast to `dst`) with its NaNs given TensorFlow's bits
    (_NAN_CASTS); the axes after the first `lead` (1 for a batch axis) are
    one tensor."""
    with np.errstate(invalid="ignore"):
        nan = xp.isnan(a.astype(np.float64) if src == "bfloat16" else a)
    if not bool(nan.any()):
        return r
    if dst == "bfloat16":
        shape = r.shape[lead:]
        n = math.prod(shape)
        packets = (xp.arange(n) < n // 8 * 8).reshape(shape)
        bits = xp.where(packets, np.uint16(0x7fc0), r.view(np.uint16))
    elif src == "float16":
        quiet = np.uint32(1 << 22) if dst == "float32" else np.uint64(1 << 51)
        bits = r.view(np.uint32 if dst == "float32" else np.uint64) | quiet
    else:
        if src == "bfloat16":
            f32 = a.view(np.uint16).astype(np.uint32) << np.uint32(16)
        else:
            with np.errstate(all="ignore"):
                f32 = (a if src == "float32" else a.astype(np.float32)).view(np.uint32)
        bits = (((f32 >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7e00)
                | ((f32 >> np.uint32(13)) & np.uint32(0x3ff))).astype(np.uint16)
    return xp.where(nan, bits.view(r.dtype), r)


def cast_array(xp, a, dst: str, lead: int = 0):
    """TensorFlow's CPU Cast of `a` to `dst`, bit for bit (`_cast_values`;
    NaN bits as TensorFlow's conversions make them: _NAN_CASTS, where the
    axes after the first `lead` are one tensor)."""
    r = _cast_values(xp, a, dst)
    src = dtype_name(a.dtype)
    if (src, dst) in _NAN_CASTS:
        return _nan_bits_as_tensorflow(xp, a, r, src, dst, lead)
    return r


def _cast_impl(xp, args, attrs):
    """The input converted to DstT as TensorFlow's CPU kernel does (see
    `cast_array`)."""
    (a,) = args
    return (cast_array(xp, a, attrs["DstT"]),)


def _cast_batched(xp, args, attrs):
    (a,) = args
    return (cast_array(xp, a, attrs["DstT"], lead=1),)


def _cast_kernel(a, attrs):
    """TensorFlow's own Cast where the model cannot run (a float out of a
    narrow integer's range: _CAST_UNDEFINED): one thread, a function of the
    whole tensor (oracle/kernels.py DETERMINISTIC says why)."""
    return "Cast", list(a), {"DstT": _kernels.DT_NAMES[attrs["DstT"]], "Truncate": False}


_CAST = Function("Cast", 1, 1, _cast_impl, doc=(_cast_impl.__doc__ or "").strip(),
                 attrs={"DstT": _dtype_attr}, family=TENSORFLOW, casts=True,
                 batched_impl=_cast_batched, export=_export_cast, tf_kernel=_cast_kernel)


_MATMUL_DTYPES = frozenset({"int32", "int64"}) | FLOAT_DTYPES


@function("MatMul", 2, 1, batched=False,
          attrs={"transpose_a": _bool_attr, "transpose_b": _bool_attr},
          tf_kernel=lambda a, attrs: ("MatMul", list(a),
                                      {"transpose_a": bool(attrs.get("transpose_a")),
                                       "transpose_b": bool(attrs.get("transpose_b"))}),
          export=_export_matmul)
def _matmul(xp, args, attrs):
    """Matrix product of 2-D tensors (int32 and int64, wrapping: TensorFlow has
    no other integer kernel; float products are not modelled)."""
    a, b = args
    _kernel("MatMul", _MATMUL_DTYPES, a, b)
    _no_float("MatMul", a, b, why=_GEMM_ORDER)
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError("MatMul needs 2-D tensors")
    if attrs.get("transpose_a"):
        a = a.T
    if attrs.get("transpose_b"):
        b = b.T
    if a.shape[1] != b.shape[0]:
        raise ShapeError("MatMul: inner dimensions differ")
    return (xp.matmul(a, b),)


def _reduce(name: str, xp, args, attrs, fn):
    (a,) = args
    _kernel(name, NUMERIC, a)
    _no_float(name, a, why=_REDUCTION_ORDER)
    axes = _axes(a, attrs["axes"])   # (a scalar: only no axes at all)
    if a.ndim == 0:
        return (a,)
    return (fn(a, axes, attrs.get("keep_dims", False)),)


_REDUCE_ATTRS = {"axes": _int_list, "keep_dims": _bool_attr}


def _reduce_kernel(op: str):
    def form(a, attrs):
        return op, [a[0], np.asarray(attrs["axes"], dtype=np.int32)], \
            {"keep_dims": bool(attrs.get("keep_dims", False))}
    return form


@function("Sum", 1, 1, batched=False, attrs=_REDUCE_ATTRS,
          tf_kernel=_reduce_kernel("Sum"), export=_export_reduction("Sum"))
def _sum(xp, args, attrs):
    """Sum over `axes` (integers, wrapping)."""
    return _reduce("Sum", xp, args, attrs,
                   lambda a, ax, k: xp.sum(a, axis=ax, keepdims=k, dtype=a.dtype))


@function("Mean", 1, 1, batched=False, attrs=_REDUCE_ATTRS,
          tf_kernel=_reduce_kernel("Mean"), export=_export_reduction("Mean"))
def _mean(xp, args, attrs):
    """Mean over `axes` (integers: the sum divided by the count, truncated
    toward zero as in C++; TensorFlow sums 8-, 16- and 32-bit integers in a
    64-bit accumulator, so only a 64-bit sum wraps; the mean of no
    elements is 0: TensorFlow fills an empty reduction's result with the
    reducer's identity, for MeanReducer NumTraits<T>::quiet_NaN(), which is
    0 for an integer (reduction_ops_common.h; measured on TensorFlow 2.21))."""
    def mean(a, ax, k):
        count = 1
        for x in ax:
            count *= a.shape[x]
        if count == 0:
            return xp.zeros_like(xp.sum(a, axis=ax, keepdims=k, dtype=a.dtype))
        acc = a.dtype if a.dtype.itemsize == 8 else np.dtype(
            np.uint64 if a.dtype.kind == "u" else np.int64)
        s = xp.sum(a, axis=ax, keepdims=k, dtype=acc)
        q = s // acc.type(count)
        return (q + ((s % acc.type(count) != 0) & (s < 0)).astype(acc)).astype(a.dtype)
    return _reduce("Mean", xp, args, attrs, mean)


@function("ReduceMax", 1, 1, batched=False, attrs=_REDUCE_ATTRS,
          tf_kernel=_reduce_kernel("Max"), export=_export_reduction("Max"))
def _reduce_max(xp, args, attrs):
    """Maximum over `axes` (integers; an empty maximum is the lowest integer)."""
    def rmax(a, ax, k):
        return xp.max(a, axis=ax, keepdims=k, initial=np.iinfo(a.dtype).min)
    return _reduce("Max", xp, args, attrs, rmax)


@function("ReduceMin", 1, 1, batched=False, attrs=_REDUCE_ATTRS,
          tf_kernel=_reduce_kernel("Min"), export=_export_reduction("Min"))
def _reduce_min(xp, args, attrs):
    """Minimum over `axes` (integers; an empty minimum is the highest integer)."""
    def rmin(a, ax, k):
        return xp.min(a, axis=ax, keepdims=k, initial=np.iinfo(a.dtype).max)
    return _reduce("Min", xp, args, attrs, rmin)




@function("Prod", 1, 1, batched=False, attrs=_REDUCE_ATTRS,
          tf_kernel=_reduce_kernel("Prod"), export=_export_reduction("Prod"))
def _prod(xp, args, attrs):
    """Product over `axes` (integers, wrapping; the product of no elements
    is 1).  TensorFlow's ProdReducer multiplies in the input's own dtype,
    and multiplication modulo 2^bits is associative and commutative, so
    the order Eigen's blocking takes does not change a bit of an integer
    product (measured on every integer dtype's extremes:
    tests/test_prod_tensorflow.py).  Float products are not modelled (their
    rounding depends on that order): TensorFlow's kernel stands in."""
    return _reduce("Prod", xp, args, attrs,
                   lambda a, ax, k: xp.prod(a, axis=ax, keepdims=k, dtype=a.dtype))


def _logical_reduce(name: str, xp, args, attrs, fn):
    (a,) = args
    if a.dtype != np.bool_:
        raise OpError("no-kernel", f"{name} has no kernel for {dtype_name(a.dtype)}")
    axes = _axes(a, attrs["axes"])   # (out of range or twice: an error value, as Sum's)
    if a.ndim == 0:
        return (a,)
    return (xp.asarray(fn(a, axis=axes, keepdims=attrs.get("keep_dims", False)),
                       dtype=np.bool_),)


@function("All", 1, 1, batched=False, attrs=_REDUCE_ATTRS, casts=True,
          export=_export_reduction("All", typed=False))
def _all(xp, args, attrs):
    """Logical and over `axes` of a bool tensor (TensorFlow's All; of no
    elements: true).  No arithmetic, so no order to reproduce."""
    return _logical_reduce("All", xp, args, attrs, xp.all)


@function("Any", 1, 1, batched=False, attrs=_REDUCE_ATTRS, casts=True,
          export=_export_reduction("Any", typed=False))
def _any(xp, args, attrs):
    """Logical or over `axes` of a bool tensor (TensorFlow's Any; of no
    elements: false)."""
    return _logical_reduce("Any", xp, args, attrs, xp.any)


#: ArgMax's and ArgMin's output types (their OpDefs' output_type, TensorFlow 2.21)
_ARG_OUTPUT_TYPES = {"ArgMax": ("int16", "uint16", "int32", "int64"),
                     "ArgMin": ("int32", "int64")}


def _arg_attr(name: str):
    def convert(raw, where: str) -> str:
        if raw not in _ARG_OUTPUT_TYPES[name]:
            raise fns.ValueFormatError(f"{where}: expected one of "
                                       f"{', '.join(_ARG_OUTPUT_TYPES[name])}, got {raw!r}")
        return raw
    return convert


def _arg_reduction(name: str, fn):
    def impl(xp, args, attrs):
        a, dim = args
        if dim.dtype.name not in ("int32", "int64"):
            raise OpError("no-kernel", f"{name}: dimension must be int32 or int64, not "
                                       f"{dim.dtype.name}")
        if dim.ndim != 0:
            raise ShapeError(f"{name}: dimension must be a scalar, not {list(dim.shape)}")
        # (the kernel reads the dimension as an int32, an int64's low 32
        # bits: 2**32 + 1 is axis 1 there)
        d = int(dim.astype(np.int32))
        if not -a.ndim <= d < a.ndim:
            raise ShapeError(f"{name}: expected dimension in [-{a.ndim}, {a.ndim}), got {d}")
        d %= a.ndim
        if a.shape[d] == 0:
            raise ShapeError(f"{name}: reduction axis {d} is empty in shape {list(a.shape)}")
        if _is_float(a):
            raise CannotRun(f"cannot run TensorFlow op {name} on floating-point tensors "
                            "concretely: which index a NaN or a tie of signed zeros gives is "
                            "not modelled (TensorFlow's kernel stands in)")
        out = attrs.get("output_type", "int64")
        return (xp.asarray(fn(a, axis=d)).astype(np.dtype(out)),)
    impl.__doc__ = (f"The index of the first {'largest' if name == 'ArgMax' else 'smallest'} "
                    "element along `dimension` (a scalar operand), as output_type "
                    f"(TensorFlow's {name} on integers and bool; floats on its kernel).")
    return function(name, 2, 1, casts=True, mixed_dtypes=True,
                    attrs={"output_type": _arg_attr(name)}, export=_export_arg(name),
                    tf_kernel=lambda a, attrs: (name, list(a), {
                        "output_type": _kernels.DT_NAMES[attrs.get("output_type", "int64")]}))(impl)


def _export_arg(name: str):
    def export(e) -> list:
        return [{"name": e.name, "op": name, "input": e.data + e.ctrl,
                 "attr": {"T": e.T(0), "Tidx": e.T(1), "output_type": {
                     "type": e.tf_dtype(e.attrs.get("output_type", "int64"))}}}]
    return export


# (integers and bool: the first index of the extreme, numpy's argmax/argmin;
# measured equal to TensorFlow 2.21's kernel on every integer dtype's edge
# values, ties included: tests/test_arg_max_min_tensorflow.py)
_ARG_MAX = _arg_reduction("ArgMax", np.argmax)
_ARG_MIN = _arg_reduction("ArgMin", np.argmin)


# -- the .ftz variants: TensorFlow's float arithmetic flushes subnormals --------

_FTZ = {f.name: (fns.flushed_extremum(f) if f.name in ("Max", "Min") else fns.flushed_variant(f))
        for f in (*map(fns.get, ("Add", "Sub", "Mul", "Max", "Min")), _realdiv, _square, _sqrt,
                  _squared_difference)}


# -- DivNoNan: x / y, and +0 where y is zero ------------------------------------
#
# TensorFlow's DivNoNan (the Keras losses' and metrics' `div_no_nan`) is
# Eigen's div_no_nan_op: `b != 0 ? a / b : 0` in the scalar tail,
# `pandnot(pdiv(a, b), pcmp_eq(b, 0))` in its packets: the IEEE quotient
# where y is not zero, all bits clear (+0.0) where it is, -0.0 included.
# The quotient is RealDiv's (the same quotient functor), so its rounding,
# its flush of subnormal arguments and results on bfloat16, float32 and
# float64, and its NaN bits (functions.nan_bits: by position, packets and
# scalar tail) are RealDiv's, and a subnormal y counts as zero there (the
# executor's denormals-are-zero mode reaches the comparison too; float16,
# computed in float32, keeps its subnormals).  No integer kernel (its OpDef
# allows half, bfloat16, float, double and the complex types).  Measured
# against TensorFlow 2.21's kernel bit for bit on every float dtype's edge
# values, NaNs with payloads and random bits, sizes 1 to 40, scalars and
# broadcasts (tests/test_div_no_nan_tensorflow.py).  Encoding: none
# (uninterpreted in proofs, as it was as TensorFlow's kernel).


def _div_no_nan_on(xp, a, b, lead=0):
    _kernel("DivNoNan", FLOAT_DTYPES, a, b)
    q = _realdiv_on(xp, a, b, lead=lead)[0]
    return (xp.where(b == 0, xp.zeros((), q.dtype), q).astype(q.dtype, copy=False),)


@function("DivNoNan", 2, 1, batched=_batched(_div_no_nan_on, True), export=export_as("DivNoNan"))
def _div_no_nan(xp, args, attrs):
    """x / y where y is not zero, +0.0 where it is (TensorFlow's DivNoNan:
    RealDiv's quotient, NaN bits included; functions.nan_bits)."""
    return _div_no_nan_on(xp, *args)


# DivNoNan.ftz, what graph import builds on the flushed dtypes, is
# `flushed_variant(DivNoNan)`: the arguments flushed (so a subnormal y is
# zero), RealDiv.ftz's correction of a quotient rounded up to the smallest
# normal (functions._ROUNDS_UP_TO_TINY names DivNoNan: where y is zero the
# result is +0, never that), the result flushed.
_FTZ["DivNoNan"] = fns.flushed_variant(_div_no_nan)


# -- IsNan, IsInf, IsFinite: a float's class, a bool result ----------------------
#
# TensorFlow's kernels (Eigen's isnan, isinf, isfinite functors) classify
# each element alone and read no flag: a subnormal is finite (the
# denormals-are-zero mode does not reach a classification), a NaN is NaN
# whatever its sign and payload, quiet or signaling.  numpy's ufuncs (and
# ml_dtypes' for bfloat16) classify the same way.  Float kernels only (their
# OpDef allows half, bfloat16, float, double).  Measured against TensorFlow
# 2.21's kernels on random bit patterns of every float dtype
# (tests/test_float_class_tensorflow.py).  Encoding: none (uninterpreted in
# proofs, as they were as TensorFlow's kernels).


def _float_class(name: str, ufunc) -> Function:
    def impl(xp, args, attrs):
        _kernel(name, FLOAT_DTYPES, args[0])
        return (xp.asarray(getattr(xp, ufunc.__name__)(args[0]), dtype=np.bool_),)
    impl.__doc__ = (f"Elementwise {name} of a float tensor (TensorFlow's {name}): a bool "
                    "result, NaN of any sign and payload, subnormals finite.")
    return function(name, 1, 1, batched=True, casts=True, export=export_as(name))(impl)


_FLOAT_CLASSES = tuple(_float_class(n, u) for n, u in (("IsNan", np.isnan), ("IsInf", np.isinf),
                                                       ("IsFinite", np.isfinite)))


# -- Floor, Ceil, Round, Rint: exact rounding to an integral value -----------------
#
# Each result element is its argument rounded to an integral value in the
# argument's own dtype: exact (no rounding error to reproduce), as numpy's
# floor, ceil, rint and round (both half to even, as TensorFlow's Round and
# Rint) compute it.  What TensorFlow's CPU kernels add, measured on
# TensorFlow 2.21 (sizes 1 to 40, 100 and 1,003; edge values, halves, NaNs
# with payloads, quiet and signaling, random bit patterns:
# tests/test_rounding_tensorflow.py):
#
# * bfloat16, float32 and float64 read a subnormal argument as zero of its
#   sign (denormals-are-zero: Floor(-subnormal) is -0.0, not -1.0): the
#   `.ftz` variants, as for arithmetic; float16 (computed in float32) keeps
#   them;
# * a NaN keeps its sign and payload, quieted, as numpy's, except on
#   bfloat16, computed in float32 and converted back: inside one of Eigen's
#   whole packets (8 elements, by flat index: i < (n // 8) * 8) the
#   canonical 0x7fc0, in the scalar tail the canonical NaN of its sign
#   (0x7fc0/0xffc0), as Cast from float32 to bfloat16 (`_NAN_CASTS`);
# * Rint has CPU kernels for float32 and float64 only; Round also has
#   kernels for int32 and int64, which on TensorFlow 2.21 give zeros for
#   every input (measured: Round of [1, 2, -3, 7, 100] int32 is all 0,
#   where tf.math.round returns integers untouched without running it):
#   not modelled, left to that kernel (and its two-run check).
#
# Encoding: none (uninterpreted in proofs, as they were as TensorFlow's
# kernels).

_ROUND_INTS = frozenset({"int32", "int64"})


def _rounding_on(name: str, ufunc, dtypes: frozenset):
    def on(xp, a, lead=0):
        if name == "Round" and dtype_name(a.dtype) in _ROUND_INTS:
            raise CannotRun(f"cannot run TensorFlow op Round on {dtype_name(a.dtype)} "
                            "concretely: TensorFlow's integer Round kernel is not modelled")
        _kernel(name, dtypes, a)
        with np.errstate(invalid="ignore"):
            r = xp.asarray(getattr(xp, ufunc.__name__)(a)).astype(a.dtype, copy=False)
        if dtype_name(a.dtype) == "bfloat16":
            r = _nan_bits_as_tensorflow(xp, a, r, "float32", "bfloat16", lead)
        return (r,)
    return on


def _rounding(name: str, ufunc, dtypes: frozenset, doc: str) -> Function:
    on = _rounding_on(name, ufunc, dtypes)

    def impl(xp, args, attrs):
        return on(xp, args[0])
    impl.__doc__ = doc
    tf_kernel = (lambda a, attrs: ("Round", list(a), {})) if name == "Round" else None
    return function(name, 1, 1, batched=lambda xp, args, attrs: on(xp, args[0], lead=1),
                    export=export_as(name), tf_kernel=tf_kernel)(impl)


_ROUNDINGS = (
    _rounding("Floor", np.floor, FLOAT_DTYPES, "The largest integral value not above x "
              "(TensorFlow's Floor; floats only; a bfloat16 NaN's bits by position)."),
    _rounding("Ceil", np.ceil, FLOAT_DTYPES, "The smallest integral value not below x "
              "(TensorFlow's Ceil; floats only; a bfloat16 NaN's bits by position)."),
    _rounding("Round", np.rint, FLOAT_DTYPES, "x rounded to the nearest integral value, a "
              "half to even (TensorFlow's Round; floats; int32 and int64 on TensorFlow's "
              "kernel)."),
    _rounding("Rint", np.rint, frozenset({"float32", "float64"}), "x rounded to the nearest "
              "integral value, a half to even (TensorFlow's Rint: CPU kernels for float32 and "
              "float64 only)."),
)
for _f in _ROUNDINGS:
    _FTZ[_f.name] = fns.flushed_variant(_f)


# -- the ops ----------------------------------------------------------------------


def _elementwise(tf_op: str, fn: Function | str, *, export: str | None = None,
                 also: Sequence[str] = (), no_dtypes: frozenset = frozenset()) -> None:
    """TensorFlow's `tf_op` as one function of all its inputs (its .ftz
    variant on the dtypes TensorFlow flushes, where it has one).  A node of
    a dtype in `no_dtypes`, which the op's OpDef does not allow (TensorFlow
    neither imports nor runs it), is refused at import."""
    name = fn if isinstance(fn, str) else fn.name
    flushing = name in _FTZ
    doc = f"the function {name}" + (f" ({name}.ftz on floats: subnormals flushed)"
                                     if flushing else "")
    functions: tuple = (fn,) + ((_FTZ[name],) if flushing else ()) + tuple(also)
    model = one_function(name)
    build = model
    if no_dtypes:
        def build(b):
            t = b.dtype("T")
            if t in no_dtypes:
                b.reject(f"TensorFlow's {tf_op} has no {t} (its OpDef's T excludes "
                         f"{', '.join(sorted(no_dtypes))})", "dtype")
            return model(b)
    define(OpDef(tf_op, doc, build, FAMILY, functions=functions,
                 exports={name: export_as(export)} if export else {}))


# the language's own functions (encoded by the checker itself), written back
# as TensorFlow's op of the name tfsem export gives them
# (TensorFlow's v1 Add takes no unsigned integer wider than 8 bits: its
# OpDef's T is bfloat16, half, float, double, uint8, int8, int16, int32,
# int64, complex64, complex128, string in TensorFlow 2.21; AddV2 takes them)
_elementwise("Add", "Add", export="AddV2", no_dtypes=frozenset({"uint16", "uint32", "uint64"}))
_elementwise("AddV2", "Add")
_elementwise("Sub", "Sub", export="Sub")
_elementwise("Mul", "Mul", export="Mul")
_elementwise("Neg", "Neg", export="Neg")
_elementwise("Maximum", "Max", export="Maximum")
_elementwise("Minimum", "Min", export="Minimum")
# the TensorFlow family's
for _f in (_realdiv, _square, _sqrt, _squared_difference, _abs, _floormod, _floordiv):
    _elementwise(_f.name, _f)
_elementwise("DivNoNan", _div_no_nan,
             no_dtypes=frozenset(_INTEGERS | {"bool"}))
for _f in _FLOAT_CLASSES:
    _elementwise(_f.name, _f, no_dtypes=frozenset(_INTEGERS | {"bool"}))
for _f in _ROUNDINGS:
    # (Round's OpDef also takes int8 to int64: no CPU kernel for the narrow ones)
    _elementwise(_f.name, _f, no_dtypes=frozenset(
        {"bool", "uint8", "uint16", "uint32", "uint64"} if _f.name == "Round"
        else _INTEGERS | {"bool"}))




def _matmul_build(b):
    b.dtype("T")
    return [b.add("MatMul", [b.input(0), b.input(1)],
                  {"transpose_a": bool(b.attr("transpose_a", False)),
                   "transpose_b": bool(b.attr("transpose_b", False))})]


define(OpDef("MatMul", "the function MatMul (transpose_a, transpose_b)", _matmul_build, FAMILY,
             functions=(_matmul,)))


def _cast_build(b):
    dst = b.dtype("DstT")
    src = b.dtype("SrcT")
    if b.attr("Truncate", False):
        b.reject("Cast with Truncate=true (float conversions that truncate the significand) is "
                 "not modelled")
    if src == dst:
        return [b.add("Identity", [b.input(0)])]
    return [b.add("Cast", [b.input(0)], {"DstT": dst})]


define(OpDef("Cast", "the function Cast between any two dtypes, as TensorFlow's CPU kernel casts "
             "(Truncate=true refused)", _cast_build, FAMILY, functions=(_CAST, "Identity")))


def _add_n_build(b):
    t = b.dtype("T")
    n = b.n_inputs
    if t == "float16" and n > 2:
        # measured: TensorFlow's float16 AddN does not round after every
        # addition (an intermediate past 65504 does not overflow)
        b.reject("AddN of more than two float16 tensors is not modelled (TensorFlow's kernel "
                 "keeps intermediate sums wider than float16)")
    add = flushed("Add", t)
    if n == 1:
        return [b.add("Identity", [b.input(0)])]
    # aggregate_ops.cc: the first n % 8 inputs (8 if none, 9 if one: Add9)
    # are summed left to right, then each further group of 8 is summed left to
    # right and added to the running total: out = out + (((i0 + i1) + ...) + i7).
    # (measured on TensorFlow 2.21: AddN of 1 and eight 2^-24 is 1.0, the
    # nine summed left to right; 1 + (eight 2^-24 summed) would be 1 + 2^-21)
    first = n % 8 or 8
    if first == 1:
        first = 9
    k = 0

    def chain(lo: int, hi: int):
        nonlocal k
        acc = b.input(lo)
        for i in range(lo + 1, hi):
            acc = b.add(add, [acc, b.input(i)], part=f"add_{k}")
            k += 1
        return acc

    total = chain(0, first)
    i = first
    while i < n:
        group = chain(i, i + 8)
        total = b.add(add, [total, group], part=f"add_{k}")
        k += 1
        i += 8
    return [b.add("Identity", [total])]


define(OpDef("AddN", "a chain of Add in the order of TensorFlow's CPU kernel (groups of 8); "
             "float16 refused", _add_n_build, FAMILY, functions=("Add", "Add.ftz", "Identity")))


def _reduction_build(fn_name: str):
    def build(b):
        b.dtype("T")
        if not b.is_static(1):   # axes computed at run time (opdefs/array.py)
            return [b.add(fn_name + "Along", [b.input(0), b.input(1)],
                          {"keep_dims": bool(b.attr("keep_dims", False))})]
        axes = [int(x) for x in np.asarray(b.static(1)).reshape(-1)]
        return [b.add(fn_name, [b.input(0)], {"axes": axes,
                                              "keep_dims": bool(b.attr("keep_dims", False))})]
    return build


for _tf_op, _f in (("Sum", _sum), ("Mean", _mean), ("Max", _reduce_max), ("Min", _reduce_min)):
    define(OpDef(_tf_op, f"the function {_f.name} (axes: a constant input), or {_f.name}Along "
                 "(axes computed at run time)", _reduction_build(_f.name), FAMILY,
                 functions=(_f, _f.name + "Along"), static=(1,)))


def _reduction_or_opaque(name: str, dtype_attr: str | None):
    """A reduction with constant axes as the function `name`; with axes
    computed at run time TensorFlow's op as before, an uninterpreted
    function whose kernel runs (no `Along` form yet)."""
    def build(b):
        if dtype_attr:
            b.dtype(dtype_attr)
        if not b.is_static(1):
            return [b.add(fns.opaque_name(name, 2, 1), [b.input(0), b.input(1)],
                          {"tf_attrs": b.tf_attrs()})]
        axes = [int(x) for x in np.asarray(b.static(1)).reshape(-1)]
        return [b.add(name, [b.input(0)], {"axes": axes,
                                          "keep_dims": bool(b.attr("keep_dims", False))})]
    return build


define(OpDef("Prod", "the function Prod (axes: a constant input; integers modelled, floats on "
             "TensorFlow's kernel), or the uninterpreted tf.Prod/2/1 (axes computed at run time)",
             _reduction_or_opaque("Prod", "T"), FAMILY, functions=(_prod,), static=(1,)))
def _arg_build(name: str):
    def build(b):
        b.dtype("T")
        index_dtype(b, "Tidx")
        # (a stripped output_type is its OpDef default, int64: `b.dtype`
        # reads the default where a SavedModel left the attribute out)
        out = b.dtype("output_type")
        if out not in _ARG_OUTPUT_TYPES[name]:
            b.reject(f"{name}'s output_type must be one of "
                     f"{', '.join(_ARG_OUTPUT_TYPES[name])}, not {out}")
        return [b.add(name, [b.input(0), b.input(1)], {"output_type": out})]
    return build


for _f in (_ARG_MAX, _ARG_MIN):
    define(OpDef(_f.name, f"the function {_f.name} (dimension: a tensor; integers and bool "
                 "modelled, floats on TensorFlow's kernel)", _arg_build(_f.name), FAMILY,
                 functions=(_f,)))
for _f in (_all, _any):
    define(OpDef(_f.name, f"the function {_f.name} (a bool tensor; axes: a constant input), or "
                 f"the uninterpreted tf.{_f.name}/2/1 (axes computed at run time)",
                 _reduction_or_opaque(_f.name, None), FAMILY, functions=(_f,), static=(1,)))


# -- comparisons and logical operations: the predicates of conditionals and
# loops (SPEC section 9).  A `Switch` takes a bool scalar predicate and a loop's
# `LoopCond` a bool scalar; a `tf.while_loop` computes it with `Less` and friends.
#
# Each is TensorFlow 2.21's CPU kernel elementwise with broadcasting, as
# measured by tests/test_controlflow_predicates.py on every dtype's edge values:
#
# * an ordered comparison with a NaN is false, `NotEqual` with a NaN is true,
#   signed zeros compare equal; the result is `bool`;
# * on bfloat16, float32 and float64 the executor's denormals-are-zero mode
#   applies: a subnormal argument compares as zero (float16 is compared exactly,
#   as functions.FLUSHED_DTYPES says for arithmetic);
# * `Less`, `LessEqual`, `Greater` and `GreaterEqual` have no bool kernel, the
#   logical ops only a bool one: elsewhere the `no-kernel` error value.
#
# Both arguments have one dtype (a mismatch is the dtype-mismatch error value,
# as for every function).
#
# Encoding (the generic checker's element terms, checking/generic.py): the
# result is a bool element (a 1-bit vector, 1 for true).  Floats compare with
# IEEE's predicates, which are TensorFlow's on every case above: fpLT, fpLEQ,
# fpGT, fpGEQ and fpEQ are false when an operand is NaN and take -0 = +0, and
# NotEqual is the negation of fpEQ (true on NaN); on the flushed dtypes each
# operand goes through denormals-are-zero first (a subnormal becomes +0, and
# the sign of a zero never matters to a comparison).  Integers compare as
# signed or unsigned bit-vectors by dtype; bool (Equal, NotEqual only) as
# 1-bit vectors.  Ordered comparisons of bool never reach the encoding (their
# result is the `no-kernel` error, a kind decided from the dtypes alone).
# Tested against the implementation on every dtype's edge values
# (tests/test_check_generic.py, tests/test_check_comparison_encoding.py) and
# the implementation against TensorFlow's kernels
# (tests/test_controlflow_predicates.py).

_ORDERED = {"Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
            "GreaterEqual": np.greater_equal}
_EQUALITY = {"Equal": np.equal, "NotEqual": np.not_equal}
_TINY32 = np.finfo(np.float32).tiny
_TINY64 = np.finfo(np.float64).tiny


def _daz(xp, a: np.ndarray) -> np.ndarray:
    """Denormals-are-zero: a subnormal of a flushed dtype compares as zero
    (computed by `xp`, the array module `a` lives in)."""
    name = dtype_name(a.dtype)
    if name not in FLUSHED_DTYPES:
        return a
    if name == "float64":
        return xp.where(xp.abs(a) < _TINY64, 0.0, a)
    a = a.astype(np.float32)   # bfloat16 and float32 share float32's exponent range
    return xp.where(xp.abs(a) < _TINY32, np.float32(0.0), a)


def _compare(xp, op, a, b):
    """`op` (a numpy ufunc) by `xp`'s ufunc of its name on DAZ operands: a
    bool array, 0-d for scalars (numpy's ufuncs give a scalar there)."""
    return xp.asarray(getattr(xp, op.__name__)(_daz(xp, a), _daz(xp, b)), dtype=np.bool_)


def _z3_comparison(name: str):
    def encode(z3, dtype, xs):
        a, b = xs
        if dtype in FLOAT_DTYPES:
            if dtype in FLUSHED_DTYPES:
                a, b = (z3.If(z3.fpIsSubnormal(x), z3.fpPlusZero(x.sort()), x) for x in (a, b))
            if name == "NotEqual":
                holds = z3.Not(z3.fpEQ(a, b))
            else:
                holds = {"Less": z3.fpLT, "LessEqual": z3.fpLEQ, "Greater": z3.fpGT,
                         "GreaterEqual": z3.fpGEQ, "Equal": z3.fpEQ}[name](a, b)
        elif dtype in _INTEGERS or dtype == "bool":
            if name in ("Equal", "NotEqual"):
                holds = (a == b) if name == "Equal" else (a != b)
            elif dtype == "bool":
                raise _no_encoding(name, dtype)    # no kernel (an error kind, never encoded)
            elif dtype.startswith("u"):
                holds = {"Less": z3.ULT, "LessEqual": z3.ULE, "Greater": z3.UGT,
                         "GreaterEqual": z3.UGE}[name](a, b)
            else:
                holds = {"Less": a < b, "LessEqual": a <= b, "Greater": a > b,
                         "GreaterEqual": a >= b}[name]
        else:
            raise _no_encoding(name, dtype)
        return z3.If(holds, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
    return encode


def _bool_result(dtypes: tuple) -> str:
    return "bool"


def _comparison(name: str, op, ordered: bool) -> None:
    def impl(xp, args, attrs):
        if ordered and args[0].dtype == np.bool_:
            raise OpError("no-kernel", f"{name} has no kernel for bool")
        return (_compare(xp, op, args[0], args[1]),)
    impl.__doc__ = f"Elementwise {name} (TensorFlow's {name}), a bool result."
    encoding = Elementwise(name.lower(), lambda a, b: _compare(np, op, a, b),
                           _z3_comparison(name),
                           commutative=frozenset() if ordered else frozenset(DTYPES_ALL),
                           result=_bool_result)
    f = function(name, 2, 1, batched=BROADCASTING, casts=True, export=export_as(name),
                 encoding=encoding)(impl)

    functions: tuple = (f,)
    lenient = None
    if not ordered:
        # Equal/NotEqual with incompatible_shape_error=false (what `x == y`
        # builds in a tf.function): on shapes that do not broadcast TensorFlow
        # gives a scalar false (Equal) or true (NotEqual), not an error
        # (measured, TensorFlow 2.21).  Its own function, with no encoding:
        # the symbolic engines apply `name` where the shapes broadcast
        # (checking/symbolic.py LENIENT), this value where they do not
        def lenient_impl(xp, args, attrs):
            try:
                np.broadcast_shapes(args[0].shape, args[1].shape)
            except ValueError:
                if args[0].dtype != args[1].dtype:
                    raise OpError("dtype-mismatch", f"{name}: {dtype_name(args[0].dtype)} vs "
                                                    f"{dtype_name(args[1].dtype)}") from None
                return (xp.asarray(name == "NotEqual"),)
            return impl(xp, args, attrs)
        lenient_impl.__doc__ = (f"{name} with incompatible_shape_error=false: a scalar "
                                f"{name == 'NotEqual'} on shapes that do not broadcast.")
        lenient = function(f"{name}.lenient", 2, 1, casts=True,
                           export=_export_lenient(name))(lenient_impl)
        functions += (lenient,)

    def build(b):
        if lenient is not None and b.attr("incompatible_shape_error", True) is False:
            return [b.add(lenient.name, [b.input(0), b.input(1)])]
        return [b.add(name, [b.input(0), b.input(1)])]
    define(OpDef(name, f"{name} (bool result)", build, FAMILY, functions=functions))


def _export_lenient(tf_op: str):
    def export(e) -> list:
        return [{"name": e.name, "op": tf_op, "input": e.data + e.ctrl,
                 "attr": {"T": e.T(), "incompatible_shape_error": {"b": False}}}]
    return export


for _name, _op in _ORDERED.items():
    _comparison(_name, _op, True)
for _name, _op in _EQUALITY.items():
    _comparison(_name, _op, False)


def _bool_only(name: str, *arrays: np.ndarray) -> None:
    for a in arrays:
        if a.dtype != np.bool_:
            raise OpError("no-kernel", f"{name} has no kernel for {dtype_name(a.dtype)}")


@function("LogicalNot", 1, 1, batched=BROADCASTING, casts=True,
          export=export_as("LogicalNot", typed=False))
def _logical_not(xp, args, attrs):
    """Elementwise not of a bool tensor."""
    _bool_only("LogicalNot", args[0])
    return (xp.logical_not(args[0]),)


@function("LogicalAnd", 2, 1, batched=BROADCASTING, casts=True,
          export=export_as("LogicalAnd", typed=False))
def _logical_and(xp, args, attrs):
    """Elementwise and of bool tensors."""
    _bool_only("LogicalAnd", *args)
    return (xp.logical_and(args[0], args[1]),)


define(OpDef("LogicalNot", "LogicalNot", one_function("LogicalNot", None, 1), FAMILY,
             functions=(_logical_not,)))
define(OpDef("LogicalAnd", "LogicalAnd (bool result)", one_function("LogicalAnd", None, 2), FAMILY,
             functions=(_logical_and,)))


@function("LogicalOr", 2, 1, batched=BROADCASTING, casts=True,
          export=export_as("LogicalOr", typed=False))
def _logical_or(xp, args, attrs):
    """Elementwise or of bool tensors."""
    _bool_only("LogicalOr", *args)
    return (xp.logical_or(args[0], args[1]),)


define(OpDef("LogicalOr", "LogicalOr (bool result)", one_function("LogicalOr", None, 2), FAMILY,
             functions=(_logical_or,)))


# `Select` and `SelectV2` copy elements of x or y as the bool condition says
# (bit for bit: NaN payloads, signed zeros and subnormals pass unchanged, no
# flush): `SelectV2` broadcasts its three arguments, `Select` takes a
# condition of x's shape, a scalar one (all of x or all of y), or a vector
# along x's first axis; x and y have one dtype and (for `Select`) one shape.
# Measured against TensorFlow's kernels by tests/test_select_tensorflow.py.
#
# Encoding (checking/generic.py): If(c = 1, x, y) on the elements, which
# copies the chosen element's bits as the kernel does.  `SelectV2` broadcasts
# as numpy does; `Select` is encoded where its condition has x's shape or is
# a scalar (numpy's broadcasting is then Select's rule); a condition along
# x's first axis stays uninterpreted (checking/generic.py GenericAlgebra).

def _select_args(name: str, c: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    if x.dtype != y.dtype:
        raise OpError(DTYPE_MISMATCH, f"{name}: x is {dtype_name(x.dtype)}, y {dtype_name(y.dtype)}")
    if c.dtype != np.bool_:
        raise OpError("no-kernel", f"{name} takes a bool condition, not {dtype_name(c.dtype)}")


def _export_select(name: str):
    def export(e) -> list:
        return [{"name": e.name, "op": name, "input": e.data + e.ctrl, "attr": {"T": e.T(1)}}]
    return export


def _z3_select(z3, dtype, xs):
    c, x, y = xs
    return z3.If(c == z3.BitVecVal(1, 1), x, y)


def _select_result(dtypes: tuple) -> str:
    return dtypes[1]


def _select_fold(c, x, y):
    return np.where(c, x, y).astype(x.dtype, copy=False)


SELECT = Elementwise("select", _select_fold, _z3_select, result=_select_result)


@function("SelectV2", 3, 1, batched=BROADCASTING, casts=True, mixed_dtypes=True,
          export=_export_select("SelectV2"), encoding=SELECT)
def _select_v2(xp, args, attrs):
    """x where the condition holds, else y, all three broadcast (tf.where)."""
    c, x, y = args
    _select_args("SelectV2", c, x, y)
    return (xp.where(c, x, y).astype(x.dtype, copy=False),)


@function("Select", 3, 1, casts=True, mixed_dtypes=True, export=_export_select("Select"),
          encoding=SELECT)
def _select(xp, args, attrs):
    """x where the condition holds, else y (tf.compat.v1.where): a condition
    of x's shape, a scalar, or a vector along x's first axis."""
    c, x, y = args
    _select_args("Select", c, x, y)
    if x.shape != y.shape:
        raise ShapeError("Select: x and y have different shapes")
    if c.shape != x.shape and c.ndim != 0:
        if c.ndim != 1 or x.ndim < 1 or c.shape[0] != x.shape[0]:
            raise ShapeError("Select: the condition's shape fits neither x nor its first axis")
        c = c.reshape(c.shape + (1,) * (x.ndim - 1))
    return (xp.where(c, x, y).astype(x.dtype, copy=False),)


for _name, _fn in (("Select", _select), ("SelectV2", _select_v2)):
    define(OpDef(_name, f"{_name} (elements of x or y, bit for bit)",
                 one_function(_name, None, 3), FAMILY, functions=(_fn,)))


# -- TensorFlow's kernels as functions, and the pure ops tfsem does not compute --
#
# A kernel runs as a function of its inputs (oracle/kernels.py: op
# determinism on, one intra-op and one inter-op thread, on the CPU, every
# evaluation run twice) only where the op's entry says why it is one
# (`kernel`).  The ops below without an OpDef are pure functions that tfsem
# does not compute bit for bit (their transcendental functions and summation
# orders are Eigen's and oneDNN's): graph import makes each an uninterpreted
# function `tf.OP/N_IN/N_OUT` by its name alone (`known(...,
# uninterpreted=True)`; proofs treat it as an unknown function, a concrete
# run uses its kernel or stops naming it).

#: Element-wise math: each element is computed alone, by the same vectorized
#: code for a given shape.
ELEMENTWISE_KERNEL = ("element-wise: each element computed alone, by the same vectorized code "
                      "for a given shape")
#: Reductions and matrix products: Eigen's and oneDNN's blocking (so the
#: order of the sums) is fixed by the shapes and the thread count, fixed at 1.
BLOCKED_KERNEL = ("a reduction or product: Eigen's and oneDNN's blocking, so the order of "
                  "its sums, is fixed by the shapes and the thread count (1)")
#: Segment sums on CPU: one loop over the indices in order.
SEGMENT_KERNEL = "a segment reduction on CPU: one loop over the indices, in order"
#: Cast: its float to narrow-integer conversion of a value out of range
#: differs by the element's position in the tensor (Eigen's packets saturate,
#: the scalar tail wraps: 300.0 -> int8 is 127 in the first 32 elements of
#: 33 and 44 in the last), so it is no element-wise function (cast_array
#: refuses it), but with one thread the packets are fixed by the index
#: alone, from element 0 of the whole tensor (Eigen loads unaligned: the same
#: tensor sliced at 8 different offsets casts alike,
#: tests/test_tensorflow_kernels.py): a function of the whole tensor.
CAST_KERNEL = ("a function of the whole tensor: with one thread Eigen's packets are fixed by "
               "the element's index from element 0 (out-of-range float to narrow-integer "
               "casts saturate in packets and wrap in the scalar tail)")

kernels_are_functions("Abs Add AddN AddV2 Sub Mul Neg Sqrt Square Maximum Minimum RealDiv "
                      "SquaredDifference FloorDiv FloorMod LogicalAnd LogicalNot LogicalOr "
                      "Select SelectV2 DivNoNan IsNan IsInf IsFinite Floor Ceil Round Rint",
                      ELEMENTWISE_KERNEL)
kernels_are_functions("MatMul Sum Mean Max Min Prod All Any ArgMax ArgMin", BLOCKED_KERNEL)
kernels_are_functions("Cast", CAST_KERNEL)

known("""
    Exp Expm1 Log Log1p Pow Rsqrt Reciprocal Inv Tanh Sigmoid Erf Erfc Sin Cos Tan Asin Acos
    Atan Atan2 Sinh Cosh Asinh Acosh Atanh Lgamma Digamma Sign Div MulNoNan Xdivy Xlogy Xlog1py TruncateDiv TruncateMod Mod ClipByValue
    TanhGrad SigmoidGrad SqrtGrad RsqrtGrad ReciprocalGrad
""", FAMILY, uninterpreted=True, kernel=ELEMENTWISE_KERNEL)
#: CheckNumerics: x, or the op fails where x holds a NaN or an infinity
#: (TensorFlow's kernel: each element checked alone; its failure is an error
#: value).  Grappler's debug_stripper makes it an Identity.
known("CheckNumerics", FAMILY, uninterpreted=True, kernel=ELEMENTWISE_KERNEL)
#: _UnaryOpsComposition: a chain of element-wise unary ops (`op_names`) in one
#: kernel, which Grappler's arithmetic optimizer writes for Relu(Relu(x)),
#: Abs(Abs(x)), Square(Neg(x)), ... (arithmetic_optimizer.cc
#: FuseUnaryOpsChain, CPU only); uninterpreted, its kernel run.
known("_UnaryOpsComposition", FAMILY, uninterpreted=True, kernel=ELEMENTWISE_KERNEL)
known("""
    L2Loss Cumsum Cumprod BatchMatMul BatchMatMulV2 BatchMatMulV3
    Einsum
""", FAMILY, uninterpreted=True, kernel=BLOCKED_KERNEL)
known("""
    UnsortedSegmentSum UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd SegmentSum
    SegmentMean
""", FAMILY, uninterpreted=True, kernel=SEGMENT_KERNEL)
