"""Benchmark of replaying `unsound` verdicts on TensorFlow (needs TensorFlow).

    python benchmarks/tensorflow_replay.py [--cases DIR] [--timeout 20] [--json FILE]
    python benchmarks/tensorflow_replay.py --real keras_cnn_batchnorm,... [--repeat 3]

For every case of tests/cases/ (recursively) that expects `unsound`: the
check's time (`tfsem.checking.check_case`), then the replay's
(`backends.tensorflow.replay_program`: export, force the schedule, load the
graph into a session, one run), then, where that confirmed, the replay of
the original's witness schedules that `tfsem check` adds to it
(`backends.tensorflow.with_original`: the same per witness), each timed on
its own, side by side in one run, and whether TensorFlow confirmed the
counterexample or why not.  The first replay also pays TensorFlow's import,
reported on its own line.  Prints a Markdown table; --json also writes every
row.

`--real GRAPHS` (stems of the real corpus, examples/tensorflow/corpus):
each optimizer's output (`--optimizers`) checked against the graph as
`tfsem grappler` checks it (`--timeout` per check; TFSEM_TF_KERNELS as
set), and each `unsound` verdict replayed as `tfsem grappler` replays it
(tfsem/commands/grappler.py `replay`), `--repeat` times without the
original's side and with it, alternating which goes first: the medians
side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.backends import tensorflow as tfb
from tfsem.checking import check_case
from tfsem.oracle.jsonio import case_from_json

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "tests" / "cases"), help="a folder of cases")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per check")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--real", default=None, metavar="GRAPHS",
                    help="comma-separated stems of the real corpus (see the docstring)")
    ap.add_argument("--optimizers", default="constfold,arithmetic,dependency,"
                    "common_subgraph_elimination,default")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    t = time.perf_counter()
    tf = tfb.tensorflow()
    import_s = time.perf_counter() - t
    if args.real:
        return real(args, tf, import_s)
    rows = []
    for path in sorted(Path(args.cases).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if not isinstance(data, dict) or data.get("expect") != "unsound":
            continue
        case = case_from_json(data, where=str(path))
        t = time.perf_counter()
        v = check_case(case, timeout=args.timeout)
        check_s = time.perf_counter() - t
        row = {"case": str(path.relative_to(args.cases)), "semantics": v.semantics,
               "verdict": v.verdict, "check_s": round(check_s, 4)}
        if v.verdict == "unsound" and v.counterexample is not None:
            t = time.perf_counter()
            rep = tfb.replay_program(case.rewritten(), v.counterexample, observe=v.observe)
            row.update(replay_s=round(time.perf_counter() - t, 4), split=rep.split,
                       forced=len(rep.forced))
            t = time.perf_counter()
            rep = tfb.with_original(rep, case.original, v.counterexample, observe=v.observe)
            row.update(original_s=round(time.perf_counter() - t, 4),
                       witnesses=(rep.original or {}).get("replayed", 0),
                       confirmed=rep.confirmed, why=None if rep.confirmed else rep.reason)
        rows.append(row)
    print(f"TensorFlow {tf.__version__}: import {import_s:.2f} s")
    print("| case | semantics | check (s) | replay (s) | original's witnesses (s) | "
          "witnesses | forced nodes | TensorFlow |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "replay_s" not in r:
            print(f"| {r['case']} | {r['semantics']} | {r['check_s']:.3f} | - | - | - | - | "
                  f"(verdict {r['verdict']}) |")
            continue
        what = "confirmed" + (f" (split {', '.join(r['split'])})" if r["split"] else "") \
            if r["confirmed"] else f"not confirmed: {r['why'][:70]}"
        print(f"| {r['case']} | {r['semantics']} | {r['check_s']:.3f} | {r['replay_s']:.3f} | "
              f"{r['original_s']:.3f} | {r['witnesses']} | {r['forced']} | {what} |")
    replayed = [r for r in rows if "replay_s" in r]
    if replayed:
        def median(key: str) -> float:
            times = sorted(r[key] for r in replayed)
            return times[len(times) // 2]
        print(f"\n{sum(r['confirmed'] for r in replayed)} of {len(replayed)} confirmed; "
              f"replay median {median('replay_s'):.3f} s, max "
              f"{max(r['replay_s'] for r in replayed):.3f} s (the first includes loading "
              f"TensorFlow's runtime); the original's witnesses median "
              f"{median('original_s'):.3f} s, max {max(r['original_s'] for r in replayed):.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"tensorflow": tf.__version__,
                                               "import_s": round(import_s, 3), "rows": rows},
                                              indent=1))
    return 0


def real(args, tf, import_s: float) -> int:
    """`--real`: the replay of `tfsem grappler` on real graphs, without and
    with the original's witness schedules, side by side."""
    import statistics
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grappler import _entries, _import  # noqa: PLC0415 (benchmarks/grappler.py)

    from tfsem.checking import check_rewrite
    from tfsem.commands.common import Deadline
    from tfsem.commands.grappler import replay
    from tfsem.graphdef import grappler as g
    wanted = set(args.real.split(","))
    rows = []
    for e in [e for e in _entries("real") if Path(e["file"]).stem in wanted]:
        gd = g.as_graph_def(Path(e["base"]) / e["file"])
        original = _import(gd, e)
        caps = (json.loads((Path(e["base"]) / e["captures"]).read_text())
                if e.get("captures") else None)
        for opt in args.optimizers.split(","):
            res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
            rewritten = _import(res.graph_def, e)
            v = check_rewrite(original, rewritten, timeout=args.timeout)
            row = {"graph": Path(e["file"]).stem, "optimizer": opt, "verdict": v.verdict}
            rows.append(row)
            if v.verdict != "unsound" or v.counterexample is None:
                continue
            kept = {n.name for n in res.graph_def.node}
            rcaps = {k: s for k, s in caps.items() if k in kept} if caps else None
            times: dict[str, list[float]] = {"alone": [], "both": []}
            reps = {}
            for i in range(args.repeat):
                for which in (("alone", "both") if i % 2 == 0 else ("both", "alone")):
                    extra = {} if which == "alone" else {
                        "original": original, "original_graph_def": gd, "original_captures": caps}
                    t = time.perf_counter()
                    reps[which] = replay(res.graph_def, rewritten, v.counterexample, e["targets"],
                                         v.observe, f"the graph {e['file']} after {opt}",
                                         Deadline(60.0), captures=rcaps, **extra)
                    times[which].append(time.perf_counter() - t)
            row.update(alone_s=round(statistics.median(times["alone"]), 4),
                       both_s=round(statistics.median(times["both"]), 4),
                       alone=reps["alone"].confirmed, both=reps["both"].confirmed,
                       original=reps["both"].original,
                       why=None if reps["both"].confirmed else reps["both"].reason)
    print(f"TensorFlow {tf.__version__}: import {import_s:.2f} s; median of {args.repeat}")
    print("| graph | optimizer | verdict | replay, rewritten only (s) | with the original's "
          "witnesses (s) | ratio | confirmed (only / with) |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        if "alone_s" not in r:
            print(f"| {r['graph']} | {r['optimizer']} | {r['verdict']} | - | - | - | - |")
            continue
        print(f"| {r['graph']} | {r['optimizer']} | unsound | {r['alone_s']:.3f} | "
              f"{r['both_s']:.3f} | {r['both_s'] / r['alone_s']:.2f} | {r['alone']} / "
              f"{r['both']}{'' if r['both'] else ': ' + r['why'][:80]} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"tensorflow": tf.__version__, "rows": rows},
                                              indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
