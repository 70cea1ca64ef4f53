"""Benchmark: verdicts on large tensors, the element-wise engine against the
generic-element engine (checking/generic.py), side by side in one run.

    python benchmarks/check_tensors.py [--sizes 16,4096,4097,100000,1000000]
                                       [--timeout 10] [--old-max 100000]
                                       [--widths 8,1100,16384]

For each element count n and each case, the checker runs twice on the same
pair: "old" is the element-wise engine alone (`generic.tensors("elementwise")`:
past 4,096 elements it falls back to concrete testing), "new" is the generic
element (`generic.tensors("generic")`).  The default (`auto`) is "old" up to
4,096 elements and "new" past them.
The old engine is not run above `--old-max` elements (its concrete fallback
runs outcome sets and batched numpy on whole tensors).

Cases (1-D tensors of n elements, feeds a, b, c):
* `commute-f32`   a + b  ->  b + a (float32): sound;
* `assoc-i64`     (a + b) + c  ->  a + (b + c) (int64): sound, needs the solver;
* `bcast-f32`     a * s + t -> t + s * a, s a scalar, t of shape (1,): sound;
* `twice-f32`     a * 2  ->  a + a (float32): sound, needs the solver;
* `assoc-f32`     the float32 reassociation: unsound;
* `one-elem-i64`  a + K  ->  a + K' with K' = K but one element: unsound.

A second table: the corpus's Keras MLP training steps (SGD, Adam) with the
hidden layer widened, checked against themselves with every node renamed.
"cannot-run": the check needed to run float MatMul concretely, which tfsem
does not model (`tfsem check` says `unknown`).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.checking.symbolic import MAX_ELEMENTS
from tfsem.oracle import program as P
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import Tensor
from tfsem.rewrites.edit import renamed as _renamed

SHORT = {"sound": "sound", "unsound": "unsound", "no-counterexample": "no-cex",
         "unknown": "unknown", "invalid": "invalid"}


def _feeds(dtype: str, n: int, names: str = "abc") -> dict:
    return {k: TensorType(dtype, (n,)) for k in names}


def _prog(nodes, feeds):
    return P.program(nodes, {"out": "r"}, (), feeds)


def cases(n: int):
    f32, i64 = _feeds("float32", n), _feeds("int64", n)
    yield "commute-f32", _prog([P.apply("r", "Add", "$a", "$b")], f32), \
        _prog([P.apply("r", "Add", "$b", "$a")], f32)
    yield "assoc-i64", _prog([P.apply("s", "Add", "$a", "$b"), P.apply("r", "Add", "s", "$c")], i64), \
        _prog([P.apply("s", "Add", "$b", "$c"), P.apply("r", "Add", "$a", "s")], i64)
    fb = {"a": TensorType("float32", (n,)), "b": TensorType("float32", ()),
          "c": TensorType("float32", (1,))}
    yield "bcast-f32", _prog([P.apply("s", "Mul", "$a", "$b"), P.apply("r", "Add", "s", "$c")], fb), \
        _prog([P.apply("s", "Mul", "$b", "$a"), P.apply("r", "Add", "$c", "s")], fb)
    yield "twice-f32", _prog([P.const("two", 2.0, dtype="float32"), P.apply("r", "Mul", "$a", "two")], f32), \
        _prog([P.apply("r", "Add", "$a", "$a")], f32)
    yield "assoc-f32", _prog([P.apply("s", "Add", "$a", "$b"), P.apply("r", "Add", "s", "$c")], f32), \
        _prog([P.apply("s", "Add", "$b", "$c"), P.apply("r", "Add", "$a", "s")], f32)
    base = np.arange(n, dtype=np.int64)
    changed = base.copy()
    changed[n // 2] += 1
    yield "one-elem-i64", \
        _prog([P.Node("k", "Const", (), {"value": Tensor(base)}), P.apply("r", "Add", "$a", "k")], i64), \
        _prog([P.Node("k", "Const", (), {"value": Tensor(changed)}), P.apply("r", "Add", "$a", "k")], i64)


def timed(mode: str, p, q, timeout: float) -> tuple[str, float]:
    started = time.monotonic()
    with gen.tensors(mode):
        try:
            v = check_rewrite(p, q, timeout=timeout, backends=False)
        except RuntimeError as exc:   # functions.CannotRun: `tfsem check` says unknown
            if "cannot run" not in str(exc):
                raise
            return "cannot-run", time.monotonic() - started
    return SHORT[v.verdict], time.monotonic() - started


def keras_steps(widths: list[int]):
    """The corpus's Keras training steps, hidden layer `width` wide, against
    themselves with every node renamed (the same program, not the same
    object: the search runs)."""
    try:
        from tfsem import graphdef
        from tfsem.oracle.jsonio import program_from_json, program_to_json
    except ImportError:
        return
    root = Path(__file__).resolve().parent.parent / "examples" / "tensorflow"
    for name in ("keras_mlp_sgd", "keras_mlp_adam"):
        path = root / f"{name}.pbtxt"
        if not path.exists():
            continue
        base = program_to_json(graphdef.load_program_or_graph(path))
        for width in widths:
            data = json.loads(json.dumps(base))
            for t in data["variables"].values():
                t["shape"] = [width if s == 8 else s for s in t["shape"]]
            p = program_from_json(data)
            yield f"{name} w={width}", max(math.prod(t.shape) for t in p.variables.values()), p, _renamed(p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="16,1024,4096,4097,100000,1000000")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--old-max", type=int, default=100_000)
    ap.add_argument("--widths", default="8,1100,16384",
                    help="hidden-layer widths of the Keras training steps")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"timeout {args.timeout:g} s per check; old = element-wise engine, new = generic "
          f"element (the default uses new past {MAX_ELEMENTS} elements)")
    print()
    print("| elements | case | old verdict | old s | new verdict | new s |")
    print("|---:|---|---|---:|---|---:|")
    for n in sizes:
        for name, p, q in cases(n):
            if n <= args.old_max:
                ov, ot = timed("elementwise", p, q, args.timeout)
                old = f"{ov} | {ot:.2f}"
            else:
                old = "(not run) | -"
            nv, nt = timed("generic", p, q, args.timeout)
            print(f"| {n:,} | {name} | {old} | {nv} | {nt:.2f} |", flush=True)
    print()
    print("Keras training steps (examples/tensorflow), renamed self-check; old = element-wise "
          "engine alone, new = default")
    print()
    print("| graph | largest tensor | old verdict | old s | new verdict | new s |")
    print("|---|---:|---|---:|---|---:|")
    for name, largest, p, q in keras_steps([int(w) for w in args.widths.split(",")]):
        ov, ot = timed("elementwise", p, q, args.timeout)
        nv, nt = timed("auto", p, q, args.timeout)
        print(f"| {name} | {largest:,} | {ov} | {ot:.2f} | {nv} | {nt:.2f} |", flush=True)


if __name__ == "__main__":
    main()
