"""What keying the oracle's states by exact bits costs (docs/semantics.md, "NaN payloads").

    python benchmarks/oracle_exact_keys.py [--repeat 7] [--only FAMILY] [--json]

The engines key intermediate states and remembered function applications by
each value's exact bits (`values.exact`), so that NaNs of different payloads
are different states.  Before, they keyed by SPEC equality (the value
itself).  This benchmark runs both side by side in one process, on the
families of benchmarks/oracle.py (reference engine), the symmetry engine's
families and the control-flow engine: "exact" is the code as shipped,
"spec" the same engines with the keys of before put back (the two key
functions and the function cache's lookup, copied below as they were).
Each repeat runs both, in alternating order; it prints the median of each
and their ratio, and checks that both found the same outcome set (these
families hold no NaN, so the keys merge the same states: `states` equal).
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
    + [("figure1", (5, fn), "outputs+state", "reference") for fn in ("Add", "Concat")]
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
    if not args.json:
        print(f"{'family':<22} {'engine':<12} {'states':>8} {'spec s':>9} {'exact s':>9} {'ratio':>7}")
    for family, params, observe, engine in CASES:
        if args.only and family != args.only:
            continue
        times = {"spec": [], "exact": []}
        states = {}
        found = {}
        for k in range(args.repeat):
            for mode in (("spec", "exact") if k % 2 == 0 else ("exact", "spec")):
                with spec_keys() if mode == "spec" else contextlib.nullcontext():
                    s, n, outcomes = run(family, params, observe, engine)
                times[mode].append(s)
                states[mode], found[mode] = n, outcomes
        if found["spec"] != found["exact"] or states["spec"] != states["exact"]:
            raise SystemExit(f"MISMATCH on {family}{params} ({engine}): {states}")
        spec, ex = statistics.median(times["spec"]), statistics.median(times["exact"])
        name = f"{family}({', '.join(map(str, params))})"
        rows.append({"case": name, "engine": engine, "states": states["exact"],
                     "spec_s": spec, "exact_s": ex, "ratio": ex / spec})
        if not args.json:
            print(f"{name:<22} {engine:<12} {states['exact']:>8} {spec:>9.4f} {ex:>9.4f} "
                  f"{ex / spec:>7.3f}", flush=True)
    total_spec = sum(r["spec_s"] for r in rows)
    total_exact = sum(r["exact_s"] for r in rows)
    summary = {"rows": rows, "total_spec_s": total_spec, "total_exact_s": total_exact,
               "median_ratio": statistics.median(r["ratio"] for r in rows) if rows else None}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{'sum of medians':<44} {total_spec:>9.4f} {total_exact:>9.4f} "
              f"{total_exact / total_spec if total_spec else float('nan'):>7.3f}")
        print(f"median ratio {summary['median_ratio']:.3f}")


if __name__ == "__main__":
    main()
