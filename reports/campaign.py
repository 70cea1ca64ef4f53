"""The report of a campaign directory, read from its database.

`tfsem report DIR` writes these pages to `DIR/report/`; `tfsem serve DIR`
renders the same pages live, at the same relative paths (`index.html`,
`findings/finding-ID.html`), so links work from disk and from the server.
The database (`DIR/campaign.db`) belongs to `tfsem.campaigns.store` and is
only ever opened read-only here.
"""

from __future__ import annotations

from pathlib import Path

from .finding import render_finding_page
from .index import render_index
from .site import finding_page_path

REPORT_DIR = "report"


class NoSuchFinding(LookupError):
    """No finding with that id in the directory's database."""


def open_store(directory: Path):
    """A read-only Store, or None when DIR has no database yet."""
    from tfsem.campaigns.store import DB_NAME, Store
    if not (directory / DB_NAME).exists():
        return None
    return Store(directory, readonly=True)


def _title(directory: Path) -> str:
    return f"tfsem campaign report: {directory.resolve().name or directory}"


def _index_campaign(c: dict) -> dict:
    return {"id": c["id"], "started": c["started"], "ended": c.get("ended"), "budget_s": c.get("budget"),
            "settings": c.get("settings") or {}, "version": c.get("version"), "host": c.get("host"),
            "status": c.get("status")}


def _index_finding(f: dict, status: str) -> dict:
    return {"id": f["id"], "pass": f["pass"], "kind": f["kind"], "status": status,
            "page": finding_page_path(f["id"]), "semantics": f.get("semantics"),
            "observe": f.get("observe"), "differs": f.get("differs"), "summary": f.get("message"),
            "nodes": f.get("nodes"), "first_seen": f.get("first_seen"), "last_seen": f.get("last_seen"),
            "seen": f.get("times_seen")}


def index_page(directory: str | Path) -> str:
    """The index: the latest campaign, its per-pass table, its findings
    (new / known / fixed) and the history over the nights stored."""
    directory = Path(directory)
    title = _title(directory)
    store = open_store(directory)
    if store is None:
        return render_index([], [], [], [], title=title + " (no campaign has run yet)")
    with store:
        campaigns = [_index_campaign(c) for c in reversed(store.campaigns())]
        if not campaigns:
            return render_index([], [], [], [], title=title)
        latest = campaigns[0]["id"]
        pass_stats = store.pass_totals(latest)
        findings = []
        for status, rows in store.campaign_findings(latest).items():
            findings += [_index_finding(f, status) for f in rows]
        history = [dict(h, findings=h.get("new", 0) + h.get("known", 0)) for h in store.history()]
    return render_index(campaigns, pass_stats, findings, history, title=title)


def finding_row(directory: str | Path, finding_id: int | str) -> dict:
    if not str(finding_id).isdigit():
        raise NoSuchFinding(finding_id)
    store = open_store(Path(directory))
    if store is None:
        raise NoSuchFinding(finding_id)
    with store:
        row = store.finding(int(finding_id))
    if row is None:
        raise NoSuchFinding(finding_id)
    return row


def finding_page(row: dict) -> str:
    """A finding's page from its database row (a crash or a timeout has no
    rewritten program and no verdict: the page says what happened)."""
    case = row.get("case_json") or {"format": "tfsem.case/1", "original": row["original"],
                                     "rewritten": row.get("rewritten"), "semantics": row["semantics"],
                                     "observe": row["observe"]}
    verdict = row.get("verdict") or {"verdict": row["kind"], "reason": row.get("message", ""),
                                     "detail": row.get("detail"), "semantics": row["semantics"],
                                     "observe": row["observe"]}
    meta = {"pass": row["pass"], "kind": row["kind"], "status": row["status"],
            "first_seen": row["first_seen"], "last_seen": row["last_seen"], "seen": row["times_seen"],
            "id": row["id"], "signature": row["signature"]}
    return render_finding_page(case, verdict, meta=meta, index_href="../index.html",
                               case_filename=f"finding-{row['id']}.json")


def write_campaign_report(directory: str | Path) -> tuple[Path, int]:
    """Write DIR/report/index.html and one page per stored finding; returns
    the index's path and the number of finding pages."""
    directory = Path(directory)
    out = directory / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    store = open_store(directory)
    if store is not None:
        with store:
            rows = [store.finding(f["id"]) for f in store.findings()]
        for row in rows:
            path = out / finding_page_path(row["id"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(finding_page(row), encoding="utf-8")
            count += 1
    index = out / "index.html"
    index.write_text(index_page(directory), encoding="utf-8")
    return index, count
