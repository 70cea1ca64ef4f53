"""Z3 encodings of TensorFlow's comparisons (Less, LessEqual, Greater,
GreaterEqual, Equal, NotEqual) and of Select/SelectV2 in the generic checker
(oracle/opdefs/math.py, checking/generic.py).

Each rewrite below is decided by the checker on tensors past
symbolic.MAX_ELEMENTS (the generic element) and, differentially, by the
concrete oracle's enumeration of both programs at a σ that holds every pair
of edge values (NaN, infinities, signed zeros, subnormals, the extremes):
a `sound` verdict must agree with the oracle finding no difference there,
and a rewrite the oracle refutes must be `unsound`.  The encodings
themselves are compared element by element with the implementations on
every dtype's edge values in tests/test_check_generic.py, and here with
TensorFlow's own kernels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.checking.symbolic import MAX_ELEMENTS
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import DTYPES, Tensor, edge_values

BIG = MAX_ELEMENTS + 1


def prog(nodes, dtype):
    f = {k: TensorType(dtype, (BIG,)) for k in "ab"}
    return P.program(nodes, {"out": "r"}, (), f)


def edge_sigma(dtype: str) -> dict:
    """Feeds a and b holding every pair of the dtype's edge values (repeated to BIG)."""
    e = edge_values(dtype)
    pairs = list(itertools.product(range(len(e)), repeat=2))
    idx = np.array([pairs[k % len(pairs)] for k in range(BIG)])
    return {"a": Tensor(e[idx[:, 0]]), "b": Tensor(e[idx[:, 1]])}


def oracle_differs(p, q, dtype) -> bool:
    feeds = edge_sigma(dtype)
    ours = outcome_set(p, feeds, {}, "atomic", "outputs+state")
    theirs = outcome_set(q, feeds, {}, "atomic", "outputs+state")
    return any(o not in ours for o, _ in theirs.items())


def select(cmp: str, x: str, y: str, *, v2=True, swap=False):
    a, b = ("$b", "$a") if swap else ("$a", "$b")
    return [P.apply("c", cmp, a, b), P.apply("r", "SelectV2" if v2 else "Select", "c", x, y)]


# (original, rewritten, dtype, sound?)
CASES = [
    # a < b is b > a, NaN and signed zeros included
    ("lt-gt", select("Less", "$a", "$b"), select("Greater", "$a", "$b", swap=True), "float32", True),
    ("le-ge", select("LessEqual", "$a", "$b"), select("GreaterEqual", "$a", "$b", swap=True),
     "float64", True),
    ("eq-commutes", [P.apply("r", "Equal", "$a", "$b")], [P.apply("r", "Equal", "$b", "$a")],
     "float32", True),
    ("ne-commutes-int", [P.apply("r", "NotEqual", "$a", "$b")], [P.apply("r", "NotEqual", "$b", "$a")],
     "int32", True),
    # min by Select: NaN makes Less false, so not(a < b) is not a >= b
    ("lt-not-ge", select("Less", "$a", "$b"), select("GreaterEqual", "$a", "$b", v2=False) [:1]
     + [P.apply("r", "Select", "c", "$b", "$a")], "float32", False),
    # the same on integers (no NaN) is sound
    ("lt-not-ge-int", select("Less", "$a", "$b"), select("GreaterEqual", "$a", "$b")[:1]
     + [P.apply("r", "SelectV2", "c", "$b", "$a")], "int64", True),
    # unsigned order is not signed order
    ("uint-order", select("Less", "$a", "$b"), select("Greater", "$a", "$b"), "uint8", False),
    # -0 == +0: Select(a == b, a, b) is not always b (a = -0, b = +0 differ in bits)
    ("eq-select-bits", select("Equal", "$a", "$b"), [P.apply("r", "Identity", "$b")], "float32", False),
    # on integers equal values are the same bits: Select(a == b, a, b) is b
    ("eq-select-int", select("Equal", "$a", "$b"), [P.apply("r", "Identity", "$b")], "int16", True),
    # NotEqual is true on NaN: Select(a != a, ...) differs from always-y
    ("ne-nan", [P.apply("c", "NotEqual", "$a", "$a"), P.apply("r", "SelectV2", "c", "$a", "$b")],
     [P.apply("r", "Identity", "$b")], "float32", False),
    ("ne-int", [P.apply("c", "NotEqual", "$a", "$a"), P.apply("r", "SelectV2", "c", "$a", "$b")],
     [P.apply("r", "Identity", "$b")], "int8", True),
]


@pytest.mark.parametrize("name,p_nodes,q_nodes,dtype,sound", CASES, ids=[c[0] for c in CASES])
def test_comparisons_and_select_decide_as_the_oracle(name, p_nodes, q_nodes, dtype, sound):
    p, q = prog(p_nodes, dtype), prog(q_nodes, dtype)
    differs = oracle_differs(p, q, dtype)
    assert differs == (not sound), name
    v = check_rewrite(p, q, timeout=30 if sound else 10, structural=False)
    if sound:
        assert v.verdict == "sound", (name, v.reason)
        assert v.stats.get("generic"), "the generic element decided it"
    else:
        assert v.verdict == "unsound", (name, v.reason)


def test_subnormals_compare_as_zero_on_flushed_dtypes_only():
    # Equal(a, 0) and Equal(a, smallest subnormal) agree where TensorFlow
    # flushes (denormals-are-zero), and not on float16, which it does not
    def pair(dtype):
        tiny = np.array(np.finfo(DTYPES[dtype]).smallest_subnormal, DTYPES[dtype])
        p = prog([P.const("z", Tensor(np.zeros((), DTYPES[dtype]))), P.apply("r", "Equal", "$a", "z")],
                 dtype)
        q = prog([P.const("z", Tensor(tiny)), P.apply("r", "Equal", "$a", "z")], dtype)
        return p, q
    p, q = pair("float32")
    assert not oracle_differs(p, q, "float32")
    assert check_rewrite(p, q, timeout=30, structural=False).verdict == "sound"
    p, q = pair("float16")
    assert oracle_differs(p, q, "float16")
    assert check_rewrite(p, q, timeout=10, structural=False).verdict == "unsound"


def test_select_with_a_row_condition_stays_uninterpreted():
    # Select's condition along x's first axis is not numpy broadcasting: no encoding
    alg = gen.GenericAlgebra()
    from tfsem.oracle import functions as fns
    c = alg.leaf("feed", "c", TensorType("bool", (4,)))
    x = alg.leaf("feed", "x", TensorType("float32", (4, 3)))
    y = alg.leaf("feed", "y", TensorType("float32", (4, 3)))
    (r,) = alg.apply(fns.get("Select"), [c, x, y])
    assert not isinstance(r, gen.GTensor)
    c2 = alg.leaf("feed", "c2", TensorType("bool", (4, 3)))
    (r2,) = alg.apply(fns.get("Select"), [c2, x, y])
    assert isinstance(r2, gen.GTensor) and r2.dtype == "float32" and r2.shape == (4, 3)
    (b,) = alg.apply(fns.get("Less"), [x, y])
    assert isinstance(b, gen.GTensor) and b.dtype == "bool"


def test_the_encodings_are_tensorflows_kernels_on_edge_values():
    tf = pytest.importorskip("tensorflow", reason="compares the encodings with TensorFlow's kernels")
    import z3

    from tfsem.checking.encode import _numeral, z3_const
    enc = gen.GenericEncoder()
    ops = {"Less": tf.math.less, "LessEqual": tf.math.less_equal, "Greater": tf.math.greater,
           "GreaterEqual": tf.math.greater_equal, "Equal": tf.math.equal,
           "NotEqual": tf.math.not_equal}
    # (the flushed float dtypes, float16, which is not flushed, and an
    # unsigned integer; every dtype against the implementation: test_check_generic.py)
    nightly = settings.get_current_profile_name() == "nightly"
    for dtype in (("float32", "bfloat16", "float16", "uint8", "float64", "int64") if nightly
                  else ("float32", "float16")):
        e = edge_values(dtype)
        a = np.repeat(e, len(e))
        b = np.tile(e, len(e))
        tfd = tf.bfloat16 if dtype == "bfloat16" else tf.as_dtype(DTYPES[dtype])
        for name, op in ops.items():
            with tf.device("/CPU:0"):
                want = op(tf.constant(a, tfd), tf.constant(b, tfd)).numpy()
            key = gen.EXTRA[name]
            for k in range(len(a)):
                got = _numeral(z3.simplify(enc.scalar_op(
                    key, dtype, [z3_const(a[k], dtype), z3_const(b[k], dtype)])), "bool")
                assert bool(got) == bool(want[k]), (name, dtype, a[k], b[k])
        # SelectV2 copies bits: -0, NaN payloads and subnormals unchanged
        with tf.device("/CPU:0"):
            want = tf.where(tf.constant(np.arange(len(a)) % 2 == 0),
                            tf.constant(a, tfd), tf.constant(b, tfd)).numpy()
        for k in range(len(a)):
            got = _numeral(z3.simplify(enc.scalar_op(
                "select", "bool", [z3_const(np.bool_(k % 2 == 0), "bool"), z3_const(a[k], dtype),
                                   z3_const(b[k], dtype)])), dtype)
            assert np.asarray(got, DTYPES[dtype]).tobytes() == \
                np.asarray(want[k], DTYPES[dtype]).tobytes(), (dtype, k)
