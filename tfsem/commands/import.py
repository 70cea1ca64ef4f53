"""`tfsem import GRAPH -o PROGRAM.json`: a TensorFlow graph as a tfsem program."""

from __future__ import annotations

import argparse
import sys

from tfsem.cli import EXIT_OK, UsageError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "import", help="a TensorFlow graph (GraphDef, MetaGraphDef, SavedModel) as a program",
        description="Read a GraphDef (.pb binary, .pbtxt text), a MetaGraphDef (.meta) or a "
                    "SavedModel directory and write it as a tfsem.program/1 program. Needs no "
                    "TensorFlow. Variables are named by their shared_name, feeds by their "
                    "Placeholder, outputs by the fetches as given.")
    p.add_argument("graph", nargs="?", help="the graph file or SavedModel directory")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write the program to FILE (default: standard output)")
    p.add_argument("--feed", dest="feed_nodes", action="append", default=[], metavar="NODE",
                   help="make NODE a feed of its own name (Placeholders are feeds already)")
    p.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="a tensor to fetch, NODE or NODE:K (repeatable; default: every node "
                        "nothing consumes, tf.Variable initializers excepted, or the "
                        "signature's outputs)")
    p.add_argument("--target", action="append", default=[], metavar="NODE",
                   help="a node to run for its effect, as Session.run's targets (repeatable)")
    p.add_argument("--signature", default=None, metavar="KEY",
                   help="the signature of a MetaGraphDef or SavedModel")
    p.add_argument("--captures", default=None, metavar="FILE",
                   help="the capture map of a tf.function's concrete-function graph: JSON "
                        "{placeholder: {variable, dtype, shape}} naming the variable each "
                        "DT_RESOURCE Placeholder captures")
    p.add_argument("--shape", dest="shapes", action="append", default=[], metavar="NAME=DIMS",
                   help="the shape of a feed whose graph shape has an unknown dimension (a "
                        "SavedModel's None batch): NAME a Placeholder or a signature input, "
                        "DIMS like 8,28,28,1 (repeatable; a verdict holds for that shape)")
    p.add_argument("--list-ops", action="store_true",
                   help="print the op table (what each TensorFlow op becomes) and exit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef import import_path, is_graph_path
    from tfsem.oracle.jsonio import dumps, program_to_json  # noqa: PLC0415
    if args.list_ops:
        from tfsem.graphdef import ops
        for name, doc, origin in ops.describe():
            print(f"{name:32} {doc}" + ("" if origin == "builtin" else f"  [{origin}]"))
        print(f"\nuninterpreted (pure, no bit-exact model): "
              f"{', '.join(sorted(ops.STATELESS_UNMODELLED))}")
        print(f"refused (control flow): {', '.join(sorted(ops.CONTROL_FLOW))}")
        for err in ops.load_errors():
            print(f"warning: {err}", file=sys.stderr)
        return EXIT_OK
    if args.graph is None:
        raise UsageError("give a graph to import (or --list-ops)")
    if not is_graph_path(args.graph):
        raise UsageError(f"{args.graph}: not a TensorFlow graph (.pb, .pbtxt, .meta, or a "
                         "SavedModel directory)")
    imported = import_path(args.graph, args.fetch, args.feed_nodes, args.target, args.signature,
                           captures=args.captures, shapes=args.shapes)
    text = dumps(program_to_json(imported.program)) + "\n"
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        p = imported.program
        print(f"{args.graph}: {len(p.nodes)} nodes, {len(p.variables)} variables, "
              f"{len(p.feeds)} feeds, outputs {', '.join(p.outputs) or '(none)'} -> {args.output}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
