"""Where the control-flow checks' time goes, stage by stage (needs TensorFlow:
Grappler makes the rewrites, its kernels compute the ops with no numpy model).

    python benchmarks/controlflow_stages.py [--graphs keras_gru_loop,...]
        [--timeout 10] [--repeat 1] [--json FILE]

Checks Grappler's five optimizers' rewrites of the real corpus's graphs
with control flow (default: the six whose checks go through
checking/control_flow.py) with `check_rewrite`, as benchmarks/grappler.py's
worker does (one process, the original's checks one after the other, so
that what one check remembers serves the next), TensorFlow's kernels on,
and splits each check's CPU time (`time.process_time`: this process's own,
less sensitive to the shared machine's load than the wall clock, which
does not count TensorFlow's kernel child) into:

- `runs P` and `runs P'`: the engine's runs of the original and of the
  rewrite (oracle/controlflow.py `outcomes`), in the refutation stage
  (`refute`) and in the counterexample's minimization (`mini`); and, over
  all runs of the check:
- `explore`: the first runs of a program, explored (`behaviours`),
  without the new applications and Assigns made inside them;
- `new apps`: function applications computed in the runs (`Function._apply`: neither
  the engine's memo nor the check's memo of applications had them),
  TensorFlow kernels' round trips included;
- `assigns`: the updates of Assign-like steps (`graph._assigned`: a
  sparse update applies its rows one by one);
- `replays`: the rest of the runs: the kept paths' steps and the
  remembered applications they find (`_replay`);
- `other`: the check outside the runs (the structural rule, the numpy
  confirmation, σ made, minimization's bookkeeping).

`--repeat N` checks everything N times, each pass on programs imported
afresh and with the engine's memos emptied (the check's memo of
applications is keyed by the original program object, so it starts afresh
too), and prints the medians.  Each pass must give the same verdicts.
The timers wrap the functions named above (a few microseconds a call); the
totals are for comparing stages, side by side in one run, not releases.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

GRAPHS = ("keras_gru_loop", "keras_lstm_loop", "keras_embedding_adagrad",
          "keras_fit_train_function", "tf_while_assign", "tf1_while_read_assign")
COLUMNS = ("refute P", "refute P'", "mini P", "mini P'", "explore", "new apps", "assigns",
           "replays", "other")


class _Timers:
    """Exclusive CPU seconds by category, for one check at a time."""

    def __init__(self) -> None:
        self.acc: dict = defaultdict(float)
        self.stage = "refute"
        self.original = None
        self.running = 0
        # (the seconds the wrapped functions took, each net of those nested
        # in it, so far: what a stage around them subtracts)
        self.timed = 0.0

    def install(self, cf, fns, control_flow) -> None:
        timers = self
        outcomes, behaviours = cf.outcomes, cf.behaviours
        apply_, assigned = fns.Function._apply, cf._assigned
        minimized = control_flow._CFChecker.minimized

        def timed_outcomes(p, *a, **k):
            t = time.process_time()
            timers.running += 1
            try:
                return outcomes(p, *a, **k)
            finally:
                timers.running -= 1
                who = "P" if p is timers.original else "P'"
                timers.acc[f"{timers.stage} {who}"] += time.process_time() - t

        def timed_behaviours(*a, **k):
            t = time.process_time()
            before = timers.timed
            try:
                yield from behaviours(*a, **k)
            finally:
                timers.acc["explore"] += time.process_time() - t - (timers.timed - before)

        def timed(name, fn):
            def wrapper(*a, **k):
                t = time.process_time()
                before = timers.timed
                try:
                    return fn(*a, **k)
                finally:
                    own = time.process_time() - t - (timers.timed - before)
                    if timers.running:     # (the runs' only: not the structural rule's)
                        timers.acc[name] += own
                        timers.timed += own
            return wrapper

        def timed_minimized(self, found):
            timers.stage = "mini"
            try:
                return minimized(self, found)
            finally:
                timers.stage = "refute"

        cf.outcomes = timed_outcomes
        cf.behaviours = timed_behaviours
        fns.Function._apply = timed("new apps", apply_)
        cf._assigned = timed("assigns", assigned)
        control_flow._CFChecker.minimized = timed_minimized

    def row(self, total: float) -> dict:
        a = self.acc
        runs = a["refute P"] + a["refute P'"] + a["mini P"] + a["mini P'"]
        out = {c: a[c] for c in COLUMNS[:7]}
        out["replays"] = max(0.0, runs - a["explore"] - a["new apps"] - a["assigns"])
        out["other"] = max(0.0, total - runs)
        out["check"] = total
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the rows (medians) to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1 or not args.timeout > 0:
        print("error: --repeat must be at least 1 and --timeout above 0", file=sys.stderr)
        return 2
    os.environ.setdefault("TFSEM_TF_KERNELS", "1")
    import numpy as np

    import grappler as bench
    from tfsem.checking import check_rewrite
    from tfsem.checking import control_flow
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import controlflow as cf
    from tfsem.oracle import functions as fns
    from tfsem.oracle import kernels

    wanted = [x for x in args.graphs.split(",") if x]
    entries = [e for e in bench._entries("real") if e["file"].split(".")[0] in wanted]
    missing = set(wanted) - {e["file"].split(".")[0] for e in entries}
    if missing:
        print(f"error: --graphs: no real corpus graph named {', '.join(sorted(missing))}",
              file=sys.stderr)
        return 2
    g.tensorflow()
    if kernels.enabled():   # (the kernels' child started before the first check)
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    sources = []
    for e in entries:
        gd = g.as_graph_def(os.path.join(e["base"], e["file"]))
        rewrites = [(opt, g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt).graph_def)
                    for opt in bench.REAL_OPTIMIZERS]
        sources.append((e, gd, rewrites))
    timers = _Timers()
    timers.install(cf, fns, control_flow)
    rows: dict = defaultdict(list)
    verdicts: dict = {}
    for _ in range(args.repeat):
        cf._APPLIED.clear()
        cf._OUTCOMES.clear()
        for e, gd, rewrites in sources:
            original = bench._import(gd, e)
            for opt, rewritten in rewrites:
                p2 = bench._import(rewritten, e)
                timers.acc.clear()
                timers.original = original
                t = time.process_time()
                v = check_rewrite(original, p2, timeout=args.timeout)
                key = (e["file"].split(".")[0], opt)
                rows[key].append(timers.row(time.process_time() - t))
                got = (v.verdict, v.stats.get("tried"))
                if verdicts.setdefault(key, got) != got:
                    print(f"error: {key}: {got} in one pass, {verdicts[key]} in another",
                          file=sys.stderr)
                    return 1
    med = {k: {c: statistics.median(r[c] for r in rs) for c in rs[0]} for k, rs in rows.items()}
    head = f"{'graph':26} {'optimizer':12} {'verdict':18} {'check':>6} " + \
        " ".join(f"{c:>9}" for c in COLUMNS)
    print(head)
    total: dict = defaultdict(float)
    for (graph, opt), r in med.items():
        for c, x in r.items():
            total[c] += x
        print(f"{graph[:26]:26} {opt[:12]:12} {verdicts[(graph, opt)][0]:18} {r['check']:6.3f} "
              + " ".join(f"{r[c]:9.3f}" for c in COLUMNS))
    print(f"{'total':26} {'':12} {'':18} {total['check']:6.3f} "
          + " ".join(f"{total[c]:9.3f}" for c in COLUMNS))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"repeat": args.repeat, "timeout": args.timeout,
             "rows": [{"graph": gr, "optimizer": o, "verdict": verdicts[(gr, o)][0],
                       "tried": verdicts[(gr, o)][1], **{c: round(x, 6) for c, x in r.items()}}
                      for (gr, o), r in med.items()]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
