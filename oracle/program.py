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
from typing import Any, Iterable, Mapping

from . import functions as fns
from .values import DTYPES, Tensor

VAR, READ, ASSIGN = "Var", "Read", "Assign"
TENSOR, VARIABLE, CONTROL = "tensor", "variable", "control"


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


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "attrs", _FrozenDict(self.attrs))

    @property
    def data_inputs(self) -> tuple[DataIn | FeedIn, ...]:
        return tuple(i for i in self.inputs if isinstance(i, (DataIn, FeedIn)))

    @property
    def control_inputs(self) -> tuple[ControlIn | FeedControlIn, ...]:
        return tuple(i for i in self.inputs if isinstance(i, (ControlIn, FeedControlIn)))

    @property
    def var(self) -> str:
        return self.attrs["var"]

    @property
    def fn(self) -> str:
        return self.attrs["fn"]

    @property
    def kind(self) -> str:
        """"Var", "Read", "Assign" or "function"."""
        return self.op if self.op in (VAR, READ, ASSIGN) else "function"

    def n_outputs(self) -> int:
        if self.op == VAR or self.op == READ:
            return 1
        if self.op == ASSIGN:
            return 0
        f = fns.lookup(self.op)
        return f.n_out if f else 0

    def output_kind(self, port: int) -> str:
        return VARIABLE if self.op == VAR else TENSOR

    def replace(self, **changes: Any) -> "Node":
        data = {"name": self.name, "op": self.op, "inputs": self.inputs, "attrs": dict(self.attrs)}
        data.update(changes)
        return Node(**data)


class _FrozenDict(dict):
    """A dict that refuses mutation and hashes by content."""

    def _refuse(self, *a: Any, **k: Any) -> None:
        raise TypeError("program attributes are immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(fns.attrs_key(self))


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
        return {n.name: n for n in self.nodes}

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

    def predecessors(self, name: str) -> tuple[str, ...]:
        """Nodes with an edge (data or control) into `name`."""
        return tuple(dict.fromkeys(i.node for i in self.node[name].inputs
                                   if isinstance(i, (DataIn, ControlIn))))

    @cached_property
    def successors(self) -> Mapping[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        for n in self.nodes:
            for p in self.predecessors(n.name):
                out[p].append(n.name)
        return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        """Kahn's algorithm, ties broken by declaration order (deterministic)."""
        indeg = {n.name: len(self.predecessors(n.name)) for n in self.nodes}
        order: list[str] = []
        ready = [n.name for n in self.nodes if indeg[n.name] == 0]
        ready.reverse()
        while ready:
            name = ready.pop()
            order.append(name)
            for s in reversed(self.successors[name]):
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        if len(order) != len(self.nodes):
            raise ProgramError([Violation("program", "cycle", "the graph has a cycle")])
        return tuple(order)

    def accessed_variable(self, name: str) -> str | None:
        """The variable a Read or Assign node accesses (statically: variable
        edges come only from Var nodes)."""
        n = self.node[name]
        if n.op in (READ, ASSIGN) and n.inputs and isinstance(n.data_inputs[0], DataIn):
            src = self.node.get(n.data_inputs[0].node)
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
        violations = validate(self, strict=strict)
        if violations:
            raise ProgramError(violations)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Program) and self._identity == other._identity

    def __hash__(self) -> int:
        return hash(self._identity)

    @cached_property
    def _identity(self) -> tuple:
        return (tuple(sorted(self.variables.items())),
                tuple(sorted(self.feeds.items())),
                tuple(sorted(((n.name, n.op, n.inputs, fns.attrs_key(n.attrs)) for n in self.nodes))),
                tuple(sorted(self.outputs.items())))


class _FrozenMap(dict):
    def _refuse(self, *a: Any, **k: Any) -> None:
        raise TypeError("programs are immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


# ---------------------------------------------------------------------------
# Validation


def validate(p: Program, strict: bool = False) -> list[Violation]:
    """Every violation of section 3.1.1's constraints and SPEC section 1."""
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

    for n in p.nodes:
        where = f"node {n.name!r}"
        data = n.data_inputs
        if n.op == VAR:
            expected_in = 0
            if n.attrs.get("var") not in p.variables:
                bad(where, "unknown-variable", f"Var of undeclared variable {n.attrs.get('var')!r}")
        elif n.op == READ:
            expected_in = 1
        elif n.op == ASSIGN:
            expected_in = 2
            f = fns.lookup(n.attrs.get("fn", ""))
            if f is None:
                bad(where, "unknown-function", f"Assign with unknown function {n.attrs.get('fn')!r}")
            elif not f.assignable:
                bad(where, "arity", f"Assign-{f.name} needs a function of 2 arguments and 1 result, "
                                    f"{f.name} has {f.n_in} and {f.n_out}")
        else:
            f = fns.lookup(n.op)
            if f is None:
                bad(where, "unknown-op", f"unknown operation {n.op!r}")
                continue
            expected_in = f.n_in
            for attr in f.attrs:
                if attr not in n.attrs:
                    bad(where, "missing-attribute", f"{n.op} needs attribute {attr!r}")
        if len(data) != expected_in:
            bad(where, "arity", f"{n.op} takes {expected_in} data input(s), got {len(data)}")

        for idx, inp in enumerate(data):
            want = VARIABLE if (n.op in (READ, ASSIGN) and idx == 0) else TENSOR
            got = _input_kind(p, inp)
            if got is None:
                continue  # dangling: reported below
            if got != want:
                bad(f"{where} input {idx} ({inp})", "edge-kind",
                    f"{n.op} input {idx} must be a {want} edge, {inp} is a {got} edge")

        for inp in n.inputs:
            if isinstance(inp, (DataIn, ControlIn)):
                src = p.node.get(inp.node)
                if src is None:
                    bad(f"{where} input {inp}", "unknown-node", f"no node named {inp.node!r}")
                elif isinstance(inp, DataIn) and inp.port >= src.n_outputs():
                    bad(f"{where} input {inp}", "bad-port",
                        f"{src.name} ({src.op}) has {src.n_outputs()} output port(s), not port {inp.port}")

    for name, port in p.outputs.items():
        src = p.node.get(port.node)
        where = f"output {name!r}"
        if src is None:
            bad(where, "unknown-node", f"no node named {port.node!r}")
        elif port.port >= src.n_outputs():
            bad(where, "bad-port", f"{src.name} ({src.op}) has {src.n_outputs()} output port(s), "
                                   f"not port {port.port}")
        elif src.op == VAR:
            bad(where, "edge-kind", f"an output is a tensor edge, {port} is a variable edge")

    if not any(v.rule in ("unknown-node", "duplicate-name") for v in out):
        try:
            p.topological_order
        except ProgramError as exc:
            cyc = _find_cycle(p)
            out.extend(Violation(f"node {cyc[0]!r}" if cyc else "program", "cycle",
                                 _cycle_text(cyc) if cyc else v.message)
                       for v in exc.violations)

    if strict:
        _check_strict(p, bad)
    return out


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
    return src.output_kind(inp.port)


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
