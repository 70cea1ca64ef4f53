"""Benchmark of `tfsem grappler` on the TensorFlow corpus (needs TensorFlow).

    python benchmarks/grappler.py [--graphs counter,group_fanin,...] [--optimizers dependency,...]
                                  [--timeout 60] [--json FILE]

For every graph of examples/tensorflow/manifest.json (fetches and targets from
the manifest) and every optimizer `tfsem grappler` runs by default (each alone,
then Grappler's default pipeline): nodes before -> after (top-level graph, and
in the function library), the optimizer's time, the time to import the result
and check it against the original (`tfsem.checking.check_rewrite`, --timeout
per check), and the verdict, or "does not import" / "check failed" with why.
Prints a Markdown table; --json also writes every row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.commands.grappler import validate
from tfsem.graphdef import grappler as g

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=None, help="comma-separated file stems (default: all)")
    ap.add_argument("--optimizers", default=None,
                    help=f"comma-separated (default: {','.join(g.DEFAULT_OPTIMIZERS)})")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per check")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    entries = manifest["graphs"]
    if args.graphs:
        wanted = args.graphs.split(",")
        entries = [e for e in entries if Path(e["file"]).stem in wanted]
    optimizers = args.optimizers.split(",") if args.optimizers else list(g.DEFAULT_OPTIMIZERS)
    g.check_optimizer_names(optimizers)
    tf = g.tensorflow()
    print(f"TensorFlow {tf.__version__}; check timeout {args.timeout:g} s\n")
    print("| graph | optimizer | nodes before -> after | fn nodes before -> after "
          "| optimizer s | check s | verdict |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for e in entries:
        gd = g.as_graph_def(CORPUS / e["file"])
        t = time.perf_counter()
        results = validate(gd, e["fetches"], e["targets"], optimizers, where=e["file"],
                           timeout=args.timeout)
        del t
        for r in results:
            if r["status"] == "checked":
                verdict = r["verdict"]["verdict"]
                reason = r["verdict"]["reason"]
                if verdict == "sound" and "is the original program" in reason:
                    verdict = "sound (same program)"
                elif verdict == "sound" and reason.startswith("structural"):
                    verdict = "sound (structural)"
            elif r["status"] == "does-not-import":
                verdict = f"does not import: {r['reason'][:90]}"
            elif r["status"] == "check-failed":
                verdict = f"check failed: {r['reason'][:90]}"
            else:
                verdict = f"Grappler failed: {r['reason'][:90]}"
            fn = (f"{r.get('function_nodes_before', '-')} -> {r.get('function_nodes_after', '-')}"
                  if r.get("function_nodes_before") else "-")
            print(f"| {e['file']} | {r['optimizer']} | {r.get('nodes_before', '-')} -> "
                  f"{r.get('nodes_after', '-')} | {fn} | {r.get('seconds', 0):.3f} | "
                  f"{r.get('check_seconds', 0):.2f} | {verdict} |", flush=True)
            r.pop("text", None)
            rows.append({"graph": e["file"], **r})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
