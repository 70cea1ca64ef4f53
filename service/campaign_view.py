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

from tfsem.reports.campaign import NoSuchFinding, finding_row, open_store

#: columns of a finding row that the list leaves out (the detail has them)
_HEAVY = ("original", "rewritten", "case_json", "canonical", "feeds", "init", "schedule", "verdict",
          "detail")


class CampaignView:
    """Reads a campaign directory.  Methods are blocking (SQLite): the app
    calls them in a thread.  Each call opens its own read-only connection."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _store(self):
        """A read-only Store, or None when DIR has no database yet."""
        return open_store(self.directory)

    # -- JSON -----------------------------------------------------------------

    def campaigns(self) -> list[dict]:
        """Every campaign, newest first, each with its per-pass totals."""
        store = self._store()
        if store is None:
            return []
        with store:
            out = []
            for c in reversed(store.campaigns()):
                # per pass and cell: programs, changed, sound, no_counterexample, unknown;
                # findings grouped by bug (group, representative id, member ids)
                groups = [{"group": g["group"], "pass": g["pass"], "kind": g["kind"],
                           "representative": g["representative"]["id"], "members": g["members"]}
                          for g in store.finding_groups(c["id"])]
                out.append(dict(c, passes=store.pass_totals(c["id"]), cells=store.pass_statistics(c["id"]),
                                groups=groups))
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
        return finding_row(self.directory, finding_id)

    @staticmethod
    def _summary(row: dict) -> dict:
        from tfsem.reports.site import finding_page_path
        out = {k: v for k, v in row.items() if k not in _HEAVY}
        out["page"] = finding_page_path(row["id"])
        out["href"] = f"/v1/findings/{row['id']}"
        return out

    # -- pages (rendered by tfsem.reports.campaign, as `tfsem report` writes them) --

    def index_html(self) -> str:
        from tfsem.reports.campaign import index_page
        return index_page(self.directory)

    def finding_html(self, page: str) -> str:
        """`finding-ID.html`: the finding's page, as `tfsem report` writes it."""
        from tfsem.reports.campaign import page_named  # finding-ID.html, finding-ID-steps.html
        return page_named(self.directory, page)
