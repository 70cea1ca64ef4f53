"""The `tfsem` command: a thin layer over the library.

Each command lives in `tfsem/commands/<name>.py` with `add_parser(subparsers)`
and `run(args) -> int`.  Exit statuses (SPEC section 4): 0 sound,
no-counterexample or fine; 1 unsound, invalid or findings; 2 bad input or
usage; 3 unknown.  Bad input never shows a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tfsem import __version__
from tfsem.oracle.program import ProgramError

EXIT_OK, EXIT_FOUND, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3

COMMANDS = ["outcomes", "passes", "rewrite", "check", "generate", "run", "verify", "fuzz",
            "report", "serve", "import", "export", "grappler", "reduce"]


class UsageError(Exception):
    """Bad usage or input found by a command; exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfsem", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"tfsem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"tfsem.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tfsem.commands.{name}":
                raise
            continue  # not built yet
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ProgramError as exc:
        print(f"tfsem {args.command}: invalid input:", file=sys.stderr)
        for v in exc.violations:
            print(f"  {v}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UsageError as exc:
        print(f"tfsem {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"tfsem {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
