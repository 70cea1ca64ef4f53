"""The pass API: a rewrite pass is a function from program to program, with a
name, a one-line description, its documentation, and its *claims*.

A claim says, for one semantics mode ("atomic", "decomposed") and one observe
setting ("outputs+state", "outputs"), whether the pass is `sound` (for every
program P and every σ, Outcomes(pass(P), σ) ⊆ Outcomes(P, σ): SPEC section 3)
or `unsound` (some P and σ show an outcome of the rewrite that P lacks).  The
built-in passes' claims are the truth table against which tfsem's own
verifier is checked; a user's pass may claim nothing.

A pass must never mutate its input (programs are immutable values anyway) and
must be deterministic: the same program in, the same program out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from tfsem.oracle.jsonio import OBSERVE, SEMANTICS
from tfsem.oracle.program import Program, ProgramError, Violation

SOUND, UNSOUND = "sound", "unsound"
CLAIMS = (SOUND, UNSOUND)
#: The four (semantics, observe) cells of a pass's truth table, in display order.
CELLS: tuple[tuple[str, str], ...] = tuple((s, o) for s in SEMANTICS for o in OBSERVE)

Rewrite = Callable[[Program], Program]


class PassNotFound(ValueError):
    """No pass of that name, or a `module:attribute` spec that does not load."""


@dataclass(frozen=True, eq=False)
class Pass:
    """A rewrite pass.

    `claims` maps (semantics, observe) to "sound" or "unsound"; a cell left out
    is unclaimed.  `function` does the work; call the pass itself, which
    checks that the result is a Program.  `origin` says where the pass comes
    from ("builtin", "entry point DIST", or the `module:attribute` spec).
    """

    name: str
    description: str
    claims: Mapping[tuple[str, str], str]
    doc: str
    function: Rewrite = field(repr=False)
    origin: str = "builtin"
    #: the pass rewrites programs with control flow (SPEC section 9), and
    #: its claims speak of them; a pass without it refuses such programs
    control_flow: bool = False
    #: "module:attribute" of the generator its fuzzing uses (campaigns/loop.py:
    #: `(max_nodes, observe) -> strategy of (program, feeds, init)`), or None
    #: for tfsem's own (steered) generator
    generator: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"a pass name is a non-empty string without spaces, got {self.name!r}")
        description = (self.description or "").strip()
        if "\n" in description:
            raise ValueError(f"pass {self.name}: the description is one line")
        object.__setattr__(self, "description", description)
        claims = dict(self.claims or {})
        for cell, claim in claims.items():
            if cell not in CELLS:
                raise ValueError(f"pass {self.name}: claim for unknown cell {cell!r} "
                                 f"(semantics in {SEMANTICS}, observe in {OBSERVE})")
            if claim not in CLAIMS:
                raise ValueError(f"pass {self.name}: claim {claim!r} for {cell} is not "
                                 f"'sound' or 'unsound'")
        object.__setattr__(self, "claims", claims)
        if not callable(self.function):
            raise TypeError(f"pass {self.name}: function {self.function!r} is not callable")

    def __call__(self, program: Program) -> Program:
        if program.has_control_flow and not self.control_flow:
            # the built-in passes and their claims are about programs without
            # control flow (docs/semantics.md): refuse rather than rewrite wrongly
            raise ProgramError([Violation("program", "control-flow",
                                          f"pass {self.name} does not handle control flow (nodes "
                                          f"{', '.join(program.control_flow_nodes[:5])})")])
        result = self.function(program)
        if not isinstance(result, Program):
            raise TypeError(f"pass {self.name} returned {type(result).__name__}, not a Program")
        return result

    def claim(self, semantics: str, observe: str) -> str | None:
        """"sound", "unsound", or None when the pass claims nothing there."""
        return self.claims.get((semantics, observe))

    def cells(self, claim: str) -> list[tuple[str, str]]:
        """The cells where the pass makes this claim, in display order."""
        return [c for c in CELLS if self.claims.get(c) == claim]

    def claims_json(self) -> dict[str, dict[str, str]]:
        """{semantics: {observe: claim}}, claimed cells only."""
        out: dict[str, dict[str, str]] = {}
        for s, o in CELLS:
            if (s, o) in self.claims:
                out.setdefault(s, {})[o] = self.claims[(s, o)]
        return out

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description,
                "claims": self.claims_json(), "origin": self.origin, "doc": self.doc,
                "control_flow": self.control_flow}


def claims(atomic: tuple[str, str], decomposed: tuple[str, str]) -> dict[tuple[str, str], str]:
    """Build a truth table: each argument is (claim for outputs+state, claim for outputs)."""
    table = {}
    for semantics, pair in (("atomic", atomic), ("decomposed", decomposed)):
        for observe, claim in zip(OBSERVE, pair):
            table[(semantics, observe)] = claim
    return table


def first_line(text: str) -> str:
    for line in (text or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""
