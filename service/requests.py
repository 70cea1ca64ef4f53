"""Request bodies of `POST /v1/check` and `POST /v1/outcomes`, decoded and checked.

Every problem becomes a :class:`ProgramError` whose violations carry the
messages the command line prints for the same input: the program and case
decoders of :mod:`tfsem.oracle.jsonio` do the work, so a malformed program
posted here gets exactly the lines `tfsem check` or `tfsem outcomes` prints
for it in a file.  On top of those come the server's own limits (body depth,
nodes per program, elements per declared tensor type), checked first and
cheaply, before any program is decoded.

What passes is handed to a worker process as plain JSON: nothing in a request
names code to run (passes are not accepted, only programs).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tfsem.oracle.jsonio import (CASE_FORMAT, OBSERVE, SEMANTICS, case_from_json, decode_inputs,
                                 parse_json_text, program_from_json,
                                 ViolationCollector)
from tfsem.oracle.program import ProgramError, Violation

from .limits import Limits

CHECK_FIELDS = ("original", "rewritten", "semantics", "observe", "timeout", "format", "expect", "note")
OUTCOMES_FIELDS = ("program", "feeds", "init", "semantics", "observe", "limit", "timeout", "max_states")


def parse_body(raw: bytes, limits: Limits) -> Any:
    """The JSON value of a request body (the messages of a bad JSON file)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProgramError([Violation("request", "bad-json", "not UTF-8 text")]) from None
    data = parse_json_text(text, "request")   # bad JSON, too deep for Python: ProgramError
    if json_depth(data, limits.max_json_depth) > limits.max_json_depth:
        raise ProgramError([Violation("request", "too-deep",
                                      f"JSON nested more than {limits.max_json_depth} levels deep")])
    return data


def json_depth(data: Any, stop: int) -> int:
    """Nesting depth of a JSON value (iterative; stops counting past `stop`)."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > stop:
                return deepest
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return deepest


def _object(data: Any) -> dict:
    if not isinstance(data, dict):
        raise ProgramError([Violation("request", "format", "the request body is a JSON object")])
    return data


def _unknown_fields(data: dict, allowed: tuple[str, ...], bad: ViolationCollector) -> None:
    for key in sorted(set(data) - set(allowed)):
        bad(f"request.{key}", "unknown-field", f"unknown field {key!r}")


def _choice(data: dict, key: str, choices: tuple[str, ...], bad: ViolationCollector) -> str:
    value = data.get(key, choices[0])
    if value not in choices:
        bad(f"request.{key}", "bad-value", f"{key} is one of {', '.join(choices)}")
        return choices[0]
    return value


def _timeout(data: dict, bad: ViolationCollector) -> float | None:
    raw = data.get("timeout")
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw <= 0:
        bad("request.timeout", "bad-value", f"timeout is a positive number of seconds, got {raw!r}")
        return None
    return float(raw)


def _positive_int(data: dict, key: str, bad: ViolationCollector) -> int | None:
    raw = data.get(key)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        bad(f"request.{key}", "bad-value", f"{key} is a positive integer, got {raw!r}")
        return None
    return raw


def check_size(program: Any, where: str, limits: Limits, bad: ViolationCollector) -> None:
    """The server's limits on one program, before it is decoded: nodes, and
    elements of every declared variable and feed type."""
    if not isinstance(program, dict):
        return
    nodes = program.get("nodes")
    if isinstance(nodes, list) and len(nodes) > limits.max_nodes:
        bad(f"{where}.nodes", "too-large",
            f"{len(nodes)} nodes; this server takes at most {limits.max_nodes} per program")
    for section in ("variables", "feeds"):
        decls = program.get(section)
        if not isinstance(decls, dict):
            continue
        for name, t in decls.items():
            shape = t.get("shape") if isinstance(t, dict) else None
            if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                               for d in shape):
                n = math.prod(shape)
                if n > limits.max_elements:
                    bad(f"{where}.{section}.{name}", "too-large",
                        f"shape {shape} has {n} elements; this server takes at most "
                        f"{limits.max_elements} per tensor")


# ---------------------------------------------------------------------------
# POST /v1/check


@dataclass(frozen=True)
class CheckRequest:
    case: dict            #: a tfsem.case/1 object whose original program is valid
    semantics: str
    observe: str
    timeout: float | None


def check_request(data: Any, limits: Limits) -> CheckRequest:
    """`{original, rewritten, semantics, observe, timeout}`; a whole
    `tfsem.case/1` object (with `format`, `expect`, `note`) is accepted too,
    so a case file can be posted as it is.  The original must be a valid
    program (as for `tfsem check`, exit 2 otherwise); the rewritten one may be
    anything: a malformed rewrite is the verdict `invalid`, not bad input."""
    data = _object(data)
    bad = ViolationCollector()
    _unknown_fields(data, CHECK_FIELDS, bad)
    for key in ("original", "rewritten"):
        if key not in data:
            bad("request", "missing-field", f"a check needs {key!r}")
    timeout = _timeout(data, bad)
    from tfsem.graphdef import program_json_of  # a TensorFlow graph where a program goes
    data = dict(data, **{k: program_json_of(data[k], f"request.{k}")
                         for k in ("original", "rewritten") if k in data})
    check_size(data.get("original"), "request.original", limits, bad)
    check_size(data.get("rewritten"), "request.rewritten", limits, bad)
    bad.raise_if_any()
    case = {k: v for k, v in data.items() if k != "timeout"}
    case.setdefault("format", CASE_FORMAT)
    decoded = case_from_json(case, where="request")  # the messages of `tfsem check CASE`
    return CheckRequest(case, decoded.semantics, decoded.observe, timeout)


# ---------------------------------------------------------------------------
# POST /v1/outcomes


@dataclass(frozen=True)
class OutcomesRequest:
    program: dict
    feeds: dict
    init: dict
    semantics: str
    observe: str
    limit: int
    timeout: float | None
    max_states: int

    def job(self) -> dict:
        return {"program": self.program, "feeds": self.feeds, "init": self.init,
                "semantics": self.semantics, "observe": self.observe, "limit": self.limit,
                "max_states": self.max_states}


def outcomes_request(data: Any, limits: Limits) -> OutcomesRequest:
    """`{program, feeds, init, semantics, observe, limit}` (and `timeout`,
    `max_states`, both capped by the server).  `limit` caps the outcomes
    listed, not `count`, which stays exact; it defaults to, and is capped at,
    the server's `max_listed`."""
    data = _object(data)
    bad = ViolationCollector()
    _unknown_fields(data, OUTCOMES_FIELDS, bad)
    if "program" not in data:
        bad("request", "missing-field", "outcomes needs 'program'")
    semantics = _choice(data, "semantics", SEMANTICS, bad)
    observe = _choice(data, "observe", OBSERVE, bad)
    feeds = data.get("feeds", {})
    init = data.get("init", {})
    if not isinstance(feeds, dict):
        bad("request.feeds", "format", "feeds is an object name -> value")
        feeds = {}
    if not isinstance(init, dict):
        bad("request.init", "format", "init is an object variable name -> value")
        init = {}
    limit = _positive_int(data, "limit", bad)
    max_states = _positive_int(data, "max_states", bad)
    timeout = _timeout(data, bad)
    if "program" in data:  # a TensorFlow graph where a program goes
        from tfsem.graphdef import program_json_of
        data = dict(data, program=program_json_of(data["program"], "program"))
    check_size(data.get("program"), "program", limits, bad)
    bad.raise_if_any()
    program = program_from_json(data["program"], where="program")  # the messages of `tfsem outcomes`
    decode_inputs(program, feeds, init)
    return OutcomesRequest(data["program"], feeds, init, semantics, observe,
                           min(limit or limits.max_listed, limits.max_listed), timeout,
                           min(max_states or limits.max_states, limits.max_states))


# ---------------------------------------------------------------------------
# Answers for bad input


def error_body(exc: ProgramError, command: str) -> dict:
    """The 400 answer: each violation as an object and as the line the
    command line prints (`tfsem COMMAND: invalid input:` then these lines)."""
    return {"error": "invalid input",
            "message": f"tfsem {command}: invalid input:",
            "messages": [str(v) for v in exc.violations],
            "violations": [{"where": v.where, "rule": v.rule, "message": v.message}
                           for v in exc.violations]}


def dumps_compact(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------
# The server's share and the worker's share of a request
#
# The server only parses the body (bounded by the body cap) and reads the
# few fields it needs to bound the work: the timeout, and the semantics and
# observation an `unknown` verdict names.  Everything else -- converting a
# TensorFlow graph, the size checks, decoding the programs and inputs -- runs
# in a worker, under its memory cap and the request's deadline (`prepare`).


@dataclass(frozen=True)
class Envelope:
    """What the server reads of a parsed body, without checking the rest."""
    timeout: float | None
    semantics: str
    observe: str


def envelope(data: Any) -> Envelope:
    """The timeout, semantics and observation of a parsed body, or the
    defaults where they are missing or bad (the worker reports bad ones)."""
    if not isinstance(data, dict):
        return Envelope(None, SEMANTICS[0], OBSERVE[0])
    raw = data.get("timeout")
    timeout = float(raw) if (isinstance(raw, (int, float)) and not isinstance(raw, bool)
                             and math.isfinite(raw) and raw > 0) else None
    semantics = data.get("semantics") if data.get("semantics") in SEMANTICS else SEMANTICS[0]
    observe = data.get("observe") if data.get("observe") in OBSERVE else OBSERVE[0]
    return Envelope(timeout, semantics, observe)


def prepare(job: str, data: Any, limits: Limits) -> dict:
    """In a worker: the payload of `jobs.JOBS[job]` for a parsed request body
    (ProgramError with the command line's messages for bad input)."""
    if job == "check":
        return {"case": check_request(data, limits).case}
    if job == "outcomes":
        return outcomes_request(data, limits).job()
    raise ProgramError([Violation("request", "unknown-job", f"no job {job!r}")])
