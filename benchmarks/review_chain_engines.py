"""Outcome sets of two control-flow engines, set for set, on generated programs.

The review of the control-flow engine's chain (docs/review-demand-and-chain.md)
compares the engine of one tree with the engine of another on thousands of
generated control-flow programs.  Three steps, each its own process:

    python benchmarks/review_chain_engines.py generate CASES.jsonl --count 3000
    TFSEM_TREE=/tmp/imp_base python benchmarks/review_chain_engines.py run CASES.jsonl BASE.jsonl
    TFSEM_TREE=/tmp/imp_new  python benchmarks/review_chain_engines.py run CASES.jsonl NEW.jsonl
    python benchmarks/review_chain_engines.py compare BASE.jsonl NEW.jsonl

`TFSEM_TREE` names a folder holding a `tfsem` package (a tree of another
commit: a folder `tfsem/` whose entries link to that tree's `tfsem/*`,
`oracle/`, `checking/`, ...); without it the installed tfsem runs.

The programs (`generate`): the fuzzers' control-flow generator
(generators/control_flow.py: conds, loops, stacks, plain and racing
accesses, trip counts from σ that may reach the iteration bound) and this
file's own `nested` programs: loops inside loops (an inner loop's trip
count from the outer counter or a constant Enter), variables' handles
through a chain of constant Enters, Reads and Assign-f in the inner and
outer bodies, a cond inside a body (a dead branch in the iterations whose
predicate is false), a TensorList accumulated by a loop (EmptyTensorList,
TensorListPushBack, TensorListStack/Length after the Exit), NextIteration
with control inputs, an inner Exit's value and its control edges used in
the outer body, and trip counts from σ past the iteration bound.
"""

from __future__ import annotations

import os
import sys

if os.environ.get("TFSEM_TREE"):
    # (the tree named there, not the editable install's finder)
    sys.meta_path[:] = [f for f in sys.meta_path
                        if "editable" not in (getattr(f, "__module__", "") or "").lower()
                        and "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, os.environ["TFSEM_TREE"])

import argparse   # noqa: E402
import json       # noqa: E402
import time       # noqa: E402

SEMANTICS = ("atomic", "decomposed")
OBSERVE = ("outputs+state", "outputs")


# ---------------------------------------------------------------------------
# generate / run / compare


def _hypothesis_programs(count: int, seed: int) -> list[dict]:
    """Programs of generators/control_flow.py's strategies, drawn with a
    fixed seed (Hypothesis derandomized)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tfsem.generators.control_flow import control_flow_programs
    from tfsem.oracle.jsonio import program_to_json

    out: list[dict] = []
    strategy = st.one_of(
        control_flow_programs(max_blocks=3),
        control_flow_programs(max_blocks=3, kinds=("loop",), others=("plain", "race", "loop")),
        control_flow_programs(max_blocks=3, kinds=("loop", "cond", "stack"),
                              others=("loop", "cond", "stack", "plain"), stacks=True),
        control_flow_programs(max_blocks=2, invariants=True, observe_state=False))

    @settings(max_examples=count, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(strategy)
    def collect(p):
        out.append(program_to_json(p))

    collect()
    return out


def generate(path: str, count: int, seed: int) -> None:
    from tfsem.generators.nested_loops import nested_program
    from tfsem.generators.strategies import random_inputs
    from tfsem.oracle.jsonio import program_from_json

    programs = [("nested", nested_program(seed * 100000 + i)) for i in range(count // 2)]
    programs += [("hypothesis", p) for p in _hypothesis_programs(count - count // 2, seed)]
    with open(path, "w") as f:
        for i, (origin, raw) in enumerate(programs):
            try:
                p = program_from_json(raw)
            except Exception as exc:   # (a generator bug: reported, not compared)
                print(f"case {i} ({origin}): invalid: {exc}", file=sys.stderr)
                continue
            for j in range(2):
                feeds, init = random_inputs(p, seed * 1000003 + i * 7 + j, edge_p=0.1)
                f.write(json.dumps({
                    "id": f"{i}.{j}", "origin": origin, "program": raw,
                    "feeds": {k: _value(v) for k, v in feeds.items()},
                    "init": {k: _value(v) for k, v in init.items()},
                    "semantics": SEMANTICS[(i + j) % 2], "observe": OBSERVE[(i // 2 + j) % 2],
                    "max_iterations": (3, 4, 16)[(i + j) % 3]}) + "\n")


def _value(v):
    from tfsem.oracle.values import value_to_json
    return value_to_json(v)


def run(cases: str, path: str, seconds: float, start: int = 0) -> None:
    from tfsem.oracle.budget import BudgetExceeded
    from tfsem.oracle.controlflow import LoopBoundExceeded
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.jsonio import decode_inputs, program_from_json

    with open(cases) as f, open(path, "w") as out:
        for k, line in enumerate(f):
            if k < start:
                continue
            case = json.loads(line)
            p = program_from_json(case["program"])
            feeds, init = decode_inputs(p, case["feeds"], case["init"])
            started = time.monotonic()
            try:
                got = outcome_set(p, feeds, init, case["semantics"], case["observe"],
                                  max_seconds=seconds, max_iterations=case["max_iterations"])
                result = {"status": "ok", "outcomes": sorted(
                    json.dumps(o.to_json(), sort_keys=True) for o in got)}
            except LoopBoundExceeded:
                result = {"status": "bound"}
            except BudgetExceeded as exc:
                result = {"status": "budget", "why": str(exc)[:80]}
            except Exception as exc:   # (compared too: both should fail alike)
                result = {"status": "error", "why": f"{type(exc).__name__}: {str(exc)[:200]}"}
            result["id"] = case["id"]
            result["seconds"] = round(time.monotonic() - started, 4)
            out.write(json.dumps(result) + "\n")
            out.flush()


def compare(a: str, b: str) -> int:
    left = {r["id"]: r for path in a.split(",") for r in map(json.loads, open(path))}
    right = {r["id"]: r for path in b.split(",") for r in map(json.loads, open(path))}
    both = sorted(set(left) & set(right), key=lambda k: tuple(map(int, k.split("."))))
    counts: dict[str, int] = {}
    bad = []
    ta = tb = 0.0
    for k in both:
        x, y = left[k], right[k]
        if x["status"] == "ok" and y["status"] == "ok":
            ta += x["seconds"]
            tb += y["seconds"]
        if x["status"] == y["status"] == "budget":
            counts["both budget"] = counts.get("both budget", 0) + 1
            continue
        if "budget" in (x["status"], y["status"]):
            counts["one budget"] = counts.get("one budget", 0) + 1
            continue
        same = x["status"] == y["status"] and x.get("outcomes") == y.get("outcomes") and \
            (x["status"] != "error" or x["why"] == y["why"])
        key = f"{x['status']} same" if same else "DIFFERENT"
        counts[key] = counts.get(key, 0) + 1
        if not same:
            bad.append(k)
    print(json.dumps({"cases": len(both), **counts}, indent=1))
    print(f"seconds where both finished: {ta:.1f} vs {tb:.1f}")
    for k in bad[:20]:
        print("DIFFERENT", k, left[k].get("status"), right[k].get("status"),
              left[k].get("why", ""), right[k].get("why", ""))
        if left[k].get("outcomes") is not None and right[k].get("outcomes") is not None:
            lo, ro = set(left[k]["outcomes"]), set(right[k]["outcomes"])
            print("   only first:", sorted(lo - ro)[:3])
            print("   only second:", sorted(ro - lo)[:3])
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("cases")
    g.add_argument("--count", type=int, default=2000)
    g.add_argument("--seed", type=int, default=23)
    r = sub.add_parser("run")
    r.add_argument("cases")
    r.add_argument("out")
    r.add_argument("--seconds", type=float, default=5.0)
    r.add_argument("--start", type=int, default=0, help="skip the first START cases")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "generate":
        generate(args.cases, args.count, args.seed)
        return 0
    if args.cmd == "run":
        run(args.cases, args.out, args.seconds, args.start)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
