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
#: The sessions a session pass's claims speak of (SPEC section 10): one run;
#: two runs one after the other; 2-3 concurrent runs; the same with a queue.
ONE_RUN, SEQUENTIAL_RUNS = "one run", "sequential runs"
CONCURRENT_RUNS, CONCURRENT_QUEUES = "concurrent runs", "concurrent runs with queues"
SESSION_KINDS = (ONE_RUN, SEQUENTIAL_RUNS, CONCURRENT_RUNS, CONCURRENT_QUEUES)

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
    #: a pass over a session's program (rewrites/sections.py): a function on
    #: the program JSON with `"critical_section"` fields and `"queues"`
    #: (oracle/blocking.py), which `function` (on a plain program, which has
    #: none) cannot see; `tfsem verify` and `tfsem fuzz` judge it on
    #: generated sessions (campaigns/session_passes.py)
    session_function: Callable[[dict], dict] | None = field(default=None, repr=False)
    #: its claims per (semantics, session kind): SESSION_KINDS
    session_claims: Mapping[tuple[str, str], str] = field(default_factory=dict)

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
        for (sem, kind), claim in dict(self.session_claims or {}).items():
            if sem not in SEMANTICS or kind not in SESSION_KINDS or claim not in CLAIMS:
                raise ValueError(f"pass {self.name}: session claim {claim!r} for "
                                 f"({sem!r}, {kind!r}) (semantics in {SEMANTICS}, kinds in "
                                 f"{SESSION_KINDS})")
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
        out = {"name": self.name, "description": self.description,
               "claims": self.claims_json(), "origin": self.origin, "doc": self.doc,
               "control_flow": self.control_flow}
        if self.session_function is not None:
            out["session_claims"] = {sem: {k: c for (s2, k), c in self.session_claims.items()
                                           if s2 == sem} for sem in SEMANTICS}
        return out


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
