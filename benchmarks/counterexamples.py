"""Benchmark of the stages after a counterexample is found (needs TensorFlow).

    python benchmarks/counterexamples.py [--graphs a,b] [--optimizers o,...]
                                         [--timeout 10] [--kernels on|off]
                                         [--baseline-commit COMMIT] [--repeat 1]
                                         [--rows FILE.json] [--json FILE]

For every `unsound` row of the real-graphs corpus (by default the rows of
`--rows`, a benchmarks/grappler.py JSON whose first version said `unsound`;
else every graph and optimizer of `--graphs`/`--optimizers`): the check's
time, and within it the time of σ's minimization (`_Checker.minimized`, or
the control-flow checker's), of the numpy replay (`replay_on_backends`, or
the control-flow checker's `replay`) and of all of `unsound`; and what the
σ shown looks like: its tensors, those all zero, its non-zero elements.
With `--baseline-commit C` the same checks run with tfsem at C, side by
side (benchmarks/grappler.py's workers, A B then B A), and the table shows
both; `--repeat N` gives medians of the times (σ from the first run).
Each graph's checks share one original program object, as `tfsem
grappler`'s do; a repeated check runs with the σ remembered between
checks (checking/sigma_memo.py) as its first run found them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grappler as G  # noqa: E402  (benchmarks/grappler.py: corpus, workers, baseline trees)

MARK = "@@counterexamples-bench "


def worker() -> int:
    """Answers jobs ({"entry", "optimizer", "timeout"}) as marked JSON lines."""
    import numpy as np

    import tfsem
    from tfsem.checking import check as C
    from tfsem.checking import check_rewrite
    from tfsem.checking import control_flow as CF
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import kernels
    from tfsem.oracle.values import Error
    g.tensorflow()
    if kernels.enabled():
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    seconds: dict[str, float] = {}

    def timed(cls, name: str, key: str) -> None:
        real = getattr(cls, name, None)
        if real is None:
            return

        def wrapper(self, *a, **k):
            t = time.perf_counter()
            try:
                return real(self, *a, **k)
            finally:
                seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t
        setattr(cls, name, wrapper)

    timed(C._Checker, "unsound", "unsound_s")
    timed(C._Checker, "minimized", "minimize_s")
    timed(C._Checker, "replay_on_backends", "replay_s")
    timed(CF._CFChecker, "unsound", "unsound_s")
    timed(CF._CFChecker, "minimized", "minimize_s")
    timed(CF._CFChecker, "replay", "replay_s")
    pairs: dict[tuple[str, str], tuple] = {}
    try:
        from tfsem.checking import sigma_memo as memo
    except ImportError:
        memo = None
    memo_before: dict = {}
    originals: dict[str, object] = {}
    print(MARK + json.dumps({"ready": True,
                             "tfsem": str(Path(tfsem.__file__).parent.parent)}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        e, opt = job["entry"], job["optimizer"]
        key = (e["file"], opt)
        if key not in pairs:
            gd = g.as_graph_def(Path(e["base"]) / e["file"])
            res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
            # (one original program object per graph, as `tfsem grappler`
            # and benchmarks/grappler.py check it against each optimizer:
            # what is remembered per original serves the later checks)
            if e["file"] not in originals:
                originals[e["file"]] = G._import(gd, e)
            pairs[key] = (originals[e["file"]], G._import(res.graph_def, e))
        original, rewritten = pairs[key]
        # (a repeated check runs with the σ remembered between checks of one
        # original, checking/sigma_memo.py, as its first run found them,
        # not with the σ its own first run left: a tree without the memo
        # has nothing to restore)
        if memo is not None:
            if key in memo_before:
                memo.restore(memo_before[key])
            else:
                memo_before[key] = memo.snapshot()
        seconds.clear()
        t = time.perf_counter()
        v = check_rewrite(original, rewritten, timeout=job["timeout"])
        row = {"graph": e["file"], "optimizer": opt, "verdict": v.verdict,
               "path": v.stats.get("path"), "check_s": time.perf_counter() - t,
               "confirmed": list(v.confirmed), "minimization": v.stats.get("minimization"),
               "minimize": v.stats.get("minimize"), **seconds}
        cx = v.counterexample
        if cx is not None:
            values = [x for table in (cx.feeds, cx.init) for x in table.values()
                      if not isinstance(x, Error)]
            row.update(tensors=len(values),
                       zero_tensors=sum(1 for x in values if not np.count_nonzero(x.array)),
                       nonzero=sum(int(np.count_nonzero(x.array)) for x in values),
                       elements=sum(int(x.array.size) for x in values))
        print(MARK + json.dumps(row), flush=True)
    return 0


def _rows(args) -> list[tuple[dict, str]]:
    entries = {e["file"]: e for e in G._entries("real")}
    if args.rows:
        data = json.loads(Path(args.rows).read_text())
        wanted = [(r["graph"], r["optimizer"]) for r in data["rows"]
                  if r["versions"][0].get("verdict") == "unsound"]
    else:
        opts = args.optimizers.split(",") if args.optimizers else list(G.REAL_OPTIMIZERS)
        wanted = [(f, o) for f in entries for o in opts]
    if args.graphs:
        stems = args.graphs.split(",")
        wanted = [(f, o) for f, o in wanted if any(f.startswith(s) for s in stems)]
    if args.optimizers:
        wanted = [(f, o) for f, o in wanted if o in args.optimizers.split(",")]
    return [(entries[f], o) for f, o in wanted]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--graphs", default=None)
    ap.add_argument("--optimizers", default=None)
    ap.add_argument("--rows", default=None, help="a benchmarks/grappler.py --json file")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--kernels", choices=("on", "off"), default=None)
    ap.add_argument("--baseline-commit", default=None)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    env = dict(os.environ)
    if args.kernels:
        env["TFSEM_TF_KERNELS"] = "1" if args.kernels == "on" else "0"
    argv_w = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    rows = _rows(args)
    with tempfile.TemporaryDirectory() as tmp:
        workers = []
        if args.baseline_commit:
            base = G.baseline_tree(args.baseline_commit, Path(tmp))
            workers.append(G.Worker("baseline", dict(env, PYTHONPATH=str(base)), argv_w, MARK))
        workers.append(G.Worker("this", {k: v for k, v in env.items() if k != "PYTHONPATH"},
                                argv_w, MARK))
        labels = ([f"baseline {args.baseline_commit}"] if args.baseline_commit else []) + ["this"]
        out, turn = [], 0
        for e, opt in rows:
            job = {"entry": e, "optimizer": opt, "timeout": args.timeout}
            results, turn = G.alternating(workers, job, args.repeat, turn)
            row = {"graph": e["file"], "optimizer": opt, "versions": []}
            for runs in results:
                first = dict(runs[0])
                for k in ("check_s", "minimize_s", "replay_s", "unsound_s"):
                    vals = [r.get(k, 0.0) for r in runs]
                    first[k] = statistics.median(vals)
                row["versions"].append(first)
            out.append(row)
            print(_line(row), flush=True)
        for w in workers:
            w.close()
    print(_summary(out, labels))
    if args.json:
        Path(args.json).write_text(json.dumps({"labels": labels, "rows": out}, indent=1))
    return 0


def _line(row: dict) -> str:
    cells = [row["graph"], row["optimizer"]]
    for v in row["versions"]:
        cells += [v["verdict"], f"{v['check_s']:.2f}", f"{v.get('minimize_s', 0.0):.2f}",
                  f"{v.get('replay_s', 0.0):.2f}",
                  f"{v.get('zero_tensors', '-')}/{v.get('tensors', '-')}", str(v.get("nonzero", "-"))]
    return "| " + " | ".join(cells) + " |"


def _summary(rows: list[dict], labels: list[str]) -> str:
    lines = []
    for i, label in enumerate(labels):
        vs = [r["versions"][i] for r in rows]
        lines.append(f"{label}: {len(vs)} checks, check {sum(v['check_s'] for v in vs):.2f} s, "
                     f"minimization {sum(v.get('minimize_s', 0.0) for v in vs):.2f} s, "
                     f"replay {sum(v.get('replay_s', 0.0) for v in vs):.2f} s, unsound "
                     f"{sum(v.get('unsound_s', 0.0) for v in vs):.2f} s; zero tensors "
                     f"{sum(v.get('zero_tensors', 0) for v in vs)}/{sum(v.get('tensors', 0) for v in vs)}"
                     f", non-zero elements {sum(v.get('nonzero', 0) for v in vs)}; verdicts "
                     f"{sorted({v['verdict'] for v in vs})}")
    if len(labels) == 2:
        same = sum(r["versions"][0]["verdict"] == r["versions"][1]["verdict"] and
                   r["versions"][0]["path"] == r["versions"][1]["path"] for r in rows)
        lines.append(f"verdict and path equal: {same} of {len(rows)}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
