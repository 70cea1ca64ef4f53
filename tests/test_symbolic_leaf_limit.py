"""A leaf too large for the element terms is refused before its elements
are made (checking/symbolic.py `Algebra.leaf`): the same refusal, the same
reason, and nothing left in the algebra's table; a leaf within the limit is
made as before."""
import math

import pytest

from tfsem.checking import symbolic as Y
from tfsem.checking.check import check_rewrite
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import TensorType


@pytest.mark.parametrize("shape", [(Y.MAX_ELEMENTS + 1,), (65, 65), (3, 100, 100)])
def test_large_leaf_refused_without_terms(shape):
    a = Y.Algebra()
    a.leaf("feed", "small", TensorType("float32", (2, 3)))
    before = (len(a._terms), len(a.leaves))
    with pytest.raises(Y.NeedsGeneric) as leaf_refusal:
        a.leaf("init", "big", TensorType("float32", shape))
    assert (len(a._terms), len(a.leaves)) == before
    # the reason is the one `tensor` gives for the same elements
    b = Y.Algebra()
    with pytest.raises(Y.NeedsGeneric) as tensor_refusal:
        b.tensor("float32", shape, (b.term("init", "float32", (), ("big", i))
                                    for i in range(math.prod(shape))))
    assert str(leaf_refusal.value) == str(tensor_refusal.value)


def test_leaf_at_the_limit_is_made():
    a = Y.Algebra()
    t = a.leaf("init", "x", TensorType("int32", (Y.MAX_ELEMENTS,)))
    assert len(t.elems) == Y.MAX_ELEMENTS
    assert [e.value for e in t.elems[:3]] == [("x", 0), ("x", 1), ("x", 2)]
    assert len(a.leaves) == Y.MAX_ELEMENTS


def test_large_variable_still_checked_generically():
    """A program whose variable exceeds the limit is still proved with the
    generic element (the refusal's kind and reason are unchanged)."""
    n = Y.MAX_ELEMENTS + 4

    def prog(op):
        return program_from_json({
            "format": "tfsem.program/1",
            "variables": {"x": {"dtype": "float32", "shape": [n]}},
            "feeds": {}, "outputs": {"out": "o"},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["v"]},
                      {"name": "o", "op": op, "inputs": ["r", "r"]},
                      {"name": "w", "op": "Write", "inputs": ["v", "o", "^r"]}]})
    v = check_rewrite(prog("Add"), prog("Mul"), timeout=10, structural=False)
    assert v.stats.get("generic") == f"a tensor of {n} elements (the symbolic limit is " \
        f"{Y.MAX_ELEMENTS})"
    assert v.verdict == "unsound", v.reason
