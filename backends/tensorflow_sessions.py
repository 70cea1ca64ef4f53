"""A session's runs on TensorFlow's own runtime, as concurrent `Session.run`
calls on threads (docs/sessions.md).

The session's program (one run's graph, not the expansion) is exported to a
GraphDef and loaded into one `tf.compat.v1.Session`; each trial sets the
variables to σ, then starts one Python thread per run, released together by
a barrier, each calling `sess.run` with its run's fetches, targets and feeds;
TensorFlow's executor runs the calls concurrently on its inter-op thread
pool, sharing the resource variables.  The final state is read after every
thread has returned.  What this shows is what TensorFlow's runtime *did* in
the trials tried (a race may need many trials to show), never a proof.

Imported only by the tests and the commands that run TensorFlow.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Mapping

import numpy as np

from . import tensorflow as _tfb
from .tensorflow import TensorFlowRunError, _array


def run_together(call, calls) -> None:
    """Run `call(*c)` for every `c` in `calls`, each on a thread of its own
    (the runs of a session, started together), and wait for all of them."""
    threads = [threading.Thread(target=call, args=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_session_threads(session, init: Mapping[str, Any], trials: int,
                        feeds: Mapping[str, Any] | None = None,
                        observe: str = "outputs+state", inter_op_threads: int = 4,
                        max_seconds: float = 60.0) -> tuple[Counter, int]:
    """Distinct outcomes (as in the expansion: outputs `RUN/OUT` and the
    final state) over `trials` trials of the session's runs on threads, and
    the number of trials done (fewer when `max_seconds` ran out).  `feeds`:
    values of the expansion's free feeds `RUN/f`."""
    import time

    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import format_text
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import Error, Tensor

    if session.order != "concurrent":
        raise TensorFlowRunError("only concurrent sessions run on threads (a sequential "
                                 "session is its runs one after the other)")
    p = session.program
    names: dict[str, str] = {}
    fetches: dict[str, str] = {}      # output -> the node fetched for it
    graph = format_text("GraphDef", export_graph(p, names=names, fetches=fetches))
    # (looked up when called: a module imported while a test had patched
    # GraphRunner kept the stand-in for the rest of the process)
    runner = _tfb.GraphRunner(graph, fetches, observe=observe,
                         inter_op_threads=inter_op_threads, optimize=False)
    feeds = dict(feeds or {})
    calls = []
    for run in session.runs:
        fetch = list(p.outputs) if run.whole else list(run.fetch)
        targets = [] if run.whole else [names.get(r, r) for r in run.roots]
        if run.whole:
            targets = [names.get(n.name, n.name) for n in p.nodes
                       if not p.successors[n.name]]
        fd = {}
        for f in p.feed_names:
            if f in run.feeds:
                fd[f"{f}:0"] = _array(run.feeds[f])
            elif f"{run.name}/{f}" in feeds:
                fd[f"{f}:0"] = _array(feeds[f"{run.name}/{f}"])
        calls.append((run.name, fetch, targets, fd))
    seen: Counter = Counter()
    started = time.monotonic()
    done = 0
    try:
        for _ in range(trials):
            if time.monotonic() - started > max_seconds:
                break
            runner._set_state(init)
            barrier = threading.Barrier(len(calls))
            results: dict[str, list] = {}
            errors: list[BaseException] = []

            def call(name, fetch, targets, fd):
                try:
                    barrier.wait()
                    results[name] = runner.session.run([f"{fetches[o]}:0" for o in fetch] + targets,
                                                       fd)[:len(fetch)]
                except BaseException as exc:  # noqa: BLE001 (reported below)
                    errors.append(exc)
            run_together(call, calls)
            if errors:
                raise TensorFlowRunError(f"TensorFlow failed a run: {errors[0]}")
            outs = {f"{name}/{o}": Tensor(np.asarray(v))
                    for name, fetch, _, _ in calls for o, v in zip(fetch, results[name])}
            state = {}
            if observe != "outputs":
                inited = runner.session.run(runner._is_init)
                reads = runner.session.run({v: runner._read[v] for v, ok in inited.items() if ok})
                for v in runner.var_nodes:
                    state[v] = Tensor(np.asarray(reads[v])) if v in reads else Error("uninitialized")
            seen[make_outcome(outs, state, observe)] += 1
            done += 1
    finally:
        runner.close()
    return seen, done
