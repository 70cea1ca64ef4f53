"""Benchmark of the application memo's interning key (needs TensorFlow).

    python benchmarks/interning.py [--graphs a,b] [--optimizer default]
                                   [--rounds 10]

The cold pass of benchmarks/canonical_runs.py -- `refute.canonical_outcome`
of a real-corpus graph's original P and of Grappler's output P' at the
plain, plain-huge and NaN σ (six runs), in a fresh application memo, the
compiled components dropped, σ made anew as each check makes it, the
kernels' cache filled before -- with the memo's tensors interned by their
dtype, shape and bytes (oracle/applications.py `INTERN_BY_BYTES`, the
default) and by `values.exact` (the switch off), alternated in one process
`--rounds` times (which goes first alternating too).  Prints each graph's
median CPU time both ways and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="keras_transformer_block,keras_cnn_batchnorm,"
                    "keras_gru_unrolled,keras_lstm_unrolled,keras_mlp_adam,keras_mlp_metrics")
    ap.add_argument("--optimizer", default="default")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import canonical_runs as CR
    import grappler as B
    import numpy as np

    from tfsem.checking import refute as ref
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import applications as A
    from tfsem.oracle import explore, kernels
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    entries = {e["file"].split(".")[0]: e for e in B._entries("real")}
    unknown = [x for x in args.graphs.split(",") if x not in entries]
    if unknown:
        print(f"interning.py: no graph {', '.join(unknown)} in the real corpus", file=sys.stderr)
        return 2
    print(f"cold passes (P and P' of {args.optimizer}, three σ), CPU medians of "
          f"{args.rounds}, alternated in one process")
    print("| graph | bytes key (ms) | exact key (ms) | ratio |")
    print("|---|---:|---:|---:|")
    saved = A.INTERN_BY_BYTES
    try:
        for graph in args.graphs.split(","):
            p, p2 = CR._pair(entries[graph], args.optimizer)
            with A.scope():                    # (the kernels' cache filled: not measured)
                for feeds, init in CR._sigmas(p):
                    for q in (p, p2):
                        ref.canonical_outcome(q, feeds, init, "atomic", "outputs+state")
            times: dict[bool, list[float]] = {True: [], False: []}
            for r in range(args.rounds):
                for on in ((True, False) if r % 2 else (False, True)):
                    A.INTERN_BY_BYTES = on
                    for cache in ("_COMPILED", "_COMPONENTS"):
                        getattr(explore, cache, {}).clear()
                    A.clear()
                    with A.scope():
                        sigmas = CR._sigmas(p)
                        c = time.process_time()
                        for feeds, init in sigmas:
                            for q in (p, p2):
                                ref.canonical_outcome(q, feeds, init, "atomic", "outputs+state")
                        times[on].append(time.process_time() - c)
            on, off = statistics.median(times[True]), statistics.median(times[False])
            print(f"| {graph} | {on * 1e3:.1f} | {off * 1e3:.1f} | {on / off:.3f} |", flush=True)
    finally:
        A.INTERN_BY_BYTES = saved
    return 0


if __name__ == "__main__":
    sys.exit(main())
