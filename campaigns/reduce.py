"""A structural reducer that finishes what Hypothesis's shrinker started.

Hypothesis shrinks the *choices* behind a program; a program generator makes
hundreds of choices, and shrinking them can take far longer than judging the
programs.  After Hypothesis's share of time, this reducer works on the program
itself, like delta debugging: it tries edits that make the program smaller
and keeps each one under which the same failure (same kind, same part, same
crash) still happens, until none applies or its time is up:

- delete a node with everything that depends on its results (control edges
  from it are dropped, outputs fetching a deleted result are dropped);
- let one Var node serve for another of the same variable (an output port may
  feed several consumers);
- bypass a function node: its consumers and outputs read one of its inputs;
- drop a control input, drop an output;
- drop variables and feed declarations nothing uses.

Every candidate is a valid program (invalid ones are skipped), judged by the
same pass run and the same check as any fuzzed program, so the result is a
real finding by construction.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, Mapping

from tfsem.oracle.program import (VAR, ControlIn, DataIn, FeedIn, Node, Program, validate)
from tfsem.oracle.values import Value

from .findings import FindingRecord

Evaluate = Callable[[Program, Mapping[str, Value], Mapping[str, Value]], FindingRecord | None]


def _valid(p: Program) -> bool:
    try:
        return not validate(p)
    except Exception:
        return False


def _delete_with_dependents(p: Program, name: str) -> Program:
    gone = {name}
    changed = True
    while changed:
        changed = False
        for n in p.nodes:
            if n.name not in gone and any(isinstance(i, DataIn) and i.node in gone for i in n.inputs):
                gone.add(n.name)
                changed = True
    nodes = tuple(n.replace(inputs=tuple(i for i in n.inputs if not (isinstance(i, ControlIn) and i.node in gone)))
                  for n in p.nodes if n.name not in gone)
    outputs = {k: v for k, v in p.outputs.items() if v.node not in gone}
    return p.replace(nodes=nodes, outputs=outputs)


def _share_var(p: Program, keep: str, drop: str) -> Program:
    """Consumers of Var node `drop` use `keep` instead (same variable)."""
    def fix(n: Node) -> Node:
        inputs = []
        for i in n.inputs:
            if isinstance(i, DataIn) and i.node == drop:
                inputs.append(DataIn(keep, i.port))
            elif isinstance(i, ControlIn) and i.node == drop:
                if not any(isinstance(j, ControlIn) and j.node == keep for j in n.inputs):
                    inputs.append(ControlIn(keep))
            else:
                inputs.append(i)
        return n.replace(inputs=tuple(inputs))
    keep_node = p.node[keep]
    drop_ctl = [i for i in p.node[drop].inputs if i not in keep_node.inputs]
    nodes = []
    for n in p.nodes:
        if n.name == drop:
            continue
        if n.name == keep and drop_ctl:
            n = n.replace(inputs=n.inputs + tuple(drop_ctl))
        nodes.append(fix(n))
    return p.replace(nodes=tuple(nodes))


def _bypass(p: Program, name: str, j: int) -> Program | None:
    """Node `name` removed, every use of its results reading its data input
    `j` instead (None when an output would have to fetch a feed)."""
    src = p.node[name].data_inputs[j]
    outputs = {}
    for k, v in p.outputs.items():
        if v.node == name:
            if not isinstance(src, DataIn):
                return None
            outputs[k] = src
        else:
            outputs[k] = v
    nodes = []
    for n in p.nodes:
        if n.name == name:
            continue
        inputs = tuple(src if isinstance(i, DataIn) and i.node == name else i for i in n.inputs
                       if not (isinstance(i, ControlIn) and i.node == name))
        nodes.append(n.replace(inputs=inputs))
    return p.replace(nodes=tuple(nodes), outputs=outputs)


def _drop_unused(p: Program) -> Program:
    used_vars = {n.var for n in p.nodes if n.op == VAR}
    used_feeds = {i.name for n in p.nodes for i in n.inputs if isinstance(i, FeedIn)}
    variables = {x: t for x, t in p.variables.items() if x in used_vars}
    feeds = {f: t for f, t in p.feeds.items() if f in used_feeds}
    if len(variables) == len(p.variables) and len(feeds) == len(p.feeds):
        return p
    return p.replace(variables=variables, feeds=feeds)


def candidates(p: Program) -> Iterator[Program]:
    """Smaller variants of `p`, the biggest cuts first."""
    order = list(p.topological_order)
    for name in reversed(order):
        yield _delete_with_dependents(p, name)
    by_var: dict[str, list[str]] = {}
    for name in order:
        n = p.node[name]
        if n.op == VAR:
            by_var.setdefault(n.var, []).append(name)
    for names in by_var.values():
        for drop in names[1:]:
            yield _share_var(p, names[0], drop)
    for name in reversed(order):
        n = p.node[name]
        if n.kind == "function":
            for j in range(len(n.data_inputs)):
                bypassed = _bypass(p, name, j)
                if bypassed is not None:
                    yield bypassed
    for n in p.nodes:
        for i in n.control_inputs:
            yield p.replace(nodes=tuple(m.replace(inputs=tuple(j for j in m.inputs if j != i))
                                        if m.name == n.name else m for m in p.nodes))
    for k in sorted(p.outputs):
        yield p.replace(outputs={o: v for o, v in p.outputs.items() if o != k})
    trimmed = _drop_unused(p)
    if trimmed is not p:
        yield trimmed


def _size(p: Program) -> tuple:
    edges = sum(len(n.inputs) for n in p.nodes)
    return (len(p.nodes), edges, len(p.outputs), len(p.variables), len(p.feeds))


def reduce_finding(program: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                   record: FindingRecord, evaluate: Evaluate, same: Callable[[FindingRecord], bool],
                   deadline: float) -> tuple[FindingRecord, int]:
    """The smallest variant of `program` (at σ = feeds, init) still failing
    like `record`; returns (its record, the number of candidates judged)."""
    best_p, best_r = program, record
    tried = 0
    seen: set = set()
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for cand in candidates(best_p):
            if time.monotonic() >= deadline:
                break
            if _size(cand) >= _size(best_p) or not _valid(cand):
                continue
            key = cand
            if key in seen:
                continue
            seen.add(key)
            cand_feeds = {k: v for k, v in feeds.items() if k in cand.feed_names}
            cand_init = {k: v for k, v in init.items() if k in cand.variables}
            tried += 1
            r = evaluate(cand, cand_feeds, cand_init)
            if r is not None and same(r):
                best_p, best_r = cand, r
                improved = True
                break
    return best_r, tried
