"""The structural rule's two proofs for Grappler on a corpus graph: the
Keras step `keras_fit_one_step_on_data` of the real-graphs corpus and
Grappler's output for it under common-subgraph elimination (operands of
Mul and Add put in a canonical order: Assign values compared up to which
error) and constant folding (a Sum over no axes removed from the loss
update), stored in tests/grappler/ as benchmarks/grappler.py imports them
(TensorFlow 2.21).  Before these rules both checks ended
`no-counterexample` after seconds of concrete search (1.99 s and 2.20 s
in main's run of benchmarks/grappler.py at 1e1a847)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.jsonio import program_from_json

NIGHTLY = settings.get_current_profile_name() == "nightly"
DATA = json.loads((Path(__file__).parent / "grappler" / "keras_fit_one_step_on_data.json").read_text())
ORIGINAL = program_from_json(DATA["original"])
REWRITTEN = {k: program_from_json(v) for k, v in DATA["rewritten"].items()}


def test_cse_is_proved_with_assign_values_up_to_which_error(monkeypatch):
    q = REWRITTEN["common_subgraph_elimination"]
    r = structural_refinement(ORIGINAL, q)
    assert r.proved, r.reason
    assert r.stats["assigns_up_to_error"] >= 1 and "up to which error" in r.reason
    v = check_rewrite(ORIGINAL, q, timeout=10)
    assert v.verdict == "sound" and v.stats["path"] == "structural"
    # without the relation the rule does not apply: it is what fires here
    monkeypatch.setattr(structural, "commutes_opaque", lambda op: False)
    assert not structural_refinement(ORIGINAL, q).proved


def test_constant_folding_is_proved_with_the_reduction_over_no_axes(monkeypatch):
    """Grappler folded the loss's scale (ExpandDims(Tile(...DivNoNan of
    constants...))) into a Const: the rule evaluates the same constant
    subgraph with the kernels tfsem's semantics uses (float DivNoNan runs on
    TensorFlow's, docs/kernels.md), so it needs them; and it removed a Sum
    over no axes."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    q = REWRITTEN["constfold"]
    with kernels.use(False):   # the constant subgraph stays a term: no proof
        assert not structural_refinement(ORIGINAL, q).proved
    with kernels.use(True):
        r = structural_refinement(ORIGINAL, q)
        assert r.proved, r.reason
        monkeypatch.setattr(structural._Terms, "reduces_nothing",
                            lambda self, f, attrs, args: False)
        r = structural_refinement(ORIGINAL, q)
        assert not r.proved and "AssignVariableOp" in r.reason


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
@pytest.mark.parametrize("optimizer", sorted(REWRITTEN))
def test_the_concrete_stages_find_no_counterexample_either(optimizer):
    """The rest of the pipeline (no structural rule), with TensorFlow's
    kernels, at its edge σ and one run per σ: no difference either."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    with kernels.use(True):
        v = check_rewrite(ORIGINAL, REWRITTEN[optimizer], timeout=30, structural=False)
    assert v.verdict in ("sound", "no-counterexample"), v.describe()
