"""Triage the findings of a stack-push-removal campaign on TensorFlow's runtime.

    python examples/tensorflow/stacks/triage.py CAMPAIGN_DIR [--json]

For each finding of `grappler-cf:loop` in CAMPAIGN_DIR/campaign.db: the
generated program exported (the GraphDef given to Grappler) and Grappler's
output are each run by TensorFlow's executor, with the session's own
optimizers off, from the finding's σ (its feeds and initial variables),
fetching the program's outputs and running its stateful nodes (the
campaign's targets: campaigns/grappler_control_flow.py).  The finding is
then one of:

* `failure-removed`: TensorFlow fails the original's step at a stack op
  (InvalidArgument "Stack[...] overflowed its max_size" or "has already been
  closed") and runs Grappler's output to an outcome: Grappler's stack-push
  removal turned a failing step into one that succeeds.  tfsem calls it
  unsound: a failed stack op fails the step, every fetch is its error
  (docs/stateful-ops.md, "Stacks");
* `not-a-tensorflow-graph`: TensorFlow refuses to load the original (the
  campaign's shrinking may make a program TensorFlow's type checks refuse,
  an int64 predicate of a Switch, say, which tfsem reads as a failed
  predicate and Grappler's dead-branch removal as false): no claim about
  TensorFlow is at stake;
* `miscompile`: both runs succeed with different outcomes;
* `other`: anything else (said as it is).

docs/grappler-control-flow.md, "Stack-push removal", has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys


def _run(graph, outputs, targets, feeds, init, observe):
    from tfsem.backends.tensorflow import GraphRunner, TensorFlowRunError
    try:
        with GraphRunner(graph, outputs, targets, optimize=False, observe=observe) as r:
            return True, r.run_once(feeds, init)
    except TensorFlowRunError as exc:
        return False, str(exc)


def triage_record(row: dict) -> dict:
    """The triage of one finding row of campaign.db (a dict of its columns)."""
    from google.protobuf import text_format

    from tfsem.campaigns import grappler_control_flow as gcf
    from tfsem.oracle.jsonio import program_from_json, value_from_json
    from tfsem.backends.tensorflow import tensorflow

    tf = tensorflow()
    original = program_from_json(json.loads(row["original"]))
    detail = json.loads(row["detail"] or "{}")
    optimized_text = (detail.get("graphdef") or {}).get("optimized")
    if optimized_text is None:
        return {"id": row["id"], "class": "other", "why": "Grappler's output was not kept"}
    after = text_format.Parse(optimized_text, tf.compat.v1.GraphDef())
    data, fetches, targets = gcf.exported(original)
    before = tf.compat.v1.GraphDef.FromString(data)
    feeds = {k: value_from_json(v) for k, v in json.loads(row["feeds"] or "{}").items()}
    init = {k: value_from_json(v) for k, v in json.loads(row["init"] or "{}").items()}
    outputs = {o: o for o in fetches}
    names = {n.name for n in after.node}
    ok0, r0 = _run(before, outputs, targets, feeds, init, row["observe"])
    ok1, r1 = _run(after, outputs, [t for t in targets if t in names], feeds, init, row["observe"])
    if not ok0 and ok1 and "Stack[" in r0:
        kind = "failure-removed"
    elif not ok0 and "cannot load the graph" in r0:
        kind = "not-a-tensorflow-graph"
    elif ok0 and ok1 and r0 != r1:
        kind = "miscompile"
    else:
        kind = "other"
    return {"id": row["id"], "class": kind, "cell": f"{row['semantics']}/{row['observe']}",
            "nodes": row["nodes"], "message": row["message"],
            "original on TensorFlow": r0 if not ok0 else repr(r0),
            "Grappler's output on TensorFlow": r1 if not ok1 else repr(r1),
            "tensorflow": tf.__version__}


def triage(directory: str) -> list[dict]:
    db = sqlite3.connect(os.path.join(directory, "campaign.db"))
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute(
        "SELECT * FROM findings WHERE pass = 'grappler-cf:loop' ORDER BY id")]
    return [triage_record(r) for r in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", help="the campaign folder (tfsem fuzz --out)")
    ap.add_argument("--json", action="store_true", help="print one JSON list")
    args = ap.parse_args(argv)
    results = triage(args.campaign)
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    for r in results:
        print(f"#{r['id']} {r['class']} [{r.get('cell', '')}] {r.get('message', r.get('why'))}")
        for k in ("original on TensorFlow", "Grappler's output on TensorFlow"):
            if k in r:
                print(f"    {k}: {r[k][:300]}")
    counts: dict[str, int] = {}
    for r in results:
        counts[r["class"]] = counts.get(r["class"], 0) + 1
    print("classes:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
