"""Cost of giving float arithmetic's NaNs TensorFlow's bits (functions.nan_bits).

    python benchmarks/nan_bits_cost.py [--repeat 15] [--dtypes float32,float64,bfloat16,float16]

Add's model as tfsem runs it (`functions.get("Add").impl`: numpy's add, then
the NaN check on every float result and, where the result holds a NaN, the
rewrite of its bits) beside the model as it was before (the kernel check and
numpy's add alone), on tensors of 1 to 10^6 elements: with no NaN (the
common case, where only the check costs) and with one NaN (where the bits
are rewritten).  Both run side by side in one process, interleaved, so the
medians compare; the ratio is after / before.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.functions import NUMERIC, _kernel
from tfsem.oracle.values import DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)

SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


def before(xp, args, attrs):
    """Add's model before NaN bits were TensorFlow's."""
    _kernel("Add", NUMERIC, *args)
    return (xp.add(args[0], args[1]),)


def median_seconds(fn, args, loops: int) -> float:
    t0 = time.perf_counter()
    for _ in range(loops):
        fn(np, args, {})
    return (time.perf_counter() - t0) / loops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--dtypes", default="float32,float64,bfloat16,float16")
    opts = ap.parse_args()
    after = fns.get("Add").impl
    rng = np.random.default_rng(0)
    print(f"{'dtype':9} {'n':>8} {'NaN':>4} {'before us':>10} {'after us':>10} {'ratio':>6}")
    for dt in opts.dtypes.split(","):
        for n in SIZES:
            a = rng.standard_normal(n).astype(DTYPES[dt])
            b = rng.standard_normal(n).astype(DTYPES[dt])
            for with_nan in (False, True):
                x = a.copy()
                if with_nan:
                    x[n // 2] = np.nan
                loops = max(1, 20_000 // n)
                t_before, t_after = [], []
                with np.errstate(all="ignore"):
                    for _ in range(opts.repeat):   # interleaved: the same load on both
                        t_before.append(median_seconds(before, (x, b), loops))
                        t_after.append(median_seconds(after, (x, b), loops))
                mb, ma = statistics.median(t_before), statistics.median(t_after)
                print(f"{dt:9} {n:>8} {'yes' if with_nan else 'no':>4} {mb * 1e6:>10.1f} "
                      f"{ma * 1e6:>10.1f} {ma / mb:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
