"""The report fuzzer (issue 18, deliverable 2): campaign databases full of
hostile findings, and `tfsem report` must still write every page.

Seeded and bounded: each round builds a database with findings of every
kind (unsound, invalid, crash, timeout) whose programs and texts are
drawn from a hostile pool — markup, quotes, lone surrogates, very long
names, control self-loops, cycles, programs past the drawing budget,
non-finite numbers where numbers go, values of the wrong type — and
checks that:

- `tfsem report DIR` exits 0 (or 2 naming what it could not write), with no
  traceback, and every finding the index lists has its page on disk;
- every page is well-formed, self-contained HTML in which no hostile text
  became markup (no `<script`, no event handler attribute), encodable as
  UTF-8;
- a page past the drawing budget says why in place of the picture;
- a database with flipped bytes is either read or refused with exit 2;
- where Chromium is installed, every page loads with no console error, no
  script, and every arrowhead outside the node boxes.

The default run does ROUNDS rounds; TFSEM_HYPOTHESIS_PROFILE=nightly does
ten times as many.
"""

from __future__ import annotations

import html.parser
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import re

import pytest
from hypothesis import settings

from tfsem.campaigns.store import Store
from tfsem.reports.campaign import write_campaign_report

from test_reports_browser import HIDDEN_ARROWHEADS, Browser, find_chromium

ROUNDS = int(os.environ.get("TFSEM_REPORT_FUZZ_ROUNDS", 0)) or (
    3 if settings.get_current_profile_name() != "nightly" else 30)
HOSTILE = ["<script>window.pwned=1</script>", '"><img src=x onerror=alert(1)>', "a'b\"c&d",
           "\ud800lone", "x\udfff", "n" * 3000, "]]><!--", "\u202eevil", "tab\there\nnewline",
           "ünïcødé-名前", "", " ", "$", "^", "a:b"]
KINDS = ("unsound", "invalid", "crash", "timeout")
#: a Python traceback of tfsem itself (a stored traceback quoted in a message is fine)
TRACEBACK = re.compile(r'File "[^"]*/(tfsem|reports|campaigns|oracle)/[^"]*\.py", line \d+, in ')
NAN, INF = float("nan"), float("inf")


def hostile(rng: random.Random) -> str:
    return rng.choice(HOSTILE) + (str(rng.randrange(1000)) if rng.random() < 0.5 else "")


def program(rng: random.Random, size: int, *, names: bool = True, self_loop: bool = False,
            cycle: bool = False) -> dict:
    """A chain Var -> Read -> Add ... with hostile names, optionally a
    control self-loop or a cycle (an invalid program, as a bad pass returns)."""
    def name(i: int) -> str:
        return (hostile(rng) + f"#{i}") if names and rng.random() < 0.4 else f"n{i}"
    var = hostile(rng) if names and rng.random() < 0.5 else "x"
    nodes = [{"name": name(0), "op": "Var", "var": var},
             {"name": name(1), "op": "Read", "inputs": [None]}]
    nodes[1]["inputs"] = [nodes[0]["name"]]
    for i in range(2, size):
        feed = (hostile(rng) or "f") if names else "f"
        nodes.append({"name": name(i), "op": "Add", "inputs": [nodes[-1]["name"], "$" + feed]})
    if self_loop:
        k = rng.randrange(1, len(nodes))
        nodes[k]["inputs"] = nodes[k]["inputs"] + ["^" + nodes[k]["name"]]
    if cycle and len(nodes) > 3:
        nodes[1]["inputs"] = nodes[1]["inputs"] + ["^" + nodes[-1]["name"]]
    return {"format": "tfsem.program/1", "variables": [var], "nodes": nodes,
            "outputs": {(hostile(rng) or "out") if names else "out": nodes[-1]["name"]}}


def weird_number(rng: random.Random):
    return rng.choice([NAN, INF, -INF, 1e308, -0.0, 2 ** 70, "nan", {"dtype": "float32", "value": "inf"},
                       [1, [2, [3]]], None, "<b>", True])


def finding(rng: random.Random, kind: str) -> dict:
    big = rng.random() < 0.2
    size = rng.choice([600, 900]) if big else rng.randrange(2, 9)
    original = program(rng, size, names=not big)   # a big one loads, so that it meets the budget
    row = {"pass": hostile(rng) or "p", "pass_spec": rng.choice(["", "mod:" + hostile(rng)]), "kind": kind,
           "semantics": "atomic" if big else rng.choice(["atomic", "decomposed", hostile(rng)]),
           "observe": "outputs+state" if big else rng.choice(["outputs", "outputs+state", hostile(rng)]),
           "claim": rng.choice(["sound", "unsound", None]), "message": hostile(rng),
           "original": original, "rewritten": None, "verdict": None, "detail": {}, "differs": None,
           "feeds": {hostile(rng): weird_number(rng)}, "init": {"x": weird_number(rng)}, "schedule": None,
           "nodes": size, "big": big}
    if kind in ("unsound", "invalid"):
        rewritten = program(rng, size, names=not big, self_loop=rng.random() < 0.5, cycle=rng.random() < 0.3)
        row["rewritten"] = rewritten
        schedule = [n["name"] for n in rewritten["nodes"]] + ([hostile(rng)] if rng.random() < 0.3 else [])
        outcome = {"outputs": {k: weird_number(rng) for k in rewritten["outputs"]},
                   "state": {"x": weird_number(rng)}}
        verdict = {"verdict": kind, "reason": hostile(rng), "semantics": row["semantics"],
                   "observe": row["observe"]}
        if kind == "unsound":
            row["differs"] = rng.choice([{"output": hostile(rng)}, {"variable": hostile(rng)}, {}])
            verdict.update(differs=row["differs"], counterexample={
                "feeds": row["feeds"], "init": row["init"], "schedule": schedule, "outcome": outcome,
                "key_steps": schedule[:2], "original_count": rng.choice([1, 2 ** 63, NAN, "many"]),
                "original_outcomes": [outcome, {"outputs": {"o": INF}}, "not an object"]},
                confirmed=["oracle", hostile(rng)], elapsed=NAN)
            row["schedule"] = schedule
        row["verdict"] = verdict
        row["detail"] = {"violations": [hostile(rng), hostile(rng)]}
        row["case_json"] = {"format": "tfsem.case/1", "original": original, "rewritten": rewritten,
                            "semantics": row["semantics"], "observe": row["observe"], "note": hostile(rng)}
    elif kind == "crash":
        row["detail"] = {"error_type": hostile(rng), "traceback": "Traceback (most recent call last):\n"
                         + ("  File \"" + hostile(rng) + "\", line 1\n") * rng.randrange(1, 50)
                         + "Error: " + hostile(rng)}
    else:
        row["detail"] = {"timeout": weird_number(rng)}
    return row


def _dumps(obj) -> str | None:
    # as the store writes it: Python's json, which writes NaN and Infinity
    return None if obj is None else json.dumps(obj)


def txt(s: str | None) -> str | None:
    """A text column: SQLite stores UTF-8, so a lone surrogate can only
    reach the database inside JSON (escaped); here it becomes U+FFFD."""
    return None if s is None else s.encode("utf-8", "replace").decode("utf-8")


def build_database(directory: Path, rng: random.Random, n: int) -> list[dict]:
    with Store(directory) as store:
        cid = store.start_campaign(60.0, {"passes": [hostile(rng)]}, "0.1.0")
        with store.conn:   # what the store never writes, a hand-edited database may hold
            store.conn.execute("UPDATE campaigns SET settings = ? WHERE id = ?",
                               (json.dumps({hostile(rng): [NAN, INF], "workers": hostile(rng)}), cid))
        rows = [finding(rng, KINDS[i % len(KINDS)]) for i in range(n)]
        now = time.time()
        for i, r in enumerate(rows):
            store.add_stats(cid, txt(r["pass"]), txt(r["semantics"]), txt(r["observe"]),
                            {"programs": rng.randrange(0, 100), "seconds": rng.choice([0.0, 1.5, 1e9]),
                             "identical": rng.randrange(0, 5)}, claim=r["claim"])
            with store.conn:
                cur = store.conn.execute(
                    "INSERT INTO findings (signature, pass, pass_spec, kind, semantics, observe, claim, differs, "
                    "message, nodes, original, rewritten, case_json, canonical, feeds, init, schedule, verdict, "
                    "detail, first_seen, last_seen, times_seen, status, first_campaign, last_campaign) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'new', ?, ?)",
                    (f"sig-{i}", txt(r["pass"]), txt(r["pass_spec"]), r["kind"], txt(r["semantics"]),
                     txt(r["observe"]), r["claim"], _dumps(r["differs"]), txt(r["message"]), r["nodes"], _dumps(r["original"]),
                     _dumps(r["rewritten"]), _dumps(r.get("case_json")), _dumps(r["original"]),
                     _dumps(r["feeds"]), _dumps(r["init"]), _dumps(r["schedule"]), _dumps(r["verdict"]),
                     _dumps(r["detail"]), now, now if i % 3 else 1e300, cid, cid))
                r["id"] = cur.lastrowid
                store.conn.execute("INSERT INTO finding_campaigns (finding_id, campaign_id, times, first_seen, "
                                   "last_seen) VALUES (?, ?, 1, ?, ?)", (r["id"], cid, now, now))
        store.finish_campaign(cid)
    return rows


class Strict(html.parser.HTMLParser):
    """Collects tags and attributes: a hostile text that became markup shows
    up as a tag or an attribute here."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [k for k, _ in attrs]


def check_page(path: Path) -> str:
    text = path.read_bytes().decode("utf-8")   # strict: the page is valid UTF-8
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>"), path
    p = Strict()
    p.feed(text)
    p.close()
    assert "script" not in p.tags and "img" not in p.tags, (path, set(p.tags))
    assert not [a for a in p.attrs if a.startswith("on")], (path, p.attrs)
    assert "<script" not in text.lower()
    return text


def run_report(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", "report", str(directory)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("seed", range(ROUNDS))
def test_report_survives_hostile_findings(seed: int, tmp_path: Path):
    rng = random.Random(seed)
    rows = build_database(tmp_path, rng, n=8)
    r = run_report(tmp_path)
    assert r.returncode in (0, 2), r.stdout + r.stderr
    assert not TRACEBACK.search(r.stderr), r.stderr
    report = tmp_path / "report"
    index = check_page(report / "index.html")
    written = 0
    for row in rows:
        page = report / "findings" / f"finding-{row['id']}.html"
        assert page.is_file(), (row["id"], r.stderr)   # every finding gets a page
        text = check_page(page)
        # the last-resort page (an exception while rendering) is a bug to fix, not a pass
        assert "PAGE NOT DRAWN" not in text, (row["id"], text[text.find("page-error"):][:400])
        written += 1
        assert f'href="findings/finding-{row["id"]}.html"' in index
        if row["big"]:   # past the drawing budget: the reason where the picture would be
            assert "not drawn" in text and "past the drawing budget" in text, row["id"]
    assert written == len(rows)
    assert r.returncode == 0, r.stderr   # nothing was left unwritten
    for steps in report.glob("findings/*-steps.html"):
        check_page(steps)
    if find_chromium() is not None and seed == 0:
        _browser_check(report)


def _browser_check(report: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        b = Browser(find_chromium(), Path(tmp))
        try:
            for page in [report / "index.html", *sorted(report.glob("findings/*.html"))]:
                b.open(page.resolve().as_uri())
                assert b.evaluate("typeof window.pwned") == "undefined", page
                assert b.evaluate("document.querySelectorAll('script, img').length") == 0, page
                assert b.evaluate(HIDDEN_ARROWHEADS) == [], page
            assert b.problems() == []
        finally:
            b.close()


def test_a_database_with_flipped_bytes_is_read_or_refused(tmp_path: Path):
    rng = random.Random(7)
    clean = tmp_path / "clean"
    build_database(clean, rng, n=4)
    for k in range(4 if ROUNDS < 10 else 40):
        d = tmp_path / f"flipped{k}"
        shutil.copytree(clean, d)
        db = bytearray((d / "campaign.db").read_bytes())
        for _ in range(rng.randrange(1, 40)):
            db[rng.randrange(len(db))] = rng.randrange(256)
        (d / "campaign.db").write_bytes(bytes(db))
        for wal in d.glob("campaign.db-*"):
            wal.unlink()
        r = run_report(d)
        assert r.returncode in (0, 2), r.stdout + r.stderr
        assert not TRACEBACK.search(r.stderr), r.stderr
        if r.returncode == 2:
            assert "campaign.db" in r.stderr or "finding" in r.stderr, r.stderr
        else:
            check_page(d / "report" / "index.html")


def test_a_self_loop_finding_in_process():
    """Issue 18.1's case, without a subprocess: a control self-loop in the
    rewritten program (it was a KeyError in graph.py that wrote no page)."""
    from tfsem.reports.finding import render_finding_page
    rng = random.Random(3)
    p = program(rng, 4, names=False)
    q = program(random.Random(3), 4, names=False, self_loop=True)
    html = render_finding_page({"format": "tfsem.case/1", "original": p, "rewritten": q},
                               {"verdict": "invalid", "reason": "cycle"})
    assert "PAGE NOT DRAWN" not in html and html.count('class="graph program-graph') == 2
    loops = [line for line in html.split("<g class=") if "edge control" in line and "added" in line]
    assert loops, "the self-loop is drawn as an added control edge"
    assert not math.isnan(0.0)
