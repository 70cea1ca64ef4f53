"""The report of a campaign directory, read from its database.

`tfsem report DIR` writes these pages to `DIR/report/`; `tfsem serve DIR`
renders the same pages live, at the same relative paths (`index.html`,
`findings/finding-ID.html`), so links work from disk and from the server.
The database (`DIR/campaign.db`) belongs to `tfsem.campaigns.store` and is
only ever opened read-only here.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .finding import render_finding_page
from .index import render_index
from .site import FINDINGS_DIR, finding_page_path

REPORT_DIR = "report"
#: the all-steps page of a finding, beside its page
STEPS_SUFFIX = "-steps"
_PAGE = re.compile(r"finding-([0-9]{1,18})(-steps)?\.html")


class NoSuchFinding(LookupError):
    """No finding with that id in the directory's database."""


class UnreadableStore(NoSuchFinding):
    """DIR/campaign.db exists but cannot be read (corrupt, not a database,
    a newer schema); `str(exc)` says which file and why."""


def open_store(directory: Path):
    """A read-only Store, or None when DIR has no database yet.  Raises
    :class:`UnreadableStore` when the file is there but cannot be read."""
    from tfsem.campaigns.store import DB_NAME, Store
    path = directory / DB_NAME
    if not path.exists():
        return None
    try:
        return Store(directory, readonly=True)
    except (sqlite3.Error, RuntimeError, ValueError, OSError) as exc:
        raise UnreadableStore(f"{path}: not a readable campaign database ({exc})") from None


def steps_page_path(finding_id) -> str:
    """The all-steps page, relative to the report folder."""
    return finding_page_path(finding_id)[:-5] + STEPS_SUFFIX + ".html"


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
            "seen": f.get("times_seen"), "group": f.get("group_key")}


def index_page(directory: str | Path, problems: list[str] | tuple = ()) -> str:
    """The index: the verdict per pass and cell of the latest campaign, its
    findings (new / known / fixed), its passes and settings, and the history
    over the nights stored.  An unreadable database gives an index that says
    so (the service shows it; `tfsem report` refuses it first)."""
    directory = Path(directory)
    title = _title(directory)
    try:
        store = open_store(directory)
        if store is None:
            return render_index([], [], [], [], title=title + " (no campaign has run yet)")
        with store:
            campaigns = [_index_campaign(c) for c in reversed(store.campaigns())]
            if not campaigns:
                return render_index([], [], [], [], title=title)
            latest = campaigns[0]["id"]
            pass_stats = store.pass_totals(latest)
            cells = store.pass_statistics(latest)
            findings = []
            for status, rows in store.campaign_findings(latest).items():
                findings += [_index_finding(f, status) for f in rows]
            # the store's choice of each group's smallest example comes first
            rank = {m: i for g in (store.finding_groups(latest) if hasattr(store, "finding_groups") else [])
                    for i, m in enumerate(g["members"])}
            for f in findings:
                f["rank"] = rank.get(f["id"])
            history = [dict(h, findings=h.get("new", 0) + h.get("known", 0)) for h in store.history()]
    except (UnreadableStore, sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        return render_index([], [], [], [], title=title + " (the database cannot be read)",
                            problems=[*problems, f"{exc}"])
    return render_index(campaigns, pass_stats, findings, history, title=title, cells=cells,
                        problems=problems)


def finding_row(directory: str | Path, finding_id: int | str) -> dict:
    """The finding's database row; :class:`NoSuchFinding` for an id that is
    not ASCII digits (at most 18: SQLite integers are 64-bit) or not stored."""
    text = str(finding_id)
    if not re.fullmatch(r"[0-9]{1,18}", text):
        raise NoSuchFinding(finding_id)
    store = open_store(Path(directory))
    if store is None:
        raise NoSuchFinding(finding_id)
    try:
        with store:
            row = store.finding(int(text))
    except (sqlite3.Error, ValueError) as exc:  # a corrupt row or database
        raise UnreadableStore(f"finding {text}: cannot be read from the database ({exc})") from None
    if row is None:
        raise NoSuchFinding(finding_id)
    return row


def page_named(directory: str | Path, page: str) -> str:
    """The finding page `finding-ID.html` or its all-steps page
    `finding-ID-steps.html`, rendered from the database (for `tfsem serve`);
    :class:`NoSuchFinding` for any other name."""
    m = _PAGE.fullmatch(page)
    if m is None:
        raise NoSuchFinding(page)
    row = finding_row(directory, m.group(1))
    return finding_page(row, all_steps=bool(m.group(2)))


def _has_steps(row: dict) -> bool:
    v = row.get("verdict")
    return isinstance(v, dict) and v.get("verdict") == "unsound" and isinstance(v.get("counterexample"), dict)


def finding_page(row: dict, all_steps: bool = False) -> str:
    """A finding's page from its database row (a crash or a timeout has no
    rewritten program and no verdict: the page says what happened).  It
    draws the steps that matter and links the page that draws them all
    (`all_steps=True`, written beside it)."""
    case = row.get("case_json") or {"format": "tfsem.case/1", "original": row["original"],
                                     "rewritten": row.get("rewritten"), "semantics": row["semantics"],
                                     "observe": row["observe"]}
    verdict = row.get("verdict") or {"verdict": row["kind"], "reason": row.get("message", ""),
                                     "detail": row.get("detail"), "semantics": row["semantics"],
                                     "observe": row["observe"]}
    if not row.get("verdict") and isinstance(row.get("detail"), dict):
        verdict["detail"] = row["detail"]
    meta = {"pass": row["pass"], "kind": row["kind"], "status": row["status"],
            "first_seen": row["first_seen"], "last_seen": row["last_seen"], "seen": row["times_seen"],
            "id": row["id"], "signature": row["signature"]}
    if row.get("pass_spec") and row.get("pass_spec") != row["pass"]:
        meta["pass_spec"] = row["pass_spec"]
    if all_steps:
        return render_finding_page(case, verdict, meta=meta, index_href="../index.html",
                                   case_filename=f"finding-{row['id']}.json", steps="all")
    steps_href = steps_page_path(row["id"]).rpartition("/")[2] if _has_steps(row) else None
    return render_finding_page(case, verdict, meta=meta, index_href="../index.html",
                               case_filename=f"finding-{row['id']}.json", steps_href=steps_href)


@dataclass
class ReportResult:
    """What `write_campaign_report` wrote, and what it could not."""
    index: Path
    pages: int = 0
    failed: list[str] = field(default_factory=list)


def write_campaign_report(directory: str | Path) -> ReportResult:
    """Write DIR/report/index.html, one page per stored finding, and the
    all-steps page of each unsound finding.  One bad finding never takes the
    report down: a row that cannot be read or a page that cannot be written
    is listed in `failed` (and on the index); a page that cannot draw its
    graphs is written with the reason in place of the picture.  Raises
    :class:`UnreadableStore` when the database cannot be read at all."""
    directory = Path(directory)
    out = directory / REPORT_DIR
    (out / FINDINGS_DIR).mkdir(parents=True, exist_ok=True)
    result = ReportResult(out / "index.html")
    store = open_store(directory)
    if store is not None:
        try:
            with store:
                ids = [f["id"] for f in _ids(store)]
        except (sqlite3.Error, ValueError) as exc:   # ValueError: undecodable text in a corrupt file
            raise UnreadableStore(f"{directory / 'campaign.db'}: the campaign database cannot be read "
                                  f"({exc})") from None
        for fid in ids:
            try:
                row = finding_row(directory, fid)
                pages = {finding_page_path(fid): finding_page(row)}
                if _has_steps(row):
                    pages[steps_page_path(fid)] = finding_page(row, all_steps=True)
            except (NoSuchFinding, KeyError, TypeError, ValueError) as exc:
                why = str(exc) if str(exc).startswith(f"finding {fid}") else f"finding {fid}: {exc}"
                result.failed.append(why if len(why) <= 300 else why[:299] + "…")
                continue
            for rel, html in pages.items():
                try:
                    (out / rel).write_text(html, encoding="utf-8")
                except OSError as exc:
                    result.failed.append(f"{rel}: {exc.strerror or exc}")
            result.pages += 1
    result.index.write_text(index_page(directory, result.failed), encoding="utf-8")
    return result


def _ids(store) -> list[dict]:
    """The stored findings' ids, read without decoding their JSON columns
    (a corrupt column spoils one page, not the list)."""
    return [{"id": r[0]} for r in store.conn.execute("SELECT id FROM findings ORDER BY id")]
