"""`tfsem export PROGRAM -o GRAPH.pbtxt`: a tfsem program as a TensorFlow GraphDef."""

from __future__ import annotations

import argparse
import sys

from tfsem.cli import EXIT_OK, UsageError

from .common import add_graph_options, load_from_args


def add_parser(sub) -> None:
    p = sub.add_parser(
        "export", help="a program as a TensorFlow GraphDef (text or binary)",
        description="Write a tfsem program as a GraphDef that TensorFlow loads and runs: a "
                    "VarHandleOp per Var node (shared_name = the variable), a Placeholder per "
                    "feed, the op table in reverse, each output an Identity node of its name. "
                    "Fetch the output names to run it.")
    p.add_argument("program", help="a tfsem.program/1 JSON file (or a graph, re-exported)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE: .pb is binary, anything else text (default: text on "
                        "standard output)")
    add_graph_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode, format_text
    program = load_from_args(args.program, args)
    graph = export_graph(program)
    if args.output and args.output.endswith(".pb"):
        data = encode("GraphDef", graph)
    else:
        data = format_text("GraphDef", graph).encode()
    if args.output:
        try:
            with open(args.output, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(data.decode())
    return EXIT_OK
