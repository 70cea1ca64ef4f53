"""`tfsem verify PASS`: fuzz one pass and report minimized counterexamples."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tfsem.campaigns.findings import FindingRecord
from tfsem.campaigns.targets import CELLS, PassNotFound, cell_label
from tfsem.campaigns.text import finding_lines
from tfsem.campaigns.verify import CONTRADICTED, Found, VerifyResult, verify_pass
from tfsem.cli import EXIT_FOUND, EXIT_OK, UsageError
from tfsem.oracle.jsonio import OBSERVE, SEMANTICS, dumps

from .common import duration, print_json
from .fuzzing import add_fuzzing_options


def add_parser(sub) -> None:
    p = sub.add_parser(
        "verify", help="fuzz one rewrite pass and report minimized counterexamples",
        description="Fuzz PASS (a registered name or module:attribute) on generated programs: "
                    "each rewrite is checked for validity and soundness, and each finding "
                    "(unsound, invalid, crash, timeout) is shrunk to a minimal program and "
                    "printed with a reproducer.  Without --semantics/--observe every cell is "
                    "fuzzed, the budget split among them, and the pass's claims are judged.  "
                    "Exit status 1 when anything is found, 0 otherwise.")
    p.add_argument("pass_name", metavar="PASS", help="a registered pass or module:attribute")
    p.add_argument("--budget", type=duration, default=60.0,
                   help="fuzzing time, e.g. 60s, 5m (default 60s); shrinking the last "
                        "findings may take up to a quarter more")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write reproducers here (default: a new temporary folder)")
    add_fuzzing_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
    p.set_defaults(run=run)


def _cells(args: argparse.Namespace) -> list[tuple[str, str]]:
    sems = args.semantics or list(SEMANTICS)
    obss = args.observe or list(OBSERVE)
    return [c for c in CELLS if c[0] in sems and c[1] in obss]


def _write_reproducer(found: Found, index: int, out: Path, pass_spec: str) -> tuple[str, str]:
    """Write the case (or, for crash and timeout, the program) and return
    (path, command)."""
    r = found.record
    case = r.case()
    if case is not None:
        path = out / f"finding-{index}-{r.kind}.case.json"
        path.write_text(dumps(case) + "\n")
        return str(path), f"tfsem check {path}"
    path = out / f"finding-{index}-{r.kind}.program.json"
    path.write_text(dumps(r.original) + "\n")
    return str(path), f"tfsem rewrite {pass_spec} {path}"


def _headline(index: int, r: FindingRecord) -> str:
    if r.contradicts_claim:
        why = ("BUG: the pass claims sound here" if r.claim == "sound"
               else "BUG" if r.kind != "unsound" else "the pass makes no claim here")
    else:
        why = "expected: the pass claims unsound here"
    cell = f" [{r.semantics}, {r.observe}]" if r.kind == "unsound" else ""
    return f"finding {index}: {r.kind}{cell}: {r.message} ({why})"


def run(args: argparse.Namespace) -> int:
    cells = _cells(args)
    if not cells:
        raise UsageError("no (semantics, observe) cell selected")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tfsem-verify-"))
    out.mkdir(parents=True, exist_ok=True)
    stream = sys.stderr if args.json else sys.stdout

    def progress(found: Found, is_new: bool) -> None:
        if is_new and not args.json:
            print(f"... found {found.record.kind} after {found.first_after:.1f} s "
                  f"({found.record.size} nodes); shrinking and searching on", file=sys.stderr, flush=True)

    print(f"verifying {args.pass_name} for {args.budget:g} s in "
          f"{', '.join(cell_label(c) for c in cells)}", file=stream, flush=True)
    try:
        result = verify_pass(args.pass_name, args.budget, cells, seed=args.seed,
                             max_nodes=args.max_nodes, pass_timeout=args.pass_timeout,
                             check_timeout=args.check_timeout, checker=args.checker,
                             generator=args.generator, on_finding=progress)
    except PassNotFound as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:  # a bad --checker
        raise UsageError(str(exc)) from None
    spec = args.pass_name
    repro = [_write_reproducer(f, i, out, spec) for i, f in enumerate(result.findings, 1)]
    if args.json:
        print_json(_to_json(result, repro, out))
    else:
        _print_text(result, repro)
    return EXIT_FOUND if result.exit_found else EXIT_OK


def _group_key(r: FindingRecord) -> tuple:
    """Findings that fail the same way (shown once, the smallest in full)."""
    if r.kind == "unsound":
        return (r.kind, r.semantics, r.observe, tuple(r.differs or {}))
    return (r.kind, r.detail.get("error_type", ""))


def _print_text(result: VerifyResult, repro: list[tuple[str, str]]) -> None:
    t = result.target
    programs = sum(c.stats.programs for c in result.cells)
    print(f"{t.name}: {programs} programs in {result.seconds:.1f} s, "
          f"{len(result.findings)} distinct finding{'s' if len(result.findings) != 1 else ''}")
    groups: dict[tuple, list[tuple[int, Found, str, str]]] = {}
    for i, (found, (path, command)) in enumerate(zip(result.findings, repro), 1):
        groups.setdefault(_group_key(found.record), []).append((i, found, path, command))
    for members in groups.values():
        members.sort(key=lambda m: (m[1].record.size, m[0]))
        i, found, path, command = members[0]
        print()
        print(_headline(i, found.record))
        for line in finding_lines(found.record):
            print(line)
        print(f"  found after {found.first_after:.1f} s, {found.times} time{'s' if found.times != 1 else ''}")
        print(f"  reproducer: {path}")
        print(f"    {command}")
        if len(members) > 1:
            n = len(members) - 1
            print(f"  {n} other program{'s fail' if n > 1 else ' fails'} the same way:")
            for _, other, other_path, _ in members[1:]:
                print(f"    {other_path} ({other.record.size} nodes)")
    print()
    print("claims:")
    for c in result.cells:
        claim = c.claim or "no claim"
        note = f"{c.stats.programs} programs, {c.stats.seconds:.1f} s"
        if c.stats.unknown:
            note += f", {c.stats.unknown} unknown"
        if c.stats.checker_errors or c.stats.generator_errors:
            note += f", errors: {c.stats.last_error}"
        flag = "  <- BUG" if c.judgement == CONTRADICTED else ""
        print(f"  {cell_label(c.cell):<26} {claim:<8} {c.judgement}{flag} ({note})")


def _to_json(result: VerifyResult, repro: list[tuple[str, str]], out: Path) -> dict:
    findings = []
    for i, (found, (path, command)) in enumerate(zip(result.findings, repro), 1):
        d = found.record.to_json()
        d.update({"index": i, "signature": found.signature, "times": found.times,
                  "found_after": round(found.first_after, 3), "reproducer": path, "command": command,
                  "contradicts_claim": found.record.contradicts_claim})
        findings.append(d)
    return {"pass": result.target.name, "seconds": round(result.seconds, 3), "out": str(out),
            "cells": [c.to_json() for c in result.cells], "findings": findings,
            "found": result.exit_found}
