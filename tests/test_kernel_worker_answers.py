"""How the kernels' child (oracle/kernel_worker.py) takes a kernel's results
and writes its answers: the results read where the tensors hold them
(`_execute`, no copy), each answer in one write (`_send`)."""

from __future__ import annotations

import gc
import io
import os

import numpy as np
import pytest

from tf_kernel_support import op_determinism_off_after, tensorflow_as_the_kernel_worker  # noqa: F401
from tfsem.oracle import kernel_worker as W


def _copied(execute, ctx, op, n_out, tensors, flat):
    """`_execute` as it was: each result copied out (``numpy()``)."""
    return [t.numpy() for t in execute.execute(op, n_out, tensors, flat, ctx)]


def _run(tf, run, op, inputs, attrs):
    from tensorflow.python.eager import context, execute
    from tensorflow.python.framework import op_def_registry
    ctx = context.context()
    tensors = [tf.constant(a) for a in inputs]
    flat, n = W._signature(tf, op_def_registry, op, tensors, attrs)
    return run(execute, ctx, op, n, tensors, flat)


CASES = [
    ("Relu6", [np.random.default_rng(1).standard_normal((8, 16, 16, 24)).astype(np.float32) * 8],
     {"T": "DT_FLOAT"}),
    ("MatMul", [np.random.default_rng(2).standard_normal((64, 48)).astype(np.float32),
                np.random.default_rng(3).standard_normal((48, 32)).astype(np.float32)],
     {"T": "DT_FLOAT"}),
    ("Sum", [np.random.default_rng(4).standard_normal((5, 7)), np.array([0, 1], np.int32)],
     {"T": "DT_DOUBLE", "Tidx": "DT_INT32", "keep_dims": False}),
    ("Exp", [np.array([np.nan, -0.0, 1e-40, 88.0], np.float32)], {"T": "DT_FLOAT"}),
    ("Cast", [np.array([[1.5, -2.5], [np.inf, 3.0]], np.float32)],
     {"SrcT": "DT_FLOAT", "DstT": "DT_INT64", "Truncate": False}),
    ("Unpack", [np.arange(12, dtype=np.int32).reshape(3, 4)], {"T": "DT_INT32", "num": 3, "axis": 0}),
]


@pytest.mark.parametrize("op,inputs,attrs", CASES, ids=[c[0] for c in CASES])
def test_results_read_in_place_are_the_copied_results(op, inputs, attrs):
    tf = tensorflow_as_the_kernel_worker("the kernels' child runs TensorFlow's kernels")
    mine = _run(tf, W._execute, op, inputs, attrs)
    theirs = _run(tf, _copied, op, inputs, attrs)
    assert len(mine) == len(theirs) >= 1
    for a, b in zip(mine, theirs):
        assert type(a) is type(b)
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        assert a.tobytes() == b.tobytes()       # (bit for bit: NaN and -0 included)


def test_results_read_in_place_outlive_their_tensors():
    """An array `_execute` gives holds its tensor's memory: after the tensor
    objects are dropped and many other results are made (memory the
    allocator could hand out again), its bits are those it had."""
    tf = tensorflow_as_the_kernel_worker("the kernels' child runs TensorFlow's kernels")
    x = np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32)
    (kept,) = _run(tf, W._execute, "Neg", [x], {"T": "DT_FLOAT"})
    expected = (-x).tobytes()
    assert kept.tobytes() == expected
    gc.collect()
    for k in range(50):
        _run(tf, W._execute, "Neg", [x * (k + 2)], {"T": "DT_FLOAT"})
        _run(tf, W._execute, "Exp", [x + k], {"T": "DT_FLOAT"})
    gc.collect()
    assert kept.tobytes() == expected


def test_answer_runs_twice_and_answers_the_results():
    tf = tensorflow_as_the_kernel_worker("the kernels' child runs TensorFlow's kernels")
    from tensorflow.python.eager import context, execute
    from tensorflow.python.framework import errors, op_def_registry
    op, inputs, attrs = CASES[0]
    answer = W._answer(tf, op_def_registry, execute, errors, context.context(), op, inputs,
                       attrs, 1)
    assert answer[0] == "ok"
    assert answer[1][0].tobytes() == np.clip(inputs[0], 0, 6).tobytes()


class _Counting(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.writes = 0

    def write(self, b):
        self.writes += 1
        return super().write(b)


@pytest.mark.parametrize("n", [10, 20_000, 300_000])
def test_an_answer_is_one_write(n):
    """The length and the message go out in one write, large or small (a
    message past the output's buffer went out as two, the reader woken
    between them), and read back whole."""
    out = _Counting()
    msg = (7, "ok", [np.arange(n, dtype=np.float32)])
    W._send(out, msg)
    assert out.writes == 1
    got = W._recv(io.BytesIO(out.getvalue()))
    assert got[:2] == (7, "ok") and got[2][0].tobytes() == msg[2][0].tobytes()


def test_an_answer_through_the_answer_file_is_one_write():
    region = W.Region.create("tfsem-test-answers")
    if region is None:
        pytest.skip("no shared files on this system")
    try:
        reader = W.Region(os.dup(region.fd))
        out = _Counting()
        msg = (3, "ok", [np.arange(100_000, dtype=np.float64), np.arange(5, dtype=np.int32)])
        W._send(out, msg, region)
        assert out.writes == 1
        got = W._recv(io.BytesIO(out.getvalue()), reader)
        assert [a.tobytes() for a in got[2]] == [a.tobytes() for a in msg[2]]
    finally:
        region.close()


def test_a_tensor_without_the_private_reader_is_copied_out():
    """Where a TensorFlow's tensors have no `_numpy`, `_execute` takes
    `numpy()`'s copy: the same bits."""

    class Plain:
        def __init__(self, a):
            self.a = a

        def numpy(self):
            return self.a.copy()

    class Execute:
        @staticmethod
        def execute(op, n_out, tensors, flat, ctx):
            return [Plain(np.arange(6, dtype=np.float32).reshape(2, 3))]

    (r,) = W._execute(Execute, None, "X", 1, [], ())
    assert r.tobytes() == np.arange(6, dtype=np.float32).tobytes() and r.shape == (2, 3)
