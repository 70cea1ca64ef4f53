"""The one dispatcher of the oracle: Outcomes(P, σ) by the engine asked for.

Above the engines, which sit side by side: the reference explorer
(`explore.py`), the reads-from engine (`readsfrom.py`, which chooses per
component in "auto"), the symmetry engine (`symmetry.py`) and, for programs
with control flow, the reference semantics of `controlflow.py`.
"""

from __future__ import annotations

import time
from typing import Mapping

from . import controlflow as cf
from .budget import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, Budget, BudgetExceeded, current_hard_stop
from .explore import OutcomeSet, _Component, _explore, components
from .graph import ATOMIC, DECOMPOSED
from .outcomes import combine
from .program import Program
from .readsfrom import Unsupported, outcome_set_engine
from .values import Value


def outcome_set(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                semantics: str = ATOMIC, observe: str = "outputs+state",
                max_states: int = DEFAULT_MAX_STATES,
                max_seconds: float = DEFAULT_MAX_SECONDS, engine: str = "auto",
                max_iterations: int | None = None) -> OutcomeSet:
    """Outcomes(P, σ) with σ = (feeds, init); a variable missing from `init`
    starts uninitialized.  Raises BudgetExceeded when the budget runs out.
    `engine`: "reference" (explore.py), "readsfrom" (one run per reads-from
    class), "symmetry" (one run per orbit of identical threads, where a
    component has them; symmetry.py) or "auto" (the default: per component,
    one of them chosen by structure; see readsfrom.outcome_set_engine).  All
    return the same set; they differ in time, in `states` and in the
    witness schedules.

    A program with control flow (SPEC section 9) is explored by the
    reference semantics of `controlflow.py` ("reference" and "auto"; the
    other engines refuse it with readsfrom.Unsupported), up to
    `max_iterations` iterations of each loop (LoopBoundExceeded, a
    BudgetExceeded, past it).

    Past a check's hard stop (budget.hard_stop) it raises BudgetExceeded at
    once, as its budget would after the set-up (which reads no clock: the
    components of MobileNetV2 take 0.4-2 s to build)."""
    hard = current_hard_stop()
    if hard is not None and time.monotonic() > hard:
        raise BudgetExceeded("seconds", max_seconds, 0)
    if p.has_control_flow:
        return _control_flow_outcome_set(p, feeds, init, semantics, observe, max_states,
                                         max_seconds, engine, max_iterations)
    if engine != "reference":
        return outcome_set_engine(p, feeds, init, semantics, observe, max_states,
                                  max_seconds, engine)
    if semantics not in (ATOMIC, DECOMPOSED):
        raise ValueError(f"unknown semantics {semantics!r}")
    budget = Budget(max_states, max_seconds)
    comps = []
    for names, variables, outputs in components(p):
        comp = _Component(p, names, semantics, observe, feeds, variables, outputs).cache_functions()
        comps.append(_explore(comp, init, budget))
    if not comps:   # (no node, no variable: one outcome, as observed)
        comps.append({combine([], observe): ()})
    return OutcomeSet(comps, budget.states, time.monotonic() - budget.started)


def _control_flow_outcome_set(p: Program, feeds, init, semantics: str, observe: str,
                              max_states: int, max_seconds: float, engine: str,
                              max_iterations: int | None) -> OutcomeSet:
    if engine not in ("reference", "auto"):
        raise Unsupported(f"the {engine} engine does not model control flow (nodes "
                          f"{', '.join(p.control_flow_nodes[:5])}"
                          f"{', ...' if len(p.control_flow_nodes) > 5 else ''})")
    if semantics not in (ATOMIC, DECOMPOSED):
        raise ValueError(f"unknown semantics {semantics!r}")
    started = time.monotonic()
    found, explored = cf.outcomes(p, feeds, init, semantics, observe, max_states, max_seconds,
                                  max_iterations or cf.DEFAULT_MAX_ITERATIONS)
    return OutcomeSet([found], explored, time.monotonic() - started)
