"""A float attribute that is a signalling NaN, kept bit for bit from a
binary GraphDef to the program and back (graphdef/proto: runtime.py's
to_dict and attr_dict, wire.py's reader and writer; oracle/float_attrs.py's
exact widening and narrowing), and named by its own bits where the kernels'
child refuses it (oracle/kernel_worker.py `_convert`).

A CPU's conversion between float32 and float64 (struct's '<f', numpy's
astype, protobuf's Python values) sets a signalling NaN's quiet bit, so
before this two graphs differing only there were one program."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import decode, encode, parse, parse_text
from tfsem.graphdef.proto import wire
from tfsem.graphdef.proto.runtime import LazyAttrs, attr_dict
from tfsem.oracle.float_attrs import float32_value, float32_word
from tfsem.oracle.kernel_worker import _convert, _Refuse

SNAN = 0x7F800001
SNAN_NEG_PAYLOAD = 0xFFA5A5A5   # signalling (bit 22 clear), negative, a long payload


def bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def by_hand(w32: int) -> int:
    """float32 bits -> float64 bits of the same value, for a NaN."""
    return (w32 >> 31) << 63 | 0x7FF << 52 | (w32 & 0x7FFFFF) << 29


@given(st.integers(0, 0xFFFFFFFF))
def test_float32_value_and_word_are_inverse_on_every_float32(w):
    x = float32_value(w)
    assert float32_word(x) == w
    if w & 0x7F800000 == 0x7F800000 and w & 0x7FFFFF:
        assert bits64(x) == by_hand(w)
    else:   # any other float32: the CPU's widening, which is exact there
        assert bits64(x) == bits64(struct.unpack("<f", struct.pack("<I", w))[0])


def test_a_nan_whose_payload_is_below_float32s_is_narrowed_to_the_quiet_nan():
    # (float32 cannot hold it: the CPU gives the quiet NaN of its sign)
    x = struct.unpack("<d", struct.pack("<Q", 0xFFF0000000000001))[0]
    assert float32_word(x) == 0xFFC00000 == struct.unpack("<I", struct.pack("<f", x))[0]


def _leaky(values: list[float] | float) -> dict:
    key = "f"
    attr = {"list": {"f": values}} if isinstance(values, list) else {key: values}
    return {"node": [
        {"name": "x", "op": "Const", "attr": {
            "dtype": {"type": "DT_FLOAT"},
            "value": {"tensor": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": 2}]},
                                 "float_val": [-1.0, 2.0]}}}},
        {"name": "l", "op": "LeakyRelu", "input": ["x"],
         "attr": {"T": {"type": "DT_FLOAT"}, "alpha": attr}}]}


@pytest.mark.parametrize("word", [SNAN, SNAN_NEG_PAYLOAD])
def test_the_writer_keeps_the_bits_and_both_readers_read_them(word):
    data = encode("GraphDef", _leaky(float32_value(word)))
    assert struct.pack("<I", word) in data
    assert struct.pack("<I", word | 0x400000) not in data
    # protobuf's reader (to_dict), its attribute path (attr_dict, LazyAttrs)
    # and tfsem's own wire reader (the strict second reading)
    msg = parse("GraphDef", data)
    a = msg.node[1].attr["alpha"]
    for got in (decode("GraphDef", data)["node"][1]["attr"]["alpha"]["f"],
                attr_dict(a)["f"], LazyAttrs(msg.node[1]).scalar("alpha")[1],
                LazyAttrs(msg.node[1])["alpha"]["f"],
                wire.decode("GraphDef", data)["node"][1]["attr"]["alpha"]["f"]):
        assert bits64(got) == by_hand(word)


def test_a_list_of_floats_keeps_each_nans_bits():
    words = [SNAN, 0x3F800000, SNAN_NEG_PAYLOAD, 0x7FC00000]
    data = encode("GraphDef", _leaky([float32_value(w) for w in words]))
    msg = parse("GraphDef", data)
    for got in (decode("GraphDef", data)["node"][1]["attr"]["alpha"]["list"]["f"],
                attr_dict(msg.node[1].attr["alpha"])["list"]["f"],
                wire.decode("GraphDef", data)["node"][1]["attr"]["alpha"]["list"]["f"]):
        assert [float32_word(x) for x in got] == words


def test_two_graphs_differing_only_in_the_signalling_bit_are_two_programs():
    def program(word):
        return import_graph(parse("GraphDef", encode("GraphDef", _leaky(float32_value(word)))),
                            ["l"]).program
    p, q = program(SNAN), program(SNAN | 0x400000)
    assert p != q
    assert float32_word(p.node["l"].attrs["tf_attrs"]["alpha"]) == SNAN
    assert program(SNAN) == p


def test_a_text_graphs_nan_is_quiet_as_before():
    # (text cannot write a NaN's payload: `nan` is the quiet NaN)
    g = parse_text("GraphDef", 'node { name: "n" op: "NoOp" attr { key: "a" value { f: nan } } }')
    assert bits64(g["node"][0]["attr"]["a"]["f"]) == 0x7FF8000000000000


def test_the_kernels_child_names_a_signalling_nan_by_its_own_bits():
    with pytest.raises(_Refuse, match="0x7f800001.*signalling.*0x7fc00001"):
        _convert(None, "float", float32_value(SNAN), "alpha")
    with pytest.raises(_Refuse, match="0xffa5a5a5"):
        _convert(None, "list(float)", [1.0, float32_value(SNAN_NEG_PAYLOAD)], "v")
    # the quiet NaNs without a payload still pass, bit for bit
    assert bits64(_convert(None, "float", float32_value(0xFFC00000), "alpha")) == \
        0xFFF8000000000000
