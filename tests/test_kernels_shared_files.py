"""The arrays to and from TensorFlow's kernel child in shared files
(oracle/kernel_worker.py `Region`, oracle/kernels.py `_Client`): a message
read back is the message written, bit for bit, whether its arrays crossed
in the message or in the file (every dtype, NaN payloads, signed zeros,
0-d, empty and strided arrays, a file that grows, one that may not); the
child's comparison of its two runs (`_same_bytes`) says what comparing
the bytes says; and with TensorFlow, evaluations whose inputs cross in the
files give the bits of those that cross in the pipe, also after a call
that stopped waiting (whose inputs the child may still be reading: the
next request then goes in the message)."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from tfsem.oracle import kernel_worker as kw

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"),
                                reason="shared files need memfd_create (Linux)")


def _arrays(rng):
    import ml_dtypes
    n = kw.SHARED_MIN // 4 + 3          # (past the size that goes in the file)
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    words[:6] = [0x7FC00001, 0xFFC00123, 0x7F800001, 0x80000000, 0x00000001, 0x7F7FFFFF]
    f32 = words.view(np.float32)
    return [
        f32,                                                     # large: in the file
        f32[:7].copy(),                                          # small: in the message
        f32.reshape(-1)[::2],                                    # strided (copied in band)
        np.float32(-0.0).reshape(()),                            # 0-d
        np.zeros((0, 5), np.float64),                            # empty
        rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64),
        (rng.random(3 * n) < 0.5),                               # bool
        rng.integers(0, 2**16, n, dtype=np.uint16).view(np.float16),
        rng.integers(0, 2**16, n, dtype=np.uint16).view(ml_dtypes.bfloat16),
        np.arange(n * 2, dtype=np.uint8).reshape(2, n),
        np.array(["a", "bc"], dtype=object),
    ]


def _bits(a):
    return (type(a).__name__, a.dtype.str, str(a.dtype), a.shape, a.tobytes()) \
        if isinstance(a, np.ndarray) and a.dtype != object else repr(a)


def _pair():
    """A writer's and a reader's view of one shared file (two descriptors,
    as the parent's and the child's)."""
    w = kw.Region.create("test-shared")
    r = kw.Region(os.dup(w.fd))
    return w, r


def test_a_message_read_back_is_the_message_written_bit_for_bit():
    rng = np.random.default_rng(7)
    arrays = _arrays(rng)
    msg = (5, "batch", [("Exp", arrays, {"T": "DT_FLOAT", "alpha": float("nan")}, 1)])
    w, r = _pair()
    try:
        data = w.dumps(msg)
        got = pickle.loads(data)
        assert got[0] == kw.SHARED_TAG           # large arrays went in the file
        assert len(data) < sum(a.nbytes for a in arrays) // 2
        for copy in (False, True):
            back = r.loads(data, copy=copy)
            assert back[:2] == msg[:2]
            (op, got_arrays, attrs, n), = back[2]
            assert [_bits(a) for a in got_arrays] == [_bits(a) for a in arrays]
        # a message with no large array is a plain pickle, read by either side
        small = (6, "Exp", [arrays[1]], {}, 1)
        assert w.dumps(small) == pickle.dumps(small, protocol=5)
        assert [_bits(a) for a in kw.plain_loads(w.dumps(small))[2]] == [_bits(arrays[1])]
        with pytest.raises(EOFError):
            kw.plain_loads(data)                 # (a side with no file refuses it)
    finally:
        w.close()
        r.close()


def test_copied_out_arrays_do_not_change_when_the_file_is_written_again():
    rng = np.random.default_rng(8)
    a = rng.random(kw.SHARED_MIN).astype(np.float32)
    w, r = _pair()
    try:
        first = r.loads(w.dumps((1, [a])), copy=True)[1][0]
        w.dumps((2, [np.zeros_like(a)]))             # the same place, written again
        assert first.tobytes() == a.tobytes()
    finally:
        w.close()
        r.close()


def test_the_file_grows_and_the_reader_maps_it_again():
    w, r = _pair()
    try:
        for n in (kw.SHARED_MIN, 1 << 20, 3 << 20):      # each past the last mapping
            a = np.arange(n, dtype=np.uint8)
            back = r.loads(w.dumps((n, [a, a[::-1].copy()])), copy=False)
            assert back[1][0].tobytes() == a.tobytes()
            assert back[1][1].tobytes() == a[::-1].tobytes()
        assert os.fstat(w.fd).st_size >= 2 * (3 << 20)
    finally:
        w.close()
        r.close()


def test_past_the_largest_file_the_arrays_go_in_the_message(monkeypatch):
    monkeypatch.setattr(kw, "SHARED_MAX", 1 << 20)
    w, r = _pair()
    try:
        a = np.arange(1 << 19, dtype=np.float32)       # 2 MB: past the bound
        data = w.dumps((1, [a]))
        assert not kw._shared(pickle.loads(data)) and len(data) > a.nbytes
        assert kw.plain_loads(data)[1][0].tobytes() == a.tobytes()
    finally:
        w.close()
        r.close()


def test_the_comparison_of_two_runs_says_what_their_bytes_say():
    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.float64, np.float16, np.int8, np.uint16, np.bool_):
        for n in (0, 1, 3, 7, 8, 9, 1001, 4096):
            a = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
            b = a.copy()
            assert kw._same_bytes(a, b) == (a.tobytes() == b.tobytes())
            if n:
                k = int(rng.integers(0, b.nbytes))
                flipped = b.view(np.uint8).copy()
                flipped[k] ^= 1 << int(rng.integers(0, 8))
                b = flipped.view(dtype)
                assert kw._same_bytes(a, b) == (a.tobytes() == b.tobytes()) == False  # noqa: E712
    # NaNs of different payloads and -0.0 against +0.0: different bits, not the same
    x = np.array([0x7FC00001, 0x80000000], np.uint32).view(np.float32)
    y = np.array([0x7FC00002, 0x00000000], np.uint32).view(np.float32)
    assert not kw._same([x], [y]) and kw._same([x], [x.copy()])
    assert not kw._same([x[::2]], [y[::2]])         # (strided: compared by their bytes)


# -- with TensorFlow: the child's answers, through the files and through the pipe --


@pytest.fixture()
def tensorflow_kernels():
    pytest.importorskip("tensorflow", reason="TensorFlow's kernels: tfsem[tensorflow]")
    from tfsem.oracle import kernels
    import tfsem.oracle.opdefs  # noqa: F401  (the registry supplies DETERMINISTIC)
    with kernels.use(True):
        yield kernels


def _requests():
    rng = np.random.default_rng(10)
    n = 3 * kw.SHARED_MIN // 4
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    words[:8] = [0x7FC00001, 0xFFC00123, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001,
                 0x807FFFFF, 0x7F7FFFFF]
    x = words.view(np.float32)
    m = x[:256 * 48].reshape(256, 48).copy()
    return [("Exp", [x], {"T": "DT_FLOAT"}, 1),
            ("MatMul", [m, m.T.copy()], {"transpose_a": False, "transpose_b": False}, 1),
            ("Sum", [m, np.array([0], np.int32)], {"keep_dims": False}, 1),
            ("Cast", [x], {"DstT": "DT_INT8", "Truncate": False}, 1),
            ("MatMul", [m, m], {}, 1)]                        # fails: shapes


def _answers(kernels, client, requests):
    out = []
    for op, inputs, attrs, n in requests:
        answer = client.call(op, inputs, dict(attrs), n)
        out.append((answer[0], [(r.dtype.str, r.shape, r.tobytes()) for r in answer[1]])
                   if answer[0] == "ok" else answer[:2])
    return out


def test_answers_through_the_files_are_the_answers_through_the_pipe(tensorflow_kernels,
                                                                    monkeypatch):
    kernels = tensorflow_kernels
    requests = _requests()
    results = {}
    for shared in (True, False):
        monkeypatch.setattr(kernels, "SHARED", shared)
        client = kernels._Client()
        try:
            assert (client.requests is not None) == shared
            results[shared] = _answers(kernels, client, requests)
            batch = client.call_batch([(op, i, dict(a), n) for op, i, a, n in requests])
            assert [(b[0], [(r.dtype.str, r.shape, r.tobytes()) for r in b[1]])
                    if b[0] == "ok" else b[:2] for b in batch] == results[shared]
        finally:
            client.close()
    assert results[True] == results[False]
    assert [r[0] for r in results[True]] == ["ok"] * 4 + ["op-error"]


def test_after_a_call_that_stopped_waiting_the_next_request_goes_in_the_message(
        tensorflow_kernels, monkeypatch):
    kernels = tensorflow_kernels
    client = kernels._Client()
    try:
        requests = _requests()
        expected = _answers(kernels, client, requests)
        sent = []
        real = kw.Region.dumps

        def dumps(self, msg):
            sent.append(msg[0])
            return real(self, msg)

        monkeypatch.setattr(kw.Region, "dumps", dumps)
        big = np.ones((512, 512), np.float32)
        with kernels.request_deadline(0.0):      # gives up at once: its answer comes later
            with pytest.raises(kernels.KernelRefused, match="time budget"):
                client.call("MatMul", [big, big], {}, 1)
        assert client.unanswered
        del sent[:]
        first = _answers(kernels, client, requests[:1])
        assert sent == []                        # in the message: the child may read the file
        assert not client.unanswered             # (its answer was read and skipped)
        rest = _answers(kernels, client, requests[1:])
        assert len(sent) == len(requests) - 1    # the file again
        assert first + rest == expected
    finally:
        client.close()


def test_where_the_system_refuses_the_memory_the_arrays_go_in_the_message(monkeypatch):
    w, r = _pair()
    try:
        def refused(self, size, grow):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(kw.Region, "_mapped", refused)
        a = np.arange(1 << 16, dtype=np.float32)
        data = w.dumps((1, [a]))
        assert kw.plain_loads(data)[1][0].tobytes() == a.tobytes()
        assert kw.Region.create("test-refused") is None      # (no file at all then)
    finally:
        monkeypatch.undo()
        w.close()
        r.close()


def test_an_answer_that_cannot_be_read_is_refused_and_the_next_call_starts_a_new_child(
        tensorflow_kernels, monkeypatch):
    kernels = tensorflow_kernels
    monkeypatch.setattr(kernels, "_client", None)
    x = np.arange(kw.SHARED_MIN, dtype=np.float32)
    first = kernels._get_client()
    expected = first.call("Exp", [x], {"T": "DT_FLOAT"}, 1)
    real = kw.Region.loads

    def unreadable(self, data, copy):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(kw.Region, "loads", unreadable)
    with pytest.raises(kernels.KernelRefused, match="could not be read"):
        first.call("Exp", [x], {"T": "DT_FLOAT"}, 1)
    monkeypatch.setattr(kw.Region, "loads", real)
    second = kernels._get_client()
    assert second is not first and first.requests is None     # (its files closed)
    answer = second.call("Exp", [x], {"T": "DT_FLOAT"}, 1)
    assert answer[1][0].tobytes() == expected[1][0].tobytes()
    first.proc.wait(timeout=30)                                # (its input closed: it exits)
    second.close()
    kernels._client = None
