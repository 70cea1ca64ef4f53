"""The op table: how each TensorFlow op becomes tfsem nodes.

One place lists every TensorFlow op tfsem reads from a graph and what it
becomes (docs/tensorflow-graphs.md is generated from the same table:
`tfsem import --list-ops`).  Each entry is an :class:`OpModel`: the op's
name, a one-line description, which inputs must be constants at import time
(`static`: axes, shapes, multiples, read with numpy when the graph is
imported), which inputs are resource handles (`resources`), whether the op
has an effect on state (`stateful`), and `build(b)`, which adds the tfsem
nodes through the builder `b` (graphdef/importer.py) and returns one
reference per TensorFlow output.

What is not here is never modelled approximately:

* ops in :data:`STATELESS_UNMODELLED` (pure functions of their inputs that
  tfsem cannot compute bit for bit: exp, pow, float reductions, ...) become
  uninterpreted functions `tf.OP/N_IN/N_OUT`: proofs treat them as unknown
  functions of their inputs, concrete runs stop with "cannot run";
* every other op (stateful, control flow: Switch/Merge/Enter/Exit/
  NextIteration, If/While, queues, random ops, ...) is rejected at import
  with its node and op named.

Users add or replace models through the entry-point group `tfsem.ops`:

    [project.entry-points."tfsem.ops"]
    my-ops = "my_package.tfops:OPS"

where OPS is an OpModel, a list of them, or a function returning either.
An entry point that fails to load is reported by :func:`load_errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from tfsem.oracle.program import ControlIn, DataIn

ENTRY_POINT_GROUP = "tfsem.ops"


@dataclass(frozen=True)
class OpModel:
    """How one TensorFlow op is imported (see the module docstring)."""

    op: str
    build: Callable[[Any], Sequence[DataIn]]
    doc: str
    static: tuple[int, ...] = ()
    resources: tuple[int, ...] = ()
    stateful: bool = False
    #: Names of the op's output args in order (how `node:arg:k` inside a
    #: FunctionDef names a port); ops with one output arg need none.
    output_args: tuple[str, ...] = ()
    #: For export: the tfsem function (or "Read"/"Assign-f"...) this op's
    #: model produces, when it is a single node.
    origin: str = "builtin"


_TABLE: dict[str, OpModel] = {}
_errors: list[str] = []
_loaded = False


def op(name: str, doc: str, **kw: Any) -> Callable[[Callable], Callable]:
    def deco(build: Callable) -> Callable:
        _TABLE[name] = OpModel(name, build, doc, **kw)
        return build
    return deco


def table() -> dict[str, OpModel]:
    """Every op model: the built-ins, then the entry points' (which may replace them)."""
    global _loaded
    if not _loaded:
        _loaded = True
        _load_entry_points()
    return _TABLE


def lookup(name: str) -> OpModel | None:
    return table().get(name)


def load_errors() -> list[str]:
    table()
    return list(_errors)


def register(model: OpModel) -> OpModel:
    """Add or replace an op model from Python."""
    _TABLE[model.op] = model
    return model


def _load_entry_points() -> None:
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, OpModel):
                obj = obj()
            models = [obj] if isinstance(obj, OpModel) else list(obj)
            for m in models:
                if not isinstance(m, OpModel):
                    raise TypeError(f"{m!r} is not a tfsem.graphdef.ops.OpModel")
                _TABLE[m.op] = OpModel(**{**m.__dict__, "origin": f"entry point {ep.value}"})
        except Exception as exc:  # one broken plugin must not break import
            _errors.append(f"entry point {ep.name!r} ({ep.value}) failed to load: {exc}")


#: Pure TensorFlow ops with no bit-exact model: uninterpreted functions.
STATELESS_UNMODELLED = frozenset("""
    Exp Expm1 Log Log1p Pow Rsqrt Reciprocal Inv Tanh Sigmoid Softmax LogSoftmax Softplus
    Softsign Elu Selu Gelu Erf Erfc Sin Cos Tan Asin Acos Atan Atan2 Sinh Cosh Asinh Acosh
    Atanh Lgamma Digamma Round Rint Floor Ceil Sign IsNan IsInf IsFinite  

    Prod All Any ArgMax ArgMin Transpose ConjugateTranspose Slice StridedSlice GatherV2
    Gather ScatterNd OneHot Range Cumsum Cumprod BatchMatMul BatchMatMulV2 BatchMatMulV3
    Conv2D Conv2DBackpropInput Conv2DBackpropFilter DepthwiseConv2dNative MaxPool AvgPool
    MaxPoolGrad AvgPoolGrad FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3
    FusedBatchNormGrad FusedBatchNormGradV3 SoftmaxCrossEntropyWithLogits
    SparseSoftmaxCrossEntropyWithLogits TanhGrad SigmoidGrad SqrtGrad RsqrtGrad Relu6
    Relu6Grad LeakyRelu LeakyReluGrad EluGrad SeluGrad SoftplusGrad
    BroadcastGradientArgs DivNoNan MulNoNan Xdivy Xlogy Div TruncateDiv TruncateMod Mod
    L2Loss Pad PadV2 MirrorPad Reverse ReverseV2 Where Unpack SplitV ClipByValue
    StatelessRandomUniformV2 StatelessRandomNormalV2 StatelessTruncatedNormalV2
    StatelessRandomGetKeyCounter StatelessRandomUniform StatelessRandomNormal
    StatelessTruncatedNormal Size Rank
    Einsum UnsortedSegmentSum UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd
    SegmentSum SegmentMean DepthwiseConv2dNativeBackpropInput DepthwiseConv2dNativeBackpropFilter
    GatherNd MaxPoolV2 MaxPoolGradV2 FusedBatchNormGradV2 ReciprocalGrad SoftsignGrad Xlog1py
    InvertPermutation StatelessRandomUniformInt StatelessRandomUniformIntV2
""".split())

#: Control flow that is not modelled, rejected by name: the reference-typed
#: v1 primitives and ControlTrigger.  (TensorFlow 2's functional ops If,
#: While, Case and their Stateless forms never reach the op table: they are
#: lowered to the v1 primitives Switch, Merge, Enter, Exit, NextIteration and
#: LoopCond when the graph is read, graphdef/functions.py, docs/semantics.md;
#: they stay listed so that one left over is refused by name.)
CONTROL_FLOW = frozenset("""
    RefSwitch RefMerge RefEnter RefExit RefNextIteration If StatelessIf While
    StatelessWhile Case StatelessCase ControlTrigger
""".split())

#: The v1 control-flow primitives tfsem imports (SPEC section 9).
CONTROL_FLOW_PRIMITIVES = ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")

#: Function calls, inlined from the graph's library (graphdef/functions.py).
CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})

#: Output arg names of TensorFlow ops with several output args that tfsem
#: may meet inside a function body (where outputs are named `n:arg:k`).
OUTPUT_ARGS: dict[str, tuple[str, ...]] = {
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2", "reserve_space_3"),
    "FusedBatchNormGradV3": ("x_backprop", "scale_backprop", "offset_backprop",
                             "reserve_space_4", "reserve_space_5"),
    "BroadcastGradientArgs": ("r0", "r1"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "StatelessRandomGetKeyCounter": ("key", "counter"),
    "Unique": ("y", "idx"),
}


def stateless(op_name: str) -> bool:
    """Whether an op is known to have no effect (a model that is not
    stateful, or an unmodelled pure op)."""
    m = lookup(op_name)
    return (m is not None and not m.stateful) or op_name in STATELESS_UNMODELLED


# ---------------------------------------------------------------------------
# The built-in models.  `b` is the importer's builder for one TensorFlow node:
#   b.input(i)        the tfsem input of data input i (a tensor)
#   b.var(i)          the tfsem Var node's edge for resource input i
#   b.static(i)       numpy value of constant input i (read at import)
#   b.attr(name)      the node's attribute (types as tfsem dtypes, lists as lists)
#   b.dtype(name)     attribute `name` as a supported tfsem dtype (else rejected)
#   b.add(op, inputs, attrs, part=None)   add a tfsem node; returns DataIn of port 0
#   b.reject(reason)  refuse the node (its name and op are named)
#   b.n_inputs        number of data inputs


def flushed(name: str, dtype: str) -> str:
    """The function for TensorFlow's `name` on `dtype`: on the float dtypes
    whose arithmetic TensorFlow's CPU runtime flushes (bfloat16, float32,
    float64) the variant that flushes subnormals (`Add.ftz`,
    oracle/functions.py); on float16 and integers `name` itself."""
    from tfsem.oracle import functions as fns
    if dtype in fns.FLUSHED_DTYPES and fns.lookup(name + fns.FTZ_SUFFIX) is not None:
        return name + fns.FTZ_SUFFIX
    return name


def _fn(name: str, dtype_attr: str | None = "T", n: int | None = None):
    """A model that is one tfsem function of all data inputs."""
    def build(b):
        fname = flushed(name, b.dtype(dtype_attr)) if dtype_attr else name
        k = b.n_inputs if n is None else n
        return [b.add(fname, [b.input(i) for i in range(k)])]
    return build


_FLUSHING = {"Add", "Sub", "Mul", "Max", "Min", "RealDiv", "Square", "Sqrt", "SquaredDifference"}
for _tf_op, _fn_name in [("Add", "Add"), ("AddV2", "Add"), ("Sub", "Sub"), ("Mul", "Mul"),
                         ("Neg", "Neg"), ("Maximum", "Max"), ("Minimum", "Min"),
                         ("RealDiv", "RealDiv"), ("Square", "Square"), ("Sqrt", "Sqrt"),
                         ("SquaredDifference", "SquaredDifference"), ("Abs", "Abs"),
                         ("FloorMod", "FloorMod"), ("FloorDiv", "FloorDiv"), ("Relu", "Relu"),
                         ("ReluGrad", "ReluGrad"), ("BiasAddGrad", "BiasAddGrad"),
                         ("ZerosLike", "ZerosLike"), ("OnesLike", "OnesLike")]:
    op(_tf_op, f"the function {_fn_name}" + (f" ({_fn_name}.ftz on floats: subnormals flushed)"
                                              if _fn_name in _FLUSHING else ""))(_fn(_fn_name))
def _identity(b):
    if b.attr("T", "") == "DT_VARIANT":   # a TensorList (oracle/tensor_lists.py) passes through
        return [b.add("Identity", [b.input(0)])]
    return _fn("Identity")(b)


for _tf_op in ("Identity", "StopGradient", "PreventGradient", "Snapshot"):
    op(_tf_op, "the function Identity (a node of its own: control edges on it keep their "
       "meaning); a TensorList passes through")(_identity)


# -- TensorList (oracle/tensor_lists.py): tf.TensorArray in TensorFlow 2 -------

_LIST_ATTRS = {
    "EmptyTensorList": (), "TensorListReserve": (), "TensorListFromTensor": (), "TensorListGetItem": (),
    "TensorListPushBack": (), "TensorListPopBack": (), "TensorListLength": None,
    "TensorListElementShape": None, "TensorListSetItem": ("resize_if_index_out_of_bounds",),
    "TensorListStack": ("num_elements",)}


def _tensor_list_model(name: str, n_in: int, n_out: int) -> None:
    @op(name, f"the TensorList function {name} (a list is a value: oracle/tensor_lists.py)",
        output_args=("output_handle", "tensor") if n_out == 2 else ())
    def build(b):
        attrs: dict[str, Any] = {}
        extra = _LIST_ATTRS[name]
        if extra is not None:
            attrs["element_dtype"] = b.dtype("element_dtype")
            for key in extra:
                default = False if key.startswith("resize") else -1
                v = b.attr(key, default)
                attrs[key] = bool(v) if key.startswith("resize") else int(v)
        if name == "TensorListElementShape":
            attrs["shape_type"] = b.dtype("shape_type")
        ref = b.add(name, [b.input(i) for i in range(n_in)], attrs)
        return [DataIn(ref.node, k) for k in range(n_out)]


for _name, _n_in, _n_out in (("EmptyTensorList", 2, 1), ("TensorListReserve", 2, 1), ("TensorListFromTensor", 2, 1),
                             ("TensorListLength", 1, 1), ("TensorListElementShape", 1, 1),
                             ("TensorListSetItem", 3, 1), ("TensorListGetItem", 3, 1),
                             ("TensorListStack", 2, 1), ("TensorListPushBack", 2, 1),
                             ("TensorListPopBack", 2, 2)):
    _tensor_list_model(_name, _n_in, _n_out)


@op("BiasAdd", "the function BiasAdd (data_format NHWC only)")
def _bias_add(b):
    t = b.dtype("T")
    fmt = b.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "N...C"):
        b.reject(f"data_format {fmt!r} is not modelled (NHWC only)")
    return [b.add(flushed("BiasAdd", t), [b.input(0), b.input(1)])]


@op("MatMul", "the function MatMul (transpose_a, transpose_b)")
def _matmul(b):
    b.dtype("T")
    return [b.add("MatMul", [b.input(0), b.input(1)],
                  {"transpose_a": bool(b.attr("transpose_a", False)),
                   "transpose_b": bool(b.attr("transpose_b", False))})]


@op("Cast", "the function Cast between any two dtypes, as TensorFlow's CPU kernel casts "
    "(Truncate=true refused)")
def _cast(b):
    dst = b.dtype("DstT")
    src = b.dtype("SrcT")
    if b.attr("Truncate", False):
        b.reject("Cast with Truncate=true (float conversions that truncate the significand) is "
                 "not modelled")
    if src == dst:
        return [b.add("Identity", [b.input(0)])]
    return [b.add("Cast", [b.input(0)], {"DstT": dst})]


@op("Const", "the function Const (TensorProto: typed *_val fields, tensor_content, a splat)")
def _const(b):
    value = b.tensor_attr("value")
    return [b.add("Const", [], {"value": value})]


@op("NoOp", "the function NoOp: a join of control edges (tf.group)")
def _noop(b):
    b.add("NoOp", [])
    return []


@op("IdentityN", "one Identity per input, joined by a NoOp named after the node")
def _identity_n(b):
    n = b.n_inputs
    # a resource input (a function returning a handle it was given, a While
    # passing one through) is passed on as the handle: nothing to compute
    handles = {i: h for i in range(n) if (h := b.handle(i)) is not None}
    if n == 1 and not handles:
        return [b.add("Identity", [b.input(0)])]
    outs = [handles[i] if i in handles else
            b.add("Identity", [b.input(i)], part=f"output_{i}") for i in range(n)]
    b.add("NoOp", [])   # the join; the builder puts the parts under it
    return outs


@op("AddN", "a chain of Add in the order of TensorFlow's CPU kernel (groups of 8); "
    "float16 refused")
def _add_n(b):
    t = b.dtype("T")
    n = b.n_inputs
    if t == "float16" and n > 2:
        # measured: TensorFlow's float16 AddN does not round after every
        # addition (an intermediate past 65504 does not overflow)
        b.reject("AddN of more than two float16 tensors is not modelled (TensorFlow's kernel "
                 "keeps intermediate sums wider than float16)")
    add = flushed("Add", t)
    if n == 1:
        return [b.add("Identity", [b.input(0)])]
    # aggregate_ops.cc: the first n % 8 inputs (8 if none, just input 0 if one)
    # are summed left to right, then each further group of 8 is summed left to
    # right and added to the running total: out = out + (((i0 + i1) + ...) + i7).
    first = n % 8 or 8
    k = 0

    def chain(lo: int, hi: int):
        nonlocal k
        acc = b.input(lo)
        for i in range(lo + 1, hi):
            acc = b.add(add, [acc, b.input(i)], part=f"add_{k}")
            k += 1
        return acc

    total = chain(0, first)
    i = first
    while i < n:
        group = chain(i, i + 8)
        total = b.add(add, [total, group], part=f"add_{k}")
        k += 1
        i += 8
    return [b.add("Identity", [total])]


def _reduction(fn_name: str):
    def build(b):
        b.dtype("T")
        if not b.is_static(1):   # axes computed at run time (oracle/array_ops.py)
            return [b.add(fn_name + "Along", [b.input(0), b.input(1)],
                          {"keep_dims": bool(b.attr("keep_dims", False))})]
        axes = [int(x) for x in np.asarray(b.static(1)).reshape(-1)]
        return [b.add(fn_name, [b.input(0)], {"axes": axes,
                                              "keep_dims": bool(b.attr("keep_dims", False))})]
    return build


for _tf_op, _fn_name in [("Sum", "Sum"), ("Mean", "Mean"), ("Max", "ReduceMax"),
                         ("Min", "ReduceMin")]:
    op(_tf_op, f"the function {_fn_name} (axes: a constant input), or {_fn_name}Along (axes "
       "computed at run time)", static=(1,)
       )(_reduction(_fn_name))


def _int_list(value) -> list[int]:
    return [int(x) for x in np.asarray(value).reshape(-1)]


@op("Reshape", "the function Reshape (shape: a constant input), or ReshapeTo (shape "
    "computed at run time)", static=(1,))
def _reshape(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("ReshapeTo", [b.input(0), b.input(1)])]
    return [b.add("Reshape", [b.input(0)], {"shape": _int_list(b.static(1))})]


@op("Tile", "the function Tile (multiples: a constant input), or TileBy (multiples computed "
    "at run time)", static=(1,))
def _tile(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("TileBy", [b.input(0), b.input(1)])]
    return [b.add("Tile", [b.input(0)], {"multiples": _int_list(b.static(1))})]


@op("Fill", "the function Fill (dims: a constant input), or FillDims (dims computed at run "
    "time)", static=(0,))
def _fill(b):
    b.dtype("T")
    if not b.is_static(0):
        return [b.add("FillDims", [b.input(0), b.input(1)])]
    return [b.add("Fill", [b.input(1)], {"dims": _int_list(b.static(0))})]


@op("BroadcastTo", "Reshape(Tile(Mul(x, ones(shape)), [1]*rank), shape) (shape: a constant "
    "input, else BroadcastToShape; Mul without flushing: x*1 is x bit for bit; the error of an input that does not "
    "broadcast to the shape)", static=(1,))
def _broadcast_to(b):
    # x * ones(shape) has x's values (x*1 == x bit for bit in IEEE arithmetic:
    # -0.0, subnormals, infinities; NaN stays NaN; integers exactly) and the
    # shape broadcast(x.shape, shape), which is `shape` exactly when
    # BroadcastTo is defined: x of rank <= len(shape), each dimension 1 or
    # equal.  Otherwise TensorFlow fails and so does the model: Mul fails on
    # incompatible dimensions; Tile with len(shape) multiples fails when the
    # rank is larger; Reshape to `shape` fails when a dimension is larger (the
    # element count is then larger too).  Constant folding emits BroadcastTo
    # (x*1, x+0 with a larger constant) with an int32 shape constant.
    t = b.dtype("T")
    if not b.is_static(1):   # shape computed at run time (oracle/array_ops.py)
        return [b.add("BroadcastToShape", [b.input(0), b.input(1)])]
    shape = _int_list(b.static(1))
    if any(d < 0 for d in shape):
        b.reject(f"the shape {shape} has a negative dimension")
    from tfsem.oracle.values import Tensor
    ones = b.add("Const", [], {"value": Tensor(np.ones(shape, dtype=t), t)}, part="ones")
    y = b.add("Mul", [b.input(0), ones], part="broadcast")
    y = b.add("Tile", [y], {"multiples": [1] * len(shape)}, part="rank")
    return [b.add("Reshape", [y], {"shape": shape})]


@op("ExpandDims", "the function ExpandDims (axis: a constant input), or ExpandDimsAt (axis "
    "computed at run time)", static=(1,))
def _expand_dims(b):
    b.dtype("T")
    if not b.is_static(1):
        return [b.add("ExpandDimsAt", [b.input(0), b.input(1)])]
    return [b.add("ExpandDims", [b.input(0)], {"axis": _int_list(b.static(1))[0]})]


@op("Squeeze", "the function Squeeze")
def _squeeze(b):
    b.dtype("T")
    return [b.add("Squeeze", [b.input(0)],
                  {"squeeze_dims": [int(x) for x in b.attr("squeeze_dims", [])]})]


@op("ConcatV2", "a chain of ConcatAxis (axis: a constant last input)", static=(-1,))
def _concat(b):
    b.dtype("T")
    n = b.n_inputs - 1
    axis = _int_list(b.static(n))[0]
    acc = b.input(0)
    if n == 1:
        return [b.add("Identity", [acc])]
    for i in range(1, n):
        acc = b.add("ConcatAxis", [acc, b.input(i)], {"axis": axis},
                    part=None if i == n - 1 else f"concat_{i}")
    return [acc]


@op("Pack", "ExpandDims of each input, then a chain of ConcatAxis")
def _pack(b):
    b.dtype("T")
    axis = int(b.attr("axis", 0))
    n = b.n_inputs
    parts = [b.add("ExpandDims", [b.input(i)], {"axis": axis}, part=f"expand_{i}")
             for i in range(n)]
    if n == 1:
        return [b.add("Identity", [parts[0]])]
    acc = parts[0]
    for i in range(1, n):
        acc = b.add("ConcatAxis", [acc, parts[i]], {"axis": axis if axis >= 0 else axis},
                    part=None if i == n - 1 else f"concat_{i}")
    return [acc]


@op("Split", "one SplitPart per output (axis: a constant input), joined by a NoOp",
    static=(0,))
def _split(b):
    b.dtype("T")
    axis = _int_list(b.static(0))[0]
    n = int(b.attr("num_split"))
    outs = [b.add("SplitPart", [b.input(1)], {"axis": axis, "num_split": n, "index": i},
                  part=f"output_{i}") for i in range(n)]
    b.add("NoOp", [])
    return outs


@op("Shape", "a Const of the input's shape where it is declared (a feed, a constant, a "
    "variable's read), else the function Shape (out_type int32 or int64)")
def _shape(b):
    out_type = b.dtype("out_type")
    if out_type not in ("int32", "int64"):
        b.reject("out_type must be int32 or int64")
    shape = b.declared_shape(0)
    if shape is None:
        return [b.add("Shape", [b.input(0)], {"out_type": out_type})]
    from tfsem.oracle.values import Tensor
    # TensorFlow's Shape runs after its input: so does the constant
    after = [ControlIn(b.input(0).node)]
    return [b.add("Const", after, {"value": Tensor(np.array(shape, dtype=out_type), out_type)})]


# -- state ------------------------------------------------------------------


@op("VarHandleOp", "a Var node of the variable named by shared_name (the node name if empty)",
    stateful=True)
def _var_handle(b):
    return [b.var_node()]


@op("ReadVariableOp", "Read", resources=(0,), stateful=True, output_args=("value",))
def _read(b):
    b.dtype("dtype")
    return [b.add("Read", [b.var(0)])]


@op("VariableShape", "Read, then the function Shape: TensorFlow's VariableShape looks the "
    "variable up (it fails on an uninitialized one, as the Read's error value does) and gives "
    "its shape, which no assignment changes", resources=(0,), stateful=True)
def _variable_shape(b):
    out_type = b.dtype("out_type")
    if out_type not in ("int32", "int64"):
        b.reject("out_type must be int32 or int64")
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("Shape", [value], {"out_type": out_type})]


@op("AssignVariableOp", "Assign-Snd (Write)", resources=(0,), stateful=True)
def _assign(b):
    b.dtype("dtype")
    b.add("Assign", [b.var(0), b.input(1)], {"fn": "Snd"})
    return []


@op("AssignAddVariableOp", "Assign-Add", resources=(0,), stateful=True)
def _assign_add(b):
    b.add("Assign", [b.var(0), b.input(1)], {"fn": flushed("Add", b.dtype("dtype"))})
    return []


@op("AssignSubVariableOp", "Assign-Sub", resources=(0,), stateful=True)
def _assign_sub(b):
    b.add("Assign", [b.var(0), b.input(1)], {"fn": flushed("Sub", b.dtype("dtype"))})
    return []


def _optimizer_dtype(b) -> str:
    """The optimizer's dtype: float32 only (the models are compared with
    TensorFlow's kernels on float32; on other dtypes they are refused)."""
    t = b.dtype("T")
    if t != "float32":
        b.reject(f"{b.node.op} on {t} is not modelled (its model is tested against "
                 "TensorFlow's kernel on float32 only)")
    return t


@op("ResourceApplyGradientDescent",
    "var -= alpha * delta: Mul, then Assign-Sub (decomposed: read, compute, write)",
    resources=(0,), stateful=True)
def _apply_gd(b):
    t = _optimizer_dtype(b)
    step = b.add(flushed("Mul", t), [b.input(2), b.input(1)], part="step")   # grad * lr
    b.add("Assign", [b.var(0), step], {"fn": flushed("Sub", t)}, part="update")
    b.add("NoOp", [])
    return []


@op("ResourceApplyMomentum",
    "accum = accum * momentum + grad (Assign-ScaleAdd), then var -= lr * accum "
    "(Read, Mul, Assign-Sub); refused when another node races on its variables",
    resources=(0, 1), stateful=True)
def _apply_momentum(b):
    t = _optimizer_dtype(b)
    if b.attr("use_nesterov", False):
        b.reject("use_nesterov=true is not modelled")
    packed = b.add("StackBroadcast", [b.input(3), b.input(4)], part="packed")
    acc = b.add("Assign", [b.var(1), packed], {"fn": "ScaleAdd"}, part="accum")
    new_accum = b.add("Read", [b.var(1), ControlIn(acc.node)], part="read_accum")
    # training_ops.cc: var.device(d) -= accum * lr()
    step = b.add(flushed("Mul", t), [new_accum, b.input(2)], part="step")
    b.add("Assign", [b.var(0), step], {"fn": flushed("Sub", t)}, part="update")
    b.add("NoOp", [])
    b.exclusive()
    return []


@op("ResourceApplyAdam",
    "m += (g - m)(1 - beta1), v += (g*g - v)(1 - beta2) (Assign-StepToward), then "
    "var -= m*alpha / (sqrt(v) + epsilon) with alpha = lr sqrt(1 - beta2^t) / (1 - beta1^t); "
    "refused when another node races on its variables",
    resources=(0, 1, 2), stateful=True)
def _apply_adam(b):
    t = _optimizer_dtype(b)
    F = (lambda name: flushed(name, t))
    if b.attr("use_nesterov", False):
        b.reject("use_nesterov=true is not modelled")
    # inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad
    one = b.add("Const", [], {"value": b.scalar(1.0)}, part="one")
    g = b.input(9)
    c1 = b.add(F("Sub"), [one, b.input(6)], part="one_minus_beta1")
    c2 = b.add(F("Sub"), [one, b.input(7)], part="one_minus_beta2")
    m_up = b.add("Assign", [b.var(1), b.add("StackBroadcast", [g, c1], part="m_operands")],
                 {"fn": "StepToward"}, part="m")
    g2 = b.add(F("Square"), [g], part="grad_squared")
    v_up = b.add("Assign", [b.var(2), b.add("StackBroadcast", [g2, c2], part="v_operands")],
                 {"fn": "StepToward"}, part="v")
    # alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power), each op in T
    s2 = b.add(F("Sqrt"), [b.add(F("Sub"), [one, b.input(4)], part="one_minus_beta2_power")],
               part="sqrt_one_minus_beta2_power")
    alpha = b.add(F("RealDiv"), [b.add(F("Mul"), [b.input(5), s2], part="lr_sqrt"),
                              b.add(F("Sub"), [one, b.input(3)], part="one_minus_beta1_power")],
                  part="alpha")
    m = b.add("Read", [b.var(1), ControlIn(m_up.node)], part="read_m")
    v = b.add("Read", [b.var(2), ControlIn(v_up.node)], part="read_v")
    num = b.add(F("Mul"), [m, alpha], part="m_alpha")
    den = b.add(F("Add"), [b.add(F("Sqrt"), [v], part="sqrt_v"), b.input(8)], part="denominator")
    step = b.add(F("RealDiv"), [num, den], part="step")
    b.add("Assign", [b.var(0), step], {"fn": F("Sub")}, part="update")
    b.add("NoOp", [])
    b.exclusive()
    return []


# -- shapes computed at run time (oracle/array_ops.py) ---------------------


def _index_dtype(b, name: str) -> str:
    t = b.dtype(name)
    if t not in ("int32", "int64"):
        b.reject(f"{name} must be int32 or int64, not {t}")
    return t


@op("ShapeN", "one Shape per input (a Const where the input's shape is declared)")
def _shape_n(b):
    out_type = _index_dtype(b, "out_type")
    from tfsem.oracle.values import Tensor
    outs = []
    for i in range(b.n_inputs):
        shape = b.declared_shape(i)
        if shape is None:
            outs.append(b.add("Shape", [b.input(i)], {"out_type": out_type}, part=f"output_{i}"))
        else:
            outs.append(b.add("Const", [ControlIn(b.input(i).node)],
                              {"value": Tensor(np.array(shape, dtype=out_type), out_type)},
                              part=f"output_{i}"))
    b.add("NoOp", [])
    return outs


@op("Size", "the function Size (out_type int32 or int64)")
def _size(b):
    return [b.add("Size", [b.input(0)], {"out_type": _index_dtype(b, "out_type")})]


@op("Rank", "the function Rank (int32)")
def _rank(b):
    return [b.add("Rank", [b.input(0)])]


@op("Range", "the function Range (integer Tidx; float operands stop a concrete run)")
def _range(b):
    b.dtype("Tidx")
    return [b.add("Range", [b.input(0), b.input(1), b.input(2)])]


@op("StridedSlice", "the function StridedSlice (begin, end, strides: tensors; the five masks)")
def _strided_slice(b):
    b.dtype("T")
    _index_dtype(b, "Index")
    attrs = {k: int(b.attr(k, 0)) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                            "new_axis_mask", "shrink_axis_mask")}
    return [b.add("StridedSlice", [b.input(i) for i in range(4)], attrs)]


@op("StridedSliceGrad", "the function StridedSliceGrad (zeros of the shape operand, dy where "
    "StridedSlice reads)")
def _strided_slice_grad(b):
    b.dtype("T")
    _index_dtype(b, "Index")
    attrs = {k: int(b.attr(k, 0)) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                            "new_axis_mask", "shrink_axis_mask")}
    return [b.add("StridedSliceGrad", [b.input(i) for i in range(5)], attrs)]


@op("Slice", "the function Slice (begin, size: tensors)")
def _slice(b):
    b.dtype("T")
    _index_dtype(b, "Index")
    return [b.add("Slice", [b.input(i) for i in range(3)])]


@op("GatherV2", "the function GatherV2 (batch_dims; an index out of range: shape-mismatch)")
def _gather_v2(b):
    b.dtype("Tparams")
    _index_dtype(b, "Tindices")
    return [b.add("GatherV2", [b.input(i) for i in range(3)],
                  {"batch_dims": int(b.attr("batch_dims", 0))})]


@op("Unpack", "one UnpackPart per output, joined by a NoOp")
def _unpack(b):
    b.dtype("T")
    num, axis = int(b.attr("num")), int(b.attr("axis", 0))
    outs = [b.add("UnpackPart", [b.input(0)], {"axis": axis, "num": num, "index": i},
                  part=f"output_{i}") for i in range(num)]
    b.add("NoOp", [])
    return outs


@op("BroadcastGradientArgs", "the function BroadcastGradientArgs (two results)",
    output_args=("r0", "r1"))
def _bcast_grad_args(b):
    _index_dtype(b, "T")
    r0 = b.add("BroadcastGradientArgs", [b.input(0), b.input(1)])
    return [r0, DataIn(r0.node, 1)]


@op("DynamicStitch", "the function DynamicStitch/N (N pairs of indices and data, N <= 16; "
    "indices that leave a row unset stop a concrete run)")
def _dynamic_stitch(b):
    b.dtype("T")
    n = int(b.attr("N"))
    from tfsem.oracle.array_ops import MAX_STITCH
    if not 1 <= n <= MAX_STITCH or b.n_inputs != 2 * n:
        b.reject(f"DynamicStitch of N={n} pairs is not modelled (1 to {MAX_STITCH})")
    return [b.add(f"DynamicStitch/{n}", [b.input(i) for i in range(2 * n)])]


@op("Transpose", "the function Transpose (perm: a tensor)")
def _transpose(b):
    b.dtype("T")
    _index_dtype(b, "Tperm")
    return [b.add("Transpose", [b.input(0), b.input(1)])]


#: The ops modelled above (Transpose, StridedSlice, Range, Size, ...: shapes
#: computed at run time) are no longer uninterpreted.
STATELESS_UNMODELLED = STATELESS_UNMODELLED - frozenset(_TABLE)


def describe() -> list[tuple[str, str, str]]:
    """(op, what it becomes, origin) for every model, sorted by op name."""
    return [(m.op, m.doc, m.origin) for m in sorted(table().values(), key=lambda m: m.op)]


# -- control flow (SPEC section 9; docs/semantics.md) -------------------------


@op("Switch", "Switch (output 0: pred false, output 1: pred true; the other is dead)",
    output_args=("output_false", "output_true"))
def _switch(b):
    ref = b.add("Switch", [b.flow_input(0), b.input(1)])
    return [DataIn(ref.node, 0), DataIn(ref.node, 1)]


@op("Merge", "Merge (output 0: the first live input, output 1: its index, int32)",
    output_args=("output", "value_index"))
def _merge(b):
    ref = b.add("Merge", [b.flow_input(i) for i in range(b.n_inputs)])
    return [DataIn(ref.node, 0), DataIn(ref.node, 1)]


@op("Enter", "Enter (frame_name, is_constant, parallel_iterations)")
def _enter(b):
    attrs = {"frame_name": b.attr("frame_name"),
             "is_constant": bool(b.attr("is_constant", False)),
             "parallel_iterations": int(b.attr("parallel_iterations", 10))}
    return [b.add("Enter", [b.flow_input(0)], attrs)]


@op("Exit", "Exit (leaves the innermost loop)")
def _exit(b):
    return [b.add("Exit", [b.flow_input(0)])]


@op("NextIteration", "NextIteration (the loop's back edge)")
def _next_iteration(b):
    return [b.add("NextIteration", [b.flow_input(0)])]


@op("LoopCond", "LoopCond (the loop's predicate)")
def _loop_cond(b):
    return [b.add("LoopCond", [b.input(0)])]


def _comparison_model(name: str) -> None:
    @op(name, f"{name} (bool result)")
    def build(b):
        return [b.add(name, [b.input(0), b.input(1)])]


for _name in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual", "LogicalAnd",
              "LogicalOr"):
    _comparison_model(_name)


def _select_model(name: str) -> None:
    @op(name, f"{name} (oracle/predicates.py: elements of x or y, bit for bit)")
    def build(b):
        return [b.add(name, [b.input(0), b.input(1), b.input(2)])]


for _name in ("Select", "SelectV2"):
    _select_model(_name)


@op("LogicalNot", "LogicalNot")
def _logical_not(b):
    return [b.add("LogicalNot", [b.input(0)])]
