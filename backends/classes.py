"""Witness schedules that hold for every σ.

The oracle's witnesses (`outcome_set(p, σ).items()`) cover Outcomes(P, σ) at
one σ: two schedules that happen to give equal values there are explored
once, and at another σ they may differ.  Batched testing evaluates the same
schedules on millions of valuations, so it needs schedules that cover
Outcomes(P, σ) for *every* σ: :func:`schedule_classes`.

Every function is deterministic, so a run's outcome is fixed by σ and by what
each access saw.  Give each variable a symbolic value: ``init(x)`` at the
start, and ``A(n, w)`` after Assign n wrote it, w being the symbolic value n
read; in the decomposed mode ``A(n, w, c)``, w as of n's read step and c the
value x holds at n's write step (a failed Assign leaves c).  A Read's result is the
symbolic value of its variable when it fires; the value an Assign is given
depends on σ and on the Reads upstream of it.  So the symbolic values seen by
the Reads and held by the variables at the end determine the outcome for
every σ, and one schedule per distinct such record covers every outcome at
every σ.

The search is the fast oracle's idea on symbols: states keyed by (steps fired,
symbolic variable values, pending decomposed Assigns, what each Read saw) are
explored once; a step that conflicts with no step still to come fires at once;
accesses whose values cannot reach an output or an observed variable are
never recorded (the oracle's relevance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from tfsem.oracle.explore import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, BudgetExceeded, components
from tfsem.oracle.outcomes import OUTPUTS
from tfsem.oracle.program import Program
from tfsem.oracle.semantics import ATOMIC

from .execute import _ASSIGN, _READ, Machine


class _Sym:
    __slots__ = ("fired", "missing", "ready", "vars", "pending", "reads", "sched")

    def copy(self) -> "_Sym":
        s = _Sym()
        s.fired, s.missing, s.ready = self.fired, self.missing.copy(), self.ready.copy()
        s.vars, s.pending, s.reads = self.vars.copy(), self.pending.copy(), self.reads.copy()
        s.sched = self.sched
        return s


def _relevance(m: Machine, observe: str) -> tuple[list[bool], set[str]]:
    """Nodes whose results can reach an output or an observed variable (or a
    variable that a relevant Read reads), and those variables."""
    relevant = [bool(m.fetch[i]) for i in range(m.n)]
    rel_vars = set(m.variables) if observe != OUTPUTS else set()
    preds: list[list[int]] = [[] for _ in range(m.n)]
    for i in range(m.n):
        for port, j, _slot in m.succ[i]:
            if port >= 0:
                preds[j].append(i)
    changed = True
    while changed:
        changed = False
        for i in range(m.n):
            if not relevant[i] and m.kind[i] == _ASSIGN and m.var[i] in rel_vars:
                relevant[i] = changed = True
            if relevant[i]:
                if m.kind[i] == _READ and m.var[i] not in rel_vars:
                    rel_vars.add(m.var[i])
                    changed = True
                for j in preds[i]:
                    if not relevant[j]:
                        relevant[j] = changed = True
    return relevant, rel_vars


def schedule_classes(p: Program, semantics: str = ATOMIC, observe: str = "outputs+state",
                     max_states: int = DEFAULT_MAX_STATES,
                     max_seconds: float = DEFAULT_MAX_SECONDS) -> list[tuple[str, ...]]:
    """Schedules of p such that, for every σ, their outcomes at σ are exactly
    Outcomes(p, σ).  Raises BudgetExceeded when the budget runs out."""
    m = Machine(p, semantics)
    n, decomposed = m.n, m.decomposed
    relevant, rel_vars = _relevance(m, observe)
    counted = [relevant[i] and m.kind[i] in (_READ, _ASSIGN) for i in range(n)]
    terms: dict[tuple, int] = {}

    def term(key: tuple) -> int:
        return terms.setdefault(key, len(terms))

    def is_write(t: int) -> bool:
        return t >= n or (m.kind[t] == _ASSIGN and not decomposed)

    # remaining relevant accesses per variable: [writes, reads]
    remaining0: dict[str, list[int]] = {}
    for i in range(n):
        if counted[i]:
            c = remaining0.setdefault(m.var[i], [0, 0])
            if m.kind[i] == _ASSIGN:
                c[0] += 1
                c[1] += 1 if decomposed else 0
            else:
                c[1] += 1

    def remaining(s: _Sym) -> dict[str, list[int]]:
        rem = {x: [0, 0] for x in remaining0}
        for i in range(n):
            if counted[i]:
                x = m.var[i]
                if m.kind[i] == _ASSIGN:
                    if not s.fired >> (n + i if decomposed else i) & 1:
                        rem[x][0] += 1
                    if decomposed and not s.fired >> i & 1:
                        rem[x][1] += 1
                elif not s.fired >> i & 1:
                    rem[x][1] += 1
        return rem

    def eager(s: _Sym, t: int, rem: dict[str, list[int]]) -> bool:
        i = t % n
        if not counted[i]:
            return True
        writes, reads = rem[m.var[i]]
        if is_write(t):
            return writes == 1 and reads == 0
        own = 1 if (decomposed and m.kind[i] == _ASSIGN) else 0
        return writes - own == 0

    def fire(s: _Sym, t: int) -> None:
        s.ready.discard(t)
        s.fired |= 1 << t
        s.sched = (m.label(t), s.sched)
        i = t % n
        if m.kind[i] in (_READ, _ASSIGN):
            x = m.var[i]
            if t >= n:                                        # decomposed write step
                # f(w, v) with w as read, or (failed Assign) x's current value
                s.vars[x] = term(("A", i, s.pending.pop(i), s.vars[x]))
            elif m.kind[i] == _READ:
                if counted[i]:
                    s.reads[i] = s.vars[x]
            elif decomposed:                                  # decomposed read step
                s.pending[i] = s.vars[x]
                s.ready.add(n + i)
                return
            else:
                s.vars[x] = term(("A", i, s.vars[x]))
        for _port, j, _slot in m.succ[i]:
            s.missing[j] -= 1
            if s.missing[j] == 0:
                s.ready.add(j)

    def close(s: _Sym) -> None:
        """Fire every step that conflicts with nothing still to come."""
        while True:
            rem = remaining(s)
            quiet = [t for t in s.ready if eager(s, t, rem)]
            if not quiet:
                return
            for t in sorted(quiet):
                fire(s, t)

    root = _Sym()
    root.fired, root.missing, root.ready = 0, list(m.n_slots), set()
    root.vars = {x: term(("init", x)) for x in m.variables}
    root.pending, root.reads, root.sched = {}, {}, None
    for i, _slot, _feed in m.initial:
        root.missing[i] -= 1
        if root.missing[i] == 0:
            root.ready.add(i)

    started = time.monotonic()
    classes: dict[tuple, tuple[str, ...]] = {}
    seen: set[tuple] = set()
    stack = [root]
    explored = 0
    while stack:
        s = stack.pop()
        close(s)
        if not s.ready:
            final = (tuple(sorted(s.reads.items())),
                     tuple(s.vars[x] for x in m.variables if x in rel_vars) if observe != OUTPUTS else ())
            if final not in classes:
                classes[final] = _unlink(s.sched)
            continue
        key = (s.fired, tuple(s.vars[x] for x in m.variables if x in rel_vars),
               tuple(sorted(s.pending.items())), tuple(sorted(s.reads.items())))
        if key in seen:
            continue
        seen.add(key)
        explored += 1
        if explored > max_states:
            raise BudgetExceeded("states", max_states, explored)
        if explored & 255 == 0 and time.monotonic() - started > max_seconds:
            raise BudgetExceeded("seconds", max_seconds, explored)
        choices = sorted(s.ready)
        for t in reversed(choices):
            s2 = s.copy() if t != choices[0] else s
            fire(s2, t)
            stack.append(s2)
    return list(classes.values())


def _unlink(linked) -> tuple[str, ...]:
    out = []
    while linked is not None:
        out.append(linked[0])
        linked = linked[1]
    return tuple(reversed(out))


# ---------------------------------------------------------------------------
# Independent components


@dataclass(frozen=True)
class Part:
    """An independent part of a program (a component, or the whole program) as
    a program of its own, with schedules that cover its outcomes at every σ,
    and the items of an outcome it determines: ("output", name) and, when the
    state is observed, ("variable", name)."""
    program: Program
    schedules: tuple[tuple[str, ...], ...]
    items: frozenset[tuple[str, str]]


def _items(p: Program, observe: str) -> frozenset[tuple[str, str]]:
    return frozenset([("output", o) for o in p.outputs]
                     + ([("variable", x) for x in p.variables] if observe != OUTPUTS else []))


def whole(p: Program, schedules: Sequence[Sequence[str]], observe: str = "outputs+state") -> list[Part]:
    """The whole program as one part, with the given schedules."""
    return [Part(p, tuple(tuple(s) for s in schedules), _items(p, observe))]


def parts(p: Program, semantics: str = ATOMIC, observe: str = "outputs+state",
          max_states: int = DEFAULT_MAX_STATES,
          max_seconds: float = DEFAULT_MAX_SECONDS) -> list[Part]:
    """p's independent components (`tfsem.oracle.explore.components`: no edge
    and no variable joins two of them), each with its schedule classes.
    Outcomes(p, σ) is the product of the components' outcome sets, so the
    classes of the parts, one per part, cover Outcomes(p, σ) at every σ with
    a sum, not a product, of schedules.  The budget is shared by the parts."""
    deadline = time.monotonic() + max_seconds
    out = []
    for names, variables, outputs in components(p):
        sub = Program({x: p.variables[x] for x in variables}, tuple(p.node[n] for n in names),
                      {o: p.outputs[o] for o in outputs}, p.feeds)
        left = deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded("seconds", max_seconds, 0)
        out.append(Part(sub, tuple(schedule_classes(sub, semantics, observe, max_states, left)),
                        _items(sub, observe)))
    return out
