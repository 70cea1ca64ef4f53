"""`tfsem passes`: the registered rewrite passes and what each claims."""

from __future__ import annotations

import argparse
import sys

from tfsem.cli import EXIT_OK

from .common import OBSERVE, SEMANTICS, print_json

_SHORT = {"outputs+state": "o+s", "outputs": "out"}


def add_parser(sub) -> None:
    p = sub.add_parser("passes", help="list the rewrite passes and their claims",
                       description="List the built-in passes and those declared under the "
                                   "entry-point group tfsem.rewrites, each with its claim "
                                   "(sound or unsound) per semantics mode and observe setting.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--doc", action="store_true",
                   help="also print each pass's documentation (what it models, why it is sound)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.rewrites import all_passes, load_errors  # noqa: PLC0415
    passes = all_passes()
    errors = load_errors()
    if args.json:
        print_json({"passes": [p.to_json() for p in passes.values()], "errors": errors})
        return EXIT_OK
    cells = [(s, o) for s in SEMANTICS for o in OBSERVE]
    width = max([len(n) for n in passes] + [4])
    col = 9
    pad = " " * (width + 2)
    print(pad + "".join(f"{s:<{2 * col}}" for s in SEMANTICS).rstrip())
    print(f"{'pass':<{width}}  " + "".join(f"{_SHORT[o]:<{col}}" for _, o in cells) + "description")
    for name, p in passes.items():
        row = "".join(f"{p.claim(s, o) or '-':<{col}}" for s, o in cells)
        print(f"{name:<{width}}  {row}{p.description}")
        if p.origin != "builtin":
            print(f"{pad}({p.origin})")
        if getattr(p, "session_function", None) is not None:
            print(f"{pad}on sessions: {_session_claims(p)}")
        if args.doc:
            for line in p.doc.strip().splitlines():
                print(f"{pad}  {line}".rstrip())
            print()
    print("\no+s: outputs+state observed; out: outputs only; -: no claim")
    for e in errors:
        print(f"tfsem passes: warning: {e}", file=sys.stderr)
    return EXIT_OK


def _session_claims(p) -> str:
    """A session pass's claims per kind of session, a mode named only where
    the two modes differ."""
    from tfsem.rewrites.api import SESSION_KINDS  # noqa: PLC0415
    parts = []
    for kind in SESSION_KINDS:
        a, d = (p.session_claims.get((s, kind)) for s in SEMANTICS)
        if a is None and d is None:
            continue
        parts.append(f"{kind} {a}" if a == d else f"{kind} {a or '-'} (atomic), {d or '-'} "
                     "(decomposed)")
    return "; ".join(parts)
