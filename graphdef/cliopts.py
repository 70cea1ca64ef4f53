"""Command-line options for reading a TensorFlow graph where a command takes
a program (`tfsem outcomes`, `check`, `run`, `rewrite`, `import`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tfsem.oracle.program import Program


def add_graph_options(p: argparse.ArgumentParser, feed_flag: str = "--feed-node") -> None:
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


def start_budget(args: argparse.Namespace, seconds: float) -> float:
    """Start a command's time budget of `seconds` now (before any graph is
    read): graphs loaded by load_from_args afterwards are imported under
    it, and an import past it raises graphdef.ImportTimeout.  Returns the
    start (time.monotonic())."""
    started = time.monotonic()
    args.import_deadline = started + seconds
    return started


def remaining(args: argparse.Namespace, seconds: float, started: float) -> float:
    """What is left of a budget of `seconds` started at `started` (never 0:
    the checker's own budget must be positive; it ends at once)."""
    return max(seconds - (time.monotonic() - started), 1e-3)


def load_from_args(path: str | Path, args: argparse.Namespace, lenient: bool = False) -> Program:
    """The program at `path`, the graph options applied to a graph.  With
    `lenient` (`check` of a JSON program against a graph), a JSON program
    ignores them instead of refusing them.  Under a budget (start_budget),
    a graph's import past it raises graphdef.ImportTimeout."""
    from . import is_graph_path, load_program_or_graph
    if lenient and not is_graph_path(path):
        return load_program_or_graph(path)
    return load_program_or_graph(path, fetch=getattr(args, "fetch", []) or [],
                                 feed=getattr(args, "feed_nodes", []) or [],
                                 target=getattr(args, "target", []) or [],
                                 signature=getattr(args, "signature", None),
                                 deadline=getattr(args, "import_deadline", None),
                                 captures=getattr(args, "captures", None))
