"""Const values as tfsem reads them against what TensorFlow's runtime gives.

Differential: TensorProtos are built with TensorFlow's own protobuf classes
(every dtype tfsem models and some it refuses; tensor_content of the right
and of a wrong length; each dtype's typed `*_val` field with fewer values
than the shape's elements, none, or more; scalars, zero-size and unknown
dimensions; values from raw bit patterns: NaN payloads and signs, -0.0,
subnormals, integer extremes, uint64 above 2**63, int_val and half_val
outside the element's range), put in a one-Const GraphDef, serialized in
binary and in text (Python protobuf's text_format), and imported by tfsem.
TensorFlow reads the same bytes or text (GraphDef.FromString,
text_format.Parse) and runs the Const node in a Session.  Wherever tfsem
gives a value, TensorFlow must give the same dtype, shape and bytes;
wherever tfsem refuses, TensorFlow must fail too, or the dtype must be one
tfsem does not model and be named.

Text spellings of numbers (float forms, hex and octal integers, values out
of a field's range) are compared the same way: both refuse, or both read
the same bits.

Needs TensorFlow (skipped without it, as the other *_tensorflow tests).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import ProtoError, parse, parse_text
from tfsem.oracle.program import ProgramError

tf = pytest.importorskip("tensorflow", reason="compares tfsem's reading of TensorProtos with "
                         "TensorFlow's runtime: needs the extra tfsem[tensorflow]")
from google.protobuf import text_format  # noqa: E402  (TensorFlow's protobuf)
from tensorflow.core.framework import graph_pb2, tensor_pb2, tensor_shape_pb2, types_pb2  # noqa: E402

EXAMPLES = max(40, settings.default.max_examples)

#: dtype -> (typed field, element size in bytes)
MODELLED = {
    "DT_BOOL": ("bool_val", 1), "DT_INT8": ("int_val", 1), "DT_INT16": ("int_val", 2),
    "DT_INT32": ("int_val", 4), "DT_INT64": ("int64_val", 8), "DT_UINT8": ("int_val", 1),
    "DT_UINT16": ("int_val", 2), "DT_UINT32": ("uint32_val", 4),
    "DT_UINT64": ("uint64_val", 8), "DT_HALF": ("half_val", 2),
    "DT_BFLOAT16": ("half_val", 2), "DT_FLOAT": ("float_val", 4),
    "DT_DOUBLE": ("double_val", 8),
}
NOT_MODELLED = ["DT_STRING", "DT_COMPLEX64", "DT_COMPLEX128", "DT_QINT8", "DT_QUINT8",
                "DT_QINT32", "DT_RESOURCE", "DT_VARIANT", "DT_FLOAT8_E4M3FN"]
FIELD_VALUES = {
    "int_val": st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-300, 70000)),
    "half_val": st.one_of(st.integers(0, 0xFFFF), st.integers(-2**31, 2**31 - 1)),
    "int64_val": st.integers(-2**63, 2**63 - 1),
    "uint32_val": st.integers(0, 2**32 - 1),
    "uint64_val": st.one_of(st.integers(0, 2**64 - 1), st.integers(2**63, 2**64 - 1)),
    "bool_val": st.booleans(),
    # floats from raw bits: NaNs of both signs and every payload, -0.0, subnormals
    "float_val": st.integers(0, 2**32 - 1).map(
        lambda b: float(np.uint32(b).view(np.float32))),
    "double_val": st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0]),
}
TYPED_FIELDS = sorted(FIELD_VALUES)


def shape_proto(dims, unknown_rank=False):
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims],
        unknown_rank=unknown_rank)


@st.composite
def tensor_protos(draw):
    dtype = draw(st.one_of(st.sampled_from(sorted(MODELLED)), st.sampled_from(NOT_MODELLED))
                 if draw(st.integers(0, 9)) == 0 else st.sampled_from(sorted(MODELLED)))
    dims = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 5]), max_size=3))
    if draw(st.integers(0, 19)) == 0:
        dims = dims + [-1]
    if 0 in dims and draw(st.integers(0, 9)) == 0:   # huge, with no elements (nothing allocated)
        dims.insert(draw(st.integers(0, len(dims))), draw(st.sampled_from([2**31, 2**40, 2**62])))
    tp = tensor_pb2.TensorProto(dtype=types_pb2.DataType.Value(dtype),
                                tensor_shape=shape_proto(dims, draw(st.integers(0, 29)) == 0))
    size = int(np.prod(dims)) if all(d >= 0 for d in dims) else 1
    field, itemsize = MODELLED.get(dtype, ("float_val", 4))
    source = draw(st.sampled_from(["vals", "vals", "vals", "content", "content", "both", "none"]))
    if source in ("content", "both"):
        delta = draw(st.sampled_from([0, 0, 0, 0, 1, -1, itemsize, -itemsize]))
        n = max(0, size * itemsize + delta)
        tp.tensor_content = draw(st.binary(min_size=n, max_size=n))
    if source in ("vals", "both"):
        n = draw(st.sampled_from([0, 1, size, size, max(size - 1, 0), size + 1, size + 3]))
        getattr(tp, field).extend(draw(st.lists(FIELD_VALUES[field], min_size=n, max_size=n)))
    if draw(st.integers(0, 4)) == 0:   # a value in a field of another dtype: ignored
        other = draw(st.sampled_from(TYPED_FIELDS))
        if other != field:
            getattr(tp, other).extend(draw(st.lists(FIELD_VALUES[other], min_size=1, max_size=3)))
    return tp


def const_graph(tp: tensor_pb2.TensorProto, dtype: int | None = None) -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef()
    n = g.node.add(name="c", op="Const")
    n.attr["dtype"].type = tp.dtype if dtype is None else dtype
    n.attr["value"].tensor.CopyFrom(tp)
    return g


def session_run(g: graph_pb2.GraphDef, fetch: str):
    """`fetch` as TensorFlow's runtime gives it for the graph `g`, or the
    exception TensorFlow raised (loading the graph or running the node)."""
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.compat.v1.import_graph_def(g, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run(fetch)
    except Exception as exc:   # noqa: BLE001 (any failure of TensorFlow's is a refusal)
        return exc


def tensorflow_value(g: graph_pb2.GraphDef):
    """The Const's value as TensorFlow's runtime gives it, or the exception
    TensorFlow raised (loading the graph or running the node)."""
    return session_run(g, "c:0")


def tfsem_value(graph):
    """tfsem's value of the Const (dtype name, numpy array), or its refusal."""
    try:
        program = import_graph(graph, ["c"]).program
    except (GraphImportError, ProgramError) as exc:
        return exc
    value = program.node["c"].attrs["value"]
    return value.dtype, value.array


def assert_same(ours, theirs, what: str, dtype_name: str) -> None:
    if isinstance(ours, Exception):
        if isinstance(theirs, Exception):
            return
        assert dtype_name not in MODELLED, (
            f"{what}: tfsem refused what TensorFlow reads ({theirs!r}): {ours}")
        assert dtype_name in str(ours), f"{what}: the refusal does not name {dtype_name}: {ours}"
        return
    assert not isinstance(theirs, Exception), (
        f"{what}: tfsem read {ours} where TensorFlow failed: {theirs}")
    dtype, array = ours
    theirs = np.asarray(theirs)
    assert tf.as_dtype(theirs.dtype).name == tf.as_dtype(dtype).name, what
    assert array.shape == theirs.shape, what
    assert array.tobytes() == theirs.tobytes(), (
        f"{what}: tfsem {array!r}, TensorFlow {theirs!r}")


def dtype_of(tp) -> str:
    return types_pb2.DataType.Name(tp.dtype)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(tensor_protos())
def test_binary_tensor_proto_reads_as_tensorflow_runs_it(tp):
    g = const_graph(tp)
    ours = tfsem_value(parse("GraphDef", g.SerializeToString()))
    theirs = tensorflow_value(graph_pb2.GraphDef.FromString(g.SerializeToString()))
    assert_same(ours, theirs, f"binary {tp}", dtype_of(tp))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(tensor_protos())
def test_text_tensor_proto_reads_as_tensorflow_runs_it(tp):
    text = text_format.MessageToString(const_graph(tp))
    ours = tfsem_value(parse_text("GraphDef", text))
    theirs = tensorflow_value(text_format.Parse(text, graph_pb2.GraphDef()))
    assert_same(ours, theirs, f"text {text}", dtype_of(tp))


# -- bit patterns that a Python float cannot carry --------------------------

def _packed(field_number: int, payload: bytes) -> bytes:
    def varint(n):
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    return varint(field_number << 3 | 2) + varint(len(payload)) + payload


SIGNALLING_AND_PAYLOAD_NANS = [0x7F800001, 0xFF800001, 0x7FA00000, 0x7FC00001, 0xFFC00000,
                               0xFFFFFFFF, 0x7FBFFFFF, 0x00000001, 0x80000000]


def test_float_val_bits_survive_as_tensorflow_keeps_them():
    """float_val's elements straight from the wire (signalling NaNs, which
    a conversion to a C double and back would quiet) against TensorFlow."""
    base = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT,
                                  tensor_shape=shape_proto([len(SIGNALLING_AND_PAYLOAD_NANS)]))
    data = base.SerializeToString() + _packed(5, np.array(SIGNALLING_AND_PAYLOAD_NANS,
                                                          dtype="<u4").tobytes())
    tp = tensor_pb2.TensorProto.FromString(data)
    g = graph_pb2.GraphDef()
    n = g.node.add(name="c", op="Const")
    n.attr["dtype"].type = types_pb2.DT_FLOAT
    # (the TensorProto's bytes copied, not its Python floats)
    n.attr["value"].tensor.MergeFromString(data)
    raw = g.SerializeToString()
    theirs = tensorflow_value(graph_pb2.GraphDef.FromString(raw))
    ours = tfsem_value(parse("GraphDef", raw))
    assert_same(ours, theirs, f"float_val bits {tp}", "DT_FLOAT")


# -- text spellings ---------------------------------------------------------

FLOAT_SPELLINGS = ["1", "-0", "-0.0", "0.0", ".5", "5.", "1e5", "1E5", "1e+5", "1.5f", "1.5F",
                   "-1.5e-3f", "inf", "-inf", "Inf", "-Infinity", "infinity", "INF", "nan",
                   "-nan", "NaN", "nanf", "inff", "1e39", "-1e39", "3.4028235e38",
                   "3.4028236e38", "3.40282357e38", "1e-46", "-1e-46", "1.4e-45", "7e-46",
                   "1e309", "-1e400", "4.9e-324", "2.5e-324", "1e-400", "0x10", "010", "0.1",
                   "16777217", "9007199254740993", "1.0000000596046448", "e5", "1.5.5",
                   "1e", "- 1", "--1", "+1", "1_0", "0b1", "1.5ff", "nanx", "1f"]
INT_SPELLINGS = ["0", "-0", "1", "-1", "0x10", "0X1f", "-0x10", "010", "-010", "08", "0x",
                 "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295",
                 "4294967296", "9223372036854775807", "9223372036854775808",
                 "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
                 "18446744073709551616", "0xffffffff", "0xffffffffffffffff",
                 "0x8000000000000000", "-0x8000000000000000", "1.0", "1e3", "1f", "true",
                 "00", "0777", "+1", "0x7fffffff", "-0x80000000", "0x80000000",
                 "0000000000000000000000000000000000000000001"]
TEXT_CASES = ([(dt, field, s) for dt, field in (("DT_FLOAT", "float_val"), ("DT_DOUBLE", "double_val"))
               for s in FLOAT_SPELLINGS]
              + [(dt, field, s) for dt, field in (("DT_INT32", "int_val"), ("DT_INT8", "int_val"),
                                                  ("DT_INT64", "int64_val"),
                                                  ("DT_UINT32", "uint32_val"),
                                                  ("DT_UINT64", "uint64_val"),
                                                  ("DT_HALF", "half_val"))
                 for s in INT_SPELLINGS]
              + [("DT_BOOL", "bool_val", s) for s in ("true", "false", "True", "False", "t",
                                                      "f", "1", "0", "2", "-1", "TRUE", "yes")])


def _text_graph(dtype: str, field: str, spelling: str) -> str:
    return (f'node {{ name: "c" op: "Const" attr {{ key: "dtype" value {{ type: {dtype} }} }} '
            f'attr {{ key: "value" value {{ tensor {{ dtype: {dtype} tensor_shape {{ dim {{ '
            f'size: 2 }} }} {field}: {spelling} }} }} }} }}')


#: What Python protobuf reads and tfsem refuses, by name, on purpose: a '+'
#: sign, and what Python's float() lets through (underscores, a doubled f
#: suffix); protobuf's C++ text parser refuses them all.
REFUSED_ON_PURPOSE = {"+1", "1_0", "1.5ff"}


def test_text_number_spellings_read_as_protobuf_reads_them():
    mismatches = []
    for dtype, field, spelling in TEXT_CASES:
        text = _text_graph(dtype, field, spelling)
        try:
            ours = tfsem_value(parse_text("GraphDef", text))
        except ProtoError as exc:
            ours = exc
        if spelling in REFUSED_ON_PURPOSE:
            assert isinstance(ours, ProtoError), (field, spelling, ours)
            continue
        try:
            theirs = tensorflow_value(text_format.Parse(text, graph_pb2.GraphDef()))
        except text_format.ParseError as exc:
            theirs = exc
        try:
            assert_same(ours, theirs, f"{field}: {spelling}", dtype)
        except AssertionError as exc:
            mismatches.append(str(exc).splitlines()[0])
    assert not mismatches, "\n".join(mismatches)


def test_const_whose_dtype_attribute_is_not_its_tensors_is_refused_as_tensorflow_does():
    tp = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=shape_proto([2]),
                                float_val=[1.5])
    g = const_graph(tp, types_pb2.DT_INT32)
    theirs = tensorflow_value(g)
    assert isinstance(theirs, Exception)
    ours = tfsem_value(parse("GraphDef", g.SerializeToString()))
    assert isinstance(ours, Exception), ours
    assert "DT_INT32" in str(ours) and "DT_FLOAT" in str(ours)


ESCAPES = [r"\x4", r"\x41", r"\x414", r"\101", r"\0", r"\08", r"\0101", r"\u00e9",
           r"\U000000e9", r"\'", r"\a", r"\b", r"\f", r"\v", r"\\", "é", '\\"', r"\x0041",
           r"\n\t\r", r"\377\200"]
#: escapes tfsem refuses by name: protobuf's Python parser keeps them as
#: written (\? and \X: C++'s reads one character; \e and \s: unknown)
REFUSED_ESCAPES = [r"\?", r"\X41", r"\e", r"\s", r"\400", r"\xg", r"\u12", r"\ud800"]


@pytest.mark.filterwarnings("ignore:invalid.*escape sequence:DeprecationWarning")  # (protobuf's)
def test_text_escapes_read_as_protobuf_reads_them():
    for escape in ESCAPES + REFUSED_ESCAPES:
        for quote in "\"'":
            text = (f"dtype: DT_UINT8 tensor_shape {{ dim {{ size: 1 }} }} "
                    f"tensor_content: {quote}{escape}{quote}")
            try:
                ours = parse_text("TensorProto", text).get("tensor_content", b"")
            except ProtoError as exc:
                ours = exc
            try:
                theirs = text_format.Parse(text, tensor_pb2.TensorProto()).tensor_content
            except text_format.ParseError as exc:
                theirs = exc
            if escape in REFUSED_ESCAPES:
                assert isinstance(ours, ProtoError), (escape, ours, theirs)
            elif isinstance(theirs, Exception):
                assert isinstance(ours, ProtoError), (escape, ours, theirs)
            else:
                assert ours == theirs, (escape, ours, theirs)


# -- the text format's other spellings of the same message ---------------------

def _respell(text: str, draw) -> str:
    """`text` (protobuf's printing) in another spelling protobuf's parser
    reads as the same message: `field: {`, `< >` for a block, `,` or `;`
    after a field, repeated scalars as `[a, b]`, single quotes, comments,
    all on one line."""
    lines = text.splitlines()
    out, closers = [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.endswith("{"):
            name = stripped[:-1].strip()
            style = draw(st.sampled_from(["{", ": {", "<", ": <"]))
            out.append(f"{name} {style}")
            closers.append(">" if "<" in style else "}")
        elif stripped == "}":
            out.append(closers.pop())
        else:
            key, _, value = stripped.partition(": ")
            run = [value]
            while i + 1 < len(lines) and lines[i + 1].strip().startswith(key + ": ") \
                    and draw(st.booleans()):
                i += 1
                run.append(lines[i].strip().partition(": ")[2])
            if value.startswith('"') and draw(st.booleans()):
                run = ["'" + v[1:-1] + "'" for v in run]
            out.append(f"{key}: [{', '.join(run)}]" if len(run) > 1 else f"{key}: {run[0]}")
            out[-1] += draw(st.sampled_from(["", "", ",", ";"]))
        if draw(st.integers(0, 5)) == 0:
            out.append("# a comment { } : [")
        i += 1
    return ("\n" if draw(st.booleans()) else " ").join(
        line if not line.startswith("#") else line + "\n" for line in out)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(tensor_protos(), st.data())
def test_respelled_text_reads_as_tensorflow_reads_it(tp, data):
    text = _respell(text_format.MessageToString(const_graph(tp)), data.draw)
    try:
        theirs = tensorflow_value(text_format.Parse(text, graph_pb2.GraphDef()))
    except text_format.ParseError as exc:
        theirs = exc
    try:
        ours = tfsem_value(parse_text("GraphDef", text))
    except ProtoError as exc:
        ours = exc
    assert not isinstance(theirs, text_format.ParseError), (text, theirs)
    assert_same(ours, theirs, f"text {text}", dtype_of(tp))
