"""Exact outcome counts of a family, computed without enumerating outcomes.

`lost_update_used(k)` (generators/families.py: k unordered threads, each
Read x -> Add 1 -> Write x, every read fetched, x observed) has outcomes
(r_0, ..., r_{k-1}, final x).  The threads are identical and unordered, so
the outcome set is closed under permuting the threads: it is the union, over
the reachable pairs (multiset M of the values read, final x), of every
arrangement of M over the threads, and its size is the sum of the multinomial
coefficients k! / prod(multiplicity!) over those pairs.  The reachable pairs
come from a search over abstract states (x, multiset of values read but not
yet written back, multiset of values read so far): thousands of states where
the outcome set has millions of elements (k = 8: 4,544 states, 1,276,545
outcomes).  Tested equal to both engines' counts for small k
(tests/test_oracle_readsfrom.py); benchmarks/oracle_rf.py prints it beside
the engines' figures.
"""

from __future__ import annotations

import math
from collections import Counter


def lost_update_used_counts(k: int) -> tuple[int, int]:
    """(outcomes with x observed, outcomes of the outputs alone) of
    lost_update_used(k), atomic or decomposed (the program has no Assign-f
    but Writes, so the two modes agree), for x starting at any value."""
    if not 1 <= k <= 40:
        raise ValueError(f"k = {k}: between 1 and 40")
    layer = {(0, (), ())}
    final: set[tuple[tuple[int, ...], int]] = set()
    while layer:
        nxt = set()
        for x, pending, reads in layer:
            if len(reads) == k and not pending:
                final.add((reads, x))
                continue
            if len(reads) < k:                        # a thread reads x
                nxt.add((x, tuple(sorted(pending + (x,))), tuple(sorted(reads + (x,)))))
            for v in set(pending):                    # a thread writes back v + 1
                rest = list(pending)
                rest.remove(v)
                nxt.add((v + 1, tuple(rest), reads))
        layer = nxt

    def arrangements(reads: tuple[int, ...]) -> int:
        n = math.factorial(len(reads))
        for mult in Counter(reads).values():
            n //= math.factorial(mult)
        return n

    with_state = sum(arrangements(reads) for reads, _x in final)
    outputs = sum(arrangements(reads) for reads in {reads for reads, _x in final})
    return with_state, outputs
