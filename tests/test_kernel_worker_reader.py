"""How the kernels' child reads its requests (oracle/kernel_worker.py
`_Reader`: all the pipe holds in one read) and how the parent writes them
(oracle/kernels.py `_Client._write`: first without waiting): every message
comes out whole, in order, bit for bit, however the bytes arrive; and the
answers of a child fed that way are TensorFlow's own, run in this process,
bit for bit, over ops, dtypes, NaN payloads and shapes [] and [0]."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from tf_kernel_support import op_determinism_off_after, tensorflow_as_the_kernel_worker  # noqa: F401
from tfsem.oracle import kernel_worker as kw


def _messages(rng, k):
    out = []
    for _ in range(k):
        n = int(rng.choice([0, 1, 7, 100, 5000, 70000, 300000]))
        a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
        out.append((int(rng.integers(0, 1 << 30)), "Exp", [a], {"T": "DT_FLOAT"}, 1))
    return out


def _framed(msgs) -> bytes:
    data = b""
    for m in msgs:
        body = kw.plain_dumps(m)
        data += len(body).to_bytes(8, "little") + body
    return data


def _same_message(a, b) -> bool:
    return a[:2] == b[:2] and a[3:] == b[3:] and \
        [(x.dtype.str, x.shape, x.tobytes()) for x in a[2]] == \
        [(x.dtype.str, x.shape, x.tobytes()) for x in b[2]]


@pytest.mark.parametrize("chunk", [1, 3, 8, 9, 4096, 1 << 20])
def test_messages_come_out_whole_however_the_bytes_arrive(chunk):
    rng = np.random.default_rng(chunk)
    msgs = _messages(rng, 12)
    data = _framed(msgs)
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb", buffering=0) as f:
            for k in range(0, len(data), chunk):
                f.write(data[k:k + chunk])

    t = threading.Thread(target=feed)
    t.start()
    reader = kw._Reader(r)
    try:
        got = []
        for _ in msgs:
            got.append(kw._recv(reader))
        with pytest.raises(EOFError):
            kw._recv(reader)             # (the input closed: the child's end)
    finally:
        t.join()
        os.close(r)
    assert len(got) == len(msgs)
    assert all(_same_message(a, b) for a, b in zip(got, msgs))


def test_a_message_cut_short_is_the_end_of_the_input():
    data = _framed([(1, "Exp", [np.arange(100, dtype=np.float32)], {}, 1),
                    (2, "Exp", [np.arange(900, dtype=np.float32)], {}, 1)])
    for cut in (3, 8, 20, len(data) - 1):
        r, w = os.pipe()
        os.write(w, data[:cut])        # (less than a pipe holds)
        os.close(w)
        reader = kw._Reader(r)
        try:
            with pytest.raises(EOFError):
                while True:
                    kw._recv(reader)
        finally:
            os.close(r)


def test_the_comparison_of_small_results_is_the_comparison_of_large_ones(monkeypatch):
    """`_same_bytes` compares small results as two copies, large ones as
    views: with SAME_COPY_MAX at 0 (views for all) and past every size
    (copies for all) each pair gets the same answer."""
    rng = np.random.default_rng(5)
    pairs = []
    for dtype in (np.float32, np.float64, np.float16, np.int8, np.uint16, np.bool_, np.int64):
        for shape in ((), (0,), (1,), (3, 5), (4096,), (70000,)):
            n = int(np.prod(shape, dtype=np.int64))
            a = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8) \
                .view(dtype).reshape(shape)
            pairs.append((a, a.copy()))
            if n:
                b = a.copy().reshape(-1).view(np.uint8)
                b[int(rng.integers(0, b.size))] ^= 1 << int(rng.integers(0, 8))
                pairs.append((a, b.view(dtype).reshape(shape)))
    nan = np.array([0x7FC00001, 0x80000000], np.uint32).view(np.float32)
    pairs.append((nan, np.array([0x7FC00002, 0], np.uint32).view(np.float32)))
    answers = {}
    for limit in (0, 1 << 40):
        monkeypatch.setattr(kw, "SAME_COPY_MAX", limit)
        answers[limit] = [kw._same([a], [b]) for a, b in pairs]
    assert answers[0] == answers[1 << 40] == [a.tobytes() == b.tobytes() for a, b in pairs]
    assert False in answers[0] and True in answers[0]


# -- with TensorFlow: a child fed by these reads and writes answers as TensorFlow does


def _bits(words, dtype):
    return np.array(words, dtype=np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64) \
        .view(dtype)


def _cases():
    rng = np.random.default_rng(11)
    f32 = rng.standard_normal((32, 64)).astype(np.float32)
    f64 = rng.standard_normal((5, 7))
    nans32 = _bits([0x7FC00001, 0xFFC00123, 0x7F800000, 0xFF800000, 0x80000000, 0x1,
                    0x807FFFFF, 0x7F7FFFFF], np.float32)
    nans64 = _bits([0x7FF8000000000001, 0xFFF8000000000123, 0x8000000000000000, 0x1],
                   np.float64)
    big = rng.standard_normal((300, 1000)).astype(np.float32)      # 1.2 MB: past a pipe
    out = []
    for x, t in ((f32, "DT_FLOAT"), (f64, "DT_DOUBLE"), (nans32, "DT_FLOAT"), (nans64, "DT_DOUBLE"),
                 (np.float32(np.nan).reshape(()), "DT_FLOAT"), (np.zeros((0,), np.float32), "DT_FLOAT"),
                 (f32.astype(np.float16), "DT_HALF"), (big, "DT_FLOAT")):
        out += [("Sigmoid", [x], {"T": t}), ("Tanh", [x], {"T": t}), ("Rsqrt", [x], {"T": t}),
                ("TanhGrad", [x, x], {"T": t}), ("SigmoidGrad", [x, x], {"T": t})]
        if x.ndim:
            out.append(("Sum", [x, np.array([0], np.int32)],
                        {"T": t, "Tidx": "DT_INT32", "keep_dims": False}))
            out.append(("Mean", [x, np.array([x.ndim - 1], np.int32)],
                        {"T": t, "Tidx": "DT_INT32", "keep_dims": True}))
        if x.ndim == 2:
            out.append(("MatMul", [x, x.T.copy()], {"T": t}))
            out.append(("BiasAddGrad", [x], {"T": t}))
    out.append(("MatMul", [f32, f32], {"T": "DT_FLOAT"}))                     # shapes: an error
    out.append(("Sum", [np.int32(7).reshape(()), np.zeros((0,), np.int32)],
                {"T": "DT_INT32", "Tidx": "DT_INT32", "keep_dims": False}))
    return out


def _here(tf, op, inputs, attrs):
    """TensorFlow's answer run in this process, as the child runs it."""
    from tensorflow.python.eager import context, execute
    from tensorflow.python.framework import errors, op_def_registry
    return kw._answer(tf, op_def_registry, execute, errors, context.context(), op,
                      inputs, attrs, 1)


def _form(answer):
    if answer[0] != "ok":
        return answer[:2]
    return answer[0], [(np.asarray(r).dtype.str, np.asarray(r).shape,
                        np.asarray(r).tobytes()) for r in answer[1]]


@pytest.mark.parametrize("shared", [True, False])
def test_the_childs_answers_are_tensorflows_here_bit_for_bit(shared, monkeypatch):
    tf = tensorflow_as_the_kernel_worker("the kernels' child runs TensorFlow's kernels")
    from tfsem.oracle import kernels
    monkeypatch.setattr(kernels, "SHARED", shared)
    cases = _cases()
    client = kernels._Client()
    try:
        got = [_form(client.call(op, inputs, dict(attrs), 1)) for op, inputs, attrs in cases]
        batch = [_form(a) for a in client.call_batch([(op, i, dict(a), 1) for op, i, a in cases])]
    finally:
        client.close()
    want = [_form(_here(tf, op, inputs, attrs)) for op, inputs, attrs in cases]
    assert got == want and batch == want
    assert sum(w[0] == "ok" for w in want) > len(want) - 5 and ("op-error", "invalid-argument") in want
