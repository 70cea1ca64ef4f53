"""How the fuzzing loop judges one rewrite: validity, then refinement.

A *checker* is a callable `(original, rewritten, semantics, observe, timeout)`
returning SPEC section 3's verdict as JSON (or an object with `.to_json()`).
The loop reaches checkers through :class:`CheckPlan`, named by a string so
that it can be rebuilt in worker processes:

- `auto` (default): the symbolic checker (`tfsem.checking.check_rewrite`) when
  it is installed; when it proves nothing (`unknown`, `no-counterexample`) or
  is missing, the concrete check below at the σ the fuzzer drew.
- `concrete`: only the concrete check at the drawn σ (fast; finds what the
  drawn inputs show, proves nothing).
- `symbolic`: only the symbolic checker.
- `module:attribute`: any checker callable.

The concrete check compares outcome sets with the fast oracle: an outcome of
the rewritten program at σ that is not among the original's is a
counterexample by definition (SPEC section 3), so it can only be wrong if the
oracle is.  When a budget runs out the answer is `unknown`, never a guess.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.program import Program
from tfsem.oracle.values import Value, value_to_json

Checker = Callable[[Program, Program, str, str, float], Any]

CONCRETE_MAX_STATES = 200_000
#: Outcomes of the rewritten program examined at one σ (beyond: unknown).
MAX_REWRITTEN_OUTCOMES = 20_000
#: Original outcomes listed in a counterexample (all are counted).
MAX_LISTED_OUTCOMES = 64
#: Original outcome sets larger than this are not searched for `differs`.
MAX_ORIGINAL_OUTCOMES = 100_000


def interface_problems(original: Program, rewritten: Program) -> list[str]:
    """SPEC section 3: the same variables and output names, no new feed.
    The checker's own definition when it is installed (one rule for both)."""
    try:
        from tfsem.checking import interface_problems as checker_rule
    except ImportError:
        return _interface_problems(original, rewritten)
    return checker_rule(original, rewritten)


def _interface_problems(original: Program, rewritten: Program) -> list[str]:
    out = []
    if set(original.variables) != set(rewritten.variables):
        gone = sorted(set(original.variables) - set(rewritten.variables))
        new = sorted(set(rewritten.variables) - set(original.variables))
        out.append("the variables differ" + (f"; missing {gone}" if gone else "")
                   + (f"; new {new}" if new else ""))
    else:
        changed = sorted(x for x in original.variables if original.variables[x] != rewritten.variables[x])
        if changed:
            out.append(f"the types of variables {changed} differ")
    if set(original.outputs) != set(rewritten.outputs):
        gone = sorted(set(original.outputs) - set(rewritten.outputs))
        new = sorted(set(rewritten.outputs) - set(original.outputs))
        out.append("the output names differ" + (f"; missing {gone}" if gone else "")
                   + (f"; new {new}" if new else ""))
    new_feeds = sorted(set(rewritten.feed_names) - set(original.feed_names))
    if new_feeds:
        out.append(f"the rewritten program reads feeds the original lacks: {new_feeds}")
    return out


def _verdict_json(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    if hasattr(v, "to_json"):
        return v.to_json()
    raise TypeError(f"a checker returned {type(v).__name__}, not a verdict")


def concrete_check(original: Program, rewritten: Program, feeds: Mapping[str, Value],
                   init: Mapping[str, Value], semantics: str, observe: str,
                   max_seconds: float = 2.0, max_states: int = CONCRETE_MAX_STATES) -> dict:
    """Outcomes(rewritten, σ) ⊆ Outcomes(original, σ) at one σ, with the oracle.

    Returns an `unsound` verdict with its counterexample, `no-counterexample`
    (tried 1 σ), or `unknown` (a budget ran out)."""
    rew_feeds = {k: v for k, v in feeds.items() if k in rewritten.feed_names}
    try:
        orig = outcome_set(original, feeds, init, semantics, observe, max_states, max_seconds)
        rew = outcome_set(rewritten, rew_feeds, init, semantics, observe, max_states, max_seconds)
    except BudgetExceeded as exc:
        return {"verdict": "unknown", "reason": f"concrete check at one σ: {exc}"}
    except CannotRun as exc:   # an op with no concrete model: no verdict, not a checker error
        return {"verdict": "unknown",
                "reason": f"concrete check at one σ: {exc.naming_nodes(original)}"}
    examined = 0
    for outcome, schedule in rew.items():
        examined += 1
        if examined > MAX_REWRITTEN_OUTCOMES:
            return {"verdict": "unknown", "reason": f"concrete check at one σ: the rewritten program "
                    f"has {rew.count} outcomes, more than {MAX_REWRITTEN_OUTCOMES} examined"}
        if outcome in orig:
            continue
        if orig.count > MAX_ORIGINAL_OUTCOMES:
            return {"verdict": "unknown", "reason": "concrete check at one σ: a new outcome, but the "
                    f"original has {orig.count} outcomes, too many to say which part differs"}
        originals = list(orig.items())
        differs = outcome.first_difference([o for o, _ in originals])
        return {
            "verdict": "unsound", "differs": differs,
            "reason": "the rewritten program has an outcome that the original lacks",
            "counterexample": {
                "feeds": {k: value_to_json(v) for k, v in sorted(feeds.items())},
                "init": {k: value_to_json(v) for k, v in sorted(init.items())},
                "schedule": list(schedule),
                "outcome": outcome.to_json(),
                "original_outcomes": [dict(o.to_json(), schedule=list(w))
                                      for o, w in originals[:MAX_LISTED_OUTCOMES]],
                "original_count": orig.count,
            },
            "tried": 1, "confirmed": ["oracle"], "semantics": semantics, "observe": observe,
        }
    return {"verdict": "no-counterexample", "tried": 1,
            "reason": "no outcome of the rewritten program at the drawn σ is new",
            "semantics": semantics, "observe": observe}


def symbolic_checker(final: bool = False) -> Checker | None:
    """`tfsem.checking.check_rewrite`, when the checking package provides it.

    While fuzzing (and shrinking), counterexamples are not minimized nor
    replayed on array backends: that is done once, on the minimized finding
    (`final=True`)."""
    try:
        module = importlib.import_module("tfsem.checking")
    except ImportError:
        return None
    check = getattr(module, "check_rewrite", None)
    if check is None or final:
        return check

    def fast_check(original: Program, rewritten: Program, semantics: str, observe: str,
                   timeout: float) -> Any:
        try:
            return check(original, rewritten, semantics, observe, timeout, minimize=False, backends=False)
        except TypeError:  # an older check_rewrite without these options
            return check(original, rewritten, semantics, observe, timeout)

    return fast_check


def _import(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class CheckPlan:
    """The checking strategy of a loop (see the module docstring)."""

    def __init__(self, spec: str | Checker = "auto", concrete_seconds: float = 2.0):
        self.spec = spec if isinstance(spec, str) else getattr(spec, "__name__", "custom")
        self.concrete_seconds = concrete_seconds
        self.symbolic: Checker | None = None
        #: the checker that writes the final verdict of a minimized finding
        self.final: Checker | None = None
        self.concrete = False
        if callable(spec):
            self.symbolic = spec
        elif spec == "auto":
            self.symbolic = symbolic_checker()
            self.final = symbolic_checker(final=True)
            self.concrete = True
        elif spec == "concrete":
            self.concrete = True
        elif spec == "symbolic":
            self.symbolic = symbolic_checker()
            self.final = symbolic_checker(final=True)
            if self.symbolic is None:
                raise ValueError("the symbolic checker (tfsem.checking.check_rewrite) is not available")
        elif ":" in spec:
            self.symbolic = _import(spec)
        else:
            raise ValueError(f"unknown checker {spec!r} (auto, concrete, symbolic or module:attribute)")

    @property
    def description(self) -> str:
        parts = []
        if self.symbolic is not None:
            parts.append("symbolic" if self.spec in ("auto", "symbolic") else self.spec)
        if self.concrete:
            parts.append("concrete at the drawn σ")
        return " then ".join(parts)

    def __call__(self, original: Program, rewritten: Program, feeds: Mapping[str, Value],
                 init: Mapping[str, Value], semantics: str, observe: str, timeout: float) -> dict:
        verdict: dict | None = None
        if self.symbolic is not None:
            verdict = _verdict_json(self.symbolic(original, rewritten, semantics, observe, timeout))
            if verdict.get("verdict") in ("sound", "unsound", "invalid") or not self.concrete:
                return verdict
        concrete = concrete_check(original, rewritten, feeds, init, semantics, observe,
                                  max_seconds=min(self.concrete_seconds, timeout))
        if concrete["verdict"] == "unsound" or verdict is None:
            return concrete
        return verdict

    def final_verdict(self, original: Program, rewritten: Program, semantics: str, observe: str,
                      timeout: float) -> dict | None:
        """The full verdict (minimized σ and schedule, confirmed on the array
        backends) for a minimized finding; None without a symbolic checker."""
        if self.final is None:
            return None
        return _verdict_json(self.final(original, rewritten, semantics, observe, timeout))
