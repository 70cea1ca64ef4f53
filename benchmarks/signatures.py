"""Benchmark of the signature check's cost on graph import
(graphdef/signatures.py: every node of a graph against its op's OpDef).

    python benchmarks/signatures.py [--repeat 7] [--chain 20000] [--only NAME ...]

Per graph (the real-models corpus' concrete and graph kinds,
examples/tensorflow/corpus/, and a synthetic chain of `ReadVariableOp ->
AddV2` over 16 variables of `--chain` nodes, binary): the median time of
`import_graph` on the parsed graph with the check (the graph's own nodes
and the reached function bodies'), without it (the check replaced by a
no-op in the same process), alternated `--repeat` times, and their ratio;
and the median time of the check of the graph's own nodes alone
(`check_graph`)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from tfsem.graphdef import functions as fns
from tfsem.graphdef import importer as imp
from tfsem.graphdef import read_captures
from tfsem.graphdef.proto import encode, parse, parse_text
from tfsem.graphdef.signatures import check_graph

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"


def chain(n: int) -> dict:
    f32 = {"type": "DT_FLOAT"}
    nodes = []
    for k in range(16):
        nodes.append({"name": f"v{k}", "op": "VarHandleOp", "attr": {
            "dtype": f32, "shape": {"shape": {"dim": [{"size": 4}]}},
            "shared_name": {"s": f"v{k}".encode()}}})
        nodes.append({"name": f"r{k}", "op": "ReadVariableOp", "input": [f"v{k}"],
                      "attr": {"dtype": f32}})
    prev = "r0"
    for i in range(n):
        nodes.append({"name": f"a{i}", "op": "AddV2", "input": [prev, f"r{i % 16}"],
                      "attr": {"T": f32}})
        prev = f"a{i}"
    nodes.append({"name": "out", "op": "Identity", "input": [prev], "attr": {"T": f32}})
    return {"node": nodes}


def cases(args):
    manifest = json.loads((CORPUS / "manifest.json").read_text())["graphs"]
    for e in manifest:
        if e["kind"] == "saved_model" or (args.only and e["name"] not in args.only):
            continue
        path = CORPUS / e["file"]
        text = path.suffix == ".pbtxt"
        graph = parse_text("GraphDef", path.read_text()) if text else parse("GraphDef",
                                                                            path.read_bytes())
        caps = read_captures(CORPUS / e["captures"]) if e.get("captures") else None
        yield e["name"], graph, dict(fetches=e["fetches"], targets=e["targets"],
                                     captures=caps)
    if not args.only or "chain" in args.only:
        yield f"chain {args.chain}", parse("GraphDef", encode("GraphDef", chain(args.chain))), \
            dict(fetches=["out"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--chain", type=int, default=20000)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    real = imp.check_signatures
    print(f"{'graph':34} {'nodes':>6} {'with s':>9} {'without s':>9} {'ratio':>6} "
          f"{'check s':>9}")
    for name, graph, kw in cases(args):
        on, off, alone = [], [], []
        top: dict = {}
        fns.flatten(graph, None, top)
        for _ in range(args.repeat):
            for with_check in (True, False):
                imp.check_signatures = real if with_check else (lambda *a, **k: None)
                t = time.perf_counter()
                imp.import_graph(graph, **kw)
                (on if with_check else off).append(time.perf_counter() - t)
            imp.check_signatures = real
            t = time.perf_counter()
            check_graph(top)
            alone.append(time.perf_counter() - t)
        med = statistics.median
        print(f"{name:34} {len(top):6d} {med(on):9.4f} {med(off):9.4f} "
              f"{med(on) / med(off):6.3f} {med(alone):9.4f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
