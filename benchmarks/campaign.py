"""Campaign benchmark: how fast fuzzing finds the built-in unsound passes, how
small the shrunk counterexamples are, and how throughput scales with workers.

    python benchmarks/campaign.py                 # the full table (minutes)
    python benchmarks/campaign.py --seeds 3 --cap 20 --throughput-seconds 10   # quicker

1. Time to first finding, for each built-in pass that claims `unsound`, in
   the first cell where it does (median over seeds, each a fresh `tfsem
   verify`-style loop: sandbox start-up included).  Two times: the first
   failing example (before shrinking) and the first reported finding (after
   shrinking and the full check).
2. The size of that shrunk counterexample (nodes of the original program,
   median over seeds) beside the smallest known counterexample for the pass,
   a hand-made program that this script checks really is one.
3. Programs checked per second per worker: a campaign over four sound
   built-in passes (no findings, so no time goes to shrinking) in one cell,
   with 1 worker, then with 2; the speed-up is the ratio of programs per
   wall-clock second.  Slices are long enough (budget / 4 passes per worker)
   that start-up costs are a small part.

Targets (issue 7): median time to first finding under 5 s for every unsound
built-in; shrunk counterexamples at most 2 nodes larger than the smallest known.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tfsem.campaigns.campaign import CampaignSettings, run_campaign
from tfsem.campaigns.checks import concrete_check
from tfsem.campaigns.loop import FuzzLoop, LoopConfig
from tfsem.campaigns.targets import CELLS, cell_label
from tfsem.oracle import program as P
from tfsem.oracle.values import Tensor
from tfsem.rewrites import builtin_passes


def smallest_known() -> dict[str, tuple]:
    """Hand-made minimal counterexamples: pass -> (program, feeds, init, cell)."""
    t = Tensor
    return {
        # an unfetched write disappears (seed 000, footnote 7)
        "prune": (P.program([P.var("v", "x"), P.write("w", "v", "$b")], {}, ["x"]),
                  {"b": t(1)}, {"x": t(0)}, ("atomic", "outputs+state")),
        # two reads merged across the write ordered between them
        "cse-ignore-control": (P.program([P.var("v", "x"), P.read("r1", "v"), P.write("w", "v", "$b", "^r1"),
                                          P.read("r2", "v", "^w")], {"a": "r1", "c": "r2"}, ["x"]),
                               {"b": t(1)}, {"x": t(0)}, ("atomic", "outputs+state")),
        # two identical increments merged into one
        "cse-stateful": (P.program([P.var("v", "x"), P.assign("a1", "Add", "v", "$d"),
                                    P.assign("a2", "Add", "v", "$d")], {}, ["x"]),
                         {"d": t(1)}, {"x": t(0)}, ("atomic", "outputs+state")),
        # the read hoisted above the write ordered before it (seed 000 3.1.2)
        "hoist-reads": (P.program([P.var("v", "x"), P.write("w", "v", "$b"), P.read("r", "v", "^w")],
                                  {"out": "r"}, ["x"]),
                        {"b": t(1)}, {"x": t(0)}, ("atomic", "outputs+state")),
        # an increment split into read/add/write loses a concurrent write
        "split-assign": (P.program([P.var("v", "x"), P.assign("a", "Add", "v", "$d"),
                                    P.write("w", "v", "$e")], {}, ["x"]),
                         {"d": t(1), "e": t(5)}, {"x": t(0)}, ("atomic", "outputs+state")),
    }


def verify_known(name: str, entry: tuple) -> bool:
    program, feeds, init, (sem, obs) = entry
    rewritten = builtin_passes()[name](program)
    return concrete_check(program, rewritten, feeds, init, sem, obs)["verdict"] == "unsound"


def first_unsound_cell(p) -> tuple[str, str] | None:
    for c in CELLS:
        if p.claims.get(c) == "unsound":
            return c
    return None


def time_to_first(name: str, cell, seed: int, cap: float, max_nodes: int) -> dict:
    cfg = LoopConfig(name, cell[0], cell[1], max_nodes=max_nodes, seed=seed)
    holder: dict = {}
    loop = FuzzLoop(cfg, on_finding=lambda r: holder.setdefault("first", r),
                    should_stop=lambda: "first" in holder)
    started = time.monotonic()
    loop.run(cap)
    wall = time.monotonic() - started
    first = holder.get("first")
    return {"seed": seed, "found": first is not None, "failure_after": loop.first_failure_after,
            "report_after": loop.first_report_after, "size": first.size if first else None,
            "programs": loop.stats.programs, "wall": wall}


def med(xs: list[float | None]) -> float | None:
    vals = sorted(float("inf") if x is None else x for x in xs)
    if not vals:
        return None
    m = statistics.median(vals)
    return None if m == float("inf") else m


def fmt(x: float | None, unit: str = " s") -> str:
    return "not found" if x is None else f"{x:.2f}{unit}"


THROUGHPUT_PASSES = ["cse", "dce", "const-fold", "reduce-control"]


def throughput(seconds: float, workers: int, max_nodes: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        settings = CampaignSettings(passes=THROUGHPUT_PASSES, budget=seconds, out=d, workers=workers,
                                    cells=[("atomic", "outputs+state")], max_nodes=max_nodes,
                                    example_db="none", replay=False, seed=1)
        started = time.monotonic()
        import io
        result = run_campaign(settings, stream=io.StringIO(), live=False)
        wall = time.monotonic() - started
    programs = sum(t["programs"] for t in result.totals)
    worker_seconds = sum(t["seconds"] for t in result.totals)
    return {"workers": workers, "programs": programs, "wall": wall, "worker_seconds": worker_seconds,
            "per_worker_second": programs / worker_seconds if worker_seconds else 0.0,
            "per_wall_second": programs / wall if wall else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--cap", type=float, default=60.0, help="seconds per seed before giving up")
    ap.add_argument("--max-nodes", type=int, default=10)
    ap.add_argument("--throughput-seconds", type=float, default=30.0)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--passes", nargs="*", default=None, help="only these unsound passes")
    ap.add_argument("--json", default=None, help="also write the raw figures here")
    args = ap.parse_args(argv)

    passes = builtin_passes()
    known = smallest_known()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"seeds {args.seeds}, cap {args.cap:g} s, max nodes {args.max_nodes}", flush=True)
    rows, raw = [], {"ttff": {}, "throughput": []}
    for name, p in passes.items():
        cell = first_unsound_cell(p)
        if cell is None or (args.passes and name not in args.passes):
            continue
        runs = [time_to_first(name, cell, seed, args.cap, args.max_nodes) for seed in range(args.seeds)]
        raw["ttff"][name] = {"cell": cell_label(cell), "runs": runs}
        k = known.get(name)
        k_size = len(k[0].nodes) if k else None
        k_ok = verify_known(name, k) if k else False
        sizes = [r["size"] for r in runs if r["size"] is not None]
        row = {"pass": name, "cell": cell_label(cell),
               "found": f"{sum(r['found'] for r in runs)}/{len(runs)}",
               "failure": med([r["failure_after"] for r in runs]),
               "report": med([r["report_after"] for r in runs]),
               "size": statistics.median(sizes) if sizes else None,
               "max_size": max(sizes) if sizes else None,
               "known": k_size, "known_ok": k_ok}
        rows.append(row)
        print(f"  {name}: {row}", file=sys.stderr, flush=True)

    print()
    print("| pass | cell | found | median time to first failing example | median time to first "
          "finding (shrunk) | shrunk size (median / max) | smallest known |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        size = "-" if r["size"] is None else f"{r['size']:g} / {r['max_size']}"
        known_txt = "-" if r["known"] is None else f"{r['known']}" + ("" if r["known_ok"] else " (unverified)")
        print(f"| {r['pass']} | {r['cell']} | {r['found']} | {fmt(r['failure'])} | {fmt(r['report'])} "
              f"| {size} | {known_txt} |")

    if not args.skip_throughput:
        t1 = throughput(args.throughput_seconds, 1, args.max_nodes)
        t2 = throughput(args.throughput_seconds, 2, args.max_nodes)
        raw["throughput"] = [t1, t2]
        print()
        print(f"| workers | programs | wall s | programs/s per worker | programs/s (wall) |")
        print("|---|---|---|---|---|")
        for t in (t1, t2):
            print(f"| {t['workers']} | {t['programs']} | {t['wall']:.1f} | {t['per_worker_second']:.1f} "
                  f"| {t['per_wall_second']:.1f} |")
        speedup = t2["per_wall_second"] / t1["per_wall_second"] if t1["per_wall_second"] else 0.0
        print(f"\nspeed-up 1 -> 2 workers: {speedup:.2f}x (on {os.cpu_count()} CPUs)")
        raw["speedup"] = speedup
        print(f"(passes {', '.join(THROUGHPUT_PASSES)}, atomic/outputs+state, {args.throughput_seconds:g} s "
              f"each; load average now {os.getloadavg()[0]:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, **raw}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
