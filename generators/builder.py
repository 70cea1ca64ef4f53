"""Random valid programs, built bottom-up against the `Draw` interface.

One builder serves both the Hypothesis strategy (`strategies.programs`) and
the seeded generator (`strategies.random_programs`, `tfsem generate`).

Valid by construction: nodes are added in topological order, and every input
is chosen from what already exists (an earlier node's output port of the
right kind, or a feed).  Inputs are picked by position in the list of
existing ports, so deleting an earlier node (which is what shrinking does)
leaves every later choice valid, and names are given in order of creation.

Swarm testing: each program first draws which features it may use (control
edges, input control edges, 1-D tensors, fan-out, several variables, mixed
dtypes, and each operation kind); a disabled feature is absent from the whole
program.  Published results (Groce et al., "Swarm Testing", ISSTA 2012) show
that this finds more distinct bugs than always enabling everything.

Races on purpose: about half of the nodes access a variable, there are few
variables (1 to 3), an access often shares an existing `Var` handle, and half of the
programs end with a planted race (an access unordered with an earlier
conflicting one), so that most programs have two unordered accesses to one
variable, at least one a write.  No program is ever filtered out.

Shrinking: each node is one span whose simplest first choice means "skip
this node" (see `draw.py`), so the shrinker deletes nodes one by one; the
simplest other choices mean: stop, Read, share the first Var handle, take the
first port, scalar, value 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, FeedControlIn, FeedIn,
                                  Input, Node, Program, TensorType)
from tfsem.oracle.values import DTYPES, FLOAT_DTYPES, UNSIGNED_DTYPES, Tensor, Value, edge_values

from .draw import PERCENT, Draw, boolean, choice, flag
from .races import accesses, has_race

#: Nodes kept free for planting a race (Var, Write, Var, Read).
_PLANT_ROOM = 4

Shape = tuple[int, ...] | None          # None: unknown (an error, or a user function)
Want = Callable[[Shape], bool]

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).smallest_subnormal)

#: Small values first (the shrinker moves towards the start of each list).
SMALL_INTS = (0, 1, 2, 3, 5, 7, -1, -2, -3, 4, 6)
EDGE_INTS = (0, -1, 1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 2 ** 32)
SMALL_FLOATS = (0.0, 1.0, 2.0, 0.5, 3.0, -1.0, -2.0, 1.5, -0.5, 4.0)
EDGE_FLOATS = (0.0, -0.0, math.nan, math.inf, -math.inf, FLOAT32_MAX, -FLOAT32_MAX,
               FLOAT32_TINY, 1e-3)

#: 1-D shapes a program may use (lengths <= 4; even ones first, for Split).
VECTOR_SHAPES: tuple[tuple[int, ...], ...] = ((2,), (4,), (1,), (3,))

#: Language operations, beside the registry's functions.  "Assign" stands for
#: Assign-f with every assignable f but Snd; "Write" is Assign-Snd.
ACCESS_OPS = ("Read", "Write", "Assign", "Var")

#: Functions the builder knows the shapes of; others get "unknown" shapes.
_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Max", "Min"})
_UNARY_SAME = frozenset({"Identity", "Neg"})
_NEEDS_VECTORS = frozenset({"Concat", "Split"})


def _any(_: Shape) -> bool:
    return True


def _one_d(s: Shape) -> bool:
    return s is None or len(s) == 1


def _even_one_d(s: Shape) -> bool:
    return s is None or (len(s) == 1 and s[0] % 2 == 0)


def _compatible(first: Shape) -> Want:
    """Shapes that broadcast with `first` without changing it (same or scalar)."""
    return lambda s: s is None or first is None or s == () or s == first


def _exactly(shape: Shape) -> Want:
    return lambda s: s is None or shape is None or s == shape


def _broadcast(a: Shape, b: Shape) -> Shape:
    if a is None or b is None:
        return None
    if a == b or b == ():
        return a
    if a == ():
        return b
    return None


@dataclass(frozen=True)
class Config:
    """What `programs()` may build; see its docstring."""
    max_nodes: int = 12
    min_nodes: int = 1
    n_variables: int | None = None
    ops: frozenset[str] | None = None
    dtype: str = "int64"
    control_density: float = 0.3
    observe_state: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.max_nodes, int) or self.max_nodes < 1:
            raise ValueError(f"max_nodes must be a positive integer, got {self.max_nodes!r}")
        if not isinstance(self.min_nodes, int) or not 0 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"min_nodes must be in [0, max_nodes], got {self.min_nodes!r}")
        if self.n_variables is not None and (not isinstance(self.n_variables, int)
                                             or self.n_variables < 0):
            raise ValueError(f"n_variables must be None or >= 0, got {self.n_variables!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if not 0 <= self.control_density <= 1:
            raise ValueError(f"control_density must be in [0, 1], got {self.control_density!r}")
        if self.ops is not None:
            object.__setattr__(self, "ops", frozenset(self.ops))
            unknown = sorted(o for o in self.ops if not _known_op(o))
            if unknown:
                raise ValueError(f"unknown operation(s) {unknown}: use registered function names, "
                                 f"{', '.join(ACCESS_OPS)}, or Assign<F> (e.g. AssignAdd)")
            if self.n_variables == 0 and not any(fns.lookup(o) and o in generatable_functions()
                                                 for o in self.ops) and self.min_nodes > 0:
                raise ValueError(f"ops {sorted(self.ops)} without variables leave no node to build")

    def p_more(self, size: int) -> float:
        """Chance of adding one more node to a program of `size` nodes.  Chosen
        so that the number of nodes drawn is about uniform over
        [min_nodes, max_nodes] (an access may add its Var too): small programs
        are not over-represented, and large ones are not all at the cap."""
        return 1 - 1 / (self.max_nodes - size + 1)


def _known_op(name: str) -> bool:
    if name in ACCESS_OPS:
        return True
    if name.startswith("Assign") and name != "Assign":
        f = fns.lookup(name[len("Assign"):])
        return f is not None and f.assignable
    return fns.lookup(name) is not None


def generatable_functions() -> list[str]:
    """Registry functions the builder can make nodes of: those whose attributes
    it knows how to draw (only Const's `value`), in registration order."""
    return [name for name, f in fns.registered().items() if set(f.attrs) <= {"value"}]


def assign_function_names() -> list[str]:
    """Assignable functions, Snd (Write) excluded, sorted."""
    return [f for f in fns.assign_functions() if f != "Snd"]


def _enabled(cfg: Config, name: str, parent: str | None = None) -> bool:
    return cfg.ops is None or name in cfg.ops or (parent is not None and parent in cfg.ops)


@dataclass
class _Port:
    ref: DataIn
    shape: Shape
    dtype: str


@dataclass
class _Features:
    """One program's swarm: what it may use."""
    control: bool
    feed_control: bool
    vectors: bool
    fanout: bool
    mixed_dtype: bool
    kinds: list[str]      # weighted node kinds: "Read", "Write", "Assign:F", "Var", functions
    plant_race: bool = False

    @property
    def writes(self) -> list[str]:
        return list(dict.fromkeys(k for k in self.kinds if k == "Write" or k.startswith("Assign:")))


#: Weights of node kinds: accesses (Read, Write, Assign-f, a standalone Var)
#: make about half of the nodes; among functions Const counts double.
_WEIGHTS = {"Read": 6, "Write": 4, "Assign": 1, "Var": 2, "Const": 2}
#: Control inputs a node may take from earlier nodes.
_MAX_CONTROLS = 3
#: Spans drawn at most per allowed node (skipped spans do not add one).
_MAX_STEPS = 3


def _is_access(kind: str) -> bool:
    return kind in ("Read", "Write", "Var") or kind.startswith("Assign:")


class ProgramBuilder:
    """Builds one program from the choices of a Draw.

    Each node is one span of a few choices; a node draws the same choices
    whether or not a feature is on, so that the shrinker can delete nodes and
    switch features off without shifting the choices of the nodes after it.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.nodes: list[Node] = []
        self.access_names: list[str] = []
        self.ports: list[_Port] = []                 # tensor output ports
        self.consumed: set[DataIn] = set()           # ports used (fan-out off)
        self.var_nodes: dict[str, list[str]] = {}    # variable -> its Var nodes
        self.variables: dict[str, TensorType] = {}
        self.feeds: dict[str, TensorType] = {}
        self.outputs: dict[str, DataIn] = {}
        self.limit = cfg.max_nodes

    # -- the whole program ----------------------------------------------------

    def build(self, d: Draw) -> Program:
        cfg = self.cfg
        self.f, n_vars = self._features(d)
        if cfg.n_variables is not None:
            n_vars = cfg.n_variables
        elif not any(_is_access(k) for k in self.f.kinds):
            n_vars = 0
        for k in range(n_vars):
            self.variables[f"x{k}"] = TensorType(cfg.dtype, self._shape(d, _any))
            self.var_nodes[f"x{k}"] = []
        # Planting a race needs up to 4 nodes (Var, Write, Var, Read): keep
        # them free while the rest of the program is drawn.
        plant = self.f.plant_race and bool(self.variables)
        self.limit = cfg.max_nodes - (_PLANT_ROOM if plant else 0)
        minimum = 0 if plant else cfg.min_nodes
        steps = 0
        while steps < _MAX_STEPS * cfg.max_nodes and d.span(lambda d: self._maybe_node(d, minimum)):
            steps += 1
        self.limit = cfg.max_nodes
        if plant:
            d.span(self._plant_race)
        while len(self.nodes) < cfg.min_nodes:      # skipped or planted nodes: top up
            self._node(d, choice(d, self.f.kinds))
        if not cfg.observe_state and not self.outputs and self.ports:
            # outputs only: a program that fetches nothing has one outcome
            self.outputs["out0"] = self.ports[-1].ref
        return Program(self.variables, tuple(self.nodes), self.outputs, self.feeds).validated()

    def _features(self, d: Draw) -> tuple[_Features, int]:
        """The swarm: feature flags, the number of variables, and each
        operation kind switched off in 25% of programs."""
        cfg = self.cfg
        control = not boolean(d, 0.2) and cfg.control_density > 0
        feed_control = boolean(d, 0.25)
        vectors = boolean(d, 0.35)
        fanout = not boolean(d, 0.25)
        mixed = boolean(d, 0.1)
        plant = boolean(d, 0.5)
        n_vars = 1 + d.index(3)
        candidates = ["Read", "Write", "Var"] + ["Assign:" + f for f in assign_function_names()] \
            + generatable_functions()
        off = {c for c in candidates if boolean(d, 0.25)}
        has_vars = cfg.n_variables != 0

        def allowed(kind: str) -> bool:
            if kind.startswith("Assign:"):
                return _enabled(cfg, "Assign" + kind[7:], "Assign")
            return _enabled(cfg, kind)

        def usable(kind: str) -> bool:
            needs_vectors = kind.split(":")[-1] in _NEEDS_VECTORS
            return allowed(kind) and (vectors or not needs_vectors) and (has_vars or not _is_access(kind))

        kinds = [k for k in candidates if usable(k) and k not in off]
        if has_vars and any(_is_access(k) for k in candidates if usable(k)) \
                and not any(k == "Write" or k.startswith("Assign:") for k in kinds):
            # keep races possible: a program with variables always writes
            kinds += [k for k in candidates if usable(k) and (k == "Write" or k.startswith("Assign:"))][:1]
        if not kinds:
            # the swarm switched everything off: allow what the parameters allow
            kinds = [k for k in candidates if usable(k)] or \
                [k for k in candidates if allowed(k) and (has_vars or not _is_access(k))]
        weighted = [k for k in kinds for _ in range(_WEIGHTS.get(k.split(":")[0], 1))]
        # Races on purpose: some programs end with an access that races with an
        # earlier one (see _plant_race); the others race or not by chance.
        plant = plant and cfg.max_nodes - _PLANT_ROOM >= cfg.min_nodes \
            and any(k == "Write" or k.startswith("Assign:") for k in kinds)
        features = _Features(control=control, feed_control=feed_control, vectors=vectors,
                             fanout=fanout, mixed_dtype=mixed, kinds=weighted, plant_race=plant)
        return features, n_vars

    # -- one node -------------------------------------------------------------

    def _maybe_node(self, d: Draw, minimum: int) -> bool:
        """Maybe add a node; False to stop.  One span holds the node's choices;
        its first choice is "skip" (0, the simplest: the shrinker deletes a
        node by making its span trivial) or "go on?" (a percentage)."""
        first = d.index(1 + PERCENT)
        if first == 0:
            return True                                   # skipped
        if len(self.nodes) >= self.limit:
            # Full: stop.  The choice is still drawn, and skipping still goes
            # on, so that the shrinker keeps it at "stop" (skipping would read
            # past the end) and deleting an earlier node leaves a program
            # that stops here rather than one that wants more choices.
            return False
        if len(self.nodes) >= minimum and not flag(first - 1, self.cfg.p_more(len(self.nodes))):
            return False
        self._node(d, choice(d, self.f.kinds))
        return True

    def _node(self, d: Draw, kind: str) -> None:
        if _is_access(kind):
            self._access(d, kind)
        else:
            self._function(d, kind)

    def _name(self, prefix: str) -> str:
        return f"{prefix}{len(self.nodes)}"

    def _access(self, d: Draw, kind: str) -> None:
        """Add a Read, Write, Assign-f or a standalone Var (an access comes
        with a Var node of its own, or shares one)."""
        if kind == "Var":
            x = choice(d, list(self.variables))
            name = self._name("v")
            self.nodes.append(Node(name, VAR, tuple(self._tail(d, name, ())[0]), {"var": x}))
            self.var_nodes[x].append(name)
            return
        found = self._handle(d)
        if found is None:
            return
        x, handle = found
        self._add_access(d, kind, x, handle)

    def _add_access(self, d: Draw, kind: str, x: str, handle: DataIn,
                    exclude: frozenset[str] = frozenset(), controls: bool = True) -> str:
        """Add a Read, Write or Assign-f of x through `handle`; its value input
        comes from no node of `exclude`; returns its name."""
        vtype = self.variables[x]
        if kind == "Read":
            name = self._name("r")
            ctrl, fetch = self._tail(d, name, [vtype.shape], controls, fetch_p=0.5)
            self.nodes.append(Node(name, READ, (handle, *ctrl)))
            self.access_names.append(name)
            self._produced(name, [vtype.shape], vtype.dtype, fetch)
            return name
        fn = "Snd" if kind == "Write" else kind.split(":")[1]
        if fn == "Snd":
            want = _exactly(vtype.shape)
        elif fn == "Concat":
            want = _one_d
        else:
            want = _compatible(vtype.shape)
        value, _ = self._tensor(d, want, exclude)
        name = self._name("w" if fn == "Snd" else "a")
        ctrl, _ = self._tail(d, name, (), controls)
        self.nodes.append(Node(name, ASSIGN, (handle, value, *ctrl), {"fn": fn}))
        self.access_names.append(name)
        return name

    def _handle(self, d: Draw, x: str | None = None, exclude: frozenset[str] = frozenset()
                ) -> tuple[str, DataIn] | None:
        """A variable and a variable edge for it, in one choice: an existing
        Var node's port (the simplest choice: it shrinks to fewer nodes; not
        one of `exclude`), or a new Var node of some variable (of x if given).
        None when there is no room for a new Var and none to share."""
        names = [x] if x is not None else list(self.variables)
        existing = [v for y in names for v in self.var_nodes[y] if v not in exclude
                    and (self.f.fanout or DataIn(v) not in self.consumed)]
        room = len(self.nodes) + 2 <= self.limit
        fresh = boolean(d, 0.6)
        which = d.index(max(len(existing), len(names)))
        if existing and (not room or not fresh):
            name = existing[which % len(existing)]
            y = self.node_of(name).var
        elif room:
            y = names[which % len(names)]
            name = self._name("v")
            self.nodes.append(Node(name, VAR, (), {"var": y}))
            self.var_nodes[y].append(name)
        else:
            # no room for the access and a Var of its own: a handle alone
            y = names[which % len(names)]
            self.nodes.append(Node(self._name("v"), VAR, (), {"var": y}))
            self.var_nodes[y].append(self.nodes[-1].name)
            return None
        ref = DataIn(name)
        self.consumed.add(ref)
        return y, ref

    def node_of(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def _function(self, d: Draw, op: str) -> None:
        fn = fns.get(op)
        args: list[Input] = []
        shapes: list[Shape] = []
        dtypes: list[str] = []
        for i in range(fn.n_in):
            inp, port = self._tensor(d, self._want(op, i, shapes))
            args.append(inp)
            shapes.append(port[0])
            dtypes.append(port[1])
        attrs = {}
        if op == "Const":
            shape = self._shape(d, _any)
            attrs["value"] = draw_value(d, self.cfg.dtype, shape, edge_p=0.1)
            out_shapes: list[Shape] = [shape]
        else:
            out_shapes = _infer(op, shapes, fn.n_out)
        name = self._name(op.lower())
        ctrl, fetch = self._tail(d, name, out_shapes, fetch_p=0.25)
        self.nodes.append(Node(name, op, (*args, *ctrl), attrs))
        dtype = dtypes[0] if dtypes and len(set(dtypes)) == 1 else self.cfg.dtype
        self._produced(name, out_shapes, dtype, fetch)

    @staticmethod
    def _want(op: str, i: int, shapes: Sequence[Shape]) -> Want:
        if op == "Concat":
            return _one_d
        if op == "Split":
            return _even_one_d
        if i == 1 and (op in _ELEMENTWISE):
            return _compatible(shapes[0])
        return _any

    def _produced(self, name: str, shapes: Sequence[Shape], dtype: str,
                  fetch: Sequence[bool]) -> None:
        """Register a node's tensor outputs, fetching the ones chosen."""
        for port, shape in enumerate(shapes):
            ref = DataIn(name, port)
            self.ports.append(_Port(ref, shape, dtype))
            if fetch[port]:
                self.outputs[f"out{len(self.outputs)}"] = ref
                if not self.f.fanout:
                    self.consumed.add(ref)

    def _tail(self, d: Draw, name: str, out_shapes: Sequence[Shape], controls: bool = True,
              fetch_p: float = 0.25) -> tuple[list[Input], list[bool]]:
        """A node's control inputs (from earlier nodes, accesses favoured; and
        ^$go) and which of its outputs are fetched.  The choices are drawn
        even where control edges are switched off."""
        if not self.cfg.observe_state:
            fetch_p = min(1.0, fetch_p + 0.2)
        density = self.cfg.control_density or 0.3
        out: list[Input] = []
        allowed = controls and self.f.control and self.nodes
        for _ in range(_MAX_CONTROLS):
            if not boolean(d, density):
                break
            from_access = boolean(d, 0.5)
            pick = d.index(max(1, len(self.nodes)))
            if not allowed:
                continue
            pool = self.access_names if self.access_names and from_access \
                else [n.name for n in self.nodes]
            src = ControlIn(pool[pick % len(pool)])
            if src not in out:
                out.append(src)
        if boolean(d, 0.2) and controls and self.f.feed_control:
            out.append(FeedControlIn("go"))
        return out, [boolean(d, fetch_p) for _ in out_shapes]

    def _plant_race(self, d: Draw) -> None:
        """Make sure the program has a race: unless it has one already, add an
        access to some variable that is unordered with an earlier access to
        it (a Write or Assign when that one is a Read), or, when there is no
        access yet, a Write or Assign and a second access of one variable.
        The new access takes no control input and no value computed after the
        earlier access, so nothing orders the two (later nodes cannot add
        edges into them)."""
        sofar = Program(self.variables, tuple(self.nodes), {}, self.feeds)
        if has_race(sofar):
            return
        writes = self.f.writes
        found = accesses(sofar)
        pick = d.index(max(1, len(found)))
        second = d.index(1 + len(writes))
        if found:
            first, x, first_writes = found[pick]
        else:
            x, handle = self._handle(d)
            first = self._add_access(d, choice(d, writes), x, handle, controls=False)
            first_writes = True
        after = _descendants(Program(self.variables, tuple(self.nodes), {}, self.feeds), first)
        # only the operations the caller allowed (a Read only if `ops` has it)
        kinds = (["Read"] if first_writes and _enabled(self.cfg, "Read") else []) + writes
        if not kinds:
            return
        kind = kinds[second % len(kinds)]
        _, handle = self._handle(d, x, exclude=after)
        self._add_access(d, kind, x, handle, exclude=after, controls=False)

    # -- inputs ---------------------------------------------------------------

    def _tensor(self, d: Draw, want: Want, exclude: frozenset[str] = frozenset()
                ) -> tuple[Input, tuple[Shape, str]]:
        """A tensor input: an existing port (mostly of a wanted shape; not of a
        node in `exclude`) or a feed (an existing one, or a new one of a
        wanted shape)."""
        usable = [p for p in self.ports if p.ref.node not in exclude
                  and (self.f.fanout or p.ref not in self.consumed)]
        wanted = [p for p in usable if want(p.shape)] or usable
        feeds = [f for f, t in self.feeds.items() if want(t.shape)]
        if boolean(d, 0.6) and wanted:
            port = choice(d, wanted)
            self.consumed.add(port.ref)
            return port.ref, (port.shape, port.dtype)
        new_feed = boolean(d, 0.35)
        pick = d.index(max(1, len(feeds)))
        if feeds and not new_feed:
            name = feeds[pick]
        else:
            dtype = self.cfg.dtype
            if boolean(d, 0.3) and self.f.mixed_dtype:
                dtype = "float32" if dtype == "int64" else "int64"
            name = f"f{len(self.feeds)}"
            self.feeds[name] = TensorType(dtype, self._shape(d, want))
        t = self.feeds[name]
        return FeedIn(name), (t.shape, t.dtype)

    def _shape(self, d: Draw, want: Want) -> tuple[int, ...]:
        vector = boolean(d, 0.4)
        return self._pick_shape(want, vector, d.index(len(VECTOR_SHAPES)))

    def _pick_shape(self, want: Want, vector: bool, pick: int) -> tuple[int, ...]:
        """Scalars mostly; 1-D of length <= 4 when the program uses vectors."""
        vectors = [s for s in VECTOR_SHAPES if want(s)] if self.f.vectors else []
        if want(()) and (not vectors or not vector):
            return ()
        return vectors[pick % len(vectors)] if vectors else (2,)


def _descendants(p: Program, name: str) -> frozenset[str]:
    """`name` and every node a path of edges leads to from it."""
    out = {name}
    for n in p.topological_order:
        if any(q in out for q in p.predecessors(n)):
            out.add(n)
    return frozenset(out)


def _infer(op: str, shapes: Sequence[Shape], n_out: int) -> list[Shape]:
    """Output shapes of a function node, as far as the builder can tell."""
    if op in _UNARY_SAME:
        return [shapes[0]]
    if op == "Copy":
        return [shapes[0], shapes[0]]
    if op in _ELEMENTWISE:
        return [_broadcast(shapes[0], shapes[1])]
    if op == "Snd":
        return [shapes[1]]
    if op == "Concat":
        a, b = shapes
        return [(a[0] + b[0],) if a is not None and b is not None and len(a) == len(b) == 1 else None]
    if op == "Split":
        (a,) = shapes
        ok = a is not None and len(a) == 1 and a[0] % 2 == 0
        return [(a[0] // 2,) if ok else None] * 2
    return [None] * n_out


# ---------------------------------------------------------------------------
# Values and inputs


def _values_of(dtype: str) -> tuple[tuple, tuple]:
    """(small values, edge values) of a dtype, small first (the shrinker
    moves towards the start of each list)."""
    if dtype == "float32":
        return SMALL_FLOATS, EDGE_FLOATS
    if dtype == "int64":
        return SMALL_INTS, EDGE_INTS
    edges = tuple(edge_values(dtype).tolist())   # NaN, +-0, +-inf, subnormals, extremes
    if dtype == "bool":
        return (False, True), edges
    if dtype in FLOAT_DTYPES:
        return SMALL_FLOATS, edges
    if dtype in UNSIGNED_DTYPES:
        return tuple(x for x in SMALL_INTS if x >= 0), edges
    return SMALL_INTS, edges


def draw_scalar(d: Draw, dtype: str, edge_p: float) -> float | int | bool:
    """One element: small, or with chance edge_p an edge value."""
    small, edge = _values_of(dtype)
    return choice(d, edge) if boolean(d, edge_p) else choice(d, small)


def draw_value(d: Draw, dtype: str, shape: tuple[int, ...], edge_p: float = 0.2) -> Tensor:
    """A tensor of the given type: small values, sometimes an edge value
    (0, -1, integer extremes; -0.0, NaN, infinities, the largest floats and
    the subnormals of the dtype)."""
    size = math.prod(shape)
    elems = [draw_scalar(d, dtype, edge_p) for _ in range(size)]
    return Tensor(np.array(elems, dtype=np.float64 if dtype in FLOAT_DTYPES else DTYPES[dtype])
                  .astype(DTYPES[dtype]).reshape(shape), dtype)


def build_inputs(d: Draw, p: Program, uninitialized_p: float = 0.15,
                 edge_p: float = 0.2) -> tuple[dict[str, Value], dict[str, Value]]:
    """σ for p: a value for every feed of its declared type, and an initial
    value for each variable except the ones left uninitialized."""
    feeds = {}
    for name in p.feed_names:
        t = p.feed_type(name)
        feeds[name] = draw_value(d, t.dtype, t.shape, edge_p)
    init = {}
    for x, t in p.variables.items():
        if boolean(d, uninitialized_p):
            continue
        init[x] = draw_value(d, t.dtype, t.shape, edge_p)
    return feeds, init


def build_program(d: Draw, cfg: Config) -> Program:
    return ProgramBuilder(cfg).build(d)


def op_kind(node: Node) -> str:
    """The operation kind a node counts as in statistics: Var, Read, Write,
    Assign<F>, or the function's name."""
    if node.op == ASSIGN:
        return "Write" if node.fn == "Snd" else "Assign" + node.fn
    return node.op


def all_op_kinds(ops: Iterable[str] | None = None) -> list[str]:
    """Every operation kind the builder may produce (for coverage checks)."""
    kinds = ["Var", "Read", "Write"] + ["Assign" + f for f in assign_function_names()]
    kinds += generatable_functions()
    return kinds if ops is None else [k for k in kinds if k in ops]
