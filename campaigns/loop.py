"""The fuzzing loop: Hypothesis draws a program and σ, the pass rewrites the
program (in a sandbox, with a time limit), the result is checked for validity
and then for refinement, and every kind of finding raises its own exception so
that Hypothesis shrinks each one to a minimal program.

One :class:`FuzzLoop` fuzzes one pass in one (semantics, observe) cell for a
given time, as a sequence of *rounds*.  A round is one Hypothesis run: it
generates until its share of time is spent, shrinks what it found, and hands
the minimized findings to `on_finding` at once, so that a long campaign
records findings as it goes rather than at its end.

Time.  Hypothesis has no wall-clock budget, so the test function keeps it.
When a round's time is up (or the loop is asked to stop) and it has found
nothing, the next example raises a private BaseException, which Hypothesis
does not treat as a test failure: the run ends at once (with an error about
inconsistent data generation, or the exception itself, either of which the
loop ignores after it has ended the round on purpose).  Once a round has
found something, Hypothesis goes on generating a little and then shrinks
until a *hard* deadline (`shrink_seconds` after the first failure, and at
most the round's end plus a grace); the round ends at the first example
after it, whatever Hypothesis was doing.

Shrinking.  Every evaluated example is memoized by its program and σ.  For
each distinct failure (kind, and which part differs or which error a crash
raised) the round takes the smallest program found failing that way (what
Hypothesis's shrinker reached, even when cut short), and the structural
reducer (reduce.py) finishes the job on the program itself for up to
`reduce_seconds`: Hypothesis shrinks the generator's choices, hundreds per
program, which is thorough but slow; deleting nodes directly is fast.
Hypothesis's final replay of its minimal example (and any repeat) reads the
memo instead of running the pass again, so a pass that only sometimes times
out cannot make the run flaky.

The Hypothesis example database given to the loop is keyed by pass and cell
(not by this file's source code, which is Hypothesis's default), so failures
saved on one night are replayed first on the next, by any tfsem version.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Mapping

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.errors import FlakyStrategyDefinition, Unsatisfiable

from tfsem.generators.builder import build_inputs
from tfsem.generators.draw import RandomDraw
from tfsem.generators.mutate import mutate
from tfsem.oracle.jsonio import decode_inputs, program_from_json, program_to_json
from tfsem.oracle.program import Program, ProgramError
from tfsem.oracle.values import Value, value_to_json

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded

from .checks import (CONCRETE_MAX_STATES, MAX_LISTED_OUTCOMES, MAX_ORIGINAL_OUTCOMES, CheckPlan,
                     concrete_check, interface_problems)
from .findings import CRASH, INVALID, TIMEOUT, UNSOUND, FindingRecord, findings_in, raise_finding
from .reduce import reduce_finding
from .sandbox import BAD_RESULT, DEFAULT_PASS_TIMEOUT, PassSandbox, RewriteResult
from .steer import Steering, change_core, change_shape, change_site
from .targets import Target, resolve_pass

from . import DEFAULT_MAX_NODES  # noqa: E402 - one default for every command
DEFAULT_CHECK_TIMEOUT = 5.0
#: The final check of a shrunk finding (LoopConfig.check_timeout, at most
#: this): the finding is a confirmed counterexample already, the final
#: verdict adds a minimized σ, the key steps and the backends' replay.  Its
#: solver spends most of any budget on 64-bit products and maxima it cannot
#: decide (3.7 s of 5 on a 4-node program whose verdict, σ and key steps came
#: out the same with 1 s); when it runs out, the finding keeps its verdict.
FINAL_CHECK_SECONDS = 2.0
#: A shrunk finding of more nodes than this gets a re-search among smaller
#: programs (FuzzLoop._research) for at most this many seconds.
SMALL_FINDING, RESEARCH_SECONDS = 5, 2.0
#: the key of a finding's detail that keeps the generated program when the
#: finding's `original` is what a TensorFlow target made of it (Target.prepare)
GIVEN = "program_given"

Generator = Callable[[int, str], st.SearchStrategy]


@dataclass
class LoopConfig:
    """What one loop fuzzes and how; plain data, so that worker processes and
    Dask workers can rebuild the loop from it."""

    pass_spec: str
    semantics: str = "atomic"
    observe: str = "outputs+state"
    max_nodes: int = DEFAULT_MAX_NODES
    pass_timeout: float = DEFAULT_PASS_TIMEOUT
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    #: "auto", "concrete", "symbolic" or "module:attribute" (see checks.py)
    checker: str = "auto"
    #: None (tfsem.generators) or "module:attribute" naming a function
    #: (max_nodes, observe) -> strategy of (program, feeds, init)
    generator: str | None = None
    seed: int | None = None
    round_examples: int = 500
    round_seconds: float = 20.0
    #: after a round's first failure, Hypothesis shrinks for at most this long
    shrink_seconds: float = 2.0
    #: then the structural reducer (reduce.py) works on each finding this long
    reduce_seconds: float = 5.0
    #: a runtime target (`--target xla`) runs each program (and each
    #: shrinking candidate) this many times
    runtime_runs: int = 20
    #: steer the default generator toward what the pass changes (steer.py)
    steer: bool = True

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class LoopStats:
    """Counters of a loop; `programs` counts programs whose rewrite was run
    and judged (replays of memoized examples are not counted)."""

    programs: int = 0
    seconds: float = 0.0
    sound: int = 0
    no_counterexample: int = 0
    unknown: int = 0
    identical: int = 0
    findings: int = 0
    checker_errors: int = 0
    generator_errors: int = 0
    rounds: int = 0
    pass_seconds: float = 0.0
    check_seconds: float = 0.0
    #: distinct change shapes (steer.change_shape) of the programs the pass changed
    shapes: int = 0
    last_error: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    def minus(self, other: "LoopStats") -> dict:
        """The counters' increase since `other` (for incremental reporting)."""
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            if isinstance(v, (int, float)):
                out[k] = v - getattr(other, k)
        out["last_error"] = self.last_error
        return out

    def copy(self) -> "LoopStats":
        return LoopStats(**asdict(self))


# ---------------------------------------------------------------------------
# Generators


def _import(spec: str) -> Any:
    import importlib
    module_name, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def default_generator(max_nodes: int, observe: str) -> st.SearchStrategy:
    """tfsem's own generators: programs(max_nodes) and inputs_for(program)."""
    from tfsem.generators.strategies import inputs_for, programs

    progs = programs(max_nodes=max_nodes, observe_state=(observe != "outputs"))

    @st.composite
    def program_and_sigma(draw):
        p = draw(progs)
        feeds, init = draw(inputs_for(p))
        return p, feeds, init

    return program_and_sigma()


def resolve_generator(spec: str | Generator | None) -> Generator:
    if spec is None:
        return default_generator
    if callable(spec):
        return spec
    return _import(spec)


def _needs_uninitialized(verdict: dict, program: Program) -> bool:
    """Whether an unsound verdict's counterexample starts a variable of
    `program` as an error value (uninitialized): given one, or not given a
    value at all (σ leaves it uninitialized; the checkers' counterexamples
    omit such a variable)."""
    init = (verdict.get("counterexample") or {}).get("init") or {}
    return (any(isinstance(v, dict) and "error" in v for v in init.values())
            or any(x not in init for x in program.variables))


def _initialized(program: Program, init: Mapping[str, Value]) -> dict[str, Value]:
    """`init` with every variable of `program` initialized: one σ leaves
    uninitialized (or gives an error value) starts at zeros of its type."""
    import numpy as np

    from tfsem.oracle.values import Error, Tensor
    out: dict[str, Value] = {}
    for x, t in program.variables.items():
        v = init.get(x)
        if v is None or isinstance(v, Error):
            v = Tensor(np.zeros(tuple(t.shape or ()), dtype=np.dtype(t.dtype)))
        out[x] = v
    return out


def _sigma_json(values: Mapping[str, Value]) -> dict:
    return {k: value_to_json(v) for k, v in sorted(values.items())}


# ---------------------------------------------------------------------------
# The loop


class _RoundOver(BaseException):
    """Ends a Hypothesis run from inside the test function (Hypothesis lets
    exceptions that are not Exceptions through, like KeyboardInterrupt)."""


def _origin(record: FindingRecord) -> tuple:
    """What tells failures apart, as Hypothesis's raise sites do."""
    return (record.kind, tuple(record.differs or {}) if record.kind == UNSOUND else (),
            record.detail.get("error_type", "") if record.kind == CRASH else "")


def _reduce_origin(record: FindingRecord) -> tuple:
    """What a smaller program must still show for the reducer to keep it:
    the same kind (and for a crash the same error), but for an unsound
    rewrite any differing part.  Which part a check names first (an output
    or a variable) is happenstance where both differ, and holding to it
    stopped shrinking at 6 or 7 nodes where 4 show the same bug."""
    return (record.kind, record.detail.get("error_type", "") if record.kind == CRASH else "")


def _smallest_per_origin(failures: list[tuple]) -> list[tuple]:
    """(record, program, feeds, init) tuples: the smallest per origin."""
    best: dict[tuple, tuple] = {}
    sizes: dict[tuple, tuple] = {}
    for item in failures:
        r = item[0]
        key = _origin(r)
        size = (r.size, len(json.dumps(r.original, sort_keys=True)))
        if key not in best or size < sizes[key]:
            best[key], sizes[key] = item, size
    return list(best.values())


#: How long past its hard deadline a round may stay inside Hypothesis or the
#: generator before the watchdog ends it.
WATCHDOG_SLACK = 2.0


@contextlib.contextmanager
def _watchdog(rnd: "_Round") -> Iterator[None]:
    """End the round from a timer signal when it overstays its hard deadline
    inside Hypothesis or the generator, where the test function's own checks
    cannot run (a strategy can make Hypothesis's shrinker spend minutes on
    one draw).  Main thread on POSIX only (signals); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_timer(signum: int, frame: Any) -> None:
        if not rnd.judging and time.monotonic() > rnd.hard_deadline + WATCHDOG_SLACK:
            rnd.over = True
            raise _RoundOver

    previous = signal.signal(signal.SIGALRM, on_timer)
    signal.setitimer(signal.ITIMER_REAL, 0.5, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)


class _Round:
    def __init__(self, gen_deadline: float, grace: float):
        self.gen_deadline = gen_deadline
        self.grace = grace
        self.hard_deadline = gen_deadline + grace
        self.failed = False
        self.over = False
        #: True while a program is judged (the pass and the checker have time
        #: limits of their own; the watchdog leaves them alone)
        self.judging = False
        self.memo: dict[str, FindingRecord | None] = {}
        #: memo key -> (record, program, feeds, init) of each failing example
        self.failures: dict[str, tuple] = {}


class FuzzLoop:
    """Fuzz one pass in one cell.  Everything it uses can be injected:

    - `target`: the resolved pass (default: resolved from `config.pass_spec`);
    - `runner`: has `rewrite(program_json) -> RewriteResult` and `close()`
      (default: a :class:`PassSandbox` child process);
    - `checker`: `(original, rewritten, feeds, init, semantics, observe,
      timeout) -> verdict JSON` (default: :class:`CheckPlan` of
      `config.checker`);
    - `generator`: `(max_nodes, observe) -> strategy of (program, feeds, init)`;
    - `database`: a Hypothesis example database (None: nothing is saved);
    - `on_finding(record)`, `on_stats(delta)`: where results go, as they come;
    - `should_stop()`: polled; True ends the loop early (findings in hand
      are still shrunk briefly and reported);
    - `steering`: the steered generator to use (steer.py; default: a new
      one, when the loop uses tfsem's own generator).
    """

    def __init__(self, config: LoopConfig, *, target: Target | None = None, runner: Any = None,
                 checker: Callable[..., dict] | None = None, generator: Generator | None = None,
                 database: ExampleDatabase | None = None,
                 on_finding: Callable[[FindingRecord], None] | None = None,
                 on_stats: Callable[[dict], None] | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 stats_interval: float = 1.0, steering: Steering | None = None):
        self.config = config
        self.target = target or resolve_pass(config.pass_spec)
        self._own_runner = runner is None
        if self.target.kind == "runtime" and (runner is None or isinstance(runner, PassSandbox)):
            # a runtime target runs programs in this process (no rewrite to sandbox);
            # a sandbox handed in for it was never started
            if runner is not None:
                runner.close()
            runner = self.target.fn.runner(config.observe)
            self._own_runner = True
        self.runner = runner or PassSandbox(config.pass_spec, timeout=config.pass_timeout)
        #: the generated program behind the one judged, when a target
        #: judges another (Target.prepare); kept in a finding's detail
        self._given: dict | None = None
        self.checker = checker or CheckPlan(config.checker, concrete_seconds=min(2.0, config.check_timeout))
        #: the steered generator (steer.py), for tfsem's own generator
        self.steering: Steering | None = None
        if generator is None and config.generator is None:
            # a pass may name the generator of the programs it acts on (a
            # control-flow pass: generators/control_flow.py)
            own = getattr(self.target.fn, "generator", None)
            if isinstance(own, str) and own:
                generator = resolve_generator(own)
        if config.steer and generator is None and config.generator is None:
            self.steering = steering or Steering(config.max_nodes, config.observe)
            self.strategy = self.steering.strategy()
        else:
            gen = resolve_generator(generator if generator is not None else config.generator)
            self.strategy = gen(config.max_nodes, config.observe)
        self._shapes: set[tuple[str, ...]] = set()
        #: shapes first seen since the last statistics report (its `new_shapes`)
        self._unreported_shapes: list[tuple[str, ...]] = []
        self.database = database
        self.on_finding = on_finding or (lambda r: None)
        self.on_stats = on_stats or (lambda d: None)
        self.should_stop = should_stop or (lambda: False)
        self.stats_interval = stats_interval
        self.stats = LoopStats()
        self._reported = LoopStats()
        self._last_report = time.monotonic()
        self.claim = self.target.claim((config.semantics, config.observe))
        #: seconds from the start of run() to the first failing example (before
        #: shrinking), and to the first finding reported (after it)
        self.first_failure_after: float | None = None
        self.first_report_after: float | None = None
        self._started = time.monotonic()

    # -- one example ----------------------------------------------------------

    def _record(self, kind: str, program_json: dict, feeds: Mapping[str, Value],
                init: Mapping[str, Value], **kw: Any) -> FindingRecord:
        if self._given is not None:
            kw["detail"] = {**kw.get("detail", {}), GIVEN: self._given}
        return FindingRecord(pass_name=self.target.name, pass_spec=self.config.pass_spec, kind=kind,
                             semantics=self.config.semantics, observe=self.config.observe,
                             original=program_json, feeds=_sigma_json(feeds), init=_sigma_json(init),
                             claim=self.claim, **kw)

    def evaluate(self, program: Program, feeds: Mapping[str, Value],
                 init: Mapping[str, Value]) -> FindingRecord | None:
        """Run the pass on one program and judge the result: a finding, or
        None (sound, no counterexample, unknown, identical)."""
        cfg = self.config
        self._given = None
        if self.target.kind == "runtime":
            return self._evaluate_runtime(program, feeds, init)
        given = program_to_json(program)
        if self.target.prepare is not None:
            # judged against what the target sees (Grappler: the export imported
            # back, in the GraphDef's names), the pass run on the program itself
            try:
                judged = self.target.prepare(program)
            except Exception as exc:  # noqa: BLE001 - not the pass's finding
                judged = None
                self.stats.last_error = f"prepare: {type(exc).__name__}: {exc}"[:500]
            if judged is None:
                self.stats.identical += 1   # nothing the target can act on
                return None
            self._given = given
            program = judged
        pj = program_to_json(program)
        res: RewriteResult = self.runner.rewrite(given)
        self.stats.pass_seconds += res.seconds
        if res.status == TIMEOUT:
            return self._record(TIMEOUT, pj, feeds, init, message=res.message,
                                detail={"timeout": cfg.pass_timeout})
        if res.status == CRASH:
            return self._record(CRASH, pj, feeds, init, message=f"{res.error_type}: {res.message}",
                                detail={"error_type": res.error_type, "traceback": res.traceback})
        if res.status == BAD_RESULT or res.program is None:
            return self._record(INVALID, pj, feeds, init, message=res.message or "no program returned",
                                detail={"violations": [res.message]})
        try:
            rewritten = program_from_json(res.program, where="rewritten")
        except ProgramError as exc:
            violations = [str(v) for v in exc.violations]
            return self._record(INVALID, pj, feeds, init, rewritten=res.program,
                                message=f"malformed program: {violations[0]}",
                                detail={"violations": violations},
                                verdict={"verdict": "invalid", "reason": "; ".join(violations)})
        problems = interface_problems(program, rewritten)
        if problems:
            return self._record(INVALID, pj, feeds, init, rewritten=res.program,
                                message=f"interface changed: {problems[0]}", detail={"violations": problems},
                                verdict={"verdict": "invalid", "reason": "; ".join(problems)})
        if rewritten == program:
            self.stats.identical += 1
            self._note_change(program, None)
            return None
        self._note_change(program, rewritten)
        started = time.monotonic()
        try:
            verdict = self.checker(program, rewritten, feeds, init, cfg.semantics, cfg.observe,
                                   cfg.check_timeout)
        except Exception as exc:  # a checker bug is not the pass's finding
            self.stats.checker_errors += 1
            self.stats.last_error = f"checker: {type(exc).__name__}: {exc}"[:500]
            return None
        finally:
            self.stats.check_seconds += time.monotonic() - started
        if verdict.get("verdict") == "unsound" and self.target.initialized_only \
                and _needs_uninitialized(verdict, program):
            # not a counterexample against this target's claims (Target.initialized_only):
            # look at the drawn σ with every variable initialized instead
            init = _initialized(program, init)
            started = time.monotonic()
            try:
                verdict = concrete_check(program, rewritten, feeds, init, cfg.semantics, cfg.observe,
                                         max_seconds=min(2.0, cfg.check_timeout))
            finally:
                self.stats.check_seconds += time.monotonic() - started
        v = verdict.get("verdict")
        if v == "invalid":
            return self._record(INVALID, pj, feeds, init, rewritten=res.program, verdict=verdict,
                                message=f"invalid: {verdict.get('reason', '')}",
                                detail={"violations": [verdict.get("reason", "")]})
        if v == "unsound":
            cex = verdict.get("counterexample") or {}
            differs = verdict.get("differs") or {}
            part, name = next(iter(differs.items()), ("?", "?"))
            what = f"output {name!r}" if part == "output" else f"final value of variable {name!r}"
            rec = self._record(UNSOUND, pj, feeds, init, rewritten=res.program, verdict=verdict,
                               message=f"{what} differs ({cfg.semantics}, {cfg.observe})",
                               schedule=cex.get("schedule"))
            if "feeds" in cex:
                rec.feeds = cex["feeds"]
            if "init" in cex:
                rec.init = cex["init"]
            return rec
        if v == "sound":
            self.stats.sound += 1
        elif v == "no-counterexample":
            self.stats.no_counterexample += 1
        else:
            self.stats.unknown += 1
        return None

    def _note_change(self, program: Program, rewritten: Program | None) -> None:
        """Count the change's shape, and tell the steering what the pass did."""
        shape = change_shape(program, rewritten) if rewritten is not None else ()
        if shape and shape not in self._shapes:
            self._shapes.add(shape)
            self._unreported_shapes.append(shape)
            self.stats.shapes = len(self._shapes)
        if self.steering is not None:
            self.steering.observe(program, shape,
                                  change_site(program, rewritten) if shape else frozenset())
            if self.steering.wants_core(shape) and self.target.prepare is None:
                started = time.monotonic()
                core = change_core(program, shape, self._rewrite_quietly)
                rewritten_core = self._rewrite_quietly(core) if core is not program else rewritten
                if rewritten_core is not None:
                    self.steering.add_core(shape, core, change_site(core, rewritten_core),
                                           seconds=time.monotonic() - started)

    def _rewrite_quietly(self, program: Program) -> Program | None:
        """The pass's result on `program`, or None when it fails (a crash, a
        timeout, a malformed result: the fuzzing finds those on its own)."""
        try:
            res = self.runner.rewrite(program_to_json(program))
            if res.status != "ok" or res.program is None:
                return None
            return program_from_json(res.program, where="rewritten")
        except Exception:  # noqa: BLE001 - not a finding: the loop judges the pass itself
            return None

    def _evaluate_runtime(self, program: Program, feeds: Mapping[str, Value],
                          init: Mapping[str, Value]) -> FindingRecord | None:
        """A runtime target (Target.kind "runtime", `--target xla`): run the
        program `runtime_runs` times, and compare every outcome observed with
        the oracle's outcome set at the σ used, in this loop's cell.  An
        outcome outside it is an `unsound` finding that stores σ, the
        outcome, how many runs gave it and the size of the allowed set; one
        that no run shows again is no finding (timing decides, so a shrunk
        candidate reproduces only when its own runs show it)."""
        cfg = self.config
        res = self.runner.execute(program, feeds, init, cfg.runtime_runs)
        self.stats.pass_seconds += res.seconds
        if res.status == "skipped":
            self.stats.identical += 1   # nothing the target can run as tfsem means it
            return None
        if res.status != "ok":
            self.stats.unknown += 1
            self.stats.last_error = f"{self.target.name}: {res.message}"[:500]
            return None
        judged, feeds, init = res.program, res.feeds, res.init
        started = time.monotonic()
        try:
            allowed = outcome_set(judged, feeds, init, cfg.semantics, cfg.observe,
                                  CONCRETE_MAX_STATES, min(2.0, cfg.check_timeout))
        except BudgetExceeded:
            self.stats.unknown += 1
            return None
        except Exception as exc:  # noqa: BLE001 - an oracle bug is not the target's finding
            self.stats.checker_errors += 1
            self.stats.last_error = f"oracle: {type(exc).__name__}: {exc}"[:500]
            return None
        finally:
            self.stats.check_seconds += time.monotonic() - started
        observed = res.observed.items()
        outside = [(o, n) for o, n in observed if o not in allowed]
        if not outside:
            self.stats.no_counterexample += 1
            return None
        outcome, times = max(outside, key=lambda item: item[1])
        originals = [o for o, _ in allowed.items()][:MAX_LISTED_OUTCOMES]
        differs = (outcome.first_difference([o for o, _ in allowed.items()])
                   if allowed.count <= MAX_ORIGINAL_OUTCOMES else None) or {}
        part, name = next(iter(differs.items()), ("?", "?"))
        what = f"output {name!r}" if part == "output" else f"final value of variable {name!r}"
        runtime = {"target": self.target.name, "runs": res.runs, "outcome": outcome.to_json(),
                   "feeds": _sigma_json(feeds), "init": _sigma_json(init),
                   "times": times, "allowed_count": allowed.count,
                   "allowed": [o.to_json() for o in originals],
                   "observed": [{"outcome": o.to_json(), "runs": n, "allowed": o in allowed}
                                for o, n in observed]}
        verdict = {"verdict": "unsound", "differs": differs, "semantics": cfg.semantics,
                   "observe": cfg.observe, "runtime": runtime,
                   "reason": (f"{self.target.name} ran the program {res.runs} times from σ; "
                              f"{times} of the runs gave an outcome outside the {allowed.count} "
                              f"outcomes of the {cfg.semantics} semantics")}
        self._given = program_to_json(program)
        return self._record(UNSOUND, program_to_json(judged), feeds, init, verdict=verdict,
                            message=(f"{what} differs in {times} of {res.runs} runs "
                                     f"({cfg.semantics}, {cfg.observe})"),
                            detail={"runs": res.runs, "times": times,
                                    "allowed_count": allowed.count})

    def finalize(self, record: FindingRecord) -> FindingRecord:
        """The checker's full verdict (`_finalize`), then the target's
        evidence (Target.evidence: Grappler's GraphDefs, XLA's clusters) in
        the finding's detail and verdict."""
        record = self._finalize(record)
        evidence = self.target.evidence
        if evidence is not None:
            try:
                extra = evidence(record) or {}
            except Exception as exc:  # noqa: BLE001 - evidence must not lose the finding
                extra = {"evidence_error": f"{type(exc).__name__}: {exc}"[:500]}
            record.detail.update(extra)
            if isinstance(record.verdict, dict):
                record.verdict.update(extra)
        return record

    def _finalize(self, record: FindingRecord) -> FindingRecord:
        """Give a minimized unsound finding the checker's full verdict (a
        minimized σ, the steps that matter, confirmation on array backends).

        The evidence found while fuzzing stays when the full check does not
        say `unsound` (the concrete oracle's counterexample is one by
        definition); the disagreement is kept in `detail`."""
        final = getattr(self.checker, "final_verdict", None)
        if record.kind != UNSOUND or final is None or record.rewritten is None:
            return record
        cfg = self.config
        try:
            original = program_from_json(record.original)
            rewritten = program_from_json(record.rewritten)
            verdict = final(original, rewritten, cfg.semantics, cfg.observe,
                            min(cfg.check_timeout, FINAL_CHECK_SECONDS))
        except Exception as exc:  # a checker bug must not lose the finding
            record.detail["final_check_error"] = f"{type(exc).__name__}: {exc}"[:500]
            return record
        if verdict is None:
            return record
        if verdict.get("verdict") != "unsound":
            record.detail["final_check"] = {k: verdict.get(k) for k in ("verdict", "reason")}
            return record
        if self.target.initialized_only and _needs_uninitialized(verdict, original):
            # the minimized counterexample needs an uninitialized variable, which
            # this target's claims do not speak of: keep the one found fuzzing
            record.detail["final_check"] = {"verdict": "unsound", "reason": "the minimized "
                                            "counterexample needs an uninitialized variable; the "
                                            "one found while fuzzing is kept"}
            return record
        cex = verdict.get("counterexample") or {}
        differs = verdict.get("differs") or {}
        part, name = next(iter(differs.items()), ("?", "?"))
        what = f"output {name!r}" if part == "output" else f"final value of variable {name!r}"
        record.verdict = verdict
        record.message = f"{what} differs ({cfg.semantics}, {cfg.observe})"
        record.feeds = cex.get("feeds", record.feeds)
        record.init = cex.get("init", record.init)
        record.schedule = cex.get("schedule", record.schedule)
        return record

    # -- rounds -----------------------------------------------------------------

    def _maybe_report_stats(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_report >= self.stats_interval:
            delta = self.stats.minus(self._reported)
            if self.target.kind != "runtime":
                # the shapes themselves, so that a campaign counts a shape
                # once over the slices of a cell (store.py, pass_shapes)
                delta["new_shapes"] = [list(x) for x in self._unreported_shapes]
                self._unreported_shapes = []
            self._reported = self.stats.copy()
            self._last_report = now
            self.on_stats(delta)

    def _database_key(self) -> bytes:
        cfg = self.config
        return f"tfsem.fuzz/1:{cfg.pass_spec}:{cfg.semantics}/{cfg.observe}".encode()

    def _run_round(self, rnd: _Round, round_seed: int | None, reuse: bool) -> list[FindingRecord]:
        strategy = self.strategy
        if self.steering is not None:
            self.steering.begin_round()

        def body(data: st.DataObject) -> None:
            now = time.monotonic()
            # Before drawing: past the hard deadline even examples already
            # judged end the round (Hypothesis's shrinker would otherwise go
            # on replaying memoized ones for minutes); the round's result
            # comes from the memo, not from Hypothesis's final replay.
            if (now > rnd.hard_deadline or self.should_stop()
                    or (not rnd.failed and now > rnd.gen_deadline)):
                rnd.over = True
                raise _RoundOver
            program, feeds, init = data.draw(strategy, label="program and σ")
            key = json.dumps([program_to_json(program), _sigma_json(feeds), _sigma_json(init)],
                             sort_keys=True)
            if key in rnd.memo:
                outcome = rnd.memo[key]
            else:
                rnd.judging = True
                try:
                    outcome = self.evaluate(program, feeds, init)
                finally:
                    rnd.judging = False
                if self.steering is not None:
                    self.steering.judged()   # what it cost (steer.py: cheap parents, arms per second)
                rnd.memo[key] = outcome
                self.stats.programs += 1
                self._maybe_report_stats()
                if outcome is not None:
                    rnd.failures[key] = (outcome, program, feeds, init)
                    if not rnd.failed:  # Hypothesis's share of shrinking starts now
                        if self.steering is not None:
                            self.steering.freeze()   # replays must draw the same programs
                        rnd.hard_deadline = min(rnd.hard_deadline,
                                                time.monotonic() + self._shrink_seconds())
            if outcome is not None:
                rnd.failed = True
                if self.first_failure_after is None:
                    self.first_failure_after = time.monotonic() - self._started
                raise_finding(outcome)

        phases = [Phase.explicit, Phase.generate, Phase.target, Phase.shrink]
        if reuse and self.database is not None:
            phases.insert(1, Phase.reuse)
        test = given(st.data())(body)
        if round_seed is not None:
            # before settings: @seed alone would switch the example database off
            test = seed(round_seed)(test)
        test = settings(database=self.database, max_examples=self.config.round_examples,
                        deadline=None, phases=phases, suppress_health_check=list(HealthCheck),
                        report_multiple_bugs=True, verbosity=Verbosity.quiet, print_blob=False,
                        derandomize=False)(test)
        test._hypothesis_internal_database_key = self._database_key()  # type: ignore[attr-defined]
        try:
            with _watchdog(rnd):
                test()
        except (_RoundOver, Unsatisfiable):
            pass  # time is up (Unsatisfiable: before any example was judged)
        except (KeyboardInterrupt, SystemExit):
            raise
        except FlakyStrategyDefinition:
            # Steering (steer.py) learns while the round runs, so Hypothesis,
            # replaying an earlier choice sequence, may see it draw another
            # program: the round ends there (what it judged is in the memo)
            # and the next round starts from what was learnt.  Without
            # steering the strategy is fixed, and this is a generator error.
            if self.steering is None and not rnd.over:
                self.stats.generator_errors += 1
                self.stats.last_error = "FlakyStrategyDefinition: the generator is not deterministic"
        except BaseException as exc:  # noqa: BLE001 - the findings are in the memo
            if not rnd.over and not findings_in(exc):
                self.stats.generator_errors += 1
                self.stats.last_error = f"{type(exc).__name__}: {exc}"[:500]
        limit = rnd.gen_deadline + rnd.grace
        return [self._reduce(*item, limit=limit) for item in _smallest_per_origin(list(rnd.failures.values()))]

    def _shrink_seconds(self) -> float:
        """Hypothesis's share of shrinking: none when steering, whose programs
        are drawn from one seed (steer.py) that Hypothesis cannot shrink into
        a smaller program; the structural reducer shrinks them."""
        return 0.0 if self.steering is not None else self.config.shrink_seconds

    def _reduce(self, record: FindingRecord, program: Program, feeds: Mapping[str, Value],
                init: Mapping[str, Value], limit: float) -> FindingRecord:
        """Finish shrinking with the structural reducer (reduce.py), for at
        most `reduce_seconds`, and not much past the round's time `limit`."""
        if self.config.reduce_seconds <= 0 or self.should_stop():
            return record
        origin = _reduce_origin(record)
        now = time.monotonic()
        budget = self.config.reduce_seconds
        if self.steering is not None:   # mutants are larger: the reducer gets twice the time
            budget, limit = 2 * budget, limit + budget
        deadline = min(now + budget, max(now + 0.5, limit))
        reduced, tried = reduce_finding(program, feeds, init, record, self.evaluate,
                                        lambda r: _reduce_origin(r) == origin, deadline)
        self.stats.programs += tried
        if self.steering is not None and reduced.kind == UNSOUND and reduced.size > SMALL_FINDING:
            reduced = self._research(reduced, origin, min(deadline, time.monotonic() + RESEARCH_SECONDS))
        return reduced

    def _research(self, record: FindingRecord, origin: tuple, deadline: float) -> FindingRecord:
        """A shrunk finding still larger than SMALL_FINDING nodes is often a
        local minimum of the reducer: no single edit keeps the bug, while a
        smaller counterexample of another shape exists (a forwarded Read
        shown wrong by an AssignAdd between the Write and the Read, 4 nodes,
        where the reducer holds 6 nodes of a second Read witnessing an
        unordered Write).  So, until `deadline`: the finding's change is cut
        down to its core (steer.change_core: the smallest program the pass
        changes the same way), mutants of the core (of at most one node more
        than the finding) are judged, and a failing one (the same origin) is
        reduced in turn and kept when it ends smaller.  Returns the smallest
        finding."""
        try:
            p = program_from_json(record.original)
            shape = change_shape(p, program_from_json(record.rewritten)) if record.rewritten else ()
        except ProgramError:
            return record
        if not shape:
            return record
        core = change_core(p, shape, self._rewrite_quietly)
        rewritten = self._rewrite_quietly(core)
        if rewritten is None or rewritten == core:
            return record
        site = change_site(core, rewritten)
        rng = random.Random(zlib.crc32(json.dumps(record.original, sort_keys=True).encode()))
        best = record
        while best.size > SMALL_FINDING and time.monotonic() < deadline and not self.should_stop():
            d = RandomDraw(rng)
            # (up to one node more than the finding: a mutation brings its
            # value as a Const, which the reducer then turns into a feed)
            cand = mutate(d, core, best.size + 1, focus=site)
            if cand == core:
                continue
            feeds, init = build_inputs(d, cand)
            found = self.evaluate(cand, feeds, init)
            self.stats.programs += 1
            if found is None or _reduce_origin(found) != origin:
                continue
            smaller, tried = reduce_finding(cand, feeds, init, found, self.evaluate,
                                            lambda r: _reduce_origin(r) == origin, deadline)
            self.stats.programs += tried
            if smaller.size < best.size:
                best = smaller
        return best

    def run(self, seconds: float, shrink_seconds: float | None = None) -> list[FindingRecord]:
        """Fuzz for about `seconds` (plus up to `shrink_seconds` to finish
        shrinking the last round's findings); returns the findings, each also
        given to `on_finding` when its round ends."""
        cfg = self.config
        grace = shrink_seconds if shrink_seconds is not None else min(30.0, max(1.0, 0.25 * seconds))
        started = self._started = time.monotonic()
        end = started + seconds
        rng = random.Random(cfg.seed) if cfg.seed is not None else None
        found: list[FindingRecord] = []
        first = True
        try:
            while (first or time.monotonic() < end) and not self.should_stop():
                gen_deadline = min(end, time.monotonic() + cfg.round_seconds)
                rnd = _Round(gen_deadline, grace)
                round_seed = rng.getrandbits(64) if rng is not None else None
                records = self._run_round(rnd, round_seed, reuse=first)
                first = False
                self.stats.rounds += 1
                for record in records:
                    record = self.finalize(record)
                    if self.first_report_after is None:
                        self.first_report_after = time.monotonic() - started
                    self.stats.findings += 1
                    found.append(record)
                    self.on_finding(record)
                self.stats.seconds = time.monotonic() - started
                self._maybe_report_stats()
                if self.stats.generator_errors >= 3 and not self.stats.programs:
                    break  # the generator itself is broken; say so in the stats
        finally:
            self.stats.seconds = time.monotonic() - started
            self._maybe_report_stats(force=True)
            if self._own_runner:
                self.runner.close()
        return found

    def close(self) -> None:
        if self._own_runner:
            self.runner.close()


# ---------------------------------------------------------------------------
# Replaying stored findings ("is it fixed?")


PRESENT, FIXED, UNDECIDED = "present", "fixed", "undecided"


def replay(loop: FuzzLoop, record: FindingRecord) -> tuple[str, FindingRecord | None]:
    """Run the pass again on a stored finding's program and σ.

    Returns (PRESENT, the new record) when the same kind of finding shows
    again; (FIXED, None) when the rewrite is now fine, or (FIXED, record) when
    the program now shows another kind of finding (a new one); and
    (UNDECIDED, None) when the checker cannot tell (an unsound finding whose
    check comes back unknown)."""
    # the generated program when the finding judged what a target made of it
    program = program_from_json((record.detail or {}).get(GIVEN) or record.original)
    try:
        feeds, init = decode_inputs(program, record.feeds, record.init)
    except ProgramError:
        feeds, init = {}, {}
    for x in program.variables:
        init.setdefault(x, _uninitialized())
    before = loop.stats.copy()
    again = loop.evaluate(program, feeds, init)
    if again is not None and again.kind == record.kind:
        return PRESENT, again
    if again is None and loop.target.kind == "runtime":
        return UNDECIDED, None   # not seen in these runs: timing decides, not a fix
    if again is None and loop.stats.unknown + loop.stats.checker_errors > before.unknown + before.checker_errors:
        return UNDECIDED, None
    return FIXED, again


def _uninitialized() -> Value:
    from tfsem.oracle.values import UNINITIALIZED, Error
    return Error(UNINITIALIZED)
