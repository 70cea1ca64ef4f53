"""Benchmark of the concrete evaluation alone (needs TensorFlow).

    python benchmarks/concrete_eval.py [--graph keras_mobilenetv2_32]
                                       [--optimizer default] [--repeat 2]
                                       [--rounds 2] [--baseline-commit C]
                                       [--json FILE]

What the probe, the refutation stage, the confirmation's replay and
minimization all do: one run of the original P and one of Grappler's output
P' of a real-corpus graph in canonical order (`refute.canonical_outcome`,
TensorFlow's kernels on) at the plain, plain-huge and NaN σ: six runs per
repeat, the kernel cache and the compiled components cleared before each
repeat.  With `--baseline-commit C`, tfsem at C (benchmarks/grappler.py's
`baseline_tree`) runs the same in its own process, the two versions'
processes one after the other `--rounds` times.  Prints, per version, the
seconds of each repeat, their median, and the turns to the kernels' child.
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
MARK = "@@concrete-eval "


def worker(graph: str, optimizer: str, repeat: int) -> None:
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np

    import tfsem
    from tfsem.checking import check as C
    from tfsem.checking import refute as ref
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import explore, kernels
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    turns = [0]

    def counting(method):
        real = getattr(kernels._Client, method, None)
        if real is None:
            return

        def counted(self, *a):
            turns[0] += 1
            return real(self, *a)
        setattr(kernels._Client, method, counted)
    counting("call")
    counting("call_batch")
    e = [x for x in B._entries("real") if x["file"].startswith(graph + ".")][0]
    gd = g.as_graph_def(Path(e["base"]) / e["file"])
    p = B._import(gd, e)
    res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], optimizer)
    p2 = B._import(res.graph_def, e)
    sigmas = []
    for scale in (1.0, 1e38, None):
        feeds, init = C._plain_sigma(p, scale or 1.0)
        if scale is None:      # NaN in every float feed
            feeds = {k: type(v)(np.full(v.shape, np.nan, v.array.dtype))
                     if v.dtype.startswith("float") else v for k, v in feeds.items()}
        sigmas.append((feeds, init))
    for _ in range(repeat):
        kernels._cache.clear()
        for cache in ("_COMPILED", "_COMPONENTS"):
            getattr(explore, cache, {}).clear()
        getattr(kernels, "_digests", {}).clear()
        turns[0] = 0
        t = time.perf_counter()
        for feeds, init in sigmas:
            for q in (p, p2):
                ref.canonical_outcome(q, feeds, init, "atomic", "outputs+state")
        print(MARK + json.dumps({"tfsem": str(Path(tfsem.__file__).parent.parent),
                                 "seconds": time.perf_counter() - t, "turns": turns[0],
                                 "load": os.getloadavg()[0]}), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="keras_mobilenetv2_32")
    ap.add_argument("--optimizer", default="default")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.graph, args.optimizer, args.repeat)
        return 0
    env = dict(os.environ, TFSEM_TF_KERNELS="1")
    with tempfile.TemporaryDirectory(prefix="tfsem-eval-") as tmp:
        versions = [("this tree", {k: v for k, v in env.items() if k != "PYTHONPATH"})]
        if args.baseline_commit:
            sys.path.insert(0, str(HERE))
            import grappler as B
            base = B.baseline_tree(args.baseline_commit, Path(tmp))
            versions.insert(0, (f"baseline {args.baseline_commit}", dict(env, PYTHONPATH=str(base))))
        results: dict[str, list] = {label: [] for label, _ in versions}
        for _ in range(args.rounds):
            for label, venv in versions:
                out = subprocess.run([sys.executable, __file__, "--worker", "--graph", args.graph,
                                      "--optimizer", args.optimizer, "--repeat", str(args.repeat)],
                                     env=venv, capture_output=True, text=True, check=True).stdout
                results[label] += [json.loads(line[len(MARK):]) for line in out.splitlines()
                                   if line.startswith(MARK)]
    print(f"{args.graph} / {args.optimizer}: P and P' at the plain, plain-huge and NaN σ "
          f"(6 canonical runs per repeat), {args.rounds} x {args.repeat} repeats")
    print("| version | seconds (median) | each | turns to the child |")
    print("|---|---|---|---|")
    for label, rows in results.items():
        secs = [r["seconds"] for r in rows]
        print(f"| {label} | {statistics.median(secs):.2f} | {', '.join(f'{s:.2f}' for s in secs)} "
              f"| {rows[0]['turns'] if rows else '-'} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
