"""Review (round 22) of the structural rule's kept attribute keys and the
one-pass static shapes: checking/structural.py `_attrs_keys_from`
(`ORIGINAL_ATTRS_KEYS`: the original's `_attrs_key`s made once and kept in
its memo entry), the term pass's per-node calls written out
(`_program_terms`, `_Terms.apply`), and oracle/static_shapes.py
`_value_shapes` gathering each node's argument shapes and constants in one
loop.

Each attack compares the rule with the keys kept against the rule with
every key made in its check (the switch off), and the term pass against the
pass as it was written before (kept here, `_reference_program_terms` and
`_reference_apply`), on hostile attributes, generated originals, the stored
cases and the stored Grappler programs of real graphs; static shapes are
compared with the pass written argument by argument and with the shapes the
enumerating oracle computes."""

from __future__ import annotations

import gc
import struct
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import structural
from tfsem.checking.check import check_rewrite
from tfsem.checking.structural import (ASSIGN, NO_PROOF_BUDGET, READ, VAR, _Terms,
                                       structural_refinement)
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle import static_shapes as S
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import DataIn, FeedIn, Node, TensorType, _FrozenDict
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor
from test_review_replay_keys_copies_round21 import HOSTILE
from test_static_shapes_value_pass import _reference as _reference_value_shapes
from test_structural_original_memo import _families
from test_structural_original_terms import MODES, _grappler_programs, _row

TESTS = Path(__file__).parent


@pytest.fixture
def shown(monkeypatch):
    """UserShow22(x): x itself.  The rule cannot fold it (its argument is a
    feed), so two applications are one term exactly when their attribute
    keys are equal: a wrong key shows as a wrong proof."""
    monkeypatch.setitem(fns._REGISTRY, "UserShow22", fns.Function(
        "UserShow22", 1, 1, lambda xp, args, attrs: (args[0],)))
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)


def _shown(attrs, op="UserShow22", feed="x"):
    return P.program([P.Node("s", op, (FeedIn(feed),), attrs)], {"out": "s"},
                     feeds={"x": TensorType("float32", ()), "y": TensorType("float32", ())})


def _bits(v):
    """An exact form of an attribute value written independently of the
    rule's `_exact`: type, dtype, shape and bytes; two values with equal
    `_bits` are the same attribute to every function."""
    if isinstance(v, Tensor):
        return ("T", v.dtype, v.array.dtype.str, v.array.shape, v.array.tobytes())
    if isinstance(v, np.ndarray):
        return ("A", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("G", v.dtype.str, v.tobytes())
    if isinstance(v, float):
        return ("f", type(v), struct.pack("<d", v))
    if isinstance(v, Mapping):
        return ("M", tuple(sorted((repr(k), _bits(x)) for k, x in v.items())))
    if isinstance(v, (list, tuple)):
        return ("S", type(v), tuple(_bits(x) for x in v))
    if isinstance(v, Error):
        return ("E", v.reason)
    return ("O", type(v), v)


# -- kept keys against keys made in each check ---------------------------------

def test_hostile_attribute_pairs_prove_only_equal_attributes(shown, monkeypatch):
    """Every hostile value (NaN payloads, ±0.0, 1 / True / 1.0 / "1",
    nested lists and tuples, tensors of equal bytes and another dtype or
    shape, empty tensors, numpy scalars, int and str subclasses) as the
    original's attribute, against every other as the rewrite's: the
    original checked first against a rewrite sharing its node (its keys
    kept), then against the other, each pair a fresh pair of programs, the
    last freed before the next is made (so attribute mappings' ids are
    reused).  A proof only where the attributes are equal bit for bit, and
    the same answers as with every key made in its check."""
    values = HOSTILE
    seen_ids: set[int] = set()
    reused = 0

    def run() -> list:
        nonlocal reused
        rows = []
        for a in values:
            for b in values[::2]:
                p, q = _shown({"a": a}), _shown({"a": b})
                k = id(p.node["s"].attrs)
                reused += k in seen_ids
                seen_ids.add(k)
                assert structural_refinement(p, p.replace(nodes=p.nodes)).proved
                rows.append(structural_refinement(p, q).proved)
                del p, q
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    kept = run()
    gc.collect()
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", False)
    assert run() == kept
    pairs = [(a, b) for a in values for b in values[::2]]
    for proved, (a, b) in zip(kept, pairs):
        if proved:
            assert _bits(a) == _bits(b), (a, b)
    assert sum(kept) >= len(values) // 2 and not all(kept)
    assert reused > 100     # (the attack happened: ids of freed mappings came back)


def test_constants_of_equal_bytes_prove_only_equal_tensors(monkeypatch):
    """Consts of every hostile tensor (NaN payloads, ±0.0, subnormals, one
    int32 against uint32 or four uint8, [0.0] against [[0.0]], empty
    tensors of shapes [0], [0, 2], [2, 0], bfloat16 and float16 NaNs),
    the original's key kept, each against every other: a proof exactly
    where dtype, shape and bits are equal, as with keys made per check."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    tensors = [v for v in HOSTILE if isinstance(v, Tensor)]
    tensors += [Tensor(np.array([0, 0, 0, 0], np.uint8)), Tensor(np.array([0], np.int32)),
                Tensor(np.zeros((1, 1), np.float32)), Tensor(np.zeros((), np.float64))]

    def make(v):
        return P.program([P.const("c", v), P.apply("s", "Identity", "c")], {"out": "s"})

    def run() -> list:
        rows = []
        for a in tensors:
            p = make(a)
            assert structural_refinement(p, make(a)).proved
            rows.append([structural_refinement(p, make(b), real=real).proved
                         for b in tensors for real in (False, True)])
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    kept = run()
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", False)
    assert run() == kept
    for a, row in zip(tensors, kept):
        expected = [_bits(a) == _bits(b) for b in tensors for _real in (False, True)]
        assert row == expected, a


def test_a_rewrite_sharing_the_originals_attributes_object(shown, monkeypatch):
    """The rewrite's node holds the original's very attribute mapping, under
    another op, another input, or the same node: one key for both (the
    mapping is one), and a proof only for the same application."""
    monkeypatch.setitem(fns._REGISTRY, "UserShow22b", fns.Function(
        "UserShow22b", 1, 1, lambda xp, args, attrs: (-args[0],)))
    for value in (Tensor(np.float32(-0.0)), [1, (2, [3.0])], float("nan"), True):
        attrs = _FrozenDict({"a": value})
        p = _shown(attrs)
        rows = {}
        for ko in (True, False):
            monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", ko)
            rows[ko] = [structural_refinement(p, q).proved for q in (
                _shown(attrs), _shown(attrs, op="UserShow22b"), _shown(attrs, feed="y"),
                _shown(dict(attrs)), _shown(attrs))]
        assert rows[True] == rows[False] == [True, False, False, True, True], value


def test_an_equal_twin_original_takes_its_own_entry(shown, monkeypatch):
    """Two equal originals (equal by content, other objects), each checked in
    turn against rewrites of another constant: each entry holds its own
    program's mappings, and the answers are those with keys made per check."""
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)

    def make(v):
        return P.program([P.const("c", Tensor(np.float32(v))),
                          P.apply("s", "Add", "$x", "c")], {"out": "s"},
                         feeds={"x": TensorType("float32", ())})
    p, twin = make(-0.0), make(-0.0)
    assert p == twin and p is not twin
    answers = []
    for q in (make(-0.0), make(0.0), make(-0.0)):
        for o in (p, twin):
            answers.append(structural_refinement(o, q).proved)
    assert answers == [True, True, False, False, True, True]
    for o in (p, twin):
        kept = structural._original_memo(o, create=False)["attrs_keys"]
        assert {id(n.attrs) for n in o.nodes if n.attrs} == set(kept)
        assert all(a is o.node[n.name].attrs for n in o.nodes if n.attrs
                   for a in [kept[id(n.attrs)][0]])


def test_a_replaced_registration_drops_the_kept_keys(shown, monkeypatch):
    """A function registered again between two checks of one original: its
    memo entry (and the keys in it) is not used again, and the answer is
    the one with keys made per check."""
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    attrs = {"a": [1, 2.5, float("nan")]}
    p = _shown(attrs)
    assert structural_refinement(p, _shown(attrs)).proved
    entry = structural._original_memo(p, create=False)
    assert entry is not None and "attrs_keys" in entry
    monkeypatch.setitem(fns._REGISTRY, "UserShow22", fns.Function(
        "UserShow22", 1, 1, lambda xp, args, attrs: (args[0] * 2,)))
    assert structural._original_memo(p, create=False) is None
    assert structural_refinement(p, _shown(attrs)).proved
    assert not structural_refinement(p, _shown({"a": [1, 2.5, -float("nan")]})).proved
    assert structural._original_memo(p, create=False) is not entry


def test_threads_checking_one_original_get_the_answers_of_one_thread(shown, monkeypatch):
    """Four threads check one original against rewrites of other
    attributes at once (each makes or takes the kept keys, each adds its
    rewrite's to its own copy): every answer is the one a single thread
    gives with keys made per check, and the entry holds the original's
    keys only."""
    values = HOSTILE[:40]
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", False)
    p0 = _shown({"a": values[0]})
    expected = [structural_refinement(p0, _shown({"a": v})).proved for v in values]
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    p = _shown({"a": values[0]})
    got: dict[int, list] = {}

    def work(t: int) -> None:
        got[t] = [structural_refinement(p, _shown({"a": v})).proved
                  for v in values[t:] + values[:t]]
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for t in range(4):
        assert got[t] == expected[t:] + expected[:t]
    kept = structural._original_memo(p, create=False)["attrs_keys"]
    assert set(kept) == {id(p.node["s"].attrs)}
    assert expected[0] and not all(expected)


def test_data_dead_nodes_are_not_keyed(monkeypatch):
    """A data-dead Const of 4 MB and a dead node whose attribute is a list
    that holds itself: the kept table keys the nodes of the original's term
    plan only (fixed: with every node keyed, the dead Const's bytes were
    copied and held for as long as the original lived, and the list made
    the rule raise RecursionError where it proves), and the answers are
    those with keys made per check."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    loop: list = []
    loop.append(loop)

    def make(v):
        big = Tensor(np.full(1_000_000, v, np.float32))
        return P.program([P.const("big", big), P.apply("dead", "Neg", "big"),
                          P.apply("odd", "Identity", "$x", a=loop),
                          P.const("c", Tensor(np.float32(v))), P.apply("s", "Add", "$x", "c")],
                         {"out": "s"}, feeds={"x": TensorType("float32", ())})
    rows = {}
    for ko in (False, True):
        monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", ko)
        p = make(1.0)
        rows[ko] = [structural_refinement(p, make(v)).proved for v in (1.0, 2.0, 1.0)]
    assert rows[True] == rows[False] == [True, False, True]
    memo = structural._original_memo(p, create=False)
    assert {kept[0] for kept in memo["attrs_keys"].values()} == \
        {p.node["c"].attrs} and id(p.node["big"].attrs) not in memo["attrs_keys"]


# -- the deadline ----------------------------------------------------------------

def _many_consts(n: int, v: float = 1.0):
    """x + c0 + c1 + ... + c(n-1), each Const a live node of the plan."""
    nodes = [P.const(f"c{k}", Tensor(np.float32(v + k))) for k in range(n)]
    nodes.append(P.apply("s0", "Add", "$x", "c0"))
    nodes += [P.apply(f"s{k}", "Add", f"s{k - 1}", f"c{k}") for k in range(1, n)]
    return P.program(nodes, {"out": f"s{n - 1}"}, feeds={"x": TensorType("float32", ())})


def test_a_passed_deadline_proves_nothing_and_keeps_no_keys(monkeypatch):
    """A 0-second budget (the deadline already passed): no proof, the
    budget's reason, no kept keys; the next check without a deadline gives
    the answer of keys made per check."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    p, q = _many_consts(300), _many_consts(300)
    r = structural_refinement(p, q, deadline=time.monotonic())
    assert (r.proved, r.reason, r.stats.get("budget")) == (False, NO_PROOF_BUDGET, True)
    entry = structural._original_memo(p, create=False)
    assert entry is None or "attrs_keys" not in entry
    assert structural_refinement(p, q).proved
    v = check_rewrite(p, _many_consts(300, 2.0), timeout=0)
    assert v.verdict != "sound", v.verdict


def test_a_deadline_passing_while_the_keys_are_made(monkeypatch):
    """The deadline passes in the middle of the original's key making (the
    key function slowed after its 70th call): the rule stops at the next
    clock reading inside the making, proves nothing, and keeps no partial
    table (a later check makes the whole table and gives the answer of
    keys made per check)."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    p, q, other = _many_consts(400), _many_consts(400), _many_consts(400, 3.0)
    real_key = structural._attrs_key
    calls = [0]

    def slow(attrs):
        calls[0] += 1
        if calls[0] == 70:
            time.sleep(0.3)
        return real_key(attrs)
    monkeypatch.setattr(structural, "_attrs_key", slow)
    r = structural_refinement(p, q, deadline=time.monotonic() + 0.2)
    assert (r.proved, r.reason) == (False, NO_PROOF_BUDGET)
    assert 70 <= calls[0] < 400          # (stopped inside the making: 400 keys)
    entry = structural._original_memo(p, create=False)
    assert entry is not None and "attrs_keys" not in entry
    monkeypatch.setattr(structural, "_attrs_key", real_key)
    assert structural_refinement(p, q).proved
    assert not structural_refinement(p, other).proved
    kept = entry["attrs_keys"]
    assert set(kept) == {id(n.attrs) for n in p.nodes if n.attrs}
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", False)
    assert structural_refinement(p, q).proved and not structural_refinement(p, other).proved


# -- the term pass written out, against the pass as it was -------------------------

def _reference_program_terms(p, terms, leaf_of_read, exact_assigns=False, plan=None,
                             names=None, known=None, values_out=None):
    """`_program_terms` as written before the change (`shaped` and `arg`
    called per node)."""
    value = dict(known) if known else {}
    settled = {}
    if plan is None:
        plan = structural._term_plan(p, exact_assigns)

    def arg(i, table):
        if isinstance(i, FeedIn):
            return terms.feed(i.name, p.feed_type(i.name).dtype)
        return table[(i.node, i.port)]

    assigns, exact = {}, {}
    port_shapes = terms.program_shapes.get(id(p)) or {}

    def shaped(name, results):
        for port, t in enumerate(results):
            sh = port_shapes.get((name, port))
            if sh is not None:
                terms.shapes.setdefault(t, sh)

    for k, (name, op, inputs, f, n_out, need_exact, need_settled, congruent) in enumerate(plan):
        if not k & 63:
            structural._tick()
        if op == VAR:
            continue
        if op == READ:
            value[(name, 0)] = settled[(name, 0)] = t = terms.make(leaf_of_read[name])
            shaped(name, (t,))
            if names is not None:
                names.setdefault(t, name)
        elif op == ASSIGN:
            if inputs[1] is not None and (isinstance(inputs[1], FeedIn)
                                          or (inputs[1].node, inputs[1].port) in settled):
                assigns[name] = arg(inputs[1], settled)
            if exact_assigns:
                exact[name] = arg(inputs[1], value)
        else:
            attrs = p.node[name].attrs
            if need_exact and known and (name, 0) in known:
                results = tuple(value[(name, port)] for port in range(n_out))
            elif need_exact:
                results = terms.apply(op, attrs, tuple(arg(i, value) for i in inputs), n_out)
                shaped(name, results)
                for port, t in enumerate(results):
                    value[(name, port)] = t
                    if names is not None:
                        names.setdefault(t, name)
            if need_settled:
                if congruent:
                    results = terms.apply_up_to_error(
                        op, attrs, tuple(arg(i, settled) for i in inputs), n_out)
                    shaped(name, results)
                for port, t in enumerate(results):
                    settled[(name, port)] = t
                    if names is not None:
                        names.setdefault(t, name)
    outputs = {o: value[(port.node, port.port)] for o, port in p.outputs.items()}
    if values_out is not None:
        values_out.update(value)
    return assigns, outputs, (exact if exact_assigns else None)


def _reference_apply(self, op, attrs, args, n_out):
    """`_Terms.apply` as written before the change."""
    shapes = self.shapes
    key = (op, self.attrs_key(attrs), args, n_out, tuple(map(shapes.get, args)))
    hit = self.applied.get(key)
    if hit is None:
        hit = self.applied[key] = self._apply(op, attrs, args, n_out)
    return hit


def _as_before(monkeypatch) -> None:
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", False)
    monkeypatch.setattr(structural, "_program_terms", _reference_program_terms)
    monkeypatch.setattr(_Terms, "apply", _reference_apply)
    monkeypatch.setattr(S, "_value_shapes",
                        lambda p, read_shapes, unsure=None, kernels=True, tick=None:
                        _reference_value_shapes(p, read_shapes, unsure, kernels))


def _stored_cases():
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            q = c.rewritten()
        except Exception:   # (not a case, or an invalid rewrite on purpose)
            continue
        yield path.name, c.original, q


def test_the_rule_gives_what_the_rule_before_the_change_gave(monkeypatch):
    """Generated originals with four rewrites each, the stored cases in every
    mode and the stored Grappler programs (each original against every
    optimizer's output, in four modes, twice): the same results, reasons
    and counts as the rule with the term pass, `apply` and the static
    shapes' value pass as they were written before, and no kept keys."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    families = _families(30, rewrites=4, seed=2222)
    cases = list(_stored_cases())
    grappler = [g for g in _grappler_programs() if len(g[1].nodes) < 3000]

    def run() -> list:
        rows = [[_row(structural_refinement(p, q, s, o)) for q, s, o in qs]
                for p, qs in families]
        for name, p, q in cases:
            for s, o, real in MODES:
                try:
                    rows.append((name, s, o, real, _row(structural_refinement(p, q, s, o,
                                                                             real=real))))
                except Exception as exc:   # noqa: BLE001  (the same either way)
                    rows.append((name, s, o, real, repr(exc)))
        for name, p, rewritten in grappler:
            for s, o, real in MODES[::2]:
                for _round in range(2):
                    for opt, q in rewritten.items():
                        rows.append((name, opt, s, o, real, _row(structural_refinement(
                            p, q, s, o, real=real))))
        return rows

    now = run()
    _as_before(monkeypatch)
    assert run() == now
    flat = [r[-1] for r in now[len(families):]]
    assert any(r[0] for r in flat if isinstance(r, tuple))


def test_the_term_tables_are_the_tables_of_the_pass_before(monkeypatch):
    """One pass of each stored Grappler program (original and rewrites) and
    each stored case's programs on a fresh term table, with the programs'
    static shapes: the written-out pass and the pass before it leave the
    same terms, shapes, names and values, entry for entry."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    programs = []
    for _name, p, rewritten in _grappler_programs():
        if len(p.nodes) < 3000:
            programs += [p, *rewritten.values()]
    for _name, p, q in _stored_cases():
        if not (p.has_control_flow or q.has_control_flow):
            programs += [p, q]
    compared = 0
    for p in programs:
        try:
            acc = structural._accesses(p)
        except structural._NotApplicable:
            continue
        leaves = {s: ("read", s) for s, (kind, _x, _f) in acc.items() if kind == READ}
        plan = structural._term_plan(p, True)
        (shapes,) = S.static_shapes(p)
        tables = []
        for fn, apply in ((structural._program_terms, _Terms.apply),
                          (_reference_program_terms, _reference_apply)):
            terms = _Terms()
            terms.program_shapes = {id(p): shapes}
            names, values = {}, {}
            with monkeypatch.context() as m:
                m.setattr(_Terms, "apply", apply)
                got = fn(p, terms, leaves, True, plan, names, None, values)
            tables.append((got, names, values, terms.table, terms.shapes, terms.applied,
                           terms.origin, terms.dtypes))
        assert tables[0] == tables[1], p
        compared += 1
    assert compared > 100


# -- static shapes: the one-loop value pass -------------------------------------------

DTYPES = sorted(P.DTYPES)
SHAPES = [(), (1,), (0,), (1, 1), (0, 2), (2, 3)]


def _hostile_shape_program():
    """Consts of every dtype and shape through Identity; a Const and a NoOp
    with control inputs only; a two-output function (an optimizer's input check)
    of constants and of a feed; a Read of a variable whose Assign keeps its declared shape and
    one of a variable an Assign gives another shape (then no Read has a
    shape: (H)); a Reshape to [-1] of a feed."""
    nodes = [P.var("vx", "x"), P.read("rx", "vx"), P.var("vu", "u"), P.read("ru", "vu"),
             Node("nop", "NoOp", (P.ControlIn("rx"),)),
             Node("c_ctl", "Const", (P.ControlIn("nop"),),
                  {"value": Tensor(np.zeros((2, 0), np.float32))}),
             P.assign("wu", "Snd", "vu", "c_ctl", "^ru")]
    outputs = {"c_ctl": "c_ctl", "rx": "rx", "ru": "ru"}
    for dt in DTYPES:
        for k, sh in enumerate(SHAPES):
            name = f"c_{dt}_{k}"
            arr = np.asarray(np.zeros(sh, np.float32), dtype=dt)
            nodes += [Node(name, "Const", (), {"value": Tensor(arr, dt)}),
                      P.apply(f"i_{dt}_{k}", "Identity", name)]
            outputs[f"i_{dt}_{k}"] = f"i_{dt}_{k}"
    nodes += [P.const("four", Tensor(np.arange(4, dtype=np.float32))),
              P.const("alpha", Tensor(np.float32(0.5))),
              P.apply("split_c", "CheckApplyGradientDescent", "alpha", "four"),
              P.apply("split_f", "CheckApplyGradientDescent", "alpha", "$f"),
              P.apply("a0", "Identity", "split_c:0"), P.apply("a1", "Identity", "split_c:1"),
              P.apply("b0", "Identity", "split_f:0"), P.apply("b1", "Identity", "split_f:1"),
              P.apply("flat", "Reshape", "$g", shape=[-1]),
              P.apply("sum", "Add", "$f", "rx")]
    outputs.update({k: k for k in ("a0", "a1", "b0", "b1", "flat", "sum")})
    feeds = {"f": TensorType("float32", (4,)), "g": TensorType("float32", (2, 0, 3))}
    variables = {"x": TensorType("float32", (4,)), "u": TensorType("float32", (2,))}
    return P.program(nodes, outputs, variables, feeds)


def _sigmas():
    f = Tensor(np.array([1.0, -0.0, np.nan, 2.0], np.float32))
    g = Tensor(np.zeros((2, 0, 3), np.float32))
    for u in (Tensor(np.array([1.0, 2.0], np.float32)), Error(UNINITIALIZED)):
        yield {"f": f, "g": g}, {"x": Tensor(np.arange(4, dtype=np.float32)), "u": u}


def test_the_value_pass_claims_the_reference_and_the_oracle_on_hostile_programs():
    """The one-loop pass claims what the pass written argument by argument
    claims (every variable's shape, none, one variable's; with and without
    kernels); the rule's claims (`static_shapes`: the Reads' only where
    every Assign keeps its variable's shape) are the shapes of the values
    the enumerating oracle computes, in every outcome."""
    p = _hostile_shape_program()
    for kernels in (False, True):
        for read_shapes in (True, False, frozenset({"x"}), frozenset({"u"})):
            assert S._value_shapes(p, read_shapes, kernels=kernels) == \
                _reference_value_shapes(p, read_shapes, kernels=kernels)
    (claimed,) = S.static_shapes(p)
    for dt in DTYPES:
        for k, sh in enumerate(SHAPES):
            assert claimed[(f"i_{dt}_{k}", 0)] == sh
    assert ("ru", 0) not in claimed and ("rx", 0) not in claimed   # ((H) fails for u)
    assert claimed[("c_ctl", 0)] == (2, 0) and claimed[("a1", 0)] == (4,)
    assert claimed[("b0", 0)] == () and claimed[("flat", 0)] == (0,)
    assert S._value_shapes(p, frozenset({"x"}))[("sum", 0)] == (4,)
    checked = 0
    for feeds, init in _sigmas():
        for o in set(outcome_set(p, feeds, init, "atomic")):
            for name, value in o.outputs:
                if isinstance(value, Tensor) and (name, 0) in claimed:
                    assert tuple(value.array.shape) == claimed[(name, 0)], name
                    checked += 1
    assert checked > 150


def _random_value(t: TensorType, rng) -> Tensor:
    edge = np.array([0.0, -0.0, 1.0, -1.5, np.nan, np.inf, -np.inf, 1e-45, 3e38])
    if t.dtype in ("float16", "bfloat16", "float32", "float64"):
        arr = rng.choice(edge, size=t.shape)
    else:
        arr = rng.integers(0, 3, size=t.shape)
    return Tensor(np.asarray(arr).astype(P.DTYPES[t.dtype]), t.dtype)


def test_the_rules_claims_are_the_oracles_shapes_on_generated_pairs():
    """Generated originals and their rewrites: every output's claimed shape
    (`static_shapes` of the pair, as the rule takes it) is the shape of that
    output's value in every outcome the enumerating oracle finds, at σ of
    random and edge values (NaN, ±0, ±inf, subnormal)."""
    rng = np.random.default_rng(22)
    checked = 0
    for p, qs in _families(12, rewrites=2, seed=2207):
        for q, s, _o in qs:
            for prog, claimed in zip((p, q), S.static_shapes(p, q)):
                for _k in range(2):
                    feeds = {f: _random_value(prog.feed_type(f), rng) for f in prog.feed_names}
                    init = {x: _random_value(t, rng) for x, t in prog.variables.items()}
                    for o in set(outcome_set(prog, feeds, init, s)):
                        for name, value in o.outputs:
                            port = prog.outputs[name]
                            sh = claimed.get((port.node, port.port))
                            if isinstance(value, Tensor) and sh is not None:
                                assert tuple(value.array.shape) == sh, (name, prog)
                                checked += 1
    assert checked > 50


@pytest.mark.xfail(strict=True, reason=(
    "a node's attribute mapping changed through dict.__setitem__ after a check "
    "keeps its kept `_attrs_key`: the next check of the original in another mode "
    "(real=True, whose term pass is not the kept one) keys the Const by its old "
    "value, so a rewrite with the old constant shares its application entry and "
    "is proved; with the keys made per check it is not.  The same mode was "
    "already wrong before the change (the kept term pass), and check_rewrite "
    "answers `sound` from its identity shortcut either way: frozen attributes "
    "changed behind their back are not supported (docs/review-findings.md)"))
def test_attributes_changed_through_dict_setitem_between_checks(monkeypatch):
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)

    def make(v):
        return P.program([P.const("c", Tensor(np.float32(v))), P.apply("s", "Add", "$x", "c")],
                         {"out": "s"}, feeds={"x": TensorType("float32", ())})
    p = make(1.0)
    assert structural_refinement(p, make(1.0)).proved
    dict.__setitem__(p.node["c"].attrs, "value", Tensor(np.float32(2.0)))
    assert not structural_refinement(p, make(1.0), real=True).proved
