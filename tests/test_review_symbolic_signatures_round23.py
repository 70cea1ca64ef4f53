"""Adversarial review of the symbolic proof's component signatures compared
by node names first (checking/symbolic.py `_Signature`, switch
`NAMES_FIRST`) and of the leaf refused over the element limit before its
elements are made (`Algebra.leaf`).

The signatures decide which components of a rewrite are "unchanged"
against the original: those are left out of the proof, so a false
equality is a false `sound`.  Each test is an attack that found nothing
and now guards the property it attacked: two components whose nodes keep
their names but differ (an op, an attribute, a constant's sign of zero or
NaN payload, input order, a control edge, a dtype, a shape, a renamed
input, an Assign's function, an output's port), nodes equal by `==` but
not bit for bit, forced hash collisions, name collisions across programs,
signatures made before another program, and leaves at, under and over the
limit.  Verdicts are compared with the switch on and off, and against the
enumerating oracle's outcome sets at concrete σ."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest

from tfsem.checking import symbolic as Y
from tfsem.checking import generic
from tfsem.checking.check import _random_tensor, check_rewrite
from tfsem.oracle import kernels
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import DataIn, FeedIn, Node, Program, TensorType
from tfsem.oracle.values import FLOAT_DTYPES, DTYPES, Tensor
from test_symbolic_component_signatures import _cases, _mutants, assert_same_rows
from test_structural_original_memo import _families

# A program of three independent parts: a float sum of a feed and a
# constant zero (A), a counter read after its increment (B), and a
# negated feed (C).
BASE = {"format": "tfsem.program/1", "variables": ["x"],
        "feeds": {"a": {"dtype": "float32", "shape": []}, "b": {"dtype": "float32", "shape": []}},
        "nodes": [
            {"name": "z", "op": "Const", "value": {"dtype": "float32", "value": 0.0}},
            {"name": "s", "op": "Add", "inputs": ["$a", "z"]},
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "one", "op": "Const", "value": 1},
            {"name": "inc", "op": "Assign", "fn": "Add", "inputs": ["vx", "one"]},
            {"name": "r", "op": "Read", "inputs": ["vx", "^inc"]},
            {"name": "t", "op": "Neg", "inputs": ["$b"]},
        ], "outputs": {"s": "s", "r": "r", "t": "t"}}

BITCAST = {"tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}}


def _f32(bits: int) -> Tensor:
    return Tensor(np.array([bits], dtype=np.uint32).view(np.float32).reshape(()))


def _swap(p: Program, name: str, node: Node | None = None, **changes) -> Program:
    """p with node `name` replaced (its name kept)."""
    new = node if node is not None else p.node[name].replace(**changes)
    assert new.name == name
    return Program(p.variables, tuple(new if n.name == name else n for n in p.nodes),
                   p.outputs, p.feeds)


def _base() -> Program:
    return program_from_json(copy.deepcopy(BASE))


def _with_s(node_of) -> Program:
    p = _base()
    return _swap(p, "s", node_of(p))


def _hostile_pairs() -> dict:
    """name -> (original, rewrite, the name of the one node changed): each
    rewrite keeps every node's name and changes one node's definition."""
    p = _base()
    s, r = p.node["s"], p.node["r"]
    bitcast = _with_s(lambda p: Node("s", "tf.Bitcast/1/1", (DataIn("z", 0),), BITCAST))
    nan = _swap(bitcast, "z", attrs={"value": _f32(0x7FC00000)})
    leaky = _with_s(lambda p: Node("s", "tf.LeakyRelu/1/1", (p.node["s"].inputs[0],),
                                   {"tf_attrs": {"T": "DT_FLOAT", "alpha": 0.0}}))
    flag = _with_s(lambda p: Node("s", "tf.LeakyRelu/1/1", (p.node["s"].inputs[0],),
                                  {"tf_attrs": {"T": "DT_FLOAT", "alpha": 0.5, "flag": True}}))
    return {
        "const sign of zero": (p, _swap(p, "z", attrs={"value": Tensor(np.float32(-0.0))}), "z"),
        "op": (p, _swap(p, "s", op="Sub"), "s"),
        "input order": (p, _swap(p, "s", inputs=s.inputs[::-1]), "s"),
        "renamed input": (p, _swap(p, "s", inputs=(FeedIn("b"), s.inputs[1])), "s"),
        "control edge dropped": (p, _swap(p, "r", inputs=r.inputs[:1]), "r"),
        "assign function": (p, _swap(p, "inc", attrs={"fn": "Sub"}), "inc"),
        "const dtype": (p, _swap(p, "one", attrs={"value": Tensor(np.int32(1))}), "one"),
        "const shape": (p, _swap(p, "one", attrs={"value": Tensor(np.array([1]))}), "one"),
        "const NaN payload": (nan, _swap(nan, "z", attrs={"value": _f32(0x7FC00001)}), "z"),
        "const NaN sign": (nan, _swap(nan, "z", attrs={"value": _f32(0xFFC00000)}), "z"),
        # (equal by the nodes' `==`, which compares a nested float by value:
        # only the hash, the attributes' exact key, tells them apart)
        "nested float attribute sign of zero": (
            leaky, _swap(leaky, "s", attrs={"tf_attrs": {"T": "DT_FLOAT", "alpha": -0.0}}), "s"),
        "nested bool attribute as int": (
            flag, _swap(flag, "s", attrs={"tf_attrs": {"T": "DT_FLOAT", "alpha": 0.5, "flag": 1}}),
            "s"),
    }


def _signatures(p: Program, on: bool, monkeypatch) -> list:
    monkeypatch.setattr(Y, "NAMES_FIRST", on)
    return [sig for sig, _ in Y.components(p)]


def _component_of(p: Program, name: str, on: bool, monkeypatch):
    monkeypatch.setattr(Y, "NAMES_FIRST", on)
    (sig,) = [sig for sig, (names, _, _) in Y.components(p) if name in names]
    return sig


# ---------------------------------------------------------------------------
# Same names, other nodes


@pytest.mark.parametrize("name", sorted(_hostile_pairs()))
def test_same_names_other_node_is_another_component(name, monkeypatch):
    """The changed node's component has the same node names in both
    programs and another signature, with the switch on and off, either
    way round; every other component is the same."""
    p, q, changed = _hostile_pairs()[name]
    assert p != q
    for on in (True, False):
        a, b = (_component_of(x, changed, on, monkeypatch) for x in (p, q))
        if on:
            assert a.names == b.names      # (the names agree: the nodes decide)
        assert a != b and b != a and not (a == b) and not (b == a)
        same = set(_signatures(p, on, monkeypatch)) & set(_signatures(q, on, monkeypatch))
        assert len(same) == len(Y.components(p)) - 1


def test_nodes_equal_by_eq_are_not_one_node_by_bits():
    """The attack's premise: two of the pairs above are equal nodes by the
    dataclass's `==` (a nested float compared by value, True == 1), and
    only the hash tells them apart.  `_Signature.__eq__` must keep the
    hash comparison of a set's lookup; with `==` alone these components
    would be one, and a rewrite that changes LeakyRelu's alpha from 0.0 to
    -0.0 (a result's sign of zero) would be proved on the other parts."""
    pairs = _hostile_pairs()
    for name in ("nested float attribute sign of zero", "nested bool attribute as int"):
        p, q, changed = pairs[name]
        a, b = p.node[changed], q.node[changed]
        assert a == b and hash(a) != hash(b)


@pytest.mark.parametrize("name", sorted(_hostile_pairs()))
def test_same_names_other_node_verdicts(name, monkeypatch):
    """The checker on each pair, the structural rule off so that the
    components decide: the same verdict, reason and unchanged-component
    count with the switch on and off; the changed component is never
    among the unchanged ones; an `unsound` verdict's counterexample is the
    oracle's; a `sound` one agrees with the oracle at concrete σ."""
    p, q, _ = _hostile_pairs()[name]
    if any(n.op.startswith("tf.") for n in (*p.nodes, *q.nodes)):
        pytest.importorskip("tensorflow")
        monkeypatch.setenv(kernels.ENV, "1")
    rows = {}
    for on in (True, False):
        monkeypatch.setattr(Y, "NAMES_FIRST", on)
        v = check_rewrite(p, q, timeout=20, structural=False, minimize=False, backends=False)
        rows[on] = (v.verdict, re.sub(r"\d+", "N", v.reason), v.stats.get("unchanged_components"))
    assert rows[True] == rows[False]
    verdict, _, unchanged = rows[True]
    assert unchanged == len(Y.components(p)) - 1
    if verdict == "unsound":
        assert "oracle" in v.confirmed
    elif verdict == "sound":
        _assert_oracle_agrees(p, q, "atomic", "outputs+state")
    # (the pairs whose change shows in an outcome: never `sound`)
    if name not in ("input order", "nested bool attribute as int",
                    "const NaN payload", "const NaN sign"):
        assert verdict != "sound", name


def test_nan_payload_through_bitcast_is_unsound(monkeypatch):
    """A constant NaN whose payload is changed, shown by Bitcast (run on
    TensorFlow's kernel): the rewrite is refuted, switch on and off."""
    pytest.importorskip("tensorflow")
    monkeypatch.setenv(kernels.ENV, "1")
    p, q, _ = _hostile_pairs()["const NaN payload"]
    for on in (True, False):
        monkeypatch.setattr(Y, "NAMES_FIRST", on)
        v = check_rewrite(p, q, timeout=20, structural=False, minimize=False)
        assert v.verdict == "unsound", v.reason
        assert "oracle" in v.confirmed


# ---------------------------------------------------------------------------
# Hash collisions, copies, name collisions, order of making


def test_forced_node_hash_collision_is_still_told_apart(monkeypatch):
    """Two different nodes of one name made to hash alike (their kept
    hashes overwritten): the signatures still compare the nodes."""
    p = _base()
    q = _swap(p, "s", op="Sub")
    a, b = p.node["s"], q.node["s"]
    b.__dict__["_hash"] = hash(a)
    assert hash(a) == hash(b) and a != b
    for on in (True, False):
        x, y = (_component_of(g, "s", on, monkeypatch) for g in (p, q))
        assert hash(x) == hash(y) and x != y


def test_forced_signature_hash_collision(monkeypatch):
    """Signatures of other names made to hash alike: not equal."""
    monkeypatch.setattr(Y, "NAMES_FIRST", True)
    p = _base()
    sigs = _signatures(p, True, monkeypatch)
    for x in sigs:
        for y in sigs:
            if x is not y:
                y._hash = x._hash
                assert x != y and not (x == y)


def test_equal_copies_are_the_same_components(monkeypatch):
    """The program read again from its JSON, and rebuilt from copies of its
    nodes: other objects, every component the same (equal, equal hashes)."""
    p = _base()
    rebuilt = Program(dict(p.variables), tuple(Node(n.name, n.op, n.inputs, dict(n.attrs))
                                               for n in p.nodes), dict(p.outputs), dict(p.feeds))
    for q in (program_from_json(program_to_json(p)), rebuilt):
        assert q is not p and q.node["s"] is not p.node["s"]
        for on in (True, False):
            a, b = _signatures(p, on, monkeypatch), _signatures(q, on, monkeypatch)
            assert a == b and [hash(x) for x in a] == [hash(x) for x in b]
            assert len(set(a) & set(b)) == len(a)


def test_name_collisions_across_programs(monkeypatch):
    """Components of the same node names and nodes in two programs whose
    variables' types or outputs differ: other signatures."""
    base = {"format": "tfsem.program/1", "variables": {"x": {"dtype": "int32", "shape": []}},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["v"]},
                      {"name": "sp", "op": "Split", "inputs": ["$f"]}],
            "feeds": {"f": {"dtype": "int64", "shape": [4]}},
            "outputs": {"o": "r", "h": "sp:0"}}
    p = program_from_json(base)
    other_type = copy.deepcopy(base)
    other_type["variables"]["x"]["shape"] = [1]
    other_port = copy.deepcopy(base)
    other_port["outputs"]["h"] = "sp:1"
    other_name = copy.deepcopy(base)
    other_name["outputs"] = {"o2": "r", "h": "sp:0"}
    for d, changed in ((other_type, "r"), (other_port, "sp"), (other_name, "r")):
        q = program_from_json(d)
        for on in (True, False):
            a, b = (_component_of(g, changed, on, monkeypatch) for g in (p, q))
            assert a != b
            assert hash(_component_of(p, changed, on, monkeypatch)) == hash(a)


def test_a_signature_is_not_changed_by_later_programs(monkeypatch):
    """A signature made, then a program of the same names with one node
    changed: the first still equals the original's fresh signature and not
    the new one's; the original cannot be changed under it."""
    monkeypatch.setattr(Y, "NAMES_FIRST", True)
    p = _base()
    before = _component_of(p, "s", True, monkeypatch)
    q = _swap(p, "s", op="Sub")
    after_q = _component_of(q, "s", True, monkeypatch)
    assert before == _component_of(p, "s", True, monkeypatch) and before != after_q
    with pytest.raises(TypeError):
        p.node["s"] = q.node["s"]
    with pytest.raises(TypeError):
        p.node["z"].attrs["value"] = Tensor(np.float32(-0.0))
    assert before != after_q


def test_signatures_of_the_two_modes_never_meet(monkeypatch):
    """A signature made with the switch on and one made off are never
    equal and compare without an error (the switch is not changed within
    a check; if it were, components would be explored, not skipped)."""
    p = _base()
    for x, y in zip(_signatures(p, True, monkeypatch), _signatures(p, False, monkeypatch)):
        assert x != y and y != x and not (x == y)


# ---------------------------------------------------------------------------
# Differential: mutants that keep every name, against the oracle


def _sigmas(p: Program, rng: np.random.Generator):
    """σ for the oracle: zeros, ones, random values (some variables left
    uninitialized), and the float feeds -0.0 and NaN."""
    out = []
    for style in (0, 1, 2, 2, 2):
        feeds = {f: _random_tensor(p.feed_type(f), rng, style) for f in p.feed_names}
        init = {x: _random_tensor(p.variables[x], rng, style) for x in sorted(p.variables)
                if style < 2 or rng.random() < 0.7}
        out.append((feeds, init))
    for special in (-0.0, np.nan):
        feeds = {f: (Tensor(np.full(t.shape, special, DTYPES[t.dtype]), t.dtype)
                     if t.dtype in FLOAT_DTYPES else _random_tensor(t, rng, 1))
                 for f in p.feed_names for t in (p.feed_type(f),)}
        out.append((feeds, {x: _random_tensor(p.variables[x], rng, 1) for x in sorted(p.variables)}))
    return out


def _assert_oracle_agrees(p: Program, q: Program, semantics: str, observe: str,
                          seed: int = 23) -> int:
    """At each σ, every outcome of q is one of p's (the enumerating oracle's
    sets); the number of σ compared."""
    n = 0
    for feeds, init in _sigmas(p, np.random.default_rng(seed)):
        try:
            theirs = outcome_set(q, feeds, init, semantics, observe, max_seconds=5)
            ours = outcome_set(p, feeds, init, semantics, observe, max_seconds=5)
        except Exception:   # (a budget or a σ the engines refuse: not compared)
            continue
        assert all(o in ours for o in theirs), (feeds, init)
        n += 1
    return n


def test_mutants_of_stored_cases_and_generated_programs(monkeypatch):
    """Originals against copies of themselves with one node changed, names
    kept (a constant's sign of zero or NaN, an operand order, Add and Mul
    swapped), and generated rewrites: the verdict rows are equal with the
    switch on and off, and every `sound` verdict agrees with the oracle."""
    pairs = []
    for c, _ in _cases():
        if c.original.has_control_flow:
            continue
        pairs += [(c.original, m, c.semantics, c.observe) for m in _mutants(c.original)[:2]]
        if len(pairs) >= 24:
            break
    for p, qs in _families(6, rewrites=2, seed=2323):
        pairs += [(p, q, s, o) for q, s, o in qs]
        pairs += [(p, m, "atomic", "outputs+state") for m in _mutants(p)[:2]]
    sound = compared = 0
    for p, q, s, o in pairs:
        rows = {}
        for on in (True, False):
            monkeypatch.setattr(Y, "NAMES_FIRST", on)
            v = check_rewrite(p, q, s, o, timeout=2, structural=False, minimize=False,
                              backends=False)
            rows[on] = (v.verdict, "", v.stats.get("unchanged_components"),
                        v.stats.get("flagged"))
        assert_same_rows([rows[True]], [rows[False]])
        if rows[True][0] == "sound":
            sound += 1
            compared += _assert_oracle_agrees(p, q, s, o)
    assert sound > 0 and compared > 0


# ---------------------------------------------------------------------------
# Leaves at, under and over the element limit


@pytest.mark.parametrize("shape", [(), (0,), (1,), (1, 1), (0, 10**9), (10**9, 0),
                                   (Y.MAX_ELEMENTS,), (Y.MAX_ELEMENTS, 1), (64, 64),
                                   (Y.MAX_ELEMENTS + 1,), (1, Y.MAX_ELEMENTS + 1), (64, 65),
                                   (10**6, 10**6)])
@pytest.mark.parametrize("algebra", [Y.Algebra, Y.RealAlgebra])
def test_leaf_refused_exactly_over_the_limit(shape, algebra):
    """Refused exactly when the elements exceed the limit, with the reason
    `tensor` gives for as many elements, and nothing made; else made with
    one term per element (none for a zero dimension, however large the
    others)."""
    a = algebra()
    size = math.prod(shape)
    if size > Y.MAX_ELEMENTS:
        with pytest.raises(Y.NeedsGeneric) as exc:
            a.leaf("feed", "f", TensorType("float32", shape))
        assert str(exc.value) == f"a tensor of {size} elements (the symbolic limit is " \
                                  f"{Y.MAX_ELEMENTS})"
        assert not a._terms and not a.leaves and not a._tensors
    else:
        t = a.leaf("feed", "f", TensorType("float32", shape))
        assert t.shape == shape and len(t.elems) == size == len(a.leaves)
        assert [e.value for e in t.elems] == [("f", i) for i in range(size)]


def test_generic_algebra_still_takes_large_leaves():
    """The whole-tensor algebra, which the refusal sends the check to,
    makes a leaf of any size (it does not inherit the refusal)."""
    g = generic.GenericAlgebra()
    t = g.leaf("init", "x", TensorType("float32", (10**6,)))
    assert tuple(t.shape) == (10**6,)


@pytest.mark.parametrize("n", [Y.MAX_ELEMENTS, Y.MAX_ELEMENTS + 1])
def test_variable_at_and_over_the_limit(n):
    """A variable of 4,096 elements goes through the element terms, one of
    4,097 through the generic element (the refusal's reason in the
    stats); either way Add -> Mul of the value with itself is refuted and
    the counterexample is the oracle's."""
    def prog(op):
        return program_from_json({
            "format": "tfsem.program/1",
            "variables": {"x": {"dtype": "int32", "shape": [n]}},
            "feeds": {}, "outputs": {"out": "o"},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["v"]},
                      {"name": "o", "op": op, "inputs": ["r", "r"]}]})
    v = check_rewrite(prog("Add"), prog("Mul"), timeout=30, structural=False, minimize=False,
                      backends=False)
    assert v.verdict == "unsound", v.reason
    assert "oracle" in v.confirmed
    if n > Y.MAX_ELEMENTS:
        assert v.stats.get("generic") == f"a tensor of {n} elements (the symbolic limit is " \
                                         f"{Y.MAX_ELEMENTS})"
    else:
        assert "generic" not in v.stats


# ---------------------------------------------------------------------------
# Found and fixed: the refutation stage's unchanged components


def test_refutation_unchanged_components_tell_bits_apart(monkeypatch):
    """The refutation stage leaves out of its search the components the
    rewrite left unchanged (checking/refute.py `unchanged_components`).  It
    compared their nodes by `==` alone, so a LeakyRelu whose alpha is
    -0.0 for 0.0 (a negative input's result changes its sign of zero), or
    an attribute True for 1, was unchanged there, and a counterexample in
    it was never searched for.  Now it agrees with the proof's signatures
    on every hostile pair; equal copies are still unchanged."""
    from tfsem.checking import refute
    for name, (p, q, changed) in sorted(_hostile_pairs().items()):
        kept = refute.unchanged_components(p, q)
        assert len(kept) == len(Y.components(p)) - 1, name
        assert all(changed not in names for names, _ in kept), name
        same = set(_signatures(p, True, monkeypatch)) & set(_signatures(q, True, monkeypatch))
        assert len(kept) == len(same), name
    p = _base()
    assert len(refute.unchanged_components(p, program_from_json(program_to_json(p)))) \
        == len(Y.components(p))


def test_var_node_of_another_variable(monkeypatch):
    """A Var node that keeps its name and names another variable (of the
    same type): its component has the same node names and another
    signature, and the checker refutes the rewrite, switch on and off."""
    d = copy.deepcopy(BASE)
    d["variables"] = ["x", "y"]
    p = program_from_json(d)
    q = _swap(p, "vx", attrs={"var": "y"})
    for on in (True, False):
        a, b = (_component_of(g, "vx", on, monkeypatch) for g in (p, q))
        assert a != b
        if on:
            assert a.names == b.names
        v = check_rewrite(p, q, timeout=20, structural=False, minimize=False, backends=False)
        assert v.verdict == "unsound" and "oracle" in v.confirmed, v.reason
        assert v.stats.get("unchanged_components") == 2     # (A and C)


def test_builtin_passes_on_generated_programs(monkeypatch):
    """tfsem's own passes (pruning, CSE, read hoisting, constant folding...)
    keep most names and leave parts alone, so their rewrites have
    unchanged components: the verdict rows are equal with the switch on
    and off, in two cells, and every `sound` verdict agrees with the
    oracle at concrete σ."""
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites.registry import builtin_passes
    passes = builtin_passes()
    checked = unchanged = compared = 0
    for p in random_programs(10, seed=2323, max_nodes=12):
        for name in sorted(passes):
            try:
                q = passes[name](p)
            except Exception:   # (a pass that refuses the program)
                continue
            if q == p:
                continue
            for sem, obs in (("atomic", "outputs+state"), ("decomposed", "outputs")):
                rows = {}
                for on in (True, False):
                    monkeypatch.setattr(Y, "NAMES_FIRST", on)
                    v = check_rewrite(p, q, sem, obs, timeout=2, structural=False, minimize=False,
                                      backends=False)
                    # (a search that runs to the budget says how many σ it
                    # tried: the reason's numbers are the clock's)
                    rows[on] = (v.verdict, re.sub(r"\d+", "N", v.reason),
                                v.stats.get("unchanged_components"),
                                v.stats.get("flagged"))
                assert_same_rows([rows[True]], [rows[False]])
                checked += 1
                unchanged += bool(rows[True][2])
                if rows[True][0] == "sound":
                    compared += _assert_oracle_agrees(p, q, sem, obs)
    assert checked > 20 and unchanged > 10 and compared > 0


@pytest.mark.parametrize("shape", [(-1,), (-5000,), (-1, -5000), (-1, -4096)])
def test_leaf_of_a_negative_shape_as_before(shape):
    """Shapes with negative dimensions, which loading refuses
    (`bad-type`) but a program built in memory can hold: the leaf is
    refused exactly where the elements made before the refusal were too
    many (range(size) is empty for a negative size), with the same
    reason."""
    size = math.prod(shape)
    a = Y.Algebra()
    made = max(size, 0)
    if made > Y.MAX_ELEMENTS:
        with pytest.raises(Y.NeedsGeneric, match=f"a tensor of {made} elements"):
            a.leaf("init", "x", TensorType("float32", shape))
    else:
        assert len(a.leaf("init", "x", TensorType("float32", shape)).elems) == made


def test_same_names_other_node_over_the_reals(monkeypatch):
    """`--float real` on every pair: the same rows with the switch on and
    off, and the changed component never among the unchanged ones (over
    the reals 0.0 is -0.0, and Add of 0 is Sub of 0, so some pairs are
    `sound` there; those that change an order or an integer stay
    `unsound`)."""
    pytest.importorskip("tensorflow")
    monkeypatch.setenv(kernels.ENV, "1")
    for name, (p, q, _) in sorted(_hostile_pairs().items()):
        rows = {}
        for on in (True, False):
            monkeypatch.setattr(Y, "NAMES_FIRST", on)
            v = check_rewrite(p, q, timeout=20, structural=False, minimize=False, backends=False,
                              float_mode="real")
            rows[on] = (v.verdict, re.sub(r"\d+", "N", v.reason),
                        v.stats.get("unchanged_components"))
        assert rows[True] == rows[False], name
        assert rows[True][2] == len(Y.components(p)) - 1, name
        if name in ("control edge dropped", "assign function", "const dtype", "const shape",
                    "renamed input"):
            assert rows[True][0] == "unsound", name
