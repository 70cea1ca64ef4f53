"""`tfsem outcomes`, `check` and `run` on a session with critical sections
or queues (oracle/blocking.py; docs/sessions.md): their semantics is not a
program's, so these commands explore it with the session machine instead of
the program engines.  `check` enumerates both outcome sets at several σ: it
answers `unsound` with a counterexample, or `no-counterexample`; `sound`
only for a rewrite identical to the original (no proof is attempted)."""

from __future__ import annotations

import argparse
import random
import time

from tfsem.cli import EXIT_OK, EXIT_UNKNOWN, UsageError

from .common import print_json, sigma_from_args

#: σ a check tries at most (all zero, all uninitialized, then random)
CHECK_SIGMAS = 24


def blocking_session(path, args: argparse.Namespace):
    """The session at `path` when it is one with critical sections or
    queues (also set as args.session), else None."""
    from tfsem.graphdef import is_graph_path  # noqa: PLC0415
    from tfsem.graphdef.cliopts import is_session_path, load_session_from_args  # noqa: PLC0415
    if is_graph_path(path) or not is_session_path(path):
        return None
    from tfsem.oracle.jsonio import read_json_file  # noqa: PLC0415
    from tfsem.oracle.blocking import has_blocking_json  # noqa: PLC0415
    data = read_json_file(path)
    if not has_blocking_json(data.get("program")) and not _graph_may_block(path, data):
        return None
    session = load_session_from_args(path, args)
    if not session.blocking:
        return None
    args.session = session
    return session


def _graph_may_block(path, data) -> bool:
    """Whether the session names a TensorFlow graph whose bytes hold the name
    of a mutex or queue op (a cheap look: the graph is imported only then;
    oracle/opdefs/queues.py)."""
    from pathlib import Path  # noqa: PLC0415
    prog = data.get("program")
    if not isinstance(prog, dict) or not isinstance(prog.get("graph"), str):
        return False
    g = Path(path).parent / prog["graph"]
    if g.is_dir():
        g = g / "saved_model.pb"
    try:
        with open(g, "rb") as fh:
            head = fh.read(256 << 20)
    except OSError:
        return False
    return any(op in head for op in (b"MutexLock", b"FIFOQueueV2"))


def _describe(o, session) -> str:
    from .session_text import describe  # noqa: PLC0415
    return o.describe() if not hasattr(o, "state") or o.state is None and not o.outputs \
        and hasattr(o, "blocked") else describe(o, session)


def _json(o, session, **extra) -> dict:
    from .session_text import session_json  # noqa: PLC0415
    if hasattr(o, "blocked"):
        return dict(o.to_json(), **extra)
    return session_json(o.to_json(), session, **extra)


def outcomes(args: argparse.Namespace, session) -> int:
    from tfsem.oracle import blocking  # noqa: PLC0415
    from tfsem.oracle.budget import BudgetExceeded  # noqa: PLC0415
    program, table = session.expand_blocking()
    feeds, init = sigma_from_args(program, args)
    started = time.monotonic()
    try:
        found, states = blocking.outcomes(program, table, feeds, init, args.semantics,
                                          args.observe, max_states=args.max_states,
                                          max_seconds=args.timeout)
    except BudgetExceeded as exc:
        if args.json:
            print_json({"verdict": "unknown", "reason": str(exc)})
        else:
            print(f"unknown: {exc}")
        return EXIT_UNKNOWN
    except blocking.BlockingError as exc:
        raise UsageError("; ".join(str(v) for v in exc.violations)) from None
    seconds = time.monotonic() - started
    items = list(found.items())[: args.limit] if args.limit else list(found.items())
    deadlocks = sum(1 for o in found if isinstance(o, blocking.Deadlock))
    if args.json:
        print_json({"count": len(found), "deadlocks": deadlocks,
                    "outcomes": [_json(o, session, schedule=list(w)) for o, w in items],
                    "stats": {"states": states, "seconds": round(seconds, 6),
                              "engine": "session-blocking"}})
        return EXIT_OK
    n = len(found)
    print(f"{n} outcome{'s' if n != 1 else ''} ({states} states explored in {seconds:.3f} s)")
    print(f"  session: {len(session.runs)} {session.order} run(s) {', '.join(session.run_names)}; "
          f"critical sections and queues (engine session-blocking)"
          + (f"; {deadlocks} deadlock{'s' if deadlocks != 1 else ''}" if deadlocks else ""))
    for i, (o, w) in enumerate(items, 1):
        print(f"  {i}. {_describe(o, session)}")
        print(f"     schedule: {' '.join(w)}")
    if len(items) < n:
        print(f"  ... {n - len(items)} more (raise --limit)")
    return EXIT_OK


def run(args: argparse.Namespace, session) -> int:
    """`tfsem run` on numpy: --runs runs, each under a random schedule."""
    from tfsem.oracle import blocking  # noqa: PLC0415
    program, table = session.expand_blocking()
    feeds, init = sigma_from_args(program, args)
    machine = blocking.Machine(program, table, args.semantics)
    rng = random.Random(args.seed)
    seen: dict = {}
    for _ in range(args.runs):
        try:
            o, sched = blocking.random_run(machine, feeds, init, rng, args.observe)
        except blocking.BlockingError as exc:
            raise UsageError("; ".join(str(v) for v in exc.violations)) from None
        count, first = seen.get(o, (0, sched))
        seen[o] = (count + 1, first)
    ranked = sorted(seen.items(), key=lambda kv: -kv[1][0])
    if args.json:
        print_json({"runs": args.runs, "backend": "numpy", "executor": "random",
                    "outcomes": [dict(_json(o, session, schedule=list(s)), runs=n)
                                 for o, (n, s) in ranked]})
        return EXIT_OK
    print(f"{args.runs} run{'s' if args.runs != 1 else ''} (random schedules, seed {args.seed}, "
          f"{args.semantics}; critical sections and queues): {len(ranked)} distinct outcome"
          f"{'s' if len(ranked) != 1 else ''}")
    for i, (o, (n, s)) in enumerate(ranked, 1):
        print(f"  {i}. {_describe(o, session)}   ({n} run{'s' if n != 1 else ''})")
        print(f"     schedule: {' '.join(s)}")
    return EXIT_OK


def _sigmas(program, seed: int = 0):
    """σ to try: all variables 0, all uninitialized, then random ones."""
    import numpy as np  # noqa: PLC0415

    from tfsem.generators.strategies import random_inputs  # noqa: PLC0415
    from tfsem.oracle.values import DTYPES, Tensor  # noqa: PLC0415
    feeds0, _ = random_inputs(program, seed)
    zeros = {x: Tensor(np.zeros(t.shape, dtype=DTYPES[t.dtype]), t.dtype)
             for x, t in program.variables.items()}
    yield feeds0, zeros
    yield feeds0, {}
    for k in range(1, CHECK_SIGMAS - 1):
        yield random_inputs(program, seed + k)


def check(args: argparse.Namespace, session) -> int:
    """`check SESSION REWRITTEN` for a session with sections or queues."""
    from tfsem.oracle import blocking  # noqa: PLC0415
    from tfsem.oracle.budget import BudgetExceeded  # noqa: PLC0415
    from tfsem.oracle.jsonio import read_json_file  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415
    from tfsem.oracle.session import SessionError  # noqa: PLC0415
    from tfsem.oracle.values import format_value  # noqa: PLC0415

    semantics = args.semantics or "atomic"
    observe = args.observe or "outputs+state"

    def verdict(name: str, reason: str = "", **extra) -> int:
        status = {"sound": 0, "no-counterexample": 0, "unsound": 1, "invalid": 1, "unknown": 3}[name]
        lines = extra.pop("lines", [])
        if args.json:
            print_json(dict({"verdict": name, "reason": reason, "semantics": semantics,
                             "observe": observe}, **extra))
        else:
            print(name + (f": {reason}" if reason else ""))
            for line in lines:
                print("  " + line)
        return status

    from tfsem.oracle.session import is_session  # noqa: PLC0415
    from tfsem.graphdef import is_graph_path  # noqa: PLC0415
    raw_p = (session.raw or {}).get("program") if isinstance(session.raw, dict) else None
    graph_session = None
    if is_graph_path(args.rewritten) and isinstance(raw_p, dict) and "graph" in raw_p:
        # a rewrite of the session's graph: the same runs over it (oracle/opdefs/queues.py)
        import os  # noqa: PLC0415

        from tfsem.graphdef.cliopts import session_graph_loader  # noqa: PLC0415
        from tfsem.oracle.session import session_from_json  # noqa: PLC0415
        raw2 = dict(session.raw, program=dict(raw_p, graph=os.path.abspath(args.rewritten)))
        try:
            graph_session = session_from_json(raw2, where=str(args.rewritten),
                                              load_graph=session_graph_loader())
        except ProgramError as exc:
            return verdict("invalid", "the rewritten graph cannot run the session's runs: "
                           + "; ".join(str(v) for v in exc.violations))
        rewritten, rtable = graph_session.program, graph_session.blocking
    else:
        data = read_json_file(args.rewritten)
        if is_session(data):
            raise UsageError(f"{args.rewritten}: this is a session; the rewritten side is the "
                             "rewrite of the session's program (a tfsem.program/1 file)")
        try:
            rewritten, rtable = blocking.program_from_json(data, where=str(args.rewritten))
        except ProgramError as exc:
            return verdict("invalid", "the rewrite is not a program: "
                           + "; ".join(str(v) for v in exc.violations))
    if rtable.interface() != session.blocking.interface() or \
            set(rewritten.variables) != set(session.program.variables):
        return verdict("invalid", "the rewrite declares other variables or queues than the "
                       "session's program")
    if rewritten == session.program and rtable == session.blocking:
        return verdict("sound", "the rewritten program is the original program")
    try:
        p1, t1 = session.expand_blocking()
        p2, t2 = graph_session.expand_blocking() if graph_session is not None else \
            session.expand_blocking(rewritten, rtable)
    except (SessionError, ProgramError) as exc:
        return verdict("invalid", "the rewrite cannot run the session's runs: "
                       + "; ".join(str(v) for v in exc.violations))
    # closed:Q shows in both outcome sets alike when either program closes Q
    import dataclasses  # noqa: PLC0415
    shown = t1.closed_queues() | t2.closed_queues()
    t1, t2 = (dataclasses.replace(t, closable=shown) for t in (t1, t2))
    if set(p2.feeds) - set(p1.feeds):
        return verdict("invalid", "the rewrite reads feeds the original lacks: "
                       + ", ".join(sorted(set(p2.feeds) - set(p1.feeds))))
    started = time.monotonic()
    timeout = args.timeout
    tried = 0
    try:
        for feeds, init in _sigmas(p1):
            if time.monotonic() - started > timeout:
                break
            left = max(timeout - (time.monotonic() - started), 0.01)
            a, _ = blocking.outcomes(p1, t1, feeds, init, semantics, observe, max_seconds=left)
            left = max(timeout - (time.monotonic() - started), 0.01)
            b, _ = blocking.outcomes(p2, t2, {f: feeds[f] for f in p2.feeds}, init, semantics,
                                     observe, max_seconds=left)
            tried += 1
            extra = [o for o in b if o not in a]
            if extra:
                o = extra[0]
                differs = o.first_difference(list(a)) or {}
                where = ", ".join(f"{k} {v!r}" for k, v in differs.items())
                init_text = ", ".join(f"{x} = {format_value(v)}" for x, v in sorted(init.items())) \
                    or "every variable uninitialized"
                lines = [f"init:    {init_text}"]
                if feeds:
                    lines.append("feeds:   " + ", ".join(f"{f} = {format_value(v)}"
                                                         for f, v in sorted(feeds.items())))
                lines += [f"rewritten schedule: {' '.join(b[o])}",
                          f"rewritten outcome:  {_describe(o, session)}",
                          f"original outcomes at this σ ({len(a)}):"]
                lines += [f"  {i}. {_describe(x, session)}" for i, x in enumerate(a, 1)]
                return verdict("unsound", f"{where} differs" if where else "an added outcome",
                               differs=differs, tried=tried, lines=lines,
                               counterexample={"init": {x: v for x, v in _json_values(init).items()},
                                               "schedule": b[o], "outcome": _json(o, session),
                                               "original": [_json(x, session) for x in a]})
    except BudgetExceeded as exc:
        if tried == 0:
            return verdict("unknown", f"{exc} (enumerating the session's outcomes)", tried=tried)
    except blocking.BlockingError as exc:
        raise UsageError("; ".join(str(v) for v in exc.violations)) from None
    closes = any(kind == "QueueClose" for t in (t1, t2) for kind, _ in t.queue_ops.values())
    # (a closed queue fails ops, and errors are values: TensorFlow fails the
    # whole run there, the outcome only shows a fetch of the error)
    caveat = ("; a queue is closed, and a run TensorFlow fails there (a dequeue out of range, "
              "an enqueue or close cancelled) is judged only by its outputs and state: a rewrite "
              "that only makes a run fail is not found (docs/sessions.md, errors are values)"
              if closes else "")
    return verdict("no-counterexample", f"{tried} σ tried, every outcome of the rewritten "
                   "session among the original's (critical sections and queues are checked by "
                   f"enumeration, not proved){caveat}", tried=tried)


def _json_values(values) -> dict:
    from tfsem.oracle.values import value_to_json  # noqa: PLC0415
    return {k: value_to_json(v) for k, v in values.items()}


def run_tensorflow(args: argparse.Namespace, session) -> int:
    """`tfsem run SESSION --backend tensorflow` for a session with queues or
    critical sections: its runs as concurrent Session.run calls, each under
    a timeout (backends/tensorflow_blocking.py: real FIFO queues, sections
    as TensorFlow's mutexes); a trial whose calls time out is TensorFlow
    blocking.  Each trial is checked against the oracle: a trial in which
    runs R wait must match a deadlock outcome whose waiting instances are
    R's, a completed trial an outcome with its fetched values and final
    variables (exit 1 for a trial outside the oracle's set)."""
    import sys  # noqa: PLC0415

    from tfsem.oracle import blocking  # noqa: PLC0415
    try:
        from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
        tfb.tensorflow()
        from tfsem.backends.tensorflow_blocking import among_oracle, run_blocking_session_threads  # noqa: PLC0415,E501
    except ImportError as exc:
        print(f"tfsem run: --backend tensorflow needs TensorFlow: {exc}", file=sys.stderr)
        return 2
    program, table = session.expand_blocking()
    feeds, init = sigma_from_args(program, args)
    if feeds:
        raise UsageError("a session with queues or critical sections runs on TensorFlow with "
                         "its feeds given by the session (no free feeds)")
    try:
        seen, done = run_blocking_session_threads(session, init, args.runs,
                                                  timeout_ms=BLOCK_TIMEOUT_MS)
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    found, _ = blocking.outcomes(program, table, feeds, init, args.semantics)

    def allowed(waiting, values) -> bool:
        return among_oracle(found, waiting, values)
    rows = sorted(seen.items(), key=lambda kv: -kv[1])
    outside = 0
    print(f"{done} trials on the TensorFlow executor, the {len(session.runs)} runs as concurrent "
          f"Session.run calls, each with a {BLOCK_TIMEOUT_MS} ms timeout: {len(rows)} distinct "
          f"results; the oracle allows {len(found)} outcomes")
    for i, ((waiting, values), n) in enumerate(rows, 1):
        ok = allowed(waiting, values)
        outside += not ok
        what = (f"blocked: {', '.join(waiting)} still waiting at the timeout"
                if waiting else "completed")
        vals = ", ".join(f"{k} = {v}" for k, v in values) or "no values fetched"
        print(f"  {i}. {what}; {vals}   ({n} trial{'s' if n != 1 else ''})   "
              f"{'in the oracle set' if ok else 'NOT in the oracle set'}")
    return 1 if outside else EXIT_OK


#: how long a call of a session with queues may wait on TensorFlow before it
#: counts as blocked
BLOCK_TIMEOUT_MS = 2000
