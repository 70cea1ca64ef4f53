"""`tfsem grappler GRAPH`: run TensorFlow's real Grappler optimizers on a
graph and check each result against the graph (translation validation)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from tfsem.cli import EXIT_BAD_INPUT, EXIT_FOUND, EXIT_OK, EXIT_UNKNOWN, UsageError

from .common import Deadline, StageTimeout, call_within, dumps_within, make_duration

#: the default time budget of the whole command (every optimizer's Grappler
#: run, check, replay and check over the reals, and the report): 13 default
#: optimizers get about 20 s each
DEFAULT_TIMEOUT = 300.0

# How one budget splits (docs/budgets.md).  The clock starts when the command
# process starts, before the graph's first byte is read; TensorFlow's import
# and the original's import come out of it first, and REPORT_SHARE of it is
# kept back for the report.  Then each optimizer in turn runs Grappler (which
# cannot be interrupted: it is not started when less is left than the
# longest Grappler run so far) and gets an equal part of what is left (what
# one leaves unused goes to those after it); inside its part: the optimized
# graph's import, the check (CHECK_SHARE of what is left of the part), then
# the follow-ups in what remains: the claim's re-check and the replay on
# TensorFlow of an `unsound`, or the check over the reals of any other verdict.
#: the part of the budget kept back for writing the report
REPORT_SHARE = 0.05
#: ... but at least this many seconds, and at most this many
REPORT_MIN, REPORT_MAX = 0.5, 5.0
#: the check's part of what an optimizer's part has left after Grappler and import
CHECK_SHARE = 2 / 3
#: a follow-up with less than this many seconds left is not started (`budget`)
MIN_STAGE = 0.05
#: before Grappler's first run in a command, the least it is expected to take:
#: this many seconds per node of the graph and its functions (the default
#: pipeline on MobileNetV2's 6,480 nodes took 1.45 s at a load of 1.5)
GRAPPLER_SECONDS_PER_NODE = 0.2e-3


def add_parser(sub) -> None:
    p = sub.add_parser(
        "grappler", help="run TensorFlow's Grappler on a graph and check every result",
        description="Run TensorFlow's Grappler on GRAPH (a GraphDef, .pb or .pbtxt) - each "
                    "optimizer named with --optimizer alone, or by default every optimizer "
                    "that acts on a CPU graph alone and then the default pipeline - import "
                    "each optimized graph and check it against GRAPH (variables matched by "
                    "shared_name, feeds and fetches by name): one verdict per optimizer, "
                    "with floats bit for bit, and beside it the verdict with float arithmetic "
                    "over the reals (--float real of tfsem check). "
                    "Fetches default to the graph's entry in a manifest.json beside it (and "
                    "then the capture map to that entry's, unless --captures names one). "
                    "Needs the extra tfsem[tensorflow]. Exit status: 0 every result sound or "
                    "no-counterexample, 1 one unsound or invalid, 2 bad input, 3 one unknown "
                    "or not importable. Grappler is given GRAPH placed as TensorFlow's placer "
                    "places it before Grappler runs: every node that names no device on the "
                    "CPU (/job:localhost/replica:0/task:0/device:CPU:0); --no-place turns "
                    "that off.")
    p.add_argument("graph", nargs="?", help="a GraphDef file (.pb binary or .pbtxt text)")
    p.add_argument("--optimizer", action="append", default=[], metavar="NAME",
                   help="a Grappler optimizer (repeatable; 'default' = the default pipeline; "
                        "see --list)")
    p.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="a tensor to fetch, 'node' or 'node:k' (repeatable)")
    p.add_argument("--target", action="append", default=[], metavar="NODE",
                   help="a node to run for its effect, without output (repeatable)")
    p.add_argument("--captures", default=None, metavar="FILE",
                   help="a concrete function's capture map (JSON {placeholder: {\"variable\", "
                        "\"dtype\", \"shape\"}}): the variables its DT_RESOURCE Placeholders "
                        "capture, as `tfsem import/check --captures` read it")
    p.add_argument("--semantics", choices=("atomic", "decomposed"), default="atomic",
                   help="atomic (the default: Assign is one step) or decomposed (Assign is a read and a write)")
    p.add_argument("--observe", choices=("outputs", "outputs+state"), default="outputs+state",
                   help="what an outcome holds (default outputs+state)")
    p.add_argument("--timeout", type=make_duration(hi=3600.0), default=DEFAULT_TIMEOUT,
                   help=f"time budget of the whole command in seconds (default "
                        f"{DEFAULT_TIMEOUT:g}): TensorFlow's import, reading the graph, every "
                        "optimizer's Grappler run, check, replay and check over the reals, "
                        "and the report; split among the optimizers (docs/budgets.md). "
                        "Running out gives `unknown`")
    p.add_argument("--no-place", dest="place", action="store_false",
                   help="give Grappler GRAPH as it is, without placing its unplaced nodes on "
                        "the CPU (Grappler then sees nodes on no device: the remapper fuses "
                        "nothing)")
    p.add_argument("--save", metavar="DIR", default=None,
                   help="write each optimized graph to DIR/OPTIMIZER.pbtxt")
    p.add_argument("--list", action="store_true", help="list the optimizers and exit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true",
                   help="let TensorFlow print its own log lines (silenced by default)")
    p.set_defaults(run=run)


def _manifest_entry(path: Path) -> dict | None:
    manifest = path.parent / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    for entry in data.get("graphs", []) if isinstance(data, dict) else []:
        if isinstance(entry, dict) and entry.get("file") == path.name:
            return entry
    return None


def _import(graph_def, fetches: list[str], targets: list[str], where: str,
            captures: dict | None = None, deadline: float | None = None):
    """The tfsem Program of a TensorFlow GraphDef, read from its serialized
    bytes by tfsem's own TensorFlow-free reader (graphdef.proto, importer).
    `captures`: a concrete function's capture map (importer.parse_captures).
    `deadline` (a time.monotonic() value): past it, graphdef.ImportTimeout."""
    from tfsem.graphdef.functions import check_deadline  # noqa: PLC0415
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    del where
    check_deadline(deadline, "reading the graph")
    graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
    return import_graph(graph, fetches, targets, captures=captures, deadline=deadline).program


def _import_with(graph_def, fetches, targets, where, captures, deadline=None):
    # _import called as callers that replace it (with four arguments) expect
    extra = {k: v for k, v in (("captures", captures), ("deadline", deadline)) if v is not None}
    return _import(graph_def, fetches, targets, where, **extra)


#: what a replay was doing when its budget ran out in TensorFlow's own
#: stages, which look at no clock: `tfsem check` and `tfsem mlir` import
#: TensorFlow for the replay, `tfsem grappler` imported it before Grappler ran
DURING_IMPORT = "TensorFlow was imported or ran the graph"
DURING_LOAD = "TensorFlow loaded or ran the graph"


def replay_cut(budget: str, graph: str = "", during: str | None = DURING_IMPORT):
    """The Replay of a replay that `budget` (e.g. "the time budget of 10 s")
    stopped: ``budget`` true, its reason saying that `budget` ran out
    while `during` held it, or (`during` None) before the replay started.
    Its text (Replay.describe) is "not replayed on TensorFlow within the
    time budget: REASON (the verdict is the oracle's alone)" for every
    command (docs/budgets.md)."""
    from tfsem.backends import tensorflow as tfb  # noqa: PLC0415 (imports no TensorFlow)
    where = "before the replay started" if during is None else f"while {during}"
    return tfb.Replay(False, f"{budget} ran out {where}", graph, budget=True)


def replay_json(rep) -> dict[str, Any]:
    """A Replay as a verdict's ``tensorflow_replay`` (with its `text` line)."""
    return dict(rep.to_json(), text=rep.describe())


def replay_in_budget(replay, deadline: float, budget: str, graph: str = "",
                     during: str = DURING_IMPORT):
    """`replay()` (a replay on TensorFlow that obeys `deadline` between its
    own stages) within `deadline` (time.monotonic()): not started with less
    than MIN_STAGE left; TensorFlow's stages that look at no clock (its
    import, loading the graph: `during`) left behind when they outlast it
    (common.call_within).  A replay the budget stopped is `replay_cut`'s.
    The one budgeted replay of `tfsem check`, `tfsem mlir` and `tfsem
    grappler`."""
    left = deadline - time.monotonic()
    if left < MIN_STAGE:
        return replay_cut(budget, graph, None)
    try:
        return call_within(left, replay)
    except StageTimeout:
        return replay_cut(budget, graph, during)


def read_capture_map(path: Path) -> dict:
    """The capture map at `path`, read and checked as `tfsem import
    --captures` reads one (graphdef.read_captures, importer.parse_captures).
    A bad file or entry: ProgramError naming the file and the entry (exit 2)."""
    from tfsem.graphdef import read_captures  # noqa: PLC0415
    from tfsem.graphdef.importer import parse_captures  # noqa: PLC0415
    caps = read_captures(path)
    parse_captures(caps, where=str(path))
    return caps


def check_capture_nodes(caps: dict, path: Path, graph_def) -> None:
    """Every entry of the capture map `caps` (read from `path`) names a
    DT_RESOURCE Placeholder of `graph_def`; else ProgramError naming the file
    and the entry (exit 2)."""
    from tfsem.backends.tensorflow import DT_RESOURCE  # noqa: PLC0415  (no TensorFlow)
    from tfsem.graphdef.importer import GraphImportError  # noqa: PLC0415
    nodes = {n.name: n for n in graph_def.node}
    for ph in caps:
        node = nodes.get(ph)
        if node is None:
            raise GraphImportError(f"{path}: {ph!r}", "no node of that name in the graph",
                                   "unknown-node")
        if node.op != "Placeholder" or node.attr["dtype"].type != DT_RESOURCE:
            raise GraphImportError(f"{path}: {ph!r}", f"the node is a {node.op}, not a "
                                   "DT_RESOURCE Placeholder", "bad-captures")


def report_reserve(seconds: float) -> float:
    """The seconds of a budget of `seconds` kept back for writing the report."""
    return min(max(seconds * REPORT_SHARE, REPORT_MIN), REPORT_MAX, seconds / 2)


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef import grappler as g  # noqa: PLC0415  (imports no TensorFlow)

    if args.list:
        for name, doc in g.OPTIMIZERS.items():
            print(f"{name:30s} {doc}{'  (run by default)' if name in g.DEFAULT_OPTIMIZERS else ''}")
        print(f"{g.DEFAULT_PIPELINE:30s} Grappler's default pipeline  (run by default)")
        return EXIT_OK
    try:
        optimizers = g.check_optimizer_names(args.optimizer) or list(g.DEFAULT_OPTIMIZERS)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.graph is None:
        raise UsageError("give a GRAPH (a GraphDef file), or --list")
    path = Path(args.graph)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir() or path.suffix not in (".pb", ".pbtxt"):
        raise UsageError(f"{path}: expected a GraphDef file (.pb binary or .pbtxt text)")
    # the budget: from the process's start (before the first byte of the
    # graph, its manifest or its capture map is read) to the last byte of
    # the report; a call from Python starts it now
    deadline = (Deadline.of_process(args.timeout) if getattr(args, "whole_process", False)
                else Deadline(args.timeout))
    budget: dict[str, Any] = {"seconds": args.timeout,
                              "before_command": round(deadline.elapsed(), 3)}
    fetches, targets = list(args.fetch), list(args.target)
    captures_path = Path(args.captures) if getattr(args, "captures", None) else None
    if not fetches and not targets:
        entry = _manifest_entry(path)
        if entry is None:
            raise UsageError(f"{path}: give the fetches with --fetch (Grappler removes every "
                             "node that no fetch needs); no manifest.json beside it lists them")
        fetches, targets = list(entry.get("fetches", [])), list(entry.get("targets", []))
        if captures_path is None and isinstance(entry.get("captures"), str):
            captures_path = path.parent / entry["captures"]
    captures = read_capture_map(captures_path) if captures_path else None
    # TensorFlow's kernels' child (oracle/kernels.py) imports TensorFlow while
    # this process imports it for Grappler: a check waits for that child, and
    # its wait counts against the check's budget (on the unrolled LSTM 5 of
    # the check's 7.8 s, and under load all of it: `unknown`)
    from tfsem.oracle import kernels  # noqa: PLC0415  (imports no TensorFlow)
    kernels.prestart()
    reserve = report_reserve(args.timeout)
    place = getattr(args, "place", True)
    t = time.monotonic()
    try:
        # TensorFlow's import takes 5 s at a load of 1.5 and up to a minute on a
        # loaded one: it is left behind when it outlasts the budget
        call_within(deadline.left() - reserve, g.tensorflow)
        version = _tf_version()
    except g.TensorFlowMissing:
        print(f"tfsem grappler: {g.INSTALL_HINT}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StageTimeout:
        version = None
    budget["tensorflow_import"] = round(time.monotonic() - t, 3)
    report = Report(args, path, fetches, targets, captures_path, captures, version, place,
                    budget, deadline)
    progress: dict[str, Any] = {}
    if getattr(args, "whole_process", False):
        # past the budget, whatever stage runs (a check, a claim past its
        # time), the watchdog writes the report and ends the process
        Watchdog(report, optimizers, progress).start()
    if version is None:
        why = (f"the time budget of {args.timeout:g} s ran out while TensorFlow was imported "
               f"({budget['tensorflow_import']:.2f} s): not run")
        results = [_out_of_budget({"optimizer": name}, why) for name in optimizers]
        placement = None
    else:
        from google.protobuf.message import DecodeError  # noqa: PLC0415  (TensorFlow's)
        from google.protobuf.text_format import ParseError  # noqa: PLC0415
        try:
            graph_def = g.as_graph_def(path)
        except (DecodeError, ParseError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: not a GraphDef: {exc}") from None
        if captures is not None:
            check_capture_nodes(captures, captures_path, graph_def)
        results = validate(graph_def, fetches, targets, optimizers, where=str(path),
                           semantics=args.semantics, observe=args.observe,
                           timeout=args.timeout, save=args.save, place=place,
                           captures=captures, deadline=deadline, reserve=reserve,
                           budget=budget, text=not args.json, progress=progress)
        placement = g.placement(g.placed(graph_def) if place else graph_def)
    status = _exit_status(results)
    if not report.write(results, placement):
        _hold()     # the watchdog is writing the report, and ends the process
    return _finish(args, status)


class Report:
    """`tfsem grappler`'s report, written once: by the command when it is
    done, or by its Watchdog when the budget is over first."""

    def __init__(self, args, path, fetches, targets, captures_path, captures, version, place,
                 budget, deadline):
        import threading  # noqa: PLC0415
        self.args, self.path, self.fetches, self.targets = args, path, fetches, targets
        self.captures_path, self.captures, self.version = captures_path, captures, version
        self.place, self.budget, self.deadline = place, budget, deadline
        self.lock = threading.Lock()
        self.written = False

    def write(self, results: list[dict[str, Any]], placement: str | None,
              deadline: Deadline | None = None) -> bool:
        """Write the report of `results` to stdout, unless it was written
        already (then False)."""
        with self.lock:
            if self.written:
                return False
            self.written = True
        if deadline is None:
            # the pieces of a JSON cut short take time to free (MobileNetV2's
            # unsound row is 625 MB of them), and the process to end
            d = self.deadline
            deadline = Deadline(d.seconds, d.started, at=d.at - REPORT_TAIL)
        args, path = self.args, self.path
        self.budget["before_report"] = round(self.deadline.elapsed(), 3)
        if args.json:
            head = {"graph": str(path), "fetches": self.fetches, "targets": self.targets,
                    "captures": str(self.captures_path) if self.captures_path else None,
                    "tensorflow": self.version, "semantics": args.semantics,
                    "observe": args.observe, "placed": self.place, "placement": placement,
                    "budget": self.budget}
            sys.stdout.write(json_report(head, results, deadline) + "\n")
            return True
        lines = [f"{path}: Grappler of TensorFlow {self.version or '(not imported in time)'}, "
                 f"fetches {', '.join(self.fetches) or '-'}"
                 + (f", targets {', '.join(self.targets)}" if self.targets else ""),
                 f"  placed on {placement or '(not known: not read in time)'}"
                 + ("" if self.place else " (--no-place)")]
        if self.captures_path:
            n = len(self.captures or ())
            lines.append(f"  captures from {self.captures_path}: {n} variable"
                         f"{'s' if n != 1 else ''}")
        sys.stdout.write("\n".join(lines + text_report(results, deadline)) + "\n")
        return True


#: how long past the budget the watchdog gives the report's writing
WATCHDOG_WRITE = 0.5
#: the report's writing ends this many seconds before the budget does
REPORT_TAIL = 0.3


class Watchdog:
    """At the end of the budget, if `tfsem grappler` has not written its
    report, write it from what is done (`progress`, kept by `validate`):
    each row finished as it is, the row being checked and every optimizer
    not reached `out-of-budget`, naming the stages that ended; then end the
    process with the exit status of those rows.  Only for the whole process
    (the command run as `tfsem`): it ends it with os._exit.  A stage that
    does not look at the clock (a Z3 query, the claim's enumeration, a
    kernel call) is then cut where it is."""

    def __init__(self, report: Report, optimizers: list[str], progress: dict):
        import threading  # noqa: PLC0415
        self.report, self.optimizers, self.progress = report, optimizers, progress
        self.thread = threading.Thread(target=self._run, daemon=True, name="tfsem-watchdog")

    def start(self) -> None:
        self.thread.start()

    def rows(self) -> list[dict[str, Any]]:
        budget = f"the time budget of {self.report.args.timeout:g} s"
        done = list(self.progress.get("rows") or [])
        out = []
        for row in done:
            if "status" in row:
                out.append(row)
                continue
            stages = dict(self.progress.get("stages") or {})
            ended = ", ".join(stages) or "none"
            verdict = self.progress.get("verdict")
            if verdict is not None:
                out.append(_reached(row, verdict, stages,
                                    f"{budget} ran out after this optimizer's verdict (its "
                                    f"stages that ended: {ended}; the one after them was "
                                    "cut): the verdict stands; its counterexample and the "
                                    "stages after it are left out"))
                continue
            out.append({"optimizer": row.get("optimizer"), "status": "out-of-budget",
                        "stage_seconds": stages,
                        "reason": f"{budget} ran out while this optimizer was checked (its "
                                  f"stages that ended: {ended}; the one after them was cut): "
                                  "no verdict"})
        for name in self.optimizers[len(out):]:
            out.append({"optimizer": name, "status": "out-of-budget",
                        "reason": f"{budget} ran out before this optimizer: not run"})
        return out

    def _run(self) -> None:
        time.sleep(max(self.report.deadline.left(), 0.0))
        if self.report.written:
            return
        rows = self.rows()
        if self.report.write(rows, None, Deadline(WATCHDOG_WRITE)):
            _finish(self.report.args, _exit_status(rows))


def _reached(row: dict[str, Any], verdict, stages: dict, why: str) -> dict[str, Any]:
    """The row of an optimizer (`row`, as far as it was filled) whose
    verdict was reached when the watchdog cut a stage after it: what
    Grappler changed, the verdict without its counterexample (whose JSON
    and text take seconds on a large graph), and why."""
    import dataclasses  # noqa: PLC0415
    short = dataclasses.replace(verdict, counterexample=None)
    data = {k: v for k, v in short.to_json().items()
            if k in ("verdict", "reason", "differs", "difference", "confirmed", "semantics",
                     "observe")}
    out = {k: row[k] for k in ("optimizer", "seconds", "nodes_before", "nodes_after",
                               "function_nodes_before", "function_nodes_after", "changed",
                               "graph", "functions", "functions_added", "functions_removed")
           if k in row}
    out.update(status="checked", verdict=data, stage_seconds=stages, report_cut=why,
               text=short.describe().splitlines()[0] + f"\n  ({why})")
    return out


def _hold() -> None:
    """Wait for the process's end (the watchdog is ending it)."""
    while True:
        time.sleep(1.0)


def _finish(args: argparse.Namespace, status: int) -> int:
    """`status`, once the report is written.  When this command is the whole
    process (`tfsem grappler`, not a call from Python), the process ends
    here, its output flushed: the interpreter's teardown after TensorFlow
    takes 2-3 s (measured in docs/budgets.md) and would end the command
    that much past its budget."""
    if not getattr(args, "whole_process", False):
        return status
    import os  # noqa: PLC0415
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader left: as tfsem.cli.main answers it
        status = 0
    except OSError:
        pass
    # (TensorFlow's kernels' child, oracle/kernels.py, is not waited for: it
    # ends by itself when its stdin closes with this process, after its own
    # teardown; it holds none of this process's output streams)
    os._exit(status)


#: what a row of the report says when the clock ran out while it was written
REPORT_CUT = ("the time budget ran out while this row of the report was written: its "
              "details (counterexample, statistics) are left out; the verdict stands")


def json_report(head: dict[str, Any], results: list[dict[str, Any]],
                deadline: Deadline | None) -> str:
    """The `--json` object: `head` with ``results``, each row written while
    `deadline` lasts; a row it runs out in is written in short (optimizer,
    status, verdict, reason, ``report_cut``), as is every row after it, and
    the object's ``report_cut`` counts them.  The text of
    tfsem.oracle.jsonio.dumps (indent 2) when nothing is cut."""
    texts, cut = [], 0
    for r in results:
        r.pop("text", None)
        text = None if cut else dumps_within(r, deadline)
        if text is None:
            cut += 1
            text = dumps_within(_short_row(r), None)
        texts.append(text)
    top = dumps_within(dict(head, report_cut=cut, results=[]), None)
    assert top.endswith('"results": []\n}')
    if not texts:
        return top
    body = ",\n".join("    " + t.replace("\n", "\n    ") for t in texts)
    return top[:-len("[]\n}")] + "[\n" + body + "\n  ]\n}"


def _short_row(row: dict[str, Any]) -> dict[str, Any]:
    short = {k: row[k] for k in ("optimizer", "status", "reason", "seconds", "check_seconds",
                                 "changed", "nodes_before", "nodes_after", "stage_seconds")
             if k in row}
    v = row.get("verdict")
    if isinstance(v, dict):
        short["verdict"] = {k: v[k] for k in ("verdict", "reason", "differs", "difference",
                                              "confirmed", "semantics", "observe")
                            if k in v}
    if isinstance(row.get("real"), dict):
        short["real"] = row["real"]
    rep = row.get("tensorflow_replay")
    if isinstance(rep, dict):
        short["tensorflow_replay"] = {k: rep[k] for k in ("status", "confirmed", "budget",
                                                          "reason") if k in rep}
    short["report_cut"] = REPORT_CUT
    return short


def text_report(results: list[dict[str, Any]], deadline: Deadline | None) -> list[str]:
    """The lines of the text report, one block per optimizer; once `deadline`
    has passed, each block after is its first line alone and a line saying
    the details were left out."""
    lines: list[str] = []
    for r in results:
        head = f"  {r['optimizer']}: "
        cut = deadline is not None and deadline.expired()
        if r["status"] == "grappler-failed":
            lines.append(head + f"Grappler failed: {r['reason']}")
            continue
        if r["status"] == "out-of-budget":
            lines.append(head + f"unknown: {r['reason']}")
            continue
        changes = _changes(r)
        if r["status"] in ("does-not-import", "check-failed"):
            what = "does not import" if r["status"] == "does-not-import" else "the check failed"
            lines.append(head + f"{what}: {r['reason']}")
            lines.append(f"    changed: {changes if not cut else '(left out)'}")
            continue
        text = r["text"].splitlines()
        lines.append(head + text[0])
        if cut:
            lines.append(f"    ({REPORT_CUT}; `--json` or a longer --timeout has them)")
            continue
        lines.append(f"    changed: {changes}")
        if "real" in r:
            lines.append(f"    {real_text(r['real'])}")
        lines.extend("  " + line for line in text[1:])
    return lines


def _not_started(timeout: float, left: float, expected: float) -> str:
    """Why an optimizer's Grappler run was not started (`left` seconds of
    the budget were left; a run is `expected` to take that long)."""
    budget = f"the time budget of {timeout:g} s"
    if math.isinf(expected):
        return f"{budget} ran out during an earlier optimizer's Grappler run: not run"
    if left <= 0:
        return f"{budget} ran out before Grappler ran: not run"
    if expected > MIN_STAGE:
        return (f"{budget} had {left:.2f} s left for this optimizer, less than a Grappler run "
                f"is expected to take here ({expected:.2f} s): not run")
    return f"{budget} had {left:.2f} s left for this optimizer: not run"


def _out_of_budget(row: dict[str, Any], reason: str,
                   stages: dict | None = None) -> dict[str, Any]:
    row.update(status="out-of-budget", reason=reason)
    if stages is not None:
        row["stage_seconds"] = stages
    return row


def validate(graph_def, fetches: list[str], targets: list[str], optimizers: list[str], *,
             where: str, semantics: str = "atomic", observe: str = "outputs+state",
             timeout: float = DEFAULT_TIMEOUT, save: str | None = None,
             real: bool = True, place: bool = True,
             captures: dict | None = None, deadline: Deadline | None = None,
             reserve: float = 0.0, budget: dict | None = None,
             text: bool = True, progress: dict | None = None) -> list[dict[str, Any]]:
    """Per optimizer: run it, import its result, check it against the original.
    A row per optimizer: ``status`` is ``checked`` (with ``verdict``, the
    verdict's JSON, and ``text``), ``does-not-import``, ``grappler-failed``
    or ``out-of-budget`` (with ``reason``); plus what changed
    (GrapplerResult.to_json()) and ``stage_seconds``.  The original must
    import: a ProgramError/UsageError for it propagates.
    `place`: Grappler gets the graph placed on the CPU (graphdef/grappler.py
    `placed`), as TensorFlow's placer leaves it.  `captures`: the capture map
    of a concrete function's graph (importer.parse_captures), used for the
    original and for every optimized graph (there for the placeholders
    Grappler kept).

    The time: with `deadline` (a common.Deadline, `tfsem grappler`'s), every
    stage takes its share of it (docs/budgets.md), `reserve` seconds kept
    back for the report; without, each optimizer has `timeout` seconds of
    its own, its Grappler run included.  `budget`, a dict, gets the
    original's import time (``graph_import``).  `progress`, a dict, is kept
    up to date for a watchdog (`Watchdog`): ``rows`` (the list returned),
    ``current`` (the row being filled, None between rows) and ``stages``
    (its stages done)."""
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.graphdef import grappler as g  # noqa: PLC0415

    started = time.monotonic()
    results: list[dict[str, Any]] = []
    if progress is None:
        progress = {}
    progress.update(rows=results, current=None, stages={})
    try:
        original = _import_with(graph_def, fetches, targets, where, captures,
                                deadline=None if deadline is None else deadline.at - reserve)
    except ImportTimeout as exc:
        why = f"{exc} (the original graph; the time budget of {timeout:g} s covers it)"
        return [_out_of_budget({"optimizer": name}, why) for name in optimizers]
    import_seconds = time.monotonic() - started
    if budget is not None:
        budget["graph_import"] = round(import_seconds, 3)
    longest_grappler = GRAPPLER_SECONDS_PER_NODE * _node_count(graph_def)
    for i, name in enumerate(optimizers):
        row: dict[str, Any] = {"optimizer": name}
        progress.update(current=row, stages={}, verdict=None)
        results.append(row)
        if deadline is None:
            part = Deadline(timeout)
        else:
            left = deadline.left() - reserve
            if left < max(longest_grappler, MIN_STAGE):
                _out_of_budget(row, _not_started(timeout, left, longest_grappler))
                continue
            longest_grappler = 0.0 if i == 0 else longest_grappler
        try:
            if deadline is None:
                res = g.run_grappler(graph_def, fetches + targets, name, place=place)
            else:
                # TensorFlow's optimizer lets go of Python's lock while it
                # runs: a run that outlasts the budget is left behind
                res = call_within(deadline.left() - reserve, g.run_grappler, graph_def,
                                  fetches + targets, name, place=place)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except g.GrapplerError as exc:
            row.update(status="grappler-failed", reason=str(exc))
            continue
        except StageTimeout:
            _out_of_budget(row, f"the time budget of {timeout:g} s ran out during Grappler's "
                           "run, which was left behind: not checked")
            longest_grappler = math.inf     # none after it is started
            continue
        longest_grappler = max(longest_grappler, res.seconds)
        row.update(res.to_json())
        if deadline is not None:
            # Grappler's run came out of what was left; this optimizer's
            # part is its share of the rest
            part = deadline.share(len(optimizers) - i, reserve)
            if part.left() < MIN_STAGE:
                _out_of_budget(row, f"the time budget of {timeout:g} s ran out during Grappler's "
                               f"run ({res.seconds:.2f} s): its result was not checked",
                               stages={"grappler": round(res.seconds, 3)})
                continue
        row["import_seconds_original"] = round(import_seconds, 6)
        if save:
            out_dir = Path(save)
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / f"{name}.pbtxt").write_text(str(res.graph_def))
        row.update(check_graph(original, res.graph_def, fetches, targets,
                               original_graph_def=graph_def,
                               where=f"{where} after {name}", semantics=semantics,
                               observe=observe, timeout=timeout, real=real,
                               captures=captures, deadline=part, text=text,
                               progress=progress))
        row.setdefault("stage_seconds", {})["grappler"] = round(res.seconds, 3)
        progress["current"] = None
    progress["current"] = None
    return results


def _node_count(graph_def) -> int:
    """The nodes of a GraphDef and of its library's functions (0 for a
    graph that is not a TensorFlow GraphDef)."""
    try:
        return len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)
    except AttributeError:
        return len(getattr(graph_def, "node", ()))


def check_graph(original, rewritten_graph_def, fetches: list[str], targets: list[str], *,
                where: str, semantics: str = "atomic", observe: str = "outputs+state",
                timeout: float = DEFAULT_TIMEOUT, real: bool = True,
                captures: dict | None = None,
                deadline: Deadline | None = None, text: bool = True,
                progress: dict | None = None,
                original_graph_def=None) -> dict[str, Any]:
    """Import `rewritten_graph_def` (an optimizer's output) and check it
    against the program `original`; an unsound verdict is replayed on
    TensorFlow with its schedule forced (backends.tensorflow).  The row
    fields: ``status`` (checked / does-not-import / check-failed /
    out-of-budget), ``reason``, ``verdict`` (JSON), ``text``,
    ``check_seconds``, ``tensorflow_replay``, ``real``, the verdict with
    float arithmetic over the reals (unless `real` is false), and
    ``stage_seconds``.  `captures`: the original's capture map; the entries
    whose placeholder Grappler kept are used.  `text`: false leaves
    ``text`` out (`--json` prints none).  `original_graph_def`: the graph
    `original` was imported from, on which the replay of an `unsound`
    forces the original's witness schedules (`replay`); without it, the
    program `original` is exported for them.

    The time: all of it within `deadline` (a common.Deadline; by default
    `timeout` seconds from now): the import, then the check (CHECK_SHARE of
    what is left), then in what remains the claim's re-check and the replay
    of an `unsound`, or the check over the reals of any other verdict.  A
    stage the deadline cuts says so: the import or the check gives
    ``out-of-budget``/`unknown`, the replay ``budget`` (not replayed, the
    verdict the oracle's alone), the check over the reals `unknown` with
    ``budget``."""
    from tfsem.checking import check_rewrite  # noqa: PLC0415
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415

    if deadline is None:
        deadline = Deadline(timeout)
    stages: dict[str, float] = {}
    if progress is not None:    # the stages done, for the watchdog's report
        progress["stages"] = stages
    clock = time.monotonic()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.monotonic()
        stages[stage] = round(now - clock, 3)
        clock = now

    original_captures = captures
    if captures is not None:
        kept = {n.name for n in rewritten_graph_def.node}
        captures = {ph: spec for ph, spec in captures.items() if ph in kept}
    try:
        rewritten = _import_with(rewritten_graph_def, fetches, targets, where, captures,
                                 deadline=deadline.at)
    except ImportTimeout as exc:
        lap("import")
        return {"status": "out-of-budget", "stage_seconds": stages,
                "reason": f"{exc} (the optimized graph): not checked"}
    except ProgramError as exc:
        return {"status": "does-not-import",
                "reason": "; ".join(str(v) for v in exc.violations)}
    except UsageError as exc:
        return {"status": "does-not-import", "reason": str(exc)}
    lap("import")
    if deadline.left() < MIN_STAGE:
        return {"status": "out-of-budget", "stage_seconds": stages,
                "reason": "the time budget ran out before the check (this optimizer's "
                          f"part of it went to Grappler and the import): not checked"}
    t = time.perf_counter()
    try:
        verdict = check_rewrite(original, rewritten, semantics, observe,
                                timeout=deadline.left() * CHECK_SHARE)
        lap("check")
        replays = verdict.verdict == "unsound" and verdict.counterexample is not None
        verdict = within_claim(original, rewritten, verdict, semantics, observe,
                               max(deadline.left(), 0.0) * (0.5 if replays else 1.0))
        lap("claim")
        if progress is not None:    # reached: the watchdog reports it if it must
            progress["verdict"] = verdict
    except Exception as exc:  # a checker failure is no verdict: say so, never crash
        return {"status": "check-failed", "check_seconds": round(time.perf_counter() - t, 6),
                "reason": f"{type(exc).__name__}: {exc}", "stage_seconds": stages}
    row: dict[str, Any] = {"status": "checked",
                           "check_seconds": round(time.perf_counter() - t, 6)}
    if verdict.verdict == "unsound" and verdict.counterexample is not None:
        rep = replay(rewritten_graph_def, rewritten, verdict.counterexample, targets, observe,
                     f"the graph {where}", deadline, captures=captures, original=original,
                     original_graph_def=original_graph_def,
                     original_captures=original_captures)
        row["tensorflow_replay"] = replay_json(rep)
        if rep.confirmed:
            verdict.confirmed.append("tensorflow")
        lap("replay")
    row.update(verdict_json(verdict, deadline))
    if text:
        row["text"] = verdict_text(verdict, deadline)
        if "tensorflow_replay" in row:
            row["text"] += f"\n  {row['tensorflow_replay']['text']}"
        lap("text")
    if real:
        row["real"] = real_verdict(original, rewritten, verdict, semantics, observe,
                                   deadline.left())
        lap("real")
    row["stage_seconds"] = stages
    return row


def replay(graph_def, rewritten, cx, targets: list[str], observe: str, label: str,
           deadline: Deadline, captures: dict | None = None, original=None,
           original_graph_def=None, original_captures: dict | None = None):
    """An `unsound` verdict's counterexample replayed on TensorFlow, as
    `tfsem check` replays one of a graph (backends/tensorflow.py), within
    `deadline` (this optimizer's part of the command's budget) as `tfsem
    check` and `tfsem mlir` replay within theirs (`replay_in_budget`): the
    replay looks at it between its stages and gives it to TensorFlow's run,
    and a stage that outlasts it (TensorFlow loading a large graph) is left
    behind.  Past it, a Replay with ``budget``: not replayed, the verdict
    the oracle's alone.  `captures`: the capture map of a concrete function's graph, whose
    DT_RESOURCE Placeholders the replay runs as the variables they capture.
    `original` (the program checked against), when given: where the
    rewritten graph's replay confirms, the original's witness schedules
    are replayed too, on `original_graph_def` (with `original_captures`)
    where given, in the same deadline, and the replay stays confirmed only
    where TensorFlow gives the oracle's outcome for each
    (backends/tensorflow.py `with_original`)."""
    from tfsem.backends import tensorflow as tfb  # noqa: PLC0415

    def run() -> Any:
        rep = tfb.replay_graph(graph_def, rewritten, cx, targets=targets, observe=observe,
                               label=label, deadline=deadline.at, captures=captures)
        if not rep.confirmed and rep.outcome is None and not rep.budget:
            # the schedule could not be forced on the graph itself (a
            # concrete function's graph): the imported program, exported, as
            # `tfsem check` replays a program
            exported = tfb.replay_program(rewritten, cx, observe=observe, deadline=deadline.at)
            if exported.confirmed or exported.budget:
                rep = exported
        if original is None:
            return rep
        # (`label` "the graph G after OPTIMIZER", as `validate` names an
        # optimizer's output: the original is G itself)
        given = label.removeprefix("the graph ")
        name = f"the original graph {given.rsplit(' after ', 1)[0]}" if " after " in given \
            else "the original graph"
        return tfb.with_original(
            rep, original, cx, observe=observe, deadline=deadline.at, graph=original_graph_def,
            targets=targets, captures=original_captures,
            label=name if original_graph_def is not None else "the original program, exported")

    return replay_in_budget(run, deadline.at, "this optimizer's part of the time budget", label,
                            DURING_LOAD)


#: the line that stands for a counterexample the text of a verdict leaves out
TEXT_CUT = ("  (counterexample left out: the time budget ran out while it was written; a "
            "longer --timeout shows it)")


#: what a row says when its verdict's counterexample was left out of its JSON
JSON_CUT = ("the time budget ran out while the verdict's counterexample was converted to "
            "JSON: it is left out; the verdict stands")


def verdict_json(verdict, deadline: Deadline) -> dict[str, Any]:
    """``{"verdict": the verdict's JSON}`` (Verdict.to_json), made within
    `deadline` (at least MIN_STAGE): past it, without its counterexample,
    and ``report_cut`` saying so (MobileNetV2's counterexample takes
    seconds to convert: 625 MB once written)."""
    import dataclasses  # noqa: PLC0415
    try:
        return {"verdict": call_within(max(deadline.left(), MIN_STAGE), verdict.to_json)}
    except StageTimeout:
        return {"verdict": dataclasses.replace(verdict, counterexample=None).to_json(),
                "report_cut": JSON_CUT}


def verdict_text(verdict, deadline: Deadline) -> str:
    """The verdict's text (Verdict.describe), written within `deadline`
    (at least MIN_STAGE): past it, the text without its counterexample,
    and TEXT_CUT saying so (the text of a large graph's counterexample
    takes seconds: MobileNetV2's is 7 MB)."""
    import dataclasses  # noqa: PLC0415
    try:
        return call_within(max(deadline.left(), MIN_STAGE), verdict.describe)
    except StageTimeout:
        short = dataclasses.replace(verdict, counterexample=None)
        return short.describe() + "\n" + TEXT_CUT


def within_claim(original, rewritten, verdict, semantics: str, observe: str,
                 seconds: float):
    """`verdict`, judged against Grappler's claim: σ with every variable
    initialized (docs/tensorflow-validation.md, "Initialized σ only").

    TensorFlow fails a run that reads an uninitialized variable, before and
    after Grappler, where tfsem's semantics carries an error value on; a
    counterexample that needs a variable uninitialized is no miscompile a
    Grappler user can meet.  So, as the Grappler campaign target does
    (campaigns/loop.py), such an `unsound` is checked again at the same σ
    with every variable initialized (zeros where it had none): a difference
    there is the verdict (its counterexample that σ, confirmed by the
    oracle); none gives `no-counterexample`, whose reason names the
    variables and keeps the first counterexample in
    ``stats["uninitialized_difference"]``.  Every other verdict is
    returned as it is."""
    from tfsem.campaigns.loop import _initialized, _needs_uninitialized  # noqa: PLC0415
    from tfsem.checking import minimize as mini  # noqa: PLC0415
    from tfsem.checking.verdict import (DIFFERENCE_FLOAT,  # noqa: PLC0415
                                        DIFFERENCE_UNDETERMINED, NO_COUNTEREXAMPLE, UNKNOWN,
                                        UNSOUND, Counterexample, Verdict, not_among_reason)
    from tfsem.oracle.dispatch import outcome_set  # noqa: PLC0415
    from tfsem.oracle.explore import BudgetExceeded  # noqa: PLC0415
    from tfsem.oracle.functions import CannotRun  # noqa: PLC0415

    cex = verdict.counterexample
    if verdict.verdict != UNSOUND or cex is None or \
            not _needs_uninitialized(verdict.to_json(), original):
        return verdict
    missing = sorted(x for x in original.variables
                     if x not in cex.init or getattr(cex.init[x], "reason", None) is not None)
    init = _initialized(original, cex.init)
    feeds = dict(cex.feeds)
    rew_feeds = {k: v for k, v in feeds.items() if k in rewritten.feed_names}
    stats = dict(verdict.stats, uninitialized_difference=verdict.to_json())
    names = ", ".join(repr(x) for x in missing[:5]) + (f" and {len(missing) - 5} more"
                                                        if len(missing) > 5 else "")
    why = (f"the difference found needs variable(s) {names} uninitialized, where "
           "TensorFlow fails the run of both graphs; Grappler's claim covers σ with every "
           "variable initialized")
    stop = time.monotonic() + seconds
    try:
        orig = outcome_set(original, feeds, init, semantics, observe,
                           max_seconds=max(0.05, stop - time.monotonic()))
        rew = outcome_set(rewritten, rew_feeds, init, semantics, observe,
                          max_seconds=max(0.05, stop - time.monotonic()))
    except (BudgetExceeded, CannotRun) as exc:
        return Verdict(UNKNOWN, f"{why}; the same σ with every variable initialized was not "
                       f"compared: {exc}", semantics=semantics, observe=observe, stats=stats)
    for outcome, schedule in rew.items():
        if outcome in orig:
            continue
        original_list = list(orig.as_dict(100).items())
        differs = outcome.first_difference([o for o, _ in original_list])
        found = Counterexample(feeds, init, list(schedule), outcome, original_list, orig.count,
                               mini.key_steps(rewritten, list(schedule)))
        return Verdict(UNSOUND, not_among_reason(orig.count, differs) +
                       f" (σ with every variable initialized: {why}, so the same σ was "
                       "compared with zeros for them)", differs=differs, counterexample=found,
                       tried=verdict.tried, confirmed=["oracle"], semantics=semantics,
                       observe=observe, stats=stats,
                       # the check over the reals proving the rewrite sound speaks of
                       # every σ; an ordering difference it found may need this σ
                       difference=verdict.difference if verdict.difference == DIFFERENCE_FLOAT
                       else DIFFERENCE_UNDETERMINED)
    return Verdict(NO_COUNTEREXAMPLE, f"{why}, and the same σ with zeros for them shows no "
                   "difference", tried=verdict.tried, semantics=semantics, observe=observe,
                   stats=stats)


def real_verdict(original, rewritten, verdict, semantics: str, observe: str,
                 timeout: float) -> dict[str, Any]:
    """The verdict of `--float real` beside the exact one (SPEC section 11):
    float arithmetic judged as real arithmetic.  An unsound exact verdict
    has run that check already to say its kind (stats "difference_check");
    any other is checked over the reals here, in `timeout` seconds (what is
    left of the budget): with less than MIN_STAGE, not at all.  ``budget``
    is true when the time budget decided it `unknown`."""
    done = verdict.stats.get("difference_check")
    if done is not None:
        return {"verdict": done["verdict"], "reason": done.get("reason", ""),
                "seconds": done.get("seconds"),
                "budget": done["verdict"] == "unknown" and "budget" in done.get("reason", "")}
    if timeout < MIN_STAGE:
        return {"verdict": "unknown", "budget": True, "seconds": 0.0,
                "reason": f"budget: the time budget ran out before the check over the reals "
                          f"({max(timeout, 0.0):.3f} s left): not run"}
    from tfsem.checking import check_rewrite  # noqa: PLC0415
    t = time.perf_counter()
    try:
        real = check_rewrite(original, rewritten, semantics, observe, timeout=timeout,
                             float_mode="real", backends=False)
    except Exception as exc:  # a checker failure is no verdict: say so, never crash
        return {"verdict": "check-failed", "reason": f"{type(exc).__name__}: {exc}",
                "seconds": round(time.perf_counter() - t, 6)}
    return {"verdict": real.verdict, "reason": real.reason,
            "seconds": round(time.perf_counter() - t, 6),
            "budget": real.verdict == "unknown" and "budget" in real.reason}


def real_text(real: dict[str, Any]) -> str:
    """The line `tfsem grappler` prints for the verdict over the reals."""
    v = real["verdict"]
    what = {"sound": "sound up to floating-point rounding",
            "unsound": "unsound: the difference stays when float ops are computed exactly"
            }.get(v, v)
    if v not in ("sound", "unsound") and real.get("reason"):
        what += f": {real['reason'][:160]}"
    return f"over the reals (--float real): {what}"


def _changes(row: dict) -> str:
    if not row.get("changed"):
        return f"nothing (nodes {row['nodes_before']})"
    parts = [f"nodes {row['nodes_before']} -> {row['nodes_after']}"]
    if row["function_nodes_before"] or row["function_nodes_after"]:
        parts.append(f"function nodes {row['function_nodes_before']} -> "
                     f"{row['function_nodes_after']}")
    gr = row["graph"]
    for key in ("removed", "added", "changed"):
        names = gr[key]
        if names:
            shown = ", ".join(names[:6]) + (f", ... ({len(names)})" if len(names) > 6 else "")
            parts.append(f"{key} {shown}")
    if row["functions"]:
        parts.append(f"functions rewritten {', '.join(row['functions'])}")
    return "; ".join(parts)


def _exit_status(results: list[dict]) -> int:
    """1 for an `unsound` or `invalid` row, else 3 for an `unknown` row or
    one not checked (Grappler failed, does not import, out of budget), else 0."""
    verdicts = [r["verdict"]["verdict"] for r in results if r["status"] == "checked"]
    if any(v in ("unsound", "invalid") for v in verdicts):
        return EXIT_FOUND
    if any(v == "unknown" for v in verdicts) or any(r["status"] != "checked" for r in results):
        return EXIT_UNKNOWN
    return EXIT_OK


def _tf_version() -> str:
    from tfsem.graphdef.grappler import tensorflow  # noqa: PLC0415
    return tensorflow().__version__


# --- `tfsem run GRAPH --backend tensorflow|xla` (tfsem/commands/run.py run_backend) ----

def _graph_interface(path: Path, graph_def, fetch: list[str], target: list[str]):
    """The fetches and targets to run: --fetch/--target, else the manifest's
    entry for the graph, else the importer's default (every node nothing
    consumes, variable initializers excepted: fetched when it has outputs,
    run as a target otherwise)."""
    if fetch or target:
        return list(fetch), list(target)
    entry = _manifest_entry(path)
    if entry is not None:
        return list(entry.get("fetches", [])), list(entry.get("targets", []))
    from tfsem.graphdef.functions import flatten  # noqa: PLC0415
    from tfsem.graphdef.importer import default_roots  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
    producers = {n.name for n in graph_def.node} - {n.name for n in graph_def.node
                                                    if n.op in ("NoOp", "AssignVariableOp",
                                                                "AssignAddVariableOp",
                                                                "AssignSubVariableOp")
                                                    or n.op.startswith("ResourceApply")}
    roots = default_roots(flatten(graph))
    return [r for r in roots if r in producers], [r for r in roots if r not in producers]
