"""functions.attrs_key (program identity, CSE, the solvers' function names)
and the structural rule's attribute key tell float NaN attributes apart by
their bits: an op's result can show a NaN attribute's sign and payload
(LeakyRelu's alpha on TensorFlow's kernel; a user's function that copies
the attribute), so two programs that differ only there are two programs,
and their check finds the difference."""

from __future__ import annotations

import importlib.util
import struct

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle import program as P
from tfsem.oracle.values import Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"
#: float64 NaNs: quiet, -quiet, and a payload float32 keeps (0x7FC00001)
NAN, NEG_NAN, NAN_PAYLOAD = 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000020000000


def nan(word: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", word))[0]


def test_float_nans_are_keyed_by_their_bits_at_any_depth():
    key = fns.attrs_key
    for make in (lambda f: {"alpha": f}, lambda f: {"tf_attrs": {"T": "DT_FLOAT", "alpha": f}},
                 lambda f: {"values": [1.0, f]}, lambda f: {"pairs": [{"x": (f, 2)}]}):
        assert key(make(nan(NAN))) != key(make(nan(NEG_NAN)))          # sign
        assert key(make(nan(NAN))) != key(make(nan(NAN_PAYLOAD)))      # payload
        assert key(make(nan(NAN))) == key(make(nan(NAN)))              # the same bits
        assert key(make(nan(NAN))) == key(make(float("nan")))          # (Python's NaN)
        assert key(make(nan(NAN))) != key(make("NaN"))                 # a string is not a float
        assert key(make(0.0)) != key(make(-0.0)) and key(make(1.5)) == key(make(1.5))


def test_keys_without_a_nan_are_the_plain_json_ones():
    """(The fast path: a key with no NaN is made once, and stays what it was.)"""
    import json
    attrs = {"alpha": 0.2, "T": "DT_FLOAT", "dims": [2, 3], "name": "Infinity"}
    assert fns.attrs_key(attrs) == json.dumps(attrs, sort_keys=True)
    with_text = {"note": "NaN here is a word", "x": 1.0}
    assert fns.attrs_key(with_text) == json.dumps(with_text, sort_keys=True)


@pytest.fixture
def user_fill(monkeypatch):
    """UserFill(x): x's shape filled with the float attribute `value`, as
    float32 (the conversion keeps a NaN's sign and its payload's top bits)."""
    monkeypatch.setitem(fns._REGISTRY, "UserFill", fns.Function(
        "UserFill", 1, 1,
        lambda xp, args, attrs: (np.full(np.shape(args[0]), attrs["value"], np.float32),),
        casts=True))


def _shown_fill(value: float):
    """o = PackScatter(0, UserFill[value](x)): the fill's bytes are the output."""
    return P.program([P.const("x", Tensor(np.array([1.0], np.float32))), P.const("i", 0),
                      P.apply("f", "UserFill", "x", value=value),
                      P.apply("o", "PackScatter", "i", "f")], {"out": "o"})


@pytest.mark.parametrize("other", [NEG_NAN, NAN_PAYLOAD], ids=["sign", "payload"])
def test_programs_differing_only_in_a_nan_attributes_bits_are_unsound(user_fill, other):
    """They were one program (`sound`: "the rewritten program is the
    original")."""
    p, q = _shown_fill(nan(NAN)), _shown_fill(nan(other))
    assert p != q and p == _shown_fill(nan(NAN)) and hash(p) == hash(_shown_fill(nan(NAN)))
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict == "unsound", v.describe()
    assert check_rewrite(p, _shown_fill(nan(NAN)), timeout=30).verdict == "sound"


def test_the_cse_pass_keeps_two_fills_of_different_nans(user_fill):
    from tfsem.rewrites.cse import cse
    p = P.program([P.const("x", Tensor(np.array([1.0], np.float32))), P.const("i", 0),
                   P.apply("f", "UserFill", "x", value=nan(NAN)),
                   P.apply("g", "UserFill", "x", value=nan(NEG_NAN)),
                   P.apply("o", "PackScatter", "i", "f"), P.apply("o2", "PackScatter", "i", "g")],
                  {"out": "o", "out2": "o2"})
    q = cse(p)
    assert {"f", "g"} <= set(q.node)
    assert check_rewrite(p, q, timeout=30).verdict in ("sound", "no-counterexample")


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="TensorFlow's kernels: needs the extra tfsem[tensorflow]")
def test_leaky_relus_alpha_nan_of_the_other_sign_is_unsound_on_tensorflows_kernel(monkeypatch):
    """LeakyRelu has no numpy model: its kernel runs with the node's
    attributes, and x * alpha for x < 0 is a NaN of alpha's sign.  (The
    structural rule's key wrote every NaN "nan" too: it proved this pair
    `sound` once attrs_key told them apart.)"""
    monkeypatch.setenv(kernels.ENV, "1")
    def prog(alpha: float):
        return P.program([P.const("x", Tensor(np.array([-1.0], np.float32))), P.const("i", 0),
                          P.apply("l", fns.opaque_name("LeakyRelu", 1, 1), "x",
                                  tf_attrs={"T": "DT_FLOAT", "alpha": alpha}),
                          P.apply("o", "PackScatter", "i", "l")], {"out": "o"})
    p, q = prog(nan(NAN)), prog(nan(NEG_NAN))
    assert p != q
    v = check_rewrite(p, q, timeout=120)
    assert v.verdict == "unsound", v.describe()
