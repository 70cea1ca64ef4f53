"""Critical sections and blocking queues in sessions (SPEC section 10; rules 2
and 4 of "Concurrency Semantics For TensorFlow Resource Variables").

The paper puts every operation instance of a session in one total order:

  2. "The total order respects critical sections.  That is, if two nodes, n0
     and n1 are in the same critical section, then the following total order
     is illegal: [(n0, f0), (n0, f1), (n1, f0), (n1, f1)]."
  4. "The total order is consistent with blocking semantics of TensorFlow
     ops.  For example if an instance of a QueueDequeueV2 can complete only
     after a matching QueueEnqueueV2 has completed then the total order cannot
     put the QueueDequeueV2 instance before the QueueEnqueueV2 instance."

The program format (inside a session) gains:

* a node field ``"critical_section": NAME``: the nodes of one section in one
  run are that run's instance of the section (what one call of
  ``tf.CriticalSection.execute`` runs between its ``MutexLock`` and the
  ``ConsumeMutexLock``);
* a program field ``"queues": {Q: {"capacity": N, "dtype": D, "shape": S}}``
  (a ``FIFOQueueV2`` of one component: it starts empty, holds at most N
  elements) and the ops ``QueueEnqueue`` (one tensor input, no output; TF's
  ``QueueEnqueueV2``), ``QueueEnqueueMany`` (one tensor input [k] + shape,
  no output; ``QueueEnqueueManyV2``), ``QueueDequeue`` (no data input, one
  tensor output; ``QueueDequeueV2``), ``QueueDequeueMany`` (field ``"n"``,
  one output [n] + shape; ``QueueDequeueManyV2``), ``QueueClose`` (field
  ``"cancel_pending_enqueues"``, no output; ``QueueCloseV2``) and
  ``QueueSize`` (``QueueSizeV2``: the number of elements, int64), each with
  the field ``"queue": Q``.

The semantics: the step semantics of seed 000 (``semantics.py``, either
mode) over the session's expansion, with more state and more conditions:

* ``holder[S]``: the run inside section S, or none.  A step of a node of S in
  run R may fire only while S is free or held by R; the first step of R in S
  takes S, and S is free again once every node of R's in S has completed.
  So the instances of S in two runs never interleave (rule 2), and within
  one run the section constrains nothing.
* per queue Q, TensorFlow's ``QueueBase`` (queue_base.cc, fifo_queue.cc):
  its elements, oldest first, whether it is closed, and two lines of
  pending attempts, served in order.  A queue op's step *starts* it: a size
  reads the count at once; an enqueue, an enqueue-many or a close without
  cancelling joins the enqueue line, a dequeue or a dequeue-many the dequeue
  line (a dequeue-many of 0 and an empty batch complete at once; a close
  that cancels closes at once and completes every pending enqueue, failed).
  Then the lines *flush*, as TensorFlow does under the queue's lock after
  every change: the head of the enqueue line puts its elements in while
  there is room (a batch element by element; on a closed queue it fails, a
  close closes), the head of the dequeue line takes elements as they come
  (holding them until it has n; on a closed queue with too few it fails
  and puts them back at the front), until neither line moves.  An op whose
  attempt is done completes: its outputs arrive (a dequeue's elements, or
  the error value ``out-of-range``).  An enqueue or close that fails has no
  effect (errors are values; TensorFlow would fail the run).  A queue op in
  a section holds the section from its start until it completes.

A state in which no step can fire but some node has not completed is the
outcome ``deadlock`` (SPEC section 10), listing the node instances that wait
(their inputs present, held back by a section another run holds, or
waiting in a queue's line); a completed run's outcome is every output and
the final state: the variables and, under ``queue:Q``, each queue's
elements (a tensor of shape [k] + the element shape), and ``closed:Q`` for a
queue some node of the program closes.  A session that can block forever
thus has an outcome for it: exploring never hangs.

Where this differs from the paper: rule 2 forbids an order; a runtime that
locks (TensorFlow's ``MutexLock``) waits.  When a run holds section S and
needs a node of section T while another holds T and needs S, no order
extends the prefix: the paper's semantics has no such execution, TensorFlow
deadlocks, and so does this model (the SPEC's deadlock outcome).  Without
nested sections of different names the two agree.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from . import semantics as sem
from .budget import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, Budget, BudgetExceeded  # noqa: F401
from .graph import ATOMIC, DECOMPOSED, Graph, graph_of
from .outcomes import OUTPUTS, Outcome, make_outcome
from .program import ASSIGN, CONTROL, READ, DataIn, Program, ProgramError, Violation
from .values import DTYPES, Error, Tensor, Value, exact, value_to_json

ENQUEUE, DEQUEUE, SIZE = "QueueEnqueue", "QueueDequeue", "QueueSize"
ENQUEUE_MANY, DEQUEUE_MANY, CLOSE = "QueueEnqueueMany", "QueueDequeueMany", "QueueClose"
QUEUE_OPS = (ENQUEUE, DEQUEUE, SIZE, ENQUEUE_MANY, DEQUEUE_MANY, CLOSE)
#: ops that wait in the queue's line of enqueue attempts (TensorFlow's
#: QueueBase: a close without cancel_pending_enqueues is one too)
ENQUEUE_LINE = (ENQUEUE, ENQUEUE_MANY, CLOSE)
#: ops with one data input (the element, or the batch of elements)
ENQUEUE_OPS = (ENQUEUE, ENQUEUE_MANY)
#: ops with no output port a node may read
NO_OUTPUT = (ENQUEUE, ENQUEUE_MANY, CLOSE)
#: TensorFlow's names, accepted in a program as the same ops
TF_QUEUE_OPS = {"QueueEnqueueV2": ENQUEUE, "QueueDequeueV2": DEQUEUE, "QueueSizeV2": SIZE,
                "QueueEnqueueManyV2": ENQUEUE_MANY, "QueueDequeueManyV2": DEQUEUE_MANY,
                "QueueCloseV2": CLOSE}
#: ops of TensorFlow's queues and mutexes a program may not hold (refused by name)
UNMODELLED = frozenset({"QueueDequeueUpTo", "QueueDequeueUpToV2", "QueueIsClosedV2",
                        "QueueIsClosed", "FIFOQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2",
                        "RandomShuffleQueueV2", "MutexV2", "MutexLock", "ConsumeMutexLock"})
#: the error value of a dequeue from a closed queue holding too few elements
#: (TensorFlow's OutOfRangeError: "FIFOQueue '...' is closed and has
#: insufficient elements")
OUT_OF_RANGE = "out-of-range"
#: the most elements a queue may hold (a bound on the state explored)
MAX_CAPACITY = 64
QUEUE_STATE_PREFIX = "queue:"
#: a queue some node closes shows, in the state, whether it is closed
QUEUE_CLOSED_PREFIX = "closed:"


class BlockingError(ProgramError):
    """A malformed critical section or queue, naming the node or field."""


@dataclass(frozen=True)
class Queue:
    capacity: int
    dtype: str = "int64"
    shape: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {"capacity": self.capacity, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class Blocking:
    """The critical sections and queue ops of a program, beside it.

    The program itself holds a stand-in for each queue op (an ``Identity``
    for an enqueue, whose output nobody reads; a ``Const`` for a dequeue or
    a size), so that its graph, pruning and expansion are a program's; the
    stand-ins never run on an engine that does not know this table
    (``Session.expand`` refuses a session with one)."""
    queues: Mapping[str, Queue] = field(default_factory=dict)
    #: node -> (QueueEnqueue | QueueDequeue | QueueSize, queue)
    queue_ops: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: node -> critical section
    sections: Mapping[str, str] = field(default_factory=dict)
    #: node -> its op's parameter: a QueueDequeueMany's n, a QueueClose's
    #: cancel_pending_enqueues (1 or 0)
    params: Mapping[str, int] = field(default_factory=dict)
    #: queues some node of the whole program closes: their state shows
    #: closed:Q (kept when a run's nodes are restricted to others)
    closable: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.queues or self.queue_ops or self.sections)

    def restricted(self, nodes: Sequence[str], prefix: str = "") -> "Blocking":
        """The table for `nodes` (a run's), their names prefixed."""
        keep = set(nodes)
        return Blocking(dict(self.queues),
                        {prefix + n: v for n, v in self.queue_ops.items() if n in keep},
                        {prefix + n: v for n, v in self.sections.items() if n in keep},
                        {prefix + n: v for n, v in self.params.items() if n in keep},
                        self.closed_queues())

    def closed_queues(self) -> frozenset[str]:
        return self.closable | {q for k, q in self.queue_ops.values() if k == CLOSE}

    @staticmethod
    def union(parts: Sequence["Blocking"], queues: Mapping[str, Queue]) -> "Blocking":
        ops: dict[str, tuple[str, str]] = {}
        sections: dict[str, str] = {}
        params: dict[str, int] = {}
        closable: frozenset[str] = frozenset()
        for b in parts:
            ops.update(b.queue_ops)
            sections.update(b.sections)
            params.update(b.params)
            closable |= b.closed_queues()
        return Blocking(dict(queues), ops, sections, params, closable)

    def interface(self) -> tuple:
        """The queues a rewrite must keep: names and element types (a
        capacity is behaviour, which the check judges)."""
        return tuple(sorted((q, v.dtype, v.shape) for q, v in self.queues.items()))


# ---------------------------------------------------------------------------
# Reading and writing the program format


def _zeros_json(q: Queue, batch: int | None = None) -> Any:
    shape = q.shape if batch is None else (batch,) + q.shape
    return value_to_json(Tensor(np.zeros(shape, dtype=DTYPES[q.dtype])))


def split_program_json(raw: Any, where: str = "program") -> tuple[Any, Blocking]:
    """A program's JSON without its sections and queues (queue ops replaced
    by stand-ins), and the table of them.  Raises BlockingError naming the
    node or field of each problem."""
    if not isinstance(raw, dict):
        return raw, Blocking()
    bad: list[Violation] = []
    queues: dict[str, Queue] = {}
    raw_q = raw.get("queues", {})
    if not isinstance(raw_q, dict):
        bad.append(Violation(f"{where}.queues", "bad-value", "queues is an object QUEUE -> "
                             "{\"capacity\": N, \"dtype\": D, \"shape\": S}"))
        raw_q = {}
    variables = raw.get("variables") or []
    for name, d in raw_q.items():
        w = f"{where}.queues.{name}"
        if not isinstance(d, dict) or set(d) - {"capacity", "dtype", "shape"}:
            bad.append(Violation(w, "bad-value", "a queue is {\"capacity\": N, \"dtype\": D, "
                                 "\"shape\": S} (dtype and shape optional: int64 scalars)"))
            continue
        cap = d.get("capacity")
        if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= MAX_CAPACITY:
            bad.append(Violation(w + ".capacity", "bad-value", f"a capacity from 1 to "
                                 f"{MAX_CAPACITY} (unbounded queues are not modelled), got {cap!r}"))
            continue
        dtype = d.get("dtype", "int64")
        shape = d.get("shape", [])
        if dtype not in DTYPES:
            bad.append(Violation(w + ".dtype", "bad-value", f"unknown dtype {dtype!r}"))
            continue
        if not isinstance(shape, list) or not all(isinstance(k, int) and 0 <= k <= 16 for k in shape):
            bad.append(Violation(w + ".shape", "bad-value", "a shape is a list of sizes 0..16"))
            continue
        if name in variables or not name or "/" in name or ":" in name:
            bad.append(Violation(w, "bad-name", "a queue's name is not a variable's and holds "
                                 "no '/' or ':'"))
            continue
        queues[name] = Queue(cap, dtype, tuple(shape))
    ops: dict[str, tuple[str, str]] = {}
    sections: dict[str, str] = {}
    params: dict[str, int] = {}
    nodes = []
    for k, n in enumerate(raw.get("nodes") or []):
        if not isinstance(n, dict):
            nodes.append(n)
            continue
        n = dict(n)
        w = f"node {n.get('name', k)!r}"
        if "critical_section" in n:
            s = n.pop("critical_section")
            if not isinstance(s, str) or not s:
                bad.append(Violation(w, "bad-value", "critical_section is a non-empty name"))
            else:
                sections[str(n.get("name"))] = s
        op = TF_QUEUE_OPS.get(n.get("op"), n.get("op"))
        if op in UNMODELLED:
            bad.append(Violation(w, "unmodelled-op", f"{op} is not modelled (sessions model "
                                 f"{', '.join(QUEUE_OPS)} on bounded FIFO queues and critical "
                                 "sections as a node field \"critical_section\"; "
                                 "docs/sessions.md)"))
            nodes.append(n)
            continue
        if op in QUEUE_OPS:
            q = n.pop("queue", None)
            if q not in queues:
                bad.append(Violation(w, "unknown-queue", f"{op} of undeclared queue {q!r} "
                                     f"(declared: {', '.join(sorted(queues)) or 'none'})"))
                nodes.append(n)
                continue
            inputs = n.get("inputs", [])
            data = [i for i in inputs if isinstance(i, str) and not i.startswith("^")]
            want = 1 if op in ENQUEUE_OPS else 0
            if len(data) != want:
                bad.append(Violation(w, "arity", f"{op} takes {want} data input(s), got {len(data)}"))
            name = str(n.get("name"))
            ops[name] = (op, q)
            if op == DEQUEUE_MANY:
                k = n.pop("n", None)
                if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= MAX_CAPACITY:
                    bad.append(Violation(w + " field 'n'", "bad-value", f"{op} takes \"n\": the "
                                         f"number of elements, 0 to {MAX_CAPACITY}, got {k!r}"))
                    k = 0
                params[name] = k
            if op == CLOSE:
                c = n.pop("cancel_pending_enqueues", False)
                if not isinstance(c, bool):
                    bad.append(Violation(w + " field 'cancel_pending_enqueues'", "bad-value",
                                         f"true or false, got {c!r}"))
                params[name] = int(c is True)
            for key in ("n", "cancel_pending_enqueues"):
                if key in n:
                    bad.append(Violation(w, "unknown-field", f"{op} has no field {key!r}"))
            if op in ENQUEUE_OPS:
                n["op"] = "Identity"
            elif op == DEQUEUE:
                n.update(op="Const", value=_zeros_json(queues[q]))
            elif op == DEQUEUE_MANY:
                n.update(op="Const", value=_zeros_json(queues[q], params[name]))
            elif op == CLOSE:
                n["op"] = "NoOp"
            else:
                n.update(op="Const", value=0)
        elif "queue" in n:
            bad.append(Violation(w, "unknown-field", f"{n.get('op')} has no field 'queue' "
                                 f"(queue ops: {', '.join(QUEUE_OPS)})"))
        nodes.append(n)
    if bad:
        raise BlockingError(bad)
    out = {k: v for k, v in raw.items() if k != "queues"}
    out["nodes"] = nodes
    return out, Blocking(queues, ops, sections, params)


def has_blocking_json(raw: Any) -> bool:
    """Whether a program's JSON declares queues or critical sections."""
    if not isinstance(raw, dict):
        return False
    return "queues" in raw or any(isinstance(n, dict) and ("critical_section" in n or n.get("op") in
                                                           QUEUE_OPS or n.get("op") in TF_QUEUE_OPS
                                                           or n.get("op") in UNMODELLED)
                                  for n in (raw.get("nodes") or []))


def check_blocking(p: Program, b: Blocking, where: str = "program") -> None:
    """Rules the stand-ins cannot say: nothing reads an enqueue's (absent)
    output, and no control flow beside sections or queues."""
    bad = []
    for n in p.nodes:
        for i in n.inputs:
            kind = b.queue_ops.get(i.node, ("",))[0] if isinstance(i, DataIn) else ""
            if kind in NO_OUTPUT:
                bad.append(Violation(f"node {n.name!r} input {i}", "bad-port",
                                     f"{i.node} ({kind}) has no output"))
    for name, port in p.outputs.items():
        kind = b.queue_ops.get(port.node, ("",))[0]
        if kind in NO_OUTPUT:
            bad.append(Violation(f"output {name!r}", "bad-port", f"{port.node} ({kind}) "
                                 "has no output"))
    for n in list(b.sections) + list(b.queue_ops):
        if n not in p.node:
            bad.append(Violation(f"node {n!r}", "unknown-node", "no such node"))
    if b and p.has_control_flow:
        bad.append(Violation(where, "unmodelled", "critical sections and queues beside control "
                             "flow (frames) are not modelled"))
    if bad:
        raise BlockingError(bad)


def program_from_json(raw: Any, where: str = "program") -> tuple[Program, Blocking]:
    """A program with its sections and queues (the session's program format)."""
    from .jsonio import program_from_json as plain  # noqa: PLC0415
    stripped, b = split_program_json(raw, where)
    p = plain(stripped, where=where)
    check_blocking(p, b, where)
    return p, b


def program_to_json(p: Program, b: Blocking) -> dict:
    """The program format with the sections and queues written back."""
    from .jsonio import program_to_json as plain  # noqa: PLC0415
    out = plain(p)
    if b.queues:
        out["queues"] = {q: v.to_json() for q, v in sorted(b.queues.items())}
    for n in out["nodes"]:
        name = n["name"]
        if name in b.queue_ops:
            op, q = b.queue_ops[name]
            n["op"] = op
            n.pop("value", None)
            n["queue"] = q
            if op == DEQUEUE_MANY:
                n["n"] = b.params.get(name, 0)
            elif op == CLOSE and b.params.get(name):
                n["cancel_pending_enqueues"] = True
        if name in b.sections:
            n["critical_section"] = b.sections[name]
    return out


# ---------------------------------------------------------------------------
# Outcomes


@dataclass(frozen=True)
class Deadlock:
    """The outcome of a run that can block forever: the node instances that
    wait (their inputs present).  Two deadlocks are the same outcome when the
    same instances wait; `why` says what each waits for."""
    blocked: tuple[str, ...]
    why: tuple[str, ...] = field(default=(), compare=False)
    #: Outcome's fields, so code that lists outputs sees none
    outputs: tuple = ()
    state: tuple | None = None

    def to_json(self) -> dict[str, Any]:
        return {"deadlock": list(self.blocked), "waiting": list(self.why), "outputs": {}}

    def describe(self) -> str:
        return "deadlock: " + "; ".join(self.why or self.blocked)

    def first_difference(self, others) -> dict[str, str] | None:
        return None if self in others else {"deadlock": ", ".join(self.blocked)}


AnyOutcome = Outcome | Deadlock


@dataclass(frozen=True)
class _Line:
    """A queue's state: TensorFlow's QueueBase (queue_base.cc, fifo_queue.cc).
    `enq` and `deq` are its lines of pending attempts, oldest first: an
    enqueue attempt is (node, elements of its batch already in the queue),
    a dequeue attempt (node, elements it already took)."""
    items: tuple[Value, ...] = ()
    closed: bool = False
    enq: tuple[tuple[str, int], ...] = ()
    deq: tuple[tuple[str, tuple[Value, ...]], ...] = ()


@dataclass(frozen=True)
class _State:
    s: sem.State
    lines: tuple[_Line, ...]                  # per queue, in sorted queue order
    holders: tuple[str | None, ...]           # per section, in sorted section order
    left: tuple[int, ...]                     # per (section, run): steps not yet done

    @property
    def queues(self) -> tuple[tuple[Value, ...], ...]:
        return tuple(line.items for line in self.lines)

    def key(self) -> tuple:
        """Values by their exact bits, as sem.State.key has them (values.exact)."""
        return (self.s.key(), tuple(map(_exact_line, self.lines)), self.holders, self.left)


def _exact_line(line: _Line) -> tuple:
    return (tuple(map(exact, line.items)), line.closed, line.enq,
            tuple((node, tuple(map(exact, taken))) for node, taken in line.deq))


def _run_of(node: str) -> str:
    return node.partition("/")[0] if "/" in node else ""


class Machine:
    """The step semantics with sections and queues (module docstring)."""

    def __init__(self, p: Program, b: Blocking, semantics: str = ATOMIC):
        if semantics not in (ATOMIC, DECOMPOSED):
            raise ValueError(f"unknown semantics {semantics!r}")
        check_blocking(p, b)
        self.p, self.b, self.semantics = p, b, semantics
        self.g: Graph = graph_of(p)
        self.queue_names = sorted(b.queues)
        self.queue_index = {q: i for i, q in enumerate(self.queue_names)}
        self.closable = b.closed_queues()
        self.section_names = sorted(set(b.sections.values()))
        self.section_index = {s: i for i, s in enumerate(self.section_names)}
        pairs = sorted({(s, _run_of(n)) for n, s in b.sections.items()})
        self.pair_index = {pr: i for i, pr in enumerate(pairs)}
        #: nodes whose one step touches no shared state (see outcomes)
        self.local = frozenset(n.name for n in p.nodes if n.op not in (READ, ASSIGN)
                               and n.name not in b.queue_ops and n.name not in b.sections)
        steps_per = 2 if semantics == DECOMPOSED else 1
        self.left0 = [0] * len(pairs)
        for n, s in b.sections.items():
            k = steps_per if p.node[n].op == ASSIGN else 1
            self.left0[self.pair_index[(s, _run_of(n))]] += k

    def initial(self, feeds: Mapping[str, Value], init: Mapping[str, Value]) -> _State:
        return _State(sem.initial_state(self.p, self.g, feeds, init),
                      tuple(_Line() for _ in self.queue_names),
                      tuple(None for _ in self.section_names), tuple(self.left0))

    def _section_wait(self, st: _State, step: str) -> str | None:
        name = step.partition("@")[0]
        sec = self.b.sections.get(name)
        if sec is not None:
            holder = st.holders[self.section_index[sec]]
            if holder is not None and holder != _run_of(name):
                return f"{step} waits for critical section {sec}, held by run {holder}"
        return None

    def _pending(self, st: _State) -> dict[str, str]:
        """The queue ops that started and wait in a line, and why."""
        out = {}
        for q, line in zip(self.queue_names, st.lines):
            for k, (node, done) in enumerate(line.enq):
                kind = self.b.queue_ops[node][0]
                if k:
                    out[node] = f"{node} waits behind {line.enq[0][0]} in queue {q}'s enqueue line"
                elif kind == CLOSE:   # never: a close at the head completes
                    out[node] = f"{node} waits to close queue {q}"
                else:
                    out[node] = (f"{node} waits: queue {q} is full ({len(line.items)} elements"
                                 + (f", {done} of its batch enqueued)" if kind == ENQUEUE_MANY
                                    else ")"))
            for k, (node, taken) in enumerate(line.deq):
                if k:
                    out[node] = f"{node} waits behind {line.deq[0][0]} in queue {q}'s dequeue line"
                elif self.b.queue_ops[node][0] == DEQUEUE_MANY:
                    out[node] = (f"{node} waits: queue {q} is empty (it took {len(taken)} of "
                                 f"{self.b.params.get(node, 0)} elements)")
                else:
                    out[node] = f"{node} waits: queue {q} is empty"
        return out

    def enabled(self, st: _State) -> tuple[list[str], list[str]]:
        """(steps that may fire, reasons of the steps held back and of the
        queue ops waiting in a line)."""
        pending = self._pending(st)
        ok, held = [], list(pending.values())
        for step in sem.enabled(self.p, self.g, st.s, self.semantics):
            if step in pending:
                continue
            why = self._section_wait(st, step)
            (held if why else ok).append(why or step)
        return ok, held

    # -- queues: TensorFlow's QueueBase, attempt by attempt ----------------

    def _batch(self, st: _State, node: str) -> tuple[Value, ...] | None:
        """The elements an enqueue op puts in its queue (None: an error
        value, whose batch size is unknown: it enqueues nothing)."""
        kind, q = self.b.queue_ops[node]
        (d,) = [e for e in self.g.incoming[node] if e.kind != CONTROL]
        v = st.s.in_transit[d.id]
        if kind == ENQUEUE:
            self._check_element(node, q, v, self.b.queues[q].shape)
            return (v,)
        if isinstance(v, Error):
            return None
        self._check_element(node, q, v, None)
        return tuple(Tensor(v.array[i], v.dtype) for i in range(v.array.shape[0]))

    def _flush(self, st: _State, q: int, done: list[tuple[str, Value | None]]) -> _Line:
        """Queue q's lines run until no attempt makes progress (QueueBase::
        FlushUnlocked); each attempt that completes is appended to `done`
        with its output (None for an enqueue or a close)."""
        line = st.lines[q]
        items, closed, enq, deq = list(line.items), line.closed, list(line.enq), list(line.deq)
        cap = self.b.queues[self.queue_names[q]].capacity
        changed = True
        while changed:
            changed = False
            while enq:                       # TryAttemptLocked(kEnqueue)
                node, k = enq[0]
                kind = self.b.queue_ops[node][0]
                if kind == CLOSE:
                    closed = True            # (a second close fails: Cancelled, no effect)
                    enq.pop(0)
                    done.append((node, None))
                    changed = True
                    continue
                if closed:                   # Cancelled: "FIFOQueue '...' is closed."
                    enq.pop(0)
                    done.append((node, None))
                    changed = True
                    continue
                batch = self._batch(st, node)
                if batch is None:
                    enq.pop(0)
                    done.append((node, None))
                    changed = True
                    continue
                moved = 0
                while k < len(batch) and len(items) < cap:
                    items.append(batch[k])
                    k += 1
                    moved += 1
                changed = changed or moved > 0
                if k == len(batch):
                    enq.pop(0)
                    done.append((node, None))
                    changed = True
                    continue
                enq[0] = (node, k)
                break
            while deq:                       # TryAttemptLocked(kDequeue)
                node, taken = deq[0]
                kind = self.b.queue_ops[node][0]
                n = self.b.params.get(node, 1) if kind == DEQUEUE_MANY else 1
                if closed and len(items) < n - len(taken):
                    # OutOfRange; the elements it took go back to the front
                    items = list(taken) + items
                    deq.pop(0)
                    done.append((node, Error(OUT_OF_RANGE)))
                    changed = True
                    continue
                k = min(len(items), n - len(taken))
                if k:
                    taken, items = taken + tuple(items[:k]), items[k:]
                    changed = True
                if len(taken) == n:
                    deq.pop(0)
                    q_decl = self.b.queues[self.queue_names[q]]
                    done.append((node, taken[0] if kind == DEQUEUE else _stack(q_decl, taken)))
                    continue
                deq[0] = (node, taken)
                break
        return _Line(tuple(items), closed, tuple(enq), tuple(deq))

    def _start(self, st: _State, node: str, done: list) -> tuple[_Line, ...]:
        """A queue op starts (its kernel's Compute): it joins its queue's
        line, or completes at once (a size, an empty batch, a close that
        cancels), then the queue flushes."""
        kind, q = self.b.queue_ops[node]
        i = self.queue_index[q]
        lines = list(st.lines)
        line = lines[i]
        decl = self.b.queues[q]
        if kind == SIZE:
            done.append((node, Tensor(np.int64(len(line.items)), "int64")))
            return tuple(lines)
        if kind == DEQUEUE_MANY and self.b.params.get(node, 0) == 0:
            done.append((node, _stack(decl, ())))       # even from a closed queue
            return tuple(lines)
        if kind == ENQUEUE_MANY:
            batch = self._batch(st, node)
            if batch == ():                              # completes at once, even if closed
                done.append((node, None))
                return tuple(lines)
        if kind == CLOSE and self.b.params.get(node):
            # CloseAndCancel: closed, and every pending enqueue (and close)
            # fails Cancelled; a batch keeps the elements it already put in
            for pending, _ in line.enq:
                done.append((pending, None))
            done.append((node, None))
            lines[i] = _Line(line.items, True, (), line.deq)
        elif kind in ENQUEUE_LINE:
            lines[i] = dataclasses.replace(line, enq=line.enq + ((node, 0),))
        else:
            lines[i] = dataclasses.replace(line, deq=line.deq + ((node, ()),))
        st2 = _State(st.s, tuple(lines), st.holders, st.left)
        lines[i] = self._flush(st2, i, done)
        return tuple(lines)

    def fire(self, st: _State, step: str) -> _State:
        name, _, phase = step.partition("@")
        holders, left = list(st.holders), list(st.left)
        sec = self.b.sections.get(name)
        if sec is not None:
            holders[self.section_index[sec]] = _run_of(name)
        if name not in self.b.queue_ops:
            s = sem.fire(self.p, self.g, st.s, step)
            if sec is not None:
                self._leave(name, sec, holders, left)
            return _State(s, st.lines, tuple(holders), tuple(left))
        done: list[tuple[str, Value | None]] = []
        lines = self._start(st, name, done)
        s = st.s
        for node, value in done:             # the completed ops' outputs arrive
            s = sem.fire(self.p, self.g, s, node)
            if value is not None:
                transit = dict(s.in_transit)
                for e in self.g.outgoing[node]:
                    if e.kind != CONTROL:
                        transit[e.id] = value
                s = sem.State(s.var_value, transit, s.pending)
            sec2 = self.b.sections.get(node)
            if sec2 is not None:
                self._leave(node, sec2, holders, left)
        return _State(s, lines, tuple(holders), tuple(left))

    def _leave(self, node: str, sec: str, holders: list, left: list) -> None:
        k = self.pair_index[(sec, _run_of(node))]
        left[k] -= 1
        if left[k] == 0:
            holders[self.section_index[sec]] = None

    def _check_element(self, node: str, q: str, v: object, shape) -> None:
        decl = self.b.queues[q]
        if not isinstance(v, Tensor):
            return
        ok = v.dtype == decl.dtype and (tuple(v.array.shape) == shape if shape is not None else
                                        v.array.ndim >= 1 and tuple(v.array.shape[1:]) == decl.shape)
        if not ok:
            want = (f"{decl.dtype} {list(decl.shape)}" if shape is not None else
                    f"{decl.dtype} [k, {', '.join(map(str, decl.shape))}]".replace(", ]", "]"))
            raise BlockingError([Violation(f"node {node!r}", "bad-value",
                                           f"enqueues a {v.dtype} of shape {list(v.array.shape)} "
                                           f"into queue {q} (elements {decl.dtype} "
                                           f"{list(decl.shape)}: wants {want})")])

    def outcome(self, st: _State, held: list[str], observe: str) -> AnyOutcome:
        if held:
            return Deadlock(tuple(sorted(w.split(" ", 1)[0] for w in held)), tuple(sorted(held)))
        out = sem.outcome_of(self.p, self.g, st.s, observe)
        if observe == OUTPUTS or not self.queue_names:
            return out
        state = dict(out.state or ())
        for q, line in zip(self.queue_names, st.lines):
            state[QUEUE_STATE_PREFIX + q] = _queue_value(self.b.queues[q], line.items)
            if q in self.closable:
                state[QUEUE_CLOSED_PREFIX + q] = Tensor(np.bool_(line.closed), "bool")
        return make_outcome(dict(out.outputs), state, observe)


def _stack(q: Queue, items: tuple[Value, ...]) -> Value:
    """Elements as one tensor [k] + shape; the first error among them if any."""
    for v in items:
        if isinstance(v, Error):
            return v
    arr = np.array([v.array for v in items], dtype=DTYPES[q.dtype]).reshape((len(items),) + q.shape)
    return Tensor(arr, q.dtype)


def _queue_value(q: Queue, items: tuple[Value, ...]) -> Value:
    """A queue's elements as one tensor [k] + shape; a queue holding an error
    value shows as that error."""
    return _stack(q, items)



def outcomes(p: Program, b: Blocking, feeds: Mapping[str, Value], init: Mapping[str, Value],
             semantics: str = ATOMIC, observe: str = "outputs+state",
             max_states: int = DEFAULT_MAX_STATES,
             max_seconds: float = DEFAULT_MAX_SECONDS) -> tuple[dict[AnyOutcome, list[str]], int]:
    """Every outcome (deadlocks included) with a witness schedule, and the
    number of states explored; memoized depth-first search over the states.
    Raises BudgetExceeded when the budget runs out."""
    m = Machine(p, b, semantics)
    budget = Budget(max_states, max_seconds)
    found: dict[AnyOutcome, list[str]] = {}
    seen: set[tuple] = set()
    stack: list[tuple[_State, list[str]]] = [(m.initial(feeds, init), [])]
    while stack:
        st, sched = stack.pop()
        k = st.key()
        if k in seen:
            continue
        seen.add(k)
        budget.tick()
        ok, held = m.enabled(st)
        if not ok:
            found.setdefault(m.outcome(st, held, observe), sched)
            continue
        local = [step for step in ok if step in m.local]
        if local:
            # a step of a node that touches no shared state (no variable,
            # queue or section) commutes with every other step and can
            # neither block nor be blocked: firing it first loses no outcome
            # and no deadlock (a persistent set of one step)
            ok = local[:1]
        for step in reversed(ok):
            stack.append((m.fire(st, step), sched + [step]))
    return found, budget.states


def random_run(m: Machine, feeds: Mapping[str, Value], init: Mapping[str, Value],
               rng: random.Random, observe: str = "outputs+state") -> tuple[AnyOutcome, list[str]]:
    """One run under a schedule chosen at random, step by step (every
    enabled step equally likely); a run that blocks ends in its deadlock."""
    st = m.initial(feeds, init)
    sched: list[str] = []
    while True:
        ok, held = m.enabled(st)
        if not ok:
            return m.outcome(st, held, observe), sched
        step = rng.choice(ok)
        sched.append(step)
        st = m.fire(st, step)


__all__ = ["Blocking", "BlockingError", "Deadlock", "Machine", "Queue", "QUEUE_OPS",
           "TF_QUEUE_OPS", "UNMODELLED", "outcomes", "program_from_json", "program_to_json",
           "random_run", "split_program_json", "has_blocking_json", "check_blocking"]
