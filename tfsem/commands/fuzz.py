"""`tfsem fuzz`: a campaign over many passes, stored under DIR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfsem.cli import EXIT_FOUND, EXIT_OK, UsageError

from .common import OBSERVE, SEMANTICS, bounded_int, duration, print_json
from .fuzzing import add_fuzzing_options, add_runs_option, add_target_option, target_specs


def add_parser(sub) -> None:
    p = sub.add_parser(
        "fuzz", help="a fuzzing campaign over several passes, stored under DIR",
        description="Fuzz every registered pass (or those given with --pass) in every "
                    "(semantics, observe) cell, the budget split among them, on N worker "
                    "processes or a Dask cluster.  Findings are minimized, deduplicated and "
                    "stored in DIR/campaign.db as they are found; a later campaign on the same "
                    "DIR replays them first and reports them known or fixed.  Exit status (the "
                    "same rule as tfsem verify): 1 when a claim is contradicted (unsound where "
                    "a pass claims sound or claims nothing) or a pass crashes, hangs or returns "
                    "an invalid program; 4 when nothing contradicts a claim but a cell's "
                    "evidence is weak (a pass changed fewer than 30 programs there, or showed "
                    "fewer than 2 distinct change shapes); 0 otherwise, also when the only "
                    "findings are unsound "
                    "rewrites in cells a pass claims unsound (expected); 2 for bad usage; 130 "
                    "when interrupted.  Read the results with tfsem report DIR.")
    p.add_argument("--pass", dest="passes", action="append", default=None, metavar="PASS",
                   help="a registered pass or module:attribute (repeatable; default: all "
                        "registered, unless --target is given)")
    add_target_option(p)
    add_runs_option(p)
    p.add_argument("--budget", type=duration, required=True,
                   help="wall-clock time of the campaign, e.g. 10m, 8h")
    p.add_argument("--out", metavar="DIR", required=True, help="the campaign folder")
    p.add_argument("--workers", type=bounded_int(1, 256), default=1, help="worker processes (default 1)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="run the work on this Dask scheduler (tcp://host:8786); needs "
                        "dask[distributed]")
    add_fuzzing_options(p)
    p.add_argument("--example-db", default=None, metavar="URL",
                   help="Hypothesis example database: DIR/hypothesis (default), "
                        "redis://HOST:PORT/N or a folder on a shared file system (shared "
                        "between machines), or none")
    p.add_argument("--no-replay", action="store_true",
                   help="do not replay the stored findings first")
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.campaigns.campaign import CampaignError, CampaignSettings, run_campaign, summarize  # noqa: PLC0415
    from tfsem.campaigns.evidence import EXIT_WEAK  # noqa: PLC0415
    from tfsem.campaigns.store import StoreError  # noqa: PLC0415
    from tfsem.campaigns.targets import CELLS, PassNotFound, registered_passes  # noqa: PLC0415

    from .fuzzing import check_plugin_specs
    check_plugin_specs(args)
    targets, pass_generators = target_specs(args.targets, args.generator)
    passes = [*(args.passes or []), *targets] or registered_passes()
    if not passes:
        raise UsageError("no registered passes; give --pass PASS (a name or module:attribute)")
    sems = args.semantics or list(SEMANTICS)
    obss = args.observe or list(OBSERVE)
    cells = [c for c in CELLS if c[0] in sems and c[1] in obss]
    # session passes (the critical-section passes) are judged on generated
    # sessions, not in the program campaign: their share of the budget
    from .verify import _session_pass  # noqa: PLC0415
    session_passes = [p for p in (_session_pass(x) for x in dict.fromkeys(passes)) if p]
    passes = [x for x in passes if _session_pass(x) is None]
    session_status = EXIT_OK
    if session_passes:
        share = args.budget * len(session_passes) / (len(session_passes) + len(passes))
        session_status = _fuzz_session_passes(args, session_passes, share, sems)
        args.budget -= share
        if not passes:
            return session_status
    settings = CampaignSettings(
        passes=list(dict.fromkeys(passes)), budget=args.budget, out=str(Path(args.out)),
        workers=args.workers, cells=cells, seed=args.seed, max_nodes=args.max_nodes,
        pass_timeout=args.pass_timeout, check_timeout=args.check_timeout, checker=args.checker,
        generator=args.generator, dask=args.dask, example_db=args.example_db,
        replay=not args.no_replay, runtime_runs=args.runs, pass_generators=pass_generators)
    try:
        result = run_campaign(settings)
    except (PassNotFound, CampaignError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json({"campaign": result.campaign_id, "status": result.status,
                    "seconds": round(result.seconds, 3), "database": str(Path(args.out) / "campaign.db"),
                    "passes": result.totals, "cells": result.cells,
                    "groups": [{"group": g["group"], "representative": g["representative"]["id"],
                                "members": g["members"], "pass": g["pass"], "kind": g["kind"],
                                "expected": g["kind"] == "unsound" and g["claim"] == "unsound"}
                               for g in result.groups],
                    "new": [_brief(f) for f in result.new], "known": [_brief(f) for f in result.known],
                    "fixed": [_brief(f) for f in result.fixed], "errors": result.errors,
                    "weak": result.weak})
    else:
        summarize(result, Path(args.out), sys.stdout)
    if result.status == "interrupted":
        return 130
    if result.status == "incomplete":   # a worker died: the run did not do what it said
        return EXIT_FOUND
    if result.bugs or session_status == EXIT_FOUND:
        return EXIT_FOUND
    return EXIT_WEAK if result.weak or session_status == EXIT_WEAK else EXIT_OK


def _fuzz_session_passes(args: argparse.Namespace, passes: list, budget: float,
                         sems: list[str]) -> int:
    """The session passes of a campaign (campaigns/session_passes.py): their
    findings written under DIR/sessions/ as session files with the rewritten
    program (`tfsem check SESSION REWRITTEN` reproduces each); the summary
    printed (to stderr with --json); the exit status of their claims."""
    from tfsem.campaigns.evidence import EXIT_WEAK  # noqa: PLC0415
    from tfsem.campaigns.session_passes import (report_lines, verify_session_pass,  # noqa: PLC0415
                                                write_findings)
    stream = sys.stderr if args.json else sys.stdout
    status = EXIT_OK
    for p in passes:
        cells = [c for c in p.session_claims if c[0] in sems]
        result = verify_session_pass(p, budget / len(passes), cells, seed_value=args.seed or 0)
        paths = write_findings(result, Path(args.out) / "sessions")
        for line in report_lines(result, paths):
            print(line, file=stream)
        print(file=stream)
        if result.contradicted:
            status = EXIT_FOUND
        elif result.weak and status == EXIT_OK:
            status = EXIT_WEAK
    return status


def _brief(f: dict) -> dict:
    return {k: f[k] for k in ("id", "signature", "pass", "kind", "semantics", "observe", "claim",
                              "message", "nodes", "times_seen", "status", "first_seen", "last_seen")}
