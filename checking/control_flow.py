"""Verdicts on programs with control flow (SPEC section 9; docs/checking-control-flow.md).

Three stages, in this order, inside the check's time budget:

0. **Loop frames unchanged** (checking/structural_loops.py, argued there):
   when the root frame holds loops only and every node inside a frame is
   the same in both programs, the structural rule outside the loops, with
   the loops' boundaries kept in order and every Exit read firing once,
   proves the rewrite for every σ.
1. **Proof by cases on the predicates** (loop-free programs only).  When
   neither program has a loop and every Switch predicate is decided by
   constants, bool scalar feeds and predicates computed from feeds by
   comparisons (oracle/deadness.py `computed_predicates`, cased on as bool
   terms; at most PROOF_MAX_CASES combinations),
   each combination β of those feeds makes both programs equivalent to
   programs *without* control flow (oracle/deadness.py, argued there and
   tested against the reference semantics).  σ ranges over the product of β
   and the rest, so the rewrite is sound iff it is sound in every case: each
   case is checked by the checker for programs without control flow (Z3,
   structural rule included: it is valid there).  A case found unsound gives
   a σ that is confirmed on the programs with control flow before it counts.
   A fetch dead in one program and live in the other in some case is a
   difference at every σ of that case.
2. **Refutation by the reference control-flow engine.**  σ drawn as the
   other stages draw them (all zeros, all ones, then small values alternating
   with random and edge values; variables uninitialized a quarter of the
   time), and where the programs hold float state the float σ the caller
   gives (`float_sigmas`: the plain σ, its feeds times 1e38, the largest
   float in every float feed) right after the first; at each, Outcomes(P,
   σ) and Outcomes(P', σ) are enumerated by the reference semantics of
   oracle/controlflow.py and compared.  An outcome of
   P' missing from P's is a counterexample: its schedule names
   `node@frame:iteration`; σ is shrunk (elements to 0, 1, -1) while it stays
   one, within check.py's box (minimize.py's MINIMIZE_SHARE), each
   confirmation begun only where it fits; it is replayed on numpy
   (backends/controlflow.py) when it can be.
   A σ at which a loop reaches the iteration bound is not compared: if no
   counterexample is found, the answer is `unknown` naming the loop and the
   bound (never `sound`, never a comparison of truncated sets).

Without a proof and without a counterexample the answer is
`no-counterexample` with the number of σ compared, never `sound`.  Loops are
proved only by stage 0 (else `no-counterexample` or `unknown`).

The structural rule (checking/structural.py) is not applied to programs with
control flow as a whole (only outside the loops, by stage 0): its argument
maps each node's one firing in P' to one firing in P, and with control flow a node fires once per execution context, dead or
live, a number of times that depends on σ (docs/checking-control-flow.md).
It does apply, inside stage 1, to the cases, which have no control flow.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from tfsem.oracle.controlflow import LoopBoundExceeded
from tfsem.oracle.deadness import (Undecided, computed_predicates, predicate_feeds, specialize,
                                   term_leaves, term_value)
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded, OutcomeSet
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import ASSIGN, ENTER, READ, STACK_OPS, Program
from tfsem.oracle.values import Tensor, Value

from . import minimize as mini
from . import sigma_memo
from .verdict import (INVALID, NO_COUNTEREXAMPLE, SOUND, UNKNOWN, UNSOUND, Counterexample, Verdict,
                      cause_of, not_among_reason)

#: at most this many combinations of predicate feeds are proved case by case
PROOF_MAX_CASES = 16
#: share of the budget the proof may use before the refutation stage
PROOF_SHARE = 0.6
#: σ of a case (computed predicates) tried when the case's counterexample is
#: not one of the programs with control flow, and the most combinations of
#: feed values looked through for them (`_in_case`)
CASE_SIGMAS = 4
CASE_PRODUCT = 512
#: σ the refutation stage compares in full (fewer when time runs out), and
#: the most it draws (a σ at which a loop reaches the bound is not compared)
REFUTE_SIGMAS = 8
REFUTE_DRAWS = 16
#: where the programs hold float state, the caller's float σ (`float_sigmas`
#: of check_control_flow) are compared after this many σ of `sigmas` (the
#: first is all zeros), before the others, and on top of REFUTE_SIGMAS and
#: REFUTE_DRAWS.  On the real corpus's loop graphs (keras_gru_loop,
#: keras_lstm_loop) the zeros, ones, small and random σ never showed constant
#: folding's reassociation of a float product outside the loops
#: (`0.25 * (sub * 2)` -> `sub * 0.5`, different where `sub * 2` overflows):
#: the small σ compute exactly, the random ones put NaN into every value
#: through the recurrent cell or leave a variable uninitialized; the largest
#: float in every feed shows it at once (docs/checking-control-flow.md)
REFUTE_FLOAT_FIRST = True
REFUTE_FLOAT_AFTER = 1
#: a comparison of one σ that took this long (seconds) makes the refutation
#: stop when less time than it took is left
STOP_AFTER = 1.0
#: original outcomes listed in a counterexample
LIST_LIMIT = 100
Sigma = tuple[dict[str, Value], dict[str, Value]]
#: checks a rewrite of programs without control flow: (P, P', seconds) -> Verdict
FreeChecker = Callable[[Program, Program, float], Verdict]


@dataclass
class _Found:
    feeds: dict[str, Value]
    init: dict[str, Value]
    schedule: list[str]
    outcome: Outcome
    original: OutcomeSet


def check_control_flow(p: Program, p2: Program, semantics: str, observe: str, timeout: float,
                       started: float, *, check_free: FreeChecker, sigmas: Iterator[Sigma],
                       minimize: bool = True, backends: bool = True, real: bool = False,
                       max_iterations: int | None = None, structural: bool = True,
                       float_sigmas: Sequence[tuple[str, Sigma]] = ()) -> Verdict:
    """The verdict on P -> P' when either has control flow (both valid, with
    the same interface: check.py has checked that).  `check_free` is the
    checker of programs without control flow; `sigmas` the σ to try.
    `structural` False skips the rule "loop frames unchanged" (it rests on
    the structural rule, which check.py's `structural=False` turns off).
    `float_sigmas`: tagged σ of ordinary and huge float values, which the
    refutation stage compares early (REFUTE_FLOAT_FIRST; the caller gives
    them where the programs hold float state).  Like every σ they decide
    nothing by themselves: a difference there is a counterexample of the
    reference engine, shrunk and replayed as any other."""
    c = _CFChecker(p, p2, semantics, observe, timeout, started, check_free, minimize, backends,
                   real, max_iterations)
    c.structural = structural
    c.float_sigmas = list(float_sigmas) if REFUTE_FLOAT_FIRST else []
    return c.run(sigmas)


class _CFChecker:
    def __init__(self, p, p2, semantics, observe, timeout, started, check_free, minimize,
                 backends, real, max_iterations):
        self.p, self.p2 = p, p2
        self.semantics, self.observe = semantics, observe
        self.timeout, self.started = timeout, started
        self.deadline = started + timeout
        self.check_free = check_free
        self.minimize, self.backends, self.real = minimize, backends, real
        self.max_iterations = max_iterations
        self.stats: dict = {"path": "control-flow", "cases": 0, "cases_proved": 0}
        self.structural = True
        self.float_sigmas: list[tuple[str, Sigma]] = []
        # the longest enumeration of each program at a σ not remembered
        # (oracle/controlflow.py `outcomes` answers P's again at once): a
        # comparison at a new σ costs their sum (`cost`)
        self.longest = [0.0, 0.0]

    def cost(self) -> float:
        """What a comparison at a σ not seen yet is expected to cost: the
        longest enumeration of P and of P' at one σ so far, added (P's
        taken as P''s where every one of P's came remembered: a new σ
        runs it)."""
        return (self.longest[0] or self.longest[1]) + self.longest[1]

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def verdict(self, kind: str, reason: str, **kw) -> Verdict:
        self.stats["seconds"] = round(time.monotonic() - self.started, 6)
        if kind == UNKNOWN:
            self.stats["cause"] = cause_of(reason)
        return Verdict(kind, reason, semantics=self.semantics, observe=self.observe,
                       stats=self.stats, **kw)

    # -- the pipeline ----------------------------------------------------------

    def run(self, sigmas: Iterator[Sigma]) -> Verdict:
        try:
            return self.stages(sigmas)
        except CannotRun as exc:
            # an op with no concrete model (TensorFlow's kernels off or
            # absent: Prod, float MatMul of an imported graph) stood between
            # the reference engine and an outcome: no verdict, the op named
            # first, as check.py says it of programs without control flow
            reason = exc.naming_nodes(self.p)
            if self.stats.get("no_proof"):
                reason += f"; and no proof: {self.stats['no_proof']}"
            self.stats["cannot_run"] = str(exc)
            return self.verdict(UNKNOWN, reason, tried=self.stats.get("tried", 0))

    def stages(self, sigmas: Iterator[Sigma]) -> Verdict:
        self.sigmas = sigmas
        proof = self.prove()
        if isinstance(proof, Verdict):
            return proof
        self.stats["no_proof"] = proof
        if self.real:
            # (the reference engine computes in IEEE arithmetic: no evidence over the reals)
            return self.verdict(UNKNOWN, f"no proof over the reals (--float real): {proof}; the "
                                         "control-flow engine computes in IEEE arithmetic")
        return self.refute(sigmas, proof)

    # -- stage 1: a proof by cases on the predicates ----------------------------

    def prove(self) -> "Verdict | str":
        """A verdict (sound, or a confirmed unsound), or why there is no proof."""
        stacks = [q for q in (self.p, self.p2) if q.has_stacks]
        if stacks:
            # A stack (oracle/opdefs/stacks.py) is step-local state that only
            # the control-flow engine models: the cases would be programs
            # without control flow in which its ops are functions, and the
            # checker would read two pops of one stack as one pure function
            # of the same handle (equal), which they are not.  So no proof:
            # the verdict rests on the reference engine's outcome sets.
            node = next(n.name for n in stacks[0].nodes if n.op in STACK_OPS)
            return (f"node {node!r} ({stacks[0].node[node].op}) is a stack op: a program "
                    "with a stack is never proved")
        loops = ""
        if self.structural and any(n.op == ENTER for q in (self.p, self.p2) for n in q.nodes):
            # stage 0 (docs: stage 2): loop frames unchanged (checking/structural_loops.py)
            from .structural_loops import loops_unchanged
            r = loops_unchanged(self.p, self.p2, self.semantics, self.observe, real=self.real,
                                deadline=self.deadline)
            self.stats["loops_unchanged"] = r.stats if r.proved else r.reason
            if r.proved:
                self.stats["path"] = "control-flow/loops-unchanged"
                return self.verdict(SOUND, f"proved for every σ: {r.reason}")
            loops = f"; loop frames unchanged does not apply: {r.reason}"
        try:
            feeds = sorted(predicate_feeds(self.p) | predicate_feeds(self.p2))
            # computed predicates (comparisons of feeds: deadness.computed_predicates,
            # argued there): one case variable per distinct term, shared by
            # the ports of both programs that compute it
            computed = (computed_predicates(self.p, self.real),
                        computed_predicates(self.p2, self.real))
            terms = list(dict.fromkeys(t for c in computed for t in c.values()))
            named: dict = {}     # (each term named by the original's port first)
            for which, c in enumerate(computed):
                for port, t in c.items():
                    # (a term of the rewrite alone is named as such: its node
                    # may have the name of another term's node in the
                    # original, and the two cases' labels must differ)
                    named.setdefault(t, repr(port[0]) + (" of the rewrite" if which else ""))
            n_vars = len(feeds) + len(terms)
            if 2 ** n_vars > PROOF_MAX_CASES:
                return (f"the Switch predicates depend on {len(feeds)} bool feeds and "
                        f"{len(terms)} computed predicates ({2 ** n_vars} cases, "
                        f"limit {PROOF_MAX_CASES})")
            cases = []
            for bits in itertools.product((False, True), repeat=n_vars):
                beta = dict(zip(feeds, bits))
                by_term = dict(zip(terms, bits[len(feeds):]))
                label = {**{f: b for f, b in beta.items()},
                         **{f"the predicate {named[t]}": b for t, b in by_term.items()}}
                cases.append((beta, label, by_term, [{port: by_term[t] for port, t in c.items()}
                                                     for c in computed]))
            if terms:
                self.stats["computed_predicates"] = len(terms)
            # (under --float real a predicate computed by float arithmetic is
            # not fixed: numpy's IEEE value may not be the real one)
            specialized = [(beta, label, by_term,
                            specialize(self.p, beta, real=self.real, predicates=fixed[0]),
                            specialize(self.p2, beta, real=self.real, predicates=fixed[1]))
                           for beta, label, by_term, fixed in cases]
        except Undecided as exc:
            return f"no proof by cases on the predicates: {exc}{loops}"
        self.stats["cases"] = len(cases)
        budget = PROOF_SHARE * self.remaining()
        # (a case whose counterexample is not confirmed ends the proof; where
        # no σ tried was one of the case -- a combination of computed
        # predicates that no σ may make -- it does not end the search: a later
        # case may hold a confirmed one, as (f < c false, !(f >= c) true) at
        # NaN after the impossible (!(f >= c) false, f < c true).  A case some
        # σ makes stops it, as before: the time is the refutation stage's)
        unconfirmed = None
        for k, (beta, label, by_term, s1, s2) in enumerate(specialized):
            if unconfirmed and self.remaining() < PROOF_SHARE * self.timeout:
                # (past an unconfirmed case, the search goes on in the first
                # 40% of the time only: the rest is the refutation stage's)
                return unconfirmed
            case = ", ".join(f"{f} = {str(b).lower()}" for f, b in label.items()) or "the constants"
            if s1.dead_outputs != s2.dead_outputs:
                found, seen = self.case_difference(beta, by_term)
                if found is not None:
                    self.stats["path"] = "control-flow/cases"
                    return self.unsound(found, f"in the case {case} a fetch is dead in one "
                                               "program and live in the other")
                why = f"the case {case}: a fetch is dead in one program only, not confirmed"
                if seen:     # (a case some σ makes: no proof, as before)
                    return unconfirmed or why
                unconfirmed = unconfirmed or why
                continue
            q1 = _without_outputs(s1.program, s1.dead_outputs)
            q2 = _without_outputs(s2.program, s2.dead_outputs)
            seconds = budget / (len(specialized) - k)
            t0 = time.monotonic()
            v = self.check_free(q1, q2, max(0.2, min(seconds, self.remaining())))
            budget -= time.monotonic() - t0
            if v.verdict == SOUND:
                self.stats["cases_proved"] += 1
                continue
            if v.verdict == UNSOUND and v.counterexample is not None:
                cx = v.counterexample
                sigma = ({**cx.feeds, **{f: Tensor(b, "bool") for f, b in beta.items()}},
                         dict(cx.init))
                found = self.compare(sigma, max(0.2, self.remaining() / 2))
                # (the case's programs take the case's branches at every σ,
                # and the solver's σ may compute other predicate values: the
                # σ of the case nearest to it are tried as well)
                near_sigmas = list(itertools.islice(_in_case(sigma, by_term), CASE_SIGMAS))
                for near in near_sigmas:
                    if isinstance(found, _Found) or self.remaining() <= 0.1:
                        break
                    found = self.compare(near, max(0.1, self.remaining() / 4))
                if isinstance(found, _Found):
                    self.stats["path"] = "control-flow/cases"
                    return self.unsound(found, f"found in the case {case} (the programs without "
                                               "control flow that case makes), confirmed on the "
                                               "programs with control flow")
                why = f"the case {case}: a counterexample of the case was not confirmed"
                if not by_term or near_sigmas or _holds(sigma[0], by_term):
                    return unconfirmed or why   # (a case some σ makes: no proof, as before)
                unconfirmed = unconfirmed or why
                continue
            if v.verdict == INVALID:   # (a specialization the checker refused: no proof)
                return unconfirmed or f"the case {case}: {v.reason}"
            return unconfirmed or f"the case {case}: {v.verdict} ({v.reason})"
        if unconfirmed is not None:
            return unconfirmed
        self.stats["path"] = "control-flow/cases"
        n = len(specialized)
        what = ([f"the bool feeds {', '.join(feeds)}"] if feeds else []) + (
            [f"the computed predicates {', '.join(named[t] for t in terms)}"]
            if terms else [])
        how = (f"by cases on {' and '.join(what)} ({n} cases)" if what else
               "with every Switch predicate a constant")
        return self.verdict(SOUND, f"proved for every σ {how}: in each case both programs are "
                                   "programs without control flow (dead branches fixed), and the "
                                   "rewrite of those is proved sound")

    def case_difference(self, beta: dict[str, bool], by_term: dict) -> "tuple[_Found | None, bool]":
        """A σ of the case β at which the programs differ (a dead fetch), and
        whether a σ of the case was found at all."""
        seen = False
        for sigma in itertools.islice(self.sigmas, 8):
            feeds = {**sigma[0], **{f: Tensor(b, "bool") for f, b in beta.items()}}
            if by_term:
                sigma = next(_in_case((feeds, sigma[1]), by_term), None)
                if sigma is None:
                    continue
                feeds = sigma[0]
            seen = True
            found = self.compare((feeds, sigma[1]), max(0.1, self.remaining() / 4))
            if isinstance(found, _Found):
                return found, True
        return None, seen

    # -- stage 2: refutation by the reference engine ----------------------------

    def refute(self, sigmas: Iterator[Sigma], no_proof: str) -> Verdict:
        tried = 0
        bound: LoopBoundExceeded | None = None
        budget_outs = 0
        draws = 0
        share = max(0.5, self.timeout / 6)
        longest = 0.0   # the longest full comparison so far
        extra = len(self.float_sigmas)
        order = self.refute_order(sigmas)
        # (what each σ gave: its tag, seconds, and same / difference / bound /
        # budget; --json's stats show which σ the stage compared)
        log = self.stats["refute_sigmas"] = []
        while self.remaining() > 0.05 and tried < REFUTE_SIGMAS + extra \
                and draws < REFUTE_DRAWS + extra:
            if tried and longest >= STOP_AFTER and self.remaining() < longest:
                # (on a large graph another σ would most likely run out of
                # time: the answer, no-counterexample with the σ compared, is
                # the same now; small programs try every σ, some of which may
                # reach a loop's iteration bound)
                self.stats["stopped_early"] = round(self.remaining(), 3)
                break
            draws += 1
            tag, sigma = next(order)
            t0 = time.monotonic()
            # (one σ takes at most a sixth of the budget at first: a loop run
            # to the iteration bound at one σ must not take the time of the
            # others; twice as long after each σ that ran out of it)
            # (until one σ is compared, a σ may take all the time left: one σ
            # compared in full is evidence, `unknown` is none)
            found = self.compare(sigma, self.remaining() if tried == 0 else
                                 min(self.remaining(), share))
            log.append({"sigma": tag, "seconds": round(time.monotonic() - t0, 3),
                        "result": ("difference" if isinstance(found, _Found) else
                                   "bound" if isinstance(found, LoopBoundExceeded) else
                                   "budget" if isinstance(found, BudgetExceeded) else "same")})
            if isinstance(found, _Found):
                self.stats["tried"] = tried
                self.stats["path"] = "control-flow/refute"
                self.stats["found_at"] = tag
                return self.unsound(found, "found by the reference control-flow engine")
            if isinstance(found, LoopBoundExceeded):
                bound = bound or found
                continue
            if isinstance(found, BudgetExceeded):
                budget_outs += 1
                share *= 2
                continue
            tried += 1
            longest = max(longest, time.monotonic() - t0)
            # (a σ is given half as long again as the longest comparison so
            # far: on a loop of a few thousand steps per run the first σ
            # takes more than a sixth of the budget, and the next one, given
            # a sixth, ran out of it for nothing -- keras_gru_loop, two of
            # three σ thrown away at load 16)
            share = max(share, 1.5 * longest)
        self.stats.update(tried=tried, budget_outs=budget_outs)
        if bound is not None:
            return self.verdict(UNKNOWN, f"{bound}; {tried} other σ compared, none shows a "
                                         f"difference ({no_proof})", tried=tried)
        if tried == 0:
            return self.verdict(UNKNOWN, f"the time budget ({self.timeout:g} s) ran out before "
                                         f"any σ was compared ({no_proof})", tried=0)
        return self.verdict(NO_COUNTEREXAMPLE,
                            f"no proof ({no_proof}); {tried} σ compared in full by the reference "
                            f"control-flow engine, none shows a difference", tried=tried)

    def refute_order(self, sigmas: Iterator[Sigma]) -> Iterator[tuple[str, Sigma]]:
        """The refutation stage's σ, tagged: the first REFUTE_FLOAT_AFTER of
        `sigmas` (check.py's first is all zeros), then the float σ
        (`float_sigmas`: "plain", "plain huge", "largest float"), then the
        rest of `sigmas` ("drawn k")."""
        drawn = 0
        for _ in range(REFUTE_FLOAT_AFTER if self.float_sigmas else 0):
            yield f"drawn {drawn}", next(sigmas)
            drawn += 1
        yield from self.float_sigmas
        while True:
            yield f"drawn {drawn}", next(sigmas)
            drawn += 1

    def compare(self, sigma: Sigma, seconds: float) -> "_Found | BudgetExceeded | None":
        """Outcomes(P', σ) ⊆ Outcomes(P, σ)?  A counterexample, the budget
        that ran out, or None (no difference at σ)."""
        feeds, init = sigma
        stop = time.monotonic() + max(0.05, seconds)
        try:
            original = outcome_set(self.p, feeds, init, self.semantics, self.observe,
                                   max_seconds=max(0.05, stop - time.monotonic()),
                                   max_iterations=self.max_iterations)
            rewritten = outcome_set(self.p2, feeds, init, self.semantics, self.observe,
                                    max_seconds=max(0.05, stop - time.monotonic()),
                                    max_iterations=self.max_iterations)
        except BudgetExceeded as exc:
            return exc
        self.longest[0] = max(self.longest[0], original.seconds)
        self.longest[1] = max(self.longest[1], rewritten.seconds)
        for outcome, schedule in rewritten.items():
            if outcome not in original:
                return _Found(dict(feeds), dict(init), list(schedule), outcome, original)
        return None

    # -- the verdict ------------------------------------------------------------

    def unsound(self, found: _Found, how: str) -> Verdict:
        if self.minimize:
            found = self.minimized(found)
        original = list(found.original.as_dict(LIST_LIMIT).items())
        count = found.original.count
        all_original = [o for o, _ in original] if count <= LIST_LIMIT else \
            list(found.original.as_dict(100_000))
        differs = found.outcome.first_difference(all_original)
        confirmed = ["oracle"] + self.replay(found)
        cx = Counterexample(found.feeds, found.init, found.schedule, found.outcome,
                            [(o, list(w)) for o, w in original], count,
                            key_steps(self.p2, found.schedule))
        return self.verdict(UNSOUND, not_among_reason(count, differs, how), differs=differs, counterexample=cx,
                            tried=self.stats.get("tried", 0), confirmed=confirmed)

    def minimized(self, found: _Found) -> _Found:
        """`found` with σ shrunk while it stays a counterexample, within a
        box of mini.MINIMIZE_SHARE of the timeout, at least
        mini.MINIMIZE_MAX_SECONDS_FLOOR: the cap of check.py's box, the same
        two names (checking/minimize.py), bounded as check.py's by what
        finding the counterexample took (minimize.find_box).  It was max(0.3 s, a tenth of the
        timeout), twice check.py's, and on the real corpus's loop graphs
        (keras_gru_loop, keras_lstm_loop) it bought two or three
        confirmations at 0.3-0.5 s each and kept none of them: 1 s of each
        unsound check for an unchanged σ (docs/benchmarks.md, "The seventh
        round").  No confirmation is begun that the costliest comparison of
        the check so far says would end after the box (check.py's rule:
        `cost`)."""
        cap = max(mini.MINIMIZE_MAX_SECONDS_FLOOR, mini.MINIMIZE_SHARE * self.timeout)
        # (within it, bounded by what this check took to find its
        # counterexample, as check.py's box: minimize.find_box, the cold
        # ratio and floor; where the σ an earlier check of this original
        # kept is taken, checking/sigma_memo.py, the warm ones: decided
        # now, `on_start` below)
        spent = time.monotonic() - self.started
        # (at least MINIMIZE_CONTROL_FLOW_COLD_FLOOR: a loop graph's
        # comparison costs up to 0.2 s, and a step is not begun past the box)
        box = mini.find_box(cap, spent, warm=False,
                            cold_floor=mini.MINIMIZE_CONTROL_FLOW_COLD_FLOOR)
        warm_box = mini.find_box(cap, spent)
        started = time.monotonic()
        deadline = min(self.deadline, started + box)
        best = found
        if time.monotonic() + self.cost() > deadline:
            # (one confirmation would end after the box: σ is shown as found)
            self.stats["minimize"] = (f"σ not minimized: one comparison costs {self.cost():.2g} s, "
                                      "more than the minimization's budget")
            return best

        def confirm(sigma: Sigma) -> bool:
            nonlocal best
            # (a step that would end after the box is not begun: it would
            # most likely run out of time, or overrun the box by its cost;
            # the minimization ends there, as check.py's does)
            if time.monotonic() + self.cost() > deadline:
                raise mini.OutOfTime
            result = self.compare(sigma, max(0.05, deadline - time.monotonic()))
            if isinstance(result, _Found):
                best = result
                return True
            return False

        def on_start(result: str) -> None:
            nonlocal deadline
            if result in ("taken", "same") and recalled[2]:
                deadline = min(deadline, started + warm_box)
                record["warm_box"] = round(warm_box, 6)

        # (the σ the last check of this original kept, asked about first,
        # and the members that refused there tried last, together:
        # checking/sigma_memo.py; every step a comparison, as before)
        recalled = sigma_memo.recall(self.p, self.semantics, self.observe)
        refusals: dict = {}
        record = self.stats.setdefault("minimization", {})
        mini.minimize_concrete((found.feeds, found.init), confirm, deadline, stats=record,
                               start=recalled and recalled[0], known=recalled and recalled[1],
                               refusals=refusals, on_start=on_start)
        # (the σ confirmed last, for the next check of this original: the
        # found one where no step was taken)
        sigma_memo.remember(self.p, self.semantics, self.observe, (best.feeds, best.init),
                            refusals, minimized=mini.progressed(record, recalled))
        return best

    def replay(self, found: _Found) -> list[str]:
        """The counterexample replayed on numpy (and cupy where a GPU is):
        P''s schedule gives the oracle's outcome there, and no witness
        schedule of P does (backends/controlflow.py); `stats.backends` says
        why a backend did not confirm (an op with no back end, by name)."""
        if not self.backends:
            return []
        t0 = time.monotonic()
        try:
            from tfsem.backends.controlflow import confirm_on_backends
            confirmed, note = confirm_on_backends(
                self.p, self.p2, found.feeds, found.init, found.schedule, found.outcome,
                found.original, self.semantics, self.observe, self.max_iterations,
                deadline=self.deadline + min(0.05 * self.timeout, 0.25))
        except Exception as exc:  # a backend failure must not lose the verdict
            self.stats["backends"] = f"replay failed: {type(exc).__name__}: {exc}"
            return []
        self.stats["replay_seconds"] = round(time.monotonic() - t0, 3)
        if note:
            self.stats["backends"] = note
        return confirmed


def _in_case(sigma: Sigma, by_term: dict) -> Iterator[Sigma]:
    """σ that agree with `sigma` except in the feeds the computed predicates
    `by_term` read, at which each term has the case's value: those feeds
    set to values near the terms' constants (c - 1, c, c + 1), 0, 1, -1
    and the dtype's extremes, in a bounded product (CASE_PRODUCT).  Only
    σ of the case, where its programs are the programs with control flow,
    so a difference found at one needs no other argument."""
    if not by_term:
        return
    leaves: dict[str, tuple] = {}
    consts: list = []
    for t in by_term:
        f, c = term_leaves(t)
        leaves.update(f)
        consts.extend(c)
    pools = []
    for name, (dtype, shape) in sorted(leaves.items()):
        pools.append([(name, v) for v in _near(dtype, shape, consts)])
    feeds0, init = sigma
    for combo in itertools.islice(itertools.product(*pools), CASE_PRODUCT):
        feeds = {**feeds0, **dict(combo)}
        if _holds(feeds, by_term):
            yield feeds, init


def _holds(feeds: dict, by_term: dict) -> bool:
    """Whether every computed predicate of `by_term` has its case's value at `feeds`."""
    try:
        values = [term_value(t, feeds) for t in by_term]
    except Exception:   # (no value: not a σ of the case)
        return False
    return all(isinstance(v, Tensor) and v.dtype == "bool" and bool(v.array) == b
               for v, b in zip(values, by_term.values()))


def _near(dtype: str, shape: tuple, consts: list) -> list[Tensor]:
    """Feed values of `dtype` and `shape` near the constants (see _in_case)."""
    import numpy as np
    try:
        npd = np.dtype(dtype)
    except TypeError:
        return []
    if dtype == "bool":
        scalars = [False, True]
    else:
        scalars = [0, 1, -1]
        for c in consts:
            if c.dtype == dtype and c.array.size:
                for e in np.unique(c.array.ravel())[:4].tolist():
                    scalars += [e - 1, e, e + 1]
        if np.issubdtype(npd, np.integer):
            info = np.iinfo(npd)
            scalars += [int(info.min), int(info.max)]
            scalars = [int(v) for v in scalars if info.min <= v <= info.max]
        else:
            # (NaN: every comparison with it is false, so `f < c` and
            # `!(f >= c)` take different values there and nowhere else; a
            # subnormal: a flushed dtype compares it as zero)
            scalars += [float("inf"), float("-inf"), float("nan"), 1e-45]
    out = []
    for v in dict.fromkeys(scalars):
        out.append(Tensor(np.full(shape, v, dtype=npd), dtype))
    return out


def key_steps(p: Program, schedule: list[str]) -> list[str]:
    """The steps of a schedule that access a variable (a Merge's choice
    `m[k]` and the frame suffix `@F:i` stripped to find the node)."""
    out = []
    for s in schedule:
        name = s.partition("@")[0]
        if name not in p.node and "[" in name:
            name = name[:name.rindex("[")]
        n = p.node.get(name)
        if n is not None and n.op in (READ, ASSIGN):
            out.append(s)
    return out


def _without_outputs(p: Program, names) -> Program:
    if not names:
        return p
    return Program(p.variables, p.nodes, {k: v for k, v in p.outputs.items() if k not in names},
                   p.feeds)


__all__ = ["check_control_flow", "key_steps", "PROOF_MAX_CASES"]
