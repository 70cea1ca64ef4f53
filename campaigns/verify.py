"""`tfsem verify PASS`: fuzz one pass for a few minutes and judge its claims.

The budget is split over the (semantics, observe) cells asked for (all four by
default), one after the other; time a cell does not use goes to the next.
Findings are deduplicated by signature.  For each cell the pass makes a claim
about, the result says whether the fuzzing agrees:

- claimed `sound` and an unsound finding: the claim is **contradicted** (a bug);
- claimed `unsound` and an unsound finding: the claim is **confirmed**;
- claimed `unsound` and none: **not confirmed** (the budget found no
  counterexample; that is not a proof of soundness);
- claimed `sound` and none: **no counterexample**.

Crashes, timeouts and invalid output are bugs whatever the claims.

A cell without an unsound finding whose evidence is weak (the pass changed
too few programs, or too few distinct change shapes: evidence.py) makes the
run *weak* (:attr:`VerifyResult.weak`): exit status 4, not 0.

The exit rule (the same as `tfsem fuzz`'s): a run fails when a claim is
contradicted or the pass crashes, hangs or returns an invalid program
(:attr:`VerifyResult.bugs`); unsound findings in a cell the pass claims
`unsound` are expected and do not fail it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from hypothesis.database import ExampleDatabase

from . import DEFAULT_MAX_NODES
from .evidence import evidence_json, weak_reason
from .findings import UNSOUND, FindingRecord
from .loop import FuzzLoop, LoopConfig, LoopStats
from .sandbox import DEFAULT_PASS_TIMEOUT, PassSandbox
from .signature import record_signature
from .targets import CELLS, Cell, Target, resolve_pass

CONFIRMED, NOT_CONFIRMED, CONTRADICTED, NO_COUNTEREXAMPLE, FOUND = (
    "confirmed", "not confirmed", "contradicted", "no counterexample", "found")


@dataclass
class CellResult:
    cell: Cell
    claim: str | None
    stats: LoopStats
    signatures: list[str] = field(default_factory=list)
    runtime: bool = False

    @property
    def unsound_found(self) -> bool:
        return bool(self.signatures)

    @property
    def judgement(self) -> str:
        if self.claim == "sound":
            return CONTRADICTED if self.unsound_found else NO_COUNTEREXAMPLE
        if self.claim == "unsound":
            return CONFIRMED if self.unsound_found else NOT_CONFIRMED
        return FOUND if self.unsound_found else NO_COUNTEREXAMPLE

    @property
    def weak(self) -> str | None:
        """Why this cell's "no counterexample" rests on too little (None:
        it does not, or the cell has an unsound finding)."""
        if self.unsound_found or self.runtime:
            return None    # a runtime target (--target xla) rewrites nothing: no change to count
        return weak_reason(self.stats.to_json())

    def to_json(self) -> dict:
        return {"semantics": self.cell[0], "observe": self.cell[1], "claim": self.claim,
                "result": self.judgement, "unsound_findings": self.signatures,
                "programs": self.stats.programs, "seconds": round(self.stats.seconds, 3),
                "evidence": None if self.unsound_found or self.runtime else evidence_json(self.stats.to_json()),
                "shapes": self.stats.shapes,
                "changed": self.stats.programs - self.stats.identical,
                "identical": self.stats.identical, "sound": self.stats.sound,
                "no_counterexample": self.stats.no_counterexample,
                "unknown": self.stats.unknown, "checker_errors": self.stats.checker_errors,
                "generator_errors": self.stats.generator_errors, "last_error": self.stats.last_error}


@dataclass
class Found:
    """A distinct finding, with how often it was found."""
    record: FindingRecord
    signature: str
    times: int = 1
    first_after: float = 0.0


@dataclass
class VerifyResult:
    target: Target
    cells: list[CellResult]
    findings: list[Found]
    seconds: float

    @property
    def exit_found(self) -> bool:
        """True when the run fails: a finding contradicts a claim (or the
        pass crashed, hung or returned an invalid program)."""
        return bool(self.bugs)

    @property
    def bugs(self) -> list[Found]:
        return [f for f in self.findings if f.record.contradicts_claim]

    @property
    def weak_cells(self) -> list[CellResult]:
        return [c for c in self.cells if c.weak]

    @property
    def weak(self) -> bool:
        """No finding contradicts a claim, but some cell's evidence is weak."""
        return not self.bugs and bool(self.weak_cells)


def verify_pass(spec: str, budget: float, cells: Iterable[Cell] = CELLS, *, seed: int | None = None,
                max_nodes: int = DEFAULT_MAX_NODES, pass_timeout: float = DEFAULT_PASS_TIMEOUT,
                check_timeout: float = 5.0, checker: Any = "auto", generator: Any = None,
                database: ExampleDatabase | None = None,
                on_finding: Callable[[Found, bool], None] | None = None,
                on_stats: Callable[[Cell, dict], None] | None = None,
                on_cell: Callable[[Cell, float], None] | None = None,
                runner: Any = None, runtime_runs: int = 20,
                stop_at_first_bug: bool = False) -> VerifyResult:
    """Fuzz one pass in each cell (a runtime target such as XLA runs each
    program `runtime_runs` times); `on_finding(found, is_new)` is called as
    findings come (after each is shrunk), `on_stats(cell, delta)` about once
    a second with the counters' increase (LoopStats.minus), and
    `on_cell(cell, seconds)` when a cell starts with its share of time.
    `stop_at_first_bug`: end the run once a finding contradicts a claim
    (the cells not begun are left out of the result)."""
    target = resolve_pass(spec)
    cells = list(cells)
    started = time.monotonic()
    end = started + budget
    own_runner = runner is None
    runner = runner or PassSandbox(spec, timeout=pass_timeout)
    distinct: dict[str, Found] = {}
    results: list[CellResult] = []
    steering = None   # what one cell learnt about the pass goes on to the next (steer.py)
    try:
        for i, cell in enumerate(cells):
            if stop_at_first_bug and any(f.record.contradicts_claim for f in distinct.values()):
                break
            left = end - time.monotonic()
            share = max(0.5, left / (len(cells) - i))
            cfg = LoopConfig(spec, cell[0], cell[1], max_nodes=max_nodes, pass_timeout=pass_timeout,
                             check_timeout=check_timeout,
                             checker=checker if isinstance(checker, str) else "custom",
                             generator=generator if isinstance(generator, str) or generator is None else None,
                             seed=None if seed is None else seed * 7919 + i,
                             round_seconds=max(5.0, min(20.0, share)),
                             runtime_runs=runtime_runs)
            result = CellResult(cell, target.claim(cell), LoopStats(), runtime=target.kind == "runtime")
            if on_cell is not None:
                on_cell(cell, share)

            def found(record: FindingRecord, result: CellResult = result) -> None:
                sig = record_signature(record)
                is_new = sig not in distinct
                if is_new:
                    distinct[sig] = Found(record, sig, 1, time.monotonic() - started)
                else:
                    distinct[sig].times += 1
                    if record.size < distinct[sig].record.size:
                        distinct[sig].record = record
                if record.kind == UNSOUND and sig not in result.signatures:
                    result.signatures.append(sig)
                if on_finding is not None:
                    on_finding(distinct[sig], is_new)

            if steering is not None:
                steering = steering.for_cell(cell[1])
            loop = FuzzLoop(cfg, target=target, runner=runner, steering=steering,
                            checker=None if isinstance(checker, str) else checker,
                            generator=None if isinstance(generator, str) or generator is None else generator,
                            database=database, on_finding=found,
                            should_stop=(lambda: any(f.record.contradicts_claim for f in distinct.values()))
                            if stop_at_first_bug else None,
                            on_stats=None if on_stats is None else (lambda d, c=cell: on_stats(c, d)))
            loop.run(share, shrink_seconds=min(30.0, max(1.0, 0.25 * share)))
            steering = loop.steering
            result.stats = loop.stats
            results.append(result)
    finally:
        if own_runner:
            runner.close()
    return VerifyResult(target, results, list(distinct.values()), time.monotonic() - started)
