"""Replay `tfsem grappler`'s `unsound` verdicts on real-graphs corpus graphs
on TensorFlow's runtime (needs TensorFlow): the run behind
docs/grappler-findings.md section 1.1's replay of the remap findings.

    python tests/cases/tensorflow/replay_corpus_findings.py [--graphs a,b] [--optimizer remap]
                                                            [--timeout 10] [--json FILE]
                                                            [--case NAME]

For each corpus graph (default: the 11 whose remap check was `unsound` in
section 1.1), as `tfsem grappler GRAPH --optimizer OPT` does it: the graph
placed on the CPU and given to Grappler's OPT alone, the original and the
optimized graph imported with the graph's capture map, and checked.  For an
`unsound` verdict, its counterexample's σ (feeds and initial variable values)
is run on TensorFlow twice, each graph in a session with Grappler and the
classic graph optimizer switched off (backends.tensorflow.GraphRunner,
optimize=False): the optimized graph, and the original.  A concrete
function's DT_RESOURCE Placeholders are made VarHandleOps of the captured
variable's name, so both run as graphs, with TensorFlow's own nodes.

Per graph it says whether TensorFlow shows the same bits as tfsem: the
optimized graph gives the counterexample's outcome, the original gives one
of the original's outcomes, and the two differ; and where they differ
(outputs and variables, with the first differing element).  `--case NAME`
writes the first graph's finding, when TensorFlow shows the same bits, as
the tfsem.case/1 file NAME.json beside this script (original and optimized
graph as imported, expect unsound, a note with the TensorFlow version).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from tfsem.commands import grappler as command
from tfsem.graphdef import grappler as g
from tfsem.graphdef import read_captures

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
#: the 11 graphs whose remap check was `unsound` (docs/grappler-findings.md 1.1)
REMAP_UNSOUND = ["keras_mlp_sgd_momentum", "keras_mlp_adam", "keras_mlp_adamw",
                 "keras_mlp_rmsprop", "keras_mlp_adagrad", "keras_mlp_adadelta",
                 "keras_mlp_adamax", "keras_mlp_nadam", "keras_mlp_ftrl", "keras_mlp_lion",
                 "keras_fit_one_step_on_data"]


def runnable(graph_def, captures: dict | None):
    """`graph_def` with each captured DT_RESOURCE Placeholder made a
    VarHandleOp of its variable (shared_name = the capture map's variable),
    so TensorFlow runs it as a graph whose variables σ sets."""
    tf = g.tensorflow()
    gd = type(graph_def)()
    gd.CopyFrom(graph_def)
    for n in gd.node:
        spec = (captures or {}).get(n.name)
        if spec is None or n.op != "Placeholder":
            continue
        name, device = n.name, n.device
        n.Clear()
        n.name, n.op, n.device = name, "VarHandleOp", device
        n.attr["dtype"].type = tf.dtypes.as_dtype(spec["dtype"]).as_datatype_enum
        n.attr["shape"].shape.CopyFrom(tf.TensorShape(spec["shape"]).as_proto())
        n.attr["shared_name"].s = spec["variable"].encode()
        n.attr["container"].s = b""
    return gd


def fused(graph_def) -> list[str]:
    """The remapper's fused ops of `graph_def` (graph and function library)."""
    out = []
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for n in nodes:
        if n.op.startswith("_Fused"):
            ops = [o.decode() for o in n.attr["fused_ops"].list.s]
            out.append(f"{n.op}[{','.join(ops)}]")
    return sorted(out)


def first_difference(a, b) -> list[str]:
    """Where Outcome `a` (the optimized graph's) differs from `b` (the
    original's) bit for bit: 'name[i]: A vs B', per output and variable."""
    out = []
    parts_a = dict(a.outputs) | {f"{k} (variable)": v for k, v in (a.state or ())}
    parts_b = dict(b.outputs) | {f"{k} (variable)": v for k, v in (b.state or ())}
    for k in sorted(set(parts_a) | set(parts_b)):
        va, vb = parts_a.get(k), parts_b.get(k)
        if va == vb:
            continue
        xa = np.asarray(getattr(va, "array", va))
        xb = np.asarray(getattr(vb, "array", vb))
        if xa.shape != xb.shape or xa.dtype != xb.dtype:
            out.append(f"{k}: {va} vs {vb}")
            continue
        fa, fb = xa.reshape(-1), xb.reshape(-1)
        diff = [i for i in range(fa.size) if fa[i:i + 1].tobytes() != fb[i:i + 1].tobytes()]
        out.append(f"{k}: {len(diff)} of {fa.size} elements, [{diff[0]}] {fa[diff[0]]!s} "
                   f"(optimized) vs {fb[diff[0]]!s} (original)")
    return out


def replay(entry: dict, optimizer: str, timeout: float) -> dict:
    from tfsem.backends.tensorflow import GraphRunner, TensorFlowRunError
    from tfsem.checking import check_rewrite

    captures = read_captures(CORPUS / entry["captures"]) if entry.get("captures") else None
    fetches, targets = entry["fetches"], entry["targets"]
    gd = g.as_graph_def(CORPUS / entry["file"])
    res = g.run_grappler(gd, fetches + targets, optimizer, place=True)
    kept = {n.name for n in res.graph_def.node}
    original = command._import_with(gd, fetches, targets, entry["name"], captures)
    rewritten = command._import_with(res.graph_def, fetches, targets, entry["name"],
                                     None if captures is None else
                                     {k: v for k, v in captures.items() if k in kept})
    t = time.perf_counter()
    v = check_rewrite(original, rewritten, "atomic", "outputs+state", timeout=timeout)
    row = {"graph": entry["name"], "optimizer": optimizer, "verdict": v.verdict,
           "_programs": (original, rewritten),
           "kind": v.to_json().get("kind"), "check_s": round(time.perf_counter() - t, 2),
           "nodes": f"{res.nodes_before} -> {res.nodes_after}", "fused": fused(res.graph_def)}
    if v.verdict != "unsound" or v.counterexample is None:
        row["reason"] = v.reason[:600]
        return row
    cx = v.counterexample
    row["sigma"] = {k: _short(x) for k, x in sorted(cx.feeds.items())}
    row["tfsem_difference"] = first_difference(cx.outcome, cx.original_outcomes[0][0])
    outputs = {f: f for f in fetches}
    try:
        with GraphRunner(runnable(res.graph_def, captures), outputs, targets,
                         optimize=False) as r:
            got_opt = r.run_once({k: x for k, x in cx.feeds.items() if k in r.placeholders},
                                 cx.init)
        with GraphRunner(runnable(gd, captures), outputs, targets, optimize=False) as r:
            got_orig = r.run_once({k: x for k, x in cx.feeds.items() if k in r.placeholders},
                                  cx.init)
    except TensorFlowRunError as exc:
        row.update(tensorflow="run failed", reason=str(exc)[:300])
        return row
    originals = [o for o, _ in cx.original_outcomes]
    row.update(optimized_is_counterexample=got_opt == cx.outcome,
               original_among_originals=any(got_orig == o for o in originals),
               differ=got_opt != got_orig,
               tensorflow_difference=first_difference(got_opt, got_orig))
    row["same_bits"] = (row["optimized_is_counterexample"] and row["original_among_originals"]
                        and row["differ"])
    return row


def _short(x) -> str:
    a = np.asarray(getattr(x, "array", x))
    flat = a.reshape(-1)
    vals = sorted({str(f) for f in flat[:4096]})
    return f"{a.dtype}{list(a.shape)} values {{{', '.join(vals[:6])}{', ...' if len(vals) > 6 else ''}}}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(REMAP_UNSOUND))
    ap.add_argument("--optimizer", default="remap")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per check (default 10)")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--case", default=None, metavar="NAME",
                    help="write the first graph's confirmed finding as NAME.json beside this script")
    ap.add_argument("--why", default="", help="the case note's explanation of the difference")
    args = ap.parse_args(argv)
    g.check_optimizer_names([args.optimizer])
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    by_name = {e["name"]: e for e in manifest["graphs"]}
    # TensorFlow's start in the kernels' child (10-60 s under load) is not a
    # check's time: one evaluation before the first check waits for it
    from tfsem.oracle import kernels
    if kernels.enabled():
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    print(f"TensorFlow {g.tensorflow().__version__}; {args.optimizer}; check timeout "
          f"{args.timeout:g} s\n")
    print("| graph | nodes | fused | verdict | σ (feeds) | TensorFlow: same bits? | difference on TensorFlow |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name in args.graphs.split(","):
        row = replay(by_name[name], args.optimizer, args.timeout)
        rows.append(row)
        same = row.get("same_bits")
        cell = "-" if same is None else ("yes" if same else
                                         f"no (optimized = counterexample: "
                                         f"{row['optimized_is_counterexample']}, original among "
                                         f"the original's: {row['original_among_originals']})")
        print(f"| {name} | {row['nodes']} | {', '.join(row['fused'])} | {row['verdict']} | "
              f"{'; '.join(f'{k}: {s}' for k, s in row.get('sigma', {}).items())} | {cell} | "
              f"{'; '.join(row.get('tensorflow_difference', [])) or row.get('reason', '')} |",
              flush=True)
    if args.case:
        write_case(args.case, rows[0], args.why)
    for row in rows:
        row.pop("_programs", None)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


def write_case(name: str, row: dict, why: str = "") -> None:
    from tfsem.oracle.jsonio import case_to_json, make_case
    if not row.get("same_bits"):
        raise SystemExit(f"{row['graph']}: TensorFlow does not show the same bits; no case")
    original, rewritten = row["_programs"]
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]
                 if e["name"] == row["graph"])
    note = (f"Grappler's {row['optimizer']} alone (TensorFlow {g.tensorflow().__version__}, CPU, "
            f"oneDNN on, the graph placed on the CPU as `tfsem grappler` places it) on the "
            f"real-graphs corpus graph examples/tensorflow/corpus/{entry['file']}, imported with "
            f"its capture map (nodes {row['nodes']}; fused: {', '.join(row['fused'])}). "
            f"Counterexample σ: {'; '.join(f'{k} {v}' for k, v in row['sigma'].items())}, every "
            "variable initialized. Replayed on TensorFlow (replay_corpus_findings.py: each graph "
            "in a session with Grappler off, the capture placeholders made VarHandleOps): the "
            "same bits as tfsem, "
            + "; ".join(row["tensorflow_difference"][:3])
            + (f". {why}" if why else "") + ". Needs TensorFlow's kernels: nightly profile.")
    case = make_case(original, rewritten, expect="unsound", note=note)
    path = Path(__file__).resolve().parent / f"{name}.json"
    path.write_text(json.dumps(case_to_json(case), indent=1) + "\n")
    print(f"wrote {path.name}")


if __name__ == "__main__":
    sys.exit(main())
