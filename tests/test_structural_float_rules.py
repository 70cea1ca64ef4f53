"""The structural rule's float rules (checking/structural.py, "Float rules"):
(R1) a division by a constant power of two is the product with its exact
reciprocal, (R2) a commutative op's constant operand goes second.  Each is
compared with the enumerating oracle at σ of edge values (NaN, signed
zeros, subnormals, infinities, the largest floats, an uninitialized
variable) on generated divisors and constants: where the rule proves, the
oracle shows no difference; divisors just outside (R1) (2^127, whose
reciprocal is subnormal; 3, 196, 0.1; a reciprocal one bit off) are never
proved, and the oracle shows a difference for them.  Then the plain σ of
the concrete fallback (checking/check.py `_plain_sigma`) and a corpus
graph where (R2) fires (tests/grappler/tf1_mlp_adam.json)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tfsem.checking import check_rewrite
from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"
F32 = np.float32
EDGE = [F32("nan"), F32(0.0), F32(-0.0), F32(1e-45), F32(-1e-40), F32(1.1754944e-38),
        F32("inf"), F32("-inf"), F32(3.4028235e38), F32(-1.5), F32(3.0), F32(0.1),
        F32(5.0), F32(6.29)]   # (5 / 3, 5 / 196 and 6.29 / 0.1 round unlike their products)
#: initial values of x besides uninitialized (nightly: and EDGE's pairs of ends)
INITS = [(0.0, -0.0), (3.4028235e38, -3.4028235e38), (1e-45, float("inf")), (float("nan"), -1.5)]


def program(op: str, const, *, const_first: bool = False, dtype: str = "float32",
            feed_dtype: str | None = None):
    """out = op(Read(v), c) (or op(c, Read(v))), and v := out; a feed $b
    added to v first (so that σ reaches every element)."""
    c = {"dtype": dtype, "value": np.asarray(const, dtype).tolist()}
    args = ["c", "s"] if const_first else ["s", "c"]
    nodes = [{"name": "v", "op": "Var", "var": "x"},
             {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "s", "op": "Add.ftz" if op.endswith(".ftz") else "Add",
              "inputs": ["r", "$b"]},
             {"name": "c", "op": "Const", "value": c},
             {"name": "o", "op": op, "inputs": args},
             {"name": "w", "op": "Write", "inputs": ["v", "o", "^r"]}]
    return program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": dtype, "shape": [2]}},
        "feeds": {"b": {"dtype": feed_dtype or dtype, "shape": [2]}},
        "nodes": nodes, "outputs": {"out": "o"}})


def oracle_differs(p, q, dtype: str = "float32", feed_dtype: str | None = None) -> bool:
    """Outcomes(q, σ) ⊄ Outcomes(p, σ) at some σ of edge values."""
    edge = [np.asarray(e, dtype) for e in EDGE]
    inits = [None] + INITS + (list(zip(edge, edge[::-1])) if NIGHTLY else [])
    for a, b in itertools.product(edge, edge[::3] if NIGHTLY else edge[::7]):
        for init in inits:
            feeds = {"b": Tensor(np.array([a, b], feed_dtype or dtype))}
            x = {"x": Error(UNINITIALIZED)} if init is None else \
                {"x": Tensor(np.array(init, dtype))}
            ours = outcome_set(p, feeds, x, "atomic", "outputs+state")
            theirs = outcome_set(q, feeds, x, "atomic", "outputs+state")
            if any(o not in ours for o, _ in theirs.items()):
                return True
    return False


def reciprocal(c, dtype="float32"):
    with np.errstate(all="ignore"):
        return np.asarray(1, dtype) / np.asarray(c, dtype)


POWERS = [2.0, 0.5, -4.0, 256.0, 2.0 ** -126, 2.0 ** 126, [2.0, -0.25]]
NOT_POWERS = [3.0, 196.0, 0.1, 2.0 ** 127, 2.0 ** -127, [2.0, 3.0]]


@pytest.mark.parametrize("op", ["RealDiv.ftz", "RealDiv"] if NIGHTLY else ["RealDiv.ftz"])
@pytest.mark.parametrize("c", POWERS if NIGHTLY else [POWERS[0], POWERS[4], POWERS[6]])
def test_a_division_by_a_power_of_two_is_proved_and_the_oracle_agrees(op, c):
    mul = op.replace("RealDiv", "Mul")
    p, q = program(op, c), program(mul, reciprocal(c))
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    assert not oracle_differs(p, q)
    # (R1) is what proves it
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "DIVISION_BY_POWER_OF_TWO", False)
        assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("c", NOT_POWERS if NIGHTLY else [3.0, 2.0 ** 127])
def test_a_division_by_anything_else_is_not_proved_and_the_oracle_differs(c):
    p, q = program("RealDiv.ftz", c), program("Mul.ftz", reciprocal(c))
    assert not structural_refinement(p, q).proved
    assert oracle_differs(p, q)


def test_a_reciprocal_one_bit_off_is_not_proved():
    off = np.nextafter(F32(0.5), F32(1))
    p, q = program("RealDiv.ftz", 2.0), program("Mul.ftz", off)
    assert not structural_refinement(p, q).proved
    assert oracle_differs(p, q)


def test_a_division_of_another_dtype_is_the_same_error_either_way():
    # a float64 feed against a float32 divisor: dtype-mismatch on both sides
    p = program("RealDiv", 4.0, feed_dtype="float64")
    q = program("Mul", reciprocal(4.0), feed_dtype="float64")
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q, feed_dtype="float64")


def test_float64_divisions_by_powers_of_two():
    p = program("RealDiv", 2.0 ** -1000, dtype="float64")
    q = program("Mul", reciprocal(2.0 ** -1000, "float64"), dtype="float64")
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q, dtype="float64")


@settings(max_examples=40 if NIGHTLY else 4, deadline=None)
@given(bits=st.integers(0, 2 ** 32 - 1))
def test_generated_divisors_proved_only_where_the_oracle_agrees(bits):
    """Any float32 divisor (drawn by its bits: NaN, infinities, zeros,
    subnormals included): where (R1) proves, the oracle finds no difference."""
    c = np.array(bits, np.uint32).view(F32)
    p, q = program("RealDiv.ftz", c), program("Mul.ftz", reciprocal(c))
    if structural_refinement(p, q).proved:
        m, _ = np.frexp(c)
        assert abs(float(m)) == 0.5
        assert not oracle_differs(p, q)


@pytest.mark.parametrize("op", ["Mul.ftz", "Add.ftz", "Mul", "Add"] if NIGHTLY else ["Mul.ftz", "Add"])
@pytest.mark.parametrize("c", [1.0, float("nan"), -0.0, 1e-45] if NIGHTLY else [float("nan"), 1e-45])
def test_a_constant_operand_moved_first_is_proved_and_the_oracle_agrees(op, c):
    # the output compares exactly: (R2) is what matches the two orders
    p, q = program(op, c), program(op, c, const_first=True)
    assert structural_refinement(p, q).proved
    assert not oracle_differs(p, q)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "CONSTANT_OPERAND_SECOND", False)
        assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("op", ["Sub.ftz", "RealDiv.ftz", "Max.ftz"] if NIGHTLY else ["Sub.ftz"])
def test_an_op_that_does_not_commute_keeps_its_order(op):
    # (0.0: Max returns one operand on a tie of 0.0 and -0.0)
    p, q = program(op, 0.0), program(op, 0.0, const_first=True)
    assert not structural_refinement(p, q).proved
    assert oracle_differs(p, q)


def test_two_non_constant_operands_keep_their_order_in_outputs():
    def prog(args):
        return program_from_json({
            "format": "tfsem.program/1",
            "variables": {"x": {"dtype": "float32", "shape": [2]},
                          "y": {"dtype": "float32", "shape": [2]}},
            "nodes": [{"name": "v", "op": "Var", "var": "x"}, {"name": "u", "op": "Var", "var": "y"},
                      {"name": "r", "op": "Read", "inputs": ["v"]},
                      {"name": "s", "op": "Read", "inputs": ["u"]},
                      {"name": "o", "op": "Mul.ftz", "inputs": args}],
            "outputs": {"out": "o"}})
    assert not structural_refinement(prog(["r", "s"]), prog(["s", "r"])).proved


# -- the plain σ of the concrete fallback ----------------------------------------


def test_race_freedom():
    from tfsem.checking.structural import race_free
    p = many_variables("RealDiv.ftz", 0.1)
    assert race_free(p)           # the Write waits for the Read (^r0)
    raw = {"format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": []}},
           "nodes": [{"name": "v", "op": "Var", "var": "x"},
                     {"name": "r", "op": "Read", "inputs": ["v"]},
                     {"name": "one", "op": "Const", "value": {"dtype": "float32", "value": 1.0}},
                     {"name": "w", "op": "Write", "inputs": ["v", "one"]}],
           "outputs": {"out": "r"}}
    assert not race_free(program_from_json(raw))      # the Read races the Write
    raw["nodes"][3]["inputs"].append("^r")
    assert race_free(program_from_json(raw))


def _sum_of_reads(nodes: list, n: int) -> str:
    """Appends to `nodes` a Read of each of x0 .. x{n-1} and their sum, left
    to right (Add.ftz); the sum's node name."""
    for i in range(n):
        nodes += [{"name": f"v{i}", "op": "Var", "var": f"x{i}"},
                  {"name": f"r{i}", "op": "Read", "inputs": [f"v{i}"]}]
    prev = "r0"
    for i in range(1, n):
        nodes.append({"name": f"s{i}", "op": "Add.ftz", "inputs": [prev, f"r{i}"]})
        prev = f"s{i}"
    return prev


def many_variables(op: str, const: float, n: int = 12):
    """out = op(v0 + v1 + ... + v{n-1}, c), assigned to v0 too: more
    variables than the symbolic search flags (MAX_FLAGGED_VARIABLES)."""
    nodes = [{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": const}}]
    prev = _sum_of_reads(nodes, n)
    nodes += [{"name": "o", "op": op, "inputs": [prev, "c"]},
              {"name": "w", "op": "Write", "inputs": ["v0", "o", "^r0"]}]
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {f"x{i}": {"dtype": "float32", "shape": [3]} for i in range(n)},
        "nodes": nodes, "outputs": {"out": "o"}})


def test_the_plain_sigma_shows_a_rounding_difference_at_once():
    """x / 0.1 against x * 10 (fl(1/0.1) is 10) over 12 variables: zeros and
    ones round alike (12 / 0.1 is 120), the random σ leave a variable
    uninitialized (each a quarter of the time) or put a NaN or an infinity
    in the sum almost always, and the refutation stage's small halves round
    alike too; the plain σ, third (both programs are race-free),
    initializes all of them with ordinary values, where the two differ
    (6.29 / 0.1 is not 6.29 * 10).  Without it, one run: `no-counterexample`
    after 454 σ (another, with other timings, found a σ late)."""
    p, q = many_variables("RealDiv.ftz", 0.1), many_variables("Mul.ftz", float(reciprocal(0.1)))
    v = check_rewrite(p, q, timeout=10, minimize=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["tried"] == 3
    init = v.counterexample.init
    assert all(isinstance(init[f"x{i}"], Tensor) for i in range(12))
    # and a division by 4 is proved, by (R1), before any σ
    p, q = many_variables("RealDiv.ftz", 4.0), many_variables("Mul.ftz", 0.25)
    v = check_rewrite(p, q, timeout=20)
    assert v.verdict == "sound" and v.stats["path"] == "structural"


def reassociated(folded: bool, n: int = 12):
    """out = 0.03125 * (2 * (y - (v0 + ... + v{n-1}))), or its constants
    folded, 0.0625 * (y - ...): equal except where the doubling overflows."""
    nodes = [{"name": "two", "op": "Const", "value": {"dtype": "float32", "value": 2.0}},
             {"name": "c", "op": "Const", "value": {"dtype": "float32", "value": 0.03125}},
             {"name": "c2", "op": "Const", "value": {"dtype": "float32", "value": 0.0625}}]
    prev = _sum_of_reads(nodes, n)
    nodes.append({"name": "d", "op": "Sub.ftz", "inputs": ["$y", prev]})
    if folded:
        nodes.append({"name": "o", "op": "Mul.ftz", "inputs": ["d", "c2"]})
    else:
        nodes += [{"name": "t", "op": "Mul.ftz", "inputs": ["d", "two"]},
                  {"name": "o", "op": "Mul.ftz", "inputs": ["t", "c"]}]
    nodes.append({"name": "w", "op": "Write", "inputs": ["v0", "o", "^r0"]})
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {f"x{i}": {"dtype": "float32", "shape": [8]} for i in range(n)},
        "feeds": {"y": {"dtype": "float32", "shape": [8]}},
        "nodes": nodes, "outputs": {"out": "o"}})


def test_the_huge_feeds_sigma_shows_an_overflow_difference():
    """Constant folding's `0.03125 * (2 * d)` -> `0.0625 * d` differs only
    where `2 * d` overflows: the plain σ with its float feeds times 1e38,
    the fallback's fourth σ for race-free programs, shows it (the variables
    plain: `d` huge but finite); zeros, ones and the plain σ do not."""
    from tfsem.checking.check import HUGE_FEED_SCALE, _generated_sigmas, _plain_sigma
    p, q = reassociated(False), reassociated(True)
    assert not structural_refinement(p, q).proved

    def differs(sigma) -> bool:
        feeds, init = sigma
        ours = outcome_set(p, feeds, init, "atomic", "outputs+state")
        return any(o not in ours for o, _ in outcome_set(q, feeds, init).items())

    sigmas = list(itertools.islice(_generated_sigmas(p, np.random.default_rng(0), plain=True), 4))
    assert [differs(s) for s in sigmas] == [False, False, False, True]
    huge = _plain_sigma(p, HUGE_FEED_SCALE)
    assert all(np.array_equal(huge[0][f].array, sigmas[3][0][f].array) for f in huge[0])
    if NIGHTLY:   # the check itself finds it there
        v = check_rewrite(p, q, timeout=10, minimize=False)
        assert v.verdict == "unsound", v.reason
        assert v.stats["tried"] == 4   # (the σ reported is the solver's smaller one)


# -- a corpus graph: (R2) on Grappler's common-subgraph elimination ---------------

CORPUS = Path(__file__).parent / "grappler" / "tf1_mlp_adam.json"


def test_cse_of_the_tf1_adam_step_is_proved_with_the_constant_operand_second():
    """Grappler's CSE rewrote the TF1 Adam step's `loss = x * 1.0` as
    `1.0 * x` (an output, compared exactly): before (R2) the structural rule
    failed on it ("(V) output 'loss' is not the same term") and the
    symbolic stage proved the check in 0.6 s (docs/benchmarks.md)."""
    data = json.loads(CORPUS.read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["common_subgraph_elimination"])
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "CONSTANT_OPERAND_SECOND", False)
        r = structural_refinement(p, q)
        assert not r.proved and "output 'loss'" in r.reason


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
def test_constant_folding_of_the_cnn_step_differs_at_the_plain_sigma():
    """Grappler's constant folding rewrote the CNN step's batch-norm
    gradient `x / 196` as `x * 0.0051020407` (fl(1/196)): not (R1), so no
    proof, and the two round differently for most x.  Before the plain σ
    the check ended `no-counterexample` after 7.4 s (12 σ, each leaving one
    of its 24 variables uninitialized or a NaN in every reduction); now
    the plain σ shows the difference: the probe's first σ on a race-free
    float graph of PROBE_PLAIN_FIRST_NODES nodes or more (365 here), and
    without that, compared in full third by the fallback."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    data = json.loads((Path(__file__).parent / "grappler" / "keras_cnn_batchnorm.json").read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["constfold"])
    from tfsem.checking import check as C
    with kernels.use(True):
        assert not structural_refinement(p, q).proved
        v = check_rewrite(p, q, timeout=60, minimize=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "probe" and v.stats["probe"]["found"] == "plain", v.stats
    assert all(isinstance(x, Tensor) for x in v.counterexample.init.values())
    # below the node threshold the probe tries the plain σ second (both
    # programs are race-free), and without the probe's plain σ the fallback
    # compares it in full third
    with pytest.MonkeyPatch.context() as m, kernels.use(True):
        m.setattr(C, "PROBE_PLAIN_FIRST_NODES", len(p.nodes) + 1)
        v = check_rewrite(p, q, timeout=60, minimize=False)
        assert v.verdict == "unsound", v.reason
        assert v.stats["path"] == "probe" and v.stats["probe"]["found"] == "plain", v.stats
        assert v.stats["probe"]["sigmas"] == 2, v.stats
        m.setattr(C, "PROBE_PLAIN", False)
        v = check_rewrite(p, q, timeout=60, minimize=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] != "probe" and v.stats["tried"] == 3, v.stats
    assert all(isinstance(x, Tensor) for x in v.counterexample.init.values())
