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
            "report", "serve", "import", "export", "grappler", "mlir", "reduce", "completion"]

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


class _QuietTensorFlow:
    """A meta-path finder that imports `tensorflow` with its start-up logging
    silenced: TF_CPP_MIN_LOG_LEVEL=2 (set before TensorFlow reads it; a value
    the user set is kept), file descriptor 2 sent to a temporary file while
    its C++ libraries load (they log the oneDNN notice through absl before
    TF_CPP_MIN_LOG_LEVEL is read; what was written comes back on stderr if
    the import fails), then TensorFlow's Python and absl loggers set to
    errors only.  `--verbose` (or TFSEM_VERBOSE=1) leaves all of it alone."""

    _looking = False

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or self._looking:
            return None
        self._looking = True
        try:  # the finders after this one
            spec = importlib.util.find_spec(name)
        finally:
            self._looking = False
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader

        class Quiet:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                _quiet_exec(loader, module)

            def __getattr__(self, attr):  # everything else is the real loader's
                return getattr(loader, attr)

        spec.loader = Quiet()
        return spec


def _quiet_exec(loader, module) -> None:
    import os  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        loader.exec_module(module)
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            loader.exec_module(module)
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            os.write(2, sink.read()[-20000:])
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    try:
        module.get_logger().setLevel("ERROR")
        from absl import logging as absl_logging  # noqa: PLC0415
        absl_logging.set_verbosity(absl_logging.ERROR)
    except Exception:  # noqa: BLE001 - a TensorFlow without these loggers is still quiet
        pass


def quiet_tensorflow(verbose: bool = False) -> None:
    """Silence TensorFlow's logs for this process and the processes it
    starts, unless `verbose`.  Imports nothing."""
    import os  # noqa: PLC0415
    if verbose or os.environ.get("TFSEM_VERBOSE") == "1":
        os.environ["TFSEM_VERBOSE"] = "1"
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _QuietTensorFlow)]
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" not in sys.modules and not any(isinstance(f, _QuietTensorFlow)
                                                   for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlow())


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
    # `whole_process`: this call is the process's command (`tfsem ...`, `python
    # -m tfsem ...`), not a call from Python: a command whose budget covers
    # the process (tfsem grappler) may end it as soon as its report is
    # written, without TensorFlow's 2-3 s of interpreter teardown
    whole_process = argv is None
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
    quiet_tensorflow(verbose="--verbose" in argv)
    parser = build_parser(_command_of(argv) or "")
    args = parser.parse_args(argv)
    args.whole_process = whole_process
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
