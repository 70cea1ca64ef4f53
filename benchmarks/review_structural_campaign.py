"""Review 18: a differential campaign against the structural rule's products
by one and reshapes (docs/review-structural-speedups.md).

Random DAG programs over float32/float64/int32/bool feeds and two
variables, with optional nodes -- products and quotients by a one (several
kinds of "one": float32 and float64 scalars, shape [1] and [1, 1], 1 + ulp,
-1, an int32 one), Reshapes to the argument's own shape, Identity -- each in
the original, the rewrite, or both.  Every `proved` of
`structural_refinement` is compared with the enumerating oracle
(`outcome_set`) at σ of edge values (subnormals of both signs, signed zeros,
infinities, NaN, integer extremes, an uninitialized variable).

    python benchmarks/review_structural_campaign.py [N] [SEED] [--check] [--matmul]

prints the counts and every counterexample (exit 1 where there is one).
"""

from __future__ import annotations

import random
import sys

import numpy as np

from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

F32_EDGE = [1e-40, -1e-45, 1.1754944e-38, 0.0, -0.0, float("inf"), float("nan"),
            -3.4028235e38, 1.5, -2.0, 1.0, 2.0 ** -126]
F64_EDGE = [1e-310, -5e-324, 2.2250738585072014e-308, 0.0, -0.0, float("-inf"), float("nan"),
            1.7976931348623157e308, 1.0, -3.0, 1e-40, 1e-45]
INT_EDGE = [0, -7, 2 ** 31 - 1, -2 ** 31, 1]

ONES = [("float32", 1.0, "f32"), ("float32", 1.0, "f32"), ("float32", 1.0, "f32"),
        ("float64", 1.0, "f64"), ("float64", 1.0, "f64"),
        ("float32", [1.0], "f32"), ("float32", [[1.0]], "f32"),
        ("float32", 1.0000001, "f32"), ("float32", -1.0, "f32"), ("int32", 1, "i32"),
        ("float64", 1.0000000000000002, "f64")]

DT = {"f32": "float32", "f64": "float64", "i32": "int32", "b": "bool"}

UNARY_FLOAT = ["Neg", "Relu", "Abs", "Square", "Square.ftz", "Sqrt.ftz", "Identity",
               "Reshape", "Tile", "ExpandDims", "Sqrt"]
BINARY_FLOAT = ["Add", "Add.ftz", "Sub", "Sub.ftz", "Mul", "Mul.ftz", "RealDiv", "RealDiv.ftz",
                "Max.ftz", "Min.ftz", "Max", "SquaredDifference.ftz"]


#: MatMul in the generated programs (TensorFlow's kernel evaluates it: slower)
MATMUL = False


def _gen(rng: random.Random):
    """(template nodes, outputs, writes): template nodes may be marked
    optional ("opt": kind); values are (name, dtype kind, shape)."""
    nodes = [{"name": "vx", "op": "Var", "var": "x"}, {"name": "vy", "op": "Var", "var": "y"},
             {"name": "rx", "op": "Read", "inputs": ["vx"]},
             {"name": "ry", "op": "Read", "inputs": ["vy"]},
             {"name": "c32", "op": "Const", "value": {"dtype": "float32",
                                                      "value": [1.5, -0.0, 3e38, 2.0]}},
             {"name": "cs32", "op": "Const", "value": {"dtype": "float32",
                                                       "value": [1e-40, 1.0, 0.0, 2.0]}},
             {"name": "c64", "op": "Const", "value": {"dtype": "float64",
                                                      "value": [1e-300, 1.0, -0.0, 7.0]}}]
    vals = [("rx", "f32", (4,)), ("ry", "f64", (4,)), ("$a", "f32", (4,)), ("$d", "f64", (4,)),
            ("$i", "i32", (4,)), ("$g", "b", (4,)), ("c32", "f32", (4,)), ("cs32", "f32", (4,)),
            ("c64", "f64", (4,))]
    k = 0

    def new(op, inputs, kind, vshape, opt=None, **attrs):
        nonlocal k
        k += 1
        name = f"n{k}"
        node = {"name": name, "op": op, "inputs": inputs, **attrs}
        if opt:
            node["opt"] = opt
        nodes.append(node)
        vals.append((name, kind, vshape))
        return name, kind, vshape

    for _ in range(rng.randint(2, 7)):
        floats = [v for v in vals if v[1] in ("f32", "f64")]
        if len(vals) > 9 and vals[-1][1] in ("f32", "f64") and rng.random() < 0.6:
            floats = [vals[-1]]        # (a chain: the optional nodes stay live)
        r = rng.random()
        if r < 0.15:
            src = rng.choice([v for v in vals if v[1] in ("i32", "b")] + floats[:2])
            dst = rng.choice(["f32", "f64", "f32"])
            new("Cast", [src[0]], dst, src[2], DstT=DT[dst])
        elif r < 0.22 and MATMUL:
            x = rng.choice(floats)
            if x[2] != (2, 2):
                x = new("Reshape", [x[0]], x[1], (2, 2), shape=[2, 2])
            sq = [v for v in vals if v[1] == x[1] and v[2] == (2, 2)]
            y = rng.choice(sq)
            ins = [x[0], y[0]] if rng.random() < 0.5 else [y[0], x[0]]
            new("MatMul", ins, x[1], (2, 2), transpose_a=rng.random() < 0.3, transpose_b=False)
        elif r < 0.45:
            x = rng.choice(floats)
            op = rng.choice(UNARY_FLOAT)
            if op == "Reshape":
                shape = rng.choice([(2, 2), (4,), (1, 4)]) if len(x[2]) == 1 else (4,)
                new(op, [x[0]], x[1], shape, shape=list(shape))
            elif op == "Tile":
                if len(x[2]) == 1:
                    new(op, [x[0]], x[1], (4 * 1,), multiples=[1])
                else:
                    new(op, [x[0]], x[1], x[2], multiples=[1] * len(x[2]))
            elif op == "ExpandDims":
                new(op, [x[0]], x[1], (1, *x[2]), axis=0)
            else:
                new(op, [x[0]], x[1], x[2])
        elif r < 0.75:
            x = rng.choice(floats)
            same = [v for v in vals if v[1] == x[1] and v[2] == x[2]]
            y = rng.choice(same if rng.random() < 0.9 else
                           [v for v in vals if v[1] in ("f32", "f64")])
            new(rng.choice(BINARY_FLOAT), [x[0], y[0]], x[1], x[2])
        else:
            # an optional product / quotient by a one, or a Reshape to its own shape
            x = rng.choice(floats)
            kind = rng.random()
            if kind < 0.7:
                dtype, value, _ = rng.choice(ONES)
                k += 1
                one = f"one{k}"
                nodes.append({"name": one, "op": "Const",
                              "value": {"dtype": dtype, "value": value}})
                op = rng.choice(["Mul.ftz", "Mul.ftz", "RealDiv.ftz", "Mul"])
                ins = [one, x[0]] if op.startswith("Mul") and rng.random() < 0.4 else [x[0], one]
                new(op, ins, x[1], x[2], opt="by-one")
            elif kind < 0.9:
                new("Reshape", [x[0]], x[1], x[2], opt="reshape", shape=list(x[2]))
            else:
                new("Identity", [x[0]], x[1], x[2], opt="identity")
    floats = [v for v in vals[9:] if v[1] in ("f32", "f64")] or [vals[0]]
    outputs = {"o": floats[-1][0]}
    if len(floats) > 1 and rng.random() < 0.5:
        outputs["p"] = rng.choice(floats[:-1])[0]
    writes = []
    for var, kind in (("vx", "f32"), ("vy", "f64")):
        cand = [v for v in vals[9:] if v[1] == kind and v[2] == (4,)]
        if cand and rng.random() < 0.6:
            writes.append((var, rng.choice(cand)[0]))
    return nodes, outputs, writes


def _instance(nodes, outputs, writes, keep):
    """The program with the optional nodes in `keep` (the others bypassed)."""
    alias: dict[str, str] = {}
    out = []
    for n in nodes:
        n = dict(n)
        n["inputs"] = [alias.get(i, i) for i in n.get("inputs", [])]
        if not n.get("inputs"):
            n.pop("inputs", None)
        opt = n.pop("opt", None)
        if opt and n["name"] not in keep:
            x = n["inputs"][0]
            if opt == "by-one" and n["op"].startswith("Mul") and n["inputs"][0].startswith("one"):
                x = n["inputs"][1]
            alias[n["name"]] = x
            continue
        out.append(n)

    def node_of(v):
        v = alias.get(v, v)
        if v.startswith("$"):       # (a feed is no node: through an Identity)
            out.append({"name": f"id{len(out)}", "op": "Identity", "inputs": [v]})
            return out[-1]["name"]
        return v
    for j, (var, v) in enumerate(writes):
        out.append({"name": f"w{j}", "op": "Write", "inputs": [var, node_of(v), "^rx", "^ry"]})
    outs = {o: node_of(v) for o, v in outputs.items()}
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "float32", "shape": [4]},
                      "y": {"dtype": "float64", "shape": [4]}},
        "feeds": {"a": {"dtype": "float32", "shape": [4]}, "d": {"dtype": "float64", "shape": [4]},
                  "i": {"dtype": "int32", "shape": [4]}, "g": {"dtype": "bool", "shape": [4]}},
        "nodes": out, "outputs": outs})


def sigmas(rng: random.Random, n: int = 6):
    for s in range(n):
        f32 = np.array([F32_EDGE[(s * 3 + j) % len(F32_EDGE)] for j in range(4)], np.float32)
        f64 = np.array([F64_EDGE[(s * 5 + j) % len(F64_EDGE)] for j in range(4)], np.float64)
        x32 = np.array([F32_EDGE[(s * 7 + 2 * j + 1) % len(F32_EDGE)] for j in range(4)],
                       np.float32)
        y64 = np.array([F64_EDGE[(s * 3 + 2 * j + 1) % len(F64_EDGE)] for j in range(4)],
                       np.float64)
        ints = np.array([INT_EDGE[(s + j) % len(INT_EDGE)] for j in range(4)], np.int32)
        feeds = {"a": Tensor(f32), "d": Tensor(f64), "i": Tensor(ints),
                 "g": Tensor(np.array([1, 0, s % 2, 1], bool))}
        init = {"x": Tensor(x32) if s % 3 else Error(UNINITIALIZED),
                "y": Tensor(y64) if s % 4 != 1 else Error(UNINITIALIZED)}
        yield feeds, init


def _live(p) -> set[str]:
    """The nodes the outputs and the Writes depend on."""
    todo = [port.node for port in p.outputs.values()] + [
        n.name for n in p.nodes if n.op in ("Write", "Assign")]
    seen: set[str] = set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        todo.extend(p.predecessors(x))
    return seen


def new_outcome(p, q, semantics, observe, rng):
    for feeds, init in sigmas(rng):
        ours = outcome_set(p, feeds, init, semantics, observe)
        theirs = outcome_set(q, feeds, init, semantics, observe)
        for o, _ in theirs.items():
            if o not in ours:
                return feeds, init, o
    return None


STATS: dict[str, int] = {}
STATS.update({k: 0 for k in ("proved, a product by one differs", "proved, a Reshape differs",
                             "sampled unproved",
                             "sampled unproved with a new outcome (the oracle tells)")})


def run(n: int, seed: int, check: bool = False) -> tuple[int, int, list]:
    """`check`: `check_rewrite`'s verdict (structural rule, then the
    engines, 10 s each) instead of the rule alone; every `sound` and every
    `unsound` is compared with the oracle."""
    rng = random.Random(seed)
    proved = checked = 0
    bad = []
    for _ in range(n):
        nodes, outputs, writes = _gen(rng)
        opts = [x["name"] for x in nodes if x.get("opt")]
        if not opts:
            continue
        keep_p = {o for o in opts if rng.random() < 0.5}
        keep_q = {o for o in opts if rng.random() < 0.5}
        if keep_p == keep_q:
            keep_q ^= {rng.choice(opts)}
        p = _instance(nodes, outputs, writes, keep_p)
        q = _instance(nodes, outputs, writes, keep_q)
        semantics = rng.choice(["atomic", "decomposed"])
        observe = rng.choice(["outputs", "outputs+state"])
        if check:
            from tfsem.checking import check_rewrite
            v = check_rewrite(p, q, semantics, observe, 10.0, backends=False)
            checked += 1
            STATS["verdict " + v.verdict] = STATS.get("verdict " + v.verdict, 0) + 1
            if v.verdict in ("sound", "unsound"):
                w = new_outcome(p, q, semantics, observe, rng)
                if v.verdict == "sound" and w is not None:
                    bad.append(("false sound", v.reason, nodes, outputs, writes, keep_p, keep_q,
                                semantics, observe, w))
                if v.verdict == "sound":
                    proved += 1
            continue
        try:
            r = structural_refinement(p, q, semantics, observe)
        except Exception as exc:      # the rule must not fail either
            bad.append(("rule failed", repr(exc), nodes, keep_p, keep_q))
            continue
        checked += 1
        differ = {x["name"]: x["opt"] for x in nodes if x.get("opt")
                  and (x["name"] in keep_p) != (x["name"] in keep_q)}
        if r.proved and "by-one" in differ.values():
            STATS["proved, a product by one differs"] += 1
            live = _live(p) | _live(q)
            if any(d in live for d, kind in differ.items() if kind == "by-one"):
                live_key = "proved, a live product by one differs"
                STATS[live_key] = STATS.get(live_key, 0) + 1
                ops = {n.name: n.op for n in (*p.nodes, *q.nodes)}
                for d, kind in differ.items():
                    if kind == "by-one" and d in live:
                        STATS[f"  live {ops[d]}"] = STATS.get(f"  live {ops[d]}", 0) + 1
        if r.proved and "reshape" in differ.values():
            STATS["proved, a Reshape differs"] += 1
        if not r.proved and rng.random() < 0.1:
            STATS["sampled unproved"] += 1
            if new_outcome(p, q, semantics, observe, rng) is not None:
                STATS["sampled unproved with a new outcome (the oracle tells)"] += 1
        if r.proved and any(x["op"] == "MatMul" for x in nodes):
            STATS["proved with a MatMul"] = STATS.get("proved with a MatMul", 0) + 1
        if r.proved:
            proved += 1
            w = new_outcome(p, q, semantics, observe, rng)
            if w is not None:
                bad.append(("false proof", r.reason, nodes, outputs, writes, keep_p, keep_q,
                            semantics, observe, w))
    return checked, proved, bad


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 18
    MATMUL = "--matmul" in sys.argv
    checked, proved, bad = run(n, seed, check="--check" in sys.argv)
    print(f"pairs {checked}, proved {proved}, counterexamples {len(bad)}", STATS)
    for b in bad[:10]:
        print(b)
    sys.exit(1 if bad else 0)
