"""`refute.canonical_outcome` without explore.py's per-node function cache
(`CANONICAL_RUN_UNCACHED`: one run fires each node once), against the run
with it: the same outcome, bit for bit, and the same schedule."""

from __future__ import annotations

from tfsem.checking import refute as ref
from canonical_run_support import bits, programs_without_control_flow


def test_the_run_without_the_per_node_cache_is_the_run_with_it(monkeypatch):
    compared = 0
    for i, p, sem, obs, sigmas in programs_without_control_flow(120, 41, max_nodes=12):
        for _ in range(3):
            feeds, init = next(sigmas)
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
            assert bits(fast[0]) == bits(slow[0]), i
            compared += 1
    assert compared >= 200, compared
