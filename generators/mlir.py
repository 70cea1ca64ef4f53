"""Programs that are `tf_executor` modules: islands of several ops, control
tokens, dead islands, several handles of one variable and `tf_device.cluster`
regions (docs/mlir.md, "A generator that writes modules").

A program reaches MLIR through TensorFlow's importer as one island per op;
the MLIR passes that group, split, prune and lift islands then see only what
their own earlier passes made.  This generator draws the module's structure
itself.  Its programs name their islands (``islandK/NAME``, and
``islandK/clusterJ/NAME`` for an op of a cluster inside island K), and
graphdef/mlir_writer.py writes them as MLIR text, which the MLIR campaign
targets (campaigns/mlir_target.py) hand to the pipeline with no GraphDef in
between.  The program itself is only the carrier: what a pipeline's output
is judged against is the written module, read back by tfsem's MLIR reader
(with its island order), so the structure the names give is what is
checked; and the campaign's reducer, which deletes and rewires nodes, keeps
the names, so a finding shrinks to a smaller module of the same shape.

What a program has (int64 tensors of one shape, scalar or [2]):

- one or two variables, each with a `VarHandleOp` island, and a second
  handle of the same variable in a third of the programs (lifting and
  decomposition key on the SSA value, not on the variable: docs/mlir.md,
  finding A); a tenth of the accesses make a handle of their own in their
  island, just before them;
- up to six islands of one to five ops each, in program order: ReadVariableOp,
  AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp, AddV2, Sub,
  Mul, Neg, Identity, Const (inline, or an island of its own); an op's
  operands are values of earlier ops of its island, of earlier islands
  (which yield them), constants or the feed;
- control tokens: an island takes the token of an earlier island in a fifth
  of the cases;
- a `tf_device.cluster` around a run of an island's ops, opened most often
  at a resource access (`cluster_strategy`: always at the first access of
  an island, for the `mlir-cluster:` targets; `strategy`: in a fifth of the
  islands);
- fetches: some of the values read or computed; the others, and the islands
  that only read and compute for them, are dead code that
  `tf-executor-graph-pruning` deletes.  An island that writes and that no
  fetch reaches has its control token fetched (the writer's rule), and one
  whose token a fetched island takes is kept alive by that control alone.

Size.  `max_nodes` bounds the nodes (handles and constants included), and a
program has at most `max_accesses(max_nodes)` resource accesses: the check's
cost grows with the interleavings of accesses, not with pure ops, so the
accesses get a share of the bound, not all of it.

Entry points (the campaign generator interface of campaigns/loop.py,
``(max_nodes, observe) -> strategy of (program, feeds, init)``):
`strategy`, `cluster_strategy`; `build(d, ...)` from any `Draw`;
`random_programs(count, seed, ...)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Node, Program, TensorType
from tfsem.oracle.values import Tensor

from .builder import EDGE_INTS, build_inputs
from .draw import Draw, HypothesisDraw, RandomDraw, boolean, choice

#: islands of ops per program (handle and constant islands not counted)
MAX_ISLANDS = 6
#: ops per island
MAX_OPS = 5
#: the smallest max_nodes: a handle and two ops
MIN_NODES = 3
#: the kinds of op, each as often as it appears
KINDS = ("read", "read", "write", "assign_add", "assign_sub", "arith", "arith", "neg",
         "identity", "const")
ACCESSES = ("read", "write", "assign_add", "assign_sub")
_SMALL = (1, 2, 3, -1, 0, 5, 7, -2)


def max_accesses(max_nodes: int) -> int:
    """The most resource accesses a program of at most `max_nodes` nodes has."""
    return max(2, (2 * max_nodes) // 3)


@dataclass
class _State:
    nodes: list[Node] = field(default_factory=list)
    pool: list[tuple] = field(default_factory=list)     # (ref, island) of values
    handles: list[str] = field(default_factory=list)
    bodies: list[tuple[int, str]] = field(default_factory=list)  # (island, its last node)
    results: list[str] = field(default_factory=list)    # fetch candidates
    accesses: int = 0
    islands: int = 0
    clusters: int = 0
    counter: int = 0

    def copy(self) -> "_State":
        return _State(list(self.nodes), list(self.pool), list(self.handles), list(self.bodies),
                      list(self.results), self.accesses, self.islands, self.clusters,
                      self.counter)


class _Builder:
    def __init__(self, max_nodes: int, observe_state: bool, cluster_p: float):
        if not isinstance(max_nodes, int) or max_nodes < 1:
            raise ValueError(f"max_nodes must be a positive integer, got {max_nodes!r}")
        self.max_nodes = max(max_nodes, MIN_NODES)
        self.max_accesses = max_accesses(self.max_nodes)
        self.observe_state = observe_state
        self.cluster_p = cluster_p
        self.s = _State()
        self.variables: dict[str, TensorType] = {}
        self.feeds: dict[str, TensorType] = {}
        self.t = TensorType("int64", ())
        # the island being built
        self.k = 0
        self.cluster: int | None = None
        self.pending: list = []        # control inputs of the island's first op
        self.ops = 0

    def build(self, d: Draw) -> Program:
        self.t = TensorType("int64", choice(d, [(), (), (2,)]))
        for v in range(1 + d.index(2)):
            self.variables[f"x{v}"] = self.t
        if boolean(d, 0.25):
            self.feeds["a"] = self.t
            self.s.pool.append((FeedIn("a"), None))
        for v in list(self.variables):
            self._handle(v)
        if boolean(d, 0.35):            # a second handle of one variable
            self._handle(choice(d, list(self.variables)))
        for _ in range(MAX_ISLANDS):
            if not d.span(self._maybe_island):
                break
        outputs = self._outputs(d)          # (may add a final read)
        return Program(self.variables, tuple(self.s.nodes), outputs, self.feeds).validated()

    # -- naming -------------------------------------------------------------------

    def _name(self, island: int, kind: str, cluster: int | None = None) -> str:
        self.s.counter += 1
        c = f"cluster{cluster}/" if cluster is not None else ""
        return f"island{island}/{c}{kind}{self.s.counter}"

    def _new_island(self) -> int:
        self.s.islands += 1
        return self.s.islands

    def _handle(self, var: str) -> None:
        name = self._name(self._new_island(), "handle")
        self.s.nodes.append(Node(name, VAR, (), {"var": var}))
        self.s.handles.append(name)

    # -- islands ----------------------------------------------------------------------

    def _maybe_island(self, d: Draw) -> bool:
        first = d.index(10)
        if first == 0:
            return True                                     # skipped
        if self.s.bodies and first == 1:
            return False                                    # stop
        if len(self.s.nodes) >= self.max_nodes:
            return False
        saved = self.s.copy()
        self.k = self._new_island()
        self.cluster = None
        self.ops = 0
        self.pending = [ControlIn(last) for _, last in self.s.bodies if boolean(d, 0.2)]
        for _ in range(MAX_OPS):
            if not d.span(self._maybe_op):
                break
        if self.ops == 0:
            self.s = saved                                  # nothing in it
            self.s.islands = max(self.s.islands, self.k)    # names stay fresh
            return True
        self.s.bodies.append((self.k, self.s.nodes[-1].name))
        return True

    def _maybe_op(self, d: Draw) -> bool:
        first = d.index(8)
        if first == 0:
            return True                                     # skipped
        if self.ops and first == 1:
            return False                                    # stop
        if len(self.s.nodes) >= self.max_nodes:
            return False
        kind = choice(d, KINDS)
        access = kind in ACCESSES
        if access and self.s.accesses >= self.max_accesses:
            kind, access = "arith", False
        # a cluster opens (most often at an access) and closes between ops
        if self.cluster is None:
            if self.cluster_p and boolean(d, self.cluster_p if access else self.cluster_p / 4):
                self.s.clusters += 1
                self.cluster = self.s.clusters
        elif boolean(d, 0.3):
            self.cluster = None
        saved, ops, cluster, pending = self.s.copy(), self.ops, self.cluster, self.pending
        getattr(self, "_" + kind)(d)
        if len(self.s.nodes) > self.max_nodes:             # did not fit: drop it
            counter = self.s.counter
            self.s, self.ops, self.cluster, self.pending = saved, ops, cluster, pending
            self.s.counter = counter                        # names stay fresh
            return False
        return True

    def _add(self, kind: str, op: str, inputs: list, attrs: dict | None = None,
             value: bool = True) -> str:
        name = self._name(self.k, kind, self.cluster)
        if self.pending:
            inputs = list(inputs) + self.pending
            self.pending = []
        self.s.nodes.append(Node(name, op, tuple(inputs), attrs or {}))
        self.ops += 1
        if value:
            self.s.pool.append((DataIn(name), self.k))
        return name

    def _operand(self, d: Draw):
        """A value: a constant (the simplest), or one already computed."""
        k = d.index(len(self.s.pool) + 1)
        if k:
            return self.s.pool[k - 1][0]
        return self._constant(d)

    def _constant(self, d: Draw):
        value = choice(d, EDGE_INTS) if boolean(d, 0.1) else choice(d, _SMALL)
        tensor = Tensor(np.full(self.t.shape, value, dtype="int64"))
        if boolean(d, 0.5):                                 # inline, in this island
            name = self._name(self.k, "const", self.cluster)
        else:                                               # an island of its own
            name = self._name(self._new_island(), "const")
        self.s.nodes.append(Node(name, "Const", (), {"value": tensor}))
        return DataIn(name)

    # -- ops --------------------------------------------------------------------------

    def _resource(self, d: Draw) -> str:
        """A handle: one of the program's (the simplest), or, in a tenth of
        the cases, a new handle of one of its variables made in this island
        (outside any cluster), just before the access."""
        if not boolean(d, 0.1):
            return choice(d, self.s.handles)
        var = choice(d, list(self.variables))
        name = self._name(self.k, "handle")
        self.s.nodes.append(Node(name, VAR, (), {"var": var}))
        self.s.handles.append(name)
        return name

    def _read(self, d: Draw) -> None:
        h = self._resource(d)
        self.s.accesses += 1
        self.s.results.append(self._add("read", READ, [DataIn(h)]))

    def _assign(self, d: Draw, fn: str, kind: str) -> None:
        h = self._resource(d)
        v = self._operand(d)
        self.s.accesses += 1
        self._add(kind, ASSIGN, [DataIn(h), v], {"fn": fn}, value=False)

    def _write(self, d: Draw) -> None:
        self._assign(d, "Snd", "write")

    def _assign_add(self, d: Draw) -> None:
        self._assign(d, "Add", "assignadd")

    def _assign_sub(self, d: Draw) -> None:
        self._assign(d, "Sub", "assignsub")

    def _arith(self, d: Draw) -> None:
        op = choice(d, ("Add", "Sub", "Mul"))
        a, b = self._operand(d), self._operand(d)
        self.s.results.append(self._add(op.lower(), op, [a, b]))

    def _neg(self, d: Draw) -> None:
        self.s.results.append(self._add("neg", "Neg", [self._operand(d)]))

    def _identity(self, d: Draw) -> None:
        self.s.results.append(self._add("identity", "Identity", [self._operand(d)]))

    def _const(self, d: Draw) -> None:
        value = choice(d, _SMALL)
        tensor = Tensor(np.full(self.t.shape, value, dtype="int64"))
        self._add("const", "Const", [], {"value": tensor})

    # -- fetches ------------------------------------------------------------------------

    def _outputs(self, d: Draw) -> dict[str, DataIn]:
        p = 0.4 if self.observe_state else 0.6
        outs = {f"out{i}": DataIn(r) for i, r in
                enumerate(r for r in self.s.results if boolean(d, p))}
        if not outs:
            reads = [n.name for n in self.s.nodes if n.op == READ]
            if not self.observe_state and not reads and self.s.handles:
                # the state shows only through outputs: read a variable last
                self.k, self.cluster, self.pending = self._new_island(), None, []
                reads = [self._add("read", READ, [DataIn(self.s.handles[0])])]
            cands = self.s.results or reads
            if cands:
                outs["out0"] = DataIn(cands[-1])
        return outs


# ---------------------------------------------------------------------------
# Entry points


def build(d: Draw, max_nodes: int = 10, observe_state: bool = True,
          cluster_p: float = 0.2) -> Program:
    """One program from the choices of `d`, of at most max(max_nodes,
    MIN_NODES) nodes (one more when the state shows only through outputs and
    nothing was fetched: a final read); a cluster opens at a resource access
    with probability `cluster_p` (a quarter of it at other ops)."""
    return _Builder(max_nodes, observe_state, cluster_p).build(d)


def random_programs(count: int, seed: int, max_nodes: int = 10, cluster_p: float = 0.2
                    ) -> list[Program]:
    """`count` programs, the same for the same arguments."""
    return [build(RandomDraw(random.Random(f"tfsem-mlir:{seed}:{i}")), max_nodes,
                  cluster_p=cluster_p) for i in range(count)]


def strategy(max_nodes: int, observe: str, cluster_p: float = 0.2):
    """The campaign generator: a Hypothesis strategy of (program, feeds,
    init), programs that name their islands (written by
    graphdef/mlir_writer.py), clusters in some islands."""
    from hypothesis import strategies as st  # noqa: PLC0415

    observe_state = observe != "outputs"

    @st.composite
    def case(draw):
        d = HypothesisDraw(draw)
        p = build(d, max_nodes, observe_state, cluster_p)
        feeds, init = build_inputs(d, p)
        return p, feeds, init

    return case()


def cluster_strategy(max_nodes: int, observe: str):
    """`strategy` with a cluster opened at most resource accesses (the
    `mlir-cluster:` targets' default)."""
    return strategy(max_nodes, observe, cluster_p=0.7)


#: the generator of the GraphDef route (programs tfsem exports and
#: TensorFlow's importer turns into one-op islands)
GRAPHDEF_GENERATOR = "tfsem.generators.grappler:mixed_strategy"
#: the share of a mixed strategy's programs that take the GraphDef route
GRAPHDEF_SHARE = 0.25


def _mixed(max_nodes: int, observe: str, cluster_p: float):
    from hypothesis import strategies as st  # noqa: PLC0415

    from .grappler import mixed_strategy as graphdef_programs  # noqa: PLC0415
    direct = strategy(max_nodes, observe, cluster_p)
    exported = graphdef_programs(max_nodes, observe)

    @st.composite
    def case(draw):
        # one choice, shrinking to the direct route
        return draw(exported if boolean(HypothesisDraw(draw), GRAPHDEF_SHARE) else direct)

    return case()


def mixed_strategy(max_nodes: int, observe: str):
    """The `mlir:` targets' default generator: three programs in four from
    `strategy` (modules written directly), the others from the Grappler
    generator (the GraphDef route: exported, imported by TensorFlow)."""
    return _mixed(max_nodes, observe, 0.2)


def mixed_cluster_strategy(max_nodes: int, observe: str):
    """The `mlir-cluster:` targets' default generator: `cluster_strategy` for
    three programs in four, the GraphDef route (a hand-built cluster around
    a run of accesses) for the others."""
    return _mixed(max_nodes, observe, 0.7)
