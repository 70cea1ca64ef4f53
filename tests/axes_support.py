"""Axis lists the op-model tests try: every subset of a tensor's axes."""

from __future__ import annotations

import itertools


def axes_of(rank):
    """Every subset of the axes of a rank-`rank` tensor, each non-empty one
    also written with negative axes."""
    for k in range(rank + 1):
        for sub in itertools.combinations(range(rank), k):
            yield sub
            if sub:
                yield tuple(x - rank for x in sub)
