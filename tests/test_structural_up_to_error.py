"""The structural rule's Assign values compared up to which error
(checking/structural.py, "Assign values up to which error", V≈): Grappler's
canonical order of commutative operands is proved where the swapped value
only reaches Assigns, even when both operands may be errors of different
kinds, and never where it reaches an output.

Differential: on generated pairs (random expressions over reads of
variables that may be uninitialized and integer divisions that fail on a
zero divisor, with random operand swaps, of commutative and of
non-commutative functions), every pair the rule proves is checked against
the concrete oracle's enumeration of both programs on a grid of σ that
makes every kind of error appear (variables uninitialized, zero divisors)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"
I64 = np.int64
VARIABLES = ("x", "y")
FEEDS = ("a", "b")
#: each variable uninitialized or holding a value; each feed a value with
#: and without a zero (FloorDiv's division-by-zero)
VAR_VALUES = (None, (2, -3))
FEED_VALUES = ((0, 1), (3, 5))
SETTINGS = [("atomic", "outputs+state"), ("decomposed", "outputs+state"),
            ("atomic", "outputs"), ("decomposed", "outputs")]


def program(nodes, outputs) -> object:
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {x: {"dtype": "int64", "shape": [2]} for x in VARIABLES},
        "feeds": {f: {"dtype": "int64", "shape": [2]} for f in FEEDS},
        "nodes": nodes, "outputs": outputs})


def sigmas():
    for xs in itertools.product(VAR_VALUES, repeat=len(VARIABLES)):
        for fs in itertools.product(FEED_VALUES, repeat=len(FEEDS)):
            init = {x: Error(UNINITIALIZED) if v is None else Tensor(np.array(v, I64))
                    for x, v in zip(VARIABLES, xs)}
            feeds = {f: Tensor(np.array(v, I64)) for f, v in zip(FEEDS, fs)}
            yield feeds, init


def oracle_new_outcome(p, q, semantics, observe):
    """A σ of the grid at which q has an outcome p lacks (None: none)."""
    for feeds, init in sigmas():
        ours = outcome_set(p, feeds, init, semantics, observe)
        theirs = outcome_set(q, feeds, init, semantics, observe)
        if any(o not in ours for o, _ in theirs.items()):
            return feeds, init
    return None


def random_pair(rng: random.Random):
    """(P, P', swapped ops): P computes a few binary functions of reads,
    feeds and earlier results, writes some of them to variables and fetches
    others; P' is P with the operands of some binary nodes swapped."""
    nodes = [{"name": f"h{x}", "op": "Var", "var": x} for x in VARIABLES]
    ports = []
    for k, x in enumerate(VARIABLES):
        nodes.append({"name": f"r{x}", "op": "Read", "inputs": [f"h{x}"]})
        ports.append(f"r{x}")
    ports += [f"${f}" for f in FEEDS]
    binary = []
    # half the time the shape that tells errors apart: a commutative function
    # of a read (uninitialized) and a division (division-by-zero)
    telling = rng.random() < 0.5
    for i in range(rng.randint(2, 5)):
        op = rng.choice(["Add", "Mul", "Add", "Mul", "SquaredDifference", "Sub", "FloorDiv",
                         "FloorDiv"])
        a, b = rng.sample(ports, 2)
        if telling and i == 0:
            op, a, b = "FloorDiv", "$a", "$b"
        elif telling and i == 1:
            op, a, b = rng.choice(["Add", "Mul"]), rng.choice(["rx", "ry"]), "f0"
        name = f"f{i}"
        nodes.append({"name": name, "op": op, "inputs": [a, b]})
        binary.append(name)
        ports.append(name)
    computed = [n for n in ports if n.startswith("f")]
    outputs = {}
    for j, x in enumerate(VARIABLES):
        if rng.random() < 0.7:
            value = rng.choice(computed)
            fn = rng.choice(["Snd", "Add"])
            # the write waits for the other variable's read half the time
            ctrl = [f"^r{VARIABLES[1 - j]}"] if rng.random() < 0.5 else []
            nodes.append({"name": f"w{x}", "op": "Assign", "fn": fn,
                          "inputs": [f"h{x}", value] + ctrl})
    for k in range(rng.randint(0, 2) if rng.random() < 0.5 else 1):
        outputs[f"o{k}"] = rng.choice(computed)
    ops = {n["name"]: n["op"] for n in nodes}
    swapped = [n for n in binary
               if rng.random() < (0.6 if ops[n] in ("Add", "Mul", "SquaredDifference") else 0.15)]
    nodes2 = [dict(n, inputs=n["inputs"][::-1]) if n["name"] in swapped else n for n in nodes]
    return program(nodes, outputs), program(nodes2, outputs), [ops[n] for n in swapped]


def test_generated_swaps_agree_with_the_oracle():
    rng = random.Random(2301)
    stats = {"pairs": 0, "proved": 0, "proved_up_to_error": 0, "refused_and_differs": 0,
             "proved_noncommutative_swap": 0}
    for i in range(1000 if NIGHTLY else 120):
        p, q, swapped = random_pair(rng)
        if p == q:
            continue
        semantics, observe = SETTINGS[i % 4]
        stats["pairs"] += 1
        r = structural_refinement(p, q, semantics, observe)
        if r.proved:
            stats["proved"] += 1
            stats["proved_up_to_error"] += r.stats.get("assigns_up_to_error", 0) > 0
            stats["proved_noncommutative_swap"] += any(op in ("Sub", "FloorDiv")
                                                       for op in swapped)
            witness = oracle_new_outcome(p, q, semantics, observe)
            assert witness is None, (
                f"the rule proved a pair whose rewrite has a new outcome at {witness}: "
                f"{r.reason}\nP = {p}\nP' = {q}")
        elif i % 3 == 0:
            stats["refused_and_differs"] += oracle_new_outcome(p, q, semantics, observe) is not None
    print(stats)
    # the relation fires, and the generator reaches pairs that really differ
    assert stats["proved_up_to_error"] >= 10, stats
    assert stats["refused_and_differs"] >= 5, stats


def swap_pair(into_output: bool):
    """v = Add(Read(x), FloorDiv($a, $b)): Read(x) is `uninitialized` when x
    is, FloorDiv `division-by-zero` when $b holds a zero, so Add(v...) in
    one order or the other passes on a different error.  The sum goes to an
    output, or only to a write of y."""
    def build(args):
        nodes = [{"name": "hx", "op": "Var", "var": "x"},
                 {"name": "hy", "op": "Var", "var": "y"},
                 {"name": "rx", "op": "Read", "inputs": ["hx"]},
                 {"name": "d", "op": "FloorDiv", "inputs": ["$a", "$b"]},
                 {"name": "s", "op": "Add", "inputs": args}]
        outputs = {"out": "s"} if into_output else {"out": "rx"}
        if not into_output:
            nodes.append({"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["hy", "s"]})
        return program(nodes, outputs)
    return build(["rx", "d"]), build(["d", "rx"])


def test_a_swap_that_only_reaches_an_assign_is_proved_up_to_which_error():
    p, q = swap_pair(into_output=False)
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    assert r.stats["assigns_up_to_error"] == 1
    assert "up to which error" in r.reason
    for semantics, observe in SETTINGS:
        assert oracle_new_outcome(p, q, semantics, observe) is None


def test_a_swap_that_reaches_an_output_is_not_proved_and_is_unsound():
    p, q = swap_pair(into_output=True)
    r = structural_refinement(p, q)
    assert not r.proved and "output 'out'" in r.reason
    # x uninitialized and a zero divisor: `uninitialized` against `division-by-zero`
    assert oracle_new_outcome(p, q, "atomic", "outputs+state") is not None
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unsound", v.describe()


def test_a_swap_of_a_function_that_does_not_commute_is_not_proved():
    nodes = [{"name": "hx", "op": "Var", "var": "x"}, {"name": "hy", "op": "Var", "var": "y"},
             {"name": "rx", "op": "Read", "inputs": ["hx"]}]
    sub = {"name": "s", "op": "Sub", "inputs": ["rx", "$a"]}
    write = {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["hy", "s"]}
    p = program(nodes + [sub, write], {"out": "rx"})
    q = program(nodes + [dict(sub, inputs=["$a", "rx"]), write], {"out": "rx"})
    assert not structural_refinement(p, q).proved
    assert oracle_new_outcome(p, q, "atomic", "outputs+state") is not None


def test_under_real_arithmetic_the_terms_stay_exact():
    p, q = swap_pair(into_output=False)
    assert not structural_refinement(p, q, real=True).proved


@pytest.mark.parametrize("name", ["SquaredDifference", "SquaredDifference.ftz"])
def test_squared_difference_commutes_bit_for_bit(name):
    """(E3) for SquaredDifference: (a - b)^2 and (b - a)^2 are the same bits
    on every pair of edge values of each dtype it has a kernel for (and the
    same error on the others)."""
    import ml_dtypes
    from tfsem.oracle import functions as fns
    from tfsem.oracle.values import DTYPES
    f = fns.get(name)
    for dtype in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8"):
        t = np.dtype(DTYPES[dtype])
        if t.kind in "iu":
            ii = np.iinfo(t)
            vals = np.array([0, 1, 3, ii.max, ii.min, ii.max // 2 + 1], t)
        else:
            fi = ml_dtypes.finfo(t)
            vals = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -3.5, 0.1], np.float64).astype(t)
            vals = np.concatenate([vals, np.array([fi.max, fi.min, fi.tiny, fi.smallest_subnormal,
                                                   -fi.smallest_subnormal], t)])
        a = np.repeat(vals, vals.size)
        b = np.tile(vals, vals.size)
        (x,) = f.apply([Tensor(a), Tensor(b)])
        (y,) = f.apply([Tensor(b), Tensor(a)])
        assert type(x) is type(y)
        if isinstance(x, Tensor):
            assert x == y, (name, dtype)    # SPEC equality: bits, any NaN equals any NaN
        else:
            assert x == y
