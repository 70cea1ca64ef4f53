"""The kernel cache's keys (oracle/kernels.py `_key`, `_digest`): equal
exactly when op, attributes, outputs and every input's dtype, shape and
bytes are; a tensor's array (read-only, its own data) is hashed once while
it lives, an array someone may write is hashed each time."""

from __future__ import annotations

import numpy as np

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
