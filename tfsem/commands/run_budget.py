"""The budget of `tfsem run` (--timeout, docs/budgets.md), shared by the
runs of plain graphs (run.py) and of sessions with critical sections or
queues (blocking_sessions.py): one clock from the process's start, the
seconds kept back for the report, and the `unknown` a spent budget gives.
A module of its own so that neither of those two imports the other."""

from __future__ import annotations

import argparse

from .common import print_json

#: the default time budget of `tfsem run --backend tensorflow|xla` (seconds):
#: TensorFlow's import alone takes 5 s at a load of 1.5 and up to a minute
#: on a loaded machine
TF_TIMEOUT = 300.0


def budget(args: argparse.Namespace):
    """The command's one clock (common.Deadline): --timeout (default
    TF_TIMEOUT) from the process's start, or from now for a call from Python."""
    from .common import Deadline  # noqa: PLC0415
    if getattr(args, "run_deadline", None) is not None:    # (started already: one clock)
        return args.run_deadline
    seconds = args.timeout if getattr(args, "timeout", None) is not None else TF_TIMEOUT
    args.run_deadline = (Deadline.of_process(seconds) if getattr(args, "whole_process", False)
                         else Deadline(seconds))
    return args.run_deadline


#: the seconds of the budget kept back for the report (and the process's end)
REPORT_SECONDS = 0.3


def left(deadline) -> float:
    """The seconds the runs may still take: what is left less the report's."""
    return deadline.left() - REPORT_SECONDS


def stop_at(deadline) -> float:
    """When the runs stop (monotonic): the deadline less the report's time."""
    return deadline.at - REPORT_SECONDS


def out_of_time(args: argparse.Namespace, deadline, why: str, done: dict | None = None) -> int:
    """`unknown` (exit 3): the budget ran out `why`, nothing else found."""
    reason = f"the time budget of {deadline.seconds:g} s ran out {why}"
    if args.json:
        print_json(dict(done or {}, verdict="unknown", reason=reason, budget=True))
    else:
        print(f"unknown: {reason}")
    from .grappler import _finish  # noqa: PLC0415
    return _finish(args, 3)


def oracle_first(deadline, outcomes):
    """The oracle's outcome set, computed before the runs (it is the same
    for every run, so each run made is judged against it whenever the
    budget stops them): `outcomes(max_seconds)` given at most half of what
    is left, and at most its usual MAX_SECONDS_OUTCOMES.  Returns (the set
    or None, a note saying why there is none, whether the budget cut it)."""
    from tfsem.oracle.budget import BudgetExceeded  # noqa: PLC0415

    from .common import MAX_SECONDS_OUTCOMES  # noqa: PLC0415
    seconds = min(MAX_SECONDS_OUTCOMES, left(deadline) / 2)
    try:
        return outcomes(max(seconds, 0.05)), None, False
    except BudgetExceeded as exc:
        if exc.which == "seconds" and seconds < MAX_SECONDS_OUTCOMES:
            return None, (f"the oracle's outcomes were not computed: the time budget of "
                          f"{deadline.seconds:g} s left them {max(seconds, 0.05):.2f} s "
                          f"({exc})"), True
        return None, f"the oracle's outcomes are out of reach: {exc}", False
