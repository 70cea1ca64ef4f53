"""The structural rule's shape rules and the product by one
(checking/structural.py, "Shape rules"): (R3) a Reshape of a Reshape, both
to fully specified shapes of as many elements, is the outer Reshape of the
inner argument; (R4) Mul.ftz(x, 1) is x where x never holds a subnormal;
(R5) a Tile by ones of a Reshape to a shape of that rank is its argument.
Each is compared with the enumerating oracle at σ of edge values (NaN,
signed zeros, subnormals, infinities, the largest floats) and of other
shapes than declared (a variable of 3 or 6 elements where 4 are reshaped,
an uninitialized one); the near misses (an inner shape of another size, an
inferred dimension, a Tile of another rank, a product by one of a value
that may be subnormal) are not proved, and the oracle shows a difference
for each.  Then the first differing subterm pair the rule reports where
(V) fails (`structural_first_difference`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

from shape_rules_support import these_rules_alone  # noqa: E402,F401  (autouse)

NIGHTLY = settings.get_current_profile_name() == "nightly"
F32 = np.float32
EDGE = [F32("nan"), F32(0.0), F32(-0.0), F32(1e-45), F32(-1e-40), F32(1.1754944e-38),
        F32("inf"), F32(-3.4028235e38), F32(-1.5), F32(0.1)]


def program(nodes: list, out: str = "o") -> object:
    """x (float32 [4]) read, plus the feed $b, then `nodes` (which may name
    "s", the sum); out := the node `out`, and x := it when it has 4
    elements' worth of shape (an error leaves x as it is)."""
    return program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [4]}},
        "feeds": {"b": {"dtype": "float32", "shape": [4]}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "s", "op": "Add.ftz", "inputs": ["r", "$b"]},
                  *nodes,
                  {"name": "w", "op": "Write", "inputs": ["v", out, "^r"]}],
        "outputs": {"out": out}})


def inits():
    """Initial values of x: uninitialized, then of 4, 3 and 6 elements."""
    yield Error(UNINITIALIZED)
    for n in (4, 3, 6):
        for k in range(0, len(EDGE), 3 if NIGHTLY else 5):
            yield Tensor(np.array([EDGE[(k + i) % len(EDGE)] for i in range(n)], F32))


def oracle_differs(p, q) -> bool:
    """Outcomes(q, σ) ⊄ Outcomes(p, σ) at some σ of edge values."""
    for a, b in itertools.product(EDGE, EDGE[::2] if NIGHTLY else EDGE[::4]):
        feeds = {"b": Tensor(np.array([a, b, b, a], F32))}
        for x in inits():
            ours = outcome_set(p, feeds, {"x": x}, "atomic", "outputs+state")
            theirs = outcome_set(q, feeds, {"x": x}, "atomic", "outputs+state")
            if any(o not in ours for o, _ in theirs.items()):
                return True
    return False


def reshape(name: str, arg: str, shape: list) -> dict:
    return {"name": name, "op": "Reshape", "inputs": [arg], "shape": shape}


# -- (R3) a Reshape of a Reshape ---------------------------------------------------


@pytest.mark.parametrize("inner, outer", [([2, 2], [4]), ([4, 1], [2, 2])]
                         + ([([1, 4], [4, 1]), ([2, 2], [1, 2, 2])] if NIGHTLY else []))
def test_a_reshape_of_a_reshape_is_proved_and_the_oracle_agrees(inner, outer):
    # (of the Read: x may hold 3 or 6 elements)
    p = program([reshape("i", "r", inner), reshape("o", "i", outer)])
    q = program([reshape("o", "r", outer)])
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "RESHAPE_OF_RESHAPE", False)
        assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("inner, outer", [
    ([2, 3], [4]),        # the inner Reshape fails on 4 elements, the outer alone does not
    ([4], [2, -1]),       # an inferred dimension: the outer alone takes 3 or 6 elements too
    ([-1], [2, 2]),       # (equal in fact, but outside the rule: not proved)
])
def test_other_reshapes_of_reshapes_are_not_proved(inner, outer):
    # (of the Read: x may hold 3 or 6 elements)
    p = program([reshape("i", "r", inner), reshape("o", "i", outer)])
    q = program([reshape("o", "r", outer)])
    assert not structural_refinement(p, q).proved
    if inner != [-1]:
        assert oracle_differs(p, q)


# -- (R4) the product by one ----------------------------------------------------


def one(dtype: str = "float32") -> dict:
    return {"name": "c", "op": "Const", "value": {"dtype": dtype, "value": 1.0}}


@pytest.mark.parametrize("op", ["Mul.ftz", "RealDiv.ftz"])
def test_a_product_by_one_of_a_flushed_value_is_proved_and_the_oracle_agrees(op):
    # s = Add.ftz(r, $b) never holds a subnormal; x / 1 is x * 1 by (R1)
    p = program([one(), {"name": "o", "op": op, "inputs": ["s", "c"]}])
    q = program([{"name": "o", "op": "Identity", "inputs": ["s"]}])
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "PRODUCT_BY_ONE", False)
        assert not structural_refinement(p, q).proved


def test_a_product_by_one_through_tile_and_reshape_is_proved():
    p = program([reshape("i", "s", [2, 2]), {"name": "t", "op": "Tile", "inputs": ["i"],
                                             "multiples": [2, 1]}, one(),
                  {"name": "o", "op": "Mul.ftz", "inputs": ["c", "t"]}])
    q = program([reshape("i", "s", [2, 2]), {"name": "o", "op": "Tile", "inputs": ["i"],
                                             "multiples": [2, 1]}])
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q)


@pytest.mark.parametrize("sum_op, c", [("Add", 1.0), ("Add.ftz", 2.0), ("Add.ftz", [1.0, 1.0, 1.0, 1.0])])
def test_other_products_are_not_proved(sum_op, c):
    # Add keeps subnormals, which Mul.ftz flushes; 2 is not one; a [4] one is not a scalar
    # (the same values, but outside the rule)
    def prog(out_nodes):
        return program_from_json({
            "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [4]}},
            "feeds": {"b": {"dtype": "float32", "shape": [4]}},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["v"]},
                      {"name": "s", "op": sum_op, "inputs": ["r", "$b"]}, *out_nodes,
                      {"name": "w", "op": "Write", "inputs": ["v", "o", "^r"]}],
            "outputs": {"out": "o"}})
    p = prog([{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": c}},
              {"name": "o", "op": "Mul.ftz", "inputs": ["s", "c"]}])
    q = prog([{"name": "o", "op": "Identity", "inputs": ["s"]}])
    assert not structural_refinement(p, q).proved
    if sum_op == "Add" or c == 2.0:
        assert oracle_differs(p, q)


@pytest.mark.skipif(not NIGHTLY, reason="starts TensorFlow's kernel child (nightly)")
def test_matmul_kernel_results_hold_no_subnormal():
    """(R4) takes MatMul's results for flushed: TensorFlow's kernel runs with
    flush-to-zero on, so a product whose exact value is subnormal is 0."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import functions as fns
    from tfsem.oracle import kernels
    with kernels.use(True):
        (r,) = fns.lookup("MatMul").apply([Tensor(np.array([[1e-20, 3e-20]], F32)),
                                           Tensor(np.array([[1e-20], [1e-20]], F32))])
    assert isinstance(r, Tensor) and r.array.tolist() == [[0.0]]


# -- (R5) a Tile by ones ---------------------------------------------------------


def tile(name: str, arg: str, multiples: list) -> dict:
    return {"name": name, "op": "Tile", "inputs": [arg], "multiples": multiples}


def test_a_tile_by_ones_of_a_reshape_of_that_rank_is_proved_and_the_oracle_agrees():
    p = program([reshape("i", "r", [2, 2]), tile("o", "i", [1, 1])])
    q = program([reshape("o", "r", [2, 2])])
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "TILE_BY_ONES", False)
        assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("nodes, multiples", [
    ([reshape("i", "r", [2, 2])], [1]),      # another rank: Tile fails, the Reshape does not
    ([], [1]),                               # the rank of r is not known
])
def test_other_tiles_are_not_proved(nodes, multiples):
    arg = "i" if nodes else "r"
    p = program([*nodes, tile("o", arg, multiples)])
    q = program([*nodes, {"name": "o", "op": "Identity", "inputs": [arg]}])
    assert not structural_refinement(p, q).proved
    if nodes:
        assert oracle_differs(p, q)


# -- the first difference ----------------------------------------------------------


def test_the_first_difference_names_the_rewritten_division():
    p = program([{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": 3.0}},
                 {"name": "o", "op": "RealDiv.ftz", "inputs": ["s", "c"]}])
    q = program([{"name": "c", "op": "Const",
                  "value": {"dtype": "float32", "value": float(F32(1) / F32(3))}},
                 {"name": "o", "op": "Mul.ftz", "inputs": ["s", "c"]}])
    r = structural_refinement(p, q)
    assert not r.proved
    first = r.stats["first_difference"]
    assert first["value"] == "Assign 'w'" and first["values_differing"] == 2
    assert first["original"] == {"node": "o", "term": "RealDiv.ftz(Add.ftz(read(r), feed(b)), "
                                                      "float32[] 3.0)"}
    assert first["rewrite"]["node"] == "o"
    assert first["rewrite"]["term"].startswith("Mul.ftz(Add.ftz(read(r), feed(b)), float32[] 0.333")
    assert first["kinds"] == [{"change": "RealDiv.ftz -> Mul.ftz", "values": 2}]
    v = check_rewrite(p, q, timeout=5)
    assert v.stats["structural_first_difference"] == first


def test_the_first_difference_follows_a_commutative_operand_moved():
    # the ≈-terms sort a commutative op's operands by term: the descent pairs
    # the operand the two sides share, and goes into the other
    p = program([reshape("i", "s", [2, 2]), reshape("j", "i", [4]),
                 {"name": "o", "op": "Mul.ftz", "inputs": ["j", "r"]}])
    q = program([{"name": "n", "op": "Neg", "inputs": ["s"]},
                 {"name": "o", "op": "Mul.ftz", "inputs": ["r", "n"]}])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "RESHAPE_OF_RESHAPE", False)
        first = structural_refinement(p, q).stats["first_difference"]
    assert first["original"]["node"] == "j" and first["original"]["term"].startswith("Reshape(")
    assert first["rewrite"]["node"] == "n" and first["rewrite"]["term"].startswith("Neg(")
