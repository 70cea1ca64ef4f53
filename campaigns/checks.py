"""How the fuzzing loop judges one rewrite: validity, then refinement.

A *checker* is a callable `(original, rewritten, semantics, observe, timeout)`
returning SPEC section 3's verdict as JSON (or an object with `.to_json()`).
The loop reaches checkers through :class:`CheckPlan`, named by a string so
that it can be rebuilt in worker processes:

- `auto` (default): first a *screen*, the concrete check below at the σ the
  fuzzer drew and at a few more σ drawn like it (`screen_sigmas`), within a
  tenth of the time budget; an outcome of the rewrite that the original
  lacks at one of them is the verdict.  Otherwise the symbolic checker
  (`tfsem.checking.check_rewrite`) when it is installed, given the rest of
  the budget; when it proves nothing (`unknown`, `no-counterexample`) or is
  missing, the screen's answer stands.
- `concrete`: only the concrete check at the drawn σ (fast; finds what the
  drawn inputs show, proves nothing).
- `symbolic`: only the symbolic checker.
- `module:attribute`: any checker callable.

The concrete check compares outcome sets with the fast oracle: an outcome of
the rewritten program at σ that is not among the original's is a
counterexample by definition (SPEC section 3), so it can only be wrong if the
oracle is.  When a budget runs out the answer is `unknown`, never a guess.

Why the screen comes first.  A fuzzed program is judged in milliseconds at
one σ, while the symbolic checker may spend its whole budget on it: its
solver times out on 64-bit products and maxima (a 5-node program of
AssignMul and AssignMax took 3.6 s before the checker's own fallback found
a σ in 8 ms), and most counterexamples of a wrong pass show at small or
edge values.  Screening first keeps those seconds for the programs that
need a proof or a rare σ; the symbolic checker still judges every program
the screen passes, so nothing it would find is lost, and a verdict
`sound` still comes only from it.  Cost: at most `SCREEN_SIGMAS` + 1
outcome-set enumerations per changed program, within `SCREEN_SHARE` of the
budget (about a millisecond each on the programs the fuzzer draws).
"""

from __future__ import annotations

import importlib
import json
import random
import time
import zlib
from typing import Any, Callable, Mapping

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import Program
from tfsem.oracle.values import Value, value_to_json

Checker = Callable[[Program, Program, str, str, float], Any]

CONCRETE_MAX_STATES = 200_000
#: σ the screen tries beyond the drawn one, the share of the check's time
#: budget it may take, and the states one of its enumerations may explore
SCREEN_SIGMAS = 4
SCREEN_SHARE = 0.1
SCREEN_MAX_STATES = 20_000
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
        if observe == "outputs" and outcome.state is not None:
            # a program with no node has one outcome, whose state the oracle
            # gives as () whatever is observed (it has no component to say
            # so): only outputs are compared (a rewrite deleting a program's
            # only node was judged unsound here)
            outcome = Outcome(outcome.outputs, None)
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


Sigma = tuple[dict[str, Value], dict[str, Value]]


def screen_sigmas(program: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                  count: int = SCREEN_SIGMAS) -> list[Sigma]:
    """The σ the screen tries: the one given (the fuzzer's), then `count`
    more drawn by the program generator's own σ builder (small values, edge
    values one time in five, a variable left uninitialized now and then),
    half of them of small values only.  The extra σ depend on the program
    alone (a Random seeded by its JSON), so a program is judged alike
    whenever it is judged (Hypothesis's replays, the reducer)."""
    from tfsem.generators.builder import build_inputs
    from tfsem.generators.draw import RandomDraw
    from tfsem.oracle.jsonio import program_to_json

    out: list[Sigma] = [(dict(feeds), dict(init))]
    seed = zlib.crc32(json.dumps(program_to_json(program), sort_keys=True).encode())
    d = RandomDraw(random.Random(seed))
    for k in range(count):
        out.append(build_inputs(d, program, edge_p=0.0 if k % 2 else 0.2))
    return out


def screen(original: Program, rewritten: Program, sigmas: list[Sigma], semantics: str,
           observe: str, max_seconds: float, max_states: int = SCREEN_MAX_STATES) -> dict | None:
    """The concrete check at each σ of `sigmas` in turn, within `max_seconds`
    in all: the first `unsound` verdict, or None (no σ showed a new outcome,
    or the time or an enumeration's states ran out)."""
    deadline = time.monotonic() + max_seconds
    for feeds, init in sigmas:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        verdict = concrete_check(original, rewritten, feeds, init, semantics, observe,
                                 max_seconds=left, max_states=max_states)
        if verdict["verdict"] == "unsound":
            return verdict
        if verdict["verdict"] == "unknown":
            return None    # a budget ran out: the next σ would not fare better
    return None


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

    def __init__(self, spec: str | Checker = "auto", concrete_seconds: float = 2.0,
                 screen: int = SCREEN_SIGMAS):
        self.spec = spec if isinstance(spec, str) else getattr(spec, "__name__", "custom")
        self.concrete_seconds = concrete_seconds
        #: σ screened beyond the drawn one before the symbolic checker (auto only)
        self.screen_sigmas = screen if spec == "auto" else 0
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
        if self.screen_sigmas and self.symbolic is not None:
            parts.append(f"concrete at the drawn σ and {self.screen_sigmas} more")
        if self.symbolic is not None:
            parts.append("symbolic" if self.spec in ("auto", "symbolic") else self.spec)
        if self.concrete:
            parts.append("concrete at the drawn σ")
        return " then ".join(parts)

    def __call__(self, original: Program, rewritten: Program, feeds: Mapping[str, Value],
                 init: Mapping[str, Value], semantics: str, observe: str, timeout: float) -> dict:
        verdict: dict | None = None
        if self.screen_sigmas and self.symbolic is not None:
            started = time.monotonic()
            try:
                found = screen(original, rewritten,
                               screen_sigmas(original, feeds, init, self.screen_sigmas),
                               semantics, observe, SCREEN_SHARE * timeout)
            except Exception:  # noqa: BLE001 - the screen is a shortcut: the checker decides
                found = None
            if found is not None:
                return found
            timeout = max(0.1 * timeout, timeout - (time.monotonic() - started))
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
