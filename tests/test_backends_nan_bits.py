"""The device backends give the oracle's NaN bits, and so TensorFlow's.

The op models give a NaN result TensorFlow's sign and payload
(oracle/functions.py `nan_bits`; tests/test_arithmetic_nan_bits.py compares
them with TensorFlow's kernels).  The same models run on a GPU through
cupy, where every array operation of `nan_bits` (views as unsigned
integers, `where`, broadcasts, the packet mask) is cupy's.  Here every
registered function is applied on the device backends to float operands
full of NaNs of both signs, quiet and signalling, with payloads, beside
infinities, signed zeros and subnormals, and each result's bits must be
the oracle's own (numpy, host).

On a machine without CUDA the cupy backend's code runs with numpy
substituted (the same array-module path: `numpy_as_cupy`); the real-cupy
case skips, saying why.
"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.backends import arraymodule as am
from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.backends.execute import apply_function
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Error, Tensor

from nan_bits_support import UINT, arr, bits

#: bit patterns per width: quiet and signalling NaNs of both signs, with
#: and without payloads; infinities, signed zeros, the smallest subnormal,
#: the largest finite value, 1, -2.5
PATTERNS = {
    2: [0x7e00, 0xfe00, 0x7e01, 0xfd55, 0x7c01, 0xfc02, 0x7c00, 0xfc00, 0x0000, 0x8000,
        0x0001, 0x8001, 0x7bff, 0x3c00, 0xc100],
    4: [0x7fc00000, 0xffc00000, 0x7fc00001, 0xffd2345f, 0x7f800001, 0xff812345, 0x7f800000,
        0xff800000, 0x0, 0x80000000, 0x1, 0x80000001, 0x7f7fffff, 0x3f800000, 0xc0200000],
    8: [0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000000001, 0xfffa5a5a5a5a5a5a,
        0x7ff0000000000001, 0xfff0000012345678, 0x7ff0000000000000, 0xfff0000000000000,
        0x0, 0x8000000000000000, 0x1, 0x8000000000000001, 0x7fefffffffffffff,
        0x3ff0000000000000, 0xc004000000000000],
}
BF16 = [0x7fc0, 0xffc0, 0x7fc1, 0xffa5, 0x7f81, 0xff82, 0x7f80, 0xff80, 0x0000, 0x8000,
        0x0001, 0x8001, 0x7f7f, 0x3f80, 0xc020]

DTYPES = ["float16", "float32", "float64", "bfloat16"]

#: (shape of the first operand, shape of the others): equal shapes across a
#: packet's end (Eigen's packets of 4 and 8 elements and their tails), and
#: the one-element forms whose NaN is chosen by place
SHAPES = [((9,), (9,)), ((37,), (37,)), ((), (12,)), ((12,), ()), ((1,), (10,)),
          ((2, 5), (2, 5))]

#: functions of at most this many inputs are applied (every optimizer's
#: update and the arithmetic among them)
MAX_INPUTS = 12


def _functions() -> list[str]:
    # (not the TensorList functions: the device backends refuse them by
    # name, their values are lists, tests/test_tensor_lists.py)
    return sorted(n for n, f in fns.registered(None).items()
                  if 0 < f.n_in <= MAX_INPUTS and n != "Const" and "TensorList" not in n)


def _operand(rng: np.random.Generator, dt: str, shape: tuple) -> Tensor:
    pool = BF16 if dt == "bfloat16" else PATTERNS[np.dtype(dt).itemsize]
    # (half of the elements NaN: two NaNs meet at many places, also past
    # numpy's vectorized loops, where numpy's own choice is not TensorFlow's)
    nans, others = pool[:6], pool[6:]
    raw = np.where(rng.random(shape) < 0.5,
                   rng.choice(np.array(nans, dtype=np.uint64), size=shape),
                   rng.choice(np.array(others, dtype=np.uint64), size=shape))
    width = 2 if dt == "bfloat16" else np.dtype(dt).itemsize
    return Tensor(arr(dt, raw.astype(UINT[width])), dt)


def _operands(fn, dt: str, shapes, seed: int) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    first, rest = shapes
    return [_operand(rng, dt, first if i == 0 else rest) for i in range(fn.n_in)]


def _oracle(fn, args):
    """The oracle's results (host numpy), or the exception's type."""
    try:
        return fn.apply(args, {})
    except Exception as exc:   # noqa: BLE001 - compared by type with the device's
        return type(exc)


def _device(fn, args, backend):
    try:
        dev = [a if isinstance(a, Error) else backend.to_device(a.array) for a in args]
        got = apply_function(fn, dev, {}, backend.xp)
    except Exception as exc:   # noqa: BLE001
        return type(exc)
    arrays = iter(backend.to_host([g for g in got if not isinstance(g, Error)]))
    return tuple(g if isinstance(g, Error) else Tensor(next(arrays)) for g in got)


def _same_bits(want, got, where: str) -> None:
    if isinstance(want, type) or isinstance(got, type):
        assert want == got, f"{where}: oracle {want!r}, device {got!r}"
        return
    assert len(want) == len(got), where
    for k, (w, g) in enumerate(zip(want, got)):
        if isinstance(w, Error) or isinstance(g, Error):
            assert w == g, f"{where} result {k}: oracle {w!r}, device {g!r}"
            continue
        assert (w.dtype, w.shape) == (g.dtype, g.shape), f"{where} result {k}"
        if np.ascontiguousarray(w.array).tobytes() != np.ascontiguousarray(g.array).tobytes():
            shown = (lambda a: [hex(b) for b in bits(a)]) if w.array.itemsize in UINT \
                else (lambda a: a.tolist())
            raise AssertionError(f"{where} result {k}: oracle {shown(w.array)}, "
                                 f"device {shown(g.array)}")


def _compare(backend, dtypes) -> int:
    """Every function, dtype and shape pair on `backend`; the number of
    cases whose oracle result holds a NaN (the cases that test a NaN's
    bits)."""
    nan_cases = refused = 0
    wrong: list[str] = []
    for name in _functions():
        fn = fns.get(name)
        for dt in dtypes:
            for s, shapes in enumerate(SHAPES):
                args = _operands(fn, dt, shapes, seed=s)
                want = _oracle(fn, args)
                if not isinstance(want, type):
                    with np.errstate(all="ignore"):
                            nan_cases += any(isinstance(w, Tensor) and w.dtype == dt and
                                         bool(np.isnan(w.array.astype(np.float32)).any())
                                         for w in want)
                got = _device(fn, args, backend)
                if dt == "bfloat16" and got is fns.CannotRun:
                    # cupy has no bfloat16 (nor its stand-in, as strict as
                    # cupy): the backend refuses by name, never a wrong bit
                    refused += 1
                    continue
                try:
                    _same_bits(want, got, f"{name} {dt} {shapes}")
                except AssertionError as exc:
                    wrong.append(str(exc))
    # (every case that differs, not only the first: a GPU's run is short)
    assert not wrong, f"{len(wrong)} cases differ:\n" + "\n".join(wrong[:40])
    # (every other dtype is computed, not refused)
    assert refused <= len(_functions()) * len(SHAPES)
    return nan_cases


def test_the_cupy_code_path_gives_the_oracles_nan_bits():
    nan_cases = _compare(numpy_as_cupy(), DTYPES)
    # (the operands are mostly NaN: most arithmetic results hold one)
    assert nan_cases > 200


@pytest.mark.skipif(not am.cuda_available(),
                    reason=f"needs cupy and a CUDA GPU: {am.cuda_unavailable_reason()}")
def test_cupy_on_the_gpu_gives_the_oracles_nan_bits():  # pragma: no cover - needs a GPU
    nan_cases = _compare(get_backend("cupy"), DTYPES)
    assert nan_cases > 200
