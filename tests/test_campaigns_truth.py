"""The truth table as a test: `tfsem verify` finds the built-in passes that
claim `unsound` where they claim it, and nothing in the passes that claim
`sound`.

By default a small version runs on the fastest passes (a few seconds each);
the `nightly` Hypothesis profile (TFSEM_HYPOTHESIS_PROFILE=nightly) runs the
whole table with issue 7's budget of 60 s per pass.  The median time to a
finding and the sizes of the shrunk counterexamples are in
benchmarks/campaign.py, not asserted here.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from tfsem.campaigns.targets import CELLS, cell_label
from tfsem.campaigns.verify import CONFIRMED, CONTRADICTED, verify_pass

rewrites = pytest.importorskip("tfsem.rewrites", reason="the rewrites package is not available")

NIGHTLY = settings.get_current_profile_name() == "nightly"


def _truth(name: str) -> dict:
    return dict(rewrites.builtin_passes()[name].claims)


SMALL = [
    # (pass, cells, budget): the fastest to find, and a sound one
    ("prune", [("atomic", "outputs+state")], 4.0),
    ("split-assign", [("atomic", "outputs+state")], 4.0),
    ("cse", [("atomic", "outputs+state")], 2.0),
]


def _cases():
    if NIGHTLY:
        # (the control-flow passes' programs take longer to judge: a minute per cell)
        # (the session passes claim nothing on programs: tests/test_rewrites_sections.py
        # judges them on sessions)
        return [(name, list(CELLS), 240.0 if getattr(p, "control_flow", False) else 60.0)
                for name, p in rewrites.builtin_passes().items()
                if getattr(p, "session_function", None) is None]
    return SMALL


@pytest.mark.parametrize("name,cells,budget", _cases(), ids=lambda v: v if isinstance(v, str) else None)
def test_verify_agrees_with_the_claims(name, cells, budget):
    claims = _truth(name)
    result = verify_pass(name, budget, cells, seed=1)
    for cell in result.cells:
        label = cell_label(cell.cell)
        assert cell.judgement != CONTRADICTED, (
            f"{name} claims sound in {label} but fuzzing found: "
            + "; ".join(f.record.message for f in result.findings if f.record.semantics == cell.cell[0]))
        if claims.get(cell.cell) == "unsound":
            assert cell.judgement == CONFIRMED, f"{name}: no counterexample in {label} within {budget:g} s"
    # crashes, timeouts and invalid output are bugs whatever the claims
    assert not [f for f in result.findings if f.record.kind != "unsound"]
