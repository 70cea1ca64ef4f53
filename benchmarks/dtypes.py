"""Benchmark of checking per dtype (SPEC section 8).

    python benchmarks/dtypes.py [--programs 20] [--max-nodes 8] [--repeat 3]

The same generated program shapes (`random_programs(seed=40)`, restricted to
Add, Sub, Mul, Max, Min, Neg, Const and variable accesses) in each dtype, each
checked against a mutant of itself (one Add turned Sub, Max turned Min, ...):
the median time of one `check_rewrite`, the verdicts, and the ratio to int64.
Bit-vectors narrower than 64 bits and the small float formats change what
Z3 has to solve; this says by how much.  All dtypes run side by side in one
process, so their times compare.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections import Counter

from tfsem.checking import check_rewrite
from tfsem.generators.strategies import random_programs
from tfsem.oracle.values import DTYPES

OPS = {"Add", "Sub", "Mul", "Max", "Min", "Neg", "Const", "Var", "Read", "Write", "AssignAdd"}
SWAP = {"Add": "Sub", "Sub": "Add", "Mul": "Add", "Max": "Min", "Min": "Max"}


def mutant(p):
    for k, n in enumerate(p.nodes):
        if n.op in SWAP:
            nodes = list(p.nodes)
            nodes[k] = n.replace(op=SWAP[n.op])
            return dataclasses.replace(p, nodes=tuple(nodes))
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=20)
    ap.add_argument("--max-nodes", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for dtype in [d for d in DTYPES if d != "bool"]:
        pairs = [(p, q) for p in random_programs(args.programs * 2, seed=40,
                                                 max_nodes=args.max_nodes, dtype=dtype, ops=OPS)
                 if (q := mutant(p)) is not None][:args.programs]
        times, verdicts = [], Counter()
        for p, q in pairs:
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                v = check_rewrite(p, q, timeout=30)
                runs.append(time.perf_counter() - t)
            verdicts[v.verdict] += 1
            times.append(statistics.median(runs))
        rows.append((dtype, len(pairs), statistics.median(times), sum(times), dict(verdicts)))
    base = next(r[2] for r in rows if r[0] == "int64")
    print(f"{'dtype':9} {'pairs':>5} {'median ms':>10} {'total s':>8} {'vs int64':>8}  verdicts")
    for dtype, n, med, total, verdicts in rows:
        print(f"{dtype:9} {n:5d} {med * 1000:10.1f} {total:8.2f} {med / base:8.2f}  {verdicts}")


if __name__ == "__main__":
    main()
