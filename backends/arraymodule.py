"""Array backends: numpy on the CPU, cupy on an NVIDIA GPU.

Every registry function is written once against an array module `xp`
(`tfsem.oracle.functions`); a backend supplies that module plus the two
transfers a run needs: host -> device for the inputs σ, device -> host for the
outcome, once, at the end of a run.

cupy is an optional extra (``pip install 'tfsem[gpu]'``).  Selecting it
without cupy, or without a usable CUDA device, raises
:class:`BackendUnavailable` naming what is missing.

Without a GPU the cupy code path still runs: :func:`numpy_as_cupy` gives the
*cupy* backend class with numpy substituted for cupy (a thin stand-in that
supplies the cupy-only entry points the backend uses, `asnumpy` and
`cuda.Device().synchronize()`).  It is for tests; :func:`substitute_cupy`
makes :func:`get_backend` hand it out, so that the command line's cupy path can
be tested too.
"""

from __future__ import annotations

import contextlib
import os
import types
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

NUMPY, CUPY = "numpy", "cupy"
BACKENDS = (NUMPY, CUPY)

INSTALL_HINT = "pip install 'tfsem[gpu]'"


class BackendUnavailable(RuntimeError):
    """The selected backend cannot run here; the message says what is missing."""


@dataclass
class TransferCounts:
    """How many host<->device transfers a backend has made (for tests: a run
    moves σ to the device once and its outcome back once)."""
    to_device: int = 0
    to_host: int = 0


@dataclass
class Backend:
    """An array module and its transfers.  `name` is "numpy" or "cupy";
    `substituted` is True for the cupy backend running on numpy."""

    name: str
    xp: Any
    substituted: bool = False
    transfers: TransferCounts = field(default_factory=TransferCounts)

    @property
    def label(self) -> str:
        return f"{self.name} (numpy substituted)" if self.substituted else self.name

    def to_device(self, array: np.ndarray) -> Any:
        """One host array onto the device (read-only host arrays are never
        written: results are always fresh arrays)."""
        self.transfers.to_device += 1
        return self._upload(array)

    def to_host(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        """Every array back to the host in one transfer: arrays are packed by
        dtype into one flat buffer on the device, copied, and unpacked."""
        self.transfers.to_host += 1
        self.synchronize()
        if len(arrays) == 1:   # (one array: copied as it is, nothing to pack)
            a = arrays[0]
            return [self._download(a).reshape(a.shape).astype(a.dtype, copy=False)]
        out: list[np.ndarray | None] = [None] * len(arrays)
        by_dtype: dict[Any, list[int]] = {}
        for i, a in enumerate(arrays):
            by_dtype.setdefault(a.dtype, []).append(i)
        for dtype, idx in by_dtype.items():
            parts = [self.xp.ravel(arrays[i]) for i in idx]
            flat = self._download_fresh(self.xp.concatenate(parts) if parts
                                        else self.xp.zeros(0, dtype))
            offset = 0
            for i in idx:
                size = int(np.prod(arrays[i].shape, dtype=np.int64))
                out[i] = flat[offset:offset + size].reshape(arrays[i].shape).astype(dtype, copy=False)
                offset += size
        return out  # type: ignore[return-value]

    # -- per-module primitives ------------------------------------------------

    def _upload(self, array: np.ndarray) -> Any:
        return np.asarray(array)

    def _download(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def _download_fresh(self, array: Any) -> np.ndarray:
        """`_download` of an array made for the transfer alone (`to_host`'s
        packed buffer, which `concatenate` allocates and nothing else
        holds): on numpy it is on the host already, and no copy of it is
        made again (the values unpacked from it are views of it, held by
        no one but the caller, as a copy's were)."""
        return array

    def synchronize(self) -> None:
        pass

    def memory_available(self) -> int:
        """Bytes of free memory where arrays live (host RAM for numpy)."""
        return _host_memory_available()


class CupyBackend(Backend):
    """cupy: arrays live on the current CUDA device."""

    def _upload(self, array: np.ndarray) -> Any:
        if np.dtype(array.dtype).kind not in "biufc":   # bfloat16 (ml_dtypes): no cupy dtype
            from tfsem.oracle.functions import CannotRun
            raise CannotRun(f"cupy has no dtype {array.dtype}: a {array.dtype} value is not "
                            "run on cupy")
        return self.xp.asarray(array)

    def _download(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array)

    def _download_fresh(self, array: Any) -> np.ndarray:
        return self._download(array)

    def synchronize(self) -> None:
        self.xp.cuda.Device().synchronize()

    def memory_available(self) -> int:
        free, _total = self.xp.cuda.Device().mem_info
        return int(free)


def _host_memory_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


# ---------------------------------------------------------------------------
# cupy detection


def _import_cupy() -> Any:
    """cupy with a usable CUDA device, or BackendUnavailable saying what is missing."""
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError as exc:
        raise BackendUnavailable(
            f"the cupy backend needs cupy, which is not installed ({exc}); "
            f"install it with {INSTALL_HINT} on a machine with an NVIDIA GPU and CUDA 12") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises CUDARuntimeError, or ImportError for a missing libcudart
        raise BackendUnavailable(
            f"the cupy backend needs a CUDA device: cupy is installed but CUDA is not usable "
            f"({type(exc).__name__}: {exc})") from None
    if count < 1:
        raise BackendUnavailable("the cupy backend needs a CUDA device: cupy is installed "
                                 "but no CUDA device was found")
    return cupy


def cuda_available() -> bool:
    """True when cupy is installed and a CUDA device is usable."""
    try:
        _import_cupy()
    except BackendUnavailable:
        return False
    return True


def cuda_unavailable_reason() -> str:
    try:
        _import_cupy()
    except BackendUnavailable as exc:
        return str(exc)
    return ""


# ---------------------------------------------------------------------------
# numpy standing in for cupy (tests and CI without a GPU)


class _FakeDevice:
    def synchronize(self) -> None:
        pass

    @property
    def mem_info(self) -> tuple[int, int]:
        free = _host_memory_available()
        return free, free


#: cupy's message when a device array would become a numpy array implicitly
#: (cupy/_core/core.pyx, ndarray.__array__)
IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed. "
                       "Please use `.get()` to construct a NumPy array explicitly.")

#: numpy's top-level names that cupy 14 does not have (numpy 2.x's dir()
#: less the names cupy/__init__.py defines, at cupy 6b6d956, August 2026):
#: `xp.<name>` is an AttributeError on the stand-in as on cupy.
NOT_IN_CUPY = frozenset((
    "False_ ScalarType True_ asmatrix block bmat busday_count busday_offset busdaycalendar "
    "bytes_ char character clongdouble complex256 core ctypeslib datetime64 "
    "datetime_as_string datetime_data einsum_path emath errstate f2py flexible float128 "
    "frompyfunc fromregex geomspace get_include getbufsize geterr geterrcall "
    "histogram_bin_edges info insert is_busday isnat lib little_endian longdouble ma matrix "
    "matvec memmap nanpercentile nanquantile ndenumerate nditer nested_iters object_ polyder "
    "polydiv polyint rec recarray record sctypeDict setbufsize seterr seterrcall show_runtime "
    "spacing str_ strings test timedelta64 typecodes typing unstack vecdot vecmat void").split())

#: cupy.ndarray's public methods and attributes (cupy/_core/core.pyx)
_CUPY_ARRAY_ATTRS = frozenset((
    "T all any argmax argmin argpartition argsort astype base byteswap choose clip compress "
    "conj conjugate copy cumprod cumsum data device diagonal dot dtype fill flags flat "
    "flatten get imag item itemsize mT max mean min nbytes ndim nonzero partition prod ptp "
    "put ravel real repeat reshape round searchsorted set shape size sort squeeze std "
    "strides sum swapaxes take tobytes tolist trace transpose var view").split())

#: cupy functions that take host data (an upload) or only dtypes and shapes
_HOST_ARGUMENTS_OK = frozenset((
    "array asarray asanyarray ascontiguousarray asnumpy result_type can_cast promote_types "
    "min_scalar_type common_type isscalar dtype finfo iinfo broadcast_shapes").split())


def _cupy_dtype(dtype: Any) -> None:
    """cupy has numpy's bool, integer, float16/32/64 and complex dtypes, not
    ml_dtypes' bfloat16 (nor strings, objects, records)."""
    if np.dtype(dtype).kind not in "biufc":
        raise ValueError(f"Unsupported dtype {np.dtype(dtype)} (cupy has no such dtype)")


def _unsupported(x: Any) -> TypeError:
    return TypeError(f"Unsupported type {type(x)} (a numpy array where cupy wants a device "
                     "array: move it with xp.asarray first)")


def _to_numpy(x: Any, host_ok: bool) -> Any:
    """A stand-in argument as numpy sees it: device arrays unwrapped, lists
    and tuples walked; a host numpy array is refused as cupy refuses it."""
    if type(x) is DeviceArray:
        return x._a
    if isinstance(x, np.ndarray):
        if not host_ok:
            raise _unsupported(x)
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_to_numpy(y, host_ok) for y in x)
    return x


def _device(x: Any) -> Any:
    """A numpy result as cupy gives it: arrays and numpy scalars become
    device arrays (cupy's reductions and indexing give 0-d arrays, never
    numpy scalars); tuples and lists walked."""
    if isinstance(x, np.ndarray):
        return DeviceArray(x)
    if isinstance(x, np.generic):
        return DeviceArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_device(y) for y in x)
    if isinstance(x, list) and any(isinstance(y, (np.ndarray, np.generic)) for y in x):
        return [_device(y) for y in x]
    return x


def _call(fn: Any, args: Sequence[Any], kwargs: dict, host_ok: bool = False,
          ftz: bool = False) -> Any:
    args = _to_numpy(list(args), host_ok)
    kwargs = {k: _to_numpy(v, host_ok) for k, v in kwargs.items()}
    if not ftz:
        return _device(fn(*args, **kwargs))
    # an arithmetic kernel: float32 operands and results flushed as cupy's
    # kernels flush them (compiled with -ftz=true)
    return _device(_flush_results(fn(*[_ftz32(a) for a in args], **kwargs)))


_TINY32 = np.float32(np.finfo(np.float32).tiny)


def _ftz32(a: Any) -> Any:
    """A float32 array's subnormals replaced by zeros of their sign (what a
    CUDA kernel compiled with -ftz=true does to float32 operands and
    results); anything else unchanged."""
    if not isinstance(a, (np.ndarray, np.float32)) or a.dtype != np.float32:
        return a
    with np.errstate(all="ignore"):
        sub = (a != 0) & (np.abs(a) < _TINY32)
        return np.where(sub, np.copysign(np.float32(0), a), a).astype(np.float32) \
            if np.any(sub) else a


def _flush_results(r: Any) -> Any:
    if isinstance(r, tuple):
        return tuple(_ftz32(x) for x in r)
    return _ftz32(r)


class DeviceArray:
    """The stand-in's array: a numpy array that behaves as a cupy.ndarray
    where code could tell them apart.  Implicit conversion to numpy
    (`np.asarray`, `np.array`, numpy's buffer) raises cupy's TypeError, and
    `.get()` (or `xp.asnumpy`) is the way to the host; numpy's ufuncs and
    array functions dispatch to the stand-in as cupy's do (one cupy lacks
    is an error); a host numpy array among the operands is refused as cupy
    refuses it; `float()`, `int()`, `bool()`, iteration and `.item()` work
    (cupy synchronizes for them), `operator.index` does not (cupy has no
    `__index__`); results are device arrays, 0-d where numpy would give a
    scalar."""

    __slots__ = ("_a",)
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    # -- the way to the host ---------------------------------------------------

    def get(self, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
        return np.array(self._a, copy=True)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(IMPLICIT_CONVERSION)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if ufunc.__name__ in NOT_IN_CUPY:
            return NotImplemented
        if "out" in kwargs:
            kwargs["out"] = tuple(_to_numpy(o, False) for o in kwargs["out"])
        return _call(getattr(ufunc, method), inputs, kwargs, ftz=True)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ in NOT_IN_CUPY or func.__module__.split(".")[1:2] in (["ma"], ["lib"]):
            return NotImplemented
        return _call(func, args, kwargs, func.__name__ in _HOST_ARGUMENTS_OK)

    # -- attributes and methods -------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name not in _CUPY_ARRAY_ATTRS:
            raise AttributeError(f"cupy.ndarray has no attribute {name!r} (the cupy stand-in "
                                 "has only cupy's)")
        value = getattr(self._a, name)
        if name in ("get", "item", "tolist", "tobytes"):
            return value
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return _device(value) if isinstance(value, np.ndarray) else value

    def item(self) -> Any:
        return self._a.item()

    def tolist(self) -> Any:
        return self._a.tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self._a.tobytes(order)

    def set(self, arr: np.ndarray) -> None:
        self._a[...] = arr

    @property
    def shape(self) -> tuple:
        return self._a.shape

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def T(self) -> "DeviceArray":
        return DeviceArray(self._a.T)

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> "DeviceArray":
        _cupy_dtype(dtype)
        if np.dtype(dtype) == self._a.dtype:
            return DeviceArray(self._a.astype(dtype, order=order, copy=copy))
        # (a conversion kernel: float32 flushed on either side, as cupy's)
        with np.errstate(all="ignore"):
            return DeviceArray(_ftz32(_ftz32(self._a).astype(dtype, order=order)))

    def reshape(self, *shape: Any, **kwargs: Any) -> "DeviceArray":
        return _call(self._a.reshape, shape, kwargs)

    def view(self, *args: Any) -> "DeviceArray":
        if args:
            _cupy_dtype(args[0])
        return DeviceArray(self._a.view(*args))

    def copy(self, order: str = "C") -> "DeviceArray":
        return DeviceArray(self._a.copy(order))

    # -- containers, conversions ---------------------------------------------------

    def __getitem__(self, index: Any) -> "DeviceArray":
        return _device(self._a[_to_numpy(index, True)])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._a[_to_numpy(index, True)] = _to_numpy(value, False)

    def __len__(self) -> int:
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self) -> Iterator["DeviceArray"]:
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __bool__(self) -> bool:
        return bool(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __repr__(self) -> str:
        return repr(self._a)

    __str__ = __repr__

    def __copy__(self) -> "DeviceArray":
        return self.copy()

    def __deepcopy__(self, memo: Any) -> "DeviceArray":
        return self.copy()

    def __reduce__(self) -> Any:
        return DeviceArray, (self.get(),)


def _operators() -> None:
    """DeviceArray's arithmetic and comparison operators: numpy's ufuncs
    through the stand-in (a host array operand refused as cupy refuses it)."""
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
              "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
              "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
              "divmod": np.divmod}
    for name, uf in binary.items():
        def op(self, other, uf=uf):
            return _call(uf, (self, other), {}, ftz=True)

        def rop(self, other, uf=uf):
            return _call(uf, (other, self), {}, ftz=True)

        def iop(self, other, uf=uf):
            self._a[...] = _call(uf, (self, other), {}, ftz=True)._a
            return self
        setattr(DeviceArray, f"__{name}__", op)
        setattr(DeviceArray, f"__r{name}__", rop)
        if name != "divmod":
            setattr(DeviceArray, f"__i{name}__", iop)
    for name, uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                     "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
        setattr(DeviceArray, f"__{name}__",
                lambda self, other, uf=uf: _call(uf, (self, other), {}, ftz=True))
    for name, uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                     "invert": np.invert}.items():
        setattr(DeviceArray, f"__{name}__", lambda self, uf=uf: _call(uf, (self,), {}, ftz=True))


_operators()


class _Namespace(types.ModuleType):
    """A numpy namespace under cupy's name: functions and ufuncs take and
    give device arrays; types, dtypes and constants are numpy's own."""

    def __init__(self, name: str, module: Any) -> None:
        super().__init__(name)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or (self._module is np and name in NOT_IN_CUPY):
            raise AttributeError(f"module 'cupy' has no attribute {name!r}")
        value = getattr(self._module, name)
        if isinstance(value, types.ModuleType):
            return _Namespace(f"{self.__name__}.{name}", value)
        if isinstance(value, np.ufunc):
            return _Ufunc(value)
        if isinstance(value, type) or not callable(value):
            return value
        host_ok = name in _HOST_ARGUMENTS_OK
        return lambda *args, **kwargs: _call(value, args, kwargs, host_ok)


class _Ufunc:
    """A numpy ufunc on device arrays (`reduce`, `accumulate`, `outer`, `at`
    too), as cupy's."""

    def __init__(self, uf: np.ufunc) -> None:
        self._uf = uf
        self.__name__ = uf.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._uf, args, kwargs, ftz=True)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._uf, name)
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs, ftz=True)
        return value


class _NumpyAsCupy(_Namespace):
    """numpy under cupy's name, as strict as cupy where it matters: arrays
    are :class:`DeviceArray` (no implicit conversion to numpy), `asarray`
    uploads, `asnumpy` downloads, `cuda.Device()` synchronizes."""

    ndarray = DeviceArray

    def __init__(self) -> None:
        super().__init__("cupy_numpy_substitute", np)
        self.cuda = types.SimpleNamespace(Device=_FakeDevice)

    @staticmethod
    def asnumpy(array: Any, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
        if type(array) is DeviceArray:
            return array.get()
        return np.array(array, copy=True)

    @staticmethod
    def asarray(array: Any, dtype: Any = None, order: Any = None) -> DeviceArray:
        # cupy.asarray copies host data onto the device: copy here too, so that
        # the substituted path never aliases a host array.
        if type(array) is DeviceArray:
            return array if dtype is None or np.dtype(dtype) == array.dtype \
                else array.astype(dtype)
        host = np.array(_to_numpy(array, True), dtype=dtype, copy=True)
        _cupy_dtype(host.dtype)
        return DeviceArray(host)

    array = asarray


def numpy_as_cupy() -> CupyBackend:
    """The cupy backend's code with numpy substituted for cupy (for tests)."""
    return CupyBackend(CUPY, _NumpyAsCupy(), substituted=True)


_substitute = False


@contextlib.contextmanager
def substitute_cupy() -> Iterator[None]:
    """Within this block, `get_backend("cupy")` gives :func:`numpy_as_cupy`
    (test-only: lets the command line's cupy path run without a GPU)."""
    global _substitute
    previous, _substitute = _substitute, True
    try:
        yield
    finally:
        _substitute = previous


def get_backend(name: str) -> Backend:
    """A fresh backend by name; BackendUnavailable if it cannot run here."""
    if name == NUMPY:
        return Backend(NUMPY, np)
    if name == CUPY:
        if _substitute:
            return numpy_as_cupy()
        return CupyBackend(CUPY, _import_cupy())
    raise ValueError(f"unknown backend {name!r} (one of {', '.join(BACKENDS)})")


def available_backends() -> list[str]:
    """The backends that can run here: numpy always, cupy with a CUDA device."""
    return [NUMPY, CUPY] if cuda_available() else [NUMPY]


# ---------------------------------------------------------------------------
# float32 on cupy: its kernels flush subnormals


#: calls recomputed on the host, by function name (see float32_flush_doubt)
HOST_RECOMPUTES: dict[str, int] = {}

#: per float dtype: (unsigned view, exponent bits, mantissa bits, |x| bits,
#: tiny's bits, whether cupy flushes it)
_BITS = {np.dtype(np.float32): (np.uint32, 0x7F800000, 0x007FFFFF, 0x7FFFFFFF, 0x00800000, True),
         # (float16: cupy computes it through float32, where its subnormals are
         # normal; its conversions back are not documented either way: doubted too)
         np.dtype(np.float16): (np.uint16, 0x7C00, 0x03FF, 0x7FFF, 0x0400, True),
         # (float64: not flushed; doubted for its NaN results alone)
         np.dtype(np.float64): (np.uint64, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF,
                                0x7FFFFFFFFFFFFFFF, 0x0010000000000000, False)}


def _doubtful_operand(xp: Any, a: Any) -> Any:
    view, exp, mant, _, _, flushed = _BITS[a.dtype]
    bits = a.view(view)
    if not flushed:
        return xp.zeros(a.shape, dtype=np.bool_)
    return ((bits & exp) == 0) & ((bits & mant) != 0)


def _doubtful_result(xp: Any, r: Any) -> Any:
    """A result element cupy may have given other bits than numpy: one that
    a flush could have made (magnitude at most the smallest normal), or a
    NaN (by its bits: all exponent bits set, a mantissa bit set).  A GPU
    gives a NaN result its own bits (measured on an H200 with cupy 14.2:
    float16 `abs` of a NaN gives 0x7fff, CUDA's canonical NaN, where
    numpy and TensorFlow clear the sign bit and keep the payload), and the
    models' NaN bits are TensorFlow's (oracle/functions.py `nan_bits`):
    such a call is computed on the host, where the model's bits are made
    (tests/test_backends_nan_bits.py)."""
    view, exp, _, absolute, tiny, flushed = _BITS[r.dtype]
    magnitude = r.view(view) & absolute
    nan = magnitude > exp
    return (magnitude <= tiny) | nan if flushed else nan


def _float32(arrays: Sequence[Any]) -> list:
    """The float arrays among `arrays` (not empty) that `_BITS` covers."""
    return [a for a in arrays if a is not None and getattr(a, "dtype", None) in _BITS
            and a.size]


def float32_flush_doubt(xp: Any, arrays: Sequence[Any], results: Sequence[Any]) -> bool:
    """Whether cupy may have given a call's results other bits than the
    model's: a result holding a NaN, of any float dtype (`_doubtful_result`:
    a GPU's NaN bits are its own), or, by cupy's flushing, a float32 one:
    cupy compiles every kernel with -ftz=true (cupy/cuda/compiler.py), so
    a float32 subnormal operand is read as zero and a result below the
    smallest normal is written as zero (whether before or after rounding is
    the hardware's).  Doubt when an operand holds a subnormal, or a result
    holds a value of magnitude at most the smallest normal (zeros
    included: a flushed result is one).  Tested by bits (integer kernels,
    which nothing flushes).  float16 is doubted alike, by its own smallest
    normal.  numpy computes without flushing: no doubt; nor is there in a
    call without operands (Const: nothing computed)."""
    if xp is np or all(a is None for a in arrays):
        return False
    return any(bool(xp.any(_doubtful_operand(xp, a))) for a in _float32(arrays)) or \
        any(bool(xp.any(_doubtful_result(xp, r))) for r in _float32(results))


def recompute_on_host(xp: Any, name: str, arrays: Sequence[Any], results: Sequence[Any],
                      run_on_numpy: Any, batched: bool) -> tuple:
    """A call `float32_flush_doubt` doubts, computed again by numpy on host
    copies of its operands (`run_on_numpy(host arrays, rows)`: the model's
    bits), its results moved back to the device.  A batched call (every
    array with a leading axis of valuations) is recomputed on the doubtful
    valuations only, their rows replaced in the device's results."""
    HOST_RECOMPUTES[name] = HOST_RECOMPUTES.get(name, 0) + 1
    if not batched:
        host = tuple(None if a is None else xp.asnumpy(a) for a in arrays)
        return tuple(xp.asarray(np.asarray(r)) for r in run_on_numpy(host, None))
    size = next(a.shape[0] for a in arrays if a is not None)
    doubt = xp.zeros(size, dtype=np.bool_)
    for a, test in [(a, _doubtful_operand) for a in _float32(arrays)] + \
            [(r, _doubtful_result) for r in _float32(results)]:
        d = test(xp, a)
        doubt |= d.reshape(size, -1).any(axis=1) if d.ndim > 1 else d
    rows = xp.nonzero(doubt)[0]
    host = tuple(None if a is None else xp.asnumpy(a[rows]) for a in arrays)
    fixed = run_on_numpy(host, int(rows.shape[0]))
    out = []
    for r, h in zip(results, fixed):
        r = r.copy()
        r[rows] = xp.asarray(np.asarray(h))
        out.append(r)
    return tuple(out)


def cupy_refusal(xp: Any, name: str, exc: ValueError, arrays: Sequence[Any],
                 run_on_numpy: Any) -> Exception | None:
    """A ValueError of cupy's where numpy runs the same call (cupy's own
    limits, such as a dtype it lacks): CannotRun naming the function, not a
    shape mismatch; None where numpy fails too (the model's own error)."""
    from tfsem.oracle.functions import CannotRun
    try:
        with np.errstate(all="ignore"):
            run_on_numpy(tuple(None if a is None else xp.asnumpy(a) for a in arrays))
    except Exception:
        return None
    err = CannotRun(f"cannot run {name} on cupy: {exc} (numpy runs it; not run on cupy)")
    err.function = name
    return err
