"""Benchmark of one turn to TensorFlow's kernel child by input size: through
the pipe alone against through the shared files (oracle/kernel_worker.py
`Region`), side by side in one run (needs TensorFlow).

    python benchmarks/kernel_turns.py [--sizes 256,65536,262144,1048576]
                                      [--ops Identity,Exp] [--turns 50] [--repeat 3]

Starts one child of each kind (`kernels._Client` with SHARED off and on),
then for each (size, op) makes --turns evaluations of a float32 input of
that many bytes on each child in turn, --repeat times, alternating which
goes first; prints the median milliseconds per turn (wall, and this
process's CPU) of each and their ratio.  Every answer of the two children
is compared bit for bit."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,65536,262144,1048576",
                    help="input bytes, comma-separated")
    ap.add_argument("--ops", default="Identity,Exp")
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    os.environ["TFSEM_TF_KERNELS"] = "1"
    from tfsem.oracle import kernels
    clients = {}
    for shared in (False, True):
        kernels.SHARED = shared
        c = kernels._Client()
        c.call("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)   # TensorFlow up
        if shared and c.requests is None:
            print("no shared files on this system (memfd_create)", file=sys.stderr)
            return 2
        clients["pipe" if not shared else "shared"] = c
    print("| input | op | pipe ms/turn | shared ms/turn | ratio | pipe CPU ms | shared CPU ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    k = 0
    for size in (int(s) for s in args.sizes.split(",")):
        x = rng.standard_normal(max(1, size // 4)).astype(np.float32)
        for op in args.ops.split(","):
            wall = {name: [] for name in clients}
            cpu = {name: [] for name in clients}
            answers = {}
            for _ in range(args.repeat):
                order = list(clients) if k % 2 == 0 else list(reversed(clients))
                k += 1
                for name in order:
                    c = clients[name]
                    t, p = time.perf_counter(), time.process_time()
                    for _ in range(args.turns):
                        a = c.call(op, [x], {"T": "DT_FLOAT"}, 1)
                    wall[name].append((time.perf_counter() - t) / args.turns * 1e3)
                    cpu[name].append((time.process_time() - p) / args.turns * 1e3)
                    answers[name] = (a[0], [(r.dtype.str, r.shape, r.tobytes()) for r in a[1]])
            if answers["pipe"] != answers["shared"]:
                print(f"{op} on {size} B: the two children's answers differ", file=sys.stderr)
                return 1
            w = {n: statistics.median(v) for n, v in wall.items()}
            c_ = {n: statistics.median(v) for n, v in cpu.items()}
            print(f"| {size:,} B | {op} | {w['pipe']:.3f} | {w['shared']:.3f} | "
                  f"{w['shared'] / w['pipe']:.2f} | {c_['pipe']:.3f} | {c_['shared']:.3f} |",
                  flush=True)
    for c in clients.values():
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
