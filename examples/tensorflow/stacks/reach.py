"""How often stack_cases' programs give Grappler's stack-push removal
something to do.

    python examples/tensorflow/stacks/reach.py [N] [--seed S]

Draws N programs of `tfsem.generators.control_flow:stack_cases` (default
300), hands each to Grappler's loop optimizer as the campaign target does
(campaigns/grappler_control_flow.py: outputs fetched, stateful nodes as
targets) and counts the programs with a push, those whose stack is popped,
and those where Grappler turned a push into an Identity.
"""

from __future__ import annotations

import argparse
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from tfsem.campaigns import grappler_control_flow as gcf
    from tfsem.generators.control_flow import stack_cases
    from tfsem.graphdef import grappler as gr
    from tfsem.graphdef.proto import decode

    counts = {"programs": 0, "with a push": 0, "popped": 0, "exported": 0,
              "a push removed": 0, "a push removed where max_size >= 0": 0}

    @settings(max_examples=args.n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(stack_cases(16), st.random_module())
    def one(case, _):
        p = case[0]
        counts["programs"] += 1
        pushes = {n.name for n in p.nodes if n.op == "StackPushV2"}
        if not pushes:
            return
        counts["with a push"] += 1
        counts["popped"] += any(n.op == "StackPopV2" for n in p.nodes)
        data, fetches, targets = gcf.exported(p)
        if data is None:
            return
        counts["exported"] += 1
        out = gr.run_grappler(data, fetches + targets, "loop").graph_def
        before = {n["name"]: n["op"] for n in decode("GraphDef", data)["node"]}
        removed = [n.name for n in out.node if n.op == "Identity"
                   and before.get(n.name) == "StackPushV2"]
        if removed:
            counts["a push removed"] += 1
            if int(p.node["st/max_size"].attrs["value"].array) >= 0:
                counts["a push removed where max_size >= 0"] += 1

    random.seed(args.seed)
    one()
    for k, v in counts.items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
