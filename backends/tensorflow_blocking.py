"""A session with queues on TensorFlow's runtime (docs/sessions.md): the
session's program exported as a GraphDef with real ``FIFOQueueV2``,
``QueueEnqueueV2``, ``QueueEnqueueManyV2``, ``QueueDequeueV2``,
``QueueDequeueManyV2``, ``QueueCloseV2`` and ``QueueSizeV2`` nodes in place
of tfsem's stand-ins (oracle/blocking.py), its runs called concurrently on
threads as in backends/tensorflow_sessions.py, each call under
``RunOptions.timeout_in_ms``: a call that is still blocked when the timeout
ends (TensorFlow's ``DeadlineExceededError``) is reported as waiting, so a
trial in which some run waits is TensorFlow's picture of the oracle's
``deadlock`` outcome.  Critical sections become TensorFlow's mutexes
(``MutexV2``, ``MutexLock``, ``ConsumeMutexLock``; export_blocking_graph).

Imported only by the tests and `tfsem run --backend tensorflow`.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Mapping

from .tensorflow import TensorFlowRunError
from .tensorflow_sessions import run_together


def export_blocking_graph(p, b, names: dict[str, str], runs=(),
                          fetches: dict[str, str] | None = None
                          ) -> tuple[dict, dict[str, list[str]]]:
    """The GraphDef dict of program `p` with table `b`'s queue ops made real
    (one FIFOQueueV2 per queue, shared by every run of the session) and its
    critical sections as TensorFlow's mutexes, as `tf.CriticalSection.execute`
    writes them: per section S a `MutexV2` and a `MutexLock` that every node
    of S waits for (a control edge), and per run R (of `runs`, the session's)
    a `ConsumeMutexLock` of the lock waiting for R's nodes of S, which R
    runs as a target: R holds S from its `MutexLock` until its nodes of S are
    done.  Returns the graph and, per run, those extra targets.  TensorFlow's
    lock is taken when the MutexLock runs, possibly before the section's first
    node could run: a span at least as long as the model's, so TensorFlow's
    orders are among the model's.  `fetches` receives export_graph's."""
    from tfsem.graphdef.blocking_export import export_with_real_queues

    graph, by_name, taken, _, _ = export_with_real_queues(p, b, names, fetches)
    extra: dict[str, list[str]] = {}
    from tfsem.oracle.session import run_nodes
    for sec in sorted(set(b.sections.values())):
        mutex, lock = f"mutex_{sec}", f"lock_{sec}"
        while mutex in taken or lock in taken:
            mutex, lock = mutex + "_", lock + "_"
        taken |= {mutex, lock}
        graph["node"].append({"name": mutex, "op": "MutexV2", "attr": {
            "container": {"s": b""}, "shared_name": {"s": sec.encode()}}})
        graph["node"].append({"name": lock, "op": "MutexLock", "input": [mutex]})
        members = [names.get(n, n) for n, s2 in b.sections.items() if s2 == sec]
        for m in members:
            by_name[m].setdefault("input", []).append(f"^{lock}")
        for run in runs:
            mine = [names.get(n, n) for n in run_nodes(p, run) if b.sections.get(n) == sec]
            if not mine:
                continue
            release = f"release_{sec}_{run.name}"
            while release in taken:
                release += "_"
            taken.add(release)
            graph["node"].append({"name": release, "op": "ConsumeMutexLock",
                                  "input": [lock, *(f"^{m}" for m in mine)]})
            extra.setdefault(run.name, []).append(release)
    return graph, extra


def run_blocking_session_threads(session, init: Mapping[str, Any], trials: int,
                                 timeout_ms: int = 2000, max_seconds: float = 120.0,
                                 deadline: float | None = None, seen: Counter | None = None
                                 ) -> tuple[Counter, int]:
    """Over `trials` trials (a fresh TensorFlow session each, so the queues
    start empty), the distinct results: for each trial, the sorted names of
    the runs whose call was still blocked after `timeout_ms` (empty when
    every run completed) and the values fetched by those that completed,
    then (for a completed trial whose variables `init` all sets) the final
    value of each variable.

    Trials stop after `max_seconds`, and with `deadline` (a time.monotonic()
    value: `tfsem run`'s budget) no trial starts when less is left than the
    longest trial so far took: a trial is never cut short here (a call cut
    by the budget would look blocked: a false deadlock).  Each trial made
    is counted into `seen` (given, it is the caller's: a caller that leaves
    this call behind at its budget reads the trials made from it)."""
    import time

    import numpy as np

    from tfsem.graphdef.proto import format_text

    from .tensorflow import tensorflow
    tf = tensorflow()
    if session.order != "concurrent":
        raise TensorFlowRunError("only concurrent sessions run on threads")
    p, b = session.program, session.blocking
    from tfsem.graphdef.blocking_export import export_session_graph
    from tfsem.graphdef.exporter import ExportError
    fetches: dict[str, str] = {}     # output -> the node fetched for it
    try:   # sections as tf.CriticalSection writes them, exactly the model's (docs/sessions.md)
        graph_dict, extra, names = export_session_graph(p, b, session.runs, fetches)
    except ExportError:   # a lock held at least as long as the section: TF's orders among the model's
        names = {}
        graph_dict, extra = export_blocking_graph(p, b, names, session.runs, fetches)
    text = format_text("GraphDef", graph_dict)
    from google.protobuf import text_format
    gd = tf.compat.v1.GraphDef()
    text_format.Parse(text, gd)
    calls = []
    for run in session.runs:
        fetch = list(p.outputs) if run.whole else list(run.fetch)
        if run.whole:
            targets = [names.get(n.name, n.name) for n in p.nodes if not p.successors[n.name]]
        else:
            targets = [names.get(r, r) for r in run.roots]
        calls.append((run.name, fetch, targets + extra.get(run.name, [])))
    seen = Counter() if seen is None else seen
    started, done, longest = time.monotonic(), 0, 0.0
    while done < trials and time.monotonic() - started < max_seconds:
        t_trial = time.monotonic()
        if deadline is not None and t_trial + longest >= deadline:
            break
        graph = tf.Graph()
        with graph.as_default():
            try:
                tf.compat.v1.import_graph_def(gd, name="")
            except Exception as exc:    # (as GraphRunner: a graph TensorFlow refuses
                # is a failed run, said so, not a traceback)
                raise TensorFlowRunError(f"TensorFlow cannot load the graph: {exc}") from exc
            init_ops, reads = [], {}
            for n in p.nodes:
                if n.op != "Var":
                    continue
                h = graph.get_tensor_by_name(f"{names.get(n.name, n.name)}:0")
                if n.var in init:
                    init_ops.append(tf.raw_ops.AssignVariableOp(
                        resource=h, value=tf.constant(np.asarray(init[n.var].array))))
                reads.setdefault(n.var, tf.raw_ops.ReadVariableOp(
                    resource=h, dtype=tf.as_dtype(p.variables[n.var].dtype)))
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=len(calls) + 2)
        with tf.compat.v1.Session(graph=graph, config=config) as sess:
            if init_ops:
                sess.run(init_ops)
            options = tf.compat.v1.RunOptions(timeout_in_ms=timeout_ms)
            barrier = threading.Barrier(len(calls))
            results: dict[str, Any] = {}
            waiting: list[str] = []
            errors: list[BaseException] = []

            finished: dict[str, float] = {}
            overdue: set[str] = set()
            cancelled: list[float] = []
            failed: dict[str, str] = {}

            def call(name, fetch, targets):
                try:
                    barrier.wait()
                    t0 = time.monotonic()
                    results[name] = sess.run([f"{fetches[o]}:0" for o in fetch] + targets,
                                             options=options)[:len(fetch)]
                    finished[name] = time.monotonic()
                    if finished[name] - t0 >= timeout_ms / 1000:
                        overdue.add(name)
                except tf.errors.DeadlineExceededError:
                    cancelled.append(time.monotonic())
                    waiting.append(name)
                except (tf.errors.OutOfRangeError, tf.errors.CancelledError) as exc:
                    # a queue op failed the run (a dequeue from a closed queue
                    # with too few elements; an enqueue or close on a closed
                    # queue): the oracle's error value (docs/sessions.md)
                    failed[name] = ("out-of-range" if isinstance(exc, tf.errors.OutOfRangeError)
                                    else "cancelled")
                    finished[name] = time.monotonic()
                except BaseException as exc:  # noqa: BLE001 (reported below)
                    errors.append(exc)
            run_together(call, calls)
            if cancelled:
                # a call cancelled at its timeout drops its lock tensors, freeing
                # their sections: a call that completes only after that was
                # blocked until then (docs/sessions.md, section_queue).  A call
                # that completes after its own deadline was waiting in an op
                # the timeout cannot cancel (QueueCloseV2's attempt waits
                # behind pending enqueues with no cancellation token) and was
                # freed by another call's cancellation: its clock says so even
                # when its thread ran before the cancelled one's handler.
                first = min(cancelled)
                for name, t_done in finished.items():
                    if t_done >= first or name in overdue:
                        waiting.append(name)
                        results.pop(name, None)
            if errors:
                raise TensorFlowRunError(f"TensorFlow failed a run: {errors[0]}")
            state = ()
            if not waiting and reads and all(x in init for x in reads):
                state = tuple(sorted((x, np.asarray(v).tolist())
                                     for x, v in sess.run(reads).items()))
            if not waiting:
                state += _queue_state(tf, sess, graph, graph_dict, b)
        values = tuple(sorted([(f"{name}/{o}", frozen(np.asarray(v).tolist()))
                               for name, fetch, _ in calls if name in results
                               for o, v in zip(fetch, results[name])]
                              + [(f"{name}/!error", why) for name, why in failed.items()])) + state
        seen[(tuple(sorted(waiting)), values)] += 1
        done += 1
        longest = max(longest, time.monotonic() - t_trial)
    return seen, done


def frozen(value):
    """A value's nested lists as tuples (trial results are set members)."""
    return tuple(frozen(v) for v in value) if isinstance(value, list) else value


def _queue_state(tf, sess, graph, graph_dict: dict, b) -> tuple:
    """After a trial, each queue's elements (``queue:Q``, a list) and, where
    the program closes Q, whether it is closed (``closed:Q``), read with
    TensorFlow's own ops: its size, a dequeue-many of that many elements
    (a closed queue still gives what it holds) and QueueIsClosedV2."""
    out = []
    handles = {n["attr"]["shared_name"]["s"].decode() if isinstance(n["attr"]["shared_name"]["s"],
                                                                    bytes)
               else n["attr"]["shared_name"]["s"]: n["name"]
               for n in graph_dict["node"] if n.get("op") == "FIFOQueueV2"}
    closed = b.closed_queues()
    with graph.as_default():
        for q in sorted(b.queues):
            h = graph.get_tensor_by_name(f"{handles[q]}:0")
            dtype = graph.get_operation_by_name(handles[q]).get_attr("component_types")
            k = int(sess.run(tf.raw_ops.QueueSizeV2(handle=h)))
            (items,) = sess.run(tf.raw_ops.QueueDequeueManyV2(handle=h, n=k,
                                                              component_types=dtype))
            out.append((f"queue:{q}", frozen(items.tolist())))
            if q in closed:
                out.append((f"closed:{q}", bool(sess.run(tf.raw_ops.QueueIsClosedV2(handle=h)))))
    return tuple(sorted(out))


def among_oracle(found, waiting, values) -> bool:
    """Whether a trial of run_blocking_session_threads is among the oracle's
    outcomes `found`: runs that waited match a deadlock whose waiting
    instances are theirs; a completed trial an outcome with its fetched
    values and final state.  A run TensorFlow failed (``RUN/!error``)
    matches an outcome where that run fetched the error value for an
    out-of-range dequeue; a cancelled enqueue or close has no value in the
    model (it has no effect there) and matches as such (docs/sessions.md)."""
    from tfsem.oracle.values import Error
    for o in found:
        if hasattr(o, "blocked"):
            if waiting and {b.split("/")[0] for b in o.blocked} == set(waiting):
                return True
            continue
        if waiting:
            continue
        mine = {k: frozen(v.array.tolist()) for k, v in (*o.outputs, *(o.state or ()))
                if hasattr(v, "array")}
        errors = {(k.partition("/")[0], v.reason) for k, v in o.outputs if isinstance(v, Error)}
        ok = True
        for k, v in values:
            run, _, name = k.partition("/")
            if name == "!error":
                ok = ok and (v == "cancelled" or (run, v) in errors)
            else:
                ok = ok and k in mine and mine[k] == v
        if ok:
            return True
    return False
