"""The search budget, below everything that can run out of it.

:class:`BudgetExceeded` is raised by the explorers (`explore.py`,
`readsfrom.py`, `symmetry.py`), by the reference semantics (`semantics.py`,
`controlflow.py`) and by `functions.too_large`; :class:`Budget` counts the
states and seconds of one search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

DEFAULT_MAX_STATES = 2_000_000
DEFAULT_MAX_SECONDS = 60.0


class BudgetExceeded(RuntimeError):
    """The search ran out of its budget; `which` is "states" or "seconds"."""

    def __init__(self, which: str, limit: float, explored: int):
        self.which, self.limit, self.explored = which, limit, explored
        unit = "states" if which == "states" else "s"
        super().__init__(f"budget exceeded: {which} (limit {limit:g} {unit}, "
                         f"{explored} states explored)")


@dataclass
class Budget:
    max_states: int = DEFAULT_MAX_STATES
    max_seconds: float = DEFAULT_MAX_SECONDS
    started: float = field(default_factory=time.monotonic)
    states: int = 0

    def tick(self) -> None:
        self.states += 1
        if self.states > self.max_states:
            raise BudgetExceeded("states", self.max_states, self.states)
        if self.states & 255 == 0 and time.monotonic() - self.started > self.max_seconds:
            raise BudgetExceeded("seconds", self.max_seconds, self.states)
