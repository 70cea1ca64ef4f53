"""The MLIR reader (graphdef/mlir.py) reads a hex float attribute as the
float's bits, as MLIR means it (and prints NaN and the infinities so:
`alpha = 0xFFC00000 : f32`).  It read the hex as an integer and converted
that: alpha 0xFFC00000 (-NaN) became 4290772992.0, a finite alpha TensorFlow
never ran.  Needs no TensorFlow."""

from __future__ import annotations

import struct

import pytest

from tfsem.cli import main
from tfsem.graphdef.mlir import MlirError, load_mlir


def module(alpha: str) -> str:
    return f'''module {{
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> attributes {{tf.entry_function = {{inputs = "x", outputs = "l"}}}} {{
    %0 = tf_executor.graph {{
      %1:2 = tf_executor.island wraps "tf.LeakyRelu"(%arg0) {{alpha = {alpha}, device = ""}} : (tensor<2xf32>) -> tensor<2xf32>
      tf_executor.fetch %1#0 : tensor<2xf32>
    }}
    return %0 : tensor<2xf32>
  }}
}}
'''


def alpha_of(tmp_path, alpha: str) -> float:
    path = tmp_path / "m.mlir"
    path.write_text(module(alpha))
    p = load_mlir(path)
    (node,) = [n for n in p.nodes if n.op.startswith("tf.LeakyRelu/")]
    return node.attrs["tf_attrs"]["alpha"]


def bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


#: (the literal, the float64 bits of the float it is)
CASES = [
    ("0xFFC00000 : f32", 0xFFF8000000000000),          # -NaN
    ("0x7FC00000 : f32", 0x7FF8000000000000),          # NaN
    ("0x7FC00001 : f32", 0x7FF8000020000000),          # a payload
    ("0x7F800001 : f32", 0x7FF0000020000000),          # signalling: not quieted
    ("0x7F800000 : f32", 0x7FF0000000000000), ("0xFF800000 : f32", 0xFFF0000000000000),
    ("0x80000000 : f32", 0x8000000000000000),          # -0.0
    ("0x00000001 : f32", 0x36A0000000000000),          # the least float32 subnormal
    ("0x3E4CCCCD : f32", bits64(struct.unpack("<f", bytes.fromhex("cdcc4c3e"))[0])),
    ("0xFFF8000000000001 : f64", 0xFFF8000000000001),
    ("0xFFC1 : bf16", 0xFFF8200000000000), ("0x7E01 : f16", 0x7FF8040000000000),
    ("0x3C00 : f16", bits64(1.0)),
    ("2.000000e-01 : f32", bits64(struct.unpack("<f", struct.pack("<f", 0.2))[0])),  # float32's 0.2
    ("2 : f32", bits64(2.0)), ("2.000000e-01 : f64", bits64(0.2)),
    # (the float32 nearest the decimal, not the float32 nearest its float64:
    # 1 + 2^-24 + 2^-60 rounds to 1 + 2^-23, where its float64, 1 + 2^-24,
    # is a tie that goes to 1.0)
    ("1.000000059604644776482582837190 : f32", bits64(1 + 2 ** -23)),
    ("1.0e+39 : f32", bits64(float("inf"))), ("-0.0 : f32", 0x8000000000000000),
]


@pytest.mark.parametrize("literal,word", CASES, ids=[c[0] for c in CASES])
def test_a_hex_float_attribute_is_its_bits(tmp_path, literal, word):
    assert bits64(alpha_of(tmp_path, literal)) == word


@pytest.mark.parametrize("literal", ["0x1FFFFFFFF : f32", "0x10000 : bf16", "-0x1 : f32"])
def test_a_hex_literal_wider_than_its_type_is_refused_where_it_is(tmp_path, literal, capsys):
    with pytest.raises(MlirError, match=r"m\.mlir:4:\d+.*is not the bits of an"):
        alpha_of(tmp_path, literal)
    path = tmp_path / "m.mlir"
    assert main(["check", str(path), str(path), "--no-tensorflow"]) == 2
    err = capsys.readouterr().err
    assert "m.mlir:4:" in err and "is not the bits of an" in err and "Traceback" not in err
