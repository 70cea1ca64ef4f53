"""Replaying a schedule of a program with control flow on an array backend.

The stepping (frames, iterations, dead values, Merge choices) is the
reference machine's (oracle/controlflow.py, SPEC section 9); every registry
function a step applies runs through the backend's own kernels
(:func:`backends.execute.apply_function`, with its error discipline) on
device arrays instead of the oracle's `Function.apply`.  The checker replays
a control-flow counterexample here: the outcome must be the oracle's.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.graph import graph_of
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import Program
from tfsem.oracle.values import Error, Tensor, Value

from .arraymodule import Backend, get_backend
from .execute import apply_function


class DeviceMachine(cf.Machine):
    """The reference machine with functions run on `backend`'s arrays."""

    def __init__(self, p: Program, backend: Backend, semantics: str, max_iterations: int):
        super().__init__(p, graph_of(p), semantics, max_iterations)
        self.backend = backend

    def apply_function(self, n, data: list) -> list:
        b = self.backend
        args = [d if isinstance(d, Error) else b.to_device(d.array) for d in data]
        results = apply_function(fns.get(n.op), args, n.attrs, b.xp)
        arrays = [r for r in results if not isinstance(r, Error)]
        host = iter(b.to_host(arrays))
        return [r if isinstance(r, Error) else Tensor(next(host)) for r in results]


def replay_outcome(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                   schedule: Sequence[str], semantics: str = "atomic",
                   observe: str = "outputs+state", max_iterations: int | None = None,
                   backend: Backend | str = "numpy") -> Outcome:
    """The outcome of `schedule` on `backend`; ValueError when a step of it
    may not fire (or the run goes on after it)."""
    b = get_backend(backend) if isinstance(backend, str) else backend
    m = DeviceMachine(p, b, semantics, max_iterations or cf.DEFAULT_MAX_ITERATIONS)
    return m.outcome(cf.fire_schedule(m, feeds, init, schedule), observe)
