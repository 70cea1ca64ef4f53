"""Replay the `unsound` verdicts of Grappler's rewrites of real graphs on
TensorFlow's runtime (needs TensorFlow): the run behind
docs/grappler-findings.md section 1.2.

    python tests/cases/tensorflow/replay_real_findings.py [--pairs GRAPH:OPT,...]
                                                         [--timeout 30] [--json FILE]
                                                         [--save DIR]

For each (corpus graph, optimizer): Grappler's output for the graph placed on
the CPU (as `tfsem grappler` runs it), both imported with the graph's capture
map, checked (kernels on).  An `unsound` verdict's counterexample σ is then run
on TensorFlow twice, with TensorFlow's own graph rewriting off (no Grappler, no
classic constant folding): the original program, exported, and Grappler's
output (its graph itself with the schedule forced, else the imported program
exported, as `tfsem grappler` replays).  A row says whether each TensorFlow run
gives tfsem's outcome bit for bit, and which part differs between them.
`--save DIR` writes each confirmed pair as a `tfsem.case/1` case.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from tfsem.checking import check_rewrite
from tfsem.graphdef import grappler as g
from tfsem.graphdef import read_captures
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import decode
from tfsem.oracle import kernels
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import case_to_json, make_case
from tfsem.oracle.values import Error

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
PAIRS = [f"keras_embedding_adagrad:{o}" for o in ("constfold", "arithmetic", "default")] + \
    [f"{gr}:{o}" for gr in ("keras_lstm_unrolled", "keras_gru_unrolled")
     for o in ("constfold", "arithmetic", "default")]


def _import(gd, e, captures):
    graph = decode("tensorflow.GraphDef", gd.SerializeToString())
    return import_graph(graph, e["fetches"], e["targets"], captures=captures).program


def run_graph_on_tensorflow(gd, captures: dict | None, p, feeds: dict, init: dict):
    """Run the TensorFlow graph `gd` (the corpus graph or Grappler's output)
    once at σ in a session with TensorFlow's graph rewriting off (no
    Grappler, no classic constant folding or CSE): each captured resource
    placeholder is mapped to a variable of its own (by the capture map),
    set to σ's initial value; returns tfsem's Outcome (fetches, then every
    variable's final value).  A deterministic step: no schedule forced."""
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import Tensor
    tf = g.tensorflow()
    graph = tf.Graph()
    with graph.as_default():
        handles, assigns, reads, phs = {}, [], {}, {}
        for name, info in sorted((captures or {}).items()):
            var = info["variable"]
            if var not in handles:
                dtype = tf.dtypes.as_dtype(info["dtype"])
                h = tf.raw_ops.VarHandleOp(dtype=dtype, shape=info["shape"],
                                           shared_name=f"tfsem_{len(handles)}", container="")
                handles[var] = h
                phs[var] = tf.compat.v1.placeholder(dtype, info["shape"])
                assigns.append(tf.raw_ops.AssignVariableOp(resource=h, value=phs[var]))
                reads[var] = tf.raw_ops.ReadVariableOp(resource=h, dtype=dtype)
        input_map = {f"{name}:0": handles[info["variable"]]
                     for name, info in (captures or {}).items()}
        fetched = tf.compat.v1.import_graph_def(gd, input_map=input_map, name="g",
                                                 return_elements=[f"{o}:0" if ":" not in o else o
                                                                  for o in p.outputs])
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1,
                                      intra_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(assigns, {phs[v]: np.asarray(init[v].array) for v in handles})
        values = sess.run(fetched, {f"g/{k}:0": np.asarray(v.array) for k, v in feeds.items()
                                    if k in p.feed_names})
        state = sess.run(reads)
    outs = {k: Tensor(np.asarray(v)) for k, v in zip(p.outputs, values)}
    return make_outcome(outs, {v: Tensor(np.asarray(x)) for v, x in state.items()},
                        "outputs+state")


def initialized(p, cx):
    """σ with every variable initialized: those σ leaves uninitialized take
    ones (TensorFlow fails a run that reads an uninitialized variable)."""
    from tfsem.oracle.values import DTYPES, Tensor
    init = dict(cx.init)
    for x, v in init.items():
        if isinstance(v, Error):
            t = p.variables[x]
            init[x] = Tensor(np.ones(t.shape, DTYPES[t.dtype]), t.dtype)
    return dict(cx.feeds), init


#: σ drawn after the counterexample's, where TensorFlow fails a run there
DRAWS = 12


def drawn(p, rng, positive: bool = False):
    """σ of small values (floats -2..2 in halves; 0.5..2 if `positive`),
    every variable initialized, integer feeds in [0, 8) (valid ids of any
    vocabulary of 8 or more: an embedding's input).

    `positive` σ exist for Keras's sparse Adagrad step
    (keras_embedding_adagrad): where an accumulator is negative, `Sqrt`
    of it is NaN and the update takes the cond that merges the ids with the
    rows of NaN or zero denominators; that cond's `ScatterNd` of positions
    assumes distinct ids, and with a repeated id (a batch of [0, 8) ids
    always has one) the positions add up past the rows and `GatherV2` fails
    TensorFlow's step (`indices[0] = 205120 is not in [0, 641)` at 640 equal
    ids).  tfsem's oracle computes the same index and its GatherV2 gives an
    error value there, which the ResourceScatterSub drops (SPEC section 1:
    an Assign with an error input changes nothing), so tfsem's outcome shows
    no error where TensorFlow fails the step: such a σ cannot be replayed."""
    from tfsem.oracle.values import DTYPES, FLOAT_DTYPES, Tensor

    def value(t):
        n = int(np.prod(t.shape, dtype=np.int64))
        k = rng.integers(1, 5, n) if positive and t.dtype in FLOAT_DTYPES \
            else rng.integers(-4, 5, n)
        if t.dtype in FLOAT_DTYPES:
            return Tensor((k / 2).astype(DTYPES[t.dtype]).reshape(t.shape), t.dtype)
        if t.dtype == "bool":
            return Tensor((k > 0).reshape(t.shape), t.dtype)
        return Tensor(np.abs(k).astype(DTYPES[t.dtype]).reshape(t.shape), t.dtype)

    return ({f: value(p.feed_type(f)) for f in p.feed_names},
            {x: value(t) for x, t in p.variables.items()})


def _parts(o):
    return {**{("output", k): v for k, v in o.outputs}, **{("variable", k): v for k, v in (o.state or ())}}


def differing(a, b) -> list[str]:
    pa, pb = _parts(a), _parts(b)
    out = []
    for key in sorted(set(pa) | set(pb)):
        if pa.get(key) != pb.get(key):
            va, vb = pa.get(key), pb.get(key)
            what = f"{key[0]} {key[1]}"
            if va is not None and vb is not None and not isinstance(va, Error) \
                    and not isinstance(vb, Error):
                x, y = va.array.astype(np.float64), vb.array.astype(np.float64)
                with np.errstate(all="ignore"):
                    n = int(np.sum(~((x == y) | (np.isnan(x) & np.isnan(y)))))
                nan_a, nan_b = int(np.isnan(x).sum()), int(np.isnan(y).sum())
                what += f" ({n} of {x.size} elements; NaN {nan_a} -> {nan_b})"
            out.append(what)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--save", default=None, metavar="DIR")
    args = ap.parse_args(argv)
    tf = g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    manifest = {e["name"]: e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]}
    rows = []
    print(f"TensorFlow {tf.__version__}; check timeout {args.timeout:g} s; kernels on")
    for pair in args.pairs.split(","):
        name, opt = pair.split(":")
        e = manifest[name]
        captures = read_captures(CORPUS / e["captures"]) if e.get("captures") else None
        gd = g.as_graph_def(CORPUS / e["file"])
        res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
        original, rewritten = _import(gd, e, captures), _import(res.graph_def, e, captures)
        t = time.perf_counter()
        with kernels.use(True):
            v = check_rewrite(original, rewritten, timeout=args.timeout)
        row = {"graph": name, "optimizer": opt, "verdict": v.verdict,
               "check_s": round(time.perf_counter() - t, 3), "path": v.stats.get("path"),
               "difference": v.difference, "differs": v.differs, "reason": v.reason[:300]}
        rows.append(row)
        if v.verdict != "unsound":
            print(json.dumps(row), flush=True)
            continue
        cx = v.counterexample
        row["uninitialized_in_cx"] = sorted(k for k, x in cx.init.items() if isinstance(x, Error))
        rng = np.random.default_rng(0)
        for k in range(2 * DRAWS + 1):
            # the counterexample's σ (initialized), else drawn σ of small
            # values, then of small positive floats (see `drawn`)
            feeds, init = initialized(original, cx) if k == 0 else \
                drawn(original, rng, positive=k > DRAWS)
            ours = outcome_set(original, feeds, init, max_seconds=60)
            theirs = outcome_set(rewritten, feeds, init, max_seconds=60)
            if ours.count != 1 or theirs.count != 1 or list(ours) == list(theirs):
                continue
            (o1,), (o2,) = list(ours), list(theirs)
            row["sigma_used"] = "the counterexample's" if k == 0 else \
                f"drawn #{k}" if k <= DRAWS else f"drawn positive #{k - DRAWS}"
            row["tfsem_original_vs_rewritten"] = differing(o1, o2)
            try:
                t1 = run_graph_on_tensorflow(gd, captures, original, feeds, init)
                t2 = run_graph_on_tensorflow(res.graph_def, captures, rewritten, feeds, init)
            except Exception as exc:  # noqa: BLE001 (a row that says why; next σ)
                row.setdefault("tensorflow_failed", []).append(
                    f"{row['sigma_used']}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            row["tensorflow"] = {"original_same_bits": t1 == o1, "rewritten_same_bits": t2 == o2,
                                 "original_vs_rewritten": differing(t1, t2),
                                 "original_vs_tfsem": differing(t1, o1),
                                 "rewritten_vs_tfsem": differing(t2, o2)}
            row["sigma"] = {n: ("uninitialized" if isinstance(x, Error) else
                                sorted({repr(float(u)) for u in np.unique(x.array.astype(np.float64))})[:4])
                            for n, x in {**feeds, **init}.items()}
            break
        print(json.dumps(row), flush=True)
        tfr = row.get("tensorflow", {})
        confirmed = tfr.get("original_same_bits") and tfr.get("rewritten_same_bits") and \
            tfr.get("original_vs_rewritten")
        if args.save and confirmed:
            out = Path(args.save)
            out.mkdir(parents=True, exist_ok=True)
            case = make_case(original, rewritten, expect="unsound",
                             note=f"(to be written) {name} under {opt}, TensorFlow {tf.__version__}")
            (out / f"grappler_{opt}_{name}.json").write_text(json.dumps(case_to_json(case)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
