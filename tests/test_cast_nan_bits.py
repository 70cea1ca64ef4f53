"""The bits of the NaNs tfsem's Cast makes between float dtypes, against
TensorFlow 2.21's CPU kernel.  numpy's and ml_dtypes' conversions differed
on five pairs (measured):

* float32 -> bfloat16: inside Eigen's whole packets (8 elements, by flat
  index) every NaN is 0x7fc0; in the scalar tail the canonical NaN of its
  sign (ml_dtypes' 0x7fc0/0xffc0 everywhere);
* float16 -> float32, float16 -> float64: a signaling NaN is quieted;
* float32, bfloat16, float64 -> float16: sign, quiet bit, and the top ten
  bits of float32's payload (numpy kept a signaling NaN signaling, and
  ml_dtypes dropped a bfloat16 payload).

Outcome equality makes all NaNs equal, but Bitcast shows the bits."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Tensor
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import UINT, arr, bits

NANS = {"float32": [0x7fc00001, 0xffc00002, 0x7f800001, 0xff812345, 0xffc00000, 0x7fc00000],
        "float64": [0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000001,
                    0xfff8000000000000, 0x7ff8000000000000, 0x7ff0200000000000],
        "float16": [0x7e01, 0xfe02, 0x7c01, 0xfe00, 0x7e00],
        "bfloat16": [0x7fc1, 0xffc2, 0x7f81, 0xffc0, 0x7fc0]}


def cast(a, dst: str, batched: bool = False):
    f = fns.get("Cast")
    if batched:
        return f.batched_impl(np, (a,), {"DstT": dst})[0]
    return f.apply([Tensor(a)], {"DstT": dst})[0].array


def test_float32_to_bfloat16_nans_are_canonical_in_packets_signed_in_the_tail():
    neg = 0xffc00002
    for n in (1, 7, 8, 13, 16, 17):
        r = bits(cast(arr("float32", [neg] * n), "bfloat16"))
        m = n // 8 * 8
        assert r == [0x7fc0] * m + [0xffc0] * (n - m), n
    # a 2-D tensor counts its flat index
    r = bits(cast(arr("float32", [[neg] * 5] * 3), "bfloat16"))
    assert r == [0x7fc0] * 8 + [0xffc0] * 7


def test_the_batched_cast_counts_positions_within_each_valuation():
    x = arr("float32", [[0xffc00002] * 9] * 3)
    got = cast(x, "bfloat16", batched=True)
    for k in range(3):
        assert bits(got[k]) == bits(cast(x[k], "bfloat16"))
        assert bits(got[k]) == [0x7fc0] * 8 + [0xffc0]


def test_float16_to_wider_floats_quiets_a_signaling_nan():
    assert bits(cast(arr("float16", [0x7c01]), "float32")) == [0x7fc02000]
    assert bits(cast(arr("float16", [0x7c01]), "float64")) == [0x7ff8040000000000]
    assert bits(cast(arr("float16", [0xfe02]), "float32")) == [0xffc04000]   # quiet: kept


def test_casts_to_float16_keep_the_top_of_float32s_payload_quieted():
    assert bits(cast(arr("float32", [0x7f800001, 0xff812345]), "float16")) == [0x7e00, 0xfe09]
    assert bits(cast(arr("bfloat16", [0x7fc1, 0xffc2, 0x7f81]), "float16")) == [
        0x7e08, 0xfe10, 0x7e08]
    assert bits(cast(arr("float64", [0x7ff0000000000001]), "float16")) == [0x7e00]


def test_the_nan_bits_are_tensorflows_kernel():
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    bad = []
    for src in NANS:
        base = arr(src, NANS[src])
        plain = np.array([1.5, -0.0, np.inf], np.float64).astype(DTYPES[src])
        for n in (1, 5, 8, 13, 40, 78):
            x = np.resize(np.concatenate([base, plain]), n)
            for dst in NANS:
                with tf.device("/CPU:0"):
                    want = tf.raw_ops.Cast(x=tf.constant(x, tf.as_dtype(src)),
                                           DstT=tf.as_dtype(dst)).numpy()
                got = cast(x, dst)
                if bits(got) != bits(want):
                    bad.append((src, dst, n, [hex(b) for b in bits(x)],
                                [hex(b) for b in bits(got)], [hex(b) for b in bits(want)]))
    assert not bad, bad[:2]
