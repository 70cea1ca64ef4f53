"""The Hogwild question on a real Keras training step (docs/sessions.md):
what happens when 2 or 4 calls of one Keras `train_step` run at once,
sharing the model's variables, on TensorFlow's runtime?

For each N in --threads, each of --trials trials resets the model to the
same weights, then starts N Python threads released together by a barrier,
each calling the step (a `tf.function`) once on the same batch; TensorFlow
runs the calls concurrently on its inter-op threads.  The final weights are
compared bit for bit with those of N steps run one after the other (what a
sequential session gives, deterministic here): a trial that differs ran
some step on weights another step was updating (stale or torn reads; each
variable's own update is atomic under its lock).  Also counted: the distinct
final weights, and the optimizer's `iterations` counter (an atomic
AssignAddVariableOp: it should always end at N).

tfsem's own answer for the same question, on the hand-written SGD step of
examples/sessions (a scalar linear regression in the shape of a Keras step),
is measured beside it: the outcome counts of 2 and 4 concurrent steps.

    python benchmarks/keras_hogwild.py --trials 200 --threads 2,4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent


def keras_step(units: int, features: int, batch: int, lr: float, seed: int):
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(units, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="mse")
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(batch, features)).astype("float32"))
    y = tf.constant(rng.normal(size=(batch, 1)).astype("float32"))
    model.train_on_batch(x[:1], y[:1])   # builds the optimizer's variables
    step = tf.function(lambda: model.train_step((x, y)))
    step.get_concrete_function()
    return model, step


def snapshot(model) -> tuple:
    import numpy as np
    return tuple(np.asarray(w).tobytes() for w in model.get_weights())


def measure(n: int, trials: int, units: int, features: int, batch: int, lr: float,
            seed: int) -> dict:
    import numpy as np
    model, step = keras_step(units, features, batch, lr, seed)
    w0 = [np.array(w) for w in model.get_weights()]
    it0 = int(model.optimizer.iterations.numpy())

    def reset():
        model.set_weights(w0)
        model.optimizer.iterations.assign(it0)
    reset()
    started = time.perf_counter()
    for _ in range(n):
        step()
    sequential_s = time.perf_counter() - started
    sequential = snapshot(model)
    finals: Counter = Counter()
    iterations: Counter = Counter()
    seconds = []
    for _ in range(trials):
        reset()
        barrier = threading.Barrier(n)

        def call():
            barrier.wait()
            step()
        threads = [threading.Thread(target=call) for _ in range(n)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds.append(time.perf_counter() - t0)
        finals[snapshot(model)] += 1
        iterations[int(model.optimizer.iterations.numpy()) - it0] += 1
    return {"threads": n, "trials": trials, "params": int(sum(w.size for w in w0)),
            "as_sequential": finals.get(sequential, 0), "distinct_finals": len(finals),
            "iterations": dict(iterations), "median_concurrent_ms": statistics.median(seconds) * 1e3,
            "sequential_ms": sequential_s * 1e3}


def tfsem_sgd(n: int, timeout: float) -> dict:
    from tfsem.oracle.budget import BudgetExceeded
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.jsonio import read_json_file
    from tfsem.oracle.session import session_from_json
    from tfsem.oracle.values import Tensor
    program = read_json_file(ROOT / "examples" / "sessions" / "sgd_step.json")
    out = {}
    for order in ("concurrent", "sequential"):
        s = session_from_json({"format": "tfsem.session/1", "program": program, "order": order,
                               "runs": [{"name": f"step{k + 1}"} for k in range(n)]})
        p = s.expand()
        init = {x: Tensor(0.0, p.variables[x].dtype) if p.variables[x].dtype != "int64"
                else Tensor(0, "int64") for x in p.variables}
        t0 = time.perf_counter()
        try:
            r = outcome_set(p, {f: Tensor(1.0, p.feed_type(f).dtype) for f in p.feed_names}, init,
                            max_seconds=timeout)
            out[order] = {"outcomes": r.count, "seconds": round(time.perf_counter() - t0, 3)}
        except BudgetExceeded as exc:
            out[order] = {"unknown": str(exc)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--threads", default="2,4")
    ap.add_argument("--units", type=int, default=16)
    ap.add_argument("--features", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tfsem-timeout", type=float, default=60.0)
    args = ap.parse_args()
    rows = []
    for n in (int(k) for k in args.threads.split(",")):
        row = measure(n, args.trials, args.units, args.features, args.batch, args.lr, args.seed)
        row["tfsem_sgd_step"] = tfsem_sgd(n, args.tfsem_timeout)
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
