"""Node attributes as tfsem reads them against what TensorFlow's runtime does.

Differential: for ops whose models read attributes (a float, a bool, an int,
a list(int), a type), a node is built with TensorFlow's AttrValue class --
each attribute drawn, or left out so that the OpDef's default applies --
on Const inputs, serialized in binary and in text, imported by tfsem and
run by its reference semantics; TensorFlow runs the same bytes or text in a
Session.  Wherever tfsem gives a value TensorFlow must give the same dtype,
shape and bits (an error value of tfsem's: TensorFlow fails); wherever tfsem
refuses the graph by name, the refusal is recorded, and TensorFlow failing
or the op's case being one tfsem does not model are the only excuses.

Also: tensors tfsem exports (graphdef/exporter.py's TensorProto: its
tensor_content, written by tfsem's own binary and text writers) run in
TensorFlow to the same bits.

Needs TensorFlow (skipped without it, as the other *_tensorflow tests).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.graphdef.exporter import tensor_proto
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import ProtoError, encode, format_text, parse, parse_text
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.program import ProgramError
from tfsem.oracle.values import DTYPES, Error, Tensor

tf = pytest.importorskip("tensorflow", reason="compares tfsem's reading of attributes with "
                         "TensorFlow's runtime: needs the extra tfsem[tensorflow]")
from google.protobuf import text_format  # noqa: E402  (TensorFlow's protobuf)
from tensorflow.core.framework import attr_value_pb2, graph_pb2, types_pb2  # noqa: E402
from test_graphdef_tensor_decoding_tensorflow import session_run  # noqa: E402

EXAMPLES = max(30, settings.default.max_examples // 2)
AV = attr_value_pb2.AttrValue
ListValue = attr_value_pb2.AttrValue.ListValue

F32 = np.float32
MATRIX = np.array([[1.5, -2, 0.25], [-0.0, 7, -3]], dtype=F32)


def float_bits(bits: int) -> float:
    return float(np.uint32(bits).view(np.float32))


def maybe(strategy):
    """An attribute drawn from `strategy`, or None: left out of the node."""
    return st.one_of(st.none(), strategy)


def tf_type(name: str) -> int:
    return tf.as_dtype(name).as_datatype_enum


# op -> (strategy of (inputs, attrs)), attrs {name: AttrValue or None}
@st.composite
def leaky_relu(draw):
    dtype = draw(st.sampled_from(["float32", "float64", "float16"]))
    x = np.array([-2.0, 3.0, -0.0, -1e-3, 0.5], dtype=dtype)
    alpha = draw(maybe(st.one_of(
        st.integers(0, 2**32 - 1).map(float_bits),
        st.sampled_from([0.0, -0.0, 0.2, 1.0, -1.5, 1e-40, float("inf"), float("nan")]))))
    return [x], {"T": AV(type=tf_type(dtype)), "alpha": None if alpha is None else AV(f=alpha)}


@st.composite
def squeeze(draw):
    x = np.zeros((1, 2, 1, 3), dtype=F32)
    # (distinct dims: a repeated one, also as -2 and 2, is
    # test_squeeze_with_a_repeated_dim_runs_as_in_tensorflow's)
    dims = draw(maybe(st.lists(st.integers(-5, 4), max_size=3, unique_by=lambda d: d % 4)))
    return [x], {"T": AV(type=tf_type("float32")),
                 "squeeze_dims": None if dims is None else AV(list=ListValue(i=dims))}


@st.composite
def matmul(draw):
    # (int32: a float product's summation order is not modelled, it would not run)
    m = np.array([[1, -2, 3], [0, 7, -3]], dtype=np.int32)
    ta, tb = draw(maybe(st.booleans())), draw(maybe(st.booleans()))
    a = m if not ta else m.T.copy()
    b = draw(st.sampled_from([m, m.T.copy()]))
    return [a, b], {"T": AV(type=tf_type("int32")),
                    "transpose_a": None if ta is None else AV(b=ta),
                    "transpose_b": None if tb is None else AV(b=tb)}


@st.composite
def reduction(draw):
    op = draw(st.sampled_from(["Sum", "Max", "Mean", "Min"]))
    axes = np.array(draw(st.sampled_from([[0], [1], [-1], [0, 1], []])), dtype=np.int32)
    keep = draw(maybe(st.booleans()))
    tidx = draw(maybe(st.just("int32")))
    # (int32: a float sum's order is not modelled, it would not run)
    return op, [MATRIX.astype(np.int32), axes], {"T": AV(type=tf_type("int32")),
                                "Tidx": None if tidx is None else AV(type=tf_type(tidx)),
                                "keep_dims": None if keep is None else AV(b=keep)}


@st.composite
def pack(draw):
    axis = draw(maybe(st.integers(-3, 2)))
    return [MATRIX, MATRIX * 2], {"T": AV(type=tf_type("float32")), "N": AV(i=2),
                                  "axis": None if axis is None else AV(i=axis)}


@st.composite
def shape(draw):
    out = draw(maybe(st.sampled_from(["int32", "int64"])))
    return [MATRIX], {"T": AV(type=tf_type("float32")),
                      "out_type": None if out is None else AV(type=tf_type(out))}


@st.composite
def cast(draw):
    dst = draw(st.sampled_from(sorted(DTYPES)))
    truncate = draw(maybe(st.just(False)))
    x = np.array([0.0, -0.0, 1.0, 2.5, 100.75, -1.0], dtype=F32) if draw(st.booleans()) else \
        np.array([0.0, 1.0, 0.5, 3.0], dtype=F32)
    if dst.startswith("uint") or dst == "bool":
        x = np.abs(x)
    return [x], {"SrcT": AV(type=tf_type("float32")), "DstT": AV(type=tf_type(dst)),
                 "Truncate": None if truncate is None else AV(b=truncate)}


@st.composite
def cumsum(draw):
    ex, rev = draw(maybe(st.booleans())), draw(maybe(st.booleans()))
    return [MATRIX, np.array(draw(st.sampled_from([0, 1, -1])), dtype=np.int32)], {
        "T": AV(type=tf_type("float32")), "Tidx": AV(type=tf_type("int32")),
        "exclusive": None if ex is None else AV(b=ex), "reverse": None if rev is None else AV(b=rev)}


@st.composite
def strided_slice(draw):
    masks = {k: draw(maybe(st.integers(0, 7))) for k in
             ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    attrs = {k: None if v is None else AV(i=v) for k, v in masks.items()}
    attrs.update({"T": AV(type=tf_type("float32")), "Index": AV(type=tf_type("int32"))})
    return [MATRIX, np.array([0, 1], np.int32), np.array([2, 3], np.int32),
            np.array([1, draw(st.sampled_from([1, 2, -1]))], np.int32)], attrs


CASES = {
    "LeakyRelu": leaky_relu(), "Squeeze": squeeze(), "MatMul": matmul(), "Pack": pack(),
    "Shape": shape(), "Cast": cast(), "Cumsum": cumsum(), "StridedSlice": strided_slice(),
}


def graph_of(op: str, inputs, attrs) -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef()
    names = []
    for i, arr in enumerate(inputs):
        t = tf.make_tensor_proto(arr)
        n = g.node.add(name=f"in{i}", op="Const")
        n.attr["dtype"].type = t.dtype
        n.attr["value"].tensor.CopyFrom(t)
        names.append(f"in{i}")
    n = g.node.add(name="y", op=op, input=names)
    for k, v in attrs.items():
        if v is not None:
            n.attr[k].CopyFrom(v)
    return g


def tensorflow_run(g: graph_pb2.GraphDef):
    return session_run(g, "y:0")


class KernelAttrs(dict):
    """The attributes tfsem keeps for TensorFlow's kernel (`tf_attrs`) of an
    op it runs only through that kernel (off in the suite: compared as
    attributes, bit for bit, instead of run)."""


def tfsem_run(graph):
    try:
        program = import_graph(graph, ["y"]).program
    except (GraphImportError, ProgramError) as exc:
        return exc
    try:
        (o,) = outcome_set(program, {}, {}, "atomic", "outputs").as_dict(1)
    except CannotRun:
        return KernelAttrs(program.node["y"].attrs["tf_attrs"])
    return dict(o.outputs)["y"]


def compare_kernel_attrs(ours: KernelAttrs, attrs: dict, what: str) -> None:
    """Each attribute set on the node is in tf_attrs as the value the
    GraphDef holds (a float: its float32 bits, from the AttrValue's bytes);
    one left out is left out (the kernel's OpDef default applies)."""
    for k, v in attrs.items():
        if v is None:
            assert k not in ours, f"{what}: {k} was not in the node, tf_attrs has {ours[k]!r}"
            continue
        which = v.WhichOneof("value")
        if which == "f":
            data = v.SerializeToString()   # (field 4, fixed32: a tag byte, then the bits)
            assert data[0] == 0x25 and len(data) == 5
            got = np.array([ours[k]], dtype=np.float64).astype(np.float32).view(np.uint32)[0]
            assert int(got) == struct.unpack("<I", data[1:5])[0], (
                f"{what}: {k} bits {int(got):#010x} in tf_attrs, {data[1:5].hex()} in the GraphDef")
        elif which == "type":
            assert ours[k] == types_pb2.DataType.Name(v.type), what
        else:
            assert ours[k] == getattr(v, which), what


#: tfsem's refusals by name of cases TensorFlow runs (a case not modelled)
MODELLED_REFUSALS = ("not modelled", "unmodelled")


def compare(ours, theirs, what: str, attrs: dict | None = None) -> None:
    if isinstance(ours, KernelAttrs):
        compare_kernel_attrs(ours, attrs or {}, what)
        return
    if isinstance(ours, Exception):
        if not isinstance(theirs, Exception):
            assert any(s in str(ours) for s in MODELLED_REFUSALS), (
                f"{what}: tfsem refused what TensorFlow runs ({theirs!r}): {ours}")
        return
    if isinstance(ours, Error) or (isinstance(ours, Tensor) and ours.is_error
                                   if hasattr(Tensor, "is_error") else False):
        assert isinstance(theirs, Exception), f"{what}: tfsem {ours}, TensorFlow {theirs!r}"
        return
    assert not isinstance(theirs, Exception), f"{what}: tfsem {ours} where TensorFlow failed: {theirs}"
    theirs = np.asarray(theirs)
    assert tf.as_dtype(theirs.dtype).name == tf.as_dtype(ours.dtype).name, what
    assert ours.array.shape == theirs.shape, f"{what}: tfsem {ours}, TensorFlow {theirs!r}"
    assert ours.array.tobytes() == theirs.tobytes(), f"{what}: tfsem {ours}, TensorFlow {theirs!r}"


@st.composite
def op_cases(draw):
    op = draw(st.sampled_from(sorted(CASES) + ["reduction"]))
    if op == "reduction":
        op, inputs, attrs = draw(reduction())
    else:
        inputs, attrs = draw(CASES[op])
    return op, inputs, attrs


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(op_cases(), st.booleans())
def test_attributes_read_as_tensorflow_runs_them(case, text):
    op, inputs, attrs = case
    g = graph_of(op, inputs, attrs)
    if text:
        source = text_format.MessageToString(g)
        ours = tfsem_run(parse_text("GraphDef", source))
        read = text_format.Parse(source, graph_pb2.GraphDef())
    else:
        data = g.SerializeToString()
        ours = tfsem_run(parse("GraphDef", data))
        read = graph_pb2.GraphDef.FromString(data)
    theirs = tensorflow_run(read)
    # (the attributes as TensorFlow read them: a NaN's payload has no text form)
    read_attrs = {k: None if v is None else read.node[-1].attr[k] for k, v in attrs.items()}
    shown = {k: text_format.MessageToString(v, as_one_line=True) for k, v in attrs.items()
             if v is not None}
    compare(ours, theirs, f"{op} {shown} ({'text' if text else 'binary'})", read_attrs)


# -- export ------------------------------------------------------------------

def _random_tensor(draw, dtype: str) -> Tensor:
    dims = draw(st.lists(st.integers(0, 3), max_size=3))
    n = int(np.prod(dims))
    d = np.dtype(DTYPES[dtype])
    raw = draw(st.binary(min_size=n * d.itemsize, max_size=n * d.itemsize))
    arr = np.frombuffer(raw, dtype=np.uint8).copy()
    if dtype == "bool":
        arr = arr & 1
    return Tensor(arr.view(d).reshape(dims), dtype)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(sorted(DTYPES)), st.booleans())
def test_exported_tensor_runs_in_tensorflow_to_the_same_bits(data, dtype, text):
    value = _random_tensor(data.draw, dtype)
    t = tensor_proto(value)
    graph = {"node": [{"name": "y", "op": "Const",
                       "attr": {"dtype": {"type": t["dtype"]}, "value": {"tensor": t}}}]}
    if text:
        g = text_format.Parse(format_text("GraphDef", graph), graph_pb2.GraphDef())
    else:
        g = graph_pb2.GraphDef.FromString(encode("GraphDef", graph))
    theirs = tensorflow_run(g)
    assert not isinstance(theirs, Exception), theirs
    theirs = np.asarray(theirs)
    assert tf.as_dtype(theirs.dtype).name == tf.as_dtype(dtype).name
    assert theirs.shape == value.array.shape
    assert theirs.tobytes() == value.array.tobytes()


def test_float_attribute_from_text_is_the_float32_protobuf_stores():
    """AttrValue.f from text is the float32 protobuf stores (a text 0.1 is
    not the double 0.1), the same bits binary gives."""
    for spelling in ("0.1", "1e-40", "3.4028236e38", "-nan", "1e39", "16777217"):
        text = ('node { name: "y" op: "LeakyRelu" input: "x" attr { key: "T" value { type: '
                f'DT_FLOAT }} }} attr {{ key: "alpha" value {{ f: {spelling} }} }} }}')
        g = text_format.Parse(text, graph_pb2.GraphDef())
        alpha = g.node[0].attr["alpha"]
        from_text = parse_text("GraphDef", text)["node"][0]["attr"]
        from_binary = parse("GraphDef", g.SerializeToString()).node[0]
        for ours in (from_text["alpha"]["f"], from_binary.attr["alpha"].f):
            compare_kernel_attrs(KernelAttrs(alpha=ours), {"alpha": alpha}, f"alpha {spelling}")


# (the Squeeze model gave a shape-mismatch error where TensorFlow squeezes a
# repeated dim once, found by the attribute differential above; fixed by the
# op models' review against TensorFlow's kernels, which found it too)
@pytest.mark.parametrize("dims", [[0, 0], [0, -4], [2, 2, 0], [-2, 0, 2]])
def test_squeeze_with_a_repeated_dim_runs_as_in_tensorflow(dims):
    g = graph_of("Squeeze", [np.zeros((1, 2, 1, 3), dtype=F32)],
                 {"T": AV(type=tf_type("float32")), "squeeze_dims": AV(list=ListValue(i=dims))})
    compare(tfsem_run(parse("GraphDef", g.SerializeToString())), tensorflow_run(g),
            f"Squeeze {dims}")


# -- AttrValue in text ---------------------------------------------------------

ATTR_SPELLINGS = (
    [f"i: {x}" for x in ["0", "-1", "0x7fffffffffffffff", "-9223372036854775808",
                         "9223372036854775808", "-0x8000000000000000", "010", "08", "1.0",
                         "true", "1e3", "- 1", "18446744073709551615"]]
    + [f"f: {x}" for x in ["0.1", "-0", "1e39", "-nan", "nan", "inf", "-inf", "010", "1", "0x1",
                           "1e-46", "1.5f", "true"]]
    + [f"b: {x}" for x in ["true", "false", "1", "0", "t", "f", "True", "FALSE", "2", "-1", "yes",
                           "0x1"]]
    + [f"type: {x}" for x in ["DT_FLOAT", "1", "0x1", "-1", "999", "01", "00", '"DT_FLOAT"',
                              "DT_FOO", "DT_FLOAT_REF", "0", "2147483648", "-2147483648"]]
    + [f"shape {{ {x} }}" for x in ["dim { size: -1 }", "dim { size: 0x10 }",
                                    "unknown_rank: true", "unknown_rank: 1",
                                    "dim { size: 1 name: 'a' }", "dim { size: -2 }",
                                    "dim [{ size: 1 }, { size: 2 }]", "dim: { size: 3 }"]]
    + ["list { i: [1, 2] }", "list { i: 1 i: 2 }", "list { f: [1, nan] }",
       "list { type: [DT_FLOAT, 3] }", "list { b: [true, 0] }", "list { i: [] }", "list { }",
       "list { shape { unknown_rank: true } shape { dim { size: 2 } } }", "list { i: 1 f: 2 }",
       "list { s: ['a', \"b\"] }"])


def test_text_attr_values_read_as_protobuf_reads_them():
    """Each spelling: both refuse, or tfsem's reading, written by tfsem's
    binary writer, is the message TensorFlow's text_format.Parse gives."""
    for spelling in ATTR_SPELLINGS:
        try:
            theirs = text_format.Parse(spelling, AV())
        except (text_format.ParseError, ValueError):   # (an enum out of int32: ValueError)
            theirs = None
        try:
            ours = AV.FromString(encode("AttrValue", parse_text("AttrValue", spelling)))
        except ProtoError:
            ours = None
        assert (ours is None) == (theirs is None), (spelling, ours, theirs)
        if ours is not None:
            assert ours.SerializeToString(deterministic=True) == \
                theirs.SerializeToString(deterministic=True), (spelling, ours, theirs)


# -- a SavedModel: its attributes equal to their defaults are stripped -----------

class _Defaults(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32)])
    def f(self, x):
        xi = tf.cast(x, tf.int32)
        return {"squeeze": tf.squeeze(tf.reshape(x, [1, 2, 1, 3])),
                "stack": tf.stack([x, x]),
                "shape": tf.shape(x), "shape64": tf.shape(x, out_type=tf.int64),
                "max": tf.reduce_max(xi, axis=1), "sum": tf.reduce_sum(xi, axis=0, keepdims=True),
                "slice": x[:, 1:], "matmul": tf.matmul(xi, xi, transpose_b=True),
                "cast": tf.cast(tf.abs(x), tf.uint8)}


def test_saved_model_with_stripped_default_attributes_runs_as_in_tensorflow(tmp_path):
    """tf.saved_model.save leaves out each attribute equal to its OpDef's
    default (Squeeze's squeeze_dims, Shape's out_type, Cast's Truncate,
    Max's keep_dims, MatMul's transpose_a, ...): tfsem's models must fill
    in TensorFlow's defaults.  (Ops with a model of their own: in the suite
    TensorFlow's kernels are off.)"""
    from tensorflow.core.protobuf import saved_model_pb2
    from tfsem.graphdef import import_path
    module = _Defaults()
    tf.saved_model.save(module, str(tmp_path), signatures=module.f)
    saved = saved_model_pb2.SavedModel.FromString((tmp_path / "saved_model.pb").read_bytes())
    squeeze = [n for f in saved.meta_graphs[0].graph_def.library.function for n in f.node_def
               if n.op == "Squeeze"]
    assert squeeze and "squeeze_dims" not in squeeze[0].attr   # (stripped: what is tested)
    x = np.array([[1.5, -2, 0.25], [0, 7, 3]], dtype=F32)
    expected = {k: v.numpy() for k, v in module.f(tf.constant(x)).items()}
    program = import_path(tmp_path).program
    (o,) = outcome_set(program, {k: Tensor(x) for k in program.feeds}, {}, "atomic",
                       "outputs").as_dict(1)
    outputs = dict(o.outputs)
    assert sorted(outputs) == sorted(expected)
    for k, want in expected.items():
        compare(outputs[k], want, f"{k} of the SavedModel")
