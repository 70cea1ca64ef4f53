"""Symmetry reduction: one representative per orbit of identical threads.

Many programs consist of *identical threads*: subgraphs equal up to renaming
that touch the same shared variables (lost_update_used(k): k copies of
Read x -> Add 1 -> Write x).  Permuting such threads maps runs to runs, so the
outcome set is closed under permuting them, and the reference engine's
memoized search visits every one of the k! arrangements of each state.  This
module explores the quotient: the reference engine's search
(`explore._Component`: eager steps, relevance, stubborn sets) with the memo
key *canonicalized* under the group, and returns the outcome set of a
component as a lazy Mapping (:class:`SymmetricOutcomes`) that stores one
representative outcome per orbit and counts, tests and lists the rest
without storing them.

**Detection** (`detect`).  In a component, a *source* is a node with no data
or control edge in (Var, Const, a function of feeds only).  The other nodes,
joined by their edges (not by variables), form the *threads*; a source all of
whose consumers lie in one thread belongs to that thread, the other sources
are *shared*.  No edge joins two threads, and no edge goes from a thread to
a shared node (a shared node has no edge in).  Colour refinement (initial
colour: op, attributes, each input's kind and port, a shared source or feed
named exactly, the output ports fetched; then the colours of the neighbours
by slot and port, until stable) orders each thread's nodes; a thread whose
nodes do not get distinct colours is *ambiguous* and stays alone.  Threads
with the same colours are candidates, and every candidate bijection f
(thread T -> thread U) is VERIFIED edge by edge (`_verify`): for every node a
of T, f(a) has a's op and attributes (so a Var names the same variable and an
Assign the same function), the same number of inputs, and input by input the
same kind: an edge from b in T <-> from f(b) with the same port; from a
shared node b <-> from b itself with the same port; a feed <-> the same feed;
and a's fetched ports equal f(a)'s.  Then the swap of T and U (identity
elsewhere) is an automorphism of the program: it maps nodes to nodes of the
same op and attributes, edges to edges (every edge ends in a thread node or
starts and ends outside T and U), fixes every variable and feed, and maps
output edges to output edges (an output of T to the output of U on the
corresponding node and port).  A thread that fails the check stays alone
(never a wrong claim: a thread left out only costs time).  A class is a
group of >= 2 pairwise-verified threads; the group is the product of the
symmetric groups of the classes.

**Why the quotient search finds every outcome up to the group.**  Write
s ~ s' when an automorphism π maps state s to s' (fired steps, values in
transit, pending decomposed writes, outputs produced, variable values).
π maps runs to runs: a step of π(s) is π of a step of s and fires to π of
the successor, so the terminal states reachable from π(s) are π of those
from s (Full(π s) = π Full(s)); relevance and conflicts are defined by the
structure, which π preserves.  The key (`_SymComponent.key`) is the
reference key with each class's threads sorted by their local state (the
interned tuple of its steps' fired flags, relevant values in transit, pending
writes and its outputs so far): equal keys mean the states are related by a
permutation of threads within classes, up to the parts the reference key
already leaves out (irrelevant values, which it shows do not change the
outcomes).  Claim: when the search ends, for every state s it popped, the
orbit of every outcome of Full(s) has a representative in the result.  By
induction on the number of steps left (every run of an acyclic program fires
every step once):

* eager steps (`close`) commute with every other step (explore.py), so
  closing s does not change Full(s);
* s expanded: its successors are the steps of a stubborn set, which preserve
  every reachable terminal state (Valmari; the stubborn set may depend on
  node numbering, which π does not preserve, but only this preservation is
  used, never equivariance of the choice): Full(s) = union of Full(s2) over
  its successors s2, each with fewer steps left, covered by induction;
* s skipped: a state s' with the same key was expanded before (it is added
  to `seen` when expanded, and its subtree is explored to the end).  s' is
  π(s), so it has fired as many steps as s: it is no ancestor of s (an
  ancestor has fired fewer), and with the same number of steps left it is
  covered by the expanded case, which used only states with fewer steps
  left.  Full(s) = π⁻¹ Full(s'), whose orbits are those of Full(s').

The root is popped, so every outcome's orbit is represented.  The stored
representatives' witnesses are real runs (the engine's own steps); the
witness of another outcome of the orbit is the representative's with node
names renamed by the permutation, a run of the program because π maps runs
to runs.  Atomic and decomposed modes and both observe settings use the
same argument: π fixes variables, so the observed state is unchanged.

**Orbits of outcomes.**  π permutes, within each class, the threads' tuples
of output values (in the canonical order of the thread's outputs) and fixes
shared outputs and the final variable values.  So an orbit is every
arrangement of the representative's multiset of thread tuples over the
class's threads: its size is the multinomial k! / prod(m_i!) per class, and
two outcomes are in one orbit exactly when their shared parts are equal and
each class holds the same multiset of tuples (the canonical key
`SymmetricOutcomes._canon`).
"""

from __future__ import annotations

import math
from collections.abc import ItemsView, Iterator, Mapping
from itertools import repeat
from operator import itemgetter

from . import functions as fns
from .explore import _ASSIGN, Budget, _Component, _schedule
from .outcomes import Outcome
from .program import ControlIn, DataIn, FeedControlIn, FeedIn, Program
from .values import Value, exact

_ABSENT = ("absent",)        # a hashable marker no Value equals


def _bytes_getter(positions: list[int]):
    """f(buffer) -> the bytes at `positions` (a tuple, or () for none)."""
    if not positions:
        return lambda buf: ()
    get = itemgetter(*positions)
    if len(positions) == 1:
        return lambda buf: (get(buf),)
    return get


# ---------------------------------------------------------------------------
# Detection


class Symmetry:
    """The verified thread classes of one component.

    `classes`: a list of classes, each a list of >= 2 threads; a thread is
    the list of its node names in canonical order (position m of one thread
    corresponds to position m of every other thread of its class).
    `outputs`: per class, per thread, its output names in canonical order
    (node by node, then by port and name)."""

    def __init__(self, classes: list[list[list[str]]], outputs: list[list[list[str]]]):
        self.classes = classes
        self.outputs = outputs

    @property
    def order(self) -> int:
        """The size of the group (product of k! over classes)."""
        return math.prod(math.factorial(len(c)) for c in self.classes)

    def __bool__(self) -> bool:
        return bool(self.classes)


def detect(p: Program, names: list[str], outputs: list[str]) -> Symmetry:
    """The identical threads of the component with nodes `names` and output
    names `outputs` (see the module docstring); an empty Symmetry when none."""
    node = p.node
    in_comp = set(names)

    def edge_preds(a: str) -> list[str]:
        return [i.node for i in node[a].inputs if isinstance(i, (DataIn, ControlIn))]

    sources = [a for a in names if not edge_preds(a)]
    source_set = set(sources)
    parent = {a: a for a in names if a not in source_set}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    consumers: dict[str, list[str]] = {a: [] for a in names}
    for a in names:
        for b in edge_preds(a):
            if b not in in_comp:
                return Symmetry([], [])               # cannot happen in a component
            consumers[b].append(a)
            if a in parent and b in parent:
                parent[find(a)] = find(b)
    thread_of: dict[str, str] = {a: find(a) for a in parent}
    for s in sources:
        roots = {thread_of[c] for c in consumers[s]}
        if len(roots) == 1:
            thread_of[s] = roots.pop()
    threads: dict[str, list[str]] = {}
    for a in names:
        if a in thread_of:
            threads.setdefault(thread_of[a], []).append(a)
    if len(threads) < 2:
        return Symmetry([], [])
    fetched: dict[str, list[tuple[int, str]]] = {}
    for o in outputs:
        port = p.outputs[o]
        fetched.setdefault(port.node, []).append((port.port, o))
    for v in fetched.values():
        v.sort()

    # colour refinement over all threads at once (colours are interned ints,
    # comparable across threads)
    table: dict[tuple, int] = {}

    def intern(t: tuple) -> int:
        return table.setdefault(t, len(table))

    colour: dict[str, int] = {}
    for a, root in thread_of.items():
        desc = []
        for i in node[a].inputs:
            if isinstance(i, DataIn):
                desc.append(("d", i.port) if thread_of.get(i.node) == root else ("sd", i.node, i.port))
            elif isinstance(i, ControlIn):
                desc.append(("c",) if thread_of.get(i.node) == root else ("sc", i.node))
            elif isinstance(i, FeedIn):
                desc.append(("f", i.name))
            elif isinstance(i, FeedControlIn):
                desc.append(("fc", i.name))
            else:
                return Symmetry([], [])               # an input kind this module does not know
        colour[a] = intern(("init", node[a].op, fns.attrs_key(node[a].attrs), tuple(desc),
                            tuple(port for port, _ in fetched.get(a, ()))))
    distinct = len(set(colour.values()))
    for _ in range(len(thread_of)):
        new = {}
        for a, root in thread_of.items():
            ins = tuple(colour[i.node] if isinstance(i, (DataIn, ControlIn)) and thread_of.get(i.node) == root
                        else -1 for i in node[a].inputs)
            outs = tuple(sorted((colour[c], slot) for c in consumers[a]
                                for slot, i in enumerate(node[c].inputs)
                                if isinstance(i, (DataIn, ControlIn)) and i.node == a))
            new[a] = intern(("ref", colour[a], ins, outs))
        colour = new
        d = len(set(colour.values()))
        if d == distinct:
            break
        distinct = d

    groups: dict[tuple, list[list[str]]] = {}
    for root, members in threads.items():
        cols = [colour[a] for a in members]
        if len(set(cols)) != len(cols):
            continue                                  # ambiguous: no symmetry for it
        ordered = sorted(members, key=colour.__getitem__)
        groups.setdefault(tuple(colour[a] for a in ordered), []).append(ordered)
    classes, class_outputs = [], []
    for members in groups.values():
        if len(members) < 2:
            continue
        first = members[0]
        cls = [first]
        for other in members[1:]:
            if _verify(p, first, other, thread_of, fetched, consumers):
                cls.append(other)
        if len(cls) >= 2:
            classes.append(cls)
            class_outputs.append([[o for a in t for _port, o in fetched.get(a, ())] for t in cls])
    return Symmetry(classes, class_outputs)


def _verify(p: Program, t: list[str], u: list[str], thread_of: dict[str, str],
            fetched: dict[str, list[tuple[int, str]]], consumers: dict[str, list[str]]) -> bool:
    """Is f: t[m] -> u[m] an isomorphism of threads that fixes everything
    else?  Checked edge by edge (see the module docstring): every edge into
    a node of t or u is checked below, and no edge leaves t or u (checked
    here, though the construction of threads already ensures it)."""
    if len(t) != len(u) or len(set(t)) != len(t) or len(set(u)) != len(u) or set(t) & set(u):
        return False
    ts, us = set(t), set(u)
    if any(c not in ts for a in t for c in consumers[a]) or any(c not in us for b in u for c in consumers[b]):
        return False
    f = dict(zip(t, u))
    root_t, root_u = thread_of[t[0]], thread_of[u[0]]
    if any(thread_of[a] != root_t for a in t) or any(thread_of[b] != root_u for b in u):
        return False
    for a, b in f.items():
        na, nb = p.node[a], p.node[b]
        if na.op != nb.op or fns.attrs_key(na.attrs) != fns.attrs_key(nb.attrs):
            return False
        if len(na.inputs) != len(nb.inputs):
            return False
        for ia, ib in zip(na.inputs, nb.inputs):
            if type(ia) is not type(ib):
                return False
            if isinstance(ia, (DataIn, ControlIn)):
                if isinstance(ia, DataIn) and ia.port != ib.port:
                    return False
                if ia.node in f:
                    if ib.node != f[ia.node]:
                        return False
                elif thread_of.get(ia.node) is not None and thread_of.get(ia.node) != root_t:
                    return False                      # an edge from another thread: cannot be
                elif ib.node != ia.node:
                    return False                      # a shared node: the same one
            elif isinstance(ia, (FeedIn, FeedControlIn)):
                if ia.name != ib.name:
                    return False
            else:
                return False
        if [port for port, _ in fetched.get(a, ())] != [port for port, _ in fetched.get(b, ())]:
            return False
    return True


# ---------------------------------------------------------------------------
# The quotient search


class _SymComponent:
    """A compiled component with the memo key canonicalized under its
    symmetry (the search itself is `explore._Component`'s)."""

    def __init__(self, comp: _Component, sym: Symmetry):
        self.comp = comp
        self.sym = sym
        n = comp.n
        index = {name: i for i, name in enumerate(comp.names)}
        self.classes = [[[index[a] for a in t] for t in cls] for cls in sym.classes]
        in_thread = {i for cls in self.classes for t in cls for i in t}
        rel = comp.relevant
        slots = [[(i, s) for s in range(comp.n_slots[i])] for i in range(n)]
        thread_outs = {o for cls in sym.outputs for t in cls for o in t}

        def local_parts(nodes: list[int]):
            # the fired flags of every step of the nodes (a bytes object: a
            # write step n + i exists only for a decomposed Assign, else 0)
            steps = [t for i in nodes for t in (i, n + i)]
            keys = [k for i in nodes if rel[i] for k in slots[i]]
            pend = [i for i in nodes if rel[i]]
            return _bytes_getter(steps), keys, pend

        self.shared = local_parts([i for i in range(n) if i not in in_thread])
        self.shared_outs = [o for o in comp.output_names if o not in thread_outs]
        # threads numbered across classes: parts per thread, thread ids per class
        self.parts = [local_parts(t) + (outs,) for cls, couts in zip(self.classes, sym.outputs)
                      for t, outs in zip(cls, couts)]
        self.class_tids: list[list[int]] = []
        for cls in self.classes:
            base = sum(len(c) for c in self.class_tids)
            self.class_tids.append(list(range(base, base + len(cls))))
        # step label -> its thread (a label of a shared node is absent)
        self.thread_of_label: dict[str, int] = {}
        for tid, t in enumerate(t for cls in self.classes for t in cls):
            for i in t:
                self.thread_of_label[comp.label(i)] = tid
                if comp.decomposed and comp.kind[i] == _ASSIGN:      # an Assign's write step
                    self.thread_of_label[comp.label(n + i)] = tid
        # a node outside the classes with no edge into a class thread (a
        # thread of no class): its steps change no class thread's local state
        for i in range(n):
            if i not in in_thread and not any(j in in_thread for _port, j, _slot in comp.succ[i]):
                self.thread_of_label[comp.label(i)] = -1
                if comp.decomposed and comp.kind[i] == _ASSIGN:
                    self.thread_of_label[comp.label(n + i)] = -1
        self.locals_table: dict[tuple, int] = {}

    #: tests set this to recompute every thread's local state at every key
    CHECK_INCREMENTAL = False

    def _local(self, st, parts) -> tuple:
        """A thread's (or the shared nodes') local state: fired flags of its
        steps, relevant values in transit to it, its pending decomposed
        writes, its outputs so far."""
        steps, keys, pend, outs = parts
        pending = st.pending
        # values still in the run by their exact bits once a value of the
        # search may have bits SPEC equality forgets, outputs by SPEC
        # equality (explore._Component.key says why)
        ex = self.comp.payloads
        if pending and pend:                        # (position, pending write) of its own
            blind = self.comp.blind_read
            if ex:
                pends = tuple((j, exact(pending[i][1]) if blind[i]
                               else (exact(pending[i][0]), exact(pending[i][1])))
                              for j, i in enumerate(pend) if i in pending)
            else:
                pends = tuple((j, pending[i][1] if blind[i] else pending[i])
                              for j, i in enumerate(pend) if i in pending)
        else:
            pends = ()
        vals = tuple(map(st.inbox.get, keys, repeat(_ABSENT, len(keys))))
        return (steps(st.done), tuple(map(exact, vals)) if ex else vals, pends,
                tuple(map(st.outputs.get, outs, repeat(_ABSENT, len(outs)))))

    def _local_id(self, st, tid: int) -> int:
        table = self.locals_table
        return table.setdefault(self._local(st, self.parts[tid]), len(table))

    def key(self, st, ids: list[int] | None = None, mark=None) -> tuple[tuple, list[int]]:
        """(the canonical key of st, the local ids of its threads).

        `ids` are the local ids at an earlier state on st's run, whose
        schedule ended at `mark` (a node of st's linked schedule): only the
        threads of steps fired since are recomputed.  A step of node i
        changes only its own fired flag and pending write, the values in
        transit to its own slots and to its successors' (popped, delivered),
        the outputs fetched at i, and variables (not part of a local state);
        a thread node's successors are in its thread, so the other threads'
        local states are unchanged; so are they after a step of a node with
        no edge into a class thread (label -1).  Any other node's successors
        may be in any thread: such a step since `mark` (or `mark` not found)
        recomputes every thread."""
        comp = self.comp
        vars_ = tuple(st.vars[x] for x in comp.variables
                      if x in comp.rel_vars and (comp.observe_state or st.nr.get(x)))
        if comp.payloads:
            vars_ = tuple(map(exact, vars_))
        shared = self._local(st, (*self.shared, self.shared_outs))
        if ids is not None:
            touched = set()
            node = st.sched
            where = self.thread_of_label
            while node is not mark and node is not None:
                tid = where.get(node[0])
                if tid is None:
                    break
                touched.add(tid)
                node = node[1]
            if node is mark:
                ids = list(ids)
                touched.discard(-1)
                for tid in touched:
                    ids[tid] = self._local_id(st, tid)
            else:
                ids = None
        if ids is None:
            ids = [self._local_id(st, tid) for tid in range(len(self.parts))]
        elif self.CHECK_INCREMENTAL:                  # tests: the shortcut against the definition
            assert ids == [self._local_id(st, tid) for tid in range(len(self.parts))]
        classes = tuple(tuple(sorted([ids[t] for t in tids])) for tids in self.class_tids)
        return (shared, vars_, classes), ids


def explore_symmetric(comp: _Component, sym: Symmetry, init: Mapping[str, Value],
                      budget: Budget) -> "SymmetricOutcomes":
    """The outcomes of one component, one representative per orbit (see the
    module docstring for why every orbit is found)."""
    sc = _SymComponent(comp, sym)
    result = SymmetricOutcomes(comp, sym)
    seen: set[tuple] = set()
    stack = [(comp.root(init), None, None)]
    while stack:
        st, ids, mark = stack.pop()
        comp.close(st)
        if not st.ready:
            result._add(comp.outcome(st), _schedule(st.sched))
            continue
        k, ids = sc.key(st, ids, mark)
        if k in seen:
            continue
        seen.add(k)
        budget.tick()
        mark = st.sched
        choices = comp.stubborn(st)
        for t in reversed(choices):
            s2 = st.copy() if t != choices[0] else st
            s2.ready.discard(t)
            comp.fire(s2, t)
            stack.append((s2, ids, mark))
    result._finish()
    return result


# ---------------------------------------------------------------------------
# The lazy outcome mapping


def _multiset_permutations(items: list[int]) -> Iterator[tuple[int, ...]]:
    """Every distinct arrangement of `items`, each once (lexicographic)."""
    a = sorted(items)
    n = len(a)
    while True:
        yield tuple(a)
        i = n - 2
        while i >= 0 and a[i] >= a[i + 1]:
            i -= 1
        if i < 0:
            return
        j = n - 1
        while a[j] <= a[i]:
            j -= 1
        a[i], a[j] = a[j], a[i]
        a[i + 1:] = reversed(a[i + 1:])


def _orbit_size(arrangement: tuple[int, ...]) -> int:
    size = math.factorial(len(arrangement))
    counts: dict[int, int] = {}
    for x in arrangement:
        counts[x] = counts.get(x, 0) + 1
    for c in counts.values():
        size //= math.factorial(c)
    return size


class SymmetricOutcomes(Mapping):
    """A component's outcomes -> witness schedules, stored as one
    representative per orbit of the component's thread symmetry.

    `len` sums the orbit sizes (multinomials) without listing; `in` and `[]`
    canonicalize the outcome (each class's multiset of thread output tuples);
    `[]` renames the representative's witness by the permutation taking its
    threads to the outcome's; iteration lists each orbit's distinct
    arrangements once.  Outcomes are built as the reference engine builds
    them (outputs in the component's output order), and `in` and `[]`
    answer as the reference engine's dict does: an outcome with its outputs
    in another order is not a key."""

    def __init__(self, comp: _Component, sym: Symmetry):
        self.output_names = list(comp.output_names)
        self.observe_state = comp.observe_state
        self.sym = sym
        self.thread_outs = sym.outputs                 # class -> thread -> names
        in_threads = {o for cls in sym.outputs for t in cls for o in t}
        self.shared_outs = [o for o in self.output_names if o not in in_threads]
        self.tuples: dict[tuple, int] = {}             # thread output tuple -> id
        self.values: list[tuple] = []                  # id -> thread output tuple
        self.reps: dict[tuple, tuple[Outcome, tuple[str, ...], tuple[tuple[int, ...], ...]]] = {}
        # step labels -> (node name, suffix), to rename witnesses
        self._labels: dict[str, tuple[str, str]] = {}
        for t in range(2 * comp.n):
            if t < comp.n or comp.decomposed and comp.kind[t - comp.n] == _ASSIGN:
                label = comp.label(t)
                name = comp.names[t % comp.n]
                self._labels[label] = (name, label[len(name):])
        self._len = 0

    # -- building --------------------------------------------------------------

    def _arrangement(self, outs: Mapping[str, Value], create: bool) -> tuple[tuple[int, ...], ...] | None:
        arr = []
        for cls in self.thread_outs:
            ids = []
            for names in cls:
                t = tuple(outs[o] for o in names)
                i = self.tuples.get(t)
                if i is None:
                    if not create:
                        return None
                    i = self.tuples[t] = len(self.values)
                    self.values.append(t)
                ids.append(i)
            arr.append(tuple(ids))
        return tuple(arr)

    def _canon_of(self, outcome: Outcome, arr) -> tuple:
        outs = dict(outcome.outputs)
        return (tuple(outs[o] for o in self.shared_outs), outcome.state,
                tuple(tuple(sorted(a)) for a in arr))

    def _add(self, outcome: Outcome, witness: tuple[str, ...]) -> None:
        arr = self._arrangement(dict(outcome.outputs), True)
        canon = self._canon_of(outcome, arr)
        if canon not in self.reps:
            self.reps[canon] = (outcome, witness, arr)

    def _finish(self) -> None:
        self._len = sum(math.prod(_orbit_size(a) for a in arr) for _o, _w, arr in self.reps.values())

    # -- Mapping ---------------------------------------------------------------

    def __len__(self) -> int:
        return self._len

    @property
    def representatives(self) -> int:
        return len(self.reps)

    def _lookup(self, outcome: object):
        if not isinstance(outcome, Outcome):
            return None
        # the outputs in the component's order, as in every stored outcome
        # (Outcome equality is tuple equality: the same pairs in another
        # order are another key, as in the reference engine's dict)
        try:
            if tuple(k for k, _v in outcome.outputs) != tuple(self.output_names):
                return None
        except (TypeError, ValueError):                # not (name, value) pairs
            return None
        if (outcome.state is None) == self.observe_state:
            return None
        outs = dict(outcome.outputs)
        try:
            arr = self._arrangement(outs, False)
            if arr is None:
                return None
            rep = self.reps.get(self._canon_of(outcome, arr))
        except TypeError:                              # an unhashable value
            return None
        if rep is None:
            return None
        return rep, arr

    def __contains__(self, outcome: object) -> bool:
        return self._lookup(outcome) is not None

    def __getitem__(self, outcome: Outcome) -> tuple[str, ...]:
        found = self._lookup(outcome)
        if found is None:
            raise KeyError(outcome)
        (_o, witness, rep_arr), arr = found
        return self._rename(witness, rep_arr, arr)

    def _rename(self, witness: tuple[str, ...], rep_arr, arr) -> tuple[str, ...]:
        """The witness with the representative's threads renamed to the
        threads holding the same output tuples in `arr`."""
        rename: dict[str, str] = {}
        for cls, src, dst in zip(self.sym.classes, rep_arr, arr):
            if src == dst:
                continue
            free: dict[int, list[int]] = {}
            for j, i in enumerate(src):
                free.setdefault(i, []).append(j)
            for j, i in enumerate(dst):
                k = free[i].pop(0)
                if k != j:
                    for a, b in zip(cls[k], cls[j]):
                        rename[a] = b
        if not rename:
            return witness
        out = []
        for label in witness:
            name, suffix = self._labels[label]
            out.append(rename.get(name, name) + suffix)
        return tuple(out)

    def _orbit(self, rep) -> Iterator[tuple[Outcome, tuple[tuple[int, ...], ...]]]:
        outcome, _w, rep_arr = rep
        base = dict(outcome.outputs)

        def product(c: int, chosen: list):
            if c == len(rep_arr):
                yield tuple(chosen)
                return
            for perm in _multiset_permutations(list(rep_arr[c])):
                chosen.append(perm)
                yield from product(c + 1, chosen)
                chosen.pop()

        for arr in product(0, []):
            if arr == rep_arr:
                yield outcome, arr
                continue
            outs = dict(base)
            for cls, ids in zip(self.thread_outs, arr):
                for names, i in zip(cls, ids):
                    outs.update(zip(names, self.values[i]))
            yield Outcome(tuple((k, outs[k]) for k in self.output_names), outcome.state), arr

    def __iter__(self) -> Iterator[Outcome]:
        for rep in self.reps.values():
            for o, _arr in self._orbit(rep):
                yield o

    def items(self) -> "_Items":
        return _Items(self)


class _Items(ItemsView):
    """(outcome, witness) pairs without canonicalizing each outcome again."""

    def __iter__(self):
        m = self._mapping
        for rep in m.reps.values():
            for o, arr in m._orbit(rep):
                yield o, m._rename(rep[1], rep[2], arr)


# ---------------------------------------------------------------------------
# Dispatch


def symmetry_of(p: Program, comp: _Component) -> Symmetry:
    """The component's symmetry (empty when it has no two identical threads)."""
    return detect(p, comp.names, comp.output_names)


def explorer(p: Program, comp: _Component):
    """f(comp, init, budget) -> the component's outcomes by the symmetry
    engine, or None when the component has no two identical threads (the
    caller then uses another engine)."""
    sym = symmetry_of(p, comp)
    if not sym:
        return None
    labels = [comp.label(t) for t in range(comp.n)]
    labels += [comp.label(comp.n + i) for i in range(comp.n) if comp.decomposed and comp.kind[i] == _ASSIGN]
    if len(set(labels)) != len(labels):
        return None              # a node named like another's step: witnesses would be ambiguous
    return lambda comp, init, budget: explore_symmetric(comp, sym, init, budget)


def explore_component(p: Program, comp: _Component, init: Mapping[str, Value],
                      budget: Budget):
    """The symmetry engine on one component, or None when it has no
    non-trivial symmetry."""
    f = explorer(p, comp)
    return None if f is None else f(comp, init, budget)


__all__ = ["Symmetry", "detect", "explore_symmetric", "SymmetricOutcomes", "explorer", "explore_component"]
