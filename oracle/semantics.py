"""The step semantics of seed 000, section 3.2.1, transcribed.

This module is the reference: it favours being checkable line by line against
the paper over speed.  The fast oracle (`explore.py`) is tested against it.

    A state consists of a mapping VarValue from Vars to Tensors, and a mapping
    InTransit from the edges of the graph to contents of the appropriate kind:
    an element of Tensors or EMPTY for tensor edges, an element of Vars or
    EMPTY for variable edges, and GO or EMPTY for control edges.

Two semantics modes (SPEC section 2):

* ``atomic`` (seed 000): an Assign-f reads, applies f and writes in one step.
* ``decomposed`` (seed 002): an Assign-f is a *read* step, which consumes the
  node's inputs and takes the variable's current value, and a later *write*
  step, which applies f and stores the result (compute and write are one step:
  compute touches no shared state, so splitting them adds no behaviour).
  Between the two, the pending (x, w, v) is part of the state, and other nodes
  may fire.  Schedules name the steps ``n@read`` and ``n@write``.

Control flow (SPEC section 9: Switch, Merge, Enter, Exit, NextIteration,
LoopCond; section 5 of the paper, section 4.4 of the whitepaper) extends this
state with execution contexts: `controlflow.py` transcribes it, and
:func:`behaviours`, :func:`reference_outcomes` and :func:`run_schedule` hand a
program with control-flow nodes to it.

Errors (footnotes 2, 4, 5): an uninitialized variable holds the error value
`uninitialized`; functions propagate errors; an Assign whose tensor input is an
error, or whose f(w, v) is an error, leaves the variable unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from . import controlflow as cf
from . import functions as fns
from .budget import BudgetExceeded, bounded
from .graph import (ATOMIC, DECOMPOSED, EMPTY, GO, READ_STEP, WRITE_STEP, Edge,  # noqa: F401
                    Graph, VarRef, _assigned, graph_of)
from .outcomes import Outcome, make_outcome
from .program import ASSIGN, CONTROL, READ, TENSOR, VAR, VARIABLE, Program
from .values import UNINITIALIZED, Error, Tensor, Value, exact

@dataclass(frozen=True)
class State:
    var_value: Mapping[str, Value]
    in_transit: Mapping[str, object]        # edge id -> Value | VarRef | GO | EMPTY
    # decomposed mode only: Assign nodes between their read and write steps
    pending: Mapping[str, tuple[str, Value, Value]] = field(default_factory=dict)

    def key(self) -> tuple:
        """The state as a hashable value, its values by their exact bits
        (values.exact: NaNs of different payloads are different states,
        since a later step may show the bits)."""
        return (tuple(sorted((k, exact(v)) for k, v in self.var_value.items())),
                tuple(sorted(((k, exact(v)) for k, v in self.in_transit.items() if v is not EMPTY),
                             key=_first)),
                tuple(sorted(((k, (a, exact(w), exact(v))) for k, (a, w, v) in self.pending.items()),
                             key=_first)))


def _first(item: tuple):
    return item[0]


def initial_state(p: Program, g: Graph, feeds: Mapping[str, Value],
                  init: Mapping[str, Value]) -> State:
    """The initial state:
    - for all input edges, InTransit(e) is not EMPTY (a feed's value, or GO);
    - for all other edges e, InTransit(e) is EMPTY;
    - for each variable x, VarValue(x) is in Tensors (an error value,
      `uninitialized`, when no initial value is given: footnote 4)."""
    in_transit: dict[str, object] = {}
    for e in g.edges:
        if e.src is None:
            in_transit[e.id] = feeds[e.feed] if e.kind == TENSOR else GO
        else:
            in_transit[e.id] = EMPTY
    var_value = {x: init.get(x, Error(UNINITIALIZED)) for x in p.variables}
    return State(var_value, in_transit)


def _inputs_present(g: Graph, s: State, n: str) -> bool:
    """Each incoming edge holds content of its kind: GO on control edges, a
    tensor on tensor edges, a variable on variable edges."""
    for d in g.incoming[n]:
        content = s.in_transit[d.id]
        if d.kind == CONTROL and content is not GO:
            return False
        if d.kind == TENSOR and not isinstance(content, Tensor | Error):
            return False
        if d.kind == VARIABLE and not isinstance(content, VarRef):
            return False
    return True


def enabled(p: Program, g: Graph, s: State, semantics: str = ATOMIC) -> list[str]:
    """The steps that may fire in state s, as schedule labels."""
    if p.has_control_flow:
        raise ValueError("a program with control flow: use controlflow.Machine")
    steps = []
    for n in p.nodes:
        if semantics == DECOMPOSED and n.op == ASSIGN:
            if n.name in s.pending:
                steps.append(n.name + WRITE_STEP)
            elif _inputs_present(g, s, n.name):
                steps.append(n.name + READ_STEP)
        elif _inputs_present(g, s, n.name):
            steps.append(n.name)
    return steps


def step_enabled(p: Program, g: Graph, s: State, step: str, semantics: str = ATOMIC) -> bool:
    """`step in enabled(p, g, s, semantics)`, looking at the step's node only
    (a replay asks it at every step: the whole list cost O(nodes) a step, and
    a 1,222-node schedule's replay 0.1 s)."""
    if p.has_control_flow:
        raise ValueError("a program with control flow: use controlflow.Machine")
    name, _, phase = step.partition("@")
    n = p.node.get(name)
    if n is None:
        return False
    if semantics == DECOMPOSED and n.op == ASSIGN:
        if name in s.pending:
            return step == name + WRITE_STEP
        return step == name + READ_STEP and _inputs_present(g, s, name)
    return step == name and _inputs_present(g, s, name)


def fire(p: Program, g: Graph, s: State, step: str) -> State:
    """The state s' after firing `step` in s (which must be enabled)."""
    name, _, phase = step.partition("@")
    n = p.node[name]
    transit = dict(s.in_transit)
    var_value = dict(s.var_value)
    pending = dict(s.pending)

    def consume_inputs() -> list[object]:
        # "n consumes those inputs (so the incoming edges are EMPTY afterwards)"
        contents = [transit[d.id] for d in g.incoming[name]]
        for d in g.incoming[name]:
            transit[d.id] = EMPTY
        return contents

    def data_inputs(contents: list[object]) -> list[object]:
        return [c for d, c in zip(g.incoming[name], contents) if d.kind != CONTROL]

    def produce(port: int, value: object) -> None:
        for e in g.outgoing[name]:
            if e.kind != CONTROL and e.src == (name, port):
                transit[e.id] = value

    def signal_control() -> None:
        # "for all its outgoing control edges e, InTransit(e) = GO in s'"
        for e in g.outgoing[name]:
            if e.kind == CONTROL:
                transit[e.id] = GO

    if n.op == VAR:
        # L(n) = Var(x): InTransit(e) = x in s', e the outgoing variable edge.
        consume_inputs()
        produce(0, VarRef(n.var))
        signal_control()
    elif n.op == READ:
        # L(n) = Read: input d holds some x; d is EMPTY in s';
        # InTransit(e) = VarValue(x) in s'.
        (handle,) = data_inputs(consume_inputs())
        produce(0, var_value[handle.var])
        signal_control()
    elif n.op == ASSIGN and phase == "":
        # L(n) = Assign-f: d1 holds x, d2 holds v; both EMPTY in s';
        # VarValue(x) = f(w, v) in s' where w = VarValue(x) in s.
        handle, v = data_inputs(consume_inputs())
        var_value[handle.var] = _assigned(n.fn, var_value[handle.var], v, var_value[handle.var])
        signal_control()
    elif n.op == ASSIGN and phase == "read":
        # decomposed (seed 002): the read step takes w = VarValue(x).
        handle, v = data_inputs(consume_inputs())
        pending[name] = (handle.var, var_value[handle.var], v)
    elif n.op == ASSIGN and phase == "write":
        # decomposed: the write step stores f(w, v), w as read earlier.
        x, w, v = pending.pop(name)
        var_value[x] = _assigned(n.fn, w, v, var_value[x])
        signal_control()
    else:
        # L(n) = f: inputs v1..vk consumed; InTransit(e_j) = j-th result of f.
        args = data_inputs(consume_inputs())
        results = fns.get(n.op).apply(args, n.attrs)
        for port, value in enumerate(results):
            produce(port, value)
        signal_control()
    return State(var_value, transit, pending)


def outcome_of(p: Program, g: Graph, s: State, observe: str) -> Outcome:
    if not isinstance(s, State):   # a control-flow state (controlflow.CFState)
        return cf.Machine(p, g).outcome(s, observe)
    outputs = {name: s.in_transit[e.id] for name, e in g.output_edges.items()}
    return make_outcome(outputs, s.var_value, observe)


def run_schedule(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                 schedule: list[str], semantics: str = ATOMIC,
                 max_iterations: int | None = None, deadline: float | None = None) -> State:
    """Replay a schedule; raises ValueError at the first step that may not fire.
    Past `deadline` (time.monotonic()) the replay stops with BudgetExceeded
    (the clock is read every 32 steps: a step of a real graph's run may take
    milliseconds, its whole run seconds)."""
    g = graph_of(p)
    if p.has_control_flow:
        return cf.run_schedule(p, g, feeds, init, schedule, semantics,
                               max_iterations or cf.DEFAULT_MAX_ITERATIONS)
    s = initial_state(p, g, feeds, init)
    deadline = bounded(deadline)   # (a check's hard stop: oracle/budget.py)
    started = time.monotonic() if deadline is not None else 0.0
    for i, step in enumerate(schedule):
        if deadline is not None and i & 31 == 31 and time.monotonic() > deadline:
            raise BudgetExceeded("seconds", max(0.0, deadline - started), i)
        if not step_enabled(p, g, s, step, semantics):
            raise ValueError(f"step {i} ({step}) is not enabled")
        s = fire(p, g, s, step)
    if enabled(p, g, s, semantics):
        raise ValueError("the schedule ends before the run does")
    return s


def behaviours(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
               semantics: str = ATOMIC, memo: bool = True,
               max_states: int | None = None,
               max_iterations: int | None = None) -> Iterator[tuple[list[str], State]]:
    """Every complete run, as (schedule, final state).

    With memo=False this is the naive enumeration of firing orders (n! on an
    unordered program); with memo=True, a state reached twice is explored once
    (so each final state is still reached, by one schedule at least).
    More than `max_states` states visited raises BudgetExceeded.
    """
    visited = 0
    g = graph_of(p)
    if p.has_control_flow:
        yield from cf.behaviours(p, g, feeds, init, semantics, memo, max_states,
                                 max_iterations or cf.DEFAULT_MAX_ITERATIONS)
        return
    seen: set[tuple] = set()
    stack: list[tuple[State, list[str]]] = [(initial_state(p, g, feeds, init), [])]
    while stack:
        s, sched = stack.pop()
        visited += 1
        if max_states is not None and visited > max_states:
            raise BudgetExceeded("states", max_states, visited)
        if memo:
            k = s.key()
            if k in seen:
                continue
            seen.add(k)
        steps = enabled(p, g, s, semantics)
        if not steps:
            yield sched, s
            continue
        for step in reversed(steps):
            stack.append((fire(p, g, s, step), sched + [step]))


def reference_outcomes(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                       semantics: str = ATOMIC, observe: str = "outputs+state",
                       memo: bool = True, max_states: int | None = None,
                       max_iterations: int | None = None) -> dict[Outcome, list[str]]:
    """Outcomes(P, σ) by brute force over the step semantics, each outcome with
    the first schedule found that produces it.  A program with control flow
    raises controlflow.LoopBoundExceeded (a BudgetExceeded) when a run would
    pass `max_iterations` iterations of a loop."""
    g = graph_of(p)
    out: dict[Outcome, list[str]] = {}
    for sched, s in behaviours(p, feeds, init, semantics, memo, max_states, max_iterations):
        out.setdefault(outcome_of(p, g, s, observe), sched)
    return out
