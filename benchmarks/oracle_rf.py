"""The reads-from engine beside the reference engine, in one run.

    python benchmarks/oracle_rf.py [--max-seconds 20] [--only FAMILY] [--quick]

For each family (generators/families.py) and size, both engines compute the
outcome set of the atomic semantics under the same budget (--max-seconds,
2,000,000 states); the table gives outcomes, the reference's memoized states,
the reads-from engine's classes and linearization-search states, each time,
and whether the two sets are equal.  A cell past the budget reads `budget`
(no set to compare).  Anchor figures of GenMC / Nidhugg (executions, from
/work/shared/measurements/performance.md) are printed where they exist.

Families: lost_update_used(k) (Read -> Add 1 -> Write, k times, reads fetched,
x observed), blind_writers(n) (n Writes and one fetched Read of x),
writer_reader_pairs(n) (Write then Read, n pairs on one x), store_buffering(k)
and iriw(k) (k threads), figure1(r, Concat).
"""

from __future__ import annotations

import argparse
import time

from tfsem.generators import families as F
from tfsem.oracle.explore import BudgetExceeded, outcome_set
from tfsem.oracle.readsfrom import outcome_set_rf

ANCHORS = {("blind_writers", (7,), "outputs"): "Nidhugg-rf 8 executions, 0.05 s",
           ("blind_writers", (7,), "outputs+state"): "rf: 56 executions"}


def cases(quick: bool):
    lu = range(2, 7) if quick else range(2, 11)
    bw = (4, 8, 12) if quick else (4, 6, 7, 8, 10, 12)
    wr = (2, 3, 4) if quick else (2, 3, 4, 5, 6)
    sb = (4, 8) if quick else (4, 6, 8, 10, 12)
    ir = (4, 6) if quick else (4, 5, 6, 7, 8)
    f1 = (3, 5) if quick else range(2, 9)
    return ([("lost_update_used", (k,), "outputs+state") for k in lu]
            + [("blind_writers", (n,), obs) for n in bw for obs in ("outputs", "outputs+state")]
            + [("writer_reader_pairs", (n,), "outputs+state") for n in wr]
            + [("store_buffering", (k,), "outputs") for k in sb]
            + [("iriw", (k,), "outputs") for k in ir]
            + [("figure1", (r, "Concat"), "outputs+state") for r in f1])


def run(engine, p, feeds, init, observe, max_seconds):
    t = time.perf_counter()
    try:
        result = engine(p, feeds, init, "atomic", observe, max_seconds=max_seconds)
    except BudgetExceeded:
        return None, time.perf_counter() - t
    return result, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-seconds", type=float, default=20.0,
                    help="budget of each engine on each case (default 20)")
    ap.add_argument("--only", default=None, help="run one family")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    args = ap.parse_args()
    if not 0 < args.max_seconds <= 3600:
        ap.error("--max-seconds: between 0 and 3600")
    print(f"| family | observe | outcomes | ref states | ref s | rf classes | rf states "
          f"| rf s | speed-up | equal | anchor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    skip_ref: set[str] = set()
    skip_rf: set[str] = set()
    for family, params, observe in cases(args.quick):
        if args.only and family != args.only:
            continue
        p, feeds, init = F.FAMILIES[family](*params)
        group = f"{family}/{observe}"
        ref, ref_s = (None, None) if group in skip_ref else run(
            outcome_set, p, feeds, init, observe, args.max_seconds)
        rf, rf_s = (None, None) if group in skip_rf else run(
            outcome_set_rf, p, feeds, init, observe, args.max_seconds)
        if ref is None:
            skip_ref.add(group)                      # larger sizes would run out too
        if rf is None:
            skip_rf.add(group)
        outcomes = (ref or rf).count if (ref or rf) else "?"
        equal = "-" if ref is None or rf is None else ("yes" if set(ref) == set(rf) else "NO")
        speed = f"{ref_s / rf_s:.1f}x" if ref and rf and rf_s > 0 else "-"

        def cell(r, s, attr):
            if s is None:
                return "skipped"
            return "budget" if r is None else f"{getattr(r, attr)}"

        def secs(r, s):
            return "skipped" if s is None else (f">{args.max_seconds:g}" if r is None else f"{s:.3f}")

        name = f"{family}({', '.join(map(str, params))})"
        print(f"| {name} | {observe} | {outcomes} | {cell(ref, ref_s, 'states')} | {secs(ref, ref_s)} "
              f"| {cell(rf, rf_s, 'classes')} | {cell(rf, rf_s, 'states')} | {secs(rf, rf_s)} "
              f"| {speed} | {equal} | {ANCHORS.get((family, params, observe), '')} |", flush=True)
        if equal == "NO":
            raise SystemExit(f"MISMATCH on {name} ({observe})")


if __name__ == "__main__":
    main()
