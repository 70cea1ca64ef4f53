"""The `tfsem` command: a thin layer over the library.

Each command lives in `tfsem/commands/<name>.py` with `add_parser(subparsers)`
and `run(args) -> int`.  Exit statuses (SPEC section 4): 0 sound,
no-counterexample or fine; 1 unsound, invalid or findings; 2 bad input or
usage; 3 unknown.  Bad input never shows a traceback.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import sys

from tfsem import __version__

EXIT_OK, EXIT_FOUND, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3

COMMANDS = ["outcomes", "passes", "rewrite", "check", "generate", "run", "verify", "fuzz",
            "report", "serve", "import", "export", "grappler", "reduce", "completion"]
COMMANDS.insert(COMMANDS.index("grappler") + 1, "mlir")  # docs/mlir.md

#: `tfsem --help` lists every command without importing its module (they
#: pull in numpy, z3 and Hypothesis; `tfsem --help` stays under 0.3 s): the
#: one-line help is read from the module's source, `sub.add_parser("NAME",
#: help="...")`; a module written otherwise is imported for it.
_HELP_RE = re.compile(r"""add_parser\(\s*["']([\w-]+)["']\s*,\s*help=((?:\s*"(?:[^"\\]|\\.)*")+)""")


def summary(name: str) -> str | None:
    """The one-line help of command `name` read from its source, or None."""
    spec = importlib.util.find_spec(f"tfsem.commands.{name}")
    if spec is None or not spec.origin:
        return None
    try:
        source = open(spec.origin, encoding="utf-8").read()
    except OSError:
        return None
    for m in _HELP_RE.finditer(source):
        if m.group(1) == name:
            try:
                return "".join(ast.literal_eval(part) for part in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(2)))
            except (ValueError, SyntaxError):
                return None
    return None


class UsageError(Exception):
    """Bad usage or input found by a command; exit status 2."""


def _exists(name: str) -> bool:
    return importlib.util.find_spec(f"tfsem.commands.{name}") is not None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: every command's own parser when `command` is None,
    otherwise that command's only, and a one-line entry for the others
    (enough for `tfsem --help`; nothing heavy is imported)."""
    parser = argparse.ArgumentParser(prog="tfsem", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"tfsem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if not _exists(name):
            continue  # not built yet
        if command is not None and name != command:
            text = summary(name)
            if text is not None:
                sub.add_parser(name, help=text, add_help=False)
                continue
        importlib.import_module(f"tfsem.commands.{name}").add_parser(sub)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command named on the command line (its first word), if any."""
    for word in argv:
        if word in COMMANDS:
            return word
        if not word.startswith("-"):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # a name tfsem prints (a node, a file) may hold what the terminal's
    # encoding cannot: escape it rather than die with UnicodeEncodeError
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    parser = build_parser(_command_of(argv) or "")
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"tfsem {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"tfsem {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        from tfsem.oracle.program import ProgramError
        if not isinstance(exc, ProgramError):
            raise
        print(f"tfsem {args.command}: invalid input:", file=sys.stderr)
        for v in exc.violations:
            print(f"  {v}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
