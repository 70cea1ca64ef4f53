"""The reshapes that change nothing, and (F1) the products by one, for the
structural rule (issue 23: Grappler's arithmetic optimizer removes a
`Reshape` whose input already has the target shape).

The static shapes they rest on -- the claim, its argument, the rules --
are oracle/static_shapes.py's (graph import uses them too, to fold a
variable's `Shape` only where no Assign can change it); they are
re-exported here.

The simplification (`reshape_changes_nothing`), for the structural rule's
terms: Reshape(t), ReshapeTo(t, c) and Tile(t) (all multiples 1) are t
when t's claimed shape is their target: on an error t, each is that error
(Function.apply passes on a strict argument's error, and these functions
are strict in t); on a tensor of shape S, xp.reshape and xp.tile to S
return its elements in the same order, with its dtype: the same value.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.static_shapes import (BROADCASTING_2, ELEMENTWISE_1, MOVES_ELEMENTS,  # noqa: F401
                                        Shape, _int_vector, _resolve, result_shapes,
                                        static_shapes)
from tfsem.oracle.values import Tensor


_RESHAPES = {name: fns.lookup(name) for name in ("Reshape", "ReshapeTo", "Tile")}


def reshape_changes_nothing(op: str, f, attrs: Mapping, args: tuple[int, ...],
                            shapes: Mapping[int, Shape], consts: Mapping[int, object]) -> bool:
    """Whether f(args) is args[0] at every σ (module docstring): Reshape,
    ReshapeTo or Tile to the shape args[0] is claimed to have."""
    if _RESHAPES.get(op) is not f or f is None or not args:
        return False
    a = shapes.get(args[0])
    if a is None:
        return False
    if op == "Reshape" and len(args) == 1:
        return _resolve(attrs.get("shape", ()), math.prod(a)) == a
    if op == "ReshapeTo" and len(args) == 2:
        target = _int_vector(consts.get(args[1]))
        return target is not None and _resolve(target, math.prod(a)) == a
    if op == "Tile" and len(args) == 1:
        m = [int(x) for x in attrs.get("multiples", ())]
        return len(m) == len(a) and all(x == 1 for x in m)
    return False


__all__ = ["ELEMENTWISE_1", "BROADCASTING_2", "reshape_changes_nothing", "result_shapes",
           "static_shapes"]


# ---------------------------------------------------------------------------
# (F1) Times one: Mul.ftz(x, 1.0) is x where x is never subnormal
#
# Grappler's constant folding and arithmetic optimizer remove a product by
# a constant one (`x * 1.0 -> x`, tf.losses' weights of 1.0).  In
# TensorFlow's CPU runtime, and in tfsem's `Mul.ftz`, the product flushes a
# subnormal x to zero: `Mul.ftz(x, 1.0)` is flush(x), not x (TensorFlow
# itself shows it: `x * 1.0` of a subnormal x is 0 eagerly and x in a
# tf.function, where Grappler removed it).  It is x exactly where x is never
# a subnormal number:
#  - x an error: both are that error (Mul.ftz is strict, 1.0 no error);
#  - x a tensor of c's dtype (float32 or float64: the terms' dtype says so;
#    another dtype is the dtype-mismatch error, so it is required), c a
#    scalar (the broadcast is x's shape): each element e of x is not
#    subnormal, so flush(e) = e, e * 1 = e exactly (no rounding; -0 * 1 =
#    -0, inf * 1 = inf, a NaN stays a NaN: SPEC equality makes all NaNs
#    equal, and the rule is applied only where both programs are blind to
#    NaN payloads, as (E3)), and the result, not subnormal, is not flushed.
# A term is *never subnormal* (`NormalTerms`) when it is a float constant
# without subnormal elements, a result of a function tfsem flushes
# (`flushed_variant`: arguments and results flushed), a Cast of an integer
# or bool (0 or at least 1 in magnitude), one of the TensorFlow kernels in
# `FLUSHED_KERNELS` (evaluated by TensorFlow's CPU kernels with denormals
# flushed: every element they return is a flushed arithmetic result, never
# a copy of an input element), or a Reshape, ReshapeTo, Tile, ExpandDims,
# Relu or Neg of a never-subnormal term (each element is an element of the
# argument, its negation, or 0).  tests/test_static_shapes.py checks each
# kernel's claim on TensorFlow at edge values (subnormal, huge and tiny
# inputs).

#: TensorFlow kernels whose every float output element is a flushed
#: arithmetic result (DivNoNan: x / y or 0; SoftmaxCrossEntropyWithLogits:
#: sums of products, and softmax - labels)
FLUSHED_KERNELS = frozenset({"tf.DivNoNan/2/1", "tf.SoftmaxCrossEntropyWithLogits/2/2"})
_COPIES = frozenset({"Reshape", "ReshapeTo", "Tile", "ExpandDims", "Relu", "Neg", "Identity"})
_COPY_FUNCTIONS = {name: fns.lookup(name) for name in _COPIES}
_MUL = fns.lookup("Mul.ftz")
_CAST = fns.lookup("Cast")
_NORMAL_DTYPES = frozenset({"float32", "float64"})
_CAST_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64", "float16", "bfloat16", "float32", "float64"})


def _flushes(f) -> bool:
    """Whether f is a flushed variant (functions.flushed_variant)."""
    impl = getattr(f, "impl", None)
    return (f is not None and f.name.endswith(fns.FTZ_SUFFIX)
            and "flushed_variant" in getattr(impl, "__qualname__", ""))


def _subnormal_free(v) -> bool:
    if not isinstance(v, Tensor) or v.dtype not in _NORMAL_DTYPES:
        return False
    a = np.abs(v.array)
    with np.errstate(invalid="ignore"):
        return not np.any((a > 0) & (a < np.finfo(v.array.dtype).tiny))


def mark_never_subnormal(normal: set, op: str, f, args: tuple[int, ...],
                         results: tuple[int, ...], consts: Mapping, dtypes: Mapping) -> None:
    """Add `results` to `normal` where the rule above says so."""
    if f is None:
        return
    if _flushes(f) or (op in FLUSHED_KERNELS and fns.lookup(op) is f):
        normal.update(results)
    elif op in _COPIES and _COPY_FUNCTIONS.get(op) is f and args and is_never_subnormal(
            normal, args[0], consts):
        normal.update(results)
    elif f is _CAST and args and dtypes.get(args[0], "").startswith(("int", "uint", "bool")):
        normal.update(results)


def is_never_subnormal(normal: set, t: int, consts: Mapping) -> bool:
    return t in normal or (t in consts and _subnormal_free(consts[t]))


def times_one(op: str, f, args: tuple[int, ...], normal: set, consts: Mapping,
              dtypes: Mapping) -> bool:
    """Whether f(args) is args[0] at every σ by (F1)."""
    if f is None or f is not _MUL or op != "Mul.ftz" or len(args) != 2:
        return False
    c = consts.get(args[1])
    if not (isinstance(c, Tensor) and c.dtype in _NORMAL_DTYPES and c.array.ndim == 0
            and c.array == 1):
        return False
    return dtypes.get(args[0]) == c.dtype and is_never_subnormal(normal, args[0], consts)


#: (dtype claims) TensorFlow kernels whose outputs all have the dtype of
#: their `T` attribute (the OpDef's outputs are of type T)
_OUTPUTS_OF_TYPE_T = frozenset({"tf.SoftmaxCrossEntropyWithLogits/2/2", "tf.DivNoNan/2/1"})
_TF_DTYPES = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64"}


def kernel_dtype(op: str, attrs: Mapping) -> str | None:
    """The dtype of every tensor result of TensorFlow kernel `op` (or of
    Cast: its `DstT`, the dtype the implementation converts to), or None."""
    if op == "Cast" and fns.lookup(op) is _CAST:
        d = attrs.get("DstT")
        return d if d in _CAST_DTYPES else None
    if op not in _OUTPUTS_OF_TYPE_T:
        return None
    t = attrs.get("tf_attrs", {})
    t = t.get("T") if isinstance(t, Mapping) else None
    return _TF_DTYPES.get(t) if isinstance(t, str) else None
