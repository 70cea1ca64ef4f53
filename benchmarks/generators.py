"""Benchmark of the program generators (issue 3).

Measures, for the seeded generator (`random_programs`, behind `tfsem
generate`) and the Hypothesis strategy (`programs()`):

- programs per second;
- validity rate (must be 100%): `validate` finds nothing and the JSON text
  loads back to an equal program;
- share of racy programs (`has_race`);
- distribution of sizes and of operation kinds;
- how well a planted failure shrinks: Hypothesis's `find` looks for a program
  of up to 40 nodes with a lost update (`has_lost_update`) and with a race
  (`has_race`); the table gives the median size of the first program found and
  of the shrunk one, over several seeds.

    python benchmarks/generators.py            # full run (a few minutes)
    python benchmarks/generators.py --quick    # smaller counts
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter

from hypothesis import HealthCheck, find, given, settings

from tfsem.generators.builder import all_op_kinds
from tfsem.generators.stats import summarize
from tfsem.generators.strategies import has_lost_update, has_race, programs, random_programs
from tfsem.oracle.jsonio import dumps, program_from_json, program_to_json
from tfsem.oracle.program import validate


def valid(p) -> bool:
    return not validate(p) and program_from_json(json.loads(dumps(program_to_json(p)))) == p


def hypothesis_programs(n: int, max_nodes: int) -> tuple[list, float]:
    out = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_nodes=max_nodes))
    def collect(p):
        out.append(p)

    t = time.perf_counter()
    collect()
    return out, time.perf_counter() - t


def seeded_programs(n: int, max_nodes: int) -> tuple[list, float]:
    t = time.perf_counter()
    ps = random_programs(n, seed=1, max_nodes=max_nodes)
    return ps, time.perf_counter() - t


def shrink(condition, max_nodes: int, seed: int) -> tuple[int, int, float]:
    first: list[int] = []

    def check(p) -> bool:
        hit = condition(p)
        if hit and not first:
            first.append(len(p.nodes))
        return hit

    t = time.perf_counter()
    p = find(programs(max_nodes=max_nodes), check,
             settings=settings(database=None, max_examples=1000, deadline=None,
                               suppress_health_check=list(HealthCheck)),
             random=random.Random(seed))
    return first[0], len(p.nodes), time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts")
    args = ap.parse_args(argv)
    n_seeded, n_hyp, n_shrink = (500, 200, 3) if args.quick else (5000, 1000, 10)

    print("== generation (max_nodes as given; Hypothesis derandomized) ==")
    header = f"{'source':<24}{'max':>5}{'programs':>10}{'prog/s':>10}{'valid':>8}{'racy':>8}" \
             f"{'nodes med':>11}{'mean':>7}"
    print(header)
    print("-" * len(header))
    summaries = {}
    for source, make, n in (("random_programs (seed 1)", seeded_programs, n_seeded),
                            ("programs() Hypothesis", hypothesis_programs, n_hyp)):
        for max_nodes in (9, 12, 40):
            ps, seconds = make(n, max_nodes)
            ok = sum(map(valid, ps))
            s = summarize(ps)
            summaries[(source, max_nodes)] = s
            print(f"{source:<24}{max_nodes:>5}{len(ps):>10}{len(ps) / seconds:>10.0f}"
                  f"{100 * ok / len(ps):>7.1f}%{100 * s.racy_share:>7.1f}%"
                  f"{statistics.median(s.sizes):>11g}{statistics.mean(s.sizes):>7.2f}")

    for key in (("random_programs (seed 1)", 12), ("programs() Hypothesis", 12)):
        s = summaries[key]
        print(f"\n== {key[0]}, max_nodes {key[1]}: sizes (nodes: programs) ==")
        print("  " + "  ".join(f"{k}:{v}" for k, v in s.size_histogram()))
        total = sum(s.op_kinds.values())
        print(f"== operation kinds (share of {total} nodes) ==")
        kinds = Counter({k: s.op_kinds.get(k, 0) for k in all_op_kinds()})
        row = [f"{k} {100 * v / total:.1f}%" for k, v in kinds.most_common()]
        for i in range(0, len(row), 6):
            print("  " + ", ".join(row[i:i + 6]))
        print("== programs with each feature ==")
        print("  " + ", ".join(f"{k} {100 * v / s.count:.0f}%" for k, v in sorted(s.features.items())))

    print(f"\n== shrinking a planted failure (find, programs(max_nodes=40), {n_shrink} seeds) ==")
    header = f"{'property':<18}{'first found med':>17}{'shrunk med':>12}{'shrunk max':>12}{'s med':>8}"
    print(header)
    print("-" * len(header))
    for name, condition in (("lost update", has_lost_update), ("race", has_race)):
        rows = [shrink(condition, 40, seed) for seed in range(n_shrink)]
        firsts, shrunk, secs = zip(*rows)
        print(f"{name:<18}{statistics.median(firsts):>17g}{statistics.median(shrunk):>12g}"
              f"{max(shrunk):>12}{statistics.median(secs):>8.1f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
