"""The verdict pipeline: is a rewrite P -> P' sound (SPEC section 3)?

1. **Interface and validity.**  A malformed P', or one whose variables, output
   names or feeds differ from P's, is `invalid`.
2. **Proof.**  The symbolic oracle gives the outcome sets of P and P' as
   terms over σ, where σ includes whether each accessed variable starts
   uninitialized (values guarded by those flags cover every initialization
   pattern in one search).  Both are products of independent components;
   P' is sound when every combination t' of P' components, restricted to each
   component C of P, is one of C's outcomes, for every σ.  Each such question
   that is not settled structurally (t' is literally one of C's outcomes) is a
   Z3 query: is there σ at which t' differs from every outcome of C?  All
   `unsat`: `sound`.
3. **Counterexamples.**  A `sat` query gives a candidate σ, which counts only
   once the concrete oracle confirms it: P' run on the witness schedule of t'
   at σ gives an outcome that is not in Outcomes(P, σ).  A confirmed σ is
   minimized, its schedule too, and it is replayed on the array backends.
   Which part differs first is Outcome.first_difference (outputs by name, then
   variables by name), as in Alive2's staged checks.
4. **Budgets.**  When the symbolic path is out of budget (states, tensor sizes,
   too many variables or outcomes), P and P' are compared concretely on
   generated σ: `unsound` if one differs, else `no-counterexample` with the
   number tried.  A solver timeout makes the verdict `unknown` (after the same
   concrete search, which may still find a counterexample).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import ml_dtypes
import numpy as np
import z3

from tfsem.oracle import applications
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.controlflow import frame_parallel_iterations
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.budget import current_hard_stop, hard_stop
from tfsem.oracle.explore import Budget, BudgetExceeded, OutcomeSet
from tfsem.oracle.jsonio import OBSERVE, SEMANTICS, Case, program_from_json
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import ASSIGN, READ, Program, ProgramError, TensorType, validate
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import (DTYPES, FLOAT_DTYPES, UNINITIALIZED, Error, Tensor, Value,
                                 random_array)

from . import canonical_memo
from . import demand as dm
from . import generic as gen
from . import minimize as mini
from . import sigma_memo
from . import refute as ref
from .control_flow import check_control_flow
from .demand import Demand, differing_parts
from .encode import Encoder, EncodingTimeout, NotReal, real_const, z3_const
from .sampling import sample_equal
from .structural import race_free
from .symbolic import (Algebra, Component, NeedsGeneric, RealAlgebra, SymbolicLimit,
                       SymbolicOutcomes, Term, components, symbolic_outcomes)
from .verdict import (DIFFERENCE_FLOAT, DIFFERENCE_ORDERING, DIFFERENCE_UNDETERMINED,
                      FLOAT_MODES, INVALID, NO_COUNTEREXAMPLE, SOUND, UNKNOWN, UNSOUND,
                      Counterexample, Verdict, cause_of, not_among_reason)

DEFAULT_TIMEOUT = 10.0
#: at most this many variables may start initialized or not in one search
MAX_FLAGGED_VARIABLES = 10
#: combinations of the rewritten program's components checked per group
MAX_COMBINATIONS = 4096
#: Counterexample minimization asks the solver for small values of at most
#: this many input elements (the rest keep what the concrete pass chose).
MINIMIZE_SOLVER_LEAVES = 512
#: σ's minimization takes at most MINIMIZE_SHARE of the timeout, and at least
#: MINIMIZE_MAX_SECONDS_FLOOR: checking/minimize.py's two numbers, the cap the
#: control-flow checker's box shares (named here too, as before)
MINIMIZE_SHARE = mini.MINIMIZE_SHARE
MINIMIZE_MAX_SECONDS_FLOOR = mini.MINIMIZE_MAX_SECONDS_FLOOR
#: ... and within that, this many times what one full confirmation costs, at
#: least MINIMIZE_MIN_SECONDS (the seventh round: a box scaled to the cost of
#: a confirmation, docs/counterexamples.md)
MINIMIZE_CONFIRMS = 1.5
MINIMIZE_MIN_SECONDS = 0.2
#: ... where a full confirmation costs more than this (below it, the box as before)
MINIMIZE_CHEAP_SECONDS = 0.15
#: the box and the cone tests decided again on each full confirmation's own
#: cost, where the probe's measure said cheap (`minimized`'s `rescale`);
#: False: on the probe's measure alone, as before (the differential test's
#: reference)
MINIMIZE_RESCALE = True
#: the differing parts of each σ a full confirmation keeps (their cones,
#: sorted by size: on the transformer block a fifth of a minimization's
#: time) made only where cone tests run, or when `rescale` turns them on,
#: from the σ confirmed last: nothing else reads them (`minimized`).  The
#: same steps and σ as making them at each confirmation; False: made at
#: each, as before (the differential test's reference)
MINIMIZE_LAZY_PARTS = True
#: the time the original's witness schedules are moved towards the canonical
#: order in (within the check's budget)
WITNESS_MINIMIZE_SECONDS = 0.25
#: how far past the deadline the numpy replay of an `unsound` verdict may
#: run: this share of the timeout, at most this many seconds
REPLAY_MARGIN_SHARE = 0.05
REPLAY_MARGIN_SECONDS = 0.25
#: `stats.minimize_witnesses` where the check's budget stopped that stage
#: before it began, or during it
POST_SKIPPED = "the original's witness schedules shown as found: budget (skipped)"
POST_CUT = ("the original's witness schedules moved towards the canonical order until the "
            "budget ran out (those not reached shown as found)")
SYMBOLIC_MAX_STATES = 200_000
#: σ tried by the concrete fallback (fewer if time runs out)
FALLBACK_SAMPLES = 200
#: σ it compares before the refutation stage runs (in at most half of its time)
FALLBACK_FIRST = 2
#: valuations the batched numpy phase of the fallback tries (fewer if time runs out)
BATCHED_VALUATIONS = 100_000
#: a candidate the concrete oracle does not confirm is retried this many times
CANDIDATE_RETRIES = 3
#: original outcomes listed in a counterexample
LIST_LIMIT = 100
#: σ on which each query is first evaluated concretely, before the solver
SAMPLES = 32
#: the refutation stage (checking/refute.py): on or off (benchmarks compare)
REFUTE = True
#: its first run, before the symbolic search: this share of the timeout, at most
#: this many seconds
REFUTE_FIRST_SHARE = 0.05
REFUTE_FIRST_SECONDS = 0.5
#: ... and it stops after this many σ at which P had every outcome sampled;
#: it runs on programs with at least this many Reads and Assigns
REFUTE_FIRST_AGREED = 4
REFUTE_FIRST_MIN_ACCESSES = 10
#: random runs of P' per σ, and the share of the stage's time they may take
REFUTE_RUNS = 64
#: search with every part observed too (refute.unreached's `joint`)
REFUTE_JOINT = False
REFUTE_SAMPLE_SHARE = 0.25
#: With TensorFlow's kernels evaluating ops of either program (oracle/kernels.py),
#: the concrete stages draw at most this many σ (the refutation stage's and
#: the full comparisons' together, edge values among them) and then end
#: `no-counterexample` at once, instead of drawing σ for the whole budget.
#: Stopping sooner never changes what a verdict says: `no-counterexample` is
#: no proof, and an `unsound` verdict still needs a confirmed counterexample;
#: it only gives up looking earlier (docs/kernels.md, "A bounded search").
#: On the real-graphs corpus, with no bound and 30 s per check, each of the
#: eight differences found was found within the first 9 σ drawn (at the 4th
#: to the 9th; docs/kernels.md).
KERNEL_SIGMAS = 12
#: and the solver's candidates are first evaluated on this many generated σ
#: (instead of SAMPLES): each sample evaluates the candidate's terms, opaque
#: ones on TensorFlow's kernels
KERNEL_SAMPLES = 8
#: The bound of the one-outcome comparisons (one run of each program per σ,
#: `_Checker.one_outcome_comparisons`), σ drawn before them included: they
#: cost a run each, and their σ begin with every edge value everywhere
#: (`_edge_sigmas`), where the overflow differences of float rewrites show
KERNEL_ONE_OUTCOME_SIGMAS = 32

#: the one-outcome comparisons (`_one_outcome_comparisons`) run each
#: program in its canonical order (`refute.canonical_outcome`: a compiled
#: component's straight line from its second run on) rather than in a
#: random order; False: random runs, as before (the differential test's
#: reference)
ONE_OUTCOME_CANONICAL = True

#: The probe, before the symbolic search where an op runs on TensorFlow's
#: kernels: one run of each program at PROBE_SIGMAS σ of the one-outcome
#: comparisons' order (ones, then the largest finite float in every feed; all
#: zeros showed none of them), a differing pair confirmed by the concrete oracle (P's outcome set
#: enumerated) before it is a counterexample, in at most PROBE_SHARE of the
#: timeout.  On the real-graphs corpus these σ show every float difference of
#: Grappler's rewrites that the one-outcome comparisons found after the search
#: (docs/benchmarks.md): found in the first second instead of after it.
PROBE = True
PROBE_SIGMAS = 2
PROBE_TAGS = ("ones", "edge 0")
PROBE_SHARE = 0.25
#: where both programs are race-free and hold float state, the probe compares
#: the plain σ too (`_Checker.probe`)
PROBE_PLAIN = True
#: Where both programs hold float state and are race-free (one outcome at
#: every σ) and the original has PROBE_PLAIN_FIRST_NODES nodes or more (a
#: training step of a real model: its runs cost), the probe's first σ is
#: the plain one (every variable initialized, standard-normal floats:
#: `_plain_sigma`), where rounding differences show (a sum's operands
#: reordered, a fused op, x / 196 as x * fl(1/196)): on MobileNetV2 (6480
#: nodes) one σ costs seconds, and ones (batch normalization of a constant
#: map: zero gradients, exact) and the largest float (NaN everywhere)
#: showed nothing.  A difference found there is confirmed in the time the
#: check has left (P has one outcome: its enumeration is one run), not
#: only the probe's share.  From 300 nodes on, the real corpus's checks
#: took 306.6 s instead of 363.8 s side by side with 2000, 3 more decided
#: (docs/large-graphs.md); the unit tests' small programs keep ones first.
PROBE_PLAIN_FIRST = True
PROBE_PLAIN_FIRST_NODES = 300
#: the probe compares its σ in its own order (ones, the plain σ, the largest
#: float in the feeds, NaN in the feeds, the plain σ with huge feeds last;
#: the plain σ first on a large graph, as before): where a rewrite changes
#: how NaN propagates (the default pipeline's fused ops on the Keras MLP
#: steps: 7 of the real corpus's 47 `unsound` checks) the difference is
#: the fourth σ instead of the fifth.  The huge feeds are there for
#: constant folding's `0.03125 * (2 * d)` on the TF1 embedding step
#: (docs/large-graphs.md), which the concrete stages find, not the probe.
#: False: the one-outcome comparisons' order, as before (ones, the plain
#: σ, its huge feeds, the largest float, NaN)
PROBE_IN_ORDER = True
#: after the symbolic path gave up, the refutation stage always tries at least
#: one σ before any `unknown`: when an earlier stage overran the budget (the
#: clocks are read every 16 states, a solver call ends late), it gets this
#: share of the timeout, at most this many seconds, past the deadline
#: Outcomes(P, σ) of a race-free P (structural.race_free) by one run of P
#: instead of the oracle's enumeration, in every confirmation
#: (`_Checker.original_outcomes`; the argument is in its docstring)
RACE_FREE_CONFIRM = True

#: the probe runs a race-free original at PROBE_TAGS' σ in its canonical
#: order, remembered across the checks of one original
#: (checking/canonical_memo.py), instead of in a random order; False: a
#: random run, as before (the differential test's reference)
PROBE_RACE_FREE_ORIGINAL = True

#: Outcomes(P′, σ) of a race-free rewrite by its canonical run on the
#: oracle's compiled step function (refute.canonical_outcome), in
#: minimization's confirmations, which would replay a schedule of P′ with
#: the reference stepper (`_confirm`'s `run`; the argument is
#: `original_outcomes`', for P′): on a real graph's training step a run at a
#: new σ costs 20-45% less so.  (Elsewhere, the symbolic search's candidates
#: and the concrete stages' σ on small graphs, the replay was the cheaper:
#: the TF1 MLP step's default pipeline, 0.1-0.2 s more in all.)  False: the
#: replay, as before (the differential test's reference)
RACE_FREE_REWRITTEN_RUN = True
#: the demand-driven test of minimization's candidate σ (checking/demand.py);
#: False: every candidate confirmed in full (the differential test's reference)
DEMAND_CONFIRM = True
#: (cone tests run where a full confirmation costs more than
#: MINIMIZE_CHEAP_SECONDS) where a candidate's tested parts agree, the rest of
#: the outcome is computed (a full confirmation) only where that costs at most
#: this many cone tests; else the candidate is not taken
DEMAND_REST_RATIO = 5.0
#: the differing parts whose cones are tested (the first in the staged order)
DEMAND_PARTS = 8
SIGMA_FLOOR_SHARE = 0.05
SIGMA_FLOOR_SECONDS = 0.5
#: a check (check_rewrite) stops its concrete stages' searches and runs
#: this share of its timeout past it, at least OVERRUN_MARGIN_FLOOR and at
#: most OVERRUN_MARGIN_SECONDS seconds (oracle/budget.py hard_stop;
#: docs/budgets.md): more than the σ floor above and the numpy replay's
#: REPLAY_MARGIN, which keep their time.  The σ owed after the symbolic path
#: gives up (its first run uncut before) is then cut too, where one run of
#: the rewrite outlasts the margin (MobileNetV2: 1-1.4 s under load): no σ
#: is tried, and the verdict is `unknown`, never a verdict past the margin
OVERRUN_MARGIN_SHARE = 0.25
OVERRUN_MARGIN_FLOOR = 0.5
OVERRUN_MARGIN_SECONDS = 1.0


def overrun_margin(timeout: float) -> float:
    """How far past its timeout a check's searches and runs may go."""
    return min(max(OVERRUN_MARGIN_SHARE * timeout, OVERRUN_MARGIN_FLOOR), OVERRUN_MARGIN_SECONDS)


class _FineBudget(Budget):
    """The symbolic search's budget: the clock every 16 states (a symbolic
    state of a large program takes milliseconds, and the oracle's budget
    looks every 256: a 1 s check ended at 1.5 s).  (The concrete searches
    keep the oracle's granularity: their small budgets rely on it.)"""

    def tick(self) -> None:
        self.states += 1
        if self.states > self.max_states:
            raise BudgetExceeded("states", self.max_states, self.states)
        if self.states & 15 == 0 and time.monotonic() - self.started > self.max_seconds:
            raise BudgetExceeded("seconds", self.max_seconds, self.states)


class _GiveUp(Exception):
    """The symbolic path stops; `kind` says why ("budget" or "solver")."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


# ---------------------------------------------------------------------------
# Entry points


def _nan_payload_observer(*programs: Program) -> tuple[str, str] | None:
    """(node, function) of the first node of `programs` that may show a
    NaN's bits, or None: one of tfsem's own functions that does
    (checking/structural.py `nan_payload_observer`: Bitcast, a packing whose
    bytes are not only assigned), or, where a float value may arise
    (`_may_hold_floats`: without one there is no NaN), a function the
    solver knows nothing of (`_opaque_function`).  The solver applies an
    opaque function to its one NaN: UserBits(Add(a, b)) and
    UserBits(Add(b, a)) were proved equal where a user's UserBits views a
    float's bits as an int (tests/test_nan_payload_states.py)."""
    from .structural import nan_payload_observer
    floats = any(_may_hold_floats(prog) for prog in programs)
    for prog in programs:
        found = nan_payload_observer(prog, unknown=False) or (floats and _opaque_function(prog))
        if found:
            return found
    return None


def _nan_constant(*programs: Program) -> str | None:
    """The name of the first node of `programs` with a float tensor among
    its attributes (a Const's value) that holds a NaN, or None."""
    for prog in programs:
        for n in prog.nodes:
            for v in n.attrs.values():
                if (isinstance(v, Tensor) and v.dtype in FLOAT_DTYPES
                        and bool(np.isnan(np.asarray(v.array, dtype=np.float64)).any())):
                    return n.name
    return None


def _opaque_function(p: Program) -> tuple[str, str] | None:
    """(node, function) of a node of `p` whose function the solver knows
    nothing of: an op tfsem has no model of (`tf.OP/N/M` not among the known
    ops), or a function a user registered without an encoding (its bits are
    its own; one with an encoding, opdefs' `encoding=`, is what the encoding
    says), or None."""
    for n in p.nodes:
        op = n.attrs.get("fn") if n.op == ASSIGN else n.op
        if not isinstance(op, str) or op in (READ, "Var"):
            continue
        f = fns.lookup(op)
        if f is None:
            continue                 # not a function: control flow
        if op.startswith("tf."):
            from tfsem.oracle.opdefs.registry import known_ops
            name = op[3:].split("/", 1)[0]
            if name not in known_ops():
                return n.name, name
        elif (not getattr(f.impl, "__module__", "").startswith("tfsem.")
              and getattr(f, "encoding", None) is None):
            return n.name, op
    return None


def check_rewrite(original: Program, rewritten: Program | Mapping[str, Any],
                  semantics: str = "atomic", observe: str = "outputs+state",
                  timeout: float = DEFAULT_TIMEOUT, *, minimize: bool = True,
                  seed: int = 0, backends: bool = True, structural: bool = True,
                  float_mode: str = "exact", classify: bool = True) -> Verdict:
    """Is `rewritten` a sound rewrite of `original`?  `rewritten` may be a
    Program or its JSON object (a malformed one is an `invalid` verdict).
    A malformed `original` raises ProgramError (it is bad input, not a verdict).
    `structural=False` skips the structural rule (checking/structural.py), so
    that the enumerating engine alone decides (benchmarks, differential tests).
    `float_mode` (SPEC section 11): "exact" (IEEE, bit for bit) or "real"
    (float arithmetic over the reals: docs/verdicts.md).  Under "exact" an
    `unsound` verdict says its kind (`Verdict.difference`) unless `classify`
    is false.  Checks may run in several threads at once: each thread's Z3
    terms live in its own Z3 context (checking/z3context.py)."""
    if float_mode not in FLOAT_MODES:
        raise ValueError(f"unknown float mode {float_mode!r} ({', '.join(FLOAT_MODES)})")
    # ops with no numpy model run on TensorFlow's kernels where it is
    # installed (oracle/kernels.py); the verdict names those that did.  The
    # wait for them counts against the budget
    # (inside the check, and the next checks of this original, function
    # applications made once are not made again: P' after P at one σ
    # recomputes only the rewritten nodes and their cone, oracle/applications.py)
    # (and its concrete stages stop by the timeout plus a margin, where a
    # stage's own clock would let it run on: oracle/budget.py hard_stop)
    with kernels.record() as used, kernels.deadline(time.monotonic() + timeout), \
            applications.scope(owner=original), \
            hard_stop(time.monotonic() + timeout + overrun_margin(timeout)):
        verdict = _check_rewrite(original, rewritten, semantics, observe, timeout,
                                 minimize=minimize, seed=seed, backends=backends,
                                 structural=structural, float_mode=float_mode)
        _classified(verdict, original, rewritten, semantics, observe, timeout, seed,
                    float_mode, classify)
    if used:
        verdict.stats["tensorflow_kernels"] = kernels.report(sorted(used))
    return verdict


def _classified(verdict: Verdict, original: Program, rewritten: Program | Mapping[str, Any],
                semantics: str, observe: str, timeout: float, seed: int, float_mode: str,
                classify: bool) -> None:
    verdict.float_mode = float_mode
    if verdict.verdict == UNSOUND and float_mode == "real":
        verdict.difference = DIFFERENCE_ORDERING    # (it stays over the reals, by construction)
    if verdict.verdict == UNSOUND and float_mode == "exact" and classify:
        p2 = verdict_rewritten(rewritten)
        if not (_may_hold_floats(original) or _may_hold_floats(p2)):
            # no float value anywhere: exact and real arithmetic are one
            verdict.difference = DIFFERENCE_ORDERING
            verdict.stats["difference_check"] = {
                "float": "real", "verdict": "unsound", "seconds": 0.0,
                "reason": "no floating-point value in either program"}
        else:
            _classify(verdict, original, p2, semantics, observe, timeout, seed)


def _needs_kernels(p: Program) -> bool:
    """Whether a concrete run of p may need TensorFlow's kernels: an op
    with no model (tf.OP/N/M), or one whose model has a kernel for the
    arguments it cannot run (float MatMul, ...) while p may hold floats."""
    fns_with_kernel = [f for n in p.nodes if n.op not in (READ, ASSIGN, "Var", "Write")
                       and (f := fns.lookup(n.op)) is not None and f.tf_kernel is not None]
    return any(f.name.startswith("tf.") for f in fns_with_kernel) or \
        (bool(fns_with_kernel) and _may_hold_floats(p))


#: how a float dtype is named in attributes: tfsem's names and TensorFlow's
_FLOAT_NAMES = FLOAT_DTYPES | {"DT_HALF", "DT_BFLOAT16", "DT_FLOAT", "DT_DOUBLE"}


def _may_hold_floats(p: Program) -> bool:
    """Whether a float value may arise in `p`: a float variable or feed, a
    float constant, or an attribute naming a float dtype (a Cast's DstT, an
    uninterpreted op's T).  Without any, no op of p computes a float, so a
    difference cannot be one of floating-point values (conservative: True
    whenever in doubt)."""
    def floaty(v: Any) -> bool:
        if isinstance(v, Tensor):
            return v.dtype in FLOAT_DTYPES
        if isinstance(v, str):
            return v in _FLOAT_NAMES
        if isinstance(v, Mapping):
            return any(floaty(k) or floaty(x) for k, x in v.items())
        if isinstance(v, (list, tuple, set, frozenset)):
            return any(floaty(x) for x in v)
        return not isinstance(v, (int, bool, type(None), Error))
    return (any(t.dtype in FLOAT_DTYPES for t in (*p.variables.values(), *p.feeds.values()))
            or any(floaty(v) for n in p.nodes for v in n.attrs.values()))


def verdict_rewritten(rewritten: Program | Mapping[str, Any]) -> Program:
    return rewritten if isinstance(rewritten, Program) else \
        program_from_json(rewritten, validate=True, where="rewritten")


#: the least time (s) left in the budget for the real-arithmetic re-check of an
#: `unsound` verdict (less: its kind is "undetermined")
CLASSIFY_MIN_SECONDS = 2.0


def _classify(verdict: Verdict, original: Program, p2: Program, semantics: str, observe: str,
              timeout: float, seed: int) -> None:
    """The kind of an `unsound` verdict's difference (SPEC section 11): the
    same rewrite checked with float arithmetic over the reals.  There it is
    `unsound` (a counterexample confirmed exactly): the difference stays over
    the reals, "ordering-and-state"; `sound` (proved over the reals): it is
    only one of "floating-point" values; anything else: "undetermined"."""
    spent = float(verdict.stats.get("seconds", 0.0))
    seconds = timeout - spent
    if seconds < CLASSIFY_MIN_SECONDS:
        # (the budget covers the whole check: no time, no kind)
        verdict.difference = DIFFERENCE_UNDETERMINED
        verdict.stats["difference_check"] = {
            "float": "real", "verdict": "unknown", "seconds": 0.0,
            "reason": f"{seconds:.3g} s of the time budget were left for the check over the "
                      f"reals (at least {CLASSIFY_MIN_SECONDS:g} s needed)"}
        return
    # the search over the reals explores the same schedules as the exact
    # one: twice the exact check's time (at least the minimum) is enough
    # where that search finished, and bounds the cost where it did not
    seconds = min(seconds, max(CLASSIFY_MIN_SECONDS, 2 * spent))
    real = _check_rewrite(original, p2, semantics, observe, seconds, minimize=False, seed=seed,
                          backends=False, structural=False, float_mode="real")
    if real.verdict == UNSOUND:
        verdict.difference = DIFFERENCE_ORDERING
    elif real.verdict == SOUND:
        verdict.difference = DIFFERENCE_FLOAT
    else:
        verdict.difference = DIFFERENCE_UNDETERMINED
    verdict.stats["difference_check"] = {
        "float": "real", "verdict": real.verdict, "seconds": real.stats.get("seconds"),
        "reason": real.reason}


def _check_rewrite(original: Program, rewritten: Program | Mapping[str, Any],
                   semantics: str, observe: str, timeout: float, *, minimize: bool,
                   seed: int, backends: bool, structural: bool, float_mode: str) -> Verdict:
    real = float_mode == "real"
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r} ({', '.join(SEMANTICS)})")
    if observe not in OBSERVE:
        raise ValueError(f"unknown observe {observe!r} ({', '.join(OBSERVE)})")
    started = time.monotonic()
    original.validated()
    if isinstance(rewritten, Program):
        violations = validate(rewritten)
        p2 = rewritten
    else:
        try:
            p2 = program_from_json(rewritten, validate=True, where="rewritten")
            violations = []
        except ProgramError as exc:
            violations = exc.violations
    if violations:
        return Verdict(INVALID, "the rewritten program is malformed: "
                       + "; ".join(str(v) for v in violations),
                       semantics=semantics, observe=observe,
                       stats={"seconds": round(time.monotonic() - started, 6)})
    problems = interface_problems(original, p2)
    if problems:
        return Verdict(INVALID, "the interface differs: " + "; ".join(problems),
                       semantics=semantics, observe=observe,
                       stats={"seconds": round(time.monotonic() - started, 6)})
    if original.has_control_flow or p2.has_control_flow:   # SPEC section 9
        # (equal as node sets, and each loop's parallel_iterations, its first
        # Enter's in node order, the same: oracle/controlflow.py)
        if original == p2 and frame_parallel_iterations(original) == \
                frame_parallel_iterations(p2):   # Outcomes(P, σ) ⊆ Outcomes(P, σ)
            return Verdict(SOUND, "the rewritten program is the original", semantics=semantics,
                           observe=observe, stats={"path": "identical",
                                                   "seconds": round(time.monotonic() - started, 6)})
        # proof by cases on the predicates, then refutation by the reference
        # control-flow engine (checking/control_flow.py); the structural
        # rule is not applied across frames (docs/checking-control-flow.md)
        def check_free(q1: Program, q2: Program, seconds: float) -> Verdict:
            return _check_rewrite(q1, q2, semantics, observe, seconds, minimize=minimize,
                                  seed=seed, backends=False, structural=structural,
                                  float_mode=float_mode)

        rng = np.random.default_rng(seed + 2)
        sigmas = itertools.chain(itertools.islice(_generated_sigmas(original, rng), 2),
                                 _refute_sigmas(original, rng))
        return check_control_flow(original, p2, semantics, observe, timeout, started,
                                  check_free=check_free, sigmas=sigmas, minimize=minimize,
                                  backends=backends, real=real, structural=structural,
                                  float_sigmas=_float_sigmas(original))
    # the structural rule first: no state is explored when the rewrite keeps
    # the original's access skeleton (its proof is in checking/structural.py);
    # when it concludes nothing, the engine below runs unchanged
    note = first_difference = None
    if structural and original != p2:   # (identical programs: the engine says so at once)
        from .structural import structural_refinement
        try:
            result = structural_refinement(original, p2, semantics, observe, real=real,
                                           deadline=started + timeout)
        except Exception as exc:  # a failure of the rule must not become a verdict
            result = None
            note = f"failed: {type(exc).__name__}: {exc}"
        if result is not None and result.proved:
            return Verdict(SOUND, result.reason, semantics=semantics, observe=observe,
                           stats={"path": "structural", "structural": result.stats,
                                  "seconds": round(time.monotonic() - started, 6)})
        if result is not None:
            note = f"not applicable: {result.reason}"
            first_difference = result.stats.get("first_difference")
    if not real and (_needs_kernels(original) or _needs_kernels(p2)):
        kernels.prestart()   # TensorFlow imports in its child while the proof is tried
    checker = _Checker(original, p2, semantics, observe, started, timeout, minimize, seed, backends,
                       real=real)
    if note is not None:
        checker.stats["structural"] = note
    if first_difference is not None:
        # (where the structural rule's terms part: checking/structural.py `_differences`)
        checker.stats["structural_first_difference"] = first_difference
    # (no lock: checks in several threads at once each build their terms in
    # their own thread's Z3 context, checking/z3context.py)
    try:
        verdict = checker.run()
        skipped = getattr(checker, "skipped_here", None)
        if verdict.verdict == UNKNOWN and skipped is not None and \
                not verdict.stats.get("tried"):
            # (every σ drawn was one at which a function cannot run,
            # CannotRunHere: the op is the cause, named first, as for
            # an op with no concrete model below)
            n = verdict.stats["skipped_sigmas"]["count"]
            reason = (f"{skipped.naming_nodes(original)}, at every σ the concrete "
                      f"stages drew ({n} skipped); and {verdict.reason}")
            stats = dict(verdict.stats, cause=cause_of(reason))
            verdict = replace(verdict, reason=reason, stats=stats)
        return verdict
    except fns.CannotRun as exc:
        # a function with no concrete model (an op of an imported graph)
        # stood between the proof and a counterexample: no verdict.  The
        # op is the cause, named first; why there was no proof comes after
        reason = exc.naming_nodes(original)
        gave_up = checker.stats.get("gave_up")
        if gave_up:
            reason += f"; and no proof: {gave_up}"
        stats = dict(checker.stats, cannot_run=str(exc), cause=cause_of(reason))
        stats["seconds"] = round(time.monotonic() - started, 6)
        return Verdict(UNKNOWN, reason, semantics=semantics, observe=observe, stats=stats)


def check_case(case: Case, timeout: float = DEFAULT_TIMEOUT, *, semantics: str | None = None,
               observe: str | None = None, **kw: Any) -> Verdict:
    """Check a `tfsem.case/1` case; its semantics and observe apply unless given."""
    return check_rewrite(case.original, case.rewritten_json, semantics or case.semantics,
                         observe or case.observe, timeout, **kw)


def interface_problems(p: Program, p2: Program) -> list[str]:
    """How P' 's interface differs from P's (SPEC section 3): the same
    variables (with the same declared types), the same output names, and no
    feed that P lacks (a shared feed keeps its declared type)."""
    out = []
    for x in sorted(set(p.variables) - set(p2.variables)):
        out.append(f"variable {x!r} is missing from the rewrite")
    for x in sorted(set(p2.variables) - set(p.variables)):
        out.append(f"variable {x!r} is not in the original")
    for x in sorted(set(p.variables) & set(p2.variables)):
        if p.variables[x] != p2.variables[x]:
            out.append(f"variable {x!r} is declared {_type(p.variables[x])} in the original, "
                       f"{_type(p2.variables[x])} in the rewrite")
    for o in sorted(set(p.outputs) - set(p2.outputs)):
        out.append(f"output {o!r} is missing from the rewrite")
    for o in sorted(set(p2.outputs) - set(p.outputs)):
        out.append(f"output {o!r} is not in the original")
    for f in p2.feed_names:
        if f not in p.feed_names:
            out.append(f"feed {f!r} is not a feed of the original")
        elif p.feed_type(f) != p2.feed_type(f):
            out.append(f"feed {f!r} is declared {_type(p.feed_type(f))} in the original, "
                       f"{_type(p2.feed_type(f))} in the rewrite")
    return out


def _type(t: TensorType) -> str:
    return f"{t.dtype}{list(t.shape)}"


# ---------------------------------------------------------------------------
# The checker


@dataclass
class _Found:
    """A confirmed counterexample."""
    feeds: dict[str, Value]
    init: dict[str, Value]
    schedule: list[str]
    outcome: Outcome
    original: OutcomeSet   # Outcomes(P, σ)
    #: when `original` is not Outcomes(P, σ) but its projection onto one or
    #: two parts, ("output" or "variable", name), which differ (refute.py)
    projected: tuple | None = None
    #: σ is minimized already (the refutation stage does it with its search)
    minimized: bool = False


@dataclass
class _Query:
    """One failing query, kept for minimization."""
    constraints: list[z3.BoolRef]
    schedule: list[str]


@dataclass
class _Checker:
    p: Program
    p2: Program
    semantics: str
    observe: str
    started: float
    timeout: float
    minimize: bool
    seed: int
    backends: bool
    #: `--float real`: float arithmetic over the reals (SPEC section 11)
    real: bool = False
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.deadline = self.started + self.timeout
        # time kept for the concrete fallback when the symbolic path gives up
        # (the refutation stage runs in it first: it decides most of the
        # unsound rewrites the symbolic search cannot, so it is larger)
        self.reserve = min(0.4 * self.timeout, 4.0) if REFUTE else min(0.3 * self.timeout, 3.0)
        self.stats.update(path="symbolic", queries=0, solver_seconds=0.0,
                          unconfirmed=0, states=0)
        self.failing: _Query | None = None
        # tags of the σ (one_outcome_sigmas) at which one run of each program
        # agreed in the probe
        self.probed_equal: set[str] = set()
        # σ drawn by the concrete stages, and their bound (KERNEL_SIGMAS) where
        # a concrete run may go through TensorFlow's kernels
        self.sigma_draws = 0
        self.sigma_cap = (KERNEL_SIGMAS if not self.real and kernels.enabled()
                          and (_needs_kernels(self.p) or _needs_kernels(self.p2)) else None)
        # tensors as element terms, or as one generic element (generic.py)
        self.tensors = gen.tensors_mode()
        self.generic = self.tensors == "generic"
        if self.real:
            # the generic element has no real-number encoding
            self.tensors, self.generic = "elementwise", False
            self.stats["float"] = "real"

    def capped(self) -> bool:
        """Whether the concrete stages have drawn every σ they may (KERNEL_SIGMAS)."""
        return self.sigma_cap is not None and self.sigma_draws >= self.sigma_cap

    def solver_reserve(self) -> float:
        """Time the solver queries (and the encoding of them) leave to the
        concrete stages: a query decided before it is a proof."""
        return min(0.3 * self.timeout, 3.0)

    def remaining(self, reserve: bool = False) -> float:
        return self.deadline - time.monotonic() - (self.reserve if reserve else 0.0)

    def verdict(self, kind: str, reason: str = "", **kw: Any) -> Verdict:
        self.stats["seconds"] = round(time.monotonic() - self.started, 6)
        if kind == UNKNOWN:
            self.stats["cause"] = cause_of(reason)
        self.stats["solver_seconds"] = round(self.stats["solver_seconds"], 6)
        return Verdict(kind, reason, semantics=self.semantics, observe=self.observe,
                       stats=self.stats, **kw)

    # -- the pipeline -------------------------------------------------------

    def run(self) -> Verdict:
        # a short refutation first (checking/refute.py): an unsound rewrite
        # whose counterexample random runs of P' show costs no state search
        # (only for programs with enough variable accesses that the symbolic
        # search may take long: on smaller ones it is quick and its solver-
        # minimized counterexamples are the better ones)
        accesses = sum(n.op in (READ, ASSIGN) for n in self.p.nodes)
        # (not when an earlier stage, the structural rule, has used the whole
        # budget: a shortcut to an `unsound` skipped loses no verdict, and on
        # a large graph it costs a second past the deadline; docs/budgets.md)
        if accesses >= REFUTE_FIRST_MIN_ACCESSES and not self.real and self.remaining() > 0:
            found = self.probe()
            if found is not None:
                self.stats["path"] = "probe"
                return self.unsound(found)
            found = self.refute(min(REFUTE_FIRST_SHARE * self.timeout, REFUTE_FIRST_SECONDS),
                                "first")
            if found is not None:
                self.stats["path"] = "refute"
                return self.unsound(found)
        try:
            try:
                found, note = self.prove()
            except _GiveUp as exc:
                # a tensor the element terms cannot hold: prove again about one
                # generic element per tensor (checking/generic.py)
                if exc.kind != "size" or self.generic or self.tensors == "elementwise":
                    raise
                self.generic = True
                self.stats["generic"] = exc.reason
                found, note = self.prove()
        except _GiveUp as exc:
            self._stop_encoding()
            return self.fallback(exc)
        except NotReal as exc:
            self._stop_encoding()
            return self.fallback(_GiveUp("real", str(exc)))
        except (z3.Z3Exception, RecursionError, MemoryError, AssertionError) as exc:
            # a failure of the symbolic machinery must not become a verdict:
            # say so, and test concretely
            self.stats["internal_error"] = f"{type(exc).__name__}: {exc}"
            return self.fallback(_GiveUp("budget", f"the symbolic path failed "
                                                   f"({type(exc).__name__}: {exc})"))
        self._stop_encoding()
        if found is not None:
            return self.unsound(found)
        if note:
            # candidates the concrete oracle did not confirm (functions with no
            # encoding): no proof, and no counterexample yet
            return self.fallback(_GiveUp("unconfirmed", note))
        if self.stats.get("identical"):
            return self.verdict(SOUND, "the rewritten program is the original program")
        if self.real:
            # Over the reals σ holds no NaN, and a NaN constant is refused
            # where it is encoded (encode.py `real_const`); but a proof
            # whose two sides hold NaN constants of other payloads or
            # signs as one term (the terms have one NaN, as Z3 has) encodes
            # none of them, and a function that shows a NaN's bits
            # (Bitcast) then shows the difference the proof never saw
            constant = _nan_constant(self.p, self.p2)
            observer = constant and _nan_payload_observer(self.p, self.p2)
            if observer:
                return self.fallback(_GiveUp("real", (
                    f"the NaN constant {constant!r} has no value over the reals, and node "
                    f"{observer[0]!r} ({observer[1]}) may show a NaN's bits")))
            observer = None
        else:
            observer = _nan_payload_observer(self.p, self.p2)
        if observer is not None:
            # Z3's floating-point theory has one NaN: a proof equates NaNs
            # that differ in payload or sign (Add(NaN1, NaN2) and
            # Add(NaN2, NaN1)), which outcomes show through this function
            return self.fallback(_GiveUp("unconfirmed", (
                f"node {observer[0]!r} ({observer[1]}) may show a NaN's bits, and the "
                "solver's floating-point theory has one NaN")))
        return self.verdict(SOUND, "proved for every σ (every initialization pattern, "
                                   "every value of the declared types)")

    def _stop_encoding(self) -> None:
        # (what runs after the proof, minimization, builds few terms and has
        # deadlines of its own)
        if getattr(self, "encoder", None) is not None:
            self.encoder.deadline = None

    def prove(self) -> tuple[_Found | None, str]:
        p, p2 = self.p, self.p2
        if p == p2:
            self.stats["identical"] = True
            return None, ""
        # components the rewrite left alone have the same outcomes on both
        # sides: they are neither explored nor flagged
        ours, theirs = components(p), components(p2)
        self.same = frozenset(sig for sig, _ in ours) & frozenset(sig for sig, _ in theirs)
        self.stats["unchanged_components"] = len(self.same)
        # the variables that may start uninitialized: those the changed parts
        # access (any other one's initial value is only ever its own final value)
        flagged = sorted({x for prog, comps in ((p, ours), (p2, theirs)) for sig, (names, _, _) in comps
                          if sig not in self.same for n in names
                          if (x := prog.accessed_variable(n)) is not None})
        generic_limit = gen.FLAGGED_FACTOR * MAX_FLAGGED_VARIABLES
        limit = generic_limit if self.generic else MAX_FLAGGED_VARIABLES
        if len(flagged) > limit:
            # whole-tensor terms stay small with more initialization cases:
            # the generic element may take what the element terms cannot
            raise _GiveUp("size" if len(flagged) <= generic_limit else "budget",
                          f"{len(flagged)} variables are accessed, each initialized or "
                          f"not (limit {limit})")
        self.stats["flagged"] = flagged
        self.algebra = algebra = (gen.GenericAlgebra() if self.generic else
                                  RealAlgebra() if self.real else Algebra())
        algebra.set_flags(flagged)
        algebra.shape_guard = any(n.op == "Assign" and n.attrs.get("fn") == "SndSameShape"
                                  for prog in (p, p2) for n in prog.nodes)
        self.flagged = flagged
        self.encoder = (gen.GenericEncoder(algebra.flag_order) if self.generic else
                        Encoder(algebra.flag_order, real=self.real))
        # building the queries' terms obeys the budget too, and keeps the
        # solver's reserve for the concrete stages
        self.encoder.deadline = self.deadline - self.solver_reserve()
        try:
            self.feeds = {f: algebra.leaf("feed", f, p.feed_type(f)) for f in p.feed_names}
            self.inits = {x: algebra.leaf("init", x, p.variables[x]) for x in sorted(p.variables)}
            init = {x: algebra.initial(x, leaf) for x, leaf in self.inits.items()}
        except SymbolicLimit as exc:
            raise _GiveUp(_limit_kind(exc), str(exc)) from None
        unconfirmed: list[str] = []
        ours = self.explore(p, init, "original")
        theirs = self.explore(p2, init, "rewritten")
        self.stats["original_outcomes"] = ours.count
        self.stats["rewritten_outcomes"] = theirs.count
        for group_ours, group_theirs in _groups(ours, theirs):
            found = self.check_group(ours, theirs, group_ours, group_theirs, unconfirmed)
            if found is not None:
                return found, ""
        return None, "; ".join(dict.fromkeys(unconfirmed))

    def explore(self, program: Program, init: Mapping[str, Any], which: str) -> SymbolicOutcomes:
        seconds = self.remaining(reserve=True)
        if seconds <= 0:
            raise _GiveUp("budget", f"the time budget ({self.timeout:g} s) ran out before the "
                                    "symbolic search finished")
        budget = _FineBudget(SYMBOLIC_MAX_STATES, seconds)
        try:
            result = symbolic_outcomes(program, self.algebra, self.feeds, init, self.semantics,
                                       self.observe, budget, self.same)
        except BudgetExceeded as exc:
            self.stats["states"] += exc.explored
            if which == "original":
                self.stats["original_out"] = True
            if exc.which == "seconds":
                raise _GiveUp("budget", f"the time budget ({self.timeout:g} s) ran out during the "
                                        f"symbolic search of the {which} program ({exc.explored} "
                                        f"states explored in the {exc.limit:.3g} s left to it)") from None
            raise _GiveUp("budget", f"symbolic search of the {which} program: {exc}") from None
        except SymbolicLimit as exc:
            raise _GiveUp(_limit_kind(exc), f"symbolic search of the {which} program: {exc}") from None
        self.stats["states"] += result.states
        return result

    def check_group(self, ours: SymbolicOutcomes, theirs: SymbolicOutcomes,
                    group_ours: list[int], group_theirs: list[int],
                    unconfirmed: list[str]) -> _Found | None:
        comps = [theirs.components[j] for j in group_theirs]
        total = math.prod(len(c.outcomes) for c in comps)
        if total > MAX_COMBINATIONS:
            raise _GiveUp("budget", f"{total} combinations of the rewritten program's outcomes "
                                    f"in one group (limit {MAX_COMBINATIONS})")
        checked: set[tuple[int, tuple]] = set()
        for combo in itertools.product(*(list(c.outcomes.items()) for c in comps)):
            values = {}
            for comp, (partial, _w) in zip(comps, combo):
                values.update(zip(comp.parts, partial))
            for i in group_ours:
                target = ours.components[i]
                t = tuple(values[part] for part in target.parts)
                if t in target.outcomes or (i, t) in checked:
                    continue
                checked.add((i, t))
                schedule = self._schedule(theirs, group_theirs, combo)
                found = self.query(target, t, schedule, unconfirmed)
                if found is not None:
                    return found
        return None

    @staticmethod
    def _schedule(theirs: SymbolicOutcomes, group: list[int], combo) -> list[str]:
        """A schedule of the whole rewritten program: the combination's witnesses
        for the group's components, any witness for the others."""
        chosen = dict(zip(group, (w for _o, w in combo)))
        sched: list[str] = []
        for j, comp in enumerate(theirs.components):
            sched.extend(chosen[j] if j in chosen else next(iter(comp.outcomes.values())))
        return sched + list(theirs.skipped_schedule)

    def query(self, target: Component, t: tuple, schedule: list[str],
              unconfirmed: list[str]) -> _Found | None:
        """Is there σ at which t differs from every outcome of `target`?"""
        enc = self.encoder
        constraints = []
        try:
            for u in target.outcomes:
                e = enc.parts_eq(t, u)
                if e is True:
                    return None
                if e is not False:
                    constraints.append(z3.Not(e))
        except EncodingTimeout as exc:
            raise _GiveUp("budget", f"the time budget ({self.timeout:g} s) ran out while "
                                    f"encoding the solver queries ({exc})") from None
        found = self.sampled_candidate(target, t, schedule)
        if found is not None:
            self.failing = _Query(constraints, schedule)
            return found
        for attempt in range(CANDIDATE_RETRIES):
            # (the solver keeps the reserve of the engine before the refutation
            # stage: a query it could decide in that time is a proof)
            seconds = self.remaining() - self.solver_reserve()
            if seconds <= 0:
                raise _GiveUp("solver", f"the time budget ({self.timeout:g} s) ran out during "
                                        "the solver queries")
            solver = z3.Solver(ctx=enc.ctx)
            solver.set("timeout", max(1, int(seconds * 1000)))
            solver.add(*constraints)
            t0 = time.monotonic()
            result = solver.check()
            self.stats["solver_seconds"] += time.monotonic() - t0
            self.stats["queries"] += 1
            if result == z3.unsat:
                return None
            if result == z3.unknown:
                raise _GiveUp("solver", f"the solver could not decide whether "
                                        f"{_describe_parts(target.parts)} can differ "
                                        f"({solver.reason_unknown()})")
            model = solver.model()
            sigma = self.decode(model)
            if self.real:
                found = self.confirm_real(constraints, model, sigma, schedule)
                if found is None:
                    break
                self.failing = _Query(constraints, schedule)
                return found
            found = self.confirm(sigma, schedule)
            if found is not None:
                self.failing = _Query(constraints, schedule)
                return found
            self.stats["unconfirmed"] += 1
            # A spurious model (an uninterpreted function allowed it): ask for
            # another σ, excluding this one.  That is only a proof step when σ
            # was checked concretely and found no counterexample, and when the
            # blocking clause names all of σ: the generic element's leaves are
            # functions, not the element terms of self.leaves(), so blocking
            # there would exclude σs never tried.
            if not self.decided or self.generic:
                break
            inputs = [enc.leaf(leaf) for leaf in self.leaves()] + [enc.flag(x) for x in self.flagged]
            if not inputs:
                break
            constraints.append(z3.Or([e != model.eval(e, model_completion=True) for e in inputs]))
        unconfirmed.append(f"the solver's candidates for {_describe_parts(target.parts)} did not "
                           "reproduce concretely (functions with no encoding are uninterpreted)")
        return None

    def sampled_candidate(self, target: Component, t: tuple, schedule: list[str]) -> _Found | None:
        """Evaluate the query on a few generated σ first: a counterexample
        found this way costs no solver time (floating-point queries that are
        satisfiable are often slow for the solver and easy to sample)."""
        if SAMPLES <= 0 or self.real:
            # (samples are evaluated in IEEE arithmetic: no evidence over the reals)
            return None
        sigmas, leaves, flags, memo = self.samples()
        n = len(sigmas)
        order = self.algebra.flag_order
        differs = np.ones(n, dtype=bool)
        for u in target.outcomes:
            if self.remaining() <= self.solver_reserve():
                raise _GiveUp("budget", f"the time budget ({self.timeout:g} s) ran out while "
                                        "evaluating the queries on sampled σ")
            eq = np.ones(n, dtype=bool)
            for a, b in zip(t, u):
                e = sample_equal(a, b, leaves, memo, n, flags, order)
                if e is None:
                    return None
                eq &= e
            differs &= ~eq
            if not differs.any():
                return None
        for k in np.flatnonzero(differs)[:CANDIDATE_RETRIES]:
            found = self.confirm(sigmas[k], schedule)
            if found is not None:
                self.stats["sampled"] = True
                return found
            self.stats["unconfirmed"] += 1
        return None

    def samples(self):
        """SAMPLES generated σ, the values of every leaf on them (arrays indexed
        by sample) and, per flagged variable, the samples where it starts
        uninitialized (none in the first two, all zeros and all ones; a
        quarter of the others)."""
        if getattr(self, "_samples", None) is None:
            rng = np.random.default_rng(self.seed)
            raw = []
            leaf_values = [*self.feeds.values(), *self.inits.values()]
            count = SAMPLES if self.sigma_cap is None else min(SAMPLES, KERNEL_SAMPLES)
            for k in range(count if not self.generic or gen.can_sample(leaf_values, count) else 0):
                style = min(k, 2)
                raw.append(({f: _random_tensor(self.p.feed_type(f), rng, style) for f in self.feeds},
                            {x: _random_tensor(self.p.variables[x], rng, style) for x in self.inits}))
            flags = {x: np.array([k >= 2 and rng.random() < 0.25 for k in range(len(raw))])
                     for x in self.flagged}
            sigmas = [(feeds, {x: Error(UNINITIALIZED) if x in flags and flags[x][k] else v
                               for x, v in init.items()})
                      for k, (feeds, init) in enumerate(raw)]
            leaves: dict[Term, np.ndarray] = {}
            for which, table in ((0, self.feeds), (1, self.inits)):
                for name, value in table.items():
                    if value.elems:
                        column = np.stack([r[which][name].array.reshape(-1) for r in raw], axis=1)
                        leaves.update(zip(value.elems, column))
                    elif gen.is_generic(value) and raw:
                        gen.sample_leaf(leaves, value, [r[which][name] for r in raw])
            self._samples = (sigmas, leaves, flags, {})
        return self._samples

    # -- σ --------------------------------------------------------------------

    def leaves(self) -> list[Term]:
        """The input elements of σ, feeds first, in a stable order."""
        out = [e for f in sorted(self.feeds) for e in self.feeds[f].elems]
        out += [e for x in sorted(self.inits) for e in self.inits[x].elems]
        return out

    def decode(self, model: z3.ModelRef) -> tuple[dict, dict]:
        enc = self.encoder
        feeds = {f: enc.tensor_from_model(model, v) for f, v in self.feeds.items()}
        init: dict[str, Value] = {}
        for x, v in self.inits.items():
            uninit = x in self.flagged and z3.is_true(model.eval(enc.flag(x), model_completion=True))
            init[x] = Error(UNINITIALIZED) if uninit else enc.tensor_from_model(model, v)
        return feeds, init

    def confirm(self, sigma: tuple[dict, dict], schedule: list[str],
                seconds: float | None = None, original: OutcomeSet | None = None,
                outcome: Outcome | None = None, run_deadline: float | None = None,
                run: bool = False) -> _Found | None:
        """The concrete oracle's word: P' on `schedule` at σ gives an outcome
        that is not in Outcomes(P, σ) (computed in `seconds`, by default
        the time left; `original`: that set, computed by the oracle
        already; `outcome`: the outcome of P' on `schedule` at σ, where a
        run of the oracle's own step function along that very schedule
        gave it already, `refute.canonical_outcome`: not run twice;
        `run_deadline`: where the replay of P′ stops, an undecided None;
        `run`: a race-free P′ is run in its canonical order instead of
        replayed, `_confirm`)."""
        feeds, init = sigma
        started = time.monotonic()
        try:
            return self._confirm(feeds, init, schedule, seconds, original, outcome, run_deadline,
                                 run)
        finally:
            # (what one confirmation costs: minimization takes no step that
            # would cost more than its budget, minimized())
            self.confirm_seconds = time.monotonic() - started

    def _confirm(self, feeds: dict, init: dict, schedule: list[str],
                 seconds: float | None, original: OutcomeSet | None = None,
                 outcome: Outcome | None = None,
                 run_deadline: float | None = None, run: bool = False) -> _Found | None:
        # `decided` says whether a None answer means "σ is no counterexample"
        # (the rewritten outcome is among the original's) or only "could not
        # tell" (the schedule or the oracle could not run): only the first may
        # be excluded from later queries (see query()).
        self.decided = False
        if outcome is None and run and RACE_FREE_REWRITTEN_RUN and self.rewritten_race_free():
            # (P′ race-free: its one outcome at σ is its canonical run's, on
            # the oracle's compiled step function, instead of a replay of
            # `schedule` by the reference stepper; that run's own schedule
            # is the one shown.  The argument is `original_outcomes`', for
            # P′: every complete run of a race-free program gives the one
            # outcome, so the outcome is the one the replay of `schedule`
            # would give, and the schedule shown is a run that gave it)
            try:
                outcome, schedule = ref.canonical_outcome(self.p2, feeds, init, self.semantics,
                                                          self.observe, run_deadline)
            except BudgetExceeded:
                return None
            except fns.CannotRunHere as exc:
                return self._skipped_here(exc)
        elif outcome is None:
            try:
                state = run_schedule(self.p2, feeds, init, schedule, self.semantics,
                                     deadline=run_deadline)
            except (ValueError, BudgetExceeded):
                return None
            except fns.CannotRunHere as exc:
                return self._skipped_here(exc)
            outcome = outcome_of(self.p2, graph_of(self.p2), state, self.observe)
        try:
            if original is None:
                original = self.original_outcomes(
                    feeds, init, max(0.5, self.remaining()) if seconds is None else seconds)
        except BudgetExceeded:
            return None
        except fns.CannotRunHere as exc:
            # (a function of P that runs at other values fails at this σ:
            # σ is skipped, undecided, and the check goes on: other σ may
            # hold a counterexample.  A function with no concrete model at
            # all, CannotRun, still ends the check unknown naming it)
            return self._skipped_here(exc)
        if outcome in original:
            self.decided = True
            return None
        return _Found(dict(feeds), dict(init), list(schedule), outcome, original)

    def _skipped_here(self, exc: Exception) -> None:
        """A σ at which a function cannot run (fns.CannotRunHere): skipped,
        undecided (never excluded from the solver's later queries as a σ
        with no counterexample), counted in stats.skipped_sigmas."""
        self.decided = False
        if getattr(self, "skipped_here", None) is None:
            self.skipped_here = exc
        skipped = self.stats.setdefault("skipped_sigmas", {"count": 0, "first": str(exc)[:200]})
        skipped["count"] += 1
        return None

    def original_race_free(self) -> bool:
        """Whether P is race-free (checking/structural.py `race_free`),
        computed once per check."""
        if getattr(self, "_race_free", None) is None:
            self._race_free = race_free(self.p)
        return self._race_free

    def original_outcomes(self, feeds: dict, init: dict, seconds: float) -> OutcomeSet:
        """Outcomes(P, σ): the concrete oracle's enumeration, or, where P is
        race-free (`original_race_free`), the outcome of one run of P, in
        its canonical order, as the whole set.

        Why one run is the whole set.  `race_free(P)` holds when every two
        accesses of one variable, one of them an Assign, are ordered by hb
        (edges, data and control).  Then every complete run gives each Read
        the same value and leaves each variable the same sequence of writes.
        By structural.py's Fact 1 a run is a linear extension of the step
        DAG, so the Assigns of x that precede an access of x in a run are
        exactly those that precede it in hb (each is ordered against it),
        and in the same order (they are ordered among themselves); by Fact
        2 only those steps change x, and functions are deterministic (numpy
        models; TensorFlow's kernels are evaluated twice and refused where
        they are not, oracle/kernels.py).  By induction along any run every
        step sees the same values as in every other run, so every run ends
        with the same fetched outputs and final state: |Outcomes(P, σ)| = 1, in either semantics
        mode, at every σ (uninitialized variables and error values
        included: they are values like any other).  A DAG's run never
        blocks, so the canonical run is complete, and it is a run of the
        oracle's own step function (refute.canonical_outcome), which
        computes each step as the enumeration does.  The checker's programs
        here have no control flow (those go to checking/control_flow.py).
        So `o' ∉ {o}` is exactly `o' ∉ Outcomes(P, σ)`: an `unsound` verdict
        confirmed this way rests on the same fact as one confirmed by the
        enumeration.  tests/test_check_race_free_confirm.py checks the set
        against the enumeration on generated race-free programs, and the
        verdicts and counterexamples against the enumerating checker."""
        if RACE_FREE_CONFIRM and self.original_race_free():
            started = time.monotonic()
            # (remembered across the checks of this very program object at
            # this σ, exactly: checking/canonical_memo.py argues why a hit is
            # the run's own answer)
            outcome, schedule = canonical_memo.canonical_outcome(
                self.p, feeds, init, self.semantics, self.observe, started + seconds)
            self.stats["race_free_confirmations"] = \
                self.stats.get("race_free_confirmations", 0) + 1
            return OutcomeSet([{outcome: tuple(schedule)}], states=len(schedule),
                              seconds=time.monotonic() - started)
        return outcome_set(self.p, feeds, init, self.semantics, self.observe,
                           max_seconds=seconds)

    def confirm_real(self, constraints: list[z3.BoolRef], model: z3.ModelRef,
                     sigma: tuple[dict, dict], schedule: list[str]) -> _Found | None:
        """`--float real`: the solver's σ (rationals) rounded to the declared
        float dtypes is a counterexample over the reals when the query, with
        every leaf replaced by the exact rational value of the rounded σ (and
        each flag by the model's), is valid: no interpretation of the
        uninterpreted functions (ops with no real model, division by zero)
        makes it false.  The outcomes shown are the IEEE ones (display only)."""
        enc = self.encoder
        subs = []
        for table, values in ((self.feeds, sigma[0]), (self.inits, sigma[1])):
            for name, sym in table.items():
                value = values[name]
                if isinstance(value, Error):
                    continue
                flat = value.array.reshape(-1)
                for leaf, v in zip(sym.elems, flat):
                    try:
                        c = real_const(v, leaf.dtype, enc.z3) if leaf.dtype in FLOAT_DTYPES \
                            else z3_const(v, leaf.dtype, enc.z3)
                    except NotReal:
                        return None
                    subs.append((enc.leaf(leaf), c))
        subs += [(enc.flag(x), model.eval(enc.flag(x), model_completion=True)) for x in self.flagged]
        query = z3.And(*constraints) if constraints else enc.z3.true
        claim = z3.substitute(query, *subs) if subs else query
        seconds = max(0.1, min(self.remaining(), 2.0))
        solver = z3.Solver(ctx=enc.ctx)
        solver.set("timeout", max(1, int(seconds * 1000)))
        solver.add(z3.Not(claim))
        if solver.check() != z3.unsat:
            self.stats["unconfirmed"] += 1
            return None
        self.stats["confirmed_exactly"] = True
        feeds, init = sigma
        try:
            state = run_schedule(self.p2, feeds, init, schedule, self.semantics)
            outcome = outcome_of(self.p2, graph_of(self.p2), state, self.observe)
            original = outcome_set(self.p, feeds, init, self.semantics, self.observe,
                                   max_seconds=max(0.5, self.remaining()))
        except (ValueError, BudgetExceeded, fns.CannotRun):
            return None
        return _Found(dict(feeds), dict(init), list(schedule), outcome, original, minimized=True)

    # -- the verdicts ---------------------------------------------------------

    def unsound(self, found: _Found) -> Verdict:
        if self.real and self.stats.get("path") != "concrete":
            # (the concrete stages run in this mode only on programs with no
            # float value, where their IEEE counterexample is one over the reals)
            return self.unsound_real(found)
        if found.projected is not None:
            return self.unsound_projected(found)
        if self.minimize:
            found = self.minimized(found)
        original_list = list(found.original.as_dict(LIST_LIMIT).items())
        if self.minimize:
            original_list = self.minimized_witnesses(found, original_list)
        count = found.original.count
        all_original = [o for o, _ in original_list] if count <= LIST_LIMIT else \
            list(found.original.as_dict(100_000))
        differs = found.outcome.first_difference(all_original)
        # (the numpy replay replays the witnesses shown, each built once:
        # every one of them where they are all of P's outcomes)
        confirmed = ["oracle"] + self.replay_on_backends(
            found, original_list if count == len(original_list) else None)
        cex = Counterexample(found.feeds, found.init, found.schedule, found.outcome,
                             original_list, count, mini.key_steps(self.p2, found.schedule))
        return self.verdict(UNSOUND, not_among_reason(count, differs), differs=differs, counterexample=cex,
                            tried=self.stats.get("tried", 0), confirmed=confirmed)

    def unsound_real(self, found: _Found) -> Verdict:
        """`--float real`: a counterexample confirmed over the reals
        (confirm_real); not minimized (minimization confirms in IEEE)."""
        original_list = list(found.original.as_dict(LIST_LIMIT).items())
        count = found.original.count
        differs = None
        if found.outcome not in found.original:
            all_original = [o for o, _ in original_list]
            differs = found.outcome.first_difference(all_original) if count <= LIST_LIMIT else None
        cex = Counterexample(found.feeds, found.init, found.schedule, found.outcome,
                             original_list, count, mini.key_steps(self.p2, found.schedule))
        reason = ("over the reals (--float real: every float op computed exactly, checked in "
                  "rational arithmetic) the rewritten program's outcome on this schedule at "
                  "this σ is none of the original's; the outcomes listed are those of IEEE "
                  "arithmetic")
        return self.verdict(UNSOUND, reason, differs=differs, counterexample=cex,
                            tried=self.stats.get("tried", 0), confirmed=["reals"])

    def unsound_projected(self, found: _Found) -> Verdict:
        """An `unsound` verdict whose σ has more original outcomes than could
        be enumerated: it lists the values the differing part takes over the
        original's runs (all of them), each with a schedule of the original."""
        # the part named is the last of the parts in the staged order (outputs
        # by name, then variables by name): the parts before it may agree
        # with some outcome of the original, together they do not
        kind, name = max(found.projected, key=lambda part: (part[0] == "variable", part[1]))
        described = " and ".join(f"{k} {n!r}" for k, n in found.projected)
        if self.minimize:
            found.schedule = mini.minimize_schedule(self.p2, found.feeds, found.init, found.schedule,
                                                    found.outcome, self.semantics, self.observe,
                                                    min(self.deadline, time.monotonic() + 1.0))
        original_list = list(found.original.as_dict(LIST_LIMIT).items())
        count = found.original.count
        confirmed = ["oracle"] + self.replay_on_backends(found)
        cex = Counterexample(found.feeds, found.init, found.schedule, found.outcome,
                             original_list, count, mini.key_steps(self.p2, found.schedule))
        self.stats["original_projected"] = described
        reason = (f"the rewritten program's values of {described} are none of the {count} "
                  f"combination{'s' if count != 1 else ''} the original's runs give them at "
                  f"this σ (the original's outcomes at this σ were too many to enumerate in "
                  f"the time budget: those listed are their projections onto {described})")
        return self.verdict(UNSOUND, reason, differs={kind: name}, counterexample=cex,
                            tried=self.stats.get("tried", 0), confirmed=confirmed)

    def replay_reserve(self) -> float:
        """The time the stages before the numpy replay leave it: an
        estimate of its cost, one confirmation's (a replay of P′'s schedule
        and of P's witnesses, as the replay does on numpy).  The replay is
        what `unsound` promises besides the oracle's confirmation; making
        σ and the schedules readable comes after it."""
        return getattr(self, "confirm_seconds", 0.0) if self.backends else 0.0

    def minimize_box(self, warm: bool = False) -> float:
        """The minimization's time: MINIMIZE_SHARE of the timeout (at least
        MINIMIZE_MAX_SECONDS_FLOOR), the box as before, where one full
        confirmation (`confirm_seconds`) costs at most
        MINIMIZE_CHEAP_SECONDS or where the solver's ladder follows (a
        failing query); else MINIMIZE_CONFIRMS times that cost (one of them
        is kept for the last σ's full confirmation, the rest holds the
        first, cone-first step and a few cone tests), at least
        MINIMIZE_MIN_SECONDS, within that box.

        Within that, at most what this check took to find its
        counterexample, times a ratio, at least a floor (minimize.find_box):
        `warm`, the box where a σ of an earlier check of the same original
        was taken (checking/sigma_memo.py), so that the minimization goes
        on from where that check's ended, twice that time, at least 0.05 s;
        the first check of an original, one whose remembered σ is refused,
        and one whose remembered σ no step had made smaller
        (minimize.progressed), three times that time, at least 0.25 s: the
        σ it leaves is the one later checks start from."""
        cap = max(MINIMIZE_MAX_SECONDS_FLOOR, MINIMIZE_SHARE * self.timeout)
        if self.failing is not None:
            # (the symbolic path's solver ladder, whose steps are queries of
            # up to QUERY_SECONDS each, not confirmations: its box as before)
            return cap
        cost = getattr(self, "confirm_seconds", 0.0)
        # (a small graph's confirmations, at most MINIMIZE_CHEAP_SECONDS:
        # its passes finish in the box, sooner where the cone tests run)
        box = cap if cost <= MINIMIZE_CHEAP_SECONDS else \
            min(cap, max(MINIMIZE_MIN_SECONDS, MINIMIZE_CONFIRMS * cost))
        # (at most what finding the counterexample cost, times
        # mini.MINIMIZE_FIND_RATIO, at least mini.MINIMIZE_FIND_FLOOR where
        # warm; mini.MINIMIZE_COLD_RATIO, at least mini.MINIMIZE_COLD_FLOOR,
        # where not: minimize.find_box)
        return mini.find_box(box, time.monotonic() - self.started, warm)

    def demand(self) -> "Demand | None":
        """The demand-driven test of candidate σ (checking/demand.py), where
        it applies (DEMAND_CONFIRM; both programs race-free, the same
        outputs and variables), built once per check."""
        if getattr(self, "_demand", None) is None:
            self._demand = Demand(self.p, self.p2, self.semantics, self.observe) \
                if DEMAND_CONFIRM and not self.real and \
                Demand.usable(self.p, self.p2, RACE_FREE_CONFIRM and self.both_race_free()) \
                else False
        return self._demand or None

    def minimized(self, found: _Found) -> _Found:
        """σ made small (minimize.minimize_concrete, then the solver's
        ladder where a failing query is known) and the schedule moved
        towards the canonical order, within the minimization's box
        (`minimize_box`) and the check's budget less the numpy replay's
        share (`replay_reserve`).

        Where the demand-driven test applies (`demand`) and a full
        confirmation is dear (more than MINIMIZE_CHEAP_SECONDS), a candidate σ is
        first tested on the cone of one part that differed (the smallest
        cone among the parts the last full confirmation found different):
        where that part still differs, σ is a counterexample (the argument
        is checking/demand.py's) and the step is taken without running the
        rest of either program; where it is equal, the other parts that
        differed are tested, and where none does, the candidate is
        confirmed in full, as without the test, where a full confirmation
        costs at most DEMAND_REST_RATIO cone tests, else not taken (a σ that differs
        only in a part that agreed before is missed: minimization goes on
        from the last σ kept, never a wrong verdict).  The tensors of σ outside
        that cone are zeroed first, together (minimize_concrete's `first`).
        The σ kept last is confirmed by the full oracle at the end, and the
        verdict shows the outcomes that confirmation computed; a σ only the
        cone test accepted is never shown (if its full confirmation could
        not be made, the last fully confirmed σ is)."""
        end = self.deadline - self.replay_reserve()
        # (the σ the last check of this original kept, asked about first,
        # and the members that refused there tried last: checking/sigma_memo.py;
        # every step confirmed as before)
        recalled = sigma_memo.recall(self.p, self.semantics, self.observe) \
            if not found.minimized else None
        box = self.minimize_box()
        # (the box where the remembered σ is taken: decided now, on what
        # finding the counterexample cost; `on_start` below)
        warm_box = self.minimize_box(warm=True)
        deadline = min(end, time.monotonic() + box)
        best = found
        record = self.stats.setdefault("minimization", {})
        if time.monotonic() >= deadline:
            # (the probe found it at the end of the budget: σ and the
            # schedule are shown as confirmed)
            self.stats["minimize"] = ("σ and schedule not minimized: budget (none of the "
                                      "check's time left before the numpy replay's share)")
            return best
        demand = self.demand()
        parts: list = []
        # (what one full confirmation costs, and one cone test: a step is
        # not begun where it would overrun the box, and where cone tests
        # run, the full confirmation of the last σ they accepted is kept
        # time for)
        full_cost = getattr(self, "confirm_seconds", 0.0)
        # (cone tests where a full confirmation is dear: where it is cheap,
        # a cone test saves little next to its own cost and a full
        # confirmation's after it where the part agrees; the cones still
        # order the first step)
        cones = full_cost > MINIMIZE_CHEAP_SECONDS
        record["cone_tests"] = 0
        cone_cost = 0.0
        pending: tuple[dict, dict] | None = None
        # (the σ kept last, full- or cone-confirmed, and the parts known to
        # differ there: a candidate that leaves one of them its cones' σ is
        # taken with no run, `Demand.kept_parts`)
        anchor: tuple[dict, dict] = (found.feeds, found.init)
        anchored: list = []
        # (a σ was fully confirmed and kept while no cone tests ran, and its
        # parts are not made yet: MINIMIZE_LAZY_PARTS)
        stale = False
        started = time.monotonic()

        def confirm(sigma) -> bool:
            nonlocal best, parts, full_cost, cone_cost, pending, anchor, anchored, stale
            if anchored and cones and dm.UNCHANGED_CONES_FREE:
                kept = demand.kept_parts(anchored, anchor, sigma)
                if kept:
                    # (free, but not past the box, and where no σ is
                    # pending, it makes one: its full confirmation at the
                    # end costs `full_cost`, which the box must hold, as
                    # the cone test's step below keeps it.  Without this,
                    # a step taken so right after a full confirmation
                    # overran the box by one more full confirmation: a
                    # rescaled box of 3 s ran 4 s where each cost 2 s)
                    if time.monotonic() + (full_cost if pending is None else 0.0) > deadline:
                        raise mini.OutOfTime
                    # (a part that differed at the σ kept last differs here:
                    # its cones read the same bits, checking/demand.py
                    # `kept_parts`.  A counterexample, taken as the cone test
                    # of that part would take it, with no run; the full
                    # oracle confirms the σ kept last at the end, as it
                    # does a cone test's, in the time kept for it.  Only
                    # where cone tests run: where a full confirmation is
                    # cheap, a σ taken so would need one at the end all
                    # the same, in the box's time)
                    record["unchanged_cones"] = record.get("unchanged_cones", 0) + 1
                    anchor = pending = (dict(sigma[0]), dict(sigma[1]))
                    anchored = kept
                    parts = kept + [q for q in parts if q not in kept]
                    return True
            # (a step the oracle cannot decide within the minimization's
            # budget is not taken: on a real graph one enumeration of P's
            # outcomes took 2 s of a 1 s budget.  A race-free original's one
            # run, `original_outcomes`, has no budget to stop it: a step is
            # not begun where the last confirmation's cost would overrun,
            # and the minimization ends there)
            final = full_cost if parts and cones else 0.0
            if parts and cones:
                now = time.monotonic()
                if now + cone_cost + final > deadline:
                    raise mini.OutOfTime
                record["cone_tests"] = record.get("cone_tests", 0) + 1
                runs = demand.runs
                try:
                    differs = demand.first_differing(sigma[0], sigma[1], parts, deadline - final)
                except BudgetExceeded:
                    raise mini.OutOfTime from None
                except (ValueError, fns.CannotRun):
                    # (a function that cannot run at this σ, or a run that
                    # fails: the full confirmation decides, as without the test)
                    differs = "rest"
                cone_cost = (time.monotonic() - now) / max(1, demand.runs - runs)
                if differs in (None, "rest") and full_cost > DEMAND_REST_RATIO * cone_cost:
                    # (the parts tested agree, and the rest of the outcome
                    # would cost a full confirmation where that is dear, in
                    # itself and next to a cone test: the candidate is not
                    # taken.  A part not tested may differ: such a σ is
                    # missed, and minimization goes on from the last σ kept)
                    return False
                if differs not in (None, "rest"):
                    record["cone_accepted"] = record.get("cone_accepted", 0) + 1
                    parts = [differs] + [q for q in parts if q != differs]
                    # (and those known to differ at the σ kept last whose
                    # cones read nothing this step changed: they differ
                    # here too, `kept_parts`)
                    was = anchor
                    anchor = pending = (dict(sigma[0]), dict(sigma[1]))
                    anchored = [differs] + [q for q in demand.kept_parts(anchored, was, anchor)
                                            if q != differs]
                    return True
            now = time.monotonic()
            if now + full_cost + (final if pending is not None else 0.0) > deadline:
                raise mini.OutOfTime
            record["full_confirmations"] = record.get("full_confirmations", 0) + 1
            result = self.confirm(sigma, best.schedule, max(0.05, deadline - now),
                                  run_deadline=deadline, run=True)
            full_cost = self.confirm_seconds
            rescale()
            if result is None:
                return False
            best, pending = result, None
            if cones or not MINIMIZE_LAZY_PARTS:
                parts = _differing_parts(demand, best)
                anchor, anchored = (best.feeds, best.init), list(parts)
                stale = False
            else:
                # (no cone tests: the parts, anchor and anchored are read
                # only where `cones` holds, and it turns on only in
                # `rescale`, which makes them then from this `best`:
                # MINIMIZE_LAZY_PARTS)
                stale = True
            return True

        def rescale() -> None:
            """The box and the cone tests decided again on the cost of the
            full confirmation just made (`full_cost`): where it is dear
            (more than MINIMIZE_CHEAP_SECONDS) and the box was decided on a
            cheaper one, the box becomes what `minimize_box` gives a
            confirmation of that cost (counted from the minimization's
            start; never larger than it was) and the next steps are cone
            tests.  The probe's measure of a confirmation is cheap where
            the check's runs at its σ were remembered (the original's
            canonical run at the plain σ, made by an earlier check of the
            same original: checking/canonical_memo.py; the applications of
            its nodes, oracle/applications.py), while every step here is a
            σ not run before: on the second and later checks of a real
            graph the box was the cheap one (0.5 s, three or four full
            confirmations) instead of the one its confirmations' cost
            calls for.  Only the order and the number of the steps tried
            change: every σ kept is confirmed as before."""
            nonlocal cones, deadline, parts, anchor, anchored, stale
            if not MINIMIZE_RESCALE or cones or self.failing is not None or \
                    full_cost <= MINIMIZE_CHEAP_SECONDS:
                return
            cones = True
            if stale:
                # (the parts of the σ fully confirmed last, made now that
                # cone tests run: what the eager path made at its
                # confirmation, MINIMIZE_LAZY_PARTS)
                parts = _differing_parts(demand, best)
                anchor, anchored = (best.feeds, best.init), list(parts)
                stale = False
            record["rescaled"] = round(full_cost, 6)
            deadline = min(deadline, started + max(MINIMIZE_MIN_SECONDS,
                                                   MINIMIZE_CONFIRMS * full_cost))

        # cheap first: each element to 0, 1 or -1 where the counterexample
        # survives (a refuted one's σ is minimized already, refute()).  Where
        # the confirmation that found it took longer than the whole budget
        # (a real graph's runs), no step can end in time: σ is shown as found
        # (the probe's and the one-outcome comparisons' σ hold one value per
        # tensor: ones, an edge value)
        too_slow = full_cost > deadline - time.monotonic()
        refusals = None
        if too_slow:
            self.stats["minimize"] = (f"σ not minimized: one confirmation took {full_cost:.2g} s, "
                                      f"more than the minimization's budget")
        elif not found.minimized:
            # the parts the last full confirmation found different, the one
            # that differed last first, then by the size of their cones
            parts = _differing_parts(demand, found)
            anchored = list(parts)
            first = _outside(demand, parts[:1], found)
            record["first"] = len(first)
            refusals = {}

            def on_start(result: str) -> None:
                # (the remembered σ taken, one that some step made smaller:
                # the minimization goes on from where an earlier check's
                # ended, within the warm box; refused, or a σ as found, the
                # box as for a first check)
                nonlocal deadline
                if result in ("taken", "same") and recalled[2]:
                    deadline = min(deadline, started + warm_box)
                    record["warm_box"] = round(warm_box, 6)

            mini.minimize_concrete((found.feeds, found.init), confirm, deadline, first=first,
                                   stats=record, start=recalled and recalled[0],
                                   known=recalled and recalled[1], refusals=refusals,
                                   on_start=on_start)
        query = self.failing
        if query is not None and time.monotonic() < deadline and not too_slow:
            index = {id(leaf): (kind, name, i) for kind, table in (("feed", self.feeds),
                                                                    ("init", self.inits))
                     for name, v in table.items() for i, leaf in enumerate(v.elems)}

            def value_of(sigma, leaf: Term):
                kind, name, i = index[id(leaf)]
                value = (sigma[0] if kind == "feed" else sigma[1])[name]
                return None if isinstance(value, Error) else value.array.reshape(-1)[i]

            # initialized variables first, then small elements, feeds first
            preferences = [[(z3.Not(self.encoder.flag(x)),
                             lambda sigma, x=x: not isinstance(sigma[1][x], Error))]
                           for x in self.flagged]
            # (a preference per element, for at most MINIMIZE_SOLVER_LEAVES elements:
            # thousands of them cost minutes of solving past the deadline)
            preferences += [mini.leaf_preference(self.encoder, leaf, value_of)
                            for leaf in self.leaves()[:MINIMIZE_SOLVER_LEAVES]]
            try:
                mini.minimize_with_solver(query.constraints, preferences,
                                          (best.feeds, best.init) if pending is None else pending,
                                          self.decode, confirm, deadline, self.encoder.ctx)
            except mini.OutOfTime:
                pass
        if pending is not None:
            # the σ the cone test accepted last, confirmed by the full
            # oracle: its outcomes are the ones shown
            record["full_confirmations"] = record.get("full_confirmations", 0) + 1
            # (within `end`: the numpy replay's reserve stays its own; the
            # box kept this confirmation's cost, `final`, free inside it)
            result = self.confirm(pending, best.schedule,
                                  max(0.05, end - time.monotonic()),
                                  run_deadline=end, run=True)
            if result is not None:
                best = result
            else:
                # (the last fully confirmed σ is shown; a σ the cone test
                # accepted that the full oracle finds no counterexample would
                # contradict checking/demand.py's argument: said so)
                record["final"] = ("not confirmed: " + ("the full oracle disagreed"
                                                        if self.decided else "undecided"))
        record["seconds"] = round(time.monotonic() - started, 6)
        if refusals is not None:
            # (the σ the full oracle confirmed last, for the next check of
            # this original, the found one where no step was taken; the
            # members that refused only where it is the σ they refused at,
            # no cone-accepted step left unconfirmed)
            sigma_memo.remember(self.p, self.semantics, self.observe, (best.feeds, best.init),
                                refusals if "final" not in record else None,
                                minimized=mini.progressed(record, recalled))
        schedule = mini.minimize_schedule(self.p2, best.feeds, best.init, best.schedule,
                                          best.outcome, self.semantics, self.observe,
                                          min(end, time.monotonic() + 1.0))
        best.schedule = schedule
        return best

    def minimized_witnesses(self, found: _Found, original_list: list) -> list:
        """The original's witnesses (the first 10), each moved towards the
        canonical order where that gives its outcome (minimize_schedule),
        within 0.25 s and the check's budget less the numpy replay's share
        (`replay_reserve`).  Each step of that is a whole
        run of P (seconds on a real graph), stopped at the deadline; a
        witness it could not move is shown as the oracle found it (a
        schedule of P giving that outcome all the same), and
        `stats.minimize_witnesses` says the stage was cut."""
        deadline = min(self.deadline - self.replay_reserve(),
                       time.monotonic() + WITNESS_MINIMIZE_SECONDS)
        if time.monotonic() >= deadline:
            self.stats["minimize_witnesses"] = POST_SKIPPED
            return original_list
        result = [(o, mini.minimize_schedule(self.p, found.feeds, found.init, w, o,
                                             self.semantics, self.observe, deadline)
                   if k < 10 else w)
                  for k, (o, w) in enumerate(original_list)]
        if time.monotonic() >= deadline:
            self.stats["minimize_witnesses"] = POST_CUT
        return result

    def replay_on_backends(self, found: _Found, witnesses: list | None = None) -> list[str]:
        """The backends (numpy, cupy) on which the counterexample's replay
        confirms it (backends/confirm.py), within the check's budget: a
        replay past the deadline stops (the clock is read every 32 steps
        of each run) and `stats.backends` says so ("numpy replay skipped:
        budget").  The verdict is `unsound` all the same: what makes it so
        is the oracle's confirmation, done before (docs/verdicts.md,
        "confirmed on"); `confirmed` lists only the replays that ran."""
        if not self.backends:
            return []
        try:
            from tfsem.backends.confirm import confirm_details
        except ImportError:
            self.stats["backends"] = "tfsem.backends.confirm is not available"
            return []
        # (a small margin past the deadline, REPLAY_MARGIN: on a small
        # program the replay takes milliseconds, and a difference found at
        # the end of the budget is replayed all the same)
        end = self.deadline + min(REPLAY_MARGIN_SHARE * self.timeout, REPLAY_MARGIN_SECONDS)
        if time.monotonic() >= end:
            self.stats["backends"] = "numpy replay skipped: budget (none of the check's time left)"
            return []
        try:
            # (the oracle's enumeration of P's outcomes at σ, done by the
            # confirmation, is reused: a projected one is not that set)
            reuse = {} if found.projected is not None else {"original_outcomes": found.original,
                                                            "witnesses": witnesses}
            # (the outcome claimed, given: the replay of the schedule shown,
            # on numpy, must give that very outcome.  The schedule shown may
            # be one minimization reordered without a replay of the oracle
            # (minimize.commutes_to): this replay computes it, and a backend
            # that got another outcome does not confirm)
            details = confirm_details(self.p, self.p2, found.feeds, found.init,
                                      found.schedule, self.semantics, self.observe,
                                      outcome=found.outcome, deadline=end, **reuse)
        except Exception as exc:  # a backend failure must not lose the verdict
            self.stats["backends"] = f"replay failed: {type(exc).__name__}: {exc}"
            return []
        cut = [c.backend for c in details if c.budget_cut]
        if cut:
            self.stats["backends"] = (f"{', '.join(cut)} replay skipped: budget (the check's "
                                      f"time ran out during the replay)")
        return [c.backend for c in details if c.confirmed]

    # -- the refutation stage (checking/refute.py) ------------------------------

    def refute(self, seconds: float, which: str) -> _Found | None:
        """Random runs of P' at generated σ, and one search of P pruned
        against their outcomes: a confirmed counterexample, or None.  Never
        a proof (see refute.py)."""
        if not REFUTE or self.p == self.p2:
            return None
        hard = current_hard_stop()
        if hard is not None and time.monotonic() >= hard:
            # (past the check's hard stop, oracle/budget.py: its first run
            # would be cut at once, after drawing σ, seconds on a large graph)
            return None
        floor = min(SIGMA_FLOOR_SHARE * self.timeout, SIGMA_FLOOR_SECONDS) \
            if which == "after" and not self.stats.get("refute", {}).get("after_sigmas") else 0.0
        if seconds < floor or self.remaining() < floor:
            # (no σ tried since the symbolic path gave up: one is, even late)
            stop = time.monotonic() + floor
        elif seconds <= 0:
            return None
        else:
            stop = min(self.deadline, time.monotonic() + seconds)
        stats = self.stats.setdefault("refute", {"sigmas": 0, "candidates": 0, "states": 0,
                                                 "budget_outs": 0, "seconds": 0.0})
        t0 = time.monotonic()
        if getattr(self, "_skip", None) is None:
            self._skip = ref.unchanged_components(self.p, self.p2)
            self._refute_rng = np.random.default_rng(self.seed + 1)
            self._refute_sigmas = _refute_sigmas(self.p, self._refute_rng)
            self._original_rng = np.random.default_rng(self.seed + 3)
        rng = self._refute_rng
        race_free_p2 = self.rewritten_race_free()
        agreed = 0      # σ at which every candidate was found among P's outcomes
        # confirming a candidate (P's full outcome set, or the values of the
        # differing parts) may take longer than the stage; before the search
        # it keeps a tenth of the budget (at most the reserve), so that σ can
        # still be tried after it (a 38-node check spent its whole 10 s in one
        # confirmation here and tried no σ; the whole reserve cost
        # counterexamples that need the time)
        self._confirm_until = (self.deadline - min(self.reserve, 0.1 * self.timeout)
                               if which == "first" else self.deadline)
        try:
            owed = floor > 0     # (the σ owed runs even when a stall used up its floor)
            while owed or (time.monotonic() < stop and not self.capped()
                           and (which != "first" or agreed < REFUTE_FIRST_AGREED)):
                was_owed, owed = owed, False
                counted = None
                try:
                    sigma = next(self._refute_sigmas)
                    self.sigma_draws += 1
                    feeds, init = sigma
                    left = stop - time.monotonic()
                    # (a race-free program has one outcome at every σ, which any
                    # run gives: `original_outcomes`; more runs only repeat it.
                    # Every run reads the clock inside itself; the first at the
                    # σ owed completes, past the deadline too, up to the check's
                    # hard stop: oracle/budget.py, refute.sample_outcomes)
                    candidates = ref.sample_outcomes(self.p2, feeds, init, self.semantics,
                                                     self.observe, rng,
                                                     1 if race_free_p2 else REFUTE_RUNS,
                                                     time.monotonic() + REFUTE_SAMPLE_SHARE * left,
                                                     first_deadline=None if was_owed else stop)
                    if not candidates:
                        break    # (the first run cut short at the deadline: no σ tried)
                    counted = (stats["sigmas"], stats.get("after_sigmas"), stats["candidates"])
                    stats["sigmas"] += 1
                    if which == "after":
                        stats["after_sigmas"] = stats.get("after_sigmas", 0) + 1
                    stats["candidates"] += len(candidates)
                    # random runs of P too: a candidate equal to one of their
                    # outcomes is an outcome of P (each is a run of P), and a value
                    # of theirs at some parts is one the search there need not find
                    left = stop - time.monotonic()
                    until = time.monotonic() + REFUTE_SAMPLE_SHARE * left
                    known = ref.guided_outcomes(self.p, feeds, init, self.semantics, self.observe,
                                                candidates.values(), until)
                    # (their own random stream: σ and the runs of P' are drawn as
                    # they were without these runs)
                    known.update(ref.sample_outcomes(
                        self.p, feeds, init, self.semantics, self.observe, self._original_rng,
                        1 if self.original_race_free() else REFUTE_RUNS, until))
                    stats["original_runs"] = stats.get("original_runs", 0) + len(known)
                    rest = [o for o in candidates if o not in known]
                    left = stop - time.monotonic()
                    # a σ whose search runs long gets part of the time, so that
                    # another σ (other value coincidences) is tried too
                    budget = Budget(SYMBOLIC_MAX_STATES,
                                    max(0.01, left if left < 0.3 else left / 2))
                    skipped: list = []
                    compared: list = []
                    try:
                        # (the joint search of components with three parts or
                        # more rarely finds what single parts and pairs do not,
                        # and costs most: other σ get the time instead)
                        missing = ref.unreached(self.p, feeds, init, self.semantics, self.observe,
                                                rest, budget, self._skip, joint=REFUTE_JOINT,
                                                incomplete=skipped, reached=known,
                                                complete=compared) if rest else []
                    except BudgetExceeded:
                        stats["budget_outs"] += 1
                        continue
                    finally:
                        stats["states"] += budget.states
                    if not missing and skipped:
                        # some part's search ran out of its share: σ was not
                        # compared on every part, so it is not counted as tried;
                        # it is "partly" tried when some candidate was found among
                        # P's runs in full or some part was compared
                        if compared or len(rest) < len(candidates):
                            stats["partial"] = stats.get("partial", 0) + 1
                            stats["partial_parts"] = stats.get("partial_parts", 0) + len(compared)
                            stats["partial_skipped"] = \
                                stats.get("partial_skipped", 0) + len(skipped)
                        else:
                            stats["not_compared"] = stats.get("not_compared", 0) + 1
                        continue
                    agreed += not missing
                    if not missing:
                        # a σ tried: every random run of P' gave outputs and
                        # variable values (alone and in pairs) that a run of P gives
                        stats["agreed"] = stats.get("agreed", 0) + 1
                    for outcome, part in missing:
                        found = self.confirm_refuted(sigma, candidates[outcome], outcome, part)
                        if found is not None:
                            stats["found"] = which
                            return found
                except fns.CannotRunHere as exc:
                    # (a function that runs at other values fails at this σ:
                    # σ skipped, not tried, and the next one drawn)
                    self._skipped_here(exc)
                    if counted is not None:     # (not counted as tried)
                        stats["sigmas"], after, stats["candidates"] = counted
                        if after is None:
                            stats.pop("after_sigmas", None)
                        else:
                            stats["after_sigmas"] = after
                    continue
        except fns.CannotRun as exc:
            # a function with no concrete model: this stage cannot run it
            stats["cannot_run"] = exc.naming_nodes(self.p)
            return None
        except Exception as exc:  # noqa: BLE001
            # a failure of the stage must not become a verdict, nor a crash
            stats["error"] = f"{type(exc).__name__}: {exc}"
            return None
        finally:
            self._confirm_until = self.deadline
            stats["seconds"] = round(stats["seconds"] + time.monotonic() - t0, 6)
        return None

    def confirm_refuted(self, sigma: tuple[dict, dict], schedule: list[str],
                        outcome: Outcome, parts: tuple | None) -> _Found | None:
        """A candidate of the refutation stage becomes a counterexample only
        after (1) its schedule replayed on P' by the reference semantics gives
        its outcome, (2) σ is shrunk towards small values while the pruned
        search still finds no run of P giving P' 's outcome there, and (3) the
        concrete oracle confirms it at the final σ: P's full outcome set does
        not contain it, or, when that set is too large to enumerate in the
        time left, the projection of P's outcome set onto the parts that rule
        it out (every value they take together over P's runs, found by the
        oracle's search with only those parts observed) does not contain its
        values there; the counterexample then lists those values."""
        if self._replayed(sigma, schedule) != outcome:
            self._note("replay_mismatch")
            return None

        def still(s) -> bool:
            o = self._replayed(s, schedule)
            if o is None:
                return False
            try:
                return bool(ref.unreached(self.p, s[0], s[1], self.semantics, self.observe, [o],
                                          Budget(SYMBOLIC_MAX_STATES,
                                                 max(0.01, min(0.5, self.remaining()))),
                                          self._skip, joint=REFUTE_JOINT))
            except (BudgetExceeded, fns.CannotRunHere):
                return False

        if self.minimize:
            deadline = min(self.deadline, time.monotonic() + max(MINIMIZE_MAX_SECONDS_FLOOR,
                                                                  MINIMIZE_SHARE * self.timeout))
            sigma = mini.minimize_concrete(sigma, still, deadline)
        outcome = self._replayed(sigma, schedule)
        left = min(self.remaining(), self._confirm_until - time.monotonic())
        full_seconds = max(0.1, left if parts is None else 0.2 * left)
        found = self.confirm(sigma, schedule, full_seconds)
        if found is not None:
            found.minimized = self.minimize
            return found
        if self.decided:
            # the full set holds the outcome the pruned search missed: that
            # would be a bug of the stage; never a verdict
            self._note("contradicted")
            return None
        if parts is None or outcome is None:
            self._note("unconfirmed")
            return None
        try:
            values = ref.part_values(self.p, sigma[0], sigma[1], self.semantics, parts,
                                     Budget(SYMBOLIC_MAX_STATES,
                                            max(0.05, self._confirm_until - time.monotonic())))
        except BudgetExceeded:
            self._note("unconfirmed")
            return None
        if tuple(ref.part_of(outcome, part) for part in parts) in values:
            # (σ changed since the search: the minimization's last step kept
            # a σ at which the pruned search said so; not a counterexample)
            self._note("contradicted")
            return None
        # each listed value's schedule must give it on the reference semantics
        listed: dict[Outcome, tuple[str, ...]] = {}
        g = graph_of(self.p)
        for value, witness in values.items():
            try:
                state = run_schedule(self.p, sigma[0], sigma[1], witness, self.semantics)
            except ValueError:
                self._note("unconfirmed")
                return None
            o = outcome_of(self.p, g, state, "outputs+state")
            if tuple(ref.part_of(o, part) for part in parts) != value:
                self._note("unconfirmed")
                return None
            both = list(zip(parts, value))
            listed[Outcome(tuple((n, v) for (kind, n), v in both if kind == "output"),
                           tuple((n, v) for (kind, n), v in both if kind == "variable")
                           if any(kind == "variable" for kind, _ in parts) else None)] = tuple(witness)
        self._note("projected")
        return _Found(dict(sigma[0]), dict(sigma[1]), list(schedule), outcome,
                      OutcomeSet([listed]), projected=parts)

    def _note(self, what: str) -> None:
        stats = self.stats.setdefault("refute", {})
        stats[what] = stats.get(what, 0) + 1

    def _replayed(self, sigma: tuple[dict, dict], schedule: list[str]) -> Outcome | None:
        try:
            state = run_schedule(self.p2, sigma[0], sigma[1], schedule, self.semantics)
        except ValueError:
            return None
        except fns.CannotRunHere as exc:
            return self._skipped_here(exc)
        return outcome_of(self.p2, graph_of(self.p2), state, self.observe)

    # -- the concrete fallback --------------------------------------------------

    def fallback(self, why: _GiveUp) -> Verdict:
        if self.real and (_may_hold_floats(self.p) or _may_hold_floats(self.p2)):
            # the concrete stages compute in IEEE arithmetic: neither a
            # difference they find nor their failure to find one says
            # anything over the reals.  (Where no float value arises in either
            # program, IEEE and real arithmetic are one: the stages below
            # decide this mode too, and their counterexamples are exact.)
            self.stats["gave_up"] = why.reason
            return self.verdict(UNKNOWN, f"no proof over the reals (--float real): {why.reason}; "
                                         "the concrete stages compute in IEEE arithmetic and "
                                         "do not decide this mode")
        self.stats["path"] = "concrete"
        self.stats["gave_up"] = why.reason
        self.fallback_start = max(0.0, self.remaining())
        if self.sigma_cap is not None and self.one_outcome_each():
            verdict = self.one_outcome_comparisons(why)
            if verdict is not None:
                return verdict
        rng = np.random.default_rng(self.seed)
        tried = 0
        budget_note = ""
        # (the plain σ third, compared in full before the refutation stage,
        # where floats are held and both programs are race-free: then each
        # has one outcome at every σ and the comparison is one run of each,
        # whatever the values; `_plain_sigma`)
        plain = has_float_state(self.p) and self.both_race_free()
        sigmas = _generated_sigmas(self.p, rng, plain=plain)
        refuted = not REFUTE
        retry = None    # a σ whose comparison ran out of its share before the stage
        # where the symbolic search of the original ran out of its budget, the
        # enumeration of its outcomes at a σ (a full comparison) almost never
        # finishes either (at 80-160 nodes: 0 of 18 did, and their retries
        # took most of the reserve): the refutation stage goes first, and the
        # full comparisons have what it leaves
        first = 0 if self.stats.get("original_out") else \
            FALLBACK_FIRST + (plain and (2 if self.p.feed_names else 1))
        # (the probe's σ ones and plain σ, where both programs are race-free:
        # one run of each compared them in full, `probe`)
        # (`_generated_sigmas`' order: the huge feeds only where P has feeds)
        tags = ["zeros", "ones"] + (["plain"] if plain else []) + \
            (["plain huge"] if plain and self.p.feed_names else [])
        drawn = 0
        while True:
            if not refuted and (tried >= first or budget_note or self.capped()
                                or self.remaining() <= 0.5 * self.fallback_start):
                # the refutation stage again, with most of the time left, after
                # the first σ (all zeros, all ones: those enumerations are the
                # cheap ones) were compared in full; the comparison of both
                # outcome sets rarely finishes at other σ where the symbolic
                # search did not
                refuted = True
                found = self.refute((0.5 if retry is not None else 0.8) * self.remaining(),
                                    "after")
                if found is not None:
                    self.stats["tried"] = tried
                    return self.unsound(found)
                if retry is not None:
                    budget_note = ""      # that σ again, with all the time left
            if budget_note or tried >= FALLBACK_SAMPLES or self.remaining() <= 0 or self.capped():
                if refuted:
                    break
                continue
            if retry is not None and refuted:
                sigma, retry = retry, None
            else:
                sigma = next(sigmas)
                self.sigma_draws += 1
                tag = tags[drawn] if drawn < len(tags) else None
                drawn += 1
                if tag in self.probed_equal and self.both_race_free():
                    tried += 1
                    continue
            try:
                # (before the stage: a share of the time, so that it has the rest)
                found = self.concrete_difference(
                    sigma, None if refuted else max(0.05, self.remaining() - 0.5 * self.fallback_start))
            except BudgetExceeded as exc:
                budget_note = f"; concrete search: {exc}"
                if not refuted:
                    retry = sigma
                continue
            except fns.CannotRunHere as exc:
                # (a function that runs at other values fails at this σ:
                # skipped, not counted as tried; the next σ is drawn)
                self._skipped_here(exc)
                continue
            tried += 1
            if found is not None:
                self.stats["tried"] = tried
                return self.unsound(found)
        # (batched testing on numpy stops at the first op with no numpy model:
        # with the search bounded for TensorFlow's kernels it is not tried)
        batched = self.batched_difference(why) if not budget_note and self.sigma_cap is None \
            else None
        if batched is not None:
            if isinstance(batched, _Found):
                self.stats["tried"] = tried
                return self.unsound(batched)
            tried += batched
            budget_note += f" ({batched} of them batched on numpy)"
        # σ tried: compared in full (both outcome sets enumerated), or by the
        # refutation stage (random runs of P' searched for in P's runs;
        # stats "refute_tried")
        rstats = self.stats.get("refute", {})
        sampled = rstats.get("agreed", 0)
        partial = rstats.get("partial", 0)
        self.stats["tried"] = tried
        self.stats["refute_tried"] = sampled
        how = f"{tried} σ tried concretely"
        if sampled or partial:
            how = (f"{tried} σ compared in full and {sampled} σ tried by the refutation stage "
                   f"(up to {REFUTE_RUNS} random runs of the rewrite each, each outcome of theirs "
                   f"found among the original's runs, or else each output and variable value of "
                   f"it, and pairs of them where a component has 3 to "
                   f"{ref.MAX_PAIRED_PARTS} parts)")
        if partial:
            # (σ at which some part's search ran out: a weaker comparison, said so)
            how += (f", and {partial} σ compared on some parts only (the values of "
                    f"{rstats.get('partial_parts', 0)} parts compared; the searches of "
                    f"{rstats.get('partial_skipped', 0)} ran out of their share)")
        sampled += partial
        if self.capped():
            self.stats["sigma_cap"] = self.sigma_cap
            budget_note += (f"; the search stopped after {self.sigma_draws} σ drawn (the bound "
                            f"with ops on TensorFlow's kernels)")
        if why.kind == "solver":
            return self.verdict(UNKNOWN, f"{why.reason}; {how}, none shows a difference"
                                         f"{budget_note}", tried=tried + sampled)
        if tried + sampled == 0:
            cannot_run = self.stats.get("refute", {}).get("cannot_run")
            if cannot_run:
                # the op is the cause: no σ can run through it
                return self.verdict(UNKNOWN, f"{cannot_run}; and no proof: {why.reason}", tried=0)
            return self.verdict(UNKNOWN, f"{why.reason}; and no σ could be tried concretely"
                                         f"{budget_note}", tried=0)
        return self.verdict(NO_COUNTEREXAMPLE, f"no proof ({why.reason}); {how}, none shows "
                                               f"a difference{budget_note}",
                            tried=tried + sampled)

    def one_outcome_each(self) -> bool:
        """Whether the symbolic search found exactly one outcome of each
        program, and explored every component of both (none left out as
        unchanged): then each program has one outcome at every σ."""
        st = self.stats
        return (st.get("original_outcomes") == 1 and st.get("rewritten_outcomes") == 1
                and not st.get("original_out") and st.get("unchanged_components") == 0)

    def one_outcome_comparisons(self, why: _GiveUp) -> Verdict | None:
        """`_one_outcome_comparisons` under its own σ bound
        (KERNEL_ONE_OUTCOME_SIGMAS; the normal stages keep theirs when it
        gives no verdict)."""
        cap = self.sigma_cap
        self.sigma_cap = max(cap or 0, KERNEL_ONE_OUTCOME_SIGMAS)
        verdict = self._one_outcome_comparisons(why)
        if verdict is None:
            self.sigma_cap = cap
        return verdict

    def _one_outcome_comparisons(self, why: _GiveUp) -> Verdict | None:
        """Full comparisons at σ, one run of each program each, where each has
        one outcome at every σ (one_outcome_each), up to the σ bound.

        Why one run each is a full comparison: the symbolic search explores
        every run of a program (the proofs rely on it: an outcome it misses
        would make a wrong `sound`), and it found one symbolic outcome of
        each, a tuple of terms over σ.  Every run of P' at σ therefore gives
        that tuple's value at σ, and so does every run of P: Outcomes(P', σ)
        and Outcomes(P, σ) are each the one outcome a single run gives (the
        functions in the terms are functions: TensorFlow's kernels are
        evaluated twice and refused when they are not, docs/kernels.md).
        Equal outcomes: P' has no outcome outside Outcomes(P, σ).  A
        difference is still confirmed by the concrete oracle (`confirm`: P's
        outcome set enumerated) before it is a counterexample, so `unsound`
        never rests on this argument.  None: no σ could be compared (the
        normal stages run)."""
        sigmas = self.one_outcome_sigmas()
        runs = np.random.default_rng(self.seed + 4)
        compared = 0
        try:
            while not self.capped() and self.remaining() > 0:
                tag, sigma = next(sigmas)
                self.sigma_draws += 1
                if tag in self.probed_equal:
                    # one run of each compared equal by the probe already
                    compared += 1
                    continue
                feeds, init = sigma
                until = self.deadline
                if ONE_OUTCOME_CANONICAL:
                    # (each program's run in its canonical order, on the
                    # compiled component's straight line from the second σ
                    # on, instead of a run in a random order: by the
                    # argument above every run of each program at σ gives
                    # its one outcome, so any run is the comparison; the
                    # canonical run only skips the engine's choosing of the
                    # next step.  A run cut short at the deadline
                    # (BudgetExceeded) gives no outcome, and no comparison,
                    # as a random run cut short gives none.
                    # tests/test_check_one_outcome_canonical.py compares the
                    # verdicts and comparisons with this on and off)
                    try:
                        o1, _ = ref.canonical_outcome(self.p, feeds, init, self.semantics,
                                                      self.observe, until)
                        o2, schedule = ref.canonical_outcome(self.p2, feeds, init,
                                                             self.semantics, self.observe, until)
                    except BudgetExceeded:
                        break    # (a run cut short: not a comparison)
                else:
                    # (each run reads the clock inside itself: one cut short
                    # gives no outcome, and no comparison)
                    mine = ref.sample_outcomes(self.p, feeds, init, self.semantics, self.observe,
                                               runs, 1, until, first_deadline=until)
                    theirs = ref.sample_outcomes(self.p2, feeds, init, self.semantics,
                                                 self.observe, runs, 1, until,
                                                 first_deadline=until) \
                        if len(mine) == 1 else {}
                    if len(mine) != 1 or len(theirs) != 1:
                        break    # (a run cut short: not a comparison)
                    ((o1, _),) = mine.items()
                    ((o2, schedule),) = theirs.items()
                if o2 == o1:
                    compared += 1
                    continue
                found = self.confirm(sigma, schedule, max(0.1, self.remaining()))
                if found is not None:
                    self.stats["tried"] = compared
                    self.stats["one_outcome"] = {"compared": compared, "found": tag}
                    return self.unsound(found)
                if self.decided:
                    # P's enumeration holds P' 's outcome: a second outcome of
                    # P the symbolic search did not report would contradict
                    # the argument above; never a verdict, and no shortcut
                    self.stats["one_outcome"] = {"compared": compared, "contradicted": True}
                    return None
                break    # (the oracle could not decide in the time left)
        except (fns.CannotRun, BudgetExceeded):
            return None
        self.stats["one_outcome"] = {"compared": compared}
        if compared == 0:
            return None
        self.stats["tried"] = compared
        how = (f"{compared} σ compared in full (each program has one outcome at every σ, by "
               f"its symbolic search: one run of each)")
        note = (f"; the search stopped after {self.sigma_draws} σ drawn (the bound with ops on "
                f"TensorFlow's kernels)") if self.capped() else ""
        if self.capped():
            self.stats["sigma_cap"] = self.sigma_cap
        if why.kind == "solver":
            return self.verdict(UNKNOWN, f"{why.reason}; {how}, none shows a difference{note}",
                                tried=compared)
        return self.verdict(NO_COUNTEREXAMPLE, f"no proof ({why.reason}); {how}, none shows "
                                               f"a difference{note}", tried=compared)

    def one_outcome_sigmas(self):
        """The one-outcome comparisons' σ, each with a tag (the probe's
        comparisons are reused by tag): zeros and ones, then the plain σ
        where float state exists, then each variable uninitialized, then each
        edge value everywhere (in the feeds, in the variables, in both), then
        the fallback's random σ."""
        generated = _generated_sigmas(self.p, np.random.default_rng(self.seed))
        yield "zeros", next(generated)
        yield "ones", next(generated)
        if has_float_state(self.p):
            # every variable initialized with ordinary floats, then its feeds
            # times 1e38 (big23: docs/large-graphs.md).  Third and fourth,
            # before the σ below, of which a training step has one per
            # variable and one per edge value: under the bound of 32 σ with
            # TensorFlow's kernels they filled it on keras_mlp_adagrad (12
            # variables: 28 σ compared, the plain σ never reached), whose
            # arithmetic rewrite x / Sqrt(y) -> x * Rsqrt(y) differs in the
            # last bit at 41% of plain values (issue 23)
            yield "plain", _plain_sigma(self.p)
            yield "plain huge", _plain_sigma(self.p, HUGE_FEED_SCALE)
        # (after zeros and ones: each accessed variable uninitialized alone, then
        # all of them, where differences of error values show; the edge σ
        # initialize every variable, and the random σ past them, which leave
        # one uninitialized a quarter of the time, came last under the bound)
        for k, sigma in enumerate(_uninitialized_sigmas(self.p, getattr(self, "flagged", ()))):
            yield f"uninitialized {k}", sigma
        for k, sigma in enumerate(_edge_sigmas(self.p)):
            yield f"edge {k}", sigma
        for k, sigma in enumerate(generated):
            yield f"random {k}", sigma

    def probe(self) -> _Found | None:
        """One run of each program at the probe's σ (PROBE; the rewrite's in
        its canonical order, `refute.canonical_outcome`): a confirmed
        counterexample, or None.  σ at which the two runs agree are
        remembered (`probed_equal`): where the fallback's one-outcome
        comparisons run, or its full comparisons of a race-free pair, they
        are compared in full already.

        The σ of PROBE_TAGS, then, where both programs are race-free
        (`both_race_free`: each has one outcome at every σ) and hold float
        state, the plain σ and the plain σ with huge feeds (PROBE_PLAIN,
        `_plain_sigma`), and NaN in every float feed: where a rewrite
        changes float values only through rounding, or how NaN propagates,
        they show it, and the fallback compares them anyway (the plain σ
        third and fourth among its full comparisons, all three among the
        one-outcome comparisons, the NaN one the 21st or so), after
        the symbolic search, which on a real graph's float training step
        proves nothing (its queries go through MatMul; 2-5 s on the unrolled
        LSTM and GRU, the whole budget under load).  Nothing a verdict says
        rests on the order: a difference is confirmed by the concrete oracle
        (`confirm`) before it is a counterexample."""
        if not PROBE or self.sigma_cap is None or self.p == self.p2:
            return None
        stop = time.monotonic() + PROBE_SHARE * self.timeout
        runs = np.random.default_rng(self.seed + 5)
        order = self.one_outcome_sigmas()
        stats = self.stats.setdefault("probe", {"sigmas": 0})
        t0 = time.monotonic()
        try:
            wanted = list(PROBE_TAGS[:PROBE_SIGMAS])
            if PROBE_PLAIN and has_float_state(self.p) and self.both_race_free():
                # (the plain σ second, as in the one-outcome order)
                wanted.insert(1, "plain")
                if any(self.p.feed_type(f).dtype in FLOAT_DTYPES for f in self.p.feed_names):
                    # NaN in every feed (the variables ones): where a rewrite
                    # changes how NaN propagates, as the default pipeline
                    # does on the Keras MLP steps (a NaN input, a finite
                    # loss), 21 σ into the one-outcome order
                    wanted.append(f"edge {3 * _EDGE_NAN}")
                wanted.append("plain huge")
            one_each = ("plain" in wanted and PROBE_PLAIN_FIRST
                        and len(self.p.nodes) >= PROBE_PLAIN_FIRST_NODES)
            if one_each:
                # (shapes23: the plain σ first on a large graph, the others
                # as before after it; its confirmation has the check's time)
                wanted.remove("plain")
                wanted.insert(0, "plain")
            if PROBE_IN_ORDER or one_each:
                # (the σ compared in the order of `wanted`, not of the
                # one-outcome comparisons, where the plain σ and its huge
                # feeds come third and fourth and NaN the 21st or so: the
                # same σ are compared, none more, so a check that ends
                # `no-counterexample` pays the same; a difference is found
                # sooner where NaN shows it.  Each σ is made when it is
                # reached: one found at ones makes none of the others)
                order = _in_order(order, list(wanted))
            for tag, sigma in order:
                if not wanted or time.monotonic() >= stop:
                    break
                if tag not in wanted:
                    continue
                wanted.remove(tag)
                feeds, init = sigma
                # (at the plain σ both programs are race-free: P's canonical
                # run gives its one outcome; those runs stop at the probe's
                # share, a BudgetExceeded)
                bound = None if tag in PROBE_TAGS else stop
                if one_each and tag == "plain":
                    # (a large graph's runs take seconds: the plain σ's, and
                    # its confirmation, may take the check's time)
                    bound = self.deadline
                ran = time.monotonic()
                original = None
                if bound is None and not (PROBE_RACE_FREE_ORIGINAL and self.original_race_free()):
                    mine = ref.sample_outcomes(self.p, feeds, init, self.semantics,
                                               self.observe, runs, 1, stop)
                    if len(mine) != 1:
                        break    # (a run cut short)
                    ((o1, _),) = mine.items()
                else:
                    # (P's canonical run, remembered across the checks of
                    # this program object: checking/canonical_memo.py.  At
                    # PROBE_TAGS' σ (`bound` None) only where P is
                    # race-free (PROBE_RACE_FREE_ORIGINAL): every run of P
                    # at σ gives its one outcome (`original_outcomes`
                    # argues it), so its canonical run, run to its end as
                    # the random run's first run is, is as good as the
                    # random one above, and the five optimizers' checks of
                    # one original each ran P at these σ;
                    # tests/test_check_probe_race_free_original.py compares
                    # the verdicts with it on and off)
                    o1, run1 = canonical_memo.canonical_outcome(
                        self.p, feeds, init, self.semantics, self.observe, bound)
                    if RACE_FREE_CONFIRM:
                        # (P race-free: that run's outcome is P's whole
                        # outcome set, `original_outcomes`; the confirmation
                        # below reuses it instead of running P again)
                        original = OutcomeSet([{o1: tuple(run1)}], states=len(run1),
                                              seconds=time.monotonic() - ran)
                # (P' in its canonical order: the schedule a counterexample
                # shows needs no minimization, which replays it step by step)
                o2, schedule = ref.canonical_outcome(self.p2, feeds, init, self.semantics,
                                                     self.observe, bound)
                stats["sigmas"] += 1
                if o2 == o1:
                    self.probed_equal.add(tag)
                    continue
                # (the oracle's enumeration of P's outcomes may take the rest
                # of the probe's share, and at least a tenth of a second; a
                # race-free original's confirmation, one run of it, at least
                # twice what the two runs above took: under load the share's
                # rest was less than one run, and the difference found was
                # left to the stages after the search)
                least = 2 * (time.monotonic() - ran) if RACE_FREE_CONFIRM and \
                    self.original_race_free() else 0.1
                seconds = max(0.1, min(self.remaining(), max(least, stop - time.monotonic())))
                if one_each:
                    seconds = max(0.1, self.remaining())
                # (the rewrite's run above, a run of the oracle's own step
                # function, gave o2 on `schedule`: that schedule is the one
                # confirmed, and not replayed, a whole run on a real graph.
                # Minimization moves it to the canonical order afterwards,
                # one replay where the budget leaves time for it)
                found = self.confirm(sigma, list(schedule), seconds, original=original,
                                     outcome=o2)
                if found is not None:
                    # (what a confirmation that replays P' costs: the two
                    # runs above and the original's; minimization takes no
                    # step that would overrun it, minimized())
                    self.confirm_seconds = max(self.confirm_seconds, time.monotonic() - ran)
                if found is not None:
                    stats["found"] = tag
                    return found
                stats["unconfirmed"] = tag
                break    # (P has other outcomes, or its enumeration ran out of time)
        except (fns.CannotRun, BudgetExceeded) as exc:
            stats["stopped"] = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            stats["seconds"] = round(time.monotonic() - t0, 6)
        return None

    def both_race_free(self) -> bool:
        """Whether P and P' are both race-free (structural.race_free): each
        has one outcome at every σ (the argument is `original_outcomes`')."""
        return self.original_race_free() and self.rewritten_race_free()

    def rewritten_race_free(self) -> bool:
        if getattr(self, "_race_free_p2", None) is None:
            self._race_free_p2 = race_free(self.p2)
        return self._race_free_p2

    def batched_difference(self, why: _GiveUp) -> "_Found | int | None":
        """Batched differential testing on numpy (tfsem.backends.batched) in
        the time left: a confirmed counterexample, else the number of
        valuations tried; None when it cannot run (schedule search out of
        budget, no time left, or a backend failure)."""
        seconds = self.remaining()
        if seconds <= 0.2:
            return None
        try:
            from tfsem.backends.batched import differential_test
            result = differential_test(self.p, self.p2, BATCHED_VALUATIONS, seed=self.seed,
                                       backend="numpy", semantics=self.semantics,
                                       observe=self.observe, batch_size=1 << 14,
                                       max_seconds=seconds / 2)
        except BudgetExceeded:
            return None
        except Exception as exc:  # a backend failure must not lose the verdict
            self.stats["batched"] = f"failed: {type(exc).__name__}: {exc}"
            return None
        self.stats["batched"] = {"tried": result.tried, "seconds": round(result.seconds, 3)}
        cx = result.counterexample
        if cx is None:
            return result.tried
        # confirmed by the concrete oracle before it can be reported
        try:
            found = self.concrete_difference((cx.feeds, cx.init))
        except BudgetExceeded:
            found = None
        except fns.CannotRunHere as exc:
            found = self._skipped_here(exc)
        return found if found is not None else result.tried

    def concrete_difference(self, sigma: tuple[dict, dict],
                            seconds: float | None = None) -> _Found | None:
        feeds, init = sigma
        stop = time.monotonic() + (max(0.05, self.remaining()) if seconds is None else seconds)
        original = outcome_set(self.p, feeds, init, self.semantics, self.observe,
                               max_seconds=max(0.05, stop - time.monotonic()))
        rewritten = outcome_set(self.p2, feeds, init, self.semantics, self.observe,
                                max_seconds=max(0.05, stop - time.monotonic()))
        for k, (outcome, schedule) in enumerate(rewritten.items()):
            if k >= 100_000:
                break
            if outcome not in original:
                return _Found(dict(feeds), dict(init), list(schedule), outcome, original)
        return None


def _in_order(order, tags: list[str]):
    """The (tag, σ) of `order` whose tags are `tags`, in the order of `tags`:
    `order` is walked only as far as the next tag needs (the σ passed on
    the way are kept until their turn), and not past its random σ."""
    waiting: dict = {}
    walked = iter(order)
    done = False
    for tag in tags:
        while tag not in waiting and not done:
            try:
                t, sigma = next(walked)
            except StopIteration:
                done = True
                break
            if t.startswith("random"):
                done = True
                break
            if t in tags:
                waiting[t] = sigma
        if tag in waiting:
            yield tag, waiting.pop(tag)


def _differing_parts(demand: "Demand | None", found: _Found) -> list:
    """The parts (outputs, variables) at which `found`'s outcome differs from
    the original's one outcome, smallest cones first, for the demand-driven
    test; none without it."""
    if demand is None or found.projected is not None or found.original.count != 1:
        return []
    # (the first DEMAND_PARTS in the staged order: a MobileNetV2 step's
    # outcome differs in 308 parts, and each cone is a walk of the graph)
    parts = differing_parts(found.outcome, list(found.original))[:DEMAND_PARTS]
    return sorted(parts, key=demand.size)


def _outside(demand: "Demand | None", parts: list, found: _Found) -> list[tuple[int, str]]:
    """σ's tensors that the cones of `parts` (in P and in P') do not read:
    minimize_concrete zeroes them together first."""
    if not parts:
        return []
    feeds, variables = demand.reads(parts)
    return [(0, f) for f in sorted(found.feeds) if f not in feeds] + \
        [(1, x) for x in sorted(found.init) if x not in variables]


def _limit_kind(exc: SymbolicLimit) -> str:
    """"size" when the generic-element engine may do what the element terms cannot."""
    return "size" if isinstance(exc, NeedsGeneric) else "budget"


def _describe_parts(parts: tuple[tuple[str, str], ...]) -> str:
    names = [f"{kind} {name!r}" for kind, name in parts]
    return ", ".join(names) if names else "(nothing)"


def _groups(ours: SymbolicOutcomes, theirs: SymbolicOutcomes) -> list[tuple[list[int], list[int]]]:
    """Components of P and P' joined by a shared observed part (an output or a
    variable): each group is checked on its own."""
    parent: dict[Any, Any] = {}

    def find(a):
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for side, result in (("o", ours), ("r", theirs)):
        for i, comp in enumerate(result.components):
            for part in comp.parts:
                parent[find((side, i))] = find(("part", part))
    groups: dict[Any, tuple[list[int], list[int]]] = {}
    for side, result in (("o", ours), ("r", theirs)):
        for i, comp in enumerate(result.components):
            if comp.parts:
                g = groups.setdefault(find((side, i)), ([], []))
                (g[0] if side == "o" else g[1]).append(i)
    return [g for g in groups.values() if g[1]]


# ---------------------------------------------------------------------------
# Generated σ for the concrete fallback

_INT_SPECIAL = [0, 1, -1, 2, -2, 3, 7, -8, 100, 2**31, 2**32, -(2**31) - 1,
                2**63 - 1, -(2**63), 2**62]
_FLOAT_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.5, float("nan"), float("inf"),
                  float("-inf"), 1e-45, -1e-45, 1.1754944e-38, 3.4028235e38, -3.4028235e38,
                  0.1, 16777216.0, 16777217.0]


def _random_tensor(t: TensorType, rng: np.random.Generator, style: int) -> Tensor:
    size = math.prod(t.shape)
    if t.dtype not in ("int64", "float32"):   # every other dtype (SPEC section 8)
        d = DTYPES[t.dtype]
        vals = (np.zeros(size, d) if style == 0 else np.ones(size, d) if style == 1
                else random_array(t.dtype, size, rng))
        return Tensor(vals.reshape(t.shape), t.dtype)
    if t.dtype == "int64":
        if style == 0:
            vals = np.zeros(size, np.int64)
        elif style == 1:
            vals = np.ones(size, np.int64)
        else:
            pick = rng.integers(0, 3, size)
            special = np.array(_INT_SPECIAL, dtype=np.int64)[rng.integers(0, len(_INT_SPECIAL), size)]
            small = rng.integers(-10, 11, size)
            wide = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size, dtype=np.int64,
                                endpoint=True)
            vals = np.where(pick == 0, special, np.where(pick == 1, small, wide))
        return Tensor(vals.reshape(t.shape), "int64")
    if style == 0:
        vals = np.zeros(size, np.float32)
    elif style == 1:
        vals = np.ones(size, np.float32)
    else:
        pick = rng.integers(0, 3, size)
        special = np.array(_FLOAT_SPECIAL, dtype=np.float32)[rng.integers(0, len(_FLOAT_SPECIAL), size)]
        small = rng.integers(-10, 11, size).astype(np.float32) / np.float32(2)
        wide = (rng.standard_normal(size) * 10.0 ** rng.integers(-5, 6, size)).astype(np.float32)
        vals = np.where(pick == 0, special, np.where(pick == 1, small, wide)).astype(np.float32)
    return Tensor(vals.reshape(t.shape), "float32")


#: seed of the plain σ (`_plain_sigma`): the same σ at every check
PLAIN_SEED = 23
#: the float feeds of the fallback's fourth σ: the plain σ's times this
#: (standard-normal values times 1e38: about a tenth of them between 1.7e38
#: and float32's largest, where doubling overflows, and none infinite: an
#: infinite feed makes NaN of every sum it reaches, in both programs alike,
#: as 3e38 did on the TF1 embedding step)
HUGE_FEED_SCALE = 1e38


def has_float_state(p: Program) -> bool:
    """Whether a variable or feed of `p` holds a float tensor (where the plain
    σ shows what zeros, ones and the random σ do not)."""
    types = [*p.variables.values(), *(p.feed_type(f) for f in p.feed_names)]
    return any(t.dtype in FLOAT_DTYPES for t in types)


def _plain_sigma(p: Program, feed_scale: float = 1.0) -> tuple[dict, dict]:
    """A σ of ordinary values: every variable initialized, floats drawn from a
    standard normal (finite, normal, of moderate size), integers 0..2, bools
    at random.  Its use (issue 23): on a real training step the random σ
    above leave one of its dozens of variables uninitialized almost always
    (each a quarter of the time: 24 variables, all initialized 0.1% of the
    time), or put NaN and infinities into every reduction, so that every
    float value an output or update shows is an error or NaN, whatever the
    rounding; zeros and ones round exactly.  A rewrite that changes float
    values only through rounding (x / 196 -> x * (1/196), a reordered sum)
    shows at this σ at once (benchmarks/grappler.py, docs/large-graphs.md).
    The fallback compares it in full third where both programs are
    race-free (`structural.race_free`), the one-outcome comparisons after
    the edge σ.  It is a σ like any other: it decides nothing by itself, a difference
    found there is a counterexample as at every other σ.

    `feed_scale`: the float feeds times it (the variables as they are).
    With HUGE_FEED_SCALE (1e38) it shows a rewrite that differs only where a value
    overflows: Grappler's constant folding turns `0.03125 * (2 * (p - y))`
    into `0.0625 * (p - y)`, which differs from it only where `2 * (p - y)`
    overflows (the TF1 embedding step of the real-graphs corpus)."""
    rng = np.random.default_rng(PLAIN_SEED)

    def tensor(t: TensorType, scale: float = 1.0) -> Tensor:
        size = math.prod(t.shape)
        if t.dtype in FLOAT_DTYPES:
            with np.errstate(over="ignore"):
                vals = (rng.standard_normal(size) * scale).astype(DTYPES[t.dtype])
        elif t.dtype == "bool":
            vals = rng.integers(0, 2, size).astype(bool)
        else:
            vals = rng.integers(0, 3, size).astype(DTYPES[t.dtype])
        return Tensor(vals.reshape(t.shape), t.dtype)

    feeds = {f: tensor(p.feed_type(f), feed_scale) for f in p.feed_names}
    init: dict[str, Value] = {x: tensor(p.variables[x]) for x in sorted(p.variables)}
    return feeds, init


def _float_sigmas(p: Program) -> list[tuple[str, tuple[dict, dict]]]:
    """The control-flow refutation's float σ (checking/control_flow.py
    REFUTE_FLOAT_FIRST), where `p` holds float state: the plain σ, the plain
    σ with huge feeds (where `p` has feeds), and the largest finite float in
    every float feed, the other feeds and every variable ones (where `p`
    has a float feed; the integer feeds stay ones: a trip count fed at its
    dtype's largest value runs a loop to the iteration bound).  On the real
    corpus's loop graphs the last shows constant folding's `0.25 * (sub * 2)`
    -> `sub * 0.5` (where 2 * sub overflows: its factors are powers of two,
    which round alike elsewhere), which the plain σ and its huge feeds (none
    of the 4 labels past 1.7e38) do not (docs/checking-control-flow.md)."""
    if not has_float_state(p):
        return []
    out = [("plain", _plain_sigma(p))]
    if p.feed_names:
        out.append(("plain huge", _plain_sigma(p, HUGE_FEED_SCALE)))
    floats = [f for f in p.feed_names if p.feed_type(f).dtype in FLOAT_DTYPES]
    if floats:
        feeds = {f: _filled(p.feed_type(f), 0) if f in floats
                 else _random_tensor(p.feed_type(f), None, 1) for f in p.feed_names}
        init = {x: _random_tensor(p.variables[x], None, 1) for x in sorted(p.variables)}
        out.append(("largest float", (feeds, init)))
    return out


def _refute_sigmas(p: Program, rng: np.random.Generator):
    """σ for the refutation stage: σ of small values (-2..2, halves for
    float32), at which more runs coincide and the search of P merges more
    states, alternating with random ones as the fallback draws them; a
    variable starts uninitialized a quarter of the time."""
    wide = _generated_sigmas(p, rng, first_style=2)
    k = 0
    while True:
        if k % 2 == 1:
            yield next(wide)
        else:
            feeds = {f: _small_tensor(p.feed_type(f), rng) for f in p.feed_names}
            init: dict[str, Value] = {x: Error(UNINITIALIZED) if rng.random() < 0.25
                                      else _small_tensor(p.variables[x], rng)
                                      for x in sorted(p.variables)}
            yield feeds, init
        k += 1


#: the values σ takes everywhere in `_edge_sigmas`, per kind of dtype
_EDGE_FLOATS = [3.4028235e38, -3.4028235e38, float("inf"), float("-inf"), float("nan"),
                1e-45, -0.0, 1.1754944e-38]
#: NaN's place among them (`_edge_sigmas`' tag "edge 3k": NaN in every feed)
_EDGE_NAN = 4


def _filled(t: TensorType, k: int) -> Tensor | None:
    """A tensor of type t holding its dtype's k-th edge value everywhere
    (None past the last one)."""
    d = DTYPES[t.dtype]
    if t.dtype in FLOAT_DTYPES:
        if k >= len(_EDGE_FLOATS):
            return None
        # (ml_dtypes' finfo knows bfloat16, numpy's does not: bfloat16 took
        # float32's max, which rounds to inf, and 1e-45, which rounds to 0,
        # neither its max nor a subnormal)
        info = ml_dtypes.finfo(d)
        v = _EDGE_FLOATS[k]
        if info is not None and abs(v) == 3.4028235e38:
            v = float(info.max) if v > 0 else -float(info.max)
        if info is not None and v == 1.1754944e-38:
            v = float(info.tiny)
        if info is not None and v == 1e-45:
            v = float(info.smallest_subnormal)
        with np.errstate(all="ignore"):
            arr = np.full(t.shape, v, dtype=np.float64).astype(d)
        return Tensor(arr, t.dtype)
    if t.dtype == "bool":
        return Tensor(np.full(t.shape, k % 2 == 0), "bool") if k < 2 else None
    info = np.iinfo(d)
    vals = [info.max, info.min, -1 if info.min < 0 else info.max // 2]
    return Tensor(np.full(t.shape, vals[k], dtype=d), t.dtype) if k < len(vals) else None


#: at most this many variables are tried uninitialized alone by
#: `_uninitialized_sigmas` (then all of them together)
_UNINITIALIZED_ALONE = 4


def _uninitialized_sigmas(p: Program, flagged):
    """σ of ones with one accessed variable uninitialized (the first
    _UNINITIALIZED_ALONE of `flagged`), then with every one of them
    uninitialized; none where no variable is flagged."""
    flagged = [x for x in flagged if x in p.variables]
    if not flagged:
        return
    feeds = {f: _random_tensor(p.feed_type(f), None, 1) for f in p.feed_names}
    ones_init = {x: _random_tensor(p.variables[x], None, 1) for x in sorted(p.variables)}
    for x in flagged[:_UNINITIALIZED_ALONE]:
        yield dict(feeds), {**ones_init, x: Error(UNINITIALIZED)}
    if len(flagged) > 1:
        yield dict(feeds), {**ones_init, **{x: Error(UNINITIALIZED) for x in flagged}}


def _edge_sigmas(p: Program):
    """σ with one edge value everywhere: in every feed (the variables all
    ones), in every variable (the feeds all ones), and in both; a dtype with
    fewer edge values than the floats' takes ones past its last."""
    ones = {f: _random_tensor(p.feed_type(f), None, 1) for f in p.feed_names}
    ones_init = {x: _random_tensor(p.variables[x], None, 1) for x in sorted(p.variables)}
    for k in range(len(_EDGE_FLOATS)):
        feeds = {f: _filled(p.feed_type(f), k) or ones[f] for f in p.feed_names}
        init = {x: _filled(p.variables[x], k) or ones_init[x] for x in sorted(p.variables)}
        yield feeds, dict(ones_init)
        yield dict(ones), init
        yield feeds, init


def _small_tensor(t: TensorType, rng: np.random.Generator) -> Tensor:
    vals = rng.integers(-2, 3, math.prod(t.shape))
    if t.dtype == "bool":
        return Tensor((vals > 0).reshape(t.shape), "bool")
    if t.dtype not in ("int64", "float32"):
        d = DTYPES[t.dtype]
        with np.errstate(all="ignore"):
            vals = (vals.astype(np.float64) / 2).astype(d) if t.dtype in FLOAT_DTYPES else vals.astype(d)
        return Tensor(vals.reshape(t.shape), t.dtype)
    if t.dtype == "int64":
        return Tensor(vals.astype(np.int64).reshape(t.shape), "int64")
    return Tensor((vals.astype(np.float32) / np.float32(2)).reshape(t.shape), "float32")


def _generated_sigmas(p: Program, rng: np.random.Generator, first_style: int = 0,
                      plain: bool = False):
    """σ for the fallback: zeros, ones, then random values mixing special ones
    (extremes, NaN, infinities, signed zeros) with small and wide ones; a
    variable starts uninitialized a quarter of the time.  `first_style` 2
    starts with the random ones.  `plain` (with `first_style` 0): the plain
    σ third (`_plain_sigma`), and where `p` has feeds the same σ with huge
    float feeds fourth; the random σ after them are those drawn without
    them (they draw nothing from `rng`)."""
    style = first_style
    if plain and style == 0:
        yield next(_generated_sigmas(p, rng))      # zeros (nothing drawn from rng)
        yield next(_generated_sigmas(p, rng, 1))   # ones
        yield _plain_sigma(p)
        if p.feed_names:
            yield _plain_sigma(p, feed_scale=HUGE_FEED_SCALE)
        style = 2
    while True:
        feeds = {f: _random_tensor(p.feed_type(f), rng, min(style, 2)) for f in p.feed_names}
        init: dict[str, Value] = {}
        for x in sorted(p.variables):
            if style >= 2 and rng.random() < 0.25:
                init[x] = Error(UNINITIALIZED)
            else:
                init[x] = _random_tensor(p.variables[x], rng, min(style, 2))
        yield feeds, init
        style += 1


__all__ = ["DEFAULT_TIMEOUT", "check_case", "check_rewrite", "interface_problems"]
