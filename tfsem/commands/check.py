"""`tfsem check ORIGINAL REWRITTEN` or `tfsem check CASE`: is the rewrite sound?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfsem.cli import EXIT_BAD_INPUT, UsageError

from .common import CASE_FORMAT, CHECK_TIMEOUT as DEFAULT_TIMEOUT, OBSERVE, SEMANTICS
from .common import add_float_option, add_graph_options, make_duration, print_json

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
                   help=f"time budget in seconds (default {DEFAULT_TIMEOUT:g}); running out "
                        "gives `unknown` or `no-counterexample`, never a hang")
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


def _early_verdict(args: argparse.Namespace, verdict_name: str, reason: str) -> int:
    """Print a verdict reached before any check ran (the inputs decided it)."""
    from tfsem.checking.verdict import Verdict  # noqa: PLC0415
    verdict = Verdict(verdict_name, reason=reason, semantics=args.semantics or "atomic",
                      observe=args.observe or "outputs+state", float_mode=args.float_mode)
    if args.json:
        print_json(verdict.to_json())
    else:
        print(verdict.describe())
    return verdict.exit_status


def run(args: argparse.Namespace) -> int:
    from tfsem.checking import check_case  # noqa: PLC0415
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.graphdef.cliopts import remaining, start_budget  # noqa: PLC0415
    from tfsem.oracle.functions import CannotRun  # noqa: PLC0415
    from tfsem.oracle.jsonio import program_to_json  # noqa: PLC0415
    # the budget covers reading and importing graphs too
    started = start_budget(args, args.timeout)
    if getattr(args, "rewritten", None) is not None:
        from .blocking_sessions import blocking_session  # noqa: PLC0415
        session = blocking_session(args.original, args)
        if session is not None:  # critical sections or queues: enumerated, never proved
            from .blocking_sessions import check as blocking_check  # noqa: PLC0415
            return blocking_check(args, session)
    try:
        case = load_inputs(args)
    except InvalidRewrite as exc:
        return _early_verdict(args, "invalid", f"the rewrite cannot run the session's runs: {exc}")
    except ImportTimeout as exc:  # a graph too slow to import: no verdict
        return _early_verdict(args, "unknown", f"{exc} (the time budget of {args.timeout:g} s "
                                               "covers reading and importing the graphs)")
    render = None
    if args.html:
        try:
            from tfsem.reports.finding import write_check_pages as render
        except ImportError as exc:
            print(f"tfsem check: --html needs tfsem.reports.finding ({exc})", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        verdict = check_case(case, timeout=remaining(args, args.timeout, started),
                             semantics=args.semantics, observe=args.observe,
                             float_mode=args.float_mode)
    except CannotRun as exc:  # an op with no concrete model (graph import): no verdict
        from tfsem.checking.verdict import Verdict
        verdict = Verdict("unknown", reason=exc.naming_nodes(case.original),
                          semantics=args.semantics or case.semantics,
                          observe=args.observe or case.observe, float_mode=args.float_mode)
    if not args.json:
        # the verdict first, then the programs, then (announced) the replay:
        # TensorFlow's import takes seconds, the verdict is already known
        from tfsem.reports.terms import difference_text  # noqa: PLC0415
        # the verdict and its kind of difference, then the difference in the
        # user's terms, then the rest of the verdict
        head, *rest = verdict.describe().split("\n")
        kind = [rest.pop(0)] if rest and rest[0].startswith("  kind:") else []
        lines = [head, *kind, *(f"  {t}" for t in difference_text(case, verdict.to_json())), *rest,
                 *program_text("original program", program_to_json(case.original)),
                 *program_text("rewritten program", case.rewritten_json)]
        print("\n".join(lines), flush=True)
        if replay_pending(verdict, args):
            print("  replaying the counterexample on TensorFlow (--no-tensorflow skips this) ...",
                  flush=True)
    # the replay on TensorFlow (its import included) in what is left of the
    # budget: past it, not replayed, and the replay says so (docs/budgets.md)
    replay = replay_on_tensorflow(case, verdict, args, deadline=started + args.timeout)
    data = verdict.to_json()
    if verdict.verdict == "unsound":
        data["tensorflow_replay"] = replay
    if args.json:
        print_json(data)
    elif replay is not None and replay["status"] != "skipped":
        print(f"  {replay['text']}")
        if "tensorflow" in verdict.confirmed:  # the verdict's line, brought up to date
            print(f"  confirmed on: {', '.join(verdict.confirmed)}")
    if render is not None:
        try:
            render(args.html, case, data)  # FILE, and FILE-steps.html for a run
        except OSError as exc:
            print(f"tfsem check: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if getattr(args, "left_behind", False) and getattr(args, "whole_process", False):
        # a replay left behind (TensorFlow still importing): the process ends
        # with its report, not when TensorFlow's import and teardown are done
        from .grappler import _finish  # noqa: PLC0415
        return _finish(args, verdict.exit_status)
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
    the counterexample's outcome; never changes the verdict.  Returns the
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
    import time  # noqa: PLC0415

    from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
    from tfsem.graphdef import is_graph_path  # noqa: PLC0415

    from .common import StageTimeout, call_within  # noqa: PLC0415
    rewritten = case.rewritten()
    graph_file = args.rewritten is not None and Path(args.rewritten).suffix.lower() in (".pb", ".pbtxt")

    def replay():
        if graph_file:
            return tfb.replay_graph(Path(args.rewritten), rewritten, cx, observe=verdict.observe,
                                    targets=list(getattr(args, "target", []) or []),
                                    label=f"the graph {args.rewritten}", deadline=deadline)
        if args.rewritten is not None and is_graph_path(args.rewritten):   # .meta, SavedModel
            return tfb.replay_program(rewritten, cx, observe=verdict.observe, deadline=deadline,
                                      label=f"the program imported from {args.rewritten}, "
                                            "exported")
        return tfb.replay_program(rewritten, cx, observe=verdict.observe, deadline=deadline)

    if deadline is None:
        rep = replay()
    else:
        left = deadline - time.monotonic()
        budget = f"the time budget of {args.timeout:g} s"
        try:
            if left < 0.05:
                raise StageTimeout(f"{budget} ran out before the replay started")
            # TensorFlow's import (seconds, a minute under load) and loading
            # the graph look at no clock: left behind when they outlast it
            rep = call_within(left, replay)
        except StageTimeout as exc:
            args.left_behind = not str(exc).startswith(budget)
            why = str(exc) if str(exc).startswith(budget) else (
                f"{budget} ran out while TensorFlow was imported or ran the graph")
            rep = tfb.Replay(False, why, budget=True)
    if rep.confirmed and "tensorflow" not in verdict.confirmed:
        verdict.confirmed.append("tensorflow")
    return dict(rep.to_json(), text=rep.describe())
