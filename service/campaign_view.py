"""DIR's campaigns, findings and report pages, read live for `tfsem serve`.

The campaign database (`DIR/campaign.db`, tfsem.campaigns.store) belongs to
the campaigns package and the pages to the reports package; this module only
adapts them to the routes.  It opens the database read-only at every request,
so a campaign running beside the server shows up as it goes, and nothing here
can write to it.  Until a database exists the lists are empty and the index
page says that no campaign has run.

The pages are the ones `tfsem report DIR` writes, at the same relative paths
(`index.html`, `findings/finding-ID.html`), so their links work both from
disk and from the server.
"""

from __future__ import annotations

from pathlib import Path

#: columns of a finding row that the list leaves out (the detail has them)
_HEAVY = ("original", "rewritten", "case_json", "canonical", "feeds", "init", "schedule", "verdict",
          "detail")


class NoSuchFinding(LookupError):
    pass


class CampaignView:
    """Reads a campaign directory.  Methods are blocking (SQLite): the app
    calls them in a thread.  Each call opens its own read-only connection."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _store(self):
        """A read-only Store, or None when DIR has no database yet."""
        from tfsem.campaigns.store import DB_NAME, Store
        if not (self.directory / DB_NAME).exists():
            return None
        return Store(self.directory, readonly=True)

    # -- JSON -----------------------------------------------------------------

    def campaigns(self) -> list[dict]:
        """Every campaign, newest first, each with its per-pass totals."""
        store = self._store()
        if store is None:
            return []
        with store:
            out = []
            for c in reversed(store.campaigns()):
                out.append(dict(c, passes=store.pass_totals(c["id"])))
            return out

    def findings(self, pass_name: str | None = None, kind: str | None = None,
                 status: str | None = None) -> list[dict]:
        store = self._store()
        if store is None:
            return []
        with store:
            return [self._summary(f) for f in store.findings(status=status, pass_name=pass_name, kind=kind)]

    def finding(self, finding_id: str) -> dict:
        """The finding with its case (`tfsem.case/1`, None for a crash or a
        timeout: replay those with `tfsem rewrite PASS` on `original`), its
        verdict, σ, schedule and the kind's details."""
        row = self._row(finding_id)
        return {"finding": self._summary(row), "case": row.get("case_json"), "verdict": row.get("verdict"),
                "feeds": row.get("feeds"), "init": row.get("init"), "schedule": row.get("schedule"),
                "detail": row.get("detail"), "original": row.get("original"),
                "rewritten": row.get("rewritten")}

    def _row(self, finding_id: str) -> dict:
        if not str(finding_id).isdigit():
            raise NoSuchFinding(finding_id)
        store = self._store()
        if store is None:
            raise NoSuchFinding(finding_id)
        with store:
            row = store.finding(int(finding_id))
        if row is None:
            raise NoSuchFinding(finding_id)
        return row

    @staticmethod
    def _summary(row: dict) -> dict:
        from tfsem.reports.site import finding_page_path
        out = {k: v for k, v in row.items() if k not in _HEAVY}
        out["page"] = finding_page_path(row["id"])
        out["href"] = f"/v1/findings/{row['id']}"
        return out

    # -- pages ----------------------------------------------------------------

    def index_html(self) -> str:
        from tfsem.reports.index import render_index

        title = f"tfsem campaign report: {self.directory.name or self.directory}"
        store = self._store()
        if store is None:
            return render_index([], [], [], [], title=title + " (no campaign has run yet)")
        with store:
            campaigns = [self._index_campaign(c) for c in reversed(store.campaigns())]
            if not campaigns:
                return render_index([], [], [], [], title=title)
            latest = campaigns[0]["id"]
            pass_stats = store.pass_totals(latest)
            findings = []
            for status, rows in store.campaign_findings(latest).items():
                findings += [self._index_finding(f, status) for f in rows]
            history = [dict(h, findings=h.get("new", 0) + h.get("known", 0)) for h in store.history()]
        return render_index(campaigns, pass_stats, findings, history, title=title)

    @staticmethod
    def _index_campaign(c: dict) -> dict:
        return {"id": c["id"], "started": c["started"], "ended": c.get("ended"), "budget_s": c.get("budget"),
                "settings": c.get("settings") or {}, "version": c.get("version"), "host": c.get("host"),
                "status": c.get("status")}

    @staticmethod
    def _index_finding(f: dict, status: str) -> dict:
        from tfsem.reports.site import finding_page_path
        return {"id": f["id"], "pass": f["pass"], "kind": f["kind"], "status": status,
                "page": finding_page_path(f["id"]), "semantics": f.get("semantics"),
                "observe": f.get("observe"), "differs": f.get("differs"), "summary": f.get("message"),
                "nodes": f.get("nodes"), "first_seen": f.get("first_seen"), "last_seen": f.get("last_seen"),
                "seen": f.get("times_seen")}

    def finding_html(self, page: str) -> str:
        """`finding-ID.html`: the finding's page, as `tfsem report` writes it."""
        from tfsem.reports.finding import render_finding_page

        stem = page[:-5] if page.endswith(".html") else None
        if stem is None or not stem.startswith("finding-"):
            raise NoSuchFinding(page)
        row = self._row(stem[len("finding-"):])
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
