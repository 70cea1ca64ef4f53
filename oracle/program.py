"""TF programs (seed 000, section 3.1.1) as immutable values.

A program is a DAG of nodes labelled with operations (a registry function f,
`Var(x)`, `Read`, `Assign-f`), joined by tensor, variable and control edges,
plus input edges (feeds, and control inputs holding GO) and output edges
(fetches).  :func:`validate` checks every arity constraint of 3.1.1, edge
kinds, acyclicity and names, and reports *each* violation with the node (or
field) and the rule it breaks.

Edges are derived, not stored: a node lists its inputs, and an output port may
feed several consumers (each consumer gets an edge of its own, as in
TensorFlow).  `strict=True` enforces the seed's one-consumer-per-port rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any, Iterable, Mapping

from . import functions as fns
from .values import DTYPES, Tensor, exact

VAR, READ, ASSIGN = "Var", "Read", "Assign"
TENSOR, VARIABLE, CONTROL = "tensor", "variable", "control"

#: The control-flow primitives (SPEC section 9; the whitepaper's section 4.4,
#: section 5 of "A Computational Model for TensorFlow").
SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, LOOP_COND = (
    "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")
CONTROL_FLOW_OPS = (SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, LOOP_COND)
#: TensorFlow 1's stack ops (oracle/opdefs/stacks.py): functions of the
#: registry by name, but steps on step-local state that only the control-flow
#: engine runs, so a program holding one counts as having control flow.
STACK_OPS = ("StackV2", "StackPushV2", "StackPopV2", "StackCloseV2")
_CONTROL_FLOW_OR_STACK = frozenset(CONTROL_FLOW_OPS + STACK_OPS)
_NAME, _OP = attrgetter("name"), attrgetter("op")
#: The nodes whose output forwards their first data input's kind (Program.port_kind).
_FORWARDING = frozenset((SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION))
#: Enter's attributes and their defaults (TensorFlow's: parallel_iterations 10)
ENTER_ATTRS = {"frame_name": None, "is_constant": False, "parallel_iterations": 10}


# ---------------------------------------------------------------------------
# Inputs of a node


@dataclass(frozen=True, slots=True)
class DataIn:
    """Data edge from output port `port` of node `node`."""
    node: str
    port: int = 0

    def __str__(self) -> str:
        return self.node if self.port == 0 else f"{self.node}:{self.port}"


@dataclass(frozen=True, slots=True)
class ControlIn:
    """Control edge from node `node`."""
    node: str

    def __str__(self) -> str:
        return f"^{self.node}"


@dataclass(frozen=True, slots=True)
class FeedIn:
    """Input tensor edge (a feed) called `name`."""
    name: str

    def __str__(self) -> str:
        return f"${self.name}"


@dataclass(frozen=True, slots=True)
class FeedControlIn:
    """Input control edge: holds GO initially."""
    name: str

    def __str__(self) -> str:
        return f"^${self.name}"


Input = DataIn | ControlIn | FeedIn | FeedControlIn
_DATA_INPUTS = (DataIn, FeedIn)
_CONTROL_INPUTS = (ControlIn, FeedControlIn)
_EDGES = (DataIn, ControlIn)   # inputs from a node of the program


def parse_input(text: str) -> Input:
    """Parse `n`, `n:k`, `^n`, `$name` or `^$name` (raises ValueError)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"an input is a non-empty string, got {text!r}")
    if text.startswith("^$"):
        return FeedControlIn(_name(text[2:], text))
    if text.startswith("^"):
        return ControlIn(_name(text[1:], text))
    if text.startswith("$"):
        return FeedIn(_name(text[1:], text))
    node, port = parse_port(text)
    return DataIn(node, port)


def parse_port(text: str) -> tuple[str, int]:
    if not isinstance(text, str) or not text:
        raise ValueError(f"a port is written \"n\" or \"n:k\", got {text!r}")
    node, sep, port = text.rpartition(":")
    if sep and port.isdigit():
        return _name(node, text), int(port)
    return _name(text, text), 0


def _name(name: str, whole: str) -> str:
    if not name:
        raise ValueError(f"empty name in {whole!r}")
    return name


# ---------------------------------------------------------------------------
# Declarations, nodes, programs


@dataclass(frozen=True, slots=True)
class TensorType:
    dtype: str = "int64"
    shape: tuple[int, ...] = ()


@dataclass(frozen=True, init=False)
class Node:
    """A node: its name, operation and ordered inputs.

    `op` is "Var", "Read", "Assign" or a registry function's name.  `attrs`
    holds `var` for Var, `fn` for Assign, and the function's attributes
    (Const's `value` as a Tensor).
    """

    name: str
    op: str
    inputs: tuple[Input, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, name: str, op: str, inputs: Iterable[Input] = (),
                 attrs: Mapping[str, Any] | None = None) -> None:
        # The dataclass's own __init__ sets each field through
        # object.__setattr__ and copies `attrs` again: a large graph's import
        # builds tens of thousands of nodes, so the fields go into __dict__ at
        # once, and attributes already frozen (another node's) are shared.
        d = self.__dict__
        d["name"] = name
        d["op"] = op
        d["inputs"] = inputs if type(inputs) is tuple else tuple(inputs)
        d["attrs"] = attrs if type(attrs) is _FrozenDict else \
            (_FrozenDict(attrs) if attrs else _NO_ATTRS)

    def __hash__(self) -> int:
        # (the dataclass's hash of the four fields, made once: a node is
        # immutable, and a check hashes every node of both programs when it
        # compares their components (checking/symbolic.py
        # `component_signature`): each hash walks the inputs' dataclasses
        # and the attributes' exact key, 0.1 s for MobileNetV2's two
        # programs, again for every rewrite of the same original)
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash((self.name, self.op, self.inputs, self.attrs))
        return h

    def __getstate__(self) -> dict:
        # (a hash is this process's: str hashes are salted per process)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def data_inputs(self) -> tuple[DataIn | FeedIn, ...]:
        return tuple([i for i in self.inputs if isinstance(i, _DATA_INPUTS)])

    @property
    def control_inputs(self) -> tuple[ControlIn | FeedControlIn, ...]:
        return tuple([i for i in self.inputs if isinstance(i, _CONTROL_INPUTS)])

    @property
    def var(self) -> str:
        return self.attrs["var"]

    @property
    def fn(self) -> str:
        return self.attrs["fn"]

    @property
    def kind(self) -> str:
        """"Var", "Read", "Assign" or "function"."""
        if self.op in CONTROL_FLOW_OPS:
            return "control-flow"
        return self.op if self.op in (VAR, READ, ASSIGN) else "function"

    def n_outputs(self) -> int:
        if self.op == VAR or self.op == READ:
            return 1
        if self.op == ASSIGN:
            return 0
        if self.op in (SWITCH, MERGE):
            return 2
        if self.op in CONTROL_FLOW_OPS:
            return 1
        f = fns.lookup(self.op)
        return f.n_out if f else 0

    def output_kind(self, port: int) -> str:
        """The kind of an output port, as far as the node alone says (a
        control-flow node forwards its input's kind: ask
        :meth:`Program.port_kind`)."""
        return VARIABLE if self.op == VAR else TENSOR

    def replace(self, **changes: Any) -> "Node":
        data = {"name": self.name, "op": self.op, "inputs": self.inputs, "attrs": dict(self.attrs)}
        data.update(changes)
        return Node(**data)


class _FrozenDict(dict):
    """A dict that refuses mutation and hashes by content."""

    def _refuse(self, *a: Any, **k: Any) -> None:
        raise TypeError("program attributes are immutable")

    # (`|=` too: dict's in-place union would change the mapping under the
    # refusals above, and the memos keyed by a program object (its cones,
    # checking/demand.py; `Program.node`) assume its attributes never change)
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = \
        __ior__ = _refuse  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self.key())

    def key(self) -> str:
        """`functions.attrs_key(self)`, made once: the mapping refuses every
        change, as its program does (a node's hash, kept on the node, rests
        on the same), and the key is a function of its items alone.  A
        rewrite's nodes are hashed (the checker's components) and its
        identity made (program memos) in one check: each made every key
        again, 0.1 s for MobileNetV2's rewrite (tests/test_program_attrs_key_memo.py)."""
        k = self.__dict__.get("_key")
        if k is None:
            k = self.__dict__["_key"] = fns.attrs_key(self)
        return k

    def __eq__(self, other: object) -> bool:
        # equal values bit for bit (values.exact): two Consts of NaNs of
        # different payloads are different nodes, which a Bitcast tells apart
        eq = dict.__eq__(self, other)
        if eq is not True:
            return eq
        return all(exact(v) == exact(other[k]) for k, v in self.items() if type(v) is Tensor)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


def _key_of(attrs: Mapping[str, Any]) -> str:
    """`functions.attrs_key(attrs)`, the one a node's frozen attributes keep."""
    return attrs.key() if type(attrs) is _FrozenDict else fns.attrs_key(attrs)


#: The attributes of every node that has none (immutable, so shared).
_NO_ATTRS = _FrozenDict()


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where (a node, input, field), which rule, and why."""
    where: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message} [{self.rule}]"


class ProgramError(ValueError):
    """A malformed program; `violations` lists every broken rule."""

    def __init__(self, violations: Iterable[Violation]):
        self.violations = list(violations)
        super().__init__("\n".join(str(v) for v in self.violations))


@dataclass(frozen=True, eq=False)
class Program:
    """An immutable TF program.  Build one, then call :meth:`validated`."""

    variables: Mapping[str, TensorType]
    nodes: tuple[Node, ...]
    outputs: Mapping[str, DataIn]
    feeds: Mapping[str, TensorType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", _FrozenMap(self.variables))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "outputs", _FrozenMap(self.outputs))
        object.__setattr__(self, "feeds", _FrozenMap(self.feeds))

    # -- structure ----------------------------------------------------------

    @cached_property
    def node(self) -> Mapping[str, Node]:
        # (as {n.name: n for n in nodes}, a later node of a name winning, in
        # C; read-only as the program is: the memos keyed by a program
        # object, oracle/applications.py, checking/canonical_memo.py, the
        # structural rule's, assume its nodes never change)
        return _FrozenMap(zip(map(_NAME, self.nodes), self.nodes))

    @cached_property
    def has_control_flow(self) -> bool:
        """Whether the program needs the control-flow engine: it has a
        control-flow primitive or a stack op (a stack is step-local state
        that only that engine models: oracle/opdefs/stacks.py)."""
        return not _CONTROL_FLOW_OR_STACK.isdisjoint(map(_OP, self.nodes))

    @cached_property
    def has_stacks(self) -> bool:
        # (a stack op counts as control flow: none where there is none)
        return self.has_control_flow and any(n.op in STACK_OPS for n in self.nodes)

    @cached_property
    def control_flow_nodes(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes if n.op in CONTROL_FLOW_OPS or n.op in STACK_OPS)

    def port_kind(self, name: str, port: int) -> str:
        """The kind of output `port` of node `name`: a Switch, Merge (port 0),
        Enter, Exit or NextIteration forwards its first data input, so it is a
        variable edge when that input is one (TensorFlow passes resource
        handles through them); a Merge's port 1 (value_index) is a tensor."""
        seen: set[str] = set()
        while True:
            n = self.node.get(name)
            if n is None or n.op not in (SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION) \
                    or (n.op == MERGE and port == 1) or name in seen or not n.data_inputs:
                return n.output_kind(port) if n is not None else TENSOR
            seen.add(name)
            first = n.data_inputs[0]
            if isinstance(first, FeedIn):
                return TENSOR
            name, port = first.node, first.port

    def is_back_edge(self, name: str, inp: Input) -> bool:
        """A loop's back edge: a data edge from a NextIteration into a Merge
        (the only place a cycle is allowed)."""
        if not isinstance(inp, DataIn) or self.node[name].op != MERGE:
            return False
        src = self.node.get(inp.node)
        return src is not None and src.op == NEXT_ITERATION

    @cached_property
    def frames(self) -> Mapping[str, tuple[str, ...]]:
        """The static frame of every node: the names of the loops (frames)
        that enclose it, outermost first ({} for a node TensorFlow could not
        place: validation reports it)."""
        return _infer_frames(self)[0]

    def feed_type(self, name: str) -> TensorType:
        return self.feeds.get(name, TensorType())

    @cached_property
    def feed_names(self) -> tuple[str, ...]:
        """Every feed the program uses or declares, sorted."""
        used = {i.name for n in self.nodes for i in n.inputs if isinstance(i, FeedIn)}
        return tuple(sorted(used | set(self.feeds)))

    @cached_property
    def consumers(self) -> Mapping[tuple[str, int], tuple[tuple[str, int], ...]]:
        """(node, port) -> the (consumer node, input index) pairs it feeds."""
        out: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for n in self.nodes:
            for idx, i in enumerate(n.inputs):
                if isinstance(i, DataIn):
                    out.setdefault((i.node, i.port), []).append((n.name, idx))
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def _control_consumers(self) -> Mapping[str, tuple["Node", ...]]:
        """node -> the nodes with a control edge from it, in program order
        (each once)."""
        out: dict[str, list[Node]] = {}
        for m in self.nodes:
            for src in dict.fromkeys(i.node for i in m.inputs if isinstance(i, ControlIn)):
                out.setdefault(src, []).append(m)
        return {k: tuple(v) for k, v in out.items()}

    def ancestors(self, roots) -> set[str]:
        """`roots` and every node with a path of data or control edges into
        one (through `predecessors`)."""
        keep: set[str] = set()
        stack = sorted(roots)
        while stack:
            name = stack.pop()
            if name in keep:
                continue
            keep.add(name)
            stack.extend(self.predecessors(name))
        return keep

    def predecessors(self, name: str) -> tuple[str, ...]:
        """Nodes with an edge (data or control) into `name` (a loop's back
        edge, NextIteration into Merge, excluded: it closes the only cycles a
        program may have)."""
        return self._predecessors[name]

    @cached_property
    def _predecessors(self) -> Mapping[str, tuple[str, ...]]:
        """predecessors() of every node, computed once (each call of
        `predecessors` used to walk the node's inputs again)."""
        out: dict[str, tuple[str, ...]] = {}
        for n in self.nodes:
            if n.op == MERGE:
                srcs = [i.node for i in n.inputs if isinstance(i, _EDGES)
                        and not self.is_back_edge(n.name, i)]
            else:
                srcs = [i.node for i in n.inputs if isinstance(i, _EDGES)]
            out[n.name] = tuple(dict.fromkeys(srcs)) if len(srcs) > 1 else tuple(srcs)
        return out

    @cached_property
    def declared_in_order(self) -> bool:
        """Whether every node comes after each node it has an edge from (a
        loop's back edge aside), so that `nodes` is itself a topological
        order (though not necessarily `topological_order`, Kahn's): what an
        import builds.  Validation finds it out on its way."""
        position = {n.name: k for k, n in enumerate(self.nodes)}
        if len(position) != len(self.nodes):
            return False
        preds = self._predecessors
        for k, n in enumerate(self.nodes):
            for q in preds[n.name]:
                if position.get(q, k) >= k:
                    return False
        return True

    @cached_property
    def successors(self) -> Mapping[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        # (each name once, where it first comes: a second node of one name
        # has the same predecessors, and its entries would be dropped as
        # repeats below)
        for name, ps in self._predecessors.items():
            for p in ps:
                out[p].append(name)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        """Kahn's algorithm, ties broken by declaration order (deterministic)."""
        indeg = {k: len(v) for k, v in self._predecessors.items()}
        order: list[str] = []
        ready = [n.name for n in self.nodes if indeg[n.name] == 0]
        ready.reverse()
        succs = self.successors if ready else {}
        pop, push, visit = ready.pop, ready.append, order.append
        while ready:
            name = pop()
            visit(name)
            for s in reversed(succs[name]):
                k = indeg[s] - 1
                indeg[s] = k
                if not k:
                    push(s)
        if len(order) != len(self.nodes):
            raise ProgramError([Violation("program", "cycle", "the graph has a cycle")])
        return tuple(order)

    def accessed_variable(self, name: str) -> str | None:
        """The variable a Read or Assign node accesses (statically: variable
        edges come only from Var nodes)."""
        n = self.node[name]
        if n.op in (READ, ASSIGN) and n.inputs:
            # (the first input, where it is a data edge, is the first data
            # input, with no tuple of them made: the structural rule asks
            # for every access of each rewrite)
            first = n.inputs[0]
            if not isinstance(first, DataIn):
                first = n.data_inputs[0]
                if not isinstance(first, DataIn):
                    return None
            src = self.node.get(first.node)
            if src is not None and src.op == VAR:
                return src.var
        return None

    # -- building -----------------------------------------------------------

    def replace(self, **changes: Any) -> "Program":
        data = {"variables": self.variables, "nodes": self.nodes,
                "outputs": self.outputs, "feeds": self.feeds}
        data.update(changes)
        return Program(**data)

    def validated(self, strict: bool = False) -> "Program":
        # (a program found valid is not validated again while what its
        # validity depends on is as it was: the program (immutable), the
        # registry's version and the very functions its ops and Assigns
        # name (their inputs, outputs, attributes and assignability; one
        # replaced by hand changes no version, hence the identities), and
        # `strict`.  A check validates its original every time, and
        # Grappler's five checks of one graph share it: 0.015 s a check
        # on MobileNetV2.  tests/test_program_validated_memo.py)
        if self.known_valid(strict):
            return self
        key = (strict, *fns.evaluation_epoch())
        names = {n.attrs.get("fn") if n.op == ASSIGN else n.op for n in self.nodes}
        looked_up = tuple((name, fns.lookup(name)) for name in names if isinstance(name, str))
        violations = validate(self, strict=strict)
        if violations:
            raise ProgramError(violations)
        self.__dict__["_valid"] = (key, looked_up)
        return self

    def known_valid(self, strict: bool = False) -> bool:
        """Whether `validated` found this program valid under what its
        validity depends on now (`validated`'s memo: `strict`, the
        registry's version, the very functions its ops and Assigns name)."""
        known = self.__dict__.get("_valid")
        return known is not None and known[0] == (strict, *fns.evaluation_epoch()) \
            and fns.still_registered(known[1])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return False
        if self is other or self._differs_at_once(other):
            return self is other
        return self._identity == other._identity

    def _differs_at_once(self, other: "Program") -> bool:
        """True only where the two `_identity`s differ, found without
        making them (a check compares the original with each rewrite, and
        the rewrite's identity, an exact attribute key per node, took 0.06 s
        on MobileNetV2): the identity is the sorted items of the variables,
        the feeds, the outputs and the nodes' (name, op, inputs, attribute
        key).  Sorted items of two dicts are equal exactly where the dicts
        are (their keys are distinct, so sorting compares keys alone); the
        node tuples have one entry per node; and where neither program has
        two nodes of one name, the sorted node entries are equal exactly
        where each name has the same (op, inputs, key) in both, so a name
        missing, or an op or inputs unequal, is a difference.  False means
        nothing: `__eq__` then compares the identities
        (tests/test_program_equality_shortcut.py compares the two on
        programs that differ and that do not)."""
        mine, theirs = self.nodes, other.nodes
        if len(mine) != len(theirs):
            return True
        if (self.variables != other.variables or self.feeds != other.feeds
                or self.outputs != other.outputs):
            return True
        node, node2 = self.node, other.node
        if len(node) != len(mine) or len(node2) != len(theirs):
            return False            # (a name twice: the identities decide)
        for n in mine:
            m = node2.get(n.name)
            if m is None or (m is not n and (m.op != n.op or m.inputs != n.inputs)):
                return True
        return False

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        # (made once: a program is immutable.  Made from a part of
        # `_identity` that equal programs share -- their variables, feeds
        # and outputs, their number of nodes and the set of their nodes'
        # (name, op), each of which `_identity` holds whole -- so equal
        # programs hash equal, as a hash must; programs that differ only in
        # their nodes' inputs or attributes hash alike and are told apart by
        # `__eq__` (`_differs_at_once` first).  The whole identity walked
        # every node's inputs and attributes -- a dataclass hash per edge --
        # 15 ms for MobileNetV2's 5,894 nodes, paid by every rewrite the
        # checker looks up in its memos (explore's compiled components);
        # this takes 1 ms.  tests/test_program_hashes.py)
        return hash((tuple(sorted(self.variables.items())), tuple(sorted(self.feeds.items())),
                     tuple(sorted(self.outputs.items())), len(self.nodes),
                     frozenset([(n.name, n.op) for n in self.nodes])))

    @cached_property
    def _identity(self) -> tuple:
        return (tuple(sorted(self.variables.items())),
                tuple(sorted(self.feeds.items())),
                tuple(sorted(((n.name, n.op, n.inputs, _key_of(n.attrs)) for n in self.nodes))),
                tuple(sorted(self.outputs.items())))


class _FrozenMap(dict):
    def _refuse(self, *a: Any, **k: Any) -> None:
        raise TypeError("programs are immutable")

    # (`|=` too, as `_FrozenDict`'s: a program's outputs, variables and
    # feeds changed in place would leave its kept cones, checking/demand.py
    # `cone`, and its cached properties describing another program)
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = \
        __ior__ = _refuse  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


# ---------------------------------------------------------------------------
# Validation


def validate(p: Program, strict: bool = False) -> list[Violation]:
    """Every violation of section 3.1.1's constraints and SPEC section 1."""
    # (a program `Program.validated` found valid has none while what its
    # validity depends on is as it was then -- the very argument of that
    # memo: the program is immutable, and the answer depends on it, on
    # `strict` and on the functions its ops and Assigns name, which
    # `still_registered` compares by identity, under the registry's
    # version.  The graph importer validates every program it makes, and
    # the checker validated each imported rewrite once more: 5 ms a check
    # on MobileNetV2.  tests/test_program_validated_memo.py compares the
    # two answers, and a function replaced since validates again)
    if p.known_valid(strict):
        return []
    return _violations(p, strict)


def _violations(p: Program, strict: bool) -> list[Violation]:
    """`validate`'s answer, worked out."""
    out: list[Violation] = []

    def bad(where: str, rule: str, message: str) -> None:
        out.append(Violation(where, rule, message))

    for x, t in p.variables.items():
        _check_type(f"variable {x!r}", t, bad)
    for f, t in p.feeds.items():
        _check_type(f"feed {f!r}", t, bad)

    seen: set[str] = set()
    for n in p.nodes:
        if n.name in seen:
            bad(f"node {n.name!r}", "duplicate-name", "two nodes have this name")
        seen.add(n.name)
        if "@" in n.name:
            # schedules name a decomposed Assign's steps n@read and n@write: a
            # node called "a@read" would be one of them (TensorFlow's node
            # names never hold '@')
            bad(f"node {n.name!r}", "bad-name", "'@' is reserved for the steps of a decomposed "
                                                "Assign in schedules (n@read, n@write)")

    # One pass over the nodes, linear in nodes and edges: what depends on an
    # op alone (its function, its number of outputs) is looked up once per op,
    # and whether the nodes are declared after their inputs -- then there is
    # no cycle and Kahn's algorithm need not run here -- is seen on the way.
    node = p.node
    position = dict(zip(node, range(len(node)))) if len(node) == len(p.nodes) else None
    in_order = position is not None
    functions: dict[str, Any] = {}
    n_outputs: dict[str, int] = {}
    checks: dict[str, Any] = {}       # op -> what its nodes need (_quick_checks)
    assignable: dict[Any, bool] = {}  # Assign's fn -> whether it is assignable
    for n in p.nodes:
        op, inputs = n.op, n.inputs
        # The common case first: a Var, Read, Assign or function node whose
        # inputs are edges from nodes that forward nothing, checked in one
        # pass over its inputs.  Anything else -- and anything wrong -- takes
        # the full path below, which reports each violation in order.
        need = checks.get(op, False)
        if need is False:
            need = checks[op] = _quick_checks(op)
        if need is not None:
            n_in, attrs_needed, variable_first = need
            ok = True
            if op == VAR:
                ok = n.attrs.get("var") in p.variables
            elif op == ASSIGN:
                fn = n.attrs.get("fn", "")
                ok = assignable.get(fn)
                if ok is None:
                    f = fns.lookup(fn)
                    ok = assignable[fn] = f is not None and f.assignable
            elif attrs_needed:
                ok = all(a in n.attrs for a in attrs_needed)
            if ok:
                count = 0
                here = position[n.name] if in_order else 0
                for inp in inputs:
                    t = type(inp)
                    if t is DataIn:
                        src = node.get(inp.node)
                        if src is None or src.op in _FORWARDING \
                                or (src.op == VAR) != (variable_first and count == 0):
                            ok = False
                            break
                        k = n_outputs.get(src.op)
                        if k is None:
                            k = n_outputs[src.op] = src.n_outputs()
                        if inp.port >= k:
                            ok = False
                            break
                        count += 1
                        if in_order and position[inp.node] >= here:
                            in_order = False
                    elif t is ControlIn:
                        if inp.node not in node:
                            ok = False
                            break
                        if in_order and position[inp.node] >= here:
                            in_order = False
                    elif t is FeedIn:
                        if variable_first and count == 0:
                            ok = False
                            break
                        count += 1
                    elif t is not FeedControlIn:
                        ok = False
                        break
                if ok and count == n_in:
                    continue
        data = n.data_inputs
        if op == VAR:
            expected_in = 0
            if n.attrs.get("var") not in p.variables:
                bad(f"node {n.name!r}", "unknown-variable",
                    f"Var of undeclared variable {n.attrs.get('var')!r}")
        elif op == READ:
            expected_in = 1
        elif op == ASSIGN:
            expected_in = 2
            f = fns.lookup(n.attrs.get("fn", ""))
            if f is None:
                bad(f"node {n.name!r}", "unknown-function",
                    f"Assign with unknown function {n.attrs.get('fn')!r}")
            elif not f.assignable:
                bad(f"node {n.name!r}", "arity",
                    f"Assign-{f.name} needs a function of 2 arguments and 1 result, "
                    f"{f.name} has {f.n_in} and {f.n_out}")
        elif op in CONTROL_FLOW_OPS:
            expected_in = _check_control_flow_node(p, n, f"node {n.name!r}", bad)
        else:
            f = functions.get(op, False)
            if f is False:
                f = functions[op] = fns.lookup(op)
            if f is None:
                bad(f"node {n.name!r}", "unknown-op", f"unknown operation {op!r}")
                in_order = False   # (its inputs are not looked at: let Kahn decide)
                continue
            expected_in = f.n_in
            if f.attrs:
                for attr in f.attrs:
                    if attr not in n.attrs:
                        bad(f"node {n.name!r}", "missing-attribute",
                            f"{op} needs attribute {attr!r}")
        if len(data) != expected_in:
            bad(f"node {n.name!r}", "arity",
                f"{op} takes {expected_in} data input(s), got {len(data)}")

        if op not in CONTROL_FLOW_OPS:   # (else checked by _check_control_flow_node)
            for idx, inp in enumerate(data):
                want = VARIABLE if (idx == 0 and (op == READ or op == ASSIGN)) else TENSOR
                if isinstance(inp, FeedIn):
                    got = TENSOR
                else:
                    src = node.get(inp.node)
                    if src is None:
                        continue  # dangling: reported below
                    if src.op in _FORWARDING:
                        got = p.port_kind(src.name, inp.port)
                    else:   # (what port_kind says of any other node)
                        got = VARIABLE if src.op == VAR else TENSOR
                if got != want:
                    bad(f"node {n.name!r} input {idx} ({inp})", "edge-kind",
                        f"{op} input {idx} must be a {want} edge, {inp} is a {got} edge")

        here = position[n.name] if in_order else 0
        for inp in inputs:
            if isinstance(inp, _EDGES):
                src = node.get(inp.node)
                if src is None:
                    bad(f"node {n.name!r} input {inp}", "unknown-node",
                        f"no node named {inp.node!r}")
                    continue
                if isinstance(inp, DataIn):
                    k = n_outputs.get(src.op)
                    if k is None:
                        k = n_outputs[src.op] = src.n_outputs()
                    if inp.port >= k:
                        bad(f"node {n.name!r} input {inp}", "bad-port",
                            f"{src.name} ({src.op}) has {k} output port(s), not port {inp.port}")
                if in_order and position[inp.node] >= here and not p.is_back_edge(n.name, inp):
                    in_order = False

    for name, port in p.outputs.items():
        src = p.node.get(port.node)
        where = f"output {name!r}"
        if src is None:
            bad(where, "unknown-node", f"no node named {port.node!r}")
        elif port.port >= src.n_outputs():
            bad(where, "bad-port", f"{src.name} ({src.op}) has {src.n_outputs()} output port(s), "
                                   f"not port {port.port}")
        elif p.port_kind(port.node, port.port) == VARIABLE:
            bad(where, "edge-kind", f"an output is a tensor edge, {port} is a variable edge")

    if in_order and not out:
        p.__dict__["declared_in_order"] = True   # (the cached property, found out here)
    if not in_order and not any(v.rule in ("unknown-node", "duplicate-name") for v in out):
        try:
            p.topological_order
        except ProgramError as exc:
            cyc = _find_cycle(p)
            why = (" (a cycle is allowed only through a NextIteration into a Merge, "
                   "a loop's back edge)") if p.has_control_flow else ""
            out.extend(Violation(f"node {cyc[0]!r}" if cyc else "program", "cycle",
                                 (_cycle_text(cyc) if cyc else v.message) + why)
                       for v in exc.violations)

    if p.has_control_flow and not any(v.rule in ("unknown-node", "duplicate-name", "cycle",
                                                 "bad-port") for v in out):
        out.extend(_infer_frames(p)[1])
    if p.has_stacks and not any(v.rule in ("unknown-node", "duplicate-name", "bad-port")
                                for v in out):
        _check_stack_handles(p, bad)
    if strict:
        _check_strict(p, bad)
    return out


def _check_stack_handles(p: Program, bad) -> None:
    """A stack's handle (StackV2's output, and what the control-flow
    primitives forward of it) goes only to input 0 of the stack ops and to
    the primitives, and input 0 of a push, pop or close is one: a handle is
    no tensor, and a stack op on anything else is not modelled
    (oracle/opdefs/stacks.py)."""
    handles = {(n.name, 0) for n in p.nodes if n.op == STACK_OPS[0]}
    changed = True
    while changed:   # (through loops: a NextIteration feeds a Merge)
        changed = False
        for n in p.nodes:
            if n.op in _FORWARDING and (n.name, 0) not in handles and any(
                    isinstance(i, DataIn) and (i.node, i.port) in handles
                    for i in n.data_inputs[:1 if n.op != MERGE else None]):
                handles.add((n.name, 0))
                if n.op == SWITCH:
                    handles.add((n.name, 1))
                changed = True
    for n in p.nodes:
        for idx, i in enumerate(n.data_inputs):
            is_handle = isinstance(i, DataIn) and (i.node, i.port) in handles
            wants = n.op in STACK_OPS[1:] and idx == 0
            if n.op in _FORWARDING and not (n.op == SWITCH and idx == 1):
                continue
            if wants and not is_handle:
                bad(f"node {n.name!r} input {idx} ({i})", "edge-kind",
                    f"{n.op} input 0 must be a stack's handle (a StackV2's output, or one "
                    f"forwarded by control-flow primitives), {i} is not")
            elif is_handle and not wants:
                bad(f"node {n.name!r} input {idx} ({i})", "edge-kind",
                    f"{i} is a stack's handle: only input 0 of StackPushV2, StackPopV2 and "
                    f"StackCloseV2 and the control-flow primitives take one, not {n.op} "
                    f"input {idx}")
    for name, port in p.outputs.items():
        if (port.node, port.port) in handles:
            bad(f"output {name!r}", "edge-kind", f"{port} is a stack's handle, not a tensor")


def _quick_checks(op: str) -> tuple[int, tuple[str, ...], bool] | None:
    """(data inputs, attributes needed, whether data input 0 is a variable
    edge) of the nodes of `op` that validate's quick path checks, or None
    for a control-flow primitive or an unknown op (the full path)."""
    if op == VAR:
        return 0, (), False
    if op == READ:
        return 1, (), True
    if op == ASSIGN:
        return 2, (), True
    if op in CONTROL_FLOW_OPS:
        return None
    f = fns.lookup(op)
    return None if f is None else (f.n_in, tuple(f.attrs), False)


def _check_control_flow_node(p: Program, n: Node, where: str, bad) -> int:
    """Arity, edge kinds and attributes of a control-flow node; returns the
    number of data inputs it takes (-1 checked here: Merge takes k >= 1)."""
    data = n.data_inputs
    kinds = [_input_kind(p, i) for i in data]
    if n.op == SWITCH:
        # Switch(data, pred): output 0 carries data when pred is false, output 1 when true
        if len(data) == 2 and kinds[1] not in (None, TENSOR):
            bad(f"{where} input 1 ({data[1]})", "edge-kind",
                f"Switch input 1 (the predicate) must be a tensor edge, {data[1]} is a {kinds[1]} edge")
        return 2
    if n.op == MERGE:
        if not data:
            bad(where, "arity", "Merge takes 1 or more data inputs, got 0")
        known = {k for k in kinds if k is not None}
        if len(known) > 1:
            bad(where, "edge-kind", "Merge's data inputs must all be tensor edges or all variable "
                                    f"edges, got {', '.join(f'{i} ({k})' for i, k in zip(data, kinds))}")
        return len(data)
    if n.op == ENTER:
        frame = n.attrs.get("frame_name")
        if not isinstance(frame, str) or not frame:
            bad(where, "missing-attribute", "Enter needs attribute 'frame_name' (a non-empty string)")
        elif "@" in frame:
            bad(where, "bad-name", f"frame name {frame!r}: '@' is reserved for schedules "
                                   "(node@frame:iteration)")
        if not isinstance(n.attrs.get("is_constant", False), bool):
            bad(where, "bad-value", "Enter attribute 'is_constant' is true or false")
        pi = n.attrs.get("parallel_iterations", 10)
        if isinstance(pi, bool) or not isinstance(pi, int) or pi < 1:
            bad(where, "bad-value", f"Enter attribute 'parallel_iterations' is an integer >= 1, got {pi!r}")
    if n.op == LOOP_COND and data and kinds[0] not in (None, TENSOR):
        bad(f"{where} input 0 ({data[0]})", "edge-kind",
            f"LoopCond input 0 must be a tensor edge, {data[0]} is a {kinds[0]} edge")
    if n.op == NEXT_ITERATION:
        for consumer, _ in p.consumers.get((n.name, 0), ()):
            if p.node[consumer].op != MERGE:
                bad(where, "next-iteration", f"a NextIteration feeds only Merge nodes (the loop's "
                                             f"back edge), {consumer!r} is a {p.node[consumer].op}")
        for m in p._control_consumers.get(n.name, ()):
            bad(where, "next-iteration", f"a NextIteration has no control consumers, {m.name!r} "
                                         "has a control edge from it")
        if any(port.node == n.name for port in p.outputs.values()):
            bad(where, "next-iteration", "a NextIteration's output cannot be fetched")
    return 1


def _infer_frames(p: Program) -> tuple[dict[str, tuple[str, ...]], list[Violation]]:
    """Each node's frame, as TensorFlow's executor infers it: an Enter's
    consumers are in the Enter's frame plus the Enter's frame_name, an Exit's
    in its frame minus the innermost loop, every other edge keeps the frame.
    All inputs of a node must agree; an Exit needs a loop to leave; fetches
    are in the outermost (root) frame."""
    out: list[Violation] = []
    frames: dict[str, tuple[str, ...]] = {}
    try:
        order = p.topological_order
    except ProgramError:
        return {}, out

    def of_input(i: Input) -> tuple[str, ...] | None:
        if not isinstance(i, (DataIn, ControlIn)):
            return ()
        src = p.node[i.node]
        f = frames.get(i.node)
        if f is None:
            return None
        # an Enter's or Exit's control edges live where its data output does
        if src.op == ENTER:
            return f + (src.attrs.get("frame_name") or "?",)
        if src.op == EXIT:
            return f[:-1]
        return f

    for name in order:
        n = p.node[name]
        seen: dict[tuple[str, ...], str] = {}
        for i in n.inputs:
            if p.is_back_edge(name, i):
                continue
            f = of_input(i)
            if f is not None:
                seen.setdefault(f, str(i))
        if len(seen) > 1:
            where = ", ".join(f"{i} in {_frame_text(f)}" for f, i in seen.items())
            out.append(Violation(f"node {name!r}", "frame",
                                 f"inputs from different frames ({where}): a value enters a loop "
                                 "only through Enter and leaves it only through Exit"))
        frames[name] = next(iter(seen), ())
        if n.op == EXIT and not frames[name]:
            out.append(Violation(f"node {name!r}", "frame", "Exit outside any loop (its input is "
                                                            "in the root frame)"))
    for n in p.nodes:
        for i in n.inputs:
            if p.is_back_edge(n.name, i):
                f = frames.get(i.node)
                if f is not None and f != frames.get(n.name):
                    out.append(Violation(f"node {n.name!r}", "frame",
                                         f"back edge from {i.node!r} in {_frame_text(f)} into a Merge "
                                         f"in {_frame_text(frames[n.name])}"))
                elif not f:
                    out.append(Violation(f"node {n.name!r}", "frame",
                                         f"back edge from {i.node!r} outside any loop"))
    for oname, port in p.outputs.items():
        f = of_input(port)
        if f:
            out.append(Violation(f"output {oname!r}", "frame",
                                 f"{port} is inside loop {_frame_text(f)}: fetch "
                                 "it after an Exit"))
    return frames, out


def _frame_text(f: tuple[str, ...]) -> str:
    return "the root frame" if not f else "frame " + "/".join(f)


def _check_type(where: str, t: TensorType, bad) -> None:
    if t.dtype not in DTYPES:
        bad(where, "bad-type", f"unknown dtype {t.dtype!r} ({', '.join(DTYPES)})")
    if any((not isinstance(d, int)) or d < 0 for d in t.shape):
        bad(where, "bad-type", f"shape {list(t.shape)} must be non-negative integers")


def _input_kind(p: Program, inp: Input) -> str | None:
    if isinstance(inp, FeedIn):
        return TENSOR
    src = p.node.get(inp.node)
    if src is None:
        return None
    return p.port_kind(src.name, inp.port)


def _cycle_text(cyc: list[str], shown: int = 12) -> str:
    """`cycle a -> b -> a`; a long cycle shows its first nodes and its length."""
    if len(cyc) <= shown:
        return "cycle " + " -> ".join(cyc + cyc[:1])
    return (f"cycle through {len(cyc)} nodes: " + " -> ".join(cyc[:shown])
            + f" -> ... -> {cyc[-1]} -> {cyc[0]}")


def _find_cycle(p: Program) -> list[str]:
    """One cycle of `p` as a list of node names ([] if acyclic).

    Iterative depth-first search with an explicit stack of (node, iterator
    over its successors): a cycle through any number of nodes is found
    without recursion (a recursive search died of RecursionError past ~1,000
    nodes)."""
    color: dict[str, int] = {}
    for root in p.nodes:
        if color.get(root.name):
            continue
        path: list[str] = [root.name]
        on_path: dict[str, int] = {root.name: 0}
        color[root.name] = 1
        iters = [iter(p.successors[root.name])]
        while iters:
            for v in iters[-1]:
                if color.get(v) == 1:
                    return path[on_path[v]:]
                if not color.get(v):
                    color[v] = 1
                    on_path[v] = len(path)
                    path.append(v)
                    iters.append(iter(p.successors[v]))
                    break
            else:
                u = path.pop()
                del on_path[u]
                color[u] = 2
                iters.pop()
    return []


def _check_strict(p: Program, bad) -> None:
    uses: dict[tuple[str, int], int] = {}
    for key, consumers in p.consumers.items():
        uses[key] = uses.get(key, 0) + len(consumers)
    for port in p.outputs.values():
        uses[(port.node, port.port)] = uses.get((port.node, port.port), 0) + 1
    for n in p.nodes:
        for port in range(n.n_outputs()):
            k = uses.get((n.name, port), 0)
            if k != 1:
                bad(f"node {n.name!r} port {port}", "one-consumer",
                    f"strict mode: an output port has exactly one consumer, this one has {k} "
                    "(share through Copy)")


# ---------------------------------------------------------------------------
# Convenience constructors (used by tests, families and passes)


def var(name: str, x: str, *control: str) -> Node:
    return Node(name, VAR, tuple(parse_input(c) for c in control), {"var": x})


def read(name: str, handle: str, *control: str) -> Node:
    return Node(name, READ, tuple(parse_input(i) for i in (handle, *control)))


def assign(name: str, fn: str, handle: str, value: str, *control: str) -> Node:
    return Node(name, ASSIGN, tuple(parse_input(i) for i in (handle, value, *control)), {"fn": fn})


def write(name: str, handle: str, value: str, *control: str) -> Node:
    return assign(name, "Snd", handle, value, *control)


def apply(name: str, op: str, *inputs: str, **attrs: Any) -> Node:
    return Node(name, op, tuple(parse_input(i) for i in inputs), attrs)


def const(name: str, value: Any, *control: str, dtype: str = "int64") -> Node:
    return Node(name, "Const", tuple(parse_input(c) for c in control),
                {"value": value if isinstance(value, Tensor) else Tensor(value, dtype)})


def program(nodes: Iterable[Node], outputs: Mapping[str, str] | None = None,
            variables: Iterable[str] | Mapping[str, TensorType] = (),
            feeds: Mapping[str, TensorType] | None = None) -> Program:
    """Build and validate a program from nodes (outputs as "n" or "n:k")."""
    if not isinstance(variables, Mapping):
        variables = {x: TensorType() for x in variables}
    outs = {k: DataIn(*parse_port(v)) for k, v in (outputs or {}).items()}
    return Program(variables, tuple(nodes), outs, feeds or {}).validated()
