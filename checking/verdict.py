"""Verdicts (SPEC section 3) and their JSON form (SPEC section 4, `check --json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from tfsem.oracle.outcomes import TEXT_ELEMENTS, Outcome, range_text, summarisable
from tfsem.oracle.values import Value, format_value, value_to_json

SOUND, UNSOUND, NO_COUNTEREXAMPLE, UNKNOWN, INVALID = (
    "sound", "unsound", "no-counterexample", "unknown", "invalid")
VERDICTS = (SOUND, UNSOUND, NO_COUNTEREXAMPLE, UNKNOWN, INVALID)
#: `--float` (SPEC section 11): IEEE bit for bit, or float arithmetic over the reals
FLOAT_MODES = ("exact", "real")
#: the kinds of an `unsound` verdict's difference (SPEC section 11): it stays
#: when every float op is computed exactly over the reals, or it vanishes
#: there; "undetermined" when the check over the reals decided neither
DIFFERENCE_ORDERING, DIFFERENCE_FLOAT, DIFFERENCE_UNDETERMINED = (
    "ordering-and-state", "floating-point", "undetermined")
_DIFFERENCE_TEXT = {
    DIFFERENCE_ORDERING: "a difference of ordering and state: it stays when every float op "
                         "is computed exactly over the reals",
    DIFFERENCE_FLOAT: "only a difference of floating-point values: it vanishes when every "
                      "float op is computed exactly over the reals (the rewrite is sound up "
                      "to floating-point rounding)",
    DIFFERENCE_UNDETERMINED: "kind of difference undetermined: the check over the reals "
                             "decided neither way",
}


#: the elements of the differing values (other than the first difference)
#: an `unsound` verdict's counterexample shows in full, outcomes together
DIFFERING_ELEMENTS = 1 << 16


def _elements(v: Value | None) -> int:
    return int(v.array.size) if summarisable(v) else 0


def _first_difference(outcome: Outcome, originals: list[Outcome]) -> tuple[str, str] | None:
    """`Outcome.first_difference` by part name: an original outcome that
    lacks a part (a projection, `unsound_projected`) is not told apart by it."""
    candidates = [dict(o.parts()) for o in originals]
    for key, value in outcome.parts():
        candidates = [d for d in candidates if key not in d or d[key] == value]
        if not candidates:
            return key
    return None


#: the least number of significant digits tried per float dtype in
#: `sigma_json` (float32: every value that 1-5 digits write, 6 write as
#: well, the same decimal: float32 carries more than 7 digits)
_FIRST_DIGITS = {"float32": 6, "float16": 1, "bfloat16": 1}


def sigma_json(value: Value) -> Any:
    """`value_to_json(value)`, with a large float32, float16 or bfloat16
    tensor's elements written with the fewest significant digits (up to
    9) that read back to the same bits: the reader takes a JSON number as
    the double nearest to it (`value_from_json`), and each element here is
    the very double whose shortest repr Python writes, checked to convert
    to the element's bits.  A real graph's σ (MobileNetV2: 4.5 million
    float32 elements) takes 43% less room than with every element widened
    to a double's 17 digits; every element is still there, exactly."""
    if not summarisable(value) or value.dtype not in _FIRST_DIGITS:
        return value_to_json(value)
    a = value.array
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    want = a.reshape(-1).view(bits)
    wide = a.astype(np.float64).reshape(-1)
    idx = np.flatnonzero(np.isfinite(wide) & (wide != 0))
    x = wide[idx]
    with np.errstate(all="ignore"):
        mag = np.floor(np.log10(np.abs(x)))
        for digits in range(_FIRST_DIGITS[value.dtype], 10):
            if not idx.size:
                break
            e = digits - 1 - mag
            k = np.round(x * 10.0 ** e)
            r = np.where(e >= 0, k / 10.0 ** e, k * 10.0 ** (-e))
            ok = r.astype(a.dtype).view(bits) == want[idx]
            wide[idx[ok]] = r[ok]
            idx, x, mag = idx[~ok], x[~ok], mag[~ok]
    # (an element no shorter decimal gives keeps its exact double)
    wide = wide.reshape(a.shape)
    if np.isfinite(wide).all():
        return {"dtype": value.dtype, "value": wide.tolist()}
    out = wide.astype(object)
    out[np.isnan(wide)] = "nan"
    out[wide == np.inf] = "inf"
    out[wide == -np.inf] = "-inf"
    return {"dtype": value.dtype, "value": out.tolist()}


@dataclass
class Counterexample:
    """σ, a schedule of the rewritten program and its outcome, which is not
    among the original's outcomes at σ (all of which are listed, with a witness
    schedule each, up to `original_count`)."""

    feeds: dict[str, Value]
    init: dict[str, Value]
    schedule: list[str]
    outcome: Outcome
    original_outcomes: list[tuple[Outcome, list[str]]]
    original_count: int
    #: the steps of `schedule` that access variables (their order is what
    #: makes the outcome); the other steps are free to move.
    key_steps: list[str] = field(default_factory=list)

    def shown_in_full(self, named: Mapping[str, str] | None = None) -> set[tuple[str, str]]:
        """The parts of the outcomes (("output", name) or ("variable",
        name)) that the JSON and the text show in full; the others, those of
        more than SUMMARY_MIN_ELEMENTS elements, are summarised (their
        digest, least and greatest element: oracle/outcomes.py
        `summary_json`).  In full: the first difference (the part the
        verdict names), then the other parts where the rewritten outcome
        and a listed original one differ, in the staged order, while the
        elements written for them stay within DIFFERING_ELEMENTS.  σ and
        the schedules are always in full: with them `tfsem check` or a
        replay gives every value again (docs/json-size.md).  On a real
        graph's training step the outcome holds every weight: 93 MB of
        JSON per outcome on MobileNetV2, the same weights in the rewritten
        and the original outcome but the few a rewrite changed.  `named`:
        the verdict's `differs` (where more original outcomes than are
        listed gave it), in full too."""
        originals = [o for o, _ in self.original_outcomes]
        full: set[tuple[str, str]] = set(named.items()) if named else set()
        first = _first_difference(self.outcome, originals)
        if first:
            full.add(first)
        budget = DIFFERING_ELEMENTS
        other_parts = [dict(o.parts()) for o in originals]
        for key, value in self.outcome.parts():
            if key in full or not any(key in d and d[key] != value for d in other_parts):
                continue
            size = sum(_elements(v) for v in (value, *(d.get(key) for d in other_parts)))
            if size <= budget:
                full.add(key)
                budget -= size
        return full

    def summarised(self, full: set[tuple[str, str]] | None = None) -> int:
        """How many values of the outcomes listed the JSON summarises."""
        full = self.shown_in_full() if full is None else full
        return sum(1 for o in [self.outcome, *(o for o, _ in self.original_outcomes)]
                   for key, v in o.parts() if key not in full and summarisable(v))

    def to_json(self, named: Mapping[str, str] | None = None) -> dict[str, Any]:
        full = self.shown_in_full(named)
        out = {
            "feeds": {k: sigma_json(v) for k, v in sorted(self.feeds.items())},
            "init": {k: sigma_json(v) for k, v in sorted(self.init.items())},
            "schedule": list(self.schedule),
            "key_steps": list(self.key_steps),
            "outcome": self.outcome.to_json(full),
            "original_outcomes": [dict(o.to_json(full), schedule=list(w))
                                  for o, w in self.original_outcomes],
            "original_count": self.original_count,
        }
        n = self.summarised(full)
        if n:
            out["summarised"] = n
        return out

    def describe(self, named: Mapping[str, str] | None = None) -> list[str]:
        """Lines of text: σ, the rewritten run, and all of the original's
        outcomes (`named`: as in `shown_in_full`)."""
        def sigma(v: Value) -> str:
            # (a real graph's σ holds hundreds of tensors of thousands of
            # elements: their ranges here, every element in --json)
            return range_text(v) if summarisable(v, TEXT_ELEMENTS) else format_value(v)

        feeds = ", ".join(f"{k} = {sigma(v)}" for k, v in sorted(self.feeds.items()))
        init = ", ".join(f"{k} = {sigma(v)}" for k, v in sorted(self.init.items()))
        lines = [f"  feeds:   {feeds or '(none)'}",
                 f"  init:    {init or '(none)'}",
                 f"  rewritten schedule: {' '.join(self.schedule)}"]
        if self.key_steps and len(self.key_steps) < len(self.schedule):
            lines.append(f"    (steps that matter: {' '.join(self.key_steps)})")
        full = self.shown_in_full(named)
        first = next(iter(named.items())) if named else \
            _first_difference(self.outcome, [o for o, _ in self.original_outcomes])
        lines.append(f"  rewritten outcome:  {self.outcome.describe(full, first)}")
        n = self.original_count
        lines.append(f"  original outcomes at this σ ({n}):")
        for i, (o, w) in enumerate(self.original_outcomes, 1):
            lines.append(f"    {i}. {o.describe(full, first)}")
            lines.append(f"       schedule: {' '.join(w)}")
        if len(self.original_outcomes) < n:
            lines.append(f"    ... {n - len(self.original_outcomes)} more")
        if self.summarised(full):
            lines.append(f"  ({self.summarised(full)} large values the rewritten and the original "
                         "outcomes share, or past the differing values shown, are summarised "
                         "by their digest: the schedule replayed at σ gives them in full)")
        return lines


def not_among_reason(count: int, differs: Mapping[str, Any] | None, how: str = "") -> str:
    """The reason of an `unsound` verdict: the rewritten program's outcome is
    not among the original's `count` outcomes at σ, with the first place the
    outcome differs (`how`, when given, says how the outcome was found)."""
    reason = (f"{how}: " if how else "") + (
        f"the rewritten program's outcome is not among the original's {count} "
        f"outcome{'s' if count != 1 else ''} at this σ")
    where = next(iter(differs.items())) if differs else None
    if where:
        reason += f"; first difference: {where[0]} {where[1]!r}"
    return reason


def cause_of(reason: str) -> str:
    """The cause an `unknown` verdict's reason names first, in a few words, for
    a headline: the reason's first clause (up to its first ";", and its first
    ": " when longer than 120 characters), e.g.
    "cannot run TensorFlow op MatMul on floating-point tensors concretely" or
    "the time budget (10 s) ran out during the symbolic search of the
    original program (...)"; the reason itself when it has no clause."""
    head = reason.strip()
    cut = head.find(";")
    if cut > 0:
        head = head[:cut]
    cut = head.find(": ")
    if len(head) > 120 and cut > 0:
        head = head[:cut]
    return head.strip() or "the check could not decide"


@dataclass
class Verdict:
    """The answer of a check.  `verdict` is one of VERDICTS; `reason` says why
    (for invalid, unknown, no-counterexample, and unsound); `differs` names the
    part that differs first ({"output": name} or {"variable": name}); `tried`
    counts the σ tried concretely; `confirmed` lists where an unsound verdict
    was reproduced ("oracle", then array backends)."""

    verdict: str
    reason: str = ""
    differs: Mapping[str, str] | None = None
    counterexample: Counterexample | None = None
    tried: int = 0
    confirmed: list[str] = field(default_factory=list)
    semantics: str = "atomic"
    observe: str = "outputs+state"
    stats: dict[str, Any] = field(default_factory=dict)
    #: "exact" or "real" (FLOAT_MODES)
    float_mode: str = "exact"
    #: an `unsound` verdict's kind of difference (DIFFERENCE_*), else None
    difference: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @property
    def cause(self) -> str | None:
        """What an `unknown` verdict names as its cause (stats["cause"], else
        the reason's first clause); None for other verdicts."""
        if self.verdict != UNKNOWN:
            return None
        return self.stats.get("cause") or cause_of(self.reason)

    @property
    def exit_status(self) -> int:
        """SPEC section 4: 0 sound / no-counterexample, 1 unsound / invalid, 3 unknown."""
        return {SOUND: 0, NO_COUNTEREXAMPLE: 0, UNSOUND: 1, INVALID: 1, UNKNOWN: 3}[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "differs": dict(self.differs) if self.differs else None,
            "counterexample": self.counterexample.to_json(self.differs) if self.counterexample
            else None,
            "reason": self.reason,
            "tried": self.tried,
            "confirmed": list(self.confirmed),
            "semantics": self.semantics,
            "observe": self.observe,
            "float": self.float_mode,
            "difference": self.difference if self.verdict == UNSOUND else None,
            "stats": dict(self.stats),
        }

    def describe(self) -> str:
        """The text form printed by `tfsem check`."""
        head = self.verdict
        if self.verdict == SOUND and self.float_mode == "real":
            head = "sound up to floating-point rounding (--float real: float arithmetic over the reals)"
        if self.verdict == UNSOUND and self.float_mode == "real":
            head = "unsound over the reals (--float real): a difference of ordering and state"
        if self.verdict == UNKNOWN and self.reason:
            head += f": {self.cause}"
        if self.differs:
            (kind, name), = self.differs.items()
            head += f": {'output' if kind == 'output' else 'final value of variable'} {name!r} differs"
        lines = [head]
        if self.verdict == UNSOUND and self.difference and self.float_mode == "exact":
            # (the first line stays what it was: readers and tests parse it)
            lines.append(f"  kind: {self.difference}: {_DIFFERENCE_TEXT[self.difference]}")
        if self.reason:
            lines.append(f"  reason: {self.reason}")
        if self.counterexample is not None:
            lines += self.counterexample.describe(self.differs)
        if self.confirmed:
            lines.append(f"  confirmed on: {', '.join(self.confirmed)}")
        replay = self.stats.get("backends")
        if self.verdict == UNSOUND and isinstance(replay, str):
            # (why a replay is missing from "confirmed on": e.g. "numpy
            # replay skipped: budget (...)", docs/verdicts.md)
            lines.append(f"  {replay}")
        kernels = self.stats.get("tensorflow_kernels")
        if isinstance(kernels, Mapping) and kernels.get("text"):
            # the ops whose concrete values came from TensorFlow's kernels (oracle/kernels.py)
            lines.append(f"  {kernels['text']}")
        if self.verdict == NO_COUNTEREXAMPLE or (self.tried and self.verdict == UNKNOWN):
            lines.append(f"  σ tried concretely: {self.tried}")
        return "\n".join(lines)
