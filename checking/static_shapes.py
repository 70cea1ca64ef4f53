"""The reshapes that change nothing, for the structural rule (issue 23:
Grappler's arithmetic optimizer removes a `Reshape` whose input already has
the target shape), and the dtypes of some kernels' results.  (The product
by one, (F1) here before, is checking/product_by_one.py's (R4).)

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

from tfsem.oracle import functions as fns
from tfsem.oracle.static_shapes import (BROADCASTING_2, ELEMENTWISE_1, MOVES_ELEMENTS,  # noqa: F401
                                        Shape, _int_vector, _resolve, data_inputs,
                                        result_shapes, static_shapes)


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
# Dtype claims (the structural rule's `_Terms.dtypes`)

#: (dtype claims) TensorFlow kernels whose outputs all have the dtype of
#: their `T` attribute (the OpDef's outputs are of type T)
_OUTPUTS_OF_TYPE_T = frozenset({"tf.SoftmaxCrossEntropyWithLogits/2/2", "tf.DivNoNan/2/1"})
_TF_DTYPES = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64"}
_CAST = fns.lookup("Cast")
_CAST_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64", "float16", "bfloat16", "float32", "float64"})


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
