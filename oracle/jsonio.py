"""The JSON formats `tfsem.program/1` and `tfsem.case/1` (SPEC sections 1 and 5).

Loading checks structure (types, fields, names) and then the program rules of
:func:`tfsem.oracle.program.validate`; every problem becomes a
:class:`ProgramError` whose violations name the node, input or field.  Writing
is canonical: data inputs before control inputs, port 0 written as "n",
variables as a plain list when all are int64 scalars.  Loading then writing
gives the same program.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from . import float_attrs
from . import functions as fns
from .program import (ASSIGN, ENTER, ENTER_ATTRS, READ, VAR, ControlIn, DataIn, FeedControlIn, FeedIn, Node,
                      Program, ProgramError, TensorType, Violation, parse_input, parse_port)
from .values import DTYPES, Error, Tensor, Value, ValueFormatError, value_from_json, value_to_json

PROGRAM_FORMAT = "tfsem.program/1"
CASE_FORMAT = "tfsem.case/1"
#: oracle/session.py reads it (sessions, SPEC section 10)
SESSION_FORMAT = "tfsem.session/1"
SEMANTICS = ("atomic", "decomposed")
OBSERVE = ("outputs+state", "outputs")
EXPECT = ("sound", "unsound", "invalid")

_NODE_FIELDS = {"name", "op", "inputs", "var", "fn", "value"}


class ViolationCollector:
    """Collects every violation found, then raises them together."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def __call__(self, where: str, rule: str, message: str) -> None:
        self.violations.append(Violation(where, rule, message))

    def raise_if_any(self) -> None:
        if self.violations:
            raise ProgramError(self.violations)


def _type_from_json(raw: Any, where: str, bad) -> TensorType:
    if not isinstance(raw, dict) or not set(raw) <= {"dtype", "shape"}:
        bad(where, "bad-type", "expected {\"dtype\": \"int64\"|\"float32\"|..., \"shape\": [...]}")
        return TensorType()
    dtype = raw.get("dtype", "int64")
    shape = raw.get("shape", [])
    if not isinstance(dtype, str) or dtype not in DTYPES:
        bad(where, "bad-type", f"unknown dtype {dtype!r} ({', '.join(DTYPES)}; string, "
            "variant and resource tensors are not modelled)")
        dtype = "int64"
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                              and d >= 0 for d in shape):
        bad(where, "bad-type", f"shape must be a list of non-negative integers, got {shape!r}")
        shape = []
    return TensorType(dtype, tuple(shape))


def program_from_json(data: Any, validate: bool = True, where: str = "program") -> Program:
    """Decode a `tfsem.program/1` object (already parsed from JSON)."""
    bad = ViolationCollector()
    if not isinstance(data, dict):
        raise ProgramError([Violation(where, "format", "a program is a JSON object")])
    fmt = data.get("format", PROGRAM_FORMAT)
    if fmt != PROGRAM_FORMAT:
        bad(f"{where}.format", "format", f"expected {PROGRAM_FORMAT!r}, got {fmt!r}")
    for key in set(data) - {"format", "variables", "feeds", "nodes", "outputs", "updates"}:
        bad(f"{where}.{key}", "unknown-field", f"unknown field {key!r}")

    variables: dict[str, TensorType] = {}
    raw_vars = data.get("variables", [])
    if isinstance(raw_vars, list):
        for i, x in enumerate(raw_vars):
            if not isinstance(x, str) or not x:
                bad(f"{where}.variables[{i}]", "bad-name", f"a variable name is a string, got {x!r}")
            elif x in variables:
                bad(f"{where}.variables[{i}]", "duplicate-name", f"variable {x!r} declared twice")
            else:
                variables[x] = TensorType()
    elif isinstance(raw_vars, dict):
        for x, t in raw_vars.items():
            variables[x] = _type_from_json(t, f"{where}.variables.{x}", bad)
    else:
        bad(f"{where}.variables", "format", "variables is a list of names or an object name -> type")

    feeds: dict[str, TensorType] = {}
    raw_feeds = data.get("feeds", {})
    if isinstance(raw_feeds, dict):
        for f, t in raw_feeds.items():
            feeds[f] = _type_from_json(t, f"{where}.feeds.{f}", bad)
    else:
        bad(f"{where}.feeds", "format", "feeds is an object name -> {dtype, shape}")

    nodes: list[Node] = []
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list):
        bad(f"{where}.nodes", "format", "nodes is a list of node objects")
        raw_nodes = []
    for i, raw in enumerate(raw_nodes):
        node = _node_from_json(raw, f"{where}.nodes[{i}]", bad)
        if node is not None:
            nodes.append(node)

    outputs: dict[str, DataIn] = {}
    raw_outputs = data.get("outputs", {})
    if not isinstance(raw_outputs, dict):
        bad(f"{where}.outputs", "format", "outputs is an object name -> \"n\" or \"n:k\"")
        raw_outputs = {}
    for name, ref in raw_outputs.items():
        try:
            outputs[name] = DataIn(*parse_port(ref))
        except ValueError as exc:
            bad(f"output {name!r}", "bad-reference", str(exc))

    updates = _updates_from_json(data.get("updates", []), f"{where}.updates",
                                 {n.name for n in nodes}, variables, bad)
    bad.raise_if_any()
    prog = Program(variables, tuple(nodes), outputs, feeds)
    prog = prog.validated() if validate else prog
    if updates:
        _record_updates(prog, updates, validate)
    return prog


def _updates_from_json(raw: Any, where: str, node_names: set[str],
                       variables: Mapping[str, TensorType], bad) -> list:
    """The optional `updates` field: the multi-variable updates (an imported
    ResourceApplyAdam, ...) that TensorFlow runs as one kernel and tfsem as
    several nodes, each `{"nodes": [...], "variables": [...], "where": ...}`
    (docs/program-format.md).  They are what sessions check again across runs."""
    if not isinstance(raw, list):
        bad(where, "format", "updates is a list of {\"nodes\": [...], \"variables\": [...], "
            "\"where\": \"...\"}")
        return []
    out = []
    for k, u in enumerate(raw):
        w = f"{where}[{k}]"
        if not isinstance(u, dict) or not set(u) <= {"nodes", "variables", "where"}:
            bad(w, "format", "an update is {\"nodes\": [...], \"variables\": [...], \"where\": "
                "\"...\"}")
            continue
        names, xs, label = u.get("nodes"), u.get("variables"), u.get("where", w)
        ok = True
        for key, vals, known, what in (("nodes", names, node_names, "node"),
                                       ("variables", xs, variables, "variable")):
            if not isinstance(vals, list) or not vals or \
                    not all(isinstance(v, str) for v in vals):
                bad(f"{w}.{key}", "format", f"a non-empty list of {what} names")
                ok = False
                continue
            for v in vals:
                if v not in known:
                    bad(f"{w}.{key}", "unknown-name", f"the program has no {what} {v!r}")
                    ok = False
        if not isinstance(label, str):
            bad(f"{w}.where", "format", "a string (where the update came from)")
            ok = False
        if ok:
            out.append((label, names, xs))
    return out


def _record_updates(prog: Program, updates: list, check: bool) -> None:
    from . import state_ops  # noqa: PLC0415
    if check:   # the importer's own check, for a program written by hand
        race = state_ops.racing_access(prog, updates)
        if race is not None:
            raise ProgramError([Violation(race[0], "racing-update", race[1])])
    state_ops.record_updates(prog, updates)


def _node_from_json(raw: Any, where: str, bad) -> Node | None:
    if not isinstance(raw, dict):
        bad(where, "format", "a node is a JSON object")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        bad(where, "bad-name", f"a node needs a non-empty string \"name\", got {name!r}")
        return None
    where = f"node {name!r}"
    f_attrs = set(fns.lookup(raw["op"]).attrs) if isinstance(raw.get("op"), str) \
        and fns.lookup(raw["op"]) is not None else set()
    if raw.get("op") == ENTER:   # control flow (SPEC section 9)
        f_attrs = set(ENTER_ATTRS)
    for key in set(raw) - _NODE_FIELDS - f_attrs:  # a function's attributes are fields too
        bad(where, "unknown-field", f"unknown field {key!r}")
    op = raw.get("op")
    if not isinstance(op, str):
        bad(where, "unknown-op", f"\"op\" must be a string, got {op!r}")
        return None
    raw_inputs = raw.get("inputs", [])
    inputs = []
    if not isinstance(raw_inputs, list):
        bad(where, "format", "\"inputs\" is a list of strings")
        raw_inputs = []
    for text in raw_inputs:
        try:
            inputs.append(parse_input(text))
        except ValueError as exc:
            bad(where, "bad-reference", str(exc))
    data_inputs = [i for i in inputs if isinstance(i, (DataIn, FeedIn))]
    control_inputs = [i for i in inputs if isinstance(i, (ControlIn, FeedControlIn))]
    inputs = data_inputs + control_inputs

    attrs: dict[str, Any] = {}
    allowed: set[str] = set()
    if op == VAR:
        allowed = {"var"}
        if not isinstance(raw.get("var"), str):
            bad(where, "missing-attribute", "Var needs attribute \"var\" (a variable name)")
        else:
            attrs["var"] = raw["var"]
    elif op == READ:
        pass
    elif op == ENTER:
        allowed = set(ENTER_ATTRS)
        attrs.update({k: raw.get(k, d) for k, d in ENTER_ATTRS.items()})
    elif op in ("Assign", "Write") or (op.startswith("Assign") and fns.lookup(op) is None):
        allowed = {"fn"} if op == "Assign" else set()
        fn = "Snd" if op == "Write" else raw.get("fn") if op == "Assign" else op[len("Assign"):]
        if not isinstance(fn, str) or not fn:
            bad(where, "missing-attribute", "Assign needs attribute \"fn\" (an assign function)")
            fn = ""
        attrs["fn"] = fn
        op = ASSIGN
    else:
        f = fns.lookup(op)
        if f is not None:
            allowed = set(f.attrs)
            for attr, convert in f.attrs.items():
                if attr in raw:
                    try:
                        attrs[attr] = convert(raw[attr], f"{where} attribute {attr!r}")
                    except ValueFormatError as exc:
                        bad(where, "bad-value", str(exc))
    for key in (set(raw) & {"var", "fn", "value"}) - allowed:
        bad(where, "unknown-field", f"{op} has no attribute {key!r}")
    return Node(name, op, tuple(inputs), attrs)


#: The most tensor elements one program written as JSON may hold, all its
#: constants together.  An element costs about 20 bytes of JSON and, while it
#: is written, about 100 bytes of Python objects: a constant within the
#: 2**24-element limit of an operation, which a GraphDef can declare in a few
#: bytes (one value repeated over a large shape), would otherwise cost gigabytes
#: and minutes to write (docs/robustness.md).  2**22 elements: about 80 MB of
#: JSON, written in seconds.
MAX_JSON_ELEMENTS = 1 << 22


def program_to_json(p: Program) -> dict:
    """The tfsem.program/1 JSON object of `p`.  Raises ProgramError before
    converting anything when its constants hold more than MAX_JSON_ELEMENTS
    elements (the cost of writing is counted, not only the cost of holding)."""
    sizes = [(n.name, v.array.size) for n in p.nodes for v in n.attrs.values() if isinstance(v, Tensor)]
    total = sum(size for _, size in sizes)
    if total > MAX_JSON_ELEMENTS:
        name, size = max(sizes, key=lambda s: s[1])
        raise ProgramError([Violation(
            f"node {name!r}", "too-large-to-write",
            f"the program's constants hold {total} elements ({size} in this node), more than "
            f"the {MAX_JSON_ELEMENTS} elements tfsem writes in its JSON program form (about "
            f"{total * 20 >> 20} MB of JSON here); `tfsem outcomes` and `run` take the graph "
            "itself without that step")])
    out: dict[str, Any] = {"format": PROGRAM_FORMAT}
    if all(t == TensorType() for t in p.variables.values()):
        out["variables"] = list(p.variables)
    else:
        out["variables"] = {x: {"dtype": t.dtype, "shape": list(t.shape)} for x, t in p.variables.items()}
    if p.feeds:
        out["feeds"] = {f: {"dtype": t.dtype, "shape": list(t.shape)} for f, t in p.feeds.items()}
    out["nodes"] = [node_to_json(n) for n in p.nodes]
    out["outputs"] = {k: str(v) for k, v in p.outputs.items()}
    from . import state_ops  # noqa: PLC0415
    updates = state_ops.updates_of(p)
    if updates:   # what a session of the program checks again (docs/program-format.md)
        out["updates"] = [{"where": w, "nodes": sorted(g), "variables": sorted(v)}
                          for w, g, v in updates]
    return out


def node_to_json(n: Node) -> dict:
    d: dict[str, Any] = {"name": n.name}
    if n.op == ASSIGN:
        if n.attrs.get("fn") == "Snd":
            d["op"] = "Write"
        else:
            d["op"] = "Assign"
            d["fn"] = n.attrs.get("fn")
    else:
        d["op"] = n.op
    if n.op == VAR:
        d["var"] = n.attrs.get("var")
    elif n.op != ASSIGN:
        for k, v in n.attrs.items():
            if isinstance(v, (Tensor, Error)):
                v = value_to_json(v)
            elif k == "tf_attrs" and isinstance(v, Mapping):
                # a TensorFlow op's attributes: a non-finite float exactly,
                # as {"float": TEXT} (strict JSON has no NaN; read back by
                # functions._json_attr)
                try:
                    v = float_attrs.attrs_to_json(v)
                except ValueError as exc:
                    raise ValueError(f"node {n.name!r}: tf_attrs {exc}") from None
            d[k] = v
    if n.inputs:
        d["inputs"] = [str(i) for i in n.inputs]
    return d


def dumps(obj: Any) -> str:
    """Strict JSON (no NaN or infinity literals)."""
    return json.dumps(obj, indent=2, allow_nan=False)


#: the deepest nesting of arrays and objects a JSON document may have: a
#: program is 4 levels deep plus the rank of its deepest Const, so this leaves
#: room for rank-90 tensors while every recursive walk over a value stays far
#: from Python's recursion limit
MAX_JSON_DEPTH = 96


class _Refused(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (write a non-finite float32 as the string "
                   f"\"nan\", \"inf\" or \"-inf\")")


def _finite_float(text: str) -> float:
    v = float(text)
    if v != v or v in (float("inf"), float("-inf")):
        raise _Refused(f"the number {text[:40]} is too large for a float "
                       "(write an infinity as the string \"inf\" or \"-inf\")")
    return v


def check_json_value(data: Any, where: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a decoded JSON value nested deeper than `max_depth` or holding a
    string that is not Unicode text (a lone surrogate such as "\\ud800",
    which no file or terminal can hold).  Iterative: any depth is safe."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value, where)
        elif isinstance(value, (dict, list)):
            if depth > max_depth:
                raise ProgramError([Violation(where, "too-deep",
                                              f"JSON nested more than {max_depth} levels deep")])
            if isinstance(value, dict):
                for k, v in value.items():
                    _check_text(k, where)
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in value)


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start:exc.end].encode("utf-8", "backslashreplace").decode("ascii")
        raise ProgramError([Violation(where, "bad-text",
                                      f"the string {ascii(text[:60])} holds {bad}, a lone surrogate, "
                                      "which is not Unicode text")]) from None


def parse_json_text(text: str, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The one guarded JSON decoder: every JSON text from a user (files,
    `--feed`/`--init`, request bodies) is read here.  Bad JSON, the literals
    NaN/Infinity/-Infinity (not JSON), numbers too large for a float (1e400),
    nesting deeper than `max_depth` and lone surrogates all become a
    ProgramError naming `where`, never an exception from deeper down."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _Refused as exc:
        raise ProgramError([Violation(where, "bad-json", f"not valid JSON: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise ProgramError([Violation(where, "bad-json",
                                      f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]) from None
    except ValueError as exc:
        # e.g. an integer literal longer than Python's int-to-str digit limit
        raise ProgramError([Violation(where, "bad-json", f"not valid JSON: {exc}")]) from None
    except RecursionError:
        raise ProgramError([Violation(where, "too-deep", "JSON nested too deeply to read")]) from None
    check_json_value(data, where, max_depth)
    return data


def read_json_file(path: str | Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ProgramError([Violation(str(path), "unreadable", exc.strerror or str(exc))]) from None
    except UnicodeDecodeError:
        raise ProgramError([Violation(str(path), "bad-json", "not UTF-8 text")]) from None
    return parse_json_text(text, str(path))


def load_program(path: str | Path, validate: bool = True) -> Program:
    data = read_json_file(path)
    if isinstance(data, dict) and data.get("format") == CASE_FORMAT:
        raise ProgramError([Violation(str(path), "format",
                                      "this is a case file (tfsem.case/1), not a program")])
    if isinstance(data, dict) and data.get("format") == SESSION_FORMAT:
        raise ProgramError([Violation(str(path), "format", "this is a session file "
                                      "(tfsem.session/1), not a program: `tfsem outcomes`, "
                                      "`check` and `run` take it (docs/sessions.md)")])
    return program_from_json(data, validate=validate, where=str(path))


def save_program(p: Program, path: str | Path) -> None:
    Path(path).write_text(dumps(program_to_json(p)) + "\n")


# ---------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    """An original program and its rewrite, with the settings and expectation.

    The rewritten program is kept as JSON until it is checked: a case may hold
    an invalid rewrite on purpose (its expected verdict is then `invalid`).
    """

    original: Program
    rewritten_json: Any
    semantics: str = "atomic"
    observe: str = "outputs+state"
    expect: str | None = None
    note: str = ""

    def rewritten(self, validate: bool = True) -> Program:
        return program_from_json(self.rewritten_json, validate=validate, where="rewritten")


def case_from_json(data: Any, where: str = "case") -> Case:
    bad = ViolationCollector()
    if not isinstance(data, dict):
        raise ProgramError([Violation(where, "format", "a case is a JSON object")])
    if data.get("format") != CASE_FORMAT:
        bad(f"{where}.format", "format", f"expected {CASE_FORMAT!r}, got {data.get('format')!r}")
    for key in set(data) - {"format", "original", "rewritten", "semantics", "observe", "expect", "note"}:
        bad(f"{where}.{key}", "unknown-field", f"unknown field {key!r}")
    if "original" not in data or "rewritten" not in data:
        bad(where, "format", "a case needs \"original\" and \"rewritten\"")
    sem = data.get("semantics", "atomic")
    obs = data.get("observe", "outputs+state")
    expect = data.get("expect")
    if sem not in SEMANTICS:
        bad(f"{where}.semantics", "bad-value", f"semantics is one of {', '.join(SEMANTICS)}")
    if obs not in OBSERVE:
        bad(f"{where}.observe", "bad-value", f"observe is one of {', '.join(OBSERVE)}")
    if expect is not None and expect not in EXPECT:
        bad(f"{where}.expect", "bad-value", f"expect is one of {', '.join(EXPECT)}")
    note = data.get("note", "")
    if not isinstance(note, str):
        bad(f"{where}.note", "bad-value", "note is a string")
    bad.raise_if_any()
    original = program_from_json(data["original"], where=f"{where}.original")
    return Case(original, data["rewritten"], sem, obs, expect, note)


def case_to_json(c: Case) -> dict:
    out = {"format": CASE_FORMAT, "original": program_to_json(c.original),
           "rewritten": c.rewritten_json, "semantics": c.semantics, "observe": c.observe}
    if c.expect:
        out["expect"] = c.expect
    if c.note:
        out["note"] = c.note
    return out


def make_case(original: Program, rewritten: Program, **kw: Any) -> Case:
    return Case(original, program_to_json(rewritten), **kw)


def load_case(path: str | Path) -> Case:
    return case_from_json(read_json_file(path), where=str(path))


# ---------------------------------------------------------------------------
# Inputs σ: feeds and initial values


def parse_assignment(text: str, where: str) -> tuple[str, Any]:
    """`NAME=JSON` from the command line."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ProgramError([Violation(where, "bad-value", f"expected NAME=JSON, got {text!r}")])
    return name, parse_json_text(raw, f"{where} {name}")


def decode_inputs(p: Program, feeds: Mapping[str, Any], init: Mapping[str, Any]) -> tuple[dict[str, Value], dict[str, Value]]:
    """Decode JSON feeds and initial values against the program's declarations.

    Every feed the program uses must be given; a variable with no initial value
    starts uninitialized (the caller fills that in).
    """
    bad = ViolationCollector()
    fv: dict[str, Value] = {}
    iv: dict[str, Value] = {}
    for name, raw in feeds.items():
        if name not in p.feed_names:
            bad(f"feed {name!r}", "unknown-feed", "the program has no such feed")
            continue
        try:
            fv[name] = value_from_json(raw, f"feed {name!r}", p.feed_type(name).dtype)
        except ValueFormatError as exc:
            bad(f"feed {name!r}", "bad-value", str(exc))
            continue
        _check_shape(bad, f"feed {name!r}", fv[name], p.feed_type(name))
    for name in p.feed_names:
        if name not in feeds:
            bad(f"feed {name!r}", "missing-feed", f"the program reads ${name}: give --feed {name}=VALUE")
    for name, raw in init.items():
        if name not in p.variables:
            bad(f"variable {name!r}", "unknown-variable", "the program has no such variable")
            continue
        try:
            iv[name] = value_from_json(raw, f"initial value of {name!r}", p.variables[name].dtype)
        except ValueFormatError as exc:
            bad(f"variable {name!r}", "bad-value", str(exc))
            continue
        _check_shape(bad, f"variable {name!r}", iv[name], p.variables[name])
    bad.raise_if_any()
    return fv, iv


def _check_shape(bad: ViolationCollector, where: str, value: Value, declared: TensorType) -> None:
    """A tensor given for σ must have the shape its declaration gives: every
    proof ranges over the values of the declared types (SPEC section 1), so a
    value of another shape is outside what a verdict speaks of.  A value with
    the default type (an undeclared feed, a variable in a plain list of
    names: int64 with no shape given) may have any shape, as before:
    `tfsem outcomes` and `tfsem run` take it as given.  An error value (such
    as an uninitialized variable) has no shape and is let through."""
    if declared == TensorType() or not isinstance(value, Tensor):
        return
    if tuple(value.array.shape) != tuple(declared.shape):
        bad(where, "bad-shape", f"the value has shape {list(value.array.shape)} but the program "
            f"declares {list(declared.shape)}")
