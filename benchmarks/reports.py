"""Benchmark of the report pages: time and size of a finding page.

    python benchmarks/reports.py [--sizes 25,100,500,1000,3000,10000] [--seed 0] [--programs 40]

Two tables:

* chains of N nodes whose rewrite changes one node in the middle: the time
  to write the finding page under the default drawing budget (past it, the
  page draws the part around the change), and its size;
* unsound rewrites by `hoist-reads` of generated programs of about 25 nodes:
  the page that draws the steps that matter (the default) beside the page
  that draws every step (the all-steps page): pictures and bytes.
"""

from __future__ import annotations

import argparse
import time

from tfsem.checking import check_rewrite
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import make_case
from tfsem.reports.finding import render_finding_page
from tfsem.rewrites import get_pass


def chain(n: int):
    nodes = [P.var("v", "x"), P.read("r0", "v")] + [P.apply(f"r{i}", "Neg", f"r{i - 1}") for i in range(1, n - 1)]
    p = P.program(nodes, {"out": f"r{n - 2}"}, ["x"])
    mid = f"r{(n - 2) // 2}"
    q = p.replace(nodes=tuple(x.replace(op="Copy") if x.name == mid else x for x in p.nodes))
    return p, q


def big_pages(sizes: list[int]) -> None:
    print("| nodes | page time (s) | page size (KB) | drawn |")
    print("|---:|---:|---:|---|")
    for n in sizes:
        p, q = chain(n)
        t = time.perf_counter()
        html = render_finding_page(make_case(p, q), {"verdict": "unsound"})
        dt = time.perf_counter() - t
        drawn = "part around the change" if "past the drawing budget" in html else "whole"
        print(f"| {n} | {dt:.2f} | {len(html.encode()) / 1024:.0f} | {drawn} |")


def generated_pages(seed: int, programs: int) -> None:
    from tfsem.generators.strategies import random_programs

    found = [p for p in random_programs(programs, seed, max_nodes=25) if len(p.nodes) >= 18]
    hoist = get_pass("hoist-reads")
    print("| nodes | steps | pictures (default) | KB (default) | pictures (all steps) | KB (all steps) |")
    print("|---:|---:|---:|---:|---:|---:|")
    shown = 0
    for p in found:
        q = hoist(p)
        v = check_rewrite(p, q, timeout=10).to_json()
        if v.get("verdict") != "unsound":
            continue
        case = make_case(p, q)
        key = render_finding_page(case, v, steps_href="x-steps.html")
        every = render_finding_page(case, v, steps="all")
        steps = len(v["counterexample"]["schedule"])
        pictures = 'class="graph state-graph'
        print(f"| {len(p.nodes)} | {steps} | {key.count(pictures)} | {len(key.encode()) / 1024:.0f} | "
              f"{every.count(pictures)} | {len(every.encode()) / 1024:.0f} |")
        shown += 1
        if shown >= 5:
            break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="25,100,500,1000,3000,10000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--programs", type=int, default=40)
    args = ap.parse_args()
    big_pages([int(s) for s in args.sizes.split(",")])
    print()
    generated_pages(args.seed, args.programs)


if __name__ == "__main__":
    main()
