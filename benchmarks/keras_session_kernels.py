"""The whole Keras training step in a session, under TensorFlow's kernels
(docs/sessions.md, "The whole step under TensorFlow's kernels").

The graph is examples/tensorflow/keras_mlp_sgd.pbtxt (a Keras Sequential MLP,
4 -> 8 -> 2, one SGD step per call; fetch `loss`), a session of N runs of it
with the same batch (benchmarks/sessions.py keras_session), the variables
at fixed small floats.  Its float32 MatMul, BiasAddGrad and Mean have no
numpy model; with TFSEM_TF_KERNELS=1 (set here) oracle/kernels.py evaluates
them with TensorFlow's own CPU kernels (op determinism on, one thread, each
evaluation run twice and compared).  For each N, order and semantics mode,
`outcome_set` (engine auto, as `tfsem outcomes` runs it) is timed (median of
--repeat, the first call paying the kernel worker's start): outcomes,
states, the kernels used, or `unknown` when --timeout runs out.

Then the same two concurrent steps on TensorFlow's runtime (the program
exported back, two `Session.run` calls on threads per trial,
backends/tensorflow_sessions.py): the distinct outcomes of --trials trials,
and how many of them are in the oracle's set, bit for bit.

    python benchmarks/keras_session_kernels.py --repeat 3 --timeout 120 --trials 300
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["TFSEM_TF_KERNELS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from sessions import init_values, keras_session  # noqa: E402


def measure(n: int, order: str, semantics: str, repeat: int, timeout: float) -> dict:
    from tfsem.graphdef.cliopts import session_graph_loader
    from tfsem.oracle import kernels
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.explore import BudgetExceeded
    from tfsem.oracle.session import session_from_json
    s = session_from_json(keras_session(n, order), load_graph=session_graph_loader())
    p = s.expand()
    init = init_values(p)
    times, res, used = [], None, set()
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            with kernels.record() as used:
                res = outcome_set(p, {}, init, semantics, "outputs+state", max_seconds=timeout,
                                  engine="auto")
        except BudgetExceeded as exc:
            return {"nodes": len(p.nodes), "seconds": None, "note": f"unknown ({exc})"[:80]}
        times.append(time.perf_counter() - t0)
    return {"nodes": len(p.nodes), "seconds": statistics.median(times), "first": times[0],
            "count": res.count, "states": res.states, "kernels": sorted(used),
            "outcomes": res, "session": s, "init": init}


def tensorflow_trials(r: dict, trials: int, seconds: float) -> str:
    from tfsem.backends.tensorflow_sessions import run_session_threads
    allowed = set(r["outcomes"])
    seen, done = run_session_threads(r["session"], r["init"], trials, max_seconds=seconds)
    inside = sum(1 for o in seen if o in allowed)
    return (f"{done} trials of 2 concurrent steps on TensorFlow's runtime: {len(seen)} distinct "
            f"outcomes, {inside} of them in tfsem's set of {r['count']} "
            f"({sum(n for o, n in seen.items() if o in allowed)} of {done} trials); "
            f"the most frequent covers {max(seen.values()) if seen else 0} trials")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--runs", default="1,2,4")
    args = ap.parse_args()
    print("| runs | order | semantics | nodes | median s (first) | outcomes | states | kernels |")
    print("|---|---|---|---|---|---|---|---|")
    two = None
    for n in (int(k) for k in args.runs.split(",")):
        for order in ("concurrent", "sequential"):
            if n == 1 and order == "sequential":
                continue
            for semantics in ("atomic", "decomposed"):
                r = measure(n, order, semantics, args.repeat, args.timeout)
                if n == 2 and order == "concurrent" and semantics == "atomic":
                    two = r
                sec = (f"{r['seconds']:.3f} ({r['first']:.2f})" if r["seconds"] is not None
                       else r["note"])
                print(f"| {n} | {order} | {semantics} | {r['nodes']} | {sec} | "
                      f"{r.get('count', '-')} | {r.get('states', '-')} | "
                      f"{', '.join(r.get('kernels', [])) or '-'} |", flush=True)
    if two is not None and args.trials:
        print()
        print(tensorflow_trials(two, args.trials, 300.0), flush=True)


if __name__ == "__main__":
    main()
