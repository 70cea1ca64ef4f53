"""Comparisons and logical operations: the predicates of conditionals and
loops (SPEC section 9).  A `Switch` takes a bool scalar predicate and a loop's
`LoopCond` a bool scalar; a `tf.while_loop` computes it with `Less` and friends.

Each is TensorFlow's kernel elementwise with broadcasting: an ordered
comparison with a NaN is false, `NotEqual` with a NaN is true, signed zeros
compare equal; the result is `bool`.  Both arguments have one dtype (a
mismatch is the dtype-mismatch error value, as for every function).  They are
the "tensorflow" family: graph import maps onto them; the core language's
function list (generators, fuzzers) is unchanged.
"""

from __future__ import annotations

import numpy as np

from .functions import BROADCASTING, DTYPE_MISMATCH, OpError, function

_COMPARISONS = {
    "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
    "GreaterEqual": np.greater_equal, "Equal": np.equal, "NotEqual": np.not_equal,
}


def _comparison(name: str, op) -> None:
    def impl(xp, args, attrs):
        return (np.asarray(op(args[0], args[1]), dtype=np.bool_),)
    impl.__doc__ = f"Elementwise {name} (TensorFlow's {name}), a bool result."
    function(name, 2, 1, batched=BROADCASTING, casts=True, family="tensorflow")(impl)


for _name, _op in _COMPARISONS.items():
    _comparison(_name, _op)


@function("LogicalNot", 1, 1, batched=BROADCASTING, casts=True, family="tensorflow")
def _logical_not(xp, args, attrs):
    """Elementwise not of a bool tensor (any other dtype: the dtype-mismatch error)."""
    if args[0].dtype != np.bool_:
        raise OpError(DTYPE_MISMATCH)
    return (np.logical_not(args[0]),)


@function("LogicalAnd", 2, 1, batched=BROADCASTING, casts=True, family="tensorflow")
def _logical_and(xp, args, attrs):
    """Elementwise and of bool tensors."""
    if args[0].dtype != np.bool_:
        raise OpError(DTYPE_MISMATCH)
    return (np.logical_and(args[0], args[1]),)
