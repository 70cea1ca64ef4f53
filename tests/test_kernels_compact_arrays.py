"""The compact pickle of the kernels' messages' arrays (oracle/kernel_worker.py
`_ArrayPickler`, `COMPACT_ARRAYS`): read back, the same arrays as numpy's
own reduction gives, bit for bit, in the message and through the shared
files; the child's answers the same with it on and off."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from tfsem.oracle import kernel_worker as W


def _edge_arrays():
    f32 = np.array([0x7FC00001, 0xFFA00000, 0x80000000, 1, 0x807FFFFF, 0x7F800000],
                   np.uint32).view(np.float32)
    out = [f32, f32.astype(np.float64), np.array([0x7E01, 0x8000, 1], np.uint16).view(np.float16),
           np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64),
           np.array([np.iinfo(np.int32).min, -1, np.iinfo(np.int32).max], np.int32),
           np.array([0, 255], np.uint8), np.array([2**64 - 1], np.uint64),
           np.array([-128, 127], np.int8), np.array([-(2**15)], np.int16),
           np.array([65535], np.uint16), np.array([2**32 - 1], np.uint32),
           np.array([True, False]), np.array(True), np.float32(-0.0).reshape(()),
           np.zeros((0, 3), np.float32), np.zeros((2, 0), np.int32),
           np.array([1 + 2j, complex(float("nan"), -0.0)], np.complex64),
           np.array([complex(-0.0, float("inf"))], np.complex128),
           np.arange(24, dtype=np.float32).reshape(2, 3, 4),
           np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2],          # not contiguous
           np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
           np.arange(4, dtype=">f4"),                                       # byte-swapped
           np.zeros(3, np.dtype(np.float32, metadata={"k": 1})),             # metadata
           np.array([b"ab", b""], object), np.array([b"abc", b"d"], "S3"),
           np.arange(6, dtype=np.int64).astype(np.dtype("q")),               # longlong
           np.random.default_rng(3).random(W.SHARED_MIN // 4 + 5).astype(np.float32)]
    ro = np.arange(5, dtype=np.float32)
    ro.setflags(write=False)
    out.append(ro)
    try:
        from ml_dtypes import bfloat16
    except ImportError:
        pass
    else:
        out.append(np.array([0x7FC1, 0x8000, 1], np.uint16).view(bfloat16))
    return out


def _same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.dtype.str == b.dtype.str and a.dtype.name == b.dtype.name
    assert a.dtype.metadata == b.dtype.metadata
    assert a.shape == b.shape
    if a.dtype.kind == "O":
        assert list(a.reshape(-1)) == list(b.reshape(-1))
    else:
        assert a.tobytes() == b.tobytes()
    assert a.flags.writeable == b.flags.writeable
    assert a.flags.c_contiguous == b.flags.c_contiguous
    assert a.flags.f_contiguous == b.flags.f_contiguous


def test_compact_arrays_read_back_as_numpys_own_pickle_does():
    arrays = _edge_arrays()
    msg = (3, "batch", [("Exp", arrays, {"T": "DT_FLOAT"}, 1)])
    compact = pickle.loads(W.plain_dumps(msg, True))
    plain = pickle.loads(W.plain_dumps(msg))
    assert W.plain_dumps(msg) == pickle.dumps(msg, protocol=5)
    for a, b, c in zip(arrays, compact[2][0][1], plain[2][0][1]):
        _same(b, c)
    # (the compact form is taken for a builtin dtype and only there)
    assert b"_frombuffer" not in W.plain_dumps((1, [arrays[0]]), True)
    assert b"_frombuffer" in W.plain_dumps((1, [arrays[-1 if arrays[-1].dtype.kind == "V"
                                                          else 1].astype(">f8")]), True)
    assert len(W.plain_dumps((1, [arrays[0]]), True)) < len(W.plain_dumps((1, [arrays[0]])))


def test_one_array_sent_twice_is_one_array_in_both_forms():
    a = np.arange(8, dtype=np.float32)
    for compact in (False, True):
        got = pickle.loads(W.plain_dumps((1, [a, a], [a]), compact))
        assert got[1][0] is got[1][1] is got[2][0]


@pytest.mark.parametrize("copy", [False, True])
def test_compact_arrays_through_the_shared_file_are_numpys_own(copy):
    w = W.Region.create("test-compact")
    if w is None:
        pytest.skip("no shared files here")
    r = W.Region(os.dup(w.fd))
    try:
        arrays = _edge_arrays() + [np.random.default_rng(4).random((64, 64))]
        got = {}
        for compact in (False, True):
            w.compact = compact
            data = w.dumps((7, arrays))
            assert pickle.loads(data)[0] == W.SHARED_TAG       # (the large ones in the file)
            got[compact] = [x.copy() if x.dtype.kind != "O" else x
                            for x in r.loads(data, copy=copy)[1]]
        for a, b in zip(got[False], got[True]):
            _same(a, b)
    finally:
        w.close()
        r.close()


def test_the_childs_answers_are_the_same_with_compact_arrays_on_and_off(monkeypatch):
    pytest.importorskip("tensorflow", reason="the kernels' child runs TensorFlow's kernels")
    from tfsem.oracle import kernels
    f32 = _edge_arrays()[0]
    big = np.random.default_rng(6).standard_normal((64, 128)).astype(np.float32)
    calls = [("Neg", [f32], {"T": "DT_FLOAT"}, 1), ("Exp", [f32.astype(np.float64)], {}, 1),
             ("Add", [big, big], {}, 1), ("Relu", [big], {}, 1),
             ("LogicalNot", [np.array([True, False])], {}, 1),
             ("Identity", [np.zeros((0, 3), np.float32)], {}, 1),
             ("Identity", [np.array([b"ab", b""], object)], {}, 1),
             ("Neg", [np.array([np.iinfo(np.int64).min], np.int64)], {}, 1),
             ("Unpack", [np.arange(12, dtype=np.int32).reshape(3, 4)], {"num": 3}, 3),
             ("MatMul", [big, big], {}, 1)]
    try:
        from ml_dtypes import bfloat16
        calls.append(("Neg", [np.array([0x7FC1, 0x8000], np.uint16).view(bfloat16)], {}, 1))
    except ImportError:
        pass

    def form(answer):
        if answer[0] != "ok":
            return answer[:2]
        return answer[0], [(r.dtype.str, r.dtype.name, r.shape,
                            list(r.reshape(-1)) if r.dtype.kind == "O" else r.tobytes())
                           for r in answer[1]]

    got = {}
    for shared in (True, False):
        monkeypatch.setattr(kernels, "SHARED", shared)
        for compact in (False, True):
            monkeypatch.setattr(W, "COMPACT_ARRAYS", compact)
            monkeypatch.setenv("TFSEM_TF_KERNELS_COMPACT_ARRAYS", "1" if compact else "0")
            client = kernels._Client()
            try:
                assert client.requests is None or client.requests.compact == compact
                one = [form(client.call(op, ins, dict(at), n)) for op, ins, at, n in calls]
                batch = [form(a) for a in client.call_batch(
                    [(op, ins, dict(at), n) for op, ins, at, n in calls])]
            finally:
                client.close()
            assert one == batch
            got[shared, compact] = one
    assert len(set(map(repr, got.values()))) == 1
    assert sum(a[0] == "ok" for a in got[True, True]) == len(calls) - 1     # (MatMul's shapes)
