"""The kernel cache's keys (oracle/kernels.py `_key`, `_digest`): equal
exactly when op, attributes, outputs and every input's dtype, shape and
bytes are; a tensor's array (read-only, its own data) is hashed once while
it lives, an array someone may write is hashed each time."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import kernels
from tfsem.oracle.values import Tensor


def _f32(words):
    return np.array(words, dtype=np.uint32).view(np.float32)


def test_keys_tell_apart_what_a_kernel_could_tell_apart():
    nan1, nan2 = _f32([0x7FC00001]), _f32([0x7FC00002])
    zero, minus = _f32([0]), _f32([0x80000000])
    k = lambda *arrays, op="Exp", attrs=None, n=1: kernels._key(op, list(arrays), attrs or {}, n)
    assert k(nan1) != k(nan2)                        # NaN payloads
    assert k(zero) != k(minus)                       # signed zeros
    assert k(_f32([1])) != k(_f32([1]).view(np.int32))   # same bytes, another dtype
    assert k(np.zeros(4, np.int8)) != k(np.zeros((2, 2), np.int8))   # another shape
    assert k(np.zeros(2, np.int8), np.zeros(2, np.int8)) != k(np.zeros(4, np.int8))
    assert k(zero, op="Exp") != k(zero, op="Log")
    assert k(zero, attrs={"T": "DT_FLOAT"}) != k(zero, attrs={"T": "DT_HALF"})
    assert k(zero, n=1) != k(zero, n=2)
    assert k(_f32([0x7FC00001, 7])) == k(_f32([0x7FC00001, 7]))


def test_a_tensors_array_is_hashed_once_a_writable_one_each_time(monkeypatch):
    t = Tensor(np.arange(12, dtype=np.int64).reshape(3, 4))
    calls = [0]
    real = kernels.hashlib.sha256

    def counting(*a):
        calls[0] += 1
        return real(*a)
    monkeypatch.setattr(kernels.hashlib, "sha256", counting)
    first = kernels._digest(t.array)
    assert kernels._digest(t.array) == first and calls[0] == 1
    w = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert kernels._digest(w) == first and calls[0] == 2
    w[0, 0] = 99                                     # written: hashed again, another digest
    assert kernels._digest(w) != first and calls[0] == 3
    view = t.array[1:]                               # not its own data: not remembered
    kernels._digest(view)
    kernels._digest(view)
    assert calls[0] == 5


def test_attribute_keys_tell_apart_nan_signs_payloads_and_types():
    """`repr` writes every NaN "nan" and sorts nothing inside: the key of an
    attribute is its bits and its type (review21)."""
    import struct
    nan = lambda word: struct.unpack("<d", struct.pack("<Q", word))[0]
    zero = _f32([0])
    k = lambda **attrs: kernels._key("LeakyRelu", [zero], attrs, 1)
    assert k(alpha=nan(0x7FF8000000000000)) != k(alpha=nan(0xFFF8000000000000))   # NaN's sign
    assert k(alpha=nan(0x7FF8000000000000)) != k(alpha=nan(0x7FF8000000000001))   # payload
    assert k(alpha=nan(0x7FF8000000000000)) == k(alpha=nan(0x7FF8000000000000))
    assert k(alpha=0.0) != k(alpha=-0.0)
    assert len({k(alpha=1), k(alpha=1.0), k(alpha=True), k(alpha=np.float32(1))}) == 4
    assert k(shape=[1, 2]) != k(shape=(1, 2)) and k(shape=[1, 2]) == k(shape=[1, 2])
    assert k(v={"a": -0.0}) != k(v={"a": 0.0})
    big = np.arange(2000, dtype=np.float32)
    other = big.copy()
    other[1000] = -1.0                                 # (repr elides the middle of both)
    assert k(value=big) != k(value=other) and k(value=big) == k(value=big.copy())
    assert k(value=np.float32(-0.0)) != k(value=np.float32(0.0))


def test_the_plain_attribute_key_is_equal_exactly_when_the_exact_one_is():
    """kernel_worker.attrs_key's plain form (str, int, bool, None and lists
    or tuples of them, keyed by their repr) against the exact walk
    (`_exact_attr`) it stands in for: over pairs of attribute dicts that
    differ in a value's type, a list against a tuple, a str that reads like
    another value, a key's order, nesting, and floats (which take the exact
    walk), the two keys are equal for exactly the same pairs, and a plain
    key is never an exact one."""
    import itertools
    import random

    from tfsem.oracle.kernel_worker import _exact_attr, _plain_attr, attrs_key
    values = [1, True, False, 0, None, "1", "True", "None", "", "a'b", 'a"b', "[1]", "(1,)",
              [1], (1,), [], (), [1, 2], [2, 1], (1, 2), [True], ["1"], [[1]], [(1,)],
              [1, [2, 3]], 1.0, float("nan"), -0.0, 0.0, [1.0], {"a": 1}, 2 ** 70, -1]
    rng = random.Random(5)
    dicts = [{}]
    for v in values:
        dicts += [{"T": v}, {"x": v, "T": "DT_FLOAT"}, {"T": "DT_FLOAT", "x": v}]
    for _ in range(150):
        dicts.append({rng.choice("abc"): rng.choice(values) for _ in range(rng.randrange(1, 4))})
    exact = lambda d: repr(_exact_attr(dict(d)))
    plain = 0
    for d1, d2 in itertools.product(dicts, repeat=2):
        assert (attrs_key(d1) == attrs_key(d2)) == (exact(d1) == exact(d2)), (d1, d2)
    for d in dicts:
        if all(_plain_attr(v) for v in d.values()):
            plain += 1
            assert attrs_key(d).startswith("F") and not exact(d).startswith("F")
        else:
            assert attrs_key(d) == exact(d)
    assert plain >= 100, plain


def test_the_remembered_dtype_prefix_is_the_dtypes_name_and_str():
    """`_dtype_prefix` remembers each dtype's prefix by identity: for every
    dtype a kernel takes (bfloat16 too: its str is a void's, its name is
    not), byte orders and a dtype made anew, it is what the f-string gives,
    and equal-bytes arrays of two dtypes keep two keys."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 and float8 dtypes")
    dts = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64", "float16", "float32", "float64",
                                 ">f4", ">i8", "complex64", "V2")]
    dts += [np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn)]
    for dt in dts + dts + [np.dtype(d.str) for d in dts]:
        assert kernels._dtype_prefix(dt) == f"{dt.name}{dt.str}".encode()
    k = lambda a: kernels._key("Identity", [a], {}, 1)
    raw = np.array([0x3F80], np.uint16)
    keyed = {k(raw.view(np.dtype(ml_dtypes.bfloat16))), k(raw.view(np.float16)), k(raw),
             k(raw.view(np.int16)), k(raw.view("V2"))}
    assert len(keyed) == 5
