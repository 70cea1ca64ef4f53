"""`--float exact|real` and the two kinds of difference (SPEC section 11,
docs/verdicts.md "Floating-point modes")."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import z3

from tfsem.checking import check_rewrite
from tfsem.checking.encode import Encoder, NotReal, real_const
from tfsem.checking.symbolic import RealAlgebra
from tfsem.checking.verdict import FLOAT_MODES
from tfsem.cli import main
from tfsem.commands import common
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import save_program
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import Tensor

F32 = {"sub": TensorType("float32")}


def reassociation(c1: float = 0.5, fold: bool = False):
    """Constant folding's reassociation from issue 23: c1*(sub*2) -> sub*(2*c1)."""
    orig = P.program([P.const("c1", c1, dtype="float32"), P.const("two", 2.0, dtype="float32"),
                      P.apply("s2", "Mul", "$sub", "two"), P.apply("r", "Mul", "c1", "s2")],
                     {"out": "r"}, [], F32)
    if fold:
        nodes = [P.const("c2", float(np.float32(2.0) * np.float32(c1)), dtype="float32"),
                 P.apply("r", "Mul", "$sub", "c2")]
    else:
        nodes = [P.const("c1", c1, dtype="float32"), P.const("two", 2.0, dtype="float32"),
                 P.apply("m", "Mul", "two", "c1"), P.apply("r", "Mul", "$sub", "m")]
    return orig, P.program(nodes, {"out": "r"}, [], F32)


def dropped_control_edge():
    """A write of a float variable and a read that waited for it; the rewrite
    drops the control edge, so the read may see the value before the update."""
    vs = {"x": TensorType("float32")}
    feeds = {"g": TensorType("float32")}

    def prog(*control):
        return P.program([P.var("v", "x"), P.const("lr", 0.5, dtype="float32"),
                          P.apply("d", "Mul", "$g", "lr"),
                          P.assign("w", "Sub", "v", "d"),
                          P.var("v2", "x"), P.read("r", "v2", *control)],
                         {"out": "r"}, vs, feeds)
    return prog("^w"), prog()


@pytest.mark.parametrize("fold", [False, True])
def test_reassociation_is_unsound_of_floating_point_kind_and_sound_over_the_reals(fold):
    orig, rew = reassociation(fold=fold)
    exact = check_rewrite(orig, rew)
    assert exact.verdict == "unsound"
    assert exact.difference == "floating-point"
    data = exact.to_json()
    assert data["float"] == "exact" and data["difference"] == "floating-point"
    assert exact.describe().splitlines()[1].startswith("  kind: floating-point: ")
    real = check_rewrite(orig, rew, float_mode="real")
    assert real.verdict == "sound"
    assert real.stats["queries"] >= 1           # a proof over the reals, not a match
    assert real.describe().startswith("sound up to floating-point rounding")
    assert real.to_json()["difference"] is None


def test_dropped_control_edge_is_ordering_and_state_in_both_modes():
    orig, rew = dropped_control_edge()
    exact = check_rewrite(orig, rew)
    assert exact.verdict == "unsound"
    assert exact.difference == "ordering-and-state"
    real = check_rewrite(orig, rew, float_mode="real")
    assert real.verdict == "unsound"
    assert real.difference == "ordering-and-state"
    assert real.confirmed == ["reals"]
    cex = real.counterexample
    assert cex is not None and "r" in cex.schedule


def test_a_difference_without_floats_is_of_ordering_without_a_second_check():
    """No float value in either program: exact and real arithmetic are one,
    so the kind needs no check over the reals; a float hidden in an
    attribute (a Cast to float32) still gets one."""
    vs = {"x": TensorType("int64")}

    def prog(*control, cast=False):
        extra = [P.apply("c", "Cast", "r", DstT="float32")] if cast else []
        return P.program([P.var("v", "x"), P.const("one", 1), P.assign("w", "Add", "v", "one"),
                          P.var("v2", "x"), P.read("r", "v2", *control), *extra],
                         {"out": "c" if cast else "r"}, vs)
    verdict = check_rewrite(prog("^w"), prog())
    assert verdict.verdict == "unsound" and verdict.difference == "ordering-and-state"
    assert verdict.stats["difference_check"]["reason"] == "no floating-point value in either program"
    verdict = check_rewrite(prog("^w", cast=True), prog(cast=True))
    # (Cast has no model over the reals: the second check may not decide)
    assert verdict.verdict == "unsound" and verdict.difference in ("ordering-and-state", "undetermined")
    assert verdict.stats["difference_check"]["reason"] != "no floating-point value in either program"


def test_a_rounded_constant_is_not_its_real_value():
    # f32(0.1) * 3 folded into f32(0.3): equal after rounding, not over the reals
    orig = P.program([P.const("c", 0.1, dtype="float32"), P.const("k", 3.0, dtype="float32"),
                      P.apply("m", "Mul", "c", "k"), P.apply("r", "Mul", "$sub", "m")],
                     {"out": "r"}, [], F32)
    folded = float(np.float32(0.1) * np.float32(3.0))
    rew = P.program([P.const("m", folded, dtype="float32"), P.apply("r", "Mul", "$sub", "m")],
                    {"out": "r"}, [], F32)
    # over IEEE the folding is exact (same rounding): the engine proves it
    assert check_rewrite(orig, rew).verdict == "sound"
    # over the reals f32(0.1)*3 != f32(f32(0.1)*3): never `sound`
    real = check_rewrite(orig, rew, float_mode="real")
    assert real.verdict == "unsound"
    assert real.stats.get("confirmed_exactly")


def test_an_infinite_constant_has_no_real_value():
    orig, _ = reassociation(c1=3.0e38)
    inf = P.program([P.const("c2", float("inf"), dtype="float32"), P.apply("r", "Mul", "$sub", "c2")],
                    {"out": "r"}, [], F32)
    v = check_rewrite(orig, inf, float_mode="real")
    assert v.verdict == "unknown" and "no value over the reals" in v.reason
    with pytest.raises(NotReal):
        real_const(np.float32("nan"), "float32")


def test_the_option_and_json(tmp_path, capsys):
    assert common.FLOAT_MODES == FLOAT_MODES
    orig, rew = reassociation()
    save_program(orig, tmp_path / "o.json")
    save_program(rew, tmp_path / "r.json")
    assert main(["check", str(tmp_path / "o.json"), str(tmp_path / "r.json"), "--json",
                 "--no-tensorflow"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["verdict"], data["float"], data["difference"]) == \
        ("unsound", "exact", "floating-point")
    assert main(["check", str(tmp_path / "o.json"), str(tmp_path / "r.json"),
                 "--float", "real"]) == 0
    assert capsys.readouterr().out.startswith("sound up to floating-point rounding")
    with pytest.raises(SystemExit) as exc:
        main(["check", str(tmp_path / "o.json"), str(tmp_path / "r.json"), "--float", "ieee"])
    assert exc.value.code == 2
    with pytest.raises(ValueError):
        check_rewrite(orig, rew, float_mode="ieee")


# ---------------------------------------------------------------------------
# The real-number encoding against exact Fraction arithmetic

_OPS = ("add", "sub", "mul", "neg", "max", "min")


def _fraction(op, args):
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":
        return args[0] * args[1]
    if op == "neg":
        return -args[0]
    return max(args) if op == "max" else min(args)


def _random_expr(alg, rng, leaves, consts, depth):
    """A random term over `leaves` and constants, with its Fraction value."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.5:
            leaf, value = leaves[rng.integers(len(leaves))]
            return leaf, value
        c = consts[rng.integers(len(consts))]
        return alg.const(c, "float32"), Fraction(float(c))
    op = _OPS[rng.integers(len(_OPS))]
    n = 1 if op == "neg" else 2
    parts = [_random_expr(alg, rng, leaves, consts, depth - 1) for _ in range(n)]
    return alg.apply_elem(op, tuple(p[0] for p in parts)), _fraction(op, [p[1] for p in parts])


def test_the_real_encoding_agrees_with_fraction_arithmetic():
    rng = np.random.default_rng(23)
    consts = [np.float32(x) for x in (0.0, -0.0, 1.0, 0.1, -2.5, 3.0e38, 1e-45, 7.0)]
    for round_ in range(60):
        alg = RealAlgebra()
        enc = Encoder(real=True)
        leaves = []
        subs = []
        for i in range(3):
            (leaf,) = alg.leaf("feed", f"a{i}", TensorType("float32")).elems
            value = np.float32(rng.choice([rng.normal() * 10.0 ** int(rng.integers(-40, 38)),
                                           float(rng.integers(-5, 5))]))
            leaves.append((leaf, Fraction(float(value))))
            subs.append((enc.leaf(leaf), real_const(value, "float32")))
        term, expected = _random_expr(alg, rng, leaves, consts, 4)
        got = z3.simplify(z3.substitute(enc.elem(term), *subs))
        assert z3.is_rational_value(got), (round_, term, got)
        assert Fraction(got.numerator_as_long(), got.denominator_as_long()) == expected, \
            (round_, term)


def _random_program(rng, feeds, n_nodes):
    """A random pure float32 program over `feeds` and its Fraction evaluator."""
    consts = (0.5, -2.0, 0.1, 3.0, 1.0)
    nodes, spec, names = [], [], [f"${f}" for f in feeds]
    for k in range(n_nodes):
        name = f"n{k}"
        if rng.random() < 0.2:
            c = consts[rng.integers(len(consts))]
            nodes.append(P.const(name, c, dtype="float32"))
            spec.append((name, "const", Fraction(float(np.float32(c)))))
        else:
            op = ("Add", "Sub", "Mul", "Neg", "Maximum", "Minimum")[rng.integers(6)]
            op = {"Maximum": "Max", "Minimum": "Min"}.get(op, op)
            args = tuple(names[rng.integers(len(names))] for _ in range(1 if op == "Neg" else 2))
            nodes.append(P.apply(name, op, *args))
            spec.append((name, op.lower(), args))
        names.append(name)
    prog = P.program(nodes, {"out": names[-1]}, [], {f: TensorType("float32") for f in feeds})

    def evaluate(sigma: dict[str, Fraction]) -> Fraction:
        env = {f"${f}": v for f, v in sigma.items()}
        for name, op, a in spec:
            env[name] = a if op == "const" else _fraction(op, [env[x] for x in a])
        return env[names[-1]]
    return prog, evaluate


def test_real_mode_verdicts_agree_with_fraction_evaluation():
    """Random pairs of small float programs: `sound` over the reals means
    equal Fraction values at random σ; `unsound` means the counterexample's σ
    gives different Fraction values."""
    rng = np.random.default_rng(11)
    feeds = ("a", "b")
    seen = {"sound": 0, "unsound": 0}
    for _ in range(40):
        n = int(rng.integers(1, 4))
        p, ev_p = _random_program(rng, feeds, n)
        q, ev_q = _random_program(rng, feeds, n)
        if rng.random() < 0.3:
            q, ev_q = p, ev_p
        v = check_rewrite(p, q, float_mode="real", timeout=5)
        assert v.verdict in ("sound", "unsound", "unknown")
        if v.verdict in seen:
            seen[v.verdict] += 1
        if v.verdict == "sound":
            for _ in range(5):
                sigma = {f: Fraction(float(np.float32(rng.normal() * 100))) for f in feeds}
                assert ev_p(sigma) == ev_q(sigma)
        elif v.verdict == "unsound":
            cx = v.counterexample
            sigma = {f: Fraction(float(cx.feeds[f].array.reshape(-1)[0])) for f in feeds
                     if f in cx.feeds}
            sigma.update({f: Fraction(0) for f in feeds if f not in sigma})
            assert ev_p(sigma) != ev_q(sigma)
    assert seen["sound"] >= 5 and seen["unsound"] >= 5, seen


def test_grappler_reports_the_verdict_over_the_reals_beside_each_optimizer(capsys):
    pytest.importorskip("tensorflow")
    from pathlib import Path
    graph = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "group_fanin.pbtxt"
    assert main(["grappler", str(graph), "--optimizer", "loop", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["verdict"]["verdict"] == "sound" and row["verdict"]["float"] == "exact"
    assert row["real"]["verdict"] == "sound"
    assert main(["grappler", str(graph), "--optimizer", "loop"]) == 0
    assert "    over the reals (--float real): sound up to floating-point rounding" in \
        capsys.readouterr().out


def test_the_structural_rule_does_not_fold_floats_over_the_reals():
    """Folding computes in IEEE arithmetic: under `real` the structural rule
    keeps float constants as terms (a proof of its own would be false here)."""
    vs = {"x": TensorType("float32")}
    orig = P.program([P.var("v", "x"), P.const("c", 0.1, dtype="float32"),
                      P.const("k", 3.0, dtype="float32"), P.apply("m", "Mul", "c", "k"),
                      P.assign("w", "Snd", "v", "m")], {}, vs)
    folded = float(np.float32(0.1) * np.float32(3.0))
    rew = P.program([P.var("v", "x"), P.const("m", folded, dtype="float32"),
                     P.assign("w", "Snd", "v", "m")], {}, vs)
    exact = check_rewrite(orig, rew)
    assert exact.verdict == "sound" and exact.stats["path"] == "structural"
    real = check_rewrite(orig, rew, float_mode="real")
    assert real.verdict == "unsound"
    # the rule itself still proves what holds for every meaning of the ops
    ident = P.program([P.var("v", "x"), P.const("c", 0.1, dtype="float32"),
                       P.const("k", 3.0, dtype="float32"), P.apply("m", "Mul", "c", "k"),
                       P.apply("i", "Identity", "m"), P.assign("w", "Snd", "v", "i")], {}, vs)
    v = check_rewrite(ident, orig, float_mode="real")
    assert v.verdict == "sound" and v.stats.get("path") == "structural"


def test_signed_zero_constants_are_one_real():
    f32 = {"a": TensorType("float32")}
    neg = P.program([P.const("r", -0.0, dtype="float32")], {"out": "r"}, [], f32)
    pos = P.program([P.const("r", 0.0, dtype="float32")], {"out": "r"}, [], f32)
    exact = check_rewrite(neg, pos)
    assert exact.verdict == "unsound" and exact.difference == "floating-point"
    assert check_rewrite(neg, pos, float_mode="real").verdict == "sound"
    one = P.program([P.const("r", 1.0, dtype="float32")], {"out": "r"}, [], f32)
    assert check_rewrite(neg, one, float_mode="real").verdict == "unsound"



def _nan_bits_pair(bits: int, bits2: int, op: str = "tf.Bitcast/1/1", swap: bool = False):
    """A float32 constant of bits `bits` (then `bits2`) added to a feed and
    viewed as int32 through `op` (the rewrite's sum with its operands
    swapped where `swap`): a NaN's bits change only its payload or sign."""
    def prog(b, swapped):
        value = Tensor(np.array([b], dtype=np.uint32).view(np.float32).reshape(()))
        attrs = {"tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}} if "Bitcast" in op else {}
        add = P.apply("s", "Add", "z", "$sub") if swapped else P.apply("s", "Add", "$sub", "z")
        return P.program([P.const("z", value), add, P.apply("v", op, "s", **attrs)],
                         {"out": "v"}, [], F32)
    return prog(bits, False), prog(bits2, swap)


@pytest.mark.parametrize("bits2", [0x7FC00001, 0xFFC00000])
def test_real_mode_refuses_nan_constants_whose_bits_show(bits2):
    """Over the reals a NaN constant has no value (docs/verdicts.md): a
    rewrite that changes only its payload or sign, shown through Bitcast,
    is `unknown` there, not proved (the terms hold one NaN, so the proof
    saw two equal sides and encoded no constant); bit for bit it is never
    `sound` (`unsound` where TensorFlow's kernels run Bitcast)."""
    orig, rw = _nan_bits_pair(0x7FC00000, bits2)
    real = check_rewrite(orig, rw, timeout=20, float_mode="real")
    assert real.verdict == "unknown", real.reason
    assert "NaN constant 'z'" in real.reason and "'v'" in real.reason
    exact = check_rewrite(orig, rw, timeout=20, float_mode="exact")
    assert exact.verdict in ("unsound", "unknown"), exact.reason


def test_real_mode_refuses_only_where_both_are_there():
    """Bitcast of a finite constant's sum, its operands swapped, is still
    proved over the reals; a NaN constant whose bits no function shows is
    not refused for that reason."""
    orig, rw = _nan_bits_pair(0x3F800000, 0x3F800000, swap=True)
    assert check_rewrite(orig, rw, timeout=20, float_mode="real").verdict == "sound"
    orig, rw = _nan_bits_pair(0x7FC00000, 0x7FC00001, op="Neg")
    v = check_rewrite(orig, rw, timeout=20, float_mode="real")
    assert "may show a NaN's bits" not in v.reason, v.reason
