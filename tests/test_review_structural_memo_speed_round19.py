"""Adversarial review of the structural rule's speed round (checking/
structural.py `_original_terms`, the (R1) divisor answer per constant term,
`nan_payload_observer` per op; oracle/program.py `Program.validated`'s
memo, `Program.__eq__`'s early answer, a node's frozen attributes' kept
key).  Each test is one attack; all of them found nothing, and guard the
property they attacked:

* the original's kept terms under checks that change what is not in the
  memo key's obvious part: float mode, NaN-payload blindness, the basic
  rule, TensorFlow's kernels switched off in the thread, a deadline that
  cuts a check short -- against the rule building every pass, and the
  proofs against the enumerating checker;
* (R1)'s product function replaced by hand between two checks of one
  original: no proof from the kept pass, and the enumerating checker finds
  the difference;
* (R1)'s kept divisor answer on edge divisors (subnormal, the largest and
  smallest powers of two, NaN, infinities, zeros, mixed, empty, float64),
  each answer checked bit for bit against numpy's division on edge values;
* equality's early answer against the full identity on programs that
  differ only in a NaN payload, a zero's sign, node order, a control
  input, an output, a variable's shape or a feed's dtype;
* the valid-program memo under `strict` and under kernels switched off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time

import numpy as np
import pytest

from tfsem.checking import structural
from tfsem.checking.check import check_rewrite
from tfsem.checking.structural import _Terms, structural_refinement
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import (ControlIn, DataIn, FeedIn, Node, Program, ProgramError,
                                  TensorType)
from tfsem.oracle.values import Tensor
from test_structural_original_memo import _families


def _row(r) -> tuple:
    return (r.proved, r.reason, {k: v for k, v in r.stats.items() if k != "seconds"})


def _kept(p) -> list:
    memo = structural._original_memo(p, create=False) or {}
    return [k for k in memo if isinstance(k, tuple) and k[0] == "terms"]


# -- the original's kept terms under changing modes --------------------------


def _schedule(families, rng, per_original=8):
    """Checks of each original in a random order: a rewrite, semantics,
    observation, float mode, NaN blindness, the basic rule, kernels off,
    and (sometimes) a deadline so short the check is cut."""
    out = []
    for i, (_p, qs) in enumerate(families):
        for _ in range(per_original):
            q, s, o = rng.choice(qs)
            out.append((i, q, s, o, rng.random() < 0.3, rng.random() < 0.3,
                        rng.random() < 0.2, rng.random() < 0.2, rng.random() < 0.15))
    return out


def _run(families, schedule, cut: bool) -> list:
    rows = []
    for i, q, s, o, real, opaque, basic, no_kernels, short in schedule:
        p = families[i][0]
        if short and cut:
            # (a check cut short by its deadline: its own answer depends on
            # the clock and is not compared; what it leaves behind must not
            # change the next checks' answers)
            structural_refinement(p, q, s, o, real=real, deadline=time.monotonic() + 1e-4)
        with kernels.use(False) if no_kernels else contextlib.nullcontext():
            r = structural_refinement(p, q, s, o, real=real, nan_blind=not opaque, basic=basic)
        rows.append(_row(r))
    return rows


def test_kept_terms_under_changing_modes_agree_with_the_rule_alone(monkeypatch):
    families = _families(24, rewrites=4, seed=1919)
    schedule = _schedule(families, random.Random(19))
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    kept = _run(families, schedule, cut=True)
    assert sum(bool(_kept(p)) for p, _ in families) > len(families) // 2
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", False)
    built = _run(families, schedule, cut=False)
    assert kept == built
    assert any(r[0] for r in kept) and not all(r[0] for r in kept)


def test_proofs_from_kept_terms_are_not_refuted_by_the_enumerating_checker(monkeypatch):
    """Each original's rewrites checked in turn (the later ones from the
    kept pass); a proof there is never an `unsound` of the enumerating
    checker (the structural rule off)."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    families = _families(6, rewrites=3, seed=2319)
    checked, verdicts = 0, []
    for p, qs in families:
        for q, s, o in qs:
            structural_refinement(p, q, s, o)          # (the first keeps the pass)
        assert _kept(p)
        for q, s, o in qs:
            for real in (False, True):
                if not structural_refinement(p, q, s, o, real=real).proved:
                    continue
                v = check_rewrite(p, q, s, o, timeout=10, structural=False, minimize=False,
                                  backends=False, float_mode="real" if real else "exact")
                assert v.verdict != "unsound", (s, o, real, v.reason)
                checked += 1
                verdicts.append(v.verdict)
                break
    assert checked >= 3 and "sound" in verdicts


# -- (R1) and its product function ------------------------------------------


def _division_pair(c: list | float, dtype: str = "float32"):
    """x / c and x * fl(1/c) of a float variable x."""
    def prog(nodes, out):
        return program_from_json({
            "format": "tfsem.program/1",
            "variables": {"x": {"dtype": dtype, "shape": [2]}},
            "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                      {"name": "rx", "op": "Read", "inputs": ["vx"]}, *nodes],
            "outputs": {"o": out}})
    a = np.asarray(c, dtype=dtype)
    with np.errstate(all="ignore"):
        r = (a.dtype.type(1) / a).astype(dtype)
    p = prog([{"name": "c", "op": "Const", "value": {"dtype": dtype, "value": a.tolist()}},
              {"name": "d", "op": "RealDiv", "inputs": ["rx", "c"]}], "d")
    q = prog([{"name": "c", "op": "Const", "value": {"dtype": dtype, "value": r.tolist()}},
              {"name": "d", "op": "Mul", "inputs": ["rx", "c"]}], "d")
    return p, q


def test_a_product_function_replaced_by_hand_after_a_kept_r1_pass(monkeypatch):
    """(R1) turns x / 2 into x * 0.5 in the original's kept pass; Mul then
    replaced by hand (no registration, no version) by one that is not a
    product: the next check takes no proof from the kept pass, and the
    enumerating checker finds the rewrite unsound."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    p, q = _division_pair(2.0)
    assert structural_refinement(p, q).proved and _kept(p)
    mul = fns._REGISTRY["Mul"]
    monkeypatch.setitem(fns._REGISTRY, "Mul", dataclasses.replace(
        mul, impl=lambda xp, args, attrs: (args[0] * args[1] + 1,)))
    assert not structural_refinement(p, q).proved
    assert check_rewrite(p, q, timeout=30, structural=False, minimize=False,
                         backends=False).verdict == "unsound"


_EDGE32 = np.array([0.0, -0.0, 1.0, -1.0, 3.0, 1e-45, -1e-45, 1.1754942e-38, 1.17549435e-38,
                    3.4028235e38, -3.4028235e38, np.inf, -np.inf, np.nan, -np.nan, 0.1, 7e-39,
                    2.5e-38, 1.5e38], np.float32)


@pytest.mark.parametrize("dtype, c", [
    ("float32", 2.0), ("float32", 0.5), ("float32", -4.0), ("float32", 3.0),
    ("float32", 2.0 ** -126), ("float32", 2.0 ** 127), ("float32", 2.0 ** -149),
    ("float32", 2.0 ** 126), ("float32", float("inf")), ("float32", float("nan")),
    ("float32", 0.0), ("float32", -0.0), ("float32", [2.0, 0.25]), ("float32", [2.0, 3.0]),
    ("float32", []), ("float64", 2.0 ** -1022), ("float64", 2.0 ** 1023),
    ("float64", 2.0 ** -1074), ("float64", [-8.0, 0.125])])
def test_the_kept_divisor_answer_is_exact_on_edge_divisors(dtype, c):
    """`division_by_power_of_two` asked twice per divisor (the second from
    the kept answer): the same answer both times and a fresh table's; and
    where it answers x * r, numpy's x / c and x * r have the same bits on
    every edge x (each element against every divisor element, broadcast)."""
    a = np.asarray(c, dtype=dtype)
    div = fns.lookup("RealDiv")
    answers = []
    for _fresh in range(2):
        terms = _Terms()
        x = terms.make(("read", "x"))
        ct = terms.const(Tensor(a, dtype))
        first = terms.division_by_power_of_two(div, {}, (x, ct))
        again = terms.division_by_power_of_two(div, {}, (x, ct))
        assert first == again
        answers.append(None if first is None else (first[0], terms.consts[first[1]]))
    assert (answers[0] is None) == (answers[1] is None)
    if answers[0] is None:
        return
    op, r = answers[0]
    assert op == "Mul" and r.dtype == dtype
    assert np.array_equal(r.array, answers[1][1].array)
    xs = _EDGE32.astype(dtype).reshape(-1, *([1] * a.ndim))
    with np.errstate(all="ignore"):
        assert (xs / a).tobytes() == (xs * r.array).tobytes()


def test_a_rejected_divisor_is_left_to_the_concrete_stages():
    """x / 3 and x * fl(1/3): no (R1), no proof, twice (the second answer
    from the kept one); the enumerating checker finds them unsound."""
    p, q = _division_pair(3.0)
    assert not structural_refinement(p, q).proved
    assert not structural_refinement(p, q).proved
    assert check_rewrite(p, q, timeout=30, structural=False, minimize=False,
                         backends=False).verdict == "unsound"


# -- equality's early answer ------------------------------------------------


def _base() -> Program:
    return Program({"x": TensorType("float32", (2,))},
                   (Node("vx", "Var", (), {"var": "x"}),
                    Node("rx", "Read", (DataIn("vx"),)),
                    Node("c", "Const", (), {"value": Tensor(np.array([0.0, 1.0], np.float32))}),
                    Node("l", "Identity", (DataIn("c"),), {"alpha": 0.0}),
                    Node("m", "Mul", (DataIn("rx"), DataIn("l"))),
                    Node("a", "Assign", (DataIn("vx"), DataIn("m")), {"fn": "Snd"})),
                   {"o": DataIn("m")}, {"f": TensorType("float32", (2,))})


def _mutations(p: Program):
    nodes = list(p.nodes)

    def with_node(i, **changes):
        n = nodes[i]
        data = {"name": n.name, "op": n.op, "inputs": n.inputs, "attrs": dict(n.attrs),
                **changes}
        return Program(p.variables, (*nodes[:i], Node(**data), *nodes[i + 1:]),
                       p.outputs, p.feeds)

    nan1 = np.array([np.nan, 1.0], np.float32)
    nan2 = nan1.copy()
    nan2.view(np.uint32)[0] ^= 1          # (another payload)
    yield Program(p.variables, tuple(nodes), p.outputs, p.feeds)          # equal, not identical
    yield Program(p.variables, tuple(reversed(nodes)), p.outputs, p.feeds)  # order alone
    yield with_node(2, attrs={"value": Tensor(np.array([-0.0, 1.0], np.float32))})
    yield with_node(2, attrs={"value": Tensor(nan1)})
    yield with_node(2, attrs={"value": Tensor(nan2)})
    yield with_node(3, attrs={"alpha": -0.0})
    yield with_node(3, attrs={"alpha": float("nan")})
    yield with_node(3, attrs={"alpha": -float("nan")})
    yield with_node(3, attrs={"alpha": 0})
    yield with_node(3, attrs={})
    yield with_node(4, op="Mul.ftz")
    yield with_node(4, inputs=(DataIn("l"), DataIn("rx")))
    yield with_node(4, inputs=(DataIn("rx"), DataIn("l"), ControlIn("c")))
    yield with_node(4, inputs=(DataIn("rx"), FeedIn("f")))
    yield with_node(4, name="m2")
    yield with_node(5, attrs={"fn": "Add"})
    yield Program(p.variables, tuple(nodes), {"o": DataIn("l")}, p.feeds)
    yield Program(p.variables, tuple(nodes), {"o2": DataIn("m")}, p.feeds)
    yield Program({"x": TensorType("float32", (1, 2))}, tuple(nodes), p.outputs, p.feeds)
    yield Program(p.variables, tuple(nodes), p.outputs, {"f": TensorType("float64", (2,))})
    yield Program(p.variables, tuple(nodes), p.outputs, {})
    yield Program(p.variables, (*nodes, nodes[3]), p.outputs, p.feeds)   # a name twice
    yield Program(p.variables, (*nodes[:3], *nodes[4:]), p.outputs, p.feeds)


def test_equality_is_the_identity_on_one_place_differences():
    """Every pair among the base and its one-place mutations (including
    those the early answer cannot settle: the same nodes in another order,
    a name twice, attributes alone): `==` is the identities' equality, in
    both directions, and equal programs hash equal."""
    progs = [_base(), *_mutations(_base())]
    for a in progs:
        for b in progs:
            same = a._identity == b._identity
            assert (a == b) is same and (b == a) is same
            if same:
                assert hash(a) == hash(b)
    # (what the early answer cannot see, the identity still tells)
    base = progs[0]
    assert base == progs[1] and base == progs[2] and base is not progs[1]
    assert sum(base == q for q in progs) == 3


# -- the valid-program memo -------------------------------------------------


def _shared_port() -> Program:
    return Program({"x": TensorType("float32", ())},
                   (Node("vx", "Var", (), {"var": "x"}),
                    Node("rx", "Read", (DataIn("vx"),)),
                    Node("n", "Neg", (DataIn("rx"),))),
                   {"o": DataIn("n"), "o2": DataIn("n")})


def test_a_program_valid_but_not_strict_is_refused_strictly_after_its_memo():
    p = _shared_port()
    assert p.validated() is p and p.validated() is p
    with pytest.raises(ProgramError, match="one-consumer"):
        p.validated(strict=True)
    with pytest.raises(ProgramError, match="one-consumer"):
        p.validated(strict=True)
    assert p.validated() is p


def test_the_valid_program_memo_under_kernels_off_and_a_replaced_arity(monkeypatch):
    p = _shared_port()
    p.validated()
    with kernels.use(False):
        assert p.validated() is p
    neg = fns._REGISTRY["Neg"]
    monkeypatch.setitem(fns._REGISTRY, "Neg", dataclasses.replace(neg, n_in=2))
    with pytest.raises(ProgramError, match="arity"):
        p.validated()
    monkeypatch.setitem(fns._REGISTRY, "Neg", neg)
    assert p.validated() is p


# -- threads, and programs equal but not identical ---------------------------


def test_threads_in_different_modes_and_equal_copies_agree_with_the_rule_alone(monkeypatch):
    """Four threads check the same originals and their equal copies (other
    program objects sharing the nodes and their attribute mappings), each
    thread in its own float mode, NaN blindness and kernels setting: every
    answer is the rule's alone, computed afterwards in one thread."""
    from concurrent.futures import ThreadPoolExecutor
    families = _families(8, rewrites=3, seed=4141)
    originals = [p for p, _ in families]
    copies = [Program(p.variables, p.nodes, p.outputs, p.feeds) for p in originals]
    assert all(c == p and c is not p for c, p in zip(copies, originals))
    settings = [(False, True, True), (True, True, True), (False, False, True),
                (False, True, False)]

    def work(k: int) -> list:
        real, blind, on = settings[k]
        rows = []
        with kernels.use(on):
            for _round in range(2):
                for i, (_p, qs) in enumerate(families):
                    for p in (originals[i], copies[i]):
                        for q, s, o in qs:
                            rows.append(_row(structural_refinement(p, q, s, o, real=real,
                                                                   nan_blind=blind)))
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(work, range(4)))
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", False)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    alone = [work(k) for k in range(4)]
    assert threaded == alone
    assert any(r[0] for rows in alone for r in rows)


# -- attributes that differ in a NaN's payload or a zero's sign ---------------


def _scaled(alpha: float, constant: bool) -> Program:
    """out = Round19Scale(x, alpha) (x a Read, or a constant: then folded)."""
    x = (Node("c", "Const", (), {"value": Tensor(np.array([1.5, -2.0], np.float32))})
         if constant else Node("rx", "Read", (DataIn("vx"),)))
    return Program({"x": TensorType("float32", (2,))},
                   (Node("vx", "Var", (), {"var": "x"}), x,
                    Node("s", "Round19Scale", (DataIn(x.name),), {"alpha": alpha})),
                   {"o": DataIn("s")})


def test_attributes_differing_in_nan_payload_or_zero_sign_are_not_taken_from_a_kept_pass(
        monkeypatch):
    """A user's function scaling by a float attribute: the original with
    alpha a, each rewrite with another alpha of the same value as a float
    but other bits (a NaN's payload or sign, a zero's sign).  Checked after
    the identical rewrite (whose check keeps the original's pass): a proof
    only for the same bits, as the rule building every pass says; the
    product shows the bits (x * NaN carries the NaN's payload)."""
    monkeypatch.setitem(fns._REGISTRY, "Round19Scale", fns.Function(
        "Round19Scale", 1, 1, lambda xp, args, attrs: (args[0] * np.float32(attrs["alpha"]),),
        attrs={"alpha": lambda v, where: v}))
    nan = float("nan")
    # (a payload bit float32 keeps: the function computes in float32, and
    # a float64 NaN's low payload bits are gone there)
    other = np.frombuffer(
        (np.frombuffer(np.float64(nan).tobytes(), np.uint64) ^ np.uint64(1 << 40)).tobytes(),
        np.float64)[0]
    assert other != other
    assert np.float32(other).tobytes() != np.float32(nan).tobytes()
    alphas = [(0.0, -0.0), (nan, -nan), (nan, float(other))]

    def run() -> list:
        rows = []
        for constant in (False, True):
            for a, b in alphas:
                p = _scaled(a, constant).validated()
                for q in (_scaled(a, constant), _scaled(b, constant), _scaled(a, constant)):
                    for real in (False, True):
                        rows.append(structural_refinement(p, q.validated(), real=real).proved)
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    kept = run()
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", False)
    assert kept == run()
    # (the same attribute: proved; other bits: not, read or folded alike)
    assert kept == [True, True, False, False, True, True] * (2 * len(alphas))


def test_stored_grappler_programs_under_changing_modes_agree_with_the_rule_alone(monkeypatch):
    """The stored originals of real graphs, each checked against random
    optimizers' outputs with the semantics, observation, float mode, NaN
    blindness, basic rule and TensorFlow's kernels changing between checks
    (kernels off makes an op with no numpy model refuse to fold): the same
    answers as the rule building every pass."""
    from test_structural_original_terms import _grappler_programs
    programs = [g for g in _grappler_programs() if len(g[1].nodes) < 500]
    assert programs
    rng = random.Random(7)
    schedule = [(j, rng.choice(sorted(programs[j][2])), rng.choice(["atomic", "decomposed"]),
                 rng.choice(["outputs", "outputs+state"]), rng.random() < 0.3,
                 rng.random() < 0.3, rng.random() < 0.2, rng.random() < 0.2)
                for j in range(len(programs)) for _ in range(8)]

    def run() -> list:
        rows = []
        for j, opt, s, o, real, opaque, basic, no_kernels in schedule:
            _name, p, rewritten = programs[j]
            with kernels.use(False) if no_kernels else contextlib.nullcontext():
                rows.append(_row(structural_refinement(p, rewritten[opt], s, o, real=real,
                                                       nan_blind=not opaque, basic=basic)))
        return rows

    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    kept = run()
    assert any(_kept(p) for _n, p, _r in programs)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", False)
    assert kept == run()
    assert any(r[0] for r in kept)
