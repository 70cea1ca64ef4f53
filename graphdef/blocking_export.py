"""`tfsem export` of a session's program with critical sections and queues
(docs/sessions.md, "Exported to TensorFlow graphs"): a GraphDef whose queues
are real FIFOQueueV2 / QueueEnqueueV2 / QueueDequeueV2 / QueueSizeV2 nodes
and whose sections are TensorFlow's mutexes as `tf.CriticalSection.execute`
writes them, exported only where TensorFlow's lock is exactly the model's
section, so that importing the graph back gives the same outcome set:

* per section S a `MutexV2` (shared_name S), one `MutexLock` waiting for the
  inputs of S's *entry* (the member that is an ancestor of every member),
  every member waiting for the lock, and one `ConsumeMutexLock` of the lock
  waiting for S's *exit* (the member that is a descendant of every member);
* refused by name: a section with no entry or no exit (TensorFlow's span
  from lock to consume would be longer than the model's, from the first
  member a run fires to its last), and a run that runs a member but not the
  exit (its consume would pull in more than the run runs).

The model holds S in run R from R's first member step to its last, which are
the entry and the exit; TensorFlow holds the mutex from the lock, which can
fire right before the entry (it waits only for the entry's inputs), to the
consume, which can fire right after the exit: the same orders.
"""

from __future__ import annotations

from typing import Sequence

from tfsem.oracle.blocking import CLOSE, DEQUEUE, DEQUEUE_MANY, ENQUEUE, ENQUEUE_MANY, Blocking
from tfsem.oracle.program import Program

from .exporter import TF_DTYPES, ExportError, export_graph


def section_ends(p: Program, b: Blocking) -> dict[str, tuple[str, str, list[str]]]:
    """Per section: its entry, its exit and its members (ExportError where
    it has no entry or exit)."""
    out = {}
    for sec in sorted(set(b.sections.values())):
        members = [n.name for n in p.nodes if b.sections.get(n.name) == sec]
        anc = {m: p.ancestors([m]) for m in members}
        entry = [m for m in members if all(m in anc[o] for o in members)]
        exit_ = [m for m in members if all(o in anc[m] for o in members)]
        if not entry or not exit_:
            which = "precedes" if not entry else "follows"
            raise ExportError(f"critical section {sec!r}", f"no member {which} every other "
                              f"member ({', '.join(members)}): TensorFlow's MutexLock and "
                              "ConsumeMutexLock would hold the mutex longer than the section "
                              "is held, so the graph would not have the same outcomes; not "
                              "exported")
        out[sec] = (entry[0], exit_[0], members)
    return out


def export_session_graph(p: Program, b: Blocking, runs: Sequence = ()
                         ) -> tuple[dict, dict[str, list[str]], dict[str, str]]:
    """The GraphDef dict, per run the ConsumeMutexLock nodes it must run as
    targets, and the program's node names in the graph."""
    from tfsem.oracle.session import run_nodes
    ends = section_ends(p, b)
    for run in runs:
        mine = set(run_nodes(p, run))
        for sec, (_, exit_, members) in ends.items():
            if any(m in mine for m in members) and exit_ not in mine:
                raise ExportError(f"run {run.name!r}", f"runs part of critical section {sec!r} "
                                  f"but not its last node {exit_!r}: TensorFlow would free the "
                                  "mutex at once (target it to export)")
    names: dict[str, str] = {}
    graph, by_name, _, fresh, handles = export_with_real_queues(p, b, names)
    targets: dict[str, list[str]] = {}
    for sec, (entry, exit_, members) in ends.items():
        mutex, lock, consume = fresh(f"mutex_{sec}"), fresh(f"lock_{sec}"), fresh(f"release_{sec}")
        e = by_name[names.get(entry, entry)]
        waits = [i if i.startswith("^") else "^" + i.split(":")[0]
                 for i in e.get("input", []) if i.split(":")[0].lstrip("^") not in handles.values()]
        graph["node"].append({"name": mutex, "op": "MutexV2", "attr": {
            "container": {"s": b""}, "shared_name": {"s": sec.encode()}}})
        graph["node"].append({"name": lock, "op": "MutexLock",
                              "input": [mutex, *dict.fromkeys(waits)]})
        for m in members:
            by_name[names.get(m, m)].setdefault("input", []).append(f"^{lock}")
        graph["node"].append({"name": consume, "op": "ConsumeMutexLock",
                              "input": [lock, f"^{names.get(exit_, exit_)}"]})
        for run in runs:
            if exit_ in set(run_nodes(p, run)):
                targets.setdefault(run.name, []).append(consume)
    return graph, targets, names



def export_with_real_queues(p, b: Blocking, names: dict[str, str]):
    """`export_graph(p)` with `b`'s queue ops made real (real_queue_ops):
    (the graph, its nodes by name, the names taken, `fresh(base)` (a name
    not taken yet, then taken), each queue's FIFOQueueV2 node)."""
    graph = export_graph(p, names=names)
    by_name = {n["name"]: n for n in graph["node"]}
    taken = set(by_name)

    def fresh(base: str) -> str:
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        return name
    handles = real_queue_ops(graph, by_name, names, b, fresh)
    return graph, by_name, taken, fresh, handles


def real_queue_ops(graph: dict, by_name: dict, names: dict[str, str], b: Blocking,
                   fresh) -> dict[str, str]:
    """Make the stand-ins of `b`'s queue ops in the exported `graph` real
    TensorFlow queue ops (one FIFOQueueV2 per queue, named by `fresh`);
    returns each queue's FIFOQueueV2 node."""
    handles = {}
    for q, decl in sorted(b.queues.items()):
        handles[q] = fresh(f"queue_{q}")
        graph["node"].append({"name": handles[q], "op": "FIFOQueueV2", "attr": {
            "component_types": {"list": {"type": [TF_DTYPES[decl.dtype]]}},
            "shapes": {"list": {"shape": [{"dim": [{"size": int(d)} for d in decl.shape]}]}},
            "capacity": {"i": int(decl.capacity)},
            "container": {"s": b""}, "shared_name": {"s": q.encode()}}})
    for node, (kind, q) in sorted(b.queue_ops.items()):
        n = by_name[names.get(node, node)]
        dt = TF_DTYPES[b.queues[q].dtype]
        inputs = list(n.get("input", []))
        data = [i for i in inputs if not i.startswith("^")]
        ctrl = [i for i in inputs if i.startswith("^")]
        if kind in (ENQUEUE, ENQUEUE_MANY):
            n.update(op="QueueEnqueueV2" if kind == ENQUEUE else "QueueEnqueueManyV2",
                     input=[handles[q], *data, *ctrl],
                     attr={"Tcomponents": {"list": {"type": [dt]}}, "timeout_ms": {"i": -1}})
        elif kind == DEQUEUE:
            n.update(op="QueueDequeueV2", input=[handles[q], *ctrl],
                     attr={"component_types": {"list": {"type": [dt]}}, "timeout_ms": {"i": -1}})
        elif kind == DEQUEUE_MANY:
            count = fresh(n["name"] + "/n")
            graph["node"].append({"name": count, "op": "Const", "attr": {
                "dtype": {"type": TF_DTYPES["int32"]},
                "value": {"tensor": {"dtype": TF_DTYPES["int32"], "tensor_shape": {},
                                     "int_val": [int(b.params.get(node, 0))]}}}})
            n.update(op="QueueDequeueManyV2", input=[handles[q], count, *ctrl],
                     attr={"component_types": {"list": {"type": [dt]}}, "timeout_ms": {"i": -1}})
        elif kind == CLOSE:
            n.update(op="QueueCloseV2", input=[handles[q], *ctrl], attr={
                "cancel_pending_enqueues": {"b": bool(b.params.get(node, 0))}})
        else:   # TensorFlow's size is int32, the model's int64: a Cast between
            size = fresh(n["name"] + "/size")
            graph["node"].append({"name": size, "op": "QueueSizeV2", "input": [handles[q], *ctrl]})
            n.update(op="Cast", input=[size], attr={
                "SrcT": {"type": TF_DTYPES["int32"]}, "DstT": {"type": TF_DTYPES["int64"]},
                "Truncate": {"b": False}})
    return handles


def graph_session_json(session, targets: dict[str, list[str]], names: dict[str, str],
                       graph: str) -> dict:
    """The session over the exported graph at `graph` (a path relative to
    the session file): the same runs and order, each run's targets named as
    in the graph plus the ConsumeMutexLocks it must run."""
    from tfsem.oracle.values import value_to_json
    runs = []
    for run in session.runs:
        r = {"name": run.name,
             "fetch": list(session.program.outputs) if run.whole else list(run.fetch),
             "targets": [names.get(t, t) for t in run.roots] + targets.get(run.name, [])}
        if run.whole:   # a whole run: every node nothing consumes, as a target
            r["targets"] += [names.get(n.name, n.name) for n in session.program.nodes
                             if not session.program.successors[n.name]]
        if run.feeds:
            r["feeds"] = {f: value_to_json(v) for f, v in run.feeds.items()}
        runs.append(r)
    return {"format": "tfsem.session/1", "program": {"graph": graph}, "runs": runs,
            "order": session.order}
