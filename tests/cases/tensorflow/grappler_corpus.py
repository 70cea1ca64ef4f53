"""`tfsem grappler` over the real-graphs corpus, examples/tensorflow/corpus/
(needs TensorFlow): the run behind docs/grappler-findings.md.

    python tests/cases/tensorflow/grappler_corpus.py [--graphs a,b] [--optimizers dependency,...]
                                                     [--timeout 10] [--json FILE]

Most corpus graphs are concrete functions whose variables are DT_RESOURCE
Placeholders named only by their capture map (`NAME.captures.json`; `tfsem
grappler GRAPH --captures FILE`).  This runs the command's own `validate`
(Grappler per optimizer, import, check in both float modes, an unsound
verdict replayed on TensorFlow) with the corpus graph's capture map, for
every graph of the corpus manifest that imports
(`expect: imports`; the SavedModel folders are left out: Grappler is given a
GraphDef).  Prints one Markdown row per (graph, optimizer); --json writes
every row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.commands import grappler as command
from tfsem.graphdef import grappler as g
from tfsem.graphdef import read_captures

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
OPTIMIZERS = ["dependency", "arithmetic", "constfold", "remap", "common_subgraph_elimination",
              "pruning", "default"]


def verdict_cell(row: dict) -> tuple[str, str]:
    if row.get("status") != "checked":
        return row.get("status", "?"), row.get("reason", "")[:160]
    v = row["verdict"]
    text = v["verdict"]
    if v["verdict"] == "unsound":
        # (`difference` is the kind itself, a string; older verdicts had an object)
        diff = v.get("difference")
        kind = v.get("kind") or (diff if isinstance(diff, str) else (diff or {}).get("kind")) or ""
        text += f" ({kind})" if kind else ""
        if "tensorflow_replay" in row:
            text += ", TensorFlow " + ("confirms" if row["tensorflow_replay"].get("confirmed") else "does not confirm")
    real = row.get("real", {}).get("verdict", "")
    why = v.get("reason", "") if v["verdict"] in ("unknown", "no-counterexample") else ""
    return f"{text}; reals: {real}", why[:160]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=None, help="comma-separated names (default: every graph that imports)")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per check (default 10)")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    entries = [e for e in manifest["graphs"] if e.get("expect") == "imports" and e["kind"] != "saved_model"]
    if args.graphs:
        wanted = args.graphs.split(",")
        entries = [e for e in entries if e["name"] in wanted]
    optimizers = args.optimizers.split(",")
    g.check_optimizer_names(optimizers)
    # TensorFlow's start in the kernels' child (10-60 s under load) is not a
    # check's time: one evaluation before the first check waits for it (else
    # the first checks are `unknown` for a kernel that had not started)
    from tfsem.oracle import kernels
    if kernels.enabled():
        import numpy as np
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    print(f"TensorFlow {g.tensorflow().__version__}; check timeout {args.timeout:g} s; "
          f"{len(entries)} graphs x {len(optimizers)} optimizers\n")
    print("| graph | optimizer | nodes before -> after | check s | verdict | why |")
    print("|---|---|---|---|---|---|")
    rows = []
    for e in entries:
        captures = read_captures(CORPUS / e["captures"]) if e.get("captures") else None
        gd = g.as_graph_def(CORPUS / e["file"])
        t = time.perf_counter()
        try:
            results = command.validate(gd, e["fetches"], e["targets"], optimizers, where=e["name"],
                                       timeout=args.timeout, captures=captures)
        except Exception as exc:  # the original does not import: say so, go on
            print(f"| {e['name']} | (all) | | | original does not import | {type(exc).__name__}: "
                  f"{str(exc)[:160]} |", flush=True)
            continue
        for r in results:
            cell, why = verdict_cell(r)
            before, after = r.get("nodes_before", "?"), r.get("nodes_after", "?")
            print(f"| {e['name']} | {r['optimizer']} | {before} -> {after} | "
                  f"{r.get('check_seconds', 0):.1f} | {cell} | {why} |", flush=True)
            rows.append(dict(r, graph=e["name"]))
        print(f"<!-- {e['name']}: {time.perf_counter() - t:.1f} s -->", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
