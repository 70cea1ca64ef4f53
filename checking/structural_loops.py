"""A proof for rewrites that leave every loop as it was: "loop frames unchanged"
(issue 23 item 3; docs/checking-control-flow.md, stage 2).

Grappler's constant folding and arithmetic optimizer, run on a Keras step
with a recurrent layer (keras_gru_loop, keras_lstm_loop), change nodes
*outside* the loops (gradient-tape Identities, constants, the optimizer's
update) and leave the lowered `While` frames node for node as they were.
The proof by cases stops at the first Enter, and the refutation stage can
only end `no-counterexample`.  This rule proves such rewrites `sound`
without exploring a state, in time linear in the graph (plus one ancestor
set per node), by reducing them to the structural rule
(checking/structural.py) on the parts outside the loops, and mapping every
run of P' to a run of P step for step.  When a condition fails it concludes
nothing: the next stage runs.

Notation
========

The *root* nodes of a program are those outside every loop (`Program.frames`
empty).  A *top-level* Enter is a root node (its frame is its input's); it
starts the loop instance of its `frame_name` in the root context, and the
frame's nodes (frames non-empty, nested frames included) consume only the
frame's nodes and its Enters (validation's `frame` rule).  A *top-level*
Exit is a node of a frame (F,) whose output is in the root context; root
nodes consume only root nodes, feeds and top-level Exits (same rule).  The
*loop part* Λ of a program is its frame nodes and its top-level Enters.

Let Q be P with Λ taken out: every top-level Exit X becomes the root node
`X = Identity($tfsem.exit/X)` (an opaque leaf: a feed of its own, of no
known dtype, which no simplification looks into), every top-level Enter E
with a tensor input becomes the output `tfsem.enter/E` (its data input), and
nothing else changes.  Q has no control flow; Q' likewise from P'.

rootanc(n) is the set of root nodes with a path of edges (data or control)
*through root nodes* into n, and D(n) the set of top-level Exits with such a
path into n (an Exit's own D is {X}).

The conditions
==============

(L0) Neither program has a stack op; no root node is a Switch, Merge,
     NextIteration or LoopCond (Exits are never root nodes): the root
     frame holds loops only.
(L1) Λ(P) and Λ(P') have the same node names, and every frame node is the
     same in both: op, attributes (exactly: tensors by their bytes) and
     inputs (data and control, in order).  A top-level Enter has the same op
     and attributes in both; its inputs may differ.
(L1') Each loop has the same parallel_iterations in both: the engine
     takes a frame's from its first Enter in node order (as TensorFlow's
     executor does), so equal Enters listed in another order may give
     another window when they disagree.
(L2) The structural rule, *first round only* (no extension: no moved,
     unobserved-reordered or deleted-by-data Reads, no split or dead-split
     Assigns in atomic mode), proves Q' ⊑ Q in the check's semantics and
     observe setting, with ν its matching of access steps, and no Assign
     deleted.  So (I), (K), (V) and (H) of that rule hold for Q, Q': in
     particular every Enter's data input is the same term (an output of Q),
     every output the same term, and every pair of matched root accesses
     ordered in P through root nodes is ordered so in P'.  (E3) and (R2),
     which equate values that may differ in a NaN's payload, apply only
     when no function of P or P' (Λ included) observes one.
(L3) A top-level Enter whose data input is a variable (a handle) takes it
     from a Var node of the same variable in both programs.
(L4) Deadness and waiting are kept: D_P(s) = D_P'(ν(s)) for every matched
     access step s (node-wise), D_P(E) = D_P'(E) for every top-level Enter
     E, and D_P(o) = D_P'(o) for the node every output o is fetched from.
(L5) Root accesses stay before the loops they were before: if the node of
     a matched step s is in rootanc_P(E) for a top-level Enter E, the node
     of ν(s) is in rootanc_P'(E).
(L6) Every top-level Exit that a root node or an output of P or P' reads
     fires live at most once in its loop instance (`Machine._after_multi_exit`
     of the reference engine proves it per Exit, on Λ alone, which both
     programs share: an Exit on port 0 of a Switch of a loop whose counter
     chain stops on the same predicate).

Theorem.  Under (L0)-(L6) and (L1'), for every σ and every terminated run ρ' of P'
(in the check's semantics mode, with any iteration bound), there is a
terminated run ρ of P with the same outputs and the same final state, in
which every loop runs the same iterations.  Hence Outcomes(P', σ) ⊆
Outcomes(P, σ), and a σ at which P' reaches the iteration bound makes P
reach it too.

Proof
=====

Steps.  A run's steps are the firings of the reference semantics
(oracle/controlflow.py): a root node fires at most once, in the root
context; a node of Λ fires in contexts of its frames (a top-level Enter in
the root context); the dead-exit step `X@F:end` sends DEAD out of a
finished instance.  Call *Λ-steps* the firings of nodes of Λ and the
dead-exit steps; the others are *root steps*.  The *delivery* of a
top-level Exit X is the step that puts X's token in the root context: a
live firing of X, or its dead-exit step.  By (L6) X is delivered at most
once in a run (a top-level frame has one instance, started by its Enters in
the root context; a live firing of X stops its dead exit from being sent),
so a root node that reads X reads the one token delivered, whatever else X
does (its dead firings put nothing out).

Fact A (root nodes).  There is no Switch at the root (L0), and the only
other sources of DEAD are Λ-steps: so every token a root node receives is
DEAD only if it comes, through root nodes, from a delivery of DEAD.  A root
node fires dead exactly when one of its inputs holds DEAD (oracle rule), so
in a run in which it fires, root node n fires dead iff some X in D(n) was
delivered DEAD.  A dead token in the root context is always plain DEAD (a
dead-exit step sends plain DEAD, `_put_all(..., DEAD)`, and no root node
makes a failed predicate's DEAD): a dead fetch is the error `dead` in both
programs.  In a terminated run, root node n has fired iff every X in D(n)
was delivered (by induction along the root DAG: a root node with all inputs
present is enabled and stays enabled; sources and feeds are present).

Fact B (Λ).  The steps enabled in Λ, whether they fire dead, their labels,
the parallel-iterations window (L1'), "instance done" and the iteration bound are
functions of the tokens on Λ's edges and of which Λ-steps have fired (the
rules of `Machine.enabled_steps`; a frame node consumes only frame nodes'
and its Enters' outputs).  A Λ-step's outputs are a function of its inputs
and, for a Read, of its variable's current value (a Read in a loop reads the
variable its handle names when it fires; an Assign in a loop writes it,
with the same rule as at the root).

Construction.  Let ρ' be a terminated run of P'.  Rank every event of ρ':
each Λ-step by its position in ρ', each matched access step s of P by the
position of ν(s) (the structural rule's rank).  Let R be the relation on the
steps of P that fire in ρ (those of Λ in ρ', and the root steps whose D is
delivered in ρ', below): the edges of P between root steps; X's delivery ->
each root consumer of X; each root producer of a top-level Enter E -> E;
and every pair of ranked steps in rank order.  Any topological order of R
is ρ.  R is acyclic: a cycle cannot stay among unranked root steps (the
root graph is a DAG), and the only R-edges into or out of unranked root
steps are root edges, edges out of a delivery and edges into an Enter; so a
cycle is a chain of ranked steps joined by rank edges (rank increases) and
*root segments*, paths through unranked root nodes from a ranked step u to
a ranked step v.  u is a matched access or a delivery (a root path only
leaves Λ at a delivery), v a matched access or a top-level Enter (a root
path only enters Λ at an Enter).  Each segment has rank(u) < rank(v) (or u,
v one group):
 - access -> access: (H) of (L2) (a root path of P is a path of Q);
 - access -> Enter: (L5); ν(s)'s node reaches E in P', so ν(s) fires before
   E in ρ';
 - delivery of X -> access s: X ∈ D_P(s) = D_P'(ν(s)) (L4): ν(s) fires after
   X's delivery in ρ';
 - delivery of X -> Enter E: X ∈ D_P(E) = D_P'(E) (L4), likewise.
So rank never decreases along a cycle and increases on its rank edges: no
cycle.

Which root steps fire.  By Fact A and (L4), a matched access step fires in
ρ iff its image fires in ρ', with the same deadness, provided the
deliveries are the same, which they are (below, by induction); unmatched
root steps fire iff their D is delivered, and nothing waits on them but
root steps and Enters.

ρ is a run of P.  By induction along ρ, in rank order:
 - a root step's inputs from root nodes come before it (R has P's root
   edges), and those from a top-level Exit come after its delivery (R);
 - a Λ-step fires in ρ after the same Λ-steps as in ρ', so Λ's tokens are
   the same, provided every Enter put the same value (below) and every Read
   in Λ read the same value (below): by Fact B it is enabled, makes the same
   choice, is in the window and fires dead or live as in ρ'.  A top-level
   Enter E also needs its root inputs: its producers come before it (R).
Same values.  Before each ranked event, every variable holds in ρ what it
holds in ρ' before the matching event: the writes are the matched Assign
groups (each with the effect of its image: the structural rule's "Same
values", with Fact A: a group is dead iff its image is, and a dead Assign
changes nothing) and the Λ-steps of Assigns in loops (the same steps, with
the same handle, value and current value); unranked root steps write
nothing (no Assign is deleted, (L2)).  A node that fires live has every data
input live, so a live value's term is only ever valued at live leaves (the
structural rule's valuation); a dead node has no value, only DEAD.  So a
Read in Λ reads the same value,
a matched root Read the same value (or both are dead); a top-level Enter
puts the same token: DEAD in both iff its D holds a DEAD delivery (L4),
else the value of one term (L2) whose leaves (feeds, constants, read leaves
of matched Reads, Exit leaves) are valued alike, or the handle of the same
variable (L3); so every delivery is the same, which closes the induction
(Facts A and B).  Every Λ-step is in ρ, and the same iterations: a σ at
which ρ' reaches the bound is one at which ρ does.
ρ is terminated.  No Λ-step is enabled at its end (Λ's state and fired
steps are ρ''s end, where none was; an unfired Enter of P would be one of
P' by (L4) and Fact A).  No root step is enabled: one whose D is delivered
has fired, the others wait for a delivery that never comes.
Outcome.  Each output is fetched from a root node or a top-level Exit: by
(L4) dead in both or in neither (the error `dead`), or never produced in
both (`not-produced`); when live, one term valued alike (L2), or the same
Exit token.  The final state: every write step of P' is the image of a
group or a Λ-step of both (L1, (K)), and each variable sees the same
effects in the same order.  ∎

Notes.
 - What the loops read needs no condition of its own.  A Read in a loop at
   iteration k is ranked where it fired in ρ', and ρ keeps every write of P
   at its image's rank, so it reads what it read in ρ'; what could break
   this is P forbidding that interleaving, and P's only constraints on it
   are its root edges into the Enters and out of the Exits, which (L4) and
   (L5) keep.  So a rewrite that drops an edge from a root write to an
   Enter fails (L5), one that drops an edge from an Exit to a root write
   fails (L4), even when the Exit fires in the last iteration and a Read of
   an earlier iteration could still come after the write.  A Read in
   iteration k that may fire after an Exit in P may also do so in P', and
   then does in ρ.
 - Deadness (a loop whose predicate fails, a dead Enter) needs no proof
   that it never happens: it is the same event in both runs, and (L4)
   makes every root node dead in one iff dead in the other.
 - Exits that fire live several times (L6) are refused: a root node between
   two of their firings could read either value.
 - Loops differing in any node (Grappler's CSE inside a function body) are
   refused (L1); so are root conditionals (L0), whose deadness Fact A does
   not cover.
tests/test_check_structural_loops.py compares every `sound` of the rule with
the reference engine's outcome sets on generated programs with loops, on
rewrites that keep and that break each condition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tfsem.oracle.program import (CONTROL_FLOW_OPS, ENTER, EXIT, VAR, VARIABLE, ControlIn,
                                  DataIn, FeedIn, Node, Program, TensorType)

from .structural import NO_PROOF_BUDGET, _attrs_key, nan_payload_observer, structural_refinement

#: the rule on or off (tests switch it off to see the stage after it)
ENABLED = True

EXIT_FEED = "tfsem.exit/"
ENTER_OUTPUT = "tfsem.enter/"
#: the dtype of an Exit's leaf: none that any simplification knows
EXIT_DTYPE = "exit"


class _No(Exception):
    pass


@dataclass
class LoopsResult:
    proved: bool
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)


def loops_unchanged(p: Program, p2: Program, semantics: str = "atomic",
                    observe: str = "outputs+state", *, real: bool = False,
                    deadline: float | None = None) -> LoopsResult:
    """Try to prove P' ⊑ P by the rule in the module docstring (both
    programs valid, with the same interface).  Never a verdict by itself:
    `proved` False says which condition failed.  `deadline` (a
    time.monotonic() value, the check's): once past it, no proof, with the
    structural rule's reason `NO_PROOF_BUDGET` and stats["budget"]."""
    started = time.perf_counter()
    stats: dict[str, Any] = {}
    try:
        reason = _prove(p, p2, semantics, observe, real, stats, deadline)
        proved = True
    except _No as exc:
        reason, proved = str(exc), False
    stats["seconds"] = round(time.perf_counter() - started, 6)
    return LoopsResult(proved, reason, stats)


def _prove(p: Program, p2: Program, semantics: str, observe: str, real: bool,
           stats: dict, deadline: float | None = None) -> str:
    if not ENABLED:
        raise _No("the rule is off")

    def on_time() -> None:
        if deadline is not None and time.monotonic() > deadline:
            stats["budget"] = True
            raise _No(NO_PROOF_BUDGET)
    on_time()
    # (L0)
    for q in (p, p2):
        if q.has_stacks:
            raise _No("a program has a stack")
    fr, fr2 = p.frames, p2.frames
    for q, f in ((p, fr), (p2, fr2)):
        for n in q.nodes:
            if not f.get(n.name) and n.op in CONTROL_FLOW_OPS and n.op != ENTER:
                raise _No(f"node {n.name!r} ({n.op}) is outside every loop")
    # (L1)
    lam = {n.name for n in p.nodes if fr.get(n.name) or n.op == ENTER}
    lam2 = {n.name for n in p2.nodes if fr2.get(n.name) or n.op == ENTER}
    if not lam:
        raise _No("no loop")
    if lam != lam2:
        diff = sorted(lam ^ lam2)[0]
        raise _No(f"node {diff!r} is in a loop of one program only")
    enters = sorted(n for n in lam if not fr[n])
    for name in lam:
        a, b = p.node[name], p2.node[name]
        if a.op != b.op or _attrs_key(a.attrs) != _attrs_key(b.attrs) or fr[name] != fr2[name]:
            raise _No(f"loop node {name!r} differs (op, attributes or frame)")
        if fr[name] and a.inputs != b.inputs:
            raise _No(f"loop node {name!r} differs in its inputs")
    # (L1') every loop iterates in the same window: parallel_iterations is the
    # first Enter's of the frame in node order (oracle/controlflow.py), so
    # Enters that disagree and come in another order differ
    from tfsem.oracle.controlflow import frame_parallel_iterations
    if frame_parallel_iterations(p) != frame_parallel_iterations(p2):
        raise _No("(L1') a loop's parallel_iterations (its first Enter's in node order) "
                  "differs")
    exits = {n for n in lam if p.node[n].op == EXIT and len(fr[n]) == 1}
    # (L3) and the Enters' data inputs
    var_enters: dict[str, str] = {}
    for e in enters:
        srcs = []
        for q in (p, p2):
            data = q.node[e].data_inputs
            if len(data) != 1:
                raise _No(f"Enter {e!r} has {len(data)} data inputs")
            srcs.append(data[0])
        kinds = {(q.port_kind(i.node, i.port) if isinstance(i, DataIn) else "tensor")
                 for q, i in zip((p, p2), srcs)}
        if VARIABLE in kinds:
            vs = [q.node[i.node].attrs.get("var") if isinstance(i, DataIn) and q.node[i.node].op == VAR
                  else None for q, i in zip((p, p2), srcs)]
            if vs[0] is None or vs[0] != vs[1]:
                raise _No(f"Enter {e!r} takes a handle that is not the same variable's Var node "
                          "in both programs")
            var_enters[e] = vs[0]
    # Q and Q'
    q1, q2 = _root_program(p, fr, lam, exits, enters, var_enters), \
        _root_program(p2, fr2, lam2, exits, enters, var_enters)
    # (L2)
    blind = nan_payload_observer(p) is None and nan_payload_observer(p2) is None
    nu: dict = {}
    on_time()
    r = structural_refinement(q1, q2, semantics, observe, real=real, basic=True, matched=nu,
                              nan_blind=blind, deadline=deadline)
    if r.stats.get("budget"):
        stats["budget"] = True
        raise _No(NO_PROOF_BUDGET)
    if not r.proved:
        raise _No(f"outside the loops, {r.reason}")
    if r.stats.get("deleted_assigns"):
        raise _No("an Assign outside the loops is deleted")
    # (L4), (L5)
    on_time()
    anc, dead = _root_reach(p, fr, exits)
    anc2, dead2 = _root_reach(p2, fr2, exits)
    bit, bit2 = _bits(p), _bits(p2)
    for (s, _), (t, _) in nu.items():
        if dead[s] != dead2[t]:
            raise _No(_waits_text(s, t, dead[s], dead2[t]))
    for e in enters:
        if dead[e] != dead2[e]:
            raise _No(_waits_text(e, e, dead[e], dead2[e]))
        for (s, _), (t, _) in nu.items():
            if anc[e] >> bit[s] & 1 and not anc2[e] >> bit2[t] & 1:
                raise _No(f"(L5) {s!r} comes before the loop entered at {e!r}, and its "
                          f"counterpart {t!r} no longer does")
    for o, port in p.outputs.items():
        port2 = p2.outputs[o]
        if dead[port.node] != dead2[port2.node]:
            raise _No(_waits_text(port.node, port2.node, dead[port.node], dead2[port2.node],
                                  f"output {o!r}: "))
    # (L6)
    read = {i.node for q, f in ((p, fr), (p2, fr2)) for n in q.nodes if not f.get(n.name)
            for i in n.inputs if isinstance(i, (DataIn, ControlIn)) and i.node in exits}
    read |= {port.node for q in (p, p2) for port in q.outputs.values() if port.node in exits}
    if read:
        on_time()
        from tfsem.oracle.controlflow import Machine
        from tfsem.oracle.graph import graph_of
        multi = Machine(p, graph_of(p))._after_multi_exit
        for x in sorted(read):
            if x in multi:
                raise _No(f"(L6) Exit {x!r} may fire live more than once")
    frames = {fr[n][0] for n in lam if fr[n]}
    stats.update(frames=len(frames), loop_nodes=len(lam), exits_read=len(read),
                 structural=r.stats)
    return (f"loop frames unchanged: {len(frames)} loop{'s' if len(frames) != 1 else ''} "
            f"({len(lam)} nodes) the same node for node, entered with equal terms in the same "
            f"order after the accesses outside, every Exit read fires once; outside the loops, "
            f"{r.reason}")


def _waits_text(s: str, t: str, d1: frozenset, d2: frozenset, where: str = "") -> str:
    gone = sorted(d1 - d2)
    new = sorted(d2 - d1)
    if gone:
        return (f"(L4) {where}{s!r} waits for the loop Exit {gone[0]!r} and its counterpart "
                f"{t!r} no longer does")
    return (f"(L4) {where}{t!r} waits for the loop Exit {new[0]!r} and its counterpart "
            f"{s!r} in the original does not")


def _root_reach(p: Program, fr, exits) -> tuple[dict[str, int], dict[str, frozenset]]:
    """For every root node n (and top-level Exit): rootanc(n), the root
    nodes with a path into n through root nodes (a bit set over
    `_bit(p, name)`), and D(n), the top-level Exits with such a path (an
    Exit's own: itself; its ancestors inside the loop are not followed)."""
    anc: dict[str, int] = {}
    dead: dict[str, frozenset] = {}
    bit = _bits(p)
    for name in p.topological_order:
        if fr.get(name) and name not in exits:
            continue
        if name in exits:
            anc[name], dead[name] = 0, frozenset((name,))
            continue
        a = 0
        d: frozenset = frozenset()
        for q in p.predecessors(name):
            a |= anc[q] | (1 << bit[q])
            d = d | dead[q] if dead[q] else d
        anc[name], dead[name] = a, d
    return anc, dead


def _bits(p: Program) -> dict[str, int]:
    return {n.name: k for k, n in enumerate(p.nodes)}


def _root_program(p: Program, fr, lam: set, exits: set, enters: list,
                  var_enters: dict) -> Program:
    """Q: the root nodes of p, each top-level Exit an opaque leaf, each
    top-level Enter's tensor input an output (module docstring)."""
    names = {n.name for n in p.nodes}
    nodes: list[Node] = []
    feeds = dict(p.feeds)
    outputs = dict(p.outputs)
    for x in sorted(exits):
        feed = EXIT_FEED + x
        if feed in p.feed_names:
            raise _No(f"a feed is called {feed!r}")
        feeds[feed] = TensorType(EXIT_DTYPE, ())
        nodes.append(Node(x, "Identity", (FeedIn(feed),)))
    for n in p.nodes:
        if n.name not in lam:
            nodes.append(n)
    for e in enters:
        if e in var_enters:
            continue
        name = ENTER_OUTPUT + e
        if name in names or name in outputs:
            raise _No(f"a node or output is called {name!r}")
        nodes.append(Node(name, "Identity", (p.node[e].data_inputs[0],)))
        outputs[name] = DataIn(name)
    return Program(p.variables, tuple(nodes), outputs, feeds)


__all__ = ["loops_unchanged", "LoopsResult"]
