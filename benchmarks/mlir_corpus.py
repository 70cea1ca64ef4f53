"""The graphs of examples/tensorflow/ through TensorFlow's stateful MLIR passes.

    python benchmarks/mlir_corpus.py [--timeout S] [--json OUT] [PIPELINE...]

Each graph of examples/tensorflow/manifest.json is imported into the
tf_executor dialect with its fetches (one TensorFlow process per graph), then
every pipeline runs on it (all in one TensorFlow process:
graphdef/mlir_tf.py's run_batch), and each output is read back and checked
against the input in both semantics modes, as `tfsem mlir` does.  Prints one
row per (graph, pipeline) and a verdict count.  Needs TensorFlow.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"

PIPELINES = [
    "func.func(tf-executor-graph-pruning)",
    "func.func(tf-executor-island-coarsening)",
    "func.func(tf-executor-to-functional-conversion)",
    "tf-executor-update-control-dependencies",
    "tf-executor-break-up-islands",
    "func.func(tf-device-decompose-resource-ops)",
    "cse",
    "canonicalize",
    "tf-standard-pipeline",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pipelines", nargs="*", default=PIPELINES)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per check")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from tfsem.checking import check_case
    from tfsem.graphdef.mlir import program_of_mlir
    from tfsem.graphdef.mlir_tf import run_batch, run_pipeline
    from tfsem.oracle.functions import CannotRun
    from tfsem.oracle.jsonio import Case, program_to_json
    from tfsem.oracle.program import ProgramError

    manifest = json.loads((CORPUS / "manifest.json").read_text())["graphs"]
    inputs = {}
    for g in manifest:
        path = CORPUS / g["file"]
        run = run_pipeline("cse", graph_bytes=path.read_bytes(), outputs=g["fetches"],
                           targets=g.get("targets", []), graph_is_text=path.suffix == ".pbtxt")
        inputs[g["file"]] = run.input_text if run.input_text else run
    jobs = [(f, p) for f, t in inputs.items() if isinstance(t, str) for p in args.pipelines]
    runs = run_batch([(inputs[f], p) for f, p in jobs])
    rows = [{"graph": f, "status": f"import-{t.status}", "reason": t.message[:160]}
            for f, t in inputs.items() if not isinstance(t, str)]
    for (f, p), tf in zip(jobs, runs):
        row = {"graph": f, "pipeline": p}
        if tf.status != "ok":
            rows.append(dict(row, status=f"tensorflow-{tf.status}", reason=tf.message[:160]))
            continue
        try:
            a = program_of_mlir(inputs[f], "input")
        except ProgramError as exc:
            rows.append(dict(row, status="input-not-readable", reason=str(exc.violations[0])[:200]))
            continue
        try:
            b = program_of_mlir(tf.output_text, "output")
        except ProgramError as exc:
            rows.append(dict(row, status="output-not-readable",
                             reason=str(exc.violations[0])[:200]))
            continue
        t0 = time.monotonic()
        verdicts = {}
        for mode in ("atomic", "decomposed"):
            try:
                verdicts[mode] = check_case(Case(a, program_to_json(b)), timeout=args.timeout,
                                            semantics=mode).verdict
            except CannotRun:
                verdicts[mode] = "unknown"
        rows.append(dict(row, status="checked", nodes=len(a.nodes),
                         seconds=round(time.monotonic() - t0, 2), **verdicts))
    for r in rows:
        print(json.dumps(r))
    count = collections.Counter(
        (r["status"] if r["status"] != "checked" else f"{r['atomic']}/{r['decomposed']}")
        for r in rows)
    print("\ncount:", dict(count))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
