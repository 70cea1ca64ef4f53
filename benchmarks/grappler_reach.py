"""How many generated programs each Grappler optimizer changes, per generator.

For N programs drawn from a Grappler generator (`--generator edges`: the
edges_strategy mix; `--generator optimizers`: optimizer_strategy's mix) and
each optimizer, run as the campaign target runs it
(campaigns/tensorflow_target.py: export, the Grappler settings of the
target, import back), count:

- `exported`: programs the exporter writes;
- `judged`: programs the target checks at all (their export imports back
  with a semantics tfsem computes: `_imported`);
- `grappler changed`: programs whose GraphDef Grappler changed beyond
  default attributes (`graphdef.grappler.really_changed`), among the judged;
- `imports back`: of those, results that import into tfsem; the op names of
  the ones that do not are listed;
- the ops Grappler wrote that were not in its input (what each optimizer
  makes: `_FusedMatMul`, `NoOp`, ...).

Needs TensorFlow.  One process; about 1-3 s per (program, optimizer) pair
on a loaded 2-core machine:

    python benchmarks/grappler_reach.py --count 50 --generator edges [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time

#: --today: the target as it was before the optimizer generator (every node
#: preserved, no placement, only programs without .ftz or tf.* functions)
TODAY = False

#: the optimizers that had no campaign before (docs/grappler-findings.md)
OPTIMIZERS = ("remap", "layout", "memory", "shape", "pruning", "debug_stripper", "pin_to_host",
              "implementation_selector", "scoped_allocator", "auto_mixed_precision")


def cases(generator: str, count: int, seed: int, max_nodes: int):
    from tfsem.generators import grappler as G
    from tfsem.generators.draw import RandomDraw
    out = []
    for i in range(count):
        d = RandomDraw(random.Random(f"tfsem-grappler-reach:{generator}:{seed}:{i}"))
        if generator == "edges":
            out.append(G.draw_case(d, max_nodes, True, 0.25, 0.2, 0.35))
        else:
            out.append(G.draw_optimizer_case(d, max_nodes, True, generator))
    return out


def measure(progs, optimizers) -> dict:
    from tfsem.campaigns import tensorflow_target as T
    from tfsem.graphdef import grappler as g
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode

    rows = {o: collections.Counter() for o in optimizers}
    made = {o: collections.Counter() for o in optimizers}
    failures = {o: collections.Counter() for o in optimizers}
    seconds = collections.Counter()
    for p in progs:
        data, fetches, targets = T._exported(p, defaults=not TODAY)
        for o in optimizers:
            r = rows[o]
            r["programs"] += 1
            if data is None:
                continue
            r["exported"] += 1
            if T._imported(data, fetches, targets, kernels=not TODAY) is None:
                continue
            r["judged"] += 1
            given = data if TODAY else T._for_grappler(data)
            keep = targets if TODAY else T._preserved(given, fetches, targets)
            t0 = time.perf_counter()
            try:
                res = g.run_grappler(given, fetches + keep, o)
            except Exception as exc:  # noqa: BLE001
                failures[o][f"grappler: {type(exc).__name__}: {str(exc)[:120]}"] += 1
                continue
            seconds[o] += time.perf_counter() - t0
            before = g.as_graph_def(given)
            if not g.really_changed(before, res.graph_def):
                continue
            r["grappler changed"] += 1
            ops_before = {n.op for n in before.node}
            for op in sorted({n.op for n in res.graph_def.node} - ops_before):
                made[o][op] += 1
            out_targets = [t for t in targets if t in {n.name for n in res.graph_def.node}]
            try:
                import_graph(decode("tensorflow.GraphDef", res.graph_def.SerializeToString()),
                             fetches, out_targets)
                r["imports back"] += 1
            except Exception as exc:  # noqa: BLE001
                failures[o][f"import: {str(exc)[:160]}"] += 1
    return {"rows": {o: dict(rows[o]) for o in optimizers},
            "ops made": {o: dict(made[o]) for o in optimizers},
            "failures": {o: dict(failures[o]) for o in optimizers},
            "grappler seconds": {o: round(seconds[o], 2) for o in optimizers}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-nodes", type=int, default=10)
    ap.add_argument("--generator", default="edges",
                    help="edges, or an optimizer_strategy mix: optimizers (all) or one "
                         "optimizer's name")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    ap.add_argument("--json")
    ap.add_argument("--today", action="store_true",
                    help="the target's settings before the optimizer generator (every node "
                         "preserved, unplaced, no .ftz or tf.* programs)")
    a = ap.parse_args(argv)
    global TODAY
    TODAY = a.today
    opts = a.optimizers.split(",")
    t0 = time.perf_counter()
    progs = cases(a.generator, a.count, a.seed, a.max_nodes)
    res = measure([c[0] for c in progs], opts)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["generator"], res["count"], res["seed"] = a.generator, a.count, a.seed
    print(f"generator {a.generator}, {a.count} programs, seed {a.seed}, {res['seconds']} s")
    print(f"{'optimizer':26} {'exported':>8} {'judged':>6} {'changed':>7} {'imports':>7}  ops made")
    for o in opts:
        r = res["rows"][o]
        made = ", ".join(f"{k} {v}" for k, v in sorted(res["ops made"][o].items()))
        print(f"{o:26} {r.get('exported', 0):8} {r.get('judged', 0):6} "
              f"{r.get('grappler changed', 0):7} {r.get('imports back', 0):7}  {made}")
        for k, v in res["failures"][o].items():
            print(f"    {v} x {k}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
