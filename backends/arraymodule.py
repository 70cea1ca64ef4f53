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
            flat = self._download(self.xp.concatenate(parts) if parts else self.xp.zeros(0, dtype))
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

    def synchronize(self) -> None:
        pass

    def memory_available(self) -> int:
        """Bytes of free memory where arrays live (host RAM for numpy)."""
        return _host_memory_available()


class CupyBackend(Backend):
    """cupy: arrays live on the current CUDA device."""

    def _upload(self, array: np.ndarray) -> Any:
        return self.xp.asarray(array)

    def _download(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array)

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


class _NumpyAsCupy(types.ModuleType):
    """numpy under cupy's name: the cupy-only entry points used by
    :class:`CupyBackend` map onto numpy; everything else *is* numpy."""

    def __init__(self) -> None:
        super().__init__("cupy_numpy_substitute")
        self.cuda = types.SimpleNamespace(Device=_FakeDevice)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def asnumpy(array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    @staticmethod
    def asarray(array: Any, dtype: Any = None) -> np.ndarray:
        # cupy.asarray copies host data onto the device: copy here too, so that
        # the substituted path never aliases a host array.
        return np.array(array, dtype=dtype, copy=True)


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
