"""Benchmark of GraphDef import on the corpus of real TensorFlow graphs.

    python benchmarks/graphdef.py [--repeat 5] [--timeout 60]

Per graph of examples/tensorflow/ (with the manifest's fetches and targets):
the graph's nodes (plus those in its function library), the imported
program's nodes and variables, the median import time (parsing the .pbtxt
included), the time and verdict of `check G G` (the graph against itself;
the checker recognizes an identical program at once), and the time and
verdict of checking G against `reduce-control` of G (a rewrite that changes
nothing observable, so the checker has to prove it), and, for the graphs
the manifest calls small, the time of `outcomes` from zero-valued variables.

Target (issue 14): every graph imports, and both checks say `sound`, in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from tfsem.checking import check_rewrite
from tfsem.graphdef import import_path
from tfsem.oracle.explore import outcome_set
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.values import Tensor
from tfsem.rewrites import get_pass

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="import repetitions (median)")
    ap.add_argument("--timeout", type=float, default=60.0, help="checker timeout, seconds")
    args = ap.parse_args()
    manifest = json.loads((CORPUS / "manifest.json").read_text())["graphs"]
    print(f"{'graph':28} {'nodes':>9} {'tfsem':>6} {'vars':>5} {'import s':>9} "
          f"{'self s':>7} {'self':>6} {'rc s':>7} {'rc':>6} {'outcomes s':>10}")
    for g in manifest:
        path = CORPUS / g["file"]
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            p = import_path(path, g["fetches"], list(g["feeds"]), g["targets"]).program
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        v = check_rewrite(p, program_to_json(p), "atomic", "outputs+state", args.timeout)
        self_s = time.perf_counter() - t
        q = get_pass("reduce-control").function(p)
        t = time.perf_counter()
        v2 = check_rewrite(p, program_to_json(q), "atomic", "outputs+state", args.timeout)
        rc_s = time.perf_counter() - t
        out_s = "-"
        if g.get("small"):
            init = {x: Tensor(np.zeros(ty.shape, dtype=ty.dtype)) for x, ty in p.variables.items()}
            feeds = {f: Tensor(np.ones(ty.shape, dtype=ty.dtype)) for f, ty in p.feeds.items()}
            t = time.perf_counter()
            outcome_set(p, feeds, init, "atomic", "outputs+state")
            out_s = f"{time.perf_counter() - t:.4f}"
        nodes = f"{g['nodes']}+{g['function_nodes']}"
        print(f"{g['file']:28} {nodes:>9} {len(p.nodes):>6} {len(p.variables):>5} "
              f"{statistics.median(times):>9.4f} {self_s:>7.3f} {v.verdict:>6} "
              f"{rc_s:>7.3f} {v2.verdict:>6} {out_s:>10}")


if __name__ == "__main__":
    main()
