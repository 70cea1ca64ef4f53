"""`tfsem report DIR`: write DIR's HTML report, DIR/report/index.html."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfsem.cli import EXIT_BAD_INPUT, EXIT_OK, UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write the HTML report of a campaign directory",
                       description="Write DIR/report/index.html and one page per finding, "
                                   "self-contained (open them from disk).  Every page that can be "
                                   "written is; exit status 2 names the findings whose pages could "
                                   "not be (or a database that cannot be read).")
    p.add_argument("dir", help="a campaign directory (tfsem fuzz --out DIR)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.campaigns.store import DB_NAME
    from tfsem.reports.campaign import UnreadableStore, write_campaign_report

    directory = Path(args.dir)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory")
    if not (directory / DB_NAME).exists():
        raise UsageError(f"{directory}: no campaign database ({DB_NAME}); run tfsem fuzz --out {directory} first")
    try:
        result = write_campaign_report(directory)
    except UnreadableStore as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{directory / 'report'}: cannot write the report: {exc.strerror or exc}") from None
    pages = result.pages
    print(f"wrote {result.index} and {pages} finding page{'s' if pages != 1 else ''}")
    if result.failed:
        # the database holds something the report cannot read: bad input, named
        print(f"tfsem report: {len(result.failed)} page(s) not written:", file=sys.stderr)
        for line in result.failed:
            print(f"  {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK
