"""Confirming a counterexample on real arrays.

An `unsound` verdict claims: at σ, a schedule of the rewritten program P'
gives an outcome that no run of the original P gives.  Before a user sees it,
tfsem replays the claim on numpy (and on cupy where a GPU is present):

1. the rewritten schedule runs on the backend and gives outcome O';
2. O' is not among the oracle's Outcomes(P, σ);
3. replaying every witness schedule of the original at σ (one per outcome,
   from `tfsem.oracle.dispatch.outcome_set`) on the backend, none gives O'.

The verdict records the backends where all three held.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, BudgetExceeded
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import Program
from tfsem.oracle.semantics import ATOMIC
from tfsem.oracle.values import Value

from .arraymodule import Backend, available_backends, get_backend
from . import reuse
from .execute import ScheduleError, collector_paused, device_machine, download, run_schedule

#: Replaying more witnesses than this is not attempted (the claim stays unconfirmed).
DEFAULT_MAX_WITNESSES = 100_000


@dataclass(frozen=True)
class Confirmation:
    """The replay on one backend: confirmed or not, and why (`reason`).

    `why` is the reason, or a function that writes it: a reason that shows
    outcomes is written only when read (a real graph's outcome holds
    hundreds of tensors: formatting them took 0.5 s of a 10 s check, for a
    text the checker never shows; `tfsem replay` and the tests read it)."""
    backend: str
    confirmed: bool
    why: str | Callable[[], str]
    outcome: Outcome | None = None        # what the rewritten schedule gave there
    _written: list = field(default_factory=list, repr=False, compare=False)

    @property
    def budget_cut(self) -> bool:
        """Whether the check's budget cut the replay short (BUDGET_REASON),
        told without writing a reason that is written only when read."""
        return isinstance(self.why, str) and self.why.startswith(BUDGET_REASON)

    @property
    def reason(self) -> str:
        if not isinstance(self.why, str):
            if not self._written:
                self._written.append(self.why())
            return self._written[0]
        return self.why


def confirm_details(original: Program, rewritten: Program, feeds: Mapping[str, Value],
                    init: Mapping[str, Value], schedule: Sequence[str],
                    semantics: str = ATOMIC, observe: str = "outputs+state", *,
                    outcome: Outcome | None = None,
                    backends: Sequence[Backend | str] | None = None,
                    max_witnesses: int = DEFAULT_MAX_WITNESSES,
                    max_states: int = DEFAULT_MAX_STATES,
                    max_seconds: float = DEFAULT_MAX_SECONDS,
                    original_outcomes=None,
                    witnesses: Sequence[tuple[Outcome, Sequence[str]]] | None = None,
                    deadline: float | None = None) -> list[Confirmation]:
    """One :class:`Confirmation` per backend (default: every backend that can
    run here).  `outcome`, when given, is the outcome the verdict claims for
    the rewritten schedule; a backend that gives another does not confirm.
    `original_outcomes`, when given, is the oracle's Outcomes(P, σ) computed
    already (the checker's confirmation: the same enumeration, not run
    twice); else it is enumerated here.  Past `deadline` (time.monotonic(),
    read every 32 steps of each replay) a backend's replay stops: it does
    not confirm, and its reason starts with BUDGET_REASON.

    `witnesses`, when given, are the original's outcomes at σ with the
    schedule the verdict shows for each (the checker's, moved towards the
    canonical order: checking/check.py `minimized_witnesses`), one per
    outcome of Outcomes(P, σ): those schedules are the ones replayed, and
    each must give its own outcome on the backend too, so that what the
    verdict shows is what is confirmed (step 3 with each witness's outcome
    checked).  Else the oracle's witness of each outcome is replayed."""
    chosen = [get_backend(b) if isinstance(b, str) else b
              for b in (backends if backends is not None else available_backends())]
    if original_outcomes is not None:
        oset = original_outcomes
    else:
        try:
            if deadline is not None:
                max_seconds = min(max_seconds, max(0.0, deadline - time.monotonic()))
            oset = outcome_set(original, feeds, init, semantics, observe,
                               max_states=max_states, max_seconds=max_seconds)
        except BudgetExceeded as exc:
            # (past the check's deadline: the budget's doing, said so)
            why = f"{BUDGET_REASON} (the original's outcomes are out of reach in the " \
                  f"check's time: {exc})" if deadline is not None and exc.which == "seconds" \
                else f"the original's outcomes are out of reach: {exc}"
            return [Confirmation(b.label, False, why) for b in chosen]
    if oset.count > max_witnesses:
        return [Confirmation(b.label, False, f"the original has {oset.count} outcomes, more "
                             f"witnesses than the {max_witnesses} replayed at most") for b in chosen]
    if witnesses is None or len({o for o, _ in witnesses}) != oset.count or \
            any(o not in oset for o, _ in witnesses):
        witnesses = [(None, w) for _, w in oset.items()]
    confirmations = []
    for b in chosen:
        try:
            with collector_paused():
                confirmations.append(_confirm_on(b, original, rewritten, feeds, init, schedule,
                                                 semantics, observe, outcome, oset, witnesses,
                                                 deadline))
        except BudgetExceeded:
            confirmations.append(Confirmation(b.label, False, f"{BUDGET_REASON} (the check's "
                                              "time budget ran out during the replay)"))
    return confirmations


#: the start of the reason of a replay the check's budget cut short
BUDGET_REASON = "replay cut short: budget"


def _confirm_on(b: Backend, original: Program, rewritten: Program, feeds, init, schedule,
                semantics: str, observe: str, claimed: Outcome | None, oset,
                witnesses: list[tuple[Outcome | None, Sequence[str]]],
                deadline: float | None = None) -> Confirmation:
    # (σ uploaded once for both programs, and for the checks after this
    # one at this σ; one memo of this backend's applications for all the
    # runs: backends/reuse.py and execute.Memo say why what they hold is
    # this backend's own result)
    session = reuse.session(b, feeds, init)
    dev_feeds, dev_init, memo = session.dev_feeds, session.dev_init, session.memo
    mr = device_machine(rewritten, b, semantics)
    try:
        ours = download(*run_schedule(mr, dev_feeds, dev_init, schedule, deadline, memo), b,
                        observe, session.host)
    except ScheduleError as exc:
        return Confirmation(b.label, False, f"the rewritten program cannot follow the schedule: {exc}")
    if claimed is not None and ours != claimed:
        return Confirmation(b.label, False, lambda: f"the schedule gives {ours.describe()} here, "
                            f"not the claimed {claimed.describe()}", ours)
    if ours in oset:
        return Confirmation(b.label, False, "the original has this outcome too "
                            f"(schedule {' '.join(oset.witness(ours))})", ours)
    mo = device_machine(original, b, semantics)
    how = ("dataflow", semantics, observe)
    for shown, w in witnesses:
        # (a witness this backend replayed at this σ already, in an earlier
        # check of this original: its outcome, reuse.Session.outcome)
        theirs = session.outcome(original, how, w)
        if theirs is None:
            try:
                theirs = download(*run_schedule(mo, dev_feeds, dev_init, w, deadline, memo), b,
                                  observe, session.host)
            except ScheduleError as exc:
                return Confirmation(b.label, False, f"the original cannot follow its witness "
                                    f"schedule: {exc}", ours)
            session.remember(original, how, w, theirs)
        if theirs == ours:
            return Confirmation(b.label, False, "the original's witness schedule "
                                f"{' '.join(w)} gives this outcome on {b.label}", ours)
        if shown is not None and theirs != shown:
            return Confirmation(b.label, False, lambda: f"the original's witness schedule gives "
                                f"{theirs.describe()} here, not the {shown.describe()} shown", ours)
    n = len(witnesses)
    return Confirmation(b.label, True, lambda: f"the schedule gives {ours.describe()}; none of "
                        f"the original's {n} witness schedules does", ours)


def confirm_counterexample(original: Program, rewritten: Program, feeds: Mapping[str, Value],
                           init: Mapping[str, Value], schedule: Sequence[str],
                           semantics: str = ATOMIC, observe: str = "outputs+state",
                           **options) -> list[str]:
    """The backends on which the counterexample is confirmed (see the module
    docstring); [] when none confirms it.  `options` go to :func:`confirm_details`."""
    return [c.backend for c in confirm_details(original, rewritten, feeds, init, schedule,
                                               semantics, observe, **options) if c.confirmed]
