"""Options and input handling shared by several commands."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tfsem.oracle.jsonio import OBSERVE, SEMANTICS, decode_inputs, dumps, parse_assignment
from tfsem.oracle.program import Program
from tfsem.oracle.values import Value


def add_semantics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantics", choices=SEMANTICS, default="atomic",
                   help="atomic (seed 000, default) or decomposed (seed 002)")
    p.add_argument("--observe", choices=OBSERVE, default="outputs+state",
                   help="what an outcome holds (default outputs+state)")


def add_sigma_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--feed", action="append", default=[], metavar="NAME=JSON",
                   help="value of the feed $NAME (repeatable)")
    p.add_argument("--init", action="append", default=[], metavar="NAME=JSON",
                   help="initial value of variable NAME (repeatable; default uninitialized)")


def sigma_from_args(program: Program, args: argparse.Namespace) -> tuple[dict[str, Value], dict[str, Value]]:
    feeds = dict(parse_assignment(t, "--feed") for t in args.feed)
    init = dict(parse_assignment(t, "--init") for t in args.init)
    return decode_inputs(program, feeds, init)


def print_json(obj: Any) -> None:
    print(dumps(obj))


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not positive")
    return v


def duration(text: str) -> float:
    """`60`, `60s`, `5m`, `1h` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    scale = units.get(t[-1:], None)
    num = t[:-1] if scale else t
    try:
        v = float(num) * (scale or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 60s, 5m)") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration")
    return v


def json_text(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False)
