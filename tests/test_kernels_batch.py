"""Kernel evaluations made together (oracle/kernels.py `collecting`,
`prefetch`; oracle/kernel_worker.py's batch message; oracle/explore.py
`_Component._prefetch`): the same bits as one evaluation at a time, on edge
values (NaN payloads, signed zeros, subnormals, infinities, integer
extremes, out-of-range casts); the same error values; fewer turns to the
child; a run that prefetches gives the same outcome and schedule.

Skipped without TensorFlow.  Shares the TensorFlow child with the other
kernel tests of the session."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tfsem.oracle import explore, kernels
from tfsem.oracle.values import Tensor, exact

pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs the extra tfsem[tensorflow]")


@pytest.fixture(scope="module", autouse=True)
def kernels_on():
    old = os.environ.get(kernels.ENV)
    os.environ[kernels.ENV] = "1"
    kernels.prestart()
    import tfsem.oracle.opdefs  # noqa: F401  (the registry supplies DETERMINISTIC)
    yield
    if old is None:
        os.environ.pop(kernels.ENV, None)
    else:
        os.environ[kernels.ENV] = old


def _f32(words):
    return np.array(words, dtype=np.uint32).view(np.float32)


#: NaNs with payloads (quiet and signalling, both signs), signed zeros,
#: subnormals, the smallest normals, infinities, the largest finite
EDGES32 = _f32([0x7FC00001, 0xFFC00123, 0x7F800001, 0x00000000, 0x80000000, 0x00000001,
                0x807FFFFF, 0x00800000, 0x80800000, 0x7F800000, 0xFF800000, 0x7F7FFFFF,
                0x3F800000, 0xC0200000, 0x42B00000, 0xC2CE0000])
INT32_EXTREMES = np.array([-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1], np.int32)

REQUESTS = [
    ("Exp", [EDGES32], {"T": "DT_FLOAT"}, 1),
    ("Sum", [EDGES32.reshape(4, 4), np.array([1], np.int32)], {"keep_dims": False}, 1),
    ("MatMul", [EDGES32.reshape(4, 4), EDGES32.reshape(4, 4)[::-1].copy()],
     {"transpose_a": False, "transpose_b": True}, 1),
    ("Cast", [EDGES32], {"DstT": "DT_INT32", "Truncate": False}, 1),      # out of range, NaN
    ("Cast", [np.array([3e9, -3e9, 1e30, -0.0], np.float64)], {"DstT": "DT_INT8", "Truncate": False}, 1),
    ("AddV2", [INT32_EXTREMES, INT32_EXTREMES[::-1].copy()], {}, 1),       # wraps
    ("Neg", [INT32_EXTREMES], {}, 1),
    ("MatMul", [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)], {}, 1),  # fails
]


def _bits(results):
    if isinstance(results, Exception):
        return (type(results).__name__, getattr(results, "reason", None))
    return [(r.dtype.str, r.shape, r.tobytes()) for r in results]


def _one(op, inputs, attrs, n_out):
    try:
        return kernels.evaluate(op, inputs, attrs, n_out)
    except (kernels.KernelOpError, kernels.KernelRefused) as exc:
        return exc


def _turns(monkeypatch):
    count = [0]
    real = kernels._Client._call

    def counted(self, request, op, *rest, **options):
        count[0] += 1
        return real(self, request, op, *rest, **options)
    monkeypatch.setattr(kernels._Client, "_call", counted)
    return count


def test_a_batch_gives_the_bits_of_one_evaluation_at_a_time(monkeypatch):
    ops = {op for op, *_ in REQUESTS}
    missing = ops - set(kernels.DETERMINISTIC)
    assert not missing, missing
    kernels._cache.clear()
    singles = [_bits(_one(*r)) for r in REQUESTS]
    assert any(isinstance(s, tuple) and s[0] == "KernelOpError" for s in singles)
    kernels._cache.clear()
    turns = _turns(monkeypatch)
    with kernels.collecting() as requests:
        for r in REQUESTS:
            with pytest.raises(kernels.Deferred):
                kernels.evaluate(*r)
    assert len(requests) == len(REQUESTS)
    assert kernels.prefetch(requests) == len(REQUESTS)
    assert turns[0] == 1                      # one message for all
    batched = [_bits(_one(*r)) for r in REQUESTS]
    assert turns[0] == 1                      # every evaluation found cached
    assert batched == singles
    with kernels.collecting() as again:       # kept already: nothing to ask, nothing made
        for r in REQUESTS:
            with pytest.raises(kernels.Deferred):
                kernels.evaluate(*r)
    assert again == [] and turns[0] == 1


def test_a_refusal_in_a_batch_is_not_kept(monkeypatch):
    kernels._cache.clear()
    bad = ("Exp", [EDGES32, EDGES32], {"T": "DT_FLOAT"}, 1)   # two inputs: the child refuses
    good = ("Exp", [EDGES32[:4].copy()], {"T": "DT_FLOAT"}, 1)
    with kernels.collecting() as requests:
        for r in (bad, good):
            with pytest.raises(kernels.Deferred):
                kernels.evaluate(*r)
    assert kernels.prefetch(requests) == 2
    turns = _turns(monkeypatch)
    with pytest.raises(kernels.KernelRefused, match="inputs"):
        kernels.evaluate(*bad)                # asked again alone, refused as before
    assert turns[0] == 1
    kernels.evaluate(*good)
    assert turns[0] == 1


def _two_branches():
    from tfsem.oracle.jsonio import program_from_json
    exp = {"tf_attrs": {"T": "DT_FLOAT"}}
    return program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [16]},
                      "y": {"dtype": "float32", "shape": [16]}},
        "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                  {"name": "vy", "op": "Var", "var": "y"},
                  {"name": "rx", "op": "Read", "inputs": ["vx"]},
                  {"name": "ry", "op": "Read", "inputs": ["vy"]},
                  {"name": "a", "op": "Add", "inputs": ["rx", "ry"]},
                  {"name": "e1", "op": "tf.Exp/1/1", "inputs": ["a"], **exp},
                  {"name": "e2", "op": "tf.Softmax/1/1", "inputs": ["a"], **exp},
                  {"name": "e3", "op": "tf.Exp/1/1", "inputs": ["rx"], **exp},
                  {"name": "s", "op": "Sub", "inputs": ["e1", "e2"]},
                  {"name": "wx", "op": "Assign", "fn": "Snd", "inputs": ["vx", "s"]},
                  {"name": "wy", "op": "Assign", "fn": "Snd", "inputs": ["vy", "e3"]}],
        "outputs": {"o1": "e1", "o2": "e2", "o3": "e3"}})


def test_a_run_that_prefetches_has_the_same_outcome_and_schedule_in_fewer_turns(monkeypatch):
    from tfsem.checking import refute as ref
    p = _two_branches()
    init = {"x": Tensor(EDGES32), "y": Tensor(EDGES32[::-1].copy())}
    runs = {}
    for prefetch in (False, True):
        monkeypatch.setattr(explore, "PREFETCH", prefetch)
        kernels._cache.clear()
        turns = _turns(monkeypatch)
        o, sched = ref.canonical_outcome(p, {}, init, "atomic", "outputs+state")
        runs[prefetch] = (tuple((k, exact(v)) for k, v in o.outputs),
                          tuple((k, exact(v)) for k, v in o.state), tuple(sched), turns[0])
        monkeypatch.undo()
    off, on = runs[False], runs[True]
    assert on[:3] == off[:3]
    assert off[3] == 3 and on[3] < off[3], (off[3], on[3])


def test_an_attribute_nan_of_the_other_sign_is_not_answered_from_the_child_s_signatures():
    """The child works out an op's attributes once per (op, attributes,
    dtypes): LeakyRelu's alpha -NaN after alpha NaN must run with -NaN, as
    each did alone before that cache (TensorFlow's result: a NaN of alpha's
    sign), also when the parent's cache is cleared between (review21)."""
    import struct
    x = np.array([-1.0, -2.0], np.float32)
    words = []
    for word in (0x7FF8000000000000, 0xFFF8000000000000):
        alpha = struct.unpack("<d", struct.pack("<Q", word))[0]
        kernels._cache.clear()
        words.append(kernels.evaluate("LeakyRelu", [x], {"T": "DT_FLOAT", "alpha": alpha}, 1)[0]
                     .view(np.uint32).tolist())
    assert words == [[0x7FC00000] * 2, [0xFFC00000] * 2], [list(map(hex, w)) for w in words]
