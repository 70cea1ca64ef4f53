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

from tfsem.oracle import opdefs
from tfsem.oracle.blocking import Blocking
from tfsem.oracle.opdefs import queues as queue_defs
from tfsem.oracle.program import Program

from .exporter import TF_DTYPES, ExportError, _node_name_like, export_graph, valid_node_name


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


def export_session_graph(p: Program, b: Blocking, runs: Sequence = (),
                         fetches: dict[str, str] | None = None
                         ) -> tuple[dict, dict[str, list[str]], dict[str, str]]:
    """The GraphDef dict, per run the ConsumeMutexLock nodes it must run as
    targets, and the program's node names in the graph.  `fetches`, when
    given, receives each output -> the node fetched for it (export_graph)."""
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
    graph, by_name, _, fresh, handles = export_with_real_queues(p, b, names, fetches)
    targets: dict[str, list[str]] = {}
    for sec, (entry, exit_, members) in ends.items():
        mutex, lock, consume = fresh(f"mutex_{sec}"), fresh(f"lock_{sec}"), fresh(f"release_{sec}")
        e = by_name[names.get(entry, entry)]
        waits = [i if i.startswith("^") else "^" + i.split(":")[0]
                 for i in e.get("input", []) if i.split(":")[0].lstrip("^") not in handles.values()]
        for m in members:
            by_name[names.get(m, m)].setdefault("input", []).append(f"^{lock}")
        graph["node"].extend(queue_defs.export_section(sec, mutex, lock, consume, waits,
                                                       names.get(exit_, exit_)))
        for run in runs:
            if exit_ in set(run_nodes(p, run)):
                targets.setdefault(run.name, []).append(consume)
    return graph, targets, names



def export_with_real_queues(p, b: Blocking, names: dict[str, str],
                            fetches: dict[str, str] | None = None):
    """`export_graph(p)` with `b`'s queue ops made real (real_queue_ops):
    (the graph, its nodes by name, the names taken, `fresh(base)` (a name
    not taken yet, then taken), each queue's FIFOQueueV2 node).  `names`
    and `fetches` receive export_graph's."""
    graph = export_graph(p, names=names, fetches=fetches)
    by_name = {n["name"]: n for n in graph["node"]}
    taken = set(by_name)

    def fresh(base: str) -> str:
        # (a base made of a section's or a queue's name, `mutex_c s`, is no
        # node name TensorFlow takes where that name has other characters:
        # made like it, `mutex_c_s`, as export_graph names such nodes)
        name = base if valid_node_name(base) else _node_name_like(base)
        while name in taken:
            name += "_"
        taken.add(name)
        return name
    handles = real_queue_ops(graph, by_name, names, b, fresh)
    return graph, by_name, taken, fresh, handles


class QueueExport:
    """What a queue op's export facet (the queue family's `node_exports`,
    oracle/opdefs/queues.py) is given for one stand-in: its node dict
    (`node`, rewritten in place), the session's kind of op (`kind`), its
    data and control inputs, its queue's FIFOQueueV2 node (`handle`), the
    queue's dtype as a DT_ name (`dt`), the op's parameter (`param`: a
    dequeue-many's n, a close's cancel_pending_enqueues), `fresh(base)` and
    `add(node)` (a node of its own, added to the graph)."""

    __slots__ = ("node", "kind", "data", "ctrl", "handle", "dt", "param", "fresh", "add")

    def __init__(self, node, kind, handle, dt, param, fresh, add):
        inputs = list(node.get("input", []))
        self.node, self.kind, self.handle, self.dt, self.param = node, kind, handle, dt, param
        self.data = [i for i in inputs if not i.startswith("^")]
        self.ctrl = [i for i in inputs if i.startswith("^")]
        self.fresh, self.add = fresh, add


def real_queue_ops(graph: dict, by_name: dict, names: dict[str, str], b: Blocking,
                   fresh) -> dict[str, str]:
    """Make the stand-ins of `b`'s queue ops in the exported `graph` real
    TensorFlow queue ops (one FIFOQueueV2 per queue, named by `fresh`), as
    the queue family exports them (oracle/opdefs/queues.py); returns each
    queue's FIFOQueueV2 node."""
    handles = {}
    for q, decl in sorted(b.queues.items()):
        handles[q] = fresh(f"queue_{q}")
        graph["node"].append(queue_defs.export_queue(handles[q], q, decl, TF_DTYPES.__getitem__))
    for node, (kind, q) in sorted(b.queue_ops.items()):
        export = opdefs.node_export_of(kind)
        if export is None:
            raise ExportError(f"node {node!r}", f"the queue op {kind} has no export in the op "
                              "registry")
        export(QueueExport(by_name[names.get(node, node)], kind, handles[q],
                           TF_DTYPES[b.queues[q].dtype], b.params.get(node), fresh,
                           graph["node"].append))
    return handles


def graph_session_json(session, targets: dict[str, list[str]], names: dict[str, str],
                       graph: str, fetches: dict[str, str] | None = None) -> dict:
    """The session over the exported graph at `graph` (a path relative to
    the session file): the same runs and order, each run's fetches and
    targets named as in the graph (`fetches`: export_graph's, an output
    `s:1` fetched as node `s_1`) plus the ConsumeMutexLocks it must run."""
    from tfsem.oracle.values import value_to_json
    fetches = fetches or {}
    runs = []
    for run in session.runs:
        fetch = list(session.program.outputs) if run.whole else list(run.fetch)
        r = {"name": run.name, "fetch": [fetches.get(o, o) for o in fetch],
             "targets": [names.get(t, t) for t in run.roots] + targets.get(run.name, [])}
        if run.whole:   # a whole run: every node nothing consumes, as a target
            r["targets"] += [names.get(n.name, n.name) for n in session.program.nodes
                             if not session.program.successors[n.name]]
        if run.feeds:
            r["feeds"] = {f: value_to_json(v) for f, v in run.feeds.items()}
        runs.append(r)
    return {"format": "tfsem.session/1", "program": {"graph": graph}, "runs": runs,
            "order": session.order}
