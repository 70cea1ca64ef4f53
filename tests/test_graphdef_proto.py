"""graphdef.proto: the protobuf binary and text formats of TensorFlow's messages.

Reference data (SMALL_PB, SMALL_PBTXT) was written by TensorFlow 2.21 itself
(`tf.io.write_graph` and `GraphDef.SerializeToString` of the graph built in
the comment below); reading it here needs no TensorFlow.
"""

from __future__ import annotations

import math
import random
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.graphdef.proto import (MAX_DEPTH, MESSAGES, ProtoError, decode, encode, format_text,
                                  parse_text)
from tfsem.graphdef.proto import runtime, schema, wire

# g = tf.Graph()
# with g.as_default():
#     v = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="counter", name="counter")
#     c = tf.constant(np.array([1.0, -0.5], np.float32), name="step")
#     a = tf.raw_ops.AssignAddVariableOp(resource=v, value=c, name="add")
#     with tf.control_dependencies([a]):
#         r = tf.raw_ops.ReadVariableOp(resource=v, dtype=tf.float32, name="read")
#     s = tf.constant("h\xe9\n", name="s")
#     k = tf.constant(-3, dtype=tf.int64, name="k")
SMALL_PB = bytes.fromhex(
    "0a88010a07636f756e746572120b56617248616e646c654f702a100a0a64656275675f6e616d65120212002a0f0a09"
    "636f6e7461696e6572120212002a0f0a05736861706512063a04120208022a180a0b7368617265645f6e616d651209"
    "1207636f756e7465722a0b0a056474797065120230012a150a0f616c6c6f7765645f6465766963657312020a000a39"
    "0a04737465701205436f6e73742a1d0a0576616c756512144212080112041202080222080000803f000000bf2a0b0a"
    "056474797065120230010a5e0a03616464121341737369676e4164645661726961626c654f701a07636f756e746572"
    "1a04737465702a260a205f6861735f6d616e75616c5f636f6e74726f6c5f646570656e64656e6369657312022801"
    "2a0b0a056474797065120230010a320a0472656164120e526561645661726961626c654f701a07636f756e7465721a"
    "045e6164642a0b0a056474797065120230010a2e0a01731205436f6e73742a0b0a056474797065120230072a150a05"
    "76616c7565120c420a08071200420468c3a90a0a340a016b1205436f6e73742a0b0a056474797065120230092a1b0a"
    "0576616c75651212421008091200520afdffffffffffffffff01220308aa13")

SMALL_PBTXT = r'''node {
  name: "counter"
  op: "VarHandleOp"
  attr {
    key: "allowed_devices"
    value {
      list {
      }
    }
  }
  attr {
    key: "container"
    value {
      s: ""
    }
  }
  attr {
    key: "debug_name"
    value {
      s: ""
    }
  }
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
  attr {
    key: "shape"
    value {
      shape {
        dim {
          size: 2
        }
      }
    }
  }
  attr {
    key: "shared_name"
    value {
      s: "counter"
    }
  }
}
node {
  name: "step"
  op: "Const"
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_FLOAT
        tensor_shape {
          dim {
            size: 2
          }
        }
        tensor_content: "\000\000\200?\000\000\000\277"
      }
    }
  }
}
node {
  name: "add"
  op: "AssignAddVariableOp"
  input: "counter"
  input: "step"
  attr {
    key: "_has_manual_control_dependencies"
    value {
      b: true
    }
  }
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
}
node {
  name: "read"
  op: "ReadVariableOp"
  input: "counter"
  input: "^add"
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
}
node {
  name: "s"
  op: "Const"
  attr {
    key: "dtype"
    value {
      type: DT_STRING
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_STRING
        tensor_shape {
        }
        string_val: "h\303\251\n"
      }
    }
  }
}
node {
  name: "k"
  op: "Const"
  attr {
    key: "dtype"
    value {
      type: DT_INT64
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_INT64
        tensor_shape {
        }
        int64_val: -3
      }
    }
  }
}
versions {
  producer: 2474
}
'''

WHERE_BINARY = re.compile(r"at byte \d+")
WHERE_TEXT = re.compile(r"at line \d+:\d+")


def same(a, b) -> bool:
    """Structural equality in which floats compare bit for bit and all NaNs are equal."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- TensorFlow's own bytes and text

def test_tensorflow_binary_decodes_to_the_graph_it_wrote():
    g = decode("GraphDef", SMALL_PB)
    assert [n["name"] for n in g["node"]] == ["counter", "step", "add", "read", "s", "k"]
    counter = g["node"][0]
    assert counter["op"] == "VarHandleOp"
    assert counter["attr"]["shared_name"] == {"s": b"counter"}
    assert counter["attr"]["container"] == {"s": b""}  # a oneof member set to its default is kept
    assert counter["attr"]["dtype"] == {"type": "DT_FLOAT"}
    assert counter["attr"]["shape"] == {"shape": {"dim": [{"size": 2}]}}
    assert counter["attr"]["allowed_devices"] == {"list": {}}
    step = g["node"][1]["attr"]["value"]["tensor"]
    assert step["tensor_content"] == struct.pack("<2f", 1.0, -0.5)
    assert "float_val" not in step  # absent fields stay absent
    assert g["node"][3]["input"] == ["counter", "^add"]
    assert g["node"][4]["attr"]["value"]["tensor"]["string_val"] == ["hé\n".encode()]
    assert g["node"][5]["attr"]["value"]["tensor"]["int64_val"] == [-3]
    assert g["node"][5]["attr"]["value"]["tensor"]["tensor_shape"] == {}
    assert g["versions"] == {"producer": 2474}


def test_tensorflow_text_parses_to_the_same_dict_as_its_binary():
    assert parse_text("GraphDef", SMALL_PBTXT) == decode("GraphDef", SMALL_PB)


def test_format_text_writes_exactly_what_tensorflow_writes():
    assert format_text("GraphDef", decode("GraphDef", SMALL_PB)) == SMALL_PBTXT


def test_encode_reproduces_tensorflows_bytes_up_to_map_order():
    # the hand-written decoder keeps map entries in wire order (protobuf's maps do not)
    g = wire.decode("GraphDef", SMALL_PB)
    assert g == decode("GraphDef", SMALL_PB)
    again = encode("GraphDef", g)
    assert decode("GraphDef", again) == g
    assert len(again) == len(SMALL_PB)
    # TensorFlow wrote the attr map in hash order; with the dict in that order the bytes are equal
    assert again == SMALL_PB


# ---------------------------------------------------------------- bytes by hand from the wire spec

def test_known_bytes_nodedef():
    assert encode("NodeDef", {"name": "a", "op": "Const"}) == b"\n\x01a\x12\x05Const"
    assert decode("NodeDef", b"\n\x01a\x12\x05Const") == {"name": "a", "op": "Const"}


def test_known_bytes_map_entry_and_enum():
    # field 5 (attr), length 7: entry{1: "T", 2: AttrValue{6 (type): 1 (DT_FLOAT)}}
    data = b"\x2a\x07\x0a\x01T\x12\x02\x30\x01"
    assert encode("NodeDef", {"attr": {"T": {"type": "DT_FLOAT"}}}) == data
    assert decode("NodeDef", data) == {"attr": {"T": {"type": "DT_FLOAT"}}}


def test_negative_int32_is_a_ten_byte_varint():
    data = b"\x08" + b"\xff" * 9 + b"\x01"  # VersionDef.producer = -1
    assert encode("VersionDef", {"producer": -1}) == data
    assert decode("VersionDef", data) == {"producer": -1}
    assert decode("AttrValue", b"\x18" + b"\xff" * 9 + b"\x01") == {"i": -1}
    # protobuf truncates an int32 read from a wider varint to its low 32 bits
    assert decode("VersionDef", b"\x08\xff\xff\xff\xff\x0f") == {"producer": -1}


def test_packed_and_unpacked_repeated_decode_alike():
    packed = b"\x3a\x04\x01\x02\xac\x02"  # TensorProto.int_val (7) packed: [1, 2, 300]
    unpacked = b"\x38\x01\x38\x02\x38\xac\x02"
    assert encode("TensorProto", {"int_val": [1, 2, 300]}) == packed
    assert decode("TensorProto", packed) == {"int_val": [1, 2, 300]}
    assert decode("TensorProto", unpacked) == {"int_val": [1, 2, 300]}
    assert decode("TensorProto", b"\x38\x01" + b"\x3a\x02\x02\x03") == {"int_val": [1, 2, 3]}
    floats_packed = b"\x2a\x08" + struct.pack("<2f", 1.0, -2.5)
    floats_unpacked = b"\x2d" + struct.pack("<f", 1.0) + b"\x2d" + struct.pack("<f", -2.5)
    assert decode("TensorProto", floats_packed) == decode("TensorProto", floats_unpacked) == {
        "float_val": [1.0, -2.5]}
    assert encode("TensorProto", {"float_val": [1.0, -2.5]}) == floats_packed


def test_enum_unknown_number_is_an_int_and_refs_have_names():
    assert decode("AttrValue", b"\x30\x63") == {"type": 99}
    assert decode("AttrValue", b"\x30\x65") == {"type": "DT_FLOAT_REF"}
    assert decode("AttrValue", b"\x30\x14") == {"type": "DT_RESOURCE"}
    assert encode("AttrValue", {"type": 99}) == b"\x30\x63"
    assert schema.ENUMS["DataType"][14] == "DT_BFLOAT16" and schema.ENUMS["DataType"][19] == "DT_HALF"
    assert schema.ENUMS["DataType"][21] == "DT_VARIANT" and schema.ENUMS["DataType"][120] == "DT_RESOURCE_REF"


def test_unknown_fields_are_skipped_of_every_wire_type():
    base = b"\n\x01a\x12\x05Const"
    extra = (b"\x98\x06\x05"  # field 99 varint
             + b"\x99\x06" + b"\x00" * 8  # field 99 fixed64
             + b"\x9a\x06\x03abc"  # field 99 length-delimited
             + b"\x9d\x06" + b"\x00" * 4)  # field 99 fixed32
    assert decode("NodeDef", extra + base + extra) == {"name": "a", "op": "Const"}
    # GraphDef.debug_info (5) is known but not modelled: skipped
    assert decode("GraphDef", b"\x2a\x02\x0a\x00") == {}


def test_oneof_last_member_wins_and_singular_messages_merge():
    # AttrValue i=5 then s="x": the oneof keeps s only
    assert decode("AttrValue", b"\x18\x05\x12\x01x") == {"s": b"x"}
    # TensorProto.tensor_shape seen twice: merged (dims appended)
    one = b"\x12\x04\x12\x02\x08\x02"
    assert decode("TensorProto", one + one) == {"tensor_shape": {"dim": [{"size": 2}, {"size": 2}]}}
    # a singular scalar seen twice keeps the last value
    assert decode("NodeDef", b"\n\x01a\n\x01b") == {"name": "b"}


def test_empty_packed_run_leaves_the_field_absent():
    assert decode("TensorProto", b"\x4a\x00\x52\x00") == {}
    assert decode("TensorProto", b"\x38\x01\x3a\x00") == {"int_val": [1]}


def test_map_entry_with_a_third_field_is_corrupt():
    with pytest.raises(ProtoError, match=r"field 3 in a map entry at byte 5 in NodeDef\.attr"):
        decode("NodeDef", b"\x2a\x05\x0a\x01T\x18\x01")


def test_map_entry_without_value_or_key_gets_defaults():
    assert decode("NodeDef", b"\x2a\x03\x0a\x01T") == {"attr": {"T": {}}}
    assert decode("FunctionDef", b"\x22\x03\x12\x01r") == {"ret": {"": "r"}}
    assert decode("FunctionDef", b"\x42\x02\x08\x07") == {"resource_arg_unique_id": {7: 0}}


# ---------------------------------------------------------------- round trips

NAN = float("nan")


def full_graph() -> dict:
    """A GraphDef using every field kind the schema has."""
    all_bytes = bytes(range(256))
    tensor = {
        "dtype": "DT_FLOAT",
        "tensor_shape": {"dim": [{"size": 2, "name": "batch"}, {"size": -1}], "unknown_rank": False},
        "version_number": -7,
        "tensor_content": all_bytes,
        "half_val": [0, 15360, -1],
        "float_val": [1.5, NAN, math.inf, -math.inf, -0.0, 3.4028234663852886e38, 1.401298464324817e-45],
        "double_val": [0.1, -1e308, NAN],
        "int_val": [-(2**31), 2**31 - 1, 0],
        "string_val": [all_bytes, b""],
        "scomplex_val": [1.0, -1.0],
        "int64_val": [-(2**63), 2**63 - 1],
        "bool_val": [True, False],
        "dcomplex_val": [2.0, 3.0],
        "resource_handle_val": [{"device": "/cpu:0", "container": "c", "name": "v", "hash_code": 2**64 - 1,
                                 "maybe_type_name": "t",
                                 "dtypes_and_shapes": [{"dtype": "DT_INT32", "shape": {"dim": [{"size": 3}]}}]}],
        "variant_val": [{"type_name": "x", "metadata": b"\x00\xff", "tensors": [{"dtype": "DT_HALF"}]}],
        "uint32_val": [2**32 - 1, 0],
        "uint64_val": [2**64 - 1],
    }
    attrs = {
        "s": {"s": all_bytes}, "i": {"i": -(2**63)}, "f": {"f": NAN}, "b": {"b": False},
        "type": {"type": "DT_BFLOAT16"}, "unknown_type": {"type": 77}, "shape": {"shape": {"unknown_rank": True}},
        "tensor": {"tensor": tensor}, "placeholder": {"placeholder": "T"},
        "list": {"list": {"s": [b"a", b"\x00"], "i": [-1, 2], "f": [0.5, -math.inf], "b": [True],
                          "type": ["DT_RESOURCE", "DT_VARIANT"], "shape": [{"dim": [{"size": 1}]}],
                          "tensor": [{"dtype": "DT_INT32", "int_val": [-5]}],
                          "func": [{"name": "g", "attr": {"x": {"i": 1}}}]}},
        "func": {"func": {"name": "f", "attr": {"T": {"type": "DT_DOUBLE"}, "": {}}}},
        "empty": {},
        "ünïcode \"key\"\n": {"s": "é".encode()},
    }
    node = {"name": "n/é", "op": "Const", "input": ["a", "b:1", "^c"], "device": "/job:w/cpu:0", "attr": attrs,
            "experimental_debug_info": {"original_node_names": ["x"], "original_func_names": ["y", "z"]},
            "experimental_type": {"type_id": "TFT_PRODUCT",
                                  "args": [{"type_id": "TFT_TENSOR", "args": [{"type_id": "TFT_FLOAT"}]},
                                           {"type_id": 4242, "s": "name"}, {"i": -3}]}}
    signature = {"name": "f", "input_arg": [{"name": "x", "type": "DT_RESOURCE", "handle_data": [
        {"dtype": "DT_FLOAT", "shape": {}}]}, {"name": "y", "type_attr": "T", "number_attr": "N",
                                                 "type_list_attr": "L", "description": "d", "is_ref": True,
                                                 "experimental_full_type": {"type_id": "TFT_ANY"}}],
                 "output_arg": [{"name": "out", "type": "DT_FLOAT"}], "control_output": ["w"],
                 "attr": [{"name": "T", "type": "type", "default_value": {"type": "DT_FLOAT"}, "description": "",
                           "has_minimum": True, "minimum": -1, "allowed_values": {"list": {"type": ["DT_FLOAT"]}}}],
                 "deprecation": {"version": 9, "explanation": "old"}, "summary": "s", "description": "d",
                 "is_commutative": True, "is_aggregate": False, "is_stateful": True,
                 "allows_uninitialized_input": True, "is_distributed_communication": False}
    function = {"signature": signature, "attr": {"_noinline": {"b": True}},
                "arg_attr": {0: {"attr": {"_output_shapes": {"list": {"shape": [{}]}}}}, 7: {}},
                "resource_arg_unique_id": {0: 0, 3: 2**32 - 1},
                "node_def": [{"name": "w", "op": "AssignVariableOp", "input": ["x", "y"]},
                             {"name": "r", "op": "ReadVariableOp", "input": ["x", "^w"]}],
                "ret": {"out": "r:value:0", "": ""}, "control_ret": {"w": "w"}}
    return {"node": [node, {"name": "empty"}, {}], "versions": {"producer": 1882, "min_consumer": 12,
                                                                "bad_consumers": [-1, 3]},
            "version": -2,
            "library": {"function": [function, {"signature": {"name": "g"}}],
                        "gradient": [{"function_name": "f", "gradient_func": "g"}],
                        "registered_gradients": [{"gradient_func": "g", "registered_op_type": "Op"}]}}


def test_binary_round_trip_of_every_field_kind():
    g = full_graph()
    data = encode("GraphDef", g)
    back = decode("GraphDef", data)
    assert same(back, g)
    # protobuf's maps do not keep the wire order of their entries; the
    # hand-written decoder does, and gives the same bytes back
    assert same(decode("GraphDef", encode("GraphDef", back)), g)
    assert len(encode("GraphDef", back)) == len(data)
    assert encode("GraphDef", wire.decode("GraphDef", data)) == data


def test_text_round_trip_of_every_field_kind():
    g = full_graph()
    text = format_text("GraphDef", g)
    assert same(parse_text("GraphDef", text), g)
    assert format_text("GraphDef", parse_text("GraphDef", text)) == text
    assert 'tensor_content: "\\000\\001\\002' in text
    assert "float_val: nan\n" in text and "float_val: -inf\n" in text and "float_val: -0.0\n" in text
    assert "type: 77\n" in text  # an unknown enum number prints as a number


def test_text_and_binary_agree():
    g = full_graph()
    assert same(decode("GraphDef", encode("GraphDef", parse_text("GraphDef", format_text("GraphDef", g)))), g)


def test_metagraph_and_savedmodel_round_trip():
    sig = {"inputs": {"x": {"name": "serving_default_x:0", "dtype": "DT_FLOAT",
                            "tensor_shape": {"dim": [{"size": -1}, {"size": 3}]}}},
           "outputs": {"y": {"coo_sparse": {"values_tensor_name": "v", "indices_tensor_name": "i",
                                            "dense_shape_tensor_name": "s"}, "dtype": "DT_INT64"},
                       "z": {"composite_tensor": {"components": [{"name": "c:0"}]}}},
           "method_name": "tensorflow/serving/predict",
           "defaults": {"x": {"dtype": "DT_FLOAT", "float_val": [0.0]}}}
    meta = {"meta_info_def": {"meta_graph_version": "v", "stripped_op_list": {"op": [{"name": "Const"}]},
                              "any_info": {"type_url": "u", "value": b"\x01"}, "tags": ["serve"],
                              "tensorflow_version": "2.21.0", "tensorflow_git_version": "g",
                              "stripped_default_attrs": True, "function_aliases": {"a": "b"}},
            "graph_def": full_graph(),
            "saver_def": {"filename_tensor_name": "f", "save_tensor_name": "s", "restore_op_name": "r",
                          "max_to_keep": 5, "sharded": True, "keep_checkpoint_every_n_hours": 10000.0,
                          "version": "V2"},
            "collection_def": {"n": {"node_list": {"value": ["a"]}}, "b": {"bytes_list": {"value": [b"\xff"]}},
                               "i": {"int64_list": {"value": [-1]}}, "f": {"float_list": {"value": [0.25]}},
                               "a": {"any_list": {"value": [{"type_url": "t"}]}}},
            "signature_def": {"serving_default": sig, "__saved_model_init_op": {"outputs": {
                "__saved_model_init_op": {"name": "NoOp"}}}},
            "asset_file_def": [{"tensor_info": {"name": "a:0"}, "filename": "vocab.txt"}]}
    model = {"saved_model_schema_version": 1, "meta_graphs": [meta, {}]}
    assert same(decode("SavedModel", encode("SavedModel", model)), model)
    assert same(parse_text("SavedModel", format_text("SavedModel", model)), model)
    assert same(decode("MetaGraphDef", encode("MetaGraphDef", meta)), meta)
    assert decode("SignatureDef", encode("SignatureDef", sig)) == sig


def _scalar(kind: str, field: schema.Field):
    if kind in wire._RANGES and kind != "enum":
        lo, hi = wire._RANGES[kind]
        return st.integers(lo, hi)
    if kind == "enum":
        known = schema.ENUMS[field.type_name]
        return st.one_of(st.sampled_from(sorted(known.values())),
                         st.integers(-(2**31), 2**31 - 1).filter(lambda n: n not in known))
    if kind == "bool":
        return st.booleans()
    if kind == "float":
        return st.floats(width=32)
    if kind == "double":
        return st.floats()
    if kind == "string":
        return st.text(max_size=8)
    if kind == "bytes":
        return st.binary(max_size=8)
    raise AssertionError(kind)


@st.composite
def messages(draw, name: str, depth: int = 0):
    msg = MESSAGES[name]
    out = {}
    oneof_taken = set()
    for field in msg.fields:
        if field.kind == "skip" or not draw(st.booleans()):
            continue
        if field.oneof:
            if field.oneof in oneof_taken:
                continue
            oneof_taken.add(field.oneof)
        if field.kind == "message" or (field.kind == "map" and field.value_kind == "message"):
            if depth >= 3:
                continue
            value = messages(field.type_name, depth + 1)
        elif field.kind == "map":
            value = _scalar(field.value_kind, field.entry.by_name["value"])
        else:
            value = _scalar(field.kind, field)
        if field.kind == "map":
            keys = _scalar(field.key_kind, field.entry.by_name["key"])
            out[field.name] = draw(st.dictionaries(keys, value, min_size=1, max_size=2))
        elif field.repeated:
            out[field.name] = draw(st.lists(value, min_size=1, max_size=3))
        else:
            out[field.name] = draw(value)
    return out


@settings(max_examples=max(50, settings.default.max_examples // 2),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(sorted(MESSAGES)).flatmap(lambda name: st.tuples(st.just(name), messages(name))))
def test_generated_messages_round_trip_both_formats(case):
    name, value = case
    data = encode(name, value)
    assert same(decode(name, data), value)
    text = format_text(name, value)
    assert same(parse_text(name, text), value)


# ---------------------------------------------------------------- text format details

def test_text_syntax_variants():
    text = r'''
    # a comment
    node: {  name: 'a' "b"  # adjacent literals concatenate
      op: "C\x41\101\n\t\\\"\'"
      input: ["x", "y"]; input: "z",
      attr < key: "v" value: { tensor { dtype: 1 float_val: [1f, -inf, INF, nan, -Infinity, 2.5e1, .5, 1e40]
                                      double_val: -0 int_val: [0x10, 010, -7] bool_val: [true, False, t, 0] } } >
      attr { value { type: DT_RESOURCE } key: "t" }
      attr { key: "u" value { list { type: [DT_FLOAT, 20] } } }
    }
    versions { producer: 1882 }
    '''
    g = parse_text("GraphDef", text)
    node = g["node"][0]
    assert node["name"] == "ab"
    assert node["op"] == "CAA\n\t\\\"'"
    assert node["input"] == ["x", "y", "z"]
    tensor = node["attr"]["v"]["tensor"]
    assert tensor["dtype"] == "DT_FLOAT"  # enum given by number
    assert same(tensor["float_val"], [1.0, -math.inf, math.inf, NAN, -math.inf, 25.0, 0.5, math.inf])
    assert same(tensor["double_val"], [-0.0])
    assert tensor["int_val"] == [16, 8, -7]
    assert tensor["bool_val"] == [True, False, True, False]
    assert node["attr"]["t"] == {"type": "DT_RESOURCE"}
    assert node["attr"]["u"] == {"list": {"type": ["DT_FLOAT", "DT_RESOURCE"]}}
    assert g["versions"] == {"producer": 1882}


def test_text_float_fields_hold_float32():
    t = parse_text("TensorProto", "float_val: 0.1 double_val: 0.1")
    assert t["float_val"] == [struct.unpack("<f", struct.pack("<f", 0.1))[0]]
    assert t["double_val"] == [0.1]
    assert format_text("TensorProto", t) == "float_val: 0.1\ndouble_val: 0.1\n"


def test_text_skips_fields_tfsem_does_not_model():
    text = 'node { name: "a" }\ndebug_info { files: "x.py" traces { key: "a" value { frame_id: [1, 2] } } }\n'
    assert parse_text("GraphDef", text) == {"node": [{"name": "a"}]}
    # an object's children are skipped (only a variable object's name is read)
    assert parse_text("MetaGraphDef", "object_graph_def { nodes { children { node_id: 1 } } }") \
        == {"object_graph_def": {"nodes": [{}]}}


@pytest.mark.parametrize("text, expected", [
    ('node { name: "a" }\nnodez { }', r"unknown field 'nodez' in GraphDef .* at line 2:1"),
    ('node { name: "a" name: "b" }', r"'name' of GraphDef\.node\[0\] given twice .* at line 1:18"),
    ('node { attr { key: "T" value { type: DT_FOO } } }',
     r'unknown DataType value .DT_FOO. for GraphDef\.node\[0\]\.attr\["T"\]\.type at line 1:38'),
    ('node { attr { key: "T" value { i: 1 s: "x" } } }', r"'i' of the same oneof 'value' is already set at line 1:37"),
    ("versions { producer: 2147483648 }", r"out of range for int32 .* at line 1:22"),
    ("versions { producer: " + "9" * 5000 + " }", r"999\.\.\. is out of range for int32 .* at line 1:22"),
    ("versions { producer: 1.5 }", r"expected an integer .*versions\.producer.* at line 1:22"),
    ('node { name: "a"', r"expected '}' to close GraphDef\.node\[0\], found end of input at line 1:17"),
    ('node { name: "a\n" }', r"unterminated string at line 1:14"),
    ('node { name: "\\q" }', r"unknown escape \\q in GraphDef\.node\[0\]\.name at line 1:14"),
    ('node { name: "\\377" }', r"GraphDef\.node\[0\]\.name is not valid UTF-8 at line 1:14"),
    ('node { name "a" }', r"expected ':' after scalar field GraphDef\.node\[0\]\.name.* at line 1:13"),
    ("version: [1]", r"GraphDef\.version is not repeated.* at line 1:10"),
    ('{"format": "tfsem.program/1"}', r"expected a field name in GraphDef, found '\{' at line 1:1"),
    ("node { @ }", r"unexpected character '@' at line 1:8"),
])
def test_text_errors_name_field_and_position(text, expected):
    with pytest.raises(ProtoError, match=expected):
        parse_text("GraphDef", text)


def test_text_deep_nesting_is_refused():
    text = "args { " * (MAX_DEPTH + 5) + "}" * (MAX_DEPTH + 5)
    with pytest.raises(ProtoError, match=r"nested too deep .* at line 1:\d+"):
        parse_text("FullTypeDef", text)
    ok = "args { " * (MAX_DEPTH - 1) + "}" * (MAX_DEPTH - 1)
    assert parse_text("FullTypeDef", ok)["args"]


# ---------------------------------------------------------------- hostile binary input

def _decodes_or_proto_error(name: str, data: bytes):
    try:
        return decode(name, data)
    except ProtoError as e:
        assert WHERE_BINARY.search(str(e)), str(e)
        return e


def test_every_truncation_decodes_or_names_the_offset():
    errors = 0
    for n in range(len(SMALL_PB)):
        if isinstance(_decodes_or_proto_error("GraphDef", SMALL_PB[:n]), ProtoError):
            errors += 1
    assert errors > len(SMALL_PB) // 2  # most cuts land inside a field, and are caught


def test_truncation_error_names_field_path():
    cut = SMALL_PB[:SMALL_PB.index(b"counter") + 3]  # inside node[0].name
    with pytest.raises(ProtoError, match=r"length 9 at byte 3 runs past the end of GraphDef\.node\[0\] \(7 bytes left\) in GraphDef\.node\[0\]\.name"):
        decode("GraphDef", b"\x0a\x09\x0a\x09counter")
    with pytest.raises(ProtoError, match=r"at byte \d+"):
        decode("GraphDef", cut)


def test_random_byte_flips_decode_or_raise_proto_error():
    rng = random.Random(20261123)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(2000):
        data = bytearray(SMALL_PB)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        result = _decodes_or_proto_error("GraphDef", bytes(data))
        outcomes["error" if isinstance(result, ProtoError) else "ok"] += 1
    assert outcomes["ok"] and outcomes["error"]


def test_random_text_mutations_parse_or_raise_proto_error():
    rng = random.Random(7)
    alphabet = '{}<>[]:;,"\'\\#-.0123456789abcdefxyz_ \n'
    errors = 0
    for _ in range(300):
        text = list(SMALL_PBTXT)
        for _ in range(rng.randint(1, 3)):
            text[rng.randrange(len(text))] = rng.choice(alphabet)
        try:
            parse_text("GraphDef", "".join(text))
        except ProtoError as e:
            assert WHERE_TEXT.search(str(e)), str(e)
            errors += 1
    assert errors


def test_deep_binary_nesting_is_refused():
    data = b""
    for _ in range(MAX_DEPTH + 10):  # FullTypeDef.args (2) inside FullTypeDef.args ...
        data = b"\x12" + _varint(len(data)) + data
    with pytest.raises(ProtoError, match=r"nested too deep .* at byte \d+ in FullTypeDef\.args\[0\]\.args\[0\]"):
        decode("FullTypeDef", data)


def _varint(n: int) -> bytes:
    out = bytearray()
    wire._put_varint(out, n)
    return bytes(out)


@pytest.mark.parametrize("data, expected", [
    (b"\x0a\xff\xff\xff\xff\x0f", r"length 4294967295 at byte 1 runs past the end of GraphDef \(0 bytes left\) "
                                  r"in GraphDef\.node"),
    (b"\x0a\x02\x0a\xff", r"at byte 3 in GraphDef\.node\[0\]\.name"),
    (b"\x0a\x05\x0a\x03\xff\xfe\x00", r"invalid UTF-8 at byte 4 in string field GraphDef\.node\[0\]\.name"),
    (b"\x0e", r"invalid wire type 6 \(field 1\) at byte 0 in GraphDef"),
    (b"\x0b", r"start-group wire type .* at byte 0 in GraphDef"),
    (b"\x0d\x00\x00\x00\x00", r"field 1 of GraphDef \(node\) has wire type 5 at byte 0, expected 2 "
                              r"\(length-delimited\) in GraphDef: not a GraphDef\?"),
    (b"\x08\x01", r"field 1 of GraphDef \(node\) has wire type 0 at byte 0"),
    (b"\x0a\x80", r"truncated varint at byte 1 in GraphDef\.node"),
    (b"\x18" + b"\x80" * 11, r"more than 10 bytes\) at byte 1 in GraphDef\.version"),
    (b"\x00", r"invalid field number 0 at byte 0"),
    (b"\x80\x80\x80\x80\x10", r"invalid field number 536870912 at byte 0 in GraphDef"),
    (b"\x9d\x06\x00", r"truncated 32-bit value at byte 2 in GraphDef \(unknown field 99\)"),
    (b"\x12\x05\x0a\x03\x15\x00\x00", r"truncated 32-bit value at byte 5 in GraphDef\.library\.function\[0\] \(unknown field 2\)"),
])
def test_binary_errors_name_field_and_offset(data, expected):
    with pytest.raises(ProtoError, match=expected):
        decode("GraphDef", data)


def test_packed_fixed_run_with_a_ragged_length_is_refused():
    with pytest.raises(ProtoError, match=r"packed float run of 5 bytes at byte 1 .* TensorProto\.float_val"):
        decode("TensorProto", b"\x2a\x05\x00\x00\x80\x3f\x00")


def test_map_value_errors_name_the_key():
    bad = b"\x2a\x09\x0a\x01T\x12\x04\x30\x01\x0e\x00"  # attr["T"] holds a wire type 6
    with pytest.raises(ProtoError, match=r'in NodeDef\.attr\["T"\]'):
        decode("NodeDef", bad)


def test_wrong_message_and_foreign_files():
    node = encode("NodeDef", {"name": "a", "op": "Const"})
    with pytest.raises(ProtoError, match=r"field 1 of SavedModel .* not a SavedModel\?"):
        decode("SavedModel", node)
    png = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
           b"\x1f\x15\xc4\x89\x00\x00\x00\nIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\r\n-\xb4\x00\x00\x00\x00IEND"
           b"\xaeB`\x82")
    for name in ("GraphDef", "SavedModel", "MetaGraphDef", "NodeDef"):
        _decodes_or_proto_error(name, png)
        for n in range(0, len(png), 7):
            _decodes_or_proto_error(name, png[n:])
    json_text = '{\n  "format": "tfsem.program/1",\n  "variables": ["x"]\n}\n'
    with pytest.raises(ProtoError, match=r"at line 1:1"):
        parse_text("GraphDef", json_text)
    with pytest.raises(ProtoError, match=r"not UTF-8"):
        parse_text("GraphDef", png)
    with pytest.raises(ProtoError, match=r"expected bytes"):
        decode("GraphDef", "node {}")


def test_size_limit(monkeypatch):
    monkeypatch.setattr(wire, "MAX_SIZE", 10)
    monkeypatch.setattr(runtime, "MAX_SIZE", 10)
    with pytest.raises(ProtoError, match=r"more than protobuf's 2 GiB limit"):
        decode("GraphDef", b"\x0a\x00" * 6)


def test_unknown_message_name():
    with pytest.raises(ProtoError, match=r"unknown message type 'GraphDefs'"):
        decode("GraphDefs", b"")
    assert decode("tensorflow.GraphDef", b"") == {}


# ---------------------------------------------------------------- encoding bad dicts

@pytest.mark.parametrize("name, value, expected", [
    ("NodeDef", {"nam": "a"}, r"unknown field 'nam' in NodeDef"),
    ("NodeDef", {"name": b"a"}, r"NodeDef\.name: expected a str"),
    ("NodeDef", {"input": "a"}, r"NodeDef\.input: expected a list"),
    ("NodeDef", {"attr": {"T": {"type": "DT_FOO"}}}, r'NodeDef\.attr\["T"\]\.type: unknown DataType value'),
    ("NodeDef", {"attr": {"T": {"i": 1, "s": b""}}}, r'NodeDef\.attr\["T"\]: fields s, i are members of oneof'),
    ("VersionDef", {"producer": 2**31}, r"VersionDef\.producer: 2147483648 is out of range for int32"),
    ("VersionDef", {"bad_consumers": [1, True]}, r"VersionDef\.bad_consumers\[1\]: expected an integer"),
    ("TensorProto", {"uint64_val": [-1]}, r"TensorProto\.uint64_val\[0\]: -1 is out of range for uint64"),
    ("TensorProto", {"float_val": [1e300]}, r"TensorProto\.float_val\[0\]: .* out of range for a 32-bit float"),
    ("TensorProto", {"bool_val": [1]}, r"TensorProto\.bool_val\[0\]: expected a bool"),
    ("GraphDef", {"debug_info": {}}, r"'debug_info' in GraphDef is not modelled"),
    ("GraphDef", {"node": [[]]}, r"GraphDef\.node\[0\]: expected a dict"),
    ("FunctionDef", {"ret": {"a": 1}}, r'FunctionDef\.ret\["a"\]: expected a str'),
])
def test_encoding_bad_dicts_names_the_field(name, value, expected):
    with pytest.raises(ProtoError, match=expected):
        encode(name, value)
    with pytest.raises(ProtoError, match=expected):
        format_text(name, value)


# ---------------------------------------------------------------- schema sanity

def test_schema_numbers_are_tensorflows():
    """Spot checks of numbers that are easy to get wrong (copied from TensorFlow's .proto files)."""
    def number(message, field):
        return MESSAGES[message].by_name[field].number
    assert [number("GraphDef", f) for f in ("node", "library", "version", "versions")] == [1, 2, 3, 4]
    assert number("AttrValue", "list") == 1 and number("AttrValue", "placeholder") == 9
    assert number("AttrValue", "func") == 10 and number("AttrValue.ListValue", "func") == 9
    assert number("TensorProto", "half_val") == 13 and number("TensorProto", "string_val") == 8
    assert number("TensorProto", "uint64_val") == 17 and number("TensorProto", "float8_val") == 18
    assert number("FunctionDef", "node_def") == 3 and number("FunctionDef", "ret") == 4
    assert number("FunctionDef", "control_ret") == 6 and number("FunctionDef", "arg_attr") == 7
    assert number("OpDef", "control_output") == 20 and number("OpDef", "is_distributed_communication") == 21
    assert number("TensorInfo", "coo_sparse") == 4 and number("TensorInfo", "composite_tensor") == 5
    assert number("MetaGraphDef", "signature_def") == 5 and number("SavedModel", "meta_graphs") == 2
    assert len(schema.ENUMS["DataType"]) == 34 + 33


def test_encoding_accepts_numpy_scalars():
    np = pytest.importorskip("numpy")
    value = {"dtype": "DT_FLOAT", "float_val": [np.float32(1.5)], "int64_val": [np.int64(-3)],
             "tensor_shape": {"dim": [{"size": np.int32(4)}]}}
    plain = {"dtype": "DT_FLOAT", "float_val": [1.5], "int64_val": [-3], "tensor_shape": {"dim": [{"size": 4}]}}
    assert encode("TensorProto", value) == encode("TensorProto", plain)
    assert format_text("TensorProto", value) == format_text("TensorProto", plain)
    with pytest.raises(ProtoError, match=r"TensorProto\.int64_val\[0\]: expected an integer"):
        encode("TensorProto", {"int64_val": [np.float64(1.0)]})


def test_schema_matches_the_installed_tensorflow():
    """Every number, type and enum value against TensorFlow's own descriptors (where it is installed)."""
    pytest.importorskip("tensorflow")
    assert schema.differences_from_tensorflow() == []


def _from_tensorflow(message) -> dict:
    """A TensorFlow protobuf message in graphdef.proto's dict form (skipped fields left out)."""
    skipped = {f.name for m in MESSAGES.values() for f in m.fields if f.kind == "skip"}

    def scalar(field, value):
        if field.enum_type is not None:
            known = field.enum_type.values_by_number.get(value)
            return known.name if known else value
        return value

    out = {}
    for field, value in message.ListFields():
        if field.name in skipped:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            vfield = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _from_tensorflow(v) if vfield.message_type else scalar(vfield, v)
                               for k, v in value.items()}
        elif field.message_type is not None:
            out[field.name] = ([_from_tensorflow(v) for v in value] if _repeated(field)
                               else _from_tensorflow(value))
        else:
            out[field.name] = [scalar(field, v) for v in value] if _repeated(field) else scalar(field, value)
    return out


def _repeated(field) -> bool:
    return field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED


def test_agrees_with_tensorflow_on_a_function_graph():
    """Where TensorFlow is installed: its bytes decode, and its text prints, as TensorFlow says."""
    tf = pytest.importorskip("tensorflow")
    from google.protobuf import text_format

    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        v.assign_add(x * 0.5)
        return tf.reduce_sum(v.read_value()) + tf.constant(float("nan"))

    graph = step.get_concrete_function(tf.TensorSpec([2], tf.float32)).graph.as_graph_def()
    data = graph.SerializeToString()
    mine = decode("GraphDef", data)
    assert same(mine, _from_tensorflow(graph))
    assert format_text("GraphDef", mine) == text_format.MessageToString(graph)
    assert type(graph).FromString(encode("GraphDef", mine)) == graph
    back = type(graph)()
    text_format.Parse(format_text("GraphDef", mine), back)
    assert back == graph


CORPUS = sorted((Path(__file__).resolve().parents[1] / "examples" / "tensorflow").glob("*.pbtxt"))


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_graphs_print_back_byte_for_byte(path):
    """The corpus was written by tf.io.write_graph: reading and printing it gives the file back."""
    text = path.read_text()
    graph = parse_text("GraphDef", text)
    assert graph.get("node")
    assert format_text("GraphDef", graph) == text
    assert decode("GraphDef", encode("GraphDef", graph)) == graph


# ---------------------------------------------------------------- the protobuf runtime (runtime.py)

def _either(fn, name, data):
    try:
        return fn(name, data)
    except ProtoError as e:
        return ("error", str(e))


def test_runtime_and_hand_written_decoder_agree_on_mutated_bytes():
    """protobuf's parser (with tfsem's descriptors) and the hand-written
    decoder give the same dict, or both refuse, with the same message when
    the bytes are malformed."""
    rng = random.Random(20261127)
    seeds = [SMALL_PB, encode("GraphDef", full_graph())]
    kinds = {"same": 0, "error": 0}
    for _ in range(1500):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.2:
                del data[rng.randrange(len(data)):]
                if not data:
                    break
            else:
                data[rng.randrange(len(data))] = rng.randrange(256)
        a = _either(runtime.decode, "GraphDef", bytes(data))
        b = _either(wire.decode, "GraphDef", bytes(data))
        if isinstance(b, tuple):
            assert a == b  # the runtime defers to the hand-written decoder's message
            kinds["error"] += 1
        else:
            assert not isinstance(a, tuple), a
            assert same(a, b)
            kinds["same"] += 1
    assert kinds["same"] > 50 and kinds["error"] > 50, kinds


def test_runtime_refuses_a_known_field_of_the_wrong_wire_type_deep_inside():
    # protobuf's parser keeps attr["T"].type written as length-delimited as an
    # unknown field and goes on; tfsem names it
    entry = b"\x0a\x01T" + b"\x12\x03" + b"\x32\x01\x01"
    data = b"\x0a" + bytes([len(entry) + 2]) + b"\x2a" + bytes([len(entry)]) + entry
    with pytest.raises(ProtoError, match=r"field 6 of AttrValue \(type\) has wire type 2 at byte \d+, "
                                         r"expected 0 .* in GraphDef\.node\[0\]\.attr\[\"T\"\]"):
        runtime.parse("GraphDef", data)


def test_runtime_accepts_unknown_fields_and_non_canonical_encodings():
    node = encode("NodeDef", {"name": "a", "op": "Const"})
    # an unknown field 99 (varint) and the name given twice (the last wins)
    data = b"\x98\x06\x07" + b"\x0a\x01z" + node
    m = runtime.parse("NodeDef", data)
    assert (m.name, m.op) == ("a", "Const")
    assert runtime.to_dict(m) == wire.decode("NodeDef", data)


def test_runtime_descriptors_are_tfsems_own_and_need_no_tensorflow(tmp_path):
    cls = runtime.message_class("tensorflow.GraphDef")
    assert cls.DESCRIPTOR.file.name == "tfsem/graphdef/tensorflow.proto"
    script = ("import sys; from tfsem.graphdef.proto import parse; "
              f"g = parse('GraphDef', {SMALL_PB!r}); assert g.node[0].name == 'counter'; "
              "assert not [m for m in sys.modules if m.split('.')[0] == 'tensorflow'], 'tensorflow'")
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_runtime_descriptors_match_the_installed_tensorflow():
    """Every field of the descriptors built for protobuf's runtime against
    TensorFlow's own (number, type, label, referenced type)."""
    pytest.importorskip("tensorflow")
    from tensorflow.core.framework import graph_pb2  # noqa: F401
    from tensorflow.core.protobuf import saved_model_pb2  # noqa: F401
    tf_pool = graph_pb2.GraphDef.DESCRIPTOR.file.pool
    checked = 0
    for name, cls in runtime.CLASSES.items():
        mine = cls.DESCRIPTOR
        theirs = tf_pool.FindMessageTypeByName(mine.full_name)
        for f in mine.fields:
            if MESSAGES[name].by_name[f.name].kind == "skip":
                continue
            t = theirs.fields_by_name[f.name]
            ref = lambda d: (d.message_type or d.enum_type).full_name if (d.message_type or d.enum_type) else None
            assert (f.number, f.type, _repeated(f), ref(f)) == (t.number, t.type, _repeated(t), ref(t)), \
                f"{name}.{f.name}"
            checked += 1
    assert checked > 150


def test_lazy_attrs_read_like_the_dict_form():
    m = runtime.parse("GraphDef", SMALL_PB)
    whole = runtime.to_dict(m)
    for nd, d in zip(m.node, whole["node"]):
        lazy = runtime.LazyAttrs(nd)
        assert dict(lazy) == d.get("attr", {})
        assert "no such attr" not in lazy and 3 not in lazy
        assert lazy.get("no such attr") is None
        with pytest.raises(KeyError):
            lazy[3]


def test_large_input_keeps_protobufs_speed_and_semantics(monkeypatch):
    """Above runtime.STRICT_BYTES the hand-written decoder is not run again:
    a mistyped field is skipped as protobuf skips it, and a refusal is
    protobuf's, with the size named."""
    mistyped = b"\x0a\x03\x0a\x01a" + b"\x1d\x00\x00\x00\x00"  # version (3) as a 32-bit value
    with pytest.raises(ProtoError, match=r"field 3 of GraphDef \(version\) has wire type 5"):
        runtime.parse("GraphDef", mistyped)
    truncated = b"\x0a\x05\x0a"
    with pytest.raises(ProtoError, match=r"length 5 at byte 1 runs past the end"):
        runtime.parse("GraphDef", truncated)
    monkeypatch.setattr(runtime, "STRICT_BYTES", 2)
    assert [n.name for n in runtime.parse("GraphDef", mistyped).node] == ["a"]
    with pytest.raises(ProtoError, match=r"protobuf's parser refuses these 3 bytes .* over 0 MiB the "
                                         r"field and byte offset are not located"):
        runtime.parse("GraphDef", truncated)
