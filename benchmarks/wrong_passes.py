"""A suite of wrong passes: mistakes a compiler engineer makes with stateful
graphs, each written as a plugin pass that claims `sound` in every cell.

Every pass here is really wrong: `EXAMPLES[name]` is a small program on which
the rewrite shows an outcome the original lacks (tests/test_wrong_passes.py
checks each with `tfsem.checking.check_rewrite`).  `benchmarks/bugfinding.py`
measures how often, and how fast, `tfsem verify` finds each one.

Name one with `tfsem verify benchmarks/wrong_passes.py:DROP_CROSS_VAR_EDGES`
(the attribute is the pass name in capitals, `-` as `_`); `SUITE` lists them
all.  Each docstring says the mistake and the reasoning that led to it.
"""

from __future__ import annotations

from typing import Callable

from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, FeedControlIn, Node,
                                  Program)
from tfsem.oracle.values import Tensor
from tfsem.rewrites.api import SOUND, Pass, claims
from tfsem.rewrites.edit import (ancestors, bit_index, canonical_inputs, fresh_name, rebuild,
                                 rename_inputs)

ALL_SOUND = claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND))

SUITE: list[Pass] = []
#: pass name -> a program on which the pass is wrong (tests check each)
EXAMPLES: dict[str, Program] = {}


def wrong_pass(name: str, example: Callable[[], Program]):
    """Register `function` as a wrong pass named `name` that claims sound
    everywhere; its docstring (the mistake) is the pass's documentation."""
    def wrap(function: Callable[[Program], Program]) -> Pass:
        doc = function.__doc__ or ""
        first = next(line.strip() for line in doc.strip().splitlines() if line.strip())
        p = Pass(name=name, description=first.rstrip("."), claims=ALL_SOUND, doc=doc,
                 function=_unchanged_when_same(function), origin="benchmarks/wrong_passes.py")
        SUITE.append(p)
        EXAMPLES[name] = example()
        globals()[name.upper().replace("-", "_")] = p
        return p
    return wrap


def _unchanged_when_same(function: Callable[[Program], Program]) -> Callable[[Program], Program]:
    def run(p: Program) -> Program:
        out = function(p)
        return p if out == p else out
    run.__doc__ = function.__doc__
    run.__name__ = function.__name__
    return run


# ---------------------------------------------------------------------------
# helpers


def _var(p: Program, name: str) -> str | None:
    return p.accessed_variable(name)


def _is_write(n: Node) -> bool:
    return n.op == ASSIGN and n.fn == "Snd"


def _reachable(p: Program) -> Callable[[str, str], bool]:
    """before(u, v): a path of edges leads from u to v."""
    anc, index = ancestors(p), bit_index(p)
    return lambda u, v: bool(anc[v] >> index[u] & 1)


def _without(p: Program, names: set[str], ports: dict | None = None,
             inherit_control: bool = True) -> Program:
    """`p` without the nodes `names`: data edges redirected by `ports`
    ((node, port) -> DataIn), control edges to a removed node replaced by its
    own control inputs (`inherit_control`) or dropped."""
    ports = dict(ports or {})
    removed = {n: p.node[n] for n in names}

    def waits(name: str) -> list:
        if not inherit_control:
            return []
        out = []
        for i in removed[name].inputs:
            if isinstance(i, (ControlIn, DataIn)) and i.node in removed:
                out.extend(waits(i.node))
            elif isinstance(i, DataIn):
                out.append(ControlIn(i.node))
            elif isinstance(i, (ControlIn, FeedControlIn)):
                out.append(i)
        return out

    nodes = []
    for n in p.nodes:
        if n.name in removed:
            continue
        inputs = []
        for i in n.inputs:
            if isinstance(i, DataIn):
                inputs.append(ports.get((i.node, i.port), i))
            elif isinstance(i, ControlIn) and i.node in removed:
                inputs.extend(waits(i.node))
            else:
                inputs.append(i)
        nodes.append(n.replace(inputs=canonical_inputs(inputs)))
    outputs = {k: ports.get((v.node, v.port), v) for k, v in p.outputs.items()}
    return rebuild(p, nodes, outputs)


def _drop_control(p: Program, drop: Callable[[Node, str], bool]) -> Program:
    """`p` without the control edges u -> n for which drop(n, u)."""
    nodes = []
    for n in p.nodes:
        kept = [i for i in n.inputs if not (isinstance(i, ControlIn) and drop(n, i.node))]
        nodes.append(n.replace(inputs=tuple(kept)) if len(kept) != len(n.inputs) else n)
    return rebuild(p, nodes)


def _reverse_edge(p: Program, u: str, v: str) -> Program | None:
    """`p` with the control edge u -> v turned into v -> u, or None when that
    would make a cycle (another path from u to v)."""
    nodes = []
    for n in p.nodes:
        if n.name == v:
            n = n.replace(inputs=tuple(i for i in n.inputs if i != ControlIn(u)))
        nodes.append(n)
    mid = Program(p.variables, tuple(nodes), p.outputs, p.feeds)
    before = _reachable(mid)
    if before(u, v):
        return None
    nodes = [n.replace(inputs=canonical_inputs(n.inputs + (ControlIn(v),))) if n.name == u else n
             for n in nodes]
    return rebuild(p, nodes)


def _prog(*nodes: Node, outputs=None, variables=("x",)) -> Program:
    return P.program(nodes, outputs or {}, variables)


V, R, A, W, C, F = P.var, P.read, P.assign, P.write, P.const, P.apply


# ---------------------------------------------------------------------------
# Ordering mistakes: control edges dropped or turned around


@wrong_pass("drop-cross-var-edges", lambda: _prog(
    V("vx", "x"), V("vy", "y"), C("one", 1), W("w", "vx", "one"), R("ry", "vy", "^w"),
    R("rx", "vx", "^ry"), outputs={"out": "rx"}, variables=("x", "y")))
def drop_cross_var_edges(p: Program) -> Program:
    """Drops control edges between accesses of different variables.

    The reasoning: accesses of different variables commute, so an edge
    between them orders nothing.  Forgotten: the edge is also a link in a
    path that orders two accesses of one variable (Write x -> Read y -> Read
    x), and dropping it lets Read x run before Write x.
    """
    def drop(n: Node, u: str) -> bool:
        a, b = _var(p, u), _var(p, n.name)
        return a is not None and b is not None and a != b
    return _drop_control(p, drop)


@wrong_pass("drop-war-edges", lambda: _prog(
    V("v", "x"), R("r", "v"), C("five", 5), W("w", "v", "five", "^r"), outputs={"out": "r"}))
def drop_war_edges(p: Program) -> Program:
    """Drops write-after-read edges: a control edge from a Read to an Assign.

    The reasoning: a Read has no side effect, so nothing needs to wait for
    it.  Forgotten: the Read must see the value before the write, and once
    the Assign may run first it sees the new one.
    """
    return _drop_control(p, lambda n, u: n.op == ASSIGN and p.node[u].op == READ)


@wrong_pass("drop-waw-edges", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), W("w1", "v", "one"), W("w2", "v", "two", "^w1")))
def drop_waw_edges(p: Program) -> Program:
    """Drops the control edge between two Writes of the same variable.

    The reasoning: the second Write overwrites the first anyway, so their
    order does not matter.  Forgotten: the final value is the last Write's,
    and without the edge either may be last.
    """
    return _drop_control(p, lambda n, u: _is_write(n) and _is_write(p.node[u])
                         and _var(p, n.name) is not None and _var(p, n.name) == _var(p, u))


@wrong_pass("drop-edges-between-updates", lambda: _prog(
    V("v", "x"), C("two", 2), C("three", 3), A("a", "Add", "v", "two"),
    A("m", "Mul", "v", "three", "^a")))
def drop_edges_between_updates(p: Program) -> Program:
    """Drops control edges between two read-modify-write Assigns (AssignAdd,
    AssignMul, ...), as if every update commuted.

    The reasoning: x += a; x += b gives the same x in either order.
    Forgotten: true of two AssignAdds, false of AssignAdd and AssignMul (or
    Max and Sub, ...).
    """
    return _drop_control(p, lambda n, u: n.op == ASSIGN and p.node[u].op == ASSIGN
                         and n.fn != "Snd" and p.node[u].fn != "Snd")


@wrong_pass("drop-raw-edges-to-unfetched", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r", "v", "^w"), C("k", 0, "^r"),
    outputs={"out": "r"}))
def drop_raw_edges_to_unfetched(p: Program) -> Program:
    """Drops the control edges into a Read when the Read has control
    successors (it is "only an ordering point").

    The reasoning: a Read others wait on is there for ordering, not for its
    value.  Forgotten: its value may be used (fetched) as well, and it no
    longer waits for the Write it must see.
    """
    succ: dict[str, int] = {}
    for n in p.nodes:
        for i in n.control_inputs:
            if isinstance(i, ControlIn):
                succ[i.node] = succ.get(i.node, 0) + 1
    return _drop_control(p, lambda n, u: n.op == READ and succ.get(n.name, 0) > 0)


@wrong_pass("reduce-control-reversed", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r1", "v"), R("r2", "v", "^w", "^r1"),
    outputs={"out": "r2"}))
def reduce_control_reversed(p: Program) -> Program:
    """Transitive reduction with the reachability test the wrong way round:
    drops u -> v when u is ordered with another predecessor of v (in either
    direction), not only when u reaches it.

    The reasoning: "u and q are ordered, so waiting for q is waiting for u".
    Forgotten: only when u comes before q.
    """
    before = _reachable(p)

    def drop(n: Node, u: str) -> bool:
        preds = [q for q in p.predecessors(n.name) if q != u]
        return any(before(u, q) or before(q, u) for q in preds) and _var(p, u) is not None
    return _drop_control(p, drop)


@wrong_pass("sink-write-past-read", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r", "v", "^w"), outputs={"out": "r"}))
def sink_write_past_read(p: Program) -> Program:
    """Sinks a Write below the Reads that wait on it (turns Write -> Read
    into Read -> Write), to shorten the Reads' critical path.

    The reasoning: the Reads were meant to be of other variables.
    Forgotten: the check that they are; a Read of the same variable now
    sees the old value.
    """
    for n in p.nodes:
        if not _is_write(n):
            continue
        for m in p.nodes:
            if m.op == READ and ControlIn(n.name) in m.inputs:
                q = _reverse_edge(p, n.name, m.name)
                if q is not None:
                    return q
    return p


@wrong_pass("swap-writes", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), W("w1", "v", "one"), W("w2", "v", "two", "^w1")))
def swap_writes(p: Program) -> Program:
    """Reorders two Writes ordered one after the other (w1 -> w2 becomes
    w2 -> w1), to schedule the one whose value is ready first.

    The reasoning: both are stores, the order is a scheduling detail.
    Forgotten: of the same variable, the last one wins.
    """
    for n in p.nodes:
        if not _is_write(n):
            continue
        for i in n.control_inputs:
            if isinstance(i, ControlIn) and _is_write(p.node[i.node]):
                q = _reverse_edge(p, i.node, n.name)
                if q is not None:
                    return q
    return p


# ---------------------------------------------------------------------------
# Merging mistakes


@wrong_pass("merge-reads-first-control", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r1", "v"), R("r2", "v", "^w"),
    F("s", "Add", "r1", "r2"), outputs={"out": "s"}))
def merge_reads_first_control(p: Program) -> Program:
    """Merges unordered Reads of one variable through one handle, keeping
    only the first Read's control inputs.

    The reasoning: two unordered Reads may see the same value, so one Read
    serves both.  Forgotten: the second Read's control inputs (a Write it
    waits for) are lost, so its consumers may now see the value before it.
    """
    before = _reachable(p)
    first: dict[tuple, str] = {}
    ports: dict = {}
    for name in p.topological_order:
        n = p.node[name]
        if n.op != READ:
            continue
        key = n.data_inputs[0]
        other = first.get(key)
        if other is not None and not before(other, name):
            ports[(name, 0)] = DataIn(other, 0)
            continue
        first.setdefault(key, name)
    if not ports:
        return p
    return _without(p, {k[0] for k in ports}, ports, inherit_control=False)


@wrong_pass("merge-reads-by-variable", lambda: _prog(
    V("v1", "x"), C("one", 1), W("w", "v1", "one"), V("v2", "x", "^w"), R("r1", "v1"),
    R("r2", "v2"), F("s", "Add", "r1", "r2"), outputs={"out": "s"}))
def merge_reads_by_variable(p: Program) -> Program:
    """CSE of Reads keyed by the variable read (not the handle node) and
    their own control inputs.

    The reasoning: two Reads of x with the same control inputs read the
    same x.  Forgotten: a Read also waits for its handle's Var node, which
    may wait for a Write on another path; the merged Read skips that Write.
    """
    table: dict[tuple, str] = {}
    ports: dict = {}
    for name in p.topological_order:
        n = p.node[name]
        x = _var(p, name)
        if n.op != READ or x is None:
            continue
        key = (x, frozenset(n.control_inputs))
        if key in table:
            ports[(name, 0)] = DataIn(table[key], 0)
        else:
            table[key] = name
    if not ports:
        return p
    return _without(p, {k[0] for k in ports}, ports)


@wrong_pass("merge-var-handles", lambda: _prog(
    V("v1", "x"), C("one", 1), W("w", "v1", "one"), V("v2", "x", "^w"), R("r", "v2"),
    outputs={"out": "r"}))
def merge_var_handles(p: Program) -> Program:
    """Merges Var nodes of one variable, ignoring their control inputs.

    The reasoning: a Var node is a pure handle, one is as good as another.
    Forgotten: a Var node with control inputs orders every access through
    it after them.
    """
    first: dict[str, str] = {}
    ports: dict = {}
    for name in p.topological_order:
        n = p.node[name]
        if n.op != VAR:
            continue
        if n.var in first:
            ports[(name, 0)] = DataIn(first[n.var], 0)
        else:
            first[n.var] = name
    if not ports:
        return p
    return _without(p, {k[0] for k in ports}, ports)


@wrong_pass("cse-assigns", lambda: _prog(
    V("v", "x"), C("one", 1), A("a1", "Add", "v", "one"), A("a2", "Add", "v", "one", "^a1")))
def cse_assigns(p: Program) -> Program:
    """CSE that merges Assigns with the same function, variable and value,
    ignoring control inputs.

    The reasoning: identical operations on identical inputs compute the
    same thing.  Forgotten: an Assign is an effect, not a value: two
    AssignAdds of 1 add 2, the merged one adds 1.
    """
    table: dict[tuple, str] = {}
    names: dict[str, str] = {}
    for name in p.topological_order:
        n = p.node[name]
        x = _var(p, name)
        if n.op != ASSIGN or x is None:
            continue
        key = (n.fn, x, n.data_inputs[1])
        if key in table:
            names[name] = table[key]
        else:
            table[key] = name
    if not names:
        return p
    nodes = [n.replace(inputs=rename_inputs(n.inputs, {}, names)) for n in p.nodes
             if n.name not in names]
    return rebuild(p, nodes)


@wrong_pass("combine-assign-adds", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), A("a1", "Add", "v", "one"), R("r", "v", "^a1"),
    A("a2", "Add", "v", "two", "^a1"), outputs={"out": "r"}))
def combine_assign_adds(p: Program) -> Program:
    """Combines AssignAdd a1 and AssignAdd a2 that waits for it into one
    AssignAdd of the sum, where a2 was.

    The reasoning: x += a; x += b is x += a + b.  Forgotten: whoever waited
    for a1 alone (a Read between the two on another path) saw x + a, which
    no run of the rewrite shows.
    """
    for n in p.nodes:
        if n.op != ASSIGN or n.fn != "Add":
            continue
        for i in n.control_inputs:
            if not isinstance(i, ControlIn):
                continue
            a1 = p.node[i.node]
            if a1.op == ASSIGN and a1.fn == "Add" and a1.data_inputs[0] == n.data_inputs[0]:
                taken = set(p.node)
                total = Node(fresh_name(f"{n.name}/sum", taken), "Add",
                             (a1.data_inputs[1], n.data_inputs[1]))
                combined = n.replace(inputs=canonical_inputs(
                    (n.data_inputs[0], DataIn(total.name)) + tuple(a1.control_inputs)
                    + tuple(c for c in n.control_inputs if c != i)))
                nodes = []
                for m in p.nodes:
                    if m.name == a1.name:
                        continue
                    if m.name == n.name:
                        nodes += [total, combined]
                        continue
                    if ControlIn(a1.name) in m.inputs:   # who waited for a1 waits for its waits
                        m = m.replace(inputs=canonical_inputs(
                            tuple(x for x in m.inputs if x != ControlIn(a1.name)) + a1.control_inputs))
                    nodes.append(m)
                try:
                    return rebuild(p, nodes)
                except P.ProgramError:
                    continue   # a cycle: someone a2 waits for waits for a1
    return p


# ---------------------------------------------------------------------------
# Forwarding and folding mistakes


def _forward(p: Program, source_of: Callable[[Program, Node], Node | None]) -> Program:
    ports = {}
    for n in p.nodes:
        if n.op == READ:
            w = source_of(p, n)
            if w is not None and isinstance(w.data_inputs[1], DataIn):
                ports[(n.name, 0)] = w.data_inputs[1]
    if not ports:
        return p
    nodes = [n.replace(inputs=rename_inputs(n.inputs, ports, {})) for n in p.nodes]
    outputs = {k: ports.get((v.node, v.port), v) for k, v in p.outputs.items()}
    return rebuild(p, nodes, outputs)


@wrong_pass("forward-store", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), W("w1", "v", "one"), A("a", "Add", "v", "two", "^w1"),
    R("r", "v", "^a"), outputs={"out": "r"}))
def forward_store(p: Program) -> Program:
    """Store-to-load forwarding: a Read ordered after Writes of its variable
    takes the last such Write's value instead of reading.

    The reasoning: the Read comes after the Write, so it sees what was
    stored.  Forgotten: read-modify-write updates (AssignAdd, ...) ordered
    in between change the value too, and a Write of an error value stores
    nothing.
    """
    before = _reachable(p)

    def source(p: Program, r: Node) -> Node | None:
        x = _var(p, r.name)
        writes = [n for n in p.nodes if _is_write(n) and _var(p, n.name) == x
                  and before(n.name, r.name)]
        last = [w for w in writes if not any(before(w.name, o.name) for o in writes)]
        return last[0] if len(last) == 1 else None
    return _forward(p, source)


@wrong_pass("forward-store-direct-edge", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), W("w1", "v", "one"), W("w2", "v", "two", "^w1"),
    R("r", "v", "^w1", "^w2"), outputs={"out": "r"}))
def forward_store_direct_edge(p: Program) -> Program:
    """Store-to-load forwarding that looks only at the Read's direct control
    inputs: a Read that names a Write of its variable takes its value.

    The reasoning: the Read waits for that Write.  Forgotten: it may also
    wait for other Writes of the variable made after it (the first one
    named is taken).
    """
    def source(p: Program, r: Node) -> Node | None:
        x = _var(p, r.name)
        for i in r.control_inputs:
            if isinstance(i, ControlIn) and _is_write(p.node[i.node]) and _var(p, i.node) == x:
                return p.node[i.node]
        return None
    return _forward(p, source)


@wrong_pass("fold-constant-variable", lambda: _prog(
    V("v", "x"), R("r", "v"), C("three", 3), W("w", "v", "three", "^r"), outputs={"out": "r"}))
def fold_constant_variable(p: Program) -> Program:
    """Constant-folds a Read of a variable that every Assign of the program
    sets to one and the same Const.

    The reasoning: the variable can only hold that constant.  Forgotten:
    before the first Write it holds its initial value.
    """
    values: dict[str, set] = {}
    for n in p.nodes:
        x = _var(p, n.name)
        if n.op == ASSIGN and x is not None:
            src = n.data_inputs[1]
            ok = _is_write(n) and isinstance(src, DataIn) and p.node[src.node].op == "Const" \
                and not p.node[src.node].inputs
            values.setdefault(x, set()).add(fns.attrs_key(p.node[src.node].attrs) if ok else None)
    folded = {x: next(iter(v)) for x, v in values.items() if len(v) == 1 and None not in v}
    if not folded:
        return p
    consts = {}
    for n in p.nodes:
        if _is_write(n) and _var(p, n.name) in folded:
            consts[_var(p, n.name)] = p.node[n.data_inputs[1].node]
    taken = set(p.node)
    ports, extra = {}, []
    for n in p.nodes:
        x = _var(p, n.name)
        if n.op == READ and x in consts and p.variables[x] == _const_type(consts[x]):
            c = Node(fresh_name(f"{n.name}/folded", taken), "Const", (), dict(consts[x].attrs))
            extra.append(c)
            ports[(n.name, 0)] = DataIn(c.name, 0)
    if not ports:
        return p
    nodes = [n.replace(inputs=rename_inputs(n.inputs, ports, {})) for n in p.nodes] + extra
    outputs = {k: ports.get((v.node, v.port), v) for k, v in p.outputs.items()}
    return rebuild(p, nodes, outputs)


def _const_type(c: Node):
    from tfsem.oracle.program import TensorType
    v = c.attrs["value"]
    return TensorType(str(v.array.dtype), tuple(v.array.shape)) if isinstance(v, Tensor) else None


# ---------------------------------------------------------------------------
# Eliminating and pruning mistakes


@wrong_pass("dead-store-overwritten", lambda: _prog(
    V("v", "x"), C("one", 1), C("two", 2), W("w1", "v", "one"), W("w2", "v", "two", "^w1"),
    R("r", "v", "^w1"), outputs={"out": "r"}))
def dead_store_overwritten(p: Program) -> Program:
    """Dead-store elimination: a Write followed (in order) by another Write
    of the same variable is removed.

    The reasoning: the value is overwritten before anyone could need it.
    Forgotten: a Read on another path, ordered after the first Write and
    unordered with the second, reads it.
    """
    before = _reachable(p)
    dead = set()
    for n in p.nodes:
        if _is_write(n) and _var(p, n.name) is not None:
            if any(_is_write(m) and m.name != n.name and _var(p, m.name) == _var(p, n.name)
                   and before(n.name, m.name) for m in p.nodes):
                dead.add(n.name)
    if not dead:
        return p
    return _without(p, dead)


@wrong_pass("dead-store-unread-variable", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one")))
def dead_store_unread_variable(p: Program) -> Program:
    """Dead-store elimination: Assigns to a variable that no Read of the
    program reads are removed.

    The reasoning: nobody reads it, so the stores are dead.  Forgotten:
    variables outlive the run; their final values are observed.
    """
    read = {_var(p, n.name) for n in p.nodes if n.op == READ}
    dead = {n.name for n in p.nodes if n.op == ASSIGN and _var(p, n.name) is not None
            and _var(p, n.name) not in read}
    return _without(p, dead) if dead else p


@wrong_pass("prune-data-only", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r", "v", "^w"), outputs={"out": "r"}))
def prune_data_only(p: Program) -> Program:
    """Prunes the graph to what the fetched outputs need, following data
    edges only: Assigns that a fetched node waits on by a control edge are
    pruned.

    The reasoning: an output's value flows along data edges.  Forgotten: a
    control edge from an Assign to a Read decides what the Read sees.
    """
    keep: set[str] = set()
    stack = [v.node for v in p.outputs.values()]
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        stack.extend(i.node for i in p.node[name].data_inputs if isinstance(i, DataIn))
    dead = {n.name for n in p.nodes if n.name not in keep and n.op == ASSIGN}
    return _without(p, dead, inherit_control=False) if dead else p


@wrong_pass("dce-unused-reads", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), R("r", "v", "^w"), R("r3", "v", "^r"),
    outputs={"out": "r3"}))
def dce_unused_reads(p: Program) -> Program:
    """Dead-code elimination of Reads whose value nobody uses, together
    with the control edges out of them.

    The reasoning: a Read has no effect, so an unused one is dead.
    Forgotten: others wait for it; dropping the edges out of it (instead
    of passing its own waits on) loses orderings it was a link of.
    """
    used = {i.node for n in p.nodes for i in n.data_inputs if isinstance(i, DataIn)}
    used |= {v.node for v in p.outputs.values()}
    dead = {n.name for n in p.nodes if n.op == READ and n.name not in used}
    return _without(p, dead, inherit_control=False) if dead else p


# ---------------------------------------------------------------------------
# Moving mistakes


@wrong_pass("hoist-read-direct-check", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), C("k", 0, "^w"), R("r", "v", "^k"),
    outputs={"out": "r"}))
def hoist_read_direct_check(p: Program) -> Program:
    """Hoists a Read to the start of the graph (drops its control inputs,
    reads through a fresh Var) when none of its direct control inputs is an
    Assign of its variable.

    The reasoning: the region the Read is hoisted out of does not write the
    variable.  Forgotten: the check looked at direct predecessors only; a
    Write reached through another node is in the region too.
    """
    taken = set(p.node)
    nodes, changed = [], False
    for n in p.nodes:
        x = _var(p, n.name)
        if n.op == READ and x is not None and n.control_inputs and not any(
                isinstance(i, ControlIn) and p.node[i.node].op == ASSIGN and _var(p, i.node) == x
                for i in n.control_inputs):
            handle = n.data_inputs[0]
            if p.node[handle.node].inputs:
                v = Node(fresh_name(f"{n.name}/var", taken), VAR, (), {"var": x})
                nodes.append(v)
                handle = DataIn(v.name, 0)
            n = n.replace(inputs=(handle,))
            changed = True
        nodes.append(n)
    return rebuild(p, nodes) if changed else p


@wrong_pass("split-update-loses-control", lambda: _prog(
    V("v", "x"), C("one", 1), W("w", "v", "one"), C("two", 2),
    A("a", "Add", "v", "two", "^w")))
def split_update_loses_control(p: Program) -> Program:
    """Splits Assign-f into Read, f, Write, giving the Read only the handle:
    the Assign's control inputs go to the Write.

    The reasoning: the Write is the effect, so the Write keeps the ordering.
    Forgotten: the Read is part of the update; it now reads before what the
    Assign waited for (and, atomic, the split loses updates anyway).
    """
    from tfsem.rewrites.split_assign import splittable
    taken = set(p.node)
    out, changed = [], False
    for n in p.nodes:
        if not splittable(n):
            out.append(n)
            continue
        handle, value = n.data_inputs
        read = Node(fresh_name(f"{n.name}/read", taken), READ, (handle,))
        compute = Node(fresh_name(f"{n.name}/{n.fn}", taken), n.fn, (DataIn(read.name), value))
        write = Node(n.name, ASSIGN, (handle, DataIn(compute.name), *n.control_inputs), {"fn": "Snd"})
        out += [read, compute, write]
        changed = True
    return rebuild(p, out) if changed else p


@wrong_pass("move-read-before-update", lambda: _prog(
    V("v", "x"), C("one", 1), C("five", 5), A("a", "Add", "v", "one"), W("w", "v", "five"),
    R("r", "v", "^a"), outputs={"out": "r"}))
def move_read_before_update(p: Program) -> Program:
    """Moves a Read that waits for an AssignAdd of its variable before the
    update, and adds the update's value to what it read ("read the old
    value and adjust").

    The reasoning: x after x += d is x + d.  Forgotten: another update
    unordered with them may now run between the moved Read and the
    AssignAdd (and an uninitialized x errors the AssignAdd, not the Read).
    """
    for n in p.nodes:
        if n.op != READ:
            continue
        for i in n.control_inputs:
            if not isinstance(i, ControlIn):
                continue
            a = p.node[i.node]
            if a.op == ASSIGN and a.fn == "Add" and a.data_inputs[0] == n.data_inputs[0]:
                q = _reverse_edge(p, a.name, n.name)
                if q is None:
                    continue
                taken = set(p.node)
                adj = Node(fresh_name(f"{n.name}/adjusted", taken), "Add",
                           (DataIn(n.name), a.data_inputs[1]))
                ports = {(n.name, 0): DataIn(adj.name)}
                nodes = [m.replace(inputs=rename_inputs(m.inputs, ports, {})) for m in q.nodes]
                outputs = {k: ports.get((v.node, v.port), v) for k, v in q.outputs.items()}
                try:
                    return rebuild(p, nodes + [adj], outputs)
                except P.ProgramError:
                    continue
    return p
