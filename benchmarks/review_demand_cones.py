"""Minimization's cone test (checking/demand.py) against the enumeration.

The campaigns of docs/review-demand-and-chain.md, section 1:

    python benchmarks/review_demand_cones.py parts SEED COUNT DTYPE DENSITY MAX_NODES
    python benchmarks/review_demand_cones.py verdicts SEED COUNT DTYPE

`parts`: race-free pairs without control flow (P from `random_programs`,
P' from three mutants and the built-in passes, same interface), four σ
each; for every part of every outcome, the cone test against the reference
engine's enumeration of both programs.  Prints the σ the cone tests found
different, the σ that are counterexamples, and the two kinds of
disagreement (a cone that says "differs" where σ is no counterexample would
be a false step).

`verdicts`: `check_rewrite` on such pairs (cone tests forced where the
checker has a cheapness threshold); every `unsound` verdict's schedule
replayed, its outcome checked against the enumeration, numpy's replay
counted.

`TFSEM_TREE`, as in benchmarks/review_chain_engines.py, runs another tree.
"""

from __future__ import annotations

import os
import sys

if os.environ.get("TFSEM_TREE"):
    sys.meta_path[:] = [f for f in sys.meta_path
                        if "editable" not in (getattr(f, "__module__", "") or "").lower()
                        and "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, os.environ["TFSEM_TREE"])

import random  # noqa: E402
import time    # noqa: E402

import numpy as np  # noqa: E402


def _pairs(seed: int, count: int, dtype: str, density: float, max_nodes: int, mutants: int,
           tag: str = "dfz", most_passes: int | None = None, cap: int = 14):
    from tfsem.checking import demand as D
    from tfsem.checking.structural import race_free
    from tfsem.generators.draw import RandomDraw
    from tfsem.generators.mutate import mutate
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites import builtin_passes

    passes = builtin_passes()
    for i, p in enumerate(random_programs(count, seed, max_nodes=max_nodes, dtype=dtype,
                                          control_density=density)):
        if p.has_control_flow or not race_free(p):
            continue
        rng = random.Random(f"{tag}:{seed}:{i}")
        cands = [mutate(RandomDraw(rng), p, cap) for _ in range(mutants)]
        changed = []
        for ps in passes.values():
            try:
                q = ps.function(p)
            except Exception:
                continue
            if q != p:
                changed.append(q)
        cands += changed[:most_passes]
        for j, q in enumerate(cands):
            if q != p and D.Demand.usable(p, q, race_free(p) and race_free(q)):
                yield i, j, p, q, ("atomic", "decomposed")[(i + j) % 2], \
                    ("outputs+state", "outputs")[(i // 2 + j) % 2]


def parts(seed: int, count: int, dtype: str, density: float, max_nodes: int) -> dict:
    from tfsem.checking import check as C
    from tfsem.checking import demand as D
    from tfsem.generators.strategies import random_inputs
    from tfsem.oracle.budget import BudgetExceeded
    from tfsem.oracle.dispatch import outcome_set

    st = dict(pairs=0, sigmas=0, cone_differs=0, full_differs=0, budget=0, false=0, missed=0)
    t0 = time.monotonic()
    for i, j, p, q, sem, obs in _pairs(seed, count, dtype, density, max_nodes, 3):
        st["pairs"] += 1
        demand = D.Demand(p, q, sem, obs)
        gen = C._refute_sigmas(p, np.random.default_rng(i * 31 + j))
        sigmas = [next(gen) for _ in range(2)] + \
            [random_inputs(p, i * 97 + j, edge_p=0.3) for _ in range(2)]
        for feeds, init in sigmas:
            st["sigmas"] += 1
            try:
                op = outcome_set(p, feeds, init, sem, obs, max_seconds=3, engine="reference")
                oq = outcome_set(q, feeds, init, sem, obs, max_seconds=3, engine="reference")
            except BudgetExceeded:
                st["budget"] += 1
                continue
            full = [o not in op for o in oq]
            names = sorted({part for o in list(op) + list(oq) for part, _ in o.parts()})
            by_cone = [part for part in names if demand.confirm(feeds, init, part)]
            st["cone_differs"] += bool(by_cone)
            st["full_differs"] += any(full)
            if by_cone and not all(full):
                st["false"] += 1
                print("FALSE STEP", seed, i, j, sem, obs, by_cone, file=sys.stderr)
            if all(full) and not by_cone:
                st["missed"] += 1
    st["seconds"] = round(time.monotonic() - t0, 1)
    return st


def verdicts(seed: int, count: int, dtype: str) -> dict:
    from tfsem.checking import check as C
    from tfsem.checking import check_rewrite
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule

    C.MINIMIZE_CHEAP_SECONDS = -1.0   # (cone tests on small programs too, where it exists)
    st = dict(pairs=0, unsound=0, cone_tests=0, cone_accepted=0, numpy=0, bad=0, final=0)
    t0 = time.monotonic()
    for i, j, p, q, sem, obs in _pairs(seed, count, dtype, 0.6, 12, 2, "e2e", 2, 16):
        st["pairs"] += 1
        v = check_rewrite(p, q, sem, obs, timeout=6, structural=False, classify=False)
        if v.verdict != "unsound":
            continue
        st["unsound"] += 1
        record = v.stats.get("minimization", {})
        st["cone_tests"] += record.get("cone_tests", 0)
        st["cone_accepted"] += record.get("cone_accepted", 0)
        st["final"] += "final" in record
        cx = v.counterexample
        state = run_schedule(q, cx.feeds, cx.init, cx.schedule, sem)
        full = outcome_set(p, cx.feeds, cx.init, sem, obs, max_seconds=10, engine="reference")
        ok = outcome_of(q, graph_of(q), state, obs) == cx.outcome and cx.outcome not in full \
            and set(full) == {o for o, _ in cx.original_outcomes}
        st["numpy"] += "numpy" in v.confirmed
        if not ok:
            st["bad"] += 1
            print("WRONG σ", seed, i, j, sem, obs, file=sys.stderr)
    st["seconds"] = round(time.monotonic() - t0, 1)
    return st


def main() -> int:
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == "parts":
        print(parts(int(args[0]), int(args[1]), args[2], float(args[3]), int(args[4])))
    elif kind == "verdicts":
        print(verdicts(int(args[0]), int(args[1]), args[2]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
