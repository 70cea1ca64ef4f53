"""The name tables graph import, the kernel path and the MLIR reader read are
derived from the op registry (oracle/opdefs), and are the same tables as
before they moved there: frozen copies, taken from the code before the move
(graphdef/ops.py STATELESS_UNMODELLED and OUTPUT_ARGS, oracle/kernels.py
DETERMINISTIC, graphdef/importer.py DEFAULT_TYPE_ATTRS, graphdef/mlir.py's
control-flow names), so that no op is lost or gained: the same ops imported
as uninterpreted functions, refused, run on TensorFlow's kernels."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfsem.graphdef import mlir
from tfsem.graphdef import ops as opt
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import kernels

from opdefs_support import modules_outside_the_registry, syntax_nodes

#: graphdef/ops.py STATELESS_UNMODELLED before the move (121 ops).
UNINTERPRETED = frozenset("""
    Acos Acosh All Any ArgMax ArgMin Asin Asinh Atan Atan2 Atanh AvgPool AvgPoolGrad
    BatchMatMul BatchMatMulV2 BatchMatMulV3 Ceil ClipByValue ConjugateTranspose Conv2D
    Conv2DBackpropFilter Conv2DBackpropInput Cos Cosh Cumprod Cumsum DepthwiseConv2dNative
    DepthwiseConv2dNativeBackpropFilter DepthwiseConv2dNativeBackpropInput Digamma Div
    DivNoNan Einsum Elu EluGrad Erf Erfc Exp Expm1 Floor FusedBatchNorm FusedBatchNormGrad
    FusedBatchNormGradV2 FusedBatchNormGradV3 FusedBatchNormV2 FusedBatchNormV3 Gather Gelu
    Inv InvertPermutation IsFinite IsInf IsNan L2Loss LeakyRelu LeakyReluGrad Lgamma Log
    Log1p LogSoftmax MaxPool MaxPoolGrad MaxPoolGradV2 MaxPoolV2 MirrorPad Mod MulNoNan
    OneHot Pad PadV2 Pow Prod Reciprocal ReciprocalGrad Relu6 Relu6Grad Reverse ReverseV2
    Rint Round Rsqrt RsqrtGrad ScatterNd SegmentMean SegmentSum Selu SeluGrad Sigmoid
    SigmoidGrad Sign Sin Sinh Softmax SoftmaxCrossEntropyWithLogits Softplus SoftplusGrad
    Softsign SoftsignGrad SparseSoftmaxCrossEntropyWithLogits SplitV SqrtGrad
    StatelessRandomGetKeyCounter StatelessRandomNormal StatelessRandomNormalV2
    StatelessRandomUniform StatelessRandomUniformV2 StatelessTruncatedNormal
    StatelessTruncatedNormalV2 Tan Tanh TanhGrad TruncateDiv TruncateMod UnsortedSegmentMax
    UnsortedSegmentMin UnsortedSegmentProd UnsortedSegmentSum Where Xdivy Xlog1py Xlogy
""".split())

#: oracle/kernels.py DETERMINISTIC before the move (178 ops).
KERNELS = frozenset("""
    Abs Acos Acosh Add AddN AddV2 All Any ArgMax ArgMin Asin Asinh Atan Atan2 Atanh AvgPool
    AvgPoolGrad BatchMatMul BatchMatMulV2 BatchMatMulV3 BiasAdd BiasAddGrad Bitcast
    BroadcastArgs BroadcastGradientArgs BroadcastTo Cast Ceil ClipByValue ConcatV2
    ConjugateTranspose Conv2D Conv2DBackpropFilter Conv2DBackpropInput Cos Cosh Cumprod
    Cumsum DepthwiseConv2dNative DepthwiseConv2dNativeBackpropFilter
    DepthwiseConv2dNativeBackpropInput Digamma Div DivNoNan Einsum Elu EluGrad Erf Erfc Exp
    ExpandDims Expm1 Fill Floor FloorDiv FloorMod FusedBatchNorm FusedBatchNormGrad
    FusedBatchNormGradV2 FusedBatchNormGradV3 FusedBatchNormV2 FusedBatchNormV3 Gather
    GatherNd GatherV2 Identity Inv InvertPermutation IsFinite IsInf IsNan L2Loss LeakyRelu
    LeakyReluGrad Lgamma Log Log1p LogSoftmax LogicalAnd LogicalNot LogicalOr MatMul Max
    MaxPool MaxPoolGrad MaxPoolGradV2 MaxPoolV2 Maximum Mean Min Minimum MirrorPad Mod Mul
    MulNoNan Neg OneHot OnesLike Pack Pad PadV2 Pow Prod Range Rank RealDiv Reciprocal
    ReciprocalGrad Relu6 Relu6Grad ReluGrad Reshape Reverse ReverseV2 Rint Round Rsqrt
    RsqrtGrad ScatterNd SegmentMean SegmentSum Select SelectV2 Selu SeluGrad Shape ShapeN
    Sigmoid SigmoidGrad Sign Sin Sinh Size Slice Softmax SoftmaxCrossEntropyWithLogits
    Softplus SoftplusGrad Softsign SoftsignGrad SparseSoftmaxCrossEntropyWithLogits Split
    SplitV Sqrt SqrtGrad Square SquaredDifference Squeeze StatelessRandomGetKeyCounter
    StatelessRandomNormal StatelessRandomNormalV2 StatelessRandomUniform
    StatelessRandomUniformInt StatelessRandomUniformIntV2 StatelessRandomUniformV2
    StatelessTruncatedNormal StatelessTruncatedNormalV2 StridedSlice StridedSliceGrad Sub
    Sum Tan Tanh TanhGrad Tile Transpose TruncateDiv TruncateMod Unpack UnsortedSegmentMax
    UnsortedSegmentMin UnsortedSegmentProd UnsortedSegmentSum Where Xdivy Xlog1py Xlogy
    ZerosLike
""".split())

#: graphdef/ops.py OUTPUT_ARGS before the move.
OUTPUT_ARGS = {
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2", "reserve_space_3"),
    "FusedBatchNormGradV3": ("x_backprop", "scale_backprop", "offset_backprop",
                             "reserve_space_4", "reserve_space_5"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "StatelessRandomGetKeyCounter": ("key", "counter"),
    "Unique": ("y", "idx"),
}

#: graphdef/importer.py DEFAULT_TYPE_ATTRS before the move.
TYPE_DEFAULTS = {("Shape", "out_type"): "DT_INT32", ("ShapeN", "out_type"): "DT_INT32",
                 ("Size", "out_type"): "DT_INT32", ("VariableShape", "out_type"): "DT_INT32"}

#: graphdef/mlir.py _CONTROL_FLOW before the move, and the calls it inlines.
MLIR_CONTROL_FLOW = frozenset({"tf.If", "tf.While", "tf.IfRegion", "tf.WhileRegion", "tf.Case",
                               "tf.CaseRegion", "tf.Yield", "tf.StatelessIf",
                               "tf.StatelessWhile"})
MLIR_CALLS = frozenset({"tf.StatefulPartitionedCall", "tf.PartitionedCall"})


#: ops recorded in the registry since the move (one `known(...)` each):
#: the remapper's fused ops (oracle/opdefs/nn.py), CheckNumerics and the
#: arithmetic optimizer's _UnaryOpsComposition (math.py)
ADDED = frozenset({"_FusedMatMul", "_FusedConv2D", "_FusedBatchNormEx", "CheckNumerics",
                   "_UnaryOpsComposition"})


#: ops of UNINTERPRETED given a bit-exact numpy model since (an OpDef in
#: their family: no longer uninterpreted; their kernels stay in KERNELS)
MODELLED = frozenset({"DivNoNan", "IsNan", "IsInf", "IsFinite", "Prod", "All",
                       "Any", "ReverseV2", "Pad", "PadV2",
                       "Floor", "Ceil", "Round", "Rint", "Where",
                       "MirrorPad", "OneHot", "ArgMax", "ArgMin"})


def test_the_uninterpreted_ops_are_the_same():
    assert frozenset(opt.STATELESS_UNMODELLED) == (UNINTERPRETED - MODELLED) | ADDED
    for op in MODELLED:
        assert opt.lookup(op) is not None, op
    for op in UNINTERPRETED - MODELLED:
        assert opt.lookup(op) is None and opt.stateless(op), op


def test_the_ops_run_on_kernels_are_the_same():
    assert frozenset(kernels.DETERMINISTIC) == KERNELS | ADDED
    for op in KERNELS:
        assert op in kernels.DETERMINISTIC, op
    for op in ("RandomUniform", "DynamicStitch", "Empty", "Gelu", "Unique", "NoSuchOp"):
        assert op not in kernels.DETERMINISTIC, op


def test_the_output_args_are_the_same():
    assert dict(opt.OUTPUT_ARGS) == {**OUTPUT_ARGS,
                                     "_FusedBatchNormEx": OUTPUT_ARGS["FusedBatchNormV3"]}


def test_the_type_defaults_are_the_same():
    from tfsem.oracle import opdefs
    found = {(op, attr): dt for op, d in opdefs.table().items()
             for attr, dt in getattr(d, "type_defaults", {}).items()}
    assert found == TYPE_DEFAULTS


@pytest.mark.parametrize("op", ["Shape", "Size"])
def test_a_stripped_out_type_takes_the_entrys_default(op):
    """A SavedModel strips a type attribute at its default: the op's entry
    gives it (int32), as TensorFlow's op registry does."""
    g = {"node": [{"name": "x", "op": "Placeholder",
                   "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [
                       {"size": 2}]}}}},
                  {"name": "y", "op": op, "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}}}]}
    p = import_graph(g, ["y"]).program
    node = next(n for n in p.nodes if n.name == p.outputs["y"].node)
    value = node.attrs.get("value")
    assert (value.dtype if value is not None else node.attrs["out_type"]) == "int32"


def test_the_mlir_readers_control_flow_names_are_the_same():
    """The same, and tf.StatelessCase, which the control family lowers like
    the other functional ops: before, the reader passed it on to graph import,
    which refused it with the same rule (control-flow) at its node; now the
    reader refuses it at its line and column, as tf.Case."""
    assert frozenset(mlir.control_flow_ops()) == MLIR_CONTROL_FLOW | {"tf.StatelessCase"}
    assert frozenset(mlir.call_ops()) == MLIR_CALLS


@pytest.mark.parametrize("op", ["tf.Case", "tf.StatelessCase"])
def test_an_mlir_case_is_refused_as_control_flow(op):
    text = f"""func.func @main(%arg0: tensor<i32>, %arg1: tensor<f32>) -> tensor<f32> {{
  %0 = "{op}"(%arg0, %arg1) {{branches = [@b0, @b1], is_stateless = true}} : (tensor<i32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}}
func.func @b0(%x: tensor<f32>) -> tensor<f32> {{ return %x : tensor<f32> }}
func.func @b1(%x: tensor<f32>) -> tensor<f32> {{ return %x : tensor<f32> }}
"""
    with pytest.raises(mlir.MlirError) as exc:
        mlir.program_of_mlir(text)
    v = exc.value.violations[0]
    assert v.rule == "control-flow" and v.where == "<mlir>:2:8", v


@pytest.mark.parametrize("op,ok", [("Exp", True), ("Softmax", True), ("Bitcast", False),
                                   ("Unique", False)])
def test_an_op_is_imported_uninterpreted_or_refused_as_before(op, ok):
    g = {"node": [{"name": "x", "op": "Placeholder",
                   "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [
                       {"size": 2}]}}}},
                  {"name": "y", "op": op, "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}}}]}
    if ok:
        p = import_graph(g, ["y"]).program
        assert any(n.op == f"tf.{op}/1/1" for n in p.nodes)
        return
    with pytest.raises(GraphImportError) as exc:
        import_graph(g, ["y"])
    v = exc.value.violations[0]
    assert v.rule == "unmodelled-op"
    assert v.message == (f"op {op} has no model in tfsem and is not known to be free of "
                         "effects: it is refused (add a model through the entry-point group "
                         "tfsem.ops)")


# -- no other module holds a table of these kinds -------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _guarded_names() -> set[str]:
    """The names whose facts only the registry may hold: the ops it knows
    without an import model (uninterpreted by name, kernels run, output
    args) and the tf dialect's control-flow and call names.  (The ops with
    an OpDef are named by generators and tests of their own graphs: their
    kernel facet is guarded in oracle/kernels.py below.)"""
    from tfsem.oracle import opdefs
    return set(opdefs.known_ops()) | set(mlir.control_flow_ops()) | set(mlir.call_ops())


def _name_tables(path: Path, names: set[str]) -> list[tuple[int, list[str]]]:
    """Collections (tuple, list, set, dict keys) of two or more of `names`,
    and strings of names alone (`"A B".split()`, `known("A B", ...)`) that
    hold two or more."""
    out = []
    for node in syntax_nodes(path):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.Dict):
            keys = [k.elts[0] if isinstance(k, ast.Tuple) and k.elts else k for k in node.keys]
            elts = [k.value for k in keys if isinstance(k, ast.Constant)]   # ((op, attr): ...)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and all(w.isidentifier() for w in node.value.split())):
            elts = node.value.split()    # a table written as words ("A B".split(), known("A B"))
        else:
            continue
        hit = sorted({e for e in elts if isinstance(e, str) and e in names})
        if len(hit) >= 2:
            out.append((node.lineno, hit))
    return out


def test_no_other_module_holds_a_table_of_these_ops():
    names = _guarded_names()
    found = {}
    for rel, path in modules_outside_the_registry():
        hits = _name_tables(path, names)
        if hits:
            found[rel] = hits
    assert not found, ("op-name tables outside the registry (record the facts in the op's "
                       f"entry, oracle/opdefs, and read them from there): {found}")
    # the kernel path holds no table of the ops it runs, of any family
    assert not _name_tables(ROOT / "oracle/kernels.py", set(kernels.DETERMINISTIC))
    assert not _name_tables(ROOT / "graphdef/ops.py", set(kernels.DETERMINISTIC) | names)
    assert not _name_tables(ROOT / "graphdef/importer.py", {"Shape", "ShapeN", "Size",
                                                            "VariableShape"})
    # the scan finds what it should: the family modules hold them, and the
    # frozen copies above are tables it sees
    for family in ("math", "nn", "array", "random"):
        assert _name_tables(ROOT / f"oracle/opdefs/{family}.py", names), family
    assert _name_tables(Path(__file__), names)


# -- a new pure op is one entry ------------------------------------------------------


@pytest.fixture
def recorded():
    """known(...) for the test, then the entry is forgotten again."""
    from tfsem.oracle.opdefs import registry
    names: list[str] = []

    def record(op: str, **kw) -> None:
        registry.known(op, "math", **kw)
        names.append(op)
    yield record
    for op in names:
        del registry._KNOWN[op]
    registry._generation += 1   # (the derived tables are computed again)


def test_a_new_uninterpreted_op_recorded_in_one_place_is_imported_run_and_named(recorded):
    from tfsem.graphdef import functions as gfn
    from tfsem.oracle import opdefs
    op = "TfsemTestCube"
    g = {"node": [{"name": "x", "op": "Placeholder",
                   "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {}}}},
                  {"name": "y", "op": op, "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}}}]}
    with pytest.raises(GraphImportError, match=f"op {op} has no model"):
        import_graph(g, ["y"])
    assert op not in kernels.DETERMINISTIC and not opt.stateless(op)
    recorded(op, uninterpreted=True, kernel="element-wise (a test)", output_args=("y", "z"))
    # graph import: an uninterpreted function, free of effects
    p = import_graph(g, ["y"]).program
    assert any(n.op == f"tf.{op}/1/1" for n in p.nodes)
    assert op in opt.STATELESS_UNMODELLED and opt.stateless(op)
    # the kernel path may run it, for the entry's reason
    assert op in kernels.DETERMINISTIC
    assert opdefs.kernel_reason(op) == "element-wise (a test)"
    # a function body's `node:z:0` is its output 1
    assert opt.OUTPUT_ARGS[op] == ("y", "z")
    assert gfn._port(op, "n", "z", 0, {}) == 1


def test_the_registry_refuses_a_second_entry_and_a_kernel_of_an_op_it_lacks():
    from tfsem.oracle import opdefs
    with pytest.raises(ValueError, match="already defined or known"):
        opdefs.known("Exp", "math", uninterpreted=True)
    with pytest.raises(ValueError, match="already defined or known"):
        opdefs.known("MatMul", "math", uninterpreted=True)
    with pytest.raises(ValueError, match="is not defined"):
        opdefs.kernels_are_functions("Exp", "element-wise")
    # every family's kernel entries say why
    for op in kernels.DETERMINISTIC:
        assert opdefs.kernel_reason(op), op
