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

Aimed at the change (`focus`): the steered fuzzer passes the nodes the pass
touched in the parent (campaigns/steer.py, `change_site`), and two times in
three each mutation anchors there: a new edge joins a touched access, an
update is put on the path into one, a new Read or Assign is of a touched
variable and waits for a touched node, a touched Read is fetched.  A wrong
rewrite is wrong about what it touched (a forwarded Read wrong only when an
update sits between it and its Write, two combined updates wrong only when
someone waits for the first alone), so its counterexamples lie one or two
mutations away from the site, not anywhere in the program.

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


def _near(d: Draw, options: list[str], focus: frozenset[str]) -> str:
    """One of `options` (not empty): one of the focus's two times in three
    when some are, else any."""
    near = [o for o in options if o in focus]
    if near and d.index(3):
        return choice(d, near)
    return choice(d, options)


def _variable_of(p: Program, name: str) -> str | None:
    n = p.node[name]
    return n.var if n.op == VAR else p.accessed_variable(name)


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


def _add_edge(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    """A control edge between two nodes: two accesses 2 times in 3, of one
    variable (conflicting) half of those times; either way round."""
    acc = _accesses(p)
    pool = acc if len(acc) >= 2 and d.index(3) else [n.name for n in p.nodes]
    if len(pool) < 2:
        return None
    u = _near(d, pool, focus)
    x = p.accessed_variable(u)
    same = [a for a in acc if a != u and x is not None and p.accessed_variable(a) == x]
    v = choice(d, same) if same and pool is acc and d.index(2) else choice(d, pool)
    if u == v:
        return None
    if d.index(2):
        u, v = v, u
    if u in _descendants(p, v):
        u, v = v, u                        # keep it acyclic: the later one waits
    if ControlIn(u) in p.node[v].inputs:
        return None
    nodes = tuple(n.replace(inputs=n.inputs + (ControlIn(u),)) if n.name == v else n for n in p.nodes)
    return p.replace(nodes=nodes)


def _edge_near(d: Draw, edges: list, focus: frozenset[str]):
    near = [e for e in edges if e[0] in focus or getattr(e[1], "node", e[1]) in focus]
    return choice(d, near) if near and d.index(3) else choice(d, edges)


def _route_through(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    """A control edge u -> v becomes u -> m -> v through a new Read m whose
    value nobody uses (an ordering point, as graphs often have)."""
    edges = [(n.name, i.node) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    x = _variable(d, p, focus)
    if not edges or x is None:
        return None
    v, u = _edge_near(d, edges, focus)
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra, focus)
    m = Node(_fresh(p, "mr", taken), READ, (h, ControlIn(u)))
    nodes = []
    for n in p.nodes:
        if n.name == v:
            nodes += extra + [m]
            n = n.replace(inputs=tuple(ControlIn(m.name) if i == ControlIn(u) else i for i in n.inputs))
        nodes.append(n)
    return p.replace(nodes=tuple(nodes))


def _drop_edge(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    edges = [(n.name, i) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    if not edges:
        return None
    v, i = _edge_near(d, edges, focus)
    nodes = tuple(n.replace(inputs=tuple(x for x in n.inputs if x != i)) if n.name == v else n
                  for n in p.nodes)
    return p.replace(nodes=nodes)


def _waits(d: Draw, p: Program, focus: frozenset[str] = frozenset()) -> tuple:
    """Zero to two control inputs from existing nodes (accesses first, the
    focus's first of those)."""
    acc = _accesses(p) or [n.name for n in p.nodes]
    out = []
    for _ in range(d.index(3)):
        if acc:
            out.append(ControlIn(_near(d, acc, focus)))
    return tuple(dict.fromkeys(out))


def _variable(d: Draw, p: Program, focus: frozenset[str] = frozenset()) -> str | None:
    """A variable: one the focus accesses two times in three (when any)."""
    names = sorted(p.variables)
    near = sorted({x for n in focus if n in p.node for x in [_variable_of(p, n)] if x in p.variables})
    if near and d.index(3):
        return choice(d, near)
    return choice(d, names) if names else None


def _handle(d: Draw, p: Program, x: str, taken: set[str], extra: list[Node],
            focus: frozenset[str] = frozenset()) -> DataIn:
    """An existing Var node of x, or (1 time in 3, or when there is none) a
    new one that waits for an access."""
    hs = _handles(p).get(x, [])
    if hs and d.index(3):
        return DataIn(_near(d, hs, focus))
    v = Node(_fresh(p, "mv", taken), VAR, _waits(d, p, focus)[:1], {"var": x})
    extra.append(v)
    return DataIn(v.name)


def _add_read(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    x = _variable(d, p, focus)
    if x is None:
        return None
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra, focus)
    r = Node(_fresh(p, "mr", taken), READ, (h,) + _waits(d, p, focus))
    outputs = dict(p.outputs)
    outputs[_fresh(p, "mo", set(outputs) | taken)] = DataIn(r.name)
    return p.replace(nodes=p.nodes + tuple(extra) + (r,), outputs=outputs)


def _add_assign(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    x = _variable(d, p, focus)
    if x is None:
        return None
    t = p.variables[x]
    fns = ["Snd", "Add"] + [f for f in assign_function_names() if f != "Add"]
    fn = fns[0] if d.index(2) == 0 else choice(d, fns)
    if t.dtype not in ("int64", "float32"):
        return None
    extra: list[Node] = []
    h = _handle(d, p, x, taken, extra, focus)
    c = Node(_fresh(p, "mc", taken), "Const", (),
             {"value": draw_value(d, t.dtype, tuple(t.shape), 0.1)})
    a = Node(_fresh(p, "ma", taken), ASSIGN, (h, DataIn(c.name)) + _waits(d, p, focus), {"fn": fn})
    return p.replace(nodes=p.nodes + tuple(extra) + (c, a))


def _duplicate(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    """A copy of an access with the same inputs (what CSE-like passes merge)."""
    acc = _accesses(p)
    if not acc:
        return None
    n = p.node[_near(d, acc, focus)]
    copy = n.replace(name=_fresh(p, "md", taken))
    outputs = dict(p.outputs)
    if n.op == READ:
        outputs[_fresh(p, "mo", set(outputs) | taken)] = DataIn(copy.name)
    return p.replace(nodes=p.nodes + (copy,), outputs=outputs)


def _fetch(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    """A Read whose value no output fetches gets fetched (what it saw is
    then observed in every cell)."""
    fetched = {v.node for v in p.outputs.values()}
    reads = [n.name for n in p.nodes if n.op == READ and n.name not in fetched]
    if not reads:
        return None
    outputs = dict(p.outputs)
    outputs[_fresh(p, "mo", set(outputs) | taken)] = DataIn(_near(d, reads, focus))
    return p.replace(outputs=outputs)


def _interpose(d: Draw, p: Program, taken: set[str], focus: frozenset[str]) -> Program | None:
    """A new Write or Assign-f of an access's variable, put on the path into
    it: it waits for what the access waits for, and the access waits for it
    (an update between a Write and a Read, a store before a load, ...)."""
    acc = [a for a in _accesses(p) if p.accessed_variable(a) is not None]
    if not acc:
        return None
    v = p.node[_near(d, acc, focus)]
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
MUTATIONS: tuple[Callable[[Draw, Program, set[str], frozenset[str]], Program | None], ...] = (
    _add_edge, _interpose, _add_edge, _interpose, _route_through, _add_read, _add_assign,
    _duplicate, _drop_edge, _fetch)


def mutate(d: Draw, parent: Program, max_nodes: int, focus: frozenset[str] = frozenset()) -> Program:
    """1 to MAX_MUTATIONS mutations of `parent` (few more often than many),
    each kept only when the result is valid and has at most `max_nodes`
    nodes; `focus` (names of `parent`'s nodes) is where they aim."""
    p = parent
    wanted = 1 + d.index(MAX_MUTATIONS) * d.index(2)
    done = 0
    # a mutation that does not apply (no such edge, no room left) is drawn
    # again, a few times: a mutant equal to its parent is a program judged twice
    for _ in range(4 * wanted):
        if done == wanted:
            break
        op = MUTATIONS[d.index(len(MUTATIONS))]
        taken = set(p.node) | set(p.outputs) | set(p.variables)
        try:
            q = op(d, p, taken, focus)
            if q is not None and q != p and len(q.nodes) <= max_nodes:
                p = q.validated()
                done += 1
        except ProgramError:
            continue
    return p
