"""Benchmark of the fast oracle against a naive firing-order enumerator.

    python benchmarks/oracle.py [--repeat 5] [--naive-limit 10] [--engine reference]

For each family of `tfsem.generators.families`, prints the number of outcomes,
states explored and the median wall time of the fast oracle over --repeat
runs (of --engine: reference by default, the engine this benchmark has
always measured; benchmarks/oracle_rf.py compares the engines), beside the
naive enumeration of every firing order (the step semantics
with no memoization) where that finishes within --naive-limit seconds.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

from tfsem.generators import families as F
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.semantics import reference_outcomes

CASES = (
    [("racy_pairs", (k,), "outputs+state", 0.2 if k == 50 else None) for k in (1, 2, 5, 10, 20, 50)]
    + [("blind_writers", (n,), "outputs", 1.0 if n == 8 else None) for n in (2, 4, 6, 8, 9)]
    + [("assign_adds", (n,), "outputs+state", 1.0 if n == 10 else None) for n in (2, 4, 6, 8, 10)]
    + [("lost_update", (k,), "outputs+state", 2.0 if k == 5 else None) for k in (2, 3, 4, 5, 6)]
    + [("figure1", (r, fn), "outputs+state", None) for fn in ("Add", "Concat") for r in (2, 3, 4, 5)]
    + [("chain", (n,), "outputs+state", 1.0 if n == 10000 else None) for n in (10, 100, 1000, 10000)]
)


def _naive(queue, family, params, observe):
    p, feeds, init = F.FAMILIES[family](*params)
    t = time.perf_counter()
    n = len(reference_outcomes(p, feeds, init, observe=observe, memo=False))
    queue.put((n, time.perf_counter() - t))


def naive_time(family, params, observe, limit):
    """Run the naive enumerator in a child process, killed after `limit` s."""
    queue = mp.Queue()
    proc = mp.Process(target=_naive, args=(queue, family, params, observe))
    proc.start()
    proc.join(limit)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None
    return queue.get() if not queue.empty() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--naive-limit", type=float, default=10.0)
    ap.add_argument("--only", default=None, help="run one family")
    ap.add_argument("--engine", choices=("reference", "readsfrom", "auto"), default="reference")
    args = ap.parse_args()
    print(f"{'family':<22} {'observe':<14} {'outcomes':>16} {'states':>8} "
          f"{'median s':>10} {'target s':>9} {'naive s':>10} {'ratio':>8}")
    for family, params, observe, target in CASES:
        if args.only and family != args.only:
            continue
        p, feeds, init = F.FAMILIES[family](*params)
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = outcome_set(p, feeds, init, observe=observe, engine=args.engine)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        naive = None
        if len(p.nodes) <= 40:
            naive = naive_time(family, params, observe, args.naive_limit)
        if naive is not None and naive[0] != result.count:
            raise SystemExit(f"MISMATCH on {family}{params}: naive {naive[0]} vs fast {result.count}")
        naive_s = f"{naive[1]:.4f}" if naive else f">{args.naive_limit:g}" if len(p.nodes) <= 40 else "-"
        ratio = f"{naive[1] / med:.0f}x" if naive else "-"
        name = f"{family}({', '.join(map(str, params))})"
        tgt = f"{target:g}" if target else ""
        flag = " MISSED" if target and med > target else ""
        print(f"{name:<22} {observe:<14} {result.count:>16} {result.states:>8} "
              f"{med:>10.4f} {tgt:>9} {naive_s:>10} {ratio:>8}{flag}", flush=True)


if __name__ == "__main__":
    main()
