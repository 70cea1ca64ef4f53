"""Programs shaped like what TensorFlow's Grappler optimizers rewrite.

tfsem's general generator (`builder.py`) makes mostly racy Reads and Writes:
Grappler's dependency, arithmetic, constant-folding and remapper optimizers
find little in them to act on.  This generator builds programs out of
*motifs*, each a small subgraph of a shape one of these optimizers rewrites:

- ``arith``: arithmetic identities and simplifiable arithmetic (x*1, x+0,
  x-0, 0*x, Neg(Neg(x)), x-x, x+x, (x+c1)+c2, (x*c1)*c2, x+Neg(y),
  x-Neg(y), x*x, x*y+x*z, (a+b)+(c+d), Abs(Abs(x)), Relu(Relu(x)),
  Max(x, x), Neg(x-y), Cast(Cast(x)), x*1 and x+0 with a constant larger
  than x (constant folding makes them a BroadcastTo), and the exporter's
  other ops: SquaredDifference, Copy (IdentityN), Split(Concat(x, y)),
  Mean/Max/Min/Sum over a new axis, int64 MatMul of a row and a column);
- ``constant``: constant subgraphs (ops of Consts only, nested), broadcasting
  constants (Fill, ZerosLike, OnesLike), shapes (Reshape, Tile,
  ExpandDims/Squeeze, Sum), usually feeding a stateful op;
- ``control``: control dependencies between stateful ops (Assign -> ^Read,
  Read -> ^Assign) and chains of control edges through NoOp and Identity;
- ``group``: ``tf.group`` fan-in, a NoOp with control inputs from several
  Assigns, and nodes control-dependent on that NoOp;
- ``identity``: Identity chains (Identity of Identity of Read, an Identity
  on a control path);
- ``logic``: comparisons (Less, LessEqual, Greater, GreaterEqual, Equal,
  NotEqual), logical ops (LogicalNot, LogicalAnd, LogicalOr) and Select /
  SelectV2 on their results, casts (bool to numbers, numbers across dtypes
  and back), integer arithmetic on cast predicates, comparisons of constants
  (constant folding) and Select of one operand twice.

Edge-valued floats (``dtype="float32-edges"``): float32 programs whose feeds
are float32 themselves, so that σ carries NaN, infinities, signed zeros,
subnormals and the largest floats (`edge_inputs` draws them half of the
time), with int64 feeds beside them.  Only ops that TensorFlow's CPU kernels
run without flushing subnormals touch the floats (comparisons, whose
denormals-are-zero the models include; Select, Identity, Neg, Abs, Cast), so
the export imports back with no ``X.ftz`` and the Grappler target checks it;
integer arithmetic runs on what casts and comparisons give.  Constants are
edge values too.

Optimizer programs (``dtype="float32-nn"``, `optimizer_strategy` and its
mixes `remap_strategy`, `shape_strategy`, `pruning_strategy`,
`debug_stripper_strategy`): the edge-valued float32 feeds and constants of
"float32-edges", with the families ``remap`` (MatMul or Conv2D + BiasAdd +
an activation, Conv2D + FusedBatchNormV3, FusedBatchNormV3 + an
activation), ``shape`` (Prod(Shape(x)), Size, Rank, ShapeN) and ``prune``
(Identity, StopGradient, PreventGradient, Snapshot, AddN of one input,
CheckNumerics), besides control, identity and logic.  TensorFlow ops tfsem
has no function of its own for are written as the uninterpreted
``tf.OP/N/M`` the exporter writes back as OP; the Grappler target judges
the export imported back, where they are the registry's models or
TensorFlow's kernels.  `optimizer_patterns(program)` finds each
optimizer's pattern (docs/grappler-findings.md, section 5).

Every program uses only what the exporter writes (graphdef/exporter.py) and
what imports back without a flush-to-zero (``X.ftz``) or uninterpreted
(``tf.*``) function: the Grappler target (campaigns/tensorflow_target.py)
passes any other program through unchanged.

Floats.  TensorFlow's CPU kernels flush subnormals, so a float32 program
imports back with ``Add.ftz`` and friends, and the target skips it.  With
``dtype="float32"`` this generator makes programs whose float values are
*integer-valued* (or +-inf, NaN) for every σ: feeds are int64 and enter the
float world through a Cast, constants are small integers, the float
operations are those closed over integer-valued floats (Add, Sub, Mul, Neg,
Abs, Max, Min, Square, Relu, Identity, Fill, ZerosLike, OnesLike, ...), and
every access to a float variable is ordered after a Write of an
integer-valued value (so the initial value, which σ chooses freely, is never
read).  An integer-valued float is never subnormal, and neither is any sum,
difference or product of two of them (it is an integer, an infinity or a
NaN), so on these programs ``X.ftz`` and ``X`` agree everywhere.
`subnormal_free(program)` decides this property for any program (the
argument is written beside it); the Grappler target may use it to accept
such float programs (today it does not: see the report of issue 15).

Entry points:

- `strategy(max_nodes, observe)`: a Hypothesis strategy of (program, feeds,
  init), the campaign generator interface of campaigns/loop.py::

      tfsem fuzz --pass grappler:arithmetic --generator tfsem.generators.grappler:strategy

- `build(d, max_nodes, dtype, observe_state)`: one program from any `Draw`
  (`RandomDraw` for seeded files: `random_programs`, ``tfsem generate
  --shape grappler``);
- `shape_families(program)`: which motif shapes a program contains, found
  structurally (for statistics and tests).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
import numpy as np

from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Input, Node,
                                  Program, TensorType)
from tfsem.oracle.opdefs.nn import FUSED_ACTIVATIONS
from tfsem.oracle.values import Tensor

from .builder import EDGE_INTS, build_inputs
from .draw import Draw, HypothesisDraw, RandomDraw, boolean, choice

#: The motif families (see the module docstring).
FAMILIES = ("arith", "constant", "control", "group", "identity", "logic")
#: the families of "float32-edges" programs (the others compute float arithmetic)
EDGE_FAMILIES = ("control", "group", "identity", "logic")

#: the families of "float32-nn" programs (optimizer_strategy): what the
#: optimizers without a campaign before act on
NN_FAMILIES = ("remap", "shape", "prune", "control", "identity", "logic")

#: Smallest max_nodes that leaves room for one motif besides the Var nodes.
MIN_NODES = 4

#: Attempts at adding a motif per program (a motif that does not fit is dropped).
_MAX_MOTIFS = 12

#: Weights of the families among those a program has on.
_WEIGHT = {"arith": 4, "constant": 2, "logic": 3}

#: Small constants, simplest first; zero and one are drawn apart, on purpose.
_SMALL = (2, 3, -1, 5, -2, 7, 4, -3)
#: The dtypes of this generator's programs.
DTYPES = ("int64", "int32", "float32", "float32-edges", "float32-nn")
#: The activations the remapper fuses after MatMul/Conv2D + BiasAdd on a CPU
#: (remapper.cc IsSupportedActivation, with oneDNN: Relu, Relu6, Elu,
#: LeakyRelu, Tanh, Sigmoid), and none
ACTIVATIONS = (None, *FUSED_ACTIVATIONS)
#: ops ModelPruner removes when nothing needs them by name (model_pruner.cc
#: IsTrivialOp: StopGradient, PreventGradient-free Identity, Snapshot, ...)
TRIVIAL = ("Identity", "StopGradient", "PreventGradient", "Snapshot")
_COMPARE = ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual")
#: float32 constants of "float32-edges" programs
_EDGE_FLOAT32 = (0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.4e-45, -1.4e-45,
                 1.1754944e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.5, 2.0)
#: int32 programs' edge constants (int64's are builder.EDGE_INTS)
_EDGE_INT32 = (0, -1, 1, 2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1, 2**16)

Shape = tuple[int, ...]
Ref = DataIn | FeedIn


@dataclass
class _Val:
    ref: Ref
    shape: Shape


@dataclass
class _State:
    nodes: list[Node] = field(default_factory=list)
    feeds: dict[str, TensorType] = field(default_factory=dict)
    pool: list[_Val] = field(default_factory=list)          # tensors to reuse
    results: list[_Val] = field(default_factory=list)       # motif results (fetch candidates)
    stateful: list[str] = field(default_factory=list)       # Read and Assign nodes
    assigns: list[str] = field(default_factory=list)
    handles: dict[str, str] = field(default_factory=dict)   # variable -> its shared Var node
    inits: dict[str, str] = field(default_factory=dict)     # float mode: variable -> init Write
    counter: int = 0

    def copy(self) -> "_State":
        return _State(list(self.nodes), dict(self.feeds), list(self.pool), list(self.results),
                      list(self.stateful), list(self.assigns), dict(self.handles),
                      dict(self.inits), self.counter)


class _Builder:
    """One program from the choices of a Draw.  Each motif is one span whose
    first choice 0 means "skip it" (the shrinker deletes motifs that way)."""

    def __init__(self, max_nodes: int, dtype: str, observe_state: bool,
                 weights: dict[str, int] | None = None):
        if not isinstance(max_nodes, int) or max_nodes < 1:
            raise ValueError(f"max_nodes must be a positive integer, got {max_nodes!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.max_nodes = max(max_nodes, MIN_NODES)
        self.nn = dtype == "float32-nn"
        self.edges = dtype in ("float32-edges", "float32-nn")
        self.dtype = "float32" if self.edges else dtype
        self.weights = {**_WEIGHT, **(weights or {})}
        self.observe_state = observe_state
        self.s = _State()
        self.variables: dict[str, TensorType] = {}
        self.shape: Shape = ()
        self.families: list[str] = []

    # -- the program ----------------------------------------------------------

    def build(self, d: Draw) -> Program:
        self.shape = choice(d, [(), (), (2,), (3,)])
        n_vars = 1 + d.index(2)
        for k in range(n_vars):
            self.variables[f"x{k}"] = TensorType(self.dtype, self.shape)
        # the swarm: each family switched off in a quarter of the programs
        families = NN_FAMILIES if self.nn else EDGE_FAMILIES if self.edges else FAMILIES
        families = tuple(f for f in families if self.weights.get(f, 1) > 0)
        on = [f for f in families if not boolean(d, 0.25)] or [choice(d, families)]
        self.families = on
        motifs = 0
        for _ in range(_MAX_MOTIFS):
            if not d.span(lambda d: self._maybe_motif(d, on, motifs)):
                break
            motifs += 1
        outputs = self._outputs(d)
        return Program(self.variables, tuple(self.s.nodes), outputs, self.s.feeds).validated()

    def _maybe_motif(self, d: Draw, on: list[str], done: int) -> bool:
        first = d.index(10)
        if first == 0:
            return True                                   # skipped
        if done >= 1 and first == 1:
            return False                                  # stop
        if len(self.s.nodes) >= self.max_nodes:
            return False
        family = choice(d, [f for f in on for _ in range(self.weights.get(f, 1))])
        saved = self.s.copy()
        getattr(self, "_" + family)(d)
        if len(self.s.nodes) > self.max_nodes:            # did not fit: drop it
            self.s = saved
        return True

    def _outputs(self, d: Draw) -> dict[str, DataIn]:
        outs: dict[str, DataIn] = {}
        p = 0.5 if self.observe_state else 0.7
        for v in self.s.results:
            if isinstance(v.ref, DataIn) and boolean(d, p):
                outs[f"out{len(outs)}"] = v.ref
        if not outs:
            cands = [v for v in self.s.results + self.s.pool if isinstance(v.ref, DataIn)]
            if cands:
                outs["out0"] = cands[-1 - d.index(min(3, len(cands)))].ref
            else:   # nothing computed at all: read a variable
                outs["out0"] = self._read(d)
        return outs

    # -- nodes ----------------------------------------------------------------

    def _add(self, op: str, inputs: list[Input], attrs: dict | None = None,
             prefix: str | None = None) -> str:
        name = f"{prefix or op.lower()}{self.s.counter}"
        self.s.counter += 1
        self.s.nodes.append(Node(name, op, tuple(inputs), attrs or {}))
        return name

    def _fn(self, op: str, args: list[Ref], ctrl: list[Input] = (), attrs: dict | None = None
            ) -> DataIn:
        return DataIn(self._add(op, [*args, *ctrl], attrs))

    def _const(self, d: Draw, shape: Shape, value: int | None = None) -> DataIn:
        """A Const: `value` splatted, or small integers (int64 extremes now
        and then in int64 programs)."""
        size = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if value is not None:
            elems = [value] * size
        elif self.edges:
            elems = [choice(d, _EDGE_FLOAT32) for _ in range(size)]
        else:
            elems = []
            for _ in range(size):
                if self.dtype != "float32" and boolean(d, 0.08):
                    elems.append(choice(d, EDGE_INTS if self.dtype == "int64" else _EDGE_INT32))
                else:
                    elems.append(choice(d, _SMALL))
        arr = np.array(elems, dtype=self.dtype).reshape(shape)
        return DataIn(self._add("Const", [], {"value": Tensor(arr)}, prefix="c"))

    def _handle(self, d: Draw, x: str) -> DataIn:
        """The variable's shared Var node (as a TensorFlow graph has one
        VarHandleOp per variable), or now and then a Var node of its own."""
        if x not in self.s.handles:
            self.s.handles[x] = self._add(VAR, [], {"var": x}, prefix="v")
            return DataIn(self.s.handles[x])
        if boolean(d, 0.15):
            return DataIn(self._add(VAR, [], {"var": x}, prefix="v"))
        return DataIn(self.s.handles[x])

    def _var(self, d: Draw) -> str:
        return choice(d, list(self.variables))

    def _after_init(self, x: str, ctrl: list[Input]) -> list[Input]:
        """Float mode: every access to x is ordered after x's initial Write of
        an integer-valued value (see the module docstring)."""
        if self.dtype != "float32" or self.edges:
            return ctrl
        w = self.s.inits.get(x)
        if w is None:
            return ctrl
        c = ControlIn(w)
        return ctrl if c in ctrl else [*ctrl, c]

    def _ensure_init(self, d: Draw, x: str) -> None:
        if self.dtype == "float32" and not self.edges and x not in self.s.inits:
            h = self._handle(d, x)
            value = self._const(d, self.shape)
            w = self._add(ASSIGN, [h, value], {"fn": "Snd"}, prefix="init")
            self.s.inits[x] = w
            self.s.stateful.append(w)
            self.s.assigns.append(w)

    def _read(self, d: Draw, ctrl: list[Input] = (), x: str | None = None) -> DataIn:
        x = x or self._var(d)
        self._ensure_init(d, x)
        h = self._handle(d, x)
        name = self._add(READ, [h, *self._after_init(x, list(ctrl))], prefix="r")
        self.s.stateful.append(name)
        v = _Val(DataIn(name), self.shape)
        self.s.pool.append(v)
        return v.ref

    def _assign(self, d: Draw, value: _Val | None = None, ctrl: list[Input] = (),
                x: str | None = None) -> str:
        x = x or self._var(d)
        self._ensure_init(d, x)
        h = self._handle(d, x)
        if value is None:
            value = self._operand(d, want=self.shape)
        ref = self._fit(d, value)
        # (edge floats: Assign-Add would be float arithmetic, which TensorFlow flushes)
        fn = "Snd" if self.edges else choice(d, ["Snd", "Snd", "Add", "Sub"])
        name = self._add(ASSIGN, [h, ref, *self._after_init(x, list(ctrl))], {"fn": fn},
                         prefix="w" if fn == "Snd" else "a")
        self.s.stateful.append(name)
        self.s.assigns.append(name)
        return name

    def _fit(self, d: Draw, v: _Val) -> Ref:
        """`v` as a tensor of the variables' shape: a scalar is broadcast by a
        Fill (tf.fill), or by adding it to ZerosLike of a tensor of that shape."""
        if v.shape == self.shape:
            return v.ref
        if v.shape == ():
            if boolean(d, 0.7) or self.edges:
                return self._fn("Fill", [v.ref], attrs={"dims": list(self.shape)})
            base = self._operand(d, want=self.shape)
            return self._fn("Add", [self._fn("ZerosLike", [base.ref]), v.ref])
        raise AssertionError(f"no way to fit shape {v.shape} into {self.shape}")

    def _feed(self, d: Draw, shape: Shape) -> _Val:
        """A feed: a new one, or an existing one of that shape.  Float mode:
        an int64 feed through a Cast (integer-valued floats only)."""
        existing = [f for f, t in self.s.feeds.items() if t.shape == shape]
        if existing and boolean(d, 0.5):
            name = choice(d, existing)
        else:
            name = f"f{len(self.s.feeds)}"
            self.s.feeds[name] = TensorType("float32" if self.edges else
                                            "int32" if self.dtype == "int32" else "int64", shape)
        ref: Ref = FeedIn(name)
        if self.dtype == "float32" and not self.edges:
            ref = self._fn("Cast", [ref], attrs={"DstT": "float32"})
        v = _Val(ref, shape)
        self.s.pool.append(v)
        return v

    def _operand(self, d: Draw, want: Shape | None = None) -> _Val:
        """A tensor to compute with: an earlier one (mostly), a Read, a feed
        or a Const; of shape `want` when given."""
        k = d.index(10)
        cands = [v for v in self.s.pool if want is None or v.shape == want]
        shape = self.shape if want is None else want
        if k < 4 and cands:
            return cands[-1 - d.index(min(4, len(cands)))]
        if k < 7 and shape == self.shape:
            ctrl = self._controls(d, 0.3)
            return _Val(self._read(d, ctrl), self.shape)
        if k < 9:
            return self._feed(d, shape)
        v = _Val(self._const(d, shape), shape)
        return v

    def _controls(self, d: Draw, p: float) -> list[Input]:
        """Maybe one or two control inputs from earlier stateful nodes."""
        out: list[Input] = []
        for _ in range(2):
            if not boolean(d, p) or not self.s.stateful:
                break
            c = ControlIn(self.s.stateful[-1 - d.index(min(4, len(self.s.stateful)))])
            if c not in out:
                out.append(c)
        return out

    def _result(self, d: Draw, ref: DataIn, shape: Shape) -> None:
        """A motif's result: fetched maybe, written to a variable maybe, and
        available to later motifs."""
        v = _Val(ref, shape)
        self.s.pool.append(v)
        self.s.results.append(v)
        if boolean(d, 0.35) and (shape == self.shape or shape == ()):
            self._assign(d, v, self._controls(d, 0.3))

    # -- motifs ---------------------------------------------------------------

    def _arith(self, d: Draw) -> None:
        kinds = _ARITH_FLOAT if self.dtype == "float32" else _ARITH_INT
        kind = choice(d, kinds)
        if kind == "broadcast" and self.shape == ():
            kind = "mul1"
        if kind == "broadcast":
            # x*1, x+0, x-0 with x a scalar and the constant of the variables'
            # shape: constant folding replaces them by a BroadcastTo of x
            x = self._operand(d, want=())
            op, unit = choice(d, [("Mul", 1), ("Add", 0), ("Sub", 0), ("Max", None)])
            c = self._const(d, self.shape, unit) if unit is not None else None
            if c is None:       # Max(x, x) broadcast through Fill
                op, c = "Max", self._fn("Fill", [x.ref], attrs={"dims": list(self.shape)})
            args = [x.ref, c] if op in ("Sub", "Max") or boolean(d, 0.5) else [c, x.ref]
            self._result(d, self._fn(op, args), self.shape)
            return
        x = self._operand(d)
        s = x.shape
        one = lambda: self._const(d, s if boolean(d, 0.5) else (), 1)      # noqa: E731
        zero = lambda: self._const(d, s if boolean(d, 0.5) else (), 0)     # noqa: E731
        small = lambda: self._const(d, () if boolean(d, 0.5) else s)       # noqa: E731
        F = self._fn
        swap = boolean(d, 0.5)

        def two(op, a, b):
            return F(op, [b, a] if swap else [a, b])

        if kind == "mul1":
            r = two("Mul", x.ref, one())
        elif kind == "add0":
            r = two("Add", x.ref, zero())
        elif kind == "sub0":
            r = F("Sub", [x.ref, zero()])
        elif kind == "mul0":
            r = two("Mul", x.ref, zero())
        elif kind == "negneg":
            r = F("Neg", [F("Neg", [x.ref])])
        elif kind == "subself":
            r = F("Sub", [x.ref, x.ref])
        elif kind == "addself":
            r = F("Add", [x.ref, x.ref])
        elif kind in ("addconsts", "mulconsts", "subconsts"):
            op1, op2 = {"addconsts": ("Add", "Add"), "mulconsts": ("Mul", "Mul"),
                        "subconsts": ("Sub", "Add")}[kind]
            inner = two(op1, x.ref, small())
            r = F(op2, [small(), inner] if boolean(d, 0.5) else [inner, small()])
        elif kind in ("addneg", "subneg"):
            y = self._operand(d, want=s)
            neg = F("Neg", [y.ref])
            r = two("Add", x.ref, neg) if kind == "addneg" else F("Sub", [x.ref, neg])
        elif kind == "square":
            r = F("Mul", [x.ref, x.ref])
        elif kind == "hoist":
            y, z = self._operand(d, want=s), self._operand(d, want=s)
            op = choice(d, ["Add", "Sub"])
            r = F(op, [two("Mul", x.ref, y.ref), two("Mul", x.ref, z.ref)])
        elif kind == "aggregate":
            y, z, w = (self._operand(d, want=s) for _ in range(3))
            r = F("Add", [F("Add", [x.ref, y.ref]), F("Add", [z.ref, w.ref])])
        elif kind in ("absabs", "relurelu"):
            op = "Abs" if kind == "absabs" else "Relu"
            r = F(op, [F(op, [x.ref])])
        elif kind in ("maxself", "minself"):
            r = F("Max" if kind == "maxself" else "Min", [x.ref, x.ref])
        elif kind == "negsub":
            y = self._operand(d, want=s)
            r = F("Neg", [F("Sub", [x.ref, y.ref])])
        elif kind == "mulneg":
            y = self._operand(d, want=s)
            r = F("Mul", [F("Neg", [x.ref]), F("Neg", [y.ref])])
        elif kind == "castcast":
            other = "float32" if self.dtype != "float32" else "int64"
            r = F("Cast", [F("Cast", [x.ref], attrs={"DstT": other})],
                  attrs={"DstT": self.dtype})
        elif kind == "reshapes":      # Reshape of Reshape, ExpandDims then Squeeze
            e = F("Reshape", [x.ref], attrs={"shape": [1, *s]})
            if boolean(d, 0.5):
                e = F("ExpandDims", [e], attrs={"axis": 0})
                e = F("Squeeze", [e], attrs={"squeeze_dims": [0]})
            r = F("Reshape", [e], attrs={"shape": list(s)})
        elif kind == "sqdiff":        # SquaredDifference(x, x) is 0; of x, y
            y = x if boolean(d, 0.4) else self._operand(d, want=s)
            r = F("SquaredDifference", [x.ref, y.ref])
        elif kind == "copy":          # Copy (IdentityN) then an op of both copies
            c = self._fn("Copy", [x.ref])
            r = F(choice(d, ["Add", "Sub", "Max"]), [c, DataIn(c.node, 1)])
        elif kind == "concatsplit":   # Split(Concat(x, y)) gives x back
            v = x.ref if s else F("ExpandDims", [x.ref], attrs={"axis": 0})
            w = self._operand(d, want=s).ref
            w = w if s else F("ExpandDims", [w], attrs={"axis": 0})
            cat = F("ConcatAxis", [v, w], attrs={"axis": 0})
            r = F("SplitPart", [cat], attrs={"axis": 0, "num_split": 2, "index": d.index(2)})
            if not s:
                r = F("Squeeze", [r], attrs={"squeeze_dims": [0]})
        elif kind == "reduce":        # a reduction over a new axis of length 1 is x
            e = F("ExpandDims", [x.ref], attrs={"axis": 0})
            r = F(choice(d, ["Mean", "ReduceMax", "ReduceMin", "Sum"]), [e],
                  attrs={"axes": [0], "keep_dims": False})
        elif kind == "matmul":        # MatMul of a row and a column: a dot product
            n = s[0] if s else 1
            a = F("Reshape", [x.ref], attrs={"shape": [1, n]})
            b = F("Reshape", [self._operand(d, want=s).ref], attrs={"shape": [n, 1]})
            m = F("MatMul", [a, b], attrs={"transpose_a": False, "transpose_b": False})
            r = F("Reshape", [m], attrs={"shape": []})
            s = ()
        elif kind == "squareneg":
            r = F("Square", [F("Neg", [x.ref])])
        else:  # pragma: no cover - the lists above are the kinds
            raise AssertionError(kind)
        self._result(d, r, s)

    def _constant(self, d: Draw) -> None:
        kind = choice(d, ["fold", "fold", "nested", "fill", "zeroslike", "shape", "mixed"])
        s = self.shape
        F = self._fn
        ops = ["Add", "Sub", "Mul", "Max", "Min"]
        if kind == "fold":
            r = F(choice(d, ops), [self._const(d, s), self._const(d, choice(d, [s, ()]))])
            shape = s
        elif kind == "nested":
            a = F(choice(d, ops), [self._const(d, s), self._const(d, ())])
            r = F(choice(d, ops), [a, F("Neg", [self._const(d, s)])])
            shape = s
        elif kind == "fill":
            src = self._const(d, ()) if boolean(d, 0.7) else self._operand(d, want=()).ref
            r = F("Fill", [src], attrs={"dims": list(s)})
            shape = s
        elif kind == "zeroslike":
            x = self._operand(d)
            r = F(choice(d, ["ZerosLike", "OnesLike"]), [x.ref])
            if boolean(d, 0.5):
                r = F("Add", [self._operand(d, want=x.shape).ref, r])
            shape = x.shape
        elif kind == "shape":
            r, shape = self._shape_ops(d)
        else:  # "mixed": a constant expression combined with a computed value
            c = F(choice(d, ops), [self._const(d, ()), self._const(d, ())])
            x = self._operand(d)
            r = F(choice(d, ["Add", "Mul", "Sub"]), [x.ref, c])
            shape = x.shape
        self._result(d, r, shape)

    def _shape_ops(self, d: Draw) -> tuple[DataIn, Shape]:
        """Reshape, Tile, ExpandDims+Squeeze, Sum: shapes Grappler folds."""
        s = self.shape
        F = self._fn
        # float reductions have no bit-exact model (the oracle cannot run them)
        kind = choice(d, ["reshape", "tile", "expand", "sum" if self.dtype != "float32" else "tile"])
        src = self._const(d, s) if boolean(d, 0.6) else self._operand(d, want=s).ref
        if kind == "reshape":
            mid = F("Reshape", [src], attrs={"shape": [1, *s] if s else [1]})
            return F("Reshape", [mid], attrs={"shape": list(s)}), s
        if kind == "tile":
            if s:
                return F("Tile", [src], attrs={"multiples": [1] * len(s)}), s
            e = F("ExpandDims", [src], attrs={"axis": 0})
            t = F("Tile", [e], attrs={"multiples": [1]})
            return F("Reshape", [t], attrs={"shape": []}), ()
        if kind == "expand":
            e = F("ExpandDims", [src], attrs={"axis": 0})
            return F("Squeeze", [e], attrs={"squeeze_dims": [0]}), s
        if s:
            r = F("Sum", [src], attrs={"axes": [0], "keep_dims": False})
            return r, ()
        e = F("ExpandDims", [src], attrs={"axis": 0})
        return F("Sum", [e], attrs={"axes": [0], "keep_dims": False}), ()

    def _control(self, d: Draw) -> None:
        kind = choice(d, ["write_read", "read_write", "chain", "chain"])
        x = self._var(d)
        if kind == "write_read":
            w = self._assign(d, ctrl=self._controls(d, 0.3), x=x)
            r = self._read(d, [ControlIn(w)], x=x)
            self._result(d, r, self.shape)
        elif kind == "read_write":
            r = self._read(d, self._controls(d, 0.3), x=x)
            v = self._operand(d, want=self.shape) if boolean(d, 0.5) else _Val(r, self.shape)
            self._assign(d, v, [ControlIn(r.node)], x=x)
            self.s.results.append(_Val(r, self.shape))
        else:  # a chain of control edges through NoOp / Identity
            first = self._assign(d, ctrl=self._controls(d, 0.3), x=x) if boolean(d, 0.7) \
                else self._read(d, x=x).node
            last = first
            for _ in range(1 + d.index(3)):
                if boolean(d, 0.5):
                    last = self._add("NoOp", [ControlIn(last)], prefix="noop")
                else:
                    src = self._operand(d)
                    last = self._add("Identity", [src.ref, ControlIn(last)], prefix="id")
                    self.s.pool.append(_Val(DataIn(last), src.shape))
            end = choice(d, ["read", "assign", "identity"])
            if end == "read":
                self._result(d, self._read(d, [ControlIn(last)], x=self._var(d)), self.shape)
            elif end == "assign":
                self._assign(d, ctrl=[ControlIn(last)])
            else:
                src = self._operand(d)
                self._result(d, self._fn("Identity", [src.ref], [ControlIn(last)]), src.shape)

    def _group(self, d: Draw) -> None:
        """tf.group: a NoOp joining several Assigns, and nodes after it."""
        members = []
        for _ in range(2 + d.index(3)):
            members.append(self._assign(d, ctrl=self._controls(d, 0.2)))
        extra = self._controls(d, 0.3)
        g = self._add("NoOp", [*(ControlIn(m) for m in members),
                               *(c for c in extra if c.node not in members)], prefix="group")
        for _ in range(1 + d.index(2)):
            kind = choice(d, ["read", "identity", "assign", "noop"])
            if kind == "read":
                self._result(d, self._read(d, [ControlIn(g)]), self.shape)
            elif kind == "identity":
                src = self._operand(d)
                self._result(d, self._fn("Identity", [src.ref], [ControlIn(g)]), src.shape)
            elif kind == "assign":
                self._assign(d, ctrl=[ControlIn(g)])
            else:
                g = self._add("NoOp", [ControlIn(g)], prefix="group")

    def _identity(self, d: Draw) -> None:
        kind = choice(d, ["chain", "chain", "control"])
        if kind == "chain":
            src = self._operand(d) if boolean(d, 0.4) else _Val(self._read(d), self.shape)
            r = src.ref
            for _ in range(2 + d.index(2)):
                r = self._fn("Identity", [r], self._controls(d, 0.15))
            self._result(d, r, src.shape)
        else:  # an Identity on a control path: Assign -> Identity -> ^Read
            w = self._assign(d, ctrl=self._controls(d, 0.2))
            src = self._operand(d)
            i = self._fn("Identity", [src.ref], [ControlIn(w)])
            self.s.pool.append(_Val(i, src.shape))
            self._result(d, self._read(d, [ControlIn(i.node)]), self.shape)


    # -- "float32-nn" motifs: what the remapper, the shape optimizer and the
    # model pruner rewrite (TensorFlow ops tfsem imports as functions or
    # evaluates with TensorFlow's kernel: `_tf`) -----------------------------

    def _tf(self, op: str, args: list[Ref], attrs: dict, n_out: int = 1,
            ctrl: list[Input] = ()) -> DataIn:
        """A TensorFlow op as the exporter writes it (an uninterpreted
        function ``tf.OP/N_IN/N_OUT`` with its attributes); the Grappler
        target judges the export imported back, where it is the registry's
        model of OP (or TensorFlow's kernel)."""
        return DataIn(self._add(f"tf.{op}/{len(args)}/{n_out}", [*args, *ctrl],
                                {"tf_attrs": attrs}, prefix=op.lower()))

    def _float_const(self, d: Draw, shape: Shape) -> DataIn:
        """A float32 Const of edge values or small ones (1.0, -1.5, 2.0)."""
        return self._const(d, shape)

    def _float_in(self, d: Draw, shape: Shape) -> Ref:
        """A float32 tensor of `shape`: a feed (mostly), or a Const, or an
        earlier tensor of the variables' shape reshaped."""
        k = d.index(10)
        n = int(np.prod(shape, dtype=np.int64))
        if k < 2 and n == int(np.prod(self.shape, dtype=np.int64)):
            x = self._operand(d, want=self.shape)
            return self._fn("Reshape", [x.ref], attrs={"shape": list(shape)})
        if k < 8:
            return self._feed(d, shape).ref
        return self._float_const(d, shape)

    def _activation(self, d: Draw, x: Ref, weights=None) -> Ref:
        act = choice(d, weights or ACTIVATIONS)
        if act is None:
            return x
        if act == "Relu":
            return self._fn("Relu", [x])
        attrs = {"T": "DT_FLOAT"}
        if act == "LeakyRelu":
            attrs["alpha"] = choice(d, [0.2, 0.01, 0.5])
        return self._tf(act, [x], attrs)

    def _remap(self, d: Draw) -> None:
        """MatMul or Conv2D + BiasAdd (+ activation), Conv2D + FusedBatchNorm
        (+ Relu), FusedBatchNorm + Relu: the remapper's patterns on a CPU
        (remapper.cc: _FusedMatMul, _FusedConv2D, _FusedBatchNormEx)."""
        kind = choice(d, ["dense", "dense", "conv", "convbn", "bn"])
        if kind == "dense":
            b, k, n = 1 + d.index(2), 1 + d.index(3), 1 + d.index(3)
            ta, tb = boolean(d, 0.2), boolean(d, 0.2)
            x = self._float_in(d, (k, b) if ta else (b, k))
            w = self._float_in(d, (n, k) if tb else (k, n)) if boolean(d, 0.3) \
                else self._float_const(d, (n, k) if tb else (k, n))
            m = self._fn("MatMul", [x, w], attrs={"transpose_a": ta, "transpose_b": tb})
            out_shape: Shape = (b, n)
            ch = n
        else:
            h, w_, c = 1 + d.index(3), 1 + d.index(3), 1 + d.index(2)
            x = self._float_in(d, (1, h, w_, c))
            if kind == "bn":
                m, ch, out_shape = x, c, (1, h, w_, c)
            else:
                kh, kw, o = 1 + d.index(2), 1 + d.index(2), 1 + d.index(2)
                f = self._float_const(d, (kh, kw, c, o)) if boolean(d, 0.7) \
                    else self._float_in(d, (kh, kw, c, o))
                pad = choice(d, ["SAME", "VALID"])
                if pad == "VALID" and (kh > h or kw > w_):
                    pad = "SAME"
                m = self._tf("Conv2D", [x, f], {"T": "DT_FLOAT", "strides": [1, 1, 1, 1],
                                                "padding": pad, "data_format": "NHWC"})
                oh, ow = (h, w_) if pad == "SAME" else (h - kh + 1, w_ - kw + 1)
                ch, out_shape = o, (1, oh, ow, o)
        if kind in ("dense", "conv"):
            bias = self._float_const(d, (ch,)) if boolean(d, 0.6) else self._float_in(d, (ch,))
            r = self._activation(d, self._fn("BiasAdd", [m, bias]))
        else:
            scale, offset, mean, var = (self._float_const(d, (ch,)) if boolean(d, 0.7)
                                        else self._float_in(d, (ch,)) for _ in range(4))
            bn = self._tf("FusedBatchNormV3", [m, scale, offset, mean, var],
                          {"T": "DT_FLOAT", "U": "DT_FLOAT", "epsilon": choice(d, [0.001, 1e-5]),
                           "data_format": "NHWC", "is_training": False,
                           "exponential_avg_factor": 1.0}, n_out=1)
            r = self._activation(d, bn, (None, "Relu", *FUSED_ACTIVATIONS[:4]))
        self._nn_result(d, r, out_shape)

    def _nn_result(self, d: Draw, r: Ref, shape: Shape) -> None:
        """A float result of any shape: fetched maybe, or reshaped to the
        variables' shape and written when the sizes agree."""
        if int(np.prod(shape, dtype=np.int64)) == int(np.prod(self.shape, dtype=np.int64)) \
                and boolean(d, 0.5):
            r = self._fn("Reshape", [r], attrs={"shape": list(self.shape)})
            shape = self.shape
        self._result(d, r, shape)

    def _shape(self, d: Draw) -> None:
        """Shape, Size, Rank and ShapeN, and Prod(Shape(x)) (the shape
        optimizer rewrites it into Size(x)); int32 or int64 results, cast to
        the program's float and combined, or fetched."""
        if boolean(d, 0.5):
            x = self._operand(d)
        else:
            xs = choice(d, [(2, 3), (1, 2, 2), (4,)])
            x = _Val(self._float_in(d, xs), xs)
        it = choice(d, ["int32", "int32", "int64"])
        dt = "DT_INT32" if it == "int32" else "DT_INT64"
        kind = choice(d, ["prodshape", "prodshape", "size", "rank", "shapen"])
        if kind == "prodshape":
            shp = self._fn("Shape", [x.ref], attrs={"out_type": it})
            axis = DataIn(self._add("Const", [], {"value": Tensor(np.array([0], dtype=np.int32))},
                                    prefix="c"))
            r = self._tf("Prod", [shp, axis], {"T": dt, "Tidx": "DT_INT32",
                                               "keep_dims": False})
        elif kind == "size":
            r = self._fn("Size", [x.ref], attrs={"out_type": it})
        elif kind == "rank":
            r, it = self._fn("Rank", [x.ref]), "int32"
        else:
            y = self._float_in(d, choice(d, [(2,), (1, 3)]))
            n = self._tf("ShapeN", [x.ref, y], {"T": "DT_FLOAT", "N": 2, "out_type": dt},
                         n_out=2)
            r = self._tf("Prod", [DataIn(n.node, d.index(2)), DataIn(self._add(
                "Const", [], {"value": Tensor(np.array([0], dtype=np.int32))}, prefix="c"))],
                {"T": dt, "Tidx": "DT_INT32", "keep_dims": False})
        # an integer result is fetched, or cast to float32 and used as a scalar
        if boolean(d, 0.5):
            self.s.results.append(_Val(r, ()))
        else:
            f = self._fn("Cast", [r], attrs={"DstT": "float32"})
            self._result(d, f, ())

    def _prune(self, d: Draw) -> None:
        """Trivial ops the model pruner removes: chains of Identity,
        StopGradient, PreventGradient and Snapshot, AddN of one input, with
        control inputs now and then."""
        src = self._operand(d)
        r: Ref = src.ref
        for _ in range(1 + d.index(3)):
            op = choice(d, TRIVIAL + ("AddN",) + ("CheckNumerics",) * self.weights.get("check", 0))
            ctrl = self._controls(d, 0.15)
            if op == "Identity":
                r = self._fn("Identity", [r], ctrl)
            elif op == "AddN":
                r = self._tf("AddN", [r], {"T": "DT_FLOAT", "N": 1}, ctrl=ctrl)
            elif op == "CheckNumerics":
                r = self._tf(op, [r], {"T": "DT_FLOAT", "message": "tfsem"}, ctrl=ctrl)
            else:
                r = self._tf(op, [r], {"T": "DT_FLOAT"}, ctrl=ctrl)
        self._result(d, r, src.shape)

    def _int_feed(self, d: Draw, shape: Shape) -> Ref:
        """An integer feed of the shape (int64; int32 in int32 programs)."""
        dtype = "int32" if self.dtype == "int32" else "int64"
        existing = [f for f, t in self.s.feeds.items() if t.shape == shape and t.dtype == dtype]
        if existing and boolean(d, 0.5):
            return FeedIn(choice(d, existing))
        name = f"f{len(self.s.feeds)}"
        self.s.feeds[name] = TensorType(dtype, shape)
        return FeedIn(name)

    def _predicate(self, d: Draw, s: Shape) -> DataIn:
        """A bool tensor of shape s: a comparison of two operands (or of two
        constants), sometimes negated or joined with another by and/or."""
        F = self._fn
        if boolean(d, 0.2):      # of constants: constant folding computes it
            b = F(choice(d, _COMPARE), [self._const(d, s), self._const(d, choice(d, [s, ()]))])
        else:
            x = self._operand(d, want=s)
            y = x if boolean(d, 0.15) else self._operand(d, want=s)
            b = F(choice(d, _COMPARE), [x.ref, y.ref])
        k = d.index(4)
        if k == 1:
            b = F("LogicalNot", [b])
        elif k >= 2:
            other = self._predicate(d, s) if boolean(d, 0.5) else \
                F(choice(d, _COMPARE), [self._operand(d, want=s).ref, self._const(d, s)])
            b = F("LogicalAnd" if k == 2 else "LogicalOr", [b, other])
        return b

    def _logic(self, d: Draw) -> None:
        s = self.shape
        F = self._fn
        kind = choice(d, ["select", "select", "selectv2", "cast", "samesel", "intarith", "castback"])
        if kind in ("select", "selectv2"):
            # Select's condition has x's shape (or is a scalar); SelectV2 broadcasts
            b = self._predicate(d, s if kind == "select" or boolean(d, 0.6) else ())
            x, y = self._operand(d, want=s), self._operand(d, want=s)
            r = F("Select" if kind == "select" else "SelectV2", [b, x.ref, y.ref])
        elif kind == "samesel":    # Select(b, x, x) is x
            x = self._operand(d, want=s)
            r = F(choice(d, ["Select", "SelectV2"]), [self._predicate(d, s), x.ref, x.ref])
        elif kind == "cast":       # a predicate as 0/1 of the program's dtype
            r = F("Cast", [self._predicate(d, s)], attrs={"DstT": self.dtype})
        elif kind == "intarith":
            # integer arithmetic on predicates: Add/Sub/Mul/FloorMod of casts
            it = "int32" if self.dtype == "int32" else "int64"
            a = F("Cast", [self._predicate(d, s)], attrs={"DstT": it})
            c = self._int_feed(d, s) if boolean(d, 0.6) else \
                F("Cast", [self._predicate(d, s)], attrs={"DstT": it})
            op = choice(d, ["Add", "Sub", "Mul", "Max", "Min"])
            n = F(op, [a, c] if boolean(d, 0.5) else [c, a])
            if it == self.dtype:
                r = n
            else:       # back through a comparison: the float result is a Select
                x, y = self._operand(d, want=s), self._operand(d, want=s)
                r = F("Select", [F(choice(d, _COMPARE), [n, self._int_feed(d, s)]), x.ref, y.ref])
        else:   # "castback": across dtypes and back (out-of-range and NaN casts)
            x = self._operand(d, want=s)
            other = choice(d, ["int32", "int64", "float32"] if self.dtype != "float32"
                           else ["int32", "int64"])
            if other == self.dtype:
                other = "float32" if self.dtype != "float32" else "int64"
            mid = F("Cast", [x.ref], attrs={"DstT": other})
            r = F("Cast", [mid], attrs={"DstT": self.dtype})
        self._result(d, r, s)


_ARITH_COMMON = ["mul1", "add0", "sub0", "mul0", "negneg", "subself", "addself", "addconsts",
                 "mulconsts", "subconsts", "addneg", "subneg", "square", "hoist", "aggregate",
                 "absabs", "relurelu", "maxself", "minself", "negsub", "mulneg", "squareneg",
                 "broadcast", "broadcast"]
# the shapes the arithmetic optimizer rewrites even when every node is kept
# (as the Grappler target keeps them): measured, each several times more often
_ARITH_COMMON += ["negneg", "addself", "square", "hoist", "aggregate"] * 2 + ["reshapes"]
_ARITH_COMMON += ["sqdiff", "copy", "concatsplit"]
_ARITH_INT = _ARITH_COMMON + ["castcast", "reduce", "matmul"]
# float mode: only operations closed over integer-valued floats (no RealDiv,
# no Sqrt; Cast to int64 and back is exact for integer-valued floats in range
# only, so it stays out too)
_ARITH_FLOAT = list(_ARITH_COMMON)


# ---------------------------------------------------------------------------
# Entry points


def build(d: Draw, max_nodes: int = 16, dtype: str = "int64", observe_state: bool = True,
          weights: dict[str, int] | None = None) -> Program:
    """One Grappler-shaped program from the choices of `d` (any `Draw`), of
    at most max(max_nodes, MIN_NODES) nodes.  `weights`: the motif
    families' weights (0 switches one off), over `_WEIGHT`'s."""
    return _Builder(max_nodes, dtype, observe_state, weights).build(d)


def random_programs(count: int, seed: int, max_nodes: int = 16, dtype: str = "int64"
                    ) -> list[Program]:
    """`count` programs, the same ones for the same arguments; program i
    depends only on (seed, i)."""
    return [build(RandomDraw(random.Random(f"tfsem-grappler:{seed}:{i}")), max_nodes, dtype)
            for i in range(count)]


def edge_inputs(d: Draw, p: Program) -> tuple[dict, dict]:
    """σ for a program of this generator: feeds and initial values drawn
    with edge values (NaN, infinities, signed zeros, subnormals, the largest
    floats, integer extremes: `oracle.values.edge_values`) for half of the
    elements."""
    return build_inputs(d, p, edge_p=0.5)


def strategy(max_nodes: int, observe: str, float_p: float = 0.0, int32_p: float = 0.0,
             edges_p: float = 0.0):
    """The campaign generator (campaigns/loop.py): a Hypothesis strategy of
    (program, feeds, init).  A share `float_p` of the programs are float32
    (integer-valued, see the module docstring), the rest int64.  The default
    is int64 only; `mixed_strategy`, the Grappler targets' default, has a
    quarter of float programs, which the targets judge through `unflushed`.
    A share `int32_p` of the integer programs are int32 (TensorFlow keeps
    int32 tensors in host memory and Grappler treats them as shapes: its
    rewrites of them deserve their own programs)."""
    from hypothesis import strategies as st  # noqa: PLC0415

    if not 0 <= float_p <= 1:
        raise ValueError(f"float_p must be in [0, 1], got {float_p!r}")
    if not 0 <= int32_p <= 1:
        raise ValueError(f"int32_p must be in [0, 1], got {int32_p!r}")
    if not 0 <= edges_p <= 1:
        raise ValueError(f"edges_p must be in [0, 1], got {edges_p!r}")
    observe_state = observe != "outputs"

    @st.composite
    def case(draw):
        return draw_case(HypothesisDraw(draw), max_nodes, observe_state, float_p, int32_p,
                         edges_p)

    return case()


def draw_case(d: Draw, max_nodes: int, observe_state: bool = True, float_p: float = 0.0,
              int32_p: float = 0.0, edges_p: float = 0.0):
    """One (program, feeds, init) of `strategy`'s mix from any `Draw`."""
    dtype = "float32-edges" if edges_p and boolean(d, edges_p) else \
        "float32" if boolean(d, float_p) else \
        "int32" if int32_p and boolean(d, int32_p) else "int64"
    p = build(d, max_nodes, dtype, observe_state)
    feeds, init = edge_inputs(d, p) if edges_p else build_inputs(d, p)
    return p, feeds, init


def mixed_strategy(max_nodes: int, observe: str):
    """`strategy` with a quarter of float32 (integer-valued) programs and a
    fifth of the others int32."""
    return strategy(max_nodes, observe, float_p=0.25, int32_p=0.2)


def edges_strategy(max_nodes: int, observe: str):
    """`strategy` for the comparisons, logical ops, Select and casts: a third
    of the programs "float32-edges" (raw float32 feeds), a quarter of the
    others integer-valued float32, a fifth of the rest int32; σ with edge
    values half of the time (`edge_inputs`)."""
    return strategy(max_nodes, observe, float_p=0.25, int32_p=0.2, edges_p=0.35)


#: optimizer_strategy's mixes: the share of "float32-nn" programs (the rest
#: is edges_strategy's mix) and the weights of their motif families
MIXES: dict[str, tuple[float, dict[str, int]]] = {
    "optimizers": (0.7, {"remap": 5, "shape": 2, "prune": 2, "logic": 2}),
    "remap": (0.85, {"remap": 8, "shape": 0, "prune": 1, "logic": 1}),
    "shape": (0.8, {"shape": 6, "remap": 1, "prune": 1, "logic": 1}),
    "pruning": (0.7, {"prune": 6, "remap": 1, "shape": 1, "logic": 1}),
    # (check: the weight of CheckNumerics among the trivial ops of `prune`)
    "debug_stripper": (0.8, {"prune": 6, "check": 5, "remap": 1, "logic": 1}),
}


def draw_optimizer_case(d: Draw, max_nodes: int, observe_state: bool = True,
                        mix: str = "optimizers"):
    """One (program, feeds, init) of `optimizer_strategy`'s mix `mix` (a
    key of MIXES) from any `Draw`: a "float32-nn" program (MatMul, Conv2D,
    BiasAdd, activations, FusedBatchNorm, Shape/Size/Rank/ShapeN/Prod,
    trivial ops, with the edge-valued float feeds and constants of
    "float32-edges") or else one of `edges_strategy`'s; σ with edge values
    half of the time (`edge_inputs`)."""
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r} (known: {', '.join(MIXES)})")
    share, weights = MIXES[mix]
    if boolean(d, share):
        p = build(d, max_nodes, "float32-nn", observe_state, weights)
        feeds, init = edge_inputs(d, p)
        return p, feeds, init
    return draw_case(d, max_nodes, observe_state, 0.25, 0.2, 0.35)


def optimizer_strategy(max_nodes: int, observe: str, mix: str = "optimizers"):
    """The campaign generator for the optimizers edges_strategy leaves
    alone (remap, shape, pruning; see MIXES): a Hypothesis strategy of
    (program, feeds, init), `draw_optimizer_case` of mix `mix`::

        tfsem fuzz --target grappler:remap --generator tfsem.generators.grappler:remap_strategy
    """
    from hypothesis import strategies as st  # noqa: PLC0415
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r} (known: {', '.join(MIXES)})")
    observe_state = observe != "outputs"

    @st.composite
    def case(draw):
        return draw_optimizer_case(HypothesisDraw(draw), max_nodes, observe_state, mix)

    return case()


def remap_strategy(max_nodes: int, observe: str):
    """`optimizer_strategy` weighted to the remapper's patterns."""
    return optimizer_strategy(max_nodes, observe, "remap")


def shape_strategy(max_nodes: int, observe: str):
    """`optimizer_strategy` weighted to Shape/Size/Rank/ShapeN and Prod(Shape)."""
    return optimizer_strategy(max_nodes, observe, "shape")


def pruning_strategy(max_nodes: int, observe: str):
    """`optimizer_strategy` weighted to the ops the model pruner removes."""
    return optimizer_strategy(max_nodes, observe, "pruning")


def debug_stripper_strategy(max_nodes: int, observe: str):
    """`optimizer_strategy` with CheckNumerics among the trivial ops (the
    debug stripper makes it an Identity)."""
    return optimizer_strategy(max_nodes, observe, "debug_stripper")


def unflushed(p: Program) -> Program | None:
    """`p` with each flush-to-zero function ``X.ftz`` replaced by ``X``, when
    `subnormal_free(p)` proves that they compute the same (no subnormal ever
    reaches or leaves one); None otherwise.  An imported float graph that
    passes is one whose TensorFlow semantics (flushing) and tfsem semantics
    (IEEE) agree for every σ, so the Grappler target can check it."""
    from tfsem.oracle.functions import FTZ_SUFFIX  # noqa: PLC0415

    if not subnormal_free(p):
        return None
    nodes = tuple(n.replace(op=n.op.removesuffix(FTZ_SUFFIX)) if n.op.endswith(FTZ_SUFFIX)
                  else n.replace(attrs={**n.attrs, "fn": n.fn.removesuffix(FTZ_SUFFIX)})
                  if n.op == ASSIGN and n.fn.endswith(FTZ_SUFFIX) else n
                  for n in p.nodes)
    return Program(p.variables, nodes, p.outputs, p.feeds).validated()


# ---------------------------------------------------------------------------
# What a program contains, found structurally


def shape_families(p: Program) -> set[str]:
    """The motif families whose shapes `p` contains (see FAMILIES): found in
    the program itself, not in how it was drawn."""
    found: set[str] = set()
    node = p.node
    stateful = {n.name for n in p.nodes if n.op in (READ, ASSIGN)}

    def const_value(i) -> np.ndarray | None:
        if isinstance(i, DataIn) and node[i.node].op == "Const":
            return node[i.node].attrs["value"].array
        return None

    def is_const_expr(name: str, seen=None) -> bool:
        n = node[name]
        if n.op == "Const":
            return True
        if n.op in (VAR, READ, ASSIGN) or not n.data_inputs:
            return False
        return all(isinstance(i, DataIn) and is_const_expr(i.node) for i in n.data_inputs)

    for n in p.nodes:
        ins = n.data_inputs
        if n.op in ("Add", "Sub", "Mul", "Max", "Min") and len(ins) == 2:
            vals = [const_value(i) for i in ins]
            if ins[0] == ins[1]:
                found.add("arith")
            for v in vals:
                if v is not None and v.size and (np.all(v == 0) or (n.op == "Mul" and np.all(v == 1))):
                    found.add("arith")
            if any(isinstance(i, DataIn) and node[i.node].op == n.op for i in ins) \
                    and any(v is not None for v in vals):
                found.add("arith")
            if any(isinstance(i, DataIn) and node[i.node].op == "Neg" for i in ins):
                found.add("arith")
        if n.op in ("Neg", "Abs", "Relu") and isinstance(ins[0], DataIn) \
                and node[ins[0].node].op == n.op:
            found.add("arith")
        if n.op not in ("Const", VAR, READ, ASSIGN, "NoOp") and ins and is_const_expr(n.name):
            found.add("constant")
        if n.op in ("Fill", "ZerosLike", "OnesLike"):
            found.add("constant")
        ctrl_from = {c.node for c in n.control_inputs if isinstance(c, ControlIn)}
        if n.op in (READ, ASSIGN) and ctrl_from & stateful:
            found.add("control")
        if n.op in ("NoOp", "Identity") and ctrl_from:
            found.add("control")
        if n.op == "NoOp" and len([c for c in ctrl_from if node[c].op == ASSIGN]) >= 2:
            found.add("group")
        if n.op == "Identity" and isinstance(ins[0], DataIn) and node[ins[0].node].op == "Identity":
            found.add("identity")
        if n.op == "Identity" and ctrl_from:
            found.add("identity")
        if n.op in _COMPARE or n.op in ("LogicalNot", "LogicalAnd", "LogicalOr", "Select",
                                        "SelectV2"):
            found.add("logic")
    # "control" proper: an edge between stateful ops, directly or through NoOp/Identity
    return found


def _tf_op(op: str) -> str:
    """The TensorFlow op a node exports as: ``tf.Conv2D/2/1`` -> ``Conv2D``;
    tfsem's own functions by their name."""
    return op[3:].split("/")[0] if op.startswith("tf.") else op


def optimizer_patterns(p: Program) -> set[str]:
    """The optimizers' patterns `p` contains (found in the program, not in
    how it was drawn), by the TensorFlow ops it exports as:

    - ``remap:matmul-biasadd``, ``remap:conv-biasadd`` (+ ``remap:ACT`` for
      the activation after the BiasAdd), ``remap:conv-batchnorm``,
      ``remap:batchnorm-activation``: what the remapper fuses on a CPU;
    - ``shape:prod-shape`` (Prod of a Shape over axis 0), ``shape:size``,
      ``shape:rank``, ``shape:shapen``;
    - ``pruning:trivial`` (StopGradient, PreventGradient, Snapshot, AddN of
      one input, Identity of Identity);
    - ``debug_stripper:checknumerics`` (the debug stripper makes it an
      Identity)."""
    found: set[str] = set()
    node = p.node
    float_nodes = {n.name for n in p.nodes}

    def src(i) -> str | None:
        return _tf_op(node[i.node].op) if isinstance(i, DataIn) and i.node in float_nodes \
            else None

    for n in p.nodes:
        op = _tf_op(n.op)
        ins = n.data_inputs
        first = src(ins[0]) if ins else None
        if op == "BiasAdd" and first in ("MatMul", "Conv2D"):
            found.add("remap:matmul-biasadd" if first == "MatMul" else "remap:conv-biasadd")
        if op in FUSED_ACTIVATIONS and first == "BiasAdd":
            found.add(f"remap:{op}")
        if op == "FusedBatchNormV3" and first == "Conv2D":
            found.add("remap:conv-batchnorm")
        if op in FUSED_ACTIVATIONS and first == "FusedBatchNormV3":
            found.add("remap:batchnorm-activation")
        if op == "Prod" and first == "Shape":
            found.add("shape:prod-shape")
        if op == "Prod" and first == "ShapeN":
            found.add("shape:shapen")
        if op in ("Size", "Rank"):
            found.add(f"shape:{op.lower()}")
        if op == "CheckNumerics":
            found.add("debug_stripper:checknumerics")
        if op in TRIVIAL[1:] or (op == "AddN" and len(ins) == 1) or \
                (op == "Identity" and first == "Identity"):
            found.add("pruning:trivial")
    return found


# ---------------------------------------------------------------------------
# Floats without subnormals: a decidable sufficient condition

#: Functions that map integer-valued floats (or +-inf, NaN) to integer-valued
#: floats (or +-inf, NaN): an exact integer result is representable or rounds
#: to a float of magnitude >= 2**24 (an integer) or to an infinity.
_INTEGRAL_CLOSED = frozenset({
    "Identity", "Copy", "Snd", "Add", "Sub", "Mul", "Neg", "Max", "Min", "Abs", "Relu",
    "Square", "SquaredDifference", "ZerosLike", "OnesLike", "Fill", "Reshape", "Tile",
    "ExpandDims", "Squeeze", "Concat", "ConcatAxis", "Split", "SplitPart", "Sum",
    "Add.ftz", "Sub.ftz", "Mul.ftz", "Max.ftz", "Min.ftz", "Square.ftz",
    "SquaredDifference.ftz",
})


#: dtypes whose values are integers (or bools): a Cast of one to float32 is
#: integral (it rounds to an integer-valued float), and none is a float
_INTEGRAL_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8", "uint16", "uint32",
                              "uint64", "bool"})


def subnormal_free(p: Program) -> bool:
    """True when no float32 tensor of `p` can hold a subnormal value, for any
    σ and any schedule; then each ``X.ftz`` of `p` computes what ``X`` does.

    The argument: call a float tensor *integral* when every element is an
    integer, +-inf or NaN.  No integral value is subnormal.  The check
    proves every float32 tensor integral, by induction in topological order:
    - a Const is integral when its elements are;
    - a Cast to float32 of an integer or bool tensor is integral (an integer
      rounds to an integer-valued float);
    - a Select or SelectV2 is integral when x and y are (it copies elements
      of one or the other; the condition is bool);
    - a function of `_INTEGRAL_CLOSED` with integral float inputs is integral
      (sums, differences, products and maxima of integers are integers;
      rounding to float32 keeps a value of magnitude >= 2**24 integral; inf
      and NaN stay inf or NaN; Sum is a chain of additions);
    - a float feed is never integral (σ picks any float), so a program with
      one is refused;
    - a Read of a float variable is integral when every Assign of that
      variable writes an integral value, and the Read and every Assign-f
      (f other than Snd) of it have among their ancestors a Write of that
      variable: then the initial value, which σ picks freely, is overwritten
      before anything reads it (a Write is atomic in both semantics, and
      an ancestor fires before its descendants in every schedule);
    - an error value (a failed op, an uninitialized variable) is no tensor.
    int64 tensors play no part.  Anything else (a float tensor of unknown
    dtype, RealDiv, Sqrt, Mean, MatMul, a tf.* op) makes the answer False.
    """
    from tfsem.graphdef.exporter import infer_types  # noqa: PLC0415

    if any(t.dtype == "float32" for t in p.feeds.values()):
        return False
    types = infer_types(p)
    node = p.node
    ancestors: dict[str, set[str]] = {}
    for name in p.topological_order:
        acc: set[str] = set()
        for q in p.predecessors(name):
            acc.add(q)
            acc |= ancestors[q]
        ancestors[name] = acc
    float_vars = {x for x, t in p.variables.items() if t.dtype == "float32"}

    def write_before(name: str, x: str) -> bool:
        return any(node[a].op == ASSIGN and node[a].fn == "Snd"
                   and p.accessed_variable(a) == x for a in ancestors[name])

    integral: dict[tuple[str, int], bool] = {}

    def ok(i) -> bool:
        """Input i is an integer or bool tensor, or an integral float32 tensor."""
        t = p.feed_type(i.name) if isinstance(i, FeedIn) else types.get((i.node, i.port))
        if t is None:
            return False
        if t.dtype in _INTEGRAL_DTYPES:
            return True
        return isinstance(i, DataIn) and integral.get((i.node, i.port), False)

    for name in p.topological_order:
        n = node[name]
        if n.op == VAR:
            continue
        if n.op == ASSIGN:
            x = p.accessed_variable(name)
            if x in float_vars and (n.fn not in _INTEGRAL_CLOSED or not ok(n.data_inputs[1])
                                    or (n.fn != "Snd" and not write_before(name, x))):
                return False
            continue
        if n.op == READ:
            x = p.accessed_variable(name)
            integral[(name, 0)] = x not in float_vars or write_before(name, x)
        elif n.op == "Const":
            arr = n.attrs["value"].array
            integral[(name, 0)] = arr.dtype.kind != "f" or bool(
                np.all(~np.isfinite(arr) | (arr == np.round(arr))))
        elif n.op == "Cast":
            src = n.data_inputs[0]
            st = p.feed_type(src.name) if isinstance(src, FeedIn) else types.get((src.node, src.port))
            integral[(name, 0)] = st is not None and (st.dtype in _INTEGRAL_DTYPES or ok(src))
        elif n.op in ("Select", "SelectV2"):
            # elements of x or of y, copied: integral when both are (the
            # condition is bool)
            integral[(name, 0)] = ok(n.data_inputs[1]) and ok(n.data_inputs[2])
        else:
            good = n.op in _INTEGRAL_CLOSED and all(ok(i) for i in n.data_inputs)
            for k in range(n.n_outputs()):
                integral[(name, k)] = good
        for k in range(n.n_outputs()):
            t = types.get((name, k))
            if t is None and n.op not in ("NoOp",):
                return False          # unknown dtype: cannot tell
            if t is not None and t.dtype == "float32" and not integral.get((name, k), False):
                return False
    return True


__all__ = ["FAMILIES", "MIXES", "NN_FAMILIES", "build", "draw_case", "draw_optimizer_case",
           "edge_inputs", "edges_strategy", "optimizer_strategy", "random_programs", "strategy",
           "debug_stripper_strategy", "mixed_strategy", "optimizer_patterns", "pruning_strategy", "remap_strategy", "shape_strategy",
           "shape_families", "subnormal_free", "unflushed"]
