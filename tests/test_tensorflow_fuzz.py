"""`tfsem fuzz --pass grappler:OPTIMIZER`: TensorFlow's Grappler as a campaign
target, end to end (campaign, store, report).  Needs TensorFlow; skipped,
saying so, where it cannot be imported."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.campaigns.targets import PassNotFound, resolve_pass  # noqa: E402
from tfsem.cli import main  # noqa: E402
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


def test_fuzz_grappler_then_report(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--pass", "grappler:dependency", "--budget", "20s", "--out", str(out),
                   "--semantics", "atomic", "--observe", "outputs+state",
                   "--pass-timeout", "30", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 0, summary
    (row,) = summary["passes"]
    assert row["pass"] == "grappler:dependency" and row["programs"] >= 1
    assert row["findings"] == {"unsound": 0, "invalid": 0, "crash": 0, "timeout": 0}
    assert (out / "campaign.db").is_file()
    with sqlite3.connect(out / "campaign.db") as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    assert tables
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "index.html").read_text()
    assert "grappler:dependency" in page


def test_xla_campaign_runs_generated_programs_against_the_oracle():
    """A few seconds of the XLA campaign: generated programs are exported, run
    XLA-clustered, and no outcome falls outside the decomposed semantics."""
    from tfsem.campaigns.tensorflow_target import xla_campaign
    stats = xla_campaign(6.0, seed=1, runs=5, mode="xla")
    assert stats["programs"] >= stats["executed"] >= 1
    assert stats["runs"] == 5 * stats["executed"]
    assert stats["findings"] == [], stats["findings"][:1]
