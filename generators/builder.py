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
variables (1 to 3, the first one favoured by shrinking), and an access reuses
an existing `Var` handle or makes its own, so two accesses to one variable, at
least one a write, are often unordered.  No program is ever filtered out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, FeedControlIn, FeedIn,
                                  Input, Node, Program, TensorType)
from tfsem.oracle.values import Tensor, Value

from .draw import Draw, choice
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
        if self.dtype not in ("int64", "float32"):
            raise ValueError(f"dtype must be 'int64' or 'float32', got {self.dtype!r}")
        if not 0 <= self.control_density <= 1:
            raise ValueError(f"control_density must be in [0, 1], got {self.control_density!r}")
        if self.ops is not None:
            object.__setattr__(self, "ops", frozenset(self.ops))
            unknown = sorted(o for o in self.ops if not _known_op(o))
            if unknown:
                raise ValueError(f"unknown operation(s) {unknown}: use registered function names, "
                                 f"{', '.join(ACCESS_OPS)}, or Assign<F> (e.g. AssignAdd)")

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
    access_kinds: list[str]            # weighted: Read, Write, Assign, Var (repeats)
    assign_fns: list[str]
    functions: list[str]               # weighted: Const twice
    plant_race: bool = False


class ProgramBuilder:
    """Builds one program from the choices of a Draw."""

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

    # -- the whole program ----------------------------------------------------

    def build(self, d: Draw) -> Program:
        cfg = self.cfg
        self.f = self._features(d)
        n_vars = cfg.n_variables if cfg.n_variables is not None else 1 + d.index(3)
        if not self.f.access_kinds:
            n_vars = cfg.n_variables or 0
        for k in range(n_vars):
            self.variables[f"x{k}"] = TensorType(cfg.dtype, self._shape(d, _any))
            self.var_nodes[f"x{k}"] = []
        # Planting a race needs up to 4 nodes (Var, Write, Var, Read): keep
        # them free while the rest of the program is drawn.
        self.limit = cfg.max_nodes - (_PLANT_ROOM if self.f.plant_race else 0)
        while len(self.nodes) < self.limit:
            if len(self.nodes) >= cfg.min_nodes and not d.boolean(cfg.p_more(len(self.nodes))):
                break
            d.span(self._node)
        self.limit = cfg.max_nodes
        if self.f.plant_race:
            d.span(self._plant_race)
        if not cfg.observe_state and not self.outputs and self.ports:
            # outputs only: a program that fetches nothing has one outcome
            self.outputs["out0"] = self.ports[-1].ref
        return Program(self.variables, tuple(self.nodes), self.outputs, self.feeds).validated()

    def _features(self, d: Draw) -> _Features:
        cfg = self.cfg
        control = cfg.control_density > 0 and not d.boolean(0.2)
        feed_control = d.boolean(0.25)
        vectors = d.boolean(0.35)
        fanout = not d.boolean(0.25)
        mixed = d.boolean(0.1)
        has_vars = cfg.n_variables != 0

        def on(name: str, parent: str | None = None) -> bool:
            # each operation kind is switched off in 20% of programs
            return _enabled(cfg, name, parent) and not d.boolean(0.2)

        assign_fns = [f for f in assign_function_names()
                      if on("Assign" + f, "Assign") and (vectors or f not in _NEEDS_VECTORS)]
        access: list[str] = []
        if has_vars:
            weights = {"Read": 3, "Write": 2, "Assign": 2, "Var": 1}
            for kind, w in weights.items():
                if kind == "Assign" and not assign_fns:
                    continue
                if kind != "Assign" and not on(kind):
                    continue
                access += [kind] * w
            if not any(k in ("Write", "Assign") for k in access):
                # keep races possible: a program with variables always writes
                allowed = [f for f in assign_function_names()
                           if _enabled(cfg, "Assign" + f, "Assign")
                           and (vectors or f not in _NEEDS_VECTORS)]
                if _enabled(cfg, "Write"):
                    access += ["Write"] * 2
                elif allowed:
                    assign_fns = allowed[:1]
                    access += ["Assign"] * 2
        functions: list[str] = []
        for name in generatable_functions():
            if on(name) and (vectors or name not in _NEEDS_VECTORS):
                functions += [name] * (2 if name == "Const" else 1)
        if not functions and not access:
            # everything switched off: fall back to the first allowed function
            allowed = [n for n in generatable_functions() if _enabled(cfg, n)]
            functions = allowed[:1] or ["Const"]
        # Races on purpose: some programs end with an access that races with an
        # earlier one (see _plant_race); the others race or not by chance.
        plant = (cfg.max_nodes - _PLANT_ROOM >= cfg.min_nodes and "Read" in access
                 and any(k in ("Write", "Assign") for k in access) and d.boolean(0.4))
        return _Features(control, feed_control, vectors, fanout, mixed, access, assign_fns,
                         functions, plant)

    # -- one node -------------------------------------------------------------

    def _node(self, d: Draw) -> None:
        f = self.f
        if f.access_kinds and (not f.functions or d.boolean(0.55)):
            kind = choice(d, f.access_kinds)
            if self._access(d, kind):
                return
        if f.functions:
            self._function(d, choice(d, f.functions))

    def _name(self, prefix: str) -> str:
        return f"{prefix}{len(self.nodes)}"

    def _access(self, d: Draw, kind: str) -> bool:
        """Add a Read, Write, Assign-f or Var; False if there is no room."""
        x = choice(d, list(self.variables))
        if kind == "Var":
            name = self._name("v")
            self.nodes.append(Node(name, VAR, tuple(self._controls(d)), {"var": x}))
            self.var_nodes[x].append(name)
            return True
        handle = self._handle(d, x)
        if handle is None:
            return False
        vtype = self.variables[x]
        if kind == "Read":
            name = self._name("r")
            self.nodes.append(Node(name, READ, (handle, *self._controls(d))))
            self.access_names.append(name)
            self._produced(d, name, [vtype.shape], vtype.dtype, fetch_p=0.5)
            return True
        fn = "Snd" if kind == "Write" else choice(d, self.f.assign_fns)
        if fn == "Snd":
            want = _exactly(vtype.shape)
        elif fn == "Concat":
            want = _one_d
        else:
            want = _compatible(vtype.shape)
        value, _ = self._tensor(d, want)
        name = self._name("w" if fn == "Snd" else "a")
        self.nodes.append(Node(name, ASSIGN, (handle, value, *self._controls(d)), {"fn": fn}))
        self.access_names.append(name)
        return True

    def _handle(self, d: Draw, x: str, exclude: frozenset[str] = frozenset()) -> DataIn | None:
        """A variable edge for x: an existing Var node's port (not one of
        `exclude`), or a new Var node; None when there is no room."""
        existing = [v for v in self.var_nodes[x] if v not in exclude
                    and (self.f.fanout or DataIn(v) not in self.consumed)]
        room = len(self.nodes) + 2 <= self.limit
        if existing and (not room or d.boolean(0.4)):
            ref = DataIn(choice(d, existing))
        elif room:
            name = self._name("v")
            self.nodes.append(Node(name, VAR, (), {"var": x}))
            self.var_nodes[x].append(name)
            ref = DataIn(name)
        else:
            return None
        self.consumed.add(ref)
        return ref

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
        self.nodes.append(Node(name, op, (*args, *self._controls(d)), attrs))
        dtype = dtypes[0] if dtypes and len(set(dtypes)) == 1 else self.cfg.dtype
        self._produced(d, name, out_shapes, dtype, fetch_p=0.25)

    @staticmethod
    def _want(op: str, i: int, shapes: Sequence[Shape]) -> Want:
        if op == "Concat":
            return _one_d
        if op == "Split":
            return _even_one_d
        if i == 1 and (op in _ELEMENTWISE):
            return _compatible(shapes[0])
        return _any

    def _produced(self, d: Draw, name: str, shapes: Sequence[Shape], dtype: str,
                  fetch_p: float) -> None:
        """Register a node's tensor outputs, and fetch some of them."""
        if not self.cfg.observe_state:
            fetch_p = min(1.0, fetch_p + 0.2)
        for port, shape in enumerate(shapes):
            ref = DataIn(name, port)
            self.ports.append(_Port(ref, shape, dtype))
            if d.boolean(fetch_p):
                self.outputs[f"out{len(self.outputs)}"] = ref
                if not self.f.fanout:
                    self.consumed.add(ref)

    def _plant_race(self, d: Draw) -> None:
        """Make sure the program has a race: unless it has one already, add an
        access to some variable that is unordered with an earlier access to
        it (a Write or Assign when that one is a Read), or, when there is no
        access yet, a Write and a Read of one variable.  The new access takes
        no control input and no value computed after the earlier access, so
        nothing orders the two (later nodes cannot add edges into them)."""
        sofar = Program(self.variables, tuple(self.nodes), {}, self.feeds)
        if has_race(sofar):
            return
        found = accesses(sofar)
        if found:
            first, x, first_writes = choice(d, found)
        else:
            x = choice(d, list(self.variables))
            handle = self._handle(d, x)
            value, _ = self._tensor(d, _exactly(self.variables[x].shape))
            first, first_writes = self._name("w"), True
            self.nodes.append(Node(first, ASSIGN, (handle, value), {"fn": "Snd"}))
            self.access_names.append(first)
        after = _descendants(Program(self.variables, tuple(self.nodes), {}, self.feeds), first)
        kinds = [k for k in ("Read", "Write", "Assign") if k in self.f.access_kinds
                 and (first_writes or k != "Read")]
        kind = choice(d, kinds)
        handle = self._handle(d, x, exclude=after)
        if handle is None:
            return
        vtype = self.variables[x]
        if kind == "Read":
            name = self._name("r")
            self.nodes.append(Node(name, READ, (handle,)))
            self._produced(d, name, [vtype.shape], vtype.dtype, fetch_p=0.5)
        else:
            fn = "Snd" if kind == "Write" else choice(d, self.f.assign_fns)
            want = _exactly(vtype.shape) if fn == "Snd" else _one_d if fn == "Concat" \
                else _compatible(vtype.shape)
            value, _ = self._tensor(d, want, exclude=after)
            name = self._name("w" if fn == "Snd" else "a")
            self.nodes.append(Node(name, ASSIGN, (handle, value), {"fn": fn}))
        self.access_names.append(name)

    # -- inputs ---------------------------------------------------------------

    def _tensor(self, d: Draw, want: Want, exclude: frozenset[str] = frozenset()
                ) -> tuple[Input, tuple[Shape, str]]:
        """A tensor input: an existing port (mostly of a wanted shape; not of a
        node in `exclude`) or a feed."""
        usable = [p for p in self.ports if p.ref.node not in exclude
                  and (self.f.fanout or p.ref not in self.consumed)]
        wanted = [p for p in usable if want(p.shape)] or usable
        if wanted and d.boolean(0.6):
            port = choice(d, wanted)
            self.consumed.add(port.ref)
            return port.ref, (port.shape, port.dtype)
        feeds = [f for f, t in self.feeds.items() if want(t.shape)]
        if feeds and not d.boolean(0.35):
            name = choice(d, feeds)
        else:
            dtype = self.cfg.dtype
            if self.f.mixed_dtype and d.boolean(0.3):
                dtype = "float32" if dtype == "int64" else "int64"
            name = f"f{len(self.feeds)}"
            self.feeds[name] = TensorType(dtype, self._shape(d, want))
        t = self.feeds[name]
        return FeedIn(name), (t.shape, t.dtype)

    def _shape(self, d: Draw, want: Want) -> tuple[int, ...]:
        """Scalars mostly; 1-D of length <= 4 when the program uses vectors."""
        vectors = [s for s in VECTOR_SHAPES if want(s)] if self.f.vectors else []
        if want(()) and (not vectors or not d.boolean(0.4)):
            return ()
        return choice(d, vectors) if vectors else (2,)

    def _controls(self, d: Draw) -> list[Input]:
        """Control inputs: from earlier nodes (accesses favoured), and ^$go."""
        out: list[Input] = []
        if self.f.control and self.nodes:
            density = self.cfg.control_density
            for _ in range(3):
                if not d.boolean(density):
                    break
                pool = self.access_names if self.access_names and d.boolean(0.5) \
                    else [n.name for n in self.nodes]
                src = ControlIn(choice(d, pool))
                if src not in out:
                    out.append(src)
        if self.f.feed_control and d.boolean(0.2):
            out.append(FeedControlIn("go"))
        return out


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


def draw_scalar(d: Draw, dtype: str, edge_p: float) -> float | int:
    if dtype == "float32":
        return choice(d, EDGE_FLOATS) if d.boolean(edge_p) else choice(d, SMALL_FLOATS)
    return choice(d, EDGE_INTS) if d.boolean(edge_p) else choice(d, SMALL_INTS)


def draw_value(d: Draw, dtype: str, shape: tuple[int, ...], edge_p: float = 0.2) -> Tensor:
    """A tensor of the given type: small values, sometimes an edge value
    (0, -1, int64 extremes; -0.0, NaN, infinities, float32 extremes)."""
    size = math.prod(shape)
    elems = [draw_scalar(d, dtype, edge_p) for _ in range(size)]
    return Tensor(np.array(elems, dtype=dtype).reshape(shape))


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
        if d.boolean(uninitialized_p):
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
