"""The reference semantics with control flow against an independent brute force.

Small generated programs: a Switch/Merge diamond around stateful ops, and a
counted loop with an AssignAdd in its body, each racing a stateful op outside
the conditional or loop.  The brute force below knows nothing of Switch,
Merge, frames or dead values: from the generator's own description it knows
which accesses run (those of the taken branch; the loop body n times), in
which order each thread runs them, and it enumerates every interleaving of
the threads' accesses (an Assign split into a read and a write in decomposed
mode).  Both modes; outcomes compared as sets.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import settings

from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.outcomes import make_outcome
from tfsem.oracle.semantics import reference_outcomes
from tfsem.oracle.values import Tensor

MODES = ("atomic", "decomposed")


def i64(v: int) -> Tensor:
    return Tensor(v, "int64")


# ---------------------------------------------------------------------------
# The brute force: threads of accesses, every interleaving


def interleavings(threads: list[list]) -> set[tuple]:
    """Every merge of the threads' sequences (each thread's order kept)."""
    out: set[tuple] = set()

    def go(pos: tuple[int, ...], acc: list) -> None:
        if all(p == len(t) for p, t in zip(pos, threads)):
            out.add(tuple(acc))
            return
        for k, t in enumerate(threads):
            if pos[k] < len(t):
                go(pos[:k] + (pos[k] + 1,) + pos[k + 1:], acc + [t[pos[k]]])

    go(tuple(0 for _ in threads), [])
    return out


def split(thread: list, mode: str) -> list:
    """Decomposed mode: ("assign", tag, fn, x, v) becomes a read and a write."""
    if mode == "atomic":
        return thread
    out = []
    for a in thread:
        if a[0] == "assign":
            out += [("assign-read",) + a[1:], ("assign-write",) + a[1:]]
        else:
            out.append(a)
    return out


def brute_outcomes(threads: list[list], init: dict[str, int], fixed: dict[str, object],
                   mode: str) -> set:
    """Actions: ("read", out, x) puts x's value on output `out`; ("assign",
    tag, fn, x, v) with fn "Add" or "Snd".  `fixed` outputs do not depend on
    the order."""
    results = set()
    for order in interleavings([split(t, mode) for t in threads]):
        vals = dict(init)
        outs = dict(fixed)
        held: dict[str, int] = {}
        for a in order:
            if a[0] == "read":
                outs[a[1]] = i64(vals[a[2]])
            elif a[0] == "assign":
                _, tag, fn, x, v = a
                vals[x] = vals[x] + v if fn == "Add" else v
            elif a[0] == "assign-read":
                held[a[1]] = vals[a[3]]
            else:
                _, tag, fn, x, v = a
                vals[x] = held.pop(tag) + v if fn == "Add" else v
        results.add(make_outcome(outs, {x: i64(v) for x, v in vals.items()}, "outputs+state"))
    return results


# ---------------------------------------------------------------------------
# Generated programs


def branch_ops(rng: random.Random, side: str, variables: list[str]) -> tuple[list[dict], list]:
    """A branch: an Assign (Add or Snd) or nothing, then a Read, each through
    the Switch's `side` port; the accesses it makes."""
    port = "1" if side == "t" else "0"
    nodes, acts = [], []
    x = rng.choice(variables)
    k = rng.randint(1, 9)
    nodes.append({"name": f"c_{side}", "op": "Identity", "inputs": [f"sk:{port}"]})
    prev = None
    if rng.random() < 0.8:
        fn = rng.choice(["Add", "Snd"])
        nodes.append({"name": f"k_{side}", "op": "Const", "value": k, "inputs": [f"^c_{side}"]})
        nodes.append({"name": f"a_{side}", "op": "Assign", "fn": fn,
                      "inputs": [f"s{x}:{port}", f"k_{side}"]})
        acts.append(("assign", f"a_{side}", fn, x, k))
        prev = f"a_{side}"
    y = rng.choice(variables)
    nodes.append({"name": f"r_{side}", "op": "Read",
                  "inputs": [f"s{y}:{port}"] + ([f"^{prev}"] if prev else [])})
    acts.append(("read", "m", y))
    return nodes, acts


def outside_op(rng: random.Random, variables: list[str]) -> tuple[list[dict], list]:
    x = rng.choice(variables)
    if rng.random() < 0.5:
        return ([{"name": "ov", "op": "Var", "var": x}, {"name": "or", "op": "Read", "inputs": ["ov"]}],
                [("read", "o", x)])
    k = rng.randint(1, 9)
    fn = rng.choice(["Add", "Snd"])
    return ([{"name": "ov", "op": "Var", "var": x}, {"name": "ok", "op": "Const", "value": k},
             {"name": "oa", "op": "Assign", "fn": fn, "inputs": ["ov", "ok"]}],
            [("assign", "oa", fn, x, k)])


def diamond(rng: random.Random):
    variables = ["x", "y"]
    nodes = [{"name": f"v{x}", "op": "Var", "var": x} for x in variables]
    nodes += [{"name": f"s{x}", "op": "Switch", "inputs": [f"v{x}", "$p"]} for x in variables]
    nodes += [{"name": "k", "op": "Const", "value": 0},
              {"name": "sk", "op": "Switch", "inputs": ["k", "$p"]}]
    t_nodes, t_acts = branch_ops(rng, "t", variables)
    f_nodes, f_acts = branch_ops(rng, "f", variables)
    o_nodes, o_acts = outside_op(rng, variables)
    nodes += t_nodes + f_nodes + o_nodes
    nodes.append({"name": "m", "op": "Merge", "inputs": ["r_f", "r_t"]})
    outputs = {"m": "m", "i": "m:1"}
    if o_acts[0][0] == "read":
        outputs["o"] = "or"
    raw = {"format": "tfsem.program/1", "variables": variables,
           "feeds": {"p": {"dtype": "bool", "shape": []}}, "nodes": nodes, "outputs": outputs}
    return program_from_json(raw), t_acts, f_acts, o_acts


def counted_loop(rng: random.Random):
    """i = 0; while i < n: x += k; i += 1 (the increment after the assign),
    with a stateful op outside the loop on x or y."""
    k = rng.randint(1, 5)
    fn = rng.choice(["Add", "Add", "Snd"])
    nodes = [
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enter", "op": "Enter", "frame_name": "loop", "inputs": ["i0"],
         "parallel_iterations": rng.choice([1, 10])},
        {"name": "hx", "op": "Enter", "frame_name": "loop", "is_constant": True, "inputs": ["vx"]},
        {"name": "lim", "op": "Enter", "frame_name": "loop", "is_constant": True, "inputs": ["$n"]},
        {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
        {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
        {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
        {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "kk", "op": "Const", "value": k, "inputs": ["^body"]},
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "inc", "op": "Assign", "fn": fn, "inputs": ["hx", "kk"]},
        {"name": "add", "op": "Add", "inputs": ["body", "one", "^inc"]},
        {"name": "next", "op": "NextIteration", "inputs": ["add"]},
        {"name": "exit", "op": "Exit", "inputs": ["sw"]},
    ]
    o_nodes, o_acts = outside_op(rng, ["x", "y"])
    nodes += o_nodes
    outputs = {"count": "exit"}
    if o_acts[0][0] == "read":
        outputs["o"] = "or"
    raw = {"format": "tfsem.program/1", "variables": ["x", "y"], "nodes": nodes, "outputs": outputs}
    return program_from_json(raw), ("assign", "inc", fn, "x", k), o_acts


#: 12 programs of each family per mode by default, 500 under the nightly profile
SEEDS = range(500 if settings.get_current_profile_name() == "nightly" else 12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", MODES)
def test_diamond_against_brute_force(seed, mode):
    rng = random.Random(seed)
    p, t_acts, f_acts, o_acts = diamond(rng)
    for pred, init in itertools.product((True, False), ({"x": 1, "y": 2}, {"x": 5, "y": 0})):
        taken = t_acts if pred else f_acts
        want = brute_outcomes([taken, o_acts], init, {"i": Tensor(int(pred), "int32")}, mode)
        got = reference_outcomes(p, {"p": Tensor(pred, "bool")},
                                 {x: i64(v) for x, v in init.items()}, mode)
        assert set(got) == want, (seed, mode, pred, init)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", MODES)
def test_counted_loop_against_brute_force(seed, mode):
    rng = random.Random(1000 + seed)
    p, body_act, o_acts = counted_loop(rng)
    init = {"x": 3, "y": 7}
    for n in (0, 1, 2, 3):
        # the body's accesses one per iteration, each with its own tag
        body = [body_act[:1] + (f"inc{j}",) + body_act[2:] for j in range(n)]
        want = brute_outcomes([body, o_acts], init, {"count": i64(max(n, 0))}, mode)
        got = reference_outcomes(p, {"n": i64(n)}, {x: i64(v) for x, v in init.items()}, mode)
        assert set(got) == want, (seed, mode, n)


def loop_in_a_branch(rng: random.Random):
    """if p: (while i < n: x op= k) else: nothing -- the loop's initial value
    comes through a Switch on p, so when p is false the whole loop is dead
    (its Exit sends a dead value out when the loop instance is done) and the
    Merge after it forwards the other branch's value."""
    p, body_act, o_acts = counted_loop(rng)
    raw_nodes = []
    raw = program_to_json(p)
    raw["feeds"] = {"p": {"dtype": "bool", "shape": []}}
    for n in raw["nodes"]:
        if n["name"] == "enter":
            n["inputs"] = ["gate:1"]
        raw_nodes.append(n)
    raw_nodes += [{"name": "gate", "op": "Switch", "inputs": ["i0", "$p"]},
                  {"name": "alt", "op": "Identity", "inputs": ["gate:0"]},
                  {"name": "alt_v", "op": "Const", "value": -1, "inputs": ["^alt"]},
                  {"name": "after", "op": "Merge", "inputs": ["exit", "alt_v"]}]
    raw["nodes"] = raw_nodes
    raw["outputs"]["count"] = "after"
    return program_from_json(raw), body_act, o_acts


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", MODES)
def test_loop_in_a_branch_against_brute_force(seed, mode):
    rng = random.Random(2000 + seed)
    p, body_act, o_acts = loop_in_a_branch(rng)
    init = {"x": 3, "y": 7}
    for pred, n in itertools.product((True, False), (0, 2)):
        trips = n if pred else 0
        body = [body_act[:1] + (f"inc{j}",) + body_act[2:] for j in range(trips)]
        want = brute_outcomes([body, o_acts], init, {"count": i64(n if pred else -1)}, mode)
        got = reference_outcomes(p, {"n": i64(n), "p": Tensor(pred, "bool")},
                                 {x: i64(v) for x, v in init.items()}, mode)
        assert set(got) == want, (seed, mode, pred, n)
