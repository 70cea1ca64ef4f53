"""TensorFlow's kernels as concrete semantics: `tfsem grappler`'s checks with
and without them, side by side (needs TensorFlow).

    python benchmarks/kernels.py [--corpus examples|real|both] [--graphs a,b]
                                 [--optimizers dependency,...] [--timeout 30] [--json FILE]

For each graph (examples/tensorflow/manifest.json, and/or the corpus of real
models examples/tensorflow/corpus/manifest.json: the concrete-function graphs
with their capture maps; SavedModels are left out) and each optimizer
`tfsem grappler` runs by default: Grappler once, its output imported, then the
same check (`check_rewrite`, --timeout) twice in a row: with TensorFlow's
kernels off (what a user without TensorFlow gets: TFSEM_TF_KERNELS=0) and on.
An `unsound` verdict with kernels on is replayed on TensorFlow's runtime (the
schedule forced, as `tfsem grappler` does).  Prints a row per check and the
count of verdicts that were `unknown` for want of a concrete model (an op
that cannot run) in each mode.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.graphdef import grappler as g
from tfsem.oracle import kernels

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "tensorflow"
REAL = EXAMPLES / "corpus"


def _entries(which: str):
    out = []
    if which in ("examples", "both"):
        for e in json.loads((EXAMPLES / "manifest.json").read_text())["graphs"]:
            out.append((EXAMPLES, e, None))
    if which in ("real", "both"):
        for e in json.loads((REAL / "manifest.json").read_text())["graphs"]:
            if e["kind"] == "saved_model":
                continue
            caps = json.loads((REAL / e["captures"]).read_text()) if e.get("captures") else None
            out.append((REAL, e, caps))
    return out


def _import(graph_def, e, caps):
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
    return import_graph(graph, e["fetches"], e["targets"], captures=caps).program


def want_of_model(v) -> bool:
    """An `unknown` for want of a concrete model: an op that cannot run."""
    return v.verdict == "unknown" and ("cannot run" in v.reason or "cannot_run" in v.stats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=("examples", "real", "both"), default="both")
    ap.add_argument("--graphs", default=None, help="comma-separated file stems (default: all)")
    ap.add_argument("--optimizers", default=None,
                    help=f"comma-separated (default: {','.join(g.DEFAULT_OPTIMIZERS)})")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per check")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--modes", default="off,on",
                    help="which checks to run: off,on (default), or on alone")
    args = ap.parse_args(argv)
    modes = [m for m in ("off", "on") if m in args.modes.split(",")]
    from tfsem.backends.tensorflow import replay_graph, replay_program
    from tfsem.checking import check_rewrite
    from tfsem.oracle.program import ProgramError
    entries = _entries(args.corpus)
    if args.graphs:
        wanted = set(args.graphs.split(","))
        entries = [x for x in entries if Path(x[1]["file"]).stem in wanted]
    optimizers = args.optimizers.split(",") if args.optimizers else list(g.DEFAULT_OPTIMIZERS)
    tf = g.tensorflow()
    print(f"TensorFlow {tf.__version__}; check timeout {args.timeout:g} s\n")
    print("| graph | optimizer | kernels off | s | kernels on | s | ops on TensorFlow's kernels |")
    print("|---|---|---|---|---|---|---|")
    rows, counts = [], {"off": 0, "on": 0, "checks": 0}
    for base, e, caps in entries:
        name = e["file"]
        try:
            gd = g.as_graph_def(base / e["file"])
            original = _import(gd, e, caps)
        except (ProgramError, Exception) as exc:  # noqa: BLE001 (a refusal: no row)
            print(f"| {name} | - | does not import: {str(exc)[:80]} | | | | |", flush=True)
            continue
        for opt in optimizers:
            try:
                res = g.run_grappler(gd, e["fetches"] + e["targets"], opt)
                rewritten = _import(res.graph_def, e, caps)
            except Exception as exc:  # noqa: BLE001
                print(f"| {name} | {opt} | {type(exc).__name__}: {str(exc)[:80]} | | | | |",
                      flush=True)
                continue
            row = {"graph": name, "optimizer": opt}
            for mode, on in (("off", False), ("on", True)):
                if mode not in modes:
                    row[mode] = {"verdict": "-", "reason": "", "seconds": 0.0,
                                 "want_of_model": False, "text": "not run", "kernels": []}
                    continue
                t = time.perf_counter()
                with kernels.use(on):
                    v = check_rewrite(original, rewritten, timeout=args.timeout, classify=False)
                secs = time.perf_counter() - t
                text = v.verdict + (f" ({v.cause[:60]})" if v.verdict == "unknown" else "")
                if on and v.verdict == "unsound" and v.counterexample is not None:
                    rep = replay_graph(res.graph_def, rewritten, v.counterexample,
                                       targets=e["targets"], observe=v.observe,
                                       label=f"{name} after {opt}")
                    if not rep.confirmed and rep.outcome is None:
                        # (as `tfsem grappler`: the program exported, when the
                        # graph's own schedule cannot be forced)
                        exported = replay_program(rewritten, v.counterexample, observe=v.observe)
                        rep = exported if exported.confirmed else rep
                    # (not confirmed: either TensorFlow gave another outcome,
                    # or the schedule could not be forced: the reason says which)
                    text += (", confirmed on TensorFlow's runtime" if rep.confirmed else
                             f", not confirmed on TensorFlow: {rep.reason[:70]}")
                row[mode] = {"verdict": v.verdict, "reason": v.reason, "seconds": round(secs, 3),
                             "want_of_model": want_of_model(v), "text": text,
                             "kernels": v.stats.get("tensorflow_kernels", {}).get("ops", [])}
                counts[mode] += want_of_model(v)
            counts["checks"] += 1
            rows.append(row)
            print(f"| {name} | {opt} | {row['off']['text']} | {row['off']['seconds']:.2f} | "
                  f"{row['on']['text']} | {row['on']['seconds']:.2f} | "
                  f"{', '.join(row['on']['kernels']) or '-'} |", flush=True)
    print(f"\n{counts['checks']} checks; unknown for want of a concrete model: "
          f"{counts['off']} with kernels off, {counts['on']} with TensorFlow's kernels")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "counts": counts}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
