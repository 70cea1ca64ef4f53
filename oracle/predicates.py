"""Comparisons and logical operations: the predicates of conditionals and
loops (SPEC section 9).  A `Switch` takes a bool scalar predicate and a loop's
`LoopCond` a bool scalar; a `tf.while_loop` computes it with `Less` and friends.

Each is TensorFlow 2.21's CPU kernel elementwise with broadcasting, as
measured by tests/test_controlflow_predicates.py on every dtype's edge values:

* an ordered comparison with a NaN is false, `NotEqual` with a NaN is true,
  signed zeros compare equal; the result is `bool`;
* on bfloat16, float32 and float64 the executor's denormals-are-zero mode
  applies: a subnormal argument compares as zero (float16 is compared exactly,
  as functions.FLUSHED_DTYPES says for arithmetic);
* `Less`, `LessEqual`, `Greater` and `GreaterEqual` have no bool kernel, the
  logical ops only a bool one: elsewhere the `no-kernel` error value;
* `Select` and `SelectV2` copy elements of x or y as the bool condition says
  (bit for bit: NaN payloads, signed zeros and subnormals pass unchanged, no
  flush): `SelectV2` broadcasts its three arguments, `Select` takes a
  condition of x's shape, a scalar one (all of x or all of y), or a vector
  along x's first axis; x and y have one dtype and (for `Select`) one shape.

Both arguments have one dtype (a mismatch is the dtype-mismatch error value,
as for every function).  They are the "tensorflow" family: graph import maps
onto them; the core language's function list (generators, fuzzers) is
unchanged.
"""

from __future__ import annotations

import numpy as np

from .functions import BROADCASTING, FLUSHED_DTYPES, OpError, ShapeError, function
from .values import DTYPE_MISMATCH, dtype_name

_ORDERED = {"Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
            "GreaterEqual": np.greater_equal}
_EQUALITY = {"Equal": np.equal, "NotEqual": np.not_equal}
_TINY32 = np.finfo(np.float32).tiny
_TINY64 = np.finfo(np.float64).tiny


def _daz(a: np.ndarray) -> np.ndarray:
    """Denormals-are-zero: a subnormal of a flushed dtype compares as zero."""
    name = dtype_name(a.dtype)
    if name not in FLUSHED_DTYPES:
        return a
    if name == "float64":
        return np.where(np.abs(a) < _TINY64, 0.0, a)
    a = a.astype(np.float32)   # bfloat16 and float32 share float32's exponent range
    return np.where(np.abs(a) < _TINY32, np.float32(0.0), a)


def _comparison(name: str, op, ordered: bool) -> None:
    def impl(xp, args, attrs):
        if ordered and args[0].dtype == np.bool_:
            raise OpError("no-kernel", f"{name} has no kernel for bool")
        return (np.asarray(op(_daz(args[0]), _daz(args[1])), dtype=np.bool_),)
    impl.__doc__ = f"Elementwise {name} (TensorFlow's {name}), a bool result."
    function(name, 2, 1, batched=BROADCASTING, casts=True, family="tensorflow")(impl)


for _name, _op in _ORDERED.items():
    _comparison(_name, _op, True)
for _name, _op in _EQUALITY.items():
    _comparison(_name, _op, False)


def _bool_only(name: str, *arrays: np.ndarray) -> None:
    for a in arrays:
        if a.dtype != np.bool_:
            raise OpError("no-kernel", f"{name} has no kernel for {dtype_name(a.dtype)}")


@function("LogicalNot", 1, 1, batched=BROADCASTING, casts=True, family="tensorflow")
def _logical_not(xp, args, attrs):
    """Elementwise not of a bool tensor."""
    _bool_only("LogicalNot", args[0])
    return (np.logical_not(args[0]),)


@function("LogicalAnd", 2, 1, batched=BROADCASTING, casts=True, family="tensorflow")
def _logical_and(xp, args, attrs):
    """Elementwise and of bool tensors."""
    _bool_only("LogicalAnd", *args)
    return (np.logical_and(args[0], args[1]),)


@function("LogicalOr", 2, 1, batched=BROADCASTING, casts=True, family="tensorflow")
def _logical_or(xp, args, attrs):
    """Elementwise or of bool tensors."""
    _bool_only("LogicalOr", *args)
    return (np.logical_or(args[0], args[1]),)


def _select_args(name: str, c: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    if x.dtype != y.dtype:
        raise OpError(DTYPE_MISMATCH, f"{name}: x is {dtype_name(x.dtype)}, y {dtype_name(y.dtype)}")
    if c.dtype != np.bool_:
        raise OpError("no-kernel", f"{name} takes a bool condition, not {dtype_name(c.dtype)}")


@function("SelectV2", 3, 1, batched=BROADCASTING, casts=True, mixed_dtypes=True,
          family="tensorflow")
def _select_v2(xp, args, attrs):
    """x where the condition holds, else y, all three broadcast (tf.where)."""
    c, x, y = args
    _select_args("SelectV2", c, x, y)
    return (np.where(c, x, y).astype(x.dtype, copy=False),)


@function("Select", 3, 1, casts=True, mixed_dtypes=True, family="tensorflow")
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
    return (np.where(c, x, y).astype(x.dtype, copy=False),)
