"""How a Const's TensorProto becomes a tfsem value, without TensorFlow.

Each expected value below is what TensorFlow 2.21's Const kernel gives for
the same TensorProto (tests/test_graphdef_tensor_decoding_tensorflow.py
compares the two on drawn protos where TensorFlow is installed); each case
read differently before: refused where TensorFlow runs the node, or read as
a value TensorFlow cannot load.
"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.cli import main
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import ProtoError, encode, parse, parse_text


def const_text(dtype: str, dims: list[int], body: str, declared: str | None = None,
               unknown_rank: bool = False) -> str:
    shape = "".join(f" dim {{ size: {d} }}" for d in dims) + (" unknown_rank: true"
                                                              if unknown_rank else "")
    return (f'node {{ name: "c" op: "Const" attr {{ key: "dtype" value {{ type: '
            f'{declared or dtype} }} }} attr {{ key: "value" value {{ tensor {{ dtype: {dtype} '
            f'tensor_shape {{{shape} }} {body} }} }} }} }}')


def value(text: str, binary: bool = False):
    graph = parse_text("GraphDef", text)
    if binary:
        graph = parse("GraphDef", encode("GraphDef", graph))
    v = import_graph(graph, ["c"]).program.node["c"].attrs["value"]
    return v.dtype, v.array


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("dtype,dims,body,expected", [
    # int_val of a narrower integer dtype keeps the low bits (C++'s conversion)
    ("DT_INT8", [3], "int_val: 1 int_val: 300", np.array([1, 44, 44], np.int8)),
    ("DT_UINT8", [2], "int_val: -1", np.array([255, 255], np.uint8)),
    ("DT_UINT16", [2], "int_val: 70000", np.array([4464, 4464], np.uint16)),
    ("DT_INT16", [1], "int_val: -32769", np.array([32767], np.int16)),
    # half_val's int32s keep their low 16 bits
    ("DT_HALF", [2], "half_val: 15360 half_val: 70000",
     np.array([0x3C00, 70000 & 0xFFFF], np.uint16).view(np.float16)),
    ("DT_HALF", [1], "half_val: -1", np.array([0xFFFF], np.uint16).view(np.float16)),
    # more values than elements: the first ones
    ("DT_INT8", [2], "int_val: 1 int_val: 2 int_val: 3", np.array([1, 2], np.int8)),
    ("DT_FLOAT", [], "float_val: 2.5 float_val: 7", np.array(2.5, np.float32)),
    # no elements: values and content are not read
    ("DT_INT32", [0], "int_val: 7", np.zeros(0, np.int32)),
    ("DT_INT32", [2, 0], 'tensor_content: "abc"', np.zeros((2, 0), np.int32)),
])
def test_tensor_proto_reads_as_tensorflow_runs_it(dtype, dims, body, expected, binary):
    got_dtype, got = value(const_text(dtype, dims, body), binary)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_bfloat16_half_val_keeps_the_low_16_bits():
    _, got = value(const_text("DT_BFLOAT16", [2], "half_val: 81792 half_val: -1"))
    assert list(got.view(np.uint16)) == [81792 & 0xFFFF, 0xFFFF]


def test_unknown_rank_with_no_dims_is_a_scalar_and_with_dims_reads_the_dims():
    # (TensorFlow's TensorShape ignores unknown_rank)
    _, got = value(const_text("DT_INT32", [], "int_val: 5", unknown_rank=True))
    assert got.shape == () and int(got) == 5
    _, got = value(const_text("DT_INT32", [2], "int_val: 5", unknown_rank=True))
    assert got.shape == (2,)


def test_bool_tensor_content_other_than_0_and_1_is_refused():
    with pytest.raises(GraphImportError, match=r"'c'.*DT_BOOL.*other than 0 and 1"):
        value(const_text("DT_BOOL", [2], r'tensor_content: "\001\002"'))
    assert value(const_text("DT_BOOL", [2], r'tensor_content: "\001\000"'))[1].tolist() == \
        [True, False]


def test_signalling_nan_in_float_val_keeps_its_bits_from_binary():
    """float_val's float32s from the wire, not through a C double (which
    quiets a signalling NaN: 0x7f800001 would become 0x7fc00001)."""
    bits = [0x7F800001, 0xFF800001, 0x7FA00000, 0x7FC00001, 0x00000001, 0x80000000]
    message = parse("GraphDef", encode("GraphDef", parse_text(
        "GraphDef", const_text("DT_FLOAT", [len(bits)], ""))))
    payload = np.array(bits, dtype="<u4").tobytes()
    # a packed float_val (field 5, wire type 2) merged in as bytes: protobuf
    # holds the float32s as they are
    message.node[0].attr["value"].tensor.MergeFromString(b"\x2a" + bytes([len(payload)]) + payload)
    v = import_graph(message, ["c"]).program.node["c"].attrs["value"]
    assert [int(b) for b in v.array.view(np.uint32)] == bits


def test_fetched_string_constant_is_refused_naming_its_dtype():
    with pytest.raises(GraphImportError) as exc:
        value(const_text("DT_STRING", [1], 'string_val: "a"'))
    assert "DT_STRING" in str(exc.value) and "'c'" in str(exc.value)


def test_const_whose_dtype_attribute_differs_from_its_tensor_is_refused():
    with pytest.raises(GraphImportError, match=r"'c'.*DT_FLOAT tensor.*DT_INT32"):
        value(const_text("DT_FLOAT", [1], "float_val: 1.5", declared="DT_INT32"))


@pytest.mark.parametrize("spelling", ["010", "-010", "00.5", "01e3", "- 1", "-\n1", "- inf"])
def test_text_float_spellings_protobuf_refuses_are_refused(spelling):
    with pytest.raises(ProtoError):
        parse_text("GraphDef", const_text("DT_FLOAT", [1], f"float_val: {spelling}"))


@pytest.mark.parametrize("spelling,expected", [("-1", -1.0), ("0.5", 0.5), ("0", 0.0),
                                               ("-inf", -np.inf), ("0e5", 0.0), ("1.5f", 1.5)])
def test_text_float_spellings_protobuf_reads_are_read(spelling, expected):
    assert value(const_text("DT_FLOAT", [1], f"float_val: {spelling}"))[1].tolist() == [expected]


def test_integer_after_a_detached_minus_is_refused():
    with pytest.raises(ProtoError, match="right after '-'"):
        parse_text("GraphDef", const_text("DT_INT64", [1], "int64_val: - 5"))
    assert value(const_text("DT_INT64", [1], "int64_val: -5"))[1].tolist() == [-5]


def test_tfsem_import_of_a_bad_bool_constant_exits_2_naming_the_node(tmp_path, capsys):
    f = tmp_path / "g.pbtxt"
    f.write_text(const_text("DT_BOOL", [1], r'tensor_content: "\003"'))
    rc = main(["import", str(f), "--fetch", "c"])
    err = capsys.readouterr().err
    assert rc == 2 and "'c'" in err and "Traceback" not in err


def test_signalling_nan_in_a_function_body_constant_keeps_its_bits_from_binary():
    bits = [0x7F800001, 0xFFA00001]
    text = ('node { name: "call" op: "PartitionedCall" attr { key: "f" value { func { name: "fn" } } }'
            ' attr { key: "Tin" value { list { } } }'
            ' attr { key: "Tout" value { list { type: DT_FLOAT } } } }'
            'library { function { signature { name: "fn" output_arg { name: "out" type: DT_FLOAT } }'
            ' node_def { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }'
            ' attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } } } } }'
            ' ret { key: "out" value: "c:output:0" } } }')
    message = parse("GraphDef", encode("GraphDef", parse_text("GraphDef", text)))
    payload = np.array(bits, dtype="<u4").tobytes()
    tensor = message.library.function[0].node_def[0].attr["value"].tensor
    tensor.MergeFromString(b"\x2a" + bytes([len(payload)]) + payload)
    program = import_graph(message, ["call"]).program
    (const,) = [n for n in program.nodes if n.op == "Const"]
    assert [int(b) for b in const.attrs["value"].array.view(np.uint32)] == bits


@pytest.mark.parametrize("escape", [r"\?", r"\X41"])
def test_escapes_protobufs_parsers_read_differently_are_refused(escape):
    """Python's protobuf keeps \\? and \\X41 as written (backslash included),
    C++'s reads one character: tfsem read the one character, so a
    tensor_content was another length than TensorFlow's Python reader gives."""
    with pytest.raises(ProtoError, match="read it differently"):
        parse_text("GraphDef", const_text("DT_UINT8", [1], f'tensor_content: "{escape}"'))
    assert value(const_text("DT_UINT8", [1], r'tensor_content: "\x41"'))[1].tolist() == [65]


@pytest.mark.parametrize("dims,says", [([2**62, 0], "numpy cannot hold"),
                                       ([2**62, 3, 0], "numpy cannot hold"),
                                       ([1] * 65, "rank 65")])
def test_shapes_numpy_cannot_hold_are_refused_by_name(dims, says):
    with pytest.raises(GraphImportError, match=says) as exc:
        value(const_text("DT_INT32", dims, "int_val: 1"))
    assert exc.value.violations[0].rule == "too-large"
    assert value(const_text("DT_INT32", [2**31, 0], "int_val: 1"))[1].shape == (2**31, 0)


def test_an_enum_number_with_a_leading_zero_is_refused_as_protobuf_does():
    """protobuf reads an enum's number with Python's int(text, 0): 01 is
    no number (00 is 0), so `type: 01` is no DataType; tfsem read DT_FLOAT."""
    with pytest.raises(ProtoError, match="'01'"):
        parse_text("AttrValue", "type: 01")
    assert parse_text("AttrValue", "type: 00") == {"type": "DT_INVALID"}
    assert parse_text("AttrValue", "type: 0x1") == {"type": "DT_FLOAT"}


def test_a_constant_read_at_import_whose_dtype_attribute_differs_is_refused():
    """(an axis, a shape: read when the graph is imported, not run)"""
    text = (const_text("DT_INT32", [1], "int_val: 0", declared="DT_INT64").replace('"c"', '"axis"')
            + 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }'
            ' attr { key: "shape" value { shape { dim { size: 2 } } } } }'
            'node { name: "y" op: "ExpandDims" input: "x" input: "axis"'
            ' attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tdim" value { type: DT_INT64 } } }')
    with pytest.raises(GraphImportError, match=r"'axis'.*DT_INT32 tensor.*DT_INT64"):
        import_graph(parse_text("GraphDef", text), ["y"])
    ok = text.replace("DT_INT64", "DT_INT32")
    assert import_graph(parse_text("GraphDef", ok), ["y"]).program.outputs
