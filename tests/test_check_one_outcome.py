"""The σ bound and the one-outcome comparisons of checks whose concrete
runs go through TensorFlow's kernels (checking/check.py KERNEL_SIGMAS,
`_Checker.one_outcome_comparisons`).

TensorFlow is not needed: the programs below use ops with numpy models, and
the checker is told that they need kernels (as a real graph's MatMul does),
so it takes the bounded path.  Each verdict is compared with the normal path
(the checker without the bound) and with the concrete oracle's enumeration
of both programs at edge σ: the shortcut must never make a `sound`, must
find the differences, and must end `no-counterexample` where there are none."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.oracle import kernels
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

F32 = np.float32
EDGE = [0.0, -0.0, 1.0, -1.5, 2.0, 1e-45, 3.4e38, -3.4e38, float("inf"), float("nan")]


@contextlib.contextmanager
def as_if_kernels(on: bool = True):
    """The checker treats every program as needing TensorFlow's kernels (no
    child is started: the ops here all run on numpy), or, off, as it is."""
    saved = C._needs_kernels, kernels.prestart
    if on:
        C._needs_kernels = lambda p: True
        kernels.prestart = lambda: None
    try:
        with kernels.use(True if on else False):
            yield
    finally:
        C._needs_kernels, kernels.prestart = saved


@pytest.fixture
def no_solver_candidates(monkeypatch):
    """The solver's and the samples' candidates are not tried: every
    difference is left to the concrete stages (as on a real graph, whose
    candidates go through uninterpreted MatMul and do not reproduce)."""
    monkeypatch.setattr(C, "CANDIDATE_RETRIES", 0)
    monkeypatch.setattr(C, "SAMPLES", 0)


def program(nodes, variables=("x",)):
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {v: {"dtype": "float32", "shape": [3]} for v in variables},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": nodes, "outputs": {"out": "o"}})


def step(expr_nodes):
    """o = expr(Read x, $a); x := o (a deterministic training-step shape)."""
    return program([{"name": "v", "op": "Var", "var": "x"},
                    {"name": "r", "op": "Read", "inputs": ["v"]}, *expr_nodes,
                    {"name": "w", "op": "Write", "inputs": ["v", "o", "^r"]}])


def const(name, value):
    return {"name": name, "op": "Const", "value": {"dtype": "float32", "value": value}}


# reassociated sums: equal at zeros, ones and small halves, different at most
# wide random values
LEFT = step([{"name": "s", "op": "Add.ftz", "inputs": ["r", "$a"]},
             {"name": "o", "op": "Add.ftz", "inputs": ["s", "$a"]}])
RIGHT = step([{"name": "s", "op": "Add.ftz", "inputs": ["$a", "$a"]},
              {"name": "o", "op": "Add.ftz", "inputs": ["r", "s"]}])
# x + x and x * 2 are equal at every σ (flushing included), but two
# different opaque functions to the solver
DOUBLE_ADD = step([{"name": "o", "op": "Add.ftz", "inputs": ["r", "r"]}])
DOUBLE_MUL = step([const("two", 2.0), {"name": "o", "op": "Mul.ftz", "inputs": ["r", "two"]}])


def oracle_differs(p, q) -> bool:
    for a, b in itertools.product(EDGE, repeat=2):
        init = {"x": Tensor(np.array([a, b, a], F32))}
        feeds = {"a": Tensor(np.array([b, a, b], F32))}
        ours = outcome_set(p, feeds, init, "atomic", "outputs+state")
        theirs = outcome_set(q, feeds, init, "atomic", "outputs+state")
        if any(o not in ours for o, _ in theirs.items()):
            return True
    return False


def test_a_difference_is_found_by_one_run_of_each(no_solver_candidates):
    assert oracle_differs(LEFT, RIGHT)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["one_outcome"]["found"]
    assert "oracle" in v.confirmed
    # the counterexample is a real one: the oracle's enumeration at its σ
    cx = v.counterexample
    ours = outcome_set(LEFT, cx.feeds, cx.init, "atomic", "outputs+state")
    assert cx.outcome not in ours
    # the normal path finds one too
    with as_if_kernels(False):
        normal = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert normal.verdict == "unsound" and "one_outcome" not in normal.stats


def test_equal_programs_the_solver_cannot_prove_end_no_counterexample_at_the_bound():
    assert not oracle_differs(DOUBLE_ADD, DOUBLE_MUL)
    with as_if_kernels():
        v = check_rewrite(DOUBLE_ADD, DOUBLE_MUL, timeout=10, structural=False)
    assert v.verdict == "no-counterexample", v.reason
    assert v.stats["one_outcome"]["compared"] >= 1
    assert v.stats["sigma_cap"] == C.KERNEL_ONE_OUTCOME_SIGMAS
    assert "one outcome at every σ" in v.reason and "stopped after" in v.reason
    assert v.stats["seconds"] < 10      # (not the whole budget)
    # the normal path, which spends its budget, agrees
    with as_if_kernels(False):
        normal = check_rewrite(DOUBLE_ADD, DOUBLE_MUL, timeout=2, structural=False)
    assert normal.verdict == "no-counterexample" and "one_outcome" not in normal.stats


def test_programs_with_several_outcomes_take_the_normal_path(no_solver_candidates):
    # two writes that race: P has two outcomes, P' (one order forced) one of
    # them: sound; with the other order's value changed, unsound
    def racy(second, forced=False):
        return program([{"name": "v", "op": "Var", "var": "x"},
                        const("one", 1.0), const("two", second),
                        {"name": "w1", "op": "Write", "inputs": ["v", "one"]},
                        {"name": "w2", "op": "Write", "inputs": ["v", "two"]
                         + (["^w1"] if forced else [])},
                        {"name": "o", "op": "Identity", "inputs": ["$a"]}])
    p, q = racy(2.0), racy(3.0, forced=True)
    assert oracle_differs(p, q)
    with as_if_kernels():
        v = check_rewrite(p, q, timeout=10, structural=False)
        assert v.verdict == "unsound"
        assert "one_outcome" not in v.stats
        assert check_rewrite(p, racy(2.0, forced=True), timeout=10).verdict == "sound"


# constant folding's reassociation of a float product (issue 23): c * (x * 2)
# becomes x * (2 * c); they differ only where x * 2 overflows
REASSOCIATED = (step([const("c", 0.25), const("two", 2.0),
                      {"name": "m", "op": "Mul.ftz", "inputs": ["r", "two"]},
                      {"name": "o", "op": "Mul.ftz", "inputs": ["c", "m"]}]),
                step([const("c", 0.25), const("two", 2.0),
                      {"name": "k", "op": "Mul.ftz", "inputs": ["two", "c"]},
                      {"name": "o", "op": "Mul.ftz", "inputs": ["r", "k"]}]))


def test_an_overflow_difference_is_found_at_the_edge_sigmas(no_solver_candidates):
    p, q = REASSOCIATED
    assert oracle_differs(p, q)
    with as_if_kernels():
        v = check_rewrite(p, q, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    # zeros, ones, the plain σ and its huge-feeds form (third and fourth since
    # issue 23: tests/test_check_plain_sigma_order.py), then the largest
    # float in the feeds, the variables, both
    assert v.stats["one_outcome"]["found"] and v.stats["one_outcome"]["compared"] <= 6
    assert cx_differs(p, v)


def cx_differs(p, v) -> bool:
    cx = v.counterexample
    return cx.outcome not in outcome_set(p, cx.feeds, cx.init, "atomic", "outputs+state")


def test_the_edge_sigmas_hold_each_edge_value_everywhere():
    from tfsem.oracle.program import TensorType
    p = program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "float32", "shape": [2]}, "n": {"dtype": "uint8", "shape": []},
                      "h": {"dtype": "float16", "shape": [3]}},
        "feeds": {"a": {"dtype": "int64", "shape": [2]}, "b": {"dtype": "bool", "shape": []}},
        "nodes": [{"name": "o", "op": "Identity", "inputs": ["$a"]}], "outputs": {"out": "o"}})
    sigmas = list(C._edge_sigmas(p))
    assert len(sigmas) == 3 * len(C._EDGE_FLOATS)
    xs = [init["x"].array for _, init in sigmas]
    assert any(np.all(x == np.finfo(np.float32).max) for x in xs)
    assert any(np.all(np.isnan(x)) for x in xs)
    assert any(np.all(x == np.float32(1e-45)) for x in xs)
    assert any(np.all((x == 0) & np.signbit(x)) for x in xs)
    hs = [init["h"].array for _, init in sigmas]
    assert any(np.all(h == np.finfo(np.float16).max) for h in hs)
    assert any(np.all(h == np.finfo(np.float16).smallest_subnormal) for h in hs)
    for feeds, init in sigmas:    # every value has its declared type
        assert feeds["a"].dtype == "int64" and feeds["a"].array.shape == (2,)
        assert feeds["b"].dtype == "bool" and init["n"].dtype == "uint8"
        assert init["x"].array.dtype == np.float32 and init["h"].array.dtype == np.float16
    assert any(np.all(f["a"].array == np.iinfo(np.int64).min) for f, _ in sigmas)
    assert any(i["n"].array == 255 for _, i in sigmas)
