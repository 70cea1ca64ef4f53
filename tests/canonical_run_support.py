"""Helpers of the tests that compare canonical runs made two ways (the
straight line against the engine, the run without the per-node cache
against the run with it) on generated programs."""

from __future__ import annotations

import numpy as np

from tfsem.checking import check as C
from tfsem.generators.strategies import random_programs
from tfsem.oracle.values import Tensor, exact

#: the four (semantics, observe) settings, taken in turn
SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def bits(outcome):
    """An outcome's parts by their exact bits."""
    return [(k, exact(v).array.tobytes() if isinstance(exact(v), Tensor) else repr(exact(v)))
            for k, v in outcome.parts()]


def programs_without_control_flow(n: int, seed: int, max_nodes: int):
    """(i, program, semantics, observe, σ drawn as refutation draws them)
    for each of `random_programs(n, seed)` without control flow, the
    settings in turn."""
    for i, p in enumerate(random_programs(n, seed, max_nodes=max_nodes)):
        if p.has_control_flow:
            continue
        sem, obs = SETTINGS[i % 4]
        yield i, p, sem, obs, C._refute_sigmas(p, np.random.default_rng(i))
