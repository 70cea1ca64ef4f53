"""Writing a report folder: `index.html` and one page per finding.

This is the part `tfsem report DIR` calls once it has read the campaign
database: it hands over the index data (see `index.py` for the shapes) and,
for each finding, its case and verdict; this module renders and writes the
pages and fills in each finding's `page` link, so links and files cannot
disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .finding import render_finding_page
from .html import slug
from .index import render_index

FINDINGS_DIR = "findings"


@dataclass
class FindingPage:
    """What a finding page needs: the finding's index entry (id, pass, kind,
    status, ...), its `tfsem.case/1` case (object or JSON) and its verdict
    object (SPEC 4)."""
    finding: Mapping[str, Any]
    case: Any
    verdict: Mapping[str, Any]
    confirmed: Sequence[str] | None = None
    extra_meta: Mapping[str, Any] = field(default_factory=dict)


def finding_page_path(finding_id: Any) -> str:
    """The page's path relative to the report folder."""
    return f"{FINDINGS_DIR}/finding-{slug(finding_id)}.html"


def write_report(report_dir: str | Path, campaigns: Sequence[Mapping[str, Any]],
                 pass_stats: Sequence[Mapping[str, Any]], findings: Sequence[FindingPage],
                 history: Sequence[Mapping[str, Any]], title: str = "tfsem campaign report") -> Path:
    """Write `report_dir/index.html` and `report_dir/findings/*.html`; returns
    the index's path.  Page names come from finding ids (made file-safe and
    unique)."""
    out = Path(report_dir)
    (out / FINDINGS_DIR).mkdir(parents=True, exist_ok=True)
    entries = []
    used: set[str] = set()
    for fp in findings:
        entry = dict(fp.finding)
        rel = finding_page_path(entry.get("id", len(used)))
        stem, k = rel[:-5], 1
        while rel in used:
            k += 1
            rel = f"{stem}-{k}.html"
        used.add(rel)
        entry["page"] = rel
        meta = {key: entry.get(key) for key in ("pass", "kind", "status", "first_seen", "last_seen",
                                                 "seen", "id") if entry.get(key) is not None}
        meta.update(fp.extra_meta)
        fname = f"finding-{slug(entry.get('id', 'case'))}.json"
        steps_rel = None
        cx = fp.verdict.get("counterexample") if isinstance(fp.verdict, Mapping) else None
        if isinstance(cx, Mapping) and fp.verdict.get("verdict") == "unsound":
            steps_rel = rel[:-5] + "-steps.html"   # every step drawn, one link away
            (out / steps_rel).write_text(
                render_finding_page(fp.case, fp.verdict, fp.confirmed, meta=meta, index_href="../index.html",
                                    case_filename=fname, steps="all"), encoding="utf-8")
        html = render_finding_page(fp.case, fp.verdict, fp.confirmed, meta=meta,
                                   index_href="../index.html", case_filename=fname,
                                   steps_href=steps_rel.rpartition("/")[2] if steps_rel else None)
        (out / rel).write_text(html, encoding="utf-8")
        entries.append(entry)
    index = out / "index.html"
    index.write_text(render_index(campaigns, pass_stats, entries, history, title), encoding="utf-8")
    return index
