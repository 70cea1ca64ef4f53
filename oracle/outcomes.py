"""Outcomes (SPEC section 2): the values of the output edges and, unless only
outputs are observed, the final value of every variable."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Collection, Mapping

import numpy as np

from .values import (DTYPES, FLOAT_DTYPES, Tensor, Value, ValueFormatError, format_value,
                     value_from_json, value_to_json)

OUTPUTS, OUTPUTS_STATE = "outputs", "outputs+state"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Output values sorted by output name; final variable values sorted by
    variable name, or None when only outputs are observed."""
    outputs: tuple[tuple[str, Value], ...]
    state: tuple[tuple[str, Value], ...] | None

    def to_json(self, full: Collection[tuple[str, str]] | None = None) -> dict[str, Any]:
        """SPEC section 4's outcome object.  `full`, when given, names the
        parts (("output", name) or ("variable", name)) written in full;
        every other part of more than SUMMARY_MIN_ELEMENTS elements is
        written as its summary (`summary_json`).  None: all in full."""
        def value(kind: str, k: str, v: Value) -> Any:
            if full is None or (kind, k) in full or not summarisable(v):
                return value_to_json(v)
            return summary_json(v)

        d: dict[str, Any] = {"outputs": {k: value("output", k, v) for k, v in self.outputs}}
        if self.state is not None:
            d["state"] = {k: value("variable", k, v) for k, v in self.state}
        return d

    def parts(self) -> list[tuple[tuple[str, str], Value]]:
        """(("output", name) or ("variable", name), value), outputs first."""
        return [(("output", k), v) for k, v in self.outputs] + \
            [(("variable", k), v) for k, v in (self.state or ())]

    def describe(self, full: Collection[tuple[str, str]] | None = None,
                 first: tuple[str, str] | None = None) -> str:
        """The text form (`o = 1, x := 2`); `full` as in `to_json`: a part
        not named there, of more than SUMMARY_MIN_ELEMENTS elements, is shown
        as its dtype, shape and digest (`summary_text`), any other of more
        than TEXT_ELEMENTS but `first` (the first difference) by its range
        (`range_text`; every element of those is in the JSON)."""
        def text(kind: str, k: str, v: Value) -> str:
            if full is None or (kind, k) == first or not summarisable(v, TEXT_ELEMENTS):
                return format_value(v)
            return range_text(v) if (kind, k) in full or not summarisable(v) \
                else summary_text(v)

        parts = [f"{k} = {text('output', k, v)}" for k, v in self.outputs]
        if self.state is not None:
            parts += [f"{k} := {text('variable', k, v)}" for k, v in self.state]
        return ", ".join(parts) if parts else "(nothing observed)"

    def first_difference(self, others: "list[Outcome]") -> dict[str, str] | None:
        """Which part differs first, checked in stages like Alive2: outputs
        (by name), then final variable values (by name).  It is the part at
        which the shortest prefix of this outcome that no outcome in `others`
        shares ends.  None when this outcome is among `others`."""
        parts = [("output", k, v) for k, v in self.outputs]
        parts += [("variable", k, v) for k, v in (self.state or ())]
        candidates = list(others)
        for i, (kind, name, value) in enumerate(parts):
            candidates = [o for o in candidates if o._part(i) == value]
            if not candidates:
                return {kind: name}
        return None

    def _part(self, i: int) -> Value:
        return self.outputs[i][1] if i < len(self.outputs) else (self.state or ())[i - len(self.outputs)][1]


def make_outcome(outputs: Mapping[str, Value], state: Mapping[str, Value], observe: str) -> Outcome:
    outs = tuple(sorted(outputs.items(), key=lambda kv: kv[0]))
    st = None if observe == OUTPUTS else tuple(sorted(state.items(), key=lambda kv: kv[0]))
    return Outcome(outs, st)


def combine(parts: "list[Outcome]", observe: str | None = None) -> Outcome:
    """The outcome of a program made of independent components.  With no
    component at all (a program with no node and no variable) the parts do
    not say what is observed: `observe` does (its state is None when only
    outputs are observed, else ())."""
    if not parts and observe is not None:
        return Outcome((), None if observe == OUTPUTS else ())
    outputs = tuple(sorted((kv for o in parts for kv in o.outputs), key=lambda kv: kv[0]))
    if parts and parts[0].state is None:
        return Outcome(outputs, None)
    state = tuple(sorted((kv for o in parts for kv in (o.state or ())), key=lambda kv: kv[0]))
    return Outcome(outputs, state)


# ---------------------------------------------------------------------------
# Summaries: a large value an `unsound` verdict's JSON need not hold in full


#: a value of at most this many elements is always written in full
SUMMARY_MIN_ELEMENTS = 256


#: in text, a value of more elements than this is shown by its range
#: (`range_text`) unless it is the first difference (a real graph's outcome
#: holds hundreds of vectors of 32-256 elements: 2 MB of text)
TEXT_ELEMENTS = 64


def summarisable(v: Value, least: int = SUMMARY_MIN_ELEMENTS) -> bool:
    """Whether `v` is a tensor of more than `least` elements."""
    return isinstance(v, Tensor) and v.dtype in DTYPES and v.array.size > least


def value_digest(v: Tensor) -> str:
    """A digest of the value as SPEC section 2 compares it (dtype, shape,
    elements bit for bit, every NaN one NaN): equal values, equal digests."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{v.dtype}{list(v.array.shape)};".encode())
    h.update(v.canonical_bytes)   # (the Tensor's own, made when it was)
    return "blake2b-128:" + h.hexdigest()


def _number(x: float) -> Any:
    return "nan" if x != x else "inf" if x == float("inf") else "-inf" if x == float("-inf") else x


def summary_json(v: Tensor) -> dict[str, Any]:
    """`{"dtype", "shape", "summary": {"elements", "digest", ...}}`: not a
    value (`value_from_json` refuses it), what a verdict's JSON writes for
    a large part of an outcome that is not shown in full (docs/json-size.md):
    its digest (`value_digest`; equal digests, equal values), and its least
    and greatest element (floats: of those not NaN, and how many are NaN;
    bool: how many are true)."""
    a = v.array
    s: dict[str, Any] = {"elements": int(a.size), "digest": value_digest(v)}
    if v.dtype == "bool":
        s["true"] = int(np.count_nonzero(a))
    elif v.dtype in FLOAT_DTYPES:
        wide = a.astype(np.float64)
        nan = np.isnan(wide)
        s["nan"] = int(nan.sum())
        if not nan.all():
            s["min"], s["max"] = _number(float(wide[~nan].min())), _number(float(wide[~nan].max()))
    else:
        s["min"], s["max"] = int(a.min()), int(a.max())
    return {"dtype": v.dtype, "shape": list(a.shape), "summary": s}


def summary_text(v: Tensor) -> str:
    """A summarised value in text: dtype, shape and digest (its first 12 digits)."""
    return f"{v.dtype} {list(v.array.shape)} (summarised, {value_digest(v)[:24]})"


def range_text(v: Tensor) -> str:
    """A large value in text by its range (σ in `tfsem check`'s text, which
    `--json` gives in full): `f32 [3, 3, 32] (864 values from -0.5 to 0.5)`;
    a value all one element as `format_value` shows it."""
    s = summary_json(v)["summary"]
    if s.get("min") is not None and s.get("min") == s.get("max") and not s.get("nan"):
        return format_value(v)
    what = f"{s['elements']} values"
    if "min" in s:
        # (each bound as the dtype writes it: float32's shortest digits)
        low, high = (str(v.array.dtype.type(s[b])) if isinstance(s[b], (int, float)) else s[b]
                     for b in ("min", "max"))
        what += f" from {low} to {high}"
    if s.get("nan"):
        what += f", {s['nan']} NaN"
    if "true" in s:
        what += f", {s['true']} true"
    return f"{v.dtype} {list(v.array.shape)} ({what}; in full with --json)"


def is_summary(raw: Any) -> bool:
    return isinstance(raw, Mapping) and isinstance(raw.get("summary"), Mapping)


def matches_json(v: Value, raw: Any) -> bool | None:
    """Whether `v` is the value `raw` writes: for a summary, whether the
    digests agree; None when `raw` is neither a summary nor a value."""
    if is_summary(raw):
        return isinstance(v, Tensor) and v.dtype == raw.get("dtype") and \
            value_digest(v) == raw["summary"].get("digest")
    try:
        return value_from_json(raw) == v
    except (ValueFormatError, TypeError, ValueError):
        return None
