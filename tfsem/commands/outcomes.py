"""`tfsem outcomes PROGRAM`: the outcome set, each outcome with a witness."""

from __future__ import annotations

import argparse

from tfsem.cli import EXIT_OK, EXIT_UNKNOWN, UsageError

from .common import ENGINES, MAX_SECONDS_OUTCOMES as DEFAULT_MAX_SECONDS, MAX_STATES as DEFAULT_MAX_STATES
from .session_text import describe, session_json  # noqa: F401 (run.py reads them here)
from .common import (add_graph_options, add_semantics_options, add_sigma_options, duration, load_from_args,
                     positive_int, print_json, sigma_from_args)


def add_parser(sub) -> None:
    p = sub.add_parser("outcomes", help="the set of outcomes of a program at given inputs",
                       description="Enumerate Outcomes(P, σ), each with one witness schedule.")
    p.add_argument("program", help="a tfsem.program/1 JSON file, or a TensorFlow graph")
    add_graph_options(p)
    add_sigma_options(p)
    add_semantics_options(p)
    p.add_argument("--limit", type=positive_int, default=None,
                   help="list at most N outcomes (the count stays exact)")
    p.add_argument("--max-states", type=positive_int, default=DEFAULT_MAX_STATES,
                   help=f"state budget (default {DEFAULT_MAX_STATES})")
    p.add_argument("--timeout", type=duration, default=DEFAULT_MAX_SECONDS,
                   help=f"time budget in seconds (default {DEFAULT_MAX_SECONDS:g})")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="how the set is computed (the set is the same): reference (memoized "
                        "interleavings), readsfrom (one run per reads-from class), symmetry "
                        "(one run per orbit of identical threads), or auto (the default: chosen "
                        "per independent component by its structure); "
                        "see docs/oracle.md")
    p.add_argument("--max-iterations", type=positive_int, default=16,
                   help="iteration bound of each loop of a program with control flow "
                        "(default 16; a run past it makes the answer unknown)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef import ImportTimeout  # noqa: PLC0415
    from tfsem.graphdef.cliopts import remaining, start_budget  # noqa: PLC0415
    from tfsem.oracle.dispatch import outcome_set  # noqa: PLC0415
    from tfsem.oracle.explore import BudgetExceeded  # noqa: PLC0415
    from tfsem.oracle.functions import CannotRun  # noqa: PLC0415
    from tfsem.oracle.readsfrom import Unsupported  # noqa: PLC0415
    # the budget covers reading and importing a graph too
    started = start_budget(args, args.timeout) if args.timeout else None
    from .blocking_sessions import blocking_session  # noqa: PLC0415
    session = blocking_session(args.program, args)
    if session is not None:  # critical sections or queues: the session machine
        from .blocking_sessions import outcomes as blocking_outcomes  # noqa: PLC0415
        return blocking_outcomes(args, session)
    try:
        program = load_from_args(args.program, args)
    except ImportTimeout as exc:
        if args.json:
            print_json({"verdict": "unknown", "reason": str(exc)})
        else:
            print(f"unknown: {exc}")
        return EXIT_UNKNOWN
    feeds, init = sigma_from_args(program, args)
    try:
        result = outcome_set(program, feeds, init, args.semantics, args.observe,
                             max_states=args.max_states,
                             max_seconds=(remaining(args, args.timeout, started) if started
                                          is not None else args.timeout),
                             engine=args.engine, max_iterations=args.max_iterations)
    except Unsupported as exc:  # --engine readsfrom on a program it does not apply to
        raise UsageError(f"--engine {args.engine}: {exc}; use --engine auto or reference") from None
    except CannotRun as exc:  # an op of an imported graph with no concrete model
        raise UsageError(exc.naming_nodes(program)) from None
    except BudgetExceeded as exc:
        if args.json:
            print_json({"verdict": "unknown", "reason": str(exc)})
        else:
            print(f"unknown: {exc}")
        return EXIT_UNKNOWN
    listed = result.as_dict(args.limit)
    engines = getattr(result, "engines", ["reference"] * len(result.components))
    stats = {"states": result.states, "seconds": round(result.seconds, 6),
             "components": len(result.components), "engine": args.engine,
             "components_by_engine": {e: engines.count(e) for e in sorted(set(engines))}}
    session = getattr(args, "session", None)
    if args.json:
        print_json({"count": result.count,
                    "outcomes": [session_json(o.to_json(), session, schedule=list(w))
                                 for o, w in listed.items()],
                    "stats": stats})
        return EXIT_OK
    count = result.count
    print(f"{count} outcome{'s' if count != 1 else ''} "
          f"({result.states} states explored in {result.seconds:.3f} s)")
    if session is not None:
        print(f"  session: {len(session.runs)} {session.order} run(s) "
              f"{', '.join(session.run_names)}; engine {', '.join(sorted(set(engines)))}")
    for i, (o, w) in enumerate(listed.items(), 1):
        print(f"  {i}. {describe(o, session)}")
        print(f"     schedule: {' '.join(w)}")
    if len(listed) < count:
        print(f"  ... {count - len(listed)} more (raise --limit)")
    return EXIT_OK
