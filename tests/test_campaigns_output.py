"""What the user reads from `tfsem verify` and `tfsem fuzz` (issue 16): how
hard a run tried (per cell: changed, proved sound, no counterexample,
unknown) with a warning for a pass that rarely changes a program; one bug,
one finding (groups in the CLI and the store, with a schema migration that
keeps old databases); progress lines from verify; one exit rule for both
commands; and the end of fuzz pointing at `tfsem report DIR`."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

import pytest

from scaled_budgets import scaled
from test_campaigns_fuzz import FAST, ONE_CELL, env, tfsem, tfsem_finished, tfsem_here, tfsem_started
from test_campaigns_store import unsound_record
from tfsem.campaigns.findings import FindingRecord
from tfsem.campaigns.signature import group_key, rewrite_change
from tfsem.campaigns.store import SCHEMA_VERSION, Store
from tfsem.campaigns.text import RARELY_CHANGES_MIN_PROGRAMS, effort_text, rarely_changes_warning


# ---------------------------------------------------------------------------
# How hard it tried


def test_effort_text_counts_changed_and_each_verdict():
    stats = {"programs": 183, "identical": 153, "sound": 12, "no_counterexample": 15, "unknown": 3}
    assert effort_text(stats) == ("183 programs, 30 changed: 12 proved sound, 15 no counterexample, "
                                  "3 unknown")
    # rewrites that failed (findings and the shrinker's attempts) are counted, not hidden
    assert effort_text({"programs": 10, "identical": 2, "no_counterexample": 5}).endswith("3 failing")


def test_a_pass_that_rarely_changes_a_program_gets_a_warning():
    w = rarely_changes_warning("p", {"programs": 183, "identical": 170})
    assert w and "changed only 13 of 183" in w
    assert rarely_changes_warning("p", {"programs": 183, "identical": 10}) is None
    assert rarely_changes_warning("p", {"programs": 5, "identical": 5}) is None  # too few to say



def test_verify_shows_effort_per_cell_warns_and_exits_0_on_expected_findings(tmp_path):
    # the three runs side by side (each is mostly its own budget and start-up)
    runs = [tfsem_started("verify", "campaign_fakes:drop_assigns", "--budget", "3s", "--seed", "2", "--out", tmp_path,
                     *FAST, *ONE_CELL),
            tfsem_started("verify", "campaign_fakes:identity", "--budget", "2s", "--out", tmp_path / "ok",
                     *FAST, *ONE_CELL),
            tfsem_started("verify", "campaign_fakes:identity", "--budget", "1s", "--out", tmp_path / "js",
                     *FAST, *ONE_CELL, "--json")]
    try:
        r, ok, js = [tfsem_finished(proc) for proc in runs]
    finally:
        for proc in runs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    # a busy machine may find nothing in 3 s, or judge no program in 1 s:
    # those runs go again, alone, with larger budgets
    for budget in scaled(3)[1:]:
        if "expected: the pass claims unsound here" in r.stdout:
            break
        r = tfsem("verify", "campaign_fakes:drop_assigns", "--budget", f"{budget:g}s", "--seed", "2",
                  "--out", tmp_path / f"again{budget:g}", *FAST, *ONE_CELL, timeout=120 + 3 * budget)
    for budget in scaled(1)[1:]:
        if js.returncode != 4 or json.loads(js.stdout)["cells"][0]["programs"] > 0:
            break
        js = tfsem("verify", "campaign_fakes:identity", "--budget", f"{budget:g}s", "--out",
                   tmp_path / f"js{budget:g}", *FAST, *ONE_CELL, "--json", timeout=120 + 3 * budget)
    # drop_assigns claims unsound everywhere: its findings are expected, the run passes
    assert r.returncode == 0, r.stdout + r.stderr
    assert "expected: the pass claims unsound here" in r.stdout, r.stdout  # found, and still exit 0
    assert re.search(r"atomic/outputs\+state\s+unsound\s+confirmed \(\d+ programs, \d+ changed", r.stdout)
    assert "result: pass" in r.stdout
    # the identity never changes a program: the claims line says so, with a warning
    assert ok.returncode == 4, ok.stderr   # changed nothing: weak evidence, not green
    assert "WEAK EVIDENCE" in ok.stdout and "result: WEAK" in ok.stdout
    m = re.search(r"no counterexample \((\d+) programs?, 0 changed", ok.stdout)
    assert m, ok.stdout
    # the warning needs enough programs to say anything (a loaded machine may run few)
    warned = "warning: fake-identity changed only 0 of" in ok.stdout
    assert warned == (int(m.group(1)) >= RARELY_CHANGES_MIN_PROGRAMS), ok.stdout
    cell = json.loads(js.stdout)["cells"][0]
    assert cell["changed"] == 0 and cell["identical"] == cell["programs"] > 0


def test_verify_prints_periodic_progress_lines_when_not_on_a_terminal(tmp_path):
    r = tfsem("verify", "campaign_fakes:identity", "--budget", "4s", "--status-every", "0.5s",
              "--out", tmp_path, *FAST, *ONE_CELL)
    assert r.returncode == 4, r.stderr   # the identity changes nothing: weak evidence
    lines = re.findall(r"^\[\s*[\d.]+s\] fake-identity: \d+ programs .* left$", r.stderr, re.M)
    assert len(lines) >= 2, r.stderr


def test_verify_with_an_unknown_pass_fails_before_printing_a_plan(capsys):
    r = tfsem_here(capsys, "verify", "no-such-pass", "--budget", "1s")
    assert r.returncode == 2 and "no-such-pass" in r.stderr
    assert "verifying" not in r.stdout + r.stderr


# ---------------------------------------------------------------------------
# One bug, one finding


def _flip(fn: str, extra_const: bool = False) -> FindingRecord:
    """A Read hoisted above an Assign-fn (the control edge flipped)."""
    nodes = [{"name": "v", "op": "Var", "var": "x0"},
             {"name": "w", "op": "Assign", "fn": fn, "inputs": ["v", "$f"]},
             {"name": "r", "op": "Read", "inputs": ["v", "^w"]}]
    rewritten = [nodes[0], {**nodes[1], "inputs": ["v", "$f", "^r"]}, {**nodes[2], "inputs": ["v"]}]
    if extra_const:
        nodes = nodes + [{"name": "k", "op": "Const", "value": 1}]
        rewritten = rewritten + [{"name": "k", "op": "Const", "value": 1}]
    prog = lambda ns: {"format": "tfsem.program/1", "variables": {"x0": {"dtype": "int64"}},  # noqa: E731
                       "feeds": {"f": {"dtype": "int64"}}, "nodes": ns, "outputs": {"o": "r"}}
    return FindingRecord(pass_name="hoist", kind="unsound", semantics="atomic", observe="outputs+state",
                         original=prog(nodes), rewritten=prog(rewritten),
                         verdict={"verdict": "unsound", "differs": {"output": "o"}}, claim="sound")


def test_findings_that_break_the_same_way_share_a_group():
    mul, sub, bigger = _flip("Mul"), _flip("Sub"), _flip("Add", extra_const=True)
    assert rewrite_change(mul.original, mul.rewritten) == "+control Read->Assign, -control Assign->Read"
    assert group_key(mul) == group_key(sub) == group_key(bigger)
    other_cell = _flip("Mul")
    other_cell.observe = "outputs"
    assert group_key(other_cell) != group_key(mul)
    variable = _flip("Mul")
    variable.verdict = {"verdict": "unsound", "differs": {"variable": "x0"}}
    assert group_key(variable) != group_key(mul)


def test_store_groups_findings_and_keeps_the_smallest_as_representative(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        ids = [store.record_finding(cid, r)[0] for r in (_flip("Add", True), _flip("Mul"), _flip("Sub"))]
        groups = store.finding_groups(cid)
    assert len(groups) == 1
    g = groups[0]
    assert sorted(g["members"]) == sorted(ids) and g["representative"]["nodes"] == 3
    assert g["members"][0] == g["representative"]["id"] != ids[0]


def test_a_schema_1_database_stays_readable_and_migrates_without_loss(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        store.record_finding(cid, _flip("Mul"))
        store.record_finding(cid, unsound_record())
        before = store.findings()
    # make it a database as schema 1 wrote it
    conn = sqlite3.connect(tmp_path / "campaign.db")
    conn.execute("ALTER TABLE findings DROP COLUMN group_key")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store(tmp_path, readonly=True) as ro:  # a reader takes it as it is
        assert ro.schema_version == 1
        assert [f["group_key"] for f in ro.findings()] == [f["group_key"] for f in before]
    with Store(tmp_path) as rw:
        assert rw.schema_version == SCHEMA_VERSION
        after = rw.findings()
    assert after == before


def test_fuzz_groups_findings_counts_effort_and_points_at_the_report(tmp_path):
    out = tmp_path / "c"
    r = tfsem("fuzz", "--pass", "campaign_fakes:drop_assigns", "--pass", "campaign_fakes:identity",
              "--budget", "6s", "--out", out, "--seed", "1", *FAST, *ONE_CELL)
    # drop_assigns claims unsound: expected findings; the identity changes
    # nothing, so its "sound" rests on no evidence: a weak campaign (exit 4)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "result: WEAK" in r.stdout and "fake-identity atomic/outputs+state: the pass changed 0 of" in r.stdout
    m = re.search(r"fake-identity\s+atomic/outputs\+state\s+sound\s+[\d.]+\s+(\d+) programs?, 0 changed",
                  r.stdout)
    assert m, r.stdout
    warned = "warning: fake-identity changed only 0 of" in r.stdout
    assert warned == (int(m.group(1)) >= RARELY_CHANGES_MIN_PROGRAMS), r.stdout
    assert "result: pass" not in r.stdout
    assert r.stdout.rstrip().endswith(f"\nreport: tfsem report {out}")
    with Store(out, readonly=True) as s:
        groups = s.finding_groups()
        n_findings = len(s.findings())
        # the database keeps each cell's distinct change shapes (schema 3)
        for row in s.pass_statistics(s.latest_campaign()["id"]):
            kept = s.cell_shapes(row["campaign_id"], row["pass"], row["semantics"], row["observe"])
            assert row["shapes"] == len(kept) and (row["shapes"] >= 1) == (row["changed"] > 0), row
            assert row["pass"] != "fake-identity" or row["shapes"] == 0
    m = re.search(r"findings: (\d+) distinct \((\d+) programs?\)", r.stdout)
    assert (m is None) == (not groups), r.stdout
    if groups:
        assert int(m.group(1)) == len(groups) and int(m.group(2)) == n_findings


def test_service_campaigns_list_effort_per_cell_and_groups(tmp_path):
    from tfsem.service.campaign_view import CampaignView
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        store.add_stats(cid, "hoist", "atomic", "outputs+state",
                        {"programs": 183, "identical": 153, "sound": 12, "no_counterexample": 15,
                         "unknown": 3}, claim="sound")
        a = store.record_finding(cid, _flip("Mul"))[0]
        b = store.record_finding(cid, _flip("Sub"))[0]
    c = CampaignView(tmp_path).campaigns()[0]
    cell = c["cells"][0]
    assert (cell["programs"], cell["changed"], cell["sound"], cell["no_counterexample"], cell["unknown"]) == \
        (183, 30, 12, 15, 3)
    assert c["passes"][0]["changed"] == 30
    assert [sorted(g["members"]) for g in c["groups"]] == [sorted([a, b])]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses a pseudo-terminal")
def test_verify_on_a_terminal_draws_a_live_status(tmp_path):
    import os
    import pty
    import subprocess

    from test_campaigns_fuzz import env

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tfsem", "verify", "campaign_fakes:identity",
                             "--budget", "2s", "--out", str(tmp_path), *FAST, *ONE_CELL],
                            stdout=subprocess.PIPE, stderr=slave, env=env())
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.communicate(timeout=120)
    assert proc.returncode == 4   # the identity changes nothing: weak evidence
    screen = b"".join(chunks).decode(errors="replace")
    assert "\x1b[2K" in screen  # redrawn in place
    assert re.search(r"tfsem verify  \d\d:\d\d / 00:02", screen), screen
    assert re.search(r"fake-identity\s+\d+\s+[\d.]+", screen), screen


def test_verify_text_shows_one_bug_once_with_its_smallest_program(capsys):
    from tfsem.campaigns.loop import LoopStats
    from tfsem.campaigns.targets import Target
    from tfsem.campaigns.verify import CellResult, Found, VerifyResult
    from tfsem.commands.verify import _print_text

    big, small = _flip("Add", extra_const=True), _flip("Sub")
    cell = ("atomic", "outputs+state")
    stats = LoopStats(programs=40, identical=10, sound=20, no_counterexample=8)
    result = VerifyResult(Target("hoist", "hoist", "", {cell: "sound"}),
                          [CellResult(cell, "sound", stats, ["a", "b"])],
                          [Found(big, "a", 1, 1.0), Found(small, "b", 2, 2.0)], 3.0)
    _print_text(result, [("/o/finding-1.case.json", "tfsem check /o/finding-1.case.json"),
                         ("/o/finding-2.case.json", "tfsem check /o/finding-2.case.json")])
    out = capsys.readouterr().out
    assert "hoist: 40 programs in 3.0 s, 1 distinct finding (2 programs)" in out
    assert out.count("original program (") == 1 and "original program (3 nodes)" in out
    assert "finding 2: unsound" in out and "1 other program fails the same way" in out
    assert "/o/finding-1.case.json (4 nodes)" in out
    assert "contradicted  <- BUG (40 programs, 30 changed: 20 proved sound, 8 no counterexample, 2 failing" in out
    assert "result: FAIL" in out


def test_a_finding_headline_names_its_cell_once():
    from tfsem.commands.verify import _headline
    r = _flip("Mul")
    r.message = "output 'o' differs (atomic, outputs+state)"   # as the loop stores it
    line = _headline(1, r)
    assert line.count("atomic") == 1 and line.count("outputs+state") == 1
    assert line.startswith("finding 1: unsound [atomic, outputs+state]: output 'o' differs (")


def test_the_fuzz_summary_names_a_findings_cell_once():
    from tfsem.campaigns.campaign import _without_cell
    f = {"semantics": "atomic", "observe": "outputs", "message": "output 'o' differs (atomic, outputs)"}
    assert _without_cell(f) == "output 'o' differs"
    assert _without_cell({**f, "message": "ZeroDivisionError"}) == "ZeroDivisionError"


def test_counts_agree_with_their_nouns_and_verbs(capsys):
    """"1 finding contradicts", "(1 program)": a count of one is singular,
    in `tfsem fuzz`'s summary and in `tfsem verify`'s result line."""
    import io
    from pathlib import Path
    from tfsem.campaigns.campaign import CampaignResult, summarize
    from tfsem.campaigns.loop import LoopStats
    from tfsem.campaigns.targets import Target
    from tfsem.campaigns.text import counted
    from tfsem.campaigns.verify import CellResult, Found, VerifyResult
    from tfsem.commands.verify import _print_text

    assert (counted(1, "program"), counted(2, "program"), counted(0, "finding")) == \
        ("1 program", "2 programs", "0 findings")
    bug = {"id": 1, "pass": "p", "kind": "unsound", "claim": "sound", "semantics": "atomic",
           "observe": "outputs", "nodes": 3, "message": "output 'o' differs"}
    result = CampaignResult(1, 1.0, "finished", [bug], [], [], [], [],
                            groups=[{"representative": bug, "members": [1], "times_seen": 1}])
    stream = io.StringIO()
    summarize(result, Path("out"), stream)
    text = stream.getvalue()
    assert "findings: 1 distinct (1 program)" in text, text
    assert "result: FAIL, 1 distinct finding contradicts a claim or shows a pass crash" in text, text
    two = CampaignResult(1, 1.0, "finished", [bug, dict(bug, id=2, pass_="q")], [], [], [], [],
                         groups=[{"representative": bug, "members": [1], "times_seen": 1},
                                 {"representative": dict(bug, id=2), "members": [2],
                                  "times_seen": 1}])
    stream = io.StringIO()
    summarize(two, Path("out"), stream)
    assert "2 distinct findings contradict a claim or show a pass crash" in stream.getvalue()

    cell = ("atomic", "outputs+state")
    stats = LoopStats(programs=40, identical=10, sound=20, no_counterexample=8)
    one = VerifyResult(Target("hoist", "hoist", "", {cell: "sound"}),
                       [CellResult(cell, "sound", stats, ["a"])], [Found(_flip("Sub"), "a", 1, 1.0)],
                       3.0)
    _print_text(one, [("/o/finding-1.case.json", "tfsem check /o/finding-1.case.json")])
    out = capsys.readouterr().out
    assert "result: FAIL, 1 finding contradicts the pass's claims or shows it crash" in out, out
