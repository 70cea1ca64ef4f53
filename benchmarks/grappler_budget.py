"""Does `tfsem grappler --timeout T` end in time?  Wall time of the whole
process against its budget, on the real-graphs corpus (docs/budgets.md).

Each run is `python -m tfsem grappler GRAPH --timeout T [--optimizer O]...
[--json]` in a process of its own, timed from before its start to its exit
(what a user waits for).  With `--baseline-commit C`, tfsem at C runs the same
command, alternating with this tree run by run, so that both see the same
load.  Printed per (graph, mode): the median wall time, its excess over the
budget, the exit statuses, the verdicts, and this tree's own account of the
budget (`--json`'s "budget": seconds before the command started, TensorFlow's
import, the original's import, elapsed before the report) and its slowest
stages.

    python benchmarks/grappler_budget.py --timeout 10 [--repeat 3] \\
        [--cases mnv2,gru,mlp] [--baseline-commit 5372b36]
"""

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
sys.path.insert(0, str(ROOT / "benchmarks"))

CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
#: name -> (graph, optimizers: [] for every default optimizer)
CASES = {
    "mnv2": ("keras_mobilenetv2_32.pb", ["default"]),
    "gru": ("keras_gru_loop.pbtxt", []),
    "mlp": ("keras_mlp_adam.pbtxt", []),
}


def timed(cmd: list[str], env: dict, limit: float) -> tuple[float, int | None, bytes]:
    """(wall seconds, exit status or None past `limit`, stdout) of `cmd`."""
    with tempfile.TemporaryFile() as out:
        t = time.monotonic()
        try:
            # (cwd: not the repository, whose tfsem/ would shadow a baseline's)
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env,
                                  timeout=limit, cwd=tempfile.gettempdir())
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        wall = time.monotonic() - t
        out.seek(0)
        return wall, rc, out.read()


def run_once(env: dict, graph: str, optimizers: list[str], timeout: float, as_json: bool,
             limit: float) -> dict:
    cmd = [sys.executable, "-m", "tfsem", "grappler", str(CORPUS / graph), "--timeout",
           f"{timeout:g}"] + [a for o in optimizers for a in ("--optimizer", o)] + \
        (["--json"] if as_json else [])
    wall, rc, data = timed(cmd, env, limit)
    row = {"wall": wall, "rc": rc, "bytes": len(data)}
    if as_json and rc is not None:
        try:
            doc = json.loads(data)
        except ValueError:
            return row
        row["budget"] = doc.get("budget")
        row["report_cut"] = doc.get("report_cut")
        row["verdicts"] = [(r.get("optimizer"), (r.get("verdict") or {}).get("verdict")
                            or r.get("status")) for r in doc.get("results", [])]
        stages: dict[str, float] = {}
        for r in doc.get("results", []):
            for k, v in (r.get("stage_seconds") or {}).items():
                stages[k] = stages.get(k, 0.0) + v
        row["stages"] = stages
    return row


def compared_sides(baseline_commit: str | None, where: Path) -> list[tuple[str, dict]]:
    """(label, environment) of each tfsem to run: this tree (PYTHONPATH
    cleared, TensorFlow's log quiet), and first, with a baseline commit,
    tfsem at that commit checked out under `where`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sides = [("this", env)]
    if baseline_commit:
        from grappler import baseline_tree  # noqa: PLC0415
        base = baseline_tree(baseline_commit, where)
        sides.insert(0, (f"baseline {baseline_commit}", dict(env, PYTHONPATH=str(base))))
    return sides


def alternated(sides: list[tuple[str, dict]], repeat: int, run) -> dict[str, list[dict]]:
    """Each side's rows, `run(environment)` `repeat` times on each, the
    sides taking turns run by run (so that a drift in the machine's load
    falls on both alike)."""
    runs: dict[str, list[dict]] = {label: [] for label, _ in sides}
    for _ in range(repeat):
        for label, env in sides:
            runs[label].append(run(env))
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=10.0, help="the command's budget (s)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--modes", default="text,json")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--limit", type=float, default=600.0,
                    help="kill a run after this many seconds (counted as rc None)")
    args = ap.parse_args(argv)
    sides = compared_sides(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-budget-")))
    print(f"budget --timeout {args.timeout:g} s; repeat {args.repeat}; load "
          f"{os.getloadavg()[0]:.1f} at the start")
    for name in args.cases.split(","):
        graph, optimizers = CASES[name]
        for mode in args.modes.split(","):
            runs = alternated(sides, args.repeat,
                              lambda e: run_once(e, graph, optimizers, args.timeout,
                                                 mode == "json", args.limit))
            for label, rows in runs.items():
                walls = [r["wall"] for r in rows]
                med = statistics.median(walls)
                print(f"{graph} [{' '.join(optimizers) or 'all default optimizers'}] {mode}, "
                      f"{label}: wall median {med:.2f} s (over the budget by "
                      f"{med - args.timeout:+.2f} s; runs {', '.join(f'{w:.2f}' for w in walls)}), "
                      f"exit {[r['rc'] for r in rows]}, output {rows[-1]['bytes']} bytes")
                last = rows[-1]
                if "verdicts" in last:
                    print(f"    verdicts: {', '.join(f'{o} {v}' for o, v in last['verdicts'])}")
                if last.get("budget"):
                    print(f"    budget: {last['budget']}; report cut: {last.get('report_cut')}")
                    top = sorted(last["stages"].items(), key=lambda kv: -kv[1])[:6]
                    print(f"    stages (sums): {', '.join(f'{k} {v:.2f} s' for k, v in top)}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
