"""`tfsem fuzz --pass grappler:OPTIMIZER`: TensorFlow's Grappler as a campaign
target.  Needs TensorFlow; skipped, saying so, where it cannot be imported.
Campaigns with Grappler end to end (stored and reported) are in
tests/test_tensorflow_fuzz_target.py: `--target grappler` in the default run,
`--pass grappler:dependency` there in this process and, whole, under the
nightly profile."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.campaigns.targets import PassNotFound, resolve_pass  # noqa: E402
from tfsem.oracle.jsonio import load_program  # noqa: E402


def test_grappler_targets_resolve_with_claims():
    t = resolve_pass("grappler:dependency")
    assert t.name == "grappler:dependency"
    assert t.claim(("atomic", "outputs+state")) == "sound"
    assert resolve_pass("grappler").name == "grappler"
    with pytest.raises(PassNotFound, match="unknown Grappler optimizer 'nope'"):
        resolve_pass("grappler:nope")


def test_grappler_target_round_trips_a_program():
    """A program goes out to Grappler and comes back with its interface."""
    from pathlib import Path

    from tfsem.checking import check_rewrite
    p = load_program(Path(__file__).resolve().parent.parent / "examples" / "load_store.json")
    q = resolve_pass("grappler:dependency").fn(p)
    assert set(q.variables) == set(p.variables) and set(q.outputs) == set(p.outputs)
    assert check_rewrite(p, q).verdict == "sound"


def test_xla_campaign_runs_generated_programs_against_the_oracle():
    """Forty programs of the XLA campaign: generated programs are exported, run
    XLA-clustered, and no outcome falls outside the decomposed semantics."""
    from hypothesis import settings

    from tfsem.campaigns.tensorflow_target import xla_campaign
    # 40 programs (~4 s), not 6 s of them: the same programs however busy the machine
    n = 40 * (20 if settings.get_current_profile_name() == "nightly" else 1)
    stats = xla_campaign(600.0, seed=1, runs=5, mode="xla", max_programs=n)
    assert stats["programs"] == n >= stats["executed"] >= 10, stats
    assert stats["runs"] == 5 * stats["executed"]
    assert stats["findings"] == [], stats["findings"][:1]
