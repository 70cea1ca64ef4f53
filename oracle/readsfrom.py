"""An outcome-set engine that enumerates reads-from classes, not interleavings.

`outcome_set_rf` computes the same `OutcomeSet` as `dispatch.outcome_set` (the
tested reference) for the programs it supports, and raises `Unsupported` for
the others.  See docs/oracle.md for the argument in full; in short:

**Events.**  Only the *relevant* variable accesses of a component (those
`explore._Component` counts: they can influence an output or an observed
variable) are events.  Every other step is a pure computation, or an access
nobody can observe, and fires whenever its inputs are there.  Events are

* ``R``: a Read, or (decomposed mode) the read step of an Assign whose
  function uses the old value (every function but ``Snd``);
* ``W``: a *blind* write: an atomic Assign-Snd (a Write), or (decomposed
  mode) the write step of any Assign;
* ``U``: an atomic Assign of any other function: a read-modify-write.

Happens-before (hb) between events is reachability in the dataflow graph
(data and control edges; a decomposed Assign's read step before its write
step).  Functions are deterministic and there is no value-dependent control
flow: every node fires exactly once in every run.

**Classes.**  In a run, every R and U event *reads from* the write event (or
the initial value) that was the last write to its variable when it fired, and
each observed variable has a *final* writer.  Call this map the run's class.
If no W event of the run is a no-op (a Write of an error value, or a
decomposed write step whose f(w, v) is an error, leaves the variable
*unchanged*: its effect then depends on the order of the writes and not on
the class), then all runs of a class compute the same values (induction along
hb ∪ rf: each event reads the same write, each write stores the same value)
and have the same outcome.  So the outcome set is the set of outcomes of one
run per class, over the classes some run has.

**Enumeration.**  Tracked events (R and U) get a reads-from choice in a
topological order, then observed variables a final writer; each partial
choice is checked for consistency by finding a linearization of the events
that satisfies it: the parent's (`_extend`), the parent's with one event
moved (`_repair`, checked event by event), or a search (`_search`); a
candidate the choices made so far rule out is skipped (`_possible`, each
rule necessary in every run).  A partial choice that no run satisfies
has no satisfiable extension, so pruning it loses nothing; a full choice that
is satisfied is a class, and the linearization found is a run of it (its
witness).  Each class is reached once (distinct leaves are distinct maps),
and its witness is replayed by the real step function (`explore._Component
.fire`), so every outcome returned is an outcome of a real run.  A witness
with a no-op W event raises `Unsupported` (the caller falls back to the
reference engine).

**The linearization search** (`_search`) is a depth-first search over
the order of the write events, memoized on (events fired, last writer per
variable) — the rest of the search depends on nothing else — with reads fired
eagerly: a read whose constraint holds now (or that has none) fires at once.
That is safe: in any successful continuation the read fires later within the
same interval during which its writer is the last write (no write to its
variable happens in between), so moving it to now keeps every constraint and
every hb edge (nothing before its old position is hb-after it).  Likewise a
write that no constrained event reads from fires at once when its variable
has no constrained access left and its final writer (if chosen) has not fired
and is not this write.  A write may
fire only if every constrained reader of the write it overwrites has fired,
it does not overwrite a variable's chosen final writer, and (a U event) the
current last writer is the one it was chosen to read from.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterator, Mapping

from .explore import (_ASSIGN, _FN, _READ, _VAR, DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, Budget,
                      BudgetExceeded,
                      OutcomeSet, _Component, components)
from .outcomes import Outcome, combine
from .semantics import ATOMIC, DECOMPOSED
from .values import UNINITIALIZED, Error, Value

_R, _W, _U = 0, 1, 2
INIT = -1
#: more tracked choices than this and the recursion gets deep: decline
MAX_CHOICES = 400


class _Cycle(Exception):
    pass


class Unsupported(ValueError):
    """The reads-from engine does not apply to this program and input; the
    reference engine (`dispatch.outcome_set`) does."""


class _Component_RF:
    """One component compiled for reads-from enumeration."""

    def __init__(self, comp: _Component, init: Mapping[str, Value], budget: Budget,
                 single_ok: bool = False):
        """`single_ok` (`class_runs`): a component whose every choice has
        one candidate (one class) is not declined for its many choices."""
        self.comp, self.init, self.budget = comp, init, budget
        n = comp.n
        dec = comp.decomposed
        # steps in topological order: node i, then its write step n + i
        order: list[int] = []
        for i in range(n):
            order.append(i)
            if dec and comp.kind[i] == _ASSIGN:
                order.append(n + i)
        self.order = order
        pos = {t: k for k, t in enumerate(order)}
        self.pos = pos
        producers = comp._producers
        anc = [0] * len(order)          # ancestors, as bits over positions
        # static: a function or Var node whose ancestors are all such nodes:
        # its value is the same in every run, computed once (`_replay`)
        static = 0
        for k, t in enumerate(order):
            preds = [comp._completes(src) for src, _slot in producers[t]] if t < n else [t - n]
            a = 0
            for s in preds:
                a |= anc[pos[s]] | (1 << pos[s])
            anc[k] = a
            if t < n and comp.kind[t] in (_FN, _VAR) and all(static >> pos[s] & 1 for s in preds):
                static |= 1 << k
        self.anc = anc
        self._static = static
        self._static_done: tuple[list, list[int]] | None = None
        # events
        ev_pos: list[int] = []
        ev_kind: list[int] = []
        ev_var: list[str] = []
        for k, t in enumerate(order):
            i = t % n
            if not comp.counted[i]:
                continue
            if comp.kind[i] == _READ:
                kind = _R
            elif t >= n:
                kind = _W
            elif dec:
                if comp.fn[i].name == "Snd":
                    continue                 # the old value is not used
                kind = _R
            else:
                kind = _W if comp.fn[i].name == "Snd" else _U
            ev_pos.append(k)
            ev_kind.append(kind)
            ev_var.append(comp.var[i])
        m = len(ev_pos)
        self.m = m
        self.ev_pos, self.ev_kind = ev_pos, ev_kind
        var_names = sorted(set(ev_var))
        vidx = {x: j for j, x in enumerate(var_names)}
        self.var_names = var_names
        self.ev_var = [vidx[x] for x in ev_var]
        self.event_mask = 0
        ev_of_pos = {}
        for e, k in enumerate(ev_pos):
            self.event_mask |= 1 << k
            ev_of_pos[k] = e
        self.ev_anc = []
        for e in range(m):
            a, bits = 0, anc[ev_pos[e]] & self.event_mask
            while bits:
                low = bits & -bits
                a |= 1 << ev_of_pos[low.bit_length() - 1]
                bits ^= low
            self.ev_anc.append(a)
        self.writes = [[e for e in range(m) if ev_kind[e] != _R and self.ev_var[e] == v]
                       for v in range(len(var_names))]
        self.reads = [e for e in range(m) if ev_kind[e] == _R]
        self.write_events = [e for e in range(m) if ev_kind[e] != _R]
        # the choices: (event or -(1 + var) for a final writer, candidates)
        choices: list[tuple[int, list[int]]] = []
        for e in range(m):
            if ev_kind[e] in (_R, _U):
                choices.append((e, self._candidates(e)))
        if comp.observe_state:
            for v, ws in enumerate(self.writes):
                finals = [w for w in ws if not any(self._hb(w, w2) for w2 in ws if w2 != w)]
                if finals:
                    choices.append((-1 - v, finals))
        #: every choice has one candidate and every two writes of a variable
        #: are ordered by hb: one class, whose runs all compute the same
        #: values (the writes' order is fixed, so a no-op write, which the
        #: classes alone do not settle, is at the same place in each)
        #: (computed for `class_runs` only: the engine's own use never asks)
        self.single = single_ok and all(len(cands) == 1 for _e, cands in choices) and all(
            self._hb(a, b) or self._hb(b, a)
            for ws in self.writes for k, a in enumerate(ws) for b in ws[k + 1:])
        if len(choices) > MAX_CHOICES and not self.single:
            raise Unsupported(f"{len(choices)} reads-from choices (at most {MAX_CHOICES})")
        self.choices = choices
        self.classes = 0
        #: `class_runs`: every class's (outcome, witness labels), up to
        #: `record_cap` of them; None (the engine's own use): not kept
        self.record: list[tuple[Outcome, tuple[str, ...]]] | None = None
        self.record_cap = 0
        # a node's data inputs: slot -> (producer, port), or (-1, fed value)
        self._in_src: list[dict[int, tuple[int, object]]] = [{} for _ in range(n)]
        for i in range(n):
            for port, j, slot in comp.succ[i]:
                if port >= 0:
                    self._in_src[j][slot] = (i, port)
        for i, slot, value in comp.initial:
            if value is not None:
                self._in_src[i][slot] = (-1, value)
        self._nonevent = ((1 << len(order)) - 1) & ~self.event_mask
        # a node's attrs are fixed, so its arguments determine its results
        comp.cache_functions()
        if not comp.payloads:            # (the replays start from init, not comp.root)
            comp.watch(init.values())

    def _hb(self, a: int, b: int) -> bool:
        return bool(self.ev_anc[b] >> a & 1)

    def _candidates(self, r: int) -> list[int]:
        """The writes r may read from, by hb alone: not one hb-after r, not one
        hidden by a later write hb-before r; the initial value only if no write
        is hb-before r."""
        ws = [w for w in self.writes[self.ev_var[r]] if w != r]
        out = []
        if not any(self._hb(w, r) for w in ws):
            out.append(INIT)
        for w in ws:
            if self._hb(r, w):
                continue
            if any(w2 != w and self._hb(w, w2) and self._hb(w2, r) for w2 in ws):
                continue
            out.append(w)
        return out

    # -- enumeration -------------------------------------------------------------

    def run(self) -> dict[Outcome, tuple[str, ...]]:
        results: dict[Outcome, tuple[str, ...]] = {}
        rf: list[int | None] = [None] * self.m
        final: dict[int, int] = {}
        witness = self._search(rf, final)
        if witness is None:                          # cannot happen: runs exist
            raise RuntimeError("no run satisfies the empty reads-from choice")
        self._extend(0, rf, final, witness, results)
        return results

    def _extend(self, depth: int, rf: list, final: dict, witness: tuple[list[int], list[int]],
                results: dict) -> None:
        if depth == len(self.choices):
            self.classes += 1
            b = self.budget
            if self.classes & 255 == 0 and time.monotonic() - b.started > b.max_seconds:
                raise BudgetExceeded("seconds", b.max_seconds, b.states)
            outcome, steps = self._replay(witness[0])
            if self.record is not None:
                if len(self.record) >= self.record_cap:
                    raise Unsupported(f"more than {self.record_cap} reads-from classes")
                self.record.append((outcome, tuple(self.comp.label(t) for t in steps)))
            if outcome not in results:
                results[outcome] = tuple(self.comp.label(t) for t in steps)
            return
        e, cands = self.choices[depth]
        lin, before = witness
        got = self._observed(lin)
        for w in cands:
            if not self._possible(e, w, before, rf):
                continue
            if e >= 0:
                rf[e] = w
            else:
                final[-1 - e] = w
            if got.get(e) == w:
                child = witness                      # the parent's run satisfies it
            else:
                child = self._repair(lin, before, e, w, rf, final) or self._search(rf, final)
            if child is not None:
                self._extend(depth + 1, rf, final, child, results)
        if e >= 0:
            rf[e] = None
        else:
            del final[-1 - e]

    def _repair(self, lin: list[int], before: list[int], e: int, w: int, rf: list,
                final: dict) -> tuple[list[int], list[int]] | None:
        """The parent's run with one event moved so that it makes choice
        e = w too, or None.  Moves tried: e to just after w (to just before
        the first write of its variable when w is the initial value); else w
        to just before e; for a final writer w, w to just after the last write
        of its variable, else to the end.  The events chosen to read from the moved one (and
        from those, along a chain of read-modify-writes) move with it, in
        their order.  A moved run is a witness only if it checks: every event
        after all its hb predecessors, and every choice made so far (rf,
        final) observed in it (then it is a run of the class prefix, like a
        search's).  Its order constraints are the parent's saturated ones:
        every run satisfying the child's choices satisfies the parent's, so
        they still hold (weaker than the child's own saturation, they only
        prune less in `_possible`).  Where no move does, the caller searches."""
        self.budget.tick()                           # a linearization examined
        ev_var, ev_kind = self.ev_var, self.ev_kind
        if e < 0:
            var = -1 - e
            return (self._moved(lin, before, w, var, rf, final, "after-last")
                    or self._moved(lin, before, w, var, rf, final, "end"))
        var = ev_var[e]
        if w == INIT:
            return self._moved(lin, before, e, var, rf, final, "before-first")
        return (self._moved(lin, before, e, var, rf, final, w)
                or self._moved(lin, before, w, var, rf, final, -2 - e))

    def _moved(self, lin: list[int], before: list[int], mover: int, var: int, rf: list,
               final: dict, where) -> tuple[list[int], list[int]] | None:
        """`lin` with `mover` (and what reads from it) moved: just after event
        `where` (an int >= 0), just before event -2 - `where` (an int < -1;
        that event stays where it is even if it reads from `mover`), just
        before the first / after the last write of `var` ("before-first",
        "after-last"), or at the end ("end"); the result if it checks (see
        `_repair`), else None."""
        ev_var, ev_kind = self.ev_var, self.ev_kind
        anchor = where if isinstance(where, int) and where >= 0 else \
            (-2 - where if isinstance(where, int) else None)
        block = {mover}
        grew = ev_kind[mover] != _R
        while grew:
            grew = False
            for x, src in enumerate(rf):
                if src is not None and src in block and x not in block and ev_var[x] == var \
                        and x != anchor:
                    block.add(x)
                    grew = grew or ev_kind[x] != _R
        if anchor is not None and anchor in block:
            return None                              # a cycle: no run
        moved = [x for x in lin if x in block]
        rest = [x for x in lin if x not in block]
        if where == "before-first":
            at = next((k for k, x in enumerate(rest) if ev_var[x] == var and ev_kind[x] != _R),
                      len(rest))
        elif where == "after-last":
            at = 1 + max((k for k, x in enumerate(rest) if ev_var[x] == var and ev_kind[x] != _R),
                         default=-1)
        elif where == "end":
            at = len(rest)
        elif where >= 0:
            at = rest.index(where) + 1
        else:
            at = rest.index(-2 - where)
        rest[at:at] = moved
        placed = 0
        ev_anc = self.ev_anc
        for x in rest:
            if ev_anc[x] & ~placed:
                return None
            placed |= 1 << x
        got = self._observed(rest)
        for x, want in enumerate(rf):
            if want is not None and got[x] != want:
                return None
        for v, want in final.items():
            if got[-1 - v] != want:
                return None
        return rest, before

    def _possible(self, e: int, w: int, before: list[int], rf: list) -> bool:
        """False when choice e = w contradicts `before`, the orders every run
        satisfying the choices made so far respects (the parent's
        saturation, or an ancestor's: weaker, still necessary), or the
        choices made so far: then no run makes this choice too, and a search
        would say so at a higher cost.  Each rule is necessary for a run:
        a final writer is followed by no write (and no read-modify-write
        reads from it); w is not the last write before e when another write
        w2 must come after w and before e (in `before`, or a read-modify-write
        w2 that reads from w); two read-modify-writes never read from one
        write, and never (through a chain of them) from each other."""
        kind = self.ev_kind
        if e < 0:                                    # w as the final writer
            w_bit = 1 << w
            for u in self.writes[-1 - e]:
                if before[u] & w_bit or (rf[u] == w and kind[u] == _U):
                    return False
            return True
        ws = self.writes[self.ev_var[e]]
        be = before[e]
        if w == INIT:
            for w2 in ws:
                if w2 != e and be >> w2 & 1:
                    return False
            return True
        if before[w] >> e & 1:
            return False
        w_bit = 1 << w
        e_is_u = kind[e] == _U
        for u in ws:
            if u == w or u == e:
                continue
            if be >> u & 1 and before[u] & w_bit:
                return False                         # u is a write between w and e
            if rf[u] == w and kind[u] == _U and (e_is_u or be >> u & 1):
                return False                         # u follows w at once, before e
        if e_is_u:
            src = rf[w] if kind[w] == _U else None   # a cycle of read-modify-writes
            while src is not None and src != INIT:
                if src == e:
                    return False
                src = rf[src] if kind[src] == _U else None
        return True

    def _observed(self, lin: list[int]) -> dict[int, int]:
        """What a linearization's events read from, and the final writers."""
        lw = [INIT] * len(self.var_names)
        got: dict[int, int] = {}
        for e in lin:
            v = self.ev_var[e]
            if self.ev_kind[e] != _W:
                got[e] = lw[v]
            if self.ev_kind[e] != _R:
                lw[v] = e
        for v in range(len(lw)):
            got[-1 - v] = lw[v]
        return got

    def _saturate(self, rf: list, final: dict) -> list[int] | None:
        """Orders every run satisfying the choices must respect, or None when
        they form a cycle (then no run satisfies them).  `before[e]` is the
        set of events that must fire before e, closed transitively; it starts
        as hb and grows, to a fixpoint, by the rules (r reads from w, w' a
        write to the same variable, neither r nor w):
        w before r; r before every write when w is the initial value;
        w' before w when w' must precede r (else r would read w' or later);
        r before w' when w must precede w' (else r would read w' or later);
        every other write before a variable's final writer.  Two U events
        reading from one write is impossible (both would follow it at once)."""
        m = self.m
        before = list(self.ev_anc)
        seen_u: set[tuple[int, int]] = set()
        for e in range(m):
            if rf[e] is not None and self.ev_kind[e] == _U:
                key = (self.ev_var[e], rf[e])
                if key in seen_u:
                    return None
                seen_u.add(key)

        def add(a: int, b: int) -> bool:
            if before[b] >> a & 1:
                return False
            new = before[a] | (1 << a)
            if new >> b & 1:
                raise _Cycle
            for c in range(m):
                if c == b or before[c] >> b & 1:
                    if new >> c & 1:
                        raise _Cycle
                    before[c] |= new
            return True

        constrained = [e for e in range(m) if rf[e] is not None]
        writes = self.writes
        try:
            changed = True
            while changed:
                changed = False
                for e in constrained:
                    w = rf[e]
                    ws = writes[self.ev_var[e]]
                    if w == INIT:
                        for w2 in ws:
                            if w2 != e:
                                changed |= add(e, w2)
                        continue
                    changed |= add(w, e)
                    for w2 in ws:
                        if w2 == w or w2 == e:
                            continue
                        if before[e] >> w2 & 1:
                            changed |= add(w2, w)
                        elif before[w2] >> w & 1:
                            changed |= add(e, w2)
                for v, f in final.items():
                    for w2 in writes[v]:
                        if w2 != f:
                            changed |= add(w2, f)
        except _Cycle:
            return None
        return before

    def _search(self, rf: list, final: dict) -> tuple[list[int], list[int]] | None:
        """A linearization of the events that satisfies the choices and the
        saturated order it respects, or None when no run satisfies them."""
        m = self.m
        ev_anc = self._saturate(rf, final)
        if ev_anc is None:
            self.budget.tick()
            return None
        full = (1 << m) - 1
        readers: dict[tuple[int, int], int] = {}
        for e in range(m):
            if rf[e] is not None:
                key = (self.ev_var[e], rf[e])
                readers[key] = readers.get(key, 0) | (1 << e)
        final_of = [final.get(v) for v in range(len(self.var_names))]
        ev_var, ev_kind = self.ev_var, self.ev_kind
        reads, write_events, budget = self.reads, self.write_events, self.budget
        failed: set = set()
        path: list[int] = []
        lw = [INIT] * len(self.var_names)

        targets = {w for w in rf if w is not None}
        constrained_on = [0] * len(self.var_names)
        for e in range(m):
            if rf[e] is not None:
                constrained_on[ev_var[e]] |= 1 << e

        def dfs(mask: int) -> bool:
            start = len(path)
            saved = list(lw)
            progress = True
            while progress:                          # eager reads and writes
                progress = False
                for r in reads:
                    if not mask >> r & 1 and ev_anc[r] & ~mask == 0:
                        req = rf[r]
                        if req is None or req == lw[ev_var[r]]:
                            mask |= 1 << r
                            path.append(r)
                            progress = True
                for w in write_events:
                    # a write nobody constrained reads, to a variable with no
                    # constrained access left, that is not (and does not
                    # overwrite) its final writer: see docs/oracle.md
                    if mask >> w & 1 or ev_anc[w] & ~mask or w in targets:
                        continue
                    v = ev_var[w]
                    f = final_of[v]
                    if constrained_on[v] & ~mask or (f is not None and (f == w or mask >> f & 1)):
                        continue
                    mask |= 1 << w
                    lw[v] = w
                    path.append(w)
                    progress = True
            if mask == full:
                if all(f is None or f == lw[v] for v, f in enumerate(final_of)):
                    return True
                del path[start:]
                lw[:] = saved
                return False
            key = (mask, tuple(lw))
            if key in failed:
                del path[start:]
                lw[:] = saved
                return False
            budget.tick()
            for w in write_events:
                if mask >> w & 1 or ev_anc[w] & ~mask:
                    continue
                v = ev_var[w]
                cur = lw[v]
                if readers.get((v, cur), 0) & ~mask & ~(1 << w):
                    continue                         # someone must still read cur
                if cur != INIT and final_of[v] == cur:
                    continue                         # cur is the final write
                if ev_kind[w] == _U and rf[w] is not None and rf[w] != cur:
                    continue
                lw[v] = w
                path.append(w)
                if dfs(mask | (1 << w)):
                    return True
                path.pop()
                lw[v] = cur
            failed.add(key)
            del path[start:]
            lw[:] = saved
            return False

        return (list(path), ev_anc) if dfs(0) else None

    # -- replay ------------------------------------------------------------------

    def _replay(self, lin: list[int]) -> tuple[Outcome, list[int]]:
        """Run the component with its events in the order `lin` and every
        other step as soon as its inputs are there: the outcome and the steps
        in order.  This is the step function of `explore._Component.fire`
        (the reference engine's, tested against the step semantics) without
        its scheduling bookkeeping: a Read takes the variable's value, an
        Assign stores f(w, v) unless v or f(w, v) is an error, a decomposed
        Assign takes w at its read step and stores at its write step.  A
        no-op blind write raises Unsupported."""
        comp, order, anc = self.comp, self.order, self.anc
        n = comp.n
        kind, fn, attrs, var = comp.kind, comp.fn, comp.attrs, comp.var
        in_src, data_slots, value_slot = self._in_src, comp.data_slots, comp.value_slot
        decomposed = comp.decomposed
        varval = {x: self.init.get(x, Error(UNINITIALIZED)) for x in comp.variables}
        pending: dict[int, tuple[Value, Value]] = {}
        nonevent = self._nonevent
        if self._static_done is None:
            out: list = [None] * n
            steps: list[int] = []
            emitted = 0
        else:                        # the static nodes' values, computed by the first replay
            out = list(self._static_done[0])
            steps = list(self._static_done[1])
            emitted = self._static

        def arg(i: int, slot: int):
            src = in_src[i][slot]
            return src[1] if src[0] < 0 else out[src[0]][src[1]]

        def store(i: int, w, v) -> None:
            if isinstance(v, Error):
                return
            (new,) = fn[i].apply((w, v))
            if not isinstance(new, Error):
                varval[var[i]] = new

        def step(t: int) -> None:
            steps.append(t)
            if t >= n:
                w, v = pending.pop(t - n)
                store(t - n, w, v)
                return
            k = kind[t]
            if k == _FN:
                out[t] = fn[t].apply([arg(t, s) for s in data_slots[t]], attrs[t])
            elif k == _VAR:
                out[t] = (None,)
            elif k == _READ:
                out[t] = (varval[var[t]],)
            elif decomposed:
                pending[t] = (varval[var[t]], arg(t, value_slot[t]))
            else:
                store(t, varval[var[t]], arg(t, value_slot[t]))

        if self._static_done is None:
            bits = self._static
            while bits:
                low = bits & -bits
                step(order[low.bit_length() - 1])
                bits ^= low
            emitted = self._static
            self._static_done = (list(out), list(steps))
        for e in lin:
            k = self.ev_pos[e]
            bits = anc[k] & nonevent & ~emitted
            emitted |= bits
            while bits:
                low = bits & -bits
                step(order[low.bit_length() - 1])
                bits ^= low
            t = order[k]
            if self.ev_kind[e] == _W:
                i = t % n
                if t >= n:
                    w, v = pending[i]
                    bad = isinstance(v, Error) or isinstance(fn[i].apply((w, v))[0], Error)
                else:
                    bad = isinstance(arg(i, value_slot[i]), Error)
                if bad:
                    raise Unsupported(f"the write {comp.label(t)} stores an error value "
                                      "(it leaves the variable unchanged)")
            step(t)
            emitted |= 1 << k
        bits = nonevent & ~emitted
        while bits:
            low = bits & -bits
            step(order[low.bit_length() - 1])
            bits ^= low
        fetched = {}
        for i in range(n):
            for port, name in comp.fetch[i]:
                fetched[name] = out[i][port]
        outs = tuple((k, fetched[k]) for k in comp.output_names)
        state = tuple((x, varval[x]) for x in comp.variables) if comp.observe_state else None
        return Outcome(outs, state), steps


def outcome_set_rf(p, feeds: Mapping[str, Value], init: Mapping[str, Value],
                   semantics: str = ATOMIC, observe: str = "outputs+state",
                   max_states: int = DEFAULT_MAX_STATES,
                   max_seconds: float = DEFAULT_MAX_SECONDS) -> OutcomeSet:
    """Outcomes(P, σ) by reads-from classes (see the module docstring).  The
    result's `states` counts linearization-search states; `classes` (an extra
    attribute) counts the reads-from classes evaluated.  Raises Unsupported
    where the engine does not apply, BudgetExceeded when the budget runs out."""
    return outcome_set_engine(p, feeds, init, semantics, observe, max_states, max_seconds,
                              "readsfrom")


# ---------------------------------------------------------------------------
# Choosing an engine per component (dispatch.outcome_set(engine=...))

ENGINES = ("reference", "readsfrom", "auto", "symmetry")
#: auto: the reads-from engine only where its classes are bounded by this many
AUTO_MAX_CLASSES = 100_000
#: auto: ... and by AUTO_RATIO times the downsets of the event order
AUTO_RATIO = 2
#: auto: components with fewer relevant accesses go to the reference engine
#: unexamined (a handful of states; building the reads-from analysis costs more)
AUTO_MIN_ACCESSES = 3
#: auto: the reference engine's first try gets this many states per possible
#: class of the reads-from engine (and at least AUTO_MIN_PROBE)
AUTO_PROBE_FACTOR = 2
AUTO_MIN_PROBE = 64
#: auto: downsets are counted up to this many memo entries (then: "many")
DOWNSET_CAP = 20_000


def _class_bound(rfc: _Component_RF, cap: int = AUTO_MAX_CLASSES) -> int:
    """The product of the candidates of every choice: an upper bound on the
    component's reads-from classes (stops once past `cap`)."""
    bound = 1
    for _e, cands in rfc.choices:
        bound *= max(1, len(cands))
        if bound > cap:
            break
    return bound


def _downsets(rfc: _Component_RF, cap: int) -> int | None:
    """How many downward-closed sets of events hb has (every set of events
    some prefix of a run can have fired), or None when counting needs more
    than DOWNSET_CAP memo entries; stops early once the count passes `cap`.
    Events are numbered in a topological order, so the lowest event of a set
    is minimal in it: a downset of S either leaves it out (and everything
    after it) or holds it (and any downset of the rest)."""
    m, anc = rfc.m, rfc.ev_anc
    succ = [0] * m
    for b in range(m):
        a = anc[b]
        while a:
            low = a & -a
            succ[low.bit_length() - 1] |= 1 << b
            a ^= low
    memo: dict[int, int] = {}
    stack = [(1 << m) - 1]
    while stack:                                     # post-order, no recursion
        s = stack[-1]
        if s in memo:
            stack.pop()
            continue
        low = s & -s
        x = low.bit_length() - 1
        without = s & ~low & ~succ[x]
        rest = s & ~low
        todo = [t for t in (without, rest) if t and t not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[s] = (memo[without] if without else 1) + (memo[rest] if rest else 1)
        if memo[s] > cap:
            return memo[s]
        if len(memo) > DOWNSET_CAP:
            return None
    return memo.get((1 << m) - 1, 1)


def choose_engine(rfc: _Component_RF) -> str:
    """auto's choice for one component, by structure alone (no search):

    * ``reference`` when two atomic read-modify-writes (U events) access one
      variable: the reads-from engine evaluates every order of them (they
      read from each other), while the reference engine's memoization merges
      orders that leave equal values (AssignAdd x n: one outcome, n! classes);
    * ``readsfrom`` when the bound on its classes (the product of every
      choice's candidates) is at most AUTO_MAX_CLASSES and at most AUTO_RATIO
      times the number of downsets of the event order (the sets of accesses
      a prefix of a run can have fired: what the reference engine's states
      range over, before values multiply them and stubborn sets and eager
      steps prune them), while the reads-from engine costs about one
      linearization check and one replay per class;
    * ``reference`` otherwise.

    The downsets are an estimate, not a bound, of the reference's states,
    so `outcome_set_engine` still lets the reference engine try first, with
    as many states as this bound on classes (see `_auto`).  Measured on the
    families and on generated programs (docs/oracle.md).  Both engines are
    exact: the choice changes time, never the set."""
    per_var: dict[int, int] = {}
    for e in range(rfc.m):
        if rfc.ev_kind[e] == _U:
            v = rfc.ev_var[e]
            per_var[v] = per_var.get(v, 0) + 1
            if per_var[v] > 1:
                return "reference"
    bound = _class_bound(rfc)
    if bound > AUTO_MAX_CLASSES:
        return "reference"
    if bound <= 1:
        return "readsfrom"
    d = _downsets(rfc, AUTO_RATIO * bound)
    return "readsfrom" if d is None or bound <= AUTO_RATIO * d else "reference"


_deep_lock = threading.Lock()
#: the threads inside `_deep_recursion`, and the limit before the first of them
_deep_inside = 0
_deep_before = 0


@contextlib.contextmanager
def _deep_recursion(limit: int) -> Iterator[None]:
    """The interpreter's recursion limit at least `limit` while any thread
    is inside, the limit before the first of them once the last leaves.
    (The limit is the interpreter's, not a thread's: each search setting it
    and putting back what it found, a check ending in one thread put the
    limit back under another thread's search, which could then die of
    RecursionError, and the last to end left it raised.)"""
    global _deep_inside, _deep_before
    with _deep_lock:
        if _deep_inside == 0:
            _deep_before = sys.getrecursionlimit()
        _deep_inside += 1
        if sys.getrecursionlimit() < limit:
            sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        with _deep_lock:
            _deep_inside -= 1
            if _deep_inside == 0:
                try:
                    sys.setrecursionlimit(_deep_before)
                except RecursionError:
                    pass   # (this thread's stack is past it: left raised)


def outcome_set_engine(p, feeds: Mapping[str, Value], init: Mapping[str, Value],
                       semantics: str, observe: str, max_states: int, max_seconds: float,
                       engine: str) -> OutcomeSet:
    """`dispatch.outcome_set` with a choice of engine per component:

    * ``readsfrom``: this module's engine; raises Unsupported where it does not apply;
    * ``symmetry``: per component with >= 2 identical threads, the
      quotient search of oracle/symmetry.py; the reference engine elsewhere;
    * ``auto``: per component with identical threads, the symmetry engine;
      elsewhere the engine `choose_engine` picks by structure;
      where it picks the reads-from engine and that one declines
      (Unsupported) or needs more than half of the budget left, the
      reference engine with the rest.

    Both engines are exact, so the choice changes the time and the witness
    schedules, never the outcome set.  The result has `classes` (reads-from
    classes evaluated) and `engines` (the engine that computed each
    component)."""
    from .explore import _explore
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if semantics not in (ATOMIC, DECOMPOSED):
        raise ValueError(f"unknown semantics {semantics!r}")
    budget = Budget(max_states, max_seconds)
    comps = []
    used = []
    classes = 0
    with _deep_recursion(4 * MAX_CHOICES + 2000):
        for names, variables, outputs in components(p):
            comp = _Component(p, names, semantics, observe, feeds, variables, outputs)
            comp.cache_functions()
            part = None
            symmetric = None                          # identical threads: the quotient search
            if engine in ("symmetry", "auto"):
                from .symmetry import explorer
                symmetric = explorer(p, comp)
            if engine == "symmetry" and symmetric is not None:
                part = symmetric(comp, init, budget)
                used.append("symmetry")
            elif engine == "readsfrom":
                rfc = _Component_RF(comp, init, budget)
                part = rfc.run()
                classes += rfc.classes
                used.append("readsfrom")
            elif engine == "auto":
                part, which, n = _auto(comp, init, budget, symmetric)
                classes += n
                if part is not None:
                    used.append(which)
                elif symmetric is not None:
                    part = symmetric(comp, init, budget)
                    used.append("symmetry")
            if part is None:
                part = _explore(comp, init, budget)
                used.append("reference")
            comps.append(part)
    if not comps:   # (no node, no variable: one outcome, as observed)
        comps.append({combine([], observe): ()})
    result = OutcomeSet(comps, budget.states, time.monotonic() - budget.started)
    result.classes = classes
    result.engines = used
    return result


@dataclass
class ClassRuns:
    """`class_runs`' answer: `runs`, each (outcome, schedule); `components`;
    `one_per_outcome`: every component has as many classes as outcomes
    (`runs` is empty where every component has one class: any run of the
    program is then a run of its one class)."""
    runs: list[tuple[Outcome, list[str]]]
    components: int
    one_per_outcome: bool


def class_runs(p, feeds: Mapping[str, Value], init: Mapping[str, Value],
               semantics: str = ATOMIC, observe: str = "outputs+state", max_runs: int = 100,
               max_seconds: float = DEFAULT_MAX_SECONDS) -> ClassRuns:
    """Runs of `p` from σ = (feeds, init) that between them hold every
    reads-from class of each of its components: a component's classes each
    beside the other components' first (the first run holds every
    component's first), so sum(classes - 1) + 1 runs.  A component's first
    class is one whose outputs hold no error value, where it has one (a
    run that fails on TensorFlow then shows which component failed it).

    Why they stand for every run of `p` under any deterministic
    implementation of its ops (TensorFlow's kernels replaying a schedule):
    all runs of a class give each node the same inputs (the module
    docstring's induction along hb ∪ rf, which needs of a function only
    that it gives the same results for the same arguments), so an
    implementation gives all of them one part of that component's outcome;
    components share no edge and no variable, so a run's outcome is its
    components' parts, each fixed by that component's class.  An
    implementation that gives each of these runs the oracle's outcome
    gives every run of `p` the oracle's outcome.  Where each component has
    as many classes as outcomes (`one_per_outcome`; a race-free one has
    one of each), one witness per outcome of `p` is one run per class of
    `p` already.

    Raises Unsupported where the argument or the engine does not apply
    (control flow, a component the engine declines, a no-op write, more
    than `max_runs` runs) and BudgetExceeded past `max_seconds`."""
    if p.has_control_flow:
        raise Unsupported("control flow (the reads-from engine has no Switch or loop)")
    if semantics not in (ATOMIC, DECOMPOSED):
        raise ValueError(f"unknown semantics {semantics!r}")
    budget = Budget(DEFAULT_MAX_STATES, max_seconds)
    parts: list[list[tuple[Outcome, tuple[str, ...]]]] = []
    rfcs = []
    for names, variables, outputs in components(p):
        comp = _Component(p, names, semantics, observe, feeds, variables, outputs)
        comp.cache_functions()
        rfcs.append(_Component_RF(comp, init, budget, single_ok=True))
    if rfcs and all(rfc.single for rfc in rfcs):
        # one class (a race-free program): no run needed, and none made (a
        # real graph's training step evaluated again would cost seconds)
        return ClassRuns([], len(rfcs), True)
    with _deep_recursion(4 * MAX_CHOICES + 2000):
        for rfc in rfcs:
            if len(rfc.choices) > MAX_CHOICES:
                raise Unsupported(f"{len(rfc.choices)} reads-from choices (at most "
                                  f"{MAX_CHOICES})")
            rfc.record, rfc.record_cap = [], max_runs
            rfc.run()
            parts.append(sorted(rfc.record, key=lambda c: any(
                isinstance(v, Error) for _k, v in c[0].outputs)))
    if not parts:   # (no node, no variable: one outcome, as observed)
        return ClassRuns([(combine([], observe), [])], 0, True)
    if sum(len(c) - 1 for c in parts) + 1 > max_runs:
        raise Unsupported(f"more than {max_runs} runs for the reads-from classes")
    first = [c[0] for c in parts]
    runs = []
    for i, classes in enumerate(parts):
        for j, one in enumerate(classes):
            if i and not j:
                continue           # (every component's first: the run i = 0, j = 0)
            combo = [*first[:i], one, *first[i + 1:]]
            runs.append((combine([o for o, _ in combo]), [s for _, w in combo for s in w]))
    return ClassRuns(runs, len(parts),
                     all(len(c) == len({o for o, _ in c}) for c in parts))


def _sub_budget(budget: Budget, states: int, share: float) -> Budget:
    left_s = budget.max_seconds - (time.monotonic() - budget.started)
    sub = Budget(max(1, min(states, budget.max_states - budget.states)), max(0.0, left_s * share))
    return sub


def _probe(comp: _Component, init, budget: Budget, states: int, explore=None):
    """The reference engine (or `explore`, the symmetry engine) on one
    component with at most `states` states: its outcomes, or None when that
    is not enough."""
    from .explore import _explore
    sub = _sub_budget(budget, states, 1.0)
    try:
        part = (explore or _explore)(comp, init, sub)
    except BudgetExceeded:
        part = None
    budget.states += sub.states
    return part


def _auto(comp: _Component, init, budget: Budget, symmetric=None):
    """One component under `auto`: (outcomes, engine, classes), or
    (None, "reference", 0) when the caller is to run the reference engine
    (the symmetry engine where `symmetric`, its explorer for this component,
    is given: the component has identical threads; it then also takes the
    reference engine's place in the first try below).

    Where `choose_engine` picks the reads-from engine with a bound B on the
    classes, the reference engine first gets F * B states (F =
    AUTO_PROBE_FACTOR): where it finishes in that many it keeps its answer;
    where it does not, it needs more than F times as many states as the
    reads-from engine has classes, and the reads-from engine runs, under
    half of what is left of the budget (where it declines or runs out of
    that, the reference engine again with the rest).  A class costs about
    what a state costs (docs/oracle.md), so the worst case, a component
    where the reference needs a little more than F * B states and the
    classes are B, takes about (F + 1) / F times the reference's time; where
    the reference needs many more states than that, auto saves the rest."""
    if sum(comp.counted) < AUTO_MIN_ACCESSES:
        return None, "reference", 0                  # a few accesses: the reference is quick
    try:
        rfc = _Component_RF(comp, init, budget)
    except Unsupported:
        return None, "reference", 0
    if choose_engine(rfc) != "readsfrom":
        return None, "reference", 0
    part = _probe(comp, init, budget, max(AUTO_MIN_PROBE, AUTO_PROBE_FACTOR * _class_bound(rfc)),
                  symmetric)
    if part is not None:
        return part, ("reference" if symmetric is None else "symmetry"), 0
    sub = _sub_budget(budget, budget.max_states // 2, 0.5)
    rfc.budget = sub
    try:
        part = rfc.run()
    except (Unsupported, BudgetExceeded):
        part = None
    budget.states += sub.states
    return part, "readsfrom", (rfc.classes if part is not None else 0)
