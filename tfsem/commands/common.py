"""Options and input handling shared by several commands."""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfsem.oracle.program import Program
    from tfsem.oracle.values import Value

# What a command's parser needs, written here so that `tfsem COMMAND --help`
# imports neither numpy nor the oracle, the checker or Hypothesis (start-up
# under 0.3 s: benchmarks/cli.py).  tests/test_cli_startup.py holds each to
# the value of the module it comes from.
#: tfsem.oracle.jsonio
SEMANTICS = ("atomic", "decomposed")
OBSERVE = ("outputs+state", "outputs")
#: tfsem.checking.verdict.FLOAT_MODES
FLOAT_MODES = ("exact", "real")
CASE_FORMAT = "tfsem.case/1"
#: tfsem.checking.DEFAULT_TIMEOUT
CHECK_TIMEOUT = 10.0
#: tfsem.campaigns.DEFAULT_MAX_NODES, tfsem.campaigns.loop.DEFAULT_CHECK_TIMEOUT,
#: tfsem.campaigns.sandbox.DEFAULT_PASS_TIMEOUT
MAX_NODES = 10
#: tfsem.oracle.explore, tfsem.oracle.readsfrom
MAX_STATES = 2_000_000
MAX_SECONDS_OUTCOMES = 60.0
ENGINES = ("reference", "readsfrom", "auto", "symmetry")
#: tfsem.oracle.values.DTYPES, in its order
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64")
FUZZ_CHECK_TIMEOUT = 5.0
PASS_TIMEOUT = 5.0


class Deadline:
    """One clock for a whole command (docs/budgets.md): a budget of
    `seconds` started at `started` (time.monotonic(); now by default), from
    which every stage of the command takes its share, so that the command
    ends when the budget does, whatever stage it is in.

    `left()` is what is left (negative once passed); `within(seconds)` a
    deadline that ends `seconds` from now or with this one, whichever is
    first; `share(n, reserve)` the deadline of the first of `n` stages that
    split what is left after keeping `reserve` seconds back."""

    __slots__ = ("seconds", "started", "at")

    def __init__(self, seconds: float, started: float | None = None, at: float | None = None):
        self.seconds = float(seconds)
        self.started = time.monotonic() if started is None else started
        self.at = self.started + self.seconds if at is None else at

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def within(self, seconds: float) -> "Deadline":
        now = time.monotonic()
        return Deadline(self.seconds, self.started, at=min(self.at, now + max(seconds, 0.0)))

    def share(self, n: int, reserve: float = 0.0) -> "Deadline":
        return self.within((self.left() - reserve) / max(n, 1))

    def __repr__(self) -> str:
        return f"Deadline({self.seconds:g} s, {self.left():.3f} s left)"

    @classmethod
    def of_process(cls, seconds: float) -> "Deadline":
        """A budget of `seconds` started when this process started (its
        interpreter's start-up and tfsem's imports count too), where the
        system says when that was (Linux /proc); else started now."""
        started = process_started()
        return cls(seconds, started if started is not None else time.monotonic())


def process_started() -> float | None:
    """When this process started, as a time.monotonic() value: from Linux's
    /proc/self/stat (its start, in clock ticks since boot) and /proc/uptime;
    None where they are missing or disagree with the monotonic clock."""
    import os  # noqa: PLC0415
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
        # the fields after the command's name, which may hold spaces and ')'
        start_ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    age = uptime - start_ticks / ticks
    if not 0 <= age < 3600 * 24:     # a clock that does not match: no guess
        return None
    return time.monotonic() - age


class StageTimeout(RuntimeError):
    """A stage given to `call_within` did not end in its time."""


def call_within(seconds: float, fn, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, or StageTimeout once `seconds` have passed: for
    a stage that cannot look at a clock itself (TensorFlow loading a graph,
    a verdict's text).  It runs in a daemon thread, which is left to finish
    on its own when the time is up (its result then unused; a command that
    ends its process ends it too).  What `fn` raises is raised here."""
    import threading  # noqa: PLC0415
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller)
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="tfsem-stage")
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise StageTimeout(f"did not end within {max(seconds, 0.0):.2f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def dumps_within(obj: Any, deadline: Deadline | None, every: int = 512) -> str | None:
    """`obj` as tfsem.oracle.jsonio.dumps writes it (strict JSON, indent 2),
    or None if `deadline` passes while it is written (checked every `every`
    pieces of the encoder): the building of a report obeys the clock."""
    encoder = json.JSONEncoder(indent=2, allow_nan=False)
    parts: list[str] = []
    for i, piece in enumerate(encoder.iterencode(obj)):
        parts.append(piece)
        if i and i % every == 0 and deadline is not None and deadline.expired():
            return None
    return "".join(parts)


def verdict_json_within(data: dict, deadline: Deadline | None) -> str:
    """A verdict's JSON document `data` written within `deadline`; where the
    clock passes while it is written, its counterexample is left out
    (`data` says so: JSON_REPORT_CUT) and the rest is written, which is
    small.  `tfsem check` of graphs and of sessions."""
    text = dumps_within(data, deadline)
    if text is None:
        data["counterexample"] = None
        data["report_cut"] = JSON_REPORT_CUT
        text = dumps_within(data, None)
    return text


def add_graph_options(p: argparse.ArgumentParser, feed_flag: str = "--feed-node") -> None:
    """tfsem.graphdef.cliopts.add_graph_options, without importing the oracle
    (tests/test_cli_startup.py compares the two parsers)."""
    g = p.add_argument_group("TensorFlow graphs (.pb, .pbtxt, .meta, a SavedModel directory)")
    g.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="a tensor to fetch, NODE or NODE:K (repeatable; default: every node "
                        "nothing consumes, or the signature's outputs); the output's name")
    g.add_argument("--target", action="append", default=[], metavar="NODE",
                   help="a node to run for its effect, as Session.run's targets (repeatable)")
    g.add_argument(feed_flag, dest="feed_nodes", action="append", default=[], metavar="NODE",
                   help="make NODE a feed of its own name (Placeholders are feeds already)")
    g.add_argument("--signature", default=None, metavar="KEY",
                   help="the signature of a MetaGraphDef or SavedModel (default "
                        "serving_default, or the only one)")
    g.add_argument("--captures", default=None, metavar="FILE",
                   help="the capture map of a tf.function's concrete-function graph: JSON "
                        "{placeholder: {variable, dtype, shape}} naming the variable each "
                        "DT_RESOURCE Placeholder captures")
    g.add_argument("--shape", dest="shapes", action="append", default=[], metavar="NAME=DIMS",
                   help="the shape of a feed whose graph shape has an unknown dimension (a "
                        "SavedModel's None batch): NAME a Placeholder or a signature input, "
                        "DIMS like 8,28,28,1 (repeatable; a verdict holds for that shape)")


def load_from_args(path, args: argparse.Namespace, lenient: bool = False):
    """tfsem.graphdef.cliopts.load_from_args, imported when a command runs."""
    from tfsem.graphdef.cliopts import load_from_args as load  # noqa: PLC0415
    return load(path, args, lenient=lenient)


def add_semantics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantics", choices=SEMANTICS, default="atomic",
                   help="atomic (the default: Assign is one step) or decomposed (Assign is a read and a write)")
    p.add_argument("--observe", choices=OBSERVE, default="outputs+state",
                   help="what an outcome holds (default outputs+state)")


def add_float_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--float", dest="float_mode", choices=FLOAT_MODES, default="exact",
                   help="exact (the default: floats bit for bit, IEEE 754) or real (float "
                        "arithmetic judged as real arithmetic: is the rewrite sound up to "
                        "floating-point rounding?  docs/verdicts.md)")


def add_sigma_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--feed", action="append", default=[], metavar="NAME=JSON",
                   help="value of the feed $NAME (repeatable)")
    p.add_argument("--init", action="append", default=[], metavar="NAME=JSON",
                   help="initial value of variable NAME (repeatable; default uninitialized)")


def sigma_from_args(program: Program, args: argparse.Namespace) -> tuple[dict[str, Value], dict[str, Value]]:
    from tfsem.oracle.jsonio import decode_inputs, parse_assignment  # noqa: PLC0415
    feeds = dict(parse_assignment(t, "--feed") for t in args.feed)
    init = dict(parse_assignment(t, "--init") for t in args.init)
    return decode_inputs(program, feeds, init)


def print_json(obj: Any) -> None:
    from tfsem.oracle.jsonio import dumps  # noqa: PLC0415
    print(dumps(obj))


def json_text(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False)


# ---------------------------------------------------------------------------
# Numbers on the command line: one validation, at parse time, for every command.
#
# Every numeric flag of every command goes through one of the argparse types
# below, so a bad value stops the command before it opens a file, starts a
# worker or creates a campaign database, with exit status 2 and argparse's
# message naming the flag ("argument --budget: 'nan' is not a finite
# duration").  Each type has a documented range (docs/robustness.md):
# NaN, infinities and numbers past the range are refused, never clamped.

#: the longest duration any flag takes: one week
MAX_SECONDS = 7 * 24 * 3600.0
#: the default ceiling of a positive count (far below 2**63)
MAX_COUNT = 10 ** 9


def _int_text(text: str) -> int:
    t = text.strip()
    # int() accepts non-ASCII digits ("١٢") and underscores; a flag takes
    # plain ASCII digits with an optional sign, and not thousands of them
    body = t[1:] if t[:1] in "+-" else t
    if not body or len(body) > 30 or not body.isascii() or not body.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(t)


def bounded_int(lo: int, hi: int):
    """An argparse type: an integer in [lo, hi]."""
    def parse(text: str) -> int:
        v = _int_text(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range (an integer from {lo} to {hi})")
        return v
    parse.__name__ = f"integer {lo}..{hi}"
    return parse


_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")


def _float_text(text: str, what: str) -> float:
    t = text.strip()
    if t.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} (it must be finite)")
    # float() also takes "1_0", "٣" and 10,000 digits: a flag takes a plain decimal number
    if len(t) > 40 or not _DECIMAL.fullmatch(t):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    v = float(t)
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} (it must be finite)")
    return v


def bounded_float(lo: float, hi: float, *, open_low: bool = False):
    """An argparse type: a finite number in [lo, hi] ((lo, hi] with `open_low`)."""
    def parse(text: str) -> float:
        v = _float_text(text, "a number")
        if v > hi or v < lo or (open_low and v == lo):
            low = f"above {lo:g}" if open_low else f"from {lo:g}"
            raise argparse.ArgumentTypeError(f"{text!r} is out of range (a number {low} to {hi:g})")
        return v
    parse.__name__ = f"number {lo:g}..{hi:g}"
    return parse


def make_duration(lo: float = 0.0, hi: float = MAX_SECONDS):
    """An argparse type: `60`, `60s`, `5m`, `1h` -> seconds, in (lo, hi]
    (finite; `lo` itself is excluded, so a duration is never 0)."""
    def parse(text: str) -> float:
        units = {"s": 1, "m": 60, "h": 3600}
        t = text.strip().lower()
        scale = units.get(t[-1:], None)
        num = t[:-1] if scale else t
        v = _float_text(num, "a duration (e.g. 60s, 5m)") * (scale or 1)
        if not v > lo:
            raise argparse.ArgumentTypeError(f"{text!r} is not a duration above {lo:g}s")
        if v > hi:
            raise argparse.ArgumentTypeError(f"{text!r} is longer than {hi:g}s, the most this flag takes")
        return v
    parse.__name__ = f"duration {lo:g}..{hi:g}s"
    return parse


#: a count from 1 to MAX_COUNT
positive_int = bounded_int(1, MAX_COUNT)
positive_int.__name__ = "positive_int"
#: a duration in (0, one week]
duration = make_duration()
duration.__name__ = "duration"
#: a seed: any integer that fits 64 bits unsigned
seed_int = bounded_int(0, 2 ** 64 - 1)


def print_runtime_rows(rows, describe, noun: str) -> None:
    """The distinct outcomes a runtime gave, numbered, each with how many
    `noun`s (runs, trials) gave it and whether the oracle's set holds it
    (`inside` None: the oracle was not asked)."""
    for i, (o, n, inside) in enumerate(rows, 1):
        mark = ("" if inside is None else "   in the oracle's set" if inside
                else "   NOT in the oracle's set: a finding against the runtime")
        print(f"  {i}. {describe(o)}   ({n} {noun}{'s' if n != 1 else ''}){mark}")


#: what a verdict's JSON says when its counterexample was left out of it
#: (`tfsem check`, of graphs and of sessions)
JSON_REPORT_CUT = ("the time budget ran out while the verdict's JSON was written: its "
                   "counterexample is left out; the verdict stands (a longer --timeout "
                   "writes it)")
