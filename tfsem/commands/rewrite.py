"""`tfsem rewrite PASS PROGRAM [-o FILE]`: apply one pass, print the program."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from tfsem.cli import EXIT_FOUND, EXIT_OK, UsageError

from .common import add_graph_options, load_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("rewrite", help="apply a rewrite pass to a program",
                       description="Apply PASS to PROGRAM and print the rewritten program "
                                   "(tfsem.program/1 JSON).  Exit status 1 when the pass fails "
                                   "or produces an invalid program.")
    p.add_argument("pass_name", metavar="PASS",
                   help="a registered pass name (see `tfsem passes`) or module:attribute")
    p.add_argument("program", help="a tfsem.program/1 JSON file, or a TensorFlow graph")
    add_graph_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the program here, not to stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.oracle.jsonio import dumps, program_to_json  # noqa: PLC0415
    from tfsem.oracle.program import Program, validate  # noqa: PLC0415
    from tfsem.rewrites import PassNotFound, get_pass  # noqa: PLC0415
    name = args.pass_name
    if name == "grappler" or name.startswith("grappler:"):
        # TensorFlow's optimizers work on GraphDefs, not on tfsem programs:
        # say which commands run this one (each tested to do what it says)
        opt = name.partition(":")[2] or "default"
        fetches = "".join(f" --fetch {shlex.quote(o)}" for o in sorted(load_from_args(args.program, args).outputs))
        raise UsageError(f"{name!r} is TensorFlow's Grappler, not a tfsem pass. Run it and check its "
                         f"result with: tfsem export {shlex.quote(args.program)} -o G.pbtxt && "
                         f"tfsem grappler G.pbtxt --optimizer {shlex.quote(opt)}{fetches} --save DIR "
                         f"(DIR/{opt}.pbtxt is the optimized graph); fuzz it with: "
                         f"tfsem fuzz --target {shlex.quote(name)} --budget 10m --out DIR")
    try:
        rewrite = get_pass(args.pass_name)
    except PassNotFound as exc:
        raise UsageError(str(exc)) from None
    program = load_from_args(args.program, args)
    if program.has_control_flow and not rewrite.control_flow:   # the others refuse it (docs/semantics.md)
        raise UsageError(f"pass {rewrite.name!r} does not handle control flow (nodes "
                         f"{', '.join(program.control_flow_nodes[:5])})")
    from tfsem.oracle.explore import BudgetExceeded
    try:
        result = rewrite(program)
    except BudgetExceeded as exc:  # e.g. folding past the tensor size limit: not a bug of the pass
        print(f"tfsem rewrite: pass {rewrite.name!r} stopped: {exc}", file=sys.stderr)
        return 3
    except Exception as exc:
        import traceback
        print(f"tfsem rewrite: pass {rewrite.name!r} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        print("".join(traceback.format_exception(exc)).rstrip(), file=sys.stderr)
        return EXIT_FOUND
    text = dumps(program_to_json(result)) + "\n"
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)
    violations = validate(result) if isinstance(result, Program) else []
    if violations:
        print(f"tfsem rewrite: pass {rewrite.name!r} produced an invalid program:", file=sys.stderr)
        for v in violations:
            print(f"  {v}", file=sys.stderr)
        return EXIT_FOUND
    return EXIT_OK
