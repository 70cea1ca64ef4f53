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
    g.add_argument("--shape", dest="shapes", action="append", default=[], metavar="NAME=DIMS",
                   help="the shape of a feed whose graph shape has an unknown dimension (a "
                        "SavedModel's None batch): NAME a Placeholder or a signature input, "
                        "DIMS like 8,28,28,1 (repeatable; a verdict holds for that shape)")


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
    if not is_graph_path(path) and is_session_path(path):
        session = load_session_from_args(path, args)
        args.session = session   # the commands that group outputs by run read it
        return session.expand()
    if lenient and not is_graph_path(path):
        return load_program_or_graph(path)
    return load_program_or_graph(path, fetch=getattr(args, "fetch", []) or [],
                                 feed=getattr(args, "feed_nodes", []) or [],
                                 target=getattr(args, "target", []) or [],
                                 signature=getattr(args, "signature", None),
                                 deadline=getattr(args, "import_deadline", None),
                                 captures=getattr(args, "captures", None),
                                 shapes=getattr(args, "shapes", None))


def is_session_path(path: str | Path) -> bool:
    """Whether the JSON file at `path` is a session (tfsem.session/1): a
    cheap look at its text, the file is read properly by load_session."""
    import os
    import stat
    try:   # a FIFO or a device is not opened here (the program loader refuses it by name)
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except (OSError, ValueError):
        return False
    if b'"tfsem.session/1"' not in head:
        return False
    from tfsem.oracle.jsonio import read_json_file
    from tfsem.oracle.session import is_session
    return is_session(read_json_file(path))


def load_session_from_args(path: str | Path, args: argparse.Namespace):
    """The session at `path` (tfsem.oracle.session), its graph (if it names
    one) imported under the command's budget.  --fetch, --target,
    --feed-node, --signature and --shape do not apply: a session's runs give
    them."""
    from tfsem.oracle.session import load_session
    for flag, key in (("--fetch", "fetch"), ("--target", "target"),
                      ("--feed-node", "feed_nodes"), ("--signature", "signature"),
                      ("--shape", "shapes")):
        if getattr(args, key, None):
            from tfsem.oracle.program import ProgramError, Violation
            raise ProgramError([Violation(str(path), "usage", f"{flag} does not apply to a "
                                          "session: its runs give fetches, targets and feeds")])
    return load_session(path, load_graph=session_graph_loader(getattr(args, "import_deadline", None)))


def session_graph_loader(deadline: float | None = None):
    """The loader tfsem.oracle.session calls for `{"graph": PATH}`: the
    graph imported with every run's fetches and targets, and the map from
    each TensorFlow node to the program node that completes it."""
    def load(path, fetch, targets, feed, signature):
        from tfsem.oracle.program import ProgramError, Violation
        from tfsem.oracle.session import UNMODELLED_OPS
        from . import import_path
        try:
            imported = import_path(path, fetch, feed, targets, signature, deadline, session=True)
        except ProgramError as exc:
            named = sorted({op for v in exc.violations for op in UNMODELLED_OPS
                            if op in v.message})
            if named:
                raise ProgramError([*exc.violations, Violation(
                    str(path), "unmodelled-session-op",
                    f"{', '.join(named)}: of TensorFlow's queues only FIFOQueueV2 with "
                    "QueueEnqueueV2, QueueEnqueueManyV2, QueueDequeueV2, QueueDequeueManyV2, "
                    "QueueCloseV2 and QueueSizeV2 are imported (bounded, one component; "
                    "docs/sessions.md); a session's inline program can declare what a graph "
                    "cannot bring")]) from None
            raise
        return imported.program, imported.node_map, imported.blocking, imported.releases
    return load
