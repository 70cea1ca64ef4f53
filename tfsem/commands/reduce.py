"""`tfsem reduce CASE -o SMALLER`: shrink a failing pair, keeping its verdict."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tfsem.cli import UsageError

from .common import make_duration

FAILING = ("unsound", "invalid")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reduce", help="shrink a failing case (original, rewritten) to a smaller one that fails the same way",
        description="Shrink CASE (a tfsem.case/1 file, or ORIGINAL and REWRITTEN program files): "
                    "nodes are deleted, Var nodes and variables shared, function nodes bypassed, "
                    "control edges and outputs dropped and shapes made scalar, each edit applied "
                    "to both programs by name and kept when `tfsem check` still gives the same "
                    "verdict (unsound with the same kind of differing part, or invalid).  The "
                    "smallest case is written to SMALLER as tfsem.case/1.  Exit status like "
                    "tfsem check's, for the written case: 1 unsound or invalid; 0 when the case "
                    "does not fail (sound or no counterexample: nothing to reduce, nothing "
                    "written); 3 unknown; 2 bad input.")
    p.add_argument("original", help="a case file (tfsem.case/1), or the original program")
    p.add_argument("rewritten", nargs="?", help="the rewritten program (with an original program)")
    p.add_argument("-o", "--output", metavar="SMALLER", required=True, help="write the smaller case here")
    p.add_argument("--semantics", choices=("atomic", "decomposed"), default=None,
                   help="semantics to check under (default: the case's, else atomic)")
    p.add_argument("--observe", choices=("outputs+state", "outputs"), default=None,
                   help="what an outcome holds (default: the case's, else outputs+state)")
    p.add_argument("--budget", type=make_duration(0, 24 * 3600), default=60.0,
                   help="time for the whole reduction (default 60s); the smallest case so far "
                        "is written when it runs out")
    p.add_argument("--check-timeout", type=make_duration(0, 3600), default=5.0,
                   help="time limit of one check (default 5s); a check that runs out does not "
                        "keep its edit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.campaigns.reduce import reduce_case
    from tfsem.checking import check_case, check_rewrite
    from tfsem.oracle.jsonio import dumps, program_from_json, program_to_json
    from tfsem.oracle.program import ProgramError

    from .check import load_inputs

    case = load_inputs(args)
    semantics = args.semantics or case.semantics
    observe = args.observe or case.observe
    first = check_case(case, timeout=args.check_timeout, semantics=semantics, observe=observe)
    if first.verdict not in FAILING:
        print(first.describe())
        print(f"nothing to reduce: the case is {first.verdict}, not unsound or invalid; nothing written")
        return first.exit_status
    try:
        rewritten = program_from_json(case.rewritten_json, validate=False, where="rewritten")
    except ProgramError:
        print(first.describe())
        print("cannot reduce: the rewritten program cannot be read as a program at all; nothing written")
        return first.exit_status

    def judge(o, r) -> dict:
        return check_rewrite(o, program_to_json(r), semantics, observe, args.check_timeout).to_json()

    started = time.monotonic()
    o, r, verdict, tried = reduce_case(case.original, rewritten, judge, started + args.budget)
    out = {"format": "tfsem.case/1", "original": program_to_json(o), "rewritten": program_to_json(r),
           "semantics": semantics, "observe": observe, "expect": verdict["verdict"],
           "note": f"reduced by tfsem reduce from {args.original}"}
    try:
        Path(args.output).write_text(dumps(out) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    final = check_case(program_case(out), timeout=args.check_timeout)
    print(final.describe())
    kept = (f"verdict {final.verdict} kept" if final.verdict == first.verdict else
            f"WARNING: the written case checks {final.verdict} now, not {first.verdict} "
            "(a check ran out of time?)")
    print(f"reduced: original {len(case.original.nodes)} -> {len(o.nodes)} nodes, rewritten "
          f"{len(rewritten.nodes)} -> {len(r.nodes)} nodes; {kept} "
          f"({tried} candidates checked in {time.monotonic() - started:.1f} s)")
    print(f"written: {args.output}")
    print(f"  tfsem check {args.output}")
    return final.exit_status


def program_case(data: dict):
    from tfsem.oracle.jsonio import case_from_json
    return case_from_json(data)
