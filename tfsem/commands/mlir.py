"""`tfsem mlir GRAPH --pipeline P`: run TensorFlow's MLIR pass pipeline P on a
graph (or an .mlir file) and check the rewrite (docs/mlir.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tfsem.cli import EXIT_BAD_INPUT, EXIT_FOUND, EXIT_OK, EXIT_UNKNOWN, UsageError

from .common import make_duration, print_json

DEFAULT_TIMEOUT = 60.0
DEFAULT_TF_TIMEOUT = 300.0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "mlir", help="run a TensorFlow MLIR pass pipeline on a graph and check the rewrite",
        description="Import GRAPH (a GraphDef .pb/.pbtxt, with its --fetch outputs) into "
                    "TensorFlow's tf_executor dialect, or read an .mlir file, run the MLIR pass "
                    "PIPELINE on it in a child process (tf.mlir.experimental."
                    "run_pass_pipeline), read the input and the output back with tfsem's MLIR "
                    "reader and check the output against the input in each semantics mode. "
                    "A crash of TensorFlow is reported as a finding (exit 1). Needs the extra "
                    "tfsem[tensorflow]. Exit status: 0 sound or no-counterexample in every "
                    "mode, 1 unsound, invalid or a TensorFlow crash, 2 bad input (or a "
                    "pipeline TensorFlow refuses), 3 unknown (a budget, or an output tfsem "
                    "cannot read).")
    p.add_argument("graph", help="a GraphDef (.pb, .pbtxt) or an MLIR file (.mlir)")
    p.add_argument("--pipeline", required=True, metavar="PIPELINE",
                   help="the MLIR pass pipeline, as tf-opt takes it, e.g. "
                        "'func.func(tf-executor-island-coarsening)' or "
                        "'tf-executor-to-functional-conversion'")
    p.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="a tensor the imported graph returns, NODE or NODE:K (repeatable; "
                        "GraphDef input only; with --target, the graph is pruned to what they "
                        "need, as Session.run; with neither, every node is kept)")
    p.add_argument("--target", action="append", default=[], metavar="NODE",
                   help="a node of the GraphDef to run for its effect, as Session.run's "
                        "targets (repeatable); with --fetch, the graph is pruned to what they "
                        "need before it is imported")
    p.add_argument("--function", default=None, metavar="NAME",
                   help="the function that is the program (default @main, or the only public "
                        "function)")
    p.add_argument("--graph-runs", choices=("all", "fetched"), default="all",
                   help="what runs of an executor graph in a function with tf.entry_function "
                        "(an imported V1 graph): 'all' (the default: every op, as the "
                        "dialect's passes assume) or 'fetched' (what its fetches and fetched "
                        "control tokens need, as Session.run and graph pruning do); "
                        "docs/mlir.md")
    p.add_argument("--semantics", choices=("atomic", "decomposed", "both"), default="both",
                   help="the semantics mode(s) of the check (default both)")
    p.add_argument("--observe", choices=("outputs", "outputs+state"), default="outputs+state",
                   help="what an outcome holds (default outputs+state)")
    p.add_argument("--timeout", type=make_duration(hi=3600.0), default=DEFAULT_TIMEOUT,
                   help=f"time budget of each check in seconds (default {DEFAULT_TIMEOUT:g}): "
                        "the check, then the replay of an unsound verdict on TensorFlow "
                        "(TensorFlow's import included) in what the check left; running out "
                        "gives `unknown`, or an unsound verdict not replayed (docs/budgets.md)")
    p.add_argument("--tf-timeout", type=make_duration(hi=3600.0), default=DEFAULT_TF_TIMEOUT,
                   help="time limit of TensorFlow's child process in seconds (default "
                        f"{DEFAULT_TF_TIMEOUT:g}); running past it gives `unknown`")
    p.add_argument("--save", metavar="DIR", default=None,
                   help="write the input and output modules to DIR/input.mlir and "
                        "DIR/output.mlir")
    p.add_argument("--no-replay", dest="replay", action="store_false",
                   help="do not replay an unsound verdict's counterexample on TensorFlow (by "
                        "default the rewritten program is exported and the counterexample's "
                        "schedule forced on TensorFlow's executor, as tfsem check does)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def load_program(path: str, args: argparse.Namespace, lenient: bool = False):
    """A program from an .mlir file, or as `tfsem check` loads any other file."""
    from tfsem.graphdef.mlir import is_mlir_path, load_mlir
    if is_mlir_path(path):
        return load_mlir(path, getattr(args, "function", None),
                         getattr(args, "graph_runs", "all"))
    from tfsem.graphdef.cliopts import load_from_args
    return load_from_args(path, args, lenient=lenient)


def load_case(args: argparse.Namespace):
    """`tfsem check A B` where A or B is an .mlir file: the case to check."""
    from tfsem.oracle.jsonio import Case, program_to_json
    from tfsem.oracle.program import ProgramError
    programs = []
    for role, path in (("original", args.original), ("rewritten", args.rewritten)):
        try:
            programs.append(load_program(path, args, lenient=True))
        except ProgramError as exc:
            raise UsageError(f"{path}: invalid {role} program:\n"
                             + "\n".join(f"  {v}" for v in exc.violations)) from None
    return Case(programs[0], program_to_json(programs[1]))


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef.mlir import is_mlir_path
    from tfsem.graphdef.mlir_tf import run_pipeline
    src = Path(args.graph)
    suffix = src.suffix.lower()
    if not is_mlir_path(src) and suffix not in (".pb", ".pbtxt"):
        raise UsageError(f"{args.graph}: give a GraphDef (.pb, .pbtxt) or an .mlir file")
    try:
        data = src.read_bytes()
    except OSError as exc:
        raise UsageError(f"{args.graph}: {exc.strerror or exc}") from None
    if is_mlir_path(src):
        if args.fetch or args.target:
            raise UsageError("--fetch and --target apply to a GraphDef; an .mlir file returns "
                             "what its function returns")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"{args.graph}: not UTF-8 text") from None
        tf = run_pipeline(args.pipeline, mlir_text=text, timeout=args.tf_timeout)
    else:
        tf = run_pipeline(args.pipeline, graph_bytes=data, outputs=args.fetch,
                          targets=args.target, timeout=args.tf_timeout,
                          graph_is_text=suffix == ".pbtxt")
    if args.save:
        _save(Path(args.save), tf)
    result = {"graph": args.graph, "pipeline": args.pipeline, "graph_runs": args.graph_runs,
              "tensorflow": tf.to_json(),
              "verdicts": {}}
    status = _judge(tf, args, result)
    if args.json:
        print_json(result)
    else:
        _print(result)
    # the process ends with its report: not when a replay left behind
    # (TensorFlow still importing) or TensorFlow's teardown (2-3 s) is done
    from .grappler import _finish  # noqa: PLC0415
    return _finish(args, status)


def _save(d: Path, tf) -> None:
    try:
        d.mkdir(parents=True, exist_ok=True)
        for name, text in (("input.mlir", tf.input_text), ("output.mlir", tf.output_text)):
            if text is not None:
                (d / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--save {d}: {exc.strerror or exc}") from None


def _judge(tf, args: argparse.Namespace, result: dict) -> int:
    """Fill `result` with the outcome; return the exit status."""
    from tfsem.checking import check_case
    from tfsem.graphdef.mlir import program_of_mlir
    from tfsem.oracle.functions import CannotRun
    from tfsem.oracle.jsonio import Case, program_to_json
    from tfsem.oracle.program import ProgramError
    if tf.status == "no-tensorflow":
        raise UsageError(tf.message)
    if tf.status == "error":
        result["status"] = "tensorflow-error"
        result["message"] = f"TensorFlow refused ({tf.extra.get('stage')}): {tf.message}"
        return EXIT_BAD_INPUT
    if tf.status == "crash":
        result["status"] = "tensorflow-crash"
        result["message"] = f"finding: {tf.message}"
        return EXIT_FOUND
    if tf.status == "timeout":
        result["status"] = "unknown"
        result["message"] = tf.message
        return EXIT_UNKNOWN
    try:
        original = program_of_mlir(tf.input_text, "input.mlir", args.function, args.graph_runs)
    except ProgramError as exc:
        result["status"] = "input-not-readable"
        result["message"] = "the input module is not read by tfsem:\n" + \
            "\n".join(f"  {v}" for v in exc.violations)
        return EXIT_BAD_INPUT
    try:
        rewritten = program_of_mlir(tf.output_text, "output.mlir", args.function,
                                    args.graph_runs)
    except ProgramError as exc:
        result["status"] = "unknown"
        result["message"] = "the pipeline's output is not read by tfsem:\n" + \
            "\n".join(f"  {v}" for v in exc.violations)
        return EXIT_UNKNOWN
    case = Case(original, program_to_json(rewritten))
    modes = ("atomic", "decomposed") if args.semantics == "both" else (args.semantics,)
    worst = EXIT_OK
    for mode in modes:
        # the mode's budget: its check, then the replay of an `unsound` in
        # what the check left (docs/budgets.md)
        deadline = time.monotonic() + args.timeout
        try:
            v = check_case(case, timeout=args.timeout, semantics=mode, observe=args.observe)
        except CannotRun as exc:
            from tfsem.checking.verdict import Verdict
            v = Verdict("unknown", reason=exc.naming_nodes(case.original), semantics=mode,
                        observe=args.observe)
        replay = None
        if v.verdict == "unsound" and v.counterexample is not None and args.replay:
            from .grappler import replay_json  # noqa: PLC0415
            rep = replay_within(rewritten, v, deadline, args.timeout, original=original)
            if rep.confirmed and "tensorflow" not in v.confirmed:
                v.confirmed.append("tensorflow")
            replay = replay_json(rep)
        result["verdicts"][mode] = v.to_json()
        result["verdicts"][mode]["text"] = v.describe() + \
            (f"\n  {replay['text']}" if replay is not None else "")
        if v.verdict == "unsound":
            result["verdicts"][mode]["tensorflow_replay"] = replay or \
                {"status": "skipped", "confirmed": False, "reason": "--no-replay"}
        s = v.exit_status
        if s == EXIT_FOUND or (s == EXIT_UNKNOWN and worst == EXIT_OK):
            worst = s
    result["status"] = "checked"
    return worst


def replay_within(rewritten, verdict, deadline: float, seconds: float, original=None):
    """`verdict`'s counterexample replayed on TensorFlow (the rewritten
    program exported, as `tfsem check` replays a program) before `deadline`
    (a time.monotonic() value, the end of the mode's budget of `seconds`):
    the replay looks at it between its stages and gives it to TensorFlow's
    run; TensorFlow's import and loading the graph, which look at no clock,
    are left behind when they outlast it (common.call_within).  Past it, a
    Replay with ``budget``: not replayed within the budget, the verdict the
    oracle's alone.  `original` (the input module's program), when given:
    the original's witness schedules are replayed too, exported, in the
    same deadline, and the replay stays confirmed only where TensorFlow
    gives the oracle's outcome for each (backends/tensorflow.py
    `with_original`)."""
    from tfsem.backends import tensorflow as tfb  # noqa: PLC0415 (TensorFlow: here only)

    from .grappler import replay_in_budget  # noqa: PLC0415
    label = "the output module read by tfsem, exported"
    cx = verdict.counterexample

    def run():
        rep = tfb.replay_program(rewritten, cx, observe=verdict.observe, label=label,
                                 deadline=deadline)
        if original is None:
            return rep
        return tfb.with_original(rep, original, cx, observe=verdict.observe, deadline=deadline,
                                 label="the input module read by tfsem, exported")

    return replay_in_budget(run, deadline, f"the time budget of {seconds:g} s", label)


def _print(result: dict) -> None:
    tf = result["tensorflow"]
    print(f"pipeline {result['pipeline']!r} on {result['graph']}: TensorFlow {tf['status']} "
          f"({tf['seconds']} s)")
    if result.get("message"):
        print(result["message"])
    for mode, v in result["verdicts"].items():
        text = v["text"].replace("\n", "\n  ")
        print(f"{mode}: {text}")
