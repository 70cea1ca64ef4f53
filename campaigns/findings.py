"""What a fuzzing campaign finds, as data and as exceptions.

A :class:`FindingRecord` is plain, JSON-able data: it crosses process and
machine boundaries (campaign workers, Dask) and goes into the database as is.

Each kind of finding has its own exception type, raised from its own line in
:func:`raise_finding`.  Hypothesis tells failures apart by exception type and
raise site, so distinct kinds are tracked, shrunk and reported separately
instead of being merged into one bug (see ../shared/STYLE.md, Hypothesis).
Finer distinctions follow the same rule: an unsound rewrite that changes an
output and one that changes a variable raise from different lines, and a pass
that crashes with a KeyError and one that fails an assertion raise different
subclasses of :class:`PassCrashed`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

UNSOUND, INVALID, CRASH, TIMEOUT = "unsound", "invalid", "crash", "timeout"
KINDS = (UNSOUND, INVALID, CRASH, TIMEOUT)


@dataclass
class FindingRecord:
    """One finding: the pass, the kind, the (minimized) program and evidence.

    - `original`: the program given to the pass (`tfsem.program/1` JSON).
    - `rewritten`: what the pass returned (JSON), None for crash and timeout.
    - `semantics`, `observe`: the cell being fuzzed when it was found (only an
      unsound finding depends on it; the pass itself never sees it).
    - `verdict`: SPEC section 3's verdict JSON for unsound and invalid findings.
    - `feeds`, `init`: σ as JSON values (the counterexample's for unsound).
    - `schedule`: the rewritten program's schedule reaching the extra outcome.
    - `detail`: kind-specific facts (error type and traceback of a crash, the
      time limit of a timeout, the violations of an invalid program).
    - `claim`: what the pass claims for this cell ("sound", "unsound", None).
    """

    pass_name: str
    kind: str
    semantics: str
    observe: str
    original: dict
    rewritten: dict | None = None
    verdict: dict | None = None
    message: str = ""
    feeds: dict = field(default_factory=dict)
    init: dict = field(default_factory=dict)
    schedule: list | None = None
    detail: dict = field(default_factory=dict)
    claim: str | None = None
    #: how the pass was named to the campaign (a registered name or
    #: module:attribute), to run it again
    pass_spec: str = ""
    found_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r} (one of {', '.join(KINDS)})")

    @property
    def differs(self) -> dict | None:
        """{"output": name} or {"variable": name} for an unsound finding."""
        return (self.verdict or {}).get("differs")

    @property
    def size(self) -> int:
        """Number of nodes of the original program (what shrinking minimizes)."""
        return len(self.original.get("nodes", []))

    @property
    def contradicts_claim(self) -> bool:
        """True when this finding shows a claim of the pass to be false.

        Crashes, timeouts and invalid output are bugs whatever the pass claims;
        an unsound rewrite is a bug unless the pass claims `unsound` here."""
        return self.kind != UNSOUND or self.claim != "unsound"

    def case(self) -> dict | None:
        """The reproducer as a `tfsem.case/1` object (None for crash and
        timeout, which have no rewritten program: replay those with
        `tfsem rewrite PASS PROGRAM`)."""
        if self.rewritten is None:
            return None
        note = f"{self.pass_name}: {self.message}" if self.message else self.pass_name
        return {"format": "tfsem.case/1", "original": self.original, "rewritten": self.rewritten,
                "semantics": self.semantics, "observe": self.observe,
                "expect": UNSOUND if self.kind == UNSOUND else INVALID, "note": note}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FindingRecord":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


# ---------------------------------------------------------------------------
# Exceptions: one type per kind, one raise site per distinction


class Finding(Exception):
    """Base of the finding exceptions; `record` holds the evidence."""

    kind = ""

    def __init__(self, record: FindingRecord):
        super().__init__(f"{record.pass_name}: {record.kind}: {record.message}")
        self.record = record


class Unsound(Finding):
    """The rewritten program has an outcome the original lacks.  `part` is
    "output" or "variable" and `name` which one differs first."""

    kind = UNSOUND

    @property
    def part(self) -> str | None:
        d = self.record.differs or {}
        return next(iter(d), None)

    @property
    def name(self) -> str | None:
        d = self.record.differs or {}
        return next(iter(d.values()), None)


class InvalidRewrite(Finding):
    """The pass returned a malformed program, or one with another interface."""

    kind = INVALID


class PassCrashed(Finding):
    """The pass raised, or its process died.  Subclasses per error type
    (:meth:`for_error`) keep distinct crashes apart."""

    kind = CRASH
    _by_error: dict[str, type["PassCrashed"]] = {}

    @classmethod
    def for_error(cls, error_type: str) -> type["PassCrashed"]:
        sub = cls._by_error.get(error_type)
        if sub is None:
            sub = type(f"PassCrashed[{error_type}]", (cls,), {"__module__": cls.__module__})
            cls._by_error[error_type] = sub
        return sub


class PassTimedOut(Finding):
    """The pass ran past its time limit and was killed."""

    kind = TIMEOUT


def raise_finding(record: FindingRecord) -> None:
    """Raise the exception of `record`'s kind.  Each distinction has its own
    `raise` line: Hypothesis keys failures on (type, file, line)."""
    if record.kind == UNSOUND:
        if "variable" in (record.differs or {}):
            raise Unsound(record)  # a final variable value differs
        raise Unsound(record)  # an output differs
    if record.kind == INVALID:
        raise InvalidRewrite(record)
    if record.kind == CRASH:
        raise PassCrashed.for_error(record.detail.get("error_type", "?"))(record)
    if record.kind == TIMEOUT:
        raise PassTimedOut(record)
    raise ValueError(f"unknown finding kind {record.kind!r}")


def findings_in(exc: BaseException) -> list[Finding]:
    """The findings inside an exception Hypothesis raised (one failure, an
    ExceptionGroup of several distinct ones, or a flaky-failure group)."""
    if isinstance(exc, Finding):
        return [exc]
    out: list[Finding] = []
    for sub in getattr(exc, "exceptions", ()) or ():
        out.extend(findings_in(sub))
    return out
