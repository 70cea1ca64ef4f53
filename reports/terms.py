"""The difference a rewrite makes, in its user's terms (issue 23 item 4).

A verdict says *that* an outcome differs; a TensorFlow engineer wants to hear
*why*, in the words of their graph: "the read of `momentum` no longer waits
for `sgd/AssignVariableOp_2`; it can now see the value before that update".

:func:`difference_lines` derives this from the two programs and the verdict:

- two accesses to one variable (a Read and an Assign, or two Assigns) that
  the original orders (a path of edges from one to the other) and the
  rewrite no longer does, or orders the other way, come from the edges the
  rewrite removed or added between them;
- with a counterexample, its schedule says what the read saw in the run
  that breaks the rewrite: which write came last before it, or the initial
  value.

Reads and writes the rewrite removes or adds are named.  A rewrite that
keeps every access and the order of every such pair is said to do so, with
what it changed (nodes, edges); its difference, if any, is then in the
values computed.  Names lose their common prefix (`StatefulPartitionedCall/`)
as in the drawings (:func:`tfsem.reports.graph.name_prefix`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from tfsem.oracle.program import ASSIGN, READ, VAR, DataIn, Program

from . import graph as G

#: at most this many unordered pairs are named; the rest are counted
MAX_PAIRS = 3


@dataclass(frozen=True)
class Access:
    node: str
    variable: str
    write: bool


def accesses(p: Program) -> dict[str, Access]:
    """The Reads and Assigns of p, by node, with the variable each accesses."""
    out = {}
    for n in p.nodes:
        if n.op not in (READ, ASSIGN) or not n.inputs:
            continue
        src = n.inputs[0]
        if isinstance(src, DataIn) and src.node in p.node and p.node[src.node].op == VAR:
            var = str(p.node[src.node].attrs.get("var", src.node))
            out[n.name] = Access(n.name, var, n.op == ASSIGN)
    return out


def _reach(p: Program, starts: Iterable[str]) -> dict[str, set[str]]:
    """start node -> the nodes it must run before (every path of edges);
    one search per start (the accesses), so linear in the graph per access."""
    succ: dict[str, set[str]] = {n.name: set() for n in p.nodes}
    for e in G.program_edges(p):
        if e.src is not None and e.src[0] == "n" and e.dst[0] == "n" and e.src[1] in succ:
            succ[e.src[1]].add(e.dst[1])
    memo: dict[str, set[str]] = {}
    for start in starts:
        if start in memo or start not in succ:
            continue
        stack = [start]
        seen = {start}
        while stack:
            v = stack.pop()
            for w in succ.get(v, ()):
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        seen.discard(start)
        memo[start] = seen
    return memo


@dataclass(frozen=True)
class Unordered:
    """`first` runs before `then` in the original; in the rewrite no longer
    (`reversed`: the rewrite runs `then` first)."""
    first: Access
    then: Access
    reversed: bool
    direct: bool        # a removed or added edge joins the two


def unordered_pairs(original: Program, rewritten: Program) -> list[Unordered]:
    """Pairs of accesses to one variable (a write among them) that the
    original orders and the rewrite does not, or orders the other way;
    those joined by an edge the rewrite changed first."""
    acc_a, acc_b = accesses(original), accesses(rewritten)
    common = {n: a for n, a in acc_a.items() if n in acc_b and acc_b[n].variable == a.variable}
    ra, rb = _reach(original, common), _reach(rewritten, common)
    d = G.diff_programs(original, rewritten)
    changed = {(e.src[1], e.dst[1]) for e in [*d.removed_edges.values(), *d.added_edges.values()]
               if e.src is not None and e.src[0] == "n" and e.dst[0] == "n"}
    by_var: dict[str, list[Access]] = {}
    for a in common.values():
        by_var.setdefault(a.variable, []).append(a)
    out = []
    for group in by_var.values():
        for x in group:
            for y in group:
                if x is y or not (x.write or y.write) or y.node not in ra.get(x.node, ()):
                    continue
                if y.node in rb.get(x.node, ()):
                    continue            # still ordered
                out.append(Unordered(x, y, x.node in rb.get(y.node, ()),
                                     (x.node, y.node) in changed or (y.node, x.node) in changed))
    out.sort(key=lambda u: (not u.direct, u.then.node, u.first.node))
    return out


def _schedule_nodes(cx: Mapping[str, Any] | None) -> list[str]:
    if not isinstance(cx, Mapping) or not isinstance(cx.get("schedule"), list):
        return []
    return [str(s).partition("@")[0] for s in cx["schedule"]]


def _saw(read: Access, schedule: list[str], acc: Mapping[str, Access], name) -> str | None:
    """What `read` saw in the counterexample's run: the last write to its
    variable before it, or the initial value."""
    if read.node not in schedule:
        return None
    last = None
    for s in schedule[: schedule.index(read.node)]:
        a = acc.get(s)
        if a is not None and a.write and a.variable == read.variable:
            last = s
    return f"the value written by `{name(last)}`" if last else f"the initial value of `{read.variable}`"


def difference_lines(original: Program, rewritten: Program,
                     verdict_json: Mapping[str, Any] | None = None) -> list[str]:
    """Sentences naming the rewrite's difference in the user's terms, most
    telling first; [] when the programs are the same or the verdict is
    `sound` (a proof: no difference to explain)."""
    if (verdict_json or {}).get("verdict") == "sound":
        return []
    if original.has_control_flow or rewritten.has_control_flow:
        # (accesses through Switch and Enter handles, once per context: the
        # orders below are not those of a program with frames; say nothing
        # rather than something wrong -- the schedule names node@frame:i)
        return []
    prefix = G.name_prefix([n.name for n in original.nodes])

    every = set(original.node) | set(rewritten.node)

    def name(n: str) -> str:    # without the common prefix, unless that names another node
        short = n[len(prefix):] if prefix and n.startswith(prefix) else n
        return G.elide(n if short != n and short in every else short, 80)

    pairs = unordered_pairs(original, rewritten)
    cx = (verdict_json or {}).get("counterexample")
    schedule = _schedule_nodes(cx)
    acc_b = accesses(rewritten)
    lines = []
    for u in pairs[:MAX_PAIRS]:
        f, t = u.first, u.then
        verb = "now runs before" if u.reversed else "no longer waits for"
        if not t.write:
            s = (f"the read of `{t.variable}` (`{name(t.node)}`) {verb} `{name(f.node)}`; "
                 "it can now see the value before that update")
        elif not f.write:
            s = (f"the update of `{t.variable}` (`{name(t.node)}`) {verb} the read `{name(f.node)}`; "
                 "that read can now see the updated value")
        else:
            s = (f"the update of `{t.variable}` (`{name(t.node)}`) {verb} the update `{name(f.node)}`; "
                 f"they can now apply in either order, one can be lost")
        if schedule and f.node in schedule and t.node in schedule \
                and schedule.index(t.node) < schedule.index(f.node):
            s += f" (in the counterexample's run it ran first"
            if not t.write:
                saw = _saw(t, schedule, acc_b, name)
                s += f" and saw {saw}" if saw else ""
            s += ")"
        lines.append(s)
    if len(pairs) > MAX_PAIRS:
        lines.append(f"… and {len(pairs) - MAX_PAIRS} more pairs of accesses no longer ordered")
    acc_a = accesses(original)
    gone = [a for n, a in acc_a.items() if n not in acc_b or acc_b[n] != a]
    new = [a for n, a in acc_b.items() if n not in acc_a or acc_a[n] != a]
    for verb, items in (("drops", gone), ("adds", new)):
        for a in items[:MAX_PAIRS]:
            kind = "update" if a.write else "read"
            lines.append(f"the rewrite {verb} the {kind} `{name(a.node)}` of `{a.variable}`")
        if len(items) > MAX_PAIRS:
            lines.append(f"… and {len(items) - MAX_PAIRS} more")
    if not pairs and not gone and not new:
        d = G.diff_programs(original, rewritten)
        if d.empty:
            return []
        what = []
        for label, items in (("removes", len(d.removed_nodes)), ("adds", len(d.added_nodes)),
                             ("changes", len(d.modified_nodes))):
            if items:
                what.append(f"{label} {items} node{'s' if items != 1 else ''}")
        ne = len(d.removed_edges) + len(d.added_edges)
        if ne:
            what.append(f"rewires {ne} edge{'s' if ne != 1 else ''}")
        lines.append("the rewrite keeps every read and write of each variable, and the order between "
                     "a write and the other accesses of its variable"
                     + (f"; it {', '.join(what)}" if what else "")
                     + "; any difference is in the values computed")
    return lines


def difference_text(case: Any, verdict_json: Mapping[str, Any] | None = None) -> list[str]:
    """:func:`difference_lines` for a `tfsem.oracle.jsonio.Case`; [] when the
    rewrite is not a program (an `invalid` verdict says why)."""
    try:
        rewritten = case.rewritten(validate=False)
        return difference_lines(case.original, rewritten, verdict_json)
    except Exception:  # noqa: BLE001 - an explanation must never take the verdict down
        return []


def focus_of(original: Program, rewritten: Program,
             verdict_json: Mapping[str, Any] | None = None) -> tuple[list[str], list[str]]:
    """What a drawing of large programs must show: the nodes the rewrite
    changed and the accesses of the pairs it unordered (first), and the
    accesses on the counterexample's schedule to the same variables (then)."""
    d = G.diff_programs(original, rewritten)
    seeds = set(d.added_nodes) | d.removed_nodes | d.modified_nodes
    for e in [*d.removed_edges.values(), *d.added_edges.values()]:
        for v in (e.src, e.dst):
            if v is not None and v[0] == "n":
                seeds.add(v[1])
    pairs = unordered_pairs(original, rewritten)
    for u in pairs[:MAX_PAIRS]:
        seeds |= {u.first.node, u.then.node}
    variables = {u.then.variable for u in pairs}
    acc = accesses(rewritten)
    extra = [s for s in _schedule_nodes((verdict_json or {}).get("counterexample"))
             if s in acc and (acc[s].variable in variables or not variables)]
    return sorted(seeds), extra
