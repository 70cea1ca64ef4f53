"""A refutation stage: counterexamples without enumerating the original's outcomes.

Where the symbolic search of the original program P runs out of states, the
older pipeline compared P and P' concretely by enumerating both outcome sets
at a σ, which runs out of the same states.  A counterexample needs much less:
one outcome o' of P' at σ and the knowledge that o' is *not* an outcome of P
at σ.  This module finds both cheaply.

1. **Candidates** (`sample_outcomes`): random complete runs of P' at σ.  Each
   run fires the enabled steps in a random order (uniformly, or by random
   priorities, as PCT does), so each gives a real outcome of P' with its
   schedule; no enumeration.  Only steps that conflict with a step still to
   come are chosen at random (the others commute with everything, explore.py).
2. **Membership** (`unreached`): one search of P's schedules, the concrete
   oracle's own search (`explore._Component`: eager steps, relevance,
   memoized states, stubborn sets), *pruned against the candidates*: a state
   is abandoned as soon as no candidate still agrees with it, i.e. every
   candidate differs from an output the state has already fetched, or (when
   the state is observed) from the value of a variable to which no write
   remains.  A terminal state reached marks the candidate equal to its
   outcome as reached.

**Why `unreached` is exact.**  The unpruned search reaches every terminal
state's outcome (explore.py: stubborn sets preserve every terminal state in
an acyclic program; memoized keys determine the outcomes reachable).  In a
run, a fetched output never changes, and a variable to which no write step
remains keeps its value to the end (only write steps change variables;
`nw` counts every write step of an observed variable, since an observed
variable's Assigns are all relevant).  So the outcome of every terminal state
below a pruned state differs from every remaining candidate: pruning loses no
candidate's terminal state.  The set of candidates still wanted only shrinks,
so a state explored (or pruned) once needs no second visit, and the memoized
key determines which candidates agree with a state (the key holds the fetched
outputs and, when state is observed, the observed variables' values).  When
the search ends without running out of budget, the candidates it did not
reach are not outcomes of P at σ.  Components of P never interact, so a
candidate is an outcome of P exactly when its restriction to every component
of P is an outcome of that component; each component is searched on its own,
and a component the rewrite left unchanged is not searched.

**Projections.**  The search is run first with P observed at one part only
(an output, or one variable's final value), then at pairs of parts
(`_Projected`: the oracle's relevance analysis marks only the nodes that can
affect those parts, so the search merges every state that differs
elsewhere).  The outcomes of P observed at parts S are exactly the
restrictions to S of P's outcomes (each run's outcome, restricted: this is
how explore.py already treats a program's outputs), so a candidate whose
restriction to S no run reaches is not an outcome of P; the argument above
applies to the projected search unchanged.  The converse does not hold (a
candidate may agree with P on every part and pair and still not be an
outcome), so only the search with every part observed (`joint`) rules out
*every* candidate that is not an outcome; the checker leaves it out for
components of three parts or more, which can only make it miss a
counterexample, never report a false one.

A candidate that no run of P reaches is only a *candidate* counterexample
here: the checker (check.py) replays its schedule on P' with the reference
semantics (semantics.run_schedule) and confirms it with the concrete oracle
before it becomes an `unsound` verdict.  This stage never concludes `sound`.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping

import numpy as np

from tfsem.oracle import explore
from tfsem.oracle.explore import (Budget, BudgetExceeded, _Component, _schedule, compiled,
                                  components, successors)
from tfsem.oracle.budget import bounded
from tfsem.oracle.outcomes import Outcome, combine
from tfsem.oracle.program import ASSIGN, Node, Program
from tfsem.oracle.semantics import DECOMPOSED, READ_STEP, WRITE_STEP
from tfsem.oracle.values import Value


def _compiled(p: Program, names, semantics, observe, feeds, variables, outputs,
              cache: bool = True) -> _Component:
    # (compiled once per program and reused at every σ: explore.compiled)
    comp = compiled(p, names, semantics, observe, feeds, variables, outputs)
    # function results remembered per node (explore.py's cache), where the
    # oracle offers it and a run may meet an application twice (`cache`)
    hook = getattr(comp, "cache_functions", None) if cache else None
    if hook is None and not cache:
        # (the kernel evaluations of the steps ready together are still
        # asked for in one message to the kernels' child: explore.py's
        # `_prefetch`, which the cache's watch turned on)
        comp.prefetch_uncached = True
    return hook() if hook is not None else comp


#: `canonical_outcome` runs the compiled components without explore.py's
#: per-node function cache (one run fires each node once); False: with it,
#: as before (the differential test's reference)
CANONICAL_RUN_UNCACHED = True

#: parts of one component (outputs, observed variables) up to which pairs of
#: them are searched too
MAX_PAIRED_PARTS = 8




def sample_outcomes(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                    semantics: str, observe: str, rng: np.random.Generator, runs: int,
                    deadline: float, first_deadline: float | None = None
                    ) -> dict[Outcome, list[str]]:
    """Outcomes of `runs` random complete runs of `p` at σ (fewer when the
    deadline passes), each with its schedule.  Every one is an outcome of p:
    each run is a run of the oracle's step function.  A run reads the clock
    every 64 steps and stops past the deadline, giving no outcome; the
    first run's bound is `first_deadline` instead (None: it completes, a σ
    is tried once at least; else the result may be empty)."""
    # (a check's hard stop bounds the first run too: oracle/budget.py; past
    # it, no run, and no components built for one)
    deadline, first_deadline = bounded(deadline), bounded(first_deadline)
    if first_deadline is not None and time.monotonic() > first_deadline:
        return {}
    comps = [_compiled(p, names, semantics, observe, feeds, variables, outputs)
             for names, variables, outputs in components(p)]
    found: dict[Outcome, list[str]] = {}
    for k in range(runs):
        bound = deadline if k else first_deadline
        if bound is not None and time.monotonic() > bound:
            break
        parts, sched = [], []
        priority = k % 2 == 1
        steps = 0
        cut = False
        for comp in comps:
            st = comp.root(init)
            prio = rng.random(2 * comp.n) if priority else None
            while True:
                comp.close(st)
                if not st.ready:
                    break
                steps += 1
                # (the clock inside a run too, every 64 steps: a real
                # graph's run takes seconds.  The first run is cut only at
                # `first_deadline`)
                if bound is not None and steps & 63 == 0 and time.monotonic() > bound:
                    cut = True
                    break
                ready = sorted(st.ready)
                if prio is not None:
                    t = max(ready, key=lambda u: prio[u])
                else:
                    t = ready[int(rng.integers(len(ready)))]
                st.ready.discard(t)
                comp.fire(st, t)
            if cut:
                break    # (a run cut short gives no outcome)
            parts.append(comp.outcome(st))
            sched.extend(_schedule(st.sched))
        if cut:
            break
        found.setdefault(combine(parts, observe), sched)
    return found


def canonical_outcome(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                      semantics: str, observe: str,
                      deadline: float | None = None) -> tuple[Outcome, list[str]]:
    """The outcome of one run of `p` at σ that fires, among the enabled
    steps, the one first in p's canonical (topological) order, with its
    schedule: a run of p's own step function, as in `sample_outcomes`, whose
    schedule is the one counterexample minimization would move towards
    (minimize.py), so that a counterexample found on it needs no reordering.
    Past `deadline` (time.monotonic()) the run stops with BudgetExceeded
    (the clock is read every 64 steps)."""
    order: dict[str, int] = {}

    def rank(label: str) -> tuple:
        # (the order made when a priority table is first made: a run on a
        # straight line needs none)
        if not order:
            order.update((name, k) for k, name in enumerate(p.topological_order))
        name, _, phase = label.partition("@")
        return order[name], phase == "write"

    # (one run fires each node once: a node's own cache of its function's
    # results, explore.py's `_Cached`, would never be asked twice, and
    # made one wrapper per node per run; the values are the functions' own
    # either way, and a run by priority makes no state key, where that
    # cache's watch of NaN payloads matters.  Applications met again in
    # the check's other runs are remembered by oracle/applications.py)
    comps = [_compiled(p, names, semantics, observe, feeds, variables, outputs,
                       cache=not CANONICAL_RUN_UNCACHED)
             for names, variables, outputs in components(p)]
    priority = _by_step(lambda comp, u: (rank(comp.label(u)), u))
    if not (CANONICAL_RUN_UNCACHED and explore.STRAIGHT_LINE):
        parts, sched = _run_by_priority(comps, init, priority, deadline)
        return combine(parts, observe), sched
    # (a component run before runs on its straight line: the same steps in
    # the same order, each computing what the engine's fire computes, with
    # none of the bookkeeping that chooses the next step; explore.py's
    # `_Line` argues why it is the same run.  The priority is the
    # topological rank of a step's node, then its phase: a function of the
    # compiled component and of p's topological order (ties broken by p's
    # declaration order), as the line needs: one line, tagged with that
    # order, serves every σ.  The compiled component is shared by programs
    # that compare equal (explore's cache), which may declare their nodes
    # in another order and so have another canonical order: the tag keeps
    # their lines apart)
    parts, sched = [], []
    steps = 0
    started = time.monotonic()
    deadline = bounded(deadline)
    tag = ("canonical", p.topological_order)
    for comp in comps:
        line = comp.straight_line(tag, lambda u, comp=comp: priority.table(comp)[u], deadline,
                                  started)
        ran = line.run(comp, init, deadline, started, steps) if line is not None else None
        if ran is None:
            # (the engine's run; the first one records its steps, which the
            # line is made from when the run is asked for again)
            done = comp.record_steps(tag) if line is None else None
            part, labels, steps = _run_one(comp, init, priority, deadline, started, steps)
            if done is not None:
                done()
        else:
            part, labels, steps = ran
        parts.append(part)
        sched.extend(labels)
    return combine(parts, observe), sched


def _by_step(priority):
    """`priority(comp, u)` computed once per step of each component (a
    table), not at every choice: the same keys, so the same choices (the
    label of every ready step at every choice was 0.3 s of MobileNetV2's
    canonical runs).  `priority` must depend on the component and the step
    only."""
    tables: dict[int, list] = {}

    def table(comp) -> list:
        t = tables.get(id(comp))
        if t is None:
            t = tables[id(comp)] = [priority(comp, u) for u in range(2 * comp.n)]
        return t

    def key(comp, u):
        return table(comp)[u]
    key.table = table
    return key


def _run_by_priority(comps, init: Mapping[str, Value], priority,
                     deadline: float | None = None) -> tuple[list, list[str]]:
    """One run of each component from `init`, firing among the enabled
    steps the one first by `priority(component, step)`: the components'
    outcome parts and the run's schedule.  A run of the oracle's own step
    function: only the choice among enabled steps is ours."""
    parts, sched = [], []
    steps = 0
    started = time.monotonic()
    deadline = bounded(deadline)    # (a check's hard stop: oracle/budget.py)
    for comp in comps:
        part, labels, steps = _run_one(comp, init, priority, deadline, started, steps)
        parts.append(part)
        sched.extend(labels)
    return parts, sched


def _run_one(comp, init: Mapping[str, Value], priority, deadline: float | None,
             started: float, steps: int) -> tuple:
    """`_run_by_priority`'s run of one component: its outcome part, its
    schedule, and the choices made so far (`steps` before)."""
    st = comp.root(init)
    table = getattr(priority, "table", None)
    # (a table's own lookup as the key: no Python call per ready step)
    by = table(comp).__getitem__ if table is not None else (lambda u: priority(comp, u))
    steps = comp.run_by_priority(st, by, deadline, started, steps)
    return comp.outcome(st), _schedule(st.sched), steps


def guided_outcomes(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                    semantics: str, observe: str, schedules: Iterable[list[str]],
                    deadline: float) -> dict[Outcome, list[str]]:
    """Outcomes of runs of `p` at σ guided by schedules of another program
    (the rewrite's candidates): among the enabled steps, the one that comes
    first in the schedule fires first; steps the schedule does not name fire
    before all the others in one run and after them in a second.  Where the
    rewrite kept the original's accesses, these runs of p often give the
    candidate's very outcome.  Every one is an outcome of p, as in
    `sample_outcomes` (each run fires only enabled steps of p's own step
    function); a schedule only chooses among them.  Stops at the deadline."""
    comps = [_compiled(p, names, semantics, observe, feeds, variables, outputs)
             for names, variables, outputs in components(p)]
    found: dict[Outcome, list[str]] = {}
    for schedule in schedules:
        position = {step: k for k, step in enumerate(schedule)}
        for unnamed in (-1, len(position)):
            if time.monotonic() > deadline:
                return found
            try:
                parts, sched = _run_by_priority(
                    comps, init,
                    _by_step(lambda comp, u: (position.get(comp.label(u), unnamed), u)),
                    deadline)
            except BudgetExceeded:
                return found    # (a run cut short at the deadline gives no outcome)
            found.setdefault(combine(parts), sched)
    return found


class _Projected(_Component):
    """A component of p observed only at the variables `observed` (and the
    outputs it is given): the oracle's relevance analysis then keeps only the
    nodes that can affect those parts, so the search merges every state that
    differs elsewhere.  Its outcomes are the projections of the component's
    outcomes onto the parts kept (a run's outcome, restricted)."""

    def __init__(self, p: Program, names, semantics: str, feeds, variables, outputs,
                 observed: list[str]):
        self._observed = observed
        super().__init__(p, names, semantics, "outputs+state" if observed else "outputs",
                         feeds, variables, outputs)

    def _relevance(self, p: Program, index) -> None:
        # explore._Component._relevance marks every variable in `variables`
        # as observed when state is observed: mark only those in `observed`
        kept = self.variables
        self.variables = self._observed
        try:
            super()._relevance(p, index)
        finally:
            self.variables = kept


def _project(o: Outcome, outputs: list[str], variables: list[str]) -> tuple:
    outs = dict(o.outputs)
    state = dict(o.state or ())
    return tuple(outs[k] for k in outputs) + tuple(state[x] for x in variables)


def unreached(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
              semantics: str, observe: str, candidates: list[Outcome], budget: Budget,
              skip: frozenset = frozenset(), projections: bool = True,
              joint: bool = True, incomplete: list | None = None,
              reached: Iterable[Outcome] = (), complete: list | None = None
              ) -> list[tuple[Outcome, tuple | None]]:
    """The candidates that are not outcomes of `p` at σ (see the module's
    argument).  Components of p whose keys are in `skip` (left unchanged by
    the rewrite, `unchanged_components`) are not searched.

    With `projections`, each observed part (an output, or a variable's final
    value) of each component is first searched on its own, p observed at that
    part only: a candidate whose value there no run of p gives is not an
    outcome of p (the projection of p's outcome set onto a part is the set of
    that part's values over p's runs).  The first part that rules out some
    candidate ends the search (those candidates are returned; others may be
    missing too).  Otherwise the components are searched with every part
    observed, which rules out exactly the candidates that are not outcomes.
    Each candidate returned comes with the parts that rule it out (a tuple
    of one or two ("output", name) or ("variable", name)), or None when only
    all parts together do.  `joint=False` (with projections) leaves out the
    search with every part observed for components of three parts or more
    (those where single parts and pairs were searched): the result is then
    only a subset of the candidates that are not outcomes (possibly empty
    when some are), for a fraction of the time.  Raises BudgetExceeded when
    the budget runs out.  A part (or pair) whose search runs out of its share
    is skipped: when `incomplete` is a list, the parts skipped so are
    appended to it, so that the caller knows which were not compared; and
    when `complete` is a list, the parts whose search finished (or needed
    none) are appended to it.

    `reached`: outcomes of `p` at σ known already (those of random runs of
    p, `sample_outcomes`).  A candidate's value at the parts of a search
    that equals a reached outcome's value there is reached (a run of p gives
    it: it is in the projection of p's outcome set), so only the others are
    searched for, and a search with none left is not run; fewer targets only
    prune more, as the argument above allows."""
    reached = list(reached)
    comps = [(names, variables, outputs) for names, variables, outputs in components(p)
             if _key(names, variables) not in skip]
    if projections:
        singles, pairs = [], []
        for names, variables, outputs in comps:
            parts = [([k], []) for k in outputs]
            if observe != "outputs":
                parts += [([], [x]) for x in variables]
            if len(parts) >= 2:       # (else the joint search below is the same search)
                singles += [(names, variables, outs, xs) for outs, xs in parts]
            if len(parts) >= 3 and len(parts) <= MAX_PAIRED_PARTS:
                # two parts together: a rewrite that makes two reads return the
                # same value shows in neither read alone
                pairs += [(names, variables, a[0] + b[0], a[1] + b[1])
                          for i, a in enumerate(parts) for b in parts[i + 1:]]
        jobs = singles + pairs
        for n, (names, variables, outs, xs) in enumerate(jobs):
            # each part gets a share of the time left (the joint search one too);
            # a part that runs out of it is skipped, not fatal
            left = budget.max_seconds - (time.monotonic() - budget.started)
            if left <= 0:
                if incomplete is not None:
                    incomplete.extend(tuple([("output", k) for k in o] + [("variable", x) for x in v])
                                      for _n, _v, o, v in jobs[n:])
                break
            # (single parts first: a pair gets only what they leave, so that
            # every single part is compared where the time allows)
            share = len(singles) - n if n < len(singles) else len(jobs) - n
            part_budget = Budget(budget.max_states, left / (share + 1))
            try:
                comp = _Projected(p, names, semantics, feeds, variables, outs, xs)
                cache = getattr(comp, "cache_functions", None)
                if cache is not None:
                    cache()
                wanted: dict[tuple, list[int]] = {}
                for i, o in enumerate(candidates):
                    wanted.setdefault(_project(o, outs, xs), []).append(i)
                known = {_project(o, outs, xs) for o in reached}
                targets = [t for t in wanted if t not in known]
                missing = [i for j in (_search(comp, init, targets, outs, xs, part_budget)
                                       if targets else ())
                           for i in wanted[targets[j]]]
            except BudgetExceeded:
                if incomplete is not None:
                    incomplete.append(tuple([("output", k) for k in outs]
                                            + [("variable", x) for x in xs]))
                continue
            finally:
                budget.states += part_budget.states
            if complete is not None:
                complete.append(tuple([("output", k) for k in outs] + [("variable", x) for x in xs]))
            if missing:
                parts = tuple([("output", k) for k in outs] + [("variable", x) for x in xs])
                return [(candidates[i], parts) for i in sorted(missing)]
    missing: set[int] = set()
    for names, variables, outputs in comps:
        if projections and not joint and \
                len(outputs) + (len(variables) if observe != "outputs" else 0) >= 3:
            continue
        comp = _compiled(p, names, semantics, observe, feeds, variables, outputs)
        xs = variables if observe != "outputs" else []
        wanted = {}
        for i, o in enumerate(candidates):
            if i not in missing:
                wanted.setdefault(_project(o, outputs, xs), []).append(i)
        if not wanted:
            break
        known = {_project(o, outputs, xs) for o in reached}
        targets = [t for t in wanted if t not in known]
        if not targets:
            continue
        for j in _search(comp, init, targets, outputs, xs, budget):
            missing.update(wanted[targets[j]])
    return [(o, None) for i, o in enumerate(candidates) if i in missing]


def part_values(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                semantics: str, parts: tuple, budget: Budget) -> dict[tuple, list[str]]:
    """Every tuple of values the parts (("output", name) or ("variable",
    name), all of one component) take together over the runs of p at σ,
    each with a schedule of p that gives it: the oracle's search of p
    observed at those parts only (`_Projected`), which is the projection of
    p's outcome set onto them.  The schedule covers every node of p (other
    components run in their canonical order).  Raises BudgetExceeded when the
    budget runs out, ValueError when the parts are not of one component."""
    outs = [n for kind, n in parts if kind == "output"]
    xs = [n for kind, n in parts if kind == "variable"]
    found: dict[tuple, list[str]] = {}
    before: list[str] = []
    after: list[str] = []
    mine = None
    for names, variables, outputs in components(p):
        if set(outs) <= set(outputs) and set(xs) <= set(variables):
            mine = (names, variables, outputs)
        else:
            (after if mine is not None else before).extend(_canonical(p, names, semantics))
    if mine is None:
        raise ValueError(f"{parts!r} are not parts of one component of the program")
    names, variables, outputs = mine
    comp = _Projected(p, names, semantics, feeds, variables, outs, xs)
    cache = getattr(comp, "cache_functions", None)
    if cache is not None:
        cache()
    seen: set[tuple] = set()
    stack = [comp.root(init)]
    while stack:
        st = stack.pop()
        comp.close(st)
        if not st.ready:
            value = tuple(st.outputs[n] if kind == "output" else st.vars[n] for kind, n in parts)
            found.setdefault(value, before + list(_schedule(st.sched)) + after)
            continue
        stack.extend(successors(comp, st, seen, budget))
    return found


def part_of(o: Outcome, part: tuple[str, str]) -> Value:
    """The value of one part (("output", name) or ("variable", name)) of an outcome."""
    kind, name = part
    return dict(o.outputs)[name] if kind == "output" else dict(o.state or ())[name]


def _canonical(p: Program, names: list[str], semantics: str) -> list[str]:
    """The steps of nodes `names` in topological order (a decomposed Assign's
    read step, then its write step): a run of their component."""
    out = []
    for n in names:
        if semantics == DECOMPOSED and p.node[n].op == ASSIGN:
            out += [n + READ_STEP, n + WRITE_STEP]
        else:
            out.append(n)
    return out


def _search(comp: _Component, init: Mapping[str, Value], targets: list[tuple],
            outputs: list[str], variables: list[str], budget: Budget) -> list[int]:
    """Indices of `targets` (values of `outputs` then of `variables`, which
    the component observes) that no run of the component reaches."""
    out_pos = {k: i for i, k in enumerate(outputs)}
    var_pos = [(x, len(outputs) + i) for i, x in enumerate(variables)]
    remaining = set(range(len(targets)))
    seen: set[tuple] = set()

    def agree(st, alive: list[int]) -> list[int]:
        checks = [(out_pos[k], v) for k, v in st.outputs.items()]
        checks += [(i, st.vars[x]) for x, i in var_pos if st.nw.get(x, 0) == 0]
        return [j for j in alive if j in remaining
                and all(targets[j][i] == v for i, v in checks)]

    stack = [(comp.root(init), list(remaining))]
    while stack and remaining:
        st, alive = stack.pop()
        comp.close(st)
        alive = agree(st, alive)
        if not alive:
            continue
        if not st.ready:
            # every output fetched, no write left: agreeing is being equal
            for j in alive:
                remaining.discard(j)
            continue
        stack.extend((s2, alive) for s2 in successors(comp, st, seen, budget))
    return sorted(remaining)


def _key(names: list[str], variables: list[str]) -> tuple:
    """A component's identity: its nodes and its variables (a variable no
    node accesses is a component with no nodes)."""
    return frozenset(names), tuple(variables)


def _same_node(a: Node, b: Node) -> bool:
    """The same node bit for bit: as a set finds it (the same object, or an
    equal hash and `==`), the test the symbolic proof's component
    signatures make (checking/symbolic.py `_Signature`).  `==` alone is
    not enough: it compares attributes by value, so a float nested in
    `tf_attrs` is equal to the other zero (LeakyRelu's alpha 0.0 and -0.0,
    whose results for a negative input differ in their sign of zero) and
    True to 1; the node's hash is made from the attributes' exact key
    (functions.attrs_key: a float by its bits, a bool apart from an int),
    so an equal hash with `==` is the same bits."""
    return a is b or (hash(a) == hash(b) and a == b)


def unchanged_components(p: Program, p2: Program) -> frozenset:
    """The keys (`_key`) of p's components that p2 has unchanged: the same nodes
    (equal definitions), the same variables and the same outputs (fetched
    from the same ports).  Such a component has the same runs in both
    programs, so a candidate's restriction to it is an outcome of p."""
    theirs = {_key(names, variables): outputs for names, variables, outputs in components(p2)}
    same = set()
    for names, variables, outputs in components(p):
        key = _key(names, variables)
        if key in theirs and theirs[key] == outputs \
                and all(_same_node(p.node[n], p2.node[n]) for n in names) \
                and all(p.outputs[o] == p2.outputs[o] for o in outputs):
            same.add(key)
    return frozenset(same)


__all__ = ["guided_outcomes", "part_of", "part_values", "sample_outcomes", "unchanged_components", "unreached"]
