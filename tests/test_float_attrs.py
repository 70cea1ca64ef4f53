"""oracle/float_attrs.py: the program format's exact form of a non-finite
float attribute ({"float": TEXT}), and the kernels' child reading the same
TEXT (oracle/kernel_worker.py `_convert`, which imports nothing of tfsem and
so reads it on its own: checked here against the format's reader)."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfsem.oracle import float_attrs as fa
from tfsem.oracle.kernel_worker import _convert, _Refuse


def f64(word: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", word))[0]


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def widened(w32: int) -> int:
    """float32 bits -> the float64 bits of the same value, by hand (no
    hardware conversion: a signalling NaN stays one)."""
    sign, exp, man = w32 >> 31, w32 >> 23 & 0xFF, w32 & 0x7FFFFF
    assert exp == 0xFF
    return sign << 63 | 0x7FF << 52 | man << 29


#: (float64 bits, TEXT): the quiet NaNs, infinities, float32 NaNs with
#: payloads (a signalling one too), a float64 NaN float32 cannot hold
CASES = [
    (0x7FF8000000000000, "nan"), (0xFFF8000000000000, "-nan"),
    (0x7FF0000000000000, "inf"), (0xFFF0000000000000, "-inf"),
    (widened(0x7FC00001), "0x7fc00001"), (widened(0xFFC00001), "0xffc00001"),
    (widened(0x7FFFFFFF), "0x7fffffff"), (widened(0x7F800001), "0x7f800001"),
    (0x7FF8000000000001, "0x7ff8000000000001"), (0xFFF0000000000001, "0xfff0000000000001"),
]


@pytest.mark.parametrize("word,text", CASES, ids=[t for _, t in CASES])
def test_each_non_finite_float_has_one_text_that_reads_back_to_its_bits(word, text):
    assert fa.float_text(f64(word)) == text
    assert bits(fa.float_from_text(text)) == word


#: every non-finite float64: a sign, the exponent's ones, any mantissa (one
#: of a float32 widened half the time)
NON_FINITE = st.builds(lambda sign, man: sign << 63 | 0x7FF << 52 | man, st.integers(0, 1),
                       st.one_of(st.integers(0, (1 << 52) - 1),
                                 st.integers(0, (1 << 23) - 1).map(lambda m: m << 29)))


@given(NON_FINITE)
def test_every_non_finite_float64_reads_back_to_its_bits(word):
    assert bits(fa.float_from_text(fa.float_text(f64(word)))) == word


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_finite_float_has_no_text(x):
    with pytest.raises(ValueError, match="finite"):
        fa.float_text(x)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1.5", "0x7FC00001", "0x7fc0001",
                                  "0x7fc00000", "0xffc00000", "0x3f800000", "0x7f800000",
                                  "0x7ff8000020000000", "0x3ff0000000000000", "0xzzzzzzzz", ""])
def test_other_texts_are_refused_with_what_to_write(text):
    """One spelling per float: a finite float is a JSON number, the quiet
    NaN "nan", a float32's NaN its 8 digits, an infinity "inf"."""
    with pytest.raises(ValueError) as exc:
        fa.float_from_text(text)
    assert repr(text) in str(exc.value)


def test_attributes_are_strict_json_and_read_back_exactly():
    attrs = {"alpha": f64(0xFFF8000000000000), "T": "DT_FLOAT", "n": 3, "ok": True,
             "bounds": [1.5, f64(0x7FF0000000000000), -0.0, f64(widened(0x7FC00001)), 5e-324],
             "float": 2.0}   # (an attribute named "float" is an attribute)
    written = fa.attrs_to_json(attrs)
    text = json.dumps(written, allow_nan=False)
    assert '{"float": "-nan"}' in text and '{"float": "0x7fc00001"}' in text
    back = fa.attrs_from_json(json.loads(text), "node 'l' tf_attrs")
    assert list(back) == list(attrs)
    flat = lambda a: [a["alpha"], *a["bounds"], a["float"]]  # noqa: E731
    assert [bits(x) for x in flat(back)] == [bits(x) for x in flat(attrs)]
    assert {k: back[k] for k in ("T", "n", "ok")} == {"T": "DT_FLOAT", "n": 3, "ok": True}


def test_numpys_floats_are_floats_too():
    import numpy as np
    attrs = {"alpha": np.float64("-inf"), "v": [np.float64("nan"), np.float64(1.5)]}
    written = fa.attrs_to_json(attrs)
    assert written == {"alpha": {"float": "-inf"}, "v": [{"float": "nan"}, 1.5]}
    json.dumps(written, allow_nan=False)


def test_attributes_without_a_non_finite_float_are_left_as_they_are():
    attrs = {"alpha": 0.2, "T": "DT_FLOAT", "dims": [2, 3], "s": "nan"}
    assert fa.attrs_to_json(attrs) is attrs
    assert fa.attrs_from_json(attrs, "x") is attrs


@pytest.mark.parametrize("bad", [{"float": 1.0}, {"float": "nan", "x": 1}, {"float": "1.5"}])
def test_a_malformed_float_object_is_refused_naming_the_attribute(bad):
    with pytest.raises(ValueError, match=r"node 'l' tf_attrs\.alpha\[1\]"):
        fa.attrs_from_json({"alpha": [0.5, bad]}, "node 'l' tf_attrs")


# ---------------------------------------------------------------- the kernels' child

def narrowed(word: int) -> int:
    """The float32 bits TensorFlow's eager executor sets for a float
    attribute of float64 bits `word` (a C cast, as struct's)."""
    return struct.unpack("<I", struct.pack("<f", f64(word)))[0]


def passed(word: int) -> bool:
    """Whether the child passes the float: not a NaN with a payload once
    narrowed (kernel_worker._convert says why)."""
    w = narrowed(word)
    return w & 0x7F800000 != 0x7F800000 or w & 0x7FFFFF in (0, 0x400000)


@pytest.mark.parametrize("word,text", CASES, ids=[t for _, t in CASES])
def test_the_kernels_child_reads_each_text_as_the_format_does(word, text):
    """`_convert` reads TEXT bare (as files written before the object form
    hold "nan", "inf", "-inf") and as the object, and a float as itself;
    a NaN that keeps a payload once narrowed to float32 it refuses."""
    for value in (text, {"float": text}, f64(word)):
        if passed(word):
            assert bits(_convert(None, "float", value, "alpha")) == word
        else:
            with pytest.raises(_Refuse, match=r"'alpha' is the NaN 0x[0-9a-f]{8} .*payload"):
                _convert(None, "float", value, "alpha")
    values = [text, {"float": text}, 0.5, -0.0]
    if passed(word):
        got = _convert(None, "list(float)", values, "v")
        assert [bits(x) for x in got] == [word, word, bits(0.5), bits(-0.0)]
    else:
        with pytest.raises(_Refuse, match="'v'"):
            _convert(None, "list(float)", values, "v")


def test_only_the_nans_without_a_payload_are_passed():
    """(Both signs; a float64 NaN whose payload float32 drops is one of them.)"""
    assert [passed(w) for w, _ in CASES] == [True, True, True, True,
                                             False, False, False, False, True, True]


@given(NON_FINITE)
def test_the_kernels_child_agrees_with_the_format_on_every_non_finite_float(word):
    text = fa.float_text(f64(word))
    for value in (text, {"float": text}):
        if passed(word):
            assert bits(_convert(None, "float", value, "a")) == word
        else:
            with pytest.raises(_Refuse, match="payload"):
                _convert(None, "float", value, "a")


def test_the_kernels_child_refuses_a_float_it_cannot_read():
    with pytest.raises(_Refuse, match="'alpha'"):
        _convert(None, "float", "fast", "alpha")
    assert _convert(None, "float", "1.5", "alpha") == 1.5    # (read as before)
