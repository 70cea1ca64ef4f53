"""`tfsem run PROGRAM --backend numpy|cupy`: execute on real arrays, N times."""

from __future__ import annotations

import argparse

from tfsem.cli import EXIT_OK, UsageError

from .common import add_graph_options, load_from_args, print_runtime_rows
from .common import (add_semantics_options, add_sigma_options, bounded_float, bounded_int, positive_int,
                     print_json, seed_int, sigma_from_args)


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
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true",
                   help="let TensorFlow print its own log lines (silenced by default)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .blocking_sessions import blocking_session  # noqa: PLC0415
    session = blocking_session(args.program, args)
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
        from .grappler import run_backend
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
    program = load_from_args(args.program, args)
    session = args.session
    feeds, init = sigma_from_args(program, args)
    try:
        from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
        tfb.tensorflow()
        from tfsem.backends.tensorflow_sessions import run_session_threads  # noqa: PLC0415
    except ImportError as exc:
        print(f"tfsem run: --backend tensorflow needs TensorFlow (pip install "
              f"'tfsem[tensorflow]'): {exc}", file=sys.stderr)
        return 2
    try:
        seen, done = run_session_threads(session, init, args.runs, feeds, observe=args.observe,
                                         inter_op_threads=args.workers or tfb.DEFAULT_INTER_OP_THREADS)
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    try:
        allowed, note = outcome_set(program, feeds, init, args.semantics, args.observe), None
    except BudgetExceeded as exc:
        allowed, note = None, f"the oracle's outcomes are out of reach: {exc}"
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
    return 1 if findings else EXIT_OK
