"""Grappler's control-flow rewrites on the control-flow corpus graphs (needs
TensorFlow): the run behind docs/grappler-control-flow.md.

    python benchmarks/grappler_control_flow.py [--graphs tf_cond_assign,...]
                                               [--optimizers loop,constfold,...] [--timeout 10]

Two tables:

1. **The graph as TensorFlow wrote it** (functional `If`/`While` in the
   top-level graph, branch and body functions in the library): `tfsem
   grappler`'s own `validate` per optimizer, each corpus graph imported with
   its capture map (as tests/cases/tensorflow/grappler_corpus.py does).
2. **The graph in v1 primitives**: the same graph imported (tfsem lowers
   `If`/`While` to Switch/Merge/Enter/Exit/NextIteration), exported back as
   a GraphDef of primitives, and given to Grappler preserving only outputs
   and stateful nodes (campaigns/grappler_control_flow.py), so the loop
   optimizer and constant folding see loops and Switches they can rewrite.
   The result is checked against the export imported back.

Each row: nodes before -> after, Grappler's seconds, the check's seconds, the
verdict (and why, when not decided).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.campaigns import grappler_control_flow as cf
from tfsem.campaigns import tensorflow_target as tt
from tfsem.commands import grappler as command
from tfsem.graphdef import grappler as g
from tfsem.graphdef import read_captures
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import decode

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
GRAPHS = ["tf_cond_assign", "tf_while_assign", "keras_mlp_loss_scale", "keras_lstm_loop",
          "keras_gru_loop"]
OPTIMIZERS = ["loop", "constfold", "function", "dependency", "default"]


def importer_with(captures):
    def _import(graph_def, fetches, targets, where):
        graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
        return import_graph(graph, fetches, targets, captures=captures).program
    return _import


def cell(verdict: dict) -> str:
    v = verdict["verdict"]
    why = verdict.get("reason", "") if v in ("unknown", "no-counterexample") else ""
    return f"{v} | {why[:150]}"


def functional_rows(entry, optimizers, timeout):
    captures = read_captures(CORPUS / entry["captures"]) if entry.get("captures") else None
    command._import = importer_with(captures)
    gd = g.as_graph_def(CORPUS / entry["file"])
    rows = command.validate(gd, entry["fetches"], entry["targets"], optimizers,
                            where=entry["name"], timeout=timeout, real=False)
    for r in rows:
        text = (cell(r["verdict"]) if r.get("status") == "checked"
                else f"{r.get('status')} | {r.get('reason', '')[:150]}")
        if r.get("status") == "checked" and r["verdict"]["verdict"] == "unsound":
            rep = r.get("tensorflow_replay", {})
            text = (f"unsound ({r['verdict'].get('difference') or '?'}) | "
                    f"{r['verdict'].get('reason', '')[:100]}; TensorFlow: "
                    f"{(rep.get('text') or 'not replayed').splitlines()[0][:120]}")
        print(f"| {entry['name']} | {r['optimizer']} | {r.get('nodes_before', '?')} -> "
              f"{r.get('nodes_after', '?')} | {r.get('seconds', 0):.2f} | "
              f"{r.get('check_seconds', 0):.2f} | {text} |", flush=True)
    return rows


def primitive_rows(entry, optimizers, timeout):
    from tfsem.checking import check_rewrite  # noqa: PLC0415
    captures = read_captures(CORPUS / entry["captures"]) if entry.get("captures") else None
    gd = decode("tensorflow.GraphDef", g.as_graph_def(CORPUS / entry["file"]).SerializeToString())
    program = import_graph(gd, entry["fetches"], entry["targets"], captures=captures).program
    original = tt.as_tensorflow_sees_it(program)
    rows = []
    for opt in optimizers:
        row = {"graph": entry["name"], "optimizer": opt}
        rows.append(row)
        if original is None:
            row["status"] = "not exported (an op without export, or float ops TensorFlow flushes)"
            print(f"| {entry['name']} | {opt} | | | | {row['status']} | |", flush=True)
            continue
        t = time.perf_counter()
        try:
            rewritten, before, after = cf.optimize_with_graphs(program, opt)
        except Exception as exc:  # noqa: BLE001 - say it, go on
            row["status"] = f"{type(exc).__name__}: {str(exc)[:150]}"
            print(f"| {entry['name']} | {opt} | | | | {row['status']} | |", flush=True)
            continue
        grappler_s = time.perf_counter() - t
        t = time.perf_counter()
        verdict = check_rewrite(original, rewritten, "atomic", "outputs+state", timeout=timeout)
        row.update(status="checked", nodes_before=len(before.node) if hasattr(before, "node") else
                   len(decode("tensorflow.GraphDef", before)["node"]), nodes_after=len(after.node),
                   grappler_seconds=grappler_s, check_seconds=time.perf_counter() - t,
                   verdict=verdict.to_json())
        print(f"| {entry['name']} | {opt} | {row['nodes_before']} -> {row['nodes_after']} | "
              f"{grappler_s:.2f} | {row['check_seconds']:.2f} | {cell(row['verdict'])} |", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS),
                    help="for table 1 (table 2 runs loop, constfold and default)")
    ap.add_argument("--tables", default="1,2")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per check")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    by_name = {e["name"]: e for e in manifest["graphs"]}
    entries = [by_name[n] for n in args.graphs.split(",")]
    optimizers = args.optimizers.split(",")
    g.check_optimizer_names(optimizers)
    print(f"TensorFlow {g.tensorflow().__version__}; check timeout {args.timeout:g} s\n")
    header = ("| graph | optimizer | nodes before -> after | Grappler s | check s | verdict | why |\n"
              "|---|---|---|---:|---:|---|---|")
    rows: list = []
    if "1" in args.tables:
        print("Table 1: the graph as TensorFlow wrote it (functional If/While)\n\n" + header)
        for e in entries:
            rows += functional_rows(e, optimizers, args.timeout)
    if "2" in args.tables:
        print("\nTable 2: the graph in v1 primitives, only outputs and stateful nodes preserved\n\n"
              + header)
        for e in entries:
            rows += primitive_rows(e, ["loop", "constfold", "default"], args.timeout)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
