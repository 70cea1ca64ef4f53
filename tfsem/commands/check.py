"""`tfsem check ORIGINAL REWRITTEN` or `tfsem check CASE`: is the rewrite sound?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfsem.cli import EXIT_BAD_INPUT, UsageError

from .common import CASE_FORMAT, CHECK_TIMEOUT as DEFAULT_TIMEOUT, OBSERVE, SEMANTICS
from .common import StageTimeout, add_float_option, add_graph_options, call_within, dumps_within
from .common import json_text, make_duration, print_json, verdict_json_within

# the checker (z3, the symbolic oracle) and the program model (numpy) are
# imported when a check runs, not for `tfsem check --help`
#: a program of at most this many nodes is listed node by node after the
#: verdict; a larger one is summarized (nodes, variables, feeds, outputs)
LIST_NODES = 24


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="is a rewrite sound? (a proof, or a counterexample that reproduces)",
        description="Check that REWRITTEN is a sound rewrite of ORIGINAL (docs/verdicts.md): "
                    "for every σ, its outcomes are among the original's.  With one file, "
                    "check a tfsem.case/1 case (its semantics and observe apply unless "
                    "given).  Exit status: 0 sound or no-counterexample, 1 unsound or "
                    "invalid, 2 bad input, 3 unknown.")
    p.add_argument("original", help="the original program (tfsem.program/1), or a case file")
    p.add_argument("rewritten", nargs="?", help="the rewritten program (tfsem.program/1)")
    add_graph_options(p)
    p.add_argument("--semantics", choices=SEMANTICS, default=None,
                   help="atomic (the default: Assign is one step) or decomposed (Assign is a read and a write)")
    p.add_argument("--observe", choices=OBSERVE, default=None,
                   help="what an outcome holds (default outputs+state)")
    add_float_option(p)
    p.add_argument("--timeout", type=make_duration(), default=DEFAULT_TIMEOUT,
                   help=f"time budget of the whole command in seconds (default "
                        f"{DEFAULT_TIMEOUT:g}), from the process's start to the report's last "
                        "byte: reading the graphs, the check, the replay on TensorFlow and the "
                        "report (docs/budgets.md); running out gives `unknown` or "
                        "`no-counterexample`, or a report cut short that says so, never a hang")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="FILE", default=None,
                   help="also write the verdict as an HTML page to FILE")
    p.add_argument("--no-tensorflow", dest="tensorflow", action="store_false",
                   help="do not replay an unsound verdict's counterexample on TensorFlow "
                        "(by default it is replayed when TensorFlow is installed: "
                        "docs/tensorflow-validation.md)")
    p.add_argument("--verbose", action="store_true",
                   help="let TensorFlow print its own log lines (silenced by default)")
    p.set_defaults(run=run)


def load_inputs(args: argparse.Namespace):
    """The case to check: a case file, or two program files."""
    from tfsem.graphdef import is_graph_path  # noqa: PLC0415
    from tfsem.graphdef.cliopts import load_from_args  # noqa: PLC0415
    from tfsem.oracle.jsonio import Case, case_from_json, program_to_json, read_json_file  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415
    if args.rewritten is None:
        data = read_json_file(args.original)
        if not isinstance(data, dict) or data.get("format") != CASE_FORMAT:
            raise UsageError(f"{args.original}: with one file, it must be a case "
                             f"({CASE_FORMAT}); give ORIGINAL and REWRITTEN programs otherwise")
        return case_from_json(data, where=str(args.original))
    if any(str(f).lower().endswith(".mlir") for f in (args.original, args.rewritten)):
        from .mlir import load_case  # noqa: PLC0415
        return load_case(args)
    try:
        original = load_from_args(args.original, args, lenient=is_graph_path(args.rewritten))
    except ProgramError as exc:  # name the file: the violations name only nodes
        raise UsageError(f"{args.original}: invalid original program:\n"
                         + "\n".join(f"  {v}" for v in exc.violations)) from None
    if getattr(args, "session", None) is not None:
        return session_case(args, original)
    if is_graph_path(args.rewritten):
        try:
            return Case(original, program_to_json(load_from_args(args.rewritten, args)))
        except ProgramError as exc:
            raise UsageError(f"{args.rewritten}: invalid rewritten graph:\n"
                             + "\n".join(f"  {v}" for v in exc.violations)) from None
    rewritten = read_json_file(args.rewritten)
    if isinstance(rewritten, dict) and rewritten.get("format") == CASE_FORMAT:
        raise UsageError(f"{args.rewritten}: this is a case file (tfsem.case/1), not a program")
    return Case(original, rewritten)


class InvalidRewrite(Exception):
    """The rewrite of a session's graph cannot run the session's runs (an
    output a run fetches or a node it needs is gone): an `invalid` verdict."""


def session_case(args: argparse.Namespace, original):
    """`check SESSION REWRITTEN`: REWRITTEN (a program, or a graph) is a
    rewrite of the session's graph; the case is the session expanded (its
    runs over the graph) against the same runs over the rewrite
    (docs/sessions.md)."""
    from tfsem.graphdef import is_graph_path  # noqa: PLC0415
    from tfsem.graphdef.cliopts import session_graph_loader  # noqa: PLC0415
    from tfsem.oracle.jsonio import (Case, program_from_json, program_to_json,  # noqa: PLC0415
                                     read_json_file)
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415
    from tfsem.oracle.session import SessionError, is_session, session_from_json  # noqa: PLC0415
    session = args.session
    if is_graph_path(args.rewritten):
        raw = dict(session.raw)
        graph = dict(raw["program"]) if isinstance(raw.get("program"), dict) and \
            "graph" in raw["program"] else {}
        graph["graph"] = str(Path(args.rewritten).resolve())
        raw["program"] = graph
        try:
            s2 = session_from_json(raw, where=str(args.rewritten),
                                   load_graph=session_graph_loader(getattr(args, "import_deadline", None)))
        except SessionError as exc:
            raise InvalidRewrite("; ".join(str(v) for v in exc.violations)) from None
        except ProgramError as exc:
            raise UsageError(f"{args.rewritten}: invalid rewritten graph:\n"
                             + "\n".join(f"  {v}" for v in exc.violations)) from None
        return Case(original, program_to_json(s2.expand()))
    data = read_json_file(args.rewritten)
    if is_session(data):
        raise UsageError(f"{args.rewritten}: this is a session; the rewritten side is the "
                         "rewrite of the session's graph (a program or a graph)")
    try:
        rewritten = program_from_json(data, where=str(args.rewritten))
    except ProgramError:
        return Case(original, data)  # an invalid rewrite: the checker says why
    try:
        return Case(original, program_to_json(session.expand(rewritten)))
    except SessionError as exc:
        raise InvalidRewrite("; ".join(str(v) for v in exc.violations)) from None


def program_text(label: str, program: object) -> list[str]:
    """The lines that show one program of the check after its verdict: every
    node (`name = Op[attrs](inputs)`) when it has at most LIST_NODES, else a
    summary; a rewritten program that is not one (an `invalid` case) says so."""
    from tfsem.campaigns.text import counted, program_lines  # noqa: PLC0415
    nodes = program.get("nodes") if isinstance(program, dict) else None
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        return [f"  {label}: not a program (see the verdict)"]
    if len(nodes) <= LIST_NODES:
        try:
            return [f"  {label} ({counted(len(nodes), 'node')}):", *program_lines(program)]
        except (AttributeError, TypeError, ValueError):
            pass  # a malformed rewrite: summarized below
    variables = program.get("variables") or []
    feeds = program.get("feeds") or []
    outputs = program.get("outputs") or {}
    outs = ", ".join(list(outputs)[:6]) + (", ..." if len(outputs) > 6 else "") \
        if isinstance(outputs, dict) else "?"
    return [f"  {label}: {counted(len(nodes), 'node')}, "
            f"{counted(len(variables) if isinstance(variables, (list, dict)) else 0, 'variable')}, "
            f"{counted(len(feeds) if isinstance(feeds, (list, dict)) else 0, 'feed')}; "
            f"outputs {outs or '(none)'} (listed up to {LIST_NODES} nodes: "
            "`tfsem outcomes` or `--json` for the rest)"]


def _early_verdict(args: argparse.Namespace, verdict_name: str, reason: str,
                   report: "_Report | None" = None) -> int:
    """Print a verdict reached before any check ran (the inputs decided it)."""
    from tfsem.checking.verdict import Verdict  # noqa: PLC0415
    verdict = Verdict(verdict_name, reason=reason, semantics=args.semantics or "atomic",
                      observe=args.observe or "outputs+state", float_mode=args.float_mode)
    if report is not None and not report.claim():
        _hold()     # the watchdog is writing the report, and ends the process
    if args.json:
        print_json(verdict.to_json())
    else:
        print(verdict.describe())
    if getattr(args, "html", None):
        # (no programs to draw: the page gives the verdict and says why)
        try:
            write_pages([(Path(args.html), cut_page(
                verdict.to_json(), args.timeout,
                "The verdict came before the programs could be drawn: it holds the verdict "
                "alone."))])
        except OSError as exc:
            print(f"tfsem check: cannot write {args.html}: {exc.strerror or exc}",
                  file=sys.stderr)
            return _finish(args, EXIT_BAD_INPUT)
    return _finish(args, verdict.exit_status)


# How `tfsem check --timeout T` spends its budget (docs/budgets.md): one
# clock from before the first byte of a graph is read; reading and importing
# the graphs, the check and the replay on TensorFlow of an `unsound` come out
# of it, less REPORT_SHARE of it kept back for the report.  The report (the
# verdict's text or JSON, the --html page) is made against the clock: what
# is not made REPORT_TAIL seconds before T is left out, and says so.  Run as
# a process of its own, a watchdog writes the report at T from what is done
# when the command has not (a stage that overran its share), and ends it.
#: the part of the budget kept back for the report
REPORT_SHARE = 0.05
#: ... but at least this many seconds, at most this many, and at most a quarter of it
REPORT_MIN, REPORT_MAX = 0.1, 5.0
#: the full --html page gets at most this share of what is left for it; the
#: page of the verdict alone (without its counterexample) the rest
HTML_SHARE = 0.75


def report_reserve(seconds: float) -> float:
    """The seconds of `tfsem check`'s budget of `seconds` kept back for its report."""
    return min(max(seconds * REPORT_SHARE, REPORT_MIN), REPORT_MAX, seconds / 4)


def run(args: argparse.Namespace) -> int:
    from tfsem.checking import check_case  # noqa: PLC0415
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.graphdef.cliopts import start_budget  # noqa: PLC0415
    from tfsem.oracle.functions import CannotRun  # noqa: PLC0415

    from .common import Deadline  # noqa: PLC0415
    # the budget covers reading and importing graphs too; run as `tfsem
    # check`, from the process's start (its interpreter's start-up and
    # tfsem's imports count too, as `tfsem grappler`'s); a call from Python
    # starts it now
    started = start_budget(args, args.timeout)
    deadline = (Deadline.of_process(args.timeout) if getattr(args, "whole_process", False)
                else Deadline(args.timeout, started))
    reserve = report_reserve(args.timeout)
    args.import_deadline = deadline.at - reserve
    report = _Report(args, deadline)
    progress: dict = {"stage": "reading and importing the graphs"}
    if deadline.expired():
        progress["stage"] = (f"the process's start and tfsem's imports ({deadline.elapsed():.2f} "
                             "s), before the graphs were read")
    watchdog = None
    if getattr(args, "whole_process", False):
        # past the budget, whatever stage runs (a checker stage past its
        # share, TensorFlow's kernels), the watchdog writes the report from
        # what is done and ends the process
        watchdog = _Watchdog(report, progress)
        watchdog.start()
    try:
        if getattr(args, "rewritten", None) is not None:
            from .blocking_sessions import blocking_session  # noqa: PLC0415
            try:
                session = blocking_session(args.original, args)
            except ImportTimeout as exc:  # the session's graph too slow to import
                return _early_verdict(args, "unknown", f"{exc} (the time budget of "
                                      f"{args.timeout:g} s covers reading and importing the "
                                      "graphs)", report)
            if session is not None:  # critical sections or queues: enumerated, never proved
                from .blocking_sessions import check as blocking_check  # noqa: PLC0415
                from .blocking_sessions import watchdog_report as blocking_report  # noqa: PLC0415
                progress["write"] = blocking_report   # its verdicts' own form
                return blocking_check(args, session, deadline, reserve, report, progress)
        return _run(args, check_case, ImportTimeout, CannotRun, deadline, reserve, report,
                    progress)
    finally:
        if watchdog is not None:
            watchdog.stop()


def _run(args, check_case, ImportTimeout, CannotRun, deadline, reserve, report,  # noqa: N803
         progress) -> int:
    try:
        case = load_inputs(args)
    except InvalidRewrite as exc:
        return _early_verdict(args, "invalid", f"the rewrite cannot run the session's runs: {exc}",
                              report)
    except ImportTimeout as exc:  # a graph too slow to import: no verdict
        return _early_verdict(args, "unknown", f"{exc} (the time budget of {args.timeout:g} s "
                                               "covers reading and importing the graphs)", report)
    render = None
    if args.html:
        try:
            from tfsem.reports.finding import render_finding_page as render
        except ImportError as exc:
            print(f"tfsem check: --html needs tfsem.reports.finding ({exc})", file=sys.stderr)
            return EXIT_BAD_INPUT
    progress["stage"] = "the check"
    try:
        verdict = check_case(case, timeout=max(deadline.left() - reserve, 1e-3),
                             semantics=args.semantics, observe=args.observe,
                             float_mode=args.float_mode)
    except CannotRun as exc:  # an op with no concrete model (graph import): no verdict
        from tfsem.checking.verdict import Verdict
        verdict = Verdict("unknown", reason=exc.naming_nodes(case.original),
                          semantics=args.semantics or case.semantics,
                          observe=args.observe or case.observe, float_mode=args.float_mode)
    progress.update(verdict=verdict, stage="the report")
    # the report's writing ends REPORT_TAIL before the budget does (what a
    # cut document takes to free, and the process to end)
    from .grappler import REPORT_TAIL  # noqa: PLC0415
    end = type(deadline)(deadline.seconds, deadline.started, at=deadline.at - REPORT_TAIL)
    if not args.json:
        # the verdict first, then the programs, then (announced) the replay:
        # TensorFlow's import takes seconds, the verdict is already known
        lines = verdict_lines(case, verdict, end)
        if replay_pending(verdict, args):
            lines.append("  replaying the counterexample on TensorFlow (--no-tensorflow skips "
                         "this) ...")
        if not report.print_head(lines):
            _hold()
    # the replay on TensorFlow (its import included) in what is left of the
    # budget less the report's reserve: past it, not replayed, and the
    # replay says so (docs/budgets.md)
    progress["stage"] = "the replay on TensorFlow"
    replay = replay_on_tensorflow(case, verdict, args, deadline=deadline.at - reserve)
    progress.update(replay=replay, stage="the report")
    data: dict | None = None
    if args.json or render is not None:
        from .grappler import verdict_json  # noqa: PLC0415
        made = verdict_json(verdict, end)   # the counterexample's JSON: seconds on a large graph
        data = made["verdict"]
        if "report_cut" in made:
            data["report_cut"] = made["report_cut"]
        if verdict.verdict == "unsound":
            data["tensorflow_replay"] = replay
    # --json's document first (what the command prints), then the page in
    # what is left (MobileNetV2's: 136 MB of JSON in 5 s, 2 x 123 MB of
    # pages in 22 s)
    text = None
    if args.json:
        text = verdict_json_within(data, end)
    pages: list = []
    if render is not None:
        pages, why = html_pages(render, Path(args.html), case, data, end, args.timeout)
        if why is not None:
            data["html_cut"] = why
            if args.json:   # (added to the document made already, as its last key)
                text = text[:text.rindex("\n}")] + f',\n  "html_cut": {json_text(why)}\n}}'
    if not report.claim():
        _hold()
    if args.json:
        sys.stdout.write(text + "\n")
    else:
        if replay is not None and replay["status"] != "skipped":
            print(f"  {replay['text']}")
            if "tensorflow" in verdict.confirmed:  # the verdict's line, brought up to date
                print(f"  confirmed on: {', '.join(verdict.confirmed)}")
        if data is not None and data.get("html_cut"):
            print(f"  (--html {args.html}: {data['html_cut']})")
    try:
        write_pages(pages)  # FILE, and FILE-steps.html for a run
    except OSError as exc:
        print(f"tfsem check: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
        return _finish(args, EXIT_BAD_INPUT)
    # the process ends with its report: not when TensorFlow's import (a
    # replay left behind) or its teardown (2-3 s) is done
    return _finish(args, verdict.exit_status)


#: what the --html page says when its drawing was left out
HTML_CUT = ("the time budget ran out while the page was drawn: it holds the verdict alone; "
            "a longer --timeout draws it")


def verdict_lines(case, verdict, end) -> list[str]:
    """The verdict's text lines (the verdict and its kind of difference, the
    difference in the user's terms, the rest of the verdict, the programs),
    made within `end` (a common.Deadline, at least 0.05 s): past it, the
    verdict's lines without the counterexample, and a line saying so (a
    large graph's counterexample takes seconds to write: MobileNetV2's is
    0.9 MB)."""
    import dataclasses  # noqa: PLC0415

    from .grappler import MIN_STAGE, TEXT_CUT  # noqa: PLC0415

    def full() -> list[str]:
        from tfsem.oracle.jsonio import program_to_json  # noqa: PLC0415
        from tfsem.reports.terms import difference_text  # noqa: PLC0415
        head, *rest = verdict.describe().split("\n")
        kind = [rest.pop(0)] if rest and rest[0].startswith("  kind:") else []
        return [head, *kind, *(f"  {t}" for t in difference_text(case, verdict.to_json())),
                *rest, *program_text("original program", program_to_json(case.original)),
                *program_text("rewritten program", case.rewritten_json)]

    try:
        return call_within(max(end.left(), MIN_STAGE), full)
    except StageTimeout:
        short = dataclasses.replace(verdict, counterexample=None)
        return [*short.describe().split("\n"), TEXT_CUT]


def html_pages(render, path: Path, case, data: dict, end, seconds: float):
    """The --html page (and FILE-steps.html for a counterexample) as
    (path, text) pairs made within `end`, and None; or, past it, the page
    of the verdict alone (without its counterexample), or failing that in
    time a page that says so, with the reason (HTML_CUT).  Nothing is
    written here: `write_pages` writes them."""
    from .grappler import MIN_STAGE  # noqa: PLC0415

    def full() -> list:
        pages = []
        steps_href = None
        cx = data.get("counterexample")
        if data.get("verdict") == "unsound" and isinstance(cx, dict):
            steps = path.with_name((path.stem or "case") + "-steps.html")
            pages.append((steps, render(case, data, steps="all")))
            steps_href = steps.name
        return [(path, render(case, data, steps_href=steps_href)), *pages]

    if "report_cut" not in data:
        try:
            return call_within(max(end.left() * HTML_SHARE, MIN_STAGE), full), None
        except StageTimeout:
            pass
    short = {k: v for k, v in data.items() if k != "counterexample"}
    try:
        return [(path, call_within(max(end.left(), MIN_STAGE), render, case, short))], HTML_CUT
    except StageTimeout:
        return [(path, cut_page(short, seconds))], HTML_CUT


def cut_page(data: dict, seconds: float, note: str | None = None) -> str:
    """The --html page of a verdict whose drawing the time budget left out
    (or, with `note`, that has none for the reason it gives)."""
    from tfsem.reports.html import badge, esc, page  # noqa: PLC0415
    verdict = str(data.get("verdict", "unknown"))
    kind = "bad" if verdict in ("unsound", "invalid") else "ok" if verdict in (
        "sound", "no-counterexample") else "warn"
    body = (f"<main>\n<h1>{badge(verdict.upper(), kind)} tfsem check</h1>\n"
            f"<p>{esc(data.get('reason', ''))}</p>\n"
            + (f'<div class="warning problems">{esc(note)}</div>\n</main>' if note else
               f'<div class="warning problems">The time budget of {seconds:g} s ran out '
               "while this page was drawn: it holds the verdict alone (no drawing, no "
               "counterexample). <code>tfsem check --json</code> or a longer "
               "<code>--timeout</code> gives the rest.</div>\n</main>"))
    return page(f"tfsem check: {verdict}", body)


def write_pages(pages: list) -> None:
    """Write each (path, text): to a file beside it, then renamed over it, so
    that a page is whole or not there (the process may end at its budget)."""
    import os  # noqa: PLC0415
    for path, text in pages:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()


def _hold() -> None:
    from .grappler import _hold as hold  # noqa: PLC0415
    hold()


def _finish(args: argparse.Namespace, status: int) -> int:
    from .grappler import _finish as finish  # noqa: PLC0415
    return finish(args, status)


class _Report:
    """`tfsem check`'s output, written once: by the command, or by its
    _Watchdog when the budget is over first.  The text's first lines (the
    verdict, before the replay) may be printed before the rest."""

    def __init__(self, args: argparse.Namespace, deadline):
        import threading  # noqa: PLC0415
        self.args, self.deadline = args, deadline
        self.lock = threading.Lock()
        self.claimed = False
        self.head = False

    def print_head(self, lines: list[str]) -> bool:
        with self.lock:
            if self.claimed:
                return False
            print("\n".join(lines), flush=True)
            self.head = True
            return True

    def claim(self) -> bool:
        """True once: to the writer of the report's rest."""
        with self.lock:
            if self.claimed:
                return False
            self.claimed = True
            return True


class _Watchdog:
    """At the end of `tfsem check`'s budget, if the command has not written
    its report: write it from what is done and end the process.  A verdict
    reached stands, without its counterexample (and an `unsound` not
    replayed on TensorFlow in time says so); before one, `unknown` naming
    the stage the budget ran out in."""

    def __init__(self, report: _Report, progress: dict):
        import threading  # noqa: PLC0415
        self.report, self.progress = report, progress
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="tfsem-watchdog")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        if self.stopped.wait(max(self.report.deadline.left(), 0.0)):
            return
        if not self.report.claim():
            return
        args = self.report.args
        write = self.progress.get("write", watchdog_report)
        _finish(args, write(args, self.progress, self.report.head))


def watchdog_report(args: argparse.Namespace, progress: dict, head: bool) -> int:
    """Write the report of what `progress` holds when the budget ran out
    (the --html page, the JSON, or the text after the lines already
    printed when `head`); the exit status."""
    import dataclasses  # noqa: PLC0415

    from tfsem.checking.verdict import Verdict  # noqa: PLC0415
    budget = f"the time budget of {args.timeout:g} s"
    stage = progress.get("stage", "the check")
    verdict = progress.get("verdict")
    if verdict is None:
        where = stage if "before the graphs" in stage else f"{stage}, which overran its share of it"
        verdict = Verdict("unknown", reason=f"{budget} ran out during {where}: no verdict (a "
                          "longer --timeout may decide it)",
                          semantics=args.semantics or "atomic",
                          observe=args.observe or "outputs+state", float_mode=args.float_mode)
        cut = None
    else:
        verdict = dataclasses.replace(verdict, counterexample=None)
        cut = (f"{budget} ran out during {stage}, after the verdict: the verdict stands; "
               + ("what came after it is left out" if head else
                  "its counterexample and what came after it are left out"))
    data = verdict.to_json()
    if cut is not None:
        data["report_cut"] = cut
    replay = progress.get("replay")
    if verdict.verdict == "unsound" and replay is None and stage == "the replay on TensorFlow" \
            and replay_pending(progress.get("verdict"), args):
        # (what the replay's own budget says when TensorFlow outlasts it)
        from .grappler import replay_cut, replay_json  # noqa: PLC0415
        replay = replay_json(replay_cut(budget))
    if "tensorflow" in verdict.confirmed and not (replay or {}).get("confirmed"):
        # (the replay's thread adds "tensorflow" to the verdict's list before
        # its own report is recorded here: the budget ran out in between,
        # and the report written is one with no replay that confirmed, so
        # the list says none either; a list of its own, not the thread's)
        verdict = dataclasses.replace(
            verdict, confirmed=[c for c in verdict.confirmed if c != "tensorflow"])
        data["confirmed"] = list(verdict.confirmed)
    if verdict.verdict == "unsound" and replay is not None:
        data["tensorflow_replay"] = replay
    if args.html:
        data["html_cut"] = HTML_CUT
        try:
            write_pages([(Path(args.html), cut_page(data, args.timeout))])
        except OSError:
            pass
    if args.json:
        sys.stdout.write(dumps_within(data, None) + "\n")
        return verdict.exit_status
    lines = [] if head else verdict.describe().split("\n")
    if cut is not None:
        lines.append(f"  ({cut})")
    if replay is not None and replay.get("status") != "skipped" and verdict.verdict == "unsound":
        lines.append(f"  {replay.get('text') or replay.get('reason')}")
    if args.html:
        lines.append(f"  (--html {args.html}: {HTML_CUT})")
    print("\n".join(lines), flush=True)
    return verdict.exit_status


def replay_pending(verdict, args: argparse.Namespace) -> bool:
    """Whether `replay_on_tensorflow` will run TensorFlow for this verdict."""
    import importlib.util  # noqa: PLC0415
    return (verdict.verdict == "unsound" and verdict.counterexample is not None
            and getattr(args, "tensorflow", True) and verdict.float_mode != "real"
            and importlib.util.find_spec("tensorflow") is not None)


def replay_on_tensorflow(case, verdict, args: argparse.Namespace,
                         deadline: float | None = None) -> dict | None:
    """Replay an `unsound` verdict's counterexample on TensorFlow's executor
    (backends/tensorflow.py): the rewritten graph itself when REWRITTEN is a
    GraphDef file, else the rewritten program exported.  TensorFlow is
    imported only here, only for an unsound verdict, and only when it is
    installed.  Adds "tensorflow" to `verdict.confirmed` when TensorFlow gave
    the counterexample's outcome and, for each of the original's witness
    schedules the verdict lists, the oracle's outcome of it (a model of the
    original that TensorFlow's kernels contradict withdraws the claim, and
    the replay's reason says so); never changes the verdict.  Returns the
    replay's JSON (with a `text` line), a `skipped` entry saying why, or None
    (no unsound verdict).  `deadline` (a time.monotonic() value, the end of
    the command's budget): TensorFlow's import and the replay happen before
    it or not at all; a replay it cuts is ``not-replayed`` with ``budget``
    true, and says so (the verdict the oracle's alone)."""
    cx = verdict.counterexample
    if verdict.verdict != "unsound" or cx is None:
        return None
    if not getattr(args, "tensorflow", True):
        return {"status": "skipped", "confirmed": False, "reason": "--no-tensorflow"}
    if verdict.float_mode == "real":
        # TensorFlow computes in IEEE arithmetic: the counterexample holds over the reals
        return {"status": "skipped", "confirmed": False,
                "reason": "--float real: the counterexample was confirmed over the reals, "
                          "which TensorFlow's IEEE kernels do not compute"}
    import importlib.util  # noqa: PLC0415
    if importlib.util.find_spec("tensorflow") is None:
        return {"status": "skipped", "confirmed": False,
                "reason": "TensorFlow is not installed (the extra tfsem[tensorflow])"}
    from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
    from tfsem.graphdef import is_graph_path, read_captures  # noqa: PLC0415
    rewritten = case.rewritten()
    graph_file = args.rewritten is not None and Path(args.rewritten).suffix.lower() in (".pb", ".pbtxt")

    def replay():
        # the rewritten program's side, then the original's: each of its
        # witness schedules the verdict lists, forced on the original graph
        # (where ORIGINAL is a GraphDef file) or on the original program
        # exported; "tensorflow" is claimed only where both agree with the
        # oracle (backends/tensorflow.py `with_original`), all of it within
        # this one deadline
        rep = rewritten_replay()
        original_graph = args.rewritten is not None and getattr(args, "session", None) is None \
            and Path(args.original).suffix.lower() in (".pb", ".pbtxt")
        caps = getattr(args, "captures", None)
        return tfb.with_original(
            rep, case.original, cx, observe=verdict.observe, deadline=deadline,
            graph=Path(args.original) if original_graph else None,
            targets=list(getattr(args, "target", []) or []),
            captures=read_captures(caps) if caps and original_graph else None,
            label=f"the graph {args.original}" if original_graph else
            "the original program, exported")

    def rewritten_replay():
        if graph_file:
            # (a concrete function's graph: its DT_RESOURCE Placeholders are
            # the variables the capture map names, replayed as variables)
            caps = getattr(args, "captures", None)
            return tfb.replay_graph(Path(args.rewritten), rewritten, cx, observe=verdict.observe,
                                    targets=list(getattr(args, "target", []) or []),
                                    label=f"the graph {args.rewritten}", deadline=deadline,
                                    captures=read_captures(caps) if caps else None)
        if args.rewritten is not None and is_graph_path(args.rewritten):   # .meta, SavedModel
            return tfb.replay_program(rewritten, cx, observe=verdict.observe, deadline=deadline,
                                      label=f"the program imported from {args.rewritten}, "
                                            "exported")
        return tfb.replay_program(rewritten, cx, observe=verdict.observe, deadline=deadline)

    from .grappler import replay_in_budget, replay_json  # noqa: PLC0415
    if deadline is None:
        rep = replay()
    else:
        rep = replay_in_budget(replay, deadline, f"the time budget of {args.timeout:g} s")
    if rep.confirmed and "tensorflow" not in verdict.confirmed:
        verdict.confirmed.append("tensorflow")
    return replay_json(rep)
