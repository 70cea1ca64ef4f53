"""What keying the oracle's states by exact bits costs (docs/semantics.md, "NaN payloads").

    python benchmarks/oracle_exact_keys.py [--repeat 7] [--only FAMILY] [--json]

The engines key intermediate states and remembered function applications by
each value's exact bits (`values.exact`), so that NaNs of different payloads
are different states.  Before, they keyed by SPEC equality (the value
itself).  This benchmark runs them side by side in one process, on the
families of benchmarks/oracle.py (reference engine), the symmetry engine's
families and the control-flow engine: "exact" is the code as shipped,
"spec" the same engines with the keys of before put back (the two key
functions and the function cache's lookup, copied below as they were), and
"always" the shipped code with every value asked for its exact key from the
start (`_Component.payloads` set: what a search pays once a NaN other than
numpy's appears; the control-flow engine always asks, so its "always" is
its "exact").  Each repeat runs all three, in rotating order; it prints the
median of each and the ratios to "spec", and checks that all found the same
outcome set (these families hold no NaN, so the keys merge the same
states: `states` equal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

from tfsem.generators import families as F
from tfsem.oracle import controlflow as cf
from tfsem.oracle import explore
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

CASES = (
    [("blind_writers", (n,), "outputs", "reference") for n in (8, 9)]
    + [("assign_adds", (n,), "outputs+state", "reference") for n in (10,)]
    + [("lost_update", (k,), "outputs+state", "reference") for k in (5, 6)]
    + [("figure1", (5, "Concat"), "outputs+state", "reference")]
    + [("chain", (n,), "outputs+state", "reference") for n in (10000,)]
    + [("lost_update_used", (k,), "outputs+state", "symmetry") for k in (6,)]
    + [("lost_update", (k,), "outputs+state", "controlflow") for k in (4, 5)]
)


def _spec_key(self, st) -> tuple:
    """explore._Component.key before exact keys (values by SPEC equality)."""
    rel = self.relevant
    vals = tuple(v for k, v in sorted(st.inbox.items()) if rel[k[0]])
    vars_ = tuple(st.vars[x] for x in self.variables
                  if x in self.rel_vars and (self.observe_state or st.nr.get(x)))
    blind = self.blind_read
    pending = tuple(sorted((i, wv[1] if blind[i] else wv) for i, wv in st.pending.items() if rel[i]))
    return (st.fired, vals, vars_, tuple(sorted(st.outputs.items())), pending)


def _spec_apply(self, args, attrs=None):
    """explore._Cached.apply before exact keys (arguments by SPEC equality)."""
    memo = self.memo
    if memo is None:
        return self.fn.apply(args, attrs)
    key = tuple(args)
    try:
        out = memo[key]
        self.hits += 1
        return out
    except KeyError:
        pass
    except TypeError:
        return self.fn.apply(args, attrs)
    out = self.fn.apply(args, attrs)
    self.misses += 1
    if self.misses >= self.GIVE_UP_AFTER and self.hits * 4 < self.misses:
        self.memo = None
        return out
    size = 0
    for v in key:
        if isinstance(v, Tensor):
            size += v.array.size
    for v in out:
        if isinstance(v, Tensor):
            size += v.array.size
    if size <= self.MAX_ELEMENTS and self.shared[0] >= size:
        self.shared[0] -= max(size, 1)
        self.memo[key] = out
    return out


def _spec_cf_key(self) -> tuple:
    """controlflow.CFState.key before exact keys."""
    return (frozenset(self.var_value.items()), frozenset(self.tokens.items()),
            self.fired, self.started, frozenset(self.pending.items()), self.dead_exits)


@contextlib.contextmanager
def always_exact():
    """The shipped engines, every value asked for its exact key from the start."""
    cache = explore._Component.cache_functions

    def cache_and_ask(self):
        cache(self)
        self.payloads = True
        return self
    explore._Component.cache_functions = cache_and_ask
    try:
        yield
    finally:
        explore._Component.cache_functions = cache


@contextlib.contextmanager
def spec_keys():
    """The engines with the keys of before (symmetry.py's keys stay exact:
    its states are explore's, keyed through its own `_local`, a small part)."""
    saved = explore._Component.key, explore._Cached.apply, cf.CFState.key
    explore._Component.key, explore._Cached.apply, cf.CFState.key = _spec_key, _spec_apply, _spec_cf_key
    try:
        yield
    finally:
        explore._Component.key, explore._Cached.apply, cf.CFState.key = saved


def run(family, params, observe, engine) -> tuple[float, int, frozenset]:
    p, feeds, init = F.FAMILIES[family](*params)
    t = time.perf_counter()
    if engine == "controlflow":
        found, states = cf.outcomes(p, feeds, init, "atomic", observe, 10**7, 600.0)
        return time.perf_counter() - t, states, frozenset(found)
    result = outcome_set(p, feeds, init, observe=observe, engine=engine)
    return time.perf_counter() - t, result.states, frozenset(result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default=None, help="run one family")
    ap.add_argument("--json", action="store_true", help="one JSON object at the end")
    args = ap.parse_args()
    rows = []
    modes = ("spec", "exact", "always")
    contexts = {"spec": spec_keys, "exact": contextlib.nullcontext, "always": always_exact}
    if not args.json:
        print(f"{'family':<22} {'engine':<12} {'states':>8} {'spec s':>9} {'exact s':>9} "
              f"{'always s':>9} {'exact/spec':>10} {'always/spec':>11}")
    for family, params, observe, engine in CASES:
        if args.only and family != args.only:
            continue
        times: dict[str, list[float]] = {m: [] for m in modes}
        states, found = {}, {}
        for k in range(args.repeat):
            for mode in modes[k % 3:] + modes[:k % 3]:
                with contexts[mode]():
                    s, n, outcomes = run(family, params, observe, engine)
                times[mode].append(s)
                states[mode], found[mode] = n, outcomes
        if len(set(found.values())) != 1 or len(set(states.values())) != 1:
            raise SystemExit(f"MISMATCH on {family}{params} ({engine}): {states}")
        med = {m: statistics.median(times[m]) for m in modes}
        name = f"{family}({', '.join(map(str, params))})"
        rows.append({"case": name, "engine": engine, "states": states["exact"],
                     **{f"{m}_s": med[m] for m in modes},
                     "exact_ratio": med["exact"] / med["spec"],
                     "always_ratio": med["always"] / med["spec"]})
        if not args.json:
            print(f"{name:<22} {engine:<12} {states['exact']:>8} {med['spec']:>9.4f} "
                  f"{med['exact']:>9.4f} {med['always']:>9.4f} {rows[-1]['exact_ratio']:>10.3f} "
                  f"{rows[-1]['always_ratio']:>11.3f}", flush=True)
    totals = {m: sum(r[f"{m}_s"] for r in rows) for m in modes}
    summary = {"rows": rows, **{f"total_{m}_s": totals[m] for m in modes},
               "median_exact_ratio": statistics.median(r["exact_ratio"] for r in rows) if rows else None,
               "median_always_ratio": statistics.median(r["always_ratio"] for r in rows) if rows else None}
    if args.json:
        print(json.dumps(summary, indent=1))
    elif rows:
        print(f"{'sum of medians':<44} {totals['spec']:>9.4f} {totals['exact']:>9.4f} "
              f"{totals['always']:>9.4f} {totals['exact'] / totals['spec']:>10.3f} "
              f"{totals['always'] / totals['spec']:>11.3f}")
        print(f"median ratio: exact/spec {summary['median_exact_ratio']:.3f}, "
              f"always/spec {summary['median_always_ratio']:.3f}")

if __name__ == "__main__":
    main()
