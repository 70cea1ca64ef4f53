"""Static shapes (checking/static_shapes.py) and the structural rule's (S):
a Reshape, ReshapeTo or Tile to the shape its argument has at every σ is
the argument (issue 23).

What could make (S) wrong, each tested here:
 - a claimed shape that is not the implementation's: every claim is
   compared with the shape the oracle computes, at σ of random, edge and
   uninitialized values;
 - a variable that a Write gives another shape, so that a later Read's
   value is not of the declared shape: then no Read has a shape, in either
   program (also when only the rewrite writes it);
 - a reshape that does change the shape: not removed, and the enumerating
   oracle shows the difference;
and on the corpus: Grappler's arithmetic optimizer on the TF1 SGD step
(tests/grappler/tf1_mlp_sgd.json, TensorFlow 2.21), which removes the
Reshape of the loss gradient to [32, 10] whose input is [32, 10] already,
is proved by the rule (before: `no-counterexample` after 32 σ)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite, static_shapes, structural
from tfsem.checking.product_by_one import constant_never_subnormal
from tfsem.checking.static_shapes import static_shapes as shapes_of
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

F32 = np.float32
NIGHTLY = settings.get_current_profile_name() == "nightly"


def program(nodes, variables, feeds, outputs):
    return program_from_json({"format": "tfsem.program/1", "variables": variables,
                              "feeds": feeds, "nodes": nodes, "outputs": outputs})


def c(name, value, dtype="int32"):
    return {"name": name, "op": "Const", "value": {"dtype": dtype, "value": value}}


#: one node per rule, on a feed a [2, 3], a feed b [3], variables x [3, 2], y [2]
RULES = [
    {"name": "vx", "op": "Var", "var": "x"}, {"name": "rx", "op": "Read", "inputs": ["vx"]},
    {"name": "vy", "op": "Var", "var": "y"}, {"name": "ry", "op": "Read", "inputs": ["vy"]},
    {"name": "add", "op": "Add.ftz", "inputs": ["$a", "$b"]},
    {"name": "relu", "op": "Relu", "inputs": ["add"]},
    {"name": "cast", "op": "Cast", "DstT": "int32", "inputs": ["relu"]},
    # (integer products: tfsem runs no float MatMul without TensorFlow's kernels)
    {"name": "ia", "op": "Cast", "DstT": "int32", "inputs": ["$a"]},
    {"name": "ix", "op": "Cast", "DstT": "int32", "inputs": ["rx"]},
    {"name": "iy", "op": "Cast", "DstT": "int32", "inputs": ["ry"]},
    {"name": "mm", "op": "MatMul", "transpose_a": False, "transpose_b": False,
     "inputs": ["ia", "ix"]},
    {"name": "mmt", "op": "MatMul", "transpose_a": True, "transpose_b": True,
     "inputs": ["ix", "ia"]},
    {"name": "bias", "op": "BiasAdd", "inputs": ["mm", "iy"]},
    {"name": "r1", "op": "Reshape", "shape": [-1], "inputs": ["add"]},
    {"name": "r2", "op": "Reshape", "shape": [3, -1], "inputs": ["add"]},
    c("shape", [-1, 2]),
    {"name": "r3", "op": "ReshapeTo", "inputs": ["rx", "shape"]},
    {"name": "tile", "op": "Tile", "multiples": [2, 1], "inputs": ["$a"]},
    {"name": "sum", "op": "Sum", "axes": [0], "keep_dims": False, "inputs": ["cast"]},
    {"name": "sumk", "op": "Sum", "axes": [-1], "keep_dims": True, "inputs": ["cast"]},
    c("ax", [1]),
    {"name": "suma", "op": "SumAlong", "keep_dims": False, "inputs": ["cast", "ax"]},
    c("one", 1.0, "float32"),
    {"name": "fill", "op": "Fill", "dims": [4, 2], "inputs": ["one"]},
    {"name": "exp", "op": "ExpandDims", "axis": -1, "inputs": ["$b"]},
    {"name": "gt", "op": "Greater", "inputs": ["$a", "$b"]},
    {"name": "sel", "op": "Select", "inputs": ["gt", "$a", "add"]},
    {"name": "sel2", "op": "SelectV2", "inputs": ["gt", "$a", "one"]},
    {"name": "stack", "op": "StackBroadcast", "inputs": ["$b", "one"]},
    # an optimizer import's check: its inputs back (or errors), so their shapes
    {"name": "check", "op": "CheckApplyGradientDescent", "inputs": ["one", "$b"]},
    {"name": "checked_delta", "op": "Identity", "inputs": ["check:1"]},
    # the functions that only move elements (shapes by a stand-in of zeros)
    c("b0", [0]), c("e1", [1]), c("s1", [1]),
    {"name": "ss", "op": "StridedSlice", "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
     "new_axis_mask": 0, "shrink_axis_mask": 1, "inputs": ["$a", "b0", "e1", "s1"]},
    c("begin", [0, 1]), c("size", [2, -1]),
    {"name": "slice", "op": "Slice", "inputs": ["$a", "begin", "size"]},
    {"name": "squeeze", "op": "Squeeze", "squeeze_dims": [-1], "inputs": ["exp"]},
    c("perm", [1, 0]),
    {"name": "transpose", "op": "Transpose", "inputs": ["$a", "perm"]},
    {"name": "concat", "op": "ConcatAxis", "axis": 0, "inputs": ["$a", "add"]},
    {"name": "bgrad", "op": "BiasAddGrad", "inputs": ["mm"]},
]
VARIABLES = {"x": {"dtype": "float32", "shape": [3, 2]}, "y": {"dtype": "float32", "shape": [2]}}
FEEDS = {"a": {"dtype": "float32", "shape": [2, 3]}, "b": {"dtype": "float32", "shape": [3]}}
OUTPUTS = {n["name"]: n["name"] for n in RULES if n["op"] not in ("Var", "Const")}


def _sigmas(rng):
    edge = (0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, 1e-45, 3.4e38)
    for k in range(8):
        def val(shape):
            if k % 2:
                return rng.choice(edge, size=shape).astype(F32)
            return rng.standard_normal(shape).astype(F32)
        feeds = {"a": Tensor(val((2, 3)), "float32"), "b": Tensor(val((3,)), "float32")}
        init = {"x": Tensor(val((3, 2)), "float32"),
                "y": Error(UNINITIALIZED) if k == 3 else Tensor(val((2,)), "float32")}
        yield feeds, init


def test_every_claimed_shape_is_the_implementations():
    p = program(RULES, VARIABLES, FEEDS, OUTPUTS)
    (claimed,) = shapes_of(p)
    assert {o for o in OUTPUTS if (o, 0) in claimed} == set(OUTPUTS)   # a claim for each
    seen = 0
    for feeds, init in _sigmas(np.random.default_rng(0)):
        (o,) = set(outcome_set(p, feeds, init, "atomic"))
        for name, value in o.outputs:
            if isinstance(value, Tensor):
                assert tuple(value.array.shape) == claimed[(name, 0)], name
                seen += 1
    assert seen > 100


def _write_program(value_shape, reshape_after=True):
    """x [2, 3] := $v (a feed of `value_shape`); r = Reshape(Read x, [2, 3])."""
    nodes = [{"name": "vx", "op": "Var", "var": "x"},
             {"name": "w", "op": "Write", "inputs": ["vx", "$v"]},
             {"name": "rx", "op": "Read", "inputs": ["vx", "^w"]}]
    if reshape_after:
        nodes.append({"name": "r", "op": "Reshape", "shape": [2, 3], "inputs": ["rx"]})
    return program(nodes, {"x": {"dtype": "float32", "shape": [2, 3]}},
                   {"v": {"dtype": "float32", "shape": list(value_shape)}},
                   {"o": "r" if reshape_after else "rx"})


def test_a_variable_written_with_another_shape_gives_no_read_a_shape():
    keeps = _write_program((2, 3))
    assert shapes_of(keeps)[0][("rx", 0)] == (2, 3)
    changes = _write_program((6,))
    assert ("rx", 0) not in shapes_of(changes)[0]
    # a shared Read leaf: no shape when either program changes the shape
    assert ("rx", 0) not in shapes_of(keeps, changes)[0]
    # so the Reshape to [2, 3] after a Write of a [6] is kept: not proved...
    p, q = _write_program((6,)), _write_program((6,), reshape_after=False)
    assert not structural_refinement(p, q).proved
    # ...and rightly: the outputs' shapes differ
    feeds = {"v": Tensor(np.arange(6, dtype=F32), "float32")}
    init = {"x": Tensor(np.zeros((2, 3), F32), "float32")}
    (o1,), (o2,) = set(outcome_set(p, feeds, init, "atomic")), set(outcome_set(q, feeds, init, "atomic"))
    assert o1 != o2
    # where the shape is kept, the Reshape is removed by (S), and the oracle agrees
    p, q = _write_program((2, 3)), _write_program((2, 3), reshape_after=False)
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    feeds = {"v": Tensor(np.arange(6, dtype=F32).reshape(2, 3), "float32")}
    for init in ({"x": Tensor(np.ones((2, 3), F32), "float32")}, {"x": Error(UNINITIALIZED)}):
        assert set(outcome_set(q, feeds, init, "atomic")) <= set(outcome_set(p, feeds, init, "atomic"))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "RESHAPES_BY_SHAPE", False)
        assert not structural_refinement(p, q).proved


@pytest.mark.parametrize("target, proved", [([2, 3], True), ([-1, 3], True), ([3, 2], False),
                                            ([6], False), ([2, 3, 1], False)])
def test_only_a_reshape_to_the_arguments_shape_is_removed(target, proved):
    def prog(reshape):
        nodes = [{"name": "vx", "op": "Var", "var": "x"},
                 {"name": "rx", "op": "Read", "inputs": ["vx"]},
                 {"name": "s", "op": "Add.ftz", "inputs": ["rx", "$a"]}]
        if reshape:
            nodes += [c("t", target), {"name": "r", "op": "ReshapeTo", "inputs": ["s", "t"]}]
        nodes.append({"name": "w", "op": "Write", "inputs": ["vx", "r" if reshape else "s"]})
        return program(nodes, {"x": {"dtype": "float32", "shape": [2, 3]}},
                       {"a": {"dtype": "float32", "shape": [3]}}, {"o": "r" if reshape else "s"})
    p, q = prog(True), prog(False)
    r = structural_refinement(p, q)
    assert r.proved == proved, r.reason
    v = check_rewrite(p, q, timeout=5, backends=False)
    if proved:
        assert v.verdict == "sound" and v.stats["path"] == "structural"
    else:
        assert v.verdict == "unsound", v.reason
        cx = v.counterexample
        assert cx.outcome not in set(outcome_set(p, cx.feeds, cx.init, "atomic"))


def test_the_rules_cover_what_they_name():
    """Each function named by a rule is registered under that name (a
    renamed function would silently lose its claims)."""
    from tfsem.oracle import functions as fns
    import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
    named = (static_shapes.ELEMENTWISE_1 | static_shapes.BROADCASTING_2)
    missing = {n for n in named if not n.startswith("tf.") and fns.lookup(n) is None}
    # (some names are aliases the registry may not define: they only lose claims)
    assert {"Add.ftz", "Mul.ftz", "Relu", "Cast", "Neg"}.isdisjoint(missing)


@pytest.mark.parametrize("op", ["ResourceApplyGradientDescent", "ResourceApplyMomentum",
                                "ResourceApplyAdam"])
def test_the_float32_optimizer_imports_keep_their_variables_shapes(op):
    """GradientStep, MomentumStep (StackBroadcast operands, (2,) + the
    variable's shape) and AdamStep (a StackBroadcast of two, (2, 2) + it)
    store a value of the variable's shape: every variable keeps it; the
    same Assign given operands of the other depth keeps none."""
    from tfsem.oracle.jsonio import program_to_json
    from tfsem.oracle.static_shapes import shape_keeping_variables
    from test_optimizer_nan_bits import IMPORTS, imported
    for shape in ((3,), (), (2, 5)):
        p = imported(op, shape)
        assert shape_keeping_variables(p) == set(IMPORTS[op][0]), (op, shape)
    data = program_to_json(imported(op, (3,)))
    swap = {"GradientStep": "AdamStep", "MomentumStep": "AdamStep", "AdamStep": "MomentumStep"}
    for n in data["nodes"]:
        if n["op"] == "Assign" and n["fn"] in swap:
            n["fn"] = swap[n["fn"]]
    assert "var" not in shape_keeping_variables(program_from_json(data))


FIXTURE = Path(__file__).parent / "grappler" / "tf1_mlp_sgd.json"


def test_grapplers_redundant_reshape_on_the_tf1_sgd_step_is_proved():
    from tfsem.oracle import kernels
    data = json.loads(FIXTURE.read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["arithmetic"])
    with kernels.use(False):
        r = structural_refinement(p, q)
        assert r.proved, r.reason
        with pytest.MonkeyPatch.context() as m:
            m.setattr(structural, "RESHAPES_BY_SHAPE", False)
            r = structural_refinement(p, q)
            assert not r.proved and "(V)" in r.reason


# ---------------------------------------------------------------------------
# (F1): x * 1.0 is x where x is never subnormal


def _times_one(x_nodes, x="x", dtype="float32", one_dtype="float32", times=True):
    nodes = x_nodes + [c("one", 1.0, one_dtype)]
    if times:
        nodes.append({"name": "m", "op": "Mul.ftz", "inputs": [x, "one"]})
    nodes.append({"name": "vx", "op": "Var", "var": "v"})
    nodes.append({"name": "w", "op": "Write", "inputs": ["vx", "m" if times else x]})
    return program(nodes, {"v": {"dtype": dtype, "shape": [3]}},
                   {"a": {"dtype": dtype, "shape": [3]}, "i": {"dtype": "int32", "shape": [3]}},
                   {"o": "m" if times else x})


SUBNORMAL = np.array([1e-40, -1e-41, 1.0], F32)
CASES = {
    # x flushed by an arithmetic of tfsem: never subnormal
    "flushed": ([{"name": "x", "op": "Add.ftz", "inputs": ["$a", "$a"]}], True),
    # a Cast of an integer: 0 or at least 1
    "cast": ([{"name": "x", "op": "Cast", "DstT": "float32", "inputs": ["$i"]}], True),
    # a Reshape of a flushed result
    "copy": ([{"name": "s", "op": "Add.ftz", "inputs": ["$a", "$a"]},
              {"name": "x", "op": "Reshape", "shape": [3], "inputs": ["s"]}], True),
    # a feed itself may be subnormal: flush(x) is not x
    "feed": ([{"name": "x", "op": "Identity", "inputs": ["$a"]}], False),
    # an unflushed Add may give a subnormal
    "unflushed": ([{"name": "x", "op": "Add", "inputs": ["$a", "$a"]}], False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_times_one_is_removed_only_where_x_is_never_subnormal(case):
    nodes, proved = CASES[case]
    p, q = _times_one(nodes), _times_one(nodes, times=False)
    r = structural_refinement(p, q)
    assert r.proved == proved, r.reason
    # the oracle: equal outcomes at σ of edge values, including subnormal feeds,
    # wherever the rule applies; a difference at the subnormal σ where it does not
    feeds = {"a": Tensor(SUBNORMAL, "float32"),
             "i": Tensor(np.array([0, -3, 2**31 - 1], np.int32), "int32")}
    init = {"v": Tensor(np.zeros(3, F32), "float32")}
    same = set(outcome_set(p, feeds, init, "atomic")) == set(outcome_set(q, feeds, init, "atomic"))
    assert same or not proved
    if case in ("feed", "unflushed"):
        assert not same          # (1e-40 * 1.0 flushes to 0)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "PRODUCT_BY_ONE", False)
        assert not structural_refinement(p, q).proved


def test_times_one_needs_the_dtype_of_the_one():
    nodes = [{"name": "x", "op": "Add.ftz", "inputs": ["$a", "$a"]}]
    p = _times_one(nodes, dtype="float64", one_dtype="float32")    # a dtype-mismatch error
    q = _times_one(nodes, dtype="float64", times=False)
    assert not structural_refinement(p, q).proved
    p, q = _times_one(nodes, dtype="float64", one_dtype="float64"), q
    assert structural_refinement(p, q).proved


def test_times_one_is_not_applied_over_the_reals():
    nodes = [{"name": "x", "op": "Add.ftz", "inputs": ["$a", "$a"]}]
    p, q = _times_one(nodes), _times_one(nodes, times=False)
    assert structural_refinement(p, q).proved
    assert not structural_refinement(p, q, real=True).proved


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (imports TensorFlow)")
def test_the_flushed_kernels_return_no_subnormal():
    """DivNoNan and SoftmaxCrossEntropyWithLogits on TensorFlow's CPU
    kernels, as tfsem evaluates them (oracle/kernels.py), at edge values:
    subnormal operands and labels, tiny quotients, huge logit margins."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import functions as fns
    from tfsem.oracle import kernels
    for dt, np_dt, tf_dt, small in (("float32", F32, "DT_FLOAT", 1e-40),
                                    ("float64", np.float64, "DT_DOUBLE", 1e-310)):
        info = np.finfo(np_dt)
        tiny = [info.smallest_subnormal, -small, info.tiny, 1.1 * info.tiny, info.max,
                -info.max, 0.0, -0.0, 1.0, np.inf, np.nan]
        xs = np.array(tiny, np_dt)
        attrs = {"tf_attrs": {"T": tf_dt}}
        with kernels.use(True):
            div = fns.lookup("tf.DivNoNan/2/1")
            for y in (info.max, 7.0, small, 0.5, 3.0):
                (out,) = div.apply([Tensor(xs, dt), Tensor(np.full(xs.shape, y, np_dt), dt)],
                                   attrs)
                assert out.dtype == dt and constant_never_subnormal(out), (dt, y, out)
            sce = fns.lookup("tf.SoftmaxCrossEntropyWithLogits/2/2")
            for margin in (0.0, 80.0, 100.0, 103.0, 700.0, 745.0):
                for lab in (small, 10 * small, 1.0):
                    logits = Tensor(np.array([[margin, 0.0], [0.0, margin]], np_dt), dt)
                    labels = Tensor(np.array([[lab, 0.0], [0.0, lab]], np_dt), dt)
                    outs = sce.apply([logits, labels], attrs)
                    assert all(o.dtype == dt and constant_never_subnormal(o)
                               for o in outs), (dt, margin, lab)


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels: 26 s "
                    "with the import)")
def test_grapplers_times_one_on_the_tf1_sgd_step_is_proved():
    """Constant folding of the TF1 SGD step: `xentropy * 1.0` (tf.losses'
    weight) removed, the Reshape of xentropy to its own shape removed, the
    Sum over no axes removed: proved by (F1), (S) and the reduction rule
    (the constant subgraph folds with TensorFlow's DivNoNan kernel)."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    data = json.loads(FIXTURE.read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["constfold"])
    with kernels.use(True):
        r = structural_refinement(p, q)
        assert r.proved, r.reason
        with pytest.MonkeyPatch.context() as m:
            m.setattr(structural, "PRODUCT_BY_ONE", False)
            assert not structural_refinement(p, q).proved


# ---------------------------------------------------------------------------
# (C): Cast(Reshape(x)) ≈ Reshape(Cast(x)) in Assign values, x integer or bool


def _cast_reshape(target, outside: bool, src="bool", write=True):
    nodes = [{"name": "vx", "op": "Var", "var": "v"}]
    if outside:
        nodes += [{"name": "c1", "op": "Cast", "DstT": "float32", "inputs": ["$b"]},
                  {"name": "r", "op": "Reshape", "shape": target, "inputs": ["c1"]}]
    else:
        nodes += [{"name": "r0", "op": "Reshape", "shape": target, "inputs": ["$b"]},
                  {"name": "r", "op": "Cast", "DstT": "float32", "inputs": ["r0"]}]
    nodes.append({"name": "w", "op": "Write", "inputs": ["vx", "r"]} if write else
                 {"name": "w", "op": "Write", "inputs": ["vx", "$z"]})
    return program(nodes, {"v": {"dtype": "float32", "shape": [3, 2]}},
                   {"b": {"dtype": src, "shape": [2, 3]}, "z": {"dtype": "float32", "shape": [3, 2]}},
                   {} if write else {"o": "r"})


@pytest.mark.parametrize("target", [[3, 2], [-1, 2], [4]])     # [4]: an error both ways
@pytest.mark.parametrize("src", ["bool", "int32"])
def test_a_cast_moved_outside_a_reshape_is_proved_in_assign_values(target, src):
    p, q = _cast_reshape(target, False, src), _cast_reshape(target, True, src)
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    values = (np.array([[True, False, True], [False, False, True]]) if src == "bool" else
              np.array([[0, -7, 2**31 - 1], [-2**31, 5, 1]], np.int32))
    feeds = {"b": Tensor(values, src), "z": Tensor(np.zeros((3, 2), F32), "float32")}
    for init in ({"v": Tensor(np.full((3, 2), 9.0, F32), "float32")}, {"v": Error(UNINITIALIZED)}):
        assert set(outcome_set(q, feeds, init, "atomic")) <= set(outcome_set(p, feeds, init, "atomic"))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(structural, "CAST_OUTSIDE_RESHAPE", False)
        assert not structural_refinement(p, q).proved


def test_a_cast_moved_outside_a_reshape_is_not_proved_for_an_output_or_a_float():
    # an output shows which error: the Reshape's or (never here) the Cast's
    p, q = _cast_reshape([3, 2], False, write=False), _cast_reshape([3, 2], True, write=False)
    assert not structural_refinement(p, q).proved
    # a float source: TensorFlow converts NaN or an out-of-range float by position
    p, q = _cast_reshape([3, 2], False, "float64"), _cast_reshape([3, 2], True, "float64")
    assert not structural_refinement(p, q).proved


METRICS = Path(__file__).parent / "grappler" / "keras_mlp_metrics.json"


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels fold its "
                    "constants)")
def test_grapplers_arithmetic_on_the_keras_metrics_step_is_proved():
    """Keras's training step with AUC, precision and recall metrics (26
    variables): Grappler's arithmetic optimizer moved `Reshape(-1)` across
    `Cast` and removed `Tile` by ones (shapes through StridedSlice).
    Before: `no-counterexample` after 7.4 s.  (C) and (S) are needed."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    data = json.loads(METRICS.read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["arithmetic"])
    with kernels.use(True):
        r = structural_refinement(p, q)
        assert r.proved, r.reason
        for flag in ("CAST_OUTSIDE_RESHAPE", "RESHAPES_BY_SHAPE"):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(structural, flag, False)
                assert not structural_refinement(p, q).proved, flag
