"""Seed 002's two examples on TensorFlow's runtime, plain and XLA-clustered.

    python examples/tensorflow/seed002_xla.py [--runs 5000] [--threads 4]

Runs `seed002_load_store.pbtxt` and `seed002_writes_reads.pbtxt` (made by
TensorFlow, see make_corpus.py) from X = Y = 0, --runs times each on the
graph executor with inter-op threads and again with XLA CPU auto-clustering
(backends/tensorflow.py), prints the outcomes each produced, how many runs
gave each, whether the oracle allows it (tfsem's own programs of the same
examples: examples/load_store.json, and the original program of
tests/cases/seed002_writes_reads_serialize.json), and which XLA clusters the
run used.  Needs TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from tfsem.backends.tensorflow import GraphRunner
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import load_program, program_from_json
from tfsem.oracle.values import Tensor

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

EXAMPLES = [
    ("seed002_load_store.pbtxt", {"r0": "r0"}, ["store_x2"],
     lambda: load_program(ROOT / "examples" / "load_store.json")),
    ("seed002_writes_reads.pbtxt", {"r0": "r0", "r1": "r1"}, ["store_y"],
     lambda: program_from_json(json.loads(
         (ROOT / "tests" / "cases" / "seed002_writes_reads_serialize.json").read_text())["original"])),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=4, help="inter-op threads")
    args = ap.parse_args(argv)
    init = {"X": Tensor(np.int64(0)), "Y": Tensor(np.int64(0))}
    for file, outputs, targets, program in EXAMPLES:
        allowed = set(outcome_set(program(), {}, init))
        print(f"{file} from X = Y = 0: the oracle allows {len(allowed)} outcomes")
        for o in sorted(allowed, key=lambda o: o.describe()):
            print(f"    {o.describe()}")
        for mode in ("tensorflow", "xla"):
            with GraphRunner(HERE / file, outputs, targets, mode=mode,
                             inter_op_threads=args.threads) as r:
                t = time.perf_counter()
                seen = r.run_many({}, init, args.runs)
                secs = time.perf_counter() - t
                cl = r.clusters({}, init)
            print(f"  {mode}: {seen.runs} runs in {secs:.1f} s, {len(seen.counts)} distinct")
            for o, n in sorted(seen.items(), key=lambda x: -x[1]):
                print(f"    {o.describe():32s} {n:6d} runs  "
                      f"{'allowed' if o in allowed else 'NOT ALLOWED (finding)'}")
            if mode == "xla":
                print(f"    XLA clusters (variables each touches): {cl['clusters']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
