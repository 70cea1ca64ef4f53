"""Hypothesis strategies of valid programs and their inputs, and the seeded
generator that `tfsem generate` and the fuzzers use.

    >>> from hypothesis import given
    >>> from tfsem.generators.strategies import programs, inputs_for
    >>> @given(programs(max_nodes=9).flatmap(lambda p: inputs_for(p).map(lambda s: (p, s))))
    ... def test_something(case): ...

Both paths run the same builder (`builder.py`) against the `Draw` interface
(`draw.py`): Hypothesis choices for shrinking, a seeded `random.Random` for
reproducible files.
"""

from __future__ import annotations

import random
from typing import Iterable

from hypothesis import strategies as st

from tfsem.oracle.program import Program
from tfsem.oracle.values import Value

from .builder import Config, build_inputs, build_program
from .draw import HypothesisDraw, RandomDraw
from .races import has_lost_update, has_race, lost_updates, race_count, races

__all__ = ["programs", "inputs_for", "has_race", "random_programs", "random_inputs",
           "races", "race_count", "lost_updates", "has_lost_update", "Config"]

Inputs = tuple[dict[str, Value], dict[str, Value]]


def programs(max_nodes: int = 12, n_variables: int | None = None,
             ops: Iterable[str] | None = None, dtype: str = "int64",
             control_density: float = 0.3, observe_state: bool = True,
             min_nodes: int = 1) -> st.SearchStrategy[Program]:
    """Valid programs of `min_nodes` to `max_nodes` nodes (Var nodes count).

    - `n_variables`: how many variables are declared (x0, x1, ...); None draws
      1 to 3 per program.  0 gives programs of functions only.
    - `ops`: the operation kinds allowed: registry function names (`Add`,
      `Const`, ...), `Read`, `Write`, `Var` (a standalone handle), `Assign`
      (Assign-f for every assignable f) or `Assign<F>` (`AssignAdd`, ...).
      Var nodes feeding accesses are always allowed.  None allows everything.
    - `dtype`: any of DTYPES (SPEC section 8), for variables, feeds and constants (a
      few feeds of the other dtype appear in the swarm's "mixed" programs).
    - `control_density`: chance of each further control input of a node.
    - `observe_state`: False when only outputs will be observed: outputs are
      fetched more often, and a program with tensor ports fetches one at least.

    Each program switches features off at random (swarm testing).  Most
    programs have a race (`has_race`; 60% to 80% at the defaults, see
    benchmarks/generators.py): by design, half of them end with a planted one.
    Programs shrink towards fewer nodes (each node is a span the shrinker can
    delete), fewer edges, Reads and Writes, scalars and small values.
    """
    cfg = Config(max_nodes=max_nodes, min_nodes=min_nodes, n_variables=n_variables,
                 ops=None if ops is None else frozenset(ops), dtype=dtype,
                 control_density=control_density, observe_state=observe_state)
    return _programs(cfg)


@st.composite
def _programs(draw, cfg: Config) -> Program:
    return build_program(HypothesisDraw(draw), cfg)


def inputs_for(program: Program, uninitialized_p: float = 0.15,
               edge_p: float = 0.2) -> st.SearchStrategy[Inputs]:
    """(feeds, init) for `program`: every feed of its declared dtype and shape,
    initial values for the variables (each left uninitialized with chance
    `uninitialized_p`), elements small or, with chance `edge_p`, edge values
    (0, -1, int64 extremes; -0.0, NaN, +-inf, float32 extremes)."""
    return _inputs(program, uninitialized_p, edge_p)


@st.composite
def _inputs(draw, program: Program, uninitialized_p: float, edge_p: float) -> Inputs:
    return build_inputs(HypothesisDraw(draw), program, uninitialized_p, edge_p)


def random_programs(count: int, seed: int, max_nodes: int = 12, **options) -> list[Program]:
    """`count` programs, the same ones for the same seed and options, drawn by
    the builder of `programs()` from seeded random numbers.  Program i depends
    only on (seed, i), so a smaller count gives a prefix of a larger one.
    `options` are those of `programs()`."""
    cfg = Config(max_nodes=max_nodes, **options)
    return [build_program(RandomDraw(_rng(seed, i)), cfg) for i in range(count)]


def random_inputs(program: Program, seed: int, **options) -> Inputs:
    """(feeds, init) for `program`, deterministic for a seed (see inputs_for)."""
    return build_inputs(RandomDraw(random.Random(f"tfsem-inputs:{seed}")), program, **options)


def _rng(seed: int, i: int) -> random.Random:
    # A str seed is hashed with SHA-512 by random.seed: stable across runs and
    # Python processes (unlike hash()).
    return random.Random(f"tfsem-generate:{seed}:{i}")
