"""keras_mlp_loss_scale through Grappler's default pipeline, at the σ of the
old `unsound` verdict (docs/grappler-control-flow.md, docs/semantics.md "An
error as a predicate"): the four variables of that counterexample
uninitialized, every other variable 0.5, every feed 1.0.  Prints each
program's outcomes (the loss scale and the step counter) and whether
Grappler's are among the original's.  Needs TensorFlow (Grappler); about a
minute of CPU per program.

    python benchmarks/loss_scale_error_predicate.py
"""
import json
import time
from pathlib import Path
import numpy as np
from tfsem.graphdef import read_captures, grappler as g
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import decode
from tfsem.oracle import outcome_set
from tfsem.oracle.values import Error, Tensor
C = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
e = next(e for e in json.loads((C / "manifest.json").read_text())["graphs"] if e["name"] == "keras_mlp_loss_scale")
cap = read_captures(C / e["captures"])
gd = g.as_graph_def(C / e["file"])
def imp(x):
    return import_graph(decode("tensorflow.GraphDef", x.SerializeToString()), e["fetches"], e["targets"], captures=cap).program
orig = imp(gd)
opt = imp(g.run_grappler(gd, e["fetches"] + e["targets"], "default").graph_def)
UNINIT = {"loss/count", "loss_scale_optimizer/step_counter", "sequential/dense/bias", "sgd/learning_rate"}
def value(t, unin):
    if unin: return Error("uninitialized")
    return Tensor(np.full(t.shape, 0.5, dtype=t.dtype) if t.dtype.startswith("float") else np.zeros(t.shape, dtype=t.dtype))
init = {v: value(t, v in UNINIT) for v, t in orig.variables.items()}
feeds = {f: Tensor(np.ones(t.shape, dtype=t.dtype)) for f, t in orig.feeds.items()}
res = {}
for name, p in (("original", orig), ("grappler", opt)):
    t = time.time()
    res[name] = set(outcome_set(p, feeds, init, "atomic", max_states=2_000_000, max_seconds=400))
    print(name, len(res[name]), "outcomes", f"{time.time()-t:.1f}s", flush=True)
    for o in res[name]:
        st = dict(o.state)
        print("   dynamic_scale:", st.get("loss_scale_optimizer/dynamic_scale"), " step_counter:", st.get("loss_scale_optimizer/step_counter"))
print("grappler's outcomes among the original's:", res["grappler"] <= res["original"])
