"""Critical sections and FIFO queues imported from TensorFlow graphs as the
sessions' sections and queues (oracle/blocking.py; docs/sessions.md,
"Imported from TensorFlow graphs").

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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tfsem.oracle import blocking as blk
from tfsem.oracle.program import ControlIn, DataIn, Program
from tfsem.oracle.values import DTYPES, Tensor

from .functions import split_ref
from .ops import op

QUEUE_OPS = ("FIFOQueueV2", "QueueEnqueueV2", "QueueDequeueV2", "QueueSizeV2",
             "QueueEnqueueManyV2", "QueueDequeueManyV2", "QueueCloseV2")
MUTEX_OPS = ("MutexV2", "MutexLock", "ConsumeMutexLock")


@dataclass
class BlockingImport:
    """What the models of one import record (on the importer)."""
    queues: dict[str, blk.Queue] = field(default_factory=dict)
    queue_of: dict[str, str] = field(default_factory=dict)       # FIFOQueueV2 node -> queue
    queue_ops: dict[str, tuple[str, str]] = field(default_factory=dict)  # tfsem node -> op, q
    params: dict[str, int] = field(default_factory=dict)   # tfsem node -> n, or cancel (0/1)
    section_of: dict[str, str] = field(default_factory=dict)     # MutexV2 node -> section
    #: MutexLock TF node -> (section, tfsem lock node, MutexV2 node)
    locks: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: MutexLock TF node -> tfsem ConsumeMutexLock node
    consumes: dict[str, str] = field(default_factory=dict)
    #: the ops these models import (refused outside a session)
    OPS = QUEUE_OPS + MUTEX_OPS

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
        ops = {n: v for n, v in st.queue_ops.items() if n in p.node}
        params = {n: v for n, v in st.params.items() if n in ops}
        queues = dict(st.queues)
        return blk.Blocking(queues, ops, sections, params), releases



def state(imp) -> BlockingImport:
    st = getattr(imp, "blocking_state", None)
    if st is None:
        st = imp.blocking_state = BlockingImport()
    return st


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
    src, port = b._ref(0)
    g = b.imp.g.get(src)
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
    from .importer import NOT_MODELLED, TFSEM_DTYPES, dtype_name
    if dt not in TFSEM_DTYPES:
        b.reject(f"queue component dtype {dtype_name(dt)} is not modelled: {NOT_MODELLED}",
                 "unsupported-dtype")
    return TFSEM_DTYPES[dt]


@op("FIFOQueueV2", "a bounded FIFO queue of the session (one component, fully defined shape, "
    "capacity 1..64): a NoOp; its enqueue, dequeue and size ops are the session's", stateful=True)
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


def _one_component_of(b, decl) -> None:
    """An enqueue (one or many) gives the queue one component of its dtype."""
    if b.n_inputs != 2:
        b.reject(f"an enqueue of {b.n_inputs - 1} components (one only)")
    types = b.attr("Tcomponents", [])
    if [_dtype_of(b, t) for t in types] != [decl.dtype]:
        b.reject(f"enqueues {types}, the queue holds {decl.dtype}", "dtype")


@op("QueueEnqueueV2", "the session's QueueEnqueue of its FIFOQueueV2 (waits while it is full)",
    stateful=True)
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


@op("QueueDequeueV2", "the session's QueueDequeue of its FIFOQueueV2 (waits while it is empty)",
    stateful=True)
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


@op("QueueEnqueueManyV2", "the session's QueueEnqueueMany of its FIFOQueueV2 (streams the batch "
    "element by element as room frees; Cancelled on a closed queue)", stateful=True)
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


@op("QueueDequeueManyV2", "the session's QueueDequeueMany of its FIFOQueueV2 (n a constant; "
    "takes elements as they come, holding the dequeue line; OutOfRange on a closed queue "
    "with too few)", stateful=True)
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


@op("QueueCloseV2", "the session's QueueClose (cancel_pending_enqueues: fails the pending "
    "enqueues at once; else waits behind them)", stateful=True)
def _close(b):
    q, _ = _queue(b)
    ref = b.add("NoOp", [])
    st = state(b.imp)
    st.queue_ops[ref.node] = (blk.CLOSE, q)
    st.params[ref.node] = int(bool(b.attr("cancel_pending_enqueues", False)))
    return []


@op("QueueSizeV2", "the session's QueueSize (int64), then a Cast to int32", stateful=True)
def _size(b):
    q, _ = _queue(b)
    size = b.add("Const", [], {"value": Tensor(np.array(0, dtype=np.int64), "int64")},
                 part="size")
    state(b.imp).queue_ops[size.node] = (blk.SIZE, q)
    return [b.add("Cast", [size], {"DstT": "int32"})]


@op("MutexV2", "a tf.CriticalSection's mutex: a NoOp naming the section", stateful=True)
def _mutex(b):
    st = state(b.imp)
    st.section_of[b.node.name] = _resource_name(b, set(st.section_of.values()))
    b.add("NoOp", [])
    return []


@op("MutexLock", "takes the section: a NoOp, first node of the section", stateful=True)
def _mutex_lock(b):
    st = state(b.imp)
    src = _source(b, "MutexV2")
    users = [g for g in b.imp.g.values()
             for i in g.inputs if not i.startswith("^") and split_ref(i)[0] == b.node.name]
    if len(users) != 1 or users[0].op != "ConsumeMutexLock":
        b.reject(f"the lock tensor is consumed by {[u.name for u in users]}, not by exactly one "
                 "ConsumeMutexLock (as tf.CriticalSection.execute writes): TensorFlow holds "
                 "the mutex until every consumer has run, which is not modelled")
    ref = b.add("NoOp", [ControlIn(b.imp.done[src])])
    st.locks[b.node.name] = (st.section_of[src], ref.node, src)
    return []


@op("ConsumeMutexLock", "releases the section: a NoOp, last node of the section",
    stateful=True)
def _consume(b):
    st = state(b.imp)
    lock = _source(b, "MutexLock")
    ref = b.add("NoOp", [ControlIn(b.imp.done[lock])])
    st.consumes[lock] = ref.node
    return []
