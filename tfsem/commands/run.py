"""`tfsem run PROGRAM --backend numpy|cupy`: execute on real arrays, N times."""

from __future__ import annotations

import argparse

from tfsem.cli import EXIT_OK, UsageError

from .common import add_graph_options, load_from_args, make_duration
from .common import print_runtime_rows
from .common import (add_semantics_options, add_sigma_options, bounded_float, bounded_int, positive_int,
                     print_json, seed_int, sigma_from_args)


from .run_budget import TF_TIMEOUT
from .run_budget import budget as _budget, left, oracle_first, out_of_time as _out_of_time, stop_at


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="execute a program on numpy or cupy arrays",
                       description="Execute a program concretely N times, each run under a random "
                                   "schedule drawn from the seed (random) or on a concurrent "
                                   "thread pool (threads), and print each distinct outcome "
                                   "observed and how many runs gave it.")
    p.add_argument("program", help="a tfsem.program/1 JSON file, or a TensorFlow graph")
    add_graph_options(p)
    p.add_argument("--backend", choices=("numpy", "cupy", "tensorflow", "xla"), required=True,
                   help="array library: numpy (CPU) or cupy (NVIDIA GPU, pip install 'tfsem[gpu]'); "
                        "or TensorFlow's own runtime on a GraphDef: tensorflow (the executor) or "
                        "xla (XLA auto-clustering on CPU), pip install 'tfsem[tensorflow]'")
    p.add_argument("--executor", choices=("random", "threads"), default="random",
                   help="random schedules from --seed (default), or a thread pool that fires "
                        "every node as soon as its inputs arrive")
    p.add_argument("--runs", type=bounded_int(1, 10_000_000), default=100, help="number of runs (default 100)")
    p.add_argument("--seed", type=seed_int, default=0,
                   help="seed of the random schedules (threads: of the --jitter delays)")
    p.add_argument("--workers", type=bounded_int(1, 1024), default=None,
                   help="threads: pool size (default one per node, at most 32)")
    p.add_argument("--jitter", type=bounded_float(0.0, 10.0), default=0.0, metavar="SECONDS",
                   help="threads: sleep up to this long before each step, to vary interleavings")
    add_sigma_options(p)
    add_semantics_options(p)
    p.add_argument("--timeout", type=make_duration(hi=3600.0), default=None,
                   help=f"--backend tensorflow or xla: time budget of the whole command in "
                        f"seconds (default {TF_TIMEOUT:g}), from the process's start to its "
                        "last byte: TensorFlow's import, reading the graph, the runs, the "
                        "oracle's outcome set and the report (docs/budgets.md); running out "
                        "gives `unknown` (exit 3) with the runs done so far, or a finding "
                        "among them (exit 1).  numpy and cupy take none, except a session "
                        "with critical sections or queues on numpy (no default: no run "
                        "starts past it)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true",
                   help="let TensorFlow print its own log lines (silenced by default)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .blocking_sessions import blocking_session  # noqa: PLC0415
    if args.backend in ("tensorflow", "xla") or getattr(args, "timeout", None) is not None:
        # the budget starts before a session's graph is read: its import
        # (graphdef.ImportTimeout past it) comes out of it too
        deadline = _budget(args)
        args.import_deadline = stop_at(deadline)
    # (a session with critical sections or queues on numpy runs on the
    # session machine, which reads the clock between runs: it takes --timeout)
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    try:
        session = blocking_session(args.program, args)
    except ImportTimeout as exc:
        return _out_of_time(args, _budget(args), f"while the session's graph was read and "
                                                 f"imported ({exc}): no run")
    if getattr(args, "timeout", None) is not None and args.backend not in ("tensorflow", "xla") \
            and session is None:
        raise UsageError(f"--timeout applies to --backend tensorflow or xla (and to a session "
                         f"with critical sections or queues on numpy); --backend "
                         f"{args.backend} runs take no time budget")
    if session is not None:  # critical sections or queues: the session machine
        if args.backend == "tensorflow":
            from .blocking_sessions import run_tensorflow  # noqa: PLC0415
            return run_tensorflow(args, session)
        if args.backend != "numpy" or args.executor != "random":
            raise UsageError(f"{args.program}: a session with critical sections or queues runs "
                             "on --backend numpy --executor random, or on --backend tensorflow")
        from .blocking_sessions import run as blocking_run  # noqa: PLC0415
        return blocking_run(args, session)
    if args.backend in ("tensorflow", "xla"):
        from tfsem.graphdef.cliopts import is_session_path
        if is_session_path(args.program):
            if args.backend == "xla":
                raise UsageError(f"{args.program}: a session runs on --backend numpy, cupy or "
                                 "tensorflow (not xla)")
            return run_session_on_tensorflow(args)
        return run_backend(args)
    from tfsem.backends.arraymodule import BackendUnavailable, get_backend
    from tfsem.backends.execute import run_random
    from tfsem.backends.threads import run_threads

    if args.jitter < 0:
        raise UsageError("--jitter must not be negative")
    program = load_from_args(args.program, args)
    feeds, init = sigma_from_args(program, args)
    try:
        backend = get_backend(args.backend)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None
    from tfsem.oracle.explore import BudgetExceeded
    from tfsem.oracle.functions import CannotRun
    try:
        if args.executor == "threads":
            seen = run_threads(program, feeds, init, args.runs, backend, args.semantics, args.observe,
                               workers=args.workers, jitter=args.jitter, seed=args.seed)
        else:
            seen = run_random(program, feeds, init, args.runs, args.seed, backend, args.semantics,
                              args.observe)
    except CannotRun as exc:  # an op of an imported graph with no concrete model
        raise UsageError(exc.naming_nodes(program)) from None
    except BudgetExceeded as exc:  # the tensor size limit
        if args.json:
            print_json({"verdict": "unknown", "reason": str(exc)})
        else:
            print(f"unknown: {exc}")
        return 3
    ranked = sorted(seen.items(), key=lambda item: -item[1])   # stable: first seen first on ties
    from .outcomes import describe, session_json
    session = getattr(args, "session", None)
    if args.json:
        print_json({"runs": seen.runs, "backend": backend.label, "executor": args.executor,
                    "outcomes": [dict(session_json(o.to_json(), session, schedule=list(s)), runs=n)
                                 for o, n, s in ranked]})
        return EXIT_OK
    distinct = len(ranked)
    how = (f"random schedules, seed {args.seed}" if args.executor == "random"
           else f"thread pool{f', jitter {args.jitter:g} s' if args.jitter else ''}")
    print(f"{seen.runs} run{'s' if seen.runs != 1 else ''} on {backend.label} ({how}, "
          f"{args.semantics}): {distinct} distinct outcome{'s' if distinct != 1 else ''}")
    for i, (o, n, s) in enumerate(ranked, 1):
        print(f"  {i}. {describe(o, session)}   ({n} run{'s' if n != 1 else ''})")
        print(f"     schedule: {' '.join(s)}")
    return EXIT_OK


def run_session_on_tensorflow(args: argparse.Namespace) -> int:
    """`tfsem run SESSION --backend tensorflow`: each of --runs trials runs
    the session's runs as concurrent `Session.run` calls on threads
    (backends/tensorflow_sessions.py), and each distinct outcome is checked
    against the oracle's outcome set of the expanded session at the same σ
    (--semantics atomic: TensorFlow's executor runs an AssignAddVariableOp
    under the variable's lock): one outside it is a finding (exit 1)."""
    import sys  # noqa: PLC0415

    from tfsem.oracle.dispatch import outcome_set  # noqa: PLC0415
    from tfsem.oracle.explore import BudgetExceeded  # noqa: PLC0415
    from .outcomes import describe, session_json  # noqa: PLC0415
    from .common import StageTimeout, call_within  # noqa: PLC0415
    from .grappler import _finish  # noqa: PLC0415
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    deadline = _budget(args)   # (docs/budgets.md: the trials are cut as a whole)
    try:
        program = load_from_args(args.program, args)
    except ImportTimeout as exc:
        return _out_of_time(args, deadline, f"while the session's graph was read and imported "
                                            f"({exc}): no trial")
    session = args.session
    feeds, init = sigma_from_args(program, args)
    try:
        from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
        call_within(left(deadline), tfb.tensorflow)
        from tfsem.backends.tensorflow_sessions import run_session_threads  # noqa: PLC0415
    except ImportError as exc:
        print(f"tfsem run: --backend tensorflow needs TensorFlow (pip install "
              f"'tfsem[tensorflow]'): {exc}", file=sys.stderr)
        return 2
    except StageTimeout:
        return _out_of_time(args, deadline, "while TensorFlow was imported: no trial")
    try:
        seen, done = call_within(left(deadline), run_session_threads, session,
                                 init, args.runs, feeds, observe=args.observe,
                                 inter_op_threads=args.workers or tfb.DEFAULT_INTER_OP_THREADS)
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    except StageTimeout:
        return _out_of_time(args, deadline, f"during the {args.runs} trials on TensorFlow, "
                                            "which were left behind: no outcome reported")
    cut = False     # (the oracle's outcome set cut by the budget: `unknown`)
    try:
        allowed, note = outcome_set(program, feeds, init, args.semantics, args.observe,
                                    max_seconds=max(left(deadline),
                                                    0.05)), None
    except BudgetExceeded as exc:
        allowed, note = None, f"the oracle's outcomes are out of reach: {exc}"
        if left(deadline) <= 0.05:
            cut = True
    except Exception as exc:  # noqa: BLE001 (an op the oracle cannot run concretely)
        allowed, note = None, f"the oracle cannot enumerate this session: {exc}"
    rows = [(o, n, None if allowed is None else o in allowed) for o, n in seen.most_common()]
    findings = sum(1 for _, _, inside in rows if inside is False)
    if args.json:
        print_json({"runs": done, "backend": "tensorflow", "executor": "threads",
                    "outcomes": [dict(session_json(o.to_json(), session), runs=n, in_oracle=inside)
                                 for o, n, inside in rows],
                    "oracle_count": None if allowed is None else allowed.count,
                    "oracle_note": note, "findings": findings})
    else:
        print(f"{done} trial{'s' if done != 1 else ''} on the TensorFlow executor, the "
              f"{len(session.runs)} runs as concurrent Session.run calls: {len(rows)} distinct "
              f"outcome{'s' if len(rows) != 1 else ''}"
              + ("" if allowed is None else f"; the oracle allows {allowed.count}"))
        print_runtime_rows(rows, lambda o: describe(o, session), "trial")
        if note:
            print(f"  {note}")
    return _finish(args, 1 if findings else 3 if cut else EXIT_OK)


# --- `tfsem run GRAPH --backend tensorflow|xla` ----------------------------------------


def program_names(outcome, named_as: dict[str, str]):
    """`outcome` (of the exported graph imported back, whose outputs are the
    nodes fetched) with each output named as the program names it
    (`named_as`: node -> output, where they differ: the output `s:1` is
    fetched at node `s_1`).  Judged against the oracle's set before: only
    the names shown change."""
    if not named_as:
        return outcome
    from tfsem.oracle.outcomes import Outcome  # noqa: PLC0415
    return Outcome(tuple(sorted(((named_as.get(k, k), v) for k, v in outcome.outputs),
                                key=lambda kv: kv[0])), outcome.state)


def run_backend(args: argparse.Namespace) -> int:
    """`tfsem run GRAPH --backend tensorflow|xla`: run a GraphDef (.pb/.pbtxt)
    N times on TensorFlow's executor (or XLA-clustered), list the distinct
    outcomes, and check each against the oracle's outcome set of the imported
    graph at the same σ: an outcome outside it is a finding (exit 1).

    All of it within one budget (--timeout, docs/budgets.md): TensorFlow's
    import and its loading of the graph are left behind when they outlast
    it (common.call_within); each run is TensorFlow's with the time left
    (RunOptions.timeout_in_ms), and no run starts past it; the oracle's
    outcome set gets what the runs left.  A budget that runs out is
    `unknown` (exit 3), with the runs made so far, unless one of them is a
    finding (exit 1)."""
    import sys  # noqa: PLC0415
    from collections import Counter  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.graphdef import grappler as g  # noqa: PLC0415
    from tfsem.oracle.dispatch import outcome_set  # noqa: PLC0415

    from .common import StageTimeout, call_within  # noqa: PLC0415
    from .grappler import _finish, _graph_interface, _import  # noqa: PLC0415

    deadline = _budget(args)
    path = Path(args.program)
    if not path.exists():
        raise UsageError(f"{path}: no such file")

    try:
        from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
        # TensorFlow's import (5 s, a minute under load) looks at no clock
        call_within(left(deadline), tfb.tensorflow)
    except g.TensorFlowMissing:
        print(f"tfsem run: --backend {args.backend} {g.INSTALL_HINT}", file=sys.stderr)
        return 2
    except StageTimeout:
        return _out_of_time(args, deadline, "while TensorFlow was imported: no run")
    try:
        # (a tfsem program's output -> the node fetched for it, where they
        # differ: the outcomes are shown under the program's names)
        named_as: dict[str, str] = {}
        if path.suffix in (".pb", ".pbtxt"):
            from google.protobuf.message import DecodeError  # noqa: PLC0415
            from google.protobuf.text_format import ParseError  # noqa: PLC0415
            try:
                graph_def = g.as_graph_def(path)
            except (DecodeError, ParseError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path}: not a GraphDef: {exc}") from None
            fetches, targets = _graph_interface(path, graph_def,
                                                getattr(args, "fetch", None) or [],
                                                getattr(args, "target", None) or [])
            program = _import(graph_def, fetches, targets, str(path),
                              deadline=stop_at(deadline))
        elif path.is_dir() or path.suffix == ".pb":
            raise UsageError(f"{path}: --backend {args.backend} runs a GraphDef (.pb, .pbtxt) "
                             "or a tfsem program (exported with `tfsem export`)")
        else:
            # a tfsem program: exported (graphdef/exporter.py); every node of the
            # program runs (as a target), as every node fires once in a tfsem run
            from tfsem.graphdef.exporter import export_graph  # noqa: PLC0415
            from tfsem.graphdef.proto import encode  # noqa: PLC0415
            from tfsem.oracle.jsonio import load_program  # noqa: PLC0415
            program = load_program(path)
            fetch_of: dict[str, str] = {}
            graph = export_graph(program, fetches=fetch_of)
            graph_def = g.as_graph_def(encode("GraphDef", graph))
            # (the nodes fetched: an output named `s:1` is node `s_1`; the
            # runs and the oracle's set name it so, and the rows shown name
            # it `s:1` again, `program_names`)
            fetches = list(fetch_of.values())
            named_as = {node: out for out, node in fetch_of.items() if node != out}
            targets = [n["name"] for n in graph["node"]
                       if n["op"] != "Placeholder" and n["name"] not in fetches]
            # the oracle judges what TensorFlow runs: the exported graph imported
            # back (float ops then flush subnormals, as TensorFlow's CPU kernels do)
            program = _import(graph_def, fetches, targets, str(path),
                              deadline=stop_at(deadline))
    except ImportTimeout as exc:
        return _out_of_time(args, deadline, f"while the graph was read and imported ({exc}): "
                                            "no run")
    feeds, init = sigma_from_args(program, args)
    threads = args.workers or tfb.DEFAULT_INTER_OP_THREADS
    seen = tfb.Observed(0, Counter())
    clusters = None
    cut = None
    try:
        # TensorFlow loading the graph looks at no clock either
        runner = call_within(left(deadline), tfb.GraphRunner, graph_def, {f: f for f in fetches},
                             targets, mode=args.backend, inter_op_threads=threads,
                             observe=args.observe)
    except StageTimeout:
        return _out_of_time(args, deadline, "while TensorFlow loaded the graph: no run")
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    # the oracle's outcome set first (run_budget.oracle_first)
    try:
        allowed, oracle_note, oracle_cut = oracle_first(
            deadline, lambda seconds: outcome_set(program, feeds, init, args.semantics,
                                                  args.observe, max_seconds=seconds))
    except Exception as exc:  # an op the oracle cannot run concretely
        allowed, oracle_note, oracle_cut = None, f"the oracle cannot enumerate this graph: {exc}", False
    try:
        with runner:
            for _ in range(args.runs):
                if left(deadline) <= 0:
                    cut = f"after {seen.runs} of {args.runs} runs"
                    break
                try:
                    seen.counts[runner.run_once(feeds, init, deadline=stop_at(deadline))] += 1
                except tfb.ReplayTimeout:
                    cut = f"during run {seen.runs + 1} of {args.runs}"
                    break
                seen.runs += 1
            if args.backend == "xla" and cut is None:
                try:
                    clusters = call_within(left(deadline), runner.clusters, feeds, init)
                except StageTimeout:
                    cut = "while XLA's clusters were traced (after every run)"
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    ranked = sorted(seen.items(), key=lambda item: -item[1])
    rows = [(program_names(o, named_as), n, None if allowed is None else (o in allowed))
            for o, n in ranked]
    findings = sum(1 for _, _, inside in rows if inside is False)
    budget_note = None if cut is None else (
        f"the time budget of {deadline.seconds:g} s ran out {cut}: the runs above are all "
        "that were made")
    if oracle_cut and budget_note is None:
        budget_note = (f"the time budget of {deadline.seconds:g} s ran out while the oracle's "
                       "outcome set was computed: the runs are not judged")
    label = "TensorFlow executor" if args.backend == "tensorflow" else "XLA auto-clustering (CPU)"
    if args.json:
        out = {"runs": seen.runs, "backend": args.backend, "inter_op_threads": threads,
               "fetches": fetches, "targets": targets,
               "outcomes": [dict(o.to_json(), runs=n, in_oracle=inside)
                            for o, n, inside in rows],
               "oracle_count": None if allowed is None else allowed.count,
               "oracle_note": oracle_note, "findings": findings,
               "xla_clusters": clusters}
        if budget_note is not None:
            out.update(budget=True, reason=budget_note)
        print_json(out)
    else:
        print(f"{seen.runs} run{'s' if seen.runs != 1 else ''} on {label} ({threads} inter-op "
              f"threads): {len(rows)} distinct outcome{'s' if len(rows) != 1 else ''}"
              + ("" if allowed is None else f"; the oracle allows {allowed.count}"))
        print_runtime_rows(rows, lambda o: o.describe(), "run")
        if oracle_note:
            print(f"  {oracle_note}")
        if clusters is not None:
            shown = ", ".join(f"{k} [{' '.join(v)}]" for k, v in clusters["clusters"].items())
            print(f"  XLA clusters (variables each touches): {shown or 'none'}")
            if not shown:
                print("  (no XLA cluster formed: nothing here can be clustered, or TensorFlow "
                      "started in this process before tfsem could set TF_XLA_FLAGS; these runs "
                      "were then the plain executor's)")
        if budget_note is not None:
            print(f"  unknown: {budget_note}")
    status = 1 if findings else 3 if budget_note is not None else EXIT_OK
    # the process ends with its report, not when TensorFlow's teardown is done
    return _finish(args, status)
