"""The step semantics with control flow (SPEC section 9), transcribed.

This extends the reference semantics of `semantics.py` (section 3.2.1 of "A
Computational Model for TensorFlow") the way section 5 of that paper says:

    "TensorFlow maps conditionals and while loops to dataflow primitives
    [...] each node fires at most once in each execution context, where an
    execution context identifies an iteration of each (possibly nested) loop
    that contains the node."

and with the primitives of the TensorFlow whitepaper, section 4.4 ("Control
Flow"):

    "We introduce a small set of primitive control flow operators into
    TensorFlow [...] The Switch operator [...] The Merge operator [...] The
    Enter, Leave [Exit], and NextIteration operators are used to express
    iteration.  [...] the execution of different iterations [may] overlap
    [...] a tag [...] the frame and iteration [...]"

The state of section 3.2.1 (VarValue, InTransit) becomes, per execution
context:

* a *context* is a tuple ((frame, iteration), ...), outermost loop first; the
  root context () is outside every loop;
* InTransit maps (edge, context) to its content: a tensor, a variable, GO, or
  DEAD (the whitepaper's dead value: "Switch [...] forwards [...] to one of its
  outputs [...] and a dead value to the other");
* Fired records which (node, context) have fired: each fires at most once;
* Pending (decomposed mode) holds an Assign's (x, w, v) between its read and
  write steps, per (node, context);
* DeadExits records the Exits that fired dead in a loop instance (below).

Rules (each transcribed where it is implemented, in :func:`enabled_steps` and
:func:`fire_step`):

* An ordinary node (Var, Read, Assign-f, a function, Switch, Enter, Exit,
  NextIteration, LoopCond) may fire in context c when each incoming edge holds
  content in c.  If one of them holds DEAD (data or control edge), it *fires
  dead*: it consumes its inputs, puts DEAD on every outgoing edge, and has no
  other effect (a dead Assign writes nothing, a dead Read reads nothing).
* Merge may fire in c when every control input holds content (TensorFlow's
  executor ignores whether a Merge's control input is dead) and either some
  data input holds a live value, which it forwards on port 0 with its index on
  port 1 (an int32), or all data inputs hold DEAD, when it fires dead.
  TensorFlow forwards the *first* live input to arrive; the interleaving
  semantics makes that a choice: a Merge may fire as soon as one live input
  is there, and when several are, each is a possible step (the step names the
  index: `m[k]`).  Later inputs in that context are ignored.
* Switch(data, pred): pred a bool scalar; true puts data on port 1 and DEAD on
  port 0, false the other way round.  A pred that is an error value (an
  uninitialized variable, say) or not a bool scalar puts DEAD on both ports
  (and on its control edges): TensorFlow fails the step there (the op
  computing the predicate, or the Switch itself, fails), so neither branch
  runs, and nothing that waits for the Switch has an effect.  The dead
  value carries the predicate's error (or `bad-predicate`) through what
  fires dead because of it, and a fetch of it is that error: the one
  TensorFlow fails the step with (docs/semantics.md, "An error as a
  predicate", argues this against TensorFlow's executor).
* Enter (frame F) in c puts its value in c + ((F, 0),); with is_constant the
  value is visible in every iteration of that loop instance (TensorFlow's
  loop invariants) and is never consumed.
* NextIteration in c + ((F, i),) puts its value in c + ((F, i+1),); a dead
  NextIteration puts nothing (TensorFlow stops deadness at NextIteration).
* Exit in c + ((F, i),) puts a live value in c.  A dead Exit puts nothing at
  once; when the loop instance c + F is done (every Enter of F fired in c and
  no step can fire inside the instance), each Exit that fired dead in it and
  never fired live puts DEAD in c (TensorFlow's `dead_exits`, propagated when
  the frame is deleted): so a loop in an untaken branch is dead as a whole.
* parallel_iterations (of the loop's first Enter, TensorFlow's choice):
  nothing fires in iteration j of an instance unless j < o + P, where o is the
  oldest iteration of the instance that is not done (TensorFlow starts a new
  iteration only while fewer than P are outstanding).
* LoopCond forwards its bool scalar (it marks the loop's predicate).

A run ends when nothing can fire; its outcome is the values on the output
edges in the root context (DEAD is the error value `dead`: TensorFlow fails
such a fetch; DEAD made by a failed predicate is that predicate's error; never produced, which a well-formed graph avoids, is
`not-produced`) and the variables.  A run in which a stack op failed by
its own rule failed TensorFlow's step: every output is the error of the
run's first such failure (stack_state.STEP_FAILED).

Loops: a NextIteration that would start iteration `max_iterations + 1` of a
loop raises :class:`LoopBoundExceeded` (a BudgetExceeded), which commands turn
into `unknown` naming the loop and the bound, never a truncated outcome set.

Schedules name steps `node@F:i` (nested frames joined by '/'; no suffix in the
root context), `node@F:i@read` / `@write` for a decomposed Assign, `m[k]` for
a Merge's choice among several live inputs, and `x@F:end` for a dead Exit
propagated when its loop instance is done.
"""

from __future__ import annotations

import functools
import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping, NamedTuple, Sequence

from . import functions as fns
from .budget import BudgetExceeded
from .outcomes import Outcome, make_outcome
from .program import (ASSIGN, CONTROL, ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, READ,
                      SWITCH, TENSOR, VAR, Program)
from .graph import ATOMIC, DECOMPOSED, GO, Edge, Graph, VarRef, _assigned, graph_of
from .values import UNINITIALIZED, Error, Tensor, Value, exact
from . import stack_state as stk
from .program import STACK_OPS

#: the stack ops that touch a stack made earlier (StackV2 only makes a new
#: one, which nothing else can touch before it has fired: it commutes)
_STACK_ACCESS = (stk.PUSH, stk.POP, stk.CLOSE)
#: the ops whose live steps' eagerness depends on more than the op
#: (Machine.eager): every other live step not after an Exit that may fire
#: live twice is eager
_EAGER_BY_STATE = frozenset((READ, ASSIGN, MERGE, stk.STACK) + _STACK_ACCESS)

#: the ops with a rule of their own in Machine._fire (every other op is a
#: registry function)
_RULE_OPS = frozenset((ENTER, EXIT, NEXT_ITERATION, VAR, READ, ASSIGN, SWITCH, MERGE,
                       LOOP_COND) + tuple(STACK_OPS))

#: The default iteration bound: a loop may run iterations 0..16 (16 trips
#: through its body); a run that would start iteration 17 makes the answer unknown.
DEFAULT_MAX_ITERATIONS = 16

DEAD_REASON = "dead"
NOT_PRODUCED = "not-produced"
#: the error of a fetch behind a Switch whose predicate is no bool scalar
BAD_PREDICATE = "bad-predicate"

Context = tuple  # tuple[tuple[str, int], ...]


class _Dead:
    """A dead value; `error` is the error that made it (a Switch whose
    predicate failed: TensorFlow fails the step with that error), or None."""
    __slots__ = ("error",)

    def __init__(self, error: "Error | None" = None) -> None:
        self.error = error

    def __repr__(self) -> str:
        return "DEAD" if self.error is None else f"DEAD({self.error.reason})"


#: The whitepaper's dead value.
DEAD = _Dead()
_FAILED: dict[str, _Dead] = {}


def failed_dead(error: "Error") -> _Dead:
    """The dead value a Switch with the error predicate `error` puts on its
    ports: dead (nothing waiting for it runs), and a fetch of it is `error`,
    the error TensorFlow fails the step with (one object per reason, so that
    states compare and hash as before)."""
    d = _FAILED.get(error.reason)
    if d is None:
        d = _FAILED[error.reason] = _Dead(error)
    return d


def _is_dead(c: object) -> bool:
    return isinstance(c, _Dead)


def _dead_of(contents) -> _Dead:
    """The dead value a node with these inputs puts out when it fires dead:
    the first failed predicate's, else DEAD."""
    for c in contents:
        if isinstance(c, _Dead) and c.error is not None:
            return c
    return DEAD


#: The results of registry functions by (op, attributes, inputs), kept
#: across runs, σ and programs (at most _APPLIED_MAX; all dropped when full).
#: A registry function is a function of its op, attributes and inputs (no
#: state, no randomness: SPEC section 2, oracle/functions.py; the kernels it
#: may run on TensorFlow run with op determinism on), so a result remembered
#: is the result.  Keys are exact: a tensor by its dtype, shape and raw bytes
#: (not by tensor equality, which equates NaNs of different payloads), an
#: error by its reason, attributes by their exact values (floats by their
#: bits, arrays by dtype, shape and bytes); an input or attribute of any
#: other kind (a TensorList, a handle) is not remembered.  Grappler's
#: rewrites of keras_gru_loop leave its loops as they were: P' evaluates the
#: loop's body on the values P evaluated it on at the same σ.  (Whether
#: TensorFlow's kernels may run is part of the key, and the function object:
#: a hit must be the function registered now.  An application whose inputs
#: or results pass _APPLIED_ENTRY_BYTES is not remembered.  An entry keeps
#: the kernels the application ran, which a hit notes again: the verdict
#: names the kernels its outcomes rest on, kernels.record.)
_APPLIED: dict = {}
#: (4096 until this round: one σ of a Keras loop graph makes about 300
#: distinct applications, so one original's 11 σ and its rewrites' filled
#: it within a graph's checks, and once emptied, a later rewrite's run at
#: a σ the original ran in an earlier check found its values in the slower
#: memo of applications (oracle/applications.py, about 14 µs a hit): 7,700
#: such trips in one pass over the four control-flow graphs' checks, and
#: their no-counterexample checks' CPU 1.99 s against 1.68 s at 32,768,
#: medians of three alternating runs.  The bytes kept are still bounded by
#: _APPLIED_MAX_BYTES; which entries are kept changes no answer)
_APPLIED_MAX = 32768
#: bytes of inputs and results kept at most, in all and per entry (a larger
#: application is not remembered)
_APPLIED_MAX_BYTES = 64 << 20
_APPLIED_ENTRY_BYTES = 1 << 20
_APPLIED_BYTES = 0
_NO_KEY = object()
#: a Merge's value_index by its choice (`Machine._fire`)
_VALUE_INDEX: dict = {}
#: the kernels of an application that evaluated none (`Machine.apply_function`)
_NO_KERNELS: frozenset = frozenset()
#: the implementation of the registry's Identity (`Machine.apply_function`)
_IDENTITY_IMPL = fns.get("Identity").impl


def _value_key(v: object):
    if type(v) is Tensor:
        a = v.array
        # (a large input is not copied to make a key: not remembered)
        return (v.dtype, a.shape, a.tobytes()) if a.nbytes <= _APPLIED_ENTRY_BYTES else None
    if type(v) is Error:
        return ("error", v.reason)
    return None


def _arg_key(dtype: str, shape: tuple, raw: bytes) -> frozenset:
    """A tensor argument's part of an application's key in :data:`_APPLIED`:
    its `_value_key` (dtype, shape, raw bytes) as the one element of a
    frozenset, which keeps its hash (as `_node_key`).  Equal exactly when
    the value keys are (sets of one element each): the memo's keys are
    equal exactly when they were."""
    return frozenset(((dtype, shape, raw),))


#: The argument key (`_arg_key`) of each tensor that is a result of an
#: entry of :data:`_APPLIED`, by the tensor's id: (the tensor, its key, its
#: bytes).  A remembered application's results are the very objects later
#: steps take as arguments (the rewrite's run at the σ the original just
#: ran, a loop's next iteration), and each was copied to bytes and hashed
#: again to be looked up.  A tensor is immutable (its array read-only,
#: values.Tensor), so its key is a function of the object; the entry holds
#: the tensor, so its id is not another object's while the entry lives,
#: and `got[0] is d` is checked all the same.  Emptied with _APPLIED, whose
#: entries keep these tensors alive, and at as many entries or bytes as it
#: may hold (a caller that empties _APPLIED alone, as tests do, leaves it
#: bounded)
_ARG_KEYS: dict = {}
_ARG_BYTES = 0


#: Applications to TensorLists (`Machine._apply_to_lists`) by (the node's
#: key, the arguments' ids, whether TensorFlow's kernels may run): (the
#: function, the arguments, the results, the kernels it ran).  A
#: TensorList has no key by its bits here (keying one is a walk over its
#: items), so a TensorList op was applied again at every step: the Keras
#: loops' TensorArrays, a tenth of a warm replay.  But the lists a run
#: makes come from remembered applications (a TensorListReserve of
#: constants is keyed by its tensors), and each next list from the last
#: one and tensors that are themselves remembered results: the rewrite's
#: run at the σ the original just ran takes the very objects the
#: original's run took.  Why an answer found here is the answer: a
#: registry function is a function of its op, attributes and arguments
#: (:data:`_APPLIED`); the node key names the op, the function object and
#: the attributes' exact key; the arguments are the very objects of the
#: entry (checked by `is`, each held by the entry so that its id is not
#: another object's while it lives), and tensors, errors and TensorLists
#: are immutable (a Tensor's array is read-only, a TensorList a frozen
#: tuple of tensors).  At most _BY_IDENTITY_MAX entries and
#: _APPLIED_MAX_BYTES of tensors held (a list's items counted in every
#: entry that holds it), emptied when full; which entries are kept changes
#: no answer
_BY_IDENTITY: dict = {}
_BY_IDENTITY_MAX = 8192
_BY_IDENTITY_BYTES = 0
#: Whether applications to TensorLists are remembered (tests turn it off)
remember_lists = True
_LIST_TYPE: list = []


def _list_type() -> type:
    """opdefs.lists.TensorList, imported when first asked for (the op
    registry imports, through the blocking engine, this module)."""
    if not _LIST_TYPE:
        from .opdefs.lists import TensorList
        _LIST_TYPE.append(TensorList)
    return _LIST_TYPE[0]


def _held_bytes(values, lists: type) -> int:
    """The bytes of the tensors in `values`, a list's items included."""
    size = 0
    for v in values:
        t = type(v)
        if t is Tensor:
            size += v.array.nbytes
        elif t is lists:
            size += sum(x.array.nbytes for x in v.items if type(x) is Tensor)
    return size


def _node_key(op: str, fn, attrs: tuple) -> frozenset:
    """The node's part of an application's key in :data:`_APPLIED`: its op,
    its function object's id and its attributes' exact key, as the one
    element of a frozenset.  A frozenset keeps its hash once computed, a
    tuple does not: the attributes' key (nested tuples, a constant's bytes)
    was hashed again at every lookup, a third of a remembered
    application's hash.  Two such keys are equal exactly when their
    elements are (sets of one element each), so the memo's keys are equal
    exactly when they were: the same answers (`_applied_key` makes the
    same key; tests/test_controlflow_engine_applications.py compares
    them)."""
    return frozenset(((op, id(fn), attrs),))


def _exact_key(v: object):
    """An exact, hashable key of an attribute value, or None."""
    import struct

    import numpy as np
    if v is None or type(v) in (bool, int, str, bytes):
        return (type(v).__name__, v)
    if type(v) is float:
        return ("float", struct.pack("<d", v))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("generic", v.dtype.str, v.tobytes())
    if type(v) is Tensor:
        # (_value_key gives None for a tensor too large to key: no key)
        k = _value_key(v)
        return None if k is None else ("tensor",) + k
    if isinstance(v, (list, tuple)):
        items = tuple(_exact_key(x) for x in v)
        return None if None in items else (type(v).__name__, items)
    if isinstance(v, dict):
        items = tuple((k, _exact_key(x)) for k, x in sorted(v.items(), key=lambda kv: repr(kv[0])))
        return None if any(x is None for _, x in items) else ("dict", items)
    return None


def _iteration_edges(p: Program, g: Graph, context: Mapping, inside) -> tuple[dict, dict]:
    """The edges within one iteration of a context: for every node v whose
    context (`context[v]`, a frame or a loop; absent: none) satisfies
    `inside`, each incoming edge from a node u of the same context, except
    from a NextIteration or an Exit (they leave the iteration) and into a
    Merge's data input.  `w` has all of them (u -> [v]), `d` those between
    two nodes that are not Merges (the deadness paths)."""
    w: dict[str, list[str]] = {}
    d: dict[str, list[str]] = {}
    for v in p.nodes:
        c = context.get(v.name)
        if c is None or not inside(c):
            continue
        for e in g.incoming[v.name]:
            if e.src is None or context.get(e.src[0]) != c:
                continue
            u = p.node[e.src[0]]
            if u.op in (NEXT_ITERATION, EXIT) or (v.op == MERGE and e.kind != CONTROL):
                continue
            w.setdefault(u.name, []).append(v.name)
            if v.op != MERGE and u.op != MERGE:
                d.setdefault(u.name, []).append(v.name)
    return w, d


def _reached(p: Program, starts, graph: Mapping[str, list[str]]) -> set:
    """The nodes reached from `starts` along `graph`'s edges, not going on
    past a NextIteration or an Exit (which leave the iteration)."""
    seen, todo = set(starts), list(starts)
    while todo:
        u = todo.pop()
        if p.node[u].op in (NEXT_ITERATION, EXIT):
            continue
        for v in graph.get(u, ()):
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


def _closures(p: Program):
    """`_reached` of program `p`, each (starts, graph) computed once for the
    analysis that makes this function (`Machine._after_multi_exit`,
    `Machine._loop_chains`).  Those asked for the same closure again and
    again (the closure of each Merge of a chain once per Switch of the
    frame, of each access once per chain: 4,800 and 4,100 walks over the
    six control-flow graphs' programs, a fifth of a Machine's analyses).
    `_reached` is a function of `p`, the starts and the graph's edges; a
    graph is a dict the analysis builds and keeps unchanged while it runs,
    held here with its key so that its id is not reused, and no caller
    changes a closure it is given (they test membership and iterate)."""
    memo: dict = {}

    def closure(starts, graph) -> set:
        key = (tuple(starts), id(graph))
        got = memo.get(key)
        if got is None or got[0] is not graph:
            got = memo[key] = (graph, _reached(p, starts, graph))
        return got[1]
    return closure


def _port_starts(p: Program, g: Graph, sw: str, port: int, context: Mapping) -> list[str]:
    """The consumers of the Switch `sw`'s data output `port` in sw's own
    context (`context`: node name -> its frame or loop), Merges left out."""
    return [e.dst[0] for e in g.outgoing[sw] if e.kind != CONTROL and e.src == (sw, port)
            and e.dst is not None and context.get(e.dst[0]) == context[sw]
            and p.node[e.dst[0]].op != MERGE]


class LoopBoundExceeded(BudgetExceeded):
    """A run reached the iteration bound of a loop."""

    def __init__(self, frame: str, bound: int, explored: int = 0):
        super().__init__("iterations", bound, explored)
        self.frame = frame
        self.args = (f"budget exceeded: loop iterations (loop {frame!r} reached the iteration "
                     f"bound of {bound}; raise --max-iterations)",)


def context_text(ctx: Context) -> str:
    return "/".join(f"{f}:{i}" for f, i in ctx)


class Step(NamedTuple):
    """One step of the rules: a node in a context (a named tuple: made by
    the ten thousand per run, it costs a fifth of a frozen dataclass)."""
    node: str
    ctx: Context
    phase: str = ""        # "", "read", "write" (decomposed Assign), "end" (dead Exit)
    choice: int = -1       # a Merge's live input, or -1
    dead: bool = False

    def label(self, show_choice: bool = False) -> str:
        text = self.node
        if self.phase == "end":
            outer = context_text(self.ctx[:-1])
            return f"{text}@{outer + '/' if outer else ''}{self.ctx[-1][0]}:end"
        if self.ctx:
            text += "@" + context_text(self.ctx)
        if self.phase in ("read", "write"):
            text += "@" + self.phase
        if show_choice and self.choice >= 0:
            text += f"[{self.choice}]"
        return text


@dataclass
class CFState:
    """A state of the rules above.  To every caller of :meth:`Machine.fire_step`
    a state is a value: firing returns a new one.  `behaviours` alone
    advances a state in place (:meth:`Machine.advance`), where it holds the
    only reference to it: a state popped from its stack has one successor
    on a run without a choice, and at a choice every successor but one is
    fired from a copy (:meth:`copy`) taken before the state itself becomes
    that one (docs/checking-control-flow.md, "The engine's concrete runs").  Copying the state at every step made
    each step cost the size of the state: the set of fired (node, context)
    pairs grows to the length of the run (4,000 on keras_gru_loop), so a run
    was quadratic in its length."""
    var_value: dict
    tokens: dict                                       # (edge id, context) -> content
    fired: set                                         # of (node, context)
    started: set                                       # contexts that exist
    pending: dict = field(default_factory=dict)        # (node, context) -> (x, w, v)
    dead_exits: set = field(default_factory=set)       # of (exit node, outer ctx, frame)
    #: the (node, context) pairs that may have a step, each with its steps
    #: or None when not known (Machine._candidates), kept from state to
    #: state; not part of the state (key, equality)
    cand: object = field(default=None, compare=False, repr=False)

    def copy(self) -> "CFState":
        """An equal state sharing no mutable part with this one (values,
        contexts and steps are immutable and shared)."""
        return CFState(dict(self.var_value), dict(self.tokens), set(self.fired),
                       set(self.started), dict(self.pending), set(self.dead_exits),
                       None if self.cand is None else dict(self.cand))

    def key(self) -> tuple:
        """The state as a hashable value: two states with equal keys are
        equal.  (Sets of items, not lists sorted by repr: each mapping has
        unique keys, so its set of items determines it, and every content is
        hashable; printing tensors to sort them took half of a run's time on
        real graphs.)  Values by their exact bits (values.exact: NaNs of
        different payloads are different states, since a later step may
        show the bits; docs/semantics.md "NaN payloads")."""
        return (frozenset(map(_exact_item, self.var_value.items())),
                frozenset(map(_exact_item, self.tokens.items())),
                frozenset(self.fired), frozenset(self.started),
                frozenset(map(_exact_pending, self.pending.items())), frozenset(self.dead_exits))


def _exact_item(kv: tuple) -> tuple:
    return kv[0], exact(kv[1])


def _exact_pending(kv: tuple) -> tuple:
    k, v = kv
    return (k, v) if v is None else (k, (v[0], exact(v[1]), exact(v[2])))


class Machine:
    """The rules above for one program (its graph and static frames)."""

    #: whether :meth:`lone_access` may make an access eager (tests turn it off)
    lone_accesses = True
    #: whether `behaviours` fires every eager step of a state in a row before
    #: finding the steps again (tests turn it off).  Why that fires only
    #: eager steps of the state it is at: each step x of the batch was
    #: eager at s, and firing other steps that are not dead-exit steps keeps
    #: it enabled, in the window and eager.  Enabled: its inputs stay until
    #: x itself consumes them (a constant Enter's never go), so it is the
    #: same step (dead or live, the same Merge input).  Eager: a function,
    #: a dead step, a StackV2 are so by their inputs; a Merge by its inputs
    #: all being there with one live; a lone access by `fired` (which only
    #: grows) and static facts.  In the window: a step in iteration i of an
    #: instance is in it while i < oldest + parallel_iterations, and no step
    #: but a dead exit lowers `oldest`: an iteration j before it has no step
    #: in it or under it, and only a step in j or under it, a NextIteration
    #: of j - 1 (before `oldest` too) or an Enter of the instance (all fired
    #: when `oldest` > 0) writes a token in j; a dead exit's step writes
    #: into the context around a finished inner instance, which may be such
    #: a j, so those fire one at a time as before.  Each step of a batch is
    #: thus an eager step of the state it fires from, which the reduction
    #: allows; its label is its own (an eager step is the only step of its
    #: node and context).
    batch_eager = True
    #: whether registry functions' results are remembered (:data:`_APPLIED`;
    #: tests turn it off)
    remember_functions = True
    #: whether `behaviours` fires a step into the state it fires from (the
    #: state has no other reference there: see CFState) rather than into a
    #: copy (tests turn it off: every step copies, as :meth:`fire_step` does)
    in_place = True
    #: whether `behaviours`, after a batch of eager steps, goes on firing the
    #: steps those firings enabled, each while it is eager at the state it
    #: fires from, before finding the state's steps again (:meth:`chain`;
    #: tests turn it off)
    chain_eager = True
    #: steps a chain fires between two readings of the clock (about as
    #: often as `behaviours` reads it: every 16 states)
    chain_clock_steps = 256

    def __init__(self, p: Program, g: Graph, semantics: str = ATOMIC,
                 max_iterations: int = DEFAULT_MAX_ITERATIONS):
        if semantics not in (ATOMIC, DECOMPOSED):
            raise ValueError(f"unknown semantics {semantics!r}")
        self.p, self.g, self.semantics, self.bound = p, g, semantics, max_iterations
        self.frames = p.frames
        self.enters: dict[tuple[tuple[str, ...], str], list[str]] = {}
        self.parallel: dict[str, int] = frame_parallel_iterations(p)
        for n in p.nodes:
            if n.op == ENTER:
                f = n.attrs["frame_name"]
                self.enters.setdefault((self.frames[n.name], f), []).append(n.name)
        self.constant_enter = {n.name for n in p.nodes
                               if n.op == ENTER and n.attrs.get("is_constant")}
        self.explored = 0
        self.enter_edges = {e.id for n in p.nodes if n.op == MERGE for e in g.incoming[n.name]
                            if e.src is not None and e.src[0] in p.node
                            and p.node[e.src[0]].op == ENTER
                            and e.src[0] not in self.constant_enter}
        self.back_edges = {e.id for n in p.nodes if n.op == MERGE
                           for e, i in zip(g.incoming[n.name], n.inputs) if p.is_back_edge(n.name, i)}
        # the index of :meth:`_raw_steps` (see there)
        self._dst = {e.id: e.dst[0] for e in g.edges if e.dst is not None}
        self._const_edges = {e.id for e in g.edges
                             if e.src is not None and e.src[0] in self.constant_enter}
        self._always = {n.name for n in p.nodes if n.op == MERGE or not g.incoming[n.name]}
        # the nodes all of whose incoming edges come from constant Enters
        # (the others: :meth:`_token_candidates`)
        self._const_only = {n.name for n in p.nodes if n.op != MERGE and g.incoming[n.name]
                            and all(e.id in self._const_edges for e in g.incoming[n.name])}
        self._frame_of = {n.name: tuple(self.frames.get(n.name, ())) for n in p.nodes}
        # `_always` and `_const_edges` by the frames of the node (of the
        # edge's destination), for :meth:`_next_candidates`
        self._always_in: dict[tuple, list[str]] = {}
        for n in p.nodes:
            if n.name in self._always:
                self._always_in.setdefault(self._frame_of[n.name], []).append(n.name)
        self._const_edges_in: dict[tuple, list[str]] = {}
        for e in g.edges:
            if e.id in self._const_edges and e.dst is not None:
                self._const_edges_in.setdefault(self._frame_of[e.dst[0]], []).append(e.id)
        self._index = {n.name: i for i, n in enumerate(p.nodes)}
        self._written: list = []
        self._new_contexts: list = []
        # the (node, context) pairs the last step made candidates again
        # (:meth:`_next_candidates`), which :meth:`chain` tries
        self._touched: list = []
        self._attr_keys: dict = attr_keys(p)
        self._kernels_on: bool | None = None
        # What the rules look up at every step, by node and by edge, computed
        # once (the steps read these tables instead of the graph's Edge
        # objects: :meth:`_pair_steps`, :meth:`_fire`,
        # :meth:`_token_candidates`).  Each incoming edge as (id, from a
        # constant Enter, control, back edge into a Merge, edge from a
        # non-constant Enter into a Merge), in input order:
        self._op = {n.name: n.op for n in p.nodes}
        # the nodes whose live step applies a registry function (`_fire`'s
        # first case: every op the rules do not name)
        self._plain = frozenset(n.name for n in p.nodes if n.op not in _RULE_OPS)
        self._switches = frozenset(n.name for n in p.nodes if n.op == SWITCH)
        # each node's registry function, found once and kept while every
        # op's registry function is the one found (`initial`)
        self._fn: dict = {}
        self._fn_held: "tuple | None" = None
        self._fn_by_op: dict = {}
        self._in = {n.name: tuple((e.id, e.id in self._const_edges, e.kind == CONTROL,
                                   e.id in self.back_edges, e.id in self.enter_edges)
                                  for e in g.incoming[n.name]) for n in p.nodes}
        # outgoing edges: data edges by port, control edges, all (graph order)
        self._out_port: dict[str, dict[int, tuple[str, ...]]] = {}
        for n in p.nodes:
            ports: dict[int, list[str]] = {}
            for e in g.outgoing[n.name]:
                if e.kind != CONTROL and e.src is not None and e.src[0] == n.name:
                    ports.setdefault(e.src[1], []).append(e.id)
            self._out_port[n.name] = {k: tuple(v) for k, v in ports.items()}
        self._out_control = {n.name: tuple(e.id for e in g.outgoing[n.name] if e.kind == CONTROL)
                             for n in p.nodes}
        self._out_all = {n.name: tuple(e.id for e in g.outgoing[n.name]) for n in p.nodes}
        # an edge into a node: (its node, the node's frames, from a constant
        # Enter, the node's every edge from constant Enters)
        self._edge_dst = {e.id: (e.dst[0], self._frame_of[e.dst[0]], e.id in self._const_edges,
                                 e.dst[0] in self._const_only)
                          for e in g.edges if e.dst is not None}
        # a context's frames (contexts are few: remembered as they come)
        self._ctx_frames: dict[Context, tuple[str, ...]] = {(): ()}
        # whether each iteration of a context is below its loop's
        # parallel_iterations (:meth:`enabled_steps`), and steps' labels
        self._early: dict[Context, bool] = {}
        self._labels: dict[tuple, str] = {}

    # -- contents -----------------------------------------------------------

    def _key(self, e: Edge, ctx: Context) -> tuple[str, Context]:
        """Where the content of edge e for context ctx lives: a constant
        Enter's value lives in iteration 0 and is seen by every iteration."""
        if e.src is not None and e.src[0] in self.constant_enter and ctx:
            return (e.id, ctx[:-1] + ((ctx[-1][0], 0),))
        return (e.id, ctx)

    def content(self, s: CFState, e: Edge, ctx: Context) -> object:
        return s.tokens.get(self._key(e, ctx))

    def _frames(self, ctx: Context) -> tuple[str, ...]:
        """The frames of context `ctx`, outermost first."""
        got = self._ctx_frames.get(ctx)
        if got is None:
            got = self._ctx_frames[ctx] = tuple(f for f, _ in ctx)
        return got

    def _contexts_of(self, s: CFState, name: str) -> list[Context]:
        want = self.frames.get(name, ())
        return [c for c in s.started if tuple(f for f, _ in c) == want]

    # -- enabled steps -------------------------------------------------------

    def _raw_steps(self, s: CFState) -> list[Step]:
        """The steps whose inputs are there, before the parallel_iterations
        window: :meth:`_raw_steps_of` on the (node, context) pairs that may
        have a step, found from the tokens in transit instead of trying
        every node in every context.

        Why none is missed: a node other than a Merge with an incoming edge
        has a step in ctx only when every incoming edge holds content in
        ctx, so in particular its first one does: a token (e, k) with
        k = _key(e, ctx), which is ctx itself, or, for an edge from a
        constant Enter, iteration 0 of ctx's innermost loop instance (then
        every context of that instance with the node's frames is a
        candidate).  A node with no incoming edge and every Merge (which may
        fire dead on edges that count as dead without a token) are tried in
        every context of their frames, as the transcription does; a pending
        decomposed write is a candidate.  The candidates are tried in the
        transcription's order (nodes in program order, contexts in the
        order of `s.started`), so the steps are the same list:
        tests/test_controlflow_engine_speed.py compares the two on every
        state of generated runs."""
        cand = s.cand if s.cand is not None else self._candidates(s)
        started = s.started
        kept: dict = {}
        by_node: dict[str, list] = {}
        for pair, got in cand.items():
            if pair[1] not in started:
                kept[pair] = None
                continue
            if got is None:
                got = self._pair_steps(s, pair[0], pair[1])
            if got:
                kept[pair] = got
                by_node.setdefault(pair[0], []).append(pair[1])
        # only the pairs with a step stay candidates, with their steps: a
        # pair's steps change only when a token is written on one of its
        # edges, its context is started or it fires (tokens stay until
        # their node fires, and a step's inputs being there is monotone in
        # them), and :meth:`_next_candidates` marks those pairs again
        object.__setattr__(s, "cand", kept)
        index = self._index
        order: dict = {}
        steps: list[Step] = []
        for name in sorted(by_node, key=index.__getitem__):
            cs = by_node[name]
            if len(cs) > 1:   # (in the order of s.started, as the transcription)
                if not order:
                    order.update((c, i) for i, c in enumerate(started))
                cs.sort(key=order.__getitem__)
            for c in cs:
                steps.extend(kept[(name, c)])
        return steps

    def _candidates(self, s: CFState) -> dict:
        """The (node, context) pairs that may have a step in `s` (see
        :meth:`_raw_steps`), computed from the whole state (each mapped to
        None: its steps are not known yet)."""
        fired, pending = s.fired, s.pending
        out: dict = {}

        def add(pair) -> None:
            if pair not in fired or pair in pending:
                out[pair] = None
        contexts = list(s.started)
        for name in self._always:
            want = self._frame_of[name]
            for c in contexts:
                if len(c) == len(want) and tuple(f for f, _ in c) == want:
                    add((name, c))
        for (eid, k) in s.tokens:
            self._token_candidates(eid, k, contexts, add)
        for pair in s.pending:
            out[pair] = None
        return out

    def _token_candidates(self, eid: str, k: Context, contexts, add, written: bool = False) -> None:
        """The pairs a token on edge `eid` in context `k` may enable
        (`written`: the token was just written)."""
        info = self._edge_dst.get(eid)
        if info is None:
            return
        dst, want, const, const_only = info
        if const and k:
            if not const_only and not written:
                # (dst has an edge from elsewhere, which must hold a token
                # too: dst becomes a candidate with that token, or when this
                # one is written if it comes last)
                return
            outer, frame, depth = k[:-1], k[-1][0], len(want)
            for c in contexts:
                if len(c) == depth and c[:-1] == outer and c[-1][0] == frame \
                        and self._frames(c) == want:
                    add((dst, c))
        elif self._frames(k) == want:
            add((dst, k))

    def _next_candidates(self, base: dict, st: Step, s2: CFState) -> dict:
        """The candidates of s2, the state after step `st`, from `base`, those
        of the state before it (updated in place and returned): the pair
        that fired leaves (unless a decomposed write is pending), and the
        pairs every token written by the step may enable, and, for each
        context the step started, every Merge and input-less node of its
        frames and every consumer of a constant Enter's value there come
        in.  (A pair is enabled only through a token on one of its edges, a
        new context, or a pending write: nothing else can make one; the
        tests compare the steps with the transcription's on every state.)"""
        fired, pending = s2.fired, s2.pending
        out = base
        out.pop((st.node, st.ctx), None)
        touched = self._touched = []

        def add(pair) -> None:   # (steps to be found again)
            if pair not in fired or pair in pending:
                out[pair] = None
                touched.append(pair)
        if (st.node, st.ctx) in pending:
            out[(st.node, st.ctx)] = None
            touched.append((st.node, st.ctx))
        contexts = s2.started
        tokens = s2.tokens
        edge_dst, ctx_frames = self._edge_dst, self._ctx_frames
        for token in self._written:
            if token in tokens:
                eid, k = token
                info = edge_dst.get(eid)
                if info is None:
                    continue
                if info[2] and k:   # (from a constant Enter, inside a loop)
                    self._token_candidates(eid, k, contexts, add, written=True)
                    continue
                # (`_token_candidates`'s other case, inline)
                frames = ctx_frames.get(k)
                if frames is None:
                    frames = self._frames(k)
                if frames == info[1]:
                    add((info[0], k))
        for c in self._new_contexts:
            frames = tuple(f for f, _ in c)
            # (the Merges and input-less nodes of c's frames, and the edges
            # from constant Enters into nodes of c's frames: the nodes of
            # other frames never have a step in c)
            for name in self._always_in.get(frames, ()):
                add((name, c))
            zero = c[:-1] + ((c[-1][0], 0),)
            for eid in self._const_edges_in.get(frames, ()):
                if (eid, zero) in tokens:
                    self._token_candidates(eid, zero, [c], add)
        return out

    def _raw_steps_reference(self, s: CFState) -> list[Step]:
        """The transcription: every node tried in every context of its frames."""
        return self._raw_steps_of(s, ((n, self._contexts_of(s, n.name)) for n in self.p.nodes))

    def _pair_steps(self, s: CFState, name: str, ctx: Context) -> tuple:
        """:meth:`_raw_steps_of` for the one pair (name, ctx), read from the
        node's edge table (`_in`): the same steps in the same order
        (tests/test_controlflow_engine_speed.py compares `_raw_steps`, made
        of these, with the transcription on every state of generated runs)."""
        pair = (name, ctx)
        if pair in s.fired:
            return (Step(name, ctx, "write"),) if pair in s.pending else ()
        tokens = s.tokens
        inner = ctx[:-1] + ((ctx[-1][0], 0),) if ctx else ctx
        op = self._op[name]
        if op != MERGE:
            dead = False
            for eid, const, _control, _back, _enter in self._in[name]:
                c = tokens.get((eid, inner if const else ctx))
                if c is None:
                    return ()
                if isinstance(c, _Dead):
                    dead = True
            phase = "read" if (self.semantics == DECOMPOSED and op == ASSIGN and not dead) else ""
            return (Step(name, ctx, phase, dead=dead),)
        # a Merge (the rule of :meth:`_raw_steps_of`)
        data = []
        first = ctx[-1][1] == 0 if ctx else False
        later = ctx[-1][1] > 0 if ctx else False
        for eid, const, control, back, enter in self._in[name]:
            c = tokens.get((eid, inner if const else ctx))
            if control:
                if c is None:
                    return ()
                continue
            data.append(DEAD if (back and first) or (enter and later) else c)
        live = [k for k, c in enumerate(data) if c is not None and not isinstance(c, _Dead)]
        if live:
            return tuple(Step(name, ctx, choice=k) for k in live)
        if all(isinstance(c, _Dead) for c in data):
            return (Step(name, ctx, dead=True),)
        return ()

    def _raw_steps_of(self, s: CFState, pairs) -> list[Step]:
        """The steps whose inputs are there, among (node, its contexts) `pairs`."""
        steps: list[Step] = []
        tokens, const = s.tokens, self._const_edges
        for n, contexts in pairs:
            for ctx in contexts:
                if (n.name, ctx) in s.fired:
                    if (n.name, ctx) in s.pending:
                        steps.append(Step(n.name, ctx, "write"))
                    continue
                incoming = self.g.incoming[n.name]
                if n.op != MERGE:
                    # (a first input not there yet ends the test: the waiting
                    # node has no step; the same keys as `content`)
                    inner = ctx[:-1] + ((ctx[-1][0], 0),) if ctx else ctx
                    if any((e.id, inner if e.id in const else ctx) not in tokens
                           for e in incoming):
                        continue
                contents = [self.content(s, e, ctx) for e in incoming]
                if n.op == MERGE:
                    # "A merge node is ready if all control inputs have arrived and
                    # either a) a live data input becomes available or b) all data
                    # inputs are dead" (TensorFlow's executor)
                    if any(c is None for e, c in zip(incoming, contents) if e.kind == CONTROL):
                        continue
                    # a back edge (from NextIteration) never carries anything into
                    # iteration 0: it counts as dead there, so that a loop whose
                    # Enters are dead is dead as a whole (see docs/semantics.md)
                    # likewise an edge from a (non-constant) Enter carries nothing
                    # into iterations after the first
                    data = [DEAD if (e.id in self.back_edges and ctx and ctx[-1][1] == 0)
                            or (e.id in self.enter_edges and ctx and ctx[-1][1] > 0) else c
                            for e, c in zip(incoming, contents) if e.kind != CONTROL]
                    live = [k for k, c in enumerate(data) if c is not None and not _is_dead(c)]
                    if live:
                        steps.extend(Step(n.name, ctx, choice=k) for k in live)
                    elif all(_is_dead(c) for c in data):
                        steps.append(Step(n.name, ctx, dead=True))
                    continue
                if any(c is None for c in contents):
                    continue
                dead = any(_is_dead(c) for c in contents)
                phase = "read" if (self.semantics == DECOMPOSED and n.op == ASSIGN
                                   and not dead) else ""
                steps.append(Step(n.name, ctx, phase, dead=dead))
        return steps

    def eager(self, s: CFState, st: Step) -> bool:
        """A step that touches no variable, makes no choice and stays enabled
        until it fires: it commutes with every other step, so firing it first
        loses no terminal state (a partial-order reduction; the brute force
        in tests/test_controlflow_bruteforce.py checks it)."""
        if st.phase == "end":
            return True
        if st.node in self._after_multi_exit:
            return False
        if st.dead:
            return True
        op = self._op[st.node]
        if op not in _EAGER_BY_STATE:   # (a function or a frame node: eager by its kind)
            return True
        if op in (READ, ASSIGN):
            return self.lone_access(s, st)
        if op in _STACK_ACCESS:
            return False
        if op == stk.STACK:
            # a StackV2 commutes unless it fails (a max_size that is no int32
            # scalar): its failure is the step's, and which failure of the run
            # comes first is an outcome (stk.STEP_FAILED)
            e = next(e for e in self.g.incoming[st.node] if e.kind != CONTROL)
            size = self.content(s, e, st.ctx)
            return isinstance(size, Error) or (isinstance(size, Tensor) and size.dtype == "int32"
                                               and size.shape == ())
        if op != MERGE:
            return True
        incoming = self.g.incoming[st.node]
        data = [self.content(s, e, st.ctx) for e in incoming if e.kind != CONTROL]
        ids = [e.id for e in incoming if e.kind != CONTROL]
        ctx = st.ctx
        known = [DEAD if (i in self.back_edges and ctx and ctx[-1][1] == 0)
                 or (i in self.enter_edges and ctx and ctx[-1][1] > 0) else c
                 for i, c in zip(ids, data)]
        return all(c is not None for c in known) and sum(not _is_dead(c) for c in known) == 1

    @functools.cached_property
    def _eager_by_kind(self) -> frozenset:
        """The nodes each of whose steps is eager whatever the state
        (:meth:`eager`): not after an Exit that may fire live twice, and
        of an op whose live steps are eager by its kind (a function or a
        frame node); their dead steps are eager too."""
        multi = self._after_multi_exit
        return frozenset(n.name for n in self.p.nodes
                         if n.op not in _EAGER_BY_STATE and n.name not in multi)

    @functools.cached_property
    def _after_multi_exit(self) -> frozenset:
        """The Exits that may fire live more than once in one loop instance
        and the nodes with an incoming edge from one: none of their steps
        is eager.

        Each live firing of an Exit X in iteration k of an instance puts its
        value on X's edges in the context around it, replacing the value
        put there by a firing in another iteration if no consumer took it
        yet.  So a consumer enabled by X's first value does not stay the
        same step: it may fire on the value of a later iteration (an Exit
        of `body`, live in every trip: `out` of it is 0 or 1 after two
        trips; firing `out` at once lost 1, firing X's second firing at
        once lost 0: tests/test_controlflow_engine_exits.py).

        X fires live at most once per instance when it is dead whenever
        port 0 of a Switch S is (a deadness path from S's port 0, as in
        `_loop_chains`: every node on it fires dead when its input on the
        path is), and some chain of the loop stops with S's predicate: a
        Merge M of X's frame fed by one non-constant Enter of the loop and
        one back edge from a NextIteration N, a Switch S' that waits for M
        in the same iteration and has the same predicate source as S, and
        N dead whenever port 1 of S' is.  Then X live at iteration k means
        S(k) saw the predicate false, so S'(k), if it fires, forwards to
        port 0 or fires dead: N(k) fires dead or never, puts nothing into
        iteration k + 1, and M(k + 1) never fires (its Enter edge counts as
        dead after iteration 0, its back edge carries nothing): no S'(k+1),
        and by induction nothing of M's chain after k.  Iteration j > k of
        the instance is started only by a NextIteration of k; then M(j)
        waits for N(j - 1), ..., N(k): it never fires, nor S'(j), but S(j)
        could if it does not wait for M: so S must wait for M too (a
        waits-for path inside the frame), and X(j) waits for S(j).  For
        j < k: X(j) live would mean the predicate false at j and no
        iteration j + 1.  Standard while loops (tf.while_loop, Keras's)
        have every Exit on port 0 of a Switch on the loop's LoopCond, and a
        counter chain on that LoopCond."""
        p, g = self.p, self.g
        fr = self._frame_of
        w, d = _iteration_edges(p, g, fr, bool)
        closure = _closures(p)

        def port_starts(sw: str, port: int) -> list[str]:
            return _port_starts(p, g, sw, port, fr)

        def pred_of(sw: str):
            # (the node putting the predicate: one value per context, so
            # not an Exit of an inner loop, which may put one per trip)
            e = [e for e in g.incoming[sw] if e.kind != CONTROL]
            return e[1].src if len(e) == 2 and e[1].src is not None \
                and p.node[e[1].src[0]].op != EXIT else None

        # (predicate source, frames) -> the Merges whose chain stops with it
        stops: dict[tuple, set] = {}
        for m in p.nodes:
            if m.op != MERGE or not fr[m.name]:
                continue
            frames = fr[m.name]
            ins = [e for e in g.incoming[m.name] if e.kind != CONTROL]
            if len(ins) != 2 or any(e.src is None for e in ins):
                continue
            srcs = [p.node[e.src[0]] for e in ins]
            enter = [n for n in srcs if n.op == ENTER and n.attrs.get("frame_name") == frames[-1]
                     and not n.attrs.get("is_constant") and fr[n.name] == frames[:-1]]
            nexts = [n for n in srcs if n.op == NEXT_ITERATION and fr[n.name] == frames]
            if len(enter) != 1 or len(nexts) != 1:
                continue
            reach = closure([m.name], w)
            for sw in reach:
                if p.node[sw].op == SWITCH and fr[sw] == frames and pred_of(sw) is not None \
                        and nexts[0].name in closure(port_starts(sw, 1), d):
                    stops.setdefault((pred_of(sw), frames), set()).add(m.name)
        once = set()
        for sw in p.nodes:
            if sw.op != SWITCH or not fr[sw.name]:
                continue
            ms = stops.get((pred_of(sw.name), fr[sw.name]), ())
            if not any(sw.name in closure([m], w) for m in ms):
                continue
            once.update(x for x in closure(port_starts(sw.name, 0), d) if p.node[x].op == EXIT)
        multi = [n.name for n in p.nodes if n.op == EXIT and n.name not in once]
        return frozenset(multi).union(e.dst[0] for x in multi for e in g.outgoing[x]
                                      if e.dst is not None)

    # -- accesses that commute with everything left (a partial-order reduction) --

    def _access_index(self) -> None:
        """The static facts :meth:`lone_access` needs, computed once: the
        variables each Read and Assign may touch (its handle traced back
        through Switch, Merge, Enter, Exit and NextIteration to Var nodes;
        the rule is off for the whole program when one cannot be traced, or
        when it has stacks), the accesses each one conflicts with (same
        variable, one of the two an Assign), and, for each access outside
        every loop, the accesses outside every loop that wait for it."""
        p, g = self.p, self.g
        self._por = self.lone_accesses and not p.has_stacks
        self._vars: dict[str, frozenset] = {}
        access = [n for n in p.nodes if n.op in (READ, ASSIGN)]

        def traced(name: str, port: int, seen: set) -> "frozenset | None":
            n = p.node.get(name)
            if n is None:
                return None
            if n.op == VAR:
                return frozenset((n.var,))
            if n.op not in (SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION) or name in seen \
                    or (n.op == MERGE and port == 1):
                return None if name not in seen else frozenset()
            seen.add(name)
            ins = n.data_inputs if n.op == MERGE else n.data_inputs[:1]
            out: set = set()
            for i in ins:
                if not hasattr(i, "node"):
                    return None
                got = traced(i.node, i.port, seen)
                if got is None:
                    return None
                out |= got
            return frozenset(out)

        for n in access:
            first = n.data_inputs[0] if n.data_inputs else None
            got = traced(first.node, first.port, set()) if hasattr(first, "node") else None
            if got is None:
                self._por = False
                return
            self._vars[n.name] = got
        self._conflicts = {a.name: [b.name for b in access if b.name != a.name
                                    and self._vars[a.name] & self._vars[b.name]
                                    and ASSIGN in (a.op, b.op)] for a in access}
        # waits-for edges between nodes outside every loop: v cannot fire in
        # the root context before u has (its content on that edge is put
        # there only by u firing in the root context), unless v is a Merge
        # and the edge one of its data inputs (a Merge waits for one live
        # data input, not all)
        # (an Enter outside every loop is such a v too; a loop's Exits are
        # joined to its Enters by `_loop_chains`)
        succ: dict[str, list[str]] = {}
        for v in p.nodes:
            if self._frame_of[v.name] or (v.op in (EXIT, NEXT_ITERATION)):
                continue
            for e in g.incoming[v.name]:
                if e.src is None or (v.op == MERGE and e.kind != CONTROL):
                    continue
                u = e.src[0]
                if self._frame_of.get(u, ()) or p.node[u].op in (ENTER, EXIT, NEXT_ITERATION):
                    continue
                succ.setdefault(u, []).append(v.name)
        self._after_loop = self._loop_chains(access, succ)
        self._after: dict[str, frozenset] = {}
        for a in access:
            if self._frame_of[a.name]:
                continue
            seen, todo = {a.name}, [a.name]
            while todo:
                for v in succ.get(todo.pop(), ()):
                    if v not in seen:
                        seen.add(v)
                        todo.append(v)
            self._after[a.name] = frozenset(seen)

    def _loop_chains(self, access, succ) -> dict[str, frozenset]:
        """For each access a inside a loop F entered from the root context
        (frames exactly (F,)), the accesses outside every loop that wait for
        every live firing of a, in any iteration.

        A chain (S, N, M, X) of F makes them: M a Merge of F whose data
        inputs are one non-constant Enter (from the root) and one back edge
        from the NextIteration N; S a Switch of F that waits for M in the
        same iteration (a waits-for path inside F); N and a dead whenever
        S's port 1 is (a *deadness path* from S's port-1 data edge: every
        node on it fires dead when its input on the path is dead -- no
        Merge, NextIteration or Exit inside it); N waits for a in the same
        iteration; the Exit X is live only when S's port 0 is (a deadness
        path from port 0).  Then any b outside every loop with a
        waits-for path from X waits for every live firing of a:

        * b fires after X's token is in the root context: X fired live in
          some iteration k, or the instance was done (nothing can fire in
          it any more: every firing of a has happened) and X's dead exit
          propagated;
        * X live at k means S(k) forwarded to port 0, so port 1 was dead at
          k: a(k) and N(k) fired dead;
        * M(i) for i > 0 fires only on N(i-1)'s live token (its Enter edge
          counts as dead after iteration 0 and carries nothing on the back
          edge otherwise), so M(k) fired means N(k-1), S(k-1), M(k-1), ...
          N(j) fired for every j < k, and N(j) waits for a(j): every a(j)
          with j < k fired before X(k);
        * no a(j) with j > k is live: S(j) waits for M(j), which needs N(j-1)
          live, ..., N(k) live, but N(k) is dead.
        So every live firing of a precedes b.  (A dead firing of a touches
        no variable: it conflicts with nothing.)

        Merges of the same shape join a loop's Enter E to its Exits in
        `succ` (the waits-for edges outside every loop, which this extends):
        M a Merge of F whose data inputs are one non-constant Enter E (from
        the root) and one back edge from the NextIteration N, with N waiting
        for M in the same iteration (a waits-for path inside F; no Switch
        is needed on it); then a node outside every loop after an Exit X of
        F that waits for M in the same iteration waits for E.  X's token in
        the root context comes from X live at some iteration k, after M(k),
        and (k > 0) M(k) fired on N(k-1)'s live token (its Enter edge counts
        as dead after iteration 0), after M(k-1), ..., after M(0), which
        waits for E (its back edge counts as dead in iteration 0, so it
        fires on E's token, live or dead); or from the dead exits when the
        instance is done, which needs every Enter of F fired.  (X need not
        wait for a Switch on M: Grappler's dependency optimizer leaves the
        Exits of a gradient loop waiting for the loop counter's Merge only
        through the loop predicate, keras_gru_loop.)"""
        p, g = self.p, self.g
        loop_of = {n.name: self._frame_of[n.name][0] for n in p.nodes
                   if len(self._frame_of[n.name]) == 1}
        entered = {n.attrs["frame_name"] for n in p.nodes
                   if n.op == ENTER and not self._frame_of[n.name]}
        inner_w, inner_d = _iteration_edges(p, g, loop_of, lambda f: f in entered)
        closure = _closures(p)

        def port_starts(sw: str, port: int) -> list[str]:
            return _port_starts(p, g, sw, port, loop_of)

        def root_after(x: str) -> set:
            starts = [e.dst[0] for e in g.outgoing[x] if e.dst is not None
                      and not self._frame_of[e.dst[0]]
                      and not (p.node[e.dst[0]].op == MERGE and e.kind != CONTROL)
                      and p.node[e.dst[0]].op not in (EXIT, NEXT_ITERATION)]
            seen, todo = set(starts), list(starts)
            while todo:
                for v in succ.get(todo.pop(), ()):
                    if v not in seen:
                        seen.add(v)
                        todo.append(v)
            return seen

        chains = []   # (frame, M, E, S, N, exits after port 0, nodes dead with port 1)
        joins = []    # (E, the Exits of F that wait for M in the same iteration)
        for m in p.nodes:
            if m.op != MERGE or loop_of.get(m.name) not in entered:
                continue
            f = loop_of[m.name]
            ins = [e for e in g.incoming[m.name] if e.kind != CONTROL]
            if len(ins) != 2 or any(e.src is None for e in ins):
                continue
            srcs = [p.node[e.src[0]] for e in ins]
            enter = [n for n in srcs if n.op == ENTER and n.attrs.get("frame_name") == f
                     and not n.attrs.get("is_constant") and not self._frame_of[n.name]]
            nexts = [n for n in srcs if n.op == NEXT_ITERATION and loop_of.get(n.name) == f]
            if len(enter) != 1 or len(nexts) != 1:
                continue
            nxt = nexts[0].name
            reach = closure([m.name], inner_w)
            if nxt in reach:
                joins.append((enter[0].name, [x for x in reach if p.node[x].op == EXIT]))
            for sw in reach:
                if p.node[sw].op != SWITCH or loop_of.get(sw) != f:
                    continue
                waiting = closure([sw], inner_w)
                if nxt not in waiting:
                    continue
                live1 = closure(port_starts(sw, 1), inner_d)
                exits = [x for x in waiting if p.node[x].op == EXIT]
                dead0 = [x for x in closure(port_starts(sw, 0), inner_d) if p.node[x].op == EXIT]
                chains.append((f, m.name, enter[0].name, sw, nxt, exits, dead0, live1))
        # the Enter -> Exit joins first (an Exit X that waits for M waits for
        # M's Enter E; `joins`) ...
        for (e, exits) in joins:
            for x in exits:
                succ.setdefault(e, []).extend(
                    d.dst[0] for d in g.outgoing[x] if d.dst is not None
                    and not self._frame_of[d.dst[0]]
                    and not (p.node[d.dst[0]].op == MERGE and d.kind != CONTROL))
        # ... then the accesses after every live firing of a loop's Read
        out: dict[str, set] = {}
        loop_access = [a.name for a in access if a.name in loop_of and loop_of[a.name] in entered]
        for (f, m, e, sw, nxt, exits, dead0, live1) in chains:
            if nxt not in live1 or not dead0:
                continue
            after = set().union(*(root_after(x) for x in dead0))
            for a in loop_access:
                if loop_of[a] == f and a in live1 and nxt in closure([a], inner_w):
                    out.setdefault(a, set()).update(after)
        return {a: frozenset(v) for a, v in out.items()}

    def lone_access(self, s: CFState, st: Step) -> bool:
        """Whether the Read or Assign step `st` may fire first without losing
        a terminal state: it commutes with every step that can still come
        before it in a run from `s`.

        Why: `st` (node a in context c, atomic: not a decomposed Assign's
        read or write step) touches only the variables a's handle can name
        (static, `_access_index`); on tokens, fired and started it is like a
        function step, which commutes with every other step (the argument of
        :meth:`eager`: it consumes only its own inputs, which no other node
        consumes, and stays enabled until it fires).  A step of another node
        b is dependent on it only through a variable both may touch with one
        of them an Assign (a conflict).  Each such b must be unable to fire
        before `st` in any continuation: either b is outside every loop (it
        fires at most once, in the root context) and has fired there, write
        included; or a and b are both outside every loop and b waits for a
        (a path of waits-for edges from a to b, `_access_index`: b cannot
        fire before a does, and a fires in the root context only by `st`).
        A Read a inside a loop F entered from the root context (frames
        (F,)): a conflicting b outside every loop must have fired, or wait
        for every live firing of a (`_loop_chains` argues when); a
        conflicting b inside a loop blocks it.  An Assign a outside every
        loop with a conflicting Read b inside a loop: a must wait for every
        live firing of b (then when a is enabled they have all happened).
        Any other conflicting access inside a loop blocks the rule (it may
        fire in iterations not yet started), as does an Assign a inside a
        loop (it conflicts with its own firings in other iterations).  Then
        {st} is a persistent set, and firing it first loses no terminal
        state (a Mazurkiewicz-trace argument: every run from s is equivalent
        to one that fires st first, with the same final state).
        tests/test_controlflow_engine_speed.py compares outcome sets with the
        rule on and off (and without any reduction) on generated programs."""
        if st.phase != "":
            return False
        if not hasattr(self, "_por"):
            self._access_index()
        if not self._por:
            return False
        a = st.node
        root = not self._frame_of[a]
        if not root and self.p.node[a].op == ASSIGN:
            return False
        fired, pending = s.fired, s.pending
        after = self._after.get(a, frozenset()) if root else self._after_loop.get(a, frozenset())
        for b in self._conflicts[a]:
            if self._frame_of[b]:
                # b inside a loop (a Read: a is an Assign outside every loop):
                # a waits for every live firing of b, so at a state where a
                # is enabled they have all happened; b's later firings are
                # dead and touch nothing
                if root and a in self._after_loop.get(b, ()):
                    continue
                return False
            if (b, ()) in fired and (b, ()) not in pending:
                continue
            if b in after:
                continue
            return False
        return True

    def enabled_steps(self, s: CFState) -> list[Step]:
        raw = self._raw_steps(s)
        busy = {st.ctx for st in raw}
        fired, started = s.fired, s.started

        def enters_fired(outer: Context, frame: str) -> bool:
            return all((e, outer) in fired
                       for e in self.enters.get((self._frames(outer), frame), ()))

        # The dead exits that may propagate, innermost instances first: a
        # dead exit of an inner instance not sent yet is a step that can
        # still fire inside every instance and iteration around it, which
        # are therefore not done (TensorFlow's executor: an iteration is not
        # done while a child frame is alive, IsIterationDone's
        # outstanding_frame_count; a frame is deleted, its dead exits sent,
        # only when done).  Without this an outer loop's dead exit was sent
        # before an inner loop's, which then made a Merge of the outer loop
        # fire live (it ignores a dead control input) and its Exit send a
        # live value after the dead one: an outcome TensorFlow never has,
        # and the eager dead-exit step made it the only one explored
        # (tests/test_controlflow_nested_dead_exits.py).
        ends = []
        unsent = [(x, outer, frame) for (x, outer, frame) in s.dead_exits
                  if (x, outer + ((frame, -1),)) not in fired] if s.dead_exits else ()
        if unsent:
            done: dict = {}   # (a function of the state and `busy` at its depth)

            def instance_done(outer: Context, frame: str) -> bool:
                got = done.get((outer, frame))
                if got is None:
                    n = len(outer)
                    # (c[n][1] < 0: a dead exit of this very instance)
                    got = done[(outer, frame)] = enters_fired(outer, frame) and not any(
                        len(c) > n and c[:n] == outer and c[n][0] == frame and c[n][1] >= 0
                        for c in busy)
                return got
            for depth in sorted({len(outer) for _, outer, _ in unsent}, reverse=True):
                level = [(x, outer, frame) for (x, outer, frame) in unsent
                         if len(outer) == depth and instance_done(outer, frame)]
                ends += level
                busy.update(outer + ((frame, -1),) for (_, outer, frame) in level)
        # parallel_iterations: a step in iteration i of a loop instance is in
        # the window while i < oldest + P, `oldest` the first iteration of
        # the instance not started, or with a step in it or under it, or
        # (iteration 0) with an Enter of the instance not fired yet
        if any(busy):   # (a step in some loop: () is the root context)
            under = set()   # every context with a step in it or under it
            for c in busy:
                for k in range(1, len(c) + 1):
                    under.add(c[:k])
            oldest_of: dict = {}

            def oldest(outer: Context, frame: str) -> int:
                got = oldest_of.get((outer, frame))
                if got is None:
                    i = 0
                    while True:
                        it = outer + ((frame, i),)
                        if it not in started or it in under or (
                                i == 0 and not enters_fired(outer, frame)):
                            break
                        i += 1
                    got = oldest_of[(outer, frame)] = i
                return got
            window: dict = {(): True}
            early = self._early

            def in_window(ctx: Context) -> bool:
                got = window.get(ctx)
                if got is None:
                    e = early.get(ctx)
                    if e is None:
                        # (every iteration of ctx below its loop's P: in the
                        # window whatever `oldest` is, which is at least 0)
                        e = early[ctx] = all(i < self.parallel.get(frame, 10) for frame, i in ctx)
                    got = window[ctx] = e or all(
                        i < oldest(ctx[:level], frame) + self.parallel.get(frame, 10)
                        for level, (frame, i) in enumerate(ctx))
                return got
            steps = [st for st in raw if in_window(st.ctx)]
        else:
            steps = raw
        for (x, outer, frame) in sorted(ends, key=repr):
            steps.append(Step(x, outer + ((frame, -1),), "end", dead=True))
        return steps

    def _enabled_steps_reference(self, s: CFState) -> list[Step]:
        """:meth:`enabled_steps` as first written (the tests compare the two)."""
        raw = self._raw_steps_reference(s)
        busy = {st.ctx for st in raw}

        def busy_under(prefix: Context) -> bool:
            return any(c[:len(prefix)] == prefix for c in busy)

        @functools.cache
        def instance_done(outer: Context, frame: str) -> bool:
            inner = tuple(f for f, _ in outer)
            if any((e, outer) not in s.fired for e in self.enters.get((inner, frame), ())):
                return False
            return not any(len(c) > len(outer) and c[:len(outer)] == outer
                           and c[len(outer)][0] == frame and c[len(outer)][1] >= 0
                           for c in busy)

        @functools.cache
        def oldest(outer: Context, frame: str) -> int:
            i = 0
            while True:
                it = outer + ((frame, i),)
                if it not in s.started:
                    return i
                if busy_under(it) or (i == 0 and any(
                        (e, outer) not in s.fired
                        for e in self.enters.get((tuple(f for f, _ in outer), frame), ()))):
                    return i
                i += 1

        @functools.cache
        def in_window(ctx: Context) -> bool:
            return all(i < oldest(ctx[:level], frame) + self.parallel.get(frame, 10)
                       for level, (frame, i) in enumerate(ctx))

        unsent = [(x, outer, frame) for (x, outer, frame) in s.dead_exits
                  if (x, outer + ((frame, -1),)) not in s.fired]
        ends = []
        for depth in sorted({len(outer) for _, outer, _ in unsent}, reverse=True):
            level = [(x, outer, frame) for (x, outer, frame) in unsent
                     if len(outer) == depth and instance_done(outer, frame)]
            ends += level
            busy.update(outer + ((frame, -1),) for (_, outer, frame) in level)
        steps = [st for st in raw if in_window(st.ctx)]
        for (x, outer, frame) in sorted(ends, key=repr):
            steps.append(Step(x, outer + ((frame, -1),), "end", dead=True))
        return steps

    def chain(self, s: CFState, sched, touched: list, fire, deadline: "tuple | None" = None):
        """From `s`, after a batch of eager steps: the steps of the pairs in
        `touched` (made candidates again by the steps just fired) that are
        eager at `s` are fired as one batch; then those of the pairs that
        batch touched, at the state it reached; and so on while a batch has
        a step.  Returns the state and schedule reached.  (`behaviours`
        after a batch: :attr:`chain_eager`.)  `deadline`: (the time
        `behaviours` must end by, its max_seconds), read every
        :attr:`chain_clock_steps` steps or so; past it, BudgetExceeded as
        `behaviours` raises it.

        Why no terminal state is lost: each batch is a set of eager steps of
        the one state s it starts from, fired in a row, which is
        `batch_eager`'s rule (argued there: each stays enabled, in the
        window and eager while the others fire).  Each step of a batch is
        one of `enabled_steps(s)`: its inputs are there (:meth:`_pair_steps`
        at s, exactly what `_raw_steps` lists for the pair), its context is
        started, and every iteration in it is below its loop's
        parallel_iterations (`_early`), so it is in the window whatever the
        oldest iteration is; and :meth:`eager` holds of it at s.  Which eager
        steps fire first changes the witness schedule, not the terminal
        states reached ({step} is a persistent set, :meth:`eager`).  A
        step that is not eager, a Merge with a choice, a step outside the
        early window and a dead exit's `end` step are left to
        `enabled_steps` at the state the chain stops in.  The candidates a
        pair's steps are kept under (`s.cand`) stay what `_raw_steps` would
        make them: a pair with no step leaves them, one with steps keeps
        them, until a token on one of its edges, its context starting or its
        firing marks it again (:meth:`_next_candidates`).

        (Each batch is all the eager steps at s of the pairs it looks at, so
        a replay of the schedule that finds the enabled steps where a label
        is not among the eager steps it found last, backends/controlflow.py
        `_fire`, finds them once per batch, as on `batch_eager`'s batches.)"""
        early = self._early
        index = self._index
        by_kind = self._eager_by_kind
        count = 0
        while touched:
            cand, started = s.cand, s.started
            batch = []
            looked = set()
            for pair in touched:
                if pair in looked or pair not in cand or pair[1] not in started:
                    continue
                looked.add(pair)
                got = cand[pair]
                if got is None:
                    got = self._pair_steps(s, pair[0], pair[1])
                    if not got:
                        del cand[pair]
                        continue
                    cand[pair] = got
                if len(got) != 1:
                    continue
                st = got[0]
                ctx = st.ctx
                e = early.get(ctx)
                if e is None:
                    e = early[ctx] = all(i < self.parallel.get(frame, 10) for frame, i in ctx)
                if e and (st.node in by_kind or self.eager(s, st)):
                    batch.append(st)
            if len(batch) > 1:
                # (in program order, contexts in order: the pairs come in
                # the order of sets of contexts, which differs between
                # processes, and the schedule is a witness shown to users)
                batch.sort(key=lambda x: (index[x.node], x.ctx))
            touched = []
            for st in batch:
                s = fire(s, st)
                sched = (st, sched)
                touched.extend(self._touched)
            count += len(batch)
            if deadline is not None and count > self.chain_clock_steps:
                count = 0
                if time.monotonic() > deadline[0]:
                    # (`behaviours`'s budget, read as often as it reads it)
                    raise BudgetExceeded("seconds", deadline[1], self.explored)
        return s, sched

    def _applied_key(self, n, fn, data: list) -> "tuple | None":
        """The key of the application of `fn` (node n's) to `data` in
        :data:`_APPLIED`, or None (not remembered)."""
        attrs = self._attr_keys.get(n.name, _NO_KEY) if self.remember_functions else None
        if attrs is _NO_KEY:
            attrs = self._attr_keys[n.name] = _exact_key(n.attrs)
        if attrs is None:
            return None
        args = tuple(_value_key(d) for d in data)
        if None in args:
            return None
        args = tuple(_arg_key(*k) if len(k) == 3 else k for k in args)
        # (the function object itself: a plugin may register another
        # under the op's name; whether TensorFlow's kernels may run:
        # an op without a numpy model is CannotRun without them)
        # (the last read once per run, by :meth:`initial`: it is
        # not changed inside a run)
        on = self._kernels_on
        return (_node_key(n.op, fn, attrs), args, fns._kernels.enabled() if on is None else on)

    def labels(self, s: CFState, steps: list[Step]) -> list[str]:
        many = {}
        for st in steps:
            many[(st.node, st.ctx, st.phase)] = many.get((st.node, st.ctx, st.phase), 0) + 1
        return [st.label(many[(st.node, st.ctx, st.phase)] > 1) for st in steps]

    # -- firing --------------------------------------------------------------

    def fire_step(self, s: CFState, st: Step) -> CFState:
        """The state after step `st` (the rules above, :meth:`_fire`), with
        its candidates carried over (:meth:`_next_candidates`); `s` is left
        as it was."""
        return self.advance(s.copy(), st)

    def advance(self, s: CFState, st: Step) -> CFState:
        """Step `st` fired in place: `s` becomes the state after it (and is
        returned).  Only for a caller that holds the only reference to `s`
        (`behaviours`); everyone else calls :meth:`fire_step`."""
        self._written = []
        self._new_contexts = []
        base = s.cand if s.cand is not None else self._candidates(s)
        self._fire(s, st)
        s.cand = self._next_candidates(base, st, s)
        return s

    def _fire(self, s: CFState, st: Step) -> None:
        """The rules above, applied to `s` in place."""
        p, g = self.p, self.g
        n = p.node[st.node]
        ctx = st.ctx
        tokens, var_value, pending = s.tokens, s.var_value, s.pending
        fired, dead_exits = s.fired, s.dead_exits

        if not st.dead and not st.phase and n.name in self._plain:
            # (the rules below for a live step of a registry function, in
            # their order, without the tests that do not apply to one: it
            # consumes its inputs, fires in its own context and puts its
            # results on its ports and GO on its control edges)
            name = n.name
            inner = ctx[:-1] + ((ctx[-1][0], 0),) if ctx else ctx
            data = []
            for eid, const, control, _back, _enter in self._in[name]:
                c = tokens.get((eid, inner)) if const else tokens.pop((eid, ctx), None)
                if not control:
                    data.append(c)
            fired.add((name, ctx))
            results = self.apply_function(n, data)
            written = self._written
            ports = self._out_port[name]
            for port, value in enumerate(results):
                for eid in ports.get(port, ()):
                    tokens[(eid, ctx)] = value
                    written.append((eid, ctx))
            for eid in self._out_control[name]:
                tokens[(eid, ctx)] = GO
                written.append((eid, ctx))
            return

        if st.phase == "end":
            # a dead Exit, propagated to the enclosing context when its loop
            # instance is done (TensorFlow's DeleteFrame: "propagate all the
            # dead exits to the parent frame")
            fired.add((n.name, ctx))
            self._put_all(tokens, n.name, ctx[:-1], DEAD)
            return

        if st.phase == "write":
            # decomposed (seed 002): the write step stores f(w, v), w as read earlier
            held = pending.pop((n.name, ctx))
            if held is not None:
                x, w, v = held
                var_value[x] = _assigned(n.fn, w, v, var_value[x])
            self._signal(tokens, n.name, ctx, GO)
            return

        # "n consumes those inputs": every non-constant input present in ctx
        # (a constant Enter's value, in iteration 0 of ctx's loop instance
        # (`_key`), stays)
        inner = ctx[:-1] + ((ctx[-1][0], 0),) if ctx else ctx
        contents = []
        data = []
        for eid, const, control, _back, _enter in self._in[n.name]:
            c = tokens.get((eid, inner)) if const else tokens.pop((eid, ctx), None)
            contents.append(c)
            if not control:
                data.append(c)
        fired.add((n.name, ctx))

        out_ctx = ctx
        if n.op == ENTER:
            out_ctx = ctx + ((n.attrs["frame_name"], 0),)
            self._start(s, out_ctx)
        elif n.op == EXIT:
            out_ctx = ctx[:-1]
        elif n.op == NEXT_ITERATION:
            frame, i = ctx[-1]
            out_ctx = ctx[:-1] + ((frame, i + 1),)

        if st.dead:
            # "a node with a dead input fires dead: its outputs are dead and it
            # has no effect on any variable"
            if n.op == EXIT:
                dead_exits.add((n.name, ctx[:-1], ctx[-1][0]))
            elif n.op != NEXT_ITERATION:   # TensorFlow stops deadness at NextIteration
                self._put_all(tokens, n.name, out_ctx, _dead_of(contents))
            return

        if n.op == EXIT:   # a live Exit: no dead Exit of this instance propagates
            fired.add((n.name, out_ctx + ((ctx[-1][0], -1),)))
        if n.op == NEXT_ITERATION:
            if out_ctx[-1][1] > self.bound:
                raise LoopBoundExceeded("/".join(f for f, _ in out_ctx), self.bound, self.explored)
            self._start(s, out_ctx)

        if n.op == VAR:
            results: list[object] = [VarRef(n.var)]
        elif n.op == READ:
            # a handle that is an error value reads that error
            results = [data[0] if isinstance(data[0], Error) else var_value[data[0].var]]
        elif n.op == ASSIGN and isinstance(data[0], Error):
            # an Assign with an error input changes nothing (footnote 5)
            if st.phase == "read":
                pending[(n.name, ctx)] = None
                return
            results = []
        elif n.op == ASSIGN and st.phase == "":
            handle, v = data
            var_value[handle.var] = _assigned(n.fn, var_value[handle.var], v, var_value[handle.var])
            results = []
        elif n.op == ASSIGN and st.phase == "read":
            handle, v = data
            pending[(n.name, ctx)] = (handle.var, var_value[handle.var], v)
            # the control signal comes with the write step
            return
        elif n.op == SWITCH:
            value, pred = data
            if not (isinstance(pred, Tensor) and pred.dtype == "bool" and pred.shape == ()):
                # an error predicate (the op computing it failed: a Read of an
                # uninitialized variable, say) or one that is no bool scalar:
                # TensorFlow fails the step, so neither branch runs; nothing
                # waiting for either port, by a data or a control edge, has an
                # effect.  Both ports carry DEAD (docs/semantics.md, "An error
                # as a predicate")
                self._put_all(tokens, n.name, out_ctx, failed_dead(
                    pred if isinstance(pred, Error) else Error(BAD_PREDICATE)))
                return
            results = [DEAD, value] if bool(pred.array) else [value, DEAD]
        elif n.op == MERGE:
            # (its value_index, one tensor per choice: a Tensor is immutable)
            index = _VALUE_INDEX.get(st.choice)
            if index is None:
                index = _VALUE_INDEX[st.choice] = Tensor(st.choice, "int32")
            results = [data[st.choice], index]
        elif n.op in (ENTER, EXIT, NEXT_ITERATION, LOOP_COND):
            results = [data[0]]
        elif n.op in STACK_OPS:
            results = self._stack_step(n, ctx, data, var_value)
            failed = next((r for r in results if isinstance(r, Error)), None)
            if failed is not None:
                # the kernel fails: TensorFlow fails the step, so nothing that
                # waits for this op runs, by a data or a control edge -- the
                # rule of a failed predicate (docs/semantics.md, "An error as
                # a predicate"): every outgoing edge carries DEAD with the
                # error, and a fetch of it is that error
                self._put_all(tokens, n.name, out_ctx, failed_dead(failed))
                # ... and the step fails: the first failure of the run is the
                # error of every fetch (outcome; stk.STEP_FAILED argues it).
                # Only the op's own failure: an error value it was given (a
                # Read of an uninitialized variable pushed, a max_size that
                # is one) is the failure of an op before it, which tfsem
                # keeps as a value, as everywhere else
                if not any(failed is d for d in data):
                    var_value.setdefault(stk.STEP_FAILED, failed)
                return
        else:
            results = self.apply_function(n, data)
        # (a token for each port's edges, then `_signal`, written out)
        written = self._written
        ports = self._out_port[n.name]
        for port, value in enumerate(results):
            for eid in ports.get(port, ()):
                tokens[(eid, out_ctx)] = value
                written.append((eid, out_ctx))
        for eid in self._out_control[n.name]:
            tokens[(eid, out_ctx)] = GO
            written.append((eid, out_ctx))

    def _start(self, s: CFState, ctx: Context) -> None:
        """Context `ctx` exists from now on (noted for :meth:`_next_candidates`)."""
        if ctx not in s.started:
            s.started.add(ctx)
            self._new_contexts.append(ctx)

    def _stack_step(self, n, ctx: Context, data: list, var_value: dict) -> list:
        """A stack op (oracle/opdefs/stacks.py, docs/stateful-ops.md "Stacks"):
        one atomic step in both modes, as TensorFlow's kernel runs under the
        stack's mutex.  StackV2 adds a new empty stack to the run's state,
        keyed by the node and this context (one per firing: a StackV2 in a
        loop makes one per iteration); a push, pop or close applies its
        rule to the stack its handle names.  A failing op changes nothing
        and returns [its error] (the caller makes its every outgoing edge
        DEAD carrying it).  Stacks are step-local: they are not in σ, and
        :meth:`outcome` leaves them out of the final state."""
        if n.op == stk.STACK:
            made = stk.create(n.attrs, data[0])
            if isinstance(made, Error):
                return [made]
            key = stk.state_key(n.name, context_text(ctx))
            var_value[key] = made
            return [stk.StackHandle(key)]
        handle = data[0]
        if not isinstance(handle, stk.StackHandle):
            # an error handle (its StackV2 failed): the op fails with that
            # error; anything else on a handle input is not a stack
            return [handle if isinstance(handle, Error) else Error(stk.WRONG_DTYPE)]
        stack = var_value[handle.key]
        if n.op == stk.PUSH:
            var_value[handle.key], out = stk.push(stack, data[1])
            return [out]
        if n.op == stk.POP:
            var_value[handle.key], out = stk.pop(stack, n.attrs["elem_type"])
            return [out]
        var_value[handle.key] = stk.close(stack)
        return []

    def apply_function(self, n, data: list) -> list:
        """A registry function on the node's live data inputs (a subclass runs
        it on an array backend: backends/controlflow.py), remembered by
        (op, function, attributes, inputs) in :data:`_APPLIED` (see there).

        What it needs of the node alone (its function, whether that is the
        registry's Identity, its attributes' key) is looked up once per
        node and kept from run to run while the registry gives the same
        functions (`_node_function`, `initial`), and the key of the inputs is made
        here (`_value_key`'s, inlined): the same key and the same answers
        as :meth:`_applied_key` (tests/test_controlflow_engine_applications.py
        compares the two on every application of generated runs).  A function step
        is three fifths of a replayed path's steps, and a remembered
        application (the rewrite's run at the σ the original just ran)
        spent most of its time finding these again."""
        known = self._fn.get(n.name)
        if known is None:
            known = self._node_function(n)
        fn, identity, node_key = known
        if identity and len(data) == 1 and \
                (type(data[0]) is not Tensor or data[0].array.size <= fns.MAX_TENSOR_ELEMENTS):
            # The registry's own Identity (its implementation, under its
            # name, one output, no strictness of its own, in a Function
            # that applies it as every Function does; `_apply` passes a
            # value that is no tensor through for the name "Identity" only)
            # gives its argument:
            # `Function._apply` returns an error argument itself (strict),
            # a TensorList or another value that is no tensor itself (the
            # Identity case there), and a tensor as the very tensor
            # (`_same_tensor`: the implementation returns its array, of
            # the argument's dtype) once `check_size` has passed it (the
            # element limit, tested here; a larger one goes the long way
            # and fails as before); the memo of applications may give an
            # equal tensor of the same bits instead (interned), which is
            # the same value.  It evaluates no TensorFlow kernel, so none
            # is noted.  A fifth of a loop graph's steps are Identities,
            # each keyed by its argument's bytes to be looked up.
            return [data[0]]
        key = None
        if node_key is not None:
            # (`_applied_key`: each input by `_value_key`, None where one
            # has no key)
            args = []
            size = 0
            for d in data:
                t = type(d)
                if t is Tensor:
                    # (a result of a remembered application has its key
                    # kept: `_ARG_KEYS`)
                    got = _ARG_KEYS.get(id(d))
                    if got is not None and got[0] is d:
                        args.append(got[1])
                        size += got[2]
                        continue
                    a = d.array
                    if a.nbytes > _APPLIED_ENTRY_BYTES:
                        break
                    args.append(_arg_key(d._dtype, a.shape, a.tobytes()))
                    size += a.nbytes
                elif t is Error:
                    args.append(("error", d.reason))
                else:
                    break
            else:
                on = self._kernels_on
                key = (node_key, tuple(args), fns._kernels.enabled() if on is None else on)
                got = _APPLIED.get(key)
                if got is not None and got[0] is fn:
                    if got[2]:
                        fns._kernels.note(got[2])   # (the verdict names the kernels it rests on)
                    return list(got[1])
        if key is None:
            if node_key is not None and remember_lists and data:
                return self._apply_to_lists(n, fn, node_key, data)
            return list(fn.apply(data, n.attrs))
        with fns._kernels.record() as used:
            results = tuple(fn.apply(data, n.attrs))
        size += sum(r.array.nbytes for r in results if type(r) is Tensor)
        if size <= _APPLIED_ENTRY_BYTES:
            global _APPLIED_BYTES, _ARG_BYTES
            if len(_APPLIED) >= _APPLIED_MAX or _APPLIED_BYTES + size > _APPLIED_MAX_BYTES or \
                    len(_ARG_KEYS) >= _APPLIED_MAX or _ARG_BYTES + size > _APPLIED_MAX_BYTES:
                _APPLIED.clear()
                _ARG_KEYS.clear()
                _APPLIED_BYTES = _ARG_BYTES = 0
            # (most applications evaluate no TensorFlow kernel: one empty
            # set for all of them, not a new one per entry that the
            # cyclic collector scans after the run)
            _APPLIED[key] = (fn, results, frozenset(used) if used else _NO_KERNELS)
            _APPLIED_BYTES += size
            for r in results:
                if type(r) is Tensor and id(r) not in _ARG_KEYS:
                    a = r.array
                    _ARG_KEYS[id(r)] = (r, _arg_key(r._dtype, a.shape, a.tobytes()), a.nbytes)
                    _ARG_BYTES += a.nbytes
        return list(results)

    def _apply_to_lists(self, n, fn, node_key: frozenset, data: list) -> list:
        """`fn` (node n's) applied to `data`, where some argument has no key
        by its bits: remembered in :data:`_BY_IDENTITY` where every
        argument is a tensor, an error or a TensorList (immutable values),
        and at least one a TensorList (see there)."""
        lists = _list_type()
        some = False
        for d in data:
            t = type(d)
            if t is lists:
                some = True
            elif t is not Tensor and t is not Error:
                some = False
                break
        if not some:
            # (another kind of value, or a tensor too large to key and no
            # list: applied, as before)
            return list(fn.apply(data, n.attrs))
        on = self._kernels_on
        key = (node_key, tuple(map(id, data)), fns._kernels.enabled() if on is None else on)
        got = _BY_IDENTITY.get(key)
        if got is not None and got[0] is fn and all(a is b for a, b in zip(got[1], data)):
            if got[3]:
                fns._kernels.note(got[3])   # (the verdict names the kernels it rests on)
            return list(got[2])
        with fns._kernels.record() as used:
            results = tuple(fn.apply(data, n.attrs))
        global _BY_IDENTITY_BYTES
        size = _held_bytes(data, lists) + _held_bytes(results, lists)
        if size > _APPLIED_MAX_BYTES:
            # (one application whose lists and tensors pass the cap alone
            # is not remembered: emptied and then stored, it was held past
            # the check with more than the _APPLIED_MAX_BYTES the memo may
            # hold -- a TensorListFromTensor of a 100 MB tensor kept its
            # tensor and list alive until the next application; the memo
            # changes no answer, so one not kept is the same answer)
            return list(results)
        if len(_BY_IDENTITY) >= _BY_IDENTITY_MAX or \
                _BY_IDENTITY_BYTES + size > _APPLIED_MAX_BYTES:
            _BY_IDENTITY.clear()
            _BY_IDENTITY_BYTES = 0
        _BY_IDENTITY[key] = (fn, tuple(data), results, frozenset(used) if used else _NO_KERNELS)
        _BY_IDENTITY_BYTES += size
        return list(results)

    def _node_function(self, n) -> tuple:
        """(the registry function of node n's op, whether it is the
        registry's own Identity as :meth:`apply_function` passes it, the
        node's part of its applications' keys in :data:`_APPLIED`
        (`_node_key`) or None where its attributes have none or functions
        are not remembered), kept for later runs while the registry gives
        every op of the program the same function object (`initial`
        empties the table otherwise: a plugin may register another
        function under the op's name between two runs)."""
        fn = fns.get(n.op)
        if self._fn_by_op.get(n.op) is not fn:
            # (the registry changed during this run, after `initial` made
            # `_fn_held`: a function's own application registered another
            # under an op of the program.  An entry made now names a
            # function that `_fn_held` does not, and the registry may give
            # the held one again by the next run, whose test in `initial`
            # would then keep this entry: that run applied the function of
            # this run's change.  So the next run makes the
            # table again, as every run did before it was kept)
            self._fn_held = None
        identity = (fn.impl is _IDENTITY_IMPL and type(fn) is fns.Function and
                    fn.name == "Identity" and fn.n_out == 1 and fn.strict_args is None)
        attrs = self._attr_keys.get(n.name, _NO_KEY) if self.remember_functions else None
        if attrs is _NO_KEY:
            attrs = self._attr_keys[n.name] = _exact_key(n.attrs)
        known = self._fn[n.name] = (fn, identity, None if attrs is None else
                                    _node_key(n.op, fn, attrs))
        return known

    def _signal(self, tokens: dict, name: str, ctx: Context, value: object) -> None:
        written = self._written
        for eid in self._out_control[name]:
            tokens[(eid, ctx)] = value
            written.append((eid, ctx))

    def _put_all(self, tokens: dict, name: str, ctx: Context, value: object) -> None:
        written = self._written
        for eid in self._out_all[name]:
            tokens[(eid, ctx)] = value
            written.append((eid, ctx))

    # -- runs ----------------------------------------------------------------

    def initial(self, feeds: Mapping[str, Value], init: Mapping[str, Value]) -> CFState:
        """Section 3.2.1's initial state, in the root context."""
        tokens: dict = {}
        for e in self.g.edges:
            if e.src is None:
                tokens[(e.id, ())] = feeds[e.feed] if e.kind == TENSOR else GO
        var_value = {x: init.get(x, Error(UNINITIALIZED)) for x in self.p.variables}
        self._kernels_on = fns._kernels.enabled()
        # (the table of each node's function, its Identity test and its
        # attributes' key (`_node_function`) kept from the last run only
        # while the registry gives every op of the program the very
        # function object it gave then, and `remember_functions` is as it
        # was: a plugin may register another function under an op's name
        # between two runs, or a test put one in by hand, which no
        # version counts (functions.still_registered), so each op is looked
        # up again, by identity, as `outcomes` looks them up for its key.
        # An entry is a function of the node (frozen with the program), of
        # its op's function object and of that switch alone; the program's
        # ops are every op a function step applies (`_function_ops`).  A
        # run looked up again every node it applied, a tenth of a warm
        # replay's function steps)
        held = (self.remember_functions,) + _functions_of(self.p)
        kept = self._fn_held
        if kept is None or len(kept) != len(held) or \
                not all(a is b for a, b in zip(kept, held)):
            self._fn = {}
            self._fn_held = held
            self._fn_by_op = dict(zip(_function_ops(self.p), held[1:]))
        return CFState(var_value, tokens, set(), {()})

    def outcome(self, s: CFState, observe: str) -> Outcome:
        outputs = {}
        # a stack op that failed in the run failed TensorFlow's step: no
        # fetch comes back, only its error (oracle/stack_state.py)
        step_failed = s.var_value.get(stk.STEP_FAILED)
        for name, e in self.g.output_edges.items():
            c = s.tokens.get((e.id, ()))
            outputs[name] = (step_failed if step_failed is not None else
                             (c.error or Error(DEAD_REASON)) if _is_dead(c) else
                             Error(NOT_PRODUCED) if c is None else c)
        # the stacks of the run (step-local) are not part of the final state
        return make_outcome(outputs, {x: s.var_value[x] for x in self.p.variables}, observe)


def behaviours(p: Program, g: Graph, feeds: Mapping[str, Value], init: Mapping[str, Value],
               semantics: str = ATOMIC, memo: bool = True, max_states: int | None = None,
               max_iterations: int = DEFAULT_MAX_ITERATIONS,
               max_seconds: float | None = None,
               machine: "Machine | None" = None,
               trace: "RunTrace | None" = None) -> Iterator[tuple[list[str], CFState]]:
    """Every complete run, as (schedule, final state); see semantics.behaviours.
    Memoized, a state reached twice is explored once (up to the eager steps
    before the next choice, below).  Past `max_states` states or
    `max_seconds` seconds it raises BudgetExceeded.

    Which states are looked up: only those with no eager step (where the
    run makes a choice, or ends, or fires a lone non-eager step).  From a
    state with an eager step the run fires the first eager step, a function
    of the state: two visits of such a state Z go down the same chain of
    eager steps to the same state with none, which is looked up.  So a merge
    at Z is caught a few steps later, having fired at most that chain twice,
    and no outcome is lost either way (a lookup only skips a state whose
    continuation was pushed already; skipping none explores it again).  On
    Keras loops with reads that are not lone (Grappler's dependency
    optimizer on keras_gru_loop) every state of a 4,000-step run was keyed
    after the first choice, at 1-7 ms each: 30 s without reaching the end;
    keyed at the choices only, one run.  Schedules are kept as shared
    (label, parent) pairs and spelled out at the end of a run (a list copied
    at every step was quadratic in the run's length)."""
    started = time.monotonic()
    m = machine or Machine(p, g, semantics, max_iterations)
    # a state popped from the stack is referenced by nothing else (its key,
    # if kept, is a copy): its only successor, or the last of several, is
    # made from it in place (Machine.in_place; off, every step copies)
    fire = m.advance if m.in_place else m.fire_step
    if trace is not None:
        # (every step fired, with what it wrote: RunTrace)
        fire = trace.recording(m, fire)
    seen: set[tuple] = set()
    stack: list[tuple[CFState, tuple | None]] = [(m.initial(feeds, init), None)]
    while stack:
        s, sched = stack.pop()
        m.explored += 1
        if max_states is not None and m.explored > max_states:
            raise BudgetExceeded("states", max_states, m.explored)
        if max_seconds is not None and m.explored & 15 == 0 \
                and time.monotonic() - started > max_seconds:
            raise BudgetExceeded("seconds", max_seconds, m.explored)
        steps = m.enabled_steps(s)
        if memo and steps:
            first = next((i for i, st in enumerate(steps) if m.eager(s, st)), None)
            if first is not None:
                st = steps[first]
                if st.phase == "end" or not m.batch_eager:
                    # (its label as `labels` gives it, without labelling the others)
                    key = (st.node, st.ctx, st.phase)
                    many = sum(1 for x in steps if (x.node, x.ctx, x.phase) == key) > 1
                    stack.append((fire(s, st), (st.label(True) if many else st, sched)))
                    continue
                # every eager step of s but the dead exits, in order, without
                # finding the steps again between them (Machine.batch_eager);
                # whether each is eager is decided at s, before any fires
                batch = [x for x in steps[first:] if x.phase != "end" and (x is st or m.eager(s, x))]
                touched: list = []
                for x in batch:
                    s = fire(s, x)
                    sched = (x, sched)
                    touched.extend(m._touched)
                if m.chain_eager:
                    # (then the steps the batch enabled, while eager: Machine.chain)
                    s, sched = m.chain(s, sched, touched, fire, None if max_seconds is None
                                       else (started + max_seconds, max_seconds))
                stack.append((s, sched))
                continue
        if memo and stack:
            # (a state popped with nothing else pending is reached by the only
            # path explored so far: it is not looked up, which saves its key
            # on the long eager runs of large graphs; missing a merge only
            # explores a state twice, it loses no outcome)
            k = s.key()
            if k in seen:
                continue
            seen.add(k)
        if not steps:
            yield _spelled(sched, m), s
            continue
        if trace is not None and len(steps) > 1:
            trace.branched = True   # (a choice: the run is not one path)
        labels = m.labels(s, steps)
        # (each successor but the first from a copy of s, taken before s
        # itself becomes the first's)
        for i in range(len(steps) - 1, -1, -1):
            stack.append((fire(s if i == 0 else s.copy(), steps[i]), (labels[i], sched)))


def frame_parallel_iterations(p: Program) -> dict[str, int]:
    """Each frame's parallel_iterations: its first Enter's in the program's
    node order (TensorFlow's ImmutableExecutorState takes the first Enter of
    a frame it meets, and warns when another disagrees).  The semantics
    depends on the node order here alone: two programs equal as node sets
    (`Program.__eq__`) whose Enters of one frame disagree may differ in it."""
    out: dict[str, int] = {}
    for n in p.nodes:
        if n.op == ENTER:
            out.setdefault(n.attrs["frame_name"], n.attrs.get("parallel_iterations", 10))
    return out


def _spelled(sched: "tuple | None", machine: "Machine | None" = None) -> list[str]:
    """A schedule kept as (label, parent) pairs, first step first (a label
    may be kept as its Step, labelled here: an eager step's label shows no
    Merge choice)."""
    out = []
    labels = {} if machine is None else machine._labels
    while sched is not None:
        x = sched[0]
        if type(x) is not str:
            key = (x.node, x.ctx, x.phase)
            label = labels.get(key)
            if label is None:
                label = labels[key] = x.label()
            x = label
        out.append(x)
        sched = sched[1]
    out.reverse()
    return out


def run_schedule(p: Program, g: Graph, feeds: Mapping[str, Value], init: Mapping[str, Value],
                 schedule: list[str], semantics: str = ATOMIC,
                 max_iterations: int = DEFAULT_MAX_ITERATIONS) -> CFState:
    """Replay a schedule; raises ValueError at the first step that may not fire."""
    return fire_schedule(Machine(p, g, semantics, max_iterations), feeds, init, schedule)


def fire_schedule(m: "Machine", feeds: Mapping[str, Value], init: Mapping[str, Value],
                  schedule: Sequence[str]) -> CFState:
    """Fire `schedule` on machine `m` from σ; raises ValueError at the first
    step that may not fire, or when the run goes on after the schedule."""
    s = m.initial(feeds, init)
    for i, label in enumerate(schedule):
        steps = m.enabled_steps(s)
        by_label = dict(zip(m.labels(s, steps), steps))
        if label not in by_label:
            raise ValueError(f"step {i} ({label}) is not enabled")
        s = m.advance(s, by_label[label])   # (s is this run's alone: fired in place)
    if m.enabled_steps(s):
        raise ValueError("the schedule ends before the run does")
    return s


def outcomes(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
             semantics: str = ATOMIC, observe: str = "outputs+state",
             max_states: int | None = None, max_seconds: float | None = None,
             max_iterations: int = DEFAULT_MAX_ITERATIONS) -> tuple[dict[Outcome, tuple[str, ...]], int]:
    """Outcomes(P, σ), each with one schedule, and the number of states
    explored.  Remembered (:data:`_OUTCOMES`): asked again for the same
    program object at the same σ, the answer of the first time."""
    # (the functions named in the key, kept by its entry: _functions_of)
    held = _functions_of(p) if remember_outcomes else ()
    key = _outcomes_key(p, feeds, init, semantics, observe, max_iterations, held) \
        if remember_outcomes else None
    got = _OUTCOMES.get(key) if key is not None else None
    if got is not None and got[0] is p and (max_states is None or got[2] <= max_states):
        _OUTCOMES[key] = _OUTCOMES.pop(key, got)   # (used last: evicted last)
        _, found, explored, used = got[:4]
        fns._kernels.note(used)   # (the verdict names the kernels its outcomes rest on)
        if isinstance(found, tuple):   # (the run reached a loop's iteration bound)
            raise LoopBoundExceeded(found[0], found[1], explored)
        return dict(found), explored
    m = machine_for(p, semantics, max_iterations)
    out: dict[Outcome, tuple[str, ...]] = {}
    # (Python's cyclic collector off during the run, on again after, if it
    # was on: a run makes tens of thousands of tracked objects (steps,
    # tuples, schedule entries), none in a cycle (freed by their counts),
    # and each collection they set off walked the whole heap, TensorFlow's
    # included where the process imported it: 14% of a warm run's CPU
    # there, 7% without it.  Another thread's run may turn it on again
    # before this one ends: then this run is as it was)
    collecting = gc.isenabled() and collector_off
    if collecting:
        gc.disable()
    try:
        with fns._kernels.record() as used:
            try:
                traced = replay_traces and not p.has_stacks
                began = time.monotonic()
                again = _replayed(m, feeds, init, observe, max_states, max_seconds) \
                    if traced else None
                if again is not None:
                    out = again
                else:
                    trace = RunTrace(m) if traced else None
                    # (the time a refused replay took is the budget's too)
                    left = None if max_seconds is None else \
                        max(1e-3, max_seconds - (time.monotonic() - began))
                    for sched, s in behaviours(p, m.g, feeds, init, semantics, True, max_states,
                                               max_iterations, left, machine=m, trace=trace):
                        out.setdefault(m.outcome(s, observe), tuple(sched))
                    if trace is not None and not trace.branched and len(out) == 1:
                        trace.keep(m, next(iter(out.values())))
            except LoopBoundExceeded as exc:
                if key is not None:
                    _remember(key, (p, (exc.frame, exc.limit), exc.explored, frozenset(used),
                                    held))
                raise
    finally:
        if collecting:
            gc.enable()
    if key is not None and len(out) <= _OUTCOMES_MAX_SET:
        _remember(key, (p, out, m.explored, frozenset(used), held))
    return dict(out), m.explored


#: Whether :func:`outcomes` remembers its answers (tests turn it off).
remember_outcomes = True
#: Whether :func:`outcomes` replays the path of an earlier run of the same
#: Machine at a new σ instead of exploring (RunTrace; tests turn it off)
replay_traces = True
#: the paths a Machine keeps (the one that last fitted tried first)
TRACES_KEPT = 4
#: steps a replay fires between two readings of the clock
REPLAY_CLOCK_STEPS = 256


class RunTrace:
    """The one path of a run of `behaviours` that met no choice (every state
    it popped had an eager step, or one step, or none: the end), step by
    step, each step with what it wrote (:meth:`recording`); and the run's
    schedule and count of states.  At another σ, :func:`_replay` fires the
    same steps and compares what each writes: where all agree, the run
    `behaviours` would make there is this path, and its answer is this
    path's end state with this schedule.

    Why.  Call a state's *skeleton* everything of it but the values: the
    keys of its tokens with whether each is DEAD, `fired`, the keys of
    `pending`, `started` and `dead_exits` (the values are the tensors,
    errors and lists in tokens and variables, and the error a dead token
    carries).  Every decision `behaviours` makes from a state is a function
    of its skeleton and of the Machine's static tables, and of nothing
    else: `enabled_steps` (and the candidates it keeps in `s.cand`) reads
    which tokens are there and which are dead, `fired`, `pending`,
    `started`, `dead_exits` and the window (contexts only); `eager` reads
    the op, deadness, `fired` and `pending` (`lone_access`) and, for a
    StackV2 only, a value (its size: programs with stacks are not traced);
    `chain` and the batches read the same and sort by program order; the
    lookups of states happen only after a choice, which a traced run never
    met.  (Iteration orders of the sets and dicts involved are functions
    of the sequence of insertions, the same in one process.)  And what a
    step does to the skeleton is a function of the step and the skeleton,
    but for what `_fire` decides from values: how many results a registry
    function gives (`_fire` writes one token per port that has a
    result), and, for a live Switch, which port is DEAD or whether both are
    (an error or non-bool predicate); a live Read, Assign, Merge, Enter,
    Exit, NextIteration or LoopCond writes live tokens on keys fixed by the
    step (an error handle changes a value, not a key), a dead step DEAD on
    keys fixed by the step, and the iteration bound is passed or not by the
    contexts alone.  So by induction on the steps: if at every step of the
    path the replay at σ' writes as many tokens as the recorded run did and,
    at a live Switch, the same deadness on each, the skeletons of the
    replay and of the recorded run agree state by state, `behaviours` at σ'
    makes the recorded decisions at each (the same step next, no choice,
    the end at the end), and so it fires exactly these steps from σ': the
    replay's state is its end state (the values are computed by the same
    `_fire` on the same steps), its schedule the recorded one (labels are
    functions of steps and skeletons) and its count of states the recorded
    count.  A step whose writes differ is followed on another kept path
    that made the same steps with the same writes up to it and this step's
    writes there (so its recorded skeleton is the replay's: the argument
    goes on along that path), else the replay ends and the answer is the
    exploration's.  An exception a step raises (CannotRun, an op's
    failure) is the one the exploration raises at the same step.
    tests/test_controlflow_replay.py compares `outcomes` with and without
    replays on generated programs at many σ (including σ that change
    predicates and trip counts) and on the real corpus's loop graphs."""

    __slots__ = ("steps", "branched", "schedule", "explored", "flags", "plan")

    def __init__(self, m: "Machine") -> None:
        self.steps: list = []
        self.branched = False
        self.schedule: tuple = ()
        self.explored = 0
        self.flags = _trace_flags(m)
        # (each step's token keys, made at its first replay: `_plan`)
        self.plan: list | None = None

    def recording(self, m: "Machine", fire):
        """`fire` that also notes each step and what it wrote: the number of
        tokens, and for a live Switch whether each is DEAD."""
        steps = self.steps
        switches = m._switches

        def rec(s: CFState, st: Step) -> CFState:
            s = fire(s, st)
            written = m._written
            if st.node in switches and not st.dead and not st.phase:
                tokens = s.tokens
                steps.append((st, tuple(type(tokens[k]) is _Dead for k in written)))
            else:
                steps.append((st, len(written)))
            return s
        return rec

    def keep(self, m: "Machine", schedule: tuple) -> None:
        self.schedule = schedule
        self.explored = m.explored
        kept = m.__dict__.setdefault("_traces", [])
        kept.insert(0, self)
        del kept[TRACES_KEPT:]


#: the methods whose answers are the decisions of `behaviours` (RunTrace):
#: a path is replayed only on the Machine's class with the same ones and
#: none of them replaced on the Machine itself (tests replace them)
_DECIDING = ("enabled_steps", "eager", "lone_access", "chain", "_pair_steps", "_raw_steps",
             "_next_candidates", "_candidates", "labels")


def _trace_flags(m: "Machine") -> tuple:
    """The Machine's switches and deciding methods a path depends on (tests
    change them), and whether it may be replayed at all (the last)."""
    cls = type(m)
    return (m.semantics, m.bound, m.in_place, m.batch_eager, m.chain_eager, m.lone_accesses,
            cls, tuple(getattr(cls, name) for name in _DECIDING),
            not any(name in m.__dict__ for name in _DECIDING))


def _replayed(m: "Machine", feeds, init, observe: str, max_states: int | None,
              max_seconds: float | None) -> "dict | None":
    """Outcomes(P, σ) from a path of an earlier run of `m` that σ follows
    (RunTrace argues it), or None (no path fits: explore)."""
    kept = m.__dict__.get("_traces")
    if not kept:
        return None
    flags = _trace_flags(m)
    if not flags[-1]:
        return None
    paths = [tr for tr in kept if tr.flags == flags]
    if not paths:
        return None
    got = _replay(m, paths, feeds, init, time.monotonic(), max_seconds)
    if got is None:
        return None
    s, tr = got
    if max_states is not None and tr.explored > max_states:
        return None   # (the exploration runs out of states: let it say so)
    kept.remove(tr)
    kept.insert(0, tr)
    m.explored = tr.explored
    return {m.outcome(s, observe): tr.schedule}


def _replay(m: "Machine", paths: list, feeds, init, started: float,
            max_seconds: float | None,
            clock_steps: int = REPLAY_CLOCK_STEPS) -> "tuple[CFState, RunTrace] | None":
    """The first of `paths` fired from σ, each step checked against what it
    wrote in the recorded run; where one differs, another kept path that
    made the same steps with the same writes up to it, and this step's
    writes there, takes over (the paths of a program form a tree: they all
    start from the same skeleton); none: None.  The end state and the path
    it followed."""
    s = m.initial(feeds, init)
    tokens, fired = s.tokens, s.fired
    fire = m._fire
    apply = m.apply_function
    function = _PLAN_FUNCTION
    tr = paths[0]
    steps = tr.steps
    plan = tr.plan or _plan(m, tr)
    end = len(steps)
    # (the clock read every clock_steps steps, as before: at the steps i
    # with (i + 1) % clock_steps == 0, counted down instead of divided)
    tick = clock_steps if max_seconds is not None else -1
    i = 0
    while i < end:
        planned = plan[i]
        # (the kinds tested in the order of their numbers on the loop
        # graphs: three fifths of the steps are functions)
        if planned is not None and planned[0] == function:
            # a live step of a registry function: `_fire`'s first case, its
            # token keys made once per path (`_plan`)
            _, n, pair, ins, outs, ctl = planned
            data = _taken(tokens, ins)
            fired.add(pair)
            count = len(ctl)
            for port, value in enumerate(apply(n, data)):
                for key in outs.get(port, ()):
                    tokens[key] = value
                    count += 1
            for key in ctl:
                tokens[key] = GO
            wrote = steps[i][1]
            if count != wrote:
                tr = _other_path(paths, tr, i, count)
        elif planned is not None:
            count = _fire_planned(planned, s)
            wrote = steps[i][1]
            if count != wrote:
                tr = _other_path(paths, tr, i, count)
        else:
            st, wrote = steps[i]
            m._written = written = []
            m._new_contexts = []
            fire(s, st)
            if type(wrote) is int:
                if len(written) != wrote:
                    tr = _other_path(paths, tr, i, len(written))
            else:
                got = tuple(type(tokens[k]) is _Dead for k in written)
                if got != wrote:
                    tr = _other_path(paths, tr, i, got)
        if tr is None:
            return None
        if tr.steps is not steps:
            steps = tr.steps
            plan = tr.plan or _plan(m, tr)
            end = len(steps)
        i += 1
        tick -= 1
        if not tick:
            tick = clock_steps
            if time.monotonic() - started > max_seconds:
                # (the states the exploration would have popped by this step)
                raise BudgetExceeded("seconds", max_seconds, tr.explored * i // len(steps))
    return s, tr


#: kinds of planned steps (`_plan`)
_PLAN_FUNCTION, _PLAN_FORWARD, _PLAN_DEAD, _PLAN_SWITCH, _PLAN_READ = 0, 1, 2, 3, 4


def _plan(m: "Machine", tr: RunTrace) -> list:
    """For each step of path `tr`, what `_fire` would compute from the step
    and the Machine's tables alone, computed once for every replay of the
    path (`_replay`); None where `_fire` fires it (an Assign, a dead
    Enter, a step with a phase, a stack op, a NextIteration past the
    iteration bound).  Each kind does what `_fire` does for it, in the same
    order: every incoming token taken (a constant Enter's read, in
    iteration 0 of the context's loop instance) into the same list, the
    same pairs added to `fired` and context to `started`, the same values
    put on the same keys, port by port, then GO on the control edges:

    - (_PLAN_FUNCTION, node, pair, ins, outs, ctl): a live step of a
      registry function (`_fire`'s first case), its results by port;
    - (_PLAN_FORWARD, choice, pairs, ins, outs, ctl, started): a live Merge
      (its input `choice`, and that choice as its value_index), Enter,
      Exit, NextIteration or LoopCond (its one input), in the context it
      puts out to (an Enter's new frame, an Exit's outer context, the next
      iteration), with the context it starts, and an Exit's second pair
      (no dead Exit of this instance propagates);
    - (_PLAN_DEAD, ins, pair, keys, dead_exit): a dead step: the dead
      value of its inputs (`_dead_of`) on every outgoing edge (none for an
      Exit, which notes its dead exit instead, and for a NextIteration,
      where TensorFlow stops deadness);
    - (_PLAN_SWITCH, ins, pair, port0, port1, ctl, written, every): a live
      Switch (`_fire`'s case SWITCH, its context its own): a bool scalar
      predicate puts DEAD on the port not taken and the value on the
      other, port 0's keys first, then GO on the control edges (`written`:
      the three in that order); any other
      predicate puts its failure, dead, on every outgoing edge in graph
      order (`every`, `_put_all`'s).  What it wrote is compared as the
      recorded run noted it (`RunTrace.recording`): whether each key it
      wrote, in the order written, holds DEAD;
    - (_PLAN_READ, ins, pair, outs, ctl, var): a live Read (`var` None) or
      Var (`var` the variable it names): `_fire`'s value (the variable's
      value, or the handle's error; a new VarRef) on port 0's keys, then
      GO on the control edges.

    `ins` are (key, from a constant Enter, control) in input order, `outs`
    the outgoing data edges' keys by port, `ctl` the control edges' keys.
    The tables read (`_in`, `_out_port`, `_out_control`, `_out_all`,
    `frames`' names in contexts) are functions of the program and its
    graph: a path is planned on the graph it was recorded on (`kept_path`
    checks it for another Machine of the program).  Kept on the path."""
    plain = m._plain
    node = m.p.node
    plan: list = []
    for st, _ in tr.steps:
        name, ctx = st.node, st.ctx
        n = node[name]
        if st.phase or (n.op == ENTER and st.dead) or n.op in STACK_OPS:
            plan.append(None)
            continue
        inner = ctx[:-1] + ((ctx[-1][0], 0),) if ctx else ctx
        ins = tuple(((eid, inner) if const else (eid, ctx), const, control)
                    for eid, const, control, _back, _enter in m._in[name])
        if st.dead:
            out_ctx = ctx
            keys = () if n.op in (EXIT, NEXT_ITERATION) else \
                tuple((eid, out_ctx) for eid in m._out_all[name])
            dead_exit = (name, ctx[:-1], ctx[-1][0]) if n.op == EXIT else None
            plan.append((_PLAN_DEAD, ins, (name, ctx), keys, dead_exit))
            continue
        if name in plain:
            outs = {port: tuple((eid, ctx) for eid in eids)
                    for port, eids in m._out_port[name].items()}
            ctl = tuple((eid, ctx) for eid in m._out_control[name])
            plan.append((_PLAN_FUNCTION, n, (name, ctx), ins, outs, ctl))
            continue
        pairs: tuple = ((name, ctx),)
        started = None
        choice = -1
        if n.op == MERGE:
            out_ctx, choice = ctx, st.choice
        elif n.op == LOOP_COND:
            out_ctx = ctx
        elif n.op == ENTER:
            out_ctx = started = ctx + ((n.attrs["frame_name"], 0),)
        elif n.op == EXIT:
            out_ctx = ctx[:-1]
            pairs += ((name, out_ctx + ((ctx[-1][0], -1),)),)
        elif n.op == NEXT_ITERATION:
            frame, k = ctx[-1]
            out_ctx = started = ctx[:-1] + ((frame, k + 1),)
            if k + 1 > m.bound:
                plan.append(None)    # (`_fire` raises LoopBoundExceeded there)
                continue
        elif n.op == SWITCH:
            ports = m._out_port[name]
            port0 = tuple((eid, ctx) for eid in ports.get(0, ()))
            port1 = tuple((eid, ctx) for eid in ports.get(1, ()))
            ctl = tuple((eid, ctx) for eid in m._out_control[name])
            plan.append((_PLAN_SWITCH, ins, (name, ctx), port0, port1, ctl, port0 + port1 + ctl,
                         tuple((eid, ctx) for eid in m._out_all[name])))
            continue
        elif n.op in (READ, VAR):
            plan.append((_PLAN_READ, ins, (name, ctx),
                         tuple((eid, ctx) for eid in m._out_port[name].get(0, ())),
                         tuple((eid, ctx) for eid in m._out_control[name]),
                         n.var if n.op == VAR else None))
            continue
        else:
            plan.append(None)        # (Assign)
            continue
        outs = {port: tuple((eid, out_ctx) for eid in eids)
                for port, eids in m._out_port[name].items()}
        ctl = tuple((eid, out_ctx) for eid in m._out_control[name])
        plan.append((_PLAN_FORWARD, choice, pairs, ins, outs, ctl, started))
    tr.plan = plan
    return plan


def _taken(tokens: dict, ins) -> list:
    """A planned step's incoming tokens taken as `_fire` takes them (a
    constant Enter's read stays, every other is popped), in input order:
    the data ones, the control ones dropped."""
    data = []
    for key, const, control in ins:
        c = tokens.get(key) if const else tokens.pop(key, None)
        if not control:
            data.append(c)
    return data


def _fire_planned(entry: tuple, s: CFState) -> "int | tuple":
    """A step of `_PLAN_FORWARD`, `_PLAN_DEAD`, `_PLAN_SWITCH` or
    `_PLAN_READ` (`_plan`) fired in `s` as `_fire` fires it; what it wrote
    as `RunTrace.recording` notes it: how many tokens, or for a Switch
    whether each is DEAD."""
    tokens = s.tokens
    kind = entry[0]
    if kind == _PLAN_SWITCH:
        # (`_fire`'s case SWITCH: the inputs taken as for every step, then
        # the rule on the predicate, the same tests in the same order)
        _, ins, pair, port0, port1, ctl, written, every = entry
        data = _taken(tokens, ins)
        s.fired.add(pair)
        value, pred = data
        if not (isinstance(pred, Tensor) and pred.dtype == "bool" and pred.shape == ()):
            failed = failed_dead(pred if isinstance(pred, Error) else Error(BAD_PREDICATE))
            for key in every:
                tokens[key] = failed
            return tuple(type(tokens[k]) is _Dead for k in every)
        first, second = (DEAD, value) if bool(pred.array) else (value, DEAD)
        for key in port0:
            tokens[key] = first
        for key in port1:
            tokens[key] = second
        for key in ctl:
            tokens[key] = GO
        return tuple(type(tokens[k]) is _Dead for k in written)
    if kind == _PLAN_READ:
        # (`_fire`'s cases VAR and READ: the inputs taken, the one result on
        # port 0, GO on the control edges)
        _, ins, pair, outs, ctl, var = entry
        data = _taken(tokens, ins)
        s.fired.add(pair)
        if var is not None:
            value = VarRef(var)
        else:
            value = data[0] if isinstance(data[0], Error) else s.var_value[data[0].var]
        for key in outs:
            tokens[key] = value
        for key in ctl:
            tokens[key] = GO
        return len(outs) + len(ctl)
    if kind == _PLAN_DEAD:
        _, ins, pair, keys, dead_exit = entry
        contents = [tokens.get(key) if const else tokens.pop(key, None)
                    for key, const, _control in ins]
        s.fired.add(pair)
        if dead_exit is not None:
            s.dead_exits.add(dead_exit)
        if keys:
            value = _dead_of(contents)
            for key in keys:
                tokens[key] = value
        return len(keys)
    _, choice, pairs, ins, outs, ctl, started = entry
    data = _taken(tokens, ins)
    fired = s.fired
    for pair in pairs:
        fired.add(pair)
    if started is not None:
        s.started.add(started)
    if choice >= 0:
        index = _VALUE_INDEX.get(choice)
        if index is None:
            index = _VALUE_INDEX[choice] = Tensor(choice, "int32")
        results = (data[choice], index)
    else:
        results = (data[0],)
    count = len(ctl)
    for port, value in enumerate(results):
        for key in outs.get(port, ()):
            tokens[key] = value
            count += 1
    for key in ctl:
        tokens[key] = GO
    return count


def _other_path(paths: list, tr: RunTrace, i: int, wrote) -> "RunTrace | None":
    """A path that agrees with `tr` on its first i steps and their writes,
    whose step i is tr's with the writes `wrote`, or None."""
    st = tr.steps[i][0]
    for other in paths:
        if other is not tr and len(other.steps) > i and other.steps[i] == (st, wrote) \
                and other.steps[:i] == tr.steps[:i]:
            return other
    return None


def kept_path(m: "Machine", schedule: Sequence[str]) -> "RunTrace | None":
    """A path that this thread's Machine of `m.p` (`machine_for`, the same
    semantics and iteration bound) kept, whose schedule is `schedule`
    label for label, and which `m` decides as the machine that recorded
    it did; or None.  `m` may be another Machine of the same program,
    of a subclass that runs the functions elsewhere (an array back end:
    backends/controlflow.py `DeviceMachine`): what a path's replay rests
    on (RunTrace) is the deciding methods and switches, which must be the
    recording machine's own, not the class that computes the values.

    The i-th label of a kept path's schedule is its i-th step's: a run
    that met no choice fires one step per schedule entry, in order
    (`behaviours`: a batch, a chain and a lone step each add their
    step's entry as they fire it), and `recording` notes the steps in
    the same order.  Not looked up in another thread's machines, and no
    machine is made for it."""
    cache = getattr(_machines, "cache", None)
    if not cache:
        return None
    got = cache.get((id(m.p), m.semantics, m.bound, Machine.lone_accesses))
    if got is None or got[0] is not m.p or got[1].g is not m.g:
        return None   # (the same graph: a step's token keys are its edges' ids)
    flags = _trace_flags(m)
    if not flags[-1]:
        return None
    want = tuple(schedule)
    for tr in got[1].__dict__.get("_traces", ()):
        # (every flag but the class: index 6)
        if tr.flags[:6] == flags[:6] and tr.flags[7:] == flags[7:] and tr.schedule == want:
            return tr
    return None


def fire_path(m: "Machine", tr: "RunTrace", feeds: Mapping[str, Value],
              init: Mapping[str, Value], deadline: float | None = None,
              clock_steps: int = REPLAY_CLOCK_STEPS) -> "CFState | None":
    """The state at the end of path `tr` (`kept_path`) fired by `m` from σ,
    or None where a step writes other than it wrote when recorded (RunTrace:
    the decisions would then differ; the caller finds the steps itself).
    Past `deadline` (time.monotonic()) BudgetExceeded, the clock read every
    `clock_steps` steps.  With every step's writes as recorded, the
    state's skeleton is the recorded run's at each step (RunTrace argues
    it), so each step is enabled where it fires, the steps are the ones
    the schedule's labels name there, and the run ends where the schedule
    does."""
    started = time.monotonic()
    got = _replay(m, [tr], feeds, init, started,
                  None if deadline is None else max(0.0, deadline - started), clock_steps)
    return None if got is None else got[0]


#: Whether :func:`outcomes` turns Python's cyclic collector off during a run
#: (see there)
collector_off = True
#: Outcomes(P, σ) by (program object, σ, semantics, observation, iteration
#: bound, whether TensorFlow's kernels may run, the registry functions of
#: P's ops), at most _OUTCOMES_MAX answers (the one used least recently
#: dropped first) of at most _OUTCOMES_MAX_SET outcomes each.  An answer is
#: a function of these: the engine is deterministic (a depth-first search
#: in a fixed order), a registry function is a function of its op,
#: attributes and inputs (:data:`_APPLIED` argues it), and a program is
#: immutable.  The checker compares P with its rewrite at the same σ for
#: every rewrite of P (`tfsem grappler`, one original and five optimizers
#: on the real corpus; σ drawn from P's interface with the same seed), and
#: a σ may come twice in one check (a drawn σ equal to a float σ,
#: minimization): P's runs are made once.  An answer that ran out of
#: states or seconds is not remembered (a run that reached a loop's
#: iteration bound is: LoopBoundExceeded is its answer with that bound);
#: one that used more states than a later call allows is not reused for
#: it.  The kernels an answer used are noted again when it is reused, so
#: that the verdict still names them.
_OUTCOMES: dict = {}
_OUTCOMES_MAX = 64
_OUTCOMES_MAX_SET = 1024


def _remember(key: tuple, entry: tuple) -> None:
    """Keep `entry`, dropping the answer used least recently when full (the
    original's answers, reused by every rewrite's check, stay while the
    rewrites' own come and go)."""
    while len(_OUTCOMES) >= _OUTCOMES_MAX:
        try:
            del _OUTCOMES[next(iter(_OUTCOMES))]
        except (KeyError, RuntimeError, StopIteration):   # (another thread's change)
            break
    _OUTCOMES[key] = entry


def _outcomes_key(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                  semantics: str, observe: str, max_iterations: int,
                  held: "tuple | None" = None) -> "tuple | None":
    """The key of Outcomes(P, σ) in :data:`_OUTCOMES`, or None (not remembered:
    a value with no exact key, as in :data:`_APPLIED`)."""
    parts = []
    for mapping in (feeds, init):
        items = []
        for name in sorted(mapping):
            k = _value_key(mapping[name])
            if k is None:
                return None
            items.append((name, k))
        parts.append(tuple(items))
    if held is None:
        held = _functions_of(p)
    functions = tuple((op, id(f)) for op, f in zip(_function_ops(p), held))
    return (id(p), semantics, observe, max_iterations, parts[0], parts[1],
            fns._kernels.enabled(), functions, Machine.lone_accesses, Machine.batch_eager,
            Machine.chain_eager)


def _functions_of(p: Program) -> tuple:
    """The registry functions of P's ops, the objects: an entry of
    :data:`_OUTCOMES` keeps them, so that no function registered later (a
    plugin's `register(..., replace=True)`) can take the id() of one in its
    key while the entry lives (review20: a replaced function's id reused by
    its replacement answered with the old function's outcomes)."""
    return tuple(fns.lookup(op) for op in _function_ops(p))


def _function_ops(p: Program) -> tuple[str, ...]:
    """The registry functions P's runs may apply: its nodes' ops and its
    Assigns' update functions.  Kept on the program object, as `graph_of`
    keeps its graph: a function of its nodes' ops alone, which a frozen
    Program never changes (`outcomes` asked for it twice per call, a walk
    over every node: 2-3% of the corpus's control-flow checks)."""
    kept = getattr(p, "__dict__", None)
    got = kept.get("_function_ops") if kept is not None else None
    if got is not None:
        return got
    ops = {n.op for n in p.nodes if n.op not in (VAR, READ, ASSIGN)}
    ops |= {n.fn for n in p.nodes if n.op == ASSIGN}
    got = tuple(sorted(ops))
    if kept is not None:
        kept["_function_ops"] = got
    return got


def attr_keys(p: Program) -> dict:
    """Each node's attributes' exact key (`_exact_key`, filled in as nodes
    are asked for by name), one table per program object, kept on it as
    `_function_ops` is: a node's attributes are frozen with the program.
    Shared by the program's Machines (:meth:`Machine._applied_key`) and
    the array back ends' (backends/controlflow.py), which each made it
    again: a confirmation's two machines keyed every attribute tensor of
    the program anew."""
    kept = getattr(p, "__dict__", None)
    if kept is None:
        return {}
    got = kept.get("_cf_attr_keys")
    if got is None:
        got = kept.setdefault("_cf_attr_keys", {})
    return got


#: Machines by program object, per thread (:func:`machine_for`).
_machines = threading.local()
_MACHINES_MAX = 16


def machine_for(p: Program, semantics: str = ATOMIC,
                max_iterations: int = DEFAULT_MAX_ITERATIONS) -> Machine:
    """A Machine for `p` (its `g` the program's graph), made once per program
    object, semantics and bound in each thread: its tables and static
    analyses (the accesses' conflicts, the loops' chains, the Exits that may
    fire twice) are functions of these, and were computed again for each σ
    (a tenth of a run on keras_gru_loop).  Its count of states explored
    starts at 0.

    At most _MACHINES_MAX are kept, the one used least recently dropped
    first.  (They were all dropped when the cache was full: on the real
    corpus's loop graphs, one original checked against Grappler's five
    rewrites, each rewrite and each back-end replay adds a Machine, and the
    original's, with the paths it kept (RunTrace), went with the others in
    the middle of a graph's checks: the next check explored the original
    again, 50-75 ms on keras_gru_loop.)  Which Machines are kept changes no
    answer: a Machine is a function of the program object, the semantics
    and the bound (its tables and analyses), and a kept path is checked at
    every step of its replay (RunTrace); a Machine made again gives what
    the dropped one gave."""
    cache = getattr(_machines, "cache", None)
    if cache is None:
        cache = _machines.cache = {}
    key = (id(p), semantics, max_iterations, Machine.lone_accesses)
    got = cache.pop(key, None)
    if got is not None and got[0] is p:
        cache[key] = got          # (used last: dropped last)
        got[1].explored = 0
        return got[1]
    # (`cache and`: with no room at all (_MACHINES_MAX 0) the emptied table
    # has no first entry to drop, and next() raised StopIteration; the
    # table then keeps the one Machine just made, as it did before)
    while cache and len(cache) >= _MACHINES_MAX:
        del cache[next(iter(cache))]
    m = Machine(p, graph_of(p), semantics, max_iterations)
    cache[key] = (p, m)
    return m
