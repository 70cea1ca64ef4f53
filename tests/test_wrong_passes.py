"""The suite of wrong passes (benchmarks/wrong_passes.py): each one is really
wrong (its example shows an outcome of the rewrite that the original lacks,
in the first cell `tfsem verify` fuzzes), documents its mistake, and never
crashes or returns an invalid program on generated programs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tfsem.checking.check import check_rewrite
from tfsem.generators.strategies import random_programs

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = ROOT / "benchmarks" / "wrong_passes.py"


def load_suite():
    spec = importlib.util.spec_from_file_location("tfsem_wrong_passes", SPEC_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


W = load_suite()
NAMES = [p.name for p in W.SUITE]


def test_the_suite_has_twenty_distinct_documented_passes():
    assert len(NAMES) >= 20 and len(set(NAMES)) == len(NAMES)
    for p in W.SUITE:
        assert p.cells("sound") == [c for c in p.claims], p.name   # claims sound everywhere
        assert "reasoning" in p.doc and "Forgotten" in p.doc, p.name
        assert getattr(W, p.name.upper().replace("-", "_")) is p


@pytest.mark.parametrize("name", NAMES)
def test_each_wrong_pass_has_a_counterexample(name):
    p = next(q for q in W.SUITE if q.name == name)
    example = W.EXAMPLES[name]
    rewritten = p(example)
    assert rewritten != example
    verdict = check_rewrite(example, rewritten, "atomic", "outputs+state", timeout=20)
    assert verdict.verdict == "unsound", (name, verdict.reason)
    assert verdict.counterexample is not None


def test_wrong_passes_are_valid_and_deterministic_on_generated_programs():
    programs = random_programs(60, 7, max_nodes=10)
    for p in W.SUITE:
        for g in programs:
            out = p(g)
            out.validated()
            assert p(g) == out


def _consts_fed(p, names):
    """`p` with the Consts `names` turned into feeds of their values (the
    reducer's edit: a feed is no node)."""
    from tfsem.campaigns.reduce import _const_to_feed
    sigma = {}
    for name in names:
        done = _const_to_feed(p, name)
        assert done is not None, name
        p, feed, value = done
        sigma[feed] = value
    return p


def _smallest_known(name):
    """A counterexample of at most 5 nodes for each wrong pass: its example
    with some of its Consts fed (the fewest nodes that still show the bug:
    forward-store forwards only a value computed by a node, fold-constant-
    variable folds only a Const), or one written here where the example
    carries more than the bug needs."""
    from itertools import combinations

    from tfsem.oracle import program as P
    from tfsem.oracle.program import TensorType
    if name == "merge-reads-by-variable":
        # the second Read's Var waits for the Write: merged into the first
        # Read (same variable, same control inputs), it may run before it
        # (r1 first in declaration order: the pass keeps the first Read of
        # each key in topological order, whose ties follow declaration)
        return [P.program([P.var("v1", "x"), P.read("r1", "v1"), P.write("w", "v1", "$f"),
                           P.var("v2", "x", "^w"), P.read("r2", "v2")], {"a": "r1", "b": "r2"}, ["x"],
                          feeds={"f": TensorType()})]
    if name == "merge-reads-first-control":
        # the second Read waits for the Write; merged into the first, which
        # does not, its output may be the value before the Write
        return [P.program([P.var("v", "x"), P.read("r1", "v"), P.write("w", "v", "$f"),
                           P.read("r2", "v", "^w")], {"a": "r1", "b": "r2"}, ["x"],
                          feeds={"f": TensorType()})]
    if name == "forward-store-direct-edge":
        # the Read names the Write first and an AssignAdd after it: it takes
        # the Write's value (a Const: only a node's value is forwarded)
        return [P.program([P.var("v", "x"), P.const("c", 1), P.write("w", "v", "c"),
                           P.assign("a", "Add", "v", "$g", "^w"), P.read("r", "v", "^w", "^a")],
                          {"out": "r"}, ["x"], feeds={"g": TensorType()})]
    example = W.EXAMPLES[name]
    consts = [n.name for n in example.nodes if n.op == "Const" and not n.inputs
              and not any(v.node == n.name for v in example.outputs.values())]
    return [_consts_fed(example, fed) for k in range(len(consts), -1, -1)
            for fed in combinations(consts, k)]


@pytest.mark.parametrize("name", NAMES)
def test_each_wrong_pass_has_a_counterexample_of_at_most_five_nodes(name):
    """Issue 27, item 5: the reducer should reach 5 nodes for every pass of
    the suite, because for every one a counterexample that small exists."""
    p = next(q for q in W.SUITE if q.name == name)
    for candidate in _smallest_known(name):
        if len(candidate.nodes) > 5:
            continue
        rewritten = p(candidate)
        if rewritten == candidate:
            continue
        verdict = check_rewrite(candidate, rewritten, "atomic", "outputs+state", timeout=20)
        if verdict.verdict == "unsound":
            return
    pytest.fail(f"no counterexample of at most 5 nodes known for {name}")
