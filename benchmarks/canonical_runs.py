"""Benchmark of the canonical run's cost per step (needs TensorFlow).

    python benchmarks/canonical_runs.py [--graphs a,b] [--optimizer default]
                                        [--repeat 3] [--rounds 2] [--warm-runs 5]
                                        [--baseline-commit C] [--json FILE]

The run the probe, minimization and confirmation all pay for:
`refute.canonical_outcome` of the original P and of Grappler's output P' of
real-corpus graphs (default: the six straight-line graphs whose `unsound`
checks the probe and minimization decide), TensorFlow's kernels on, at the
plain, plain-huge and NaN σ (six runs per pass), inside one application
memo (`applications.scope`, as a check opens it):

* **cold**: the first pass, the memo empty and the programs' compiled
  components dropped (the first run of a program in a check: every
  application computed, or found in P's run for P');
* **warm**: the next `--warm-runs` passes at the same σ (every application
  remembered: what a run costs beyond the functions' own work), their
  median, and per step fired (microseconds).

TensorFlow's kernels are evaluated once before the first pass and their
cache kept (the kernels' child's turns are not the run's own cost).  With
`--baseline-commit C`, tfsem at C (benchmarks/grappler.py `baseline_tree`)
runs the same in its own process; the two versions' processes alternate
`--rounds` times, each `--repeat` passes per graph.

`--kept` measures, in one process of this tree only, the straight line's
runs with each node's last application kept (explore.LINE_MEMO_BYTES) and
without, alternated `--repeat` times, on three patterns of σ: the same σ
again (`same`), the plain σ with one variable zeroed at a time, as
minimization makes them (`one-variable`), and the plain, plain-huge and
NaN σ in turn (`alternating`); P and P' three times over each pattern,
CPU medians.

Prints per graph and
version the medians of this process's CPU time (the machine may be shared:
the wall times, under load, are in the JSON rows), and the ratio of the two
versions' warm cost per step.
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
MARK = "@@canonical-runs "
GRAPHS = ("keras_transformer_block", "keras_cnn_batchnorm", "keras_gru_unrolled",
          "keras_lstm_unrolled", "keras_mlp_adam", "keras_mlp_metrics")


def _pair(e: dict, optimizer: str):
    """The corpus entry `e` imported, and Grappler's `optimizer` output of
    it imported (as benchmarks/grappler.py's worker does)."""
    import grappler as B
    from tfsem.graphdef import grappler as g
    gd = g.as_graph_def(Path(e["base"]) / e["file"])
    res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], optimizer)
    return B._import(gd, e), B._import(res.graph_def, e)


def _sigmas(p) -> list:
    """The probe's plain σ of `p`, the plain σ with huge feeds, and NaN in
    every float feed (check.py `_plain_sigma`)."""
    import numpy as np

    from tfsem.checking import check as C
    out = []
    for scale in (1.0, C.HUGE_FEED_SCALE, None):
        feeds, init = C._plain_sigma(p, scale or 1.0)
        if scale is None:      # NaN in every float feed
            feeds = {k: type(v)(np.full(v.shape, np.nan, v.array.dtype))
                     if v.dtype.startswith("float") else v for k, v in feeds.items()}
        out.append((feeds, init))
    return out


def worker(graphs: list[str], optimizer: str, repeat: int, warm_runs: int) -> None:
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np

    import tfsem
    from tfsem.checking import refute as ref
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import applications, explore, kernels
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    entries = {e["file"].split(".")[0]: e for e in B._entries("real")}
    for graph in graphs:
        p, p2 = _pair(entries[graph], optimizer)
        sigmas = _sigmas(p)

        def one_pass() -> int:
            fired = 0
            for feeds, init in sigmas:
                for q in (p, p2):
                    _o, sched = ref.canonical_outcome(q, feeds, init, "atomic", "outputs+state")
                    fired += len(sched)
            return fired

        with applications.scope():        # (kernels' cache filled: not measured)
            one_pass()
        for _ in range(repeat):
            for cache in ("_COMPILED", "_COMPONENTS"):
                getattr(explore, cache, {}).clear()
            with applications.scope():
                t, c = time.perf_counter(), time.process_time()
                fired = one_pass()
                cold, cold_cpu = time.perf_counter() - t, time.process_time() - c
                warm, warm_cpu = [], []
                for _ in range(warm_runs):
                    t, c = time.perf_counter(), time.process_time()
                    one_pass()
                    warm.append(time.perf_counter() - t)
                    warm_cpu.append(time.process_time() - c)
            print(MARK + json.dumps({
                "tfsem": str(Path(tfsem.__file__).parent.parent), "graph": graph,
                "nodes": [len(p.nodes), len(p2.nodes)], "steps": fired,
                "cold_s": cold, "cold_cpu_s": cold_cpu, "warm_s": statistics.median(warm),
                "warm_cpu_s": statistics.median(warm_cpu),
                "load": os.getloadavg()[0]}), flush=True)


def kept(graphs: list[str], optimizer: str, repeat: int) -> None:
    """`--kept` (see the module's docstring)."""
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np

    from tfsem.checking import refute as ref
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import applications, explore, kernels
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    entries = {e["file"].split(".")[0]: e for e in B._entries("real")}
    on = explore.LINE_MEMO_BYTES
    print("| graph | σ | without (CPU ms) | with (CPU ms) | ratio |")
    print("|---|---|---:|---:|---:|")
    for graph in graphs:
        p, p2 = _pair(entries[graph], optimizer)
        alternating = _sigmas(p)
        plain = alternating[0]
        one = []
        for x in sorted(plain[1])[:12]:
            changed = dict(plain[1])
            v = changed[x]
            changed[x] = type(v)(np.zeros(v.shape, v.array.dtype))
            one.append((plain[0], changed))
        patterns = {"same": [plain], "one-variable": one,
                    "alternating": alternating}
        times: dict = {}
        for _ in range(repeat):
            for limit in (0, on):
                explore.LINE_MEMO_BYTES = limit
                for name, sigmas in patterns.items():
                    explore._COMPILED.clear()
                    with applications.scope():
                        for q in (p, p2):      # (the engine's run, the line built)
                            for _ in range(2):
                                ref.canonical_outcome(q, *sigmas[0], "atomic", "outputs+state")
                        c = time.process_time()
                        for _ in range(3):
                            for sigma in sigmas:
                                for q in (p, p2):
                                    ref.canonical_outcome(q, *sigma, "atomic", "outputs+state")
                        times.setdefault((name, limit), []).append(time.process_time() - c)
        explore.LINE_MEMO_BYTES = on
        for name in patterns:
            off_s = statistics.median(times[(name, 0)])
            on_s = statistics.median(times[(name, on)])
            print(f"| {graph} | {name} | {off_s * 1e3:.1f} | {on_s * 1e3:.1f} "
                  f"| {on_s / off_s:.2f} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--optimizer", default="default")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--kept", action="store_true",
                    help="this tree's line with and without its nodes' last applications")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    graphs = [g for g in args.graphs.split(",") if g]
    if args.kept:
        os.environ["TFSEM_TF_KERNELS"] = "1"
        kept(graphs, args.optimizer, args.repeat)
        return 0
    if args.worker:
        worker(graphs, args.optimizer, args.repeat, args.warm_runs)
        return 0
    env = dict(os.environ, TFSEM_TF_KERNELS="1")
    with tempfile.TemporaryDirectory(prefix="tfsem-canonical-") as tmp:
        versions = [("this tree", {k: v for k, v in env.items() if k != "PYTHONPATH"})]
        if args.baseline_commit:
            sys.path.insert(0, str(HERE))
            import grappler as B
            base = B.baseline_tree(args.baseline_commit, Path(tmp))
            versions.insert(0, (args.baseline_commit, dict(env, PYTHONPATH=str(base))))
        rows: dict[str, list] = {label: [] for label, _ in versions}
        for r in range(args.rounds):
            for label, venv in (versions if r % 2 == 0 else versions[::-1]):
                out = subprocess.run([sys.executable, __file__, "--worker", "--graphs", args.graphs,
                                      "--optimizer", args.optimizer, "--repeat", str(args.repeat),
                                      "--warm-runs", str(args.warm_runs)],
                                     env=venv, capture_output=True, text=True, check=True).stdout
                rows[label] += [json.loads(line[len(MARK):]) for line in out.splitlines()
                                if line.startswith(MARK)]
    labels = list(rows)
    print(f"canonical runs of P and P' ({args.optimizer}) at the plain, plain-huge and NaN σ, "
          f"medians of {args.rounds} x {args.repeat} "
          f"(warm: median of {args.warm_runs} passes each)")
    head = "| graph | nodes | steps per pass |" + "".join(
        f" {v} cold CPU ms | {v} warm CPU ms | {v} warm us/step |" for v in labels)
    pair = len(labels) == 2
    print(head + (" cold ratio | warm ratio |" if pair else ""))
    print("|---" * (head.count("|") - 1 + 2 * pair) + "|")
    for graph in graphs:
        cells, colds, per = [], [], []
        steps = nodes = None
        for label in labels:
            mine = [r for r in rows[label] if r["graph"] == graph]
            steps, nodes = mine[0]["steps"], mine[0]["nodes"]
            colds.append(statistics.median(r["cold_cpu_s"] for r in mine))
            warm = statistics.median(r["warm_cpu_s"] for r in mine)
            per.append(warm / steps * 1e6)
            cells.append(f" {colds[-1] * 1e3:.1f} | {warm * 1e3:.2f} | {per[-1]:.2f} |")
        ratios = f" {colds[1] / colds[0]:.2f} | {per[1] / per[0]:.2f} |" if pair else ""
        print(f"| {graph} | {nodes[0]} / {nodes[1]} | {steps} |" + "".join(cells) + ratios)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
