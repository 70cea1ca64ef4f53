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
                    "Fetch the output names to run it (an output named like a tensor, s:1, "
                    "is node s_1: the command says so).")
    p.add_argument("program", help="a tfsem.program/1 JSON file (or a graph, re-exported), or "
                   "a session (tfsem.session/1) with critical sections or queues")
    p.add_argument("--session-out", default=None, metavar="FILE",
                   help="for a session: also write FILE, the session over the exported graph "
                        "(its runs, each with the ConsumeMutexLock targets its sections need)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE: .pb is binary, anything else text (default: text on "
                        "standard output)")
    add_graph_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode, format_text
    from .blocking_sessions import blocking_session
    session = blocking_session(args.program, args)
    fetch_of: dict[str, str] = {}
    if session is not None:
        # (a session's graph too: its program's outputs are fetched by the
        # same rule, and without --session-out nothing else says where)
        graph = _session_graph(session, args, fetch_of)
    else:
        if args.session_out:
            raise UsageError("--session-out applies to a session with critical sections or "
                             "queues")
        program = load_from_args(args.program, args)
        graph = export_graph(program, fetches=fetch_of)
    for o, f in fetch_of.items():
        if f != o:   # (`s:1`, an output fetched at a port: no node name)
            print(f"tfsem export: output {o!r} is no node name TensorFlow takes: fetch it "
                  f"as node {f!r}", file=sys.stderr)
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


def _session_graph(session, args: argparse.Namespace, fetches: dict[str, str]) -> dict:
    """The graph of a session's program with its sections and queues
    (graphdef/blocking_export.py); with --session-out, the session over it.
    `fetches` receives each output -> the node fetched for it."""
    import json
    import os

    from tfsem.graphdef.blocking_export import export_session_graph, graph_session_json
    graph, targets, names = export_session_graph(session.program, session.blocking, session.runs,
                                                 fetches)
    if args.session_out:
        if not args.output:
            raise UsageError("--session-out needs --output (the graph the session names)")
        rel = os.path.relpath(os.path.abspath(args.output),
                              os.path.dirname(os.path.abspath(args.session_out)))
        data = graph_session_json(session, targets, names, rel, fetches)
        try:
            with open(args.session_out, "w") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
        except OSError as exc:
            raise UsageError(f"cannot write {args.session_out}: {exc.strerror or exc}") from None
    return graph
