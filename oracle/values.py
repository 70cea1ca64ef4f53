"""TF values: tensors and error values (seed 000, section 3.1.1, footnotes 2, 4, 5).

A *tensor* is an immutable numpy array of dtype int64 or float32, of any shape.
An *error* is one of the seed's distinguished elements of Tensors that stand
for "something went wrong": reading an uninitialized variable, adding tensors
of incompatible shapes, ...  Errors propagate through functions and an Assign
whose new value would be an error changes nothing.

Equality follows SPEC section 2: same dtype, same shape, same elements, floats
bit for bit except that every NaN equals every other NaN.  Both kinds of value
are hashable so that the oracle can put them into state keys and outcome sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

DTYPES = {"int64": np.dtype(np.int64), "float32": np.dtype(np.float32)}
#: dtype -> name without numpy's `dtype.name` (slow: 9% of the oracle's time)
_NAMES = {d: n for n, d in DTYPES.items()}

#: The error values tfsem produces itself.  Users' functions may add others.
UNINITIALIZED = "uninitialized"
SHAPE_MISMATCH = "shape-mismatch"
DTYPE_MISMATCH = "dtype-mismatch"


class ValueFormatError(ValueError):
    """A JSON value that is not a valid TF value."""


@dataclass(frozen=True, slots=True)
class Error:
    """An error element of Tensors.  Two errors are equal when their reasons are."""

    reason: str

    def __repr__(self) -> str:
        return f"<error: {self.reason}>"


def _canonical_bytes(array: np.ndarray) -> bytes:
    if array.dtype.kind == "f" and array.size and np.isnan(array).any():
        array = np.where(np.isnan(array), np.array(np.nan, dtype=array.dtype), array)
    return np.ascontiguousarray(array).tobytes()


@dataclass(frozen=True, slots=True, eq=False)
class Tensor:
    """An immutable int64 or float32 array with SPEC section 2 equality."""

    array: np.ndarray
    _key: tuple = field(repr=False)
    _hash: int = field(repr=False)

    def __init__(self, array: Any, dtype: str | None = None):
        arr = np.array(array, dtype=DTYPES[dtype] if dtype else None, copy=True)
        name = _NAMES.get(arr.dtype)
        if name is None:
            raise ValueFormatError(f"unsupported dtype {arr.dtype} (int64 or float32 only)")
        arr.setflags(write=False)
        key = (name, arr.shape, _canonical_bytes(arr))
        object.__setattr__(self, "array", arr)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    @property
    def dtype(self) -> str:
        return self._key[0]   # numpy's dtype.name is slow, and asked for often

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and self._hash == other._hash and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return format_value(self)


Value = Union[Tensor, Error]


def is_error(value: Value) -> bool:
    return isinstance(value, Error)


def from_array(array: np.ndarray) -> Tensor:
    """Wrap a numpy array (no dtype conversion beyond the supported ones)."""
    return Tensor(array)


# ---------------------------------------------------------------------------
# JSON codec (SPEC section 1, "Values")


def _float_from_json(x: Any, where: str) -> Any:
    if isinstance(x, list):
        return [_float_from_json(v, where) for v in x]
    if isinstance(x, str):
        specials = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}
        if x.lower() in specials:
            return specials[x.lower()]
        raise ValueFormatError(f"{where}: {x!r} is not a number (use \"nan\", \"inf\" or \"-inf\")")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueFormatError(f"{where}: {x!r} is not a number")
    return x


def _int_from_json(x: Any, where: str) -> Any:
    if isinstance(x, list):
        return [_int_from_json(v, where) for v in x]
    if isinstance(x, bool) or not isinstance(x, int):
        raise ValueFormatError(f"{where}: {x!r} is not an int64 (write float values as "
                               "{\"dtype\": \"float32\", \"value\": ...})")
    if not -(2**63) <= x < 2**63:
        raise ValueFormatError(f"{where}: {x} is out of int64 range")
    return x


def _array_from_nested(data: Any, dtype: str, where: str) -> np.ndarray:
    convert = _float_from_json if dtype == "float32" else _int_from_json
    data = convert(data, where)
    try:
        with np.errstate(over="ignore"):
            arr = np.array(data, dtype=DTYPES[dtype])
    except (ValueError, OverflowError) as exc:
        raise ValueFormatError(f"{where}: ragged or malformed nested list ({exc})") from None
    if dtype == "float32" and arr.size and np.isinf(arr).any():
        # a finite number past float32's range would silently become inf
        wide = np.array(data, dtype=np.float64)
        over = np.isinf(arr) & np.isfinite(wide)
        if over.any():
            raise ValueFormatError(f"{where}: {wide[over].flat[0]:g} is out of float32 range "
                                   "(largest 3.4028235e+38; write an infinity as \"inf\")")
    if arr.dtype == object:
        raise ValueFormatError(f"{where}: ragged nested list")
    return arr


def value_from_json(data: Any, where: str = "value", dtype: str | None = None) -> Value:
    """Decode a JSON value.  `dtype` is the declared dtype, if any: a plain number
    given for a float32 feed or variable is read as float32."""
    if isinstance(data, dict):
        if "error" in data:
            if set(data) != {"error"} or not isinstance(data["error"], str) or not data["error"]:
                raise ValueFormatError(f"{where}: an error value is {{\"error\": REASON}}")
            return Error(data["error"])
        if set(data) != {"dtype", "value"}:
            raise ValueFormatError(f"{where}: expected {{\"dtype\": ..., \"value\": ...}}, "
                                   f"got keys {sorted(data)}")
        d = data["dtype"]
        if not isinstance(d, str) or d not in DTYPES:
            raise ValueFormatError(f"{where}: unknown dtype {d!r} (int64 or float32)")
        if dtype is not None and d != dtype:
            raise ValueFormatError(f"{where}: value has dtype {d} but {dtype} is declared")
        return Tensor(_array_from_nested(data["value"], d, where))
    if isinstance(data, (int, float, list)) and not isinstance(data, bool):
        d = dtype or "int64"
        return Tensor(_array_from_nested(data, d, where))
    raise ValueFormatError(f"{where}: {data!r} is not a value (a number, nested lists, "
                           "{\"dtype\": ..., \"value\": ...} or {\"error\": ...})")


def _float_to_json(x: Any) -> Any:
    if isinstance(x, list):
        return [_float_to_json(v) for v in x]
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x  # repr of a float32 widened to float64 round-trips exactly


def value_to_json(value: Value) -> Any:
    """Encode as strict JSON: int64 as plain numbers, float32 tagged."""
    if isinstance(value, Error):
        return {"error": value.reason}
    if value.dtype == "int64":
        return value.array.tolist()
    return {"dtype": "float32", "value": _float_to_json(value.array.astype(np.float64).tolist())}


def format_value(value: Value) -> str:
    """A short human-readable rendering, for text output and reports."""
    if isinstance(value, Error):
        return f"<{value.reason}>"
    a = value.array
    if a.dtype == np.float32:
        body = np.array2string(a, separator=", ", formatter={"float_kind": lambda v: repr(float(v))})
        return f"f32 {body}" if a.ndim else f"{float(a)!r}f"
    return np.array2string(a, separator=", ") if a.ndim else str(int(a))
