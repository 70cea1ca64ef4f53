"""Adversarial review of the one-outcome comparisons (checking/check.py
`_Checker.one_outcome_comparisons`, issue 23): where each program has one
outcome at every σ and ops run on TensorFlow's kernels, a σ is compared by
one run of each program, under a bound of σ, and the check then ends
`no-counterexample` without the normal stages.

Attack: a difference that shows only where variables start uninitialized.
Its σ begin with zeros, ones and edge values, all with every variable
initialized; only the random σ at the end leave a variable uninitialized (a
quarter of the time each), so a difference that needs two variables
uninitialized at once was usually past the bound: `no-counterexample`, where
the checker without the shortcut (or with it, given the σ) finds it.  Now
each accessed variable is uninitialized alone, then all together, right
after zeros and ones (`_uninitialized_sigmas`)."""

from __future__ import annotations

import numpy as np
from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor

from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401

F32 = np.float32


def program(expr_nodes):
    """o = expr(Read x, Read y, $a); x := o; out o."""
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {v: {"dtype": "float32", "shape": [3]} for v in ("x", "y")},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": [{"name": "vx", "op": "Var", "var": "x"}, {"name": "vy", "op": "Var", "var": "y"},
                  {"name": "rx", "op": "Read", "inputs": ["vx"]},
                  {"name": "ry", "op": "Read", "inputs": ["vy"]},
                  {"name": "f", "op": "Const", "value": {"dtype": "bool", "value": [False] * 3}},
                  *expr_nodes,
                  {"name": "w", "op": "Write", "inputs": ["vx", "o", "^rx", "^ry"]}],
        "outputs": {"out": "o"}})


# Select(false, x, a) is a where x is initialized and x's error where not
# (every Select argument is strict).  P' also passes y's error on: the
# programs differ only where y is uninitialized and x is not.
ORIGINAL = program([{"name": "sx", "op": "SelectV2", "inputs": ["f", "rx", "$a"]},
                    {"name": "o", "op": "Add.ftz", "inputs": ["sx", "$a"]}])
REWRITTEN = program([{"name": "sy", "op": "SelectV2", "inputs": ["f", "ry", "$a"]},
                     {"name": "sx", "op": "SelectV2", "inputs": ["f", "rx", "sy"]},
                     {"name": "o", "op": "Add.ftz", "inputs": ["sx", "$a"]}])


def differs(init) -> bool:
    feeds = {"a": Tensor(np.ones(3, F32))}
    ours = outcome_set(ORIGINAL, feeds, init, "atomic", "outputs+state")
    theirs = outcome_set(REWRITTEN, feeds, init, "atomic", "outputs+state")
    return any(o not in ours for o, _ in theirs.items())


def test_a_difference_only_where_a_variable_is_uninitialized_is_found_early(no_solver_candidates):
    one = Tensor(np.ones(3, F32))
    uninit = Error("uninitialized")
    assert not differs({"x": one, "y": one})
    assert not differs({"x": uninit, "y": uninit})
    assert differs({"x": one, "y": uninit})
    with as_if_kernels():
        v = check_rewrite(ORIGINAL, REWRITTEN, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["one_outcome"]["found"]
    # among the first σ compared (zeros, ones, the plain σ and its
    # huge-feeds form -- third and fourth since issue 23 --, then each
    # variable uninitialized alone), not at the tail of the bound: was the 28th
    assert v.stats["one_outcome"]["compared"] <= 6, v.stats["one_outcome"]
    cx = v.counterexample
    assert isinstance(cx.init.get("y"), Error) or "y" not in cx.init



def test_the_bfloat16_edge_sigmas_hold_its_max_and_a_subnormal():
    # (they held inf and 0 instead: float32's max and 1e-45 rounded)
    import ml_dtypes

    from tfsem.checking.check import _filled
    from tfsem.oracle.program import TensorType
    t = TensorType("bfloat16", (2,))
    values = [_filled(t, k).array for k in range(len(C._EDGE_FLOATS))]
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    assert all(v.dtype == ml_dtypes.bfloat16 for v in values)
    assert any(np.all(v == info.max) for v in values)
    assert any(np.all(v == -info.max) for v in values)
    assert any(np.all(v == info.smallest_subnormal) for v in values)
    assert any(np.all(v == info.tiny) for v in values)


def test_the_bound_never_makes_a_verdict(no_solver_candidates):
    # P' differs from P only where a feed holds one value no σ drawn holds:
    # the bounded search (one-outcome comparisons, then the normal stages)
    # ends `no-counterexample` or `unknown`, never `sound`, and says why
    def prog(p_prime):
        nodes = [{"name": "k", "op": "Const", "value": {"dtype": "float32", "value": [1234.5] * 3}},
                 {"name": "z", "op": "Const", "value": {"dtype": "float32", "value": [0.0] * 3}},
                 {"name": "c", "op": "Equal", "inputs": ["rx", "k"]},
                 {"name": "o", "op": "SelectV2", "inputs": ["c", "z" if p_prime else "rx", "rx"]}]
        return program(nodes)
    p, q = prog(False), prog(True)
    one = Tensor(np.ones(3, F32))
    feeds = {"a": one}
    init = {"x": Tensor(np.full(3, 1234.5, F32)), "y": one}
    assert any(o not in outcome_set(p, feeds, init, "atomic", "outputs+state")
               for o, _ in outcome_set(q, feeds, init, "atomic", "outputs+state").items())
    with as_if_kernels():
        v = check_rewrite(p, q, timeout=10, structural=False)
    assert v.verdict in ("no-counterexample", "unknown", "unsound"), v.reason
    if v.verdict != "unsound":
        assert "stopped after" in v.reason, v.reason
        assert v.stats.get("sigma_cap") in (C.KERNEL_SIGMAS, C.KERNEL_ONE_OUTCOME_SIGMAS)
    else:     # (found anyway: then a real counterexample)
        cx = v.counterexample
        assert cx.outcome not in outcome_set(p, cx.feeds, cx.init, "atomic", "outputs+state")
