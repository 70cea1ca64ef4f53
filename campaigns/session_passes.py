"""Fuzzing a session pass (rewrites/api.py `Pass.session_function`: the
critical-section passes drop-sections and merge-sections) on generated
sessions, judged by the session semantics (oracle/blocking.py), per
semantics mode and kind of session (`SESSION_KINDS`): one run, two
sequential runs, 2-3 concurrent runs, and concurrent runs with a queue.

Each cell draws sessions from generators/sessions.py (a step graph with
critical sections, a queue where the kind has one), applies the pass to the
session's program, and compares the rewritten session's outcome set with
the original's at σ = every variable 1 and every variable uninitialized:
an outcome (a deadlock included) of the rewrite that the original lacks is
an `unsound` finding, shrunk by Hypothesis to a small session and written
as a session file and the rewritten program, which `tfsem check SESSION
REWRITTEN` judges again.  Sessions past the exploration budget are set
aside (counted as unknown).  `tfsem verify PASS` and `tfsem fuzz --pass
PASS` call :func:`verify_session_pass` for such a pass.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tfsem.generators.sessions import sessions
from tfsem.oracle import blocking
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.session import session_from_json
from tfsem.oracle.values import Tensor, value_to_json
from tfsem.rewrites.api import CONCURRENT_QUEUES, ONE_RUN, SEQUENTIAL_RUNS, SESSION_KINDS, Pass

#: examples per round of Hypothesis (rounds repeat, each with its own seed,
#: until the cell's time is spent)
ROUND = 20
#: states one outcome set may take (a session past it is set aside)
MAX_STATES = 20_000


@dataclass
class SessionFinding:
    cell: tuple[str, str]
    session: dict
    rewritten: dict
    init: dict
    message: str
    schedule: list[str]
    outcome: str
    original: list[str]

    def to_json(self) -> dict:
        return {"semantics": self.cell[0], "kind": self.cell[1], "message": self.message,
                "session": self.session, "rewritten": self.rewritten, "init": self.init,
                "schedule": self.schedule, "outcome": self.outcome,
                "original_outcomes": self.original}


@dataclass
class SessionCell:
    cell: tuple[str, str]
    claim: str | None
    sessions: int = 0
    changed: int = 0
    unknown: int = 0
    seconds: float = 0.0
    finding: SessionFinding | None = None

    @property
    def judgement(self) -> str:
        if self.finding is not None:
            return "contradicted" if self.claim != "unsound" else "confirmed"
        if self.claim == "unsound":
            return "not shown"
        return "holds" if self.changed else "untested"

    def to_json(self) -> dict:
        return {"semantics": self.cell[0], "kind": self.cell[1], "claim": self.claim,
                "judgement": self.judgement, "sessions": self.sessions, "changed": self.changed,
                "unknown": self.unknown, "seconds": round(self.seconds, 3),
                "finding": self.finding.to_json() if self.finding else None}


@dataclass
class SessionResult:
    pass_name: str
    cells: list[SessionCell] = field(default_factory=list)

    @property
    def contradicted(self) -> list[SessionCell]:
        return [c for c in self.cells if c.judgement == "contradicted"]

    @property
    def weak(self) -> list[SessionCell]:
        return [c for c in self.cells if c.judgement in ("not shown", "untested")]


class _Found(Exception):
    def __init__(self, finding: SessionFinding):
        super().__init__(finding.message)
        self.finding = finding


def session_strategy(kind: str, max_blocks: int = 3):
    """Sessions of one kind: a step graph with critical sections (and a queue
    for CONCURRENT_QUEUES), its runs as the kind says."""
    queue = kind == CONCURRENT_QUEUES
    order = "sequential" if kind == SEQUENTIAL_RUNS else "concurrent"
    runs = 1 if kind == ONE_RUN else 2

    @st.composite
    def strategy(draw):
        data = draw(sessions(max_blocks=max_blocks, max_runs=3, sections=True, queue=queue,
                             orders=(order,)))
        have = data["runs"]
        if len(have) < runs:   # the same run again, under another name
            have = have + [dict(have[0], name=f"r{len(have)}")]
        data["runs"] = have[:1] if kind == ONE_RUN else have[:3]
        return data
    return strategy()


def _sigmas(variables) -> list[dict]:
    return [{x: Tensor(1, "int64") for x in variables}, {}]


def judge(p: Pass, data: dict, semantics: str) -> tuple[str, Any]:
    """("identical" | "sound-here" | "unknown", None) or ("unsound", finding
    fields) for one session."""
    rewritten_json = p.session_function(json.loads(json.dumps(data["program"])))
    if rewritten_json == data["program"]:
        return "identical", None
    s = session_from_json(data)
    rp, rb = blocking.program_from_json(rewritten_json, where="rewritten")
    p1, t1 = s.expand_blocking()
    p2, t2 = s.expand_blocking(rp, rb)
    for init in _sigmas(sorted(p1.variables)):
        try:
            a, _ = blocking.outcomes(p1, t1, {}, init, semantics, max_states=MAX_STATES)
            b, _ = blocking.outcomes(p2, t2, {}, init, semantics, max_states=MAX_STATES)
        except BudgetExceeded:
            return "unknown", None
        extra = [o for o in b if o not in a]
        if extra:
            o = extra[0]
            diff = o.first_difference(list(a)) or {}
            where = ", ".join(f"{k} {v!r}" for k, v in diff.items()) or "an added outcome"
            return "unsound", {"rewritten": rewritten_json,
                               "init": {x: value_to_json(v) for x, v in init.items()},
                               "message": f"{where} differs", "schedule": list(b[o]),
                               "outcome": o.describe(),
                               "original": [x.describe() for x in a]}
    return "sound-here", None


def verify_cell(p: Pass, cell: tuple[str, str], seconds: float, seed_value: int = 0,
                on_round: Callable[[SessionCell], None] | None = None,
                min_rounds: int = 1) -> SessionCell:
    """Fuzz one cell for `seconds` (at least `min_rounds` rounds of ROUND
    sessions, each round with its own seed: what they find does not depend
    on the machine's speed), stopping at the first finding, shrunk."""
    semantics, kind = cell
    result = SessionCell(cell, p.session_claims.get(cell))
    started = time.monotonic()
    strategy = session_strategy(kind)
    k = 0
    while (k < min_rounds or time.monotonic() - started < seconds) and result.finding is None:
        @seed(seed_value * 7919 + k)
        @settings(max_examples=ROUND, deadline=None, database=None, report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate, Phase.shrink])
        @given(data=strategy)
        def one(data):
            if shrinking[0] and time.monotonic() > started + seconds * 1.5:
                return   # shrinking past its time: keep the smallest session so far
            verdict, detail = judge(p, data, semantics)
            if shrinking[0] is False:
                result.sessions += 1
                result.changed += verdict != "identical"
                result.unknown += verdict == "unknown"
            if verdict == "unsound":
                shrinking[0] = True
                raise _Found(SessionFinding(cell, data, **detail))
        shrinking = [False]
        try:
            one()
        except _Found as exc:
            result.finding = exc.finding
        except BaseExceptionGroup as group:   # several distinct failures: the first
            found = [e for e in group.exceptions if isinstance(e, _Found)]
            if not found:
                raise
            result.finding = found[0].finding
        k += 1
        if on_round is not None:
            on_round(result)
    result.seconds = time.monotonic() - started
    return result


def verify_session_pass(p: Pass, budget: float, cells=None, seed_value: int = 0,
                        on_round=None) -> SessionResult:
    """Fuzz a session pass for `budget` seconds, split among `cells`
    (default: every semantics mode and kind its claims name)."""
    cells = list(cells or [c for c in ((s, k) for s in ("atomic", "decomposed")
                                       for k in SESSION_KINDS) if c in p.session_claims])
    out = SessionResult(p.name)
    for cell in cells:
        out.cells.append(verify_cell(p, cell, budget / max(len(cells), 1), seed_value, on_round))
    return out


def write_findings(result: SessionResult, out: Path) -> list[tuple[Path, Path]]:
    """Each finding as a session file and its rewritten program (for `tfsem
    check SESSION REWRITTEN`); returns the pairs of paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, c in enumerate((c for c in result.cells if c.finding), 1):
        f = c.finding
        tag = f"{result.pass_name}-{i}-{f.cell[0]}-{f.cell[1].replace(' ', '-')}"
        s_path, r_path = out / f"{tag}.session.json", out / f"{tag}.rewritten.json"
        s_path.write_text(json.dumps(dict(f.session, note=f"{result.pass_name}: {f.message} "
                                          f"({f.cell[0]}, {f.cell[1]})"), indent=1) + "\n")
        r_path.write_text(json.dumps(f.rewritten, indent=1) + "\n")
        (out / f"{tag}.finding.json").write_text(json.dumps(f.to_json(), indent=1) + "\n")
        paths.append((s_path, r_path))
    return paths


def report_lines(result: SessionResult, paths: list[tuple[Path, Path]]) -> list[str]:
    total = sum(c.sessions for c in result.cells)
    secs = sum(c.seconds for c in result.cells)
    lines = [f"{result.pass_name}: {total} generated sessions in {secs:.1f} s "
             f"(a session pass: judged by the session semantics)"]
    found = [c for c in result.cells if c.finding]
    for i, (c, (s_path, r_path)) in enumerate(zip(found, paths), 1):
        f = c.finding
        why = ("expected: the pass claims unsound here" if c.claim == "unsound"
               else "BUG: the pass claims sound here" if c.claim == "sound"
               else "the pass makes no claim here")
        lines += ["", f"finding {i}: unsound [{f.cell[0]}, {f.cell[1]}]: {f.message} ({why})",
                  f"  session: {len(f.session['runs'])} {f.session.get('order', 'concurrent')} "
                  f"run(s) of {len(f.session['program']['nodes'])} nodes; init: "
                  + (", ".join(f"{x} = {v}" for x, v in sorted(f.init.items()))
                     or "every variable uninitialized"),
                  f"  rewritten schedule: {' '.join(f.schedule)}",
                  f"  rewritten outcome:  {f.outcome}",
                  f"  original outcomes ({len(f.original)}):"]
        lines += [f"    {k}. {o}" for k, o in enumerate(f.original[:6], 1)]
        lines += [f"  reproducer: tfsem check {s_path} {r_path} --semantics {f.cell[0]}"]
    lines += ["", "claims (per semantics mode and kind of session):"]
    for c in result.cells:
        flag = "  <- BUG" if c.judgement == "contradicted" else \
            "  <- WEAK EVIDENCE" if c.judgement in ("not shown", "untested") else ""
        lines.append(f"  {c.cell[0] + '/' + c.cell[1]:<40} {c.claim or 'no claim':<8} "
                     f"{c.judgement} ({c.sessions} sessions, {c.changed} changed, "
                     f"{c.unknown} past the budget, {c.seconds:.1f} s){flag}")
    return lines
