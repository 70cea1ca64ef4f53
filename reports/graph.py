"""Programs drawn as graphs in the seed's notation, as inline SVG, in pure Python.

Seed 000, section 3.1.2: solid arrows are tensor edges, dashed arrows variable
edges, dotted arrows control edges; input edges (feeds, input control edges)
come from nowhere and output edges go nowhere.  Here an input edge starts at a
small labelled stub (`$B`, `^$go`), an output edge ends at a stub with the
output's name, and the implicit input control edge of a node without inputs
(SPEC 1) is a short dotted arrow from above.

The layout is a layered (Sugiyama-style) drawing:

1. *Layers* by topological depth (longest path from the sources), then every
   node is pulled down next to its nearest consumer, so that a `Var(x)` sits
   right above the Read or Assign that uses it.  An invalid program may have a
   cycle: depth-first back edges are reversed for layering only.
2. *Long edges* get a chain of dummy vertices, one per layer crossed.
3. *Crossing reduction*: alternating down and up barycenter sweeps, then
   adjacent transpositions, keeping the order with the fewest crossings.
4. *Coordinates*: each layer's x positions minimise the squared distance to
   the mean position of their neighbours subject to the layer's order and
   minimum gaps (an isotonic regression, solved exactly by pool-adjacent-
   violators), alternating down and up.
5. *Edges* are cubic curves with vertical tangents through their dummies.

Two programs (an original and its rewrite) can share one layout: nodes are
matched by name and edges by what they connect, so both drawings put a node
at the same place and what the rewrite removed or added shows as a gap or a
highlighted element.  Edge ids are those of `tfsem.oracle.semantics.graph_of`
(`n#i`, `n#go`, `out:name`), so a `State.in_transit` can be drawn on the edges.

Why not Graphviz: it would be one more system binary that a pip install does
not bring, the layout would differ between its versions, and the shared
layout of two programs and the values on edges need control of the geometry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from tfsem.oracle import functions as fns
from tfsem.oracle.program import (ASSIGN, CONTROL, READ, TENSOR, VAR, VARIABLE, ControlIn,
                                  DataIn, FeedControlIn, FeedIn, Node, Program)
from tfsem.oracle.values import Error, Tensor, format_value

from .html import ADDED, FIRED, MODIFIED, REMOVED, attr, esc, truncate

VKey = tuple[str, str]          # ("n", node) | ("f", feed) | ("c", control feed) | ("o", output) | ("m", missing)
EKey = tuple                    # an edge's identity across programs (see program_edges)

# Geometry (SVG user units = CSS px at scale 1).
CHAR_W = 7.3            # DejaVu Sans Mono at 12px is 7.22px per character
NODE_H = 38
STUB_H = 20
GAP_Y = 48
GAP_X = 26
DUMMY_W = 6
MARGIN = 16
IMPLICIT_GO = 14        # length of the implicit input control edge

INK, VAR_BLUE, CTRL_GREY = "#1f2328", "#0969da", "#57606a"
EDGE_STYLE = {
    # kind: (stroke colour, dash array, width)
    TENSOR: (INK, None, 1.6),
    VARIABLE: (VAR_BLUE, "7 4", 1.6),
    CONTROL: (CTRL_GREY, "1.5 3.5", 1.9),
}
MARK_COLOUR = {"added": ADDED, "removed": REMOVED, "modified": MODIFIED}
LOOP_W = 36             # how far a self-loop reaches right of its node


# ---------------------------------------------------------------------------
# The drawing budget


class TooBig(Exception):
    """A graph past the drawing budget: `str(exc)` says why, for the page to
    show in place of the picture."""


@dataclass
class DrawBudget:
    """ONE budget for everything a page draws: the size of a graph that is
    laid out at all (vertices and edges of the programs together), and the
    wall-clock seconds of all of a page's drawing.

    - Past `max_vertices` or `max_edges`, :func:`layout_programs` raises
      :class:`TooBig` at once (the layout's crossing reduction is quadratic in
      the edges between two layers; 500 nodes took 107 s before this budget).
    - Past `seconds`, the layout keeps the best ordering found so far instead
      of improving it, and the page stops drawing step pictures (each says so).

    Call :meth:`start` when the page begins; :meth:`expired` tells whether the
    time is spent.  The defaults draw every generated program (at most 40
    nodes) in full and keep a page under a few seconds."""
    max_vertices: int = 160
    max_edges: int = 400
    seconds: float = 8.0
    _deadline: float | None = None

    def start(self) -> "DrawBudget":
        self._deadline = time.monotonic() + self.seconds
        return self

    def expired(self, share: float = 1.0) -> bool:
        """Is the time spent (or `share` of it, for a part that must leave
        time to the rest of the page)?"""
        if self._deadline is None:
            return False
        return time.monotonic() > self._deadline - self.seconds * (1.0 - share)

    def check_size(self, vertices: int, edges: int) -> None:
        if vertices > self.max_vertices or edges > self.max_edges:
            raise TooBig(f"{vertices} vertices and {edges} edges: past the drawing budget "
                         f"({self.max_vertices} vertices, {self.max_edges} edges)")


# ---------------------------------------------------------------------------
# Edges of a program, with graph_of's ids and cross-program identities


@dataclass(frozen=True)
class EdgeInfo:
    """One edge.  `id` is graph_of's id in this program; `key` identifies the
    edge across programs (same endpoints, same kind, same argument position);
    `src` is None for the implicit input control edge of a node without
    inputs; `dst` is an output stub for an output edge."""
    id: str
    key: EKey
    kind: str
    src: VKey | None
    dst: VKey
    src_port: int       # output port, -1 for a control edge, 0 for a stub
    arg: int            # position among the destination's data inputs, -1 for control/output

    @property
    def implicit(self) -> bool:
        return self.src is None


def program_edges(p: Program) -> list[EdgeInfo]:
    """Every edge of p in graph_of's order and with its ids.  Tolerates an
    invalid program (an input from an unknown node becomes a `missing` stub)."""
    out: list[EdgeInfo] = []
    seen: dict[EKey, int] = {}

    def unique(key: EKey) -> EKey:
        # a repeated control input (^a twice) is two edges
        k = seen.get(key, 0)
        seen[key] = k + 1
        return key if k == 0 else key + (k,)

    for n in p.nodes:
        d = ("n", n.name)
        arg = 0
        for idx, inp in enumerate(n.inputs):
            eid = f"{n.name}#{idx}"
            if isinstance(inp, DataIn):
                src_node = p.node.get(inp.node)
                src = ("n", inp.node) if src_node is not None else ("m", inp.node)
                kind = src_node.output_kind(inp.port) if src_node is not None else TENSOR
                out.append(EdgeInfo(eid, unique(("d", inp.node, inp.port, n.name, arg)), kind,
                                    src, d, inp.port, arg))
                arg += 1
            elif isinstance(inp, FeedIn):
                out.append(EdgeInfo(eid, unique(("f", inp.name, n.name, arg)), TENSOR,
                                    ("f", inp.name), d, 0, arg))
                arg += 1
            elif isinstance(inp, ControlIn):
                src = ("n", inp.node) if inp.node in p.node else ("m", inp.node)
                out.append(EdgeInfo(eid, unique(("c", inp.node, n.name)), CONTROL, src, d, -1, -1))
            elif isinstance(inp, FeedControlIn):
                out.append(EdgeInfo(eid, unique(("cf", inp.name, n.name)), CONTROL,
                                    ("c", inp.name), d, 0, -1))
        if not n.inputs:
            out.append(EdgeInfo(f"{n.name}#go", ("go", n.name), CONTROL, None, d, 0, -1))
    for name, port in p.outputs.items():
        src = ("n", port.node) if port.node in p.node else ("m", port.node)
        out.append(EdgeInfo(f"out:{name}", ("o", name, port.node, port.port), TENSOR,
                            src, ("o", name), port.port, -1))
    return out


# ---------------------------------------------------------------------------
# Labels


def node_label(n: Node) -> str:
    """The operation as the seed writes it: Var(x), Read, Write, Assign-Add,
    a function's name, Const with its value."""
    if n.op == VAR:
        return f"Var({n.attrs.get('var', '?')})"
    if n.op == READ:
        return "Read"
    if n.op == ASSIGN:
        fn = n.attrs.get("fn", "?")
        return "Write" if fn == "Snd" else f"Assign-{fn}"
    if n.op == "Const" and isinstance(n.attrs.get("value"), (Tensor, Error)):
        return "Const " + format_value(n.attrs["value"])
    extra = [f"{k}={format_value(v) if isinstance(v, (Tensor, Error)) else v}"
             for k, v in sorted(n.attrs.items())]
    return n.op + (f"({', '.join(extra)})" if extra else "")


def _node_class(n: Node) -> str:
    if n.op in (VAR, READ, ASSIGN):
        return {VAR: "var", READ: "read", ASSIGN: "assign"}[n.op]
    return "const" if n.op == "Const" else "function"


def _n_outputs(n: Node) -> int:
    if n.op in (VAR, READ):
        return 1
    if n.op == ASSIGN:
        return 0
    f = fns.lookup(n.op)
    return f.n_out if f else 1


# ---------------------------------------------------------------------------
# What a rewrite changed


@dataclass
class Diff:
    """Nodes matched by name, edges by `EdgeInfo.key`."""
    added_nodes: set[str] = field(default_factory=set)
    removed_nodes: set[str] = field(default_factory=set)
    modified_nodes: set[str] = field(default_factory=set)
    added_edges: dict[EKey, EdgeInfo] = field(default_factory=dict)
    removed_edges: dict[EKey, EdgeInfo] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added_nodes or self.removed_nodes or self.modified_nodes
                    or self.added_edges or self.removed_edges)

    def marks(self, side: int) -> dict:
        """Highlights for side 0 (the original: removed, modified) or side 1
        (the rewrite: added, modified)."""
        nodes = {n: "modified" for n in self.modified_nodes}
        if side == 0:
            nodes.update({n: "removed" for n in self.removed_nodes})
            edges = {k: "removed" for k in self.removed_edges}
        else:
            nodes.update({n: "added" for n in self.added_nodes})
            edges = {k: "added" for k in self.added_edges}
        return {"nodes": nodes, "edges": edges}

    def summary(self, original: Program, rewritten: Program) -> list[tuple[str, str]]:
        """(change kind, description) lines, for the page's list of changes."""
        lines: list[tuple[str, str]] = []
        for n in sorted(self.removed_nodes):
            lines.append(("removed", f"node {n}: {node_label(original.node[n])}"))
        for n in sorted(self.added_nodes):
            lines.append(("added", f"node {n}: {node_label(rewritten.node[n])}"))
        for n in sorted(self.modified_nodes):
            lines.append(("modified", f"node {n}: {node_label(original.node[n])} → "
                                      f"{node_label(rewritten.node[n])}"))
        for e in self.removed_edges.values():
            lines.append(("removed", describe_edge(e)))
        for e in self.added_edges.values():
            lines.append(("added", describe_edge(e)))
        return lines


def _vname(v: VKey | None) -> str:
    if v is None:
        return "(input)"
    kind, name = v
    return {"n": name, "f": f"${name}", "c": f"^${name}", "o": f"output {name}",
            "m": f"{name} (missing)"}[kind]


def describe_edge(e: EdgeInfo) -> str:
    arrow = {TENSOR: "→", VARIABLE: "⇢", CONTROL: "⋯>"}[e.kind]
    where = f" (argument {e.arg})" if e.arg >= 0 else ""
    src = _vname(e.src) + (f":{e.src_port}" if e.src_port > 0 and e.src and e.src[0] == "n" else "")
    return f"{e.kind} edge {src} {arrow} {_vname(e.dst)}{where}"


def diff_programs(original: Program, rewritten: Program) -> Diff:
    d = Diff()
    a, b = original.node, rewritten.node
    d.removed_nodes = set(a) - set(b)
    d.added_nodes = set(b) - set(a)
    d.modified_nodes = {n for n in set(a) & set(b)
                        if a[n].op != b[n].op or fns.attrs_key(a[n].attrs) != fns.attrs_key(b[n].attrs)}
    ea = {e.key: e for e in program_edges(original)}
    eb = {e.key: e for e in program_edges(rewritten)}
    d.removed_edges = {k: e for k, e in ea.items() if k not in eb}
    d.added_edges = {k: e for k, e in eb.items() if k not in ea}
    return d


# ---------------------------------------------------------------------------
# Layout


@dataclass
class Box:
    """A laid-out vertex: centre (x, y), size (w, h)."""
    key: VKey | tuple
    kind: str                  # node | feed | cfeed | output | missing | dummy
    w: float
    h: float
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    n_out: int = 1
    has_data_out: bool = False

    @property
    def top(self) -> float:
        return self.y - self.h / 2

    @property
    def bottom(self) -> float:
        return self.y + self.h / 2


@dataclass
class Route:
    """The drawn course of an edge: points from its source to its target
    (cubic pieces with vertical tangents), or for a self-loop an explicit
    SVG path `d` and the point where its value is drawn."""
    key: EKey
    kind: str
    points: list[tuple[float, float]]
    d: str | None = None
    label_at: tuple[float, float] | None = None

    def path(self) -> str:
        return self.d if self.d is not None else _curve(self.points)


@dataclass
class Side:
    """What one of the laid-out programs contains."""
    program: Program
    vertices: set[VKey]
    edges: list[EdgeInfo]


@dataclass
class Layout:
    boxes: dict
    routes: dict[EKey, Route]
    sides: list[Side]
    width: float
    height: float
    crossings: int = 0
    #: a part of larger programs (see :func:`neighbourhood`): the names of the
    #: nodes left out, drawn as "… name" stubs where an edge comes from them
    outside: frozenset = frozenset()
    #: a focus drawing (see :func:`draw_pair_focus`): the groups folded
    #: (vertex name -> member nodes) and the prefix dropped from names
    groups: dict = field(default_factory=dict)
    prefix: str | None = None


def _box_for(v: VKey, nodes: Sequence[Node | None]) -> Box:
    kind, name = v
    if kind == "n":
        present = [n for n in nodes if n is not None]
        chars = max(max(len(truncate(node_label(n), 26)) for n in present),
                    len(truncate(name, 24)) * 0.9)
        n_out = max(_n_outputs(n) for n in present)
        return Box(v, "node", max(58.0, chars * CHAR_W + 22), NODE_H, n_out=max(n_out, 1))
    label = _vname(v) if kind != "o" else name
    label = truncate(label, 24)
    return Box(v, {"f": "feed", "c": "cfeed", "o": "output", "m": "missing"}[kind],
               max(30.0, len(label) * CHAR_W * 0.92 + 16), STUB_H)


def layout_programs(programs: Sequence[Program], budget: DrawBudget | None = None) -> Layout:
    """One layout for one program, or shared by several (original, rewrite).
    Raises :class:`TooBig` when the programs are past `budget`'s size (the
    default budget when None)."""
    budget = budget or DrawBudget().start()
    sides: list[Side] = []
    union_edges: dict[EKey, EdgeInfo] = {}
    vertex_order: list[VKey] = []
    seen_v: set[VKey] = set()

    def add_v(v: VKey) -> None:
        if v not in seen_v:
            seen_v.add(v)
            vertex_order.append(v)

    for p in programs:
        edges = program_edges(p)
        verts: set[VKey] = set()
        stubs_of: dict[str, list[VKey]] = {}
        for e in edges:
            if e.dst[0] == "n" and e.src is not None and e.src[0] in "fcm":
                stubs_of.setdefault(e.dst[1], []).append(e.src)
        # vertices in declaration order, each node's input stubs first
        for n in p.nodes:
            for v in stubs_of.get(n.name, ()):
                add_v(v)
                verts.add(v)
            add_v(("n", n.name))
            verts.add(("n", n.name))
        for e in edges:
            if e.dst[0] == "o":
                add_v(e.dst)
                verts.add(e.dst)
            if e.src is not None:
                add_v(e.src)
                verts.add(e.src)
            union_edges.setdefault(e.key, e)
        sides.append(Side(p, verts, edges))

    budget.check_size(len(vertex_order), len(union_edges))
    boxes: dict = {v: _box_for(v, [p.node.get(v[1]) for p in programs]) for v in vertex_order}
    for e in union_edges.values():
        if e.src is not None and e.src[0] == "n" and e.kind != CONTROL:
            boxes[e.src].has_data_out = True

    layout_edges = [e for e in union_edges.values() if e.src is not None and e.src != e.dst]
    layer = _layering(vertex_order, [(e.src, e.dst) for e in layout_edges])
    for v, l in layer.items():
        boxes[v].layer = l

    # proper layered graph: dummy chains for long edges
    chains: dict[EKey, list] = {}
    adj_down: dict = {v: [] for v in vertex_order}
    adj_up: dict = {v: [] for v in vertex_order}
    for e in layout_edges:
        a, b = e.src, e.dst
        flipped = layer[a] > layer[b]
        if flipped:
            a, b = b, a
        chain = [a]
        for l in range(layer[a] + 1, layer[b]):
            dk = ("dummy", e.key, l)
            boxes[dk] = Box(dk, "dummy", DUMMY_W, NODE_H * 0.5, layer=l)
            adj_down[dk], adj_up[dk] = [], []
            chain.append(dk)
        chain.append(b)
        for u, w in zip(chain, chain[1:]):
            adj_down[u].append(w)
            adj_up[w].append(u)
        chains[e.key] = chain[::-1] if flipped else chain

    n_layers = max((b.layer for b in boxes.values()), default=0) + 1
    layers = _initial_order(vertex_order, boxes, adj_down, n_layers)
    layers, crossings = _reduce_crossings(layers, adj_down, adj_up, budget=budget)
    _place_x(layers, boxes, adj_down, adj_up)
    width, height = _place_y(layers, boxes)

    # Every edge ends at its target's boundary with its last piece outside
    # the box, so that the arrowhead (drawn before the boxes) stays visible:
    # a downward edge enters the top, an upward one (only in a cycle, or
    # where the two programs order a pair differently) the bottom, a
    # self-loop swings out to the right and enters the top.
    routes: dict[EKey, Route] = {}
    down = [e for e in layout_edges if layer[e.src] < layer[e.dst]]
    entries = _entry_points(down, boxes)
    for e in layout_edges:
        chain = chains[e.key]
        src_box, dst_box = boxes[e.src], boxes[e.dst]
        middle = [(boxes[d].x, boxes[d].y) for d in chain[1:-1]]
        if e.key in entries:
            start, end = _exit_point(src_box, e), entries[e.key]
        else:  # upward: leave the source's top, enter the target's bottom
            start = (src_box.x + src_box.w * 0.42, src_box.top)
            end = (dst_box.x - dst_box.w * 0.42, dst_box.bottom)
        routes[e.key] = Route(e.key, e.kind, [start, *middle, end])
    for e in union_edges.values():
        if e.src is not None and e.src == e.dst:
            b = boxes[e.src]
            right = b.x + b.w / 2
            start, end = (right, b.y + b.h * 0.15), (b.x + b.w * 0.3, b.top)
            d = (f"M{start[0]:.1f},{start[1]:.1f} C{right + LOOP_W:.1f},{start[1]:.1f} "
                 f"{right + LOOP_W:.1f},{b.top - 26:.1f} {end[0]:.1f},{end[1]:.1f}")
            routes[e.key] = Route(e.key, e.kind, [start, (right + LOOP_W, b.top - 26), end], d=d,
                                  label_at=(right + LOOP_W * 0.75, b.top - 12))
            width = max(width, right + LOOP_W + MARGIN)
    return Layout(boxes, routes, sides, width, height, crossings)


def _layering(vertices: list[VKey], edges: list[tuple[VKey, VKey]]) -> dict[VKey, int]:
    succ: dict[VKey, list[VKey]] = {v: [] for v in vertices}
    for a, b in edges:
        succ[a].append(b)
    # reverse depth-first back edges (only an invalid program has cycles)
    state: dict[VKey, int] = {}
    back: set[tuple[VKey, VKey]] = set()
    for root in vertices:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            v, it = stack[-1]
            w = next(it, None)
            if w is None:
                state[v] = 2
                stack.pop()
            elif state.get(w) == 1:
                back.add((v, w))
            elif w not in state:
                state[w] = 1
                stack.append((w, iter(succ[w])))
    dag = [(b, a) if (a, b) in back else (a, b) for a, b in edges]
    preds: dict[VKey, list[VKey]] = {v: [] for v in vertices}
    succs: dict[VKey, list[VKey]] = {v: [] for v in vertices}
    indeg = {v: 0 for v in vertices}
    for a, b in dag:
        succs[a].append(b)
        preds[b].append(a)
        indeg[b] += 1
    order, ready = [], [v for v in vertices if indeg[v] == 0]
    ready.reverse()
    while ready:
        v = ready.pop()
        order.append(v)
        for w in reversed(succs[v]):
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    layer: dict[VKey, int] = {}
    for v in order:  # longest path from the sources
        layer[v] = max((layer[u] + 1 for u in preds[v]), default=0)
    for v in reversed(order):  # pull each vertex down next to its nearest consumer
        if succs[v]:
            layer[v] = max(layer[v], min(layer[w] for w in succs[v]) - 1)
    return layer


def _initial_order(vertices: list[VKey], boxes: dict, adj_down: dict, n_layers: int) -> list[list]:
    """Depth-first order from the sources in declaration order: connected
    things start next to each other."""
    seq: dict = {}
    has_pred = {w for ws in adj_down.values() for w in ws}
    roots = [v for v in vertices if v not in has_pred] + list(vertices)
    for root in roots:
        if root in seq:
            continue
        stack = [root]
        while stack:
            v = stack.pop()
            if v in seq:
                continue
            seq[v] = len(seq)
            stack.extend(reversed(adj_down.get(v, [])))
    for k in boxes:
        seq.setdefault(k, len(seq))
    layers: list[list] = [[] for _ in range(n_layers)]
    for k in sorted(boxes, key=lambda k: seq[k]):
        layers[boxes[k].layer].append(k)
    return layers


def _count_crossings(upper: list, lower: list, adj_down: dict) -> int:
    pos = {v: i for i, v in enumerate(lower)}
    pairs = sorted((i, pos[w]) for i, v in enumerate(upper) for w in adj_down.get(v, []) if w in pos)
    count = 0
    for i in range(len(pairs)):
        for j in range(i + 1, len(pairs)):
            if pairs[i][0] < pairs[j][0] and pairs[i][1] > pairs[j][1]:
                count += 1
    return count


def _total_crossings(layers: list[list], adj_down: dict) -> int:
    return sum(_count_crossings(layers[i], layers[i + 1], adj_down) for i in range(len(layers) - 1))


def _reduce_crossings(layers: list[list], adj_down: dict, adj_up: dict,
                      sweeps: int = 12, budget: DrawBudget | None = None) -> tuple[list[list], int]:
    best = [list(l) for l in layers]
    best_c = _total_crossings(layers, adj_down)
    cur = [list(l) for l in layers]
    for it in range(sweeps):
        if best_c == 0 or (budget is not None and budget.expired()):
            break
        down = it % 2 == 0
        rng = range(1, len(cur)) if down else range(len(cur) - 2, -1, -1)
        for i in rng:
            ref = cur[i - 1] if down else cur[i + 1]
            nbrs = adj_up if down else adj_down
            pos = {v: j for j, v in enumerate(ref)}

            def bary(item: tuple[int, object]) -> tuple[float, int]:
                j, v = item
                ps = [pos[w] for w in nbrs.get(v, []) if w in pos]
                return (sum(ps) / len(ps) if ps else float(j), j)

            cur[i] = [v for _, v in sorted(enumerate(cur[i]), key=bary)]
        _transpose(cur, adj_down, adj_up)
        c = _total_crossings(cur, adj_down)
        if c < best_c:
            best, best_c = [list(l) for l in cur], c
    return best, best_c


def _transpose(layers: list[list], adj_down: dict, adj_up: dict) -> None:
    """Swap neighbours in a layer while that removes crossings."""
    def pair_cost(a, b, i: int) -> int:
        cost = 0
        for ref, nbrs in ((i - 1, adj_up), (i + 1, adj_down)):
            if 0 <= ref < len(layers):
                pos = {v: j for j, v in enumerate(layers[ref])}
                pa = [pos[w] for w in nbrs.get(a, []) if w in pos]
                pb = [pos[w] for w in nbrs.get(b, []) if w in pos]
                cost += sum(1 for x in pa for y in pb if x > y)
        return cost

    for _ in range(4):
        improved = False
        for i, layer in enumerate(layers):
            for j in range(len(layer) - 1):
                a, b = layer[j], layer[j + 1]
                if pair_cost(b, a, i) < pair_cost(a, b, i):
                    layer[j], layer[j + 1] = b, a
                    improved = True
        if not improved:
            return


def _isotonic(z: list[float], w: list[float]) -> list[float]:
    """Weighted least-squares nondecreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for zi, wi in zip(z, w):
        blocks.append([zi * wi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, ww, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += ww
            blocks[-1][2] += c
    out: list[float] = []
    for s, ww, c in blocks:
        out.extend([s / ww] * int(c))
    return out


def _place_layer(layer: list, boxes: dict, desired: list[float]) -> None:
    """x positions closest to `desired` keeping order and minimum gaps."""
    offsets, o = [], 0.0
    for j, v in enumerate(layer):
        if j:
            a, b = boxes[layer[j - 1]], boxes[v]
            gap = GAP_X if (a.kind != "dummy" and b.kind != "dummy") else GAP_X / 2.5
            o += (a.w + b.w) / 2 + gap
        offsets.append(o)
    weights = [0.6 if boxes[v].kind == "dummy" else 1.0 for v in layer]
    ys = _isotonic([d - off for d, off in zip(desired, offsets)], weights)
    for v, y, off in zip(layer, ys, offsets):
        boxes[v].x = y + off


def _place_x(layers: list[list], boxes: dict, adj_down: dict, adj_up: dict) -> None:
    for layer in layers:
        _place_layer(layer, boxes, [0.0] * len(layer))

    def desired(v, nbrs_list: Iterable[dict]) -> float:
        xs = [boxes[w].x for nbrs in nbrs_list for w in nbrs.get(v, [])]
        return sum(xs) / len(xs) if xs else boxes[v].x

    order = list(range(len(layers)))
    for it in range(8):
        if it % 2 == 0:
            seq, nb = order[1:], [adj_up]
        else:
            seq, nb = order[-2::-1], [adj_down]
        if it >= 6:
            seq, nb = order, [adj_up, adj_down]
        for i in seq:
            _place_layer(layers[i], boxes, [desired(v, nb) for v in layers[i]])
    left = min((b.x - b.w / 2 for b in boxes.values()), default=0.0)
    for b in boxes.values():
        b.x += MARGIN - left


def _place_y(layers: list[list], boxes: dict) -> tuple[float, float]:
    y = MARGIN + IMPLICIT_GO + 4
    for layer in layers:
        h = max((boxes[v].h for v in layer if boxes[v].kind != "dummy"), default=NODE_H * 0.5)
        for v in layer:
            boxes[v].y = y + h / 2
        y += h + GAP_Y
    width = max((b.x + b.w / 2 for b in boxes.values()), default=0.0) + MARGIN
    return width, y - GAP_Y + MARGIN + 8


def _exit_point(b: Box, e: EdgeInfo) -> tuple[float, float]:
    if b.kind != "node":
        return (b.x, b.bottom)
    if e.kind == CONTROL:
        return (b.x + (b.w * 0.3 if b.has_data_out else 0.0), b.bottom)
    if b.n_out > 1:
        return (b.x + ((e.src_port + 0.5) / b.n_out - 0.5) * b.w * 0.7, b.bottom)
    return (b.x, b.bottom)


def _entry_points(edges: list[EdgeInfo], boxes: dict) -> dict[EKey, tuple[float, float]]:
    """Spread a node's incoming edges over its top: data inputs in argument
    order, then control edges by where they come from."""
    by_dst: dict = {}
    for e in edges:
        by_dst.setdefault(e.dst, []).append(e)
    out = {}
    for dst, es in by_dst.items():
        b = boxes[dst]
        es.sort(key=lambda e: (e.arg < 0, e.arg, boxes[e.src].x, str(e.key)))
        n = len(es)
        for i, e in enumerate(es):
            x = b.x + ((i + 0.5) / n - 0.5) * b.w * 0.72 if n > 1 else b.x
            out[e.key] = (x, b.top)
    return out


# ---------------------------------------------------------------------------
# Drawing


def _curve(points: list[tuple[float, float]]) -> str:
    (x0, y0) = points[0]
    d = [f"M{x0:.1f},{y0:.1f}"]
    for (x1, y1) in points[1:]:
        k = (y1 - y0) / 2
        d.append(f"C{x0:.1f},{y0 + k:.1f} {x1:.1f},{y1 - k:.1f} {x1:.1f},{y1:.1f}")
        x0, y0 = x1, y1
    return " ".join(d)


def label_point(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Where a value in transit is drawn: the middle of the last segment
    (the curve's midpoint, tangents being vertical), near the consumer."""
    (x0, y0), (x1, y1) = points[-2], points[-1]
    return ((x0 + x1) / 2, (y0 + y1) / 2)


def _markers(uid: str) -> str:
    out = []
    colours = {"tensor": INK, "variable": VAR_BLUE, "control": CTRL_GREY, **MARK_COLOUR}
    for name, colour in colours.items():
        out.append(f'<marker id="{uid}-arr-{name}" viewBox="0 0 10 10" refX="9" refY="5" '
                   f'markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">'
                   f'<path d="M0,1 L10,5 L0,9 z" fill="{colour}"/></marker>')
    return "<defs>" + "".join(out) + "</defs>"


@dataclass
class Transit:
    """A value drawn on an edge: text, and whether it changed in this step."""
    text: str
    token: str = "value"       # value | var | go
    changed: bool = False


def render_svg(layout: Layout, side: int = 0, *, uid: str = "g", role: str = "",
               marks: Mapping | None = None, transit: Mapping[str, Transit] | None = None,
               fired: str | None = None, done: Iterable[str] = (),
               pending: Mapping[str, str] | None = None,
               var_values: Sequence[tuple[str, str, bool]] | None = None,
               scale: float = 1.0, title: str = "", css_class: str = "program-graph") -> str:
    """One side of a layout as an inline `<svg>`.

    - `marks`: {"nodes": {name: added|removed|modified}, "edges": {key: added|removed}}
      (see :meth:`Diff.marks`);
    - `transit`: values in transit by graph_of edge id (EMPTY edges absent);
    - `fired`: the node whose step just fired; `done`: nodes already fired;
    - `pending`: decomposed mode, Assign node -> text of the value it read;
    - `var_values`: (variable, value text, changed) drawn in a box at the side,
      like the seed's "x = A" annotation.
    Every name is escaped; SVG element ids are prefixed by `uid`, which must be
    unique in the page.
    """
    s = layout.sides[side]
    p = s.program
    marks = marks or {"nodes": {}, "edges": {}}
    node_marks, edge_marks = marks.get("nodes", {}), marks.get("edges", {})
    transit = transit or {}
    done = set(done)
    pending = pending or {}

    width, height = layout.width, layout.height
    var_box = ""
    if var_values is not None:
        var_box, extra_w = _var_box(var_values, width)
        width += extra_w
    W, H = width * scale, height * scale
    parts = [f'<svg class={attr("graph " + css_class)} data-role={attr(role)} '
             f'viewBox="0 0 {width:.1f} {height:.1f}" width="{W:.0f}" height="{H:.0f}" '
             f'role="img" aria-label={attr(title or "program graph")}>']
    if title:
        parts.append(f"<title>{esc(title)}</title>")
    parts.append(_markers(uid))

    # edges (halo under stroke), implicit input control edges included
    parts.append('<g class="edges">')
    labels: list[str] = []
    for e in s.edges:
        colour, dash, sw = EDGE_STYLE[e.kind]
        mark = edge_marks.get(e.key)
        stroke = MARK_COLOUR[mark] if mark else colour
        marker = f"url(#{uid}-arr-{mark or e.kind})"
        if e.implicit:
            b = layout.boxes[e.dst]
            pts = [(b.x, b.top - IMPLICIT_GO), (b.x, b.top)]
            d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f} L{pts[1][0]:.1f},{pts[1][1]:.1f}"
        else:
            route = layout.routes[e.key]
            pts = route.points if route.label_at is None else [route.label_at, route.label_at]
            d = route.path()
        cls = f"edge {e.kind}" + (" implicit" if e.implicit else "") + (f" {mark}" if mark else "")
        parts.append(f'<g class={attr(cls)} data-edge={attr(e.id)}>'
                     f"<title>{esc(describe_edge(e) if not e.implicit else 'implicit input control edge of ' + e.dst[1])}</title>")
        if mark:
            parts.append(f'<path class="halo" d="{d}" fill="none" stroke="{stroke}" '
                         f'stroke-opacity="0.28" stroke-width="{sw + 6:.1f}" stroke-linecap="round"/>')
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        cap = ' stroke-linecap="round"' if e.kind == CONTROL else ""
        parts.append(f'<path class="stroke" d="{d}" fill="none" stroke="{stroke}" '
                     f'stroke-width="{sw}"{dash_attr}{cap} marker-end="{marker}"/></g>')
        t = transit.get(e.id)
        if t is not None:
            labels.append(_transit_label(t, e, pts))
    parts.append("</g>")

    # vertices
    parts.append('<g class="nodes">')
    for v in sorted(s.vertices, key=lambda v: (layout.boxes[v].layer, layout.boxes[v].x)):
        b = layout.boxes[v]
        if v[0] == "n":
            n = p.node[v[1]]
            parts.append(_node_svg(b, n, node_marks.get(n.name), fired == n.name,
                                   n.name in done, pending.get(n.name), layout.prefix))
        elif v[0] == "m" and v[1] in layout.groups:
            parts.append(_group_svg(b, v[1], layout.groups[v[1]], layout.prefix or ""))
        else:
            parts.append(_stub_svg(b, v, v[0] == "m" and v[1] in layout.outside, layout.prefix))
    parts.append("</g>")
    parts.append('<g class="values">' + "".join(labels) + "</g>")
    parts.append(var_box)
    parts.append("</svg>")
    return "".join(parts)


def _group_svg(b: Box, name: str, members: Sequence[str], prefix: str) -> str:
    """A folded name scope: one box, its scope and how many nodes it holds;
    the members' whole names on hover."""
    shown = ", ".join(members[:12]) + (f", … ({len(members) - 12} more)" if len(members) > 12 else "")
    label = truncate(f"{elide(name, 16)} ×{len(members)}", 24)
    return (f'<g class="stub group" data-group={attr(name)}><title>{esc(prefix + name)}: '
            f"{len(members)} nodes folded: {esc(shown)}</title>"
            f'<rect x="{b.x - b.w / 2:.1f}" y="{b.y - b.h / 2:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" '
            f'rx="4" fill="#eaeef2" stroke="#8c959f"/>'
            f'<text x="{b.x:.1f}" y="{b.y + 4:.1f}" text-anchor="middle" font-size="11" '
            f'fill="{INK}">{esc(label)}</text></g>')


def _node_svg(b: Box, n: Node, mark: str | None, fired: bool, done: bool, pending: str | None,
              prefix: str | None = None) -> str:
    cls = f"node {_node_class(n)}" + (f" {mark}" if mark else "") + (" fired" if fired else "") \
        + (" done" if done else "")
    fill = {"var": "#ddf4ff", "const": "#f6f8fa"}.get(_node_class(n), "#ffffff")
    stroke, sw = INK, 1.2
    if mark:
        stroke, sw = MARK_COLOUR[mark], 2.6
    if done:
        fill = "#eef1f4"
    if fired:
        fill, stroke, sw = "#fff1e5", FIRED, 3.0
    x, y = b.x - b.w / 2, b.y - b.h / 2
    label = truncate(node_label(n), 26)
    out = [f'<g class={attr(cls)} data-node={attr(n.name)}>'
           f"<title>{esc(n.name)}: {esc(node_label(n))}</title>"]
    if mark:
        out.append(f'<rect class="halo" x="{x - 4:.1f}" y="{y - 4:.1f}" width="{b.w + 8:.1f}" '
                   f'height="{b.h + 8:.1f}" rx="9" fill="{MARK_COLOUR[mark]}" fill-opacity="0.16"/>')
    dash = ' stroke-dasharray="5 3"' if mark == "removed" else ""
    out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="6" '
               f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/>')
    ink = "#57606a" if done and not fired else INK
    out.append(f'<text class="op" x="{b.x:.1f}" y="{b.y - 2:.1f}" text-anchor="middle" '
               f'font-size="12" font-weight="700" fill="{ink}">{esc(label)}</text>')
    out.append(f'<text class="name" x="{b.x:.1f}" y="{b.y + 12:.1f}" text-anchor="middle" '
               f'font-size="10.5" fill="#57606a">'
               f'{esc(truncate(n.name, 24) if prefix is None else short_name(n.name, prefix))}</text>')
    if mark:
        sign = {"added": "+ added", "removed": "− removed", "modified": "~ modified"}[mark]
        out.append(f'<text class="mark" x="{x + b.w:.1f}" y="{y - 6:.1f}" text-anchor="end" '
                   f'font-size="10" font-weight="700" fill="{MARK_COLOUR[mark]}">{sign}</text>')
    if pending is not None:
        txt = truncate(pending, 28)
        w = len(txt) * 6.2 + 10
        out.append(f'<g class="pending"><rect x="{b.x - w / 2:.1f}" y="{y + b.h + 2:.1f}" width="{w:.1f}" '
                   f'height="15" rx="3" fill="#fff8c5" stroke="{MODIFIED}"/>'
                   f'<text x="{b.x:.1f}" y="{y + b.h + 13:.1f}" text-anchor="middle" font-size="10" '
                   f'fill="#7d4e00">{esc(txt)}</text></g>')
    out.append("</g>")
    return "".join(out)


def _stub_svg(b: Box, v: VKey, outside: bool = False, prefix: str | None = None) -> str:
    kind, name = v
    label = truncate(name if kind == "o" else _vname(v), 24)
    if outside:  # a node of the program that is not in the drawn part
        label = truncate("… " + name, 24) if prefix is None else "… " + short_name(name, prefix, 22)
        return (f'<g class="stub outside" data-stub={attr(name)}><title>{esc(name)}: not drawn '
                f"(outside the part shown)</title>"
                f'<rect x="{b.x - b.w / 2:.1f}" y="{b.y - b.h / 2:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" '
                f'rx="4" fill="#f6f8fa" stroke="#8c959f" stroke-dasharray="3 2"/>'
                f'<text x="{b.x:.1f}" y="{b.y + 4:.1f}" text-anchor="middle" font-size="11" '
                f'fill="#57606a">{esc(label)}</text></g>')
    cls = {"f": "stub feed", "c": "stub cfeed", "o": "stub output", "m": "stub missing"}[kind]
    fill = {"o": "#dafbe1", "m": "#ffebe9"}.get(kind, "#fff8c5")
    x, y = b.x - b.w / 2, b.y - b.h / 2
    return (f'<g class={attr(cls)} data-stub={attr(name)}><title>{esc(_vname(v))}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="{b.h / 2:.1f}" '
            f'fill="{fill}" stroke="#8c959f"/>'
            f'<text x="{b.x:.1f}" y="{b.y + 4:.1f}" text-anchor="middle" font-size="11" '
            f'fill="{INK}">{esc(label)}</text></g>')


def _transit_label(t: Transit, e: EdgeInfo, pts: list[tuple[float, float]]) -> str:
    x, y = label_point(pts)
    colour = EDGE_STYLE[e.kind][0]
    cls = f"value {t.token}" + (" changed" if t.changed else "")
    if t.token == "go":
        # GO on a control edge: a small token, like a place marking
        return (f'<g class={attr(cls)} data-edge={attr(e.id)}><circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" '
                f'fill="{FIRED if t.changed else CTRL_GREY}"/>'
                f'<text x="{x + 7:.1f}" y="{y + 3:.1f}" font-size="9" fill="{CTRL_GREY}">GO</text></g>')
    text = truncate(t.text, 18)
    w = len(text) * 7.0 + 10
    stroke = FIRED if t.changed else colour
    style = ' font-style="italic"' if t.token == "var" else ""
    return (f'<g class={attr(cls)} data-edge={attr(e.id)}>'
            f'<rect x="{x - w / 2:.1f}" y="{y - 9:.1f}" width="{w:.1f}" height="17" rx="4" '
            f'fill="{"#fff1e5" if t.changed else "#ffffff"}" stroke="{stroke}" '
            f'stroke-width="{2 if t.changed else 1.2}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-size="12" font-weight="700"'
            f'{style} fill="{INK}">{esc(text)}</text></g>')


def _var_box(var_values: Sequence[tuple[str, str, bool]], x0: float) -> tuple[str, float]:
    lines = [f"{truncate(x, 14)} = {truncate(v, 18)}" for x, v, _ in var_values] or ["(no variables)"]
    w = max(max(len(l) for l in lines) * 8.5, 9 * CHAR_W) + 20
    h = len(lines) * 20 + 26
    out = [f'<g class="varbox"><rect x="{x0:.1f}" y="{MARGIN:.1f}" width="{w:.1f}" height="{h:.1f}" '
           f'rx="6" fill="#f6f8fa" stroke="#d1d9e0"/>'
           f'<text x="{x0 + 10:.1f}" y="{MARGIN + 15:.1f}" font-size="11" fill="#57606a">variables</text>']
    for i, (line, item) in enumerate(zip(lines, list(var_values) or [("", "", False)])):
        changed = item[2]
        out.append(f'<text class={attr("var" + (" changed" if changed else ""))} x="{x0 + 10:.1f}" '
                   f'y="{MARGIN + 35 + i * 20:.1f}" font-size="14" font-weight="{700 if changed else 400}" '
                   f'fill="{FIRED if changed else INK}">{esc(line)}</text>')
    out.append("</g>")
    return "".join(out), w + MARGIN


def draw_program(p: Program, *, uid: str = "g", role: str = "", title: str = "",
                 scale: float = 1.0, budget: DrawBudget | None = None) -> str:
    """One program, laid out on its own (raises :class:`TooBig` past the budget)."""
    return render_svg(layout_programs([p], budget), 0, uid=uid, role=role, title=title, scale=scale)


def draw_pair(original: Program, rewritten: Program, *, uid: str = "g",
              scale: float = 1.0, budget: DrawBudget | None = None) -> tuple[str, str, Diff, Layout]:
    """The original and its rewrite in one shared layout, the rewrite's
    changes highlighted (removed in the original's drawing, added in the
    rewrite's, modified in both).  Raises :class:`TooBig` past the budget."""
    layout = layout_programs([original, rewritten], budget)
    d = diff_programs(original, rewritten)
    a = render_svg(layout, 0, uid=f"{uid}o", role="original", marks=d.marks(0),
                   title="original program", scale=scale)
    b = render_svg(layout, 1, uid=f"{uid}r", role="rewritten", marks=d.marks(1),
                   title="rewritten program", scale=scale)
    return a, b, d, layout


def neighbourhood(original: Program, rewritten: Program, radius: int = 1) -> tuple[Program, Program, set[str]]:
    """The part of two programs around what the rewrite changed: the nodes
    added, removed or modified, the endpoints of the edges added or removed,
    and their neighbours up to `radius` edges away (in either program).
    Returns the two sub-programs (not valid programs: an input from a node
    left out points outside) and the names of the nodes left out.  This is
    how a page summarizes programs past the drawing budget."""
    d = diff_programs(original, rewritten)
    seeds = set(d.added_nodes) | d.removed_nodes | d.modified_nodes
    for e in [*d.added_edges.values(), *d.removed_edges.values()]:
        for v in (e.src, e.dst):
            if v is not None and v[0] == "n":
                seeds.add(v[1])
    adj: dict[str, set[str]] = {}
    for p in (original, rewritten):
        for e in program_edges(p):
            if e.src is not None and e.src[0] == "n" and e.dst[0] == "n":
                adj.setdefault(e.src[1], set()).add(e.dst[1])
                adj.setdefault(e.dst[1], set()).add(e.src[1])
    keep = set(seeds)
    frontier = set(seeds)
    for _ in range(radius):
        frontier = {w for v in frontier for w in adj.get(v, ())} - keep
        keep |= frontier

    def part(p: Program) -> Program:
        nodes = tuple(n for n in p.nodes if n.name in keep)
        outputs = {k: v for k, v in p.outputs.items() if v.node in keep}
        return p.replace(nodes=nodes, outputs=outputs)

    left_out = (set(original.node) | set(rewritten.node)) - keep
    return part(original), part(rewritten), left_out


def draw_pair_part(original: Program, rewritten: Program, *, uid: str = "g",
                   budget: DrawBudget | None = None) -> tuple[str, str, Layout, int]:
    """The neighbourhood of the changes (:func:`neighbourhood`) of two
    programs, drawn like :func:`draw_pair`; raises :class:`TooBig` when even
    that is past the budget.  Returns the two drawings, the layout and how
    many nodes were left out."""
    a, b, left_out = neighbourhood(original, rewritten)
    layout = layout_programs([a, b], budget)
    layout.outside = frozenset(left_out)
    d = diff_programs(a, b)
    sa = render_svg(layout, 0, uid=f"{uid}o", role="original", marks=d.marks(0),
                    title="original program, around the changes")
    sb = render_svg(layout, 1, uid=f"{uid}r", role="rewritten", marks=d.marks(1),
                    title="rewritten program, around the changes")
    return sa, sb, layout, len(left_out)


def legend_svg(uid: str = "legend") -> str:
    """A key to the notation: the three edge kinds, the stubs of input and
    output edges, and the highlights."""
    items = [("tensor edge", TENSOR, None), ("variable edge", VARIABLE, None),
             ("control edge", CONTROL, None), ("added by the rewrite", TENSOR, "added"),
             ("removed by the rewrite", TENSOR, "removed")]
    parts = []
    x = 6.0
    for text, kind, mark in items:
        colour, dash, sw = EDGE_STYLE[kind]
        if mark:
            colour = MARK_COLOUR[mark]
            parts.append(f'<path d="M{x},14 L{x + 40},14" stroke="{colour}" stroke-opacity="0.28" '
                         f'stroke-width="{sw + 6}"/>')
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<path d="M{x},14 L{x + 40},14" stroke="{colour}" stroke-width="{sw}"{dash_attr} '
                     f'marker-end="url(#{uid}-arr-{mark or kind})"/>')
        parts.append(f'<text x="{x + 48}" y="18" font-size="12" fill="{INK}">{esc(text)}</text>')
        x += 48 + len(text) * CHAR_W + 22
    for text, fill in (("$feed", "#fff8c5"), ("output", "#dafbe1")):
        w = len(text) * CHAR_W * 0.92 + 16
        parts.append(f'<rect x="{x:.1f}" y="4" width="{w:.1f}" height="20" rx="10" fill="{fill}" stroke="#8c959f"/>'
                     f'<text x="{x + w / 2:.1f}" y="18" font-size="11" text-anchor="middle" fill="{INK}">{esc(text)}</text>')
        label = "input edge" if text == "$feed" else "output edge"
        parts.append(f'<text x="{x + w + 6:.1f}" y="18" font-size="12" fill="{INK}">{label}</text>')
        x += w + 6 + len(label) * CHAR_W + 22
    return (f'<svg class="graph legend" viewBox="0 0 {x:.0f} 28" width="{x:.0f}" height="28" role="img" '
            f'aria-label="legend">{_markers(uid)}' + "".join(parts) + "</svg>")


# ---------------------------------------------------------------------------
# Large graphs: the part that matters, the rest folded by name scope


def name_prefix(names: Iterable[str], share: float = 0.4) -> str:
    """A scope most names start with (like `StatefulPartitionedCall/`), to be
    dropped when names are shown: the leading `/`-components shared by at
    least `share` of the names (one level: the next one, like `sgd/`, says
    what a node does); "" when there is none."""
    names = list(names)
    prefix = ""
    for _ in range(1):
        counts: dict[str, int] = {}
        for n in names:
            if n.startswith(prefix):
                head, sep, rest = n[len(prefix):].partition("/")
                if sep and rest:
                    counts[head] = counts.get(head, 0) + 1
        if not counts:
            break
        head, k = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if k < share * len(names) or k < 8:
            break
        prefix += head + "/"
    return prefix


def elide(text: str, limit: int) -> str:
    """Shorten to at most `limit` characters by eliding the middle (the end
    of a TensorFlow name is the op, the start its scope: both matter)."""
    if len(text) <= limit:
        return text
    tail = max(1, (limit - 1) * 3 // 5)
    return text[: limit - 1 - tail] + "…" + text[-tail:]


def short_name(name: str, prefix: str = "", limit: int = 24) -> str:
    """`name` without `prefix`, middle-elided to `limit` characters."""
    if prefix and name.startswith(prefix) and len(name) > len(prefix):
        name = name[len(prefix):]
    return elide(name, limit)


def scope_of(name: str, prefix: str = "") -> str:
    """The name scope a folded node goes into: its first `/`-component after
    `prefix` (`top-level` when it has no scope)."""
    if prefix and name.startswith(prefix):
        name = name[len(prefix):]
    head, sep, _ = name.partition("/")
    return head if sep else "top-level"


@dataclass
class Focus:
    """What a focus drawing shows: the nodes kept, the groups the rest is
    folded into (group vertex name -> member node names), the prefix dropped
    from names."""
    kept: set[str]
    groups: dict[str, list[str]]
    prefix: str


def focus_nodes(original: Program, rewritten: Program, seeds: Iterable[str],
                extra: Sequence[str] = (), max_nodes: int = 24) -> list[str]:
    """The nodes of a focus drawing, at most `max_nodes`: `seeds` first (what
    the rewrite changed), then the nodes nearest to them (in either program,
    edges taken both ways), then `extra` (the accesses on the counterexample's
    schedule) with what connects them to the seeds when room is left."""
    names = set(original.node) | set(rewritten.node)
    adj: dict[str, set[str]] = {}
    for p in (original, rewritten):
        for e in program_edges(p):
            if e.src is not None and e.src[0] == "n" and e.dst[0] == "n" and e.src != e.dst:
                adj.setdefault(e.src[1], set()).add(e.dst[1])
                adj.setdefault(e.dst[1], set()).add(e.src[1])
    order: list[str] = []
    seen: set[str] = set()

    def take(n: str) -> bool:
        if n in names and n not in seen and len(order) < max_nodes:
            seen.add(n)
            order.append(n)
        return len(order) < max_nodes

    for s in sorted(set(seeds) & names):
        take(s)
    # one hop around the seeds, then the extra accesses, then further hops
    frontier = list(order)
    for hop in range(3):
        nxt = []
        for v in frontier:
            if hop > 0 and len(adj.get(v, ())) > 6:
                continue    # a hub (a Var read by many, `_entry` feeding all) does not pull in its fan
            for w in sorted(adj.get(v, ()), key=lambda w: (len(adj.get(w, ())), w)):
                if w not in seen:
                    if not take(w):
                        return order
                    nxt.append(w)
        frontier = nxt
        if hop == 0:
            for x in extra:
                if not take(x):
                    return order
    return order


#: at most this many groups are drawn; the smallest scopes past it share one
MAX_GROUPS = 8
OTHER_SCOPES = "other scopes/…"


def group_names(names: Iterable[str], prefix: str, max_groups: int = MAX_GROUPS) -> dict[str, str]:
    """node -> the group it is folded into: `scope/…` for the largest
    `max_groups - 1` scopes, :data:`OTHER_SCOPES` for the rest (all scopes
    when there are at most `max_groups`)."""
    scope = {n: scope_of(n, prefix) + "/…" for n in names}
    sizes: dict[str, int] = {}
    for g in scope.values():
        sizes[g] = sizes.get(g, 0) + 1
    if len(sizes) > max_groups:
        big = set(sorted(sizes, key=lambda g: (-sizes[g], g))[: max_groups - 1])
        scope = {n: g if g in big else OTHER_SCOPES for n, g in scope.items()}
    return scope


def fold(p: Program, kept: set[str], group_of: Mapping[str, str]) -> tuple[Program, dict[str, list[str]]]:
    """`p` with only the `kept` nodes; an input from a folded node comes from
    its group (`group_of`, see :func:`group_names`); the inputs of a node
    from one group become one edge (a data edge if any of them is data).
    Returns the part and the groups (name -> members)."""
    groups: dict[str, list[str]] = {}
    for n in p.nodes:
        if n.name not in kept:
            groups.setdefault(group_of[n.name], []).append(n.name)
    nodes = []
    for n in p.nodes:
        if n.name not in kept:
            continue
        inputs = []
        from_groups: set[str] = set()
        for i in n.inputs:   # one edge per group: a data edge when any input is data
            g = group_of.get(i.node) if isinstance(i, (DataIn, ControlIn)) else None
            if g is None:
                inputs.append(i)
            elif g not in from_groups:
                from_groups.add(g)
                data = [j for j in n.inputs if isinstance(j, DataIn) and group_of.get(j.node) == g]
                inputs.append(DataIn(g, data[0].port) if data else ControlIn(g))
        nodes.append(n.replace(inputs=tuple(inputs)))
    outputs = {k: v for k, v in p.outputs.items() if v.node in kept}
    return p.replace(nodes=tuple(nodes), outputs=outputs), groups


def draw_pair_focus(original: Program, rewritten: Program, focus: Iterable[str], *,
                    extra: Sequence[str] = (), uid: str = "g", budget: DrawBudget | None = None,
                    max_nodes: int = 24) -> tuple[str, str, Layout, Focus]:
    """Two large programs drawn by what matters: the nodes in `focus` (what
    the rewrite changed), those around them and `extra` (the accesses on the
    counterexample's schedule), at most `max_nodes` in all; every other node
    is folded into a group per name scope, drawn as one box with its count
    where an edge comes from it.  Names lose their common prefix and are
    middle-elided; the whole name is each element's `<title>`.  The vertices
    drawn stay under `max_nodes` plus the groups and stubs whatever the
    programs' size."""
    prefix = name_prefix([n.name for n in original.nodes] + [n.name for n in rewritten.nodes])
    kept = set(focus_nodes(original, rewritten, focus, extra, max_nodes))
    group_of = group_names((set(original.node) | set(rewritten.node)) - kept, prefix)
    sizes: dict[str, int] = {}
    for g in group_of.values():
        sizes[g] = sizes.get(g, 0) + 1
    # a group of one is that node, drawn as a dashed "… name" stub
    group_of = {n: n if sizes[g] == 1 else g for n, g in group_of.items()}
    a, ga = fold(original, kept, group_of)
    b, gb = fold(rewritten, kept, group_of)
    groups = {g: sorted(set(ga.get(g, [])) | set(gb.get(g, []))) for g in set(ga) | set(gb)}
    layout = layout_programs([a, b], budget)
    layout.outside = frozenset(groups)
    layout.groups = {g: m for g, m in groups.items() if m != [g]}
    layout.prefix = prefix
    d = diff_programs(a, b)
    sa = render_svg(layout, 0, uid=f"{uid}o", role="original", marks=d.marks(0),
                    title="original program, the part that matters", css_class="program-graph focus")
    sb = render_svg(layout, 1, uid=f"{uid}r", role="rewritten", marks=d.marks(1),
                    title="rewritten program, the part that matters", css_class="program-graph focus")
    return sa, sb, layout, Focus(kept, groups, prefix)
