"""(R4) The product by one: `Mul.ftz(x, 1)` is `x` where `x` never holds a
subnormal -- one rule of the structural rule's terms (checking/structural.py,
"Shape rules and the product by one"), one argument, here.

It was two rules, each reviewed on its own and each kept: (F1) "times one"
(third round, checking/static_shapes.py) and (R4) "a product by one of a
flushed value" (fourth round, checking/structural.py).  They had the same
conclusion and two definitions of "never subnormal"; this module is their
union, every clause of either with its argument (docs/checking-product-by-one.md
lists what each accepted and what the union accepts).

Why it is needed
================

Grappler's constant folding and arithmetic optimizer remove a product by a
constant one (`x * 1.0` -> `x`: tf.losses' weights of 1.0), and a division
by one (`x / 1`, which (R1) turns into `x * 1`: the gradient of a global
average pooling over a 1x1 map in MobileNetV2 at 32x32).  In TensorFlow's
CPU runtime, and in tfsem's `Mul.ftz`, the product flushes a subnormal x to
zero: `Mul.ftz(x, 1.0)` is flush(x), not x (TensorFlow 2.21 shows it: `x *
1.0` and `x / 1.0` of 1e-40 give 0 eagerly and 1e-40 in a tf.function, where
Grappler removed them).  So the rule needs x never to be subnormal.

Never-subnormal terms
=====================

A term t is *never subnormal* (N) when at every σ and every valuation of
the read leaves its value, where it is a tensor of dtype float32 or
float64, holds no subnormal element (an error, or a tensor of another
dtype, is allowed: the rule below asks for x's dtype separately).  By
induction on terms, each clause assuming it of its argument:

 (n1) a constant float32 or float64 tensor with no subnormal element
      (`constant_never_subnormal`);
 (n2) any result of a flushing form of tfsem's (`flushed_variant` and
      `flushed_extremum` of oracle/functions.py, named `X.ftz`): their
      implementation passes every result of a flushed dtype (bfloat16,
      float32, float64) through `ftz`, which replaces each subnormal by a
      zero (`flushed_extremum` on float32/float64 is `flushed_variant`);
 (n3) any result of MatMul: tfsem has no numpy model of a float MatMul, so
      a float32/float64 result comes from TensorFlow's kernel, which its
      child runs under TensorFlow's flush-to-zero mode (the executor's
      ScopedFlushDenormal: every arithmetic result flushed;
      tests/test_review_attacks_shape_rules.py measures GEMV and GEMM
      products whose exact value is subnormal: none comes out subnormal);
 (n4) any result of one of the TensorFlow kernels in `FLUSHED_KERNELS`
      (DivNoNan: x / y or 0; SoftmaxCrossEntropyWithLogits: sums of
      products, and softmax - labels), evaluated by TensorFlow's CPU
      kernels with denormals flushed: every element they return is a
      flushed arithmetic result, never a copy of an input element
      (tests/test_static_shapes.py checks each at subnormal, huge and tiny
      inputs);
 (n5) a Cast of a term whose dtype (as the terms know it) is bool or an
      integer: each element converts to 0 or a number at least 1 in
      magnitude (the largest uint64 is far below float32's largest), never
      a subnormal;
 (n6) Reshape, ReshapeTo, Tile, ExpandDims, Identity, Neg or Relu of a term
      in N (their first argument): every element of the result is an
      element of the argument, its negation, or a zero (Relu: x, +0 or the
      zero flush(x) gives; oracle/opdefs/nn.py), so no subnormal.

The rule
========

`Mul.ftz(x, c)` is x when c is a constant float32 or float64 scalar equal
to 1, x's dtype (as the terms know it: its value's dtype wherever it is a
tensor) is c's, x is in N, both programs are blind to NaN payloads (as (E3)
of checking/structural.py) and the arithmetic is IEEE (not `--float real`).
At every σ:
 - x an error: both are that error (Mul.ftz is strict; c is no error);
 - x a tensor: of c's dtype, so no dtype mismatch; the scalar broadcasts to
   x's shape; x holds no subnormal, so the flush of the arguments changes
   nothing, and e * 1 is e exactly in IEEE arithmetic for every element e
   (±0, ±inf, normal numbers; a NaN stays a NaN, its payload only possibly
   quieted, which no function of either program observes); the result, x,
   holds no subnormal, so neither the flush of the result nor the
   correction for a product rounded up to the smallest normal
   (`functions._tiny_after_rounding`: only where a result is ±tiny, redone
   scaled; |e| * 2^64 is not below tiny * 2^64) changes it.
Whatever attributes the node carries: Mul.ftz's implementation (the flushed
variant of `Mul`, `_mul`) reads none.  The constant operand may come first
in the program: (R2) puts it second before this rule is tried.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.values import Tensor

#: (n4) TensorFlow kernels whose every float output element is a flushed
#: arithmetic result
FLUSHED_KERNELS = frozenset({"tf.DivNoNan/2/1", "tf.SoftmaxCrossEntropyWithLogits/2/2"})
#: (n6) functions whose result's elements are their first argument's
#: elements, their negations, or zeros; captured at import (a function
#: re-registered under one of these names is not taken for it)
_COPIES = {name: fns.lookup(name)
           for name in ("Reshape", "ReshapeTo", "Tile", "ExpandDims", "Identity", "Neg", "Relu")}
_MUL_FTZ = fns.lookup("Mul.ftz")
_MATMUL = fns.lookup("MatMul")
_CAST = fns.lookup("Cast")
_KERNELS = {name: fns.lookup(name) for name in FLUSHED_KERNELS}
_FLOATS = frozenset({"float32", "float64"})
_EXACT_SOURCES = ("bool", "int", "uint")


def constant_never_subnormal(value: Any) -> bool:
    """(n1) Whether `value` is a float32 or float64 tensor without a
    subnormal element."""
    if not isinstance(value, Tensor) or value.dtype not in _FLOATS:
        return False
    a = value.array
    with np.errstate(all="ignore"):
        return not bool(np.any((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)))


def _flushing_form(f: fns.Function) -> bool:
    """(n2) tfsem's own flushed variants (oracle/functions.py)."""
    impl = getattr(f, "impl", None)
    return (f.name.endswith(fns.FTZ_SUFFIX)
            and getattr(impl, "__module__", "") == "tfsem.oracle.functions"
            and getattr(impl, "__qualname__", "").startswith(
                ("flushed_variant.", "flushed_extremum.")))


def result_never_subnormal(op: str, f: fns.Function | None, args: tuple[int, ...],
                           never: set[int], dtypes: Mapping[int, str]) -> bool:
    """Whether the results of `op` (function `f`) applied to terms `args`
    are in N by (n2)-(n6); `never` holds the terms known to be in N,
    `dtypes` the terms' known dtypes."""
    if f is None:
        return False
    if _flushing_form(f) or (f is _MATMUL and _MATMUL is not None):
        return True
    if op in _KERNELS and _KERNELS[op] is f:
        return True
    if not args:
        return False
    if _COPIES.get(op) is f:
        return args[0] in never
    return f is _CAST and _CAST is not None and dtypes.get(args[0], "").startswith(_EXACT_SOURCES)


def product_by_one(f: fns.Function | None, args: tuple[int, ...], never: set[int],
                   consts: Mapping[int, Any], dtypes: Mapping[int, str]) -> bool:
    """Whether f(args) is args[0] at every σ by the rule above (the caller
    asks for NaN-payload blindness and IEEE arithmetic)."""
    if f is None or f is not _MUL_FTZ or len(args) != 2 or args[0] not in never:
        return False
    c = consts.get(args[1])
    if not isinstance(c, Tensor) or c.dtype not in _FLOATS or c.array.shape != ():
        return False
    return dtypes.get(args[0]) == c.dtype and \
        c.array.tobytes() == np.array(1, dtype=c.array.dtype).tobytes()


__all__ = ["FLUSHED_KERNELS", "constant_never_subnormal", "product_by_one",
           "result_never_subnormal"]
