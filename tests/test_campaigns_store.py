"""The campaign database: round trips, deduplication, known/fixed, statistics,
schema versioning, durability settings."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from test_campaigns_signature import rename
from tfsem.campaigns.findings import FindingRecord
from tfsem.campaigns.store import SCHEMA_VERSION, Store, StoreError
from tfsem.generators import families
from tfsem.oracle.jsonio import case_from_json, program_to_json


def unsound_record(program=None, **kw) -> FindingRecord:
    p, _, _ = families.first_example(True)
    q, _, _ = families.first_example(False)
    program = program or p
    verdict = {"verdict": "unsound", "differs": {"output": "out"},
               "counterexample": {"feeds": {"B": 2}, "init": {"x": 1}, "schedule": ["vx", "vx2", "r", "w"],
                                  "outcome": {"outputs": {"out": 1}, "state": {"x": 2}},
                                  "original_outcomes": [{"outputs": {"out": 2}, "state": {"x": 2}}]}}
    fields = dict(pass_name="hoist-reads", pass_spec="hoist-reads", kind="unsound", semantics="atomic",
                  observe="outputs+state", original=program_to_json(program), rewritten=program_to_json(q),
                  verdict=verdict, message="output 'out' differs", feeds={"B": 2}, init={"x": 1},
                  schedule=["vx", "vx2", "r", "w"], claim="unsound")
    fields.update(kw)
    return FindingRecord(**fields)


def crash_record(**kw) -> FindingRecord:
    p, _, _ = families.racy_pairs(1)
    fields = dict(pass_name="mine", pass_spec="pkg:mine", kind="crash", semantics="decomposed",
                  observe="outputs", original=program_to_json(p), message="KeyError: 'x'",
                  detail={"error_type": "KeyError", "traceback": "Traceback ...\nKeyError: 'x'"})
    fields.update(kw)
    return FindingRecord(**fields)


def test_finding_round_trip(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {"passes": ["hoist-reads"]}, "0.1.0")
        rec = unsound_record()
        fid, seen = store.record_finding(cid, rec)
        assert seen == "new"
        row = store.finding(fid)
    assert row["pass"] == "hoist-reads" and row["kind"] == "unsound"
    assert row["differs"] == {"output": "out"}
    assert row["nodes"] == 4 and row["times_seen"] == 1 and row["status"] == "new"
    assert row["schedule"] == ["vx", "vx2", "r", "w"]
    assert row["feeds"] == {"B": 2} and row["init"] == {"x": 1}
    assert row["verdict"]["counterexample"]["outcome"]["outputs"] == {"out": 1}
    # the stored case is a valid tfsem.case/1 that `tfsem check` can replay
    case = case_from_json(row["case_json"])
    assert case.expect == "unsound" and case.semantics == "atomic"
    assert case.original == families.first_example(True)[0]
    # the canonical form is stored beside the program
    assert [n["name"] for n in row["canonical"]["nodes"]] == ["n0", "n1", "n2", "n3"]
    # and the record comes back whole
    back = Store.record_of(row)
    assert back.original == rec.original and back.rewritten == rec.rewritten
    assert back.verdict == rec.verdict and back.claim == "unsound" and back.pass_spec == "hoist-reads"


def test_crash_finding_has_no_case_but_keeps_its_traceback(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(None, {}, "0.1.0")
        fid, _ = store.record_finding(cid, crash_record())
        row = store.finding(fid)
    assert row["case_json"] is None and row["rewritten"] is None
    assert row["detail"]["error_type"] == "KeyError"


def test_same_finding_renamed_is_deduplicated(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        fid, seen = store.record_finding(cid, unsound_record())
        renamed = rename(families.first_example(True)[0], random.Random(3))
        fid2, seen2 = store.record_finding(cid, unsound_record(program=renamed))
        assert (fid2, seen2) == (fid, "repeat")
        assert store.finding(fid)["times_seen"] == 2
        # another cell is another finding
        fid3, seen3 = store.record_finding(cid, unsound_record(semantics="decomposed"))
        assert fid3 != fid and seen3 == "new"
        assert len(store.findings()) == 2


def test_a_finding_seen_on_an_earlier_night_is_known(tmp_path):
    with Store(tmp_path) as store:
        night1 = store.start_campaign(60.0, {}, "0.1.0")
        fid, _ = store.record_finding(night1, unsound_record())
        store.finish_campaign(night1)
        night2 = store.start_campaign(60.0, {}, "0.1.0")
        assert store.record_finding(night2, unsound_record()) == (fid, "known")
        new_id, seen = store.record_finding(night2, crash_record())
        assert seen == "new"
        groups = store.campaign_findings(night2)
        assert [f["id"] for f in groups["known"]] == [fid]
        assert [f["id"] for f in groups["new"]] == [new_id]
        assert store.finding(fid)["status"] == "known"
        assert store.finding(fid)["first_campaign"] == night1
        assert store.finding(fid)["last_campaign"] == night2
        # night 1 still shows it as new
        assert [f["id"] for f in store.campaign_findings(night1)["new"]] == [fid]


def test_fixed_findings(tmp_path):
    with Store(tmp_path) as store:
        night1 = store.start_campaign(60.0, {}, "0.1.0")
        fid, _ = store.record_finding(night1, unsound_record())
        night2 = store.start_campaign(60.0, {}, "0.1.0")
        store.mark_fixed(fid, night2)
        assert store.finding(fid)["status"] == "fixed"
        assert [f["id"] for f in store.campaign_findings(night2)["fixed"]] == [fid]
        assert store.open_findings() == []
        # it comes back: known again
        night3 = store.start_campaign(60.0, {}, "0.1.0")
        assert store.record_finding(night3, unsound_record()) == (fid, "known")
        assert [f["id"] for f in store.open_findings(["hoist-reads"])] == [fid]


def test_campaign_rows_and_interrupted_campaigns(tmp_path):
    with Store(tmp_path) as store:
        c1 = store.start_campaign(30.0, {"workers": 2}, "0.1.0")
        # c1 is never finished (killed); the next campaign marks it interrupted
        c2 = store.start_campaign(60.0, {"workers": 1}, "0.1.0")
        store.finish_campaign(c2)
        rows = {c["id"]: c for c in store.campaigns()}
    assert rows[c1]["status"] == "interrupted" and rows[c1]["ended"] is not None
    assert rows[c2]["status"] == "finished" and rows[c2]["budget"] == 60.0
    assert rows[c2]["settings"] == {"workers": 1} and rows[c2]["version"] == "0.1.0"


def test_pass_statistics_add_up(tmp_path):
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        store.add_stats(cid, "hoist-reads", "atomic", "outputs", {"programs": 10, "seconds": 2.0},
                        claim="unsound")
        store.add_stats(cid, "hoist-reads", "atomic", "outputs",
                        {"programs": 5, "seconds": 1.0, "unknown": 1, "last_error": "boom"})
        store.add_stats(cid, "hoist-reads", "decomposed", "outputs", {"programs": 3, "seconds": 1.0})
        store.record_finding(cid, unsound_record(observe="outputs"))
        cells = store.pass_statistics(cid)
        totals = store.pass_totals(cid)
        history = store.history()
    first = next(c for c in cells if c["semantics"] == "atomic")
    assert first["programs"] == 15 and first["seconds"] == 3.0 and first["unknown"] == 1
    assert first["programs_per_second"] == pytest.approx(5.0)
    assert first["last_error"] == "boom" and first["claim"] == "unsound"
    assert first["findings"]["unsound"] == 1
    assert totals[0]["programs"] == 18 and totals[0]["findings"]["unsound"] == 1
    assert totals[0]["claims"] == {"atomic/outputs": "unsound"}
    assert history[0]["programs"] == 18 and history[0]["new"] == 1


def test_schema_is_versioned(tmp_path):
    Store(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "campaign.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer|upgrade"):
        Store(tmp_path)


def test_unknown_database_is_refused(tmp_path):
    conn = sqlite3.connect(tmp_path / "campaign.db")
    conn.execute("CREATE TABLE something (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError):
        Store(tmp_path)


def test_readers_see_committed_findings_while_a_writer_is_open(tmp_path):
    writer = Store(tmp_path)
    cid = writer.start_campaign(60.0, {}, "0.1.0")
    writer.record_finding(cid, unsound_record())
    reader = Store(tmp_path, readonly=True)
    assert len(reader.findings()) == 1
    writer.record_finding(cid, crash_record())
    assert len(reader.findings()) == 2
    reader.close()
    writer.close()


def test_record_json_round_trip():
    rec = unsound_record()
    assert FindingRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec
    with pytest.raises(ValueError):
        FindingRecord(pass_name="p", kind="weird", semantics="atomic", observe="outputs", original={})


# ---------------------------------------------------------------------------
# The progress display (it reads like the database's statistics)


def test_progress_live_table_and_plain_log_lines():
    import io

    from tfsem.campaigns.progress import Progress

    tty = io.StringIO()
    live = Progress(["hoist-reads", "cse"], budget=60, workers=2, stream=tty, live=True)
    live.stats("hoist-reads", {"programs": 120, "seconds": 4.0})
    live.finding("hoist-reads", "unsound", "new", "output 'out' differs", 3, 1, expected=True)
    live.finding("hoist-reads", "unsound", "repeat", "output 'out' differs", 3, 1, expected=True)
    live.draw(force=True)
    text = tty.getvalue()
    assert "\x1b[" in text  # redrawn in place
    last = text.split("tfsem fuzz")[-1]
    assert "2 workers" in last and "1 finding (1 new)" in last
    row = next(line for line in last.splitlines() if "hoist-reads" in line and "programs" not in line)
    assert "120" in row and "30.0" in row and "unsound 1" in row

    log = io.StringIO()
    plain = Progress(["cse"], budget=60, workers=1, stream=log, live=False, interval=0)
    plain.stats("cse", {"programs": 10, "seconds": 2.0})
    plain.finding("cse", "crash", "known", "KeyError: 'x'", 2, 7, expected=False)
    plain.draw()
    lines = log.getvalue().splitlines()
    assert any("finding #7 known crash in cse (BUG)" in line for line in lines)
    assert any("cse: 10 programs (5.0/s per worker)" in line for line in lines)
    assert "\x1b[" not in log.getvalue()


# ---------------------------------------------------------------------------
# Change shapes per cell (schema 3)


def test_change_shapes_count_once_per_cell_over_slices(tmp_path):
    """Two slices of one cell send the shapes they saw first: a shape both
    saw counts once; a cell whose statistics carry no shapes (a runtime
    target) keeps NULL, not 0."""
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {}, "0.1.0")
        store.add_stats(cid, "p", "atomic", "outputs", {"programs": 10, "identical": 4,
                                                         "new_shapes": [["-ctl W/R"], ["-node R", "~out"]]})
        store.add_stats(cid, "p", "atomic", "outputs", {"programs": 5, "new_shapes": [["-ctl W/R"]]})
        store.add_stats(cid, "p", "atomic", "outputs", {"programs": 5, "new_shapes": [["~op W>A"]]})
        store.add_stats(cid, "xla", "atomic", "outputs", {"programs": 7})
        rows = {r["pass"]: r for r in store.pass_statistics(cid)}
        assert store.cell_shapes(cid, "p", "atomic", "outputs") == [
            ("-ctl W/R",), ("-node R", "~out"), ("~op W>A",)]
    assert rows["p"]["shapes"] == 3 and rows["p"]["programs"] == 20 and rows["p"]["changed"] == 16
    assert rows["xla"]["shapes"] is None


def test_a_schema_2_database_migrates_and_keeps_every_row(tmp_path):
    """A campaign stored by schema 2 (no shapes) stays readable as it is,
    and migrates to 3 with every row kept, its shapes NULL (not kept), so
    its cells are judged by the changed count alone as before."""
    from tfsem.campaigns.evidence import weak_reason
    with Store(tmp_path) as store:
        cid = store.start_campaign(60.0, {"passes": ["p"]}, "0.1.0")
        store.add_stats(cid, "p", "atomic", "outputs", {"programs": 400, "identical": 100})
        store.record_finding(cid, unsound_record())
        findings_before = store.findings()
        campaigns_before = store.campaigns()
    conn = sqlite3.connect(tmp_path / "campaign.db")   # as schema 2 wrote it
    conn.execute("DROP TABLE pass_shapes")
    conn.execute("ALTER TABLE pass_stats DROP COLUMN shapes")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with Store(tmp_path, readonly=True) as ro:
        assert ro.schema_version == 2
        (row,) = ro.pass_statistics(cid)
        assert row["shapes"] is None and row["programs"] == 400 and weak_reason(row) is None
        assert ro.cell_shapes(cid, "p", "atomic", "outputs") == []
    with Store(tmp_path) as rw:
        assert rw.schema_version == SCHEMA_VERSION == 3
        (row,) = rw.pass_statistics(cid)
        assert row["shapes"] is None and row["programs"] == 400 and row["changed"] == 300
        assert rw.findings() == findings_before and rw.campaigns() == campaigns_before
        # a new campaign on the migrated database keeps its shapes
        c2 = rw.start_campaign(60.0, {}, "0.1.0")
        rw.add_stats(c2, "p", "atomic", "outputs", {"programs": 50, "identical": 10,
                                                     "new_shapes": [["-ctl W/R"]]})
        rows = {r["campaign_id"]: r for r in rw.pass_statistics(c2)}
        assert rows[c2]["shapes"] == 1 and "1 distinct change shape" in weak_reason(rows[c2])
