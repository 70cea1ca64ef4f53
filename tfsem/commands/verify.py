"""`tfsem verify PASS`: fuzz one pass and report minimized counterexamples."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from typing import TYPE_CHECKING

from tfsem.cli import EXIT_FOUND, EXIT_OK, UsageError

from .common import OBSERVE, SEMANTICS, duration, print_json
from .fuzzing import add_fuzzing_options, add_runs_option, add_target_option, target_specs

if TYPE_CHECKING:
    from tfsem.campaigns.findings import FindingRecord
    from tfsem.campaigns.verify import Found, VerifyResult


def _load() -> None:
    """Import what a verification needs into this module, once: campaigns and
    Hypothesis are not imported for `tfsem verify --help`."""
    g = globals()
    if "verify_pass" in g:
        return
    from tfsem.campaigns.evidence import EXIT_WEAK, WEAK_ADVICE  # noqa: PLC0415
    from tfsem.campaigns.progress import Progress  # noqa: PLC0415
    from tfsem.campaigns.signature import group_key  # noqa: PLC0415
    from tfsem.campaigns.targets import CELLS, PassNotFound, cell_label, resolve_pass  # noqa: PLC0415
    from tfsem.campaigns.text import (counted, effort_text, finding_lines,  # noqa: PLC0415
                                      rarely_changes_warning)
    from tfsem.campaigns.verify import CONTRADICTED, verify_pass  # noqa: PLC0415
    from tfsem.oracle.jsonio import dumps  # noqa: PLC0415
    g.update(Progress=Progress, group_key=group_key, CELLS=CELLS, PassNotFound=PassNotFound,
             cell_label=cell_label, resolve_pass=resolve_pass, counted=counted,
             effort_text=effort_text, finding_lines=finding_lines,
             rarely_changes_warning=rarely_changes_warning, CONTRADICTED=CONTRADICTED,
             dumps=dumps, verify_pass=verify_pass, EXIT_WEAK=EXIT_WEAK, WEAK_ADVICE=WEAK_ADVICE)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "verify", help="fuzz one rewrite pass and report minimized counterexamples",
        description="Fuzz PASS (a registered name or module:attribute) on generated programs: "
                    "each rewrite is checked for validity and soundness, and each finding "
                    "(unsound, invalid, crash, timeout) is shrunk to a minimal program and "
                    "printed with a reproducer.  Without --semantics/--observe every cell is "
                    "fuzzed, the budget split among them, and the pass's claims are judged.  "
                    "Exit status (the same rule as tfsem fuzz): 1 when a claim is contradicted "
                    "(unsound where the pass claims sound or claims nothing) or the pass "
                    "crashes, hangs or returns an invalid program; 4 when nothing contradicts "
                    "the claims but a cell's evidence is weak (the pass changed fewer than 30 "
                    "programs there, or showed fewer than 2 distinct change shapes); 0 "
                    "otherwise, also when "
                    "the only findings are unsound rewrites in cells the pass claims unsound "
                    "(expected); 2 for bad usage.  Progress goes to stderr: a live status "
                    "line on a terminal, a line every --status-every otherwise.")
    p.add_argument("pass_name", metavar="PASS", nargs="?", default=None,
                   help="a registered pass or module:attribute (or give --target)")
    p.add_argument("--pass", dest="pass_option", metavar="PASS", default=None,
                   help="the same as PASS, written as tfsem fuzz takes it")
    add_target_option(p, repeatable=False)
    add_runs_option(p)
    p.add_argument("--budget", type=duration, default=60.0,
                   help="fuzzing time, e.g. 60s, 5m (default 60s); shrinking the last "
                        "findings may take up to a quarter more")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write reproducers here (default: a new temporary folder)")
    add_fuzzing_options(p)
    p.add_argument("--status-every", type=duration, default=30.0, metavar="DURATION",
                   help="when stderr is not a terminal, print a progress line this often "
                        "(default 30s)")
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
    p.set_defaults(run=run)


def _cells(args: argparse.Namespace) -> list[tuple[str, str]]:
    _load()
    sems = args.semantics or list(SEMANTICS)
    obss = args.observe or list(OBSERVE)
    return [c for c in CELLS if c[0] in sems and c[1] in obss]


def _write_reproducer(found: Found, index: int, out: Path, pass_spec: str) -> tuple[str, str]:
    """Write the case (or, for crash and timeout, the program) and return
    (path, command)."""
    _load()
    r = found.record
    runtime = (r.verdict or {}).get("runtime")
    if isinstance(runtime, dict):   # a runtime target: the program, run again on TensorFlow
        import shlex
        path = out / f"finding-{index}-{r.kind}.program.json"
        path.write_text(dumps(r.original) + "\n")
        sigma = " ".join([*(f"--feed {shlex.quote(f'{k}={dumps(v)}')}" for k, v in sorted(r.feeds.items())),
                          *(f"--init {shlex.quote(f'{k}={dumps(v)}')}" for k, v in sorted(r.init.items()))])
        backend = "xla" if runtime.get("target") == "xla" else "tensorflow"
        return str(path), f"tfsem run {path} --backend {backend} --runs {runtime.get('runs', 20)} {sigma}".rstrip()
    case = r.case()
    if case is not None:
        path = out / f"finding-{index}-{r.kind}.case.json"
        path.write_text(dumps(case) + "\n")
        return str(path), f"tfsem check {path}"
    path = out / f"finding-{index}-{r.kind}.program.json"
    path.write_text(dumps(r.original) + "\n")
    return str(path), f"tfsem rewrite {pass_spec} {path}"


def _headline(index: int, r: FindingRecord) -> str:
    _load()
    if r.contradicts_claim:
        why = ("BUG: the pass claims sound here" if r.claim == "sound"
               else "BUG" if r.kind != "unsound" else "the pass makes no claim here")
    else:
        why = "expected: the pass claims unsound here"
    cell = f" [{r.semantics}, {r.observe}]" if r.kind == "unsound" else ""
    message = r.message
    if cell and message.endswith(f" ({r.semantics}, {r.observe})"):
        # the stored message names the cell already; say it once, up front
        message = message[: -len(f" ({r.semantics}, {r.observe})")]
    return f"finding {index}: {r.kind}{cell}: {message} ({why})"


def run(args: argparse.Namespace) -> int:
    _load()
    from .fuzzing import check_plugin_specs
    check_plugin_specs(args)
    cells = _cells(args)
    if not cells:
        raise UsageError("no (semantics, observe) cell selected")
    if args.pass_option is not None:
        if args.pass_name is not None and args.pass_name != args.pass_option:
            raise UsageError(f"two passes given ({args.pass_name!r} and --pass {args.pass_option!r}): "
                             "tfsem verify fuzzes one pass (tfsem fuzz takes several)")
        args.pass_name = args.pass_option
    if (args.pass_name is None) == (args.targets is None):
        raise UsageError("give a PASS or --target TARGET (one of them)")
    if args.targets is not None:
        (args.pass_name,), generators = target_specs([args.targets], args.generator)
        args.generator = generators.get(args.pass_name, args.generator)
    session_pass = _session_pass(args.pass_name)
    if session_pass is not None:
        return _verify_session_pass(args, session_pass)
    try:  # a pass that does not exist is bad usage, said before any plan is printed
        target = resolve_pass(args.pass_name)
    except PassNotFound as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tfsem-verify-"))
    out.mkdir(parents=True, exist_ok=True)
    stream = sys.stderr if args.json else sys.stdout

    print(f"verifying {args.targets or args.pass_name} for {args.budget:g} s in "
          f"{', '.join(cell_label(c) for c in cells)}", file=stream, flush=True)
    status = Progress([target.name], args.budget, 1, stream=sys.stderr, interval=None
                      if sys.stderr.isatty() else args.status_every, title=f"tfsem verify")

    def on_finding(found: Found, is_new: bool) -> None:
        r = found.record
        status.finding(r.pass_name, r.kind, "new" if is_new else "repeat", r.message, r.size,
                       0, expected=not r.contradicts_claim)

    def on_stats(cell: tuple[str, str], delta: dict) -> None:
        status.stats(target.name, delta)
        status.draw()

    def on_cell(cell: tuple[str, str], seconds: float) -> None:
        status.note(f"fuzzing {cell_label(cell)} for {seconds:.0f} s")

    try:
        result = verify_pass(args.pass_name, args.budget, cells, seed=args.seed,
                             max_nodes=args.max_nodes, pass_timeout=args.pass_timeout,
                             check_timeout=args.check_timeout, checker=args.checker,
                             generator=args.generator, on_finding=on_finding, on_stats=on_stats,
                             on_cell=on_cell, runtime_runs=args.runs)
    except PassNotFound as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:  # a bad --checker
        raise UsageError(str(exc)) from None
    finally:
        status.close()
    spec = args.pass_name
    repro = [_write_reproducer(f, i, out, spec) for i, f in enumerate(result.findings, 1)]
    if args.json:
        print_json(_to_json(result, repro, out))
    else:
        _print_text(result, repro)
    if result.exit_found:
        return EXIT_FOUND
    return EXIT_WEAK if result.weak else EXIT_OK


def _print_text(result: VerifyResult, repro: list[tuple[str, str]]) -> None:
    _load()
    t = result.target
    programs = sum(c.stats.programs for c in result.cells)
    groups: dict[str, list[tuple[int, Found, str, str]]] = {}
    for i, (found, (path, command)) in enumerate(zip(result.findings, repro), 1):
        groups.setdefault(group_key(found.record), []).append((i, found, path, command))
    n = len(groups)
    print(f"{t.name}: {programs} programs in {result.seconds:.1f} s, "
          f"{n} distinct finding{'s' if n != 1 else ''}"
          + (f" ({counted(len(result.findings), 'program')})" if len(result.findings) != n else ""))
    for members in groups.values():
        members.sort(key=lambda m: (m[1].record.size, len(dumps(m[1].record.original)), m[0]))
        i, found, path, command = members[0]
        print()
        print(_headline(i, found.record))
        for line in _runtime_lines(found.record) or finding_lines(found.record):
            print(line)
        print(f"  found after {found.first_after:.1f} s, "
              f"{sum(m[1].times for m in members)} time{'s' if found.times != 1 or len(members) > 1 else ''}")
        print(f"  reproducer: {path}")
        print(f"    {command}")
        if len(members) > 1:
            k = len(members) - 1
            print(f"  {k} other program{'s fail' if k > 1 else ' fails'} the same way:")
            for _, other, other_path, _ in members[1:]:
                print(f"    {other_path} ({other.record.size} nodes)")
    print()
    print("claims:")
    for c in result.cells:
        claim = c.claim or "no claim"
        note = effort_text(c.stats.to_json()) + f", {counted(c.stats.shapes, 'change shape')}, {c.stats.seconds:.1f} s"
        if c.stats.last_error and (c.stats.checker_errors or c.stats.generator_errors):
            note += f"; last error: {c.stats.last_error}"
        flag = "  <- BUG" if c.judgement == CONTRADICTED else ""
        weak = "  <- WEAK EVIDENCE" if c.weak else ""
        print(f"  {cell_label(c.cell):<26} {claim:<8} {c.judgement}{flag} ({note}){weak}")
    total = {k: sum(getattr(c.stats, k) for c in result.cells) for k in ("programs", "identical")}
    warning = rarely_changes_warning(t.name, total)
    if warning:
        print(warning)
    bugs = result.bugs
    if bugs:
        print(f"result: FAIL, {len(bugs)} "
              + ("finding contradicts the pass's claims or shows" if len(bugs) == 1
                 else "findings contradict the pass's claims or show")
              + " it crash, hang or return an invalid program (exit status 1)")
    elif result.weak:
        weak = result.weak_cells
        print(f"result: WEAK, nothing contradicts the claims, but in {len(weak)} of "
              f"{len(result.cells)} cells the pass changed too little to say so (exit status 4):")
        for c in weak:
            print(f"  {cell_label(c.cell)}: {c.weak}")
        print(f"  {WEAK_ADVICE}")
    elif result.findings:
        print("result: pass, every finding is one the pass claims (unsound where it claims "
              "unsound; exit status 0)")
    else:
        print("result: pass, nothing found (exit status 0)")


def _runtime_lines(record: FindingRecord) -> list[str]:
    """A runtime target's finding (`--target xla`) as text: the program run,
    σ, each outcome observed with its count, and the allowed set's size;
    [] for any other finding."""
    _load()
    from tfsem.campaigns.text import outcome_text, program_lines, sigma_text
    rt = (record.verdict or {}).get("runtime")
    if not isinstance(rt, dict):
        return []
    lines = [f"  program run ({record.size} nodes, its GraphDef imported back):",
             *program_lines(record.original), *sigma_text(record.feeds, record.init),
             f"  outcomes observed in {rt.get('runs')} runs:"]
    for o in rt.get("observed") or []:
        mark = "" if o.get("allowed") else f"  <- not among the {rt.get('allowed_count')} allowed outcomes"
        lines.append(f"    {o.get('runs')}x {outcome_text(o.get('outcome') or {})}{mark}")
    lines.append("  (timing decides which outcome a run gives: these counts are what was observed)")
    return lines


def _to_json(result: VerifyResult, repro: list[tuple[str, str]], out: Path) -> dict:
    _load()
    findings = []
    for i, (found, (path, command)) in enumerate(zip(result.findings, repro), 1):
        d = found.record.to_json()
        d.update({"index": i, "group": group_key(found.record), "signature": found.signature, "times": found.times,
                  "found_after": round(found.first_after, 3), "reproducer": path, "command": command,
                  "contradicts_claim": found.record.contradicts_claim})
        findings.append(d)
    return {"pass": result.target.name, "seconds": round(result.seconds, 3), "out": str(out),
            "cells": [c.to_json() for c in result.cells], "findings": findings,
            "found": result.exit_found, "weak": result.weak,
            "exit_status": 1 if result.exit_found else EXIT_WEAK if result.weak else 0}


def _session_pass(spec: str):
    """The pass named `spec` when it is a session pass (Pass.session_function:
    the critical-section passes), else None."""
    from tfsem.rewrites import get_pass  # noqa: PLC0415
    try:
        p = get_pass(spec)
    except ValueError:
        return None
    return p if getattr(p, "session_function", None) is not None else None


def _verify_session_pass(args: argparse.Namespace, p) -> int:
    """`tfsem verify` of a session pass: generated sessions of each kind its
    claims name, judged by the session semantics (campaigns/session_passes.py);
    exit 1 when a claim is contradicted, 4 when an unsound claim is not shown
    or a cell changed nothing, else 0."""
    from tfsem.campaigns.evidence import EXIT_WEAK  # noqa: PLC0415
    from tfsem.campaigns.session_passes import (report_lines, verify_session_pass,  # noqa: PLC0415
                                                write_findings)
    if args.observe:
        raise UsageError(f"{p.name} is a session pass: its claims are per semantics mode and "
                         "kind of session, not per observe setting (drop --observe)")
    sems = args.semantics or list(SEMANTICS)
    cells = [c for c in p.session_claims if c[0] in sems]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tfsem-verify-"))
    stream = sys.stderr if args.json else sys.stdout
    print(f"verifying {p.name} (a session pass) for {args.budget:g} s in {len(cells)} cells "
          "(semantics mode x kind of session)", file=stream, flush=True)
    result = verify_session_pass(p, args.budget, cells, seed_value=args.seed or 0)
    paths = write_findings(result, out)
    status = 1 if result.contradicted else EXIT_WEAK if result.weak else EXIT_OK
    if args.json:
        print_json({"pass": p.name, "session_pass": True, "out": str(out),
                    "cells": [c.to_json() for c in result.cells],
                    "reproducers": [[str(a), str(b)] for a, b in paths],
                    "exit_status": status})
    else:
        for line in report_lines(result, paths):
            print(line)
        print("result: " + ("FAIL, a claim is contradicted (exit status 1)" if status == 1 else
                            "WEAK, a claim is not shown or a cell changed nothing (exit status 4)"
                            if status == EXIT_WEAK else
                            "pass, every claim holds or is shown (exit status 0)"))
    return status
