"""Opaque functions in a canonical operand order (checking/symbolic.py
COMMUTATIVE_OPAQUE): a rewrite that only swaps the operands of TensorFlow's
flushing Add and Mul (Grappler's canonicalization of commutative ops) is
proved by congruence, and the shortcut never proves a swap of a function
that does not commute.  Differential: every verdict is compared with the
concrete oracle's enumeration of both programs at edge-value σ (NaN, signed
zeros, subnormals, infinities, the largest floats)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking import symbolic
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

F32 = np.float32
NIGHTLY = settings.get_current_profile_name() == "nightly"
EDGE = [F32("nan"), F32(0.0), F32(-0.0), F32(1e-45), F32(-1e-40), F32("inf"), F32("-inf"),
        F32(3.4e38), F32(-1.5), F32(2.0)]


def pair(op: str, swapped_op: str | None = None, *, variable: bool = False):
    """out = op(Read(v) or $a, $b), and the same with the operands swapped.
    With `variable`, the result is also assigned to v (state, not only outputs)."""
    def build(fn: str, args):
        nodes = [{"name": "v", "op": "Var", "var": "x"},
                 {"name": "r", "op": "Read", "inputs": ["v"]},
                 {"name": "o", "op": fn, "inputs": list(args)}]
        if variable:
            nodes.append({"name": "w", "op": "Write", "inputs": ["v", "o", "^r"]})
        return program_from_json({
            "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [2]}},
            "feeds": {"b": {"dtype": "float32", "shape": [2]}},
            "nodes": nodes, "outputs": {"out": "o"}})
    return build(op, ["r", "$b"]), build(swapped_op or op, ["$b", "r"])


def oracle_differs(p, q) -> bool:
    """Outcomes(q, σ) ⊄ Outcomes(p, σ) at some σ of edge values."""
    for a, b in itertools.product(EDGE, repeat=2):
        feeds = {"b": Tensor(np.array([b, a], F32))}
        init = {"x": Tensor(np.array([a, b], F32))}
        ours = outcome_set(p, feeds, init, "atomic", "outputs+state")
        theirs = outcome_set(q, feeds, init, "atomic", "outputs+state")
        if any(o not in ours for o, _ in theirs.items()):
            return True
    return False


@pytest.mark.parametrize("op", ["Add.ftz", "Mul.ftz"])
@pytest.mark.parametrize("variable", [False, True] if NIGHTLY else [True])
def test_a_swap_of_a_commutative_flushing_op_is_proved(op, variable):
    p, q = pair(op, variable=variable)
    assert symbolic._commutes(op)
    v = check_rewrite(p, q, timeout=20, structural=False)
    assert v.verdict == "sound", v.reason
    assert v.stats.get("path") == "symbolic"
    # the enumerating oracle agrees at every edge σ
    assert not oracle_differs(p, q)


@pytest.mark.parametrize("op", ["Sub.ftz", "Max.ftz"] + (["Min.ftz", "RealDiv.ftz"] if NIGHTLY else []))
def test_a_swap_of_an_op_that_does_not_commute_is_never_proved(op):
    # Max and Min return one operand on a tie of +0.0 and -0.0: not commutative
    p, q = pair(op)
    assert not symbolic._commutes(op)
    assert oracle_differs(p, q)        # the oracle shows a difference ...
    v = check_rewrite(p, q, timeout=20)
    assert v.verdict == "unsound", v.reason    # ... and the checker finds one


def test_the_canonical_order_is_one_value_either_way():
    from tfsem.oracle.program import TensorType
    alg = symbolic.Algebra()
    t = alg.leaf("feed", "t", TensorType("float32", (2,)))
    a = alg.opaque("X", 0, ())
    b = alg.opaque("Y", 0, ())
    assert alg.opaque("Mul.ftz", 0, (a, t)) is alg.opaque("Mul.ftz", 0, (t, a))
    assert alg.opaque("Sub.ftz", 0, (a, t)) is not alg.opaque("Sub.ftz", 0, (t, a))
    # two operands that may each be an error: the first one's error is the
    # result, so the order is kept
    assert alg.opaque("Mul.ftz", 0, (a, b)) is not alg.opaque("Mul.ftz", 0, (b, a))


def test_a_swap_of_two_operands_that_may_both_be_errors_is_not_proved():
    # found in review: canonicalizing Mul.ftz(a, b) with a and b both opaque
    # proved this `sound`, but a is a shape error at every σ and b a
    # no-kernel error (Sqrt of an integer), and the result is the first
    # operand's error
    def build(swap):
        nodes = [{"name": "a", "op": "Add.ftz", "inputs": ["$s2", "$s3"]},
                 {"name": "b", "op": "Sqrt", "inputs": ["$i"]},
                 {"name": "o", "op": "Mul.ftz", "inputs": ["b", "a"] if swap else ["a", "b"]}]
        return program_from_json({
            "format": "tfsem.program/1", "variables": [],
            "feeds": {"s2": {"dtype": "float32", "shape": [2]},
                      "s3": {"dtype": "float32", "shape": [3]}, "i": {"dtype": "int64", "shape": []}},
            "nodes": nodes, "outputs": {"out": "o"}})
    p, q = build(False), build(True)
    feeds = {"s2": Tensor(np.zeros(2, F32)), "s3": Tensor(np.zeros(3, F32)),
             "i": Tensor(np.array(4, np.int64))}
    ours = outcome_set(p, feeds, {}, "atomic", "outputs+state")
    theirs = outcome_set(q, feeds, {}, "atomic", "outputs+state")
    assert any(o not in ours for o, _ in theirs.items())
    for structural in (True, False):
        v = check_rewrite(p, q, timeout=10, structural=structural)
        assert v.verdict == "unsound", v.reason
