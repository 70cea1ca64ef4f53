"""The fast outcome-set oracle.

It computes the same set as the brute force of `semantics.py` (and is tested
against it), but avoids enumerating firing orders:

1. **Eager steps.**  A step that conflicts with no step still to come commutes
   with all of them, so it fires at once and creates no choice: functions and
   Var nodes always; a Read of x once no write to x remains; an Assign to x
   once it is the last access to x.  Two steps *conflict* when they access the
   same variable and one of them writes it.
2. **Relevance.**  A node whose result can reach neither an output nor a
   variable that is observed or read by a relevant Read is irrelevant: its
   values are left out of state keys, and its accesses conflict with nothing.
3. **Memoization.**  States are keyed by the steps fired, the relevant values
   in transit, the values of the variables that still matter (these by their
   exact bits: a NaN's payload is a value a later step may show, see
   `_Component.key`), and the outputs fetched so far; a state reached twice
   is explored once.
4. **Stubborn sets.**  At a choice state only the enabled steps of a stubborn
   set are explored (Valmari's construction: for an enabled step, every step
   it conflicts with; for a disabled one, the producer of one missing input).
   In an acyclic program every run ends, and stubborn sets preserve every
   terminal state, hence every outcome.
5. **Components.**  Nodes joined by an edge or by a shared variable form a
   component; components never interact, so the outcome set is the product of
   theirs.  :class:`OutcomeSet` keeps the product form, so `count` stays exact
   when the product is astronomically large.

A budget (states explored, seconds) ends the search with
:class:`BudgetExceeded`, never a hang or a silently partial set.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
import weakref
from dataclasses import dataclass
from typing import Iterator, Mapping

from . import applications as _applications
from . import functions as fns
from . import kernels as _kernels
from .budget import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES, Budget, BudgetExceeded  # noqa: F401
from .outcomes import OUTPUTS, Outcome, combine
from .program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Program
from .semantics import DECOMPOSED, READ_STEP, WRITE_STEP
from .values import FLOAT_DTYPES, UNINITIALIZED, Error, Tensor, Value, exact

_VAR, _READ, _ASSIGN, _FN = 0, 1, 2, 3
#: a node's kind by its op (any other op: _FN)
_KINDS = {VAR: _VAR, READ: _READ, ASSIGN: _ASSIGN}

#: The concrete engines' runs evaluate the eager steps' TensorFlow kernels
#: together, in one message to the kernels' child (`_Component._prefetch`).
PREFETCH = True


class _Cached:
    """A node's function with its results remembered by arguments.

    Functions are deterministic and a node's attributes are fixed, so a
    node's arguments determine its results: the search reaches the same
    application in many states (71-87% of firings land on a state already
    seen) and recomputes nothing.  Memory stays bounded: only applications whose arguments and
    results hold at most MAX_ELEMENTS elements together are kept, and the
    functions of one component share a budget of BUDGET_ELEMENTS elements
    (`shared`, a one-element list); past it, results are computed and not
    kept.  Large tensors are never kept alive by the cache.  A node whose
    applications rarely repeat (fewer than one hit in four after
    GIVE_UP_AFTER misses: figure 1's Concat of a new order each time) stops
    caching and frees its memo.

    Arguments are remembered by their exact bits (`values.exact`), not by
    SPEC equality: a NaN's payload and sign reach a result through Bitcast,
    PackScatter's bytes or a kernel, so Bitcast's result for NaN 0x7fc00001
    is not its result for NaN 0x7fc00002, which SPEC equality calls equal.
    With an `owner` (the component, `_Component.cache_functions`) whose
    `payloads` is still False, no value of its search has had bits that SPEC
    equality forgets, so the arguments themselves are that key (see
    `_Component.key`); each result computed is watched for such bits."""

    __slots__ = ("fn", "name", "memo", "shared", "hits", "misses", "owner")
    MAX_ELEMENTS = 1024
    BUDGET_ELEMENTS = 1 << 21
    GIVE_UP_AFTER = 2000

    def __init__(self, fn, shared: list[int] | None = None, owner: "_Component | None" = None) -> None:
        self.fn, self.name, self.memo = fn, fn.name, {}
        self.shared = shared if shared is not None else [self.BUDGET_ELEMENTS]
        self.hits = self.misses = 0
        self.owner = owner

    def apply(self, args, attrs=None):
        memo = self.memo
        owner = self.owner
        size = 0
        if memo is not None:
            for v in args:
                if isinstance(v, Tensor):
                    size += v.array.size
            if size > self.MAX_ELEMENTS:
                memo = None      # never kept (below), so never found: no key made
        if memo is None:
            out = self.fn.apply(args, attrs)
            if owner is not None and not owner.payloads:
                owner.watch(out)
            return out
        key = tuple(args) if owner is not None and not owner.payloads else tuple(map(exact, args))
        try:
            out = memo[key]
            self.hits += 1
            return out
        except KeyError:
            pass
        except TypeError:                            # an unhashable value
            out = self.fn.apply(args, attrs)
            if owner is not None and not owner.payloads:
                owner.watch(out)
            return out
        out = self.fn.apply(args, attrs)
        if owner is not None and not owner.payloads:
            owner.watch(out)
        self.misses += 1
        if self.misses >= self.GIVE_UP_AFTER and self.hits * 4 < self.misses:
            self.memo = None                         # rarely repeats: stop, free the memo
            return out
        for v in out:
            if isinstance(v, Tensor):
                size += v.array.size
        if size <= self.MAX_ELEMENTS and self.shared[0] >= size:
            self.shared[0] -= max(size, 1)
            self.memo[key] = out
        return out


# ---------------------------------------------------------------------------
# Outcome sets in product form


@dataclass
class OutcomeSet:
    """Outcomes(P, σ) as a product of independent components' outcome sets.

    Each component maps its partial outcomes to a witness schedule; a full
    outcome combines one partial outcome per component, and its witness is the
    concatenation of theirs (components share no edge and no variable).
    """

    components: list[dict[Outcome, tuple[str, ...]]]
    states: int = 0
    seconds: float = 0.0

    @property
    def count(self) -> int:
        return math.prod(len(c) for c in self.components)

    def __len__(self) -> int:
        return self.count

    def items(self) -> Iterator[tuple[Outcome, list[str]]]:
        """Each outcome with its witness schedule (lazily, in product order;
        a component is iterated again for each combination of the ones before
        it, never listed whole: a symmetric component's Mapping stores orbits,
        not outcomes)."""
        def product(i: int):
            if i == len(self.components):
                yield ()
                return
            for item in self.components[i].items():
                for rest in product(i + 1):
                    yield (item, *rest)
        combos = (itertools.product(*(list(c.items()) for c in self.components))
                  if all(isinstance(c, dict) for c in self.components) else product(0))
        for combo in combos:
            yield combine([o for o, _ in combo]), [s for _, w in combo for s in w]

    def __iter__(self) -> Iterator[Outcome]:
        return (o for o, _ in self.items())

    def as_dict(self, limit: int | None = None) -> dict[Outcome, list[str]]:
        return dict(itertools.islice(self.items(), limit))

    def __contains__(self, outcome: Outcome) -> bool:
        return self.witness(outcome) is not None

    def witness(self, outcome: Outcome) -> list[str] | None:
        """A schedule producing `outcome`, or None if it is not an outcome."""
        outs = dict(outcome.outputs)
        state = dict(outcome.state) if outcome.state is not None else None
        schedule: list[str] = []
        for comp in self.components:
            any_part = next(iter(comp))
            part = Outcome(tuple((k, outs.get(k)) for k, _ in any_part.outputs),
                           None if state is None else tuple((k, state.get(k)) for k, _ in any_part.state or ()))
            if part not in comp:
                return None
            schedule.extend(comp[part])
        return schedule


# ---------------------------------------------------------------------------
# The engine


class _Component:
    """One component of a program, compiled for the search."""

    def __init__(self, p: Program, names: list[str], semantics: str, observe: str,
                 feeds: Mapping[str, Value], variables: list[str], outputs: list[str]):
        self.decomposed = semantics == DECOMPOSED
        self.observe_state = observe != OUTPUTS
        self.names = names
        self.variables = variables
        self.output_names = outputs
        n = len(names)
        self.n = n
        index = {name: i for i, name in enumerate(names)}
        self.kind = [0] * n
        self.fn: list[fns.Function | None] = [None] * n
        self.attrs = [None] * n
        self.var = [None] * n           # variable accessed (Read/Assign) or named (Var)
        self.n_slots = [0] * n
        self.value_slot = [-1] * n      # Assign: slot of the tensor input
        self.data_slots: list[list[int]] = [[] for _ in range(n)]
        # successors: per node, list of (port, target node, slot); port -1 = control
        self.succ: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.fetch: list[list[tuple[int, str]]] = [[] for _ in range(n)]
        self.initial: list[tuple[int, int, Value | None]] = []   # pre-filled slots
        self.feed_slots: list[tuple[int, str]] = []   # (index in initial, feed name)
        # (the lists and the functions looked up once per op name, in locals:
        # the same values as looked up per node)
        kinds, fn_of, var_of, attrs_of = self.kind, self.fn, self.var, self.attrs
        n_slots, succ, initial, data_slots = self.n_slots, self.succ, self.initial, self.data_slots
        node_of, looked_up = p.node, {}
        for i, name in enumerate(names):
            node = node_of[name]
            op = node.op
            kind = kinds[i] = _KINDS.get(op, _FN)
            attrs_of[i] = node.attrs
            if kind == _FN or kind == _ASSIGN:
                fn_name = op if kind == _FN else node.fn
                f = looked_up.get(fn_name)
                if f is None:
                    f = looked_up[fn_name] = fns.get(fn_name)
                fn_of[i] = f
            if kind == _VAR:
                var_of[i] = node.var
            elif kind != _FN:
                var_of[i] = p.accessed_variable(name)
            inputs = node.inputs
            n_slots[i] = max(1, len(inputs))
            if not inputs:
                initial.append((i, 0, None))
            data_pos = 0
            access = kind == _READ or kind == _ASSIGN
            for slot, inp in enumerate(inputs):
                t = type(inp)
                if t is DataIn or (t is not ControlIn and t is not FeedIn
                                   and isinstance(inp, DataIn)):
                    succ[index[inp.node]].append((inp.port, i, slot))
                    data = True
                elif t is ControlIn or isinstance(inp, ControlIn):
                    succ[index[inp.node]].append((-1, i, slot))
                    data = False
                elif t is FeedIn or isinstance(inp, FeedIn):
                    self.feed_slots.append((len(initial), inp.name))
                    initial.append((i, slot, feeds[inp.name]))
                    data = True
                else:
                    initial.append((i, slot, None))
                    data = False
                if data:
                    if not (access and data_pos == 0):
                        data_slots[i].append(slot)
                    if kind == _ASSIGN and data_pos == 1:
                        self.value_slot[i] = slot
                    data_pos += 1
        for name, port in ((o, p.outputs[o]) for o in outputs):
            self.fetch[index[port.node]].append((port.port, name))
        # the nodes whose function may run on TensorFlow's kernel (`_prefetch`)
        self.kernel_step = [f is not None and f.tf_kernel is not None and self.kind[i] == _FN
                            for i, f in enumerate(self.fn)]
        self._relevance(p, index)
        # decomposed mode: the read step of an Assign-Snd (a Write) takes a
        # value w that Snd ignores (Snd(w, v) = v, and an error v leaves the
        # variable as it is at the *write* step): the step commutes with
        # every other step, so it is no access (it fires eagerly) and its w
        # is left out of state keys (two states that differ only in it have
        # the same futures up to that w, hence the same outcomes).
        self.blind_read = [self.decomposed and self.kind[i] == _ASSIGN
                           and p.node[names[i]].fn == "Snd" for i in range(n)]
        # access steps per variable: step id -> (is_write); ids: node i, or n + i
        # for the write step of a decomposed Assign.
        self.access_steps: dict[str, list[int]] = {}
        for i in range(n):
            if self.kind[i] in (_READ, _ASSIGN) and self.counted[i]:
                steps = ([n + i] if self.blind_read[i] else [i, n + i]) \
                    if (self.decomposed and self.kind[i] == _ASSIGN) else [i]
                self.access_steps.setdefault(self.var[i], []).extend(steps)
        # (`conflicts`, which only the search's stubborn sets read, is
        # worked out when first asked for)

    @property
    def conflicts(self) -> dict[int, list[int]]:
        """For each access step, the steps of other nodes it conflicts with.
        (Kept in `_shared`, which the copies of a compiled component share
        with it: worked out once, when a search first needs it, as
        `_producers` is.  A concrete run by priority -- the probe's and
        every confirmation's -- never does: MobileNetV2's 1,164 accesses
        to 424 variables made 27,456 pairs at every compile, a third of
        its time.)"""
        shared = self.__dict__.setdefault("_shared", {})
        cached = shared.get("conflicts")
        if cached is None:
            n = self.n
            cached = {}
            for steps in self.access_steps.values():
                for u in steps:
                    cached[u] = [w for w in steps if w % n != u % n
                                 and (self.is_write(u) or self.is_write(w))]
            shared["conflicts"] = cached
        return cached

    def straight_line(self, tag: str, priority, deadline: float | None = None,
                      started: float = 0.0) -> "_Line | None":
        """The straight line (`_Line`) of this component's run by
        `priority(step)`, a priority that depends on the component's
        structure only, named `tag`: kept with the compiled component
        (`_shared`) and made when a run of it is asked for the second time
        (a component run once pays for no dry run); None before, and where
        the line does not take the program."""
        shared = self.__dict__.setdefault("_shared", {})
        key = ("line", tag)
        line = shared.get(key)
        if line is None:
            shared[key] = False      # (asked once: the engine runs it)
            return None
        if line is False:
            # (a dry run past `deadline` raises BudgetExceeded, as the run
            # would: the line is built at a later run)
            line = shared[key] = _build_line(self, priority, shared.get(("trace", tag)),
                                             deadline, started) or 0
            shared.pop(("trace", tag), None)
        return line or None

    def record_steps(self, tag: str):
        """On this copy (a run's own), the steps its next run fires and the
        kernel evaluations asked for together, recorded for the line named
        `tag` (`straight_line`), which is then built from them instead of
        from a dry run: the same order (no step looks at a value, `_Line`).
        The function returned stores the record; call it when the run has
        ended (a run cut short leaves none).  None where the line has one,
        or needs none."""
        shared = self.__dict__.setdefault("_shared", {})
        if shared.get(("line", tag)) is not False or ("trace", tag) in shared:
            return None
        trace: list[int] = []
        groups: dict[int, tuple[int, ...]] = {}
        # (the groups only where the kernels are on: off, `_prefetch`
        # leaves the steps it would ask for unmarked, and the record says
        # it has none (None): a line built while the kernels are on takes
        # its groups from a dry run, one built while they are off takes
        # the steps recorded and no groups (it asks for each evaluation
        # alone, whose answer is the same, if they are on at its runs))
        kernels_on = PREFETCH and _kernels.enabled()
        engine_fire, engine_prefetch = self.fire, self._prefetch

        def fire(st, t):
            trace.append(t)
            engine_fire(st, t)

        def prefetch(st, t, asked):
            steps = self._prefetch_steps(st, t, asked)
            if len(steps) >= 2:
                groups[len(trace)] = tuple(steps)
            return engine_prefetch(st, t, asked)

        self.fire = fire
        if kernels_on:
            self._prefetch = prefetch

        def done() -> None:
            shared[("trace", tag)] = (trace, groups if kernels_on and _kernels.enabled() else None)
        return done

    def with_feeds(self, feeds: Mapping[str, Value]) -> "_Component":
        """A copy of this component (its structure shared: nothing of it
        changes after construction) fed `feeds` instead; its functions
        not yet cached (`cache_functions`)."""
        c = copy.copy(self)
        initial = list(self.initial)
        for k, name in self.feed_slots:
            i, slot, _ = initial[k]
            initial[k] = (i, slot, feeds[name])
        c.initial = initial
        return c

    def cache_functions(self) -> "_Component":
        """Remember each node's function results by arguments (`_Cached`).
        The concrete engines call this; the symbolic checker's subclass,
        which replaces `fn` with its own algebra, does not.

        The cached functions watch their results for bits that SPEC equality
        forgets (`payloads`, see `key`): every value of a run is a feed, an
        initial value (`root`) or a function's result, so from here on the
        component knows whether any value of its search may have them."""
        if self._watching:
            return self                  # (again: a search may have set payloads already)
        shared = [_Cached.BUDGET_ELEMENTS]
        self.fn = [f if f is None or isinstance(f, _Cached) else _Cached(f, shared, self)
                   for f in self.fn]
        self._watching = True
        self.payloads = False
        self.watch([v for _i, _slot, v in self.initial if v is not None])
        return self

    #: Whether a value of this component's search may have bits that SPEC
    #: equality forgets (a NaN other than numpy's NaN of its dtype): then
    #: `key` and the function cache key values by `values.exact`.  True
    #: unless `cache_functions` installed the watch (the symbolic subclass's
    #: values are its own terms: keyed exactly, as their own keys).
    payloads = True
    _watching = False

    def watch(self, values) -> None:
        """Set `payloads` when one of `values` has bits SPEC equality forgets
        (it stays set: keys made before it hold no such value, so they are
        the exact keys already)."""
        for v in values:
            if (v._bits is not None) if type(v) is Tensor else (exact(v) is not v):
                self.payloads = True
                return

    def _relevance(self, p: Program, index: Mapping[str, int]) -> None:
        """Which nodes can affect the outcome: a worklist over data edges
        backwards from the fetched nodes, through Reads to the variables they
        read, and from a relevant variable to every Assign to it."""
        n = self.n
        preds: list[list[int]] = [[] for _ in range(n)]
        assigns: dict[str, list[int]] = {}
        for i in range(n):
            for port, j, slot in self.succ[i]:
                if port >= 0:
                    preds[j].append(i)
            if self.kind[i] == _ASSIGN:
                assigns.setdefault(self.var[i], []).append(i)
        relevant = [False] * n
        rel_vars: set[str] = set()
        work: list[int] = []

        def mark(i: int) -> None:
            if not relevant[i]:
                relevant[i] = True
                work.append(i)

        def mark_var(x: str) -> None:
            if x not in rel_vars:
                rel_vars.add(x)
                for a in assigns.get(x, ()):
                    mark(a)

        for i in range(n):
            if self.fetch[i]:
                mark(i)
        if self.observe_state:
            for x in self.variables:
                mark_var(x)
        while work:
            i = work.pop()
            if self.kind[i] == _READ:
                mark_var(self.var[i])
            for j in preds[i]:
                mark(j)
        self.relevant = relevant
        self.rel_vars = rel_vars
        # accesses that take part in conflicts
        self.counted = [relevant[i] and self.kind[i] in (_READ, _ASSIGN) for i in range(n)]

    # -- steps ----------------------------------------------------------------

    def is_write(self, t: int) -> bool:
        return t >= self.n or (self.kind[t] == _ASSIGN and not self.decomposed)

    def label(self, t: int) -> str:
        if t >= self.n:
            return self.names[t - self.n] + WRITE_STEP
        if self.decomposed and self.kind[t] == _ASSIGN:
            return self.names[t] + READ_STEP
        return self.names[t]

    def eager(self, st: "_State", t: int) -> bool:
        i = t % self.n
        if not self.counted[i] or (t < self.n and self.blind_read[i]):
            return True
        x = self.var[i]
        if self.is_write(t):
            # the last access to x, or a write nobody can observe any more
            return st.nr[x] == 0 and (st.nw[x] == 1 or not self.observe_state)
        own = 1 if (self.decomposed and self.kind[i] == _ASSIGN) else 0
        return st.nw[x] - own == 0

    def root(self, init: Mapping[str, Value]) -> "_State":
        """The state before any step, variables as `init` gives them (a
        variable missing from it starts uninitialized)."""
        st = self.start()
        st.vars = {x: init.get(x, Error(UNINITIALIZED)) for x in self.variables}
        if not self.payloads:
            self.watch(st.vars.values())
        return st

    def outcome(self, st: "_State") -> Outcome:
        """The outcome of a terminal state: its outputs and, when the state
        is observed, its variables' values."""
        outs = tuple((k, st.outputs[k]) for k in self.output_names)
        state = tuple((x, st.vars[x]) for x in self.variables) if self.observe_state else None
        return Outcome(outs, state)

    def start(self) -> "_State":
        st = _State()
        st.missing = list(self.n_slots)
        st.inbox = {}
        st.vars = {}
        st.outputs = {}
        st.pending = {}
        st.nw = {x: 0 for x in self.access_steps}
        st.nr = {x: 0 for x in self.access_steps}
        for x, steps in self.access_steps.items():
            for t in steps:
                if self.is_write(t):
                    st.nw[x] += 1
                else:
                    st.nr[x] += 1
        st.ready = set()
        st.eager = []
        st.fired = 0
        st.done = bytearray(2 * self.n)
        st.sched = None
        for i, slot, value in self.initial:
            if value is not None:
                st.inbox[(i, slot)] = value
            st.missing[i] -= 1
            if st.missing[i] == 0:
                self._enable(st, i)
        return st

    def _enable(self, st: "_State", t: int) -> None:
        if self.eager(st, t):
            st.eager.append(t)
        else:
            st.ready.add(t)

    def fire(self, st: "_State", t: int) -> None:
        n = self.n
        i = t % n
        kind = self.kind[i]
        st.fired |= 1 << t
        st.done[t] = 1
        st.sched = (self.label(t), st.sched)
        inbox = st.inbox
        if t >= n:                                   # decomposed write step
            w, v = st.pending.pop(i)
            self._store(st, i, w, v)
        elif kind == _FN:
            args = [inbox.pop((i, s)) for s in self.data_slots[i]]
            results = self.fn[i].apply(args, self.attrs[i])
            self._deliver(st, i, results)
            return self._signal(st, i)
        elif kind == _VAR:
            self._deliver(st, i, (None,))
            return self._signal(st, i)
        elif kind == _READ:
            x = self.var[i]
            self._deliver(st, i, (st.vars[x],))
        elif self.decomposed:                        # decomposed read step
            x = self.var[i]
            st.pending[i] = (st.vars[x], inbox.pop((i, self.value_slot[i])))
        else:                                        # atomic Assign
            x = self.var[i]
            self._store(st, i, st.vars[x], inbox.pop((i, self.value_slot[i])))
        # an access to x: update conflict counts, re-classify waiting steps on x
        x = self.var[i]
        if self.counted[i] and not (t < n and self.blind_read[i]):
            if self.is_write(t):
                st.nw[x] -= 1
            else:
                st.nr[x] -= 1
            for u in [u for u in st.ready if self.var[u % n] == x]:
                if self.eager(st, u):
                    st.ready.discard(u)
                    st.eager.append(u)
        if kind == _ASSIGN and self.decomposed and t < n:
            self._enable(st, n + i)                  # the write step may follow
        else:
            self._signal(st, i)

    def _store(self, st: "_State", i: int, w: Value, v: Value) -> None:
        if isinstance(v, Error):
            return
        (new,) = self.fn[i].apply((w, v))
        if not isinstance(new, Error):
            st.vars[self.var[i]] = new

    def _deliver(self, st: "_State", i: int, results) -> None:
        inbox, missing = st.inbox, st.missing
        for port, j, slot in self.succ[i]:
            if port >= 0:
                if results[port] is not None:
                    inbox[(j, slot)] = results[port]
                missing[j] -= 1
                if missing[j] == 0:
                    self._enable(st, j)
        for port, name in self.fetch[i]:
            st.outputs[name] = results[port]

    def _signal(self, st: "_State", i: int) -> None:
        missing = st.missing
        for port, j, slot in self.succ[i]:
            if port < 0:
                missing[j] -= 1
                if missing[j] == 0:
                    self._enable(st, j)

    #: whether `_prefetch` runs where the functions are not cached
    #: (`cache_functions`): a concrete run that fires each node once
    #: (refute.canonical_outcome) sets it on its copy
    prefetch_uncached = False

    def close(self, st: "_State") -> None:
        eager = st.eager
        if not (self._watching or self.prefetch_uncached) or not PREFETCH:
            while eager:
                self.fire(st, eager.pop())
            return
        kernel = self.kernel_step
        asked = None
        while eager:
            t = eager.pop()
            if t < self.n and kernel[t] and eager and (asked is None or t not in asked):
                asked = self._prefetch(st, t, asked)
            self.fire(st, t)

    def run_by_priority(self, st: "_State", key, deadline: float | None = None,
                        started: float = 0.0, steps: int = 0) -> int:
        """Fire from `st` until no step is enabled, choosing among the
        enabled steps the one first by `key(step)`; the choices made are
        counted on from `steps` and returned.  Past `deadline`
        (time.monotonic(), read every 64 choices) BudgetExceeded.  One run
        of the engine's own step function (refute's canonical run, the
        straight line's dry run): only the choice is the caller's."""
        while True:
            self.close(st)
            if not st.ready:
                return steps
            steps += 1
            if deadline is not None and steps & 63 == 0 and time.monotonic() > deadline:
                raise BudgetExceeded("seconds", max(0.0, deadline - started), steps)
            t = min(st.ready, key=key)
            st.ready.discard(t)
            self.fire(st, t)

    def _prefetch(self, st: "_State", t: int, asked: set | None) -> set | None:
        """Before step t's function runs on TensorFlow's kernel: the kernel
        evaluations of t and of every other eager step that may need one,
        made in one message to the kernels' child (`kernels.prefetch`), so
        that the fires find them cached.  Their arguments are all there (an
        eager step of a function is enabled), so each request is the very one
        its fire makes; the order of the fires, hence the run and its
        schedule, is unchanged.  A step is asked for once (`asked`)."""
        steps = self._prefetch_steps(st, t, asked)
        if len(steps) < 2 or not _kernels.enabled():
            return asked
        asked = set() if asked is None else asked
        asked.update(steps)
        inbox = st.inbox
        self._ask_kernels(steps, lambda u: [inbox.get((u, s)) for s in self.data_slots[u]])
        return asked

    def _prefetch_steps(self, st: "_State", t: int, asked: set | None) -> list[int]:
        """The steps `_prefetch` asks for before step t: t and the eager
        steps that may need a kernel, not asked for yet (which steps these
        are depends on the program's structure only)."""
        n, kernel = self.n, self.kernel_step
        return [t] + [u for u in st.eager
                      if u < n and kernel[u] and (asked is None or u not in asked)]

    def _ask_kernels(self, steps: list[int], args_of) -> None:
        """The kernel evaluations the functions of `steps` would ask for,
        at the arguments `args_of(step)` (None where one is not there),
        made in one message (`_prefetch`)."""
        with _kernels.collecting() as requests:
            for u in steps:
                f = self.fn[u]
                f = f.fn if isinstance(f, _Cached) else f
                if not isinstance(f, fns.Function):
                    continue
                args = args_of(u)
                if any(a is None for a in args):
                    continue
                if not f.name.startswith("tf.") and not any(
                        isinstance(a, Tensor) and a.dtype in FLOAT_DTYPES for a in args):
                    continue    # (a model with a kernel takes it for floats only)
                try:
                    f.apply(args, self.attrs[u])
                except Exception:  # noqa: BLE001 (its fire meets it again, as before)
                    pass
        if len(requests) >= 2:
            _kernels.prefetch(requests)

    def key(self, st: "_State") -> tuple:
        """The memo key of a state: two states with equal keys have the same
        futures, hence the same outcomes.

        Values still in the run (in transit, in variables, in pending
        decomposed writes) are keyed by their exact bits (`values.exact`),
        not by SPEC equality: two states whose x holds NaNs of different
        payloads are different states, since a later Read of x may pass the
        NaN to a function that shows its bits (Bitcast to int32 turns NaN
        0x7fc00001 and 0x7fc00002 into two different outputs; merged, one of
        the two outcomes was lost).  The outputs fetched so far are keyed by
        SPEC equality: a fetched output never changes and feeds nothing, and
        outcomes are compared by SPEC equality, so two states that differ
        only there reach the same outcomes.

        Until a value of the search has such bits (`payloads`, watched at
        the feeds, the initial values and every function result), every
        value is its own exact key and the key is made without asking
        (`exact` on each value took 7% of lost_update(6)'s time)."""
        rel = self.relevant
        if not self.payloads:
            vals = tuple(v for k, v in sorted(st.inbox.items()) if rel[k[0]])
            vars_ = tuple(st.vars[x] for x in self.variables
                          if x in self.rel_vars and (self.observe_state or st.nr.get(x)))
            blind = self.blind_read
            pending = tuple(sorted(((i, wv[1] if blind[i] else wv)
                                    for i, wv in st.pending.items() if rel[i]), key=_first))
            return (st.fired, vals, vars_, tuple(sorted(st.outputs.items())), pending)
        vals = tuple(exact(v) for k, v in sorted(st.inbox.items()) if rel[k[0]])
        # x's value matters while it is observed or a relevant read of it remains
        vars_ = tuple(exact(st.vars[x]) for x in self.variables
                      if x in self.rel_vars and (self.observe_state or st.nr.get(x)))
        blind = self.blind_read
        pending = tuple(sorted(((i, exact(wv[1]) if blind[i] else (exact(wv[0]), exact(wv[1])))
                                for i, wv in st.pending.items() if rel[i]), key=_first))
        return (st.fired, vals, vars_, tuple(sorted(st.outputs.items())), pending)

    # -- stubborn sets ----------------------------------------------------------

    def stubborn(self, st: "_State") -> list[int]:
        """The enabled steps of the smallest stubborn set seeded by one enabled
        step (the first seed in order among equally small ones).

        Two shortcuts leave the choice unchanged.  A closure is abandoned as
        soon as it has as many enabled steps as the best one so far (it could
        only tie, and a tie keeps the earlier seed).  A seed inside an earlier
        seed's closure is not skipped (its closure may be smaller), but the
        closure is reachability in a graph that does not depend on the seed,
        so a seed's closure contains the closure of every member: a seed
        whose closure reached the best seed's cannot be smaller and is
        abandoned when that is seen."""
        ready = st.ready
        if len(ready) == 1:
            return list(ready)
        best: list[int] | None = None
        best_seed = -1
        for seed in sorted(ready):
            chosen = self._closure(st, seed, len(best) if best is not None else None, best_seed)
            if chosen is not None:
                best, best_seed = chosen, seed
                if len(best) == 1:
                    break
        return best or []

    def _closure(self, st: "_State", seed: int, limit: int | None = None,
                 stop: int = -1) -> list[int] | None:
        """The enabled steps of the stubborn closure of `seed`, or None when
        it has at least `limit` of them or reaches `stop` (whose closure it
        then contains)."""
        done, ready, conflicts = st.done, st.ready, self.conflicts
        members = {seed}
        work = [seed]
        enabled = 1
        if limit is not None and enabled >= limit:
            return None
        while work:
            u = work.pop()
            if u in ready:
                for w in conflicts.get(u, ()):
                    if w not in members and not done[w]:
                        if w == stop:
                            return None
                        members.add(w)
                        work.append(w)
                        if w in ready:
                            enabled += 1
                            if limit is not None and enabled >= limit:
                                return None
            else:
                enabler = self._enabler(st, u)
                if enabler is not None and enabler not in members:
                    if enabler == stop:
                        return None
                    members.add(enabler)
                    work.append(enabler)
                    if enabler in ready:
                        enabled += 1
                        if limit is not None and enabled >= limit:
                            return None
        return sorted(t for t in members if t in ready)

    def _enabler(self, st: "_State", t: int) -> int | None:
        """A step that must fire before the disabled step t can."""
        n = self.n
        if t >= n:
            return t - n                             # a write step needs its read step
        for src, _slot in self._producers[t]:
            if not st.done[self._completes(src)]:
                return self._completes(src)
        return None

    def _completes(self, i: int) -> int:
        """The step after which node i's outputs and control signals exist."""
        return self.n + i if (self.decomposed and self.kind[i] == _ASSIGN) else i

    @property
    def _producers(self) -> list[list[tuple[int, int]]]:
        # (kept in `_shared`, which the copies of a compiled component share
        # with it: worked out once, when a search first needs it)
        shared = self.__dict__.setdefault("_shared", {})
        cached = shared.get("producers")
        if cached is None:
            cached = [[] for _ in range(self.n)]
            for i in range(self.n):
                for port, j, slot in self.succ[i]:
                    cached[j].append((i, slot))
            shared["producers"] = cached
        return cached


class _Stub:
    """A function in a dry run (`straight_line`): the number of results
    the function gives, each a placeholder, and nothing computed."""

    __slots__ = ("out",)

    def __init__(self, n_out: int) -> None:
        self.out = (_DRY,) * n_out

    def apply(self, args, attrs=None):
        return self.out


#: the placeholder value of a dry run
_DRY = object()

#: refute.canonical_outcome runs a component on its straight line
#: (`straight_line`) after the first run; False: on the general engine
#: every time (the differential tests' reference)
STRAIGHT_LINE = True

#: bytes of argument and result tensors a straight line keeps of its
#: nodes' last applications (`_Line`, "Each node's last application")
LINE_MEMO_BYTES = 16 << 20
#: runs a straight line makes without its nodes' last applications after
#: one in which fewer than half of its function nodes found theirs
IDLE_RUNS = 3

# the straight line's operations (`_Line.ops`)
_OP_FN, _OP_NONE, _OP_READ, _OP_ASSIGN, _OP_READ_STEP, _OP_WRITE_STEP = range(6)


class _Line:
    """A component's run by a fixed priority, as a straight line.

    **Why it is the engine's own run.**  Which steps are enabled, which of
    them are eager and which wait in the ready set (`close`, `fire`,
    `_enable`, `eager`) depends on the program's structure only: the
    counts of missing inputs, which fall by one for every producer that
    fires whatever it delivers, and the counts of accesses to each
    variable left (`nw`, `nr`), which fall by one for every access that
    fires.  No value is ever looked at to decide what comes next: `fire`
    stores a function's results, a Read's value, an Assign's new value (an
    error leaves the variable as it was: the value changes, the steps do
    not), and `_deliver` counts an input delivered whether or not a value
    came with it.  So with the choice among enabled steps made by a fixed
    priority of steps, every run of a component fires the same steps in
    the same order, at every σ: the order of one run made with placeholder
    values (`straight_line`'s dry run: each function replaced by a stub
    that gives the right number of placeholders) is the order of them all.
    A `_Line` is that order with, for each step, where its arguments come
    from (the producer's output, or a feed) and which values it frees (its
    readers all fired), and fires the steps one after the other computing
    what `fire` computes: a function's results of the same arguments by
    the same `Function.apply`, a Read's value of the variable, an Assign's
    `_store`.  Each step sees the values it sees on the engine, so every
    function is applied to the same arguments, in the same order, and the
    outcome and the schedule are the engine's.  What is left out is the
    bookkeeping that chooses the next step (missing counts, the ready set
    and its eager steps, the access counts, the fired-steps bitmask, the
    priority table's minimum over the ready set).

    The kernel evaluations the engine asks for in one message (`_prefetch`)
    are asked for at the same points, for the same steps (`groups`: the
    dry run records them; which steps they are is structural too, and all
    their arguments are there, as they are on the engine: each of those
    steps was enabled at that point); the kernels' answers are the same
    whether or not they were asked for together (oracle/kernels.py).

    **Each node's last application.**  Inside an application memo (a
    check's `applications.scope()`) a function node keeps the arguments
    and the results of its last application that the memo may keep
    (`Function.remembered`: tensors and error values, not made while the
    kernels' evaluations are deferred), and the TensorFlow ops they stand
    for.  When the same node meets the very same argument objects again
    (compared by identity, the objects kept alive by the entry, so an id
    is never another object's), its results are those results, and the
    ops are noted again (`kernels.note`), as a hit in the memo answers.
    This is the memo's own argument (oracle/applications.py): a node's
    function and attributes are fixed (the compiled component's; a
    registration that replaces a function compiles the component again,
    explore `compiled`), a tensor is immutable, every function is
    deterministic; and what else keys an application in the memo --
    whether TensorFlow's kernels are on, the tensor size limit, the memo
    itself -- is the line's key for the last applications it keeps
    (`keyed`): a run under another key starts them afresh.  Where a run
    found fewer than half of its nodes' arguments unchanged (σ that move
    through most of the program: the probe's plain, huge and NaN feeds),
    the next IDLE_RUNS runs apply every function as the engine does, and
    keep nothing; which path a run takes changes what it costs, never
    what it computes.  Outside an application memo
    (`TFSEM_APPLICATION_MEMO=0`) nothing is kept.  The answers kept hold
    at most LINE_MEMO_BYTES of tensors per line.

    A program the straight line does not take (a function's argument that
    comes from a Var, which the engine has no value for) has none, and
    runs on the engine.  tests/test_explore_straight_line.py runs the two
    side by side on generated programs (both semantics, both
    observations, feeds, variables uninitialized) and on real graphs: the
    same outcome bit for bit, the same schedule, the same exceptions."""

    __slots__ = ("ops", "labels", "size", "fetched", "groups", "args_of", "steps", "kept",
                 "kept_bytes", "idle", "n_fn")

    def run(self, comp: "_Component", init: Mapping[str, Value], deadline: float | None = None,
            started: float = 0.0, counted: int = 0
            ) -> tuple[Outcome, tuple[str, ...], int] | None:
        """The component's outcome at `comp`'s feeds and `init`, its schedule,
        and the steps fired so far (`counted` before: the clock is read every
        64 steps, past `deadline` BudgetExceeded); None, nothing fired,
        where a feed or a variable's initial value is None (no value: the
        engine's run is left to meet it).  A function's results are never
        None (`Function.apply` gives tensors, error values, or an argument
        forwarded), so every value a step reads is there, as on the
        engine."""
        env: list = [None] * self.size
        initial = comp.initial
        for k, _name in comp.feed_slots:
            value = initial[k][2]
            if value is None:
                return None        # (no value: the engine's run fails there)
            env[-1 - k] = value
        vars_ = {x: init.get(x, Error(UNINITIALIZED)) for x in comp.variables}
        if any(v is None for v in vars_.values()):
            return None
        pending: dict = {}
        groups = self.groups if PREFETCH and self.groups and _kernels.enabled() else None
        memo = _applications._active
        last = None
        if memo is not None and LINE_MEMO_BYTES > 0 and not _kernels.deferring():
            key = (memo.serial, _applications._forced(), memo.kernels_env, fns.MAX_TENSOR_ELEMENTS)
            # (the key and its applications are one attribute, read once: a
            # run of another thread under another key that replaced them
            # between a check of the key and a read of the list would leave
            # this run answering from that key's applications)
            state = self.kept
            if state is None or state[0] != key:
                # (kept afresh: this run is not judged, the next one is)
                state = self.kept = (key, [None] * len(self.ops))
                self.kept_bytes, self.idle = 0, -1
            if self.idle > 0:
                # (the last run that kept found fewer than half of its
                # nodes' arguments unchanged: the σ move through most of
                # the program, and looking up and keeping cost more than
                # it saves; IDLE_RUNS runs go without, then one keeps
                # afresh, and the run after it is judged again)
                self.idle -= 1
                if self.idle == 0:
                    self.idle = -1
            else:
                last = state[1]
        hits = 0
        note = _kernels.note
        steps = counted
        pos = 0
        for op in self.ops:
            if groups is not None and pos in groups:
                args_of = self.args_of
                comp._ask_kernels(groups[pos], lambda u: [env[k] for k in args_of[u]])
            pos += 1
            if deadline is not None:
                steps += 1
                if steps & 63 == 0 and time.monotonic() > deadline:
                    raise BudgetExceeded("seconds", max(0.0, deadline - started), steps)
            code = op[0]
            if code == _OP_FN:
                _c, fn, attrs, argidx, outs, frees = op
                args = [env[k] for k in argidx]
                if last is None:
                    results = fn.apply(args, attrs)
                else:
                    ids = tuple(map(id, args))
                    kept = last[pos - 1]
                    if kept is not None and kept[0] == ids:
                        results = kept[2]
                        if kept[3]:
                            note(kept[3])
                        hits += 1
                    else:
                        results, ops, keep = fn.remembered(memo, args, attrs)
                        if keep:
                            self._keep(last, pos - 1, ids, args, results, ops)
                for port, k in outs:
                    env[k] = results[port]
            elif code == _OP_READ:
                _c, x, k, frees = op
                env[k] = vars_[x]
            elif code == _OP_ASSIGN:
                _c, fn, x, k, frees = op
                v = env[k]
                if not isinstance(v, Error):
                    (new,) = fn.apply((vars_[x], v))
                    if not isinstance(new, Error):
                        vars_[x] = new
            elif code == _OP_READ_STEP:
                _c, i, x, k, frees = op
                pending[i] = (vars_[x], env[k])
            elif code == _OP_WRITE_STEP:
                _c, fn, i, x, frees = op
                w, v = pending.pop(i)
                if not isinstance(v, Error):
                    (new,) = fn.apply((w, v))
                    if not isinstance(new, Error):
                        vars_[x] = new
            else:
                frees = op[1]
            for k in frees:
                env[k] = None
        if last is not None:
            if self.idle < 0:
                self.idle = 0              # (kept afresh: the next run is judged)
            elif hits * 2 < self.n_fn:
                self.idle = IDLE_RUNS
            if hits:
                with memo.lock:
                    memo.hits += hits
        outs = tuple((name, env[k]) for name, k in self.fetched)
        state = tuple((x, vars_[x]) for x in comp.variables) if comp.observe_state else None
        return Outcome(outs, state), self.labels, steps

    def _keep(self, last: list, at: int, ids: tuple, args: list, results: tuple,
              ops: frozenset) -> None:
        """Node at `at` keeps this application (its arguments by identity),
        within LINE_MEMO_BYTES."""
        size = 0
        for v in args:
            if type(v) is Tensor:
                size += v.array.nbytes
        for v in results:
            if type(v) is Tensor:
                size += v.array.nbytes
        old = last[at]
        if old is not None:
            self.kept_bytes -= old[4]
            last[at] = None
        if self.kept_bytes + size <= LINE_MEMO_BYTES:
            last[at] = (ids, tuple(args), results, ops, size)
            self.kept_bytes += size


#: `Function.apply` itself: a function whose class has its own gets no line
_FUNCTION_APPLY = fns.Function.apply


def _build_line(comp: "_Component", priority, recorded: tuple | None = None,
                deadline: float | None = None, started: float = 0.0) -> _Line | None:
    """The straight line of `comp`'s run that fires, among the enabled
    steps, the one first by `priority(step)` (a function of the step
    only): the steps of a run of the engine, and the kernel evaluations it
    asked for together, `recorded` from a run at some σ (`record_steps`)
    or else from a dry run with every function a stub (see `_Line`: the
    same steps either way).  None where the program is one the line does
    not take."""
    if not all(f is None or type(f).apply is _FUNCTION_APPLY for f in comp.fn):
        # (a component whose functions are wrapped, not the canonical run's;
        # or of a class with its own `apply`, e.g. the TensorList ops',
        # which the line's `Function.remembered` would go around: the
        # engine runs it)
        return None
    if recorded is not None and (recorded[1] is not None
                                 or not (PREFETCH and _kernels.enabled())):
        trace, groups = list(recorded[0]), dict(recorded[1] or {})
        if len(trace) != len(set(trace)):
            return None
        return _line_of(comp, trace, groups)
    dry = copy.copy(comp)
    dry.fn = [None if f is None else _Stub(f.n_out) for f in comp.fn]
    initial = list(comp.initial)
    for k, _name in comp.feed_slots:
        i, slot, _ = initial[k]
        initial[k] = (i, slot, _DRY)
    dry.initial = initial
    dry._watching = False
    dry.prefetch_uncached = True
    trace: list[int] = []
    groups: dict[int, tuple[int, ...]] = {}
    engine_fire = dry.fire

    def fire(st, t):
        trace.append(t)
        engine_fire(st, t)

    def prefetch(st, t, asked):
        # (as `_prefetch` with the kernels on; the steps only, asked for
        # at the run)
        steps = dry._prefetch_steps(st, t, asked)
        if len(steps) < 2:
            return asked
        asked = set() if asked is None else asked
        asked.update(steps)
        groups[len(trace)] = tuple(steps)
        return asked

    dry.fire = fire
    dry._prefetch = prefetch
    try:
        # (the run's deadline, read as the run reads it: a dry run costs
        # the engine's bookkeeping, seconds on a large component)
        dry.run_by_priority(dry.root({}), priority, deadline, started)
    except BudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 (the engine meets it again at the run)
        return None
    if len(trace) != len(set(trace)):
        return None
    return _line_of(comp, trace, groups)


def _line_of(comp: "_Component", trace: list[int], groups: dict) -> _Line | None:
    """The line firing `trace`'s steps in order, asking the kernels for
    `groups` (`_build_line`)."""
    n = comp.n
    # where each value lives: env[k] for a producer's output port (k from
    # 0), env[-1 - k] for the k-th pre-filled slot (a feed)
    source: dict[tuple[int, int], int] = {}
    size = 0
    out_id: dict[tuple[int, int], int] = {}
    for j in range(n):
        for port, i, slot in comp.succ[j]:
            if port < 0:
                continue
            if comp.kind[j] == _VAR:
                if slot in comp.data_slots[i] or slot == comp.value_slot[i]:
                    return None    # (no value: the engine's run fails there)
                continue
            k = out_id.get((j, port))
            if k is None:
                k = out_id[(j, port)] = size
                size += 1
            source[(i, slot)] = k
    fetched_ids = {}
    for j in range(n):
        for port, name in comp.fetch[j]:
            k = out_id.get((j, port))
            if k is None:
                k = out_id[(j, port)] = size
                size += 1
            fetched_ids[name] = k
    n_initial = len(comp.initial)
    feed_index = {k for k, _name in comp.feed_slots}
    for k, (i, slot, _value) in enumerate(comp.initial):
        if k in feed_index:
            source[(i, slot)] = size + n_initial - 1 - k     # (env[-1 - k], counted from 0)
    total = size + n_initial
    # the last step to read each value, and the values never read
    readers: dict[int, int] = {}
    reads: list[tuple[int, ...]] = []
    for pos, t in enumerate(trace):
        i = t % n
        if t >= n:
            ks = ()
        elif comp.kind[i] == _FN:
            try:
                ks = tuple(source[(i, s)] for s in comp.data_slots[i])
            except KeyError:
                return None
        elif comp.kind[i] == _ASSIGN:
            vs = comp.value_slot[i]
            if vs < 0 or (i, vs) not in source:
                return None
            ks = (source[(i, vs)],)
        else:
            ks = ()
        reads.append(ks)
        for k in ks:
            readers[k] = pos
    keep = set(fetched_ids.values())
    frees_at: list[list[int]] = [[] for _ in trace]
    for k, pos in readers.items():
        if k not in keep:
            frees_at[pos].append(k)
    ops = []
    args_of: dict[int, tuple[int, ...]] = {}
    for pos, t in enumerate(trace):
        i = t % n
        kind = comp.kind[i]
        frees = tuple(frees_at[pos])
        if t >= n:                                       # decomposed write step
            ops.append((_OP_WRITE_STEP, comp.fn[i], i, comp.var[i], frees))
        elif kind == _FN:
            outs = tuple((port, out_id[(i, port)]) for port in range(comp.fn[i].n_out)
                         if (i, port) in out_id and (out_id[(i, port)] in readers
                                                     or out_id[(i, port)] in keep))
            args_of[t] = tuple(k - total if k >= size else k for k in reads[pos])
            ops.append((_OP_FN, comp.fn[i], comp.attrs[i], args_of[t], outs, frees))
        elif kind == _READ:
            k = out_id.get((i, 0))
            if k is None or (k not in readers and k not in keep):
                ops.append((_OP_NONE, frees))        # (a value nobody reads)
            else:
                ops.append((_OP_READ, comp.var[i], k, frees))
        elif kind == _VAR:
            ops.append((_OP_NONE, frees))            # (delivers no value)
        elif comp.decomposed:                            # decomposed read step
            ops.append((_OP_READ_STEP, i, comp.var[i], _neg(reads[pos][0], size, total), frees))
        else:
            ops.append((_OP_ASSIGN, comp.fn[i], comp.var[i], _neg(reads[pos][0], size, total),
                        frees))
    line = _Line()
    line.kept, line.kept_bytes, line.idle = None, 0, 0
    line.n_fn = sum(1 for op in ops if op[0] == _OP_FN)
    line.ops = tuple(_renumber(op, size, total) for op in ops)
    line.labels = tuple(comp.label(t) for t in trace)
    line.size = total
    line.fetched = tuple((name, fetched_ids[name]) for name in comp.output_names)
    line.groups = groups
    line.args_of = args_of
    line.steps = tuple(trace)
    return line


def _neg(k: int, size: int, total: int) -> int:
    """An env index as the run addresses it (a feed's from the end)."""
    return k - total if k >= size else k


def _renumber(op: tuple, size: int, total: int) -> tuple:
    """`op` with its frees addressed as the run does (`_neg`)."""
    return op[:-1] + (tuple(_neg(k, size, total) for k in op[-1]),)


def _first(item: tuple):
    return item[0]


class _State:
    __slots__ = ("missing", "inbox", "vars", "outputs", "pending", "nw", "nr",
                 "ready", "eager", "fired", "done", "sched")

    def copy(self) -> "_State":
        s = _State()
        s.missing = self.missing.copy()
        s.inbox = self.inbox.copy()
        s.vars = self.vars.copy()
        s.outputs = self.outputs.copy()
        s.pending = self.pending.copy()
        s.nw = self.nw.copy()
        s.nr = self.nr.copy()
        s.ready = self.ready.copy()
        s.eager = self.eager.copy()
        s.fired = self.fired
        s.done = self.done.copy()
        s.sched = self.sched
        return s


def _schedule(linked) -> tuple[str, ...]:
    out = []
    while linked is not None:
        out.append(linked[0])
        linked = linked[1]
    return tuple(reversed(out))


def _explore(comp: _Component, init: Mapping[str, Value], budget: Budget) -> dict[Outcome, tuple[str, ...]]:
    results: dict[Outcome, tuple[str, ...]] = {}
    seen: set[tuple] = set()
    stack = [comp.root(init)]
    while stack:
        st = stack.pop()
        comp.close(st)
        if not st.ready:
            results.setdefault(comp.outcome(st), _schedule(st.sched))
            continue
        stack.extend(successors(comp, st, seen, budget))
    return results


def successors(comp: _Component, st, seen: set[tuple], budget: Budget) -> list:
    """The states after each step of `st`'s stubborn set, in the order a
    depth-first stack pushes them (the first choice last, reusing `st`
    itself); none when `st`'s key was seen before.  Counts one state against
    `budget`."""
    k = comp.key(st)
    if k in seen:
        return []
    seen.add(k)
    budget.tick()
    choices = comp.stubborn(st)
    out = []
    for t in reversed(choices):
        s2 = st.copy() if t != choices[0] else st
        s2.ready.discard(t)
        comp.fire(s2, t)
        out.append(s2)
    return out


#: Per program (while it lives): its components, and its components compiled
#: (`compiled`) by (registry version, semantics, observation, nodes,
#: variables, outputs).  A Program is immutable: both are functions of it.
_COMPONENTS: "weakref.WeakKeyDictionary[Program, list]" = weakref.WeakKeyDictionary()
_COMPILED: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()
#: compiled components kept per program (the probe's and the refutation's:
#: the original's and the rewrite's, each observed one way or two)
COMPILED_PER_PROGRAM = 8


def compiled(p: Program, names: list[str], semantics: str, observe: str,
             feeds: Mapping[str, Value], variables: list[str],
             outputs: list[str]) -> _Component:
    """`_Component(p, names, semantics, observe, feeds, variables, outputs)`,
    its structure compiled once per program and reused at every σ
    (`with_feeds`): MobileNetV2's one component of 5,895 nodes took 0.2-0.8
    s to compile, once per σ and program in the probe and the refutation."""
    key = (fns.version, semantics, observe, tuple(names), tuple(variables), tuple(outputs))
    try:
        per = _COMPILED.get(p)
    except TypeError:                    # (not weakly referenceable: no cache)
        return _Component(p, names, semantics, observe, feeds, variables, outputs)
    if per is None:
        per = _COMPILED[p] = {}
    template = per.get(key)
    if template is not None and not fns.still_registered(template._looked_up):
        template = None     # (a registry entry changed without `register`: version as it was)
    if template is None:
        template = _Component(p, names, semantics, observe, feeds, variables, outputs)
        # the functions it looked up, by name: reused only while each is
        # still the one registered under its name
        template._looked_up = {p.node[names[i]].op if template.kind[i] == _FN
                               else p.node[names[i]].fn: f
                               for i, f in enumerate(template.fn) if f is not None}
        template.__dict__.setdefault("_shared", {})   # (what the copies work out once)
        for k, _name in template.feed_slots:          # (this σ's feeds are not kept alive)
            i, slot, _ = template.initial[k]
            template.initial[k] = (i, slot, None)
        if len(per) >= COMPILED_PER_PROGRAM:
            per.pop(next(iter(per)))
        per[key] = template
    return template.with_feeds(feeds)


def components(p: Program) -> list[tuple[list[str], list[str], list[str]]]:
    """Independent parts of p: (nodes in topological order, variables, outputs).
    Nodes are joined by edges and by accessing the same variable; a variable
    no node accesses is a component of its own.  (Worked out once per
    program; each call gets its own lists.)"""
    try:
        known = _COMPONENTS.get(p)
    except TypeError:
        known = None
    if known is None:
        known = _components(p)
        try:
            _COMPONENTS[p] = known
        except TypeError:
            pass
    return [(list(names), list(variables), list(outputs)) for names, variables, outputs in known]


def _components(p: Program) -> list[tuple[list[str], list[str], list[str]]]:
    # (union-find over numbers: a node's name and a variable's each get one
    # when first met, in two tables, as the keys "n:NAME" and "v:NAME" were
    # before; the groups are the same partition, listed in the same order:
    # by the first of their nodes in topological order, then those of
    # variables no node accesses, by name)
    parent: list[int] = []
    node_ids: dict[str, int] = {}
    var_ids: dict[str, int] = {}

    def number(table: dict[str, int], name: str) -> int:
        k = table.get(name)
        if k is None:
            k = table[name] = len(parent)
            parent.append(k)
        return k

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    predecessors = p.predecessors
    for n in p.nodes:
        me = number(node_ids, n.name)
        for pred in predecessors(n.name):
            parent[find(me)] = find(number(node_ids, pred))
        if n.op == VAR:
            parent[find(me)] = find(number(var_ids, n.var))
        elif n.op == READ or n.op == ASSIGN:
            x = p.accessed_variable(n.name)
            if x is not None:
                parent[find(me)] = find(number(var_ids, x))
    for x in p.variables:
        number(var_ids, x)
    groups: dict[int, tuple[list[str], list[str], list[str]]] = {}
    for name in p.topological_order:
        groups.setdefault(find(node_ids[name]), ([], [], []))[0].append(name)
    for x in sorted(p.variables):
        groups.setdefault(find(var_ids[x]), ([], [], []))[1].append(x)
    for o in sorted(p.outputs):
        groups[find(number(node_ids, p.outputs[o].node))][2].append(o)
    return list(groups.values())
