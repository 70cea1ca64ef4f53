"""The control-flow refutation's float σ (checking/control_flow.py
REFUTE_FLOAT_FIRST, checking/check.py `_float_sigmas`): where the programs
hold float state, the plain σ (standard-normal floats, every variable
initialized), its feeds times 1e38, and the largest finite float in every
float feed are compared right after the first σ (all zeros).

* A loop program whose rewrite reassociates a float product outside the
  loop, `0.1 * (x * 3)` -> `x * fl(0.3)` (different through rounding at
  ordinary values), is `unsound` at the plain σ, confirmed by the reference
  engine and replayed on numpy; `0.25 * (x * 2)` -> `x * 0.5` (constant
  folding's rewrite on keras_gru_loop: different only where `x * 2`
  overflows) at the largest float.  With the float σ off, the zeros, ones,
  small and random σ do not show the second (`no-counterexample`).
* Programs without float state get no float σ; every tag the stage logs
  is one it compared.
* keras_gru_loop's constant folding (Grappler's output stored in
  tests/grappler/keras_recurrent_loops.json.gz) is `unsound` with TensorFlow's
  kernels (MatMul, Prod, ...): nightly only (the kernels' child imports
  TensorFlow); without the kernels the check is `unknown` naming the op with
  no model, not an exception."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import control_flow
from tfsem.checking.check import check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from backends_support import CONFIRMED_ORACLE_ARRAYS

NIGHTLY = settings.get_current_profile_name() == "nightly"
CORPUS = Path(__file__).parent / "grappler" / "keras_recurrent_loops.json.gz"
FLOAT_TAGS = ("plain", "plain huge", "largest float")


def loop_then_scale(c1: float | None, c2: float, fold: bool = False):
    """A counting loop of 3 trips (s fetched), and outside it v := c1 * (x *
    c2) (x a float32[4] feed); `fold`: v := x * fl32(c1 * c2) instead, as
    Grappler's constant folding writes it."""
    if fold:
        k = float(np.float32(c1) * np.float32(c2))
        scale = [{"name": "k", "op": "Const", "value": {"dtype": "float32", "value": k}},
                 {"name": "prod", "op": "Mul", "inputs": ["xi", "k"]}]
    else:
        scale = [{"name": "c1", "op": "Const", "value": {"dtype": "float32", "value": c1}},
                 {"name": "c2", "op": "Const", "value": {"dtype": "float32", "value": c2}},
                 {"name": "t", "op": "Mul", "inputs": ["xi", "c2"]},
                 {"name": "prod", "op": "Mul", "inputs": ["c1", "t"]}]
    raw = {"format": "tfsem.program/1",
           "variables": {"v": {"dtype": "float32", "shape": [4]}},
           "feeds": {"x": {"dtype": "float32", "shape": [4]}},
           "nodes": [
               {"name": "n", "op": "Const", "value": 3},
               {"name": "i0", "op": "Const", "value": 0},
               {"name": "one", "op": "Const", "value": 1},
               {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
               {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": ["n"]},
               {"name": "inc", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": ["one"]},
               {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
               {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
               {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
               {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
               {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
               {"name": "add", "op": "Add", "inputs": ["body", "inc"]},
               {"name": "next", "op": "NextIteration", "inputs": ["add"]},
               {"name": "exit", "op": "Exit", "inputs": ["sw"]},
               {"name": "xi", "op": "Identity", "inputs": ["$x"]},
               *scale,
               {"name": "vv", "op": "Var", "var": "v"},
               {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vv", "prod"]}],
           "outputs": {"s": "exit"}}
    return program_from_json(raw)


@pytest.fixture
def float_sigmas_off(monkeypatch):
    monkeypatch.setattr(control_flow, "REFUTE_FLOAT_FIRST", False)


def tags(v) -> list[str]:
    return [e["sigma"] for e in v.stats.get("refute_sigmas", [])]


def test_a_reassociation_outside_a_loop_is_found_at_the_plain_sigma():
    p, q = loop_then_scale(0.1, 3.0), loop_then_scale(0.1, 3.0, fold=True)
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "control-flow/refute"
    assert v.stats["found_at"] == "plain"
    assert tags(v) == ["drawn 0", "plain"]     # (the zeros first: 0 * anything agrees)
    assert v.confirmed == CONFIRMED_ORACLE_ARRAYS
    assert v.differs == {"variable": "v"}
    # the counterexample (shrunk) is one: the reference engine's outcome of
    # the rewrite at its σ is not the original's
    cx = v.counterexample
    mine = set(outcome_set(q, cx.feeds, cx.init))
    theirs = set(outcome_set(p, cx.feeds, cx.init))
    assert not mine <= theirs


def test_an_overflow_only_difference_is_found_at_the_largest_float():
    p, q = loop_then_scale(0.25, 2.0), loop_then_scale(0.25, 2.0, fold=True)
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unsound", v.reason
    assert v.stats["found_at"] in ("plain huge", "largest float")
    assert "plain" in tags(v)     # (the plain σ, compared first, rounds alike: powers of two)
    assert v.confirmed == CONFIRMED_ORACLE_ARRAYS
    x = np.asarray(v.counterexample.feeds["x"].array, dtype=np.float64)
    assert np.any(np.abs(x) * 2 > np.finfo(np.float32).max)


def test_without_the_float_sigmas_the_overflow_is_not_found(float_sigmas_off):
    """What the stage answered before (issue 23) on the GRU's shape: the
    zeros, ones, small and random σ compare the same (x * 2 overflows at
    none of them).  (The rounding one, 0.1 * (x * 3), was found there at
    the fourth σ, a random one, on this small program.)"""
    p, q = loop_then_scale(0.25, 2.0), loop_then_scale(0.25, 2.0, fold=True)
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "no-counterexample", v.reason
    assert len(tags(v)) == control_flow.REFUTE_SIGMAS
    assert not set(tags(v)) & set(FLOAT_TAGS)


def test_programs_without_float_state_get_no_float_sigma():
    """The counter loop alone (int64 only), with its increment changed: found
    at a drawn σ, no float σ among those compared."""
    p = loop_then_scale(0.1, 3.0)
    raw = json.loads(json.dumps({"format": "tfsem.program/1", "variables": {},
                                 "nodes": [n for n in _raw(p)["nodes"]
                                           if n["name"] not in ("xi", "c1", "c2", "t", "prod",
                                                                "vv", "w")],
                                 "outputs": {"s": "exit"}}))
    p0 = program_from_json(raw)
    for n in raw["nodes"]:
        if n["name"] == "one":
            n["value"] = 2
    q0 = program_from_json(raw)
    v = check_rewrite(p0, q0, timeout=10, backends=False)
    assert v.verdict == "unsound", v.reason
    assert tags(v) and not set(tags(v)) & set(FLOAT_TAGS)


def _raw(p):
    from tfsem.oracle.jsonio import program_to_json
    return program_to_json(p)


def _corpus(graph: str, optimizer: str):
    with gzip.open(CORPUS, "rt") as f:
        d = json.load(f)[graph]
    return program_from_json(d["original"]), program_from_json(d["rewritten"][optimizer])


def test_the_gru_loop_without_kernels_is_unknown_naming_the_op():
    """TensorFlow's kernels off (the suite's default): Prod has no numpy
    model; the check names it (before: CannotRun raised out of check_rewrite)."""
    p, q = _corpus("keras_gru_loop", "constfold")
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "unknown"
    assert v.reason.startswith("cannot run TensorFlow op ")
    assert "no model" in v.reason and "(node " in v.reason
    assert v.stats["cause"].startswith("cannot run TensorFlow op ")


@pytest.mark.skipif(not NIGHTLY, reason="TensorFlow's kernels (a TensorFlow child): nightly")
def test_grapplers_constant_folding_of_the_gru_loop_is_unsound(monkeypatch):
    """keras_gru_loop, constant folding: `0.25 * (sub * 2)` -> `sub * 0.5` on
    the loss gradient outside the loops; with the largest float in x and y,
    `sub * 2` overflows in the original only, and the dense layer's updates
    differ.  Before the float σ: `no-counterexample` after 8 σ."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    monkeypatch.setenv(kernels.ENV, "1")
    p, q = _corpus("keras_gru_loop", "constfold")
    v = check_rewrite(p, q, timeout=60)
    assert v.verdict == "unsound", v.reason
    assert v.stats["found_at"] in FLOAT_TAGS
    # (confirmed on numpy too: the loops' TensorList ops run on the array
    # back ends, backends/controlflow.py)
    assert v.confirmed == CONFIRMED_ORACLE_ARRAYS, v.stats.get("backends")
    # (the dense layer's kernel or bias: both updates go through sub * 2;
    # which one differs first depends on how far the σ was shrunk)
    assert v.differs["variable"].startswith("sequential/dense/"), v.differs
    mine = set(outcome_set(q, v.counterexample.feeds, v.counterexample.init))
    theirs = set(outcome_set(p, v.counterexample.feeds, v.counterexample.init))
    assert not mine <= theirs
