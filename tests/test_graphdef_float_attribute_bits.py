"""A float attribute of a TensorFlow op keeps its bits from the GraphDef
through graph import, the program format, export back to a GraphDef and
TensorFlow's kernel: -NaN, NaN payloads, the infinities, -0.0, subnormals.

Import once wrote every non-finite float attribute as text, `str(v)`, which
is "nan" for every NaN: a LeakyRelu with alpha -NaN imported as alpha "nan",
ran on TensorFlow's kernel with +NaN, and two graphs differing only in
alpha's sign imported as one program (`check`: `sound`, "the rewritten
program is the original")."""

from __future__ import annotations

import importlib.util
import json
import struct

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.cli import main
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import decode, encode, format_text, parse_text
from tfsem.oracle import kernels
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import dumps, program_from_json, program_to_json

NIGHTLY = settings.get_current_profile_name() == "nightly"
needs_kernels = [
    pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)"),
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                       reason="TensorFlow's kernels: needs the extra tfsem[tensorflow]")]

#: float32 words of alpha: quiet NaNs of both signs and with payloads, the
#: infinities, -0.0, the least subnormal, a plain number
NAN, NEG_NAN, PAYLOAD, NEG_PAYLOAD = 0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC00123
WORDS = [NAN, NEG_NAN, PAYLOAD, NEG_PAYLOAD, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001,
         0x3E4CCCCD]


def word_of(x: float) -> int:
    """A Python float's float32 bits (as TensorFlow narrows an attribute)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


X = '''node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
    float_val: -1.0 float_val: 2.0 } } } }
'''


def leaky_relu_text(alpha: str) -> str:
    return X + f'''node {{ name: "l" op: "LeakyRelu" input: "x"
  attr {{ key: "T" value {{ type: DT_FLOAT }} }} attr {{ key: "alpha" value {{ f: {alpha} }} }} }}
'''


def leaky_relu_graph(word: int) -> dict:
    """The GraphDef (its dict form, read from its bytes) of
    l = LeakyRelu[alpha](x) with alpha's float32 bits `word`."""
    g = parse_text("GraphDef", leaky_relu_text("0.5"))
    data = encode("GraphDef", g)
    at = data.index(struct.pack("<f", 0.5))
    data = data[:at] + struct.pack("<I", word) + data[at + 4:]
    return decode("GraphDef", data)


def imported(graph: dict) -> P.Program:
    return import_graph(graph, ["l"]).program


def alpha(p: P.Program) -> float:
    return p.node["l"].attrs["tf_attrs"]["alpha"]


def test_a_pbtxt_with_alpha_nan_and_one_with_alpha_minus_nan_are_two_programs():
    p = imported(parse_text("GraphDef", leaky_relu_text("nan")))
    q = imported(parse_text("GraphDef", leaky_relu_text("-nan")))
    assert bits64(alpha(p)) == 0x7FF8000000000000 and bits64(alpha(q)) == 0xFFF8000000000000
    assert p != q
    assert p == imported(parse_text("GraphDef", leaky_relu_text("nan")))


def test_their_check_is_not_sound():
    """Without TensorFlow's kernel LeakyRelu cannot run: `unknown`, where it
    was `sound` (the two were one program)."""
    p = imported(parse_text("GraphDef", leaky_relu_text("nan")))
    q = imported(parse_text("GraphDef", leaky_relu_text("-nan")))
    v = check_rewrite(p, q, timeout=60)
    assert v.verdict != "sound", v.describe()
    assert check_rewrite(p, imported(parse_text("GraphDef", leaky_relu_text("nan"))),
                         timeout=60).verdict == "sound"


@pytest.mark.parametrize("word", WORDS, ids=hex)
def test_a_binary_graphdefs_float_attribute_is_imported_bit_for_bit(word):
    a = alpha(imported(leaky_relu_graph(word)))
    assert isinstance(a, float) and word_of(a) == word


def test_graphs_differing_only_in_a_nans_payload_or_sign_are_different_programs():
    programs = [imported(leaky_relu_graph(w)) for w in (NAN, NEG_NAN, PAYLOAD, NEG_PAYLOAD)]
    assert all(p != q for i, p in enumerate(programs) for q in programs[i + 1:])


@pytest.mark.parametrize("word", WORDS, ids=hex)
def test_the_program_file_keeps_the_bits(word):
    p = imported(leaky_relu_graph(word))
    text = dumps(program_to_json(p))
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not strict JSON"))
    q = program_from_json(json.loads(text))
    assert q == p and word_of(alpha(q)) == word
    assert dumps(program_to_json(q)) == text


def test_the_program_file_writes_a_nan_attribute_as_its_float_object():
    node = next(n for n in program_to_json(imported(leaky_relu_graph(NEG_PAYLOAD)))["nodes"]
                if n["name"] == "l")
    assert node["tf_attrs"]["alpha"] == {"float": "0xffc00123"}


OLD_FILE = {   # as tfsem wrote an imported LeakyRelu with alpha NaN before the float object
    "format": "tfsem.program/1", "variables": [],
    "nodes": [{"name": "x", "op": "Const", "value": {"dtype": "float32", "value": [-1.0, 2.0]}},
              {"name": "l", "op": "tf.LeakyRelu/1/1", "inputs": ["x"],
               "tf_attrs": {"T": "DT_FLOAT", "alpha": "nan", "bounds": [1.0, "inf", "-inf"]}}],
    "outputs": {"l": "l"}}


def test_an_old_program_file_with_nan_text_still_loads():
    p = program_from_json(json.loads(json.dumps(OLD_FILE)))
    assert p.node["l"].attrs["tf_attrs"] == OLD_FILE["nodes"][1]["tf_attrs"]
    assert program_to_json(p)["nodes"][1]["tf_attrs"] == OLD_FILE["nodes"][1]["tf_attrs"]


def test_a_malformed_float_object_in_a_program_file_is_a_clear_error(tmp_path, capsys):
    bad = json.loads(json.dumps(OLD_FILE))
    bad["nodes"][1]["tf_attrs"]["alpha"] = {"float": "NaN"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["outcomes", str(path)]) == 2
    err = capsys.readouterr().err
    assert "node 'l'" in err and "alpha" in err and "'NaN'" in err and "Traceback" not in err


@pytest.mark.parametrize("word", WORDS, ids=hex)
def test_export_writes_the_bits_back(word):
    p = imported(leaky_relu_graph(word))
    graph = export_graph(p)
    node = next(n for n in graph["node"] if n["op"] == "LeakyRelu")
    assert word_of(node["attr"]["alpha"]["f"]) == word
    back = next(n for n in decode("GraphDef", encode("GraphDef", graph))["node"]
                if n["op"] == "LeakyRelu")
    assert word_of(back["attr"]["alpha"]["f"]) == word


@pytest.mark.parametrize("word", [NAN, NEG_NAN], ids=hex)
def test_the_text_export_keeps_a_nans_sign(word):
    """(The text format has no NaN payload; "-nan" is -NaN to protobuf's
    Python parser too, docs/graphdef-format.md.)"""
    graph = export_graph(imported(leaky_relu_graph(word)))
    text = format_text("GraphDef", graph)
    assert ("f: -nan" in text) == bool(word >> 31)
    node = next(n for n in parse_text("GraphDef", text)["node"] if n["op"] == "LeakyRelu")
    assert word_of(node["attr"]["alpha"]["f"]) == word


# ---------------------------------------------------------------- TensorFlow's kernel

def _shown(p: P.Program) -> P.Program:
    """p with its LeakyRelu's bytes as the output (PackScatter)."""
    return P.program([*p.nodes, P.const("i", 0), P.apply("o", "PackScatter", "i", "l")],
                     {"out": "o"}, p.variables, p.feeds)


def _kernel_run(word: int):
    """LeakyRelu(-1, 2) on TensorFlow's kernel with the attributes of the
    imported program read back from its file (as `tfsem check` reads one)."""
    p = program_from_json(json.loads(dumps(program_to_json(imported(leaky_relu_graph(word))))))
    return kernels.evaluate("LeakyRelu", [np.array([-1.0, 2.0], np.float32)],
                            p.node["l"].attrs["tf_attrs"], 1)


@pytest.mark.parametrize("word", [NAN, NEG_NAN, 0x7F800000, 0xFF800000, 0x80000000, 0x3E4CCCCD],
                         ids=hex)
@needs_kernels[0]
@needs_kernels[1]
def test_the_kernel_receives_alphas_exact_bits(word, monkeypatch):
    """-1 * alpha: alpha's NaN of its sign, -inf for inf, +0.0 for -0.0."""
    monkeypatch.setenv(kernels.ENV, "1")
    (out,) = _kernel_run(word)
    expect = np.array([-1.0], np.float32) * np.array([word], np.uint32).view(np.float32)
    assert out.view(np.uint32).tolist() == [*expect.view(np.uint32).tolist(), 0x40000000]


@pytest.mark.parametrize("first,then", [(PAYLOAD, NAN), (NAN, PAYLOAD), (NEG_PAYLOAD, NEG_NAN)],
                         ids=["payload-then-nan", "nan-then-payload", "negative"])
@needs_kernels[0]
@needs_kernels[1]
def test_a_nan_alpha_with_a_payload_is_not_run_on_the_kernel(first, then, monkeypatch):
    """TensorFlow's eager executor would run a kernel it kept for another
    NaN of the sign (kernel_worker._convert): refused, and the NaN without
    a payload after it still gets its own bits."""
    monkeypatch.setenv(kernels.ENV, "1")
    for word in (first, then):
        kernels._cache.clear()
        if word in (PAYLOAD, NEG_PAYLOAD):
            with pytest.raises(kernels.KernelRefused, match="payload"):
                _kernel_run(word)
        else:
            assert _kernel_run(word)[0].view(np.uint32).tolist() == [word, 0x40000000]


@needs_kernels[0]
@needs_kernels[1]
def test_the_kernel_reads_an_old_files_nan_text(monkeypatch):
    monkeypatch.setenv(kernels.ENV, "1")
    p = program_from_json(json.loads(json.dumps(OLD_FILE)))
    (out,) = kernels.evaluate("LeakyRelu", [np.array([-1.0, 2.0], np.float32)],
                              {"T": "DT_FLOAT", "alpha": p.node["l"].attrs["tf_attrs"]["alpha"]}, 1)
    assert out.view(np.uint32).tolist() == [NAN, 0x40000000]


@needs_kernels[0]
@needs_kernels[1]
def test_graphs_differing_only_in_alphas_sign_are_unsound_where_the_bits_are_shown(monkeypatch):
    monkeypatch.setenv(kernels.ENV, "1")
    p, q = imported(leaky_relu_graph(NAN)), imported(leaky_relu_graph(NEG_NAN))
    v = check_rewrite(_shown(p), _shown(q), timeout=120)
    assert v.verdict == "unsound", v.describe()
    assert check_rewrite(p, q, timeout=120).verdict != "sound"


@needs_kernels[0]
@needs_kernels[1]
def test_graphs_differing_only_in_alphas_payload_are_not_sound(monkeypatch):
    """(`unknown`: the kernel is not run with the payload.)"""
    monkeypatch.setenv(kernels.ENV, "1")
    p, q = imported(leaky_relu_graph(NAN)), imported(leaky_relu_graph(PAYLOAD))
    v = check_rewrite(_shown(p), _shown(q), timeout=120)
    assert v.verdict not in ("sound", "unsound"), v.describe()
