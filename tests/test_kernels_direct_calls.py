"""The kernels' child's direct calls (oracle/kernel_worker.py `_Direct`,
`DIRECT`): tensors made with ``EagerTensor`` on the array itself and the
kernel run by ``TFE_Py_Execute``, against the public ``tf.constant`` and
``execute.execute`` they stand for, bit for bit on edge values."""

from __future__ import annotations

import numpy as np
import pytest

from tf_kernel_support import op_determinism_off_after, tensorflow_as_the_kernel_worker  # noqa: F401
from tfsem.oracle import kernel_worker as W

F32 = np.array([0x7FC00001, 0xFFA00000, 0x7F800001, 0x80000000, 0x00000001, 0x807FFFFF,
                0x7F800000, 0xFF800000, 0x3F800000, 0x00000000], np.uint32).view(np.float32)
F64 = np.array([0x7FF8000000000001, 0xFFF4000000000000, 0x8000000000000000, 1,
                0x000FFFFFFFFFFFFF, 0x7FF0000000000000, 0x3FF0000000000000],
               np.uint64).view(np.float64)
F16 = np.array([0x7E01, 0xFD00, 0x8000, 0x0001, 0x83FF, 0x7C00, 0x3C00], np.uint16).view(np.float16)
I32 = np.array([np.iinfo(np.int32).min, -1, 0, 1, np.iinfo(np.int32).max], np.int32)
I64 = np.array([np.iinfo(np.int64).min, -1, 0, 1, np.iinfo(np.int64).max], np.int64)


def _cases():
    """(op, inputs, attrs): NaN payloads (quiet and signalling), signed
    zeros, subnormals, infinities, int extremes, 0-d, empty, bool, half,
    bfloat16, strings, inputs not contiguous, an op error."""
    out = []
    for x, t in ((F32, "DT_FLOAT"), (F64, "DT_DOUBLE"), (F16, "DT_HALF")):
        for op in ("Neg", "Abs", "Exp", "Relu", "Sqrt"):
            out.append((op, [x], {"T": t}))
        out.append(("Add", [x, x[::-1].copy()], {"T": t}))
        out.append(("Mul", [x, x[::-1].copy()], {"T": t}))
        out.append(("Cast", [x], {"SrcT": t, "DstT": "DT_INT64", "Truncate": False}))
    for x, t in ((I32, "DT_INT32"), (I64, "DT_INT64")):
        out.append(("Add", [x, x[::-1].copy()], {"T": t}))
        out.append(("Mul", [x, x], {"T": t}))
        out.append(("Neg", [x], {"T": t}))
        out.append(("Sum", [x.reshape(5, 1), np.array([0], np.int32)],
                    {"T": t, "Tidx": "DT_INT32", "keep_dims": False}))
    out.append(("Add", [np.uint8([0, 255, 128]), np.uint8([255, 1, 128])], {"T": "DT_UINT8"}))
    out.append(("Exp", [np.float32(-0.0).reshape(())], {"T": "DT_FLOAT"}))                 # 0-d
    out.append(("Exp", [np.zeros((0, 3), np.float32)], {"T": "DT_FLOAT"}))                # empty
    out.append(("Sum", [np.zeros((0, 3), np.float32), np.array([0], np.int32)],
                {"T": "DT_FLOAT", "Tidx": "DT_INT32", "keep_dims": True}))
    out.append(("LogicalAnd", [np.array([True, False, True]), np.array([True, True, False])], {}))
    out.append(("LogicalNot", [np.array(True)], {}))
    out.append(("Identity", [np.array([b"a", b"", b"\x00\xff"], object)], {"T": "DT_STRING"}))
    out.append(("StringLength", [np.array([b"ab", b""], object)], {"unit": "BYTE"}))
    try:
        from ml_dtypes import bfloat16
    except ImportError:
        pass
    else:
        b = np.array([0x7FC1, 0xFF81, 0x8000, 0x0001, 0x7F80], np.uint16).view(bfloat16)
        out.append(("Neg", [b], {"T": "DT_BFLOAT16"}))
        out.append(("Add", [b, b[::-1].copy()], {"T": "DT_BFLOAT16"}))
    # (large inputs: copied to aligned memory, `_Direct._copy`)
    rng = np.random.default_rng(11)
    big = rng.integers(0, 2**32, (64, 130), dtype=np.uint32).view(np.float32)    # NaNs, subnormals
    out.append(("Neg", [big], {"T": "DT_FLOAT"}))
    out.append(("Add", [big, big[::-1].copy()], {"T": "DT_FLOAT"}))
    out.append(("MatMul", [big[:, :64].copy(), big[:, 66:].T.copy()], {"T": "DT_FLOAT"}))
    out.append(("Neg", [rng.integers(-2**63, 2**63 - 1, 5000, dtype=np.int64)], {"T": "DT_INT64"}))
    out.append(("LogicalNot", [rng.random(20000) < 0.5], {}))
    out.append(("Cast", [big.astype(np.float64)], {"SrcT": "DT_DOUBLE", "DstT": "DT_HALF",
                                                   "Truncate": False}))
    try:
        from ml_dtypes import bfloat16
        out.append(("Neg", [rng.integers(0, 2**16, 20000, dtype=np.uint16).view(bfloat16)],
                    {"T": "DT_BFLOAT16"}))
    except ImportError:
        pass
    m = np.random.default_rng(5).standard_normal((6, 8)).astype(np.float32)
    out.append(("MatMul", [m[:, ::2], m.T[::2]], {"T": "DT_FLOAT"}))              # not contiguous
    out.append(("Neg", [m.T], {"T": "DT_FLOAT"}))
    out.append(("MatMul", [m, m], {"T": "DT_FLOAT"}))                             # an op error
    out.append(("Unpack", [np.arange(12, dtype=np.int32).reshape(3, 4)],
                {"T": "DT_INT32", "num": 3, "axis": 0}))
    return out


def _form(answer):
    if answer[0] != "ok":
        return answer[:2]
    return answer[0], [(np.asarray(r).dtype.str, np.asarray(r).dtype.name, np.asarray(r).shape,
                        [bytes(v) for v in np.asarray(r).reshape(-1)]
                        if np.asarray(r).dtype.kind == "O" else np.asarray(r).tobytes())
                       for r in answer[1]]


def _here(tf, op, inputs, attrs, n_out=1):
    from tensorflow.python.eager import context, execute
    from tensorflow.python.framework import errors, op_def_registry
    return W._answer(tf, op_def_registry, execute, errors, context.context(), op,
                     inputs, attrs, n_out)


def _tensorflow():
    tf = tensorflow_as_the_kernel_worker("the kernels' child runs TensorFlow's kernels")
    from tensorflow.python.eager import context
    context.context().ensure_initialized()
    return tf


def test_direct_answers_are_the_public_calls_answers_bit_for_bit(monkeypatch):
    tf = _tensorflow()
    from tensorflow.python.eager import context, execute
    assert W._direct(execute, context.context()) is not None     # (the direct path is taken)
    cases = _cases()
    answers = {}
    for direct in (False, True, False):
        monkeypatch.setattr(W, "DIRECT", direct)
        before = [[a.copy() for a in inputs] for _op, inputs, _attrs in cases]
        got = [_form(_here(tf, op, inputs, attrs, 3 if op == "Unpack" else 1))
               for op, inputs, attrs in cases]
        # (no input written: each array as it was, bit for bit)
        for (_op, inputs, _attrs), was in zip(cases, before):
            assert [a.tobytes() if a.dtype.kind != "O" else list(a) for a in inputs] == \
                [a.tobytes() if a.dtype.kind != "O" else list(a) for a in was]
        answers.setdefault(direct, got)
        assert got == answers[direct]
    assert answers[True] == answers[False]
    oks = sum(a[0] == "ok" for a in answers[True])
    assert oks >= len(cases) - 3 and ("op-error", "invalid-argument") in answers[True]


def test_a_kernel_that_writes_its_input_writes_a_copy():
    """InplaceAdd, InplaceUpdate and InplaceSub write their input in place;
    on the direct path they write the tensor's own copy, as on the public
    one: the array (aligned, so that TensorFlow could hold it; writable or
    over immutable bytes, as a message's) is unchanged and the answers are
    the public path's, bit for bit, whether one array stands for one input
    or several."""
    tf = _tensorflow()
    from tensorflow.python.eager import context, execute
    from tensorflow.python.framework import errors, op_def_registry
    ctx = context.context()
    assert W._direct(execute, ctx) is not None
    raw = np.zeros(4096 + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    writable = raw[start:start + 4096].view(np.float32).reshape(4, 256)
    writable[:] = np.linspace(-3, 3, 1024, dtype=np.float32).reshape(4, 256)
    frozen = np.frombuffer(bytes(4096 + 64), np.uint8)
    start = (-frozen.ctypes.data) % 64
    frozen = frozen[start:start + 4096].view(np.float32).reshape(4, 256)
    i = np.array([0, 2], np.int32)
    for x in (writable, frozen):
        was = x.tobytes()
        for op in ("InplaceAdd", "InplaceUpdate", "InplaceSub"):
            for v in (x[:2].copy(), x[1:3]):
                answers = []
                for direct in (True, False):
                    W.DIRECT = direct
                    try:
                        answers.append(_form(W._answer(tf, op_def_registry, execute, errors, ctx,
                                                       op, [x, i, v], {"T": "DT_FLOAT"}, 1)))
                    finally:
                        W.DIRECT = True
                assert answers[0] == answers[1] and answers[0][0] == "ok"
                assert x.tobytes() == was
        t = W._direct(execute, ctx).tensor(x)
        if x is writable:
            x[0, 0] = 7.0           # (the tensor holds its own copy)
            assert t._numpy().tobytes() == was
            x[0, 0] = np.float32(-3)


def test_the_public_calls_are_taken_where_the_direct_ones_do_not_stand_for_them():
    tf = _tensorflow()
    from tensorflow.python.eager import context
    from tensorflow.python.eager import execute as public

    class Hooked:
        """An `execute` whose execute is not quick_execute (op callbacks)."""
        quick_execute = public.quick_execute
        calls = []

        @staticmethod
        def execute(*args, **kw):
            Hooked.calls.append(args[0])
            return public.quick_execute(*args, **kw)

    assert W._direct(Hooked, context.context()) is None
    from tensorflow.python.framework import errors, op_def_registry
    assert _form(W._answer(tf, op_def_registry, Hooked, errors, context.context(), "Neg",
                           [F32], {"T": "DT_FLOAT"}, 1)) == \
        _form(_here(tf, "Neg", [F32], {"T": "DT_FLOAT"}))
    assert Hooked.calls == ["Neg", "Neg"]       # (both runs through the hooked call)

    class Uninitialized:
        _context_handle = None

    assert W._direct(public, Uninitialized()) is None


def test_the_switch_turns_the_direct_calls_off_in_the_child(monkeypatch):
    """Children started with TFSEM_TF_KERNELS_DIRECT on and off give the
    same answers, bit for bit, through the shared files and through the
    pipe, one by one and batched."""
    pytest.importorskip("tensorflow", reason="the kernels' child runs TensorFlow's kernels")
    from tfsem.oracle import kernels
    cases = _cases()
    got = {}
    for shared in (True, False):
        monkeypatch.setattr(kernels, "SHARED", shared)
        for direct in ("0", "1"):
            monkeypatch.setenv("TFSEM_TF_KERNELS_DIRECT", direct)
            client = kernels._Client()
            try:
                one = [_form(client.call(op, [np.ascontiguousarray(a) if a.ndim else a
                                              for a in inputs], dict(attrs),
                                         3 if op == "Unpack" else 1))
                       for op, inputs, attrs in cases]
                batch = [_form(a) for a in client.call_batch(
                    [(op, [np.ascontiguousarray(a) if a.ndim else a for a in inputs], dict(attrs),
                      3 if op == "Unpack" else 1) for op, inputs, attrs in cases])]
            finally:
                client.close()
            assert one == batch
            got[shared, direct] = one
    assert len(set(map(repr, got.values()))) == 1
    assert sum(a[0] == "ok" for a in got[True, "1"]) >= len(cases) - 3


def test_a_batch_of_kernels_that_write_one_shared_input_answers_alike_on_both_paths(monkeypatch):
    """One array sent to several requests of a batch is one array in the
    child (pickle keeps one object): kernels that write their input in
    place must not see each other's writes, on either path."""
    pytest.importorskip("tensorflow", reason="the kernels' child runs TensorFlow's kernels")
    from tfsem.oracle import kernels
    x = np.random.default_rng(9).random((64, 256)).astype(np.float32)     # 64 kB: in the file
    i, v = np.array([0, 5], np.int32), np.ones((2, 256), np.float32)
    calls = [("InplaceAdd", [x, i, v], {}, 1), ("InplaceUpdate", [x, i, v], {}, 1),
             ("InplaceSub", [x, i, v], {}, 1), ("Identity", [x], {}, 1), ("Add", [x, x], {}, 1)]
    got = {}
    for shared in (True, False):
        monkeypatch.setattr(kernels, "SHARED", shared)
        for direct in ("0", "1"):
            monkeypatch.setenv("TFSEM_TF_KERNELS_DIRECT", direct)
            client = kernels._Client()
            try:
                got[shared, direct] = [_form(a) for a in client.call_batch(
                    [(op, list(ins), dict(at), n) for op, ins, at, n in calls])]
            finally:
                client.close()
    assert len(set(map(repr, got.values()))) == 1
    (identity,) = got[True, "1"][3][1]
    assert identity[3] == x.tobytes()           # (no kernel's write reached another input)


def test_a_large_input_is_copied_once_to_memory_tensorflow_holds(monkeypatch):
    """`_Direct._copy`: a private copy of the same dtype, shape and bytes,
    at a multiple of 64 in memory, which the tensor holds (no second copy);
    with ALIGNED_COPIES off, numpy's copy."""
    tf = _tensorflow()
    from tensorflow.python.eager import context, execute
    d = W._direct(execute, context.context())
    rng = np.random.default_rng(12)
    arrays = [rng.integers(0, 2**32, (4, 32, 32, 3), dtype=np.uint32).view(np.float32),
              rng.random(W.ALIGNED_COPY_MIN) < 0.5,
              rng.integers(-2**63, 2**63 - 1, (3000,), dtype=np.int64).reshape(30, 100)]
    try:
        from ml_dtypes import bfloat16
        arrays.append(rng.integers(0, 2**16, 20000, dtype=np.uint16).view(bfloat16))
    except ImportError:
        pass
    for a in arrays:
        c = d._copy(a)
        assert c.ctypes.data % W.ALIGN == 0 and not np.shares_memory(a, c)
        assert (c.dtype, c.shape, c.tobytes()) == (a.dtype, a.shape, a.tobytes())
        assert c.flags.c_contiguous and c.flags.writeable
        t = d.tensor(a)
        assert t._numpy().ctypes.data % W.ALIGN == 0 and not np.shares_memory(a, t._numpy())
        assert t._numpy().tobytes() == a.tobytes() and t.dtype == tf.constant(a).dtype
        monkeypatch.setattr(W, "ALIGNED_COPIES", False)
        plain = d._copy(a)
        monkeypatch.setattr(W, "ALIGNED_COPIES", True)
        assert (plain.dtype, plain.shape, plain.tobytes()) == (c.dtype, c.shape, c.tobytes())
    small = np.arange(5, dtype=np.float32)
    assert d._copy(small).tobytes() == small.tobytes()
    strings = np.array([b"x" * 30000], object)
    assert d._copy(strings)[0] == strings[0]
