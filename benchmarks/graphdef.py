"""Benchmark of GraphDef import on the corpus of real TensorFlow graphs.

    python benchmarks/graphdef.py [--repeat 5] [--timeout 60]
    python benchmarks/graphdef.py --corpus [--repeat 3] [--markdown] [--only NAME ...]
    python benchmarks/graphdef.py --synthetic [10000 50000] [--repeat 5] [--phases]
                                  [--baseline /work/main/.venv/bin/python] [--graph G.pb ...]

Per graph of examples/tensorflow/ (with the manifest's fetches and targets):
the graph's nodes (plus those in its function library), the imported
program's nodes and variables, the median import time (parsing the .pbtxt
included), the time and verdict of `check G G` (the graph against itself;
the checker recognizes an identical program at once), and the time and
verdict of checking G against `reduce-control` of G (a rewrite that changes
nothing observable, so the checker has to prove it), and, for the graphs
the manifest calls small, the time of `outcomes` from zero-valued variables.

Target (issue 14): every graph imports, and both checks say `sound`, in seconds.

`--corpus` measures the corpus of real models instead
(examples/tensorflow/corpus/, issue 30): per graph of its manifest, the
GraphDef's nodes (plus those in its function library), its variables (as
the manifest lists them), whether tfsem imports it (with the manifest's
fetches, targets, capture map and shapes; a SavedModel with its signature's), the
median import time, and for a graph that imports, the time and verdict of
`check G G` (G imported twice, the second as the rewritten program), or the
first refusal (rule, node and message).  `--markdown` prints the table as
docs/tensorflow-graphs.md holds it.

`--synthetic N ...` measures import against protobuf's own parser instead:
per N, a chain of `ReadVariableOp -> AddV2` over 16 resource variables with
an `AssignAddVariableOp` every 4th step (about N GraphDef nodes); per
`--optimizer K`, K variables each updated by a `ResourceApplyAdam` (6K+8
nodes: the importer checks each update for racing accesses); every
`--corpus-graph` of the corpus (default keras_mobilenetv2_32, with its
manifest's fetches, targets and captures); and every `--graph` file given
(imported with its default fetches, to its refusal if it is refused).  The
synthetic graphs are generators/graphdefs.py's.  Columns, medians of CPU
seconds, each measured in a fresh process: protobuf's parse of the bytes
(`ParseFromString` with tfsem's descriptors, in this process), tfsem's
decode (`graphdef.read_graph`: the parse plus the unknown-field check),
tfsem's import (`graphdef.import_path`: read, inline, build, validate), and
the import's ratio to protobuf's parse.  With `--baseline PYTHON` (an
interpreter whose `tfsem` is another checkout) or `--baseline-commit REV`
(tfsem at that commit, installed into a temporary directory), the same
decode and import run in the other implementation too, alternating with
this one's repetitions, so both sides see the same machine load.

The floor (binary GraphDefs): what any import through protobuf's Python
API must spend after the parse, before any work of its own, measured in
fresh processes, medians of at least 5: `1st parse` is protobuf's first
parse in the process (into fresh memory, as an import's parse is; the
`protobuf s` column's warm parse reuses the memory of the one before and
takes a third to a half as long), `floor1` reading back every node's name,
op and inputs after it (the least an import reads), `floor2` those, its
device, and each attribute's name and kind (its oneof `value`: what an
import that looks at every attribute reads before converting one).
`f1/p1`, `f2/p1`: the floors as multiples of the first parse; `/p1`, `/f1`,
`/f2`: the import as multiples of the first parse and of the floors.  A
target below `f1/p1` times the parse cannot be met by Python reading
protobuf's messages:

    python benchmarks/graphdef.py --synthetic 10000 50000 --repeat 5 \
        --baseline-commit 2e1096e

`--phases` adds, per graph and implementation, the CPU milliseconds of
each phase of the import (medians of `--repeat` warm imports in one fresh
process): decode, inline (functions.flatten), order, cycles (the unreached
nodes' check), build, validate, race check (of multi-variable updates), and
the rest (the collector, freeing, the Program).

Target (issue 30): no 50,000-node import over 5x protobuf's parse; a
7,000-node graph (MobileNetV2's training step) in under 1 s.  Measured
figures: docs/benchmarks.md (TensorFlow graphs) and docs/import-speed.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from tfsem.checking import check_rewrite
from tfsem.graphdef import import_path
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.values import Tensor
from tfsem.rewrites import get_pass

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"


def write_chain(n: int, directory: Path) -> Path:
    """The binary GraphDef of generators.graphdefs.chain_graphdef(n)."""
    from tfsem.generators.graphdefs import chain_graphdef
    from tfsem.graphdef.proto import encode
    path = directory / f"chain{n}.pb"
    if not path.exists():
        path.write_bytes(encode("GraphDef", chain_graphdef(n)))
    return path


def write_optimizer(k: int, directory: Path) -> Path:
    """The binary GraphDef of generators.graphdefs.optimizer_graphdef(k)."""
    from tfsem.generators.graphdefs import optimizer_graphdef
    from tfsem.graphdef.proto import encode
    path = directory / f"adam{k}.pb"
    if not path.exists():
        path.write_bytes(encode("GraphDef", optimizer_graphdef(k)))
    return path


#: Run in this interpreter and in the baseline's: CPU seconds of one decode
#: and one import of a graph (SPEC: {"path", "fetch", "target", "captures"}),
#: and the refusal if the import is refused.  Old checkouts have read_graph
#: and import_path too.
_TIMER = r"""
import gc, json, sys, time
from tfsem.graphdef import import_path, read_graph
from tfsem.oracle.program import ProgramError
import tfsem.graphdef.importer, tfsem.graphdef.proto  # imported before the clock starts
try:
    import tfsem.graphdef.proto.runtime
except ImportError:
    pass
spec = json.loads(sys.argv[1])
path = spec["path"]
gc.collect()
t = time.process_time(); read_graph(path); dec = time.process_time() - t
gc.collect()
t = time.process_time()
try:
    nodes = len(import_path(path, spec["fetch"], [], spec["target"],
                            captures=spec["captures"]).program.nodes)
    why = ""
except ProgramError as exc:
    nodes, why = 0, str(exc).splitlines()[0][:100]
imp = time.process_time() - t
print(json.dumps([dec, imp, nodes, why]))
"""


#: With --phases, run in this interpreter and in the baseline's: CPU ms of
#: each phase of the import (the functions the importer calls for them,
#: wrapped with a timer), medians of `repeat` warm imports in one process.
#: "rest": the import's time outside those phases (the collector, freeing
#: what the import made, building the Program).
_PHASES = r"""
import gc, json, statistics, sys, time
from collections import defaultdict
import tfsem.graphdef as G
import tfsem.graphdef.importer as I
import tfsem.oracle.program as P
from tfsem.graphdef import import_path
spec = json.loads(sys.argv[1])
T = defaultdict(float)
def wrap(obj, name, label):
    f = getattr(obj, name)
    def timed(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[label] += time.process_time() - t
    setattr(obj, name, timed)
for obj, name, label in ((G, "_read_graph", "decode"), (I, "flatten", "inline"),
                         (I._Importer, "order", "order"), (I, "_check_unreached_cycles", "cycles"),
                         (I._Importer, "build_all", "build"), (P.Program, "validated", "validate"),
                         (I, "_check_exclusive", "race check")):
    wrap(obj, name, label)
def run():
    import_path(spec["path"], spec["fetch"], [], spec["target"], captures=spec["captures"])
run()
rows = []
for _ in range(spec["repeat"]):
    T.clear()
    gc.collect()
    t = time.process_time()
    run()
    total = time.process_time() - t
    row = dict(T)
    row["rest"] = total - sum(row.values())
    row["total"] = total
    rows.append(row)
print(json.dumps({k: statistics.median(r.get(k, 0.0) for r in rows) * 1000 for k in rows[0]}))
"""
PHASES = ("decode", "inline", "order", "cycles", "build", "validate", "race check", "rest",
          "total")


def _time_in(python: str, spec: dict, env: dict | None = None, cwd: str | None = None,
             script: str = _TIMER) -> list:
    import subprocess
    import sys
    out = subprocess.run([python or sys.executable, "-c", script, json.dumps(spec)],
                         capture_output=True, text=True, env=env, cwd=cwd)
    if out.returncode:
        raise SystemExit(f"the timed import failed ({python or sys.executable}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _protobuf_parse_s(data: bytes, repeat: int) -> float:
    from tfsem.graphdef.proto.runtime import message_class
    cls = message_class("GraphDef")
    times = []
    for _ in range(repeat):
        t = time.process_time()
        cls().ParseFromString(data)
        times.append(time.process_time() - t)
    return statistics.median(times)


#: Run in a fresh process (this interpreter, this tfsem): the floor of any
#: import through protobuf's Python API.  CPU seconds of protobuf's first
#: parse of the bytes (into fresh memory, as an import's parse is), then of
#: reading back every node's name, op and inputs (floor 1: the least an
#: import reads), then -- on a second parse, the first message kept so that
#: it too lands in fresh memory -- of reading those, its device and each
#: attribute's name and kind (floor 2: what an import that looks at the
#: attributes reads before converting one).  The collector off, as during
#: an import; the rows kept until timed.
_FLOOR = r"""
import gc, json, sys, time
from tfsem.graphdef.proto.runtime import message_class
cls = message_class("GraphDef")
data = open(sys.argv[1], "rb").read()
gc.disable()
def nodes(g):
    return list(g.node) + [nd for f in g.library.function for nd in f.node_def]
t = time.process_time(); a = cls(); a.ParseFromString(data); parse = time.process_time() - t
t = time.process_time()
rows = [(n.name, n.op, n.input[:]) for n in nodes(a)]
f1 = time.process_time() - t
b = cls(); b.ParseFromString(data)
t = time.process_time()
rows2 = [(n.name, n.op, n.input[:], n.device,
          [(k, v.WhichOneof("value")) for k, v in n.attr.items()]) for n in nodes(b)]
f2 = time.process_time() - t
print(json.dumps([parse, f1, f2]))
"""


def _floor_s(path: Path, repeat: int) -> tuple[float, float, float]:
    """Medians over `repeat` fresh processes of (first parse, floor 1, floor 2): _FLOOR."""
    import subprocess
    import sys
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _FLOOR, str(path)], capture_output=True,
                             text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return tuple(statistics.median(r[k] for r in runs) for k in range(3))


def install_commit(rev: str, directory: Path) -> Path:
    """tfsem at commit `rev` of this repository, installed (without its
    dependencies, which it shares with this one) into `directory`/site: put
    that on PYTHONPATH, in a working directory outside the repository."""
    import subprocess
    import sys
    src, site = directory / "src", directory / "site"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(src)], check=True)
    return site


def synthetic(args) -> None:
    import os
    import tempfile
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        cases = [(f"chain {n}", write_chain(n, tmp_path), {"fetch": ["out"], "target": []})
                 for n in args.synthetic]
        cases += [(f"adam x{k}", write_optimizer(k, tmp_path), {"fetch": [], "target": ["train"]})
                  for k in args.optimizer]
        cases += [(Path(g).name, Path(g), {"fetch": [], "target": []}) for g in args.graph]
        manifest = {g["name"]: g
                    for g in json.loads((CORPUS2 / "manifest.json").read_text())["graphs"]}
        for name in args.corpus_graph:
            e = manifest[name]
            opts = {"fetch": [] if e["kind"] == "saved_model" else e["fetches"],
                    "target": [] if e["kind"] == "saved_model" else e["targets"],
                    "captures": str(CORPUS2 / e["captures"]) if e.get("captures") else None}
            cases.append((name, CORPUS2 / e["file"], opts))
        base_python, base_env = args.baseline, None
        if args.baseline_commit:
            site = install_commit(args.baseline_commit, tmp_path / "baseline")
            base_python = base_python or os.environ.get("PYTHON", "") or None
            base_env = dict(os.environ, PYTHONPATH=str(site))
        baseline = bool(base_python or base_env)
        label = args.baseline_commit or args.baseline
        print(f"{'graph':26} {'nodes':>7} {'MB':>5} {'protobuf s':>10} {'1st parse':>9} "
              f"{'floor1 s':>9} {'floor2 s':>9} {'f1/p1':>6} {'f2/p1':>6} {'decode s':>9} "
              f"{'import s':>9} {'ratio':>6} {'/p1':>5} {'/f1':>5} {'/f2':>5}"
              + (f" {'old decode s':>12} {'old import s':>12} {'old ratio':>9} {'old/f2':>6} "
                 f"{'speedup':>8}" if baseline else "") + "  refusal")
        for label_, path, opts in cases:
            spec = {"path": str(path), "captures": None, **opts}
            data = path.read_bytes() if path.is_file() else (path / "saved_model.pb").read_bytes()
            from tfsem.graphdef.proto import parse, parse_text
            pb = p1 = f1 = f2 = float("nan")   # (protobuf's parse: of a binary GraphDef only)
            if path.suffix in (".pbtxt", ".pbtext"):
                n_nodes = len(parse_text("GraphDef", data.decode()).get("node", []))
            elif path.is_dir():
                n_nodes = len(parse("SavedModel", data).meta_graphs[0].graph_def.node)
            else:
                n_nodes = len(parse("GraphDef", data).node)
                pb = _protobuf_parse_s(data, max(args.repeat, 5))
                p1, f1, f2 = _floor_s(path, max(args.repeat, 5))
            new, old = [], []
            for _ in range(args.repeat):
                new.append(_time_in("", spec, cwd=tmp))
                if baseline:
                    old.append(_time_in(base_python or "", spec, env=base_env, cwd=tmp))
            dec, imp = med(r[0] for r in new), med(r[1] for r in new)
            line = (f"{label_:26} {n_nodes:>7} {len(data) / 1e6:>5.2f} {pb:>10.4f} {p1:>9.4f} "
                    f"{f1:>9.4f} {f2:>9.4f} {f1 / p1:>6.1f} {f2 / p1:>6.1f} {dec:>9.4f} "
                    f"{imp:>9.4f} {imp / pb:>6.1f} {imp / p1:>5.1f} {imp / f1:>5.1f} "
                    f"{imp / f2:>5.1f}")
            if baseline:
                odec, oimp = med(r[0] for r in old), med(r[1] for r in old)
                line += (f" {odec:>12.4f} {oimp:>12.4f} {oimp / pb:>9.1f} {oimp / f2:>6.1f} "
                         f"{oimp / imp:>8.1f}")
            print(line + "  " + (new[-1][3] or "-"), flush=True)
        print("\n(protobuf s: a parse in this process, warm (memory of the previous parse "
              "reused); 1st parse: protobuf's first parse in a fresh process, as an import's; "
              "floor1: reading back every node's name, op and inputs through protobuf's Python "
              "API after it; floor2: those, its device and each attribute's name and kind; "
              "f1/p1, f2/p1: the floors as multiples of the first parse; ratio: import / warm "
              "parse; /p1: import / first parse; /f1, /f2: import / floor)")
        if args.phases:
            print("\nphases, CPU ms (medians of warm imports in one process" +
                  (f"; old: {label}" if baseline else "") + "):")
            print(f"{'graph':26} {'release':8} " + " ".join(f"{k:>10}" for k in PHASES))
            for label_, path, opts in cases:
                spec = {"path": str(path), "captures": None, **opts, "repeat": args.repeat}
                sides = [("this", "", None)] + ([("old", base_python or "", base_env)]
                                                if baseline else [])
                for side, python, env in sides:
                    ph = _time_in(python, spec, env=env, cwd=tmp, script=_PHASES)
                    print(f"{label_:26} {side:8} " + " ".join(f"{ph.get(k, 0.0):>10.0f}"
                                                              for k in PHASES), flush=True)
        if baseline:
            print(f"\n(old: {label}; medians of {args.repeat} CPU-second measurements, each in a "
                  "fresh process, the two implementations alternating)")


CORPUS2 = ROOT / "examples" / "tensorflow" / "corpus"


def import_corpus_entry(entry: dict, deadline: float | None = None):
    """The import of one graph of the corpus manifest, as `tfsem import` with
    the manifest's options does it (a SavedModel: its signature's feeds and
    fetches, `--shape` for an input whose batch is unknown)."""
    path = CORPUS2 / entry["file"]
    caps = str(CORPUS2 / entry["captures"]) if entry.get("captures") else None
    if entry["kind"] == "saved_model":
        return import_path(path, deadline=deadline, captures=caps, shapes=entry.get("shapes"))
    return import_path(path, entry["fetches"], [], entry["targets"], deadline=deadline,
                       captures=caps)


def corpus(args) -> None:
    from tfsem.oracle.program import ProgramError
    manifest = json.loads((CORPUS2 / "manifest.json").read_text())["graphs"]
    rows = []
    for g in manifest:
        if args.only and g["name"] not in args.only:
            continue
        times, why, p = [], "", None
        for _ in range(args.repeat):
            t = time.perf_counter()
            try:
                p = import_corpus_entry(g).program
            except ProgramError as exc:
                v = exc.violations[0]
                where = v.where.split(": ", 1)[-1]
                why = f"{where}: {v.message} [{v.rule}]"
            times.append(time.perf_counter() - t)
        row = {"name": g["name"], "kind": g["kind"],
               "nodes": f"{g['nodes']}+{g['function_nodes']}" if g["function_nodes"]
               else str(g["nodes"]), "variables": len(g["variables"]),
               "import_s": statistics.median(times), "imports": not why,
               "check_s": None, "verdict": None, "refusal": why}
        if not why:
            q = import_corpus_entry(g).program
            t = time.perf_counter()
            v = check_rewrite(p, program_to_json(q), "atomic", "outputs+state", args.timeout)
            row["check_s"], row["verdict"] = time.perf_counter() - t, v.verdict
        rows.append(row)
        if not args.markdown:
            res = (f"{row['check_s']:.3f} {row['verdict']}" if row["imports"]
                   else "refused: " + why[:110])
            print(f"{row['name']:26} {row['nodes']:>9} {row['variables']:>5} "
                  f"{row['import_s']:>8.3f}  {res}", flush=True)
    if args.markdown:
        print("| graph | kind | nodes | variables | imports? | import s | `check G G` s | "
              "verdict / first refusal |")
        print("|---|---|---:|---:|---|---:|---:|---|")
        for r in rows:
            res = r["verdict"] if r["imports"] else r["refusal"].replace("|", "\\|")
            chk = f"{r['check_s']:.3f}" if r["imports"] else "-"
            print(f"| {r['name']} | {r['kind']} | {r['nodes']} | {r['variables']} | "
                  f"{'yes' if r['imports'] else 'no'} | {r['import_s']:.3f} | {chk} | {res} |")
    n = sum(r["imports"] for r in rows)
    print(f"\n{n} of {len(rows)} graphs import; "
          f"{sum(r['verdict'] == 'sound' for r in rows)} self-check sound")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="import repetitions (median)")
    ap.add_argument("--timeout", type=float, default=60.0, help="checker timeout, seconds")
    ap.add_argument("--synthetic", type=int, nargs="*", default=None, metavar="N",
                    help="time import of synthetic chains of about N nodes against protobuf's "
                         "parse (default 10000 50000) instead of the corpus")
    ap.add_argument("--graph", action="append", default=[], metavar="FILE",
                    help="with --synthetic: also time this binary graph (.pb or a SavedModel)")
    ap.add_argument("--baseline", default="", metavar="PYTHON",
                    help="with --synthetic: the interpreter of the implementation to compare "
                         "with (e.g. /work/main/.venv/bin/python)")
    ap.add_argument("--baseline-commit", default="", metavar="REV",
                    help="with --synthetic: compare with tfsem at this commit of the repository "
                         "(git archive, installed without dependencies into a temporary "
                         "directory), e.g. 2e1096e")
    ap.add_argument("--optimizer", type=int, nargs="*", default=None, metavar="K",
                    help="with --synthetic: also time graphs of K ResourceApplyAdam updates "
                         "(6K+8 nodes; default 1000)")
    ap.add_argument("--corpus-graph", action="append", default=None, metavar="NAME",
                    help="with --synthetic: also time this graph of the corpus, with its "
                         "manifest's fetches, targets and captures (default "
                         "keras_mobilenetv2_32)")
    ap.add_argument("--phases", action="store_true",
                    help="with --synthetic: also the CPU time of each phase of the import "
                         "(decode, inline, order, build, validate, race check, ...), in this "
                         "implementation and the baseline's")
    ap.add_argument("--corpus", action="store_true",
                    help="measure the corpus of real models (examples/tensorflow/corpus/)")
    ap.add_argument("--markdown", action="store_true", help="with --corpus: a Markdown table")
    ap.add_argument("--only", nargs="*", default=[], metavar="NAME",
                    help="with --corpus: only these graphs")
    args = ap.parse_args()
    if args.corpus:
        corpus(args)
        return
    if args.synthetic is not None:
        args.synthetic = args.synthetic or [10000, 50000]
        args.optimizer = [1000] if args.optimizer is None else args.optimizer
        args.corpus_graph = (["keras_mobilenetv2_32"] if args.corpus_graph is None
                             else args.corpus_graph)
        synthetic(args)
        return
    manifest = json.loads((CORPUS / "manifest.json").read_text())["graphs"]
    print(f"{'graph':28} {'nodes':>9} {'tfsem':>6} {'vars':>5} {'import s':>9} "
          f"{'self s':>7} {'self':>6} {'rc s':>7} {'rc':>6} {'outcomes s':>10}")
    for g in manifest:
        path = CORPUS / g["file"]
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            p = import_path(path, g["fetches"], list(g["feeds"]), g["targets"]).program
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        v = check_rewrite(p, program_to_json(p), "atomic", "outputs+state", args.timeout)
        self_s = time.perf_counter() - t
        q = get_pass("reduce-control").function(p)
        t = time.perf_counter()
        v2 = check_rewrite(p, program_to_json(q), "atomic", "outputs+state", args.timeout)
        rc_s = time.perf_counter() - t
        out_s = "-"
        if g.get("small"):
            init = {x: Tensor(np.zeros(ty.shape, dtype=ty.dtype)) for x, ty in p.variables.items()}
            feeds = {f: Tensor(np.ones(ty.shape, dtype=ty.dtype)) for f, ty in p.feeds.items()}
            t = time.perf_counter()
            outcome_set(p, feeds, init, "atomic", "outputs+state")
            out_s = f"{time.perf_counter() - t:.4f}"
        nodes = f"{g['nodes']}+{g['function_nodes']}"
        print(f"{g['file']:28} {nodes:>9} {len(p.nodes):>6} {len(p.variables):>5} "
              f"{statistics.median(times):>9.4f} {self_s:>7.3f} {v.verdict:>6} "
              f"{rc_s:>7.3f} {v2.verdict:>6} {out_s:>10}")


if __name__ == "__main__":
    main()
