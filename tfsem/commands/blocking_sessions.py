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
    """`tfsem run` on numpy: --runs runs, each under a random schedule.
    With --timeout T (docs/budgets.md: from the process's start), the clock
    is read between runs: no run starts past T less the report's 0.3 s, and
    the runs made are reported, `unknown` (exit 3), saying so.  A run is
    not cut: the margin is one run (each node fires once)."""
    from tfsem.oracle import blocking  # noqa: PLC0415
    deadline = None
    if getattr(args, "timeout", None) is not None:
        from .run_budget import budget, stop_at as _stop_at  # noqa: PLC0415
        deadline = budget(args)
        stop_at = _stop_at(deadline)
    program, table = session.expand_blocking()
    feeds, init = sigma_from_args(program, args)
    machine = blocking.Machine(program, table, args.semantics)
    rng = random.Random(args.seed)
    seen: dict = {}
    made, cut = 0, None
    for _ in range(args.runs):
        if deadline is not None and time.monotonic() >= stop_at:
            cut = (f"the time budget of {deadline.seconds:g} s ran out after {made} of "
                   f"{args.runs} runs: the runs above are all that were made")
            break
        made += 1
        try:
            o, sched = blocking.random_run(machine, feeds, init, rng, args.observe)
        except blocking.BlockingError as exc:
            raise UsageError("; ".join(str(v) for v in exc.violations)) from None
        count, first = seen.get(o, (0, sched))
        seen[o] = (count + 1, first)
    ranked = sorted(seen.items(), key=lambda kv: -kv[1][0])
    status = EXIT_OK if cut is None else EXIT_UNKNOWN
    if args.json:
        out = {"runs": made, "backend": "numpy", "executor": "random",
               "outcomes": [dict(_json(o, session, schedule=list(s)), runs=n)
                            for o, (n, s) in ranked]}
        if cut is not None:
            out.update(budget=True, reason=cut)
        print_json(out)
        return status
    print(f"{made} run{'s' if made != 1 else ''} (random schedules, seed {args.seed}, "
          f"{args.semantics}; critical sections and queues): {len(ranked)} distinct outcome"
          f"{'s' if len(ranked) != 1 else ''}")
    for i, (o, (n, s)) in enumerate(ranked, 1):
        print(f"  {i}. {_describe(o, session)}   ({n} run{'s' if n != 1 else ''})")
        print(f"     schedule: {' '.join(s)}")
    if cut is not None:
        print(f"  unknown: {cut}")
    return status


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


#: the exit status of each verdict (as checking/verdict.py `Verdict.exit_status`)
_EXIT = {"sound": 0, "no-counterexample": 0, "unsound": 1, "invalid": 1, "unknown": 3}


def _made_within(items, fn, end) -> tuple[list, int]:
    """`fn` of each item while `end` (a common.Deadline) has not passed, and
    how many items were left out (the report is made against the clock: a
    session can have thousands of outcomes at a σ)."""
    made = []
    for i, item in enumerate(items):
        if end is not None and end.expired():
            return made, len(items) - i
        made.append(fn(item))
    return made, 0


def check(args: argparse.Namespace, session, deadline=None, reserve: float = 0.0,
          report=None, progress: dict | None = None) -> int:
    """`check SESSION REWRITTEN` for a session with sections or queues.

    Its budget is `tfsem check`'s (docs/budgets.md): `deadline` (a
    common.Deadline: the whole command's, from the process's start; a call
    from Python starts it now), of which `reserve` seconds are kept back for
    the report.  Reading the rewrite's graph and the enumerations at each σ
    end by `deadline` less `reserve`; σ are tried while time is left.  A
    budget that ends the enumeration before any σ was compared in full is
    `unknown`, after some a `no-counterexample` that says how many and that
    the budget ended it (docs/verdicts.md: a σ is tried when both outcome
    sets were compared in full).  The report (its counterexample's outcome
    lines, the JSON) is made by REPORT_TAIL before `deadline`, and what it
    leaves out it says.  `report` and `progress` are check.py's _Report and
    its watchdog's progress: the watchdog (a process of its own) writes
    `watchdog_report` when a stage overruns."""
    from tfsem.oracle import blocking  # noqa: PLC0415
    from tfsem.oracle.budget import BudgetExceeded  # noqa: PLC0415
    from tfsem.oracle.jsonio import read_json_file  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415
    from tfsem.oracle.session import SessionError  # noqa: PLC0415

    from .common import Deadline, verdict_json_within  # noqa: PLC0415
    from .grappler import REPORT_TAIL, _finish, _hold  # noqa: PLC0415

    semantics = args.semantics or "atomic"
    observe = args.observe or "outputs+state"
    if deadline is None:
        deadline = Deadline(args.timeout)
    progress = {} if progress is None else progress
    progress.setdefault("tried", 0)
    budget = f"the time budget of {args.timeout:g} s"
    #: the enumerations (and reading the rewrite's graph) end here
    stop_at = deadline.at - reserve
    #: the report's making ends here (what is left after it: writing it, the process's end)
    end = Deadline(deadline.seconds, deadline.started, at=deadline.at - REPORT_TAIL)

    def verdict(name: str, reason: str = "", make=None, **extra) -> int:
        """Write the verdict (its text or JSON) and end the command; `make`
        (for an `unsound`) makes its counterexample's lines and JSON within
        the report's time."""
        status = _EXIT[name]
        data = dict({"verdict": name, "reason": reason, "semantics": semantics,
                     "observe": observe}, **extra)
        progress.update(verdict=dict(data), stage="the report")
        lines: list[str] = []
        if make is not None:
            lines, cx, cut = make()
            data["counterexample"] = cx
            if cut is not None:
                data["report_cut"] = cut
        if args.json:
            text = verdict_json_within(data, end)
        else:
            text = "\n".join([name + (f": {reason}" if reason else ""),
                              *("  " + line for line in lines)])
        if report is not None and not report.claim():
            _hold()     # the watchdog is writing the report, and ends the process
        print(text, flush=True)
        return _finish(args, status)

    from tfsem.graphdef import ImportTimeout, is_graph_path  # noqa: PLC0415
    from tfsem.oracle.session import is_session  # noqa: PLC0415
    raw_p = (session.raw or {}).get("program") if isinstance(session.raw, dict) else None
    graph_session = None
    progress["stage"] = "reading the rewrite"
    if is_graph_path(args.rewritten) and isinstance(raw_p, dict) and "graph" in raw_p:
        # a rewrite of the session's graph: the same runs over it (oracle/opdefs/queues.py)
        import os  # noqa: PLC0415

        from tfsem.graphdef.cliopts import session_graph_loader  # noqa: PLC0415
        from tfsem.oracle.session import session_from_json  # noqa: PLC0415
        raw2 = dict(session.raw, program=dict(raw_p, graph=os.path.abspath(args.rewritten)))
        try:
            graph_session = session_from_json(raw2, where=str(args.rewritten),
                                              load_graph=session_graph_loader(stop_at))
        except ImportTimeout as exc:
            return verdict("unknown", f"{exc} (the time budget of {args.timeout:g} s covers "
                                      "reading and importing the graphs)", budget=True)
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
    tried = 0
    cut = None      # why the enumeration ended before CHECK_SIGMAS σ
    try:
        for feeds, init in _sigmas(p1):
            if time.monotonic() >= stop_at:
                cut = f"{budget} ran out before σ {tried + 1} of {CHECK_SIGMAS}"
                break
            progress["stage"] = (f"the enumeration of the session's outcomes (σ {tried + 1} of "
                                 f"{CHECK_SIGMAS})")
            a, _ = blocking.outcomes(p1, t1, feeds, init, semantics, observe,
                                     max_seconds=max(stop_at - time.monotonic(), 0.01))
            b, _ = blocking.outcomes(p2, t2, {f: feeds[f] for f in p2.feeds}, init, semantics,
                                     observe, max_seconds=max(stop_at - time.monotonic(), 0.01))
            tried += 1
            progress["tried"] = tried
            extra = [o for o in b if o not in a]
            if extra:
                o = extra[0]
                differs = o.first_difference(list(a)) or {}
                where = ", ".join(f"{k} {v!r}" for k, v in differs.items())
                return verdict("unsound", f"{where} differs" if where else "an added outcome",
                               make=lambda o=o, a=a, b=b, feeds=feeds, init=init:
                               _counterexample(o, a, b, feeds, init, session, end),
                               differs=differs, tried=tried)
    except BudgetExceeded as exc:
        what = (f"{budget} ran out" if exc.which == "seconds" and time.monotonic() >= stop_at
                else str(exc))
        cut = f"{what} while σ {tried + 1} of {CHECK_SIGMAS} was enumerated"
    except blocking.BlockingError as exc:
        raise UsageError("; ".join(str(v) for v in exc.violations)) from None
    if cut is not None and tried == 0:
        return verdict("unknown", f"{cut}: no σ was compared in full (a longer --timeout may "
                                  "decide it)", tried=tried, budget=True)
    closes = any(kind == "QueueClose" for t in (t1, t2) for kind, _ in t.queue_ops.values())
    # (a closed queue fails ops, and errors are values: TensorFlow fails the
    # whole run there, the outcome only shows a fetch of the error)
    caveat = ("; a queue is closed, and a run TensorFlow fails there (a dequeue out of range, "
              "an enqueue or close cancelled) is judged only by its outputs and state: a rewrite "
              "that only makes a run fail is not found (docs/sessions.md, errors are values)"
              if closes else "")
    how_many = f"{tried} σ tried" if cut is None else \
        f"{tried} of {CHECK_SIGMAS} σ tried ({cut})"
    return verdict("no-counterexample", f"{how_many}, every outcome of the rewritten "
                   "session among the original's (critical sections and queues are checked by "
                   f"enumeration, not proved){caveat}", tried=tried,
                   **({} if cut is None else {"budget": True}))


def _counterexample(o, a, b, feeds, init, session, end) -> tuple[list[str], dict, str | None]:
    """An `unsound` blocking check's counterexample: its text lines, its
    JSON, and what the report's clock (`end`) left out of them, or None.
    The original's outcomes at σ (thousands, in a large session) are made
    one by one against the clock; the rest are left out, and it says so."""
    from tfsem.oracle.values import format_value  # noqa: PLC0415
    init_text = ", ".join(f"{x} = {format_value(v)}" for x, v in sorted(init.items())) \
        or "every variable uninitialized"
    lines = [f"init:    {init_text}"]
    if feeds:
        lines.append("feeds:   " + ", ".join(f"{f} = {format_value(v)}"
                                             for f, v in sorted(feeds.items())))
    lines += [f"rewritten schedule: {' '.join(b[o])}",
              f"rewritten outcome:  {_describe(o, session)}",
              f"original outcomes at this σ ({len(a)}):"]
    originals = list(a)
    shown, left = _made_within(list(enumerate(originals, 1)),
                               lambda ix: f"  {ix[0]}. {_describe(ix[1], session)}", end)
    lines += shown
    cut = None
    if left:
        cut = (f"the time budget ran out while the original's outcomes were written: {left} of "
               f"{len(originals)} are left out; the verdict stands (a longer --timeout "
               "writes them)")
        lines.append(f"({cut})")
    cx = {"init": _json_values(init), "schedule": b[o], "outcome": _json(o, session)}
    made, left_json = _made_within(originals, lambda x: _json(x, session), end)
    cx["original"] = made if not left_json else None
    if left_json and cut is None:
        cut = (f"the time budget ran out while the original's outcomes were converted to JSON: "
               f"they are left out; the verdict stands (a longer --timeout writes them)")
    return lines, cx, cut


def watchdog_report(args: argparse.Namespace, progress: dict, head: bool) -> int:
    """What check.py's watchdog writes for a blocking check when the budget
    ran out before the report (a stage that overran: an enumeration between
    two readings of its clock, the report's making): a verdict reached
    stands, without its counterexample; before one, `unknown` naming the
    stage, and how many σ were compared in full before it."""
    from .common import dumps_within  # noqa: PLC0415
    budget = f"the time budget of {args.timeout:g} s"
    stage = progress.get("stage", "the check")
    data = progress.get("verdict")
    if data is None:
        tried = progress.get("tried", 0)
        where = stage if "before the graphs" in stage else f"{stage}, which overran its share of it"
        data = {"verdict": "unknown",
                "reason": f"{budget} ran out during {where}: no verdict ({tried} σ compared "
                          "in full before it; a longer --timeout may decide it)",
                "semantics": args.semantics or "atomic",
                "observe": args.observe or "outputs+state", "tried": tried, "budget": True}
    else:
        data = dict(data, counterexample=None,
                    report_cut=f"{budget} ran out during {stage}, after the verdict: the "
                               "verdict stands; its counterexample is left out")
    status = _EXIT[data["verdict"]]
    if args.json:
        text = dumps_within(data, None)
    else:
        text = data["verdict"] + (f": {data['reason']}" if data.get("reason") else "")
        if "report_cut" in data:
            text += f"\n  ({data['report_cut']})"
    print(text, flush=True)
    return status


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
    variables (exit 1 for a trial outside the oracle's set).

    All of it within `tfsem run`'s budget (--timeout, default 300 s, from
    the process's start; docs/budgets.md): TensorFlow's import is left
    behind when it outlasts it; the oracle's outcome set comes first (each
    trial made is judged against it), in at most half of what is left and
    at most 60 s; no trial starts when less is left than the longest so far
    took, and the trials as a whole are left behind past the budget (those
    made are reported).  A budget that cut anything is `unknown` (exit 3)
    unless a trial made is a finding (exit 1)."""
    import sys  # noqa: PLC0415
    from collections import Counter  # noqa: PLC0415

    from tfsem.oracle import blocking  # noqa: PLC0415

    from .common import StageTimeout, call_within  # noqa: PLC0415
    from .grappler import _finish  # noqa: PLC0415
    from .run_budget import budget as _budget, left, oracle_first, out_of_time as _out_of_time, stop_at  # noqa: PLC0415,E501
    deadline = _budget(args)

    program, table = session.expand_blocking()
    feeds, init = sigma_from_args(program, args)
    if feeds:
        raise UsageError("a session with queues or critical sections runs on TensorFlow with "
                         "its feeds given by the session (no free feeds)")
    try:
        from tfsem.backends import tensorflow as tfb  # noqa: PLC0415
        # TensorFlow's import (5 s, a minute under load) looks at no clock
        call_within(left(deadline), tfb.tensorflow)
        from tfsem.backends.tensorflow_blocking import among_oracle, run_blocking_session_threads  # noqa: PLC0415,E501
    except ImportError as exc:
        print(f"tfsem run: --backend tensorflow needs TensorFlow: {exc}", file=sys.stderr)
        return 2
    except StageTimeout:
        return _out_of_time(args, deadline, "while TensorFlow was imported: no trial")
    budget = f"the time budget of {deadline.seconds:g} s"
    # the oracle's outcome set first (run_budget.oracle_first)
    try:
        found, note, oracle_cut = oracle_first(
            deadline, lambda seconds: blocking.outcomes(program, table, feeds, init,
                                                        args.semantics, max_seconds=seconds)[0])
    except blocking.BlockingError as exc:
        raise UsageError("; ".join(str(v) for v in exc.violations)) from None
    seen: Counter = Counter()
    cut = None
    try:
        # each trial's calls are TensorFlow's (a blocked one waits its
        # BLOCK_TIMEOUT_MS): no trial starts when less is left than the
        # longest so far; one that still outlasts the budget is left behind
        call_within(left(deadline), run_blocking_session_threads, session, init, args.runs,
                    timeout_ms=BLOCK_TIMEOUT_MS, max_seconds=float("inf"),
                    deadline=stop_at(deadline), seen=seen)
    except tfb.TensorFlowRunError as exc:
        raise UsageError(str(exc)) from None
    except StageTimeout:
        made = sum(Counter(dict(seen)).values())
        cut = f"during trial {made + 1} of {args.runs}, which was left behind"
    seen = Counter(dict(seen))     # (a trial left behind may still add to it)
    done = sum(seen.values())
    if cut is None and done < args.runs:
        cut = f"after {done} of {args.runs} trials"
    rows = [(key, n, None if found is None else among_oracle(found, *key))
            for key, n in sorted(seen.items(), key=lambda kv: -kv[1])]
    outside = sum(1 for _, _, ok in rows if ok is False)
    budget_note = None if cut is None else (
        f"{budget} ran out {cut}: the trials above are all that were made")
    if oracle_cut and budget_note is None:
        budget_note = f"{budget} ran out while the oracle's outcome set was computed: the " \
                      "trials are not judged"
    if args.json:
        out = {"trials": done, "backend": "tensorflow", "executor": "threads",
               "block_timeout_ms": BLOCK_TIMEOUT_MS,
               "outcomes": [{"waiting": list(waiting), "values": {k: v for k, v in values},
                             "trials": n, "in_oracle": ok}
                            for (waiting, values), n, ok in rows],
               "oracle_count": None if found is None else len(found),
               "oracle_note": note, "findings": outside}
        if budget_note is not None:
            out.update(budget=True, reason=budget_note)
        print_json(out)
    else:
        print(f"{done} trials on the TensorFlow executor, the {len(session.runs)} runs as "
              f"concurrent Session.run calls, each with a {BLOCK_TIMEOUT_MS} ms timeout: "
              f"{len(rows)} distinct results"
              + ("" if found is None else f"; the oracle allows {len(found)} outcomes"))
        for i, ((waiting, values), n, ok) in enumerate(rows, 1):
            what = (f"blocked: {', '.join(waiting)} still waiting at the timeout"
                    if waiting else "completed")
            vals = ", ".join(f"{k} = {v}" for k, v in values) or "no values fetched"
            judged = ("not judged" if ok is None else "in the oracle set" if ok
                      else "NOT in the oracle set")
            print(f"  {i}. {what}; {vals}   ({n} trial{'s' if n != 1 else ''})   {judged}")
        if note:
            print(f"  {note}")
        if budget_note is not None:
            print(f"  unknown: {budget_note}")
    status = 1 if outside else 3 if budget_note is not None else EXIT_OK
    # the process ends with its report, not when TensorFlow's teardown (or
    # a trial left behind) is done
    return _finish(args, status)


#: how long a call of a session with queues may wait on TensorFlow before it
#: counts as blocked
BLOCK_TIMEOUT_MS = 2000
