"""The queue family: TensorFlow's FIFO queues and mutexes, imported from a
session's graph as the session's queues and critical sections (one OpDef
each: import, semantics, Z3 facet, export; oracle/opdefs,
docs/writing-an-op-model.md; docs/sessions.md, "Imported from TensorFlow
graphs").

* `FIFOQueueV2` (one component of a modelled dtype and a fully defined
  shape, capacity 1..blocking.MAX_CAPACITY): a queue of the session, named by
  its shared_name (else its node name); the node itself is a NoOp (creating
  the queue has no effect the model sees).
* `QueueEnqueueV2` / `QueueDequeueV2` (timeout_ms -1) / `QueueSizeV2`: the
  sessions' QueueEnqueue / QueueDequeue / QueueSize of that queue (their
  stand-ins, with the table of oracle/blocking.Blocking beside the program);
  QueueSizeV2's int32 is a Cast of the model's int64 size.
* `QueueEnqueueManyV2` / `QueueDequeueManyV2` (timeout_ms -1; its `n` a
  Const, read at import) / `QueueCloseV2` (its cancel_pending_enqueues):
  the sessions' QueueEnqueueMany / QueueDequeueMany / QueueClose.
* `MutexV2`: a NoOp; its section is named by its shared_name (else its node
  name).  `MutexLock`: a NoOp in the section; `ConsumeMutexLock`: a NoOp in
  the section waiting for the lock.  The section's other nodes are those
  that TensorFlow's lock provably protects: the descendants of the MutexLock
  that are ancestors of the ConsumeMutexLock (by data and control edges).
  TensorFlow holds the mutex from the MutexLock until the lock tensor dies,
  which is when its only consumer, the ConsumeMutexLock, has run; the model
  holds a section from its first node to its last, here the MutexLock and
  the ConsumeMutexLock: the same span.

Refused by name, with the reason: a queue of several components, of an
unknown shape or an unbounded capacity, an enqueue or dequeue with a
timeout, a queue handle or a lock that does not come straight from its
FIFOQueueV2 / MutexLock, a lock tensor with a consumer other than one
ConsumeMutexLock (it would keep the lock held), and any graph holding these
ops imported outside a session (only the session semantics models them).
A mutex may have several MutexLocks (several `execute` calls on one
tf.CriticalSection): they are one section, and oracle/session.py refuses a
run that runs two of them (in one run TensorFlow's two locks exclude each
other, which a section, constraining nothing inside a run, does not say).

Semantics: the session's blocking queues and sections (oracle/blocking.py);
the checker does not encode them (sessions are compared by their outcome
sets).  Export: each queue op's stand-in is written back as its TensorFlow
op (`node_exports`, keyed by the session's kind; graphdef/blocking_export.py
calls them), each queue as a FIFOQueueV2, each section as the MutexV2,
MutexLock and ConsumeMutexLock that tf.CriticalSection.execute writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import blocking as blk
from ..program import ControlIn, DataIn, Program
from ..values import DTYPES, Tensor
from .registry import OpDef, define, ops_where

FAMILY = "queue"

_SEMANTICS = "oracle/blocking.py: the session's bounded FIFO queues and critical sections"
_Z3 = "not encoded: sessions are compared by their outcome sets (oracle/session.py)"


@dataclass
class BlockingImport:
    """What the models of one import record (on the importer: its
    `blocking_state`, read by graph import when the program is built)."""
    queues: dict[str, blk.Queue] = field(default_factory=dict)
    queue_of: dict[str, str] = field(default_factory=dict)       # FIFOQueueV2 node -> queue
    queue_ops: dict[str, tuple[str, str]] = field(default_factory=dict)  # tfsem node -> op, q
    params: dict[str, int] = field(default_factory=dict)   # tfsem node -> n, or cancel (0/1)
    section_of: dict[str, str] = field(default_factory=dict)     # MutexV2 node -> section
    #: MutexLock TF node -> (section, tfsem lock node, MutexV2 node)
    locks: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: MutexLock TF node -> tfsem ConsumeMutexLock node
    consumes: dict[str, str] = field(default_factory=dict)

    @property
    def OPS(self) -> tuple[str, ...]:   # noqa: N802 (the name graph import reads)
        """The ops these models import (refused outside a session)."""
        return ops()

    def finish(self, p: Program) -> tuple[blk.Blocking, dict[str, str]]:
        """The table of the import's sections and queue ops, and per section's
        MutexLock stand-in its ConsumeMutexLock stand-in (a run that runs the one
        must run the other: oracle/session.py checks it per run)."""
        st = self
        preds: dict[str, list[str]] = {n.name: [i.node for i in n.inputs
                                                if isinstance(i, (DataIn, ControlIn))]
                                       for n in p.nodes}
        sections: dict[str, str] = {}
        releases: dict[str, str] = {}
        for tf_lock, (sec, lock, _) in st.locks.items():
            consume = st.consumes.get(tf_lock)
            if consume is None:  # pruned: the import roots never release it
                continue
            anc: set[str] = set()
            todo = [consume]
            while todo:
                n = todo.pop()
                if n in anc:
                    continue
                anc.add(n)
                todo.extend(preds.get(n, ()))
            # descendants of the lock among the consume's ancestors
            succ: dict[str, list[str]] = {}
            for n in anc:
                for m in preds.get(n, ()):
                    succ.setdefault(m, []).append(n)
            desc: set[str] = set()
            todo = [lock]
            while todo:
                n = todo.pop()
                if n in desc or n not in anc:
                    continue
                desc.add(n)
                todo.extend(succ.get(n, ()))
            for n in desc:
                sections[n] = sec
            releases[lock] = consume
        ops_ = {n: v for n, v in st.queue_ops.items() if n in p.node}
        params = {n: v for n, v in st.params.items() if n in ops_}
        queues = dict(st.queues)
        return blk.Blocking(queues, ops_, sections, params), releases


def state(imp) -> BlockingImport:
    st = getattr(imp, "blocking_state", None)
    if st is None:
        st = imp.blocking_state = BlockingImport()
    return st


def ops() -> tuple[str, ...]:
    """The TensorFlow ops of this family (a graph holding one is imported
    only for a session)."""
    return ops_where(lambda d: d.family == FAMILY)


def kinds() -> dict[str, str]:
    """TensorFlow queue op -> the session's queue op it becomes (its kind)."""
    from .registry import lookup
    return {name: kind for name in ops() for kind in lookup(name).node_exports}


# -- helpers of the import models ---------------------------------------------


def _resource_name(b, taken) -> str:
    name = b.attr("shared_name", "") or b.node.name
    container = b.attr("container", "")
    if container:
        name = f"{container}.{name}"
    name = name.replace("/", ".").replace(":", ".")
    base, k = name, 0
    while name in taken:
        k += 1
        name = f"{base}.{k}"
    return name


def _source(b, kind: str) -> str:
    """The TensorFlow node input 0 comes from, which must be a `kind` node."""
    src, port, g = b.source(0)
    if g is None or g.op != kind or port != 0:
        b.reject(f"input 0 comes from {src!r} ({g.op if g else '?'}), not straight from a "
                 f"{kind}: a {kind} handle passed through other nodes is not modelled")
    return src


def _queue(b) -> tuple[str, blk.Queue]:
    src = _source(b, "FIFOQueueV2")
    st = state(b.imp)
    q = st.queue_of[src]
    return q, st.queues[q]


def _no_timeout(b) -> None:
    t = int(b.attr("timeout_ms", -1))
    if t != -1:
        b.reject(f"timeout_ms={t}: a queue operation that gives up after a timeout is not "
                 "modelled (only timeout_ms=-1, waiting forever)")


def _dtype_of(b, dt: str) -> str:
    return b.modelled_dtype(dt, "queue component dtype {dtype} is not modelled")


def _one_component_of(b, decl) -> None:
    """An enqueue (one or many) gives the queue one component of its dtype."""
    if b.n_inputs != 2:
        b.reject(f"an enqueue of {b.n_inputs - 1} components (one only)")
    types = b.attr("Tcomponents", [])
    if [_dtype_of(b, t) for t in types] != [decl.dtype]:
        b.reject(f"enqueues {types}, the queue holds {decl.dtype}", "dtype")


def _queue_op(tf_op: str, kind: str, doc: str, export, static: tuple[int, ...] = ()):
    """Decorator: `build` is the import of TensorFlow's `tf_op`, the
    session's queue op `kind` (its stand-in's export: `export`)."""
    def deco(build):
        define(OpDef(tf_op, doc, build, FAMILY, static=static,
                     stateful=f"the session's {kind}: changes its queue's state",
                     semantics=f"{_SEMANTICS} ({kind})", z3=_Z3,
                     node_exports={kind: export}))
        return build
    return deco


def _section_op(tf_op: str, doc: str, stateful: str):
    def deco(build):
        define(OpDef(tf_op, doc, build, FAMILY, stateful=stateful, semantics=_SEMANTICS,
                     z3=_Z3))
        return build
    return deco


# -- exports: `e` (graphdef/blocking_export.py QueueExport) holds the stand-in's
# node dict (`e.node`, rewritten in place), its queue's FIFOQueueV2 node
# (`e.handle`), the queue's dtype as a DT_ name (`e.dt`), the op's parameter
# (`e.param`), `e.fresh(base)` (a new node name) and `e.add(node)`.


def _components(e) -> dict:
    return {"list": {"type": [e.dt]}}


def _export_enqueue(e) -> None:
    e.node.update(op="QueueEnqueueV2" if e.kind == blk.ENQUEUE else "QueueEnqueueManyV2",
                  input=[e.handle, *e.data, *e.ctrl],
                  attr={"Tcomponents": _components(e), "timeout_ms": {"i": -1}})


def _export_dequeue(e) -> None:
    e.node.update(op="QueueDequeueV2", input=[e.handle, *e.ctrl],
                  attr={"component_types": _components(e), "timeout_ms": {"i": -1}})


def _export_dequeue_many(e) -> None:
    count = e.fresh(e.node["name"] + "/n")
    e.add({"name": count, "op": "Const", "attr": {
        "dtype": {"type": "DT_INT32"},
        "value": {"tensor": {"dtype": "DT_INT32", "tensor_shape": {},
                             "int_val": [int(e.param or 0)]}}}})
    e.node.update(op="QueueDequeueManyV2", input=[e.handle, count, *e.ctrl],
                  attr={"component_types": _components(e), "timeout_ms": {"i": -1}})


def _export_close(e) -> None:
    e.node.update(op="QueueCloseV2", input=[e.handle, *e.ctrl], attr={
        "cancel_pending_enqueues": {"b": bool(e.param or 0)}})


def _export_size(e) -> None:
    # TensorFlow's size is int32, the model's int64: a Cast between
    size = e.fresh(e.node["name"] + "/size")
    e.add({"name": size, "op": "QueueSizeV2", "input": [e.handle, *e.ctrl]})
    e.node.update(op="Cast", input=[size], attr={
        "SrcT": {"type": "DT_INT32"}, "DstT": {"type": "DT_INT64"}, "Truncate": {"b": False}})


def export_queue(name: str, queue: str, decl: blk.Queue, tf_dtype) -> dict:
    """A queue of the session as the FIFOQueueV2 node `name` (`tf_dtype`: a
    tfsem dtype's DT_ name)."""
    return {"name": name, "op": "FIFOQueueV2", "attr": {
        "component_types": {"list": {"type": [tf_dtype(decl.dtype)]}},
        "shapes": {"list": {"shape": [{"dim": [{"size": int(d)} for d in decl.shape]}]}},
        "capacity": {"i": int(decl.capacity)},
        "container": {"s": b""}, "shared_name": {"s": queue.encode()}}}


def export_section(section: str, mutex: str, lock: str, consume: str, waits: list[str],
                   exit_: str) -> list[dict]:
    """A critical section as tf.CriticalSection.execute writes it: its
    MutexV2, a MutexLock waiting for `waits` and a ConsumeMutexLock of the
    lock waiting for the section's last node `exit_` (the members' waits for
    the lock are the exporter's)."""
    return [{"name": mutex, "op": "MutexV2", "attr": {
                "container": {"s": b""}, "shared_name": {"s": section.encode()}}},
            {"name": lock, "op": "MutexLock", "input": [mutex, *dict.fromkeys(waits)]},
            {"name": consume, "op": "ConsumeMutexLock", "input": [lock, f"^{exit_}"]}]


# -- the ops --------------------------------------------------------------------


@_section_op("FIFOQueueV2", "a bounded FIFO queue of the session (one component, fully defined "
             "shape, capacity 1..64): a NoOp; its enqueue, dequeue and size ops are the "
             "session's", "declares a queue of the session (its state)")
def _fifo_queue(b):
    st = state(b.imp)
    types = b.attr("component_types", [])
    shapes = b.attr("shapes", [])
    if len(types) != 1:
        b.reject(f"a queue of {len(types)} components is not modelled (one component only)")
    dtype = _dtype_of(b, types[0])
    if len(shapes) != 1 or shapes[0] is None or any(d < 0 for d in shapes[0]):
        b.reject(f"the queue's element shape is not fully defined (shapes={shapes}): a queue "
                 "is modelled with one known element shape")
    cap = int(b.attr("capacity", -1))
    if not 1 <= cap <= blk.MAX_CAPACITY:
        b.reject(f"capacity {cap} is not modelled: a bounded queue of 1 to {blk.MAX_CAPACITY} "
                 "elements (an unbounded queue, capacity -1, has unbounded state)")
    if any(d > 16 for d in shapes[0]):
        b.reject(f"element shape {shapes[0]}: dimensions of at most 16 are modelled")
    name = _resource_name(b, set(st.queues) | set(b.imp.variables))
    st.queues[name] = blk.Queue(cap, dtype, tuple(int(d) for d in shapes[0]))
    st.queue_of[b.node.name] = name
    b.add("NoOp", [])
    return []


@_queue_op("QueueEnqueueV2", blk.ENQUEUE, "the session's QueueEnqueue of its FIFOQueueV2 (waits "
           "while it is full)", _export_enqueue)
def _enqueue(b):
    _no_timeout(b)
    q, decl = _queue(b)
    _one_component_of(b, decl)
    shape = b.declared_shape(1)
    if shape is not None and tuple(shape) != decl.shape:
        b.reject(f"enqueues an element of shape {list(shape)}, the queue's is {list(decl.shape)} "
                 "(TensorFlow fails the run)", "bad-shape")
    ref = b.add("Identity", [b.input(1)])
    state(b.imp).queue_ops[ref.node] = (blk.ENQUEUE, q)
    return []


@_queue_op("QueueDequeueV2", blk.DEQUEUE, "the session's QueueDequeue of its FIFOQueueV2 (waits "
           "while it is empty)", _export_dequeue)
def _dequeue(b):
    _no_timeout(b)
    q, decl = _queue(b)
    types = b.attr("component_types", [])
    if [_dtype_of(b, t) for t in types] != [decl.dtype]:
        b.reject(f"dequeues {types}, the queue holds {decl.dtype}", "dtype")
    zeros = Tensor(np.zeros(decl.shape, dtype=DTYPES[decl.dtype]), decl.dtype)
    ref = b.add("Const", [], {"value": zeros})
    state(b.imp).queue_ops[ref.node] = (blk.DEQUEUE, q)
    return [ref]


@_queue_op("QueueEnqueueManyV2", blk.ENQUEUE_MANY, "the session's QueueEnqueueMany of its "
           "FIFOQueueV2 (streams the batch element by element as room frees; Cancelled on a "
           "closed queue)", _export_enqueue)
def _enqueue_many(b):
    _no_timeout(b)
    q, decl = _queue(b)
    _one_component_of(b, decl)
    shape = b.declared_shape(1)
    if shape is not None and (not shape or tuple(shape[1:]) != decl.shape):
        b.reject(f"enqueues a batch of shape {list(shape)}, the queue's elements are "
                 f"{list(decl.shape)} (a batch is [k] + that; TensorFlow fails the run)",
                 "bad-shape")
    ref = b.add("Identity", [b.input(1)])
    state(b.imp).queue_ops[ref.node] = (blk.ENQUEUE_MANY, q)
    return []


@_queue_op("QueueDequeueManyV2", blk.DEQUEUE_MANY, "the session's QueueDequeueMany of its "
           "FIFOQueueV2 (n a constant; takes elements as they come, holding the dequeue line; "
           "OutOfRange on a closed queue with too few)", _export_dequeue_many)
def _dequeue_many(b):
    _no_timeout(b)
    q, decl = _queue(b)
    types = b.attr("component_types", [])
    if [_dtype_of(b, t) for t in types] != [decl.dtype]:
        b.reject(f"dequeues {types}, the queue holds {decl.dtype}", "dtype")
    n = b.static(1)
    if n.shape != () or not 0 <= int(n) <= blk.MAX_CAPACITY:
        b.reject(f"n = {n.tolist()}: a dequeue-many of a constant 0 to {blk.MAX_CAPACITY} "
                 "elements is modelled", "bad-value")
    zeros = Tensor(np.zeros((int(n),) + decl.shape, dtype=DTYPES[decl.dtype]), decl.dtype)
    ref = b.add("Const", [], {"value": zeros})
    st = state(b.imp)
    st.queue_ops[ref.node] = (blk.DEQUEUE_MANY, q)
    st.params[ref.node] = int(n)
    return [ref]


@_queue_op("QueueCloseV2", blk.CLOSE, "the session's QueueClose (cancel_pending_enqueues: fails "
           "the pending enqueues at once; else waits behind them)", _export_close)
def _close(b):
    q, _ = _queue(b)
    ref = b.add("NoOp", [])
    st = state(b.imp)
    st.queue_ops[ref.node] = (blk.CLOSE, q)
    st.params[ref.node] = int(bool(b.attr("cancel_pending_enqueues", False)))
    return []


@_queue_op("QueueSizeV2", blk.SIZE, "the session's QueueSize (int64), then a Cast to int32",
           _export_size)
def _size(b):
    q, _ = _queue(b)
    size = b.add("Const", [], {"value": Tensor(np.array(0, dtype=np.int64), "int64")},
                 part="size")
    state(b.imp).queue_ops[size.node] = (blk.SIZE, q)
    return [b.add("Cast", [size], {"DstT": "int32"})]


@_section_op("MutexV2", "a tf.CriticalSection's mutex: a NoOp naming the section",
             "declares a critical section of the session")
def _mutex(b):
    st = state(b.imp)
    st.section_of[b.node.name] = _resource_name(b, set(st.section_of.values()))
    b.add("NoOp", [])
    return []


@_section_op("MutexLock", "takes the section: a NoOp, first node of the section",
             "takes the critical section (first node of it)")
def _mutex_lock(b):
    st = state(b.imp)
    src = _source(b, "MutexV2")
    users = b.data_consumers()
    if len(users) != 1 or users[0].op != "ConsumeMutexLock":
        b.reject(f"the lock tensor is consumed by {[u.name for u in users]}, not by exactly one "
                 "ConsumeMutexLock (as tf.CriticalSection.execute writes): TensorFlow holds "
                 "the mutex until every consumer has run, which is not modelled")
    ref = b.add("NoOp", [ControlIn(b.imp.done[src])])
    st.locks[b.node.name] = (st.section_of[src], ref.node, src)
    return []


@_section_op("ConsumeMutexLock", "releases the section: a NoOp, last node of the section",
             "releases the critical section (last node of it)")
def _consume(b):
    st = state(b.imp)
    lock = _source(b, "MutexLock")
    ref = b.add("NoOp", [ControlIn(b.imp.done[lock])])
    st.consumes[lock] = ref.node
    return []
