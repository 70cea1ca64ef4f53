"""Deduplication signatures: the canonical form of a program with names erased.

Two findings are the same when they have the same pass, the same kind and, up
to the names of nodes, variables, feeds and outputs (and the order in which
nodes are listed), the same minimized program.  An unsound finding also keeps
the semantics and observe setting it was found under; the other kinds do not
depend on them (a pass never sees the semantics).

The canonical form is computed as in graph-isomorphism tools:

1. **Colour refinement.**  Every element (node, variable, feed, control feed)
   starts with a colour made of what it is without its name: a node's op and
   attributes, a variable's or feed's type.  Each round, an element's colour
   absorbs the colours of its neighbours: a node's data inputs in order (with
   ports), its control inputs as a multiset, its consumers, the outputs that
   fetch it, its variable; a variable's Var nodes; a feed's readers.  Rounds
   stop when the partition stops splitting.
2. **Individualization.**  While some colour is shared, each element of the
   first shared colour class is in turn made unique and refinement resumes;
   every leaf is a total order of the elements.
3. **The least leaf.**  Each leaf names nodes `n0, n1, ...` in topological
   order (ties by colour), variables `x0, ...` and feeds `f0, ...` by first use,
   outputs `o0, ...` by the port they fetch, and is written as compact JSON;
   the canonical form is the least such text.

Leaves are capped (:data:`MAX_LEAVES`): a program with that many symmetries
(large and made of many identical parts, never a minimized counterexample) gets
a deterministic but not necessarily canonical form, so at worst one bug is
stored twice.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import (VAR, ControlIn, DataIn, FeedControlIn, FeedIn, Node, Program,
                                  TensorType)

MAX_LEAVES = 256
SIGNATURE_VERSION = "sig/1"


def _h(*parts: Any) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def _type_key(t: TensorType) -> tuple:
    return (t.dtype, tuple(t.shape))


class _Graph:
    """The program as elements and name-free relations between them."""

    def __init__(self, p: Program):
        self.p = p
        self.nodes = [n.name for n in p.nodes]
        used_feeds = sorted({i.name for n in p.nodes for i in n.inputs if isinstance(i, FeedIn)})
        self.feeds = sorted(set(used_feeds) | set(p.feeds))
        self.ctl_feeds = sorted({i.name for n in p.nodes for i in n.inputs
                                 if isinstance(i, FeedControlIn)})
        self.variables = sorted(p.variables)
        # initial colours: what each element is, without its name
        fetched: dict[str, list[int]] = {}
        for port in p.outputs.values():
            fetched.setdefault(port.node, []).append(port.port)
        self.initial: dict[tuple[str, str], str] = {}
        for n in p.nodes:
            attrs = {k: v for k, v in n.attrs.items() if k != "var"}
            var_type = _type_key(p.variables[n.var]) if n.op == VAR and n.var in p.variables else None
            shape = tuple("f" if isinstance(i, FeedIn) else "d" for i in n.data_inputs)
            self.initial[("n", n.name)] = _h("node", n.op, fns.attrs_key(attrs), var_type, shape,
                                             len(n.control_inputs), sorted(fetched.get(n.name, [])))
        for x in self.variables:
            self.initial[("x", x)] = _h("var", _type_key(p.variables[x]))
        for f in self.feeds:
            self.initial[("f", f)] = _h("feed", _type_key(p.feed_type(f)))
        for c in self.ctl_feeds:
            self.initial[("c", c)] = _h("ctl-feed")
        # relations
        self.consumers: dict[str, list[tuple[str, int, int]]] = {n: [] for n in self.nodes}
        self.ctl_succ: dict[str, list[str]] = {n: [] for n in self.nodes}
        self.var_nodes: dict[str, list[str]] = {x: [] for x in self.variables}
        self.feed_users: dict[str, list[tuple[str, int]]] = {f: [] for f in self.feeds}
        self.ctl_users: dict[str, list[str]] = {c: [] for c in self.ctl_feeds}
        for n in p.nodes:
            if n.op == VAR and n.var in self.var_nodes:
                self.var_nodes[n.var].append(n.name)
            for idx, i in enumerate(n.data_inputs):
                if isinstance(i, DataIn) and i.node in self.consumers:
                    self.consumers[i.node].append((n.name, i.port, idx))
                elif isinstance(i, FeedIn):
                    self.feed_users[i.name].append((n.name, idx))
            for i in n.control_inputs:
                if isinstance(i, ControlIn) and i.node in self.ctl_succ:
                    self.ctl_succ[i.node].append(n.name)
                elif isinstance(i, FeedControlIn):
                    self.ctl_users[i.name].append(n.name)

    def refine(self, colour: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
        """Colour refinement to a stable partition."""
        p = self.p
        classes = len(set(colour.values()))
        for _ in range(len(colour) + 1):
            c = colour
            new: dict[tuple[str, str], str] = {}
            for n in p.nodes:
                ins = tuple((c[("n", i.node)], i.port) if isinstance(i, DataIn) else ("$", c[("f", i.name)])
                            for i in n.data_inputs)
                ctl = sorted(c[("n", i.node)] if isinstance(i, ControlIn) else "^$" + c[("c", i.name)]
                             for i in n.control_inputs)
                outs = sorted((c[("n", m)], port, idx) for m, port, idx in self.consumers[n.name])
                succ = sorted(c[("n", m)] for m in self.ctl_succ[n.name])
                var = c[("x", n.var)] if n.op == VAR and n.var in self.var_nodes else None
                new[("n", n.name)] = _h(c[("n", n.name)], ins, ctl, outs, succ, var)
            for x, users in self.var_nodes.items():
                new[("x", x)] = _h(c[("x", x)], sorted(c[("n", m)] for m in users))
            for f, users in self.feed_users.items():
                new[("f", f)] = _h(c[("f", f)], sorted((c[("n", m)], idx) for m, idx in users))
            for cf, users in self.ctl_users.items():
                new[("c", cf)] = _h(c[("c", cf)], sorted(c[("n", m)] for m in users))
            n_classes = len(set(new.values()))
            colour = new
            if n_classes == classes:
                break
            classes = n_classes
        return colour

    def write(self, colour: dict[tuple[str, str], str]) -> str:
        """The program renamed after a total colouring, as compact JSON."""
        p = self.p
        # topological order, ready nodes taken by least colour
        indeg = {n: len(p.predecessors(n)) for n in self.nodes}
        ready = sorted((colour[("n", n)], n) for n in self.nodes if indeg[n] == 0)
        order: list[str] = []
        while ready:
            _, name = ready.pop(0)
            order.append(name)
            for s in p.successors[name]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append((colour[("n", s)], s))
            ready.sort()
        node_name = {n: f"n{i}" for i, n in enumerate(order)}
        var_name: dict[str, str] = {}
        feed_name: dict[str, str] = {}
        ctl_name: dict[str, str] = {}
        nodes: list[Node] = []
        for name in order:
            n = p.node[name]
            attrs = dict(n.attrs)
            if n.op == VAR:
                attrs["var"] = var_name.setdefault(n.var, f"x{len(var_name)}")
            inputs = []
            for i in n.inputs:
                if isinstance(i, DataIn):
                    inputs.append(DataIn(node_name[i.node], i.port))
                elif isinstance(i, ControlIn):
                    inputs.append(ControlIn(node_name[i.node]))
                elif isinstance(i, FeedIn):
                    inputs.append(FeedIn(feed_name.setdefault(i.name, f"f{len(feed_name)}")))
                else:
                    inputs.append(FeedControlIn(ctl_name.setdefault(i.name, f"c{len(ctl_name)}")))
            data = [i for i in inputs if isinstance(i, (DataIn, FeedIn))]
            ctl = sorted((i for i in inputs if not isinstance(i, (DataIn, FeedIn))), key=str)
            nodes.append(Node(node_name[name], n.op, tuple(data + ctl), attrs))
        for x in sorted(set(self.variables) - set(var_name), key=lambda x: colour[("x", x)]):
            var_name[x] = f"x{len(var_name)}"
        for f in sorted(set(self.feeds) - set(feed_name), key=lambda f: colour[("f", f)]):
            feed_name[f] = f"f{len(feed_name)}"
        variables = {var_name[x]: p.variables[x] for x in sorted(var_name, key=var_name.get)}
        feeds = {feed_name[f]: p.feed_type(f) for f in sorted(feed_name, key=feed_name.get)}
        fetched = sorted((int(node_name[port.node][1:]), port.port) for port in p.outputs.values())
        outputs = {f"o{k}": DataIn(f"n{i}", port) for k, (i, port) in enumerate(fetched)}
        canon = Program(variables, tuple(nodes), outputs, feeds)
        data = program_to_json(canon)
        # every feed's type is written, declared or default: part of the interface
        data["feeds"] = {f: {"dtype": t.dtype, "shape": list(t.shape)} for f, t in feeds.items()}
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


def canonical_text(p: Program | dict) -> str:
    """The canonical form of a program, names erased, as compact JSON text.

    Equal for two programs exactly when they are the same up to renaming and
    reordering (within the symmetry cap, see the module docstring)."""
    if isinstance(p, dict):
        p = program_from_json(p, validate=False)
    g = _Graph(p)
    best: list[str | None] = [None]
    leaves = [0]

    def search(colour: dict[tuple[str, str], str]) -> None:
        if leaves[0] >= MAX_LEAVES:
            return
        colour = g.refine(colour)
        classes: dict[str, list[tuple[str, str]]] = {}
        for elem, c in colour.items():
            classes.setdefault(c, []).append(elem)
        shared = [(c, sorted(elems)) for c, elems in classes.items() if len(elems) > 1]
        if not shared:
            leaves[0] += 1
            text = g.write(colour)
            if best[0] is None or text < best[0]:
                best[0] = text
            return
        # the first shared class: by element kind, then colour (both name-free)
        _, elems = min(shared, key=lambda ce: (ce[1][0][0], ce[0]))
        for e in elems:
            branch = dict(colour)
            branch[e] = _h(colour[e], "individualized")
            search(branch)

    search(dict(g.initial))
    assert best[0] is not None
    return best[0]


def _without_unused_declarations(p: Program) -> Program:
    """`p` less the variables no Var node names and the declared feeds no
    node reads, for the dedupe key of a finding only.  Minimized
    counterexamples of one bug differed only in such declarations and were
    stored as two findings.  (As programs they differ: an unused variable is
    part of the observed state, so program_signature keeps them apart.)  A
    failure that needs the declaration cannot occur on the program without
    it, so two failing programs that differ only there show one bug.  A
    program with none is unchanged: existing signatures stay valid."""
    used_vars = {n.attrs.get("var") for n in p.nodes if n.op == VAR}
    used_feeds = {i.name for n in p.nodes for i in n.inputs if isinstance(i, (FeedIn, FeedControlIn))}
    variables = {x: t for x, t in p.variables.items() if x in used_vars}
    feeds = {f: t for f, t in p.feeds.items() if f in used_feeds}
    if len(variables) == len(p.variables) and len(feeds) == len(p.feeds):
        return p
    return p.replace(variables=variables, feeds=feeds)


def canonical_program(p: Program | dict) -> dict:
    """The canonical form as a `tfsem.program/1` object (readable: n0, x0, f0)."""
    return json.loads(canonical_text(p))


def program_signature(p: Program | dict) -> str:
    return hashlib.sha256(canonical_text(p).encode()).hexdigest()


def finding_signature(pass_name: str, kind: str, program: Program | dict,
                      semantics: str | None = None, observe: str | None = None) -> str:
    """The dedupe key of a finding: pass, kind, (for unsound: the semantics
    and observe setting), and the canonical program with names erased."""
    cell = f"{semantics}/{observe}" if kind == "unsound" else "-"
    if isinstance(program, dict):
        program = program_from_json(program, validate=False)
    text = "\n".join([SIGNATURE_VERSION, pass_name, kind, cell,
                      canonical_text(_without_unused_declarations(program))])
    return hashlib.sha256(text.encode()).hexdigest()


def record_signature(record: Any) -> str:
    """The signature of a :class:`~tfsem.campaigns.findings.FindingRecord`."""
    return finding_signature(record.pass_name, record.kind, record.original,
                             record.semantics, record.observe)


# ---------------------------------------------------------------------------
# Groups: one bug, one finding
#
# Signatures tell programs apart; a group gathers the findings that show one
# bug: the same pass, kind and (unsound) cell, the same kind of part that
# differs (an output or a variable's final value), and the same change made
# by the rewrite, described without names: which edges it added or removed,
# between which kinds of node (Var, Read, Assign, function; an AssignMul and
# an AssignSub are both Assign accesses), and which kinds of node it added or
# deleted.  A crash groups by its error type; a timeout by the pass.

GROUP_VERSION = "group/1"


def _edges(p: Program) -> set[tuple[str, str, str]]:
    kinds = {n.name: n.kind for n in p.nodes}
    out: set[tuple[str, str, str, str, str]] = set()
    for n in p.nodes:
        for i in n.inputs:
            if isinstance(i, DataIn):
                out.add(("data", i.node, kinds.get(i.node, "?"), n.name, n.kind))
            elif isinstance(i, ControlIn):
                out.add(("control", i.node, kinds.get(i.node, "?"), n.name, n.kind))
    return out  # type: ignore[return-value]


def rewrite_change(original: dict, rewritten: dict | None) -> str:
    """What the rewrite changed, without names: e.g. `-control Assign->Read,
    +control Read->Assign`.  Nodes are matched by name (passes keep the names
    of the nodes they keep)."""
    if rewritten is None:
        return ""
    try:
        a, b = program_from_json(original), program_from_json(rewritten)
    except Exception:  # noqa: BLE001 - an invalid rewritten program has no edges to compare
        return "malformed"
    na = {n.name: n for n in a.nodes}
    nb = {n.name: n for n in b.nodes}
    both = na.keys() & nb.keys()
    # edges of deleted or added nodes go with them ("-node Assign" says it)
    ea = {e for e in _edges(a) if e[1] in both and e[3] in both}
    eb = {e for e in _edges(b) if e[1] in both and e[3] in both}
    parts = {f"-{e[0]} {e[2]}->{e[4]}" for e in ea - eb} | {f"+{e[0]} {e[2]}->{e[4]}" for e in eb - ea}
    parts |= {f"-node {na[k].kind}" for k in na.keys() - nb.keys()}
    parts |= {f"+node {nb[k].kind}" for k in nb.keys() - na.keys()}
    parts |= {f"~node {na[k].kind}" for k in na.keys() & nb.keys()
              if na[k].op != nb[k].op or dict(na[k].attrs) != dict(nb[k].attrs)}
    return ", ".join(sorted(parts)) or "no structural change"


def group_key(record: Any) -> str:
    """The group of a finding (a FindingRecord): readable text, equal for
    findings that show the same bug."""
    if record.kind == "unsound":
        part = next(iter(record.differs or {}), "?")
        return (f"{record.pass_name}: unsound [{record.semantics}/{record.observe}], "
                f"{part} differs; rewrite: {rewrite_change(record.original, record.rewritten)}")
    if record.kind == "crash":
        return f"{record.pass_name}: crash {record.detail.get('error_type', '?')}"
    if record.kind == "invalid":
        what = (record.message or "").split(":", 1)[0] or "invalid"
        return f"{record.pass_name}: invalid ({what})"
    return f"{record.pass_name}: {record.kind}"
