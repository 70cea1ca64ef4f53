"""Benchmark of checks on the Z3 path: one thread, side by side with a
baseline commit; and several threads at once against one after the other.

    python benchmarks/check_threads.py [--baseline-commit C] [--repeat 5]
                                       [--threads 3] [--timeout 10]

The jobs: every case of the corpus (tests/cases/*.json) checked with
`structural=False, backends=False, classify=False`, so that the symbolic
engine and Z3 decide (the terms, the solver, a counterexample's
minimization), under `--float exact` and again under `--float real`.

* One thread: each version in a worker process of its own (the baseline's
  tree exported with `git archive`, as benchmarks/grappler.py does); `--repeat`
  times, each worker checks every job once, the workers' order alternating.
  Printed: each round's seconds per version, their medians and ratio, and
  whether the verdicts are the same.
* Threads (this tree): the jobs checked by `--threads` threads at once, each
  thread every job, against the same checks one after the other in one
  thread; `--repeat` times, alternating.  Printed: the medians of the wall
  seconds and whether every thread's verdicts are the single thread's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "@@check-threads-bench "
sys.path.insert(0, str(ROOT / "benchmarks"))
import grappler as bench  # noqa: E402  (benchmarks/grappler.py: workers, baseline trees)


def jobs() -> list[tuple]:
    from tfsem.oracle.jsonio import load_case
    out = []
    for f in sorted((ROOT / "tests" / "cases").glob("*.json")):
        c = load_case(f)
        for mode in ("exact", "real"):
            out.append((f"{f.stem}:{mode}", c.original, c.rewritten_json, c.semantics,
                        c.observe, mode))
    return out


def verdict(job: tuple, timeout: float) -> str:
    from tfsem.checking import check_rewrite
    _name, p, q, sem, obs, mode = job
    return check_rewrite(p, q, sem, obs, timeout, float_mode=mode, structural=False,
                         backends=False, classify=False).verdict


def worker() -> int:
    import tfsem
    print(MARK + json.dumps({"tfsem": str(Path(tfsem.__file__).parent)}), flush=True)
    todo = jobs()
    for line in sys.stdin:
        job = json.loads(line)
        t = time.perf_counter()
        verdicts = {j[0]: verdict(j, job["timeout"]) for j in todo}
        print(MARK + json.dumps({"seconds": time.perf_counter() - t, "verdicts": verdicts}),
              flush=True)
    return 0


def threaded(todo: list[tuple], threads: int, timeout: float) -> tuple[float, list[dict]]:
    """The wall seconds of `threads` threads each checking every job, and
    each thread's verdicts."""
    out: list[dict] = [{} for _ in range(threads)]

    def run(k: int) -> None:
        for j in todo:
            out[k][j[0]] = verdict(j, timeout)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    t = time.perf_counter()
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return time.perf_counter() - t, out


def serial(todo: list[tuple], times: int, timeout: float) -> tuple[float, dict]:
    t = time.perf_counter()
    verdicts: dict = {}
    for _ in range(times):
        verdicts = {j[0]: verdict(j, timeout) for j in todo}
    return time.perf_counter() - t, verdicts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    if args.baseline_commit:
        tmp = Path(tempfile.mkdtemp(prefix="tfsem-bench-"))
        try:
            one_thread(args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    several_threads(args)
    return 0


def one_thread(args, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base = bench.baseline_tree(args.baseline_commit, tmp)
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    workers = [bench.Worker("baseline", dict(env, PYTHONPATH=str(base)), argv, mark=MARK),
               bench.Worker("this tree", env, argv, mark=MARK)]
    for lab, w in zip(("baseline", "this tree"), workers):
        print(f"{lab}: tfsem from {w.info['tfsem']}")
    res, _ = bench.alternating(workers, {"timeout": args.timeout}, args.repeat, 0)
    print(f"\none thread, {len(res[0][0]['verdicts'])} checks per round")
    print(f"| round | s (baseline {args.baseline_commit}) | s (this tree) |")
    print("|---|---|---|")
    for k, (a, b) in enumerate(zip(*res)):
        print(f"| {k + 1} | {a['seconds']:.2f} | {b['seconds']:.2f} |")
    med = [statistics.median(r["seconds"] for r in rs) for rs in res]
    same = all(r["verdicts"] == res[0][0]["verdicts"] for rs in res for r in rs)
    print(f"| median | {med[0]:.2f} | {med[1]:.2f} |")
    print(f"ratio baseline / this tree: {med[0] / med[1]:.3f}; same verdicts: {same}")
    for w in workers:
        w.close()


def several_threads(args) -> None:
    todo = jobs()
    walls: dict[str, list[float]] = {"serial": [], "threads": []}
    same = True
    for k in range(args.repeat):
        for how in (("serial", "threads") if k % 2 == 0 else ("threads", "serial")):
            if how == "serial":
                s, alone = serial(todo, args.threads, args.timeout)
            else:
                s, each = threaded(todo, args.threads, args.timeout)
            walls[how].append(s)
        same = same and all(v == alone for v in each)
    med = {how: statistics.median(v) for how, v in walls.items()}
    print(f"\n{args.threads} x {len(todo)} checks (this tree), wall seconds")
    print("| | " + " | ".join(f"round {k + 1}" for k in range(args.repeat)) + " | median |")
    print("|---|" + "---|" * (args.repeat + 1))
    labels = {"serial": "one after the other", "threads": f"{args.threads} threads at once"}
    for how, label in labels.items():
        print(f"| {label} | " + " | ".join(f"{s:.2f}" for s in walls[how])
              + f" | {med[how]:.2f} |")
    print(f"ratio one after the other / threads: {med['serial'] / med['threads']:.2f}; "
          f"every thread's verdicts the single thread's: {same}")


if __name__ == "__main__":
    sys.exit(main())
