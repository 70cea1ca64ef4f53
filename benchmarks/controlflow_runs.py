"""The control-flow engine's concrete runs, this tree against a baseline
(needs TensorFlow: Grappler makes the rewrites, its kernels compute float
MatMul and the other ops with no numpy model).

    python benchmarks/controlflow_runs.py --baseline-commit COMMIT
        [--graphs keras_gru_loop,keras_lstm_loop] [--optimizers constfold,...]
        [--sigmas 6] [--repeat 1] [--memo] [--json FILE]

The workload is what the checker's refutation stage computes on the real
corpus's loop graphs (checking/control_flow.py `compare`): for each graph
and each optimizer, the original P and Grappler's rewrite P', at the first
`--sigmas` σ of the stage (check.py's draws with its seed: the first
generated σ, the float σ, then the refutation draws), Outcomes(P, σ) then
Outcomes(P', σ) by oracle/controlflow.py `outcomes`, with no time budget
(a run that reaches a loop's iteration bound answers that).

Each version runs in its own worker process (this tree, and the baseline's
tree from `git archive`, as benchmarks/grappler.py does), the two one after
the other per (graph, optimizer), alternating which goes first.  A worker
makes two passes over its jobs: the first as a check meets them (each
function application new, TensorFlow's kernels called), the second again
(applications remembered: the engine's own cost).  This tree's memo of
whole outcome sets (`controlflow._OUTCOMES`) is off unless `--memo` (with
it, P's runs at a σ come from the first optimizer's).

Prints a row per (graph, optimizer): seconds (wall and CPU of the worker) of
each version and pass, and whether every outcome set is equal between the
versions (compared as canonical JSON), and the totals.
"""

from __future__ import annotations

import argparse
import copyreg
import hashlib
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grappler as bench  # noqa: E402  (benchmarks/grappler.py: corpus entries, the baseline tree)

GRAPHS = ("keras_gru_loop", "keras_lstm_loop")
MARK = "@@controlflow-runs "


def _picklable() -> None:
    """Programs' frozen mappings refuse item assignment, which unpickling a
    dict subclass uses: rebuild them from a plain dict."""
    from tfsem.oracle import program, values
    for cls in (program._FrozenDict, program._FrozenMap):
        copyreg.pickle(cls, lambda m, cls=cls: (cls, (dict(m),)))
    # and tensors by their arrays, made again by the reading tree's Tensor
    # (whose private fields may differ: a baseline's hash is not lazy)
    copyreg.pickle(values.Tensor, lambda t: (values.Tensor, (t.array,)))


def workload(graphs, optimizers, n_sigmas: int, into: Path) -> Path:
    """Grappler's rewrites and the checker's σ, pickled for the workers."""
    import itertools

    import numpy as np

    from tfsem.checking import check as chk
    from tfsem.graphdef import grappler as g
    _picklable()
    jobs = []
    for e in bench._entries("real"):
        if Path(e["file"]).stem not in graphs:
            continue
        gd = g.as_graph_def(Path(e["base"]) / e["file"])
        p = bench._import(gd, e)
        rng = np.random.default_rng(0 + 2)   # (check_rewrite's seed 0, as check.py draws)
        drawn = itertools.chain(itertools.islice(chk._generated_sigmas(p, rng), 2),
                                chk._refute_sigmas(p, rng))
        floats = [s for _, s in chk._float_sigmas(p)]
        sigmas = ([next(drawn)] + floats + [next(drawn) for _ in range(n_sigmas)])[:n_sigmas]
        for opt in optimizers:
            res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
            p2 = bench._import(res.graph_def, e)
            jobs.append({"graph": Path(e["file"]).stem, "optimizer": opt, "original": p,
                         "rewritten": p2, "sigmas": sigmas})
    path = into / "workload.pickle"
    path.write_bytes(pickle.dumps(jobs))
    return path


def _canonical(found: dict) -> str:
    """An outcome set as one hash of its outcomes' sorted JSON."""
    items = sorted(json.dumps(o.to_json(), sort_keys=True, default=str) for o in found)
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]


def worker(path: str, memo: bool) -> int:
    import numpy as np

    from tfsem.oracle import controlflow as cf
    from tfsem.oracle import kernels
    _picklable()
    if hasattr(cf, "remember_outcomes"):
        cf.remember_outcomes = memo
    if kernels.enabled():   # (TensorFlow's start in the kernels' child is not a run's time)
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    jobs = pickle.loads(Path(path).read_bytes())
    print(MARK + json.dumps({"ready": True, "tfsem": str(Path(cf.__file__).parent.parent)}),
          flush=True)
    for line in sys.stdin:
        want = json.loads(line)
        job = jobs[want["job"]]
        row = {"sets": [], "passes": []}
        for k in range(2):
            wall, cpu = time.perf_counter(), time.process_time()
            for sigma in job["sigmas"]:
                for prog in (job["original"], job["rewritten"]):
                    try:
                        found, _ = cf.outcomes(prog, sigma[0], sigma[1])
                        got = f"{len(found)}:{_canonical(found)}"
                    except cf.LoopBoundExceeded as exc:
                        got = f"bound {exc.frame}"
                    if k == 0:
                        row["sets"].append(got)
            row["passes"].append({"wall_s": time.perf_counter() - wall,
                                  "cpu_s": time.process_time() - cpu})
        print(MARK + json.dumps(row), flush=True)
    return 0


class Worker(bench.Worker):
    def __init__(self, label: str, env: dict, path: Path, memo: bool):
        super().__init__(label, env, [sys.executable, str(Path(__file__).resolve()), "--worker",
                                      str(path)] + (["--memo"] if memo else []), mark=MARK)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--optimizers", default=",".join(bench.REAL_OPTIMIZERS))
    ap.add_argument("--sigmas", type=int, default=6)
    ap.add_argument("--baseline-commit", required=False, default=None, metavar="COMMIT")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--memo", action="store_true",
                    help="leave this tree's memo of outcome sets on")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.memo)
    if not args.baseline_commit:
        ap.error("--baseline-commit is required (the runs are compared with it)")
    # (one hash seed for every process: the workers' states and sets alike)
    env = dict(os.environ, TFSEM_TF_KERNELS="1", PYTHONHASHSEED="0")
    tmp = Path(tempfile.mkdtemp(prefix="tfsem-cfruns-"))
    workers = []
    try:
        path = workload(set(args.graphs.split(",")), args.optimizers.split(","), args.sigmas, tmp)
        jobs = pickle.loads(path.read_bytes())
        base = bench.baseline_tree(args.baseline_commit, tmp / "baseline")
        workers.append(Worker("baseline", dict(env, PYTHONPATH=str(base)), path, False))
        workers.append(Worker("this", {k: v for k, v in env.items() if k != "PYTHONPATH"},
                              path, args.memo))
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        labels = [f"baseline {args.baseline_commit}", f"this tree ({head})"]
        print(f"{len(jobs)} (graph, optimizer) pairs, {args.sigmas} σ each, P and P' per σ; "
              f"memo of outcome sets {'on' if args.memo else 'off'}; repeat {args.repeat}")
        for label, w in zip(labels, workers):
            print(f"  {label}: tfsem from {w.info['tfsem']}")
        print()
        print("| graph | optimizer | first pass s (baseline) | first pass s (this) | "
              "second pass s (baseline) | second pass s (this) | CPU s, first pass "
              "(baseline -> this) | outcome sets equal |")
        print("|---|---|---|---|---|---|---|---|")
        rows = []
        for k, job in enumerate(jobs):
            results: list[list[dict]] = [[], []]
            for r in range(args.repeat):
                order = [0, 1] if (k + r) % 2 == 0 else [1, 0]
                for i in order:
                    results[i].append(workers[i].run({"job": k}))

            def med(i: int, p: int, what: str) -> float:
                return statistics.median(x["passes"][p][what] for x in results[i])
            same = results[0][0]["sets"] == results[1][0]["sets"]
            row = {"graph": job["graph"], "optimizer": job["optimizer"], "equal": same,
                   "sets": [results[0][0]["sets"], results[1][0]["sets"]],
                   "versions": [{"label": labels[i],
                                 "first_wall_s": med(i, 0, "wall_s"),
                                 "first_cpu_s": med(i, 0, "cpu_s"),
                                 "second_wall_s": med(i, 1, "wall_s"),
                                 "second_cpu_s": med(i, 1, "cpu_s")} for i in (0, 1)]}
            rows.append(row)
            b, t = row["versions"]
            print(f"| {job['graph']} | {job['optimizer']} | {b['first_wall_s']:.2f} | "
                  f"{t['first_wall_s']:.2f} | {b['second_wall_s']:.2f} | {t['second_wall_s']:.2f} | "
                  f"{b['first_cpu_s']:.2f} -> {t['first_cpu_s']:.2f} | "
                  f"{'yes' if same else 'NO'} |", flush=True)
        print()
        summary = {}
        for key in ("first_wall_s", "first_cpu_s", "second_wall_s", "second_cpu_s"):
            b = sum(r["versions"][0][key] for r in rows)
            t = sum(r["versions"][1][key] for r in rows)
            summary[key] = {"baseline": round(b, 2), "this": round(t, 2),
                            "ratio": round(b / t, 2) if t else None}
            print(f"{key}: baseline {b:.2f} s, this tree {t:.2f} s (x{b / t if t else 0:.2f})")
        equal = sum(r["equal"] for r in rows)
        print(f"outcome sets equal in {equal} of {len(rows)} pairs "
              f"({sum(len(r['sets'][0]) for r in rows)} sets per version)")
        if args.json:
            Path(args.json).write_text(json.dumps({"labels": labels, "rows": rows,
                                                   "summary": summary, "sigmas": args.sigmas,
                                                   "memo": args.memo}, indent=1))
    finally:
        for w in workers:
            w.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
