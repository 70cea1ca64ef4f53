"""`tfsem report DIR`: write DIR's HTML report, DIR/report/index.html."""

from __future__ import annotations

import argparse
from pathlib import Path

from tfsem.cli import EXIT_OK, UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write the HTML report of a campaign directory",
                       description="Write DIR/report/index.html and one page per finding, "
                                   "self-contained (open them from disk).")
    p.add_argument("dir", help="a campaign directory (tfsem fuzz --out DIR)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.campaigns.store import DB_NAME
    from tfsem.reports.campaign import write_campaign_report

    directory = Path(args.dir)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory")
    if not (directory / DB_NAME).exists():
        raise UsageError(f"{directory}: no campaign database ({DB_NAME}); run tfsem fuzz --out {directory} first")
    index, pages = write_campaign_report(directory)
    print(f"wrote {index} and {pages} finding page{'s' if pages != 1 else ''}")
    return EXIT_OK
