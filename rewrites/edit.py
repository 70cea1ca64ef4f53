"""Program-editing helpers shared by the built-in passes.

Passes build new node tuples and hand them to :func:`rebuild`, which keeps the
original's interface (variables, output names, feeds) and validates the
result: a built-in pass that produced an invalid program is a bug, and
should fail loudly rather than hand the verifier garbage.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from tfsem.oracle.program import (ASSIGN, READ, ControlIn, DataIn, FeedControlIn, FeedIn, Input,
                                  Node, Program, TensorType)


def rebuild(original: Program, nodes: Iterable[Node],
            outputs: Mapping[str, DataIn] | None = None) -> Program:
    """A validated program with `nodes`, and `original`'s variables, output
    names and feeds.  A feed that no node uses any more stays declared (with
    its type), so the interface is unchanged."""
    nodes = tuple(nodes)
    used = {i.name for n in nodes for i in n.inputs if isinstance(i, FeedIn)}
    feeds: dict[str, TensorType] = dict(original.feeds)
    for f in original.feed_names:
        if f not in used and f not in feeds:
            feeds[f] = original.feed_type(f)
    return Program(original.variables, nodes,
                   dict(original.outputs if outputs is None else outputs), feeds).validated()


def canonical_inputs(inputs: Iterable[Input]) -> tuple[Input, ...]:
    """Data inputs in order, then control inputs without duplicates (first
    occurrence kept): the order `tfsem.program/1` writes them in."""
    inputs = tuple(inputs)
    data = [i for i in inputs if isinstance(i, (DataIn, FeedIn))]
    control = list(dict.fromkeys(i for i in inputs if isinstance(i, (ControlIn, FeedControlIn))))
    return tuple(data + control)


def rename_inputs(inputs: Iterable[Input], ports: Mapping[tuple[str, int], DataIn],
                  names: Mapping[str, str]) -> tuple[Input, ...]:
    """Redirect data edges by `ports` ((node, port) -> new source) and control
    edges by `names` (node -> node), then canonicalize."""
    out: list[Input] = []
    for i in inputs:
        if isinstance(i, DataIn):
            out.append(ports.get((i.node, i.port), i))
        elif isinstance(i, ControlIn):
            out.append(ControlIn(names.get(i.node, i.node)))
        else:
            out.append(i)
    return canonical_inputs(out)


def renamed(p: Program, suffix: str = "_r") -> Program:
    """`p` with `suffix` appended to every node name: the same program, not
    the same object (what a renaming pass gives; tests and benchmarks use it
    to make the checker work instead of seeing identical programs)."""
    def ref(i: Input) -> Input:
        if isinstance(i, DataIn):
            return DataIn(i.node + suffix, i.port)
        if isinstance(i, ControlIn):
            return ControlIn(i.node + suffix)
        return i
    nodes = tuple(n.replace(name=n.name + suffix, inputs=tuple(ref(i) for i in n.inputs))
                  for n in p.nodes)
    return p.replace(nodes=nodes, outputs={k: ref(v) for k, v in p.outputs.items()}).validated()


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first name not in `taken`
    (which is updated)."""
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def ancestors(p: Program) -> dict[str, int]:
    """node -> bitset (over `p.topological_order` positions) of the nodes with
    a path of data or control edges into it (the node itself excluded)."""
    order = p.topological_order
    index = {name: i for i, name in enumerate(order)}
    anc: dict[str, int] = {}
    for name in order:
        bits = 0
        for pred in p.predecessors(name):
            bits |= anc[pred] | (1 << index[pred])
        anc[name] = bits
    return anc


def bit_index(p: Program) -> dict[str, int]:
    return {name: i for i, name in enumerate(p.topological_order)}


def control_successors(p: Program) -> dict[str, list[str]]:
    """node -> the nodes that name it in a control input."""
    out: dict[str, list[str]] = {n.name: [] for n in p.nodes}
    for n in p.nodes:
        for i in n.inputs:
            if isinstance(i, ControlIn):
                out[i.node].append(n.name)
    return out


def data_consumers(p: Program, name: str) -> list[tuple[str, int]]:
    """(consumer, input index) for every data edge out of any port of `name`."""
    node = p.node[name]
    out: list[tuple[str, int]] = []
    for port in range(max(node.n_outputs(), 1)):
        out.extend(p.consumers.get((name, port), ()))
    return out


def fetched(p: Program) -> set[str]:
    """The nodes that an output edge leaves from."""
    return {port.node for port in p.outputs.values()}


def is_stateful(n: Node) -> bool:
    """Reads and Assigns access variables; Var and functions do not."""
    return n.op in (READ, ASSIGN)
