"""Mutations of a valid program, drawn against the `Draw` interface: the
steered fuzzer (campaigns/steer.py) mutates programs the pass under test
changed, so that the next programs keep what made the pass act and vary the
rest around it.

Every mutation keeps the program valid (a candidate that is not is dropped
and the parent kept) and favours variable accesses: new control edges join
two accesses more often than not, new nodes are Reads, Writes, Assign-f and
Var handles with control inputs.  Nothing is removed but control edges, so
what the pass matched on usually stays.  New Reads are fetched (a new output)
so that what they see is observed.

Shrinking: the simplest choices mean one mutation, a new control edge;
the structural reducer (campaigns/reduce.py) shrinks what a mutant finds.
"""

from __future__ import annotations

from typing import Callable

from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, Node, Program, ProgramError)

from .builder import assign_function_names, draw_value
from .draw import Draw, choice

#: At most this many mutations in a row on one parent.
MAX_MUTATIONS = 3


def _accesses(p: Program) -> list[str]:
    return [n.name for n in p.nodes if n.op in (READ, ASSIGN)]


def _handles(p: Program) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for n in p.nodes:
        if n.op == VAR:
            out.setdefault(n.var, []).append(n.name)
    return out


def _fresh(p: Program, base: str, taken: set[str]) -> str:
    k = len(p.nodes)
    while f"{base}{k}" in taken:
        k += 1
    taken.add(f"{base}{k}")
    return f"{base}{k}"


def _descendants(p: Program, name: str) -> set[str]:
    out, stack = set(), [name]
    while stack:
        for s in p.successors[stack.pop()]:
            if s not in out:
                out.add(s)
                stack.append(s)
    return out


def _add_edge(d: Draw, p: Program, taken: set[str]) -> Program | None:
    """A control edge u -> v between two nodes: two accesses 2 times in 3,
    of one variable (conflicting) half of those times."""
    acc = _accesses(p)
    pool = acc if len(acc) >= 2 and d.index(3) else [n.name for n in p.nodes]
    if len(pool) < 2:
        return None
    u = choice(d, pool)
    x = p.accessed_variable(u)
    same = [a for a in acc if a != u and x is not None and p.accessed_variable(a) == x]
    v = choice(d, same) if same and pool is acc and d.index(2) else choice(d, pool)
    if u == v:
        return None
    if u in _descendants(p, v):
        u, v = v, u                        # keep it acyclic: the later one waits
    if ControlIn(u) in p.node[v].inputs:
        return None
    nodes = tuple(n.replace(inputs=n.inputs + (ControlIn(u),)) if n.name == v else n for n in p.nodes)
    return p.replace(nodes=nodes)


def _route_through(d: Draw, p: Program, taken: set[str]) -> Program | None:
    """A control edge u -> v becomes u -> m -> v through a new Read m whose
    value nobody uses (an ordering point, as graphs often have)."""
    edges = [(n.name, i.node) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    x = _variable(d, p)
    if not edges or x is None:
        return None
    v, u = choice(d, edges)
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra)
    m = Node(_fresh(p, "mr", taken), READ, (h, ControlIn(u)))
    nodes = []
    for n in p.nodes:
        if n.name == v:
            nodes += extra + [m]
            n = n.replace(inputs=tuple(ControlIn(m.name) if i == ControlIn(u) else i for i in n.inputs))
        nodes.append(n)
    return p.replace(nodes=tuple(nodes))


def _drop_edge(d: Draw, p: Program, taken: set[str]) -> Program | None:
    edges = [(n.name, i) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    if not edges:
        return None
    v, i = choice(d, edges)
    nodes = tuple(n.replace(inputs=tuple(x for x in n.inputs if x != i)) if n.name == v else n
                  for n in p.nodes)
    return p.replace(nodes=nodes)


def _waits(d: Draw, p: Program) -> tuple:
    """Zero to two control inputs from existing nodes (accesses first)."""
    acc = _accesses(p) or [n.name for n in p.nodes]
    out = []
    for _ in range(d.index(3)):
        if acc:
            out.append(ControlIn(choice(d, acc)))
    return tuple(dict.fromkeys(out))


def _variable(d: Draw, p: Program) -> str | None:
    names = sorted(p.variables)
    return choice(d, names) if names else None


def _handle(d: Draw, p: Program, x: str, taken: set[str], extra: list[Node]) -> DataIn:
    """An existing Var node of x, or (1 time in 3, or when there is none) a
    new one that waits for an access."""
    hs = _handles(p).get(x, [])
    if hs and d.index(3):
        return DataIn(choice(d, hs))
    v = Node(_fresh(p, "mv", taken), VAR, _waits(d, p)[:1], {"var": x})
    extra.append(v)
    return DataIn(v.name)


def _add_read(d: Draw, p: Program, taken: set[str]) -> Program | None:
    x = _variable(d, p)
    if x is None:
        return None
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra)
    r = Node(_fresh(p, "mr", taken), READ, (h,) + _waits(d, p))
    outputs = dict(p.outputs)
    outputs[_fresh(p, "mo", set(outputs) | taken)] = DataIn(r.name)
    return p.replace(nodes=p.nodes + tuple(extra) + (r,), outputs=outputs)


def _add_assign(d: Draw, p: Program, taken: set[str]) -> Program | None:
    x = _variable(d, p)
    if x is None:
        return None
    t = p.variables[x]
    fns = ["Snd", "Add"] + [f for f in assign_function_names() if f != "Add"]
    fn = fns[0] if d.index(2) == 0 else choice(d, fns)
    if t.dtype not in ("int64", "float32"):
        return None
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra)
    c = Node(_fresh(p, "mc", taken), "Const", (),
             {"value": draw_value(d, t.dtype, tuple(t.shape), 0.1)})
    a = Node(_fresh(p, "ma", taken), ASSIGN, (h, DataIn(c.name)) + _waits(d, p), {"fn": fn})
    return p.replace(nodes=p.nodes + tuple(extra) + (c, a))


def _duplicate(d: Draw, p: Program, taken: set[str]) -> Program | None:
    """A copy of an access with the same inputs (what CSE-like passes merge)."""
    acc = _accesses(p)
    if not acc:
        return None
    n = p.node[choice(d, acc)]
    copy = n.replace(name=_fresh(p, "md", taken))
    outputs = dict(p.outputs)
    if n.op == READ:
        outputs[_fresh(p, "mo", set(outputs) | taken)] = DataIn(copy.name)
    return p.replace(nodes=p.nodes + (copy,), outputs=outputs)


def _interpose(d: Draw, p: Program, taken: set[str]) -> Program | None:
    """A new Write or Assign-f of an access's variable, put on the path into
    it: it waits for what the access waits for, and the access waits for it
    (an update between a Write and a Read, a store before a load, ...)."""
    acc = [a for a in _accesses(p) if p.accessed_variable(a) is not None]
    if not acc:
        return None
    v = p.node[choice(d, acc)]
    x = p.accessed_variable(v.name)
    t = p.variables[x]
    if t.dtype not in ("int64", "float32"):
        return None
    fn = choice(d, ["Add", "Snd"] + [f for f in assign_function_names() if f != "Add"])
    if v.op == ASSIGN and d.index(2):
        fn = v.fn        # the same update twice in a row
    c = Node(_fresh(p, "mc", taken), "Const", (), {"value": draw_value(d, t.dtype, tuple(t.shape), 0.1)})
    a = Node(_fresh(p, "ma", taken), ASSIGN, (v.data_inputs[0], DataIn(c.name)) + v.control_inputs,
             {"fn": fn})
    nodes = []
    for n in p.nodes:
        if n.name == v.name:
            nodes += [c, a]
            n = n.replace(inputs=n.inputs + (ControlIn(a.name),))
        nodes.append(n)
    return p.replace(nodes=tuple(nodes))


#: Each drawn with equal chance: control edges and updates on a path twice as often.
MUTATIONS: tuple[Callable[[Draw, Program, set[str]], Program | None], ...] = (
    _add_edge, _interpose, _add_edge, _interpose, _route_through, _add_read, _add_assign,
    _duplicate, _drop_edge)


def mutate(d: Draw, parent: Program, max_nodes: int) -> Program:
    """1 to MAX_MUTATIONS mutations of `parent` (few more often than many),
    each kept only when the result is valid and has at most `max_nodes`
    nodes."""
    p = parent
    for _ in range(1 + d.index(MAX_MUTATIONS) * d.index(2)):
        op = MUTATIONS[d.index(len(MUTATIONS))]
        taken = set(p.node) | set(p.outputs) | set(p.variables)
        try:
            q = op(d, p, taken)
            if q is not None and len(q.nodes) <= max_nodes:
                p = q.validated()
        except ProgramError:
            continue
    return p
