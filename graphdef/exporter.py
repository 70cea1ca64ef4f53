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
* each output is an Identity node named by the output's name.

TensorFlow wants the dtype of every op (`T`): it is inferred by evaluating
each function on zero tensors of its inputs' types (the oracle's own
functions), in topological order.

`import_graph(export(P), fetches=P's output names)` is P up to node names
(tests/test_graphdef_export.py checks `sound` both ways).
"""

from __future__ import annotations

from typing import Any, Collection

import numpy as np

from tfsem.oracle import array_ops
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import (ASSIGN, READ, VAR, ControlIn, DataIn, FeedControlIn, FeedIn,
                                  Program, ProgramError, TensorType, Violation)
from tfsem.oracle.values import BITS_DTYPES, DTYPE_MISMATCH, SHAPE_MISMATCH, Error, Tensor

from .importer import TF_DTYPES, TFSEM_DTYPES

PRODUCER = 2474   # the GraphDef version TensorFlow 2.21 writes

_ASSIGN_OPS = {"Snd": "AssignVariableOp", "Add": "AssignAddVariableOp",
               "Sub": "AssignSubVariableOp"}
_SAME_NAME = {"Identity", "Sub", "Mul", "Neg", "RealDiv", "Square", "Sqrt", "SquaredDifference",
              "Abs", "FloorMod", "FloorDiv", "Relu", "ReluGrad", "BiasAdd", "BiasAddGrad",
              "ZerosLike", "OnesLike", "NoOp"}
_RENAMED = {"Add": "AddV2", "Max": "Maximum", "Min": "Minimum"}
_REDUCTIONS = {"Sum": "Sum", "Mean": "Mean", "ReduceMax": "Max", "ReduceMin": "Min"}


class ExportError(ProgramError):
    def __init__(self, where: str, message: str):
        super().__init__([Violation(where, "not-exportable", message)])


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
            types[(name, 0)] = p.variables.get(p.accessed_variable(name) or "")
            continue
        if n.op == ASSIGN:
            continue
        f = fns.get(n.op)
        args = [of(i) for i in n.data_inputs]
        if n.op in array_ops.VALUE_DEPENDENT:
            # the shape of the result is a value (Reshape to a computed
            # shape): zeros would give a wrong one, or a failure that is none
            dt = array_ops.result_dtype(n.op, n.attrs, [a and a.dtype for a in args])
            for k in range(f.n_out):
                types[(name, k)] = None if dt is None else TensorType(dt, None)
            continue
        try:
            if any(a is None or a.shape is None for a in args):
                raise fns.CannotRun("unknown input shape")
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
                 split_assigns: Collection[str] = (), shared_handles: bool = False) -> dict:
    """The GraphDef dict of program `p` (format with graphdef.proto.format_text).

    `names`, when given, receives each program node's name in the graph (a
    node is renamed only where its name is taken by a feed or an output).
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
    if p.has_control_flow:   # docs/semantics.md: export of control flow is not done yet
        name = p.control_flow_nodes[0]
        raise ExportError(f"node {name!r}", f"control flow ({p.node[name].op}) is not exported "
                          "(tfsem imports TensorFlow 1's primitives but does not write them)")
    failures: dict[str, str] = {}
    types = infer_types(p, failures)
    for name, reason in failures.items():
        # tfsem: the node's result is the error value; TensorFlow refuses to
        # build such a graph, so the export would not mean the program
        raise ExportError(f"node {name!r}", f"always gives the error {reason} for its input "
                          "types: TensorFlow refuses such a graph")
    reserved = set(p.feed_names) | set(p.outputs)
    rename: dict[str, str] = {}
    taken = set(reserved)
    for n in p.nodes:
        name, k = n.name, 0
        while name in taken:
            k += 1
            name = f"{n.name}_{k}"
        taken.add(name)
        rename[n.name] = name
    if names is not None:
        names.update(rename)
    split = set(split_assigns)
    for name in sorted(split):
        n = p.node.get(name)
        if n is None or n.op != ASSIGN:     # (an Assign of another function is refused below)
            raise ValueError(f"split_assigns: {name!r} is not an Assign node")
        for part in ("read", "compute"):
            if f"{rename[name]}/{part}" in taken or f"{rename[name]}/{part}" in rename.values():
                raise ExportError(f"node {name!r}", f"cannot be split: a node is already "
                                  f"called {rename[name]}/{part}")
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
            name, k = x, 0
            while name in taken:
                k += 1
                name = f"{x}_{k}"
            taken.add(name)
            out.append({"name": name, "op": "VarHandleOp",
                        "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape),
                                 "shared_name": {"s": x.encode()}, "container": {"s": b""}}})
    for f in p.feed_names:
        t = p.feed_type(f)
        out.append({"name": f, "op": "Placeholder",
                    "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape)}})

    def ref(i) -> str:
        if isinstance(i, FeedIn):
            return i.name
        if isinstance(i, ControlIn):
            return f"^{rename[i.node]}"
        return rename[i.node] + (f":{i.port}" if i.port else "")

    def dtype_of(i, where: str) -> str:
        t = p.feed_type(i.name) if isinstance(i, FeedIn) else types.get((i.node, i.port))
        if t is None:
            raise ExportError(where, "the dtype of its input is unknown (it comes from an "
                              "uninterpreted function or is always an error value)")
        return t.dtype

    for n in p.nodes:
        name = rename[n.name]
        where = f"node {n.name!r}"
        data = [ref(i) for i in n.data_inputs]
        # an input control edge (^$g) holds GO from the start: no edge at all
        ctrl = [ref(i) for i in n.control_inputs if not isinstance(i, FeedControlIn)
                and not (shared_handles and p.node[i.node].op == VAR)]
        ctrl = list(dict.fromkeys(ctrl + [f"^{rename[m]}" for m in moved.get(n.name, ())]))
        if n.op == VAR:
            if shared_handles:      # written once, above
                continue
            t = p.variables[n.var]
            out.append({"name": name, "op": "VarHandleOp", "input": ctrl,
                        "attr": {"dtype": _type(t.dtype), "shape": _shape(t.shape),
                                 "shared_name": {"s": n.var.encode()}, "container": {"s": b""}}})
            continue
        if n.op == READ:
            t = p.variables[p.accessed_variable(n.name)]
            out.append({"name": name, "op": "ReadVariableOp", "input": data + ctrl,
                        "attr": {"dtype": _type(t.dtype)}})
            continue
        if n.op == ASSIGN:
            op = _ASSIGN_OPS.get(n.fn.removesuffix(fns.FTZ_SUFFIX))
            if op is None:
                raise ExportError(where, f"Assign-{n.fn} has no TensorFlow op (Write, Assign-Add "
                                  "and Assign-Sub do; StepToward and ScaleAdd come from an "
                                  "imported ResourceApplyAdam or ResourceApplyMomentum, which "
                                  "export does not rebuild)")
            x = p.accessed_variable(n.name)
            t = p.variables[x]
            value = n.data_inputs[1]
            vt = p.feed_type(value.name) if isinstance(value, FeedIn) else \
                types.get((value.node, value.port))
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
                out += [{"name": f"{name}/read", "op": "ReadVariableOp", "input": data[:1] + ctrl,
                         "attr": {"dtype": _type(t.dtype)}},
                        {"name": f"{name}/compute", "op": _RENAMED.get(fn, fn),
                         "input": [f"{name}/read", data[1]], "attr": {"T": _type(t.dtype)}},
                        {"name": name, "op": "AssignVariableOp",
                         "input": [data[0], f"{name}/compute"], "attr": {"dtype": _type(t.dtype)}}]
                continue
            out.append({"name": name, "op": op, "input": data + ctrl,
                        "attr": {"dtype": _type(t.dtype)}})
            continue
        out.extend(_function_node(p, n, name, data, ctrl, dtype_of, where))
    for o, port in p.outputs.items():
        out.append({"name": o, "op": "Identity", "input": [ref(port)],
                    "attr": {"T": {"type": TF_DTYPES[dtype_of(port, f'output {o!r}')]}}})
    return {"node": out, "versions": {"producer": PRODUCER}}


def _function_node(p, n, name, data, ctrl, dtype_of, where) -> list[dict]:
    # X.ftz (subnormals flushed) is what TensorFlow's X computes; tfsem's own
    # float X keeps subnormals, which TensorFlow's CPU runtime flushes: the
    # exported graph may differ from the program there (docs/tensorflow-graphs.md)
    op = n.op.removesuffix(fns.FTZ_SUFFIX)
    T = (lambda i=0: {"type": TF_DTYPES[dtype_of(n.data_inputs[i], where)]})
    attrs = n.attrs
    if op == "Const":
        v = attrs["value"]
        return [{"name": name, "op": "Const", "input": ctrl,
                 "attr": {"dtype": {"type": TF_DTYPES[v.dtype]}, "value": {"tensor": tensor_proto(v)}}}]
    if op in _SAME_NAME or op in _RENAMED:
        node = {"name": name, "op": _RENAMED.get(op, op), "input": data + ctrl, "attr": {}}
        if op != "NoOp":
            node["attr"]["T"] = T()
        return [node]
    if op == "Copy":
        return [{"name": name, "op": "IdentityN", "input": [data[0], data[0]] + ctrl,
                 "attr": {"T": {"list": {"type": [T()["type"]] * 2}}}}]
    if op == "Snd":
        return [{"name": name, "op": "Identity", "input": [data[1], "^" + data[0].split(":")[0]] + ctrl,
                 "attr": {"T": T(1)}}]
    if op == "MatMul":
        return [{"name": name, "op": "MatMul", "input": data + ctrl,
                 "attr": {"T": T(), "transpose_a": {"b": bool(attrs.get("transpose_a"))},
                          "transpose_b": {"b": bool(attrs.get("transpose_b"))}}}]
    if op == "Cast":
        return [{"name": name, "op": "Cast", "input": data + ctrl,
                 "attr": {"SrcT": T(), "DstT": {"type": TF_DTYPES[attrs["DstT"]]},
                          "Truncate": {"b": False}}}]
    if op in _REDUCTIONS:
        c = _int32_const(f"{name}/reduction_indices", attrs["axes"])
        return [c, {"name": name, "op": _REDUCTIONS[op], "input": data + [c["name"]] + ctrl,
                    "attr": {"T": T(), "Tidx": {"type": "DT_INT32"},
                             "keep_dims": {"b": bool(attrs.get("keep_dims"))}}}]
    if op in ("Reshape", "Tile"):
        key, tkey = ("shape", "Tshape") if op == "Reshape" else ("multiples", "Tmultiples")
        c = _int32_const(f"{name}/{key}", attrs[key])
        return [c, {"name": name, "op": op, "input": data + [c["name"]] + ctrl,
                    "attr": {"T": T(), tkey: {"type": "DT_INT32"}}}]
    if op == "Fill":
        c = _int32_const(f"{name}/dims", attrs["dims"])
        return [c, {"name": name, "op": "Fill", "input": [c["name"]] + data + ctrl,
                    "attr": {"T": T(), "index_type": {"type": "DT_INT32"}}}]
    if op == "ExpandDims":
        c = _int32_const(f"{name}/dim", attrs["axis"], scalar=True)
        return [c, {"name": name, "op": "ExpandDims", "input": data + [c["name"]] + ctrl,
                    "attr": {"T": T(), "Tdim": {"type": "DT_INT32"}}}]
    if op == "Squeeze":
        return [{"name": name, "op": "Squeeze", "input": data + ctrl,
                 "attr": {"T": T(), "squeeze_dims": {"list": {"i": list(attrs["squeeze_dims"])}}}}]
    if op in ("Concat", "ConcatAxis"):
        c = _int32_const(f"{name}/axis", attrs.get("axis", 0), scalar=True)
        return [c, {"name": name, "op": "ConcatV2", "input": data + [c["name"]] + ctrl,
                    "attr": {"T": T(), "N": {"i": 2}, "Tidx": {"type": "DT_INT32"}}}]
    if op == "Split":
        c = _int32_const(f"{name}/split_dim", 0, scalar=True)
        return [c, {"name": name, "op": "Split", "input": [c["name"]] + data + ctrl,
                    "attr": {"T": T(), "num_split": {"i": 2}}}]
    if op == "SplitPart":
        c = _int32_const(f"{name}/split_dim", attrs["axis"], scalar=True)
        return [c, {"name": f"{name}/split", "op": "Split", "input": [c["name"]] + data + ctrl,
                    "attr": {"T": T(), "num_split": {"i": attrs["num_split"]}}},
                {"name": name, "op": "Identity", "input": [f"{name}/split:{attrs['index']}"],
                 "attr": {"T": T()}}]
    shaped = _shape_function_node(op, name, data, ctrl, attrs, T)
    if shaped is not None:
        return shaped
    if op.startswith("tf."):
        tf_op = op[3:].split("/")[0]
        return [{"name": name, "op": tf_op, "input": data + ctrl,
                 "attr": {k: v for k, v in ((k, _attr_from_json(v))
                                            for k, v in attrs.get("tf_attrs", {}).items())
                          if v is not None}}]
    if op in ("StackBroadcast",):
        raise ExportError(where, f"{op} is part of an imported ResourceApplyAdam or "
                          "ResourceApplyMomentum, which export does not rebuild")
    raise ExportError(where, f"the function {op} has no TensorFlow op in the exporter")


#: The run-time shape functions (oracle/array_ops.py) whose TensorFlow op
#: takes the same inputs: function -> (op, {attr: input whose dtype it is}).
_SHAPE_OPS = {"Rank": ("Rank", {"T": 0}), "Range": ("Range", {"Tidx": 0}),
              "StridedSlice": ("StridedSlice", {"T": 0, "Index": 1}),
              "Slice": ("Slice", {"T": 0, "Index": 1}),
              "StridedSliceGrad": ("StridedSliceGrad", {"T": 4, "Index": 0}),
              "GatherV2": ("GatherV2", {"Tparams": 0, "Tindices": 1, "Taxis": 2}),
              "BroadcastToShape": ("BroadcastTo", {"T": 0, "Tidx": 1}),
              "BroadcastGradientArgs": ("BroadcastGradientArgs", {"T": 0}),
              "Transpose": ("Transpose", {"T": 0, "Tperm": 1}),
              "ReshapeTo": ("Reshape", {"T": 0, "Tshape": 1}),
              "TileBy": ("Tile", {"T": 0, "Tmultiples": 1}),
              "ExpandDimsAt": ("ExpandDims", {"T": 0, "Tdim": 1}),
              "FillDims": ("Fill", {"T": 1, "index_type": 0}),
              **{f"{r}Along": (tf, {"T": 0, "Tidx": 1}) for r, tf in
                 (("Sum", "Sum"), ("Mean", "Mean"), ("ReduceMax", "Max"), ("ReduceMin", "Min"))}}


def _shape_function_node(op, name, data, ctrl, attrs, T) -> list[dict] | None:
    if op in _SHAPE_OPS:
        tf_op, types = _SHAPE_OPS[op]
        a = {k: T(i) for k, i in types.items()}
        for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                  "shrink_axis_mask", "batch_dims"):
            if k in attrs:
                a[k] = {"i": int(attrs[k])}
        if "keep_dims" in attrs:
            a["keep_dims"] = {"b": bool(attrs["keep_dims"])}
        return [{"name": name, "op": tf_op, "input": data + ctrl, "attr": a}]
    if op in ("Shape", "Size"):
        return [{"name": name, "op": op, "input": data + ctrl,
                 "attr": {"T": T(), "out_type": {"type": TF_DTYPES[attrs["out_type"]]}}}]
    if op.startswith("DynamicStitch/"):
        n = int(op.split("/")[1])
        return [{"name": name, "op": "DynamicStitch", "input": data + ctrl,
                 "attr": {"T": T(n), "N": {"i": n}}}]
    if op == "UnpackPart":
        return [{"name": f"{name}/unpack", "op": "Unpack", "input": data + ctrl,
                 "attr": {"T": T(), "num": {"i": attrs["num"]}, "axis": {"i": attrs["axis"]}}},
                {"name": name, "op": "Identity", "input": [f"{name}/unpack:{attrs['index']}"],
                 "attr": {"T": T()}}]
    return None


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
    return None


def export_text(p: Program) -> str:
    from .proto import format_text
    return format_text("GraphDef", export_graph(p))
