"""The computations a worker process runs: outcome sets and checks.

Each job takes the JSON a request handler checked (see requests.py) and a
budget in seconds, and returns the JSON answer, made by the same library calls
as `tfsem outcomes --json` and `tfsem check --json`.  A budget that runs out
is the verdict `unknown`, as on the command line.

`JOBS` is the whole menu: a request chooses one of these by the route it
posts to, never by naming code.
"""

from __future__ import annotations

from typing import Any, Callable

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import case_from_json, decode_inputs, program_from_json

try:  # imported here, before a worker caps its memory: Z3 is large
    from tfsem.checking import check_rewrite
    from tfsem.checking.verdict import Verdict
except ImportError:  # pragma: no cover - an installation without the checker
    check_rewrite = Verdict = None  # type: ignore[assignment]


def outcomes(payload: dict, budget: float) -> dict:
    """The object `tfsem outcomes --json` prints."""
    program = program_from_json(payload["program"], where="program")
    feeds, init = decode_inputs(program, payload.get("feeds", {}), payload.get("init", {}))
    try:
        result = outcome_set(program, feeds, init, payload["semantics"], payload["observe"],
                             max_states=payload["max_states"], max_seconds=budget)
    except BudgetExceeded as exc:
        return {"verdict": "unknown", "reason": str(exc)}
    listed = result.as_dict(payload.get("limit"))
    return {"count": result.count,
            "outcomes": [dict(o.to_json(), schedule=list(w)) for o, w in listed.items()],
            "stats": {"states": result.states, "seconds": round(result.seconds, 6),
                      "components": len(result.components)}}


def check(payload: dict, budget: float) -> dict:
    """The object `tfsem check --json` prints for the posted case."""
    if check_rewrite is None:
        raise RuntimeError("the checker (tfsem.checking) is not installed")
    case = case_from_json(payload["case"], where="request")
    verdict = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                            timeout=budget)
    return verdict.to_json()


def unknown_verdict(reason: str, semantics: str = "atomic", observe: str = "outputs+state",
                    job: str = "check") -> dict:
    """The answer when a computation is stopped from outside (time or memory):
    for a check, a whole verdict object; for outcomes, what `tfsem outcomes
    --json` prints when its budget runs out."""
    if job != "check":
        return {"verdict": "unknown", "reason": reason}
    if Verdict is not None:
        return Verdict("unknown", reason=reason, semantics=semantics, observe=observe).to_json()
    return {"verdict": "unknown", "differs": None, "counterexample": None, "reason": reason,
            "tried": 0, "confirmed": [], "semantics": semantics, "observe": observe, "stats": {}}


def available() -> dict[str, bool]:
    """Which jobs this installation can run (the checker may be missing)."""
    return {"outcomes": True, "check": check_rewrite is not None}


JOBS: dict[str, Callable[[dict, float], Any]] = {"outcomes": outcomes, "check": check}
