"""Structural refinement: `sound` without exploring states, when the rewrite
keeps the original's *access skeleton* (issue 17, item 1).

Most sound rewrites (dce, reduce-control, prune, cse, const-fold, safe read
hoisting) keep every Read and Assign of the original with the same value
terms, delete only side-effect-free nodes, and order the accesses at least as
much as the original.  This module recognises that situation in time linear
in the graph (plus one big-integer ancestor set per node) and proves
Outcomes(P', σ) ⊆ Outcomes(P, σ) for every σ without enumerating a schedule.
When any condition below fails, it concludes nothing and the enumerating
checker runs unchanged: a failure here is never a verdict.

Notation
========

An *access* is a Read node or an Assign node; its variable is fixed
statically (a variable edge only ever comes from a `Var(x)` node).  The
*steps* of a program are its nodes, except that in `decomposed` mode an Assign
`a` is two steps `a.r` (reads the variable: w := VarValue(x), takes v) and
`a.w` (stores f(w, v), or leaves x as it is *then* when v or f(w, v) is an
error).  `hb` ("happens before") is the transitive closure of the edges (data
and control) between nodes; at step level an edge u -> v runs from u's last
step to v's first step, and a.r -> a.w.

Fact 1 (runs are linear extensions).  In seed 000, section 3.2.1, a node may
fire exactly when each incoming edge holds content, an edge out of node u
holds content exactly once u has fired (input edges hold content from the
start), and the node consumes it.  So a step sequence is a run iff it is a
linear extension of the step DAG: atomic mode by the rule as written; in
decomposed mode (semantics.py) `a.r` needs the node's inputs and `a.w` only
the pending read, and the Assign's outgoing control edges are signalled at
`a.w`.  A value never decides whether a step may fire.

Fact 2 (what a step sees).  Only Assign steps (atomic `a`, decomposed `a.w`)
change VarValue, and only the one variable they assign.  Functions are
deterministic (seed 000, 3.1.1), including on error values (footnotes 2 and 5).

The rule
========

Let ν be a partial map from the accesses of P to the accesses of P'
(:func:`_match` builds it from node names and CSE keys; ν is only a guess,
every condition below is checked on it, and any ν that passes them gives a
proof).  Let S be the domain of ν, the *matched* accesses.  The conditions:

(I)  Same interface: the same variables with the same types, the same
     output names, no feed that P lacks, a shared feed with the same type.
(K)  ν preserves kind and variable: a Read goes to a Read of the same
     variable; an Assign-f goes to an Assign-f of the same variable with
     the same f.  ν is injective on Assigns, and every Assign of P' is ν of
     an Assign of P.  Several Reads of P may go to one Read of P' (cse
     merges them); a Read of P' that is no ν-image is *extra*.
(A)  Every Assign of P is matched, except with `--observe outputs`, where an
     unmatched (*deleted*) Assign d is allowed when no matched access is
     hb-after d in P (no access that matters waits for it).
(V)  Equal value terms.  Terms are built, hash-consed, over the leaves
     feed($name), constants (by dtype, shape and exact bytes) and
     read(r) for a Read r; a function node is the term
     app(op, attributes, argument terms)[port].  In P the leaf of a matched
     Read r is read(ν(r)); an unmatched Read of P gets a leaf of its own
     that occurs in no term of P'.  Required: for every matched Assign a,
     the term of a's tensor input in P is the term of ν(a)'s in P', and for
     every output name, its term in P is its term in P'.  Equal terms take
     equal values at every σ and every valuation of the read leaves, since
     they denote the same deterministic functions applied to the same
     arguments.  Three simplifications are applied to both sides and keep
     that property: `Identity(t)` and either port of `Copy(t)` are `t`
     (the built-in functions return their argument, error or not); a
     function whose arguments are all constants is evaluated (functions are
     deterministic, and the constant-folding pass does the same).  Functions
     tfsem does not know the meaning of (a user's, an imported op) are only
     ever equal to themselves: same name, same attributes, equal arguments.
(H)  Order inclusion: for matched s1, s2 with s1 hb_P s2 (any variables,
     any kinds), ν(s1) hb_P' ν(s2) or ν(s1) = ν(s2).

Inclusion of hb on *conflicting* pairs only would not be enough: seed 002's
load/store example (`*X = 1` -> `r0 = *Y` beside `*Y = 5` -> `*X = 2`) has no
hb between conflicting accesses at all, yet dropping the first edge lets
r0 = 0 with X = 1 at the end.  (H) asks for every matched pair; test
`test_load_store_hoist_falls_through` keeps it so.

Theorem.  Under (I), (K), (A), (V), (H): for every σ and every run ρ' of P',
in atomic and in decomposed mode, there is a run L of P whose outputs equal
ρ''s, and (unless some Assign was deleted under (A), which needs `outputs`)
whose final state equals ρ''s.  Hence Outcomes(P', σ) ⊆ Outcomes(P, σ).

Proof.  Extend ν to steps: an atomic access maps as a node; in decomposed
mode a.r -> ν(a).r and a.w -> ν(a).w (the Reads are single steps).  For a
matched step s let rank(s) be the position of ν(s) in ρ'.

(H) holds at step level: if s1 hb s2 are steps of the same Assign a, then
s1 = a.r, s2 = a.w and ν(a).r comes before ν(a).w in ρ'.  Otherwise their
nodes b1 hb b2, so ν(b1) hb' ν(b2) (then every step of ν(b1) precedes every
step of ν(b2) in any run of P', Fact 1), or ν(b1) = ν(b2), a merged Read.
Either way s1 hb s2 implies rank(s1) ≤ rank(s2).

Build L.  Let R be the relation on the steps of P made of: the step edges
of P; s1 -> s2 for matched steps with rank(s1) < rank(s2); and s -> d for
every matched step s and every step d of a deleted Assign.  R is acyclic:
edges out of a deleted step, or out of an unmatched node, are P edges; a
cycle that enters the deleted or unmatched steps from a matched step can only
come back to a matched step along P edges, hence by hb, either from a deleted
Assign (excluded by (A)) or through unmatched side-effect-free nodes, whose
hb segment joins two matched steps.  So compress the cycle to matched steps
s1, s2, ..., sk, s1 joined by hb segments (rank does not decrease, above) and
rank edges (rank increases); a cycle with no rank edge is a cycle of the DAG
P, one with a rank edge increases rank strictly around a loop.  Neither
exists.  Any topological order L of R is a linear extension of P's step
DAG, hence a run of P (Fact 1), in which matched steps appear in rank order
(ties: Reads merged into one Read of P'), deleted Assigns after every
matched step, and unmatched Reads, functions and Var nodes anywhere.

Same values.  By induction along L, every matched step s sees what ν(s)
sees in ρ'.  The variable x of s holds, just before s in L, σ's initial
value followed by the effects of the Assign steps of x that precede s in L.
Those are all matched (deleted ones come after every matched step) and are
exactly the ones of rank below rank(s): an Assign step and s never share a
rank (ν is injective on Assigns and never maps an Assign and a Read to one
step).  Their images are the Assign steps of x before ν(s) in ρ' — all of
them, since every Assign of P' is an image (K) — in the same order (rank),
and by induction each had the same w, v and current value, hence the same
effect (Fact 2; the error rule of footnote 5 depends on nothing else).  So x
holds the same value before s and before ν(s): a Read reads the same value,
a decomposed a.r takes the same w, an a.w finds the same current value.  An
Assign's tensor input v: its term in P mentions only read leaves of Reads
that are hb-before it, hence before it in L, and by (V) it equals the term of
ν(a)'s input with each leaf read(ν(r)) valued, by induction, as r was; so
the values are equal.  At the end: outputs by (V) (their read leaves are
valued equally), and with `outputs+state` the final value of x is the
initial value followed by the effects of every Assign of x in P, all matched
(A), in the same order and with the same effects as every Assign of x in
P' (K).  Unmatched Reads of P change nothing, and by (V) their values reach
no compared term; extra Reads of P' change nothing either, and a term of P'
that used one could not equal a term of P.  ∎

Notes on the conditions the brief lists.  Fan-out (one port, several
consumers) is irrelevant: terms name ports, not edges.  Control edges
matter only through hb.  Nodes of P' that do not exist in P are side-effect
free (every Assign of P' is matched) and matter only through terms and hb.
Assign functions that fail are covered by Fact 2: the effect of an Assign
step is determined by (f, w, v, current value), all shown equal.  Errors and
uninitialized variables are values like any other in this argument: nothing
assumes σ is error-free.  "Nobody observes" a deleted access means: a
deleted Read's value reaches no output and no matched Assign (V), in either
observe setting; a deleted Assign is allowed only under `outputs`, where the
final state is not part of the outcome, and only when nothing matched waits
for it, so that L can run it last.  The rule says nothing about rewrites
that split, fuse or merge Assigns (split-assign, fuse-assign, cse-stateful):
(K) fails and the enumerating checker decides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ASSIGN, READ, VAR, FeedControlIn, FeedIn, Program
from tfsem.oracle.semantics import DECOMPOSED, READ_STEP, WRITE_STEP
from tfsem.oracle.values import Error, Tensor

OUTPUTS = "outputs"
SND = "Snd"

#: Constant arguments larger than this (elements, all arguments together) are
#: not evaluated; the application stays a term (equal only to itself).
FOLD_MAX_ELEMENTS = 1 << 16

# The built-in functions whose simplification (V) relies on, captured at
# import: a function re-registered under the same name is not simplified.
_IDENTITY = fns.lookup("Identity")
_COPY = fns.lookup("Copy")
_CONST = fns.lookup("Const")


@dataclass
class StructuralResult:
    """`proved` is True when the theorem above applies; `reason` says which
    condition failed otherwise (or what was matched); `stats` counts."""
    proved: bool
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)


class _NotApplicable(Exception):
    pass


def structural_refinement(p: Program, p2: Program, semantics: str = "atomic",
                          observe: str = "outputs+state") -> StructuralResult:
    """Try to prove P' ⊑ P by the rule in the module docstring.  Both
    programs must be valid.  The answer is the same in both semantics modes
    (the proof covers both); `semantics` is accepted for the record."""
    started = time.perf_counter()
    stats: dict[str, Any] = {"semantics": semantics, "observe": observe}
    try:
        reason = _prove(p, p2, semantics, observe, stats)
        proved = True
    except _NotApplicable as exc:
        reason = str(exc)
        proved = False
    stats["seconds"] = round(time.perf_counter() - started, 6)
    return StructuralResult(proved, reason, stats)


# ---------------------------------------------------------------------------


def _interface(p: Program, p2: Program) -> None:
    """(I)"""
    if dict(p.variables) != dict(p2.variables):
        raise _NotApplicable("(I) the variables differ")
    if set(p.outputs) != set(p2.outputs):
        raise _NotApplicable("(I) the output names differ")
    for f in p2.feed_names:
        if f not in p.feed_names or p.feed_type(f) != p2.feed_type(f):
            raise _NotApplicable(f"(I) feed {f!r} is not a feed of the original with the same type")


def _accesses(p: Program) -> dict[str, tuple[str, str, str | None]]:
    """access node -> (kind, variable, fn or None)."""
    out = {}
    for n in p.nodes:
        if n.op == READ or n.op == ASSIGN:
            x = p.accessed_variable(n.name)
            if x is None:   # not a valid program: variable edges come from Var nodes
                raise _NotApplicable(f"(K) the variable of {n.name!r} is not static")
            out[n.name] = (n.op, x, n.fn if n.op == ASSIGN else None)
    return out


def _cse_keys(p: Program) -> dict[str, int]:
    """node -> an integer equal for nodes that `cse` would merge (same op,
    attributes, data inputs and set of control inputs, recursively).  Only
    used to *guess* ν for Reads; (V) and (H) check the guess."""
    table: dict[tuple, int] = {}
    key: dict[str, int] = {}
    for name in p.topological_order:
        n = p.node[name]
        if n.op == ASSIGN:
            k: tuple = ("assign", name)
        else:
            data = tuple(("feed", i.name) if isinstance(i, FeedIn) else (key[i.node], i.port)
                         for i in n.data_inputs)
            control = frozenset(("feed", i.name) if isinstance(i, FeedControlIn) else key[i.node]
                                for i in n.control_inputs)
            k = (n.op, fns.attrs_key(n.attrs), data, control)
        key[name] = table.setdefault(k, len(table))
    return key


def _match(p: Program, p2: Program, acc: Mapping, acc2: Mapping) -> dict[str, str]:
    """A guess at ν: same name, same kind, variable and function; then a Read
    of P with no counterpart goes where a Read with the same CSE key went."""
    nu: dict[str, str] = {}
    for name, sig in acc.items():
        if acc2.get(name) == sig:
            nu[name] = name
    keys = None
    for name, (kind, x, _fn) in acc.items():
        if name in nu or kind != READ:
            continue
        if keys is None:
            keys = _cse_keys(p)
            by_key: dict[int, str] = {}
            for other, target in nu.items():
                if acc[other][0] == READ:
                    by_key.setdefault(keys[other], target)
        target = by_key.get(keys[name])
        if target is not None:
            nu[name] = target
    return nu


class _Terms:
    """Hash-consed terms shared by both programs: a term is an int; equal
    ints are structurally equal terms."""

    def __init__(self) -> None:
        self.table: dict[tuple, int] = {}
        self.consts: dict[int, Any] = {}     # const term -> its Value
        self.folds: dict[tuple, tuple] = {}

    def make(self, key: tuple) -> int:
        t = self.table.get(key)
        if t is None:
            t = self.table[key] = len(self.table)
        return t

    def const(self, value: Any) -> int:
        if isinstance(value, Error):
            t = self.make(("error", value.reason))
        else:
            arr = np.ascontiguousarray(value.array)
            t = self.make(("const", value.dtype, tuple(arr.shape), arr.tobytes()))
        self.consts.setdefault(t, value)
        return t

    def apply(self, op: str, attrs: Mapping[str, Any], args: tuple[int, ...],
              n_out: int) -> tuple[int, ...]:
        f = fns.lookup(op)
        if f is _IDENTITY and f is not None and len(args) == 1:
            return (args[0],)
        if f is _COPY and f is not None and len(args) == 1:
            return (args[0],) * n_out
        if f is not None and all(a in self.consts for a in args):
            folded = self._fold(f, attrs, args)
            if folded is not None:
                return folded
        app = self.make(("app", op, fns.attrs_key(attrs), args))
        return tuple(self.make(("port", app, k)) for k in range(n_out))

    def _fold(self, f: fns.Function, attrs: Mapping[str, Any], args: tuple[int, ...]):
        key = (f.name, fns.attrs_key(attrs), args)
        if key in self.folds:
            return self.folds[key]
        values = [self.consts[a] for a in args]
        size = sum(v.array.size for v in values if isinstance(v, Tensor))
        result = None
        if f is _CONST or size <= FOLD_MAX_ELEMENTS:
            try:
                results = f.apply(values, attrs)
                if len(results) == f.n_out and all(isinstance(r, (Tensor, Error)) for r in results):
                    result = tuple(self.const(r) for r in results)
            except Exception:   # a user's function that fails stays a term
                result = None
        self.folds[key] = result
        return result


def _program_terms(p: Program, terms: _Terms, leaf_of_read: Mapping[str, tuple]):
    """(Assign name -> term of its tensor input, output name -> term)."""
    value: dict[tuple[str, int], int] = {}

    def arg(i) -> int:
        if isinstance(i, FeedIn):
            return terms.make(("feed", i.name))
        return value[(i.node, i.port)]

    assigns: dict[str, int] = {}
    for name in p.topological_order:
        n = p.node[name]
        if n.op == VAR:
            continue
        if n.op == READ:
            value[(name, 0)] = terms.make(leaf_of_read[name])
        elif n.op == ASSIGN:
            assigns[name] = arg(n.data_inputs[1])
        else:
            f = fns.lookup(n.op)
            n_out = f.n_out if f is not None else n.n_outputs()
            results = terms.apply(n.op, n.attrs, tuple(arg(i) for i in n.data_inputs), n_out)
            for port, t in enumerate(results):
                value[(name, port)] = t
    outputs = {o: value[(port.node, port.port)] for o, port in p.outputs.items()}
    return assigns, outputs


def _steps(p: Program, semantics: str) -> tuple[list[str], dict[str, list[str]]]:
    """The step DAG: steps in a topological order, and each step's
    predecessors.  A decomposed Assign `a` is the steps `a@read` -> `a@write`;
    an edge u -> v runs from u's last step to v's first."""
    split = semantics == DECOMPOSED
    order: list[str] = []
    preds: dict[str, list[str]] = {}
    for name in p.topological_order:
        before = [_last(p, q, split) for q in p.predecessors(name)]
        if split and p.node[name].op == ASSIGN:
            order += [name + READ_STEP, name + WRITE_STEP]
            preds[name + READ_STEP] = before
            preds[name + WRITE_STEP] = [name + READ_STEP]
        else:
            order.append(name)
            preds[name] = before
    return order, preds


def _last(p: Program, name: str, split: bool) -> str:
    return name + WRITE_STEP if split and p.node[name].op == ASSIGN else name


def _prove(p: Program, p2: Program, semantics: str, observe: str, stats: dict[str, Any]) -> str:
    _interface(p, p2)
    decomposed = semantics == DECOMPOSED
    acc, acc2 = _accesses(p), _accesses(p2)
    nu = _match(p, p2, acc, acc2)       # Reads and same-function Assigns, by name / CSE key
    for s, t in list(nu.items()):
        if acc[s][0] == ASSIGN and acc[s] != acc2[t]:
            del nu[s]                   # same name, another function: fuse or split below
        elif acc[s][:2] != acc2[t][:2]:
            raise _NotApplicable(f"(K) {s!r} and {t!r} differ in kind or variable")

    terms = _Terms()
    leaves = {s: ("read", nu[s]) if s in nu else ("unmatched-read", s)
              for s, (kind, _x, _f) in acc.items() if kind == READ}
    assigns, outputs = _program_terms(p, terms, leaves)
    assigns2, outputs2 = _program_terms(p2, terms, {t: ("read", t) for t in acc2})

    # Assign groups (K): `step` maps P steps to P' steps
    step: dict[str, str] = {}
    kinds: dict[str, int] = {"same": 0, "merged": 0, "fused": 0, "split": 0}
    for s, t in nu.items():
        if acc[s][0] == READ:
            step[s] = t
    images = {t for s, t in nu.items() if acc[s][0] == ASSIGN}
    same_by_key: dict[tuple, str] = {}     # (variable, function, value term) -> P' Assign
    fused_reads: set[str] = set()
    split_reads: set[str] = set()
    deleted_assigns: list[str] = []

    def map_assign(a: str, t: str) -> None:
        if decomposed:
            step[a + READ_STEP], step[a + WRITE_STEP] = t + READ_STEP, t + WRITE_STEP
        else:
            step[a] = t

    for a, (kind, x, fn) in acc.items():
        if kind != ASSIGN:
            continue
        t = nu.get(a)
        if t is not None:                                   # the same Assign
            map_assign(a, t)
            kinds["same"] += 1
            same_by_key.setdefault((x, fn, assigns[a]), t)
            continue
        other = acc2.get(a)
        if other is not None and other[0] == ASSIGN and other[1] == x and a not in images:
            f2 = other[2]
            if fn == SND and f2 != SND:
                # fuse: P's Write a := F(Read r of x, v) is P' 's Assign-F a := v
                r = _fused_read(terms, assigns[a], f2, assigns2[a], acc, x, fused_reads)
                if r is not None:
                    fused_reads.add(r)
                    images.add(a)
                    if decomposed:
                        step[r] = a + READ_STEP
                        step[a + READ_STEP] = step[a + WRITE_STEP] = a + WRITE_STEP
                    else:
                        step[r] = step[a] = a
                    kinds["fused"] += 1
                    continue
            if decomposed and fn != SND and f2 == SND:
                # split: P's Assign-F a := v is P' 's Read rr of x, then Write a := F(rr, v)
                rr = _split_read(terms, assigns2[a], fn, assigns[a], acc2, x, split_reads)
                if rr is not None:
                    split_reads.add(rr)
                    images.add(a)
                    step[a + READ_STEP], step[a + WRITE_STEP] = rr, a + WRITE_STEP
                    kinds["split"] += 1
                    continue
        if decomposed and (x, fn, assigns[a]) in same_by_key:
            # merged (decomposed only): identical Assigns, read and write back to back
            t = same_by_key[(x, fn, assigns[a])]
            if acc2[t] == acc[a] and assigns[a] == assigns2[t]:
                map_assign(a, t)
                kinds["merged"] += 1
                continue
        deleted_assigns.append(a)

    # every write step of P' stands for some write step of P; a read step of
    # P' that stands for nothing is a Read or the read step of a Write
    covered = set(step.values())
    for t, (kind, _x, fn) in acc2.items():
        if kind != ASSIGN:
            continue
        write = t + WRITE_STEP if decomposed else t
        if write not in covered:
            raise _NotApplicable(f"(K) Assign {t!r} of the rewrite has no counterpart in the original")
        if decomposed and t + READ_STEP not in covered and fn != SND:
            raise _NotApplicable(f"(K) the read step of Assign {t!r} of the rewrite stands for "
                                 "nothing in the original")

    # (A)
    if deleted_assigns and observe != OUTPUTS:
        raise _NotApplicable(f"(A) Assign {deleted_assigns[0]!r} of the original has no "
                             "counterpart, and the final state is observed")

    # (V)
    for a, t in nu.items():
        if acc[a][0] == ASSIGN and assigns[a] != assigns2[t]:
            raise _NotApplicable(f"(V) the value assigned by {a!r} is not the same term "
                                 f"as the one assigned by {t!r} in the rewrite")
    for o in p.outputs:
        if outputs[o] != outputs2[o]:
            raise _NotApplicable(f"(V) output {o!r} is not the same term in the rewrite")

    # (H) on steps, and (A)'s "no matched step is hb-after a deleted Assign"
    order, preds = _steps(p, semantics)
    order2, preds2 = _steps(p2, semantics)
    index2 = {u: i for i, u in enumerate(order2)}
    anc2: dict[str, int] = {}
    for u in order2:
        bits = 0
        for q in preds2[u]:
            bits |= anc2[q] | (1 << index2[q])
        anc2[u] = bits
    mapped: dict[str, int] = {}
    after_deleted: dict[str, bool] = {}
    dset = {d for a in deleted_assigns for d in (a, a + READ_STEP, a + WRITE_STEP)}
    for u in order:
        bits, late = 0, False
        for q in preds[u]:
            bits |= mapped[q]
            if q in step:
                bits |= 1 << index2[step[q]]
            late = late or after_deleted[q] or q in dset
        mapped[u], after_deleted[u] = bits, late
        t = step.get(u)
        if t is None:
            continue
        outside = bits & ~(anc2[t] | (1 << index2[t]))
        if outside:
            missing = next(order2[i] for i in range(len(order2)) if outside >> i & 1)
            raise _NotApplicable(f"(H) {u!r} comes after a step that becomes {missing!r}, which "
                                 f"the rewrite no longer orders before {t!r}")
        if late:
            raise _NotApplicable(f"(A) {u!r} waits for a deleted Assign")

    read_images: dict[str, int] = {}
    for s, t in nu.items():
        if acc[s][0] == READ:
            read_images[t] = read_images.get(t, 0) + 1
    merged = sum(k - 1 for k in read_images.values())
    deleted_reads = sum(1 for s, (kind, _x, _f) in acc.items()
                        if kind == READ and s not in nu and s not in fused_reads)
    extra_reads = sum(1 for t, (kind, _x, _f) in acc2.items()
                      if kind == READ and t not in read_images and t not in split_reads)
    stats.update(accesses=len(acc), reads_matched=sum(read_images.values()), merged_reads=merged,
                 deleted_reads=deleted_reads, deleted_assigns=len(deleted_assigns),
                 extra_reads=extra_reads, terms=len(terms.table),
                 **{f"assigns_{k}": v for k, v in kinds.items()})
    parts = [f"{len(acc)} accesses"]
    if merged:
        parts.append(f"{merged} Reads merged")
    if deleted_reads:
        parts.append(f"{deleted_reads} unobserved Reads deleted")
    if extra_reads:
        parts.append(f"{extra_reads} unused Reads added")
    for k in ("merged", "fused", "split"):
        if kinds[k]:
            parts.append(f"{kinds[k]} Assigns {k}")
    if deleted_assigns:
        parts.append(f"{len(deleted_assigns)} unobserved Assigns deleted (outputs only)")
    return ("structural: access skeleton preserved (" + ", ".join(parts)
            + "; values equal as terms, the original's order between accesses kept)")


def _strict_in_value(fn: str) -> bool:
    f = fns.lookup(fn)
    return f is not None and f.n_in == 2 and f.n_out == 1 and 1 in f.strict()


def _fused_read(terms: _Terms, written: int, fn: str, value2: int, acc: Mapping, x: str,
                taken: set[str]) -> str | None:
    """The Read r of x such that `written` (the term a Write of P stores) is
    fn(read r, v) with v the term `value2` (what P' 's Assign-fn stores),
    fn strict in v; r not matched to a Read of P' and not fused already."""
    if not _strict_in_value(fn):
        return None
    for r, (kind, y, _f) in acc.items():
        if kind == READ and y == x and r not in taken:
            leaf = terms.table.get(("unmatched-read", r))
            if leaf is not None and terms.apply(fn, {}, (leaf, value2), 1)[0] == written:
                return r
    return None


def _split_read(terms: _Terms, written2: int, fn: str, value: int, acc2: Mapping, x: str,
                taken: set[str]) -> str | None:
    """The Read rr of x in P' such that `written2` (the term P' 's Write
    stores) is fn(read rr, v) with v the term `value` (what P's Assign-fn
    stores), fn strict in v; rr not used by another split."""
    if not _strict_in_value(fn):
        return None
    for rr, (kind, y, _f) in acc2.items():
        if kind == READ and y == x and rr not in taken:
            leaf = terms.table.get(("read", rr))
            if leaf is not None and terms.apply(fn, {}, (leaf, value), 1)[0] == written2:
                return rr
    return None


__all__ = ["StructuralResult", "structural_refinement"]
