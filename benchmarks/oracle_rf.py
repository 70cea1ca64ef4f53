"""The oracle's engines on the families of issue 17, previous and current side by side.

    python benchmarks/oracle_rf.py [--max-seconds 20] [--only FAMILY] [--quick]
                                   [--previous REV] [--engines LIST]

For each family (generators/families.py) and size, every engine computes the
outcome set of the atomic semantics under the same budget (--max-seconds,
2,000,000 states), in one run:

* ``prev-ref`` / ``prev-rf``: the reference and reads-from engines as they
  were at git revision --previous (default: the commit before the speed-ups
  of this session), loaded from git beside the current code (they share the
  current `values`, `functions` and `semantics` modules, so the Tensor
  speed-up counts for them too);
* ``ref``, ``rf``, ``auto``, ``sym``: the current engines
  (`outcome_set(engine=...)`; ``sym`` is engine "symmetry": one run per orbit
  of identical threads, oracle/symmetry.py; its states are quotient states).

The table gives the outcomes (exact count from `oracle/counts.py` where the
family has one, so a cell every engine runs out on still has its size), the
reads-from classes, and per engine its states and seconds; `equal` says
whether every finished engine returned the same set (`count` where a set
has more than SET_CAP outcomes: then the counts are compared, with each
other and with the exact count, and the sets are not listed).  A cell past the budget
reads `budget`; larger sizes of the family are then skipped for that engine.
Anchor figures of GenMC / Nidhugg (executions, from
/work/shared/measurements/performance.md) are printed where they exist.

Families: lost_update_used(k) (Read -> Add 1 -> Write, k times, reads fetched,
x observed), blind_writers(n) (n Writes and one fetched Read of x),
writer_reader_pairs(n) (Write then Read, n pairs on one x), store_buffering(k)
and iriw(k) (k threads), figure1(r, Concat).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from tfsem.generators import families as F
from tfsem.oracle import counts
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded

#: the commit before this session's speed-ups (function caching, stubborn
#: cut-offs, static replay, auto by structure)
PREVIOUS = "216eacb"
ROOT = Path(__file__).resolve().parent.parent

ANCHORS = {("blind_writers", (7,), "outputs"): "Nidhugg-rf 8 executions, 0.05 s",
           ("blind_writers", (7,), "outputs+state"): "rf: 56 executions"}
ENGINES = ("prev-ref", "ref", "prev-rf", "rf", "auto", "sym")
#: sets larger than this are compared by their counts only
SET_CAP = 300_000


def load_previous(rev: str):
    """The reference and reads-from engines at `rev`, as modules
    tfsem.oracle._prev_explore and tfsem.oracle._prev_readsfrom (or None
    when git cannot show them)."""
    mods = {}
    for name in ("explore", "readsfrom"):
        try:
            src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:oracle/{name}.py"],
                                 check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"# previous engines not loaded ({exc}); their columns are skipped", file=sys.stderr)
            return None
        src = src.replace("from .explore import", "from ._prev_explore import")
        full = f"tfsem.oracle._prev_{name}"
        spec = importlib.util.spec_from_loader(full, loader=None)
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = "tfsem.oracle"
        sys.modules[full] = mod
        exec(compile(src, f"{rev}:oracle/{name}.py", "exec"), mod.__dict__)
        mods[name] = mod
    return mods


def engines(previous):
    def current(engine):
        return lambda p, feeds, init, observe, s: outcome_set(
            p, feeds, init, "atomic", observe, max_seconds=s, engine=engine)
    out = {"ref": current("reference"), "rf": current("readsfrom"), "auto": current("auto"),
           "sym": current("symmetry")}
    if previous is not None:
        out["prev-ref"] = lambda p, feeds, init, observe, s: previous["explore"].outcome_set(
            p, feeds, init, "atomic", observe, max_seconds=s)
        out["prev-rf"] = lambda p, feeds, init, observe, s: previous["readsfrom"].outcome_set_rf(
            p, feeds, init, "atomic", observe, max_seconds=s)
    return out


def cases(quick: bool):
    lu = range(2, 7) if quick else range(2, 11)
    bw = (4, 8, 12) if quick else (4, 6, 8, 10, 12)
    wr = (2, 3, 4) if quick else (2, 3, 4, 5, 6)
    sb = (4, 8) if quick else (4, 6, 8, 10, 12)
    ir = (4, 6) if quick else (4, 5, 6, 7, 8)
    f1 = (3, 5) if quick else range(2, 9)
    return ([("lost_update_used", (k,), "outputs+state") for k in lu]
            + [("blind_writers", (n,), obs) for n in bw for obs in ("outputs", "outputs+state")]
            + [("writer_reader_pairs", (n,), "outputs+state") for n in wr]
            + [("store_buffering", (k,), "outputs") for k in sb]
            + [("iriw", (k,), "outputs") for k in ir]
            + [("figure1", (r, "Concat"), "outputs+state") for r in f1])


def exact_count(family, params, observe):
    if family == "lost_update_used":
        with_state, outputs = counts.lost_update_used_counts(*params)
        return with_state if observe == "outputs+state" else outputs
    return None


BUDGET_ERRORS: tuple[type, ...] = (BudgetExceeded,)


def run(fn, p, feeds, init, observe, max_seconds):
    t = time.perf_counter()
    try:
        result = fn(p, feeds, init, observe, max_seconds)
    except BUDGET_ERRORS:
        return None, time.perf_counter() - t
    return result, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-seconds", type=float, default=20.0,
                    help="budget of each engine on each case (default 20)")
    ap.add_argument("--only", default=None, help="run one family")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--previous", default=PREVIOUS,
                    help=f"git revision of the previous engines (default {PREVIOUS})")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help=f"comma-separated subset of {','.join(ENGINES)}")
    args = ap.parse_args()
    if not 0 < args.max_seconds <= 3600:
        ap.error("--max-seconds: between 0 and 3600")
    chosen = [e.strip() for e in args.engines.split(",") if e.strip()]
    bad = [e for e in chosen if e not in ENGINES]
    if bad or not chosen:
        ap.error(f"--engines: {', '.join(bad) or 'none given'} (choose from {', '.join(ENGINES)})")
    if args.only and args.only not in {c[0] for c in cases(False)}:
        ap.error(f"--only: unknown family {args.only!r}")
    previous = load_previous(args.previous) if any(e.startswith("prev") for e in chosen) else None
    if previous is not None:
        global BUDGET_ERRORS
        BUDGET_ERRORS = (BudgetExceeded, previous["explore"].BudgetExceeded)
    fns = engines(previous)
    chosen = [e for e in chosen if e in fns]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    head = " | ".join(f"{e} states | {e} s" for e in chosen)
    print(f"| family | observe | outcomes | rf classes | {head} | equal | anchor |")
    print("|---|---|---|---|" + "---|---|" * len(chosen) + "---|---|")
    skip: set[tuple[str, str]] = set()
    for family, params, observe in cases(args.quick):
        if args.only and family != args.only:
            continue
        p, feeds, init = F.FAMILIES[family](*params)
        group = f"{family}/{observe}"
        results, cells = {}, []
        for e in chosen:
            if (e, group) in skip:
                cells += ["skipped", "skipped"]
                continue
            r, s = run(fns[e], p, feeds, init, observe, args.max_seconds)
            if r is None:
                skip.add((e, group))               # larger sizes would run out too
                cells += ["budget", f">{args.max_seconds:g}"]
            else:
                results[e] = r
                cells += [f"{r.states:,}", f"{s:.3f}"]
        exact = exact_count(family, params, observe)
        if all(r.count <= SET_CAP for r in results.values()):
            sets = [set(r) for r in results.values()]
            equal = "-" if len(sets) < 2 else ("yes" if all(s == sets[0] for s in sets) else "NO")
        else:
            counts_ = {r.count for r in results.values()}
            equal = "NO" if len(counts_) > 1 else ("count" if exact is not None or len(results) > 1 else "-")
        if exact is not None and any(r.count != exact for r in results.values()):
            equal = "NO"
        outcomes = exact if exact is not None else (next(iter(results.values())).count if results else "?")
        classes = next((f"{r.classes:,}" for e, r in results.items() if e in ("rf", "prev-rf")), "-")
        name = f"{family}({', '.join(map(str, params))})"
        outs = f"{outcomes:,}" if isinstance(outcomes, int) else outcomes
        print(f"| {name} | {observe} | {outs} | {classes} | {' | '.join(cells)} | {equal} "
              f"| {ANCHORS.get((family, params, observe), '')} |", flush=True)
        if equal == "NO":
            raise SystemExit(f"MISMATCH on {name} ({observe})")


if __name__ == "__main__":
    main()
