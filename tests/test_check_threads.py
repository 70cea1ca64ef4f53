"""`check_rewrite` from several threads at once (checking/z3context.py: one
Z3 context per thread).

- Checks in three threads at once, ten rounds, in a child process (a crash
  in Z3 ends that process, not the test run): it exits 0, and every
  thread's verdicts are the ones the same checks give one after the other.
  (The tree before per-thread contexts crashed there within 30 rounds, 4
  times in 4; the nightly profile's 200 rounds are
  test_review_kernels_sigma_memo_round15.py's.)
- No term of a check in a thread comes from z3's main context: the corpus
  of cases (the symbolic path's element terms, guarded equalities, the
  solver, its minimization; each case again over the reals, and again
  with guarded equality by cases), programs on tensors too large for
  element terms (the generic element and the registry's encodings) and
  programs of functions with no encoding, checked in a thread while `z3.main_ctx` notes
  every call from a thread other than the main one.  The verdicts are the
  main thread's.
- The registry's element encodings, built in a thread's context, give
  numpy's values on the special values (the main thread's test of them is
  test_check_generic.py's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest
import z3
import z3.z3 as z3_impl

from tfsem.checking import check_rewrite
from tfsem.checking import encode
from tfsem.checking import generic as gen
from tfsem.checking.encode import _numeral, z3_const
from tfsem.checking.z3context import current
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.values import DTYPES, Tensor, edge_values

from test_check_commutative_opaque import pair
from test_check_generic import BIG, F32_SPECIAL, _same, feeds, prog

ROOT = Path(__file__).resolve().parent.parent
#: the checks of the child process: the σ-memory tests' original and its
#: three rewrites (each `unsound`, a counterexample minimized), a sound
#: rewrite (y + x), and cases of the corpus (a guarded equality, a proof, a refutation)
CHILD = r"""
import json, sys, threading
sys.path.insert(0, 'tests')
from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import load_case
from test_minimize_sigma_memo import P, REWRITES, _program
rounds, threads = int(sys.argv[1]), int(sys.argv[2])
jobs = [(name, P, q, 'atomic', 'outputs+state') for name, q in REWRITES.items()]
jobs.append(('y+x', P, _program([{'name': 'o', 'op': 'Add', 'inputs': ['ry', 'rx']}]),
             'atomic', 'outputs+state'))
for f in sys.argv[3:]:
    c = load_case(f)
    jobs.append((f, c.original, c.rewritten_json, c.semantics, c.observe))

def verdict(job):
    name, p, q, sem, obs = job
    v = check_rewrite(p, q, sem, obs, timeout=60, structural=False, backends=False,
                      classify=False)
    return [v.verdict, v.stats.get('path')]

alone = {job[0]: verdict(job) for job in jobs}
seen, errors = [], []
def worker(order):
    try:
        for job in order:
            seen.append((job[0], verdict(job)))
    except BaseException as exc:
        errors.append(repr(exc))
for _ in range(rounds):
    orders = [jobs[k:] + jobs[:k] for k in range(threads)]
    orders = [o if k % 2 == 0 else o[::-1] for k, o in enumerate(orders)]
    ts = [threading.Thread(target=worker, args=(o,)) for o in orders]
    [t.start() for t in ts]
    [t.join() for t in ts]
print(json.dumps({'alone': alone, 'seen': seen, 'errors': errors}))
"""
CASES = ["tests/cases/state_float_drop_add_zero.json", "tests/cases/alg_float_add_negzero.json",
         "tests/cases/alg_float_sub_self_vs_zero.json"]


def run_in_threads(rounds: int, threads: int = 3, timeout: float = 600) -> dict:
    """The child's verdicts: alone (one after the other, in its main thread)
    and seen (each check of each thread of each round)."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(rounds), str(threads), *CASES],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, TFSEM_SIGMA_MEMO="0"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_checks_in_three_threads_at_once_give_the_verdicts_of_one_after_the_other():
    out = run_in_threads(rounds=10)
    assert not out["errors"], out["errors"]
    jobs = len(out["alone"])
    assert len(out["seen"]) == 10 * 3 * jobs
    for name, verdict in out["seen"]:
        assert verdict == out["alone"][name], (name, verdict, out["alone"][name])
    # (the checks are the solver's: a crash there is what this guards)
    assert {v[1] for v in out["alone"].values()} == {"symbolic"}
    assert {v[0] for v in out["alone"].values()} == {"sound", "unsound"}


@pytest.fixture
def main_context_noted(monkeypatch):
    """`z3.main_ctx()` noting each call from a thread other than the main
    one (the stack that made it), and answering with that thread's context
    so that the check goes on as it would."""
    calls: list[str] = []
    main_ctx = z3_impl.main_ctx

    def noted():
        if threading.current_thread() is threading.main_thread():
            return main_ctx()
        calls.append("".join(traceback.format_stack(limit=6)[:-1]))
        return current().ctx

    monkeypatch.setattr(z3_impl, "main_ctx", noted)
    return calls


def in_a_thread(fn):
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            out["error"] = exc
    t = threading.Thread(target=run)
    t.start()
    t.join(600)
    assert not t.is_alive(), "the thread did not end"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _corpus_jobs() -> list[tuple]:
    jobs = []
    for f in sorted((ROOT / "tests" / "cases").glob("*.json")):
        c = load_case(f)
        for mode in ("exact", "real"):
            jobs.append((f"{f.name}:{mode}", c.original, c.rewritten_json, c.semantics,
                         c.observe, mode))
    return jobs


def _more_jobs() -> list[tuple]:
    """Large tensors (the generic element, the registry's encodings) and
    functions with no encoding (uninterpreted: the sort Val)."""
    f, fi = feeds("float32", (BIG,), "ab"), feeds("int32", (BIG,), "ab")
    even = feeds("float32", (2 * BIG,), "a")   # (Split halves it)
    pairs = {
        "abs of neg": ([P.apply("r", "Abs", "$a")],
                       [P.apply("n", "Neg", "$a"), P.apply("r", "Abs", "n")], f),
        "abs of neg, int32": ([P.apply("r", "Abs", "$a")],
                              [P.apply("n", "Neg", "$a"), P.apply("r", "Abs", "n")], fi),
        "square": ([P.apply("r", "Square", "$a")], [P.apply("r", "Mul", "$a", "$a")], f),
        "abs is not identity": ([P.apply("r", "Abs", "$a")], [P.apply("r", "Identity", "$a")], f),
        "division by a reciprocal": (
            [P.apply("r", "RealDiv", "$a", "$b")],
            [P.const("one", 1.0, dtype="float32"), P.apply("i", "RealDiv", "one", "$b"),
             P.apply("r", "Mul", "$a", "i")], f),
        "sqrt": ([P.apply("r", "Sqrt", "$a")],
                 [P.apply("s", "Sqrt", "$a"), P.apply("r", "Identity", "s")], f),
        "less, greater": ([P.apply("r", "Less", "$a", "$b")],
                          [P.apply("r", "Greater", "$b", "$a")], f),
        "less, less or equal": ([P.apply("r", "Less", "$a", "$b")],
                                [P.apply("r", "LessEqual", "$a", "$b")], fi),
        "max swapped (a tie of zeros)": ([P.apply("r", "Max", "$a", "$b")],
                                         [P.apply("r", "Max", "$b", "$a")], f),
        "flushing sub swapped": ([P.apply("r", "Sub.ftz", "$a", "$b")],
                                 [P.apply("r", "Sub.ftz", "$b", "$a")], f),
        "split, concat back": ([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:0", "s:1")],
                               [P.apply("r", "Identity", "$a")], even),
        "halves swapped": ([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:0", "s:1")],
                           [P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:1", "s:0")], even),
        "one element broadcast": ([P.apply("r", "Add", "$a", "$c")],
                                  [P.apply("r", "Add", "$c", "$a")],
                                  {**f, **feeds("float32", (1,), "c")}),
    }
    jobs = [(name, prog(a, fe), prog(b, fe), "atomic", "outputs+state", "exact")
            for name, (a, b, fe) in pairs.items()]
    for op in ("Add.ftz", "Sub.ftz"):
        p, q = pair(op, variable=True)
        jobs.append((f"{op} swapped, small", p, q, "atomic", "outputs+state", "exact"))
    return jobs


def _verdict(job) -> tuple:
    name, p, q, sem, obs, mode = job
    v = check_rewrite(p, q, sem, obs, 10, float_mode=mode, structural=False, backends=False,
                      classify=False)
    return v.verdict, v.stats.get("path"), "generic" in v.stats


@pytest.mark.parametrize("equality", ["split", "cases"])
def test_a_check_in_a_thread_makes_no_term_in_the_main_context(main_context_noted, equality,
                                                               monkeypatch):
    if any(fns.lookup(n) is None for n in ("Abs", "Square", "RealDiv", "Sqrt", "Less")):
        pytest.skip("the TensorFlow ops are not registered")
    if equality == "cases":
        # (guarded equality by cases even on small decision trees)
        monkeypatch.setattr(encode, "SPLIT_LEAVES", 0)
    jobs = _corpus_jobs() + _more_jobs()
    # (the main thread's verdicts first: z3's main context, as before threads)
    alone = {job[0]: _verdict(job) for job in jobs}
    assert not main_context_noted
    threaded = in_a_thread(lambda: {job[0]: _verdict(job) for job in jobs})
    assert not main_context_noted, main_context_noted[0]
    assert threaded == alone
    # (what the jobs reach: the element terms and the generic element, each
    # proving and refuting)
    kinds = set(alone.values())
    for generic in (False, True):
        assert ("sound", "symbolic", generic) in kinds and ("unsound", "symbolic", generic) in kinds


def test_the_registrys_encodings_built_in_a_thread_are_numpys(main_context_noted):
    names = [n for n in sorted(gen.EXTRA) if fns.lookup(n) is not None]
    if not names:
        pytest.skip("the TensorFlow ops are not registered")

    main = z3.main_ctx()

    def compare() -> int:
        enc = gen.GenericEncoder()
        assert enc.ctx is not main
        compared = 0
        for name in names:
            fn, op = fns.lookup(name), gen.EXTRA[name]
            for dtype in ("float32", "float16", "int32", "uint8"):
                values = F32_SPECIAL if dtype == "float32" else edge_values(dtype).tolist()
                conds = [[Tensor(np.array(c))] for c in (False, True)] if fn.n_in == 3 else [[]]
                for a in values:
                    for b in (values[::3] if fn.n_in >= 2 else [None]):
                        for cond in conds:
                            args = cond + [Tensor(np.array(a, DTYPES[dtype]))] + \
                                ([] if b is None else [Tensor(np.array(b, DTYPES[dtype]))])
                            (want,) = fn.apply(args)
                            if not isinstance(want, Tensor):
                                continue
                            z = [z3_const(x.array[()], x.dtype, enc.z3) for x in args]
                            given = args[0].dtype if fn.encoding.result is not None else dtype
                            try:
                                term = enc.scalar_op(op, given, z)
                            except ValueError:
                                continue   # no encoding on this dtype (the main test's too)
                            assert term.ctx is enc.ctx
                            got = _numeral(z3.simplify(term), want.dtype)
                            assert _same(got, want.array), (name, dtype, cond, a, b, got, want)
                            compared += 1
        return compared

    assert in_a_thread(compare) > 100
    assert not main_context_noted, main_context_noted[0]
