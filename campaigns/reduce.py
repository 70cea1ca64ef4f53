"""A structural reducer that finishes what Hypothesis's shrinker started.

Hypothesis shrinks the *choices* behind a program; a program generator makes
hundreds of choices, and shrinking them can take far longer than judging the
programs.  After Hypothesis's share of time, this reducer works on the program
itself, like delta debugging: it tries edits that make the program smaller
and keeps each one under which the same failure (same kind, same part, same
crash) still happens, until none applies or its time is up:

- delete at once every node that no output and no Assign needs (dead code);
- delete a node with everything that depends on its results (control edges
  from it are dropped, outputs fetching a deleted result are dropped);
- contract a node whose results nobody uses: it goes, and whoever waited
  for it waits for what it waited for, so the orderings through it (often
  the bug's shape: Write -> Read y -> Read x) stay;
- unfold a fetched function whose result nothing else uses: its inputs are
  fetched instead (`out = Add(r1, r2)` becomes outputs `out = r1`,
  `out_1 = r2`);
- let one Var node serve for another of the same variable (an output port may
  feed several consumers);
- bypass a function node: its consumers and outputs read one of its inputs;
- a Const (its value used, not waited for) becomes a feed holding its
  value: one node fewer;
- an Assign nothing waits for goes, the value it assigned is fetched
  instead (its effect showed the bug; the value often does too);
- a Read whose value only other nodes use (no output) becomes a feed
  holding its variable's initial value, whoever waited for it waiting for
  what it waited for;
- drop a control input, drop an output;
- drop variables and feed declarations nothing uses;
- let one variable stand for another of the same type (its Var nodes
  retargeted, its initial value dropped);
- shrink shapes: every tensor type and Const value a scalar (then each
  variable, feed and Const alone), σ cut to the first elements, so a
  counterexample is a scalar wherever a scalar shows the failure.

`reduce_case` does the same for a user's pair (original, rewritten) with no
pass to run again: each edit is applied to both programs by node name, and
kept when the check still gives the same verdict (`tfsem reduce`).

The edits are tried in sweeps: each once on the program as it stands, a
kept edit shrinking it for the ones after it, until a sweep keeps none; so
a sweep costs one check per edit (starting over after each kept edit cost
one per edit and node).

Every candidate is a valid program (invalid ones are skipped), judged by the
same pass run and the same check as any fuzzed program, so the result is a
real finding by construction.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, Mapping

import numpy as np

from tfsem.oracle.program import (VAR, ControlIn, DataIn, FeedIn, Node, Program, TensorType, validate)
from tfsem.oracle.values import Tensor, Value, value_from_json

from .findings import FindingRecord

Evaluate = Callable[[Program, Mapping[str, Value], Mapping[str, Value]], FindingRecord | None]


def is_valid(p: Program) -> bool:
    """Whether `p` is a well-formed program."""
    return _valid(p)


def is_smaller(p: Program, q: Program) -> bool:
    """Whether `p` is smaller than `q` by the reducer's measure (nodes, then
    edges, outputs, variables, feeds, tensor elements)."""
    return _size(p) < _size(q)


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


def _contract(p: Program, name: str) -> Program | None:
    """Node `name`, whose results nobody uses, removed; whoever waited for it
    waits for what it waited for (its data sources and control inputs), so
    every ordering through it stays: the bug's shape is kept while a node on
    the path goes (None when its results are used)."""
    n = p.node[name]
    if any(v.node == name for v in p.outputs.values()) or any(
            isinstance(i, DataIn) and i.node == name for m in p.nodes for i in m.inputs):
        return None
    # a source with no inputs and no effect (a Var, a Const) orders nothing
    waits = tuple(dict.fromkeys(ControlIn(i.node) if isinstance(i, DataIn) else i
                                for i in n.inputs if isinstance(i, (DataIn, ControlIn))
                                and (p.node[i.node].inputs or p.node[i.node].kind in ("Read", "Assign"))))
    nodes = []
    for m in p.nodes:
        if m.name == name:
            continue
        if ControlIn(name) in m.inputs:
            kept = tuple(i for i in m.inputs if i != ControlIn(name))
            m = m.replace(inputs=kept + tuple(w for w in waits if w not in kept))
        nodes.append(m)
    return p.replace(nodes=tuple(nodes))


def _unfold_output(p: Program, name: str) -> Program | None:
    """A fetched function node whose result nothing else uses removed, its
    data inputs fetched in its place (`out` fetching Add(r1, r2) becomes `out`
    fetching r1 and `out_1` fetching r2): the values the bug shows in stay
    observed (None when it does not apply)."""
    n = p.node[name]
    fetching = [k for k, v in p.outputs.items() if v.node == name]
    if (n.kind != "function" or not fetching or not n.data_inputs
            or not all(isinstance(i, DataIn) for i in n.data_inputs)
            or any(name == i.node for m in p.nodes for i in m.inputs if isinstance(i, (DataIn, ControlIn)))):
        return None
    outputs = {k: v for k, v in p.outputs.items() if v.node != name}
    for k in fetching:
        for j, src in enumerate(n.data_inputs):
            label = k if j == 0 else f"{k}_{j}"
            if label in outputs:
                return None
            outputs[label] = src
    return p.replace(nodes=tuple(m for m in p.nodes if m.name != name), outputs=outputs)


def _drop_unused(p: Program) -> Program:
    used_vars = {n.var for n in p.nodes if n.op == VAR}
    used_feeds = {i.name for n in p.nodes for i in n.inputs if isinstance(i, FeedIn)}
    variables = {x: t for x, t in p.variables.items() if x in used_vars}
    feeds = {f: t for f, t in p.feeds.items() if f in used_feeds}
    if len(variables) == len(p.variables) and len(feeds) == len(p.feeds):
        return p
    return p.replace(variables=variables, feeds=feeds)


def _const_to_feed(p: Program, name: str) -> tuple[Program, str, Value] | None:
    """Const node `name` (with no inputs) removed, its consumers reading a
    new feed of its type instead: (the program, the feed, the Const's value
    for σ); None when it does not apply (an output fetches it, or it is not
    such a Const).  One node fewer: a Write's value needs no node."""
    n = p.node.get(name)
    if n is None or n.op != "Const" or n.inputs or not isinstance(n.attrs.get("value"), Tensor) \
            or any(v.node == name for v in p.outputs.values()):
        return None
    value = n.attrs["value"]
    feed, k = f"{name}_fed", 0
    while feed in p.feed_names:
        k += 1
        feed = f"{name}_fed{k}"
    nodes = []
    for m in p.nodes:
        if m.name == name:
            continue
        if any(isinstance(i, ControlIn) and i.node == name for i in m.inputs):
            return None   # something waits for it: not a pure value
        nodes.append(m.replace(inputs=tuple(FeedIn(feed) if isinstance(i, DataIn) and i.node == name
                                            else i for i in m.inputs)))
    feeds = {**p.feeds, feed: TensorType(value.dtype, tuple(value.shape))}
    return p.replace(nodes=tuple(nodes), feeds=feeds), feed, value


def _prune_dead(p: Program) -> Program | None:
    """Every node that neither an output nor an Assign needs (by a path of
    data or control edges) removed at once: one check for the dead code a
    generator leaves, rather than one per node (None when there is none)."""
    roots = {v.node for v in p.outputs.values()} | {n.name for n in p.nodes if n.op == "Assign"}
    keep = p.ancestors(roots)
    if len(keep) == len(p.nodes):
        return None
    return p.replace(nodes=tuple(n for n in p.nodes if n.name in keep))


def _fetch_assigned(p: Program, name: str) -> Program | None:
    """An Assign that nothing waits for removed, the value it assigned
    fetched instead (a new output): where its effect on the variable showed
    the bug, the value itself often does, and the Assign's Var (and
    variable) can go next (None when it does not apply)."""
    n = p.node.get(name)
    if n is None or n.op != "Assign" or len(n.data_inputs) < 2 or not isinstance(n.data_inputs[1], DataIn):
        return None
    if any(isinstance(i, (DataIn, ControlIn)) and i.node == name for m in p.nodes for i in m.inputs) \
            or any(v.node == name for v in p.outputs.values()):
        return None
    label, k = f"{name}_value", 0
    while label in p.outputs:
        k += 1
        label = f"{name}_value{k}"
    return p.replace(nodes=tuple(m for m in p.nodes if m.name != name),
                     outputs={**p.outputs, label: n.data_inputs[1]})


def _read_to_feed(p: Program, name: str, init: Mapping[str, Value]) -> tuple[Program, str, Value] | None:
    """A Read whose value only feeds other nodes (no output fetches it)
    removed: its consumers read a new feed holding the variable's initial
    value (zeros when it has none), and whoever waited for it waits for what
    it waited for.  (None when it does not apply.)"""
    n = p.node.get(name)
    if n is None or n.op != "Read" or any(v.node == name for v in p.outputs.values()):
        return None
    x = p.accessed_variable(name)
    t = p.variables.get(x) if x is not None else None
    if t is None or t.shape is None or not t.dtype:
        return None
    v = init.get(x)
    if not isinstance(v, Tensor) or tuple(v.shape) != tuple(t.shape):
        try:
            v = Tensor(np.zeros(tuple(t.shape), dtype=np.dtype(t.dtype)), t.dtype)
        except Exception:  # noqa: BLE001 - a type numpy cannot make zeros of
            return None
    feed, k = f"{name}_fed", 0
    while feed in p.feed_names:
        k += 1
        feed = f"{name}_fed{k}"
    waits = tuple(i for i in n.inputs if isinstance(i, ControlIn)) + tuple(
        ControlIn(i.node) for i in n.data_inputs if isinstance(i, DataIn) and p.node[i.node].inputs)
    nodes = []
    for m in p.nodes:
        if m.name == name:
            continue
        if any(i == ControlIn(name) for i in m.inputs):
            kept = tuple(i for i in m.inputs if i != ControlIn(name))
            m = m.replace(inputs=kept + tuple(w for w in dict.fromkeys(waits) if w not in kept))
        m = m.replace(inputs=tuple(FeedIn(feed) if isinstance(i, DataIn) and i.node == name else i
                                   for i in m.inputs))
        nodes.append(m)
    return p.replace(nodes=tuple(nodes), feeds={**p.feeds, feed: TensorType(t.dtype, tuple(t.shape))}), feed, v


#: An edit of the reducer: a program -> a smaller variant of it (None: it
#: does not apply).  Edits name nodes, so one list serves for a whole sweep
#: while the program shrinks under it.
Edit = Callable[[Program], "Program | None"]


def _node_edit(fn: Callable[[Program, str], "Program | None"], name: str) -> Edit:
    return lambda q: fn(q, name) if name in q.node else None


def edits(p: Program, fed: dict[str, Value] | None = None,
          init: Mapping[str, Value] | None = None) -> list[Edit]:
    """The reducer's edits for `p`, the biggest cuts first (see the module
    docstring).  A Const or Read turned into a feed leaves the feed's value
    in `fed` (for σ); `init` is σ's initial values (a Read's feed holds its
    variable's)."""
    order = list(p.topological_order)
    out: list[Edit] = [_prune_dead]
    out += [_node_edit(_delete_with_dependents, n) for n in reversed(order)]
    # a node on an ordering path goes, the ordering stays
    out += [_node_edit(_contract, n) for n in reversed(order)]
    # a fetched function goes, what it combined is fetched
    out += [_node_edit(_unfold_output, n) for n in reversed(order) if p.node[n].kind == "function"]
    by_var: dict[str, list[str]] = {}
    for name in order:
        n = p.node[name]
        if n.op == VAR:
            by_var.setdefault(n.var, []).append(name)
    for names in by_var.values():
        for drop in names[1:]:
            out.append(lambda q, keep=names[0], drop=drop: _share_var(q, keep, drop)
                       if keep in q.node and drop in q.node else None)
    for name in reversed(order):
        n = p.node[name]
        if n.kind == "function":
            for j in range(len(n.data_inputs)):
                out.append(lambda q, name=name, j=j: _bypass(q, name, j) if name in q.node
                           and q.node[name].kind == "function" and len(q.node[name].data_inputs) > j
                           else None)

    def to_feed(q: Program, name: str) -> Program | None:
        done = _const_to_feed(q, name)
        if done is None:
            return None
        if fed is not None:
            fed[done[1]] = done[2]
        return done[0]
    out += [_node_edit(to_feed, n.name) for n in p.nodes if n.op == "Const" and not n.inputs]
    out += [_node_edit(_fetch_assigned, n.name) for n in p.nodes if n.op == "Assign"]

    def read_to_feed(q: Program, name: str) -> Program | None:
        done = _read_to_feed(q, name, init or {})
        if done is None:
            return None
        if fed is not None:
            fed[done[1]] = done[2]
        return done[0]
    out += [_node_edit(read_to_feed, n.name) for n in p.nodes if n.op == "Read"]
    for n in p.nodes:
        for i in n.control_inputs:
            out.append(lambda q, name=n.name, i=i: q.replace(nodes=tuple(
                m.replace(inputs=tuple(j for j in m.inputs if j != i)) if m.name == name else m
                for m in q.nodes)) if name in q.node and i in q.node[name].inputs else None)
    for k in sorted(p.outputs):
        out.append(lambda q, k=k: q.replace(outputs={o: v for o, v in q.outputs.items() if o != k})
                   if k in q.outputs else None)
    out.append(lambda q: None if (t := _drop_unused(q)) is q else t)
    names = sorted(p.variables)
    for i, keep in enumerate(names):
        for drop in names[i + 1:]:
            out.append(lambda q, keep=keep, drop=drop: _merge_vars(q, keep, drop)
                       if keep in q.variables and drop in q.variables else None)
    for site in shape_sites(p):
        out.append(lambda q, site=site: scalarize(q, site))
    return out


def candidates(p: Program) -> Iterator[Program]:
    """Smaller variants of `p`, the biggest cuts first."""
    for edit in edits(p):
        q = edit(p)
        if q is not None:
            yield q


def _elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape)) if shape else 1


def _size(p: Program) -> tuple:
    edges = sum(len(n.inputs) for n in p.nodes)
    elements = (sum(_elements(t.shape) for t in p.variables.values())
                + sum(_elements(t.shape) for t in p.feeds.values())
                + sum(_elements(n.attrs["value"].shape) for n in p.nodes
                      if n.op == "Const" and isinstance(n.attrs.get("value"), Tensor)))
    return (len(p.nodes), edges, len(p.outputs), len(p.variables), len(p.feeds), elements)


def _merge_vars(p: Program, keep: str, drop: str) -> Program | None:
    """Var nodes of variable `drop` become Var nodes of `keep` (same type)."""
    if p.variables.get(keep) != p.variables.get(drop):
        return None
    nodes = tuple(n.replace(attrs={**dict(n.attrs), "var": keep}) if n.op == VAR and n.var == drop else n
                  for n in p.nodes)
    return p.replace(nodes=nodes, variables={x: t for x, t in p.variables.items() if x != drop})


# -- shapes ------------------------------------------------------------------


def shrink_value(v: Value, shape: tuple[int, ...]) -> Value:
    """`v` cut (or padded with zeros) to `shape`, its first elements kept."""
    if not isinstance(v, Tensor) or tuple(v.shape) == tuple(shape):
        return v
    flat = np.asarray(v.array).reshape(-1)
    n = _elements(shape)
    if flat.size < n:
        flat = np.concatenate([flat, np.zeros(n - flat.size, dtype=flat.dtype)])
    return Tensor(flat[:n].reshape(shape), v.dtype)


#: which sites a shape edit makes scalar: ("all",), ("var", x), ("feed", f), ("const", node)
ShapeSite = tuple[str, ...]


def shape_sites(p: Program) -> list[ShapeSite]:
    """The shape edits worth trying on `p`: all at once first, then each
    non-scalar variable, feed and Const alone."""
    sites: list[ShapeSite] = []
    sites += [("var", x) for x, t in p.variables.items() if t.shape]
    sites += [("feed", f) for f, t in p.feeds.items() if t.shape]
    sites += [("const", n.name) for n in p.nodes
              if n.op == "Const" and isinstance(n.attrs.get("value"), Tensor) and n.attrs["value"].shape]
    return ([("all",)] if sites else []) + (sites if len(sites) > 1 else [])


def scalarize(p: Program, site: ShapeSite) -> Program:
    """`p` with the tensor types (and Const values) of `site` made scalar."""
    everything = site == ("all",)

    def hit(kind: str, name: str) -> bool:
        return everything or site == (kind, name)

    variables = {x: TensorType(t.dtype, ()) if hit("var", x) else t for x, t in p.variables.items()}
    feeds = {f: TensorType(t.dtype, ()) if hit("feed", f) else t for f, t in p.feeds.items()}
    nodes = tuple(n.replace(attrs={**dict(n.attrs), "value": shrink_value(n.attrs["value"], ())})
                  if n.op == "Const" and isinstance(n.attrs.get("value"), Tensor) and hit("const", n.name)
                  else n for n in p.nodes)
    return p.replace(variables=variables, feeds=feeds, nodes=nodes)


def fit_sigma(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value]
              ) -> tuple[dict[str, Value], dict[str, Value]]:
    """σ restricted to `p`'s feeds and variables, each value cut to its type's shape."""
    f = {k: shrink_value(v, p.feeds[k].shape) if k in p.feeds else v
         for k, v in feeds.items() if k in p.feed_names}
    i = {k: shrink_value(v, p.variables[k].shape) for k, v in init.items() if k in p.variables}
    return f, i


def failing_sigma(record: FindingRecord, p: Program, feeds: Mapping[str, Value],
                  init: Mapping[str, Value]) -> tuple[dict[str, Value], dict[str, Value]]:
    """The σ at which `record` fails, for program `p`: its counterexample's
    feeds and initial values (a variable it leaves out starts
    uninitialized), a feed it lacks taken from `feeds`; `feeds`, `init`
    themselves when the record's σ does not fit `p`."""
    try:
        f = dict(feeds)
        for k, raw in (record.feeds or {}).items():
            if k in p.feed_names:
                f[k] = value_from_json(raw, f"feed {k!r}", p.feed_type(k).dtype)
        i = {k: value_from_json(raw, f"variable {k!r}", p.variables[k].dtype)
             for k, raw in (record.init or {}).items() if k in p.variables}
    except Exception:  # noqa: BLE001 - a σ that does not decode: the one given
        return dict(feeds), dict(init)
    return f, i


def reduce_finding(program: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                   record: FindingRecord, evaluate: Evaluate, same: Callable[[FindingRecord], bool],
                   deadline: float) -> tuple[FindingRecord, int]:
    """The smallest variant of `program` still failing like `record`;
    returns (its record, the number of candidates judged).  Each candidate
    is judged first at the σ where the smallest failing program so far fails
    (its counterexample's, `failing_sigma`; `feeds`, `init` where it has
    none): a node less rarely needs another σ, and the checker's screen
    (checks.py) tries the σ given first, so such a candidate costs
    milliseconds where a symbolic check may take seconds."""
    best_p, best_r = program, record
    feeds, init = failing_sigma(record, program, feeds, init)
    tried = 0
    seen: set = set()
    fed: dict[str, Value] = {}
    improved = True
    # Sweeps: each edit of the list is tried once on the program as it is by
    # then (an edit kept, the sweep goes on with the next one on the smaller
    # program, rather than starting over: n edits, not n squared, per
    # sweep), until a sweep keeps none or the time is up.
    while improved and time.monotonic() < deadline:
        improved = False
        for edit in edits(best_p, fed, init):
            if time.monotonic() >= deadline:
                break
            try:
                cand = edit(best_p)
            except Exception:  # noqa: BLE001 - an edit that does not apply is skipped
                continue
            if cand is None or _size(cand) >= _size(best_p) or not _valid(cand):
                continue
            if cand in seen:
                continue
            seen.add(cand)
            cand_feeds, cand_init = fit_sigma(cand, feeds, init)
            for name in cand.feed_names:
                if name not in cand_feeds and name in fed:
                    cand_feeds[name] = fed[name]
            tried += 1
            r = evaluate(cand, cand_feeds, cand_init)
            if r is not None and same(r):
                best_p, best_r = cand, r
                feeds, init = failing_sigma(r, cand, cand_feeds, cand_init)
                improved = True
    return best_r, tried


# ---------------------------------------------------------------------------
# A user's pair: `tfsem reduce CASE -o SMALLER`

Edit = Callable[[Program], "Program | None"]


def _pair_edits(o: Program, r: Program) -> Iterator[Edit]:
    """Edits named by nodes, variables and outputs, to apply to both programs
    of a pair (a program that lacks the name is left as it is)."""
    names: list[str] = list(dict.fromkeys([*reversed(o.topological_order), *reversed(r.topological_order)]))
    for name in names:
        yield lambda q, name=name: _delete_with_dependents(q, name)
    for name in names:   # None (the edit does not apply) when its results are used
        yield lambda q, name=name: _contract(q, name) if name in q.node else q
    for p in (o, r):
        by_var: dict[str, list[str]] = {}
        for n in p.nodes:
            if n.op == VAR:
                by_var.setdefault(n.var, []).append(n.name)
        for vs in by_var.values():
            for drop in vs[1:]:
                yield lambda q, keep=vs[0], drop=drop: (
                    _share_var(q, keep, drop) if keep in q.node and drop in q.node
                    and q.node[keep].op == VAR and q.node[drop].op == VAR else q)
    for name in names:
        n = o.node[name] if name in o.node else r.node[name]
        if n.kind == "function":
            for j in range(len(n.data_inputs)):
                def bypass(q: Program, name: str = name, j: int = j, op: str = n.op) -> Program | None:
                    if name not in q.node or q.node[name].op != op or len(q.node[name].data_inputs) <= j:
                        return q
                    return _bypass(q, name, j)
                yield bypass
    edges = {(n.name, i) for p in (o, r) for n in p.nodes for i in n.control_inputs}
    for name, i in sorted(edges, key=repr):
        yield lambda q, name=name, i=i: q.replace(nodes=tuple(
            m.replace(inputs=tuple(j for j in m.inputs if j != i)) if m.name == name else m for m in q.nodes))
    for k in sorted(o.outputs):
        yield lambda q, k=k: q.replace(outputs={x: v for x, v in q.outputs.items() if x != k})
    yield _drop_unused
    names_v = sorted(o.variables)
    for i, keep in enumerate(names_v):
        for drop in names_v[i + 1:]:
            yield lambda q, keep=keep, drop=drop: _merge_vars(q, keep, drop) if drop in q.variables else q
    for site in dict.fromkeys(shape_sites(o) + shape_sites(r)):
        yield lambda q, site=site: scalarize(q, site)


def _verdict_key(v: dict) -> tuple:
    return (v.get("verdict"), tuple(v.get("differs") or {}))


def reduce_case(original: Program, rewritten: Program, judge: Callable[[Program, Program], dict],
                deadline: float) -> tuple[Program, Program, dict, int]:
    """The smallest pair reached by edits applied to both programs under
    which `judge(original, rewritten)` (a verdict JSON) gives the same
    verdict and the same kind of differing part as the pair given.  Returns
    (original, rewritten, its verdict, how many pairs were judged)."""
    verdict = judge(original, rewritten)
    want = _verdict_key(verdict)
    # a malformed rewrite (verdict invalid) stays malformed; a valid one valid
    rewritten_valid = _valid(rewritten)
    best = (original, rewritten)
    tried = 0
    seen: set = set()

    def size(pair: tuple[Program, Program]) -> tuple:
        a, b = _size(pair[0]), _size(pair[1])
        return tuple(x + y for x, y in zip(a, b))

    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for edit in _pair_edits(*best):
            if time.monotonic() >= deadline:
                break
            try:
                cand = (edit(best[0]), edit(best[1]))
            except Exception:  # noqa: BLE001 - an edit that does not apply is skipped
                continue
            if cand[0] is None or cand[1] is None or size(cand) >= size(best):
                continue
            if cand in seen or not _valid(cand[0]) or _valid(cand[1]) != rewritten_valid:
                continue
            seen.add(cand)
            tried += 1
            try:
                v = judge(*cand)
            except Exception:  # noqa: BLE001 - the checker rejecting a candidate: not kept
                continue
            if _verdict_key(v) == want:
                best, verdict = cand, v
                improved = True
                break
    return best[0], best[1], verdict, tried
