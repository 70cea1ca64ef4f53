"""`const-fold` (rewrites/const_fold.py) leaves a function whose result is no
tensor alone: an EmptyTensorList of constant operands was folded into a
Const holding a TensorList, a program that `==`, hashing and the checker
could not handle (TypeError in `attrs_key`), found by the review of the
control-flow engine's chain (docs/review-demand-and-chain.md) on
generators/nested_loops.py's programs."""

from __future__ import annotations

from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json
from tfsem.rewrites import builtin_passes

LIST = program_from_json({
    "format": "tfsem.program/1", "variables": [],
    "nodes": [
        {"name": "shape", "op": "Const", "value": {"dtype": "int32", "value": []}},
        {"name": "most", "op": "Const", "value": {"dtype": "int32", "value": -1}},
        {"name": "empty", "op": "EmptyTensorList", "element_dtype": "int64",
         "inputs": ["shape", "most"]},
        {"name": "len", "op": "TensorListLength", "inputs": ["empty"]},
        {"name": "two", "op": "Const", "value": 2},
        {"name": "three", "op": "Const", "value": 3},
        {"name": "sum", "op": "Add", "inputs": ["two", "three"]},
    ],
    "outputs": {"n": "len", "s": "sum"}})


def test_a_tensor_list_is_not_folded_into_a_const():
    q = builtin_passes()["const-fold"].function(LIST)
    assert q.node["empty"].op == "EmptyTensorList"
    assert q.node["sum"].op == "Const"            # (a tensor still folds)
    assert q != LIST and hash(q) != 0              # (comparable: no TypeError)
    v = check_rewrite(LIST, q, timeout=10, classify=False)
    assert v.verdict == "sound", v.reason
