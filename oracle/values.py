"""TF values: tensors and error values (seed 000, section 3.1.1, footnotes 2, 4, 5).

A *tensor* is an immutable numpy array of one of TensorFlow's numeric or
boolean dtypes (SPEC section 8: bool, int8/16/32/64, uint8/16/32/64, float16,
bfloat16, float32, float64), of any shape.  numpy has no bfloat16: it comes
from `ml_dtypes`, the package TensorFlow and JAX take theirs from (its dtype's
`kind` is "V", so ask :func:`is_float`, never `dtype.kind == "f"`).
An *error* is one of the seed's distinguished elements of Tensors that stand
for "something went wrong": reading an uninitialized variable, adding tensors
of incompatible shapes, ...  Errors propagate through functions and an Assign
whose new value would be an error changes nothing.

Equality follows SPEC section 2: same dtype, same shape, same elements, floats
bit for bit except that every NaN equals every other NaN.  Both kinds of value
are hashable so that the oracle can put them into outcome sets.  The engines'
keys of *intermediate* states and of remembered function applications use
:func:`exact` instead, which tells NaNs of different payloads or signs apart
(see there, and docs/semantics.md "NaN payloads").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

import ml_dtypes
import numpy as np

#: Every dtype a value may have, by TensorFlow's name.
DTYPES = {
    "bool": np.dtype(np.bool_),
    "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8), "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
}
#: dtype -> name without numpy's `dtype.name` (slow: 9% of the oracle's time)
_NAMES = {d: n for n, d in DTYPES.items()}
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
UNSIGNED_DTYPES = frozenset({"uint8", "uint16", "uint32", "uint64"})
#: The IEEE formats of the float dtypes: (exponent bits, significand bits
#: including the implicit one), as Z3's FPSort takes them.
FLOAT_FORMATS = {"float16": (5, 11), "bfloat16": (8, 8), "float32": (8, 24), "float64": (11, 53)}
#: The unsigned integer dtype of each float dtype's width (its bit pattern).
BITS_DTYPES = {"float16": np.dtype(np.uint16), "bfloat16": np.dtype(np.uint16),
               "float32": np.dtype(np.uint32), "float64": np.dtype(np.uint64)}
_FLOAT_NP = frozenset(DTYPES[n] for n in FLOAT_DTYPES)


def dtype_name(dtype: Any) -> str | None:
    """tfsem's name of a numpy dtype (None: not one of DTYPES)."""
    name = _NAMES.get(dtype)   # a numpy dtype already: no conversion (hot path)
    return name if name is not None else _NAMES.get(np.dtype(dtype))


def is_float(a: Any) -> bool:
    """Whether a numpy array (or dtype) is of a float dtype, bfloat16 included."""
    return (a.dtype if hasattr(a, "dtype") else np.dtype(a)) in _FLOAT_NP


def finfo(dtype: Any) -> Any:
    """numpy's finfo, which also knows bfloat16 (through ml_dtypes)."""
    return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(dtype: Any) -> Any:
    return np.iinfo(np.dtype(dtype))

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

    @property
    def exact(self) -> "Error":
        """The value itself (see :func:`exact`)."""
        return self


@dataclass(frozen=True, slots=True)
class Bits:
    """The exact bits of a float tensor holding a NaN whose bits are not
    numpy's NaN of its dtype (`Tensor.exact`): equal only to the same bits
    of the same dtype and shape, never to a Tensor."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes


def _canonical_bytes(array: np.ndarray) -> tuple[bytes, bytes | None]:
    """(the bytes SPEC equality compares: every NaN as numpy's NaN of the
    dtype, the exact bytes where they differ from those, else None)."""
    if array.dtype in _FLOAT_NP and array.size:
        if array.dtype.kind == "f":
            # (numpy's own float16/32/64: isnan never warns, and the
            # errstate context cost as much as the rest for a small
            # result, which the application memo makes this key of)
            nan = np.isnan(array)
        else:
            with np.errstate(invalid="ignore"):   # ml_dtypes' isnan warns on NaN
                nan = np.isnan(array)
        if nan.any():
            raw = np.ascontiguousarray(array).tobytes()
            canonical = np.where(nan, np.array(np.nan, dtype=array.dtype), array).tobytes()
            return canonical, (raw if raw != canonical else None)
    return np.ascontiguousarray(array).tobytes(), None


@dataclass(frozen=True, slots=True, eq=False)
class Tensor:
    """An immutable array of one of DTYPES, with SPEC section 2 equality."""

    array: np.ndarray
    #: tfsem's name of the array's dtype
    _dtype: str = field(repr=False)
    #: (the equality key (dtype, shape, canonical bytes), the exact bits or
    #: None), made when first asked for (`_made`), or None until then.
    #: Most tensors a run makes are never compared, hashed or keyed by
    #: their bits (an intermediate activation goes from one function to the
    #: next): making the key when the tensor is made copied every result's
    #: bytes once more and searched it for NaN, about half of what a
    #: MobileNetV2 activation's Tensor cost.  Made later it is the same:
    #: the array is this tensor's own copy, read-only, which nothing writes
    #: (the premise of every memo that keys a tensor by its identity)
    _lazy: tuple | None = field(repr=False)
    #: hash(_key), computed when first asked for (`__hash__`): hashing a
    #: MobileNetV2 activation's 0.8 MB took 0.4 ms, and most values of a
    #: run are never hashed; never pickled (bytes hash differently in each
    #: process: an unpickled tensor carried its old process's hash and was
    #: unequal to the same tensor made in the new one)
    _hash: int | None = field(repr=False)

    def __init__(self, array: Any, dtype: str | None = None):
        arr = np.array(array, dtype=DTYPES[dtype] if dtype else None, copy=True)
        name = _NAMES.get(arr.dtype)
        if name is None:
            raise ValueFormatError(f"unsupported dtype {arr.dtype} (tfsem models "
                                   f"{', '.join(DTYPES)})")
        if name == "bool":
            # a bool byte other than 0 and 1 (np.frombuffer, a GraphDef's
            # tensor_content) is True: store it as 1, so that equality and
            # hashing, which look at the bytes, follow the elements
            arr = arr.view(np.uint8) != 0
        arr.setflags(write=False)
        object.__setattr__(self, "array", arr)
        object.__setattr__(self, "_dtype", name)
        object.__setattr__(self, "_lazy", None)
        object.__setattr__(self, "_hash", None)

    def _made(self) -> tuple:
        """(`_key`, `_bits`), made from the array on first use (two threads
        that make them at once make the same ones)."""
        made = self._lazy
        if made is None:
            arr = self.array
            canonical, raw = _canonical_bytes(arr)
            made = ((self._dtype, arr.shape, canonical),
                    None if raw is None else Bits(self._dtype, arr.shape, raw))
            object.__setattr__(self, "_lazy", made)
        return made

    @property
    def _key(self) -> tuple:
        """(dtype name, shape, the bytes SPEC equality compares)."""
        return (self._lazy or self._made())[0]

    @property
    def _bits(self) -> "Bits | None":
        """The exact bits where SPEC equality forgets some (a NaN other than
        numpy's NaN of the dtype), else None (`exact`)."""
        return (self._lazy or self._made())[1]

    @property
    def dtype(self) -> str:
        return self._dtype   # numpy's dtype.name is slow, and asked for often

    @property
    def canonical_bytes(self) -> bytes:
        """The bytes SPEC equality compares (`_canonical_bytes`: every NaN
        as numpy's NaN of the dtype)."""
        return self._made()[0][2]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Tensor):
            return False
        h, g = self._hash, other._hash
        if h is not None and g is not None and h != g:
            return False
        a, b = self._lazy, other._lazy
        if a is None or b is None:
            # (the dtype and shape first: unequal there, no bytes are made)
            if self._dtype != other._dtype or self.array.shape != other.array.shape:
                return False
            a, b = self._made(), other._made()
        return a[0] == b[0]

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self._lazy or self._made())[0])
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self):
        key, bits = self._made()
        return (self.array, key, bits)

    def __setstate__(self, state) -> None:
        # (a pickle made before the hash was lazy holds it too: dropped)
        array, key, bits = state if len(state) == 3 else (state[0], state[1], state[3])
        array.setflags(write=False)
        object.__setattr__(self, "array", array)
        object.__setattr__(self, "_dtype", key[0])
        object.__setattr__(self, "_lazy", (key, bits))
        object.__setattr__(self, "_hash", None)

    @property
    def exact(self) -> "Tensor | Bits":
        """This tensor as a key that is equal only to the same bits: itself
        where SPEC equality already compares every bit (no NaN, or every NaN
        numpy's NaN of the dtype), else its :class:`Bits`."""
        bits = (self._lazy or self._made())[1]
        return self if bits is None else bits

    def __repr__(self) -> str:
        return format_value(self)


Value = Union[Tensor, Error]


def exact(value: Any) -> Any:
    """`value` as a key of an intermediate state or of a function's
    arguments: equal to another such key only when the two values have the
    same bits.

    SPEC section 2 equality makes every NaN equal to every other, which is
    right for *outcomes*, the final values a user compares, and wrong for a
    value still in the run: a later step may show the NaN's bits (Bitcast,
    PackScatter's bytes, TensorFlow's kernels, a user's function), so two
    states that hold NaNs of different payloads may have different futures,
    and a function's result remembered for NaN1 is not its result for NaN2.
    Values that carry no `exact` (handles, the engines' markers) are their
    own keys."""
    return getattr(value, "exact", value)


def sigma_key(feeds: Mapping[str, Any], init: Mapping[str, Any]) -> tuple:
    """σ (its feeds and its variables' initial values) as a key equal to
    another σ's only when both name the same feeds and the same variables,
    each of the same bits (:func:`exact`: a tensor's dtype, shape and bytes,
    with NaN payloads and signs told apart, and -0.0 from 0.0, which SPEC
    equality tells apart too; an error value by its reason).  The key
    holds the values themselves (no digest: two keys are equal only when
    the values are); it is hashable when every value is (a Tensor hashes
    its bytes once, when first asked).  The remembered runs of a σ
    (checking/canonical_memo.py) and the back ends' sessions per σ
    (backends/reuse.py) are told by it."""
    return (tuple(sorted((name, exact(v)) for name, v in feeds.items())),
            tuple(sorted((name, exact(v)) for name, v in init.items())))


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


def _int_from_json(x: Any, where: str, dtype: str = "int64") -> Any:
    if isinstance(x, list):
        return [_int_from_json(v, where, dtype) for v in x]
    if isinstance(x, bool) or not isinstance(x, int):
        raise ValueFormatError(f"{where}: {x!r} is not an {dtype} (write float values as "
                               "{\"dtype\": \"float32\", \"value\": ...})")
    info = np.iinfo(DTYPES[dtype])
    if not int(info.min) <= x <= int(info.max):
        raise ValueFormatError(f"{where}: {x} is out of {dtype} range "
                               f"({int(info.min)} to {int(info.max)})")
    return x


def _bool_from_json(x: Any, where: str) -> Any:
    if isinstance(x, list):
        return [_bool_from_json(v, where) for v in x]
    if not isinstance(x, bool):
        raise ValueFormatError(f"{where}: {x!r} is not a bool (write true or false)")
    return x


def _array_from_nested(data: Any, dtype: str, where: str) -> np.ndarray:
    if dtype in FLOAT_DTYPES:
        data = _float_from_json(data, where)
    elif dtype == "bool":
        data = _bool_from_json(data, where)
    else:
        data = _int_from_json(data, where, dtype)
    try:
        with np.errstate(over="ignore"):
            # floats through float64 (a JSON number is a double), then
            # rounded to the dtype as numpy's astype (ml_dtypes' for bfloat16)
            arr = np.array(data, dtype=np.float64 if dtype in FLOAT_DTYPES else DTYPES[dtype])
    except (ValueError, OverflowError) as exc:
        raise ValueFormatError(f"{where}: ragged or malformed nested list ({exc})") from None
    if arr.dtype == object:
        raise ValueFormatError(f"{where}: ragged nested list")
    if dtype in FLOAT_DTYPES:
        wide = arr
        with np.errstate(over="ignore"):
            arr = wide.astype(DTYPES[dtype])
        if arr.size and np.isinf(arr).any():
            # a finite number past the dtype's range would silently become inf
            over = np.isinf(arr) & np.isfinite(wide)
            if over.any():
                raise ValueFormatError(
                    f"{where}: {wide[over].flat[0]:g} is out of {dtype} range (largest "
                    f"{float(finfo(DTYPES[dtype]).max):.9g}; write an infinity as \"inf\")")
    return arr


def value_from_json(data: Any, where: str = "value", dtype: str | None = None) -> Value:
    """Decode a JSON value.  `dtype` is the declared dtype, if any: a plain
    number (or true/false) given for a feed or variable of that dtype is read
    as that dtype."""
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
            raise ValueFormatError(f"{where}: unknown dtype {d!r} ({', '.join(DTYPES)}; "
                                   "string, variant and resource tensors are not modelled)")
        if dtype is not None and d != dtype:
            raise ValueFormatError(f"{where}: value has dtype {d} but {dtype} is declared")
        return Tensor(_array_from_nested(data["value"], d, where), d)
    if isinstance(data, (int, float, list)) and (not isinstance(data, bool) or dtype == "bool"):
        d = dtype or "int64"
        return Tensor(_array_from_nested(data, d, where), d)
    raise ValueFormatError(f"{where}: {data!r} is not a value (a number, nested lists, "
                           "{\"dtype\": ..., \"value\": ...} or {\"error\": ...})")


def _float_to_json(x: Any) -> Any:
    if isinstance(x, list):
        return [_float_to_json(v) for v in x]
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x  # repr of a float widened to float64 round-trips exactly


def _floats_to_json(wide: np.ndarray) -> Any:
    """`_float_to_json(wide.tolist())` for a float64 array, whole arrays at a
    time (a counterexample of a real graph holds ~10^6 floats: element by
    element in Python they took 4 s of a 6 s check)."""
    finite = np.isfinite(wide)
    if finite.all():
        return wide.tolist()
    out = wide.astype(object)
    out[np.isnan(wide)] = "nan"
    out[wide == np.inf] = "inf"
    out[wide == -np.inf] = "-inf"
    return out.tolist()


def value_to_json(value: Value) -> Any:
    """Encode as strict JSON: int64 as plain numbers, every other dtype tagged
    (bool as true/false, floats with "nan", "inf", "-inf")."""
    if isinstance(value, Error):
        return {"error": value.reason}
    d = value.dtype
    if d == "variant":    # a TensorList (oracle/opdefs/lists.py): shown, never read back
        return {"dtype": "variant", "value": value.describe()}
    if d == "int64":
        return value.array.tolist()
    if d in FLOAT_DTYPES:
        return {"dtype": d, "value": _floats_to_json(value.array.astype(np.float64))}
    return {"dtype": d, "value": value.array.tolist()}


#: Short prefixes of the dtypes in text output (int64 has none).
_SHORT = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
          "bfloat16": "bf16", "float32": "f32", "float64": "f64"}
_SUFFIX = {"float32": "f", "float16": "h", "bfloat16": "bf", "float64": "d"}


#: a tensor of more elements than this, all one value (bit for bit), is shown
#: as its shape and that value (a real graph's counterexample holds tensors of
#: 10^4-10^5 elements of one value: σ ones, an edge value)
UNIFORM_SHOWN_AS_ONE = 16


def _uniform_element(a: np.ndarray):
    """The one value of an array whose elements are all the same bits, else None."""
    flat = a.reshape(-1)
    if flat.size == 0 or a.dtype.kind == "O" or a.dtype.itemsize not in (1, 2, 4, 8):
        return None
    bits = flat.view(f"u{a.dtype.itemsize}")
    return flat[0] if bool(np.all(bits == bits[0])) else None


def format_value(value: Value) -> str:
    """A short human-readable rendering, for text output and reports."""
    if isinstance(value, Error):
        return f"<{value.reason}>"
    if value.dtype == "variant":   # a TensorList (oracle/opdefs/lists.py)
        return value.describe()
    a = value.array
    d = value.dtype
    if a.size > UNIFORM_SHOWN_AS_ONE and (one := _uniform_element(a)) is not None:
        shown = format_value(Tensor(np.asarray(one, a.dtype), d))
        return f"{_SHORT.get(d, d)} {list(a.shape)}, all {shown}"
    if d in FLOAT_DTYPES:
        wide = a.astype(np.float64)
        body = np.array2string(wide, separator=", ", formatter={"float_kind": lambda v: repr(float(v))})
        return f"{_SHORT[d]} {body}" if a.ndim else f"{float(wide)!r}{_SUFFIX[d]}"
    if d == "int64":
        return np.array2string(a, separator=", ") if a.ndim else str(int(a))
    if d == "bool":
        body = np.array2string(a, separator=", ") if a.ndim else str(bool(a))
        return body.lower() if a.ndim == 0 else f"bool {body}"
    return f"{_SHORT[d]} " + (np.array2string(a, separator=", ") if a.ndim else str(int(a)))


# ---------------------------------------------------------------------------
# Values that find bugs: every dtype's edges (σ generators, samplers)


def edge_values(dtype: str) -> np.ndarray:
    """A dtype's edge values: integer extremes; NaN, signed zeros, infinities,
    the largest finite, smallest normal and subnormal floats of both signs."""
    d = DTYPES[dtype]
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INT_DTYPES:
        i = np.iinfo(d)
        vals = {int(i.min), int(i.min) + 1, 0, 1, 2, 3, int(i.max) - 1, int(i.max)}
        if dtype not in UNSIGNED_DTYPES:
            vals |= {-1, -2}
        return np.array(sorted(vals), dtype=d)
    f = finfo(d)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.0, math.nan, math.inf, -math.inf,
            float(f.max), -float(f.max), float(f.tiny), -float(f.tiny),
            float(f.smallest_subnormal), -float(f.smallest_subnormal)]
    return np.array(vals, dtype=np.float64).astype(d)


def random_array(dtype: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` values of `dtype`: a third edge values, a third small ones
    (-10..10, halves for floats), a third random bit patterns (every value of
    the dtype may be drawn)."""
    d = DTYPES[dtype]
    if dtype == "bool":
        return rng.integers(0, 2, size).astype(bool)
    edges = edge_values(dtype)
    edge = edges[rng.integers(0, len(edges), size)]
    bits = BITS_DTYPES.get(dtype, d)
    info = np.iinfo(bits)
    raw = rng.integers(int(info.min), int(info.max), size, dtype=bits, endpoint=True).view(d)
    small = rng.integers(0 if dtype in UNSIGNED_DTYPES else -10, 11, size)
    small = (small.astype(np.float64) / 2).astype(d) if dtype in FLOAT_DTYPES else small.astype(d)
    pick = rng.integers(0, 3, size)
    return np.where(pick == 0, edge, np.where(pick == 1, small, raw)).astype(d)
