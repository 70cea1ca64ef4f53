"""Demand-driven confirmation: one part of an outcome from the part's cone.

Counterexample minimization (minimize.py, check.py `minimized`) asks, for
each candidate σ, whether the rewrite's outcome is still none of the
original's.  Where both programs are race-free that is whether the two
programs' one outcomes differ at σ (check.py `original_outcomes`), and two
outcomes differ as soon as one part (an output, or a variable's final value)
does.  A part's value needs only the part's *cone*: the nodes with a path of
edges (data or control) into the node that computes it.  On a real graph's
training step the cone of one optimizer slot leaves out the other slots'
updates, and the cone of the loss leaves out the whole backward pass.

**The cone of a part** (`cone`).  For an output: the ancestors of the node
it fetches, that node included.  For a variable's final value: the ancestors
of every Assign to it (with none, the value is its initial value: no node).
The set is closed under predecessors, so every node in it has all its inputs
in it, and every path of edges between two of its nodes lies in it.

**Why the cone's run gives the part's value.**  Let P be race-free
(structural.py `race_free`: every two accesses of one variable, one of them
an Assign, ordered by hb).  By structural.py's Fact 1 a run is a linear
extension of the step DAG; by Fact 2 only Assign steps change variables.  So
in every run, the Assigns of x that come before an access a of x are exactly
those ordered before a by hb, i.e. a's ancestors among the Assigns of x, in
their hb order (they are ordered among themselves); and a variable's final
value is what the last of its Assigns (all ordered) left, or its initial
value.  A node's value is then a function (functions are deterministic: numpy
models; TensorFlow's kernels are evaluated twice and refused where they are
not, oracle/kernels.py) of its inputs and, for a Read or Assign of x, of x's
initial value and the Assigns of x among its ancestors: by induction along
the topological order, of σ and its ancestors alone.  The cone program C
(`cone_program`: P's nodes in the cone, the part's output, the variables the
cone accesses) has the same edges among those nodes, so the same hb between
them: C is race-free, each of its nodes has the same ancestors as in P, and
each computes the same value in C's runs as in P's; the part's value (a
fetched node's value, or the last Assign's write, or x's initial value) is
the same.  Errors are values like any other here (SPEC section 2), and a DAG
never blocks, so C's canonical run (refute.canonical_outcome, a run of the
oracle's own step function) is complete.

**Why a differing part is a counterexample.**  With P race-free, Outcomes(P,
σ) = {o}, o the outcome of any run (check.py `original_outcomes`); with P'
race-free, every run of P' gives one outcome o'.  If the part's value in o'
differs from its value in o (computed from the two cones), then o' != o, so
o' is not in Outcomes(P, σ): σ is a counterexample, with any schedule of P'
(the one the check found, for instance).  When the part's values agree,
nothing follows, and the caller confirms σ in full (`Demand.confirm` says
None).  The programs here have no control flow (those go to
checking/control_flow.py) and the same outputs and variables (or the
shortcut is not used, `Demand.usable`).

What the shortcut decides is only which σ minimization keeps trying from;
the σ a verdict shows is confirmed by the full oracle (check.py `minimized`
confirms it again, and shows the outcomes that confirmation computed).
tests/test_check_demand_confirm.py checks part values against full runs and
the shortcut's answers against full confirmation on generated programs.
"""

from __future__ import annotations

import time
import weakref
from typing import Mapping

from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import ASSIGN, READ, FeedIn, Program
from tfsem.oracle.values import Value, exact

from . import refute as ref

#: a part of an outcome: ("output", name) or ("variable", name)
Part = tuple[str, str]

#: minimization's candidate σ that leave the σ a part was found different at
#: unchanged on everything the part's cones read are taken without a run
#: (`Demand.kept_parts`; check.py `minimized`); False: every candidate
#: tested as before (the differential test's reference)
UNCHANGED_CONES_FREE = True


#: a program's cones and its Assigns by variable, kept per program object
#: (`cone`, `seeds`); False: each computed anew, as before (the
#: differential test's reference)
CONES_PER_PROGRAM = True

#: Program -> {"owner": a weak reference to it, "assigns": variable ->
#: Assign names, "readers": `_readers`, part -> cone}.  Why a kept answer is
#: the one a fresh walk gives: a Program is immutable (a frozen dataclass
#: whose nodes, outputs and variables are frozen when it is made, its maps
#: refusing even `|=`; `replace` makes a new object), and a cone and the
#: Assigns of a variable are functions of those fields alone.  Held weakly,
#: the entries go with the program.  A WeakKeyDictionary finds a key by
#: `==`, and Program.__eq__ compares contents: an equal program made apart
#: would find another's entry, and where a name is on two nodes (an invalid
#: program, refused before any check, but one `cone` may still be asked
#: about) equal programs with the nodes in another order have different
#: predecessors (the later node of a name wins).  So an entry is used only
#: by the very object it was made for ("owner"); an equal twin walks anew.
#: The checks of one original (Grappler's five rewrites of a real graph)
#: ask for the same cones of P each: each is walked once.
_PER_PROGRAM: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()


def _kept_for(p: Program) -> dict | None:
    if not CONES_PER_PROGRAM:
        return None
    try:
        known = _PER_PROGRAM.get(p)
        if known is None:
            known = _PER_PROGRAM[p] = {"owner": weakref.ref(p)}
        elif known["owner"]() is not p:
            return None   # (an equal program's entry, not p's: see above)
    except TypeError:
        return None   # (an object that cannot be held weakly: nothing kept)
    return known


def _assigns(p: Program, known: dict | None) -> dict[str, set[str]]:
    """Variable -> the names of the Assigns to it, one walk of p's nodes."""
    table = known.get("assigns") if known is not None else None
    if table is None:
        table = {}
        for n in p.nodes:
            if n.op == ASSIGN:
                x = p.accessed_variable(n.name)
                table.setdefault(x, set()).add(n.name)
        if known is not None:
            known["assigns"] = table
    return table


def seeds(p: Program, part: Part) -> set[str]:
    """The nodes whose values make `part`: the node an output fetches, or
    every Assign to a variable."""
    kind, name = part
    if kind == "output":
        return {p.outputs[name].node}
    return set(_assigns(p, _kept_for(p)).get(name, ()))


def cone(p: Program, part: Part) -> frozenset[str]:
    """The part's cone: its seeds and every node with a path of edges into
    one (kept per program object, `CONES_PER_PROGRAM`)."""
    known = _kept_for(p)
    if known is not None:
        found = known.get(part)
        if found is not None:
            return found
    result = frozenset(p.ancestors(seeds(p, part)))
    if known is not None:
        known[part] = result
    return result


def cone_program(p: Program, part: Part, names: frozenset[str] | None = None) -> Program:
    """P restricted to the part's cone: its nodes (in P's order), the
    part's output (when it is one), and the variables the cone accesses
    (and the part's own, when it is one)."""
    names = cone(p, part) if names is None else names
    kind, name = part
    accessed = {p.accessed_variable(n) for n in names if p.node[n].op in (READ, ASSIGN)}
    if kind == "variable":
        accessed.add(name)
    accessed.discard(None)
    return p.replace(nodes=tuple(n for n in p.nodes if n.name in names),
                     outputs={name: p.outputs[name]} if kind == "output" else {},
                     variables={x: p.variables[x] for x in sorted(accessed)})


def _readers(p: Program, known: dict) -> tuple:
    """p's nodes that read a feed or access a variable, each with the feed
    names its data inputs read and the variable it accesses (or None): one
    walk of p's nodes, kept with p's cones (`_PER_PROGRAM`)."""
    table = known.get("readers")
    if table is None:
        rows = []
        for node in p.nodes:
            # (the feeds among its inputs, in order: `data_inputs` is
            # `inputs` less the control edges, and a FeedIn is a data input,
            # so this is the tuple that filter gives, with no tuple of data
            # inputs made per node; MobileNetV2's rewrites are 5,000 nodes,
            # walked once each)
            fed = tuple([i.name for i in node.inputs if isinstance(i, FeedIn)])
            x = p.accessed_variable(node.name) if node.op in (READ, ASSIGN) else None
            if fed or x is not None:
                rows.append((node.name, fed, x))
        table = known["readers"] = tuple(rows)
    return table


def sigma_names(p: Program, names: frozenset[str]) -> tuple[set[str], set[str]]:
    """The feeds and the variables' initial values that the nodes `names`
    may read: (feed names, variable names)."""
    feeds: set[str] = set()
    variables: set[str] = set()
    known = _kept_for(p)
    if known is not None:
        # (the same sets as the walk below: only the nodes `_readers` lists
        # add to them, each what the walk adds for it; a MobileNetV2 cone
        # is thousands of nodes, and a few dozen of them read σ)
        for n, fed, x in _readers(p, known):
            if n in names:
                feeds.update(fed)
                if x is not None:
                    variables.add(x)
        return feeds, variables
    for n in names:
        node = p.node[n]
        feeds.update(i.name for i in node.data_inputs if isinstance(i, FeedIn))
        if node.op in (READ, ASSIGN):
            x = p.accessed_variable(n)
            if x is not None:
                variables.add(x)
    return feeds, variables


def part_value(outcome, part: Part) -> Value:
    kind, name = part
    table = outcome.outputs if kind == "output" else (outcome.state or ())
    return dict(table)[name]


class Demand:
    """The demand-driven test of a candidate σ for two race-free programs
    without control flow (see the module's argument): `confirm(σ, part)`
    is True where the part's values differ (σ is a counterexample), None
    where they agree (σ must be confirmed in full)."""

    def __init__(self, p: Program, p2: Program, semantics: str, observe: str):
        self.p, self.p2 = p, p2
        self.semantics, self.observe = semantics, observe
        self._cones: dict[Part, tuple[Program, Program, int]] = {}
        self._reads: dict[Part, tuple[frozenset[str], frozenset[str]]] = {}
        #: cone runs made, and those that found the part different
        self.runs = self.differed = 0

    @staticmethod
    def usable(p: Program, p2: Program, both_race_free: bool) -> bool:
        """Whether the shortcut applies: both programs race-free, without
        control flow, with the same outputs and variables."""
        return (both_race_free and not p.has_control_flow and not p2.has_control_flow
                and set(p.outputs) == set(p2.outputs) and set(p.variables) == set(p2.variables))

    def programs(self, part: Part) -> tuple[Program, Program, int]:
        """The part's cone programs of P and P', and their nodes together."""
        known = self._cones.get(part)
        if known is None:
            c1, c2 = cone(self.p, part), cone(self.p2, part)
            known = self._cones[part] = (cone_program(self.p, part, c1),
                                         cone_program(self.p2, part, c2), len(c1) + len(c2))
        return known

    def size(self, part: Part) -> int:
        """The nodes of the part's cones in both programs (what a test costs:
        the count `programs` keeps, from the two cones alone, no cone
        program made where no cone test runs)."""
        known = self._cones.get(part)
        if known is not None:
            return known[2]
        return len(cone(self.p, part)) + len(cone(self.p2, part))

    def reads(self, parts) -> tuple[set[str], set[str]]:
        """The feeds and variables' initial values that the cones of `parts`
        (in P and in P') may read: what else σ holds cannot change those
        parts' values."""
        feeds: set[str] = set()
        variables: set[str] = set()
        for part in parts:
            for p in (self.p, self.p2):
                f, v = sigma_names(p, cone(p, part))
                feeds |= f
                variables |= v
            if part[0] == "variable":
                variables.add(part[1])
        return feeds, variables

    def part_reads(self, part: Part) -> tuple[frozenset[str], frozenset[str]]:
        """`reads([part])`, computed once per part."""
        known = self._reads.get(part)
        if known is None:
            feeds, variables = self.reads([part])
            known = self._reads[part] = (frozenset(feeds), frozenset(variables))
        return known

    def kept_parts(self, parts, at, candidate) -> list[Part]:
        """The parts of `parts` whose cones read nothing that differs
        between σ `at` and σ `candidate` ((feeds, init) each).

        **Why, where each of `parts` differs at `at`, a candidate with one
        such part is a counterexample, with no run.**  A part's value in a
        run of P (and of P') is a function of σ's feeds and initial values
        that the part's cone reads, `reads` (the module's argument: the cone
        program's run gives it, and that program's nodes read no other
        feed or variable; functions are deterministic, and "the same" here
        is the same bits, `exact`, so a NaN's payload cannot differ either).
        Where the candidate gives those the same bits as `at`, the part's
        values in P and in P' are those they had at `at`, which differ:
        the candidate is a counterexample (the module's "why a differing
        part is a counterexample").  It says nothing where they changed."""
        return [part for part in parts
                if _same_on(self.part_reads(part), at, candidate)]

    @property
    def whole(self) -> int:
        """The nodes of both programs (what a full confirmation runs)."""
        return len(self.p.nodes) + len(self.p2.nodes)

    def first_differing(self, feeds: Mapping[str, Value], init: Mapping[str, Value],
                        parts: list[Part], deadline: float | None = None) -> Part | str | None:
        """The first of `parts` whose values differ at σ (a counterexample),
        testing them in order while the cones tested stay within the size
        of both programs (a full confirmation's work): "rest" where that
        bound stopped the tests before every part was tested, None where
        every part was tested and agrees."""
        spent = 0
        for part in parts:
            size = self.size(part)
            if spent and spent + size > self.whole:
                return "rest"
            spent += size
            if self.confirm(feeds, init, part, deadline):
                return part
        return None

    def confirm(self, feeds: Mapping[str, Value], init: Mapping[str, Value], part: Part,
                deadline: float | None = None) -> bool | None:
        """True when the part's value differs between the two programs at σ
        (a counterexample: see the module's argument); None when it does not.
        Past `deadline` a run stops with BudgetExceeded."""
        c1, c2, _ = self.programs(part)
        self.runs += 1
        o1, _ = ref.canonical_outcome(c1, feeds, init, self.semantics, self.observe, deadline)
        if deadline is not None and time.monotonic() > deadline:
            raise BudgetExceeded("seconds", 0.0, 0)
        o2, _ = ref.canonical_outcome(c2, feeds, init, self.semantics, self.observe, deadline)
        if (part_value(o1, part),) == (part_value(o2, part),):
            return None
        self.differed += 1
        return True


def _same_on(names, a, b) -> bool:
    """Whether σ `a` and σ `b` hold the same bits at the feeds and
    variables `names` ((feed names, variable names))."""
    for table, keys in ((0, names[0]), (1, names[1])):
        for name in keys:
            x, y = a[table].get(name), b[table].get(name)
            # (`exact`: a tensor's dtype, shape and bits, NaN payloads and
            # signed zeros told apart; an error value by its reason)
            if x is not y and (x is None or y is None or exact(x) != exact(y)):
                return False
    return True


def differing_parts(outcome, others) -> list[Part]:
    """The parts at which `outcome` differs from the one outcome in `others`
    (staged order: outputs by name, then variables by name)."""
    (other,) = others
    theirs = dict(other.parts())
    return [part for part, value in outcome.parts() if (value,) != (theirs.get(part),)]
