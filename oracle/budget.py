"""The search budget, below everything that can run out of it.

:class:`BudgetExceeded` is raised by the explorers (`explore.py`,
`readsfrom.py`, `symmetry.py`), by the reference semantics (`semantics.py`,
`controlflow.py`) and by `functions.too_large`; :class:`Budget` counts the
states and seconds of one search.

:func:`hard_stop` sets, for the code it runs (this thread's context), a
time past which every search and every run that reads a clock stops as if
its own budget had run out: a check called from Python
(`checking.check_rewrite`) sets it at its timeout plus a margin, so that
its concrete stages end near its timeout (docs/budgets.md).  It only ever
makes a budget shorter: a search cut by it raises BudgetExceeded, a run
cut by it gives no outcome, exactly as at their own deadlines, which every
caller already handles (a budget can run out anywhere under load), so it
can turn a verdict into `unknown` or `no-counterexample`, never into
another `sound` or `unsound`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator

DEFAULT_MAX_STATES = 2_000_000
DEFAULT_MAX_SECONDS = 60.0

#: the hard stop of the code running in this context (time.monotonic()), or None
_HARD_STOP: ContextVar[float | None] = ContextVar("tfsem_hard_stop", default=None)


@contextmanager
def hard_stop(at: float | None) -> Iterator[None]:
    """Within this block, every Budget and every deadline passed through
    `bounded` ends by `at` (an outer hard stop that ends first stays)."""
    outer = _HARD_STOP.get()
    token = _HARD_STOP.set(outer if at is None else at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _HARD_STOP.reset(token)


def current_hard_stop() -> float | None:
    """The hard stop of the code running here (time.monotonic()), or None."""
    return _HARD_STOP.get()


def bounded(deadline: float | None) -> float | None:
    """`deadline` (time.monotonic(), None: none), or the hard stop where it
    ends first (docs/budgets.md: a check called from Python)."""
    hard = _HARD_STOP.get()
    if hard is None:
        return deadline
    return hard if deadline is None else min(deadline, hard)


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
    #: the hard stop of the context it was made in (`hard_stop`)
    hard: float | None = field(default_factory=_HARD_STOP.get)

    def tick(self) -> None:
        self.states += 1
        if self.states > self.max_states:
            raise BudgetExceeded("states", self.max_states, self.states)
        if self.states & 255 == 0 and time.monotonic() - self.started > self.max_seconds:
            raise BudgetExceeded("seconds", self.max_seconds, self.states)
        # (the hard stop every 16 states: a fresh search's first 256 states
        # of a large graph take seconds; a clock reading costs 0.1 µs)
        if self.hard is not None and self.states & 15 == 0 and time.monotonic() > self.hard:
            raise BudgetExceeded("seconds", self.max_seconds, self.states)
