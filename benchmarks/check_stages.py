"""Cold checks of real graphs stage by stage, this tree against a baseline commit.

    python benchmarks/check_stages.py --graphs keras_mobilenetv2_32 --baseline-commit C --passes 3

Each pass is a fresh process per version (nothing remembered from a pass
before: every original's first check pays its cold runs, as in one run of
`benchmarks/grappler.py --repeat 1`), the versions alternated pass by pass
(A B, B A, ...).  A process imports the graphs, runs Grappler's five
optimizers on each (not timed), then checks each rewrite against its
original in the benchmark's order, with the process's CPU time taken around
the whole check and around its stages: the probe (`_Checker.probe`),
minimization (`_Checker.minimized`), the numpy replay that confirms
(`_Checker.replay_on_backends`) and the structural rule
(`structural.structural_refinement`).  Printed: per check the medians over
the passes, and the sums by verdict.  CPU rather than wall time: on a shared
machine the wall clock charges other jobs' time to whatever was running.
Minimization is a box of wall time: its CPU says how long the box ran, not
what a step cost.  Needs TensorFlow; kernels on.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "CHECK_STAGES "
STAGES = ("probe", "minimized", "replay_on_backends", "structural")


def child(graphs: list[str], timeout: float) -> None:
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np
    from tfsem.checking import check_rewrite
    from tfsem.checking import check as C
    from tfsem.checking import structural as S
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import kernels

    spent: collections.Counter = collections.Counter()

    def timed(owner, name: str, label: str) -> None:
        f = getattr(owner, name)

        def wrapper(*args, **kw):
            started = time.process_time()
            try:
                return f(*args, **kw)
            finally:
                spent[label] += time.process_time() - started
        setattr(owner, name, wrapper)

    for name in ("probe", "minimized", "replay_on_backends"):
        timed(C._Checker, name, name)
    timed(S, "structural_refinement", "structural")
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    rows = []
    for e in B._entries("real"):
        if e["file"].split(".")[0] not in graphs and e["file"] not in graphs:
            continue
        gd = g.as_graph_def(os.path.join(e["base"], e["file"]))
        original = B._import(gd, e)
        rewrites = [(opt, B._import(g.run_grappler(g.placed(gd), e["fetches"] + e["targets"],
                                                   opt).graph_def, e))
                    for opt in B.REAL_OPTIMIZERS]
        for opt, rewritten in rewrites:
            spent.clear()
            cpu, wall = time.process_time(), time.perf_counter()
            v = check_rewrite(original, rewritten, timeout=timeout)
            rows.append({"graph": e["file"].split(".")[0], "optimizer": opt,
                         "verdict": v.verdict, "cpu": time.process_time() - cpu,
                         "wall": time.perf_counter() - wall,
                         **{k: spent.get(k, 0.0) for k in STAGES}})
    print(MARK + json.dumps(rows), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--graphs", required=True, help="comma-separated file stems")
    ap.add_argument("--baseline-commit", required=True, metavar="COMMIT")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    graphs = args.graphs.split(",")
    if args.child:
        child(graphs, args.timeout)
        return 0
    sys.path.insert(0, str(HERE))
    from grappler import ROOT, baseline_tree
    base = baseline_tree(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-stages-")))
    env = dict(os.environ, TFSEM_TF_KERNELS="1")
    envs = {"baseline": dict(env, PYTHONPATH=str(base)),
            "this": {k: v for k, v in env.items() if k != "PYTHONPATH"}}
    runs: dict[str, list] = {"baseline": [], "this": []}
    for k in range(args.passes):
        for version in (("baseline", "this") if k % 2 == 0 else ("this", "baseline")):
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                                  "--graphs", args.graphs, "--baseline-commit", "-",
                                  "--timeout", str(args.timeout)],
                                 env=envs[version], capture_output=True, text=True, cwd=str(ROOT))
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith(MARK)]
            if not lines:
                print(f"the {version} process failed (exit {out.returncode}):\n{out.stderr[-3000:]}",
                      file=sys.stderr)
                return 1
            runs[version].append(json.loads(lines[0][len(MARK):]))
    if args.json:
        Path(args.json).write_text(json.dumps(runs))
    report(runs)
    return 0


def report(runs: dict[str, list]) -> None:
    keys = ("cpu", *STAGES)
    by_check: dict[tuple, dict[str, list]] = {}
    for version, passes in runs.items():
        for rows in passes:
            for r in rows:
                by_check.setdefault((r["graph"], r["optimizer"]), {}).setdefault(version, []).append(r)
    print(f"passes: {len(runs['baseline'])} per version; process CPU seconds, medians")
    print("| check | verdicts (baseline / this) | " +
          " | ".join(f"{k} (baseline → this)" for k in keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    sums: dict[str, dict[str, list[float]]] = {}
    equal = 0
    for (graph, opt), d in by_check.items():
        vb = sorted({r["verdict"] for r in d["baseline"]})
        vt = sorted({r["verdict"] for r in d["this"]})
        equal += vb == vt
        cells = []
        for k in keys:
            b = statistics.median(r[k] for r in d["baseline"])
            t = statistics.median(r[k] for r in d["this"])
            for part in ("all", "/".join(vb)):
                s = sums.setdefault(part, {}).setdefault(k, [0.0, 0.0])
                s[0] += b
                s[1] += t
            cells.append(f"{b:.3f} → {t:.3f}")
        print(f"| {graph} {opt} | {'/'.join(vb)} / {'/'.join(vt)} | " + " | ".join(cells) + " |")
    for part, s in sums.items():
        n = sum(1 for d in by_check.values()
                if part == "all" or "/".join(sorted({r['verdict'] for r in d['baseline']})) == part)
        print(f"| **{part}** ({n}) | | " + " | ".join(
            f"{s[k][0]:.3f} → {s[k][1]:.3f}" for k in keys) + " |")
    print(f"verdicts equal in {equal} of {len(by_check)} checks, every pass")


if __name__ == "__main__":
    sys.exit(main())
