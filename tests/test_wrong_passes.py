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
