"""Benchmark of sessions: N concurrent (and sequential) training steps.

    python benchmarks/sessions.py [--runs 1,2,4] [--repeat 3] [--timeout 120]

The graph is examples/tensorflow/keras_mlp_sgd.pbtxt (a Keras Sequential MLP,
4 -> 8 -> 2, one SGD step per call of its tf.function; fetch `loss`), the
session N runs of it with the same batch fed (the session's `feeds`, so the
runs are identical threads), the variables initialized to fixed small
floats.  For each N and order, `outcome_set` (engine auto, as `tfsem
outcomes` runs it; atomic and decomposed) is timed: median of --repeat calls,
with the outcome count, the states explored and the engine the auto choice
took per component.

Graphs: examples/sessions/sgd_step.json (one SGD step of a scalar linear
regression written by hand: read w and b, loss, gradients, AssignSub both,
count the iteration: the shape of a Keras step without the matrix product);
the split-assign counter (examples/sessions), the lost update's smallest
case; and keras_mlp_sgd.pbtxt, which the concrete oracle refuses (float32
MatMul has no concrete model: Eigen's summation order is not modelled), so
its row says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def keras_session(n: int, order: str) -> dict:
    x = [[0.5, -1.0, 0.25, 2.0], [1.0, 0.0, -0.5, 0.75]]
    y = [[1.0, 0.0], [0.0, 1.0]]
    feeds = {"x": {"dtype": "float32", "value": x}, "y": {"dtype": "float32", "value": y}}
    return {"format": "tfsem.session/1",
            "program": {"graph": str(ROOT / "examples/tensorflow/keras_mlp_sgd.pbtxt")},
            "runs": [{"name": f"step{k + 1}", "fetch": ["loss"], "feeds": feeds} for k in range(n)],
            "order": order}


def sgd_session(n: int, order: str) -> dict:
    p = json.loads((ROOT / "examples/sessions/sgd_step.json").read_text())
    return {"format": "tfsem.session/1", "program": p,
            "runs": [{"name": f"step{k + 1}", "fetch": ["loss"], "feeds": {"x": 2.0, "y": 1.0}}
                     for k in range(n)], "order": order}


def counter_session(n: int, order: str) -> dict:
    p = json.loads((ROOT / "examples/sessions/counter_split.json").read_text())
    return {"format": "tfsem.session/1", "program": p,
            "runs": [{"name": f"step{k + 1}", "fetch": ["count"]} for k in range(n)], "order": order}


def init_values(program) -> dict:
    from tfsem.oracle.values import Tensor
    rng = np.random.default_rng(0)
    out = {}
    for x, t in program.variables.items():
        if t.dtype == "int64":
            out[x] = Tensor(np.zeros(t.shape, np.int64), "int64")
        elif x in ("w", "b"):
            out[x] = Tensor(np.zeros(t.shape, np.float32), "float32")
        elif x.endswith("learning_rate"):
            out[x] = Tensor(np.full(t.shape, 0.1, np.float32), "float32")
        else:
            out[x] = Tensor(rng.uniform(-0.5, 0.5, t.shape).astype(np.float32), "float32")
    return out


def measure(data: dict, semantics: str, repeat: int, timeout: float) -> dict:
    from tfsem.graphdef.cliopts import session_graph_loader
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.explore import BudgetExceeded
    from tfsem.oracle.functions import CannotRun
    from tfsem.oracle.session import session_from_json
    s = session_from_json(data, load_graph=session_graph_loader())
    p = s.expand()
    init = init_values(p)
    times, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            res = outcome_set(p, {}, init, semantics, "outputs+state", max_seconds=timeout,
                              engine="auto")
        except BudgetExceeded as exc:
            return {"nodes": len(p.nodes), "seconds": None, "note": f"unknown: {exc}"}
        except CannotRun as exc:
            return {"nodes": len(p.nodes), "seconds": None, "note": f"refused: {str(exc)[:60]}"}
        times.append(time.perf_counter() - t0)
    engines = getattr(res, "engines", [])
    return {"nodes": len(p.nodes), "seconds": statistics.median(times), "count": res.count,
            "states": res.states,
            "engines": {e: engines.count(e) for e in sorted(set(engines))}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="1,2,4,8")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    print("| graph | runs | order | semantics | nodes | median s | outcomes | states | engines |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, make in (("sgd_step", sgd_session), ("counter split", counter_session),
                        ("keras_mlp_sgd", keras_session)):
        for n in (int(k) for k in args.runs.split(",")):
            for order in ("concurrent", "sequential"):
                if n == 1 and order == "sequential":
                    continue
                for semantics in ("atomic", "decomposed"):
                    r = measure(make(n, order), semantics, args.repeat, args.timeout)
                    sec = f"{r['seconds']:.3f}" if r["seconds"] is not None else r["note"]
                    print(f"| {label} | {n} | {order} | {semantics} | {r['nodes']} | {sec} | "
                          f"{r.get('count', '-')} | {r.get('states', '-')} | "
                          f"{r.get('engines', '-')} |", flush=True)


if __name__ == "__main__":
    main()
