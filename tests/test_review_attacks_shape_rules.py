"""Attacks on the structural rule's shape rules and the product by one
(checking/structural.py, "Shape rules": (R3), (R4), (R5)), each compared
with the enumerating oracle (`outcome_set`, and `check_rewrite` with the
structural rule off).  A rule that says `sound` where the oracle shows an
outcome of the rewrite the original does not have is a false verdict."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

M = 2 ** 31 - 1


def program(dtype: str, shape: list, nodes: list, out: str = "o"):
    """x (dtype, shape) read as r, then `nodes`; out := the node `out`."""
    return program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": dtype, "shape": shape}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]}, *nodes],
        "outputs": {"out": out}})


def reshape(name: str, arg: str, shape: list) -> dict:
    return {"name": name, "op": "Reshape", "inputs": [arg], "shape": shape}


def new_outcomes(p, q, x: Tensor) -> list:
    """The outcomes of q at σ = {x} that p does not have."""
    ours = outcome_set(p, {}, {"x": x}, "atomic", "outputs+state")
    return [o for o, _ in outcome_set(q, {}, {"x": x}, "atomic", "outputs+state").items()
            if o not in ours]


def test_a_reshape_to_an_empty_shape_with_too_many_elements_is_not_removed():
    # Reshape([M, M, M, 0]) of the empty x fails (TensorFlow 2.21: "Shape
    # [2147483647, 2147483647, 2147483647, 0] has too many elements"; numpy
    # refuses it too), Reshape([0]) of it does not: (R3) took
    # Reshape[0](Reshape[M, M, M, 0](x)) for Reshape[0](x) and said `sound`
    p = program("float32", [0], [reshape("i", "r", [M, M, M, 0]), reshape("o", "i", [0])])
    q = program("float32", [0], [reshape("o", "r", [0])])
    assert new_outcomes(p, q, Tensor(np.zeros(0, np.float32)))   # P errors, P' gives []
    assert not structural_refinement(p, q).proved
    assert check_rewrite(p, q, timeout=20).verdict != "sound"


@pytest.mark.parametrize("inner", [[M, M, 0], [0, M, M, M]])
def test_a_reshape_to_an_empty_shape_numpy_cannot_hold_is_refused(inner):
    # TensorFlow gives an empty tensor of that shape; numpy holds no float32
    # array of it ("array is too big"): the model refuses by name (it said
    # shape-mismatch, and (R3) then took the Reshape away: `sound`)
    p = program("float32", [0], [reshape("i", "r", inner), reshape("o", "i", [0])])
    q = program("float32", [0], [reshape("o", "r", [0])])
    with pytest.raises(CannotRun, match="Reshape"):
        outcome_set(p, {}, {"x": Tensor(np.zeros(0, np.float32))}, "atomic", "outputs+state")
    assert not structural_refinement(p, q).proved
    assert check_rewrite(p, q, timeout=20).verdict == "unknown"


def test_a_reshape_to_an_empty_shape_of_a_modest_span_is_still_removed():
    p = program("float32", [0], [reshape("i", "r", [2 ** 20, 2 ** 10, 0]),
                                 reshape("o", "i", [0, 3])])
    q = program("float32", [0], [reshape("o", "r", [0, 3])])
    assert structural_refinement(p, q).proved
    for x in (np.zeros(0, np.float32), np.zeros((2, 0), np.float32), np.ones(3, np.float32)):
        assert not new_outcomes(p, q, Tensor(x))
