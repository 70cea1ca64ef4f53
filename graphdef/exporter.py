"""A tfsem program as a TensorFlow GraphDef (the op table in reverse).

* each `Var` node is a VarHandleOp whose `shared_name` is the variable (so
  every Var node of one variable is the same resource in TensorFlow);
* each feed is a Placeholder named by the feed;
* Read is ReadVariableOp; Write, Assign-Add and Assign-Sub are
  AssignVariableOp, AssignAddVariableOp and AssignSubVariableOp (an Assign of
  another function has no TensorFlow op: refused);
* functions are their TensorFlow ops (Add -> AddV2, Max -> Maximum, Concat ->
  ConcatV2 on axis 0, Snd(x, y) -> Identity(y) after x, ...); constant
  operands that tfsem keeps as attributes (axes, shapes) become Const nodes;
* each output is an Identity node named by the output's name (an output
  named like a tensor, `s:1`, which is no node name: `s_1`, `_fetch_names`);
* the nodes the export adds (Const operands, a Split part's Split) are
  named apart from every other name of the graph (`ExportNode.fresh`);
* the state family (oracle/opdefs/state.py's import models: scatters,
  strided-slice assignment, optimizer updates, VarIsInitializedOp) is
  written back as its TensorFlow ops where the nodes have the import's shape
  (`_state_roles`; docs/stateful-ops.md), refused by name otherwise.

TensorFlow wants the dtype of every op (`T`): it is inferred by evaluating
each function on zero tensors of its inputs' types (the oracle's own
functions), in topological order.

`import_graph(export(P), fetches=P's output names)` is P up to node names
(tests/test_graphdef_export.py checks `sound` both ways), and a plain export
writes the importer's own shapes back as what they came from (a feed's
Identity as its Placeholder, a fetched Identity as the output, a state op's
parts as the op, a Split's parts as one Split), so that export, import,
export is a fixed point (tests/test_graphdef_export_round_trip.py).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Collection

import numpy as np

from tfsem.oracle import state_ops
from tfsem.oracle.opdefs import array as array_ops
from tfsem.oracle.opdefs import state as state_defs
from tfsem.oracle import functions as fns
from tfsem.oracle import opdefs
from tfsem.oracle import kernels
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import (ASSIGN, ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, READ,
                                  SWITCH, VAR, VARIABLE, ControlIn, DataIn, FeedControlIn, FeedIn,
                                  Program, ProgramError, TensorType, Violation)
from tfsem.oracle.values import BITS_DTYPES, DTYPE_MISMATCH, SHAPE_MISMATCH, Error, Tensor

from .functions import split_ref
from .importer import TF_DTYPES, TFSEM_DTYPES

PRODUCER = 2474   # the GraphDef version TensorFlow 2.21 writes

#: Assign-f -> its TensorFlow op (the state family's, oracle/opdefs/state.py)
_ASSIGN_OPS = state_defs.ASSIGN_OPS


class ExportNode:
    """What a function's export facet (oracle/opdefs: `Function.export`) is
    given for one node: its GraphDef name, its data inputs and control
    inputs as GraphDef input strings, its attributes, `T(i)` (the type
    attribute of data input i's dtype), `tf_dtype(d)` (a tfsem dtype's
    DT_ name) and `int32_const(name, values, scalar=False)` (a Const node
    holding int32 values); `op`, for a node that is not a function (a
    control-flow primitive), its kind.

    `fresh(base)` is the name for a node the export adds (`NAME/split`,
    `NAME/axis`): `base` unless the graph has that name already (a program
    node of that name, another added node), else `base_1`, `base_2`, ...
    `int32_const` names its Const so.  An export facet names every node it
    adds through `fresh` and refers to it by the name returned."""

    __slots__ = ("name", "data", "ctrl", "attrs", "T", "op", "fresh")

    def __init__(self, name, data, ctrl, attrs, T, op=None,
                 fresh: Callable[[str], str] = lambda base: base):
        self.name, self.data, self.ctrl, self.attrs, self.T = name, data, ctrl, attrs, T
        self.op = op
        self.fresh = fresh

    @staticmethod
    def tf_dtype(dtype: str) -> str:
        return TF_DTYPES[dtype]

    def int32_const(self, name: str, values, scalar: bool = False) -> dict:
        return _int32_const(self.fresh(name), values, scalar)


class ExportError(ProgramError):
    def __init__(self, where: str, message: str):
        super().__init__([Violation(where, "not-exportable", message)])


#: A node name TensorFlow takes (tensorflow/core/framework/node_def_util.cc
#: IsValidNodeName; Python's import_graph_def takes a superset of these)
_TF_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/]*(>[A-Za-z0-9.][A-Za-z0-9_.\-/]*)*")


def valid_node_name(name: str) -> bool:
    """Whether TensorFlow takes `name` as a node's name (`s:1`, a tensor
    name, is not one)."""
    return _TF_NODE_NAME.fullmatch(name) is not None


def _node_name_like(name: str) -> str:
    """A valid node name for `name`: every character TensorFlow refuses in
    a node name made `_` (`s:1` -> `s_1`), `node` in front where the first
    character may not start one."""
    base = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name)
    return base if valid_node_name(base) else "node" + base


def _type(dt: str) -> dict:
    return {"type": TF_DTYPES[dt]}


def _shape(shape) -> dict:
    return {"shape": {"dim": [{"size": int(d)} for d in shape]}}


def tensor_proto(value: Tensor) -> dict:
    arr = value.array
    t: dict[str, Any] = {"dtype": TF_DTYPES[value.dtype],
                         "tensor_shape": {"dim": [{"size": int(d)} for d in arr.shape]}}
    if arr.size:
        bits = BITS_DTYPES.get(value.dtype)   # floats as their bit patterns (bfloat16 has no byte order)
        raw = np.ascontiguousarray(arr).view(bits) if bits is not None else np.ascontiguousarray(arr)
        t["tensor_content"] = raw.astype(raw.dtype.newbyteorder("<")).tobytes()
    return t


def _int32_const(name: str, values, scalar: bool = False) -> dict:
    arr = np.array(values, dtype=np.int32)
    if not scalar:
        arr = arr.reshape(-1)
    t = {"dtype": "DT_INT32", "tensor_shape": {"dim": [{"size": int(d)} for d in arr.shape]}}
    if arr.size:
        t["tensor_content"] = arr.astype("<i4").tobytes()
    return {"name": name, "op": "Const", "attr": {"dtype": {"type": "DT_INT32"},
                                                  "value": {"tensor": t}}}


def infer_types(p: Program, failures: dict[str, str] | None = None
                ) -> dict[tuple[str, int], TensorType | None]:
    """(node, port) -> the tensor's type (None where unknown: an uninterpreted
    function, or an error value).  `failures`, when given, gets node -> error
    for the functions whose input types alone make them fail (dtype-mismatch,
    shape-mismatch: whatever the values)."""
    types: dict[tuple[str, int], TensorType | None] = {}

    def of(i) -> TensorType | None:
        if isinstance(i, FeedIn):
            return p.feed_type(i.name)
        return types.get((i.node, i.port))

    for name in p.topological_order:
        n = p.node[name]
        if n.op == VAR:
            continue
        if n.op == READ:
            types[(name, 0)] = p.variables.get(handle_variable(p, name) or "")
            continue
        if n.op in FORWARDING:
            # a primitive forwards its (first known) data input: a Merge's
            # back edge is typed after it, so its other inputs decide
            t = next((of(i) for i in n.data_inputs[:1 if n.op != MERGE else None]
                      if of(i) is not None), None)
            types[(name, 0)] = t
            if n.op == SWITCH:
                types[(name, 1)] = t
            if n.op == MERGE:
                types[(name, 1)] = TensorType("int32", ())
            continue
        if n.op == ASSIGN:
            continue
        f = fns.get(n.op)
        args = [of(i) for i in n.data_inputs]
        result_types = getattr(f, "result_types", None)   # the TensorList family's
        if result_types is not None:
            for k, t in enumerate(result_types(n.attrs)):
                types[(name, k)] = t
            continue
        if n.op == "Identity" and args and args[0] is not None and args[0].dtype == VARIANT:
            types[(name, 0)] = args[0]
            continue
        if n.op in array_ops.VALUE_DEPENDENT:
            # the shape of the result is a value (Reshape to a computed
            # shape): zeros would give a wrong one, or a failure that is none
            dt = array_ops.result_dtype(n.op, n.attrs, [a and a.dtype for a in args])
            for k in range(f.n_out):
                types[(name, k)] = None if dt is None else TensorType(dt, None)
            continue
        try:
            if any(a is None or a.shape is None or a.dtype == "variant" for a in args):
                raise fns.CannotRun("unknown input shape (or a TensorList)")
            # declared shapes may be far too large to evaluate on zeros (a
            # feed of 10^19 elements): then only the dtype is inferred
            fns.check_size(n.op, [a.shape for a in args])
            zeros = [Tensor(np.zeros(a.shape, dtype=a.dtype)) for a in args]
            # (no TensorFlow kernel here, oracle/kernels.py: its failure on
            # zeros may depend on the values, num_segments 0 say, and would
            # read as "always fails"; without one the dtype comes from the op)
            with kernels.use(False):
                results = f.apply(zeros, n.attrs)
            for k, r in enumerate(results):
                types[(name, k)] = None if isinstance(r, Error) else TensorType(r.dtype, r.shape)
            err = next((r for r in results if isinstance(r, Error)), None)
            if failures is not None and err is not None and \
                    err.reason in (DTYPE_MISMATCH, SHAPE_MISMATCH):
                failures[name] = err.reason
        except (fns.CannotRun, BudgetExceeded):
            # no concrete model (a float reduction, an uninterpreted op) or
            # too large to evaluate: the dtype still follows from the op
            # (shape unknown: None)
            if n.op.startswith("tf."):
                dt = TFSEM_DTYPES.get(str(n.attrs.get("tf_attrs", {}).get("T")))
            elif f.casts:
                dt = n.attrs.get("DstT")
            else:
                dt = next((a.dtype for a in args if a is not None), None)
            for k in range(f.n_out):
                types[(name, k)] = None if dt is None else TensorType(dt, None)
    return types


#: The dtype of a TensorList (oracle/opdefs/lists.py): DT_VARIANT in TensorFlow.
VARIANT = "variant"
#: The dtype of a stack's handle (oracle/opdefs/stacks.py): DT_RESOURCE.
RESOURCE = "resource"


def tf_type(dt: str) -> str:
    """TensorFlow's DataType of a tfsem dtype (a TensorList: DT_VARIANT; a
    stack's handle, oracle/opdefs/stacks.py: DT_RESOURCE)."""
    return "DT_VARIANT" if dt == VARIANT else "DT_RESOURCE" if dt == RESOURCE else TF_DTYPES[dt]


#: The control-flow primitives: each forwards its first data input (a Merge
#: one of its inputs) and a Switch to both ports (SPEC section 9).
FORWARDING = (SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, LOOP_COND)


def handle_variable(p: Program, name: str) -> str | None:
    """The variable a Read or Assign accesses, its handle followed back
    through the control-flow primitives that forward it (a handle that
    enters a loop, a Switch of it in a conditional) to its Var node."""
    n = p.node[name]
    if n.op not in (READ, ASSIGN) or not n.inputs or not isinstance(n.data_inputs[0], DataIn):
        return None
    src, seen = p.node.get(n.data_inputs[0].node), set()
    while src is not None and src.op in FORWARDING and src.name not in seen:
        seen.add(src.name)
        first = src.data_inputs[0] if src.data_inputs else None
        src = p.node.get(first.node) if isinstance(first, DataIn) else None
    return src.var if src is not None and src.op == VAR else None


def _shared_handle_edges(p: Program) -> dict[str, list[str]]:
    """For `export_graph(shared_handles=True)`: the control inputs each node
    gets in place of the `Var` nodes it depends on.

    With one VarHandleOp per variable, a `Var` node's own control inputs
    would be lost, so they move to the nodes after it: a node that takes a
    `Var` node's handle, or has a control edge from it, gets that `Var`
    node's control inputs instead (a `Var` node's control input that is
    itself a `Var` node is replaced the same way, transitively).

    Why the outcomes stay the same (seed 000, section 3): a `Var` node has no
    effect and outputs the same handle whenever it fires, so an outcome
    depends only on the order of the other nodes.  In P a consumer of `Var`
    node V fires after V, hence after every control input of V; in the
    export it fires after those inputs directly.  Conversely, given a run of
    the export, firing V right after the last of its control inputs is a run
    of P with the same order of the other nodes.  So the runs of P and of
    the export, with `Var` nodes left out, are the same sequences.
    `tests/test_graphdef_export.py` compares the oracle's outcome sets of P
    and of the export imported back on generated programs."""
    memo: dict[str, list[str]] = {}

    def effective(v: str) -> list[str]:     # a Var node's control inputs, Var nodes resolved
        if v not in memo:
            out: list[str] = []
            for i in p.node[v].control_inputs:
                if isinstance(i, ControlIn):
                    out += effective(i.node) if p.node[i.node].op == VAR else [i.node]
            memo[v] = list(dict.fromkeys(out))
        return memo[v]

    extra: dict[str, list[str]] = {}
    for n in p.nodes:
        if n.op == VAR:
            continue
        got: list[str] = []
        for i in n.inputs:
            if isinstance(i, (DataIn, ControlIn)) and p.node[i.node].op == VAR:
                got += effective(i.node)
        if got:
            extra[n.name] = list(dict.fromkeys(got))
    return extra


def export_graph(p: Program, *, names: dict[str, str] | None = None,
                 split_assigns: Collection[str] = (), shared_handles: bool = False,
                 fetches: dict[str, str] | None = None) -> dict:
    """The GraphDef dict of program `p` (format with graphdef.proto.format_text).

    `names`, when given, receives each program node's name in the graph (a
    node is renamed only where its name is taken by a feed or an output, or
    is not a node name TensorFlow takes).
    `fetches`, when given, receives each output's name -> the node to fetch
    for it: the output's name itself, except for an output whose name is
    no node name TensorFlow takes (`s:1`, what the importer names an output
    fetched at a port), which is an Identity named like it (`s_1`,
    `_fetch_names`).  Every node the export adds (a Const operand
    `NAME/axis`, a Split `NAME/split`) is named apart from the program's
    nodes, the outputs and each other (`NAME/axis_1` where `NAME/axis` is
    taken): a graph has each name once.
    `split_assigns` names Assign-Add / Assign-Sub nodes to export as three
    nodes instead of one atomic AssignAddVariableOp: ``NAME/read``
    (ReadVariableOp, taking the Assign's control inputs), ``NAME/compute``
    (AddV2 or Sub of the value read and the Assign's input) and ``NAME``
    (AssignVariableOp of the result).  That is seed 002's decomposed Assign
    made explicit, so that a schedule of the decomposed semantics that runs
    other nodes between an Assign's read and its write can be forced on
    TensorFlow (backends/tensorflow.py `replay_program`), whose executor
    runs an AssignAddVariableOp under the variable's lock, as one step.
    `shared_handles`: one VarHandleOp per variable (named after its first
    `Var` node) instead of one per `Var` node, each `Var` node's control
    inputs moved to the nodes after it (`_shared_handle_edges`, with the
    argument why the outcomes stay the same).  XLA refuses a cluster given
    two handles of one variable ("Duplicate variable passed to XLA
    cluster"); `--target xla` exports with this.  Not with `names` or
    `split_assigns` (a forced schedule names `Var` nodes).
    """
    if shared_handles and (names is not None or split_assigns):
        raise ValueError("shared_handles does not go with names or split_assigns")
    if shared_handles and p.has_control_flow:
        name = p.control_flow_nodes[0]
        raise ExportError(f"node {name!r}", f"control flow ({p.node[name].op}) is not exported "
                          "with one handle per variable (--target xla): a handle's control "
                          "inputs cannot move across a loop's frame")
    failures: dict[str, str] = {}
    types = infer_types(p, failures)
    for name, reason in failures.items():
        # tfsem: the node's result is the error value; TensorFlow refuses to
        # build such a graph, so the export would not mean the program
        raise ExportError(f"node {name!r}", f"always gives the error {reason} for its input "
                          "types: TensorFlow refuses such a graph")
    # the importer's own shapes, written as what they were imported from (a
    # plain export only: `names` and `split_assigns` name every node):
    # feed F's Identity node F is the Placeholder F, output O's Identity node
    # O the output's Identity (_import_shapes), so that importing the export
    # gives the same nodes and exporting that the same graph
    compact = names is None and not split_assigns and not shared_handles
    for f in p.feed_names:
        if not valid_node_name(f):
            raise ExportError(f"feed ${f}", f"{f!r} is not a node name TensorFlow takes, and a "
                              "feed is the Placeholder of its name (rename the feed)")
    fetch_of = _fetch_names(p, compact)
    fetched = set(fetch_of.values())
    feed_nodes, output_nodes = _import_shapes(p, fetch_of) if compact else (set(), set())
    reserved = set(p.feed_names) | fetched
    rename: dict[str, str] = {}
    # the program's nodes that keep their names: each valid name no feed or
    # output takes, and each output's own node (_import_shapes).  They are
    # all taken before any name is made up, so that a node renamed (`a b`
    # like it, `a_b`; `o` after output `o`, `o_1`) never takes one of them:
    # taken in the program's order instead, `a b` first took `a_b` from the
    # Identity `a_b` of output `a_b`, written as the output's node, and
    # fetching `a_b` gave the other node's value
    keep = output_nodes | {n.name for n in p.nodes
                           if n.name not in reserved and valid_node_name(n.name)}
    # every name the graph has so far: a name the export makes up (a node
    # renamed, a Const operand, a Split) is one not in it (`fresh`)
    taken = set(reserved) | keep

    last: dict[str, int] = {}

    def fresh(base: str) -> str:
        # (the search for `base_k` resumes at the last k given for `base`:
        # every `base_j` below it was taken then and is still, as `taken`
        # only grows, so the name is the one a search from k = 0 finds; from
        # 0, n names that TensorFlow refuses and that differ only there
        # (`a?` for n characters ?, each made `a_`) took n^2 / 2 steps)
        k = last.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        last[base] = k
        taken.add(name)
        return name

    for n in p.nodes:
        if n.name in feed_nodes or n.name in keep:
            rename[n.name] = n.name     # (a feed node: the Placeholder of its name)
            continue
        rename[n.name] = fresh(n.name if valid_node_name(n.name) else _node_name_like(n.name))
    if names is not None:
        names.update(rename)
    if fetches is not None:
        fetches.update(fetch_of)
    split = set(split_assigns)
    for name in sorted(split):
        n = p.node.get(name)
        if n is None or n.op != ASSIGN:     # (an Assign of another function is refused below)
            raise ValueError(f"split_assigns: {name!r} is not an Assign node")
        for part in ("read", "compute"):
            if f"{rename[name]}/{part}" in taken:
                raise ExportError(f"node {name!r}", f"cannot be split: a node is already "
                                  f"called {rename[name]}/{part}")
            taken.add(f"{rename[name]}/{part}")
    out: list[dict] = []
    used_vars = {n.var for n in p.nodes if n.op == VAR}
    moved: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    if shared_handles:
        moved = _shared_handle_edges(p)
        for n in p.nodes:
            if n.op == VAR:
                first.setdefault(n.var, n.name)
        for n in p.nodes:           # every Var node is its variable's one handle
            if n.op == VAR:
                rename[n.name] = rename[first[n.var]]
    for x, t in p.variables.items():
        if x in first:              # shared_handles: the variable's one handle
            out.append({"name": rename[first[x]], "op": "VarHandleOp",
                        "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape),
                                 "shared_name": {"s": x.encode()}, "container": {"s": b""}}})
            continue
        if x not in used_vars:      # declared, never accessed: still part of the interface
            name = fresh(x if valid_node_name(x) else _node_name_like(x))
            out.append({"name": name, "op": "VarHandleOp",
                        "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape),
                                 "shared_name": {"s": x.encode()}, "container": {"s": b""}}})
    for f in p.feed_names:
        t = p.feed_type(f)
        out.append({"name": f, "op": "Placeholder",
                    "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape)}})

    roles = _state_roles(p, types)

    def ref(i) -> str:
        if isinstance(i, FeedIn):
            return i.name
        if isinstance(i, ControlIn):
            return f"^{rename[i.node]}"
        return rename[i.node] + (f":{i.port}" if i.port else "")

    def dtype_of(i, where: str) -> str:
        t = _type_of(p, types, i)
        if t is None:
            raise ExportError(where, "the dtype of its input is unknown (it comes from an "
                              "uninterpreted function or is always an error value)")
        return t.dtype

    for n in p.nodes:
        if n.name in feed_nodes:
            continue
        name = rename[n.name]
        where = f"node {n.name!r}"
        data = [ref(i) for i in n.data_inputs]
        # an input control edge (^$g) holds GO from the start: no edge at all
        ctrl = [ref(i) for i in n.control_inputs if not isinstance(i, FeedControlIn)
                and not (shared_handles and p.node[i.node].op == VAR)]
        ctrl = list(dict.fromkeys(ctrl + [f"^{rename[m]}" for m in moved.get(n.name, ())]))
        role = roles.get(n.name)
        if role is not None:        # a part of an imported state op (_state_roles)
            out.extend(_state_node(p, n, role, name, data, ctrl, ref, dtype_of))
            continue
        if n.op == VAR:
            if shared_handles:      # written once, above
                continue
            t = p.variables[n.var]
            out.append({"name": name, "op": "VarHandleOp", "input": ctrl,
                        "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape),
                                 "shared_name": {"s": n.var.encode()}, "container": {"s": b""}}})
            continue
        if n.op in FORWARDING:
            out.append(_control_flow_node(p, n, name, data, ctrl, types, where))
            continue
        if n.op == READ:
            t = p.variables[handle_variable(p, n.name)]
            out.append({"name": name, "op": "ReadVariableOp", "input": data + ctrl,
                        "attr": {"dtype": _type(t.dtype)}})
            continue
        if n.op == ASSIGN:
            op = _ASSIGN_OPS.get(n.fn.removesuffix(fns.FTZ_SUFFIX))
            if op is None:
                raise ExportError(where, f"Assign-{n.fn} has no TensorFlow op (Write, Assign-Add "
                                  "and Assign-Sub do, and Assign-Scatter*, -ScatterNd* and "
                                  "-StridedSliceAssign of a PackScatter or PackSlice, and "
                                  "Assign-GradientStep of a StackBroadcast; StepToward, "
                                  "ScaleAdd, AdamStep and MomentumStep come from an imported "
                                  "float32 ResourceApplyAdam or ResourceApplyMomentum, which "
                                  "export does not rebuild)")
            x = handle_variable(p, n.name)
            t = p.variables[x]
            value = n.data_inputs[1]
            vt = _type_of(p, types, value)
            if vt is not None and (vt.dtype != t.dtype or
                                   (vt.shape is not None and tuple(vt.shape) != tuple(t.shape))):
                # tfsem: the Assign fails and changes nothing; TensorFlow refuses
                # to build such a graph, so the export would not mean the program
                raise ExportError(where, f"assigns a {vt.dtype}{list(vt.shape or [])} value to "
                                  f"variable {x!r} of type {t.dtype}{list(t.shape)}: TensorFlow "
                                  "refuses such a graph (in tfsem the Assign fails and changes "
                                  "nothing)")
            if n.name in split and op != "AssignVariableOp":
                fn = n.fn.removesuffix(fns.FTZ_SUFFIX)
                # the update's function as the registry exports it (Add: AddV2)
                compute = opdefs.export_of(fn)(ExportNode(
                    f"{name}/compute", [f"{name}/read", data[1]], [], {},
                    lambda i=0, dt=t.dtype: _type(dt), fresh=fresh))
                out += [{"name": f"{name}/read", "op": "ReadVariableOp", "input": data[:1] + ctrl,
                         "attr": {"dtype": _type(t.dtype)}},
                        *compute,
                        {"name": name, "op": "AssignVariableOp",
                         "input": [data[0], f"{name}/compute"], "attr": {"dtype": _type(t.dtype)}}]
                continue
            attr = {"dtype": _type(t.dtype)}
            if n.fn == "SndSameShape":
                attr["validate_shape"] = {"b": True}
            out.append({"name": name, "op": op, "input": data + ctrl, "attr": attr})
            continue
        out.extend(_function_node(p, n, name, data, ctrl, dtype_of, where, fresh))
    for o, port in p.outputs.items():
        if fetch_of[o] in output_nodes:     # the node itself, written above
            continue
        if o in feed_nodes:         # a fetched Placeholder: fetching it gives the fed value
            continue
        if o in p.feed_names:
            # the output's Identity and the feed's Placeholder would be two
            # nodes of one name, a graph TensorFlow refuses
            raise ExportError(f"output {o!r}", f"has the name of feed ${o}: a GraphDef fetches "
                              "an output by node name, and the feed is the Placeholder of that "
                              "name (rename the output)")
        out.append({"name": fetch_of[o], "op": "Identity", "input": [ref(port)],
                    "attr": {"T": {"type": TF_DTYPES[dtype_of(port, f'output {o!r}')]}}})
    if compact:
        out = _collapse_state_groups(p, roles, rename, out, fetched)
        if not p.has_control_flow:
            out = _merge_output_parts(p, rename, out, fetched)
    seen: set[str] = set()
    for d in out:
        # (every name above is made unique; a graph with a name twice is one
        # TensorFlow refuses to import, so it is never written)
        if d["name"] in seen:
            raise ExportError(f"node {d['name']!r}", "the export would write two nodes of this "
                              "name (an exporter bug: please report it with the program)")
        seen.add(d["name"])
    return {"node": out, "versions": {"producer": PRODUCER}}


def export_fetched_by_name(p: Program, **options) -> dict | None:
    """`export_graph(p, **options)` where every output is fetched at a node
    of its own name; None where the program cannot be exported (ExportError
    and kin) or an output is fetched as another node (`s:1` as `s_1`,
    `fetches`).  For the campaigns' targets, which fetch and name outputs
    by one name."""
    fetch_of: dict[str, str] = {}
    try:
        graph = export_graph(p, fetches=fetch_of, **options)
    except Exception:  # noqa: BLE001 - ExportError and kin: nothing to hand on
        return None
    if any(f != o for o, f in fetch_of.items()):
        return None
    return graph


def _fetch_names(p: Program, compact: bool) -> dict[str, str]:
    """Output -> the node fetched for it in the graph: the output's name
    where TensorFlow takes it as a node name, else a name like it
    (`_node_name_like`: output `s:1`, which the importer names an output
    fetched at port 1 of `s`, is fetched as Identity `s_1` of that tensor;
    a node named `s:1` is refused by TensorFlow, and fetching `s:1` would
    mean port 1 of whatever the graph's node `s` is).  The made-up name is
    none of the feeds', the other outputs' and the program's nodes', so
    that the program's nodes keep their names; `compact` (a plain export):
    except where the output is port 0 of an Identity of just that name,
    the node the importer made of a fetch of `s_1` under output name
    `s:1`, which is then the output's node (_import_shapes), so that
    export, import, export keeps that name.  Or of a name `s_1_K`, the one
    the export made up where the program had a node `s_1` (TensorFlow
    names a second op `split_1` beside a Split `split`): else each round
    wrote a new Identity `s_1_{K+1}` of the last one.  Either way the node
    is an Identity of the output's value, none of the feeds' or another
    output's, written under its own name (export_graph's `keep`): fetched,
    it gives the output's value."""
    feeds, nodes = set(p.feed_names), set(p.node)
    fetch_of = {o: o for o in p.outputs if valid_node_name(o)}
    taken = feeds | set(fetch_of)
    last: dict[str, int] = {}       # base -> the last k tried (export_graph's `fresh`)
    for o, port in p.outputs.items():
        if o in fetch_of:
            continue
        base = _node_name_like(o)
        own = p.node.get(port.node) if compact and isinstance(port, DataIn) and \
            port.port == 0 and re.fullmatch(re.escape(base) + r"(_[1-9][0-9]*)?", port.node) \
            else None
        if own is not None and own.op == "Identity" and len(own.data_inputs) == 1 and \
                own.name not in taken:
            name = own.name
        else:
            k = last.get(base, 0)
            name = f"{base}_{k}" if k else base
            while name in taken or name in nodes:
                k += 1
                name = f"{base}_{k}"
            last[base] = k
        taken.add(name)
        fetch_of[o] = name
    return fetch_of


def _import_shapes(p: Program, fetch_of: dict[str, str]) -> tuple[set[str], set[str]]:
    """(feed nodes, output nodes): the nodes the importer makes of a
    Placeholder and of a fetched Identity (`fetch_of`: each output's node
    name in the graph, _fetch_names).

    * A Placeholder F is imported as node F = Identity($F) (no control
      inputs).  Such a node that something consumes is written as the
      Placeholder F itself, its consumers reading F: in TensorFlow an
      Identity of a Placeholder forwards the fed value, nothing else, so
      the graph computes the same; imported again it is node F = Identity($F)
      once more (where it was written as an Identity `F_1` of the
      Placeholder, each round added one).  Fetched as output F (what the
      importer makes of a fetched Placeholder), it is the Placeholder F,
      fetched: TensorFlow gives a fed Placeholder's fetch the fed value (an
      output Identity F beside the Placeholder F would be two nodes of one
      name).  One that nothing consumes stays
      an Identity (the Placeholder alone would not be imported: the
      importer does not take Placeholders as targets).
    * An output O of node O = Identity(x) (port 0) is the fetched Identity O
      the importer made it from: that node is the output's Identity (with
      its control inputs), instead of a second Identity `O` of a renamed
      `O_1`.  Its value is the output's value either way.  (For an output
      whose name is not a node name, `s:1`, the same holds of its node name
      `s_1`: output nodes are node names.)"""
    feeds, outputs = set(p.feed_names), set(p.outputs)
    feed_nodes = {n.name for n in p.nodes
                  if n.op == "Identity" and n.inputs == (FeedIn(n.name),) and n.name in feeds
                  and (n.name not in outputs or p.outputs[n.name] == DataIn(n.name, 0))
                  and (p.successors.get(n.name) or any(port.node == n.name
                                                       for port in p.outputs.values()))}
    output_nodes = {fetch_of[o] for o, port in p.outputs.items()
                    if isinstance(port, DataIn) and port.node == fetch_of[o] and port.port == 0
                    and fetch_of[o] not in feeds and p.node[port.node].op == "Identity"
                    and len(p.node[port.node].data_inputs) == 1}
    return feed_nodes, output_nodes


def _merge_output_parts(p: Program, rename: dict[str, str], out: list[dict],
                        fetched: set[str]) -> list[dict]:
    """The exported graph with each multi-output op the importer split into
    parts written as the one op again.

    The importer makes TensorFlow node N of k outputs (Split, Unpack,
    IdentityN) into
    one node per output, N/output_i (a function of output i), and a NoOp N
    after them; the export writes part P as its own op `P/split` (with its
    constant operands `P/KEY`) and an Identity P of output i of it, so each
    round made every part an op of k outputs again.  Where the parts of a
    NoOp N are written that way, alike but for their names (the same op,
    attributes, inputs and control inputs), they are one op N (constants
    N/KEY), read at its port where a part was read, and NoOp N is dropped.

    Why the graph computes the same: the parts are pure functions of the
    same inputs after the same control inputs, and output i of the one op
    is output i of each copy; a node after part i or after N (which waits
    for the parts only: checked) is after the op, which runs after exactly
    what each part ran after.  Only without control flow (no frames or
    dead values to think about).  Imported again, op N is its parts and
    NoOp N once more."""
    by_name = {d["name"]: d for d in out}
    data_map: dict[str, str] = {}            # a part's graph name -> "N:port"
    ctrl_map: dict[str, str] = {}            # a part (or N) -> N
    drop: set[str] = set()
    merged: dict[str, dict] = {}             # the first part's Identity -> its nodes
    own_names = set(rename.values()) | fetched | set(p.feed_names)
    for n in p.nodes:
        if n.op != "NoOp" or n.data_inputs or len(n.control_inputs) < 2 or \
                rename.get(n.name) != n.name or n.name not in by_name:
            continue
        parts = [c.node for c in n.control_inputs]
        if not all(isinstance(c, ControlIn) for c in n.control_inputs) or \
                len(set(parts)) != len(parts) or \
                not all(c.startswith(n.name + "/") and rename.get(c) == c for c in parts) or \
                any(c in fetched for c in parts):
            # (a part that is an output's own node, an Identity fetched under
            # its name, stays: merged away, the output would be gone)
            continue
        idents = [by_name.get(c) for c in parts]
        if all(d is not None and d["op"] == "Identity" and
               not any(i.lstrip("^").startswith(c + "/") for i in d.get("input", []))
               for c, d in zip(parts, idents)) and \
                [c[len(n.name) + 1:] for c in parts] == [f"output_{i}" for i in range(len(parts))]:
            # an IdentityN's parts (a Copy: TensorFlow's IdentityN(x, x)),
            # merged only where every part is an Identity of the same input
            # after the same control inputs: then the one op waits for no
            # more than each part did
            if len({(tuple(d.get("input", [])), repr(d.get("attr"))) for d in idents}) != 1 or \
                    len([i for i in idents[0].get("input", []) if not i.startswith("^")]) != 1:
                continue
            ins = idents[0]["input"]
            merged[parts[0]] = [{"name": n.name, "op": "IdentityN",
                                 "input": [ins[0]] * len(parts) + ins[1:],
                                 "attr": {"T": {"list": {"type": [idents[0]["attr"]["T"]["type"]]
                                                         * len(parts)}}}}]
            for k, c in enumerate(parts):
                data_map[c] = f"{n.name}:{k}" if k else n.name
                ctrl_map[c] = n.name
                drop.add(c)
            drop.add(n.name)
            continue
        shapes = []
        for c in parts:
            ident = by_name.get(c)
            if ident is None or ident["op"] != "Identity" or len(ident.get("input", [])) != 1:
                break
            src, port, control = split_ref(ident["input"][0])
            # the nodes the export wrote for the part (its op, constants),
            # not the program's own nodes named under it (`c/k`)
            own = {d["name"]: d for d in out if d["name"].startswith(c + "/")
                   and d["name"] not in own_names}
            if control or src not in own:
                break
            # the part's nodes with its prefix taken off: alike across parts
            body = sorted((_moved(k, c, n.name), d["op"],
                           tuple(_moved(i, c, n.name) for i in d.get("input", [])),
                           repr(sorted(d.get("attr", {}).items())))
                          for k, d in own.items())
            shapes.append((c, src, port, body, own))
        else:
            if len({repr(s[3]) for s in shapes}) != 1 or \
                    len({s[1][len(s[0]):] for s in shapes}) != 1:
                continue
            c0, src0, _, _, own0 = shapes[0]
            # the op named N, its constants N/KEY
            nodes = [{**d, "name": n.name if k == src0 else _moved(k, c0, n.name),
                      "input": [_moved(i, c0, n.name) for i in d.get("input", [])]}
                     for k, d in own0.items()]
            for m in nodes:
                m["input"] = [("^" + n.name if i == "^" + _moved(src0, c0, n.name) else i)
                              for i in m["input"]]
            if any(m["name"] in by_name and m["name"] != n.name for m in nodes):
                continue
            for c, _, port, _, own in shapes:
                data_map[c] = f"{n.name}:{port}" if port else n.name
                ctrl_map[c] = n.name
                drop |= set(own) | {c}
            drop.add(n.name)
            merged[parts[0]] = nodes
    if not merged:
        return out

    def redirected(d: dict) -> dict:
        ins = d.get("input")
        if not ins:
            return d
        new = []
        for i in ins:
            if i.startswith("^"):
                i = "^" + ctrl_map.get(i[1:], i[1:])
            else:
                s, port, _ = split_ref(i)
                if s in data_map and port == 0:
                    i = data_map[s]
            new.append(i)
        return {**d, "input": _with_controls(new, [i for i in new if i.startswith("^")])}

    result = []
    for d in out:
        if d["name"] in merged:
            # a merged op's own inputs are redirected too: it may read (or
            # wait for) a part of another merged op (a Split of a Split's
            # output), whose node is dropped
            result.extend(redirected(m) for m in merged[d["name"]])
            continue
        if d["name"] in drop:
            continue
        result.append(redirected(d))
    return result


def _with_controls(inputs: list[str], controls: list[str]) -> list[str]:
    """`inputs`' data inputs as they are (a node may read one tensor twice),
    then `controls` once each."""
    return [i for i in inputs if not i.startswith("^")] + list(dict.fromkeys(controls))


def _moved(ref: str, prefix: str, name: str) -> str:
    """GraphDef input or node name `ref` under `prefix/` moved to `name/`."""
    if ref.startswith("^"):
        return "^" + _moved(ref[1:], prefix, name)
    return name + ref[len(prefix):] if ref.startswith(prefix + "/") else ref


def _state_groups(p: Program, roles: dict) -> dict[str, set[str]]:
    """The TensorFlow op node of each state-family op written back -> the
    program nodes written as NoOps for it (its members, _state_roles)."""
    groups: dict[str, set[str]] = {}
    for name, role in roles.items():
        if role[0] in ("packed-assign", "stacked-assign"):
            groups.setdefault(name, set()).add(role[2])
            if role[0] == "stacked-assign" and role[4] is not None:   # (its check)
                groups[name].add(role[4])
        elif role[0] == "template-apply":
            groups.setdefault(name, set()).update(role[4])
        elif role[0] == "apply":
            groups.setdefault(name, set()).update(role[2])
        elif role[0] == "noop" and len(role) > 1:       # a Write of an optimizer update
            groups.setdefault(role[1], set()).add(name)
    return groups


def _collapse_state_groups(p: Program, roles: dict, rename: dict[str, str],
                           out: list[dict], fetched: set[str]) -> list[dict]:
    """The exported graph with each state-family op written as the one node
    it was imported from: its member NoOps dropped and the op named after
    the importer's NoOp `N` that ends it (the op's model imports TensorFlow
    node N as N/... parts and a NoOp N after them), that NoOp dropped too.

    Why the graph computes the same: a member NoOp has no effect; it waits
    for its inputs (the member's inputs) and the op waits for it.  Where
    nothing outside the group (the op, its members, N) consumes a member,
    and nothing reads the op's own value (checked; else the group is left as
    it is), dropping it and giving the
    op the member's inputs from outside the group as control inputs keeps
    every order between the other nodes (the op still runs after the same
    nodes: those that are its data inputs need no control edge).  N waits
    for the op only (checked: its control inputs are the op and members),
    so a node after N or after the op is a node after the renamed op.
    Imported again, op N is N's parts and the NoOp N once more: the same
    program, so exporting it gives this graph again."""
    groups = _state_groups(p, roles)
    if not groups:
        return out
    by_name = {d["name"]: d for d in out}
    drop: set[str] = set()
    redirect: dict[str, str] = {}           # graph node -> the op's new name
    replace: dict[str, dict] = {}           # the op's old name -> its new node
    for anchor, members in groups.items():
        group = members | {anchor}
        ends = [s for s in p.successors.get(anchor, ())
                if p.node[s].op == "NoOp" and not p.node[s].data_inputs
                and anchor.startswith(s + "/")
                and all(isinstance(c, ControlIn) and c.node in group
                        for c in p.node[s].control_inputs)]
        end = ends[0] if len(ends) == 1 else None
        inside = group | ({end} if end else set())
        if any(s not in inside for m in members for s in p.successors.get(m, ())) or \
                any(port.node in group for port in p.outputs.values()) or \
                any(isinstance(i, DataIn) and i.node == anchor
                    for s in p.successors.get(anchor, ()) for i in p.node[s].data_inputs):
            continue
        if end is not None and (end in fetched or rename[end] != end):
            continue
        graph_names = {rename[m] for m in inside}
        op = by_name.get(rename[anchor])
        parts = [by_name.get(rename[m]) for m in members]
        if op is None or any(d is None or d["op"] != "NoOp" for d in parts):
            continue
        data = [i for i in op.get("input", []) if not i.startswith("^")]
        sources = {split_ref(i)[0] for i in data}
        controls = [i for d in [op, *parts] for i in d.get("input", [])
                    if i.startswith("^") and i[1:] not in graph_names and i[1:] not in sources]
        name = rename[end] if end is not None else rename[anchor]
        replace[op["name"]] = {**op, "name": name,
                               "input": data + list(dict.fromkeys(controls))}
        drop |= graph_names - {op["name"]}
        redirect.update({g: name for g in graph_names})
    if not replace:
        return out
    result = []
    for d in out:
        if d["name"] in drop:
            continue
        if d["name"] in replace:
            # the op's control inputs redirected too: one may be another
            # group's op, renamed after its NoOp (a step after another
            # step's op itself)
            d = replace[d["name"]]
        ins = d.get("input")
        if ins and any(i.startswith("^") and i[1:] in redirect for i in ins):
            d = {**d, "input": _with_controls(
                ins, ["^" + redirect.get(i[1:], i[1:]) for i in ins if i.startswith("^")])}
        result.append(d)
    return result


def _control_flow_node(p, n, name, data, ctrl, types, where) -> dict:
    """A control-flow primitive as the TensorFlow op of its name (SPEC
    section 9): the control family's export (oracle/opdefs/control.py), with
    T DT_RESOURCE where the primitive forwards a variable's handle."""
    if p.port_kind(n.name, 0) == VARIABLE:
        t = "DT_RESOURCE"
    else:
        typ = types.get((n.name, 0))
        if typ is None:
            raise ExportError(where, f"the dtype of the value this {n.op} forwards is unknown "
                              "(it comes from an uninterpreted function or is always an "
                              "error value)")
        t = tf_type(typ.dtype)
    export = opdefs.node_export_of(n.op)
    if export is None:
        raise ExportError(where, f"the control-flow node {n.op} has no export in the op "
                          "registry")
    return export(ExportNode(name, data, ctrl, n.attrs, lambda i=0: {"type": t}, op=n.op))


def _function_node(p, n, name, data, ctrl, dtype_of, where, fresh) -> list[dict]:
    # X.ftz (subnormals flushed) is what TensorFlow's X computes; tfsem's own
    # float X keeps subnormals, which TensorFlow's CPU runtime flushes: the
    # exported graph may differ from the program there (docs/tensorflow-graphs.md)
    op = n.op.removesuffix(fns.FTZ_SUFFIX)
    T = (lambda i=0: {"type": tf_type(dtype_of(n.data_inputs[i], where))})
    attrs = n.attrs
    if op == "Const":
        v = attrs["value"]
        return [{"name": name, "op": "Const", "input": ctrl,
                 "attr": {"dtype": {"type": TF_DTYPES[v.dtype]}, "value": {"tensor": tensor_proto(v)}}}]
    export = opdefs.export_of(op)   # the registry's families (oracle/opdefs)
    if export is not None:
        return export(ExportNode(name, data, ctrl, attrs, T, fresh=fresh))
    if op == "Copy":
        return [{"name": name, "op": "IdentityN", "input": [data[0], data[0]] + ctrl,
                 "attr": {"T": {"list": {"type": [T()["type"]] * 2}}}}]
    if op == "Snd":
        return [{"name": name, "op": "Identity", "input": [data[1], "^" + data[0].split(":")[0]] + ctrl,
                 "attr": {"T": T(1)}}]
    if op.startswith("tf."):
        tf_op = op[3:].split("/")[0]
        return [{"name": name, "op": tf_op, "input": data + ctrl,
                 "attr": {k: v for k, v in ((k, _attr_from_json(v))
                                            for k, v in attrs.get("tf_attrs", {}).items())
                          if v is not None}}]
    if op == "StackBroadcast" or op.removeprefix("Check") in _CHECKED_FNS:
        raise ExportError(where, f"{op} is part of an imported ResourceApplyAdam, "
                          "ResourceApplyMomentum or ResourceApplyGradientDescent, which export "
                          "does not rebuild")
    raise ExportError(where, f"the function {op} has no TensorFlow op in the exporter")


# ---------------------------------------------------------------------------
# The state family (oracle/opdefs/state.py's import models) written back

#: Assign-FN of a packed operand -> (TensorFlow op, the pack function, its
#: dtype attribute), as the state family defines its ops (oracle/opdefs/state.py)
_PACKED_ASSIGNS = state_defs.PACKED_ASSIGNS
#: update function -> its optimizer (ApplyAdam -> ResourceApplyAdam, ...)
_UPDATES = {spec.fn: spec for spec in state_defs.OPTIMIZERS.values()}
#: Assign-FN of a StackBroadcast that is a whole op -> (TensorFlow op, its
#: inputs after the variable as the StackBroadcast's operands)
_STACKED_ASSIGNS = state_defs.STACKED_ASSIGNS
#: the functions whose inputs the import checks (`Check<fn>`, written back
#: only as part of the op they check)
_CHECKED_FNS = frozenset(f.removeprefix("Check") for f in
                         (*state_defs.STACKED_CHECKS.values(), *state_defs.MODEL_CHECKS.values()))


def _base(op: str) -> str:
    return op.removesuffix(fns.FTZ_SUFFIX)


def _state_roles(p: Program, types: dict | None = None) -> dict[str, tuple]:
    """node -> how it is written back, for the nodes of the state family's
    import models (oracle/opdefs/state.py) in the shape the importer builds:

    * Assign-Scatter* / -ScatterNd* / -StridedSliceAssign of a PackScatter or
      PackSlice: the ResourceScatter* / ResourceStridedSliceAssign op of the
      packed inputs (TensorFlow's kernel holds the variable's lock: one step,
      as an Assign-f); the pack node becomes a NoOp after its inputs (a node
      ordered after it stays so);
    * Assign-GradientStep of a StackBroadcast nothing else consumes: the
      ResourceApplyGradientDescent of its operands (with use_locking, so
      that the kernel holds the variable's lock: one step, as the Assign),
      the StackBroadcast a NoOp after its inputs;
    * an optimizer update (Read of each variable, its function, Write of each
      new value): the Reads and Writes become NoOps, the function the
      ResourceApply* op, under the importer's condition that no other node
      may see the update half done (oracle/state_ops.racing_access): then
      every run is equivalent to one where the update's steps are
      consecutive, which the kernel does;
    * a Read whose every data consumer is IsInitialized: a VarIsInitializedOp
      (at the Read's place in the order), each IsInitialized an Identity of it.

    Any other use of these functions is refused by name: it has no
    TensorFlow op."""
    roles: dict[str, tuple] = {}
    consumers: dict[str, list[tuple[str, int, int]]] = {}   # node -> (consumer, input, port)
    for n in p.nodes:
        for k, i in enumerate(n.data_inputs):
            if isinstance(i, DataIn):
                consumers.setdefault(i.node, []).append((n.name, k, i.port))
    for o, port in p.outputs.items():
        consumers.setdefault(port.node, []).append((f"output {o!r}", -1, port.port))

    def src(i) -> str | None:
        return i.node if isinstance(i, DataIn) and i.port == 0 else None

    for n in p.nodes:
        where = f"node {n.name!r}"
        op = _base(n.op)
        if n.op == ASSIGN and _base(n.fn) in _PACKED_ASSIGNS:
            tf_op, pack, _ = _PACKED_ASSIGNS[_base(n.fn)]
            m = src(n.data_inputs[1])
            if m is None or _base(p.node[m].op) != pack:
                raise ExportError(where, f"Assign-{n.fn} of a value that is not a {pack}: "
                                  f"TensorFlow's {tf_op} takes the packed inputs themselves")
            roles[n.name] = ("packed-assign", tf_op, m)
        elif op in ("PackScatter", "PackSlice"):
            for c, k, _ in consumers.get(n.name, []):
                cn = p.node.get(c)
                if cn is None or cn.op != ASSIGN or k != 1 or \
                        _PACKED_ASSIGNS.get(_base(cn.fn), ("", ""))[1] != op:
                    raise ExportError(where, f"{op} is only exported as the operand of the "
                                      "Assign it was imported for (a ResourceScatter* or "
                                      f"ResourceStridedSliceAssign); {c} uses it otherwise")
            roles[n.name] = ("noop",)
        elif op == "IsInitialized":
            r = src(n.data_inputs[0])
            if r is None or p.node[r].op != READ or \
                    any(p.node.get(c) is None or _base(p.node[c].op) != "IsInitialized"
                        for c, _, _ in consumers.get(r, [])):
                raise ExportError(where, "IsInitialized is exported (as VarIsInitializedOp) only "
                                  "of a Read that nothing else consumes: a ReadVariableOp of an "
                                  "uninitialized variable fails in TensorFlow")
            roles[r] = ("is-initialized",)
            roles[n.name] = ("identity", r)
        elif op in _UPDATES:
            _update_roles(p, n, _UPDATES[op], consumers, roles)
        elif n.op == ASSIGN and _base(n.fn) in _STACKED_ASSIGNS:
            tf_op = _STACKED_ASSIGNS[_base(n.fn)][0]
            m = src(n.data_inputs[1])
            if m is None or _base(p.node[m].op) != "StackBroadcast" or \
                    consumers.get(m) != [(n.name, 1, 0)]:
                raise ExportError(where, f"Assign-{n.fn} is exported (as {tf_op}) only of a "
                                  "StackBroadcast that nothing else consumes: TensorFlow's op "
                                  "takes the packed inputs themselves")
            inputs, check = _stacked_inputs(p, n, p.node[m], consumers)
            _check_stacked_operands(p, n, m, inputs, types or {}, where)
            roles[m] = ("noop",)
            if check is not None:
                roles[check] = ("noop",)
            roles[n.name] = ("stacked-assign", tf_op, m, inputs, check)
        elif n.op == ASSIGN and _base(n.fn) in _TEMPLATE_ANCHORS and n.name not in roles:
            _template_roles(p, n, consumers, roles)
    return roles


def _type_of(p: Program, types: dict, i):
    """The TensorType of input `i` (a feed's declared type, else what
    `infer_types` found for that port), or None where it is unknown."""
    return p.feed_type(i.name) if isinstance(i, FeedIn) else types.get((i.node, i.port))


def _stacked_inputs(p: Program, n, pack, consumers) -> tuple[list, str | None]:
    """The op's inputs after the variable an Assign-f of a StackBroadcast
    stands for, in the op's order, and the check node they come through
    (None: none).  The import packs them through the op's check
    (STACKED_CHECKS: `CheckApplyGradientDescent(alpha, delta)`, whose
    result k is its input k), StackBroadcast(delta', alpha'); a program may
    also pack the inputs themselves."""
    order = _STACKED_ASSIGNS[_base(n.fn)][1]
    ins = pack.data_inputs
    check = state_defs.STACKED_CHECKS.get(_base(n.fn))
    c = ins[0].node if isinstance(ins[0], DataIn) else None
    if c is not None and p.node[c].op == check and \
            all(isinstance(i, DataIn) and i.node == c for i in ins) and \
            [i.port for i in ins] == list(order) and \
            sorted(consumers.get(c, [])) == sorted((pack.name, k, order[k])
                                                   for k in range(len(order))):
        return list(p.node[c].data_inputs), c
    return [ins[k] for k in order], None


def _check_stacked_operands(p: Program, n, pack_name: str, inputs, types, where: str) -> None:
    """Refuse an Assign-f of a StackBroadcast that TensorFlow's op would not
    mean.  StackBroadcast broadcasts its operands, so Assign-GradientStep(w,
    StackBroadcast(delta, alpha)) runs in tfsem with alpha a vector or delta
    a scalar (elementwise); ResourceApplyGradientDescent refuses to build
    such a graph (alpha must be a scalar, delta of var's shape), and it has
    no int kernel.  The import builds it on float32 only (where its NaN bits
    were measured; another dtype's GradientStep cannot run a NaN result, and
    the exported op would not import again): the variable must be float32,
    each operand of its dtype and, where its static shape is known, of the
    op's shape.  (A shape inference cannot tell, an unknown shape -- the
    gradients of an imported graph, MatMul's -- is let through: TensorFlow
    validated those shapes when it built the graph the program came from.)"""
    x = handle_variable(p, n.name)
    t = p.variables[x]
    tf_op, order, shapes = _STACKED_ASSIGNS[_base(n.fn)]
    refuse = (lambda why: ExportError(where, f"Assign-{n.fn} is exported (as {tf_op}) only "
                                      f"as the float32 op the importer builds: {why}"))
    if t.dtype != "float32":
        raise refuse(f"variable {x!r} is {t.dtype}")
    for k, i, shape in zip(order, inputs, shapes):
        it = _type_of(p, types, i)
        want = tuple(t.shape) if shape is None else shape
        what = "the variable's shape" if shape is None else "a scalar"
        if it is None:
            continue
        if it.dtype != t.dtype:
            raise refuse(f"operand {k} of {pack_name!r} is {it.dtype}, not the variable's "
                         f"{t.dtype}")
        if it.shape is not None and tuple(it.shape) != want:
            raise refuse(f"operand {k} of {pack_name!r} has shape {list(it.shape)}, not "
                         f"{what} {list(want)} (StackBroadcast broadcasts it; {tf_op} "
                         "refuses it)")


# The float32 ResourceApplyMomentum and ResourceApplyAdam (no Nesterov) import
# as the earlier Assign-f models (oracle/opdefs/state.py): Assign-ScaleAdd or
# Assign-StepToward of StackBroadcast operands, Reads after them, pure
# arithmetic, and a final Assign-MomentumStep or -AdamStep of the variable
# (FLOAT32_MODEL_UPDATES).  They are recognized by
# matching the program against the importer's own model of the op (the
# template), node for node from that final Assign-Sub back to the op's inputs.

#: the assign functions that start an Assign-f model's template
_TEMPLATE_ANCHORS = state_defs.FLOAT32_MODEL_ANCHORS
#: op -> the assign function of its template's final Assign
_TEMPLATE_FINALS = state_defs.FLOAT32_MODEL_UPDATES
_TEMPLATES: dict[tuple, Any] = {}


def _template(tf_op: str, shape: tuple) -> tuple[Program, str, list[str]]:
    """(the importer's program of one `tf_op` node on float32 variables of
    this shape, its final Assign's name, the op's input names in order)."""
    key = (tf_op, shape)
    if key not in _TEMPLATES:
        from .importer import import_graph   # noqa: PLC0415
        spec = state_defs.OPTIMIZERS[tf_op]
        f32 = {"type": "DT_FLOAT"}
        dims = (lambda sh: {"shape": {"dim": [{"size": int(d)} for d in sh]}})
        nodes, names = [], []
        for k, v in enumerate(spec.variables):
            nodes.append({"name": f"t_{v}", "op": "VarHandleOp",
                          "attr": {"dtype": f32, "shape": dims(shape),
                                   "shared_name": {"s": f"t_{v}".encode()}}})
            names.append(f"t_{v}")
        for x in spec.inputs:
            sh = shape if x in ("grad", "delta") else ()
            nodes.append({"name": f"t_{x}", "op": "Placeholder",
                          "attr": {"dtype": f32, "shape": dims(sh)}})
            names.append(f"t_{x}")
        nodes.append({"name": "t", "op": tf_op, "input": list(names), "attr": {"T": f32}})
        prog = import_graph({"node": nodes}, [], ["t"]).program
        final = next(n.name for n in prog.nodes if n.op == ASSIGN and
                     _base(n.fn) == _TEMPLATE_FINALS[tf_op])
        _TEMPLATES[key] = (prog, final, names)
    return _TEMPLATES[key]


def _same_attrs(a, b) -> bool:
    from tfsem.oracle.jsonio import node_to_json   # noqa: PLC0415
    strip = (lambda n: {k: v for k, v in node_to_json(n).items()
                        if k not in ("name", "inputs", "var")})
    return strip(a) == strip(b)


def _template_roles(p: Program, anchor, consumers, roles) -> None:
    tf_op = _TEMPLATE_ANCHORS[_base(anchor.fn)]
    where = f"node {anchor.name!r}"
    x = handle_variable(p, anchor.name)
    t = p.variables[x]
    refuse = (lambda why: ExportError(where, f"Assign-{anchor.fn} is exported only as part of "
                                      f"the float32 {tf_op} the importer builds: {why}"))
    # the final Assign (MomentumStep, AdamStep): one the anchor leads to
    # within the template's depth (a search of the nodes near it, not of the
    # whole program)
    finals, seen, frontier = [], {anchor.name}, [anchor.name]
    for _ in range(len(_template(tf_op, tuple(t.shape))[0].nodes) if t.dtype == "float32"
                   else 0):
        frontier = [s for f in frontier for s in p.successors[f] if s not in seen]
        seen.update(frontier)
        finals += [p.node[f] for f in frontier
                   if p.node[f].op == ASSIGN and _base(p.node[f].fn) == _TEMPLATE_FINALS[tf_op]]
    if t.dtype != "float32":
        raise refuse(f"variable {x!r} is {t.dtype}")
    spec = state_defs.OPTIMIZERS[tf_op]
    shape = tuple(t.shape)
    tp, tfinal, names = _template(tf_op, shape)
    # the template's inputs: its Placeholders, imported as Identity of a feed
    placeholders = {n.name for n in tp.nodes if n.op == "Identity" and
                    len(n.data_inputs) == 1 and isinstance(n.data_inputs[0], FeedIn)}
    for final in finals:
        binding: dict[str, Any] = {}     # template feed or Var node -> program input/Var node
        matched: dict[str, str] = {}     # template node -> program node

        def match(tn: str, pn: str) -> bool:
            if tn in matched:
                return matched[tn] == pn
            a, b = tp.node[tn], p.node.get(pn)
            if b is None or a.op != b.op or not _same_attrs(a, b):
                return False
            if a.op == VAR:     # the template's variable k is one program variable
                binding.setdefault(a.var, pn)
                return binding.setdefault(("var", a.var), b.var) == b.var
            ai, bi = a.data_inputs, b.data_inputs
            if len(ai) != len(bi):
                return False
            matched[tn] = pn
            for i, j in zip(ai, bi):
                if isinstance(i, DataIn) and i.node in placeholders:   # one of the op's inputs
                    if binding.setdefault(i.node, j) != j:
                        return False
                elif not (isinstance(j, DataIn) and i.port == j.port and match(i.node, j.node)):
                    return False
            # the template's control edges (a Read after its Assign) are the
            # program's; the program may have more (they end up on the op)
            for c in a.control_inputs:
                if not isinstance(c, ControlIn):
                    continue
                for cand in b.control_inputs:
                    if not isinstance(cand, ControlIn):
                        continue
                    saved = dict(matched), dict(binding)
                    if match(c.node, cand.node):
                        break
                    matched.clear(), matched.update(saved[0])
                    binding.clear(), binding.update(saved[1])
                else:
                    return False
            return True

        if not match(tfinal, final.name) or anchor.name not in matched.values():
            continue
        members = [m for m in matched.values() if p.node[m].op != VAR]
        if any(c not in members for m in members for c, _, _ in consumers.get(m, [])):
            raise refuse("a node of it has a consumer outside it")
        variables = [binding[("var", f"t_{v}")] for v in spec.variables]
        if len(set(variables)) != len(variables):
            raise refuse("two of its variables are one variable")
        race = state_ops.racing_access(p, [(where, set(members), set(variables))])
        if race is not None:
            raise refuse(race[1])
        handles = [binding[f"t_{v}"] for v in spec.variables]
        inputs = [binding[f"t_{i}"] for i in spec.inputs]
        if any(isinstance(i, DataIn) and i.node in members for i in inputs):
            raise refuse("an input of the op is computed by the op's own nodes")
        for m in members:
            roles[m] = ("noop",)
        roles[final.name] = ("template-apply", spec, handles, inputs,
                             [m for m in members if m != final.name])
        return
    final_fn = _TEMPLATE_FINALS[tf_op]
    if finals:
        raise refuse(f"no final Assign-{final_fn} near it matches the importer's model node "
                     "for node (a rewrite changed a node of it)")
    if any(p.node[f].op == ASSIGN and _base(p.node[f].fn) == "Sub" for f in seen):
        # (the old form: say what to do, not only what is missing)
        raise refuse(f"no final Assign-{final_fn} of its shape was found (a program "
                     "imported by an earlier tfsem ends the model with an Assign-Sub.ftz, "
                     "whose NaN bits are not the op's: import the graph again)")
    raise refuse(f"no final Assign-{final_fn} of its shape was found")


def _update_roles(p: Program, n, spec, consumers, roles) -> None:
    where = f"node {n.name!r}"
    nv = len(spec.variables)
    reads = [i.node if isinstance(i, DataIn) and i.port == 0 and p.node[i.node].op == READ
             else None for i in n.data_inputs[:nv]]
    why = None
    if None in reads or len(set(reads)) != nv:
        why = "its first inputs are not one Read of each of its variables"
    elif any(consumers.get(r) != [(n.name, k, 0)] for k, r in enumerate(reads)):
        why = "a Read of its variables has another consumer"
    variables = [handle_variable(p, r) for r in reads] if why is None else []
    writes: list[str] = []
    if why is None and len(set(variables)) != nv:
        why = "two of its variables are one variable"
    for k in range(nv if why is None else 0):
        uses = [c for c in consumers.get(n.name, []) if c[2] == k]
        w = p.node.get(uses[0][0]) if len(uses) == 1 else None
        if w is None or w.op != ASSIGN or w.fn != "Snd" or uses[0][1] != 1 or \
                handle_variable(p, w.name) != variables[k]:
            why = f"its new value of {spec.variables[k]} is not written to that variable " \
                  "exactly once (and used by nothing else)"
            break
        writes.append(w.name)
    if why is None:
        race = state_ops.racing_access(p, [(where, {n.name, *reads, *writes}, set(variables))])
        if race is not None:
            why = race[1]
    if why is not None:
        raise ExportError(where, f"{_base(n.op)} is exported as {spec.op} only as the importer "
                          f"builds it (Read of each variable, the update, Write of each new "
                          f"value, nothing racing with it): {why}")
    for r in reads:
        roles[r] = ("noop",)
    roles[n.name] = ("apply", spec, reads)
    for w in writes:
        roles[w] = ("noop", n.name)


def _state_node(p, n, role, name, data, ctrl, ref, dtype_of) -> list[dict]:
    where = f"node {n.name!r}"
    kind = role[0]

    def after(refs: list[str]) -> list[str]:   # data references as control edges
        return [r if r.startswith("^") else "^" + split_ref(r)[0] for r in refs]

    if kind == "noop":    # its inputs (and the update, for a Write) become control edges
        extra = [ref(ControlIn(role[1]))] if len(role) > 1 else []
        return [{"name": name, "op": "NoOp",
                 "input": list(dict.fromkeys(after(data) + extra + ctrl))}]
    if kind == "is-initialized":
        return [{"name": name, "op": "VarIsInitializedOp", "input": data + ctrl}]
    if kind == "identity":
        return [{"name": name, "op": "Identity", "input": [ref(DataIn(role[1], 0))] + ctrl,
                 "attr": {"T": {"type": "DT_BOOL"}}}]
    if kind == "packed-assign":
        tf_op, pack_name = role[1], role[2]
        pack = p.node[pack_name]
        t = p.variables[handle_variable(p, n.name)]
        ins = [ref(i) for i in pack.data_inputs]
        idx = lambda k: {"type": TF_DTYPES[dtype_of(pack.data_inputs[k], where)]}  # noqa: E731
        dtype_attr = _PACKED_ASSIGNS[_base(n.fn)][2]
        attr = {dtype_attr: _type(t.dtype)}
        if tf_op == "ResourceStridedSliceAssign":
            attr["Index"] = idx(0)
            attr.update({m: {"i": int(pack.attrs.get(m, 0))} for m in state_defs.SLICE_MASKS})
        else:
            attr["Tindices"] = idx(0)
            if tf_op.startswith("ResourceScatterNd"):
                attr["use_locking"] = {"b": True}
        return [{"name": name, "op": tf_op,
                 "input": data[:1] + ins + [ref(ControlIn(pack_name))] + ctrl, "attr": attr}]
    if kind == "apply":
        spec, reads = role[1], role[2]
        nv = len(spec.variables)
        t = p.variables[handle_variable(p, reads[0])]
        handles = [ref(p.node[r].data_inputs[0]) for r in reads]
        attr = {"T": _type(t.dtype), "use_locking": {"b": False}}
        attr.update({a: {"b": bool(n.attrs.get(a, a == "update_slots"))} for a in spec.attrs})
        if spec.sparse:
            k = spec.inputs.index("indices")
            attr["Tindices"] = {"type": TF_DTYPES[dtype_of(n.data_inputs[nv + k], where)]}
        return [{"name": name, "op": spec.op,
                 "input": handles + data[nv:] + [ref(ControlIn(r)) for r in reads] + ctrl,
                 "attr": attr}]
    if kind == "stacked-assign":
        tf_op, pack_name, inputs = role[1], role[2], role[3]
        t = p.variables[handle_variable(p, n.name)]
        return [{"name": name, "op": tf_op,
                 "input": data[:1] + [ref(i) for i in inputs]
                 + [ref(ControlIn(pack_name))] + ctrl,
                 "attr": {"T": _type(t.dtype), "use_locking": {"b": True}}}]
    if kind == "template-apply":
        spec, handles, inputs, members = role[1:]
        t = p.variables[handle_variable(p, n.name)]
        return [{"name": name, "op": spec.op,
                 "input": [ref(DataIn(h, 0)) for h in handles] + [ref(i) for i in inputs]
                 + [ref(ControlIn(m)) for m in members] + ctrl,
                 "attr": {"T": _type(t.dtype), "use_locking": {"b": False},
                          **{a: {"b": False} for a in spec.attrs}}}]
    raise AssertionError(kind)


def _attr_from_json(v: Any) -> dict | None:
    if isinstance(v, bool):
        return {"b": v}
    if isinstance(v, int):
        return {"i": v}
    if isinstance(v, float):
        return {"f": v}
    if isinstance(v, str):
        return {"type": v} if v.startswith("DT_") else {"s": v.encode()}
    if isinstance(v, list) and all(isinstance(x, str) and x.startswith("DT_") for x in v):
        return {"list": {"type": v}}
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return {"list": {"i": v}}
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        # (a fused op's `fused_ops`: without it _FusedMatMul's kernel crashes
        # the process that runs the exported graph)
        return {"list": {"s": [x.encode() for x in v]}}
    if isinstance(v, (list, tuple)) and all(isinstance(x, float) for x in v):
        return {"list": {"f": list(v)}}
    if isinstance(v, (list, tuple)) and any(isinstance(x, float) for x in v) and \
            all(isinstance(x, float) or x in _OLD_NONFINITE for x in v):
        # (a program file written before non-finite floats were {"float":
        # TEXT} held them as the strings "nan", "inf", "-inf": in a list of
        # floats they can only be floats; the list was dropped here)
        return {"list": {"f": [x if isinstance(x, float) else _OLD_NONFINITE[x] for x in v]}}
    return None


#: an old program file's non-finite float, as the string it wrote
_OLD_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def export_text(p: Program) -> str:
    from .proto import format_text
    return format_text("GraphDef", export_graph(p))
