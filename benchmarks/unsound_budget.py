"""Benchmark: does a check end within its budget when it ends `unsound`?

    python benchmarks/unsound_budget.py [--timeout 2] [--programs 6] [--max-nodes 400]
        [--seed 0] [--passes split-assign,hoist-reads,cse-ignore-control,cse-stateful]
        [--baseline-commit COMMIT] [--json OUT]

Generated programs (`random_programs(n, seed, max_nodes=K)`), rewritten by
each pass; every changed rewrite is checked with `check_rewrite(...,
timeout=T)` (numpy replay on) and its wall time measured from the call to
the verdict.  Per version: the verdicts, the median, p90 and largest wall
time, and how many checks ran past T + 0.5 s.  `--baseline-commit C` runs
the same checks with tfsem at commit C in a second worker process,
alternating check by check with this tree's worker, so both see the same
load.  The work after an `unsound` difference is confirmed (σ and
schedule minimization, the original's witness schedules, the numpy replay)
obeys the budget since issue 23's item 3 (docs/verdicts.md, "Work after
the confirmation")."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker() -> None:
    """Reads (seed, index, max_nodes, pass, timeout) lines; writes one JSON line each."""
    from tfsem.checking import check_rewrite
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites import builtin_passes
    passes = builtin_passes()
    cache = {}
    for line in sys.stdin:
        seed, index, max_nodes, name, timeout = json.loads(line)
        key = (seed, max_nodes)
        if key not in cache:
            cache[key] = random_programs(index + 1, seed, max_nodes=max_nodes)
        programs = cache[key]
        if len(programs) <= index:
            programs = cache[key] = random_programs(index + 1, seed, max_nodes=max_nodes)
        p = programs[index]
        q = passes[name].function(p)
        if q == p:
            print(json.dumps({"changed": False}), flush=True)
            continue
        t0 = time.monotonic()
        v = check_rewrite(p, q, "atomic", "outputs+state", timeout=timeout)
        wall = time.monotonic() - t0
        print(json.dumps({"changed": True, "nodes": len(p.nodes), "verdict": v.verdict,
                          "wall": wall, "confirmed": list(v.confirmed or []),
                          "cut": {k: v.stats[k] for k in ("backends", "minimize",
                                                          "minimize_witnesses")
                                  if k in v.stats}}), flush=True)


class Worker:
    def __init__(self, label: str, env: dict):
        self.label = label
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, job) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def summary(rows: list[dict], timeout: float) -> dict:
    walls = sorted(r["wall"] for r in rows)
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    unsound = sorted(r["wall"] for r in rows if r["verdict"] == "unsound")
    return {"checks": len(rows), "verdicts": verdicts,
            "median_s": statistics.median(walls) if walls else None,
            "p90_s": walls[int(0.9 * (len(walls) - 1))] if walls else None,
            "max_s": walls[-1] if walls else None,
            "unsound_max_s": unsound[-1] if unsound else None,
            "over_budget_plus_0.5s": sum(w > timeout + 0.5 for w in walls),
            "stages_cut": sum(bool(r.get("cut")) for r in rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--programs", type=int, default=6)
    ap.add_argument("--max-nodes", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--passes", default="split-assign,hoist-reads,cse-ignore-control,cse-stateful")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--json", default=None, metavar="OUT")
    args = ap.parse_args(argv)
    if args.worker:
        worker()
        return 0
    env = dict(os.environ)
    workers = [Worker("this tree", env)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline_commit:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from grappler import baseline_tree
            base = baseline_tree(args.baseline_commit, Path(tmp))
            workers.append(Worker(f"baseline {args.baseline_commit}",
                                  dict(env, PYTHONPATH=str(base))))
        rows: dict[str, list[dict]] = {w.label: [] for w in workers}
        for index in range(args.programs):
            for name in args.passes.split(","):
                job = [args.seed, index, args.max_nodes, name, args.timeout]
                for w in workers:
                    r = w.ask(job)
                    if r["changed"]:
                        r.update(program=index, rewrite=name)
                        rows[w.label].append(r)
        for w in workers:
            w.close()
    table = {label: summary(rs, args.timeout) for label, rs in rows.items()}
    print(f"budget {args.timeout:g} s, {args.programs} programs of at most "
          f"{args.max_nodes} nodes (seed {args.seed}), passes {args.passes}")
    print("| version | checks | verdicts | median s | p90 s | max s | max s (unsound) "
          "| over budget + 0.5 s | stages cut |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, s in table.items():
        fmt = lambda x: "-" if x is None else f"{x:.2f}"   # noqa: E731
        print(f"| {label} | {s['checks']} | "
              f"{', '.join(f'{k} {n}' for k, n in sorted(s['verdicts'].items()))} | "
              f"{fmt(s['median_s'])} | {fmt(s['p90_s'])} | {fmt(s['max_s'])} | "
              f"{fmt(s['unsound_max_s'])} | {s['over_budget_plus_0.5s']} | {s['stages_cut']} |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"args": vars(args), "summary": table,
                                               "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
