"""How small σ's minimization leaves each counterexample, this tree against a baseline commit.

    python benchmarks/minimization_sizes.py --baseline-commit C [--graphs a,b,...]

For each version, one fresh process (the baseline first, then this tree)
imports the real corpus's graphs, runs Grappler's five optimizers on each and
checks each rewrite against its original in the benchmark's order (kernels
on), recording for every minimization (checking/minimize.py
`minimize_concrete`) σ's size after each step it kept, timed from its start:
non-zero elements, and tensors with a non-zero element, over σ's feeds and
variables.  Printed: per `unsound` check that minimizes in both versions,
the final sizes side by side, and the medians and totals (how many σ are
the same size, the median non-zero elements and zero tensors); with
`--at 0.1,0.2,0.3` also the size each version's σ had that long into its
minimization (what a smaller box would have left).  With
`--cold-boxes 0.25:3,0.15:2`, this tree runs once per cold box (floor in
seconds : ratio to the finding time, minimize.py's MINIMIZE_COLD_FLOOR and
MINIMIZE_COLD_RATIO), each against the one baseline run, and the checks
whose σ ends larger than the baseline's are listed.  σ's size depends on
time boxes: the machine's load moves it.  With `--untimed`, both versions
run with minimization's boxes made larger than the check's budget and no
cone tests (every step a full confirmation): σ is then what the steps
reach, the same from run to run where a minimization ends within the
check's timeout, whatever the load (a change that should leave every step
as it was is checked so; a minimization still cut by the check's own
deadline, MobileNetV2's, is not).  Needs TensorFlow.
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

HERE = Path(__file__).resolve().parent
MARK = "MINIMIZATION_SIZES "


#: `--untimed`: (module, name) -> value, where the version has the name
UNTIMED = {("minimize", "MINIMIZE_MAX_SECONDS_FLOOR"): 1e9,
           ("minimize", "MINIMIZE_COLD_FLOOR"): 1e9,
           ("minimize", "MINIMIZE_FIND_FLOOR"): 1e9,
           ("minimize", "MINIMIZE_CONTROL_FLOW_COLD_FLOOR"): 1e9,
           ("check", "MINIMIZE_MAX_SECONDS_FLOOR"): 1e9,
           ("check", "MINIMIZE_MIN_SECONDS"): 1e9,
           # (no cone tests, no box rescaled on a confirmation's cost)
           ("check", "MINIMIZE_CHEAP_SECONDS"): 1e9}


def child(graphs: list[str], timeout: float, cold: str = "", untimed: bool = False) -> None:
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np
    from tfsem.checking import check_rewrite
    from tfsem.checking import minimize as M
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import kernels
    from tfsem.oracle.values import Tensor

    def size(sigma) -> tuple[int, int, int]:
        arrays = [v.array for table in sigma for v in table.values() if isinstance(v, Tensor)]
        return (sum(int(np.count_nonzero(a)) for a in arrays),
                sum(1 for a in arrays if np.count_nonzero(a)), len(arrays))

    trajectory: list = []
    started = [0.0]
    kept, minimize_concrete = M._kept, M.minimize_concrete

    def on_kept(saved, edit, confirm, sigma):
        ok = kept(saved, edit, confirm, sigma)
        if ok:
            trajectory.append((time.monotonic() - started[0], *size(sigma)))
        return ok

    def on_minimize(sigma, *a, **k):
        started[0] = time.monotonic()
        trajectory.clear()
        trajectory.append((0.0, *size(sigma)))
        return minimize_concrete(sigma, *a, **k)

    M._kept, M.minimize_concrete = on_kept, on_minimize
    if untimed:
        from tfsem.checking import check as C
        for (module, name), value in UNTIMED.items():
            owner = M if module == "minimize" else C
            if hasattr(owner, name):
                setattr(owner, name, value)
    if cold:
        floor, ratio = (float(x) for x in cold.split(":"))
        M.MINIMIZE_COLD_FLOOR, M.MINIMIZE_COLD_RATIO = floor, ratio
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    rows = []
    for e in B._entries("real"):
        if e["file"].split(".")[0] not in graphs:
            continue
        gd = g.as_graph_def(os.path.join(e["base"], e["file"]))
        original = B._import(gd, e)
        for opt in B.REAL_OPTIMIZERS:
            rewritten = B._import(g.run_grappler(g.placed(gd), e["fetches"] + e["targets"],
                                                 opt).graph_def, e)
            trajectory.clear()
            v = check_rewrite(original, rewritten, timeout=timeout)
            rows.append({"graph": e["file"].split(".")[0], "optimizer": opt,
                         "verdict": v.verdict, "trajectory": list(trajectory)})
    print(MARK + json.dumps(rows), flush=True)


def _at(trajectory: list, t: float) -> list:
    return [x for x in trajectory if x[0] <= t][-1]


def report(runs: dict[str, list], at: list[float]) -> None:
    def minimized(rows):
        return {(r["graph"], r["optimizer"]): r["trajectory"] for r in rows
                if r["verdict"] == "unsound" and r["trajectory"]}
    base, this = minimized(runs["baseline"]), minimized(runs["this"])
    keys = sorted(set(base) & set(this))
    print(f"{len(keys)} unsound checks minimize in both versions")
    print("| check | non-zero elements (baseline → this) | tensors with a non-zero element |"
          + "".join(f" at {t:g} s (baseline → this) |" for t in at))
    print("|---|---:|---:|" + "---:|" * len(at))
    for k in keys:
        b, t = base[k][-1], this[k][-1]
        cells = "".join(f" {_at(base[k], s)[1]} → {_at(this[k], s)[1]} |" for s in at)
        print(f"| {k[0]} {k[1]} | {b[1]} → {t[1]} | {b[2]} → {t[2]} of {t[3]} |{cells}")
    same = sum(base[k][-1][1:3] == this[k][-1][1:3] for k in keys)
    for label, i in (("non-zero elements", 1), ("zero tensors", None)):
        def value(tr):
            return tr[-1][1] if i else tr[-1][3] - tr[-1][2]
        print(f"median {label}: {statistics.median(value(base[k]) for k in keys)} → "
              f"{statistics.median(value(this[k]) for k in keys)}; total "
              f"{sum(value(base[k]) for k in keys)} → {sum(value(this[k]) for k in keys)}")
    print(f"σ the same size in {same} of {len(keys)}")
    larger = [(k, base[k][-1][1], this[k][-1][1]) for k in keys if this[k][-1][1] > base[k][-1][1]]
    print(f"σ larger than the baseline's in {len(larger)} of {len(keys)}" +
          "".join(f"\n  {k[0]} {k[1]}: {b} → {t}" for k, b, t in larger))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--graphs", default="",
                    help="comma-separated file stems (default: every graph of the real corpus)")
    ap.add_argument("--baseline-commit", required=True, metavar="COMMIT")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--at", default="", help="comma-separated seconds into the minimization")
    ap.add_argument("--cold-boxes", default="", metavar="FLOOR:RATIO,...",
                    help="this tree once per cold box (minimize.py's MINIMIZE_COLD_FLOOR "
                         "and MINIMIZE_COLD_RATIO)")
    ap.add_argument("--cold", default="", help=argparse.SUPPRESS)
    ap.add_argument("--untimed", action="store_true",
                    help="both versions with boxes past the check's budget and no cone tests")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    if not args.graphs:
        sys.path.insert(0, str(HERE))
        from grappler import _entries
        args.graphs = ",".join(e["file"].split(".")[0] for e in _entries("real"))
    graphs = args.graphs.split(",")
    if args.child:
        child(graphs, args.timeout, args.cold, args.untimed)
        return 0
    boxes = [b for b in args.cold_boxes.split(",") if b]
    for b in boxes:
        try:
            floor, ratio = (float(x) for x in b.split(":"))
        except ValueError:
            print(f"minimization_sizes: --cold-boxes: {b!r} is not FLOOR:RATIO "
                  f"(two numbers, e.g. 0.25:3)", file=sys.stderr)
            return 2
    sys.path.insert(0, str(HERE))
    from grappler import ROOT, baseline_tree
    base = baseline_tree(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-sizes-")))
    env = dict(os.environ, TFSEM_TF_KERNELS="1")
    envs = {"baseline": dict(env, PYTHONPATH=str(base)),
            "this": {k: v for k, v in env.items() if k != "PYTHONPATH"}}
    runs: dict[str, list] = {}
    versions = [("baseline", "")] + ([(f"this at {b}", b) for b in boxes] or [("this", "")])
    for version, cold in versions:
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                              "--graphs", args.graphs, "--baseline-commit", "-",
                              "--timeout", str(args.timeout), "--cold", cold] +
                             (["--untimed"] if args.untimed else []),
                             env=envs["baseline" if version == "baseline" else "this"],
                             capture_output=True, text=True, cwd=str(ROOT))
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith(MARK)]
        if not lines:
            print(f"the {version} process failed (exit {out.returncode}):\n{out.stderr[-3000:]}",
                  file=sys.stderr)
            return 1
        runs[version] = json.loads(lines[0][len(MARK):])
    if args.json:
        Path(args.json).write_text(json.dumps(runs))
    for version, _ in versions[1:]:
        if len(versions) > 2:
            print(f"\n## baseline against {version}")
        report({"baseline": runs["baseline"], "this": runs[version]},
               [float(t) for t in args.at.split(",") if t])
    return 0


if __name__ == "__main__":
    sys.exit(main())
