"""Inlining function calls: PartitionedCall / StatefulPartitionedCall bodies
from the graph's `library` become nodes of the graph itself.

The call's runtime semantics is kept (TensorFlow runs a call op as one
kernel): the body starts only when every input of the call is ready, and
the call's outputs (and `^call`) are available only when the body is done,
its return values and its `control_ret` nodes included.  So a call `C` of
function F becomes

* `C/_entry`, a NoOp with a control edge from the source of every input of
  the call and from each of its control inputs; every body node gets
  `^C/_entry`;
* the body's nodes, named `C/<node>`, inputs renamed: an argument name is
  the caller's input (a DT_RESOURCE argument is the caller's VarHandleOp, so
  the variable is the caller's), `n:arg:k` is port k of the output arg `arg`
  of body node n (graphdef.ops knows the output args of multi-output ops),
  `^n` is `^C/n`;
* `C` itself, an IdentityN of the `ret` values in the order of the
  signature's output args, with a control edge from every return node,
  every `control_ret` node and every stateful body node.

Nested calls are inlined the same way, up to :data:`MAX_DEPTH` levels; a
recursive function is refused.  Body nodes that are pure and that no return
value, control output or stateful node needs are dropped (TensorFlow prunes
function bodies the same way).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from . import ops as opt

MAX_DEPTH = 32


@dataclass(slots=True, eq=False)
class GNode:
    """A NodeDef in the flat graph: inputs as TensorFlow writes them
    (`n`, `n:k`, `^n`), attributes as the proto dict has them (a dict, or
    for a decoded GraphDef message a mapping that converts each attribute
    when first read)."""

    name: str
    op: str
    inputs: list[str]
    attr: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""          # "in function F called by C" for messages

    def describe(self) -> str:
        return f"node {self.name!r} ({self.op}{', ' + self.where if self.where else ''})"


class GraphFormatError(ValueError):
    """The graph is malformed (names, references, functions)."""

    def __init__(self, where: str, message: str, rule: str = "graph"):
        super().__init__(f"{where}: {message}")
        self.where, self.message, self.rule = where, message, rule


def split_ref(text: str) -> tuple[str, int, bool]:
    """(node, port, is_control) of a GraphDef input string."""
    if text.startswith("^"):
        return text[1:], -1, True
    node, sep, port = text.rpartition(":")
    if sep and port.isdigit():
        return node, int(port), False
    return text, 0, False


def _top_nodes(graph) -> tuple[list[GNode], list[dict]]:
    """(the graph's own nodes, its library's FunctionDefs as dicts) of a
    GraphDef dict or a GraphDef message (graphdef.proto.parse)."""
    if isinstance(graph, dict):
        nodes = [GNode(nd.get("name", ""), nd.get("op", ""), list(nd.get("input", [])),
                       dict(nd.get("attr", {}))) for nd in graph.get("node", [])]
        return nodes, list((graph.get("library") or {}).get("function", []))
    from .proto.runtime import LazyAttrs, to_dict
    nodes = [GNode(nd.name, nd.op, list(nd.input), LazyAttrs(nd)) for nd in graph.node]
    functions = to_dict(graph.library).get("function", []) if graph.HasField("library") else []
    return nodes, functions


def flatten(graph) -> dict[str, GNode]:
    """The graph's nodes by name, every function call inlined (`graph`: a
    GraphDef dict or message)."""
    top, functions = _top_nodes(graph)
    library = {f.get("signature", {}).get("name", ""): f for f in functions}
    nodes: dict[str, GNode] = {}
    for i, n in enumerate(top):
        name = n.name
        if not name:
            raise GraphFormatError(f"node[{i}]", "a node has no name")
        if name in nodes:
            raise GraphFormatError(f"node {name!r}", "two nodes have this name")
        if not n.op:
            raise GraphFormatError(f"node {name!r}", "the node has no op")
        nodes[name] = n
    pending = [n for n in nodes.values() if n.op in opt.CALLS]
    depth = {n.name: 0 for n in pending}
    while pending:
        call = pending.pop()
        new = _inline(call, library, nodes, depth[call.name])
        for n in new:
            if n.op in opt.CALLS:
                depth[n.name] = depth[call.name] + 1
                pending.append(n)
    return nodes


def _function_name(call: GNode) -> str:
    f = call.attr.get("f", {})
    name = (f.get("func") or {}).get("name") if isinstance(f, dict) else None
    if not name:
        raise GraphFormatError(call.describe(), "a call without attribute f (the function)")
    return name


def _inline(call: GNode, library: dict, nodes: dict[str, GNode], depth: int) -> list[GNode]:
    fname = _function_name(call)
    if depth >= MAX_DEPTH:
        raise GraphFormatError(call.describe(), f"function calls nested deeper than {MAX_DEPTH} "
                               f"(a recursive function? calling {fname!r})", "function-depth")
    fdef = library.get(fname)
    if fdef is None:
        raise GraphFormatError(call.describe(), f"calls {fname!r}, which is not in the graph's "
                               "function library", "unknown-function")
    sig = fdef.get("signature", {})
    args = [a.get("name", "") for a in sig.get("input_arg", [])]
    outs = [a.get("name", "") for a in sig.get("output_arg", [])]
    data_in = [i for i in call.inputs if not i.startswith("^")]
    control_in = [i for i in call.inputs if i.startswith("^")]
    if len(data_in) != len(args):
        raise GraphFormatError(call.describe(), f"passes {len(data_in)} inputs to {fname!r}, "
                               f"which takes {len(args)}", "arity")
    arg_map = dict(zip(args, data_in))
    prefix = call.name
    where = f"in function {fname!r} called by {call.name!r}"
    body = {nd.get("name", ""): nd for nd in fdef.get("node_def", [])}
    ops_of = {k: nd.get("op", "") for k, nd in body.items()}
    port_names: dict[str, dict[tuple[str, int], int]] = {}

    def resolve(text: str, ctx: str) -> str:
        if text.startswith("^"):
            n = text[1:]
            if n not in body:
                raise GraphFormatError(ctx, f"control input {text!r} names no node of {fname!r}")
            return f"^{prefix}/{n}"
        parts = text.split(":")
        if len(parts) == 1:
            if parts[0] not in arg_map:
                raise GraphFormatError(ctx, f"input {text!r} is neither an argument of "
                                       f"{fname!r} nor written node:output:index")
            return arg_map[parts[0]]
        if len(parts) != 3 or not parts[2].isdigit() or parts[0] not in body:
            raise GraphFormatError(ctx, f"input {text!r} is not node:output:index of a node "
                                   f"of {fname!r}")
        n, arg, k = parts[0], parts[1], int(parts[2])
        return f"{prefix}/{n}:{_port(ops_of[n], n, arg, k, port_names)}"

    entry = f"{prefix}/_entry"
    sources = sorted({"^" + split_ref(i)[0] for i in data_in + control_in})
    new: list[GNode] = [GNode(entry, "NoOp", sources, {}, where)]
    kept = _needed(fdef, body, ops_of)
    for n in body:
        if n not in kept:
            continue
        nd = body[n]
        ctx = f"node {n!r} {where}"
        inputs = [resolve(i, ctx) for i in nd.get("input", [])] + [f"^{entry}"]
        new.append(GNode(f"{prefix}/{n}", ops_of[n], inputs, dict(nd.get("attr", {})), where))
    ret = fdef.get("ret", {})
    rets = []
    for o in outs:
        if o not in ret:
            raise GraphFormatError(f"function {fname!r}", f"output {o!r} has no ret entry")
        rets.append(resolve(ret[o], f"function {fname!r} ret {o!r}"))
    done = sorted({f"^{prefix}/{n}" for n in kept if n in body and _is_effect(ops_of[n])}
                  | {f"^{prefix}/{n}" for n in (fdef.get("control_ret") or {}).values()
                     if n in body}
                  | {"^" + split_ref(r)[0] for r in rets} | {f"^{entry}"})
    del nodes[call.name]
    for g in new:
        if g.name in nodes:
            raise GraphFormatError(g.describe(), "inlining a function body made two nodes of "
                                   "this name", "duplicate-name")
        nodes[g.name] = g
    nodes[call.name] = GNode(call.name, "IdentityN", rets + done,
                             {"_tfsem_call": {"s": fname.encode()}}, call.where)
    return new


def _port(op: str, node: str, arg: str, k: int, names: dict) -> int:
    if op in opt.OUTPUT_ARGS:
        args = opt.OUTPUT_ARGS[op]
        if arg in args:
            return args.index(arg) + k
    model = opt.lookup(op)
    if op in opt.OUTPUT_ARGS or (model is not None and len(model.output_args) > 1):
        args = opt.OUTPUT_ARGS.get(op) or model.output_args
        raise GraphFormatError(f"node {node!r}", f"{op} has no output arg {arg!r} "
                               f"(its outputs: {', '.join(args)})")
    if model is not None or op in opt.CALLS:
        return k  # one output arg (possibly a list): port k
    # an op tfsem does not know: number its (arg, k) pairs in order of use;
    # only an uninterpreted function can be made of it, for which any
    # consistent numbering is the same
    table = names.setdefault(node, {})
    return table.setdefault((arg, k), len(table))


def _is_effect(op: str) -> bool:
    return not opt.stateless(op) and op not in ("Const", "NoOp")


def _needed(fdef: dict, body: dict, ops_of: dict) -> set[str]:
    """Body nodes that a return value, a control output or an effect needs."""
    roots = [split_ref(v.split(":")[0])[0] for v in (fdef.get("ret") or {}).values()]
    roots += list((fdef.get("control_ret") or {}).values())
    roots += [n for n in body if _is_effect(ops_of[n])]
    seen: set[str] = set()
    stack = [r for r in roots if r in body]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for i in body[n].get("input", []):
            src = i.lstrip("^").split(":")[0]
            if src in body and src not in seen:
                stack.append(src)
    return seen
