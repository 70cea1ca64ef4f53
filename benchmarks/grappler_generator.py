"""What Grappler does to generated programs: tfsem's default generator vs the
Grappler-shaped generator (generators/grappler.py).

For N programs of each generator: export; whether the Grappler target would
check it at all (exported, and its import has no ``.ftz``/``tf.*`` function:
campaigns/tensorflow_target.py `_same_semantics`); then for each optimizer the
share of programs whose graph Grappler changed, the share whose result
imports back, and the verdicts of tfsem's check (atomic, outputs+state).

Needs TensorFlow (run it with the TensorFlow venv):

    /work/tfvenv/bin/python benchmarks/grappler_generator.py --count 300 [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

OPTIMIZERS = ("dependency", "arithmetic", "constfold", "remap", "default")


def programs(kind: str, count: int, seed: int, max_nodes: int, dtype: str):
    from tfsem.generators import grappler as G
    from tfsem.generators.strategies import random_programs
    if kind == "default":
        return random_programs(count, seed, max_nodes)
    return G.random_programs(count, seed, max_nodes, dtype)


def measure(progs, optimizers=OPTIMIZERS, check_timeout: float = 10.0,
            unflush: bool = False) -> dict:
    from tfsem.campaigns import tensorflow_target as T
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler as g
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.program import ProgramError

    out = {"programs": len(progs), "exported": 0, "checked": 0,
           "per_optimizer": {o: {"changed": 0, "imports": 0, "not_imported": collections.Counter(),
                                 "verdicts": collections.Counter(), "grappler_s": 0.0,
                                 "check_s": 0.0, "unsound": []}
                             for o in optimizers}}
    for p in progs:
        data, fetches, targets = T._exported(p)
        if data is None:
            continue
        out["exported"] += 1
        original = p
        if not T._same_semantics(data, fetches, targets):
            if not unflush:
                continue
            # a float program: checkable when its import's X.ftz provably
            # compute what X does (generators/grappler.py `unflushed`)
            from tfsem.generators.grappler import unflushed
            original = unflushed(import_graph(decode("tensorflow.GraphDef", data), fetches,
                                              targets).program)
            if original is None:
                continue
        out["checked"] += 1
        for o in optimizers:
            row = out["per_optimizer"][o]
            t0 = time.perf_counter()
            res = g.run_grappler(data, fetches + targets, o)
            row["grappler_s"] += time.perf_counter() - t0
            if g.really_changed(g.as_graph_def(data), res.graph_def):
                row["changed"] += 1
            kept = {n.name for n in res.graph_def.node}
            try:
                q = import_graph(decode("tensorflow.GraphDef", res.graph_def.SerializeToString()),
                                 fetches, [t for t in targets if t in kept]).program
            except ProgramError as exc:
                row["not_imported"][str(exc.violations[0])[:160]] += 1
                continue
            row["imports"] += 1
            if original is not p:
                from tfsem.generators.grappler import unflushed
                u = unflushed(q)
                if u is None:
                    row["not_subnormal_free"] = row.get("not_subnormal_free", 0) + 1
                q = u or q
            t0 = time.perf_counter()
            v = check_rewrite(original, q, "atomic", "outputs+state", timeout=check_timeout)
            row["check_s"] += time.perf_counter() - t0
            row["verdicts"][v.verdict] += 1
            if v.verdict == "unsound" and len(row["unsound"]) < 5:
                from tfsem.oracle.jsonio import program_to_json
                row["unsound"].append({"original": program_to_json(original),
                                       "rewritten": program_to_json(q)})
    return out


def table(results: dict[str, dict]) -> str:
    lines = ["| generator | optimizer | programs | checked | changed | imports back | "
             "sound | no-cex | unsound | unknown | invalid |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for gen, r in results.items():
        n = r["programs"]
        for o, row in r["per_optimizer"].items():
            v = row["verdicts"]
            c = max(r["checked"], 1)
            lines.append(
                f"| {gen} | {o} | {n} | {r['checked']} ({100 * r['checked'] / n:.0f}%) | "
                f"{row['changed']} ({100 * row['changed'] / c:.0f}%) | "
                f"{row['imports']} ({100 * row['imports'] / c:.0f}%) | {v['sound']} | "
                f"{v['no-counterexample']} | {v['unsound']} | {v['unknown']} | {v['invalid']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-nodes", type=int, default=16)
    ap.add_argument("--generators", default="default,grappler",
                    help="comma-separated: default, grappler, grappler-float32 (float programs "
                         "checked through generators/grappler.py `unflushed`)")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    ap.add_argument("--check-timeout", type=float, default=10.0)
    ap.add_argument("--json", default=None, help="write the full results here")
    args = ap.parse_args(argv)
    if not 1 <= args.count <= 100_000:
        print("--count must be in [1, 100000]", file=sys.stderr)
        return 2
    results = {}
    for gen in args.generators.split(","):
        kind, _, dtype = gen.partition("-")
        t0 = time.perf_counter()
        progs = programs(kind, args.count, args.seed, args.max_nodes, dtype or "int64")
        r = measure(progs, args.optimizers.split(","), args.check_timeout,
                    unflush=dtype == "float32")
        r["seconds"] = round(time.perf_counter() - t0, 1)
        results[gen] = r
        print(f"{gen}: {r['seconds']} s", file=sys.stderr, flush=True)
    print(table(results))
    for gen, r in results.items():
        for o, row in r["per_optimizer"].items():
            for msg, k in row["not_imported"].most_common(5):
                print(f"{gen} {o}: not imported x{k}: {msg}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=lambda x: dict(x) if isinstance(x, collections.Counter) else str(x))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
