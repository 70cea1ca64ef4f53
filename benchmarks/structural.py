"""Benchmark of the structural rule alone (checking/structural.py), side by
side with a baseline commit.

    python benchmarks/structural.py PAIR.json... [--baseline-commit C]
                                    [--repeat 5] [--kernels on|off] [--json FILE]
                                    [--semantics atomic|decomposed] [--observe outputs+state|outputs]
    python benchmarks/structural.py --dump DIR --graphs a,b [--optimizers ...]

A pair file holds {"original": program, "rewritten": program} (tfsem's
program JSON).  `--dump` writes such pairs for graphs of the real-graphs
corpus (examples/tensorflow/corpus), one per Grappler optimizer, as
benchmarks/grappler.py imports them (needs TensorFlow).

Each version runs in a worker process of its own (the baseline's tree
exported with `git archive`, as benchmarks/grappler.py does), which loads
every pair once; then, `--repeat` times, each pair is given to both
workers one after the other, the order alternating, so that both see the
same load.  Printed: per pair, the median seconds of each version, their
ratio, and whether the results (proved, reason, first difference) are the
same; then the medians' sums.  `--kernels` sets TFSEM_TF_KERNELS for the
workers (on: constants of ops with no numpy model are folded by
TensorFlow's kernels, as in a check).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "@@structural-bench "
sys.path.insert(0, str(ROOT / "benchmarks"))
import grappler as bench  # noqa: E402  (benchmarks/grappler.py: corpus entries, workers)


def worker() -> int:
    import tfsem
    from tfsem.checking.structural import structural_refinement
    from tfsem.oracle.jsonio import program_from_json
    pairs: dict[str, tuple] = {}
    print(MARK + json.dumps({"tfsem": str(Path(tfsem.__file__).parent)}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        f = job["file"]
        if f not in pairs:
            d = json.loads(Path(f).read_text())
            pairs[f] = (program_from_json(d["original"]), program_from_json(d["rewritten"]))
        p, q = pairs[f]
        t = time.perf_counter()
        r = structural_refinement(p, q, job.get("semantics", "atomic"),
                                  job.get("observe", "outputs+state"))
        seconds = time.perf_counter() - t
        print(MARK + json.dumps({"seconds": seconds, "proved": r.proved, "reason": r.reason,
                                 "first_difference": r.stats.get("first_difference")},
                                default=str), flush=True)
    return 0


def Worker(env: dict):  # noqa: N802  (benchmarks/grappler.py's worker, with this script's)
    return bench.Worker("structural", env, [sys.executable, str(Path(__file__).resolve()),
                                            "--worker"], mark=MARK)


def dump(out: Path, graphs: list[str], optimizers: list[str]) -> None:
    from tfsem.graphdef import grappler as g
    from tfsem.oracle.jsonio import program_to_json
    out.mkdir(parents=True, exist_ok=True)
    for e in bench._entries("real"):
        stem = Path(e["file"]).stem
        if stem not in graphs:
            continue
        gd = g.as_graph_def(Path(e["base"]) / e["file"])
        original = bench._import(gd, e)
        for opt in optimizers:
            res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
            pair = {"original": program_to_json(original),
                    "rewritten": program_to_json(bench._import(res.graph_def, e))}
            (out / f"{stem}-{opt}.json").write_text(json.dumps(pair))
            print(out / f"{stem}-{opt}.json", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("pairs", nargs="*")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kernels", choices=("on", "off"), default=None)
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--semantics", default="atomic", choices=("atomic", "decomposed"))
    ap.add_argument("--observe", default="outputs+state", choices=("outputs+state", "outputs"))
    ap.add_argument("--dump", default=None, metavar="DIR")
    ap.add_argument("--graphs", default="")
    ap.add_argument("--optimizers", default="constfold,arithmetic,dependency,"
                    "common_subgraph_elimination,default")
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    if args.dump:
        dump(Path(args.dump), args.graphs.split(","), args.optimizers.split(","))
        return 0
    env = dict(os.environ)
    if args.kernels:
        env["TFSEM_TF_KERNELS"] = "1" if args.kernels == "on" else "0"
    tmp = Path(tempfile.mkdtemp(prefix="tfsem-bench-"))
    try:
        return _compare(args, env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _compare(args, env: dict, tmp: Path) -> int:
    labels, workers = [], []
    if args.baseline_commit:
        base = bench.baseline_tree(args.baseline_commit, tmp)
        workers.append(Worker(dict(env, PYTHONPATH=str(base))))
        labels.append(f"baseline {args.baseline_commit}")
    workers.append(Worker({k: v for k, v in env.items() if k != "PYTHONPATH"}))
    labels.append("this tree")
    for lab, w in zip(labels, workers):
        print(f"{lab}: tfsem from {w.info['tfsem']}")
    rows = []
    k = 0
    print("| pair | " + " | ".join(f"s ({lab.split()[0]})" for lab in labels)
          + (" | ratio | same result | proved |" if len(workers) == 2 else " | proved |"))
    print("|---|" + "---|" * len(labels) + ("---|---|---|" if len(workers) == 2 else "---|"))
    for f in args.pairs:
        res, k = bench.alternating(workers, {"file": f, "semantics": args.semantics,
                                             "observe": args.observe}, args.repeat, k)
        med = [statistics.median(r["seconds"] for r in rs) for rs in res]
        key = [(rs[0]["proved"], rs[0]["reason"], rs[0]["first_difference"]) for rs in res]
        row = {"pair": Path(f).stem, "seconds": med, "proved": [x[0] for x in key],
               "reason": [x[1] for x in key], "same": len(set(map(json.dumps, key))) == 1}
        rows.append(row)
        cells = " | ".join(f"{m:.3f}" for m in med)
        extra = (f" | {med[0] / med[1]:.2f} | {'yes' if row['same'] else 'NO'}"
                 if len(workers) == 2 else "")
        print(f"| {row['pair']} | {cells}{extra} | {key[-1][0]} |", flush=True)
    sums = [sum(r["seconds"][i] for r in rows) for i in range(len(workers))]
    print(f"| total (medians) | " + " | ".join(f"{s:.3f}" for s in sums)
          + (f" | {sums[0] / sums[1]:.2f} | {all(r['same'] for r in rows)} | |"
             if len(workers) == 2 else " | |"))
    for w in workers:
        w.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"labels": labels, "repeat": args.repeat,
                                               "kernels": args.kernels, "rows": rows},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
