"""Replay the `unsound` findings of a `tfsem fuzz --target grappler[:OPT]`
campaign on TensorFlow's runtime (needs TensorFlow): the triage behind
docs/grappler-findings.md section 4.1.

    python tests/cases/tensorflow/replay_campaign_findings.py DIR [--json FILE]
    python tests/cases/tensorflow/replay_campaign_findings.py DIR --case ID NAME --note TEXT

DIR is a campaign's `--out` folder.  Each finding of its store holds the
GraphDef Grappler was given (the exported program, placed on the CPU) and
the one Grappler wrote (`detail.graphdef`), and the verdict's counterexample
(σ, the rewrite's outcome, the original's outcomes).  Both GraphDefs are run
at σ, each in a session with Grappler and the classic graph optimizer off
(backends.tensorflow.GraphRunner, optimize=False): the optimized graph, and
the original with the optimizer off.  Per finding:

- `confirmed`: TensorFlow's optimized graph gives the counterexample's
  outcome, the original one of the original's outcomes, and they differ:
  a real difference of TensorFlow's runtime;
- `same on TensorFlow`: the two graphs give the same outcome on TensorFlow:
  tfsem's verdict is not what TensorFlow does (a model bug, or a difference
  the runtime does not show);
- `differs otherwise`: TensorFlow's graphs differ, but not with tfsem's bits;
- `run failed`: TensorFlow fails a run (the reason is given).

It also names the rewrite (the ops Grappler removed and added) and σ's
feeds, and prints one Markdown row per finding.  `--case ID NAME` writes
finding ID, when confirmed, as the tfsem.case/1 file NAME.json beside this
script: its original and rewritten programs with the counterexample's feeds
made constants (so that the check meets the σ where the two differ), expect
unsound, `--note` (with the TensorFlow version) as its note.
"""

from __future__ import annotations

import argparse
import collections
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np


def _outcome(data: dict, observe: str):
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import value_from_json
    outs = {k: value_from_json(v) for k, v in data.get("outputs", {}).items()}
    state = {k: value_from_json(v) for k, v in (data.get("state") or {}).items()}
    return make_outcome(outs, state, observe)


def _graph_def(text: str):
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2
    return text_format.Parse(text, graph_pb2.GraphDef())


def _ops(gd) -> collections.Counter:
    nodes = list(gd.node) + [n for f in gd.library.function for n in f.node_def]
    return collections.Counter(n.op for n in nodes)


def rewrite_of(before, after) -> str:
    a, b = _ops(before), _ops(after)
    removed, added = a - b, b - a
    changed = sorted(n.name for n in after.node
                     if any(m.name == n.name and m.op != n.op for m in before.node))
    parts = []
    if removed:
        parts.append("-" + ",".join(f"{k}" + (f"x{v}" if v > 1 else "") for k, v in sorted(removed.items())))
    if added:
        parts.append("+" + ",".join(f"{k}" + (f"x{v}" if v > 1 else "") for k, v in sorted(added.items())))
    if changed and not parts:
        parts.append(f"op changed on {', '.join(changed[:3])}")
    return " ".join(parts) or "(attributes or edges only)"


def _short(v) -> str:
    a = np.asarray(getattr(v, "array", v))
    if a.size <= 4:
        return str(a.tolist()) if a.ndim else str(a)
    vals = sorted({str(x) for x in a.reshape(-1)[:4096]})
    return f"{a.dtype}{list(a.shape)} of {{{', '.join(vals[:5])}{', ...' if len(vals) > 5 else ''}}}"


def replay_finding(row: sqlite3.Row) -> dict:
    from tfsem.backends.tensorflow import GraphRunner, TensorFlowRunError
    from tfsem.oracle.jsonio import program_from_json
    from tfsem.oracle.values import value_from_json

    verdict = json.loads(row["verdict"])
    detail = json.loads(row["detail"] or "{}").get("graphdef", {})
    cx = verdict.get("counterexample")
    out = {"id": row["id"], "pass": row["pass"], "message": row["message"],
           "nodes": row["nodes"], "optimizer": detail.get("optimizer")}
    if not cx or "original" not in detail or "optimized" not in detail:
        out["tensorflow"] = "not replayable (no counterexample or no GraphDefs stored)"
        return out
    observe = verdict.get("observe", row["observe"])
    before, after = _graph_def(detail["original"]), _graph_def(detail["optimized"])
    out["rewrite"] = rewrite_of(before, after)
    feeds = {k: value_from_json(v) for k, v in cx["feeds"].items()}
    init = {k: value_from_json(v) for k, v in cx["init"].items()}
    out["sigma"] = "; ".join(f"{k} = {_short(v)}" for k, v in sorted(feeds.items()))
    out["init"] = "; ".join(f"{k} = {_short(v)}" for k, v in sorted(init.items()))
    original = program_from_json(json.loads(row["original"]), validate=False)
    outputs = {o: o for o in original.outputs}
    names_after = {n.name for n in after.node}
    consumed = {i.lstrip("^").partition(":")[0] for n in before.node for i in n.input}
    targets = [n.name for n in before.node
               if n.name not in consumed and n.name not in outputs and n.name in names_after
               and n.op != "Placeholder"]
    want = _outcome(cx["outcome"], observe)
    originals = [_outcome(o, observe) for o in cx["original_outcomes"]]
    got = {}
    for label, gd in (("optimized", after), ("original", before)):
        try:
            with GraphRunner(gd, outputs, targets, optimize=False, observe=observe) as r:
                got[label] = r.run_once({k: v for k, v in feeds.items() if k in r.placeholders},
                                        init)
        except TensorFlowRunError as exc:
            out["tensorflow"] = "run failed"
            out["why"] = f"{label}: {str(exc)[:240]}"
            return out
    opt, orig = got["optimized"], got["original"]
    out["tf_optimized"], out["tf_original"] = opt.describe()[:200], orig.describe()[:200]
    out["tfsem_rewrite"], out["tfsem_original"] = want.describe()[:200], originals[0].describe()[:200]
    if opt == orig:
        out["tensorflow"] = "same on TensorFlow"
    elif opt == want and any(orig == o for o in originals):
        out["tensorflow"] = "confirmed"
    else:
        out["tensorflow"] = "differs otherwise"
    return out


def with_constant_feeds(program: dict, feeds: dict) -> dict:
    """The tfsem.program/1 JSON `program` with each feed read by an
    ``Identity($feed)`` node made a Const of its value in `feeds` (JSON
    values, as the store keeps σ)."""
    out = json.loads(json.dumps(program))
    used = set()
    for n in out["nodes"]:
        ins = n.get("inputs", [])
        feed_ins = [i for i in ins if i.startswith("$")]
        if not feed_ins:
            continue
        if n["op"] != "Identity" or len(ins) != 1:
            raise SystemExit(f"node {n['name']} reads a feed other than through Identity")
        feed, node_name = ins[0][1:], n["name"]
        n.clear()
        n.update(name=node_name, op="Const", value=feeds[feed])
        used.add(feed)
    out["feeds"] = {k: v for k, v in out["feeds"].items() if k not in used}
    return out


def with_constant_reads(program: dict, init: dict) -> dict:
    """`program` with each variable that is only read (Var, Read) made
    Consts of its initial value in `init`: its Read nodes become Consts,
    its Var node and its declaration go."""
    out = json.loads(json.dumps(program))
    var_of = {n["name"]: n["var"] for n in out["nodes"] if n.get("op") == "Var"}
    users = {}
    for n in out["nodes"]:
        for i in n.get("inputs", []):
            if i in var_of:
                users.setdefault(var_of[i], set()).add(n["op"])
    only_read = {v for v, ops in users.items() if ops == {"Read"} and v in init}
    nodes = []
    for n in out["nodes"]:
        if n.get("op") == "Var" and n["var"] in only_read:
            continue
        if n.get("op") == "Read" and var_of.get(n["inputs"][0]) in only_read:
            n = {"name": n["name"], "op": "Const", "value": init[var_of[n["inputs"][0]]]}
        nodes.append(n)
    out["nodes"] = nodes
    if isinstance(out.get("variables"), dict):
        out["variables"] = {k: v for k, v in out["variables"].items() if k not in only_read}
    return out


def write_case(con, finding: int, name: str, note: str, confirmed_elsewhere: bool = False,
               constant_init: bool = False) -> None:
    from tfsem.graphdef import grappler as g
    row = con.execute("SELECT * FROM findings WHERE id = ?", (finding,)).fetchone()
    r = replay_finding(row)
    if r["tensorflow"] != "confirmed" and not confirmed_elsewhere:
        raise SystemExit(f"finding {finding}: {r['tensorflow']}, not confirmed: no case")
    feeds = json.loads(row["verdict"])["counterexample"]["feeds"]
    how = (f"TensorFlow's runtime, Grappler off: the optimized graph gives {r['tf_optimized']}, "
           f"the original {r['tf_original']}" if r["tensorflow"] == "confirmed" else
           f"the session replay of the stored GraphDefs: {r['tensorflow']} ({r.get('why', '')[:160]}); "
           "confirmed otherwise, as the note says")
    case = {"format": "tfsem.case/1", "expect": "unsound", "semantics": row["semantics"],
            "observe": row["observe"],
            "note": f"{note} (TensorFlow {g.tensorflow().__version__}, CPU, oneDNN on; {how}.) "
                    "The counterexample's feeds are constants here, so that the check meets "
                    "the σ where the two differ.",
            "original": with_constant_feeds(json.loads(row["original"]), feeds),
            "rewritten": with_constant_feeds(json.loads(row["rewritten"]), feeds)}
    if constant_init:
        init = json.loads(row["verdict"])["counterexample"]["init"]
        case["original"] = with_constant_reads(case["original"], init)
        case["rewritten"] = with_constant_reads(case["rewritten"], init)
        case["note"] = case["note"].replace("The counterexample's feeds are constants here",
                                            "The counterexample's feeds and variables (only "
                                            "read) are constants here")
    path = Path(__file__).resolve().parent / f"{name}.json"
    path.write_text(json.dumps(case, indent=1) + "\n")
    print(f"wrote {path.name}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="a campaign folder (tfsem fuzz --out DIR)")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--case", nargs=2, default=None, metavar=("ID", "NAME"),
                    help="write finding ID, when confirmed, as the case NAME.json beside this script")
    ap.add_argument("--note", default="", help="the case's note (with --case)")
    ap.add_argument("--confirmed-elsewhere", action="store_true",
                    help="with --case: write it though the session replay did not confirm it "
                         "(the note must say how TensorFlow confirmed it)")
    ap.add_argument("--constant-init", action="store_true",
                    help="with --case: make the variables that are only read Consts of σ's "
                         "initial values too")
    args = ap.parse_args(argv)
    db = Path(args.dir) / "campaign.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    if args.case:
        write_case(con, int(args.case[0]), args.case[1], args.note, args.confirmed_elsewhere,
                   args.constant_init)
        return 0
    rows = con.execute("SELECT * FROM findings WHERE kind = 'unsound' ORDER BY id").fetchall()
    from tfsem.graphdef import grappler as g
    print(f"TensorFlow {g.tensorflow().__version__}; {db}: {len(rows)} unsound findings\n")
    print("| id | rewrite | σ (feeds) | init | TensorFlow | optimized (TensorFlow) | original (TensorFlow) |")
    print("|---|---|---|---|---|---|---|")
    results = []
    for row in rows:
        r = replay_finding(row)
        results.append(r)
        print(f"| {r['id']} | {r.get('rewrite', '')} | {r.get('sigma', '')[:160]} | "
              f"{r.get('init', '')[:120]} | {r['tensorflow']} | {r.get('tf_optimized', r.get('why', ''))} | "
              f"{r.get('tf_original', '')} |", flush=True)
    counts = collections.Counter(r["tensorflow"] for r in results)
    print("\n" + ", ".join(f"{k}: {v}" for k, v in counts.most_common()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
