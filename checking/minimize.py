"""Readable counterexamples: small σ and schedules whose order says something.

σ is minimized as Alive2 does it: each input element in turn is asked to be 0,
then 1 or -1, then ever smaller in magnitude, by adding that constraint to the
failing query; a model that satisfies it is taken only after the concrete
oracle confirms the counterexample at the new σ.  The concrete fallback, which
has no query, tries the same small values directly: whole tensors first (all
0, all 1, all -1), then the elements of small tensors (ELEMENT_PASS_MAX).

A witness schedule fires every node once, so "fewest steps" means fewest
steps out of place: the canonical (topological) order itself when it gives the
outcome, else adjacent steps are swapped towards that order whenever that
keeps the outcome, so that what remains out of order is what makes the
counterexample.  Steps with no variable in common
(or that both only read) commute and swap freely; a swap of two conflicting
accesses is kept only when replaying the schedule gives the same outcome.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np
import z3

from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import CannotRunHere
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import ASSIGN, READ, Program
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import DTYPES, FLOAT_DTYPES, Error, Tensor, Value, exact

from .demand import _kept_for
from .encode import Encoder
from .symbolic import Term

#: σ's minimization (concrete and solver steps together) takes at most this
#: share of the timeout, and at least MINIMIZE_MAX_SECONDS_FLOOR seconds: on a
#: real graph each step costs a run of each program (0.1-1 s), and a tenth of
#: the budget (the share until the fourth round of work) changed a handful of
#: elements out of 10^5 (docs/benchmarks.md, "Unsound checks on real graphs").
#: The one cap of both checkers' boxes: check.py's (which imports these two
#: names from here; its box scaled to a confirmation's cost lies within it)
#: and the control-flow checker's (checking/control_flow.py `minimized`)
MINIMIZE_SHARE = 0.05
MINIMIZE_MAX_SECONDS_FLOOR = 0.3
#: ... and within that, at most MINIMIZE_FIND_RATIO times what the check
#: took before its minimization began (the time it took to find the
#: counterexample), at least MINIMIZE_FIND_FLOOR seconds (`find_box`): a
#: counterexample found in 0.1 s is not polished for 0.5 s.  Both checkers'
#: concrete passes; not the solver's ladder (queries of QUERY_SECONDS each)
MINIMIZE_FIND_RATIO = 2.0
MINIMIZE_FIND_FLOOR = 0.05
#: ... and where no remembered σ was taken (the first check of an original,
#: or one whose remembered σ was refused), at most MINIMIZE_COLD_RATIO
#: times what finding took, at least MINIMIZE_COLD_FLOOR seconds (`find_box`
#: with these two).  Measured on the real corpus's 36 `unsound` checks
#: with a minimization (docs/benchmarks.md, "The twelfth round"): the box
#: of 5% of the timeout ran 0.5 s on a counterexample found in 0.07 s, and
#: what it bought after three times the finding time was a few elements
#: (9,610 -> 9,584 non-zero of 122,342); the warm box's floor of 0.2 s
#: bought 2-24 elements on checks whose remembered σ was taken within 0.01 s.
#: Since the tensors are tried a layer at a time, the large layers first
#: (LATE_ORDER), σ shrinks in fewer steps, and the ratio went from 3 to
#: 2.5 (docs/benchmarks.md, "The fourteenth round: the order of trying").
#: With that order the floor went from 0.25 to 0.15 s for check.py's
#: minimization: over the real corpus's 46 minimized `unsound` checks the
#: median σ at 0.15 s was 1,422 non-zero elements (1,362 at 0.25 s; the
#: last release's order at 0.25 s: 5,131), four σ larger than the last
#: release's by at most 0.7% (the batch-norm CNN's 5,131 -> 5,173, the
#: ResNet block's 9,610 -> 9,679; docs/benchmarks.md, "The fourteenth round
#: together").  The control-flow checker keeps 0.25 s
#: (MINIMIZE_CONTROL_FLOW_COLD_FLOOR): a step is not begun where its
#: confirmation would end past the box, and at 0.15 s a first check whose
#: comparisons cost 0.2 s (a loop graph's;
#: tests/test_check_control_flow_minimize.py) began none.  The ratio stays
#: above MINIMIZE_FIND_RATIO, so that a first check gets more than a warm
#: one (its σ is the one later checks start from)
MINIMIZE_COLD_RATIO = 2.5
MINIMIZE_COLD_FLOOR = 0.15
MINIMIZE_CONTROL_FLOW_COLD_FLOOR = 0.25


def progressed(stats: dict, recalled) -> bool:
    """Whether the σ a minimization leaves is smaller than its check found
    it: a step taken besides the remembered σ (`stats` of
    `minimize_concrete`), or the remembered σ, itself such a σ, taken
    (`recalled`: sigma_memo.recall's answer).  Only such a σ earns a later
    check the warm box: one that continues from a σ no step made smaller
    would stop short where its first check did not."""
    start = stats.get("remembered") in ("taken", "same")
    own = stats.get("taken", 0) - (stats.get("remembered") == "taken")
    return own > 0 or bool(start and recalled and recalled[2])


def find_box(box: float, spent: float, warm: bool = True,
             cold_floor: float | None = None) -> float:
    """The minimization's box `box` bounded by the check's cost of finding
    the counterexample, `spent` seconds: MINIMIZE_FIND_RATIO times it, at
    least MINIMIZE_FIND_FLOOR, where a remembered σ was taken (`warm`),
    else MINIMIZE_COLD_RATIO times it, at least `cold_floor` (default
    MINIMIZE_COLD_FLOOR); never more than `box`."""
    ratio, floor = (MINIMIZE_FIND_RATIO, MINIMIZE_FIND_FLOOR) if warm else \
        (MINIMIZE_COLD_RATIO, MINIMIZE_COLD_FLOOR if cold_floor is None else cold_floor)
    return min(box, max(floor, ratio * spent))

#: The constraints tried on each input element, in order of preference.
LADDER: tuple[tuple[str, float], ...] = (
    ("eq", 0), ("eq", 1), ("eq", -1), ("abs", 2), ("abs", 4), ("abs", 16), ("abs", 256),
    ("abs", 65536))

Sigma = tuple[dict[str, Value], dict[str, Value]]

#: the solver's time for one minimization step (a step that times out is skipped)
QUERY_SECONDS = 0.2


def _satisfies(value: Any, dtype: str, how: str, k: float) -> bool:
    """Whether `value` satisfies Encoder.leaf_constraint(how, k) (the same
    rule, per dtype)."""
    if dtype in FLOAT_DTYPES:
        d = DTYPES[dtype]
        v = float(np.array(value, d).astype(np.float64))
        kv = float(np.array(k, d).astype(np.float64))
        if np.isnan(v):
            return False
        if how == "eq":
            return v == kv and bool(np.signbit(v)) == bool(np.signbit(kv))
        return abs(v) <= kv
    if dtype == "bool":
        return bool(value) == bool(k) if how == "eq" else True
    v = int(value)
    if how == "eq":
        return v == int(k) % (1 << (8 * DTYPES[dtype].itemsize)) if dtype.startswith("u") \
            else v == int(k)
    kk = min(int(k), int(np.iinfo(DTYPES[dtype]).max))
    return v <= kk if dtype.startswith("u") else -kk <= v <= kk


Preference = list[tuple[z3.BoolRef, Callable[[Sigma], bool]]]


def leaf_preference(encoder: Encoder, leaf: Term, value_of: Callable[[Sigma, Term], Any]) -> Preference:
    """LADDER for one input element: each constraint, with a test of whether
    a σ already satisfies it (`value_of` gives None when the element does
    not matter, e.g. in the initial value of an uninitialized variable)."""
    def satisfied(how: str, k: float) -> Callable[[Sigma], bool]:
        def test(sigma: Sigma) -> bool:
            value = value_of(sigma, leaf)
            return value is None or _satisfies(value, leaf.dtype, how, k)
        return test
    return [(encoder.leaf_constraint(leaf, how, k), satisfied(how, k)) for how, k in LADDER]


def minimize_with_solver(base: Sequence[z3.BoolRef], preferences: Sequence[Preference],
                         sigma: Sigma, decode: Callable[[z3.ModelRef], Sigma],
                         confirm: Callable[[Sigma], bool], deadline: float,
                         ctx: z3.Context) -> Sigma:
    """Shrink a confirmed σ (which satisfies `base`) one preference at a time:
    the first alternative of each preference that some confirmed σ satisfies
    (with every preference kept so far) is kept.  Returns a σ that `confirm`
    accepted (`sigma` itself if nothing better was found).  The solvers are
    made in `ctx`, the context of the constraints' terms."""
    best = sigma
    fixed: list[z3.BoolRef] = []
    for alternatives in preferences:
        for constraint, satisfied in alternatives:
            if time.monotonic() >= deadline:
                return best
            if satisfied(best):
                fixed.append(constraint)   # best already satisfies it: free
                break
            solver = z3.Solver(ctx=ctx)
            solver.set("timeout", max(1, int(min(QUERY_SECONDS, deadline - time.monotonic()) * 1000)))
            solver.add(*base, *fixed, constraint)
            if solver.check() == z3.sat:
                candidate = decode(solver.model())
                if confirm(candidate):
                    fixed.append(constraint)
                    best = candidate
                    break
    return best


def _small_values(dtype: str) -> list[Any]:
    d = DTYPES[dtype]
    if dtype == "bool":
        return [np.bool_(False), np.bool_(True)]
    if dtype.startswith("u"):
        return [d.type(0), d.type(1)]
    return [d.type(0), d.type(1), d.type(-1)]


#: the element-by-element pass of `minimize_concrete` visits the tensors of at
#: most this many elements (a real graph's σ holds 10^4-10^6 of them: each
#: step costs a run of each program, and one changed element among thousands
#: makes σ no easier to read)
ELEMENT_PASS_MAX = 64


def _uniform(value: Tensor, small: Any) -> Tensor:
    return Tensor(np.full(value.shape, small, dtype=DTYPES[value.dtype]), value.dtype)


class OutOfTime(Exception):
    """Raised by `minimize_concrete`'s `confirm` to end the minimization
    (the step it was asked about is not taken: σ stays as last confirmed)."""


#: the old name (minimize_concrete's own deadline)
_OutOfTime = OutOfTime


def minimize_concrete(sigma: Sigma, confirm: Callable[[Sigma], bool], deadline: float,
                      first: Sequence[tuple[int, str]] = (),
                      stats: dict | None = None, start: Sigma | None = None,
                      known: dict | None = None, refusals: dict | None = None,
                      on_start: Callable[[str], None] | None = None) -> Sigma:
    """Shrink a confirmed σ without a solver.  First whole tensors: each
    becomes all 0, else all 1, else all -1, when the counterexample
    survives it (what a σ's tensors that do not matter show at once);
    then the elements of the tensors of at most ELEMENT_PASS_MAX elements,
    each 0, 1 or -1 the same way.

    Each value is tried on groups first (`_settle`): all the members
    (tensors, or elements) at once, then halves of a group that does not
    survive, down to single ones, as delta debugging does; a member that
    takes a value alone takes it here too.  Where a few of a real graph's
    dozens of tensors matter, that is a few confirmations instead of one
    per tensor (each costs a run of both programs).  The elements of all
    the small tensors are one group (a training step's scalars: learning
    rates, step counters), and an element pass does not begin with the
    group its tensor's whole step refused already.

    `first`: tensors ((0, feed) or (1, variable)) that cannot matter, or
    are unlikely to: they take zeros together, in one step, before the
    others (check.py passes those outside the cone of the part that
    differs, checking/demand.py; the order of trying only: the step is
    confirmed as every other); the others after them, in LATE_ORDER
    (`late_order`: a layer's tensors together, the large layers first),
    the ladder past 0 by name.  `confirm` may raise OutOfTime to end the
    minimization.  Every σ kept is one `confirm` accepted; the σ returned
    is the last one kept.  `stats`, when given, counts the steps tried and
    taken (`tried`, `taken`) and says whether the passes all ran
    (`finished`).

    `start`: a σ remembered from an earlier check of the same original
    (checking/sigma_memo.py), asked about first, as one step: its tensors
    (those of this σ's names, dtypes and shapes) replace this σ's, kept
    only where `confirm` accepts them, as every step (`stats["remembered"]`
    says "taken", "refused", "same" or "unusable").  Where it is taken
    (or is this σ already),
    `known` (small value -> members that refused it in that check) puts
    those members last, tried together in one step per value, never
    alone: they mostly refuse again (the order of the search only, see
    the memo's docstring); a group of several members that refused there
    (`known[("group", value)]`) is not asked again, its halves are
    (`_settle`).
    Where it is refused, the tensors after
    `first` are tried in three groups: those it had all zero, the
    others, those that refused 0 in its check.  `refusals`, when given, is filled with the
    members that refused each small value here (alone, or as the group
    of `known`), and under ("group", value) the groups that refused it
    together, for the memo; `on_start` is told what became of `start`
    (the caller's box may depend on it: check.py `minimize_box`)."""
    feeds, init = dict(sigma[0]), dict(sigma[1])
    tables = (feeds, init)
    counts = stats if stats is not None else {}
    counts.setdefault("tried", 0)
    counts.setdefault("taken", 0)
    counts["finished"] = False

    # (σ that `confirm` refused in this minimization, by `_sigma_key`:
    # delta debugging comes back to some of them, e.g. a group G that
    # refused, split into halves A and B, where every member of A then took
    # the value: B on top of that is G's σ again; or the element pass's
    # first group, where it sets again what the tensor pass set.  Such a
    # step is not asked again and counts as refused (`repeated`).  The order
    # of the search only: every σ kept is one `confirm` accepted)
    refused_sigmas: set[int] = set()

    def counted(s: Sigma) -> bool:
        key = _sigma_key(s)
        if key in refused_sigmas:
            counts["repeated"] = counts.get("repeated", 0) + 1
            return False
        counts["tried"] += 1
        ok = confirm(s)
        counts["taken"] += bool(ok)
        if not ok:
            refused_sigmas.add(key)
        return ok

    edit = _Edit(tables)
    if refusals is not None:
        edit.refused = refusals
    whole = [(t, name) for t, table in enumerate(tables) for name in sorted(table)
             if not isinstance(table[name], Error) and table[name].array.size > 0]
    early = [m for m in whole if m in set(first)]
    late = late_order([m for m in whole if m not in set(first)], tables)
    try:
        if start is not None:
            counts["remembered"] = _start_from(start, whole, edit, counted, (feeds, init),
                                               deadline)
            if on_start is not None:
                on_start(counts["remembered"])
            if counts["remembered"] in ("taken", "same"):
                edit.warm = True
                edit.known = {small: set(ms) for small, ms in (known or {}).items()}
        # (a remembered σ refused: the late tensors in three groups, those
        # it had all zero first, then the others, then those that refused 0
        # in its check, so that the halves of delta debugging follow what
        # mattered there; the order of trying only)
        groups = [late]
        if counts.get("remembered") == "refused":
            was_zero = {(t, name) for t, name in whole
                        if isinstance(start[t].get(name), Tensor) and
                        not np.count_nonzero(start[t][name].array)}
            before = set((known or {}).get(0, ()))
            groups = [[m for m in late if m in was_zero and m not in before],
                      [m for m in late if m not in was_zero and m not in before],
                      [m for m in late if m in before]]
        rest = _settle(early, 0, edit, counted, (feeds, init), deadline)
        for group in groups:
            rest += _settle(group, 0, edit, counted, (feeds, init), deadline)
        # (the ladder past 0 tries each member alone, one step each
        # whatever the order: by name, as the first pass's order was)
        position = {m: i for i, m in enumerate(whole)}
        rest = sorted(rest, key=position.__getitem__)
        refused = {m for m in rest}
        for small in (1, -1):
            rest = _settle([m for m in rest if edit.has(m, small)], small, edit, counted,
                           (feeds, init), deadline, alone=True) + \
                [m for m in rest if not edit.has(m, small)]
        # the elements of small tensors: those whose whole tensor took no
        # value tried alone, and those of tensors that took 1 or -1
        elements = [(t, name, i) for t, name in whole
                    if 1 < tables[t][name].array.size <= ELEMENT_PASS_MAX
                    for i in range(tables[t][name].array.size)]
        left = _settle(elements, 0, edit, counted, (feeds, init), deadline,
                       refused={(t, name) for t, name in refused})
        for small in (1, -1):
            left = _settle([m for m in left if edit.has(m, small)], small, edit, counted,
                           (feeds, init), deadline, alone=True) + \
                [m for m in left if not edit.has(m, small)]
        counts["finished"] = True
    except OutOfTime:
        pass
    return feeds, init


#: The order the late tensors (those not in minimize_concrete's `first`)
#: are tried in at 0: "name" (feeds, then variables, each by name),
#: "largest" (most elements first, then as by name), "family" (the tensors
#: of one layer, the name before its last "/", together, largest first;
#: the layers by their largest tensor, largest first).  Delta debugging
#: takes a group whole or splits it in halves, so what comes first is what
#: a step's group holds: with the large tensors first, the first halves
#: zero most of σ's elements in few runs (a real graph's kernels, the
#: unrolled LSTM's 129 non-zero elements left as 2); with a layer's tensors
#: side by side, a kernel that takes 0 only together with its bias meets
#: it in one half (largest first alone split them: the metrics MLP's σ
#: 657 -> 1,295 non-zero elements; "family" leaves 17).  Measured in
#: docs/benchmarks.md, "The fourteenth round: the order of trying".  The
#: order of trying only: every σ kept is one `confirm` accepted, whatever
#: the order (tests/test_minimize_order.py runs each order against the
#: same confirmations).
LATE_ORDER = "family"


def _family(name: str) -> str:
    return name.rsplit("/", 1)[0]


def late_order(late: list, tables: tuple[dict, dict], how: str | None = None) -> list:
    """`late` ((t, name) members, by name) in the order LATE_ORDER names."""
    how = LATE_ORDER if how is None else how
    if how == "name":
        return list(late)
    size = {m: tables[m[0]][m[1]].array.size for m in late}
    rank = {m: i for i, m in enumerate(late)}
    if how == "largest":
        return sorted(late, key=lambda m: (-size[m], rank[m]))
    if how == "family":
        top: dict = {}
        for m in late:
            key = (m[0], _family(m[1]))
            top[key] = max(top.get(key, 0), size[m])
        return sorted(late, key=lambda m: (-top[(m[0], _family(m[1]))], m[0],
                                           _family(m[1]), -size[m], rank[m]))
    raise ValueError(f"unknown LATE_ORDER {how!r}")


def _sigma_key(sigma: Sigma) -> int:
    """A hash of σ's exact bits (each value's `exact`: a NaN's payload
    counts), name by name.  Each Tensor keeps its hash once computed, so a
    step hashes only the values it made.  Two σ with one key are taken as
    one by `minimize_concrete`'s memory of refused σ: a collision could only
    pass over a step, never keep a σ that `confirm` did not accept."""
    return hash(tuple((name, exact(value)) for table in sigma for name, value in table.items()))


class _Edit:
    """Changes to σ's tables in place: whole tensors ((t, name)) or elements
    ((t, name, i)) set to a small value, and put back."""

    def __init__(self, tables: tuple[dict, dict]):
        self.tables = tables
        #: small value -> members that refused it in an earlier check of the
        #: same original, whose remembered σ was taken (tried last, together)
        self.known: dict = {}
        #: small value -> members that refused it here (for the memo)
        self.refused: dict = {}
        #: whether the remembered σ was taken: a whole tensor whose elements
        #: are all 0 or a value already is not set to that value all over
        #: (`within`: the earlier check's element pass left it so)
        self.warm = False
        #: small value -> members passed over in the pass under way (`defer`)
        self.deferred: dict = {}

    def within(self, member, small) -> bool:
        """Whether every element of a whole tensor is 0 or `small`: all
        `small` would be no easier to read."""
        if len(member) != 2 or small == 0:
            return False
        arr = self.tables[member[0]][member[1]].array.reshape(-1)
        want = np.array(small, dtype=arr.dtype)
        return bool(np.all((arr == want) | (arr == np.array(0, dtype=arr.dtype))))

    def refuse(self, members, small) -> None:
        self.refused.setdefault(small, set()).update(members)

    def defer(self, members, small) -> None:
        """Members passed over (they refused `small` in the earlier check):
        `_settle` asks about them together at the end of its pass."""
        self.deferred.setdefault(small, []).extend(members)

    def refuse_group(self, group: frozenset, small) -> None:
        """A group of members that refused `small` together (kept under
        ("group", small): delta debugging's halves begin there)."""
        self.refused.setdefault(("group", small), set()).add(group)

    def has(self, member, small) -> bool:
        """Whether the member's dtype has the value `small` (-1: signed)."""
        return any(_small(s) == small for s in _small_values(self.tables[member[0]][member[1]].dtype))

    def already(self, member, small) -> bool:
        value = self.tables[member[0]][member[1]]
        want = np.array(small, dtype=value.array.dtype)
        if len(member) == 2:
            return bool(np.array_equal(value.array.reshape(-1).view(np.uint8),
                                       np.full(value.array.size, want).view(np.uint8)))
        return value.array.reshape(-1)[member[2]].tobytes() == want.tobytes()

    def would_fill(self, elements, small) -> bool:
        """Whether setting `elements` (of one tensor) to `small` makes the
        whole tensor `small`."""
        t, name = elements[0][:2]
        size = self.tables[t][name].array.size
        chosen = {m[2] for m in elements}
        return all(i in chosen or self.already((t, name, i), small) for i in range(size))

    def apply(self, members, small) -> list:
        saved: list = []
        by_tensor: dict[tuple[int, str], list[int]] = {}
        for m in members:
            t, name = m[0], m[1]
            if len(m) == 2:
                saved.append((t, name, self.tables[t][name]))
                self.tables[t][name] = _uniform(self.tables[t][name], small)
            else:
                by_tensor.setdefault((t, name), []).append(m[2])
        for (t, name), indices in by_tensor.items():
            value = self.tables[t][name]
            saved.append((t, name, value))
            trial = value.array.reshape(-1).copy()
            trial[indices] = np.array(small, dtype=trial.dtype)
            self.tables[t][name] = Tensor(trial.reshape(value.shape), value.dtype)
        return saved

    def restore(self, saved) -> None:
        for t, name, value in reversed(saved):
            self.tables[t][name] = value


def _small(v: Any) -> int:
    return int(v)


def _settle(members: list, small: int, edit: _Edit, confirm, sigma: Sigma,
            deadline: float, alone: bool = False, refused: set | None = None) -> list:
    """`small` for `members` (tensors or elements): the group at once, else
    each half, down to single members; returns the members that did not
    take it (in order).  `alone`: each member on its own, no groups (the
    ladder past 0, where most members are those that must keep their
    values).  `refused`: tensors whose elements are not tried all at once
    (their whole tensor refused `small` on its own already).

    Where a remembered σ was taken (`edit.known`, minimize_concrete's
    `known`): a member that refused `small` on its own in that check is
    not asked again on its own, nor a group that refused it together
    (its halves are): delta debugging goes on where that check's left
    off.  The members so passed over are asked once more at the end, all
    together, in one step."""
    try:
        left = _halves(members, small, edit, confirm, sigma, deadline, alone, refused)
    except BaseException:
        # (passed over, not asked: still the members that refused, for the memo)
        edit.refuse(edit.deferred.pop(small, []), small)
        raise
    deferred = edit.deferred.pop(small, [])
    if deferred:
        try:
            taken = _take(deferred, small, edit, confirm, sigma, deadline)
        except BaseException:
            # (not asked, or cut: still the members that refused, as above)
            edit.refuse(deferred, small)
            raise
        if taken:
            gone = set(deferred)
            return [m for m in left if m not in gone]
        edit.refuse(deferred, small)
    return left


def _halves(members: list, small: int, edit: _Edit, confirm, sigma: Sigma, deadline: float,
            alone: bool, refused: set | None) -> list:
    """`_settle`'s delta debugging (the members passed over for
    `edit.known` are noted in `edit.deferred`, and returned as refused)."""
    todo = [m for m in members if not edit.already(m, small) and
            not (edit.warm and edit.within(m, small))]
    if not todo:
        return []
    singles = edit.known.get(small, ())
    if alone:
        left = []
        for m in todo:
            if m in singles:
                edit.defer([m], small)
                left.append(m)
            elif not _take([m], small, edit, confirm, sigma, deadline):
                edit.refuse([m], small)
                left.append(m)
        return left
    if all(m in singles for m in todo):
        # (each refused it on its own there: asked together, at the end)
        edit.defer(todo, small)
        return todo
    group = frozenset(todo)
    if refused and len({m[:2] for m in todo}) == 1 and todo[0][:2] in refused and \
            edit.would_fill(todo, small):
        pass   # (the group is the whole tensor, whose own step refused it: halves at once)
    elif len(todo) > 1 and group in edit.known.get(("group", small), ()):
        # (this very group refused `small` in the check whose σ was taken:
        # its halves at once, as that check went on)
        edit.refuse_group(group, small)
    elif _take(todo, small, edit, confirm, sigma, deadline):
        return []
    elif len(todo) > 1:
        edit.refuse_group(group, small)
    if len(todo) == 1:
        edit.refuse(todo, small)
        return todo
    half = len(todo) // 2
    return _halves(todo[:half], small, edit, confirm, sigma, deadline, False, refused) + \
        _halves(todo[half:], small, edit, confirm, sigma, deadline, False, refused)


def _start_from(start: Sigma, whole: list, edit: _Edit, confirm, sigma: Sigma,
                deadline: float) -> str:
    """One step: the tensors of `start` (a remembered σ) in place of this
    σ's, where a name of `whole` has a tensor of the same dtype and shape
    there and its bits differ; kept where `confirm` accepts it."""
    changes = []
    usable = 0
    for t, name in whole:
        mine, theirs = edit.tables[t][name], start[t].get(name)
        if not isinstance(theirs, Tensor) or theirs.dtype != mine.dtype or \
                theirs.shape != mine.shape:
            continue
        usable += 1
        if theirs.array.tobytes() != mine.array.tobytes():
            changes.append((t, name, theirs))
    if not changes:
        return "same" if usable else "unusable"
    if time.monotonic() >= deadline:
        raise OutOfTime
    saved = [(t, name, edit.tables[t][name]) for t, name, _ in changes]
    for t, name, value in changes:
        edit.tables[t][name] = value
    return "taken" if _kept(saved, edit, confirm, sigma) else "refused"


def _take(group: list, small: int, edit: _Edit, confirm, sigma: Sigma, deadline: float) -> bool:
    """One step: `group` set to `small`, kept where `confirm` accepts it."""
    if time.monotonic() >= deadline:
        raise OutOfTime
    return _kept(edit.apply(group, small), edit, confirm, sigma)


def _kept(saved: list, edit: _Edit, confirm, sigma: Sigma) -> bool:
    """Whether `confirm` accepts σ as `edit` changed it (`saved`: what the
    change replaced); where it does not, or raises, σ is put back."""
    try:
        ok = confirm(sigma)
    except BaseException:
        edit.restore(saved)
        raise
    if not ok:
        edit.restore(saved)
    return bool(ok)


# ---------------------------------------------------------------------------
# Schedules


def step_node(label: str) -> str:
    return label.partition("@")[0]


def canonical_order(p: Program, schedule: Sequence[str]) -> list[str]:
    """The steps of `schedule` in p's canonical (topological) order, an
    Assign's write step after its read step (whether that order gives the
    same outcome is for a replay to say)."""
    order = _topological_index(p)

    def rank(label: str) -> float:
        name, _, phase = label.partition("@")
        return order[name] + (0.5 if phase == "write" else 0.0)

    return sorted(schedule, key=rank)


def _schedule_tables(p: Program) -> dict:
    """The tables of p that the schedule tests read, kept per program
    object where demand.py keeps its cones (a Program is immutable, and an
    entry serves only the very object it was made for: demand `_kept_for`);
    a fresh dict, filled anew, where none can be kept."""
    known = _kept_for(p) if SCHEDULE_TABLES_PER_PROGRAM else None
    return known if known is not None else {}


def _topological_index(p: Program) -> dict[str, int]:
    """name -> its position in p.topological_order."""
    tables = _schedule_tables(p)
    order = tables.get(("schedule", "topological_index"))
    if order is None:
        order = tables[("schedule", "topological_index")] = \
            {name: i for i, name in enumerate(p.topological_order)}
    return order


def _access_labels(p: Program) -> dict[str, tuple[str | None, bool]]:
    """The step labels of p's Reads and Assigns -> (the variable accessed,
    whether the step writes it), as `_access_blocks` reads each label: a
    Read's step reads; an Assign's one step (atomic) and its write step
    write, its read step reads.  Labels of other phases are not in the
    table (`_access_blocks_lean` reads those as `_access_blocks` does)."""
    tables = _schedule_tables(p)
    table = tables.get(("schedule", "access_labels"))
    if table is None:
        table = {}
        for name, node in p.node.items():
            if node.op == READ:
                table[name] = (p.accessed_variable(name), False)
            elif node.op == ASSIGN:
                x = p.accessed_variable(name)
                table[name] = table[name + "@write"] = (x, True)
                table[name + "@read"] = (x, False)
        tables[("schedule", "access_labels")] = table
    return table


#: the canonical order is taken without a replay where it is the schedule
#: with commuting steps exchanged (`commutes_to`); False: replayed, as before
#: (the differential test's reference)
COMMUTE_WITHOUT_REPLAY = True

#: minimize_schedule's test of the canonical order against the schedule
#: (`_commutes_to_canonical`): `commutes_to`'s answer without the parts of
#: it the canonical order makes true (its edge test, the same steps), the
#: accesses read from a table of p's Read and Assign labels
#: (`_access_labels`).  On MobileNetV2's checks (6,000-step schedules) the
#: test was 0.03-0.07 s per schedule, four per check; False: `commutes_to`
#: itself (the differential test's reference)
CANONICAL_TEST_LEAN = True
#: the topological index and the access labels kept per program object
#: (`_schedule_tables`); False: made anew on every call
SCHEDULE_TABLES_PER_PROGRAM = True


def _access_blocks(p: Program, schedule: Sequence[str]) -> dict[str, list]:
    """Per variable, the order of the schedule's accesses of it that matters:
    each write step alone, each run of reads between two writes as a set
    (reads of one variable commute among themselves).  An Assign is a read
    and a write (atomic: one step, a write here; decomposed: its read step
    a read, its write step a write)."""
    blocks: dict[str, list] = {}
    for label in schedule:
        name, _, phase = label.partition("@")
        node = p.node[name]
        if node.op not in (READ, ASSIGN):
            continue
        _note_access(blocks, p.accessed_variable(name), node.op == ASSIGN and phase != "read",
                     label)
    return blocks


def _note_access(blocks: dict[str, list], x: str, writes: bool, label: str) -> None:
    """Step `label`'s access of variable `x` added to `blocks`
    (`_access_blocks`): a write on its own, reads between two writes as one
    set (their order among themselves does not matter)."""
    seq = blocks.setdefault(x, [])
    if writes:
        seq.append(label)
    elif seq and isinstance(seq[-1], set):
        seq[-1].add(label)
    else:
        seq.append({label})


def commutes_to(p: Program, schedule: Sequence[str], target: Sequence[str]) -> bool:
    """Whether `target` is `schedule` with commuting steps exchanged: the same
    steps, every step after the nodes with an edge into it, and every two
    accesses of one variable of which one writes in the same order.

    Why it then gives the same outcome, with no replay (Mazurkiewicz's
    traces).  Call two steps dependent when they are the two steps of one
    node, when one's node has an edge into the other's, or when both access
    one variable and one of them writes it (SPEC section 2: a program
    without control flow or stacks, where only Read and Assign steps touch
    state).  Two runs that order every dependent pair alike are one trace:
    each is the other with adjacent independent steps exchanged, and such
    an exchange keeps the run a run (neither step enables the other) and
    keeps every value (the two steps read and write disjoint state, or only
    read one variable; functions are deterministic: numpy models, and
    TensorFlow's kernels evaluated twice and refused where they are not,
    oracle/kernels.py).  The check below is that condition: edges on both
    (`_follows_edges`), the accesses per variable by `_access_blocks`.
    minimize_schedule's swaps without a replay rest on the same fact; it is
    tested against the replaying minimization in
    tests/test_minimize_schedule_commuting.py."""
    if p.has_control_flow or len(schedule) != len(target) or \
            sorted(schedule) != sorted(target):
        return False
    return _follows_edges(p, schedule) and _follows_edges(p, target) and \
        _access_blocks(p, schedule) == _access_blocks(p, target)


def _access_blocks_lean(p: Program, schedule: Sequence[str]) -> dict[str, list]:
    """`_access_blocks`, each label looked up in `_access_labels` (one
    dictionary probe instead of a split of the label and its node's op;
    a label of another phase is read as there)."""
    table = _access_labels(p)
    get = table.get
    blocks: dict[str, list] = {}
    for label in schedule:
        hit = get(label)
        if hit is None:
            if "@" not in label:
                continue   # (a node that is no Read or Assign: not an access)
            name, _, phase = label.partition("@")
            node = p.node[name]
            if node.op not in (READ, ASSIGN):
                continue
            hit = (p.accessed_variable(name), node.op == ASSIGN and phase != "read")
        _note_access(blocks, hit[0], hit[1], label)
    return blocks


def _commutes_to_canonical(p: Program, schedule: Sequence[str], canonical: Sequence[str]) -> bool:
    """`commutes_to(p, schedule, canonical)` where `canonical` is
    `canonical_order(p, schedule)`, without the parts of that test the
    canonical order makes true:

    * the same steps: `canonical` is `schedule` sorted;
    * `_follows_edges(p, canonical)` wherever `_follows_edges(p, schedule)`
      holds.  canonical_order sorts by rank(label) = the node's index in
      p.topological_order, plus 0.5 for a write step.  That order is Kahn's
      over `p.predecessors` itself, so for every q in predecessors(n)
      index(q) < index(n), and, the indices being integers, every label of
      q ranks below every label of n (index(q) + 0.5 < index(n)): each
      predecessor's step, or write step, that the schedule fired before n
      (it did, `_follows_edges(p, schedule)`) comes before n's steps in
      `canonical` too.  A write step ranks 0.5 above its own read step,
      which the schedule holds (it fired it first), so it comes after it.
      No step is there twice (the schedule's test refuses a repeat, and
      `canonical` holds the same steps).  Steps of one rank (one node, the
      same phase) keep the schedule's order (`sorted` is stable).

    What is left is the schedule's own edge test and the accesses per
    variable, read by `_access_blocks_lean`.  Compared with `commutes_to`
    on runs of generated programs, and on sequences that are no run, in
    tests/test_minimize_schedule_canonical_test.py."""
    if p.has_control_flow:
        return False
    return _follows_edges(p, schedule) and \
        _access_blocks_lean(p, schedule) == _access_blocks_lean(p, canonical)


def _follows_edges(p: Program, schedule: Sequence[str]) -> bool:
    """Whether every step comes after the nodes with an edge into its node
    (after their write step, for a decomposed Assign) and a write step after
    its read step: the order a run of p keeps (each step once)."""
    fired: set[str] = set()
    # (the nodes whose step "q" or write step "q@write" fired: the test
    # `q in done` is the test `q in fired or q + "@write" in fired`, with
    # no label made per edge; MobileNetV2's schedules are 10^4 edges)
    done: set[str] = set()
    for label in schedule:
        name, _, phase = label.partition("@")
        if label in fired or (phase == "write" and name + "@read" not in fired):
            return False
        if not done.issuperset(p.predecessors(name)):
            return False
        fired.add(label)
        if label == name or phase == "write":
            done.add(name)
    return True


def minimize_schedule(p: Program, feeds: dict[str, Value], init: dict[str, Value],
                      schedule: Sequence[str], outcome: Outcome, semantics: str,
                      observe: str, deadline: float) -> list[str]:
    """A schedule of p giving `outcome`, as close to p's canonical order as
    swapping adjacent steps gets it (see the module docstring).

    Where the canonical order is the schedule with commuting steps
    exchanged (`commutes_to`), it is the answer, and no replay is needed:
    it gives the schedule's outcome by that argument (a real graph's
    deterministic training step, whose schedules come from the oracle's
    canonical run, `refute.canonical_outcome`: each replay is a whole run
    of the graph, 0.3-0.8 s).  The answer is the one the replaying path
    gives: there the canonical order's replay gives the outcome too."""
    if time.monotonic() >= deadline:
        return list(schedule)
    canonical = canonical_order(p, schedule)
    if canonical == list(schedule) or (
            COMMUTE_WITHOUT_REPLAY and
            (_commutes_to_canonical(p, schedule, canonical) if CANONICAL_TEST_LEAN
             else commutes_to(p, schedule, canonical))):
        return canonical
    order = _topological_index(p)

    def rank(label: str) -> float:
        name, _, phase = label.partition("@")
        return order[name] + (0.5 if phase == "write" else 0.0)

    def access(label: str) -> tuple[str | None, bool]:
        name, _, phase = label.partition("@")
        node = p.node[name]
        if node.op == READ:
            return p.accessed_variable(name), False
        if node.op == ASSIGN:
            return p.accessed_variable(name), phase != "read"
        return None, False

    def dependent(a: str, b: str) -> bool:
        na, nb = step_node(a), step_node(b)
        return na == nb or na in p.predecessors(nb)

    g = graph_of(p)

    def gives_outcome(candidate: list[str]) -> bool:
        # (each replay is a whole run of p: on a real graph, seconds; it
        # stops at the deadline, and a replay cut short is a "no": the
        # schedule given, already confirmed, is kept)
        try:
            state = run_schedule(p, feeds, init, candidate, semantics, deadline=deadline)
        except (ValueError, BudgetExceeded, CannotRunHere):
            # (a function that fails at the values this order gives it:
            # not the outcome)
            return False
        return outcome_of(p, g, state, observe) == outcome

    # the canonical order itself, when it gives the outcome (one replay):
    # nothing is out of place (on a real graph's deterministic training
    # step, the usual case, the swaps below cost a replay each)
    if gives_outcome(canonical):
        return canonical
    sched = list(schedule)
    changed = True
    while changed:
        changed = False
        for j in range(len(sched) - 1):
            if time.monotonic() >= deadline:
                break
            a, b = sched[j], sched[j + 1]
            if rank(a) <= rank(b) or dependent(a, b):
                continue
            (xa, wa), (xb, wb) = access(a), access(b)
            candidate = sched[:j] + [b, a] + sched[j + 2:]
            if xa is not None and xa == xb and (wa or wb) and not gives_outcome(candidate):
                continue
            sched = candidate
            changed = True
    if sched != list(schedule) and not gives_outcome(sched):
        return list(schedule)   # never print a schedule that does not replay
    return sched


def key_steps(p: Program, schedule: Sequence[str]) -> list[str]:
    """The steps of a schedule that access a variable."""
    return [s for s in schedule if p.node[step_node(s)].op in (READ, ASSIGN)]
