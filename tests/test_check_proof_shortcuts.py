"""Adversarial soundness review of the checker's proof shortcuts.

checking/structural.py (`sound` without exploring states when the rewrite
keeps the access skeleton) and checking/generic.py (one generic element for
large tensors) each turn a proof obligation into something cheaper; a bug in
either is a false `sound`.  Every pair below is UNSOUND by the concrete
oracle (`outcome_set` at an explicit σ: the rewrite has an outcome the
original lacks), and each test asserts both that, and that the shortcut (and
the checker as a whole) does not say `sound`.

The first group (Z3 symbol names built from user-chosen names) was a false
`sound` found by this review, fixed by `checking.encode.symbol`: every Z3
name is its kind and its parts written with `repr`, so no two names collide.
"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import decode_inputs, program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def program(nodes, outputs=None, variables=("x",), feeds=None):
    d = {"format": "tfsem.program/1", "variables": variables if isinstance(variables, dict)
         else list(variables), "nodes": nodes, "outputs": outputs or {}}
    if feeds:
        d["feeds"] = feeds
    return program_from_json(d)


def unsound_at(p, q, semantics="atomic", observe="outputs+state", feeds=None, init=None) -> bool:
    """Outcomes(P', σ) ⊄ Outcomes(P, σ) at the given σ (JSON values; a
    variable with no initial value starts uninitialized)."""
    fv, iv = decode_inputs(p, feeds or {}, init or {})
    for x in p.variables:
        iv.setdefault(x, Error(UNINITIALIZED))
    ours = outcome_set(p, fv, iv, semantics, observe)
    theirs = outcome_set(q, fv, iv, semantics, observe)
    return any(o not in ours for o, _ in theirs.items())


def var(name, x="x"):
    return {"name": name, "op": "Var", "var": x}


def read(name, handle, *controls):
    return {"name": name, "op": "Read", "inputs": [handle, *("^" + c for c in controls)]}


def const(name, value):
    return {"name": name, "op": "Const", "value": value}


def assign(name, handle, value, fn="Snd", *controls):
    node = {"name": name, "op": "Write" if fn == "Snd" else "Assign",
            "inputs": [handle, value, *("^" + c for c in controls)]}
    if fn != "Snd":
        node["fn"] = fn
    return node


def fn(name, op, *inputs):
    return {"name": name, "op": op, "inputs": list(inputs)}


# ---------------------------------------------------------------------------
# 1. Found by this review: Z3 symbols named by joining user-chosen names.
#
# The element-wise encoder names the leaf of feed f "$f[i]" and the initial
# value of variable x "x@init[i]" (encode.leaf_name), and generic.py names
# them "$f" / "x@init" (leaf_function) and "tensor:$f" / "tensor:x"
# (GenericEncoder._structural).  Names are arbitrary strings, so feed
# "a@init" and variable "$a" get the same symbol in the first two, feed "a"
# and variable "$a" in the third: Z3 takes the feed and the variable's
# initial value to be one unknown, and proves a rewrite that replaces one by
# the other.  Relu (no encoding: an uninterpreted function) keeps the
# checker's concrete sampling from seeing the values, and Concat/Split makes
# the rewrite an error exactly when the original is (x uninitialized).


def collision_pair(feed: str, n: int):
    def build(rewritten: bool):
        nodes = [var("v", "$a"), read("r", "v"), fn("f", "Identity", "$" + feed)]
        if rewritten:
            nodes += [fn("cc", "Concat", "r", "$" + feed), fn("sp", "Split", "cc"),
                      fn("o", "Relu", "sp:1")]
        else:
            nodes += [fn("o", "Relu", "r")]
        return program(nodes, {"o": "o", "f": "f"}, {"$a": {"dtype": "int64", "shape": [n]}},
                       {feed: {"dtype": "int64", "shape": [n]}})
    return build(False), build(True)


COLLISIONS = [("a@init", 2, "auto"),        # encode.leaf_name: "$a@init[i]" twice
              ("a@init", 2, "generic"),     # generic leaf_function: "$a@init" twice
              ("a", 2, "generic"),          # generic _structural: "tensor:$a" twice
              ("a", 5000, "auto")]          # the same, reached by size (over MAX_ELEMENTS)


@pytest.mark.parametrize("feed,n,mode", COLLISIONS)
def test_name_collision_pairs_are_unsound_by_the_oracle(feed, n, mode):
    p, q = collision_pair(feed, n)
    assert unsound_at(p, q, "atomic", "outputs+state",
                      feeds={feed: [0] * n}, init={"$a": [1] * n})
    assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("feed,n,mode", COLLISIONS)
def test_name_collision_pairs_are_not_sound(feed, n, mode):
    p, q = collision_pair(feed, n)
    with gen.tensors(mode):
        v = check_rewrite(p, q, timeout=20, minimize=False)
    assert v.verdict != "sound", v.reason


# ---------------------------------------------------------------------------
# 2. The structural rule: adversarial unsound pairs it must not conclude.


CASES: dict[str, tuple] = {}


def case(name, settings=SETTINGS, feeds=None, init=None):
    def deco(f):
        CASES[name] = (f, settings, feeds, init)
        return f
    return deco


@case("cse merges two Reads with a Write ordered between them", init={"x": 3})
def _cse_reads_across_write():
    common = [var("v"), const("five", 5)]
    p = program(common + [read("r1", "v"), assign("w", "v", "five", "Snd", "r1"),
                          read("r2", "v", "w")], {"o1": "r1", "o2": "r2"})
    q = program(common + [read("r1", "v"), assign("w", "v", "five", "Snd", "r1")],
                {"o1": "r1", "o2": "r1"})
    return p, q


@case("cse merges Reads by CSE key although a Write is hb-between", init={"x": 3})
def _cse_key_same_control():
    # r1 and r2 have the same CSE key (same handle, no control inputs), but
    # r2 reaches the output only after a Write that r1 precedes
    common = [var("v"), const("five", 5)]
    p = program(common + [read("r1", "v"), read("r2", "v", "w"),
                          assign("w", "v", "five", "Snd", "r1")],
                {"o1": "r1", "o2": "r2"})
    q = program(common + [read("r1", "v"), assign("w", "v", "five", "Snd", "r1")],
                {"o1": "r1", "o2": "r1"})
    return p, q


@case("deleted Write that a kept Read waits for", settings=[("atomic", "outputs"),
                                                           ("decomposed", "outputs")],
      init={"x": 3})
def _deleted_write_read_waits():
    p = program([var("v"), const("five", 5), assign("w", "v", "five"), read("r", "v", "w")],
                {"o": "r"})
    q = program([var("v"), const("five", 5), read("r", "v")], {"o": "r"})
    return p, q


@case("deleted Write whose control successor is an unmatched function feeding a kept Assign",
      init={"x": 3, "y": 0})
def _deleted_write_before_assign():
    vs = {"x": {"dtype": "int64", "shape": []}, "y": {"dtype": "int64", "shape": []}}
    common = [var("v"), var("vy", "y"), const("five", 5)]
    p = program(common + [assign("w", "v", "five"), read("r", "v", "w"),
                          assign("wy", "vy", "r")], {}, vs)
    q = program(common + [read("r", "v"), assign("wy", "vy", "r")], {}, vs)
    return p, q


@case("two ordered AssignAdds merged into one", init={"x": 3})
def _merge_ordered_assigns():
    common = [var("v"), const("one", 1)]
    p = program(common + [assign("a1", "v", "one", "Add"), assign("a2", "v", "one", "Add", "a1")])
    q = program(common + [assign("a1", "v", "one", "Add")])
    return p, q


@case("two unordered AssignAdds merged (lost update exists only in decomposed mode)",
      settings=[("atomic", "outputs+state")], init={"x": 3})
def _merge_unordered_assigns_atomic():
    common = [var("v"), const("one", 1)]
    p = program(common + [assign("a1", "v", "one", "Add"), assign("a2", "v", "one", "Add")])
    q = program(common + [assign("a1", "v", "one", "Add")])
    return p, q


@case("split-assign in atomic mode (lost update)", settings=[("atomic", "outputs+state")],
      init={"x": 3})
def _split_atomic():
    common = [var("v"), const("one", 1)]
    p = program(common + [assign("a1", "v", "one", "Add"), assign("a2", "v", "one", "Add")])
    q = program(common + [read("r1", "v"), fn("s1", "Add", "r1", "one"), assign("a1", "v", "s1"),
                          read("r2", "v"), fn("s2", "Add", "r2", "one"), assign("a2", "v", "s2")])
    return p, q


@case("fuse Write(x, Sub(v, Read x)) into Assign-Sub (argument order)", init={"x": 3})
def _fuse_wrong_order():
    common = [var("v"), const("ten", 10)]
    p = program(common + [read("r", "v"), fn("d", "Sub", "ten", "r"), assign("w", "v", "d")])
    q = program(common + [assign("w", "v", "ten", "Sub")])
    return p, q


@case("fuse across a Write that comes between the Read and the Write", init={"x": 3})
def _fuse_across_write():
    common = [var("v"), const("one", 1), const("seven", 7)]
    p = program(common + [read("r", "v"), assign("b", "v", "seven", "Snd", "r"),
                          fn("s", "Add", "r", "one"), assign("w", "v", "s", "Snd", "b")])
    q = program(common + [assign("b", "v", "seven"), assign("w", "v", "one", "Add", "b")])
    return p, q


@case("split-assign in decomposed mode with the Read hoisted above another Write",
      settings=[("decomposed", "outputs+state")], init={"x": 3})
def _split_read_hoisted():
    common = [var("v"), const("one", 1), const("seven", 7)]
    p = program(common + [assign("b", "v", "seven"), assign("a", "v", "one", "Add", "b")])
    q = program(common + [read("rr", "v"), assign("b", "v", "seven"),
                          fn("s", "Add", "rr", "one"), assign("a", "v", "s", "Snd", "b")])
    return p, q


@case("seed 002 load/store: the control edge before a Read of another variable dropped",
      settings=[("atomic", "outputs+state"), ("decomposed", "outputs+state")],
      init={"X": 0, "Y": 0})
def _load_store():
    vs = ["X", "Y"]
    head = [var("vx1", "X"), const("one", 1), assign("wx1", "vx1", "one"), var("vy", "Y"),
            var("vy5", "Y"), const("five", 5), assign("wy", "vy5", "five"), var("vx2", "X"),
            const("two", 2), assign("wx2", "vx2", "two", "Snd", "wy")]
    p = program(head + [read("r0", "vy", "wx1")], {"r0": "r0"}, vs)
    q = program(head + [read("r0", "vy")], {"r0": "r0"}, vs)
    return p, q


@case("Write moved to another variable of the same type", init={"x": 3, "y": 4})
def _write_other_variable():
    vs = ["x", "y"]
    common = [var("v"), var("vy", "y"), const("five", 5)]
    p = program(common + [assign("w", "v", "five")], {}, vs)
    q = program(common + [assign("w", "vy", "five")], {}, vs)
    return p, q


@case("an Assign's function changed (Add -> Max)", init={"x": 3})
def _changed_function():
    common = [var("v"), const("one", 1)]
    return (program(common + [assign("a", "v", "one", "Add")]),
            program(common + [assign("a", "v", "one", "Max")]))


@case("one Read split in two around an unordered Write (outputs alias one Read)",
      init={"x": 3})
def _unmerge_read():
    common = [var("v"), const("five", 5), assign("w", "v", "five")]
    p = program(common + [read("r", "v")], {"o1": "r", "o2": "r"})
    q = program(common + [read("r", "v"), read("r2", "v")], {"o1": "r", "o2": "r2"})
    return p, q


@case("-0.0 written instead of +0.0", init={"x": 1.0})
def _negative_zero():
    vs = {"x": {"dtype": "float32", "shape": []}}
    p = program([var("v"), const("z", {"dtype": "float32", "value": 0.0}), assign("w", "v", "z")],
                {}, vs)
    q = program([var("v"), const("z", {"dtype": "float32", "value": "-0.0"}),
                 assign("w", "v", "z")], {}, vs)
    return p, q


@case("a Write whose value is an error (int + float) folded to a constant", init={"x": 3})
def _fold_error():
    common = [var("v"), const("i", 1), const("f", {"dtype": "float32", "value": 1.0})]
    p = program(common + [fn("s", "Add", "i", "f"), assign("w", "v", "s")])
    q = program(common + [const("two", 2), assign("w", "v", "two")])
    return p, q


@case("a Write of Add(x, 0.0) dropped (x = -0.0 becomes +0.0 in the original)",
      init={"x": -0.0})
def _drop_add_zero_float():
    vs = {"x": {"dtype": "float32", "shape": []}}
    common = [var("v"), const("z", {"dtype": "float32", "value": 0.0})]
    p = program(common + [assign("w", "v", "z", "Add")], {}, vs)
    q = program(common, {}, vs)
    return p, q


@case("one element of a large constant changed", settings=[("atomic", "outputs+state")],
      feeds={"f": [0] * 70000}, init={})
def _large_constant_element():
    n = 70000   # over structural.FOLD_MAX_ELEMENTS: the constant stays a term
    vs = {"x": {"dtype": "int64", "shape": [n]}}
    big = np.arange(n).tolist()
    other = list(big)
    other[n // 2] += 1
    feeds = {"f": {"dtype": "int64", "shape": [n]}}
    p = program([var("v"), const("c", {"dtype": "int64", "value": big}), fn("s", "Add", "c", "$f"),
                 assign("w", "v", "s")], {}, vs, feeds)
    q = program([var("v"), const("c", {"dtype": "int64", "value": other}),
                 fn("s", "Add", "c", "$f"), assign("w", "v", "s")], {}, vs, feeds)
    return p, q


@pytest.mark.parametrize("name", sorted(CASES))
def test_structural_rule_refuses_unsound_pairs(name):
    build, settings, feeds, init = CASES[name]
    p, q = build()
    for semantics, observe in settings:
        if observe == "outputs" and not p.outputs:
            continue   # a difference in the final state only: invisible to `outputs`
        assert unsound_at(p, q, semantics, observe, feeds, init), (name, semantics, observe)
        r = structural_refinement(p, q, semantics, observe)
        assert not r.proved, (name, semantics, observe, r.reason)
        v = check_rewrite(p, q, semantics, observe, timeout=10, minimize=False, backends=False)
        assert v.verdict != "sound", (name, semantics, observe, v.reason)


# ---------------------------------------------------------------------------
# 3. Generic elements (tensors over the element-wise limit): unsound pairs.

N = 5000   # over symbolic.MAX_ELEMENTS (4096): the checker takes the generic path


def feeds_of(*names, dtype="int64", shape=(N,)):
    return {f: {"dtype": dtype, "shape": list(shape)} for f in names}


def generic_cases():
    out = {}
    # Split(Concat(a, b)) port 0 is a, not b
    out["split of concat, wrong half"] = (
        program([fn("cc", "Concat", "$a", "$b"), fn("sp", "Split", "cc")], {"o": "sp:0"}, [],
                feeds_of("a", "b")),
        program([fn("o", "Identity", "$b")], {"o": "o"}, [], feeds_of("a", "b")),
        {"a": [1] * N, "b": [2] * N})
    # float non-associativity
    f3 = feeds_of("a", "b", "c", dtype="float32")
    out["float reassociation"] = (
        program([fn("s1", "Add", "$a", "$b"), fn("s2", "Add", "s1", "$c")], {"o": "s2"}, [], f3),
        program([fn("s1", "Add", "$b", "$c"), fn("s2", "Add", "$a", "s1")], {"o": "s2"}, [], f3),
        {"a": [1e8] * N, "b": [-1e8] * N, "c": [1.0] * N})
    # a [N] result against a [1, N] result: the shape differs
    c1 = {"dtype": "int64", "value": [1]}
    c11 = {"dtype": "int64", "value": [[1]]}
    out["broadcast to another rank"] = (
        program([const("c", c1), fn("s", "Add", "$a", "c")], {"o": "s"}, [], feeds_of("a")),
        program([const("c", c11), fn("s", "Add", "$a", "c")], {"o": "s"}, [], feeds_of("a")),
        {"a": [0] * N})
    # -0.0 in one element of a large float constant (x + 0.0 vs x + -0.0 differ at x = -0.0)
    base = [0.0] * N
    neg = list(base)
    neg[123] = "-0.0"
    fa = feeds_of("a", dtype="float32")
    av = [0.5] * N
    av[123] = "-0.0"
    out["-0.0 in one element of a large constant"] = (
        program([const("c", {"dtype": "float32", "value": base}), fn("s", "Add", "$a", "c")],
                {"o": "s"}, [], fa),
        program([const("c", {"dtype": "float32", "value": neg}), fn("s", "Add", "$a", "c")],
                {"o": "s"}, [], fa),
        {"a": av})
    # int64 wrap: (a + 1) > a is not a rewrite of a + 1 into Max(a + 1, a)
    big = [2 ** 63 - 1] * N
    out["int64 wrap"] = (
        program([const("one", {"dtype": "int64", "value": 1}), fn("s", "Add", "$a", "one")],
                {"o": "s"}, [], feeds_of("a")),
        program([const("one", {"dtype": "int64", "value": 1}), fn("s", "Add", "$a", "one"),
                 fn("m", "Max", "s", "$a")], {"o": "m"}, [], feeds_of("a")),
        {"a": big})
    # a scalar broadcast vs a [1]-shaped one against a [N, 1] tensor
    fN1 = feeds_of("a", shape=(N, 1))
    out["scalar vs [1] against [N,1]"] = (
        program([const("c", {"dtype": "int64", "value": [1, 2]}), fn("s", "Add", "$a", "c")],
                {"o": "s"}, [], fN1),
        program([const("c", {"dtype": "int64", "value": [2, 1]}), fn("s", "Add", "$a", "c")],
                {"o": "s"}, [], fN1),
        {"a": [[0]] * N})
    return out


GENERIC = generic_cases()


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_generic_path_refuses_unsound_pairs(name):
    p, q, feeds = GENERIC[name]
    assert unsound_at(p, q, "atomic", "outputs+state", feeds)
    v = check_rewrite(p, q, timeout=20, minimize=False, backends=False)
    assert v.verdict != "sound", (name, v.reason)
    assert not structural_refinement(p, q).proved
