"""Attacks on the static shapes of checking/static_shapes.py and the
structural rule's (S) (a Reshape to the shape its argument has at every σ is
the argument), each compared with the enumerating oracle.

The functions that only move elements (`MOVES_ELEMENTS`) had their result's
shape computed on a stand-in of zeros for every operand that is not a
constant, the index operands included: Slice(x, $b, [-1]) was claimed of
shape [3] (the stand-in begin 0), so Reshape(Slice(x, $b, [-1]), [3]) -> the
Slice was proved sound; at b = [1] the original fails (2 elements into [3])
and the rewrite outputs [2, 3]."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking.check import check_rewrite
from tfsem.checking.static_shapes import static_shapes
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

MASKS = {m: 0 for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                        "shrink_axis_mask")}


def sliced(reshape: bool, op: str, fed: str = "b"):
    """Reshape(op(x, ...), [3]) (or op(x, ...) alone) with x a float32[3]
    feed and the operand `fed` (begin, or the permutation) fed."""
    feeds = {"x": {"dtype": "float32", "shape": [3]}, "b": {"dtype": "int32", "shape": [1]}}
    if op == "Slice":
        nodes = [{"name": "size", "op": "Const", "value": {"dtype": "int32", "value": [-1]}},
                 {"name": "s", "op": "Slice", "inputs": ["$x", "$b", "size"]}]
    elif op == "StridedSlice":
        nodes = [{"name": "end", "op": "Const", "value": {"dtype": "int32", "value": [3]}},
                 {"name": "st", "op": "Const", "value": {"dtype": "int32", "value": [1]}},
                 {"name": "s", "op": "StridedSlice", "inputs": ["$x", "$b", "end", "st"],
                  **MASKS}]
    else:   # Transpose by a fed permutation (rank 1: [0] is the only one)
        nodes = [{"name": "s", "op": "Transpose", "inputs": ["$x", "$b"]}]
    if reshape:
        nodes.append({"name": "y", "op": "Reshape", "inputs": ["s"], "shape": [3]})
    return program_from_json({"format": "tfsem.program/1", "variables": [], "feeds": feeds,
                              "nodes": nodes, "outputs": {"y": "y" if reshape else "s"}})


@pytest.mark.parametrize("op", ["Slice", "StridedSlice"])
def test_a_fed_begin_gives_the_slice_no_static_shape(op):
    p, q = sliced(True, op), sliced(False, op)
    for shapes in static_shapes(p, q):
        assert ("s", 0) not in shapes, shapes
    sigma = ({"x": Tensor(np.array([1, 2, 3], np.float32), "float32"),
              "b": Tensor(np.array([1], np.int32), "int32")}, {})
    theirs = set(outcome_set(p, *sigma, "atomic"))
    assert not set(outcome_set(q, *sigma, "atomic")) <= theirs    # (a real difference)
    v = check_rewrite(p, q, "atomic", timeout=10, backends=False, classify=False)
    assert v.verdict != "sound", v.reason


def test_a_constant_begin_still_gives_the_slice_its_shape():
    p = sliced(True, "Slice")
    raw_b = {"name": "b0", "op": "Const", "value": {"dtype": "int32", "value": [0]}}
    p = program_from_json({"format": "tfsem.program/1", "variables": [],
                           "feeds": {"x": {"dtype": "float32", "shape": [3]}},
                           "nodes": [raw_b] + [
                               {**n, "inputs": ["b0" if i == "$b" else i for i in n["inputs"]]}
                               if "inputs" in n else n
                               for n in [{"name": "size", "op": "Const",
                                          "value": {"dtype": "int32", "value": [-1]}},
                                         {"name": "s", "op": "Slice",
                                          "inputs": ["$x", "$b", "size"]},
                                         {"name": "y", "op": "Reshape", "inputs": ["s"],
                                          "shape": [3]}]],
                           "outputs": {"y": "y"}})
    (shapes,) = static_shapes(p)
    assert shapes[("s", 0)] == (3,)
