"""`refute.canonical_outcome` without explore.py's per-node function cache
(`CANONICAL_RUN_UNCACHED`: one run fires each node once), against the run
with it: the same outcome, bit for bit, and the same schedule."""

from __future__ import annotations

import numpy as np

from tfsem.checking import check as C
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle.values import Tensor, exact

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _bits(outcome):
    return [(k, exact(v).array.tobytes() if isinstance(exact(v), Tensor) else repr(exact(v)))
            for k, v in outcome.parts()]


def test_the_run_without_the_per_node_cache_is_the_run_with_it(monkeypatch):
    compared = 0
    for i, p in enumerate(random_programs(120, 41, max_nodes=12)):
        if p.has_control_flow:
            continue
        sem, obs = SETTINGS[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(3):
            feeds, init = next(gen)
            answers = []
            for uncached in (True, False):
                monkeypatch.setattr(ref, "CANONICAL_RUN_UNCACHED", uncached)
                try:
                    answers.append(ref.canonical_outcome(p, feeds, init, sem, obs))
                except Exception as exc:          # (a function that cannot run here)
                    answers.append(type(exc).__name__)
            fast, slow = answers
            if isinstance(fast, str) or isinstance(slow, str):
                assert fast == slow, (i, fast, slow)
                continue
            assert fast[0] == slow[0] and fast[1] == slow[1], (i, sem, obs)
            assert _bits(fast[0]) == _bits(slow[0]), i
            compared += 1
    assert compared >= 200, compared
