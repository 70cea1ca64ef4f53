"""A float attribute JSON cannot write, written exactly: the JSON form of a
TensorFlow op's attributes (`tf_attrs`) in the program format.

A TensorFlow float attribute is 32 bits (AttrValue `f`), and all of them
can matter: LeakyRelu's result for x < 0 is x * alpha, a NaN of alpha's sign
and payload where alpha is a NaN, which Bitcast or PackScatter shows
(oracle/functions.py `attrs_key` says why programs are told apart by them).
In memory an attribute is a Python float, which holds a float32 exactly
(its NaN payload shifted up 29 bits).  Strict JSON has no NaN or infinity,
and Python's `str` writes every NaN "nan", so such a value is written as
an object of one member, ``{"float": TEXT}``:

* ``"inf"``, ``"-inf"``;
* ``"nan"``, ``"-nan"``: the quiet NaN of that sign with no payload
  (float32 0x7fc00000 / 0xffc00000, float64 0x7ff8000000000000 / ...);
* ``"0x"`` and 8 hex digits: any other NaN, by its float32 bits (what a
  GraphDef holds: ``"0x7fc00001"``), where the float64 is one exactly
  (its low 29 mantissa bits zero); else ``"0x"`` and 16 hex digits, its
  float64 bits.

Finite floats (-0.0 and subnormals too) stay JSON numbers: JSON writes a
float's shortest repr, which reads back to the same bits.  An attribute
value is never a JSON object otherwise (types are DT_ names, shapes lists,
a function its name), so the object cannot be mistaken for one.

Files written before this form held a non-finite float attribute as the
plain string ``"nan"``, ``"inf"`` or ``"-inf"``; they load as before (the
string stays a string, and TensorFlow's kernel, which knows the attribute's
kind from its OpDef, reads it as the float: oracle/kernel_worker.py
`_convert`, which reads every TEXT above too).

No import of tfsem here: the format's writer (jsonio.node_to_json) and
the `tf_attrs` reader (functions._json_attr) both use it.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Mapping

#: the one member of a non-finite float's JSON object
TAG = "float"

_QUIET = 0x7FF8000000000000
_SIGN = 1 << 63
_EXP64 = 0x7FF0000000000000
_LOW29 = (1 << 29) - 1


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _float(word: int) -> float:
    # struct moves the 8 bytes as they are: no conversion that could quiet
    # a signalling NaN
    return struct.unpack("<d", struct.pack("<Q", word))[0]


def float32_value(word: int) -> float:
    """The float32 of these 32 bits as a Python float, exactly: a NaN keeps
    its sign, its payload and its signalling bit.  (struct's '<f' and
    numpy's astype widen through the CPU, which quiets a signalling NaN:
    0x7f800001 becomes 0x7fc00001, and two graphs differing only there
    would be one program.)"""
    if word & 0x7F800000 == 0x7F800000 and word & 0x7FFFFF:
        return _float((word & 0x80000000) << 32 | _EXP64 | (word & 0x7FFFFF) << 29)
    return struct.unpack("<f", struct.pack("<I", word & 0xFFFFFFFF))[0]


def float32_word(x: float) -> int:
    """The 32 bits of `x` as a float32 attribute holds it: a NaN's sign,
    signalling bit and the top 23 bits of its payload kept (a NaN widened
    from a float32 comes back to its bits; one whose payload lies only in
    the low 29 bits becomes the quiet NaN of its sign, as a CPU narrows
    it); any other float as C narrows it (struct's '<f': OverflowError past
    float32's range)."""
    if x != x:
        w = _bits(x)
        man = (w & 0xFFFFFFFFFFFFF) >> 29
        return (w >> 32 & 0x80000000) | 0x7F800000 | (man or 0x400000)
    return struct.unpack("<I", struct.pack("<f", x))[0]


def float_text(x: float) -> str:
    """TEXT of a non-finite float (see the module's doc)."""
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    if x == x:
        raise ValueError(f"{x!r} is finite: it is written as a JSON number")
    w = _bits(x)
    if w & ~_SIGN == _QUIET:
        return "-nan" if w & _SIGN else "nan"
    if not w & _LOW29:     # a float32 NaN widened: its 32 bits
        w32 = (w >> 32 & 0x80000000) | 0x7F800000 | (w & 0xFFFFFFFFFFFFF) >> 29
        return f"0x{w32:08x}"
    return f"0x{w:016x}"


def float_from_text(text: str) -> float:
    """The float of TEXT (float_text's inverse); ValueError naming what is
    wrong."""
    if text in ("inf", "-inf", "nan", "-nan"):
        return {"inf": math.inf, "-inf": -math.inf, "nan": _float(_QUIET),
                "-nan": _float(_QUIET | _SIGN)}[text]
    digits = text[2:] if text[:2] == "0x" else ""
    if len(digits) not in (8, 16) or not all(c in "0123456789abcdef" for c in digits):
        raise ValueError(f"{text!r} is not a non-finite float (\"inf\", \"-inf\", \"nan\", "
                         "\"-nan\", or a NaN's bits: \"0x\" and 8 lowercase hex digits of "
                         "float32 or 16 of float64)")
    w = int(digits, 16)
    if len(digits) == 8:
        if w & 0x7F800000 != 0x7F800000 or not w & 0x7FFFFF:
            raise ValueError(f"{text!r} is not the bits of a float32 NaN (write a finite "
                             "float as a JSON number, an infinity as \"inf\" or \"-inf\")")
        w = (w & 0x80000000) << 32 | _EXP64 | (w & 0x7FFFFF) << 29
    elif w & _EXP64 != _EXP64 or not w & 0xFFFFFFFFFFFFF:
        raise ValueError(f"{text!r} is not the bits of a float64 NaN (write a finite float as "
                         "a JSON number, an infinity as \"inf\" or \"-inf\")")
    x = _float(w)
    if float_text(x) != text:   # "0x7fc00000": write "nan"; 16 digits of a float32: 8
        raise ValueError(f"{text!r}: this float is written {float_text(x)!r}")
    return x


def _to_json(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else {TAG: float_text(v)}
    if isinstance(v, (list, tuple)):
        return [_to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: _to_json(x) for k, x in v.items()}
    return v


def _needs(v: Any) -> bool:
    """Whether `v` holds a non-finite float (`x - x` is 0.0 exactly for a
    finite x, NaN for NaN and the infinities)."""
    t = type(v)
    if t is float:
        return v - v != 0.0
    if t is list or t is tuple:
        for x in v:
            tx = type(x)
            if tx is str or tx is int or tx is bool:
                continue
            if (x - x != 0.0) if tx is float else _needs(x):
                return True
        return False
    if t is dict:
        return any(map(_needs, v.values()))
    if isinstance(v, float):     # (a subclass: numpy's float64)
        return not math.isfinite(v)
    return False


def _tag_in(v: Any) -> bool:
    """Whether `v` holds, at any depth, a dict with the member TAG: the
    program format's form of a non-finite float, which the reader would
    take for one."""
    if isinstance(v, dict):
        return TAG in v or any(map(_tag_in, v.values()))
    if isinstance(v, (list, tuple)):
        return any(_tag_in(x) for x in v if not isinstance(x, (str, int, float)))
    return False


def attrs_to_json(attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    """`tf_attrs` as the program format writes it: each non-finite float,
    at any depth of its values, as ``{"float": TEXT}``; `attrs` itself
    where it has none (the common case: nothing is copied).  A value that
    holds a dict with the member "float" is refused (ValueError naming the
    attribute): the file would read back as a float what was a dict (a
    TensorFlow attribute is never a dict; a pass that built one means the
    float: it writes the float itself)."""
    for k, v in attrs.items():
        if type(v) is dict or type(v) is list or type(v) is tuple:
            if _tag_in(v):
                raise ValueError(f"attribute {k!r}: a dict with the member {TAG!r} is the "
                                 f"program format's form of a non-finite float; write the "
                                 f"float itself")
    for v in attrs.values():
        t = type(v)
        if t is not str and t is not int and t is not bool and _needs(v):
            break
    else:
        return attrs
    return {k: _to_json(v) for k, v in attrs.items()}


def _from_json(v: Any, where: str) -> Any:
    if isinstance(v, dict):
        if TAG in v:
            text = v[TAG]
            if len(v) != 1 or not isinstance(text, str):
                raise ValueError(f"{where}: {{\"{TAG}\": TEXT}} is a non-finite float and has "
                                 f"no other member, got {v!r}")
            try:
                return float_from_text(text)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        return {k: _from_json(x, f"{where}.{k}") for k, x in v.items()}
    if isinstance(v, list):
        return [_from_json(x, f"{where}[{i}]") for i, x in enumerate(v)]
    return v


def _tagged(v: Any) -> bool:
    """Whether `v` (a JSON value) holds an object: attribute values are
    never one but for {"float": TEXT}, so the slow path is taken only then."""
    t = type(v)
    if t is dict:
        return True
    if t is list:
        for x in v:
            tx = type(x)
            if tx is dict or (tx is list and _tagged(x)):
                return True
    return False


def attrs_from_json(raw: dict, where: str) -> dict:
    """attrs_to_json's inverse (`raw` where nothing in it is written so);
    ValueError naming the attribute where an object ``{"float": ...}`` is
    not one it writes."""
    for v in raw.values():
        t = type(v)
        if t is dict or (t is list and _tagged(v)):
            break
    else:
        return raw
    return {k: _from_json(v, f"{where}.{k}") for k, v in raw.items()}
