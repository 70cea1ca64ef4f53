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

The calls that lowering functional control flow makes (If, While, Case:
below) are inlined as TensorFlow inlines them instead (`_inline_lowered`:
no barrier, `^call` waits for the control returns only).

Nested calls are inlined the same way, up to :data:`MAX_DEPTH` levels; a
recursive function is refused.  Body nodes that are pure and that no return
value, control output or stateful node needs are dropped (TensorFlow prunes
function bodies the same way).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Mapping

from tfsem.oracle import opdefs as _opdefs
from tfsem.oracle.opdefs import control as _control
from tfsem.oracle.program import ProgramError, Violation

from . import ops as opt

MAX_DEPTH = 32
_NAME = attrgetter("name")


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
    #: a node of a function body, as its FunctionDef has it (not one that
    #: inlining or lowering made): what check_signatures checks in bodies
    body: bool = False
    #: of a call's entry node (`C/_entry`): the nodes of the called body that
    #: no result needs, not inlined (flat, by name), checked against their
    #: OpDefs where the call is reached (TensorFlow checks the whole body
    #: when it instantiates the function)
    dead: Mapping[str, "GNode"] | None = None
    #: of a call's entry node: (the call, why every run that reaches it
    #: fails: its Tin or Tout is not its function's signature), or None
    refusal: tuple[str, str] | None = None

    def describe(self) -> str:
        return (f"node {_short(self.name)!r} ({_short(self.op)}"
                f"{', ' + _short(self.where, 400) if self.where else ''})")


class GraphFormatError(ProgramError):
    """The graph is malformed (names, references, functions).  A
    ProgramError (so a ValueError), so that a caller that does not catch it
    still reports it as bad input (exit 2), never as a traceback."""

    def __init__(self, where: str, message: str, rule: str = "graph"):
        super().__init__([Violation(where, rule, message)])
        self.where, self.message, self.rule = where, message, rule


class ImportTimeout(RuntimeError):
    """The time budget of a command ran out while a graph was imported (the
    command's verdict is `unknown`)."""

    def __init__(self, stage: str):
        super().__init__(f"the time budget ran out while {stage}")
        self.stage = stage


def check_deadline(deadline: float | None, stage: str) -> None:
    """Raise ImportTimeout if `deadline` (a time.monotonic() value) has passed."""
    if deadline is not None and time.monotonic() > deadline:
        raise ImportTimeout(stage)


#: A port is an int32 in TensorFlow: at most 10 digits.
MAX_PORT_DIGITS = 10


def split_ref(text: str) -> tuple[str, int, bool]:
    """(node, port, is_control) of a GraphDef input string.  A port of more
    than 10 digits (TensorFlow's are int32) is a GraphFormatError."""
    if text.startswith("^"):
        return text[1:], -1, True
    node, sep, port = text.rpartition(":")
    if sep and port.isdigit() and port.isascii():
        if len(port) > MAX_PORT_DIGITS:
            raise GraphFormatError(f"input {_short(text, 60)!r}", f"a port of {len(port)} digits "
                                   f"(a port is a 32-bit integer)", "bad-port")
        return node, int(port), False
    return text, 0, False


def _short(text: str, keep: int = 200) -> str:
    """`text`, cut in the middle when long (names in messages)."""
    return text if len(text) <= keep else f"{text[:keep // 2]}...{text[-keep // 2:]}"


#: The most nodes a graph may have, its functions' included, before inlining
#: (import takes about 2.5 KB and 20 microseconds a node).
MAX_GRAPH_NODES = 500_000


def _top_nodes(graph) -> tuple[list[GNode], list[dict]]:
    """(the graph's own nodes, its library's FunctionDefs as dicts) of a
    GraphDef dict or a GraphDef message (graphdef.proto.parse)."""
    if isinstance(graph, dict):
        _check_count(len(graph.get("node", [])) + sum(
            len(f.get("node_def", [])) for f in (graph.get("library") or {}).get("function", [])
            if isinstance(f, dict)))
        nodes = [GNode(nd.get("name", ""), nd.get("op", ""), list(nd.get("input", [])),
                       dict(nd.get("attr", {}))) for nd in graph.get("node", [])]
        return nodes, list((graph.get("library") or {}).get("function", []))
    from .proto.runtime import LazyAttrs, library_dict
    _check_count(len(graph.node) + sum(len(f.node_def) for f in graph.library.function))
    # (`input[:]`, a list, is twice as fast as list(input) on protobuf's repeated field)
    nodes = [GNode(nd.name, nd.op, nd.input[:], LazyAttrs(nd)) for nd in graph.node]
    functions = library_dict(graph.library).get("function", []) if graph.HasField("library") \
        else []
    return nodes, functions


def check_signatures(nodes: dict[str, GNode], reached=None, counts_only: bool = False,
                     only=None) -> None:
    """Refuse a graph node that disagrees with its op's OpDef signature, as
    TensorFlow refuses to load such a graph (graphdef/signatures.py);
    `nodes`: the graph's own nodes by name (flatten's `top_nodes`), or the
    flat graph with `only` the names of the function-body nodes to check;
    `reached`: the names of those a fetch or target needs (None: all).
    `counts_only`: only the count attributes' range (signatures.check_counts,
    before the op models read the graph)."""
    from .signatures import SignatureError, check_counts, check_graph
    try:
        if counts_only:
            check_counts(nodes if only is None else {k: nodes[k] for k in only})
        else:
            check_graph(nodes, reached, only)
    except SignatureError as exc:
        raise GraphFormatError(exc.node.describe(), exc.message, "signature") from None


def _check_count(n: int) -> None:
    if n > MAX_GRAPH_NODES:
        raise GraphFormatError("graph", f"{n} nodes (its functions' included): tfsem imports "
                               f"graphs of at most {MAX_GRAPH_NODES} nodes", "too-large")


#: The most nodes inlining may add to a graph: a small graph whose functions
#: each call the next level twice would otherwise grow without bound.
MAX_INLINED_NODES = 100_000


def flatten(graph, deadline: float | None = None,
            top_nodes: dict[str, GNode] | None = None) -> dict[str, GNode]:
    """The graph's nodes by name, every function call inlined (`graph`: a
    GraphDef dict or message).  Past `deadline` (a time.monotonic() value),
    ImportTimeout.  `top_nodes`, where given, gets the graph's own nodes by
    name, as they were before lowering and inlining (check_signatures)."""
    top, functions = _top_nodes(graph)
    library: dict[str, dict] = {}
    for f in functions:
        fname = f.get("signature", {}).get("name", "")
        if fname in library and library[fname] != f:
            # TensorFlow's FunctionLibraryDefinition refuses a second, different
            # function of one name (an identical copy is accepted)
            raise GraphFormatError(f"function {_short(fname)!r}", "two different functions of "
                                   "the graph's library have this name (TensorFlow refuses "
                                   "such a graph)", "duplicate-function")
        library[fname] = f
    nodes: dict[str, GNode] = dict(zip(map(_NAME, top), top))   # ({n.name: n ...}, in C)
    if len(nodes) != len(top) or "" in nodes or not all(n.op for n in top):
        nodes = {}
        for i, n in enumerate(top):
            name = n.name
            if not name:
                raise GraphFormatError(f"node[{i}]", "a node has no name")
            if name in nodes:
                raise GraphFormatError(f"node {_short(name)!r}", "two nodes have this name")
            if not n.op:
                raise GraphFormatError(f"node {_short(name)!r}", "the node has no op")
            nodes[name] = n
    if top_nodes is not None:
        top_nodes.update(nodes)
    redirects: dict[str, str] = {}
    special = FUNCTIONAL_OPS_SET | opt.CALLS
    special = [n for n in top if n.op in special]   # (few: one pass over the graph finds them)
    for n in special:
        if n.op in FUNCTIONAL_OPS_SET:
            lower_functional(n, nodes, redirects)
    pending = [n for n in nodes.values() if n.op in opt.CALLS] if special else []
    _check_expansion(pending, library, deadline)
    depth = {n.name: 0 for n in pending}
    added = 0
    while pending:
        call = pending.pop()
        check_deadline(deadline, f"inlining function calls ({added} nodes inlined)")
        new = _inline(call, library, nodes, depth[call.name], MAX_INLINED_NODES - added,
                      redirects)
        added += len(new)
        for n in new:
            if n.op in FUNCTIONAL_OPS:   # in a function body: lowered, its functions called
                for c in lower_functional(n, nodes, redirects):
                    depth[c.name] = depth[call.name] + 1
                    pending.append(c)
            elif n.op in opt.CALLS:
                depth[n.name] = depth[call.name] + 1
                pending.append(n)
    if redirects:
        _apply_redirects(nodes, redirects)
    return nodes


#: TensorFlow 2's functional control flow, lowered to the v1 primitives as
#: TensorFlow's LowerFunctionalOpsPass lowers it before its executor runs a
#: graph or a function body (docs/semantics.md), in the graph and in the
#: function bodies inlined.
#: (The ops are the control family's, oracle/opdefs/control.py: each OpDef's
#: `lowering` names the lowering below.)
IF_OPS = _control.lowered("if")
WHILE_OPS = _control.lowered("while")
CASE_OPS = _control.lowered("case")
FUNCTIONAL_OPS = IF_OPS + WHILE_OPS + CASE_OPS
FUNCTIONAL_OPS_SET = frozenset(FUNCTIONAL_OPS)


def lower_functional(n: GNode, nodes: dict[str, GNode],
                     redirects: dict[str, str]) -> list[GNode]:
    """Lower one functional control-flow node in place; returns the call
    nodes it made (to inline).  Where TensorFlow's lowering rewires the
    node's consumers (a While's data consumers read its Exits, its control
    consumers wait for `LoopExecuted`), `redirects` gets the input strings
    to replace (`n:k` -> `n/exit_k`, `^n` -> `^n/LoopExecuted`), applied to
    every node once everything is inlined (_apply_redirects).

    TensorFlow's LowerFunctionalOpsPass lowers only the nodes whose
    `_lower_using_switch_merge` attribute is true (tf.cond, tf.while_loop
    and tf.switch_case set it outside XLA); it runs any other as a kernel
    that calls its functions, which tfsem does not model: refused by name."""
    a = n.attr.get("_lower_using_switch_merge")
    if not (isinstance(a, Mapping) and a.get("b") is True):
        raise GraphFormatError(n.describe(), f"TensorFlow lowers a {n.op} to Switch/Merge (and "
                               "Enter/Exit/NextIteration) only when its attribute "
                               "_lower_using_switch_merge is true; this one it would run as a "
                               "kernel calling its functions, which tfsem does not model",
                               "control-flow")
    if n.op in IF_OPS:
        return _lower_if(n, nodes, redirects)
    if n.op in WHILE_OPS:
        return _lower_while(n, nodes, redirects)
    return _lower_case(n, nodes, redirects)


def _apply_redirects(nodes: dict[str, GNode], redirects: dict[str, str]) -> None:
    """Replace each input string that `redirects` names (`n` and `n:0` are
    one input), following chains (a While's resource output that is another
    While's resource output)."""
    def resolve(text: str) -> str:
        for _ in range(len(redirects) + 1):
            if text.startswith("^"):
                nxt = redirects.get(text)
            else:
                node, port, _c = split_ref(text)
                nxt = redirects.get(f"{node}:{port}")
            if nxt is None:
                return text
            text = nxt
        return text
    consumed = set()
    for g in nodes.values():
        if any((i if i.startswith("^") else f"{split_ref(i)[0]}:{split_ref(i)[1]}") in redirects
               for i in g.inputs):
            consumed.update(split_ref(i)[0] for i in g.inputs)
            g.inputs = [resolve(i) for i in g.inputs]
    # the node standing for a lowered op that had consumers is no root of
    # the graph (importer.default_roots) although nothing reads it now
    for name in consumed:
        g = nodes.get(name)
        if g is not None and g.op in ("IdentityN", "NoOp"):
            g.attr = dict(g.attr, _tfsem_consumed={"b": True})


def _type_list(attr: Any) -> list[str]:
    if not isinstance(attr, Mapping):
        return []
    lst = attr.get("list") or {}
    return list(lst.get("type", [])) if isinstance(lst, Mapping) else []


def _branch(n: GNode, key: str) -> str:
    a = n.attr.get(key)
    func = a.get("func") if isinstance(a, Mapping) else None
    name = func.get("name") if isinstance(func, Mapping) else None
    if not isinstance(name, str) or not name:
        raise GraphFormatError(n.describe(), f"has no function attribute {key!r}", "malformed-node")
    return name


def _lower_if(n: GNode, nodes: dict[str, GNode],
              redirects: dict[str, str] | None = None) -> list[GNode]:
    """An If node as TensorFlow's LowerIfOp pass lowers it before its
    executor runs it (tensorflow/core/common_runtime/lower_if_op.cc):

    * `n/pred` = Switch(cond, cond) and the pivots `n/pivot_t` =
      Identity(n/pred:1), `n/pivot_f` = Identity(n/pred:0): exactly one is live;
    * each tensor input k through `n/switch_k` = Switch(input, cond) (a
      resource input is passed as it is: the branch's nodes are dead anyway,
      through the pivot);
    * `n/then` and `n/else`, calls of the branch functions with the
      switches' true and false outputs and a control edge from their pivot
      (inlined below like every call: each body node waits for the call's
      entry, so the untaken branch's nodes, stateful ones included, fire dead);
    * `n/merge_k` = Merge(n/then:k, n/else:k) for each output, and `n` itself
      an IdentityN of the merges that waits for `n/done` = Merge of the two
      branches' completions, so that `^n` waits for the taken branch.  As in
      TensorFlow, the If's data consumers read the merges directly and its
      control consumers wait for `n/done` (`redirects`)."""
    data = [i for i in n.inputs if not i.startswith("^")]
    controls = [i for i in n.inputs if i.startswith("^")]
    if not data:
        raise GraphFormatError(n.describe(), "If needs a condition input", "arity")
    cond, args = data[0], data[1:]
    tin = _type_list(n.attr.get("Tin"))
    tout = _type_list(n.attr.get("Tout"))
    then_f, else_f = _branch(n, "then_branch"), _branch(n, "else_branch")
    name = n.name
    b = {"T": {"type": "DT_BOOL"}}
    made: list[GNode] = [GNode(f"{name}/pred", "Switch", [cond, cond] + controls),
                         GNode(f"{name}/pivot_t", "Identity", [f"{name}/pred:1"], b),
                         GNode(f"{name}/pivot_f", "Identity", [f"{name}/pred:0"], b)]
    t_args, f_args = [], []
    for k, a in enumerate(args):
        if k < len(tin) and tin[k] == "DT_RESOURCE":
            t_args.append(a)
            f_args.append(a)
            continue
        made.append(GNode(f"{name}/switch_{k}", "Switch", [a, cond]))
        t_args.append(f"{name}/switch_{k}:1")
        f_args.append(f"{name}/switch_{k}:0")
    call_attr = {"Tin": n.attr.get("Tin", {}), "Tout": n.attr.get("Tout", {}), **LOWERED}
    made.append(GNode(f"{name}/then", "StatefulPartitionedCall", t_args + [f"^{name}/pivot_t"],
                      dict(call_attr, f={"func": {"name": then_f}})))
    made.append(GNode(f"{name}/else", "StatefulPartitionedCall", f_args + [f"^{name}/pivot_f"],
                      dict(call_attr, f={"func": {"name": else_f}})))
    made += [GNode(f"{name}/then_done", "Identity", [f"{name}/pivot_t", f"^{name}/then"], b),
             GNode(f"{name}/else_done", "Identity", [f"{name}/pivot_f", f"^{name}/else"], b),
             GNode(f"{name}/done", "Merge", [f"{name}/then_done", f"{name}/else_done"])]
    merges = []
    for k in range(len(tout)):
        made.append(GNode(f"{name}/merge_{k}", "Merge", [f"{name}/then:{k}", f"{name}/else:{k}"]))
        merges.append(f"{name}/merge_{k}")
        if redirects is not None:
            redirects[f"{name}:{k}"] = f"{name}/merge_{k}"
    if redirects is not None:
        redirects[f"^{name}"] = f"^{name}/done"
    for g in made:
        if g.name in nodes:
            raise GraphFormatError(n.describe(), f"lowering the If would make node {g.name!r}, "
                                   "which the graph already has", "duplicate-name")
        g.where = n.where
        nodes[g.name] = g
    nodes[name] = GNode(name, "IdentityN", merges + [f"^{name}/done"],
                        {"T": {"list": {"type": tout}}}, n.where)
    return [g for g in made if g.op == "StatefulPartitionedCall"]



#: The attribute TensorFlow's lowering sets on the calls it makes
#: (kLowerAsMultiDeviceFunctionAttr): they are inlined as TensorFlow inlines
#: multi-device function calls (_inline_lowered).
LOWERED = {"_lower_as_multi_device_function": {"b": True}}


def _install(n: GNode, made: list[GNode], nodes: dict[str, GNode], what: str) -> None:
    for g in made:
        if g.name in nodes and g.name != n.name:
            raise GraphFormatError(n.describe(), f"lowering the {what} would make node "
                                   f"{g.name!r}, which the graph already has", "duplicate-name")
        g.where = n.where
    for g in made:
        nodes[g.name] = g


def _lower_while(n: GNode, nodes: dict[str, GNode], redirects: dict[str, str]) -> list[GNode]:
    """A While (StatelessWhile) node as TensorFlow's LowerWhileHelper lowers
    it (tensorflow/core/common_runtime/lower_while_op.cc), frame `n`:

    * `n/enter_k` = Enter(input k) for each input, frame_name n, the node's
      parallel_iterations; a DT_RESOURCE input's Enter is_constant and has
      nothing else (no Merge, Switch, Exit or NextIteration: the loop passes
      the handle through unchanged); control inputs of the While go through
      `n/LoopControlInputs`, a NoOp every Enter waits for;
    * `n/merge_k` = Merge(n/enter_k, n/next_iteration_k) per other input;
    * `n/cond`, a call of the cond function with the merges (the resource
      Enters), after `^n/merge_<first>`; `n/LoopCond` = LoopCond(n/cond:0);
    * `n/switch_k` = Switch(n/merge_k, n/LoopCond);
    * `n/body`, a call of the body function with the switches' true outputs
      (the resource Enters) and a control edge from `n/loop_body_control` =
      Identity(first switch:1), so that the body's nodes, constants
      included, are dead once the loop is done;
    * `n/exit_k` = Exit(n/switch_k:0); `n/next_iteration_k` =
      NextIteration(n/body:k, ^n/body): the next iteration starts after the
      body call, its effects included;
    * `n/LoopExecuted` = NoOp(^every exit); `n` itself an IdentityN of the
      exits (a resource output: the resource input), for fetches by name.
      As in TensorFlow, the While's data consumers read the Exits directly
      and its control consumers wait for LoopExecuted (`redirects`)."""
    data = [i for i in n.inputs if not i.startswith("^")]
    controls = [i for i in n.inputs if i.startswith("^")]
    types = _type_list(n.attr.get("T"))
    if len(types) != len(data):
        raise GraphFormatError(n.describe(), f"has {len(data)} inputs and {len(types)} types "
                               "in its attribute T", "arity")
    resource = [t == "DT_RESOURCE" for t in types]
    if all(resource):
        raise GraphFormatError(n.describe(), "a While with no tensor loop variable (none, "
                               "or all resources: TensorFlow's lowering needs one)",
                               "malformed-node")
    cond_f, body_f = _branch(n, "cond"), _branch(n, "body")
    pi = n.attr.get("parallel_iterations")
    pi = pi.get("i", 10) if isinstance(pi, Mapping) else 10
    if not isinstance(pi, int) or pi < 1:
        raise GraphFormatError(n.describe(), f"parallel_iterations must be > 0, not {pi!r}",
                               "malformed-node")
    name = n.name
    made: list[GNode] = []
    enter_ctrl: list[str] = []
    if controls:
        made.append(GNode(f"{name}/LoopControlInputs", "NoOp", controls))
        enter_ctrl = [f"^{name}/LoopControlInputs"]
    enters, loop_in, body_in, exits = [], [], [], []
    first = next(k for k, r in enumerate(resource) if not r)
    for k, (a, r) in enumerate(zip(data, resource)):
        attrs = {"frame_name": {"s": name.encode()}, "parallel_iterations": {"i": pi},
                 "T": {"type": types[k]}}
        if r:
            attrs["is_constant"] = {"b": True}
        made.append(GNode(f"{name}/enter_{k}", "Enter", [a] + enter_ctrl, attrs))
        enters.append(f"{name}/enter_{k}")
    t_attr = lambda k: {"T": {"type": types[k]}}   # noqa: E731
    for k, r in enumerate(resource):
        if r:
            loop_in.append(enters[k])
            continue
        made.append(GNode(f"{name}/merge_{k}", "Merge",
                          [enters[k], f"{name}/next_iteration_{k}"], dict(t_attr(k), N={"i": 2})))
        loop_in.append(f"{name}/merge_{k}")
    call_attr = {"Tin": n.attr.get("T", {}), **LOWERED}
    made.append(GNode(f"{name}/cond", "StatefulPartitionedCall",
                      loop_in + [f"^{name}/merge_{first}"],
                      dict(call_attr, Tout={"list": {"type": ["DT_BOOL"]}},
                           f={"func": {"name": cond_f}})))
    made.append(GNode(f"{name}/LoopCond", "LoopCond", [f"{name}/cond"]))
    for k, r in enumerate(resource):
        if r:
            body_in.append(enters[k])
            continue
        made.append(GNode(f"{name}/switch_{k}", "Switch",
                          [f"{name}/merge_{k}", f"{name}/LoopCond"], t_attr(k)))
        body_in.append(f"{name}/switch_{k}:1")
    made.append(GNode(f"{name}/loop_body_control", "Identity", [f"{name}/switch_{first}:1"],
                      t_attr(first)))
    made.append(GNode(f"{name}/body", "StatefulPartitionedCall",
                      body_in + [f"^{name}/loop_body_control"],
                      dict(call_attr, Tout=n.attr.get("T", {}), f={"func": {"name": body_f}})))
    outputs = []
    for k, (a, r) in enumerate(zip(data, resource)):
        if r:
            outputs.append(a)
            redirects[f"{name}:{k}"] = a
            continue
        made.append(GNode(f"{name}/exit_{k}", "Exit", [f"{name}/switch_{k}:0"], t_attr(k)))
        made.append(GNode(f"{name}/next_iteration_{k}", "NextIteration",
                          [f"{name}/body:{k}", f"^{name}/body"], t_attr(k)))
        exits.append(f"{name}/exit_{k}")
        outputs.append(f"{name}/exit_{k}")
        redirects[f"{name}:{k}"] = f"{name}/exit_{k}"
    made.append(GNode(f"{name}/LoopExecuted", "NoOp", [f"^{e}" for e in exits]))
    redirects[f"^{name}"] = f"^{name}/LoopExecuted"
    made.append(GNode(name, "IdentityN", outputs + [f"^{name}/LoopExecuted"],
                      {"T": n.attr.get("T", {})}))
    _install(n, made, nodes, "While")
    return [nodes[f"{name}/cond"], nodes[f"{name}/body"]]


def _int32_const(name: str, value: int, after: str) -> GNode:
    return GNode(name, "Const", [f"^{after}"], {
        "dtype": {"type": "DT_INT32"},
        "value": {"tensor": {"dtype": "DT_INT32", "tensor_shape": {}, "int_val": [value]}}})


def _lower_case(n: GNode, nodes: dict[str, GNode], redirects: dict[str, str]) -> list[GNode]:
    """A Case (StatelessCase) node as TensorFlow's CaseBuilder lowers it
    (tensorflow/core/common_runtime/lower_case_op.cc), with its `_SwitchN`
    written as a chain of Switches:

    * TensorFlow's `_SwitchN(x, index)` with N outputs sends x to output
      `index` and dead values to the others, and an index out of [0, N)
      to output N-1 (the default branch).  tfsem writes it as
      `n/is_b` = Equal(index, b) for b < N-1 and a chain: `sw_0` =
      Switch(x, is_0), `sw_b` = Switch(sw_{b-1}:0, is_b); output b < N-1
      is `sw_b:1`, output N-1 is `sw_{N-2}:0`.  Exactly the selected
      output is live (an out-of-range index fails every test and reaches
      the last one), the others are dead: the same values and dead values
      on the same outputs as _SwitchN;
    * the pivots `n/pivot_b` = Identity(output b of the index switched on
      itself); each input switched the same way (a resource too, as
      TensorFlow does), output b to branch b;
    * `n/branch<b>`, a call of branch function b after `^n/pivot_b`;
    * `n/merge_k` = Merge(n/branch0:k, ..., n/branch<N-1>:k);
      `n/branch_executed` = Merge(the pivots) after every branch call, and
      `n` an IdentityN of the merges after it; data consumers read the
      merges, control consumers wait for branch_executed (`redirects`)."""
    data = [i for i in n.inputs if not i.startswith("^")]
    controls = [i for i in n.inputs if i.startswith("^")]
    if not data:
        raise GraphFormatError(n.describe(), "Case needs a branch index input", "arity")
    a = n.attr.get("branches")
    funcs = ((a.get("list") or {}).get("func") or []) if isinstance(a, Mapping) else []
    branches = [f.get("name") for f in funcs if isinstance(f, Mapping)]
    if not branches or not all(isinstance(b, str) and b for b in branches):
        raise GraphFormatError(n.describe(), "has no branch functions (attribute 'branches')",
                               "malformed-node")
    index, args = data[0], data[1:]
    tin = _type_list(n.attr.get("Tin"))
    tout = _type_list(n.attr.get("Tout"))
    name, nb = n.name, len(branches)
    made: list[GNode] = []
    i32 = {"T": {"type": "DT_INT32"}}
    # the index switched on itself first (TensorFlow's `n/branch_index`): its
    # control inputs are the Case's; every test waits for it
    for b in range(nb - 1):
        # (the constant waits for the index's node: it is in the index's frame)
        made.append(_int32_const(f"{name}/const_{b}", b, split_ref(index)[0]))
        made.append(GNode(f"{name}/is_{b}", "Equal", [index, f"{name}/const_{b}"], i32))

    def switch_n(x: str, label: str, dtype: dict, extra: list[str]) -> list[str]:
        if nb == 1:
            if not extra:
                return [x]
            made.append(GNode(f"{name}/{label}", "Identity", [x] + extra, {"T": dtype}))
            return [f"{name}/{label}"]
        outs, cur = [], x
        for b in range(nb - 1):
            sw = f"{name}/{label}_sw{b}"
            made.append(GNode(sw, "Switch", [cur, f"{name}/is_{b}"] + (extra if b == 0 else []),
                              {"T": dtype}))
            outs.append(f"{sw}:1")
            cur = f"{sw}:0"
        outs.append(cur)
        return outs

    idx_outs = switch_n(index, "branch_index", {"type": "DT_INT32"}, controls)
    pivots = []
    for b in range(nb):
        made.append(GNode(f"{name}/pivot_{b}", "Identity", [idx_outs[b]], i32))
        pivots.append(f"{name}/pivot_{b}")
    per_branch: list[list[str]] = [[] for _ in range(nb)]
    for k, a_ in enumerate(args):
        t = {"type": tin[k]} if k < len(tin) else {}
        for b, o in enumerate(switch_n(a_, f"input_{k}", t, [])):
            per_branch[b].append(o)
    call_attr = {"Tin": n.attr.get("Tin", {}), "Tout": n.attr.get("Tout", {}), **LOWERED}
    calls = []
    for b in range(nb):
        made.append(GNode(f"{name}/branch{b}", "StatefulPartitionedCall",
                          per_branch[b] + [f"^{pivots[b]}"],
                          dict(call_attr, f={"func": {"name": branches[b]}})))
        calls.append(f"{name}/branch{b}")
    made.append(GNode(f"{name}/branch_executed", "Merge", pivots + [f"^{c}" for c in calls],
                      dict(i32, N={"i": nb})))
    merges = []
    for k in range(len(tout)):
        made.append(GNode(f"{name}/merge_{k}", "Merge", [f"{c}:{k}" for c in calls],
                          {"T": {"type": tout[k]}, "N": {"i": nb}}))
        merges.append(f"{name}/merge_{k}")
        redirects[f"{name}:{k}"] = f"{name}/merge_{k}"
    redirects[f"^{name}"] = f"^{name}/branch_executed"
    made.append(GNode(name, "IdentityN" if merges else "NoOp",
                      merges + [f"^{name}/branch_executed"], {"T": {"list": {"type": tout}}}))
    _install(n, made, nodes, "Case")
    return [nodes[c] for c in calls]


#: The function attributes of the functional control-flow ops (If and While
#: name one function per attribute; Case's `branches` is a list, read below).
FUNCTION_ATTRS = {op: _opdefs.lookup(op).function_attrs for op in IF_OPS + WHILE_OPS}


def _callees(nd: dict, op: str) -> list[str]:
    """The functions a body NodeDef (a dict) calls: a call's, or the
    branches and bodies of functional control flow (lowered into calls)."""
    if op in opt.CALLS:
        return [c for c in [_callee(nd)] if c]
    attr = nd.get("attr") or {}
    out = []
    for key in FUNCTION_ATTRS.get(op, ()):
        f = (attr.get(key) or {}).get("func") if isinstance(attr.get(key), dict) else None
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            out.append(f["name"])
    if op in CASE_OPS and isinstance(attr.get("branches"), dict):
        out += [f.get("name") for f in (attr["branches"].get("list") or {}).get("func", [])
                if isinstance(f, dict) and isinstance(f.get("name"), str)]
    return out


def _callee(nd: dict) -> str | None:
    """The function a call NodeDef (a dict) names, or None."""
    f = (nd.get("attr") or {}).get("f")
    func = f.get("func") if isinstance(f, dict) else None
    return func.get("name") if isinstance(func, dict) else None


def _check_expansion(calls: list[GNode], library: dict, deadline: float | None) -> None:
    """Refuse, before inlining anything, a graph whose calls would inline
    more than MAX_INLINED_NODES nodes, or that calls a recursive function.

    The size of a function once inlined is what `_inline` adds for one call
    of it (an entry node and the body nodes it keeps) plus the sizes of the
    calls among them, computed once per function (memoized, iteratively):
    time linear in the library, however many times the calls multiply."""
    cap = MAX_INLINED_NODES + 1
    size: dict[str, int] = {}
    on_path: set[str] = set()

    def parts(fname: str) -> tuple[int, list[str]]:
        fdef = library[fname]
        body = {nd.get("name", ""): nd for nd in fdef.get("node_def", []) if isinstance(nd, dict)}
        ops_of = {k: nd.get("op", "") for k, nd in body.items()}
        kept = _needed(fdef, body, ops_of)
        callees = [c for n in kept for c in _callees(body[n], ops_of[n])]
        return 1 + len(kept), [c for c in callees if c in library]

    for call in calls:
        root = _function_name(call)
        if root not in library or root in size:
            continue
        own, callees = parts(root)
        stack = [(root, own, callees, list(callees))]
        on_path.add(root)
        while stack:
            fname, own, callees, todo = stack[-1]
            while todo and todo[-1] in size:
                todo.pop()
            callees_left = todo
            if callees_left:
                nxt = callees_left[-1]
                if nxt in on_path:
                    chain = " -> ".join(repr(_short(f, 40)) for f, *_ in stack) + \
                        f" -> {_short(nxt, 40)!r}"
                    raise GraphFormatError(call.describe(), f"the function {_short(nxt)!r} calls "
                                           f"itself ({chain}): recursive functions cannot be "
                                           "inlined", "function-depth")
                if len(stack) >= MAX_DEPTH:
                    raise GraphFormatError(call.describe(), f"function calls nested deeper than "
                                           f"{MAX_DEPTH} (calling {_short(nxt)!r})",
                                           "function-depth")
                check_deadline(deadline, "sizing the graph's functions")
                n_own, n_callees = parts(nxt)
                stack.append((nxt, n_own, n_callees, list(n_callees)))
                on_path.add(nxt)
                continue
            stack.pop()
            on_path.discard(fname)
            total = own
            for c in callees:
                total = min(cap, total + size[c])
            size[fname] = total
    total = 0
    for call in calls:
        fname = _function_name(call)
        total = min(cap, total + size.get(fname, 0))
        if total >= cap:
            raise GraphFormatError(call.describe(), f"inlining function calls would make more "
                                   f"than {MAX_INLINED_NODES} nodes (one call of "
                                   f"{_short(fname)!r} alone makes "
                                   f"{'more than ' if size.get(fname, 0) >= cap else ''}"
                                   f"{min(size.get(fname, 0), MAX_INLINED_NODES)}): functions "
                                   "that call others several times grow the graph "
                                   "exponentially; refused", "too-large")


def _function_name(call: GNode) -> str:
    f = call.attr.get("f", {})
    name = (f.get("func") or {}).get("name") if isinstance(f, dict) else None
    if not name:
        raise GraphFormatError(call.describe(), "a call without attribute f (the function)")
    return name



def _returns(fdef: dict, outs, fname: str, resolve) -> list[str]:
    """The inlined body's tensor for each output of `outs`, through the
    function's `ret` map (an output without a ret entry is a format error)."""
    ret = fdef.get("ret", {})
    rets = []
    for o in outs:
        if o not in ret:
            raise GraphFormatError(f"function {fname!r}", f"output {o!r} has no ret entry")
        rets.append(resolve(ret[o], f"function {fname!r} ret {o!r}"))
    return rets

def _inline(call: GNode, library: dict, nodes: dict[str, GNode], depth: int,
            room: int = MAX_INLINED_NODES,
            redirects: dict[str, str] | None = None) -> list[GNode]:
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
        if len(parts) != 3 or not (parts[2].isdigit() and parts[2].isascii()) \
                or len(parts[2]) > MAX_PORT_DIGITS or parts[0] not in body:
            raise GraphFormatError(ctx, f"input {_short(text)!r} is not node:output:index of a node "
                                   f"of {fname!r}")
        n, arg, k = parts[0], parts[1], int(parts[2])
        return f"{prefix}/{n}:{_port(ops_of[n], n, arg, k, port_names)}"

    kept = _needed(fdef, body, ops_of)
    lowered = isinstance(call.attr.get("_lower_as_multi_device_function"), Mapping) \
        and redirects is not None
    if lowered:
        return _inline_lowered(call, fdef, fname, body, ops_of, kept, arg_map, data_in,
                               control_in, outs, nodes, where, resolve, room, depth, redirects)
    entry = f"{prefix}/_entry"
    sources = sorted({"^" + split_ref(i)[0] for i in data_in + control_in})
    new: list[GNode] = [GNode(entry, "NoOp", sources, {}, where)]
    if len(kept) + 1 > room:
        raise GraphFormatError(call.describe(), f"inlining function calls makes more than "
                               f"{MAX_INLINED_NODES} nodes (at this call of {_short(fname)!r}, "
                               f"nested {depth} deep): functions that call others several "
                               "times grow the graph exponentially; refused", "too-large")
    for n in body:
        if n not in kept:
            continue
        nd = body[n]
        ctx = f"node {n!r} {where}"
        inputs = [resolve(i, ctx) for i in nd.get("input", [])] + [f"^{entry}"]
        new.append(GNode(f"{prefix}/{n}", ops_of[n], inputs, dict(nd.get("attr", {})), where,
                         True))
    if call.op in opt.CALLS:
        # (PartitionedCall, StatefulPartitionedCall: TensorFlow instantiates
        # the function when it loads the graph or first runs the call,
        # checking every node of the body)
        if len(kept) < len(body):
            new[0].dead = _dead_nodes(body, kept, ops_of, prefix, where, resolve)
        why = _call_signature_refusal(call, fname, sig)
        new[0].refusal = (call.describe(), why) if why else None
    rets = _returns(fdef, outs, fname, resolve)
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


def _inline_lowered(call: GNode, fdef: dict, fname: str, body: dict, ops_of: dict, kept: set,
                    arg_map: dict, data_in: list, control_in: list, outs: list,
                    nodes: dict[str, GNode], where: str, resolve, room: int, depth: int,
                    redirects: dict[str, str]) -> list[GNode]:
    """A call made by lowering control flow, inlined as TensorFlow's
    InlineFunctionBody inlines it (tensorflow/core/common_runtime/
    inline_function_utils.cc, a multi-device call: output control from the
    control returns):

    * `C/input_control_node`, a NoOp after the call's control inputs;
    * `C/input_k` = Identity(input k) after it, for each tensor argument
      (a resource argument is its handle, and each body node that takes it
      waits for the input control node, as it would for TensorFlow's
      Identity of the handle);
    * the body's nodes, a node with no inputs after the input control node:
      each waits only for its own inputs (no barrier for the whole call);
    * `C/output_control_node`, a NoOp after the function's control returns
      (`control_ret`): what waits for `^C` waits for it, and what reads
      `C:k` reads the k-th return value directly (`redirects`); `C` itself
      is an IdentityN of the return values, for fetches by name.

    In the untaken branch of a lowered If or Case, and in the last iteration
    of a lowered While, the call's control input is dead: so is the input
    control node, and every body node fires dead."""
    prefix = call.name
    if len(kept) + 3 + len(data_in) > room:
        raise GraphFormatError(call.describe(), f"inlining function calls makes more than "
                               f"{MAX_INLINED_NODES} nodes (at this call of {_short(fname)!r}, "
                               f"nested {depth} deep): functions that call others several "
                               "times grow the graph exponentially; refused", "too-large")
    sig = fdef.get("signature", {})
    in_args = sig.get("input_arg", [])
    icn = f"{prefix}/input_control_node"
    new: list[GNode] = []
    wait = [f"^{icn}"] if control_in else []
    if control_in:
        new.append(GNode(icn, "NoOp", list(control_in), {}, where))
    handles = set()
    for k, a in enumerate(in_args):
        name = a.get("name", "")
        t = a.get("type")
        if t == "DT_RESOURCE":
            handles.add(name)
            continue
        ident = f"{prefix}/input_{k}"
        new.append(GNode(ident, "Identity", [data_in[k]] + wait, {"T": {"type": t}}, where))
        arg_map[name] = ident
    for n in body:
        if n not in kept:
            continue
        nd = body[n]
        ctx = f"node {n!r} {where}"
        raw = list(nd.get("input", []))
        inputs = [resolve(i, ctx) for i in raw]
        if wait and (not raw or any(i.split(":")[0] in handles for i in raw
                                    if not i.startswith("^"))):
            inputs += wait
        new.append(GNode(f"{prefix}/{n}", ops_of[n], inputs, dict(nd.get("attr", {})), where,
                         True))
    rets = _returns(fdef, outs, fname, resolve)
    ocn = f"{prefix}/output_control_node"
    new.append(GNode(ocn, "NoOp", sorted({f"^{prefix}/{n}" for n in
                                          (fdef.get("control_ret") or {}).values() if n in body})
                     + wait, {}, where))
    del nodes[call.name]
    for g in new:
        if g.name in nodes:
            raise GraphFormatError(g.describe(), "inlining a function body made two nodes of "
                                   "this name", "duplicate-name")
        nodes[g.name] = g
    for k, r in enumerate(rets):
        redirects[f"{call.name}:{k}"] = r
    redirects[f"^{call.name}"] = f"^{ocn}"
    nodes[call.name] = GNode(call.name, "IdentityN", rets + [f"^{ocn}"],
                             {"_tfsem_call": {"s": fname.encode()}}, call.where)
    return new


def _call_signature_refusal(call: GNode, fname: str, sig: dict) -> str:
    """Why a PartitionedCall's Tin or Tout is not the types of its function's
    arguments or results ("": it is, or a type cannot be told: a function
    typed by its own attributes, a list not of DT_ names).  TensorFlow loads
    such a graph and every run reaching the call fails."""
    from .signatures import _name, _type_list_of
    for attr, args, what in (("Tin", sig.get("input_arg", []), "takes"),
                             ("Tout", sig.get("output_arg", []), "returns")):
        given = _type_list_of(call.attr.get(attr))
        if given is None:
            continue
        want = [x.get("type") if isinstance(x, Mapping) and not x.get("number_attr")
                and not x.get("type_list_attr") else None for x in args]
        if not all(isinstance(t, str) and t[:3] == "DT_" for t in given + want):
            continue
        if given != want:
            return (f"attribute {attr!r} is [{', '.join(map(_name, given))}], and function "
                    f"{_short(fname)!r} {what} [{', '.join(map(_name, want))}]: TensorFlow "
                    "cannot instantiate the call, and every run that reaches it fails")
    return ""


def _dead_nodes(body: dict, kept: set, ops_of: dict, prefix: str, where: str,
                resolve) -> dict[str, GNode]:
    """The body's nodes outside `kept`, as GNodes named and wired as the
    inlined ones (`prefix/n`), for the signature check only (never built).
    A node whose inputs do not resolve is left out (not judged)."""
    out: dict[str, GNode] = {}
    for n, nd in body.items():
        if n in kept:
            continue
        try:
            inputs = [resolve(i, f"node {n!r} {where}") for i in nd.get("input", [])]
        except (GraphFormatError, TypeError, ValueError, AttributeError):
            continue
        out[f"{prefix}/{n}"] = GNode(f"{prefix}/{n}", ops_of[n], inputs,
                                     dict(nd.get("attr", {})), where, True)
    return out


def _port(op: str, node: str, arg: str, k: int, names: dict) -> int:
    if op in opt.OUTPUT_ARGS:
        args = opt.OUTPUT_ARGS[op]
        if arg in args:
            return args.index(arg) + k
    model = opt.lookup(op)
    if op not in opt.OUTPUT_ARGS and model is not None and arg in model.output_args:
        return model.output_args.index(arg) + k
    if op in opt.OUTPUT_ARGS or (model is not None and len(model.output_args) > 1):
        args = opt.OUTPUT_ARGS.get(op) or model.output_args
        raise GraphFormatError(f"node {node!r}", f"{op} has no output arg {arg!r} "
                               f"(its outputs: {', '.join(args)})")
    if model is not None or op in opt.CALLS or op in FUNCTIONAL_OPS:
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
