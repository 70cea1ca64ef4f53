"""Sort the unsound findings of MLIR pipeline campaigns into kinds.

`python -m campaigns.mlir_triage DIR...` reads each campaign store
(`DIR/campaign.db`, read only) and gives every unsound finding of an
`mlir:` / `mlir-cluster:` target one kind, from the modules before and after
the pipeline that the campaign kept (`detail.mlir.input_mlir`,
`output_mlir`) and the verdicts in both semantics modes
(`detail.mlir.verdicts`).  The kinds are those of docs/mlir.md ("A campaign
over ten pipelines"); each rule is a structural feature of the modules, so a
finding's kind can be checked by reading them (docs/mlir-campaigns.md):

- **D** (executor-only lost update): unsound in the atomic mode, not in the
  decomposed one, and the pipeline removed a read-modify-write update op
  (`AssignAddVariableOp`, `AssignSubVariableOp`, `ResourceApply*`): the output
  has fewer of them than the input.
- **F** (lifting forwards a stored value past an update; NEW in the campaigns
  of docs/mlir-campaigns.md): the pipeline lifts and the input's cluster
  writes a variable with `AssignVariableOp`, then updates it with an op that
  is not a plain write or read (`AssignSubVariableOp`, `AssignAddVariableOp`,
  `ResourceApply*`) and that the output still has, then reads it.  The pass
  forwards the written value to the read as if the update were not there
  (`examples/mlir/lifting_forwards_past_update.mlir`): wrong in a single
  island with no concurrency at all.
- **A** (two handles): the pipeline lifts (`tf-resource-op-lifting`) and the
  input's cluster accesses one variable (`shared_name`) through two or more
  distinct `VarHandleOp` values, one of those accesses a write.
- **C** (read before the operand): the pipeline decomposes
  (`*decompose-resource-ops*`) and an update op that the output no longer has
  takes its value operand from outside its own island, computed there by an
  op other than `tf.Const` (so the operand becomes ready after the island may
  start, and the decomposed read need not wait for it).
- **B** (an order across the cluster's boundary): the pipeline lifts and an
  island outside the cluster (another cluster's included) accesses a variable
  the cluster accesses (one of the two accesses a write), and the input
  orders that island with the cluster's (a path of data or control edges
  between the two islands, either way).  Each cluster is taken on its own.
- **S** (store buffering inside the cluster): the pipeline lifts and the
  cluster writes one variable and later, in program order, reads another
  (`examples/mlir/cluster_store_load.mlir`, the load/store reordering of the
  concurrency semantics's XLA paragraph).  Not one of the campaign kinds A-D.
- **P** (pass-through; a question about tfsem's reading, not settled): the
  pipeline lifts and the output's cluster returns a value defined outside it
  that the input's cluster consumed with an op (an `Identity`, a write that
  was lifted).  tfsem reads a cluster's ops one by one, so a cluster left
  with no op that consumes the value does not wait for it; a cluster run as
  one launch would.
- **U** (not a finding: tfsem's own, fixed): the counterexample's σ leaves a
  variable uninitialized (an error value, or a variable it does not list).
  TensorFlow fails such a run before and after the pipeline; MLIR targets
  claim initialized σ only, and the campaign's test for it missed a variable
  left out of σ (fixed in campaigns/loop.py `_needs_uninitialized`).
- **NEW**: none of the above.

A finding can show several features; its kind is the first that matches in
the order U, D, F, A, C, B, S, P (a finding with two handles is A even if an outside
island is ordered with the cluster), and `features` lists every one that
matched, so the overlaps can be counted.  Only the modules and verdicts are
read: no TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tfsem.graphdef.mlir import MlirError, Op, parse

KIND_ORDER = ("U", "D", "F", "A", "C", "B", "S", "P")
KIND_TITLES = {
    "A": "lifting takes two handles of one variable for two resources",
    "B": "lifting loses an order across the cluster's boundary",
    "C": "decomposition reads the variable before the update's operand exists",
    "D": "executor-only lost update",
    "S": "lifting reorders a store and a later load of another variable in the cluster",
    "U": "not a finding: the counterexample needs an uninitialized variable (tfsem's, fixed)",
    "F": "lifting forwards a stored value to a read past an update it does not lift",
    "P": "a cluster that now only passes a captured value through (tfsem's reading: it does not wait for it)",
    "NEW": "none of A-D, F, P, S and U",
}

#: update ops that read, compute and write one variable in one kernel
_RMW_PREFIXES = ("tf.AssignAddVariableOp", "tf.AssignSubVariableOp", "tf.ResourceApply")


def _is_write(name: str) -> bool:
    return ("Assign" in name and name.endswith("VariableOp")) or name.startswith(
        ("tf.ResourceApply", "tf.ResourceScatter", "tf.ResourceSparseApply"))


def _is_rmw(name: str) -> bool:
    return name.startswith(_RMW_PREFIXES)


@dataclass
class Access:
    var: str           # shared_name
    handle: str        # the SSA value of the handle (as the island yields it)
    write: bool
    op: Op
    island: int        # index of the enclosing top-level island
    in_cluster: bool
    position: int      # program order inside the island


@dataclass
class Module:
    """What the rules need of one `@main` (or the module's first function)."""

    accesses: list[Access] = field(default_factory=list)
    rmw: list[tuple[Op, int]] = field(default_factory=list)     # (op, island)
    #: island index -> islands it depends on (data or control)
    deps: dict[int, set[int]] = field(default_factory=dict)
    cluster_islands: set[int] = field(default_factory=set)
    #: cluster island -> values defined outside the cluster that its return passes through
    cluster_returns_outside: dict[int, set[str]] = field(default_factory=dict)
    #: cluster island -> values defined outside the cluster that an op inside consumes
    cluster_consumes: dict[int, set[str]] = field(default_factory=dict)
    #: (SSA value, island where it is used) -> (defining op, its island)
    resolve: Callable[[str, int], tuple[Op, int] | None] | None = None


def _ops(ops: list[Op]):
    for op in ops:
        yield op
        for region in op.regions:
            for block in region:
                yield from _ops(block.ops)


def _base(ssa: str) -> str:
    return ssa.split("#")[0]


def _main(ops: list[Op]) -> Op | None:
    funcs = [o for o in _ops(ops) if o.name == "func.func"]
    for f in funcs:
        if f.attrs.get("sym_name") in ("main", "@main") or getattr(f, "callee", None) == "main":
            return f
    return funcs[0] if funcs else None


def analyse(text: str) -> Module:
    """The islands of the module's main graph, their accesses and dependencies.

    SSA names are looked up island by island (two islands may each define a
    `%r` inside): an island's own ops first, then the graph's island results,
    which stand for the value the island yields."""
    top = parse(text)
    fn = _main(top)
    if fn is None:
        raise MlirError("<mlir>", "no function")
    graph = next((o for o in _ops([fn]) if o.name == "tf_executor.graph"), None)
    m = Module()
    if graph is None:                 # functional form: one sequence
        islands = [list(fn.regions[0][0].ops)]
        island_ops: list[Op | None] = [None]
    else:
        body = graph.regions[0][0].ops
        island_ops = [o for o in body if o.name == "tf_executor.island"]
        islands = [[o for b in isl.regions[0] for o in b.ops] for isl in island_ops]
    local: list[dict[str, Op]] = []
    results: dict[str, tuple[int, int | None]] = {}     # island result -> (island, yield index)
    yields: list[list[str]] = []
    for i, (isl, inner) in enumerate(zip(island_ops, islands)):
        defs: dict[str, Op] = {}
        for op in _ops(inner):
            for r in op.results:
                defs[r] = op
                defs.setdefault(_base(r), op)
            if op.name == "tf_device.cluster":
                m.cluster_islands.add(i)
        local.append(defs)
        y = next((o for o in inner if o.name == "tf_executor.yield"), None)
        yields.append(list(y.operands) if y is not None else [])
        if isl is not None:
            for k, r in enumerate(isl.results[:-1]):
                results[r] = (i, k)
            results[isl.results[-1]] = (i, None)       # the control token

    def resolve(ssa: str, i: int, depth: int = 0) -> tuple[Op, int] | None:
        """(defining op, island) of `ssa` used in island i."""
        if ssa in local[i] or _base(ssa) in local[i]:
            return local[i].get(ssa) or local[i][_base(ssa)], i
        if ssa in results and depth < 50:
            j, k = results[ssa]
            if k is None:
                return island_ops[j], j
            if k < len(yields[j]):
                return resolve(yields[j][k], j, depth + 1)
        return None

    for i, (isl, inner) in enumerate(zip(island_ops, islands)):
        m.deps[i] = set()
        operands = list(isl.operands) if isl is not None else []
        for op in _ops(inner):
            operands += op.operands
        for v in operands:
            if v in results and results[v][0] != i:
                m.deps[i].add(results[v][0])
    # resources passed as arguments (tf.resource_name, else the argument) are variables too
    arg_vars = {ssa: str((attrs or {}).get("tf.resource_name", ssa.lstrip("%")))
                for ssa, typ, attrs in (fn.func_args or []) if "resource" in str(typ)}
    for i, inner in enumerate(islands):
        pos = 0
        cluster_ops = set()
        for op in _ops(inner):
            if op.name == "tf_device.cluster":
                cluster_ops.update(id(o) for o in _ops([op]) if o is not op)
        for op in _ops(inner):
            if not op.name.startswith("tf.") or not op.operands:
                continue
            d = resolve(op.operands[0], i)
            if op.operands[0] in arg_vars:
                var = arg_vars[op.operands[0]]
            elif d is not None and d[0].name == "tf.VarHandleOp":
                var = str(d[0].attrs.get("shared_name"))
            else:
                continue
            pos += 1
            m.accesses.append(Access(var, op.operands[0], _is_write(op.name), op, i,
                                     id(op) in cluster_ops, pos))
            if _is_rmw(op.name):
                m.rmw.append((op, i))
    for i, inner in enumerate(islands):
        for op in _ops(inner):
            if op.name != "tf_device.cluster":
                continue
            body = [o for o in _ops([op]) if o is not op]
            defined = {r for o in body for r in o.results} | {_base(r) for o in body for r in o.results}
            outside = lambda v: v not in defined and _base(v) not in defined  # noqa: E731
            m.cluster_returns_outside.setdefault(i, set()).update(
                v for o in body if o.name == "tf_device.return" for v in o.operands if outside(v))
            m.cluster_consumes.setdefault(i, set()).update(
                v for o in body if o.name != "tf_device.return" for v in o.operands if outside(v))
    m.resolve = resolve
    return m


def _reaches(deps: dict[int, set[int]], a: int, b: int) -> bool:
    """Whether island a depends (transitively) on island b."""
    todo, seen = [a], set()
    while todo:
        x = todo.pop()
        if x == b:
            return True
        if x in seen:
            continue
        seen.add(x)
        todo.extend(deps.get(x, ()))
    return False


def uninitialized(counterexample_init: dict, variables) -> list[str]:
    """The variables a counterexample's σ leaves uninitialized (error value or left out)."""
    return sorted(x for x in variables if x not in counterexample_init
                  or (isinstance(counterexample_init[x], dict) and "error" in counterexample_init[x]))


def features(pipeline: str, before: str, after: str, verdicts: dict,
             uninit: list[str] | None = None) -> dict[str, str]:
    """Every kind whose structural feature the finding shows, with the evidence
    (`uninit`: the variables the counterexample leaves uninitialized)."""
    lifts = "resource-op-lifting" in pipeline
    decomposes = "decompose-resource-ops" in pipeline
    a, b = analyse(before), analyse(after)
    out: dict[str, str] = {}
    if uninit:
        out["U"] = f"σ leaves {', '.join(uninit)} uninitialized"
    atomic, decomposed = verdicts.get("atomic"), verdicts.get("decomposed")
    if atomic == "unsound" and decomposed not in ("unsound", "invalid") and len(b.rmw) < len(a.rmw):
        gone = Counter(o.name for o, _ in a.rmw) - Counter(o.name for o, _ in b.rmw)
        out["D"] = f"executor-only ({atomic}/{decomposed}); update ops removed: {dict(gone)}"
    in_cluster = [x for x in a.accesses if x.in_cluster]
    if lifts:
        kept = Counter(o.name for o, _ in b.rmw)
        seq = sorted(in_cluster, key=lambda x: (x.island, x.position))
        for k, w in enumerate(seq):
            if w.op.name != "tf.AssignVariableOp":
                continue
            for j in range(k + 1, len(seq)):
                u = seq[j]
                if u.island == w.island and u.var == w.var and _is_rmw(u.op.name) \
                        and kept[u.op.name] > 0 and any(
                            r.island == w.island and r.var == w.var and r.op.name == "tf.ReadVariableOp"
                            for r in seq[j + 1:]):
                    out["F"] = f"cluster: AssignVariableOp {w.var}, {u.op.name} {w.var} (kept), a read of {w.var}"
                    break
            if "F" in out:
                break
        # each cluster on its own (a module may hold several, one per island)
        by_var: dict[tuple[int, str], set[str]] = defaultdict(set)
        writes: dict[tuple[int, str], bool] = defaultdict(bool)
        for x in in_cluster:
            by_var[x.island, x.var].add(x.handle)
            writes[x.island, x.var] |= x.write
        two = sorted(k for k, hs in by_var.items() if len(hs) > 1 and writes[k])
        if two:
            out["A"] = f"cluster accesses {two[0][1]} through {len(by_var[two[0]])} handles"
    if decomposes and len(b.rmw) < len(a.rmw):
        remaining = Counter(o.name for o, _ in b.rmw)
        for op, isl in a.rmw:
            if remaining[op.name] > 0:      # this kind of update survived; try the next
                remaining[op.name] -= 1
                continue
            for v in op.operands[1:]:
                d = a.resolve(v, isl) if a.resolve else None
                if d is not None and d[1] != isl and d[0].name not in ("tf.Const", "tf.VarHandleOp"):
                    out["C"] = f"{op.name} takes {v} from another island ({d[0].name})"
                    break
            if "C" in out:
                break
    if lifts and in_cluster:
        hits = []
        for ci in sorted(a.cluster_islands):
            cvars: dict[str, bool] = defaultdict(bool)
            for x in in_cluster:
                if x.island == ci:
                    cvars[x.var] |= x.write
            for y in a.accesses:       # outside this cluster: another island, clusters included
                if y.island == ci or y.var not in cvars or not (y.write or cvars[y.var]):
                    continue
                if _reaches(a.deps, y.island, ci) or _reaches(a.deps, ci, y.island):
                    where = "in another cluster" if y.in_cluster else "outside"
                    hits.append(f"{y.op.name} of {y.var} {where}, ordered with the cluster")
        if hits:
            out["B"] = hits[0]
        seq = sorted(in_cluster, key=lambda x: (x.island, x.position))
        for k, w in enumerate(seq):
            if w.write and any(not r.write and r.var != w.var and r.island == w.island
                               for r in seq[k + 1:]):
                out["S"] = f"cluster writes {w.var}, then reads another variable"
                break
    if lifts:
        for ci in sorted(b.cluster_islands):
            passed = b.cluster_returns_outside.get(ci, set()) & a.cluster_consumes.get(ci, set())
            if passed:
                out["P"] = f"the cluster now only returns {', '.join(sorted(passed))}, defined outside it"
                break
    return out


def classify(pipeline: str, before: str, after: str, verdicts: dict,
             uninit: list[str] | None = None) -> tuple[str, dict[str, str]]:
    """(kind, features): the first kind of KIND_ORDER whose feature the finding shows."""
    f = features(pipeline, before, after, verdicts, uninit)
    for k in KIND_ORDER:
        if k in f:
            return k, f
    return "NEW", f


def pipeline_of(target: str) -> str:
    return target.split(":", 1)[1] if ":" in target else target


def triage_store(directory: str | Path) -> list[dict]:
    """One row per unsound finding of an MLIR target in DIR/campaign.db (read only)."""
    from tfsem.campaigns.store import Store  # noqa: PLC0415

    rows = []
    with Store(directory, readonly=True) as store:
        for f in store.findings():
            if f["kind"] != "unsound" or not str(f["pass"]).startswith("mlir"):
                continue
            m = (f.get("detail") or {}).get("mlir") or {}
            row = {"id": f["id"], "pass": f["pass"], "cell": f["semantics"],
                   "finding_kind": m.get("finding_kind"), "verdicts": m.get("verdicts") or {},
                   "nodes": f["nodes"], "differs": f["differs"], "status": f["status"]}
            if not m.get("input_mlir") or not m.get("output_mlir"):
                row.update(kind="NEW", features={}, note="no modules kept")
            else:
                try:
                    cex = (f.get("verdict") or {}).get("counterexample") or {}
                    un = uninitialized(cex.get("init") or {}, (f.get("original") or {}).get("variables") or {})
                    kind, feats = classify(pipeline_of(f["pass"]), m["input_mlir"],
                                           m["output_mlir"], row["verdicts"], un)
                except MlirError as exc:
                    kind, feats = "NEW", {"error": str(exc)}
                row.update(kind=kind, features=feats)
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """Per pass: counts by kind and by (kind, cell, finding_kind), the smallest of each kind."""
    out: dict = {}
    for r in rows:
        p = out.setdefault(r["pass"], {"findings": 0, "kinds": Counter(), "cells": Counter(),
                                       "overlaps": Counter(), "smallest": {}})
        p["findings"] += 1
        p["kinds"][r["kind"]] += 1
        p["cells"][f"{r['kind']} {r['cell']} {r['finding_kind']}"] += 1
        p["overlaps"]["+".join(k for k in KIND_ORDER if k in r["features"]) or "-"] += 1
        best = p["smallest"].get(r["kind"])
        if best is None or r["nodes"] < best["nodes"]:
            p["smallest"][r["kind"]] = {"id": r["id"], "nodes": r["nodes"]}
    return out


def _cells(rows: list[dict]) -> str:
    """'A 23 (atomic 12, decomposed 11); D 10 (atomic 10, executor-only)' for a pass's rows."""
    by: dict[str, Counter] = defaultdict(Counter)
    fk: dict[str, set] = defaultdict(set)
    for r in rows:
        by[r["kind"]][r["cell"]] += 1
        fk[r["kind"]].add(r["finding_kind"])
    order = {k: n for n, k in enumerate(KIND_ORDER + ("NEW",))}
    parts = []
    for k in sorted(by, key=lambda k: order.get(k, 99)):
        cells = ", ".join(f"{c} {n}" for c, n in sorted(by[k].items()))
        parts.append(f"{k} {sum(by[k].values())} ({cells}; {'/'.join(sorted(map(str, fk[k])))})")
    return "; ".join(parts) or "none"


def table(directories: list[str | Path]) -> list[str]:
    """Markdown rows, one per pass of each store's latest campaign: its totals
    and its unsound findings by kind and cell (the table of docs/mlir-campaigns.md)."""
    from tfsem.campaigns.store import Store  # noqa: PLC0415

    lines = ["| target | seconds | programs | changed | proved sound | no counterexample | unknown "
             "| identical | other findings | unsound findings by kind (cell; both-modes kind) | programs/s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |"]
    for d in directories:
        rows = triage_store(d)
        with Store(d, readonly=True) as store:
            camp = store.latest_campaign()
            totals = store.pass_totals(camp["id"]) if camp else []
        for t in totals:
            other = ", ".join(f"{k} {n}" for k, n in t["findings"].items() if k != "unsound" and n) or "none"
            mine = [r for r in rows if r["pass"] == t["pass"]]
            lines.append(f"| `{t['pass']}` | {t['seconds']:.0f} | {t['programs']} | {t['changed']} "
                         f"| {t['sound']} | {t['no_counterexample']} | {t['unknown']} | {t['identical']} "
                         f"| {other} | {_cells(mine)} | {t['programs_per_second']:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m campaigns.mlir_triage", description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="campaign directories (tfsem fuzz --out DIR)")
    ap.add_argument("--json", action="store_true", help="one JSON object: rows and summary")
    ap.add_argument("--markdown", action="store_true",
                    help="one table row per pass: the campaign's totals and the kinds")
    args = ap.parse_args(argv)
    rows = []
    for d in args.dirs:
        if not (Path(d) / "campaign.db").is_file():
            print(f"error: {d}: no campaign.db", file=sys.stderr)
            return 2
    if args.markdown:
        print("\n".join(table(args.dirs)))
        return 0
    for d in args.dirs:
        for r in triage_store(d):
            r["store"] = str(d)
            rows.append(r)
    summ = summary(rows)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summ}, indent=1, default=str))
        return 0
    for r in rows:
        print(f"{Path(r['store']).name}#{r['id']} {r['kind']:3} {r['cell']:10} {r['finding_kind']:15} "
              f"{r['nodes']:3} nodes  {'; '.join(f'{k}: {v}' for k, v in r['features'].items())}")
    for p, s in summ.items():
        print(f"\n{p}: {s['findings']} unsound findings")
        print("  kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(s["kinds"].items())))
        print("  by cell: " + ", ".join(f"{k}: {n}" for k, n in sorted(s["cells"].items())))
        print("  features: " + ", ".join(f"{k}: {n}" for k, n in sorted(s["overlaps"].items())))
        print("  smallest: " + ", ".join(f"{k} #{v['id']} ({v['nodes']} nodes)"
                                         for k, v in sorted(s["smallest"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
