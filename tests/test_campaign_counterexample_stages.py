"""campaigns/counterexample_stages.py on a few generated rewrites: every
`unsound` verdict's schedules shown replay on the reference semantics to
the outcomes shown, σ reads back from the JSON bit for bit, and the check
with the commuting shortcut off shows the same schedules (the full run:
docs/review-counterexample-stages.md)."""

from __future__ import annotations

from tfsem.campaigns.counterexample_stages import campaign


def test_the_counterexample_stages_audit_finds_no_problem():
    result = campaign(10, 3)
    assert result["failures"] == []
    assert result["unsound"] >= 3, result          # (not vacuous)
    assert result["audited"] == result["unsound"]
    assert result["shortcut_compared"] >= 1, result
