"""Benchmark of the refinement checker: time to verdict and share of `unknown`.

    python benchmarks/check.py [--timeout 10] [--programs 15] [--sizes 10,20,40]
                               [--seed 0] [--skip-corpus] [--skip-generated]

Two tables:

* the case corpus (tests/cases/*.json): every case checked once at the
  timeout, with the median and 90th percentile time to verdict, the share of
  `unknown`, and how many verdicts match the case's expectation;
* generated programs (`tfsem.generators.strategies.random_programs`, about
  10, 20 and 40 nodes: between 80% and 100% of the size) under each built-in
  pass: the pass rewrites each program, and the checker judges the pair under
  one of the four (semantics, observe) settings in turn.  Columns: median and
  p90 time to verdict, share of `unknown`, the verdicts, and whether any
  verdict contradicts the pass's claim for its setting (`unsound` where it
  claims `sound`).

Targets (issue 5): median under 100 ms at 20 nodes, under 1% `unknown`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from tfsem.checking import DEFAULT_TIMEOUT, check_case, check_rewrite
from tfsem.oracle.jsonio import load_case

SETTINGS = [("atomic", "outputs+state"), ("atomic", "outputs"),
            ("decomposed", "outputs+state"), ("decomposed", "outputs")]
ROOT = Path(__file__).resolve().parent.parent
SHORT = {"sound": "S", "unsound": "U", "no-counterexample": "N", "unknown": "?", "invalid": "I"}


def p90(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]


def row(label: str, times: list[float], verdicts: Counter, extra: str = "") -> str:
    n = len(times)
    unknown = 100.0 * verdicts.get("unknown", 0) / n if n else 0.0
    counts = " ".join(f"{SHORT[v]}{verdicts[v]}" for v in SHORT if verdicts.get(v))
    return (f"| {label:<22} | {n:>4} | {1000 * statistics.median(times):>9.1f} | "
            f"{1000 * p90(times):>9.1f} | {unknown:>8.1f}% | {counts:<22} | {extra:<9} |")


HEADER = ("| {:<22} | {:>4} | {:>9} | {:>9} | {:>9} | {:<22} | {:<9} |".format(
    "", "n", "median ms", "p90 ms", "unknown", "verdicts", ""))
RULE = "|" + "|".join("-" * w for w in (24, 6, 11, 11, 11, 24, 11)) + "|"


def corpus(timeout: float) -> None:
    cases = sorted((ROOT / "tests" / "cases").glob("*.json"))
    if not cases:
        print("(no cases in tests/cases)")
        return
    times, verdicts, matched = [], Counter(), 0
    for path in cases:
        case = load_case(path)
        t = time.perf_counter()
        v = check_case(case, timeout=timeout)
        times.append(time.perf_counter() - t)
        verdicts[v.verdict] += 1
        matched += v.verdict == case.expect
    print("Case corpus (tests/cases), timeout", f"{timeout:g} s")
    print(HEADER.replace("|" + " " * 24 + "|", "| {:<22} |".format("corpus"), 1))
    print(RULE)
    print(row("all cases", times, verdicts, f"{matched}/{len(cases)} ok"))
    print()


def generated(timeout: float, count: int, sizes: list[int], seed: int) -> None:
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites import builtin_passes

    passes = builtin_passes()
    for size in sizes:
        programs = random_programs(count, seed=seed, max_nodes=size, min_nodes=max(1, int(0.8 * size)))
        mean_nodes = statistics.mean(len(p.nodes) for p in programs)
        print(f"Generated programs of about {size} nodes ({count} per pass, mean "
              f"{mean_nodes:.1f} nodes), timeout {timeout:g} s")
        print(HEADER.replace("|" + " " * 24 + "|", "| {:<22} |".format("pass"), 1).replace(
            "|           |", "| contra-   |"))
        print(RULE)
        all_times, all_verdicts, contradictions = [], Counter(), 0
        for name, rewrite in passes.items():
            times, verdicts, bad = [], Counter(), 0
            for i, p in enumerate(programs):
                semantics, observe = SETTINGS[i % len(SETTINGS)]
                q = rewrite(p)
                t = time.perf_counter()
                v = check_rewrite(p, q, semantics, observe, timeout=timeout)
                times.append(time.perf_counter() - t)
                verdicts[v.verdict] += 1
                if v.verdict == "unsound" and rewrite.claim(semantics, observe) == "sound":
                    bad += 1
                    print(f"  CONTRADICTION: {name} on program {i} ({semantics}, {observe})",
                          file=sys.stderr)
            print(row(name, times, verdicts, f"{bad} contra"), flush=True)
            all_times += times
            all_verdicts += verdicts
            contradictions += bad
        print(row(f"all passes, {size} nodes", all_times, all_verdicts, f"{contradictions} contra"))
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--programs", type=int, default=15, help="programs per pass and size")
    ap.add_argument("--sizes", default="10,20,40")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--skip-generated", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    if not args.skip_corpus:
        corpus(args.timeout)
    if not args.skip_generated:
        generated(args.timeout, args.programs, [int(s) for s in args.sizes.split(",")], args.seed)
    print(f"(total {time.perf_counter() - started:.0f} s; verdicts: S sound, U unsound, "
          "N no-counterexample, ? unknown, I invalid)")


if __name__ == "__main__":
    main()
