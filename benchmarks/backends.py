"""Benchmark of batched differential testing on numpy and cupy.

    python benchmarks/backends.py [--sizes 1e3,1e4,1e5,1e6,1e7] [--repeat 3]
                                  [--max-seconds 30] [--memory-fraction 0.5]

Valuations checked per second: for each batch size B, one call of
`tfsem.backends.batched.unmatched` evaluates every schedule class of both
programs on B valuations at once and tests, per valuation, that each outcome of
the rewrite is among the original's, then copies back whether any valuation
failed.  Inputs are generated and moved to the device beforehand (their cost is
the "gen s" column).  Median of --repeat calls.

Cases:
* `reassociation`: the corpus case `tests/cases/alg_float_reassociate.json`,
  (a + b) + c rewritten to a + (b + c) in float32 (unsound: most batches
  contain counterexamples; the whole batch is checked all the same);
* `generated-40`: the first 40-node program of `random_programs(seed=0,
  min_nodes=40, max_nodes=40)` whose schedule classes are found within 20,000
  states and 0.5 s (racy programs have too many), rewritten by the `cse` pass
  (sound).

The "classes" column counts schedule classes over all parts of the original
and of the rewrite (`tfsem.backends.classes.parts`).

A size is skipped when the estimated memory (`bytes_per_valuation`) exceeds
--memory-fraction of the free memory of the backend, or when the previous size
took more than --max-seconds.  The cupy column is "n/a: no GPU" without cupy
and a CUDA device.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from tfsem.backends import arraymodule as am
from tfsem.backends import batched as BT
from tfsem.backends.classes import parts
from tfsem.oracle.jsonio import load_case

ROOT = Path(__file__).resolve().parent.parent


def reassociation_case():
    case = load_case(ROOT / "tests" / "cases" / "alg_float_reassociate.json")
    return "reassociation", case.original, case.rewritten()


def generated_case():
    from tfsem.generators.strategies import random_programs
    from tfsem.oracle.explore import BudgetExceeded
    from tfsem.rewrites import get_pass
    for i, p in enumerate(random_programs(64, seed=0, max_nodes=40, min_nodes=40)):
        try:
            parts(p, max_states=20_000, max_seconds=0.5)
        except BudgetExceeded:
            continue
        return f"generated-40 (#{i}, cse)", p, get_pass("cse")(p)
    raise SystemExit("no generated 40-node program with few enough schedule classes")


def measure(original_parts, rewritten_parts, backend, size, repeat, seed=0):
    feed_types, var_types = BT.input_types(*(p.program for p in (*original_parts, *rewritten_parts)))
    t = time.perf_counter()
    batch = BT.random_batch(feed_types, var_types, size, np.random.default_rng(seed), backend)
    backend.synchronize()
    gen = time.perf_counter() - t
    times, failing = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        m = BT.unmatched_parts(original_parts, rewritten_parts, batch, backend)
        failing = int(backend.to_host([m.bad.sum()])[0])
        times.append(time.perf_counter() - t)
    return statistics.median(times), gen, failing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=30.0,
                    help="skip larger sizes once one call takes longer than this")
    ap.add_argument("--memory-fraction", type=float, default=0.5)
    ap.add_argument("--substitute", action="store_true",
                    help="the cupy column on numpy standing in for cupy (no GPU: checks the path)")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    backends = [am.get_backend("numpy")]
    gpu_note = "n/a: no GPU"
    if args.substitute:
        backends.append(am.numpy_as_cupy())
    elif am.cuda_available():
        backends.append(am.get_backend("cupy"))
    else:
        gpu_note += f" ({am.cuda_unavailable_reason().split(';')[0]})"

    print(f"free memory: numpy {backends[0].memory_available() / 2**30:.1f} GiB"
          + (f", cupy {backends[1].memory_available() / 2**30:.1f} GiB" if len(backends) > 1 else ""))
    print(f"cupy: {backends[1].label if len(backends) > 1 else gpu_note}\n")
    header = (f"| {'case':<24} | {'B':>10} | {'classes':>11} | {'numpy s':>8} | {'numpy val/s':>14} "
              f"| {'cupy s':>8} | {'cupy val/s':>12} | {'cupy/numpy':>10} | {'gen s':>6} | {'failing':>9} |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, original, rewritten in (reassociation_case(), generated_case()):
        split = (parts(original), parts(rewritten))
        n_classes = [sum(len(x.schedules) for x in side) for side in split]
        per_valuation = {b.name: BT.bytes_per_valuation(split[0], b) for b in backends}
        stopped: dict[str, str] = {}
        for size in sizes:
            row: dict[str, tuple | str] = {}
            for b in backends:
                need = per_valuation[b.name] * size
                if b.name in stopped:
                    row[b.name] = stopped[b.name]
                elif need > args.memory_fraction * b.memory_available():
                    row[b.name] = f"skip: {need / 2**30:.0f} GiB"
                else:
                    row[b.name] = measure(*split, b, size, args.repeat)
                    if row[b.name][0] > args.max_seconds:
                        stopped[b.name] = "skip: time"
            numpy_cell = row["numpy"]
            cupy_cell = row.get("cupy", gpu_note)

            if isinstance(numpy_cell, str):
                ns, nv = f"{'-':>8}", f"{numpy_cell:>14}"
            else:
                ns, nv = f"{numpy_cell[0]:>8.4f}", f"{size / numpy_cell[0]:>14,.0f}"
            if isinstance(cupy_cell, tuple):
                cs, cv = f"{cupy_cell[0]:>8.4f}", f"{size / cupy_cell[0]:>12,.0f}"
            else:
                cs, cv = f"{'-':>8}", f"{'n/a' if 'GPU' in cupy_cell else cupy_cell:>12}"
            if isinstance(numpy_cell, tuple) and isinstance(cupy_cell, tuple):
                ratio = f"{numpy_cell[0] / cupy_cell[0]:>10.1f}"
            else:
                ratio = f"{'n/a' if isinstance(cupy_cell, str) and 'GPU' in cupy_cell else '-':>10}"
            gen = f"{numpy_cell[1]:>6.2f}" if isinstance(numpy_cell, tuple) else f"{'-':>6}"
            failing = f"{numpy_cell[2]:>9,}" if isinstance(numpy_cell, tuple) else f"{'-':>9}"
            if isinstance(numpy_cell, tuple) and isinstance(cupy_cell, tuple) and \
                    cupy_cell[2] != numpy_cell[2]:   # (the same batch: the same rows must fail)
                failing += f" MISMATCH: cupy {cupy_cell[2]:,}"
            print(f"| {name:<24} | {size:>10,} | {n_classes[0]:>5}/{n_classes[1]:<5} | {ns} | {nv} "
                  f"| {cs} | {cv} | {ratio} | {gen} | {failing} |", flush=True)
    print("\ncupy/numpy: numpy seconds / cupy seconds at the same B (higher: cupy faster); "
          f"{gpu_note if len(backends) == 1 else ''}")
    if len(backends) > 1:
        # (float32 calls whose operands or results reach the subnormal range,
        # which cupy's kernels flush: recomputed by numpy, docs/backends.md)
        print(f"{backends[1].label}: calls recomputed on the host (float32 flushing): "
              + (", ".join(f"{k} {v:,}" for k, v in sorted(am.HOST_RECOMPUTES.items()))
                 or "none"))


if __name__ == "__main__":
    main()
