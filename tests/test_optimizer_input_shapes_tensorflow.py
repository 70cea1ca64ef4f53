"""Optimizer updates whose inputs' shapes the import cannot see, against
TensorFlow's kernels.

Each dense optimizer op tfsem imports (every `ResourceApply*` of
oracle/opdefs/state.py's OPTIMIZERS, and ResourceApplyGradientDescent) is
built on float32 variables with every non-variable input *computed*
(`Mul(Placeholder of unknown rank, 1)`, so that no shape is declared where
the op takes it), then run with one input of another shape: each
hyperparameter of shape [], [1], [2] and [1, 1], the gradient of shapes
other than the variable's, and each slot variable holding a value of such
a shape (initialized so: AssignVariableOp does not check the declared
shape; a slot *declared* of another shape TensorFlow refuses to build, and
the float32 models' import refuses it too, `shape-mismatch`).  tfsem's
outcome (the variables after the step, both modes) must be TensorFlow's:
the updated values where the kernel runs, the values before where it fails
(tfsem's failed update changes nothing, as the kernel fails before it
touches a variable).

The one input TensorFlow's kernels read without checking its shape,
PowerSign's and AddSign's `sign_decay` (`.scalar<T>()`), runs where it has
one element and otherwise ends TensorFlow's process (a failed CHECK): tfsem
cannot run that σ (CannotRunHere), and the last test shows the process
dying, in a child process.

The check-level test: a pass that gives a hyperparameter shape [1] (a
"scalar" to numpy's broadcasting, not to the kernel) was judged
`no-counterexample` (a passing verdict) before the checks, since
StackBroadcast broadcast it; TensorFlow's step fails there."""

from __future__ import annotations

import base64
import subprocess
import sys

import numpy as np
import pytest

from tfsem.oracle.functions import CannotRunHere
from tfsem.oracle.opdefs import state


def tensorflow():
    return pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs "
                               "tfsem[tensorflow]")


#: every dense optimizer op tfsem imports -> (variables, inputs)
OPS = {spec.op: (spec.variables, spec.inputs) for spec in state.OPTIMIZERS.values()}
SPARSE = {spec.op for spec in state.OPTIMIZERS.values() if spec.sparse}
OPS[state.GRADIENT_DESCENT.op] = (state.GRADIENT_DESCENT.variables,
                                  state.GRADIENT_DESCENT.inputs)
#: the ops imported as Assign-f models on float32 (the rest: a Read of each
#: variable, the op's function, a Write of each)
MODELS = ("ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyAdam")
HYPER_SHAPES = [(), (1,), (2,), (1, 1)]
#: the variables' shape -> gradients of another shape (and the right one)
GRAD_SHAPES = {(2,): [(2,), (), (1,), (3,), (1, 2), (2, 1)], (): [(), (1,), (1, 1)]}
#: a sparse op's gradient, for one index (its rows: [1] + var.shape[1:])
SPARSE_GRAD_SHAPES = {(2,): [(1,), (), (2,), (1, 1), (1, 3)],
                      (2, 3): [(1, 3), (), (3,), (1, 1), (2, 3), (1, 3, 1)]}
#: not inputs to vary: global_step (a Const) and a sparse op's indices ([0])
FIXED = ("global_step", "indices")
F32 = {"type": "DT_FLOAT"}


def _hyper(name: str) -> bool:
    return name not in ("grad", "delta") + FIXED


def _value(name: str, shape: tuple) -> np.ndarray:
    """An input's value: the gradient 0.25 - 0.125 k, the hyperparameters a
    value each kernel takes (lr_power -0.5, the beta powers below 1)."""
    if not _hyper(name):
        n = int(np.prod(shape))
        return (0.25 - 0.125 * np.arange(n, dtype=np.float32)).reshape(shape)
    v = {"lr_power": -0.5, "beta1_power": 0.81, "beta2_power": 0.9801, "beta1": 0.9,
         "beta2": 0.99, "rho": 0.9, "momentum": 0.875, "logbase": 0.5}.get(name, 0.0625)
    return np.full(shape, v, np.float32)


def _init(shape: tuple, k: int) -> np.ndarray:
    n = int(np.prod(shape))
    return (1.5 + k + 0.5 * np.arange(n, dtype=np.float32)).reshape(shape)


def graph(op: str, shapes: dict) -> dict:
    """The op on VarHandleOps of the variable's shape `shapes["var"]` (a
    slot of another shape is one initialized so: AssignVariableOp does not
    check the declared shape), its other inputs each Mul(Placeholder of
    unknown rank `p_x`, 1) (global_step: a Const)."""
    variables, inputs = OPS[op]
    dims = (lambda sh: {"shape": {"dim": [{"size": d} for d in sh]}})
    nodes = [{"name": v, "op": "VarHandleOp", "attr": {
        "dtype": F32, "shape": dims(shapes["var"]), "shared_name": {"s": v.encode()}}}
        for v in variables]
    nodes.append({"name": "one", "op": "Const", "attr": {"dtype": F32, "value": {"tensor": {
        "dtype": "DT_FLOAT", "tensor_shape": {}, "float_val": [1.0]}}}})
    for x in inputs:
        if x == "global_step":
            nodes.append({"name": x, "op": "Const", "attr": {"dtype": {"type": "DT_INT64"},
                          "value": {"tensor": {"dtype": "DT_INT64", "tensor_shape": {},
                                               "int64_val": ["3"]}}}})
            continue
        if x == "indices":
            nodes.append({"name": x, "op": "Const", "attr": {"dtype": {"type": "DT_INT32"},
                          "value": {"tensor": {"dtype": "DT_INT32", "tensor_shape": {
                              "dim": [{"size": 1}]}, "int_val": [0]}}}})
            continue
        nodes.append({"name": f"p_{x}", "op": "Placeholder",
                      "attr": {"dtype": F32, "shape": {"shape": {"unknown_rank": True}}}})
        nodes.append({"name": x, "op": "Mul", "input": [f"p_{x}", "one"], "attr": {"T": F32}})
    attr = {"T": F32, **({"Tindices": {"type": "DT_INT32"}} if op in SPARSE else {})}
    nodes.append({"name": "step", "op": op, "input": list(variables + inputs), "attr": attr})
    return {"node": nodes}


def cases():
    """(op, the variables' shapes, the inputs' shapes, what differs)."""
    out = []
    for op, (variables, inputs) in sorted(OPS.items()):
        sparse = op in SPARSE
        for var in [(2,), (2, 3)] if sparse else [(2,), ()] if op in MODELS else [(2,)]:
            base_vars = {v: var for v in variables}
            grads = SPARSE_GRAD_SHAPES[var] if sparse else GRAD_SHAPES[var]
            base_ins = {x: (grads[0] if x in ("grad", "delta") else ()) for x in inputs
                        if x not in FIXED}
            for x in base_ins:
                for shape in (grads if not _hyper(x) else HYPER_SHAPES):
                    out.append((op, base_vars, dict(base_ins, **{x: shape}), f"{x} {shape}"))
            if sparse:     # (the slots: the dense ops' cases)
                continue
            for v in variables[1:]:
                for shape in HYPER_SHAPES + [(1, 2)]:
                    if shape != var:
                        out.append((op, dict(base_vars, **{v: shape}), base_ins, f"{v} {shape}"))
    return out


CASES = cases()


def _unchecked(op: str, shapes: dict, ins: dict) -> bool:
    """Whether this σ is one where the kernel's unchecked scalar() ends
    TensorFlow's process, or it reads a slot it does not check past its
    end (what it computes there is no value to compare)."""
    size = (lambda sh: int(np.prod(sh)))
    if op in SPARSE:
        return op not in state._SPARSE_RANK_CHECKED and len(ins["grad"]) != len(shapes["var"])
    return any(size(ins[x]) != 1 for x in state._UNCHECKED_SCALARS.get(op, ())) or \
        any(size(shapes[v]) != size(shapes["var"]) for v in state._UNCHECKED_SLOTS.get(op, ()))


def tensorflow_step(tf, op: str, shapes: dict, ins: dict) -> tuple[dict, bool]:
    """TensorFlow 2.21's kernel on the graph: (each variable after the
    step, whether the step ran)."""
    from google.protobuf import json_format
    variables, _ = OPS[op]
    g = graph(op, shapes)
    for n in g["node"]:     # (json_format reads a bytes field as base64)
        if "shared_name" in n["attr"]:
            n["attr"]["shared_name"] = {"s": base64.b64encode(n["name"].encode()).decode()}
    key = (op, shapes["var"])
    if key not in _SESSIONS:      # (one graph per op and var shape: feeds vary)
        gd = json_format.ParseDict(g, tf.compat.v1.GraphDef())
        with tf.Graph().as_default() as tg:
            tf.compat.v1.import_graph_def(gd, name="")
            handles = [tg.get_tensor_by_name(f"{v}:0") for v in variables]
            values = [tf.compat.v1.placeholder(tf.float32, None) for _ in variables]
            inits = [tf.raw_ops.AssignVariableOp(resource=h, value=x, validate_shape=False)
                     for h, x in zip(handles, values)]
            reads = [tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32) for h in handles]
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                          inter_op_parallelism_threads=1)
        # (Grappler off: it folds Mul(p, 1) into a reshape to the shape the
        # op's shape function wants, which fails before the op runs)
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        _SESSIONS[key] = (tf.compat.v1.Session(graph=tg, config=config), values, inits, reads)
    s, values, inits, reads = _SESSIONS[key]
    s.run(inits, {x: _init(shapes[v], k) for k, (v, x) in enumerate(zip(variables, values))})
    try:
        s.run("step", {f"p_{x}:0": _value(x, sh) for x, sh in ins.items()})
        ran = True
    except tf.errors.InvalidArgumentError as exc:
        assert "[[{{node step}}]]" in exc.message, exc.message   # the op's failure
        ran = False
    return dict(zip(variables, s.run(reads))), ran


_SESSIONS: dict = {}


def tfsem_step(op: str, shapes: dict, ins: dict) -> dict:
    """tfsem's import of the same graph, run in both modes (one outcome
    each, equal): each variable after the step."""
    from tfsem.graphdef.importer import import_graph
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    variables, _ = OPS[op]
    p = import_graph(graph(op, shapes), [], ["step"],
                     shapes={f"p_{x}": list(sh) for x, sh in ins.items()}).program
    feeds = {f"p_{x}": Tensor(_value(x, sh)) for x, sh in ins.items()}
    init = {v: Tensor(_init(shapes[v], k)) for k, v in enumerate(variables)}
    out = []
    for mode in ("atomic", "decomposed"):
        (o,) = outcome_set(p, feeds, init, mode, "outputs+state").as_dict(2)
        out.append({v: dict(o.state)[v].array for v in variables})
    assert all(out[0][v].tobytes() == out[1][v].tobytes() for v in variables)
    return out[0]


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_input_of_another_shape_fails_where_the_kernel_fails(op):
    """For each case of this op: tfsem's variables after the step are the
    kernel's, bit for bit and shape for shape (changed where it ran,
    unchanged where it failed)."""
    tf = tensorflow()
    seen = {True: 0, False: 0}
    for case_op, shapes, ins, what in CASES:
        if case_op != op or _unchecked(op, shapes, ins):
            continue
        want, ran = tensorflow_step(tf, op, shapes, ins)
        seen[ran] += 1
        got = tfsem_step(op, shapes, ins)
        for v, w in want.items():
            assert got[v].shape == w.shape and got[v].tobytes() == w.tobytes(), (what, v)
        assert any(want[v].tobytes() != _init(shapes[v], k).tobytes()
                   for k, v in enumerate(OPS[op][0])) == ran, what
    assert seen[True] and seen[False] > 5


@pytest.mark.parametrize("op", sorted(SPARSE - set(state._SPARSE_RANK_CHECKED)))
def test_a_sparse_grad_of_another_rank_cannot_run(op):
    """The sparse kernels that do not check grad's rank: a grad of fewer
    dimensions than var's ends TensorFlow's process (not run here), one of
    more runs on unmodelled reads: tfsem cannot run either σ."""
    tensorflow()
    variables, inputs = OPS[op]
    ins = {x: ((1, 3) if x == "grad" else ()) for x in inputs if x not in FIXED}
    for var, grad in [((2, 3), (3,)), ((2, 3), ()), ((2,), (1, 3)), ((2,), (1, 1))]:
        with pytest.raises(CannotRunHere, match="does not check grad's rank"):
            tfsem_step(op, {v: var for v in variables}, dict(ins, grad=grad))


@pytest.mark.parametrize("op", sorted(state._UNCHECKED_SCALARS))
def test_an_unchecked_scalar_of_one_element_runs_and_of_more_cannot_run(op):
    """sign_decay of shape [1] or [1, 1] is the scalar to the kernel (it
    runs: the comparison above covers it); of shape [2] tfsem cannot run
    that σ, naming the reason."""
    tensorflow()
    variables, inputs = OPS[op]
    shapes = {v: (2,) for v in variables}
    ins = {x: ((2,) if x == "grad" else ()) for x in inputs}
    for shape in [(2,), (1, 2)]:
        with pytest.raises(CannotRunHere, match="ends its process"):
            tfsem_step(op, shapes, dict(ins, sign_decay=shape))
    assert [c for c in CASES if c[0] == op and c[2]["sign_decay"] == (1, 1)
            and not _unchecked(op, c[1], c[2])]


@pytest.mark.parametrize("op", sorted(state._UNCHECKED_SLOTS))
def test_an_unchecked_slot_of_vars_size_runs_and_of_another_cannot_run(op):
    """Adadelta's accum_update and AMSGrad's vhat: of shape [1, 2] beside a
    var of shape [2] the kernel updates them element for element (the
    comparison above covers it: the slot keeps its shape); of another
    number of elements tfsem cannot run that σ."""
    tensorflow()
    variables, inputs = OPS[op]
    (slot,) = state._UNCHECKED_SLOTS[op]
    ins = {x: ((2,) if x == "grad" else ()) for x in inputs}
    for shape in [(), (1,), (3,)]:
        with pytest.raises(CannotRunHere, match="past its end"):
            tfsem_step(op, dict({v: (2,) for v in variables}, **{slot: shape}), ins)
    assert [c for c in CASES if c[0] == op and c[1][slot] == (1, 2)
            and not _unchecked(op, c[1], c[2])]


_CRASH = r"""
import numpy as np, tensorflow as tf
tf.compat.v1.disable_eager_execution()
v, m = (tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name=n) for n in "vm")
p = tf.compat.v1.placeholder(tf.float32, None)
init = [tf.raw_ops.AssignVariableOp(resource=h, value=tf.ones([2])) for h in (v, m)]
c = tf.constant(0.5)
step = tf.raw_ops.ResourceApplyPowerSign(var=v, m=m, lr=c, logbase=c, sign_decay=p, beta=c,
                                         grad=tf.ones([2]))
with tf.compat.v1.Session() as s:
    s.run(init)
    s.run(step, {p: np.ones([2], np.float32)})
print("ran")
"""


def test_tensorflows_process_dies_on_a_sign_decay_of_two_elements():
    """Why tfsem cannot run it: the kernel's scalar() fails a CHECK and the
    process ends (no InvalidArgument to model as the op's failure)."""
    tensorflow()
    r = subprocess.run([sys.executable, "-c", _CRASH], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0 and "ran" not in r.stdout
    assert "Check failed" in r.stderr


# -- the check: a pass that reshapes a hyperparameter to [1] -------------------------


def _reshaped(op: str, x: str, reshape: bool) -> dict:
    """The op on variables of shape [2] with its inputs fed at their
    shapes; with `reshape`, input x goes through Reshape(x, [1]) first."""
    g = graph(op, {v: (2,) for v in OPS[op][0]})
    if reshape:
        g["node"] += [
            {"name": "to1", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}, "value": {
                "tensor": {"dtype": "DT_INT32", "tensor_shape": {"dim": [{"size": 1}]},
                           "int_val": [1]}}}},
            {"name": f"{x}_1", "op": "Reshape", "input": [x, "to1"],
             "attr": {"T": F32, "Tshape": {"type": "DT_INT32"}}}]
        step = g["node"][-3]
        assert step["name"] == "step"
        step["input"] = [f"{x}_1" if i == x else i for i in step["input"]]
    return g


@pytest.mark.parametrize("op,x", [("ResourceApplyGradientDescent", "alpha"),
                                  ("ResourceApplyMomentum", "lr"),
                                  ("ResourceApplyAdam", "epsilon")])
def test_a_pass_that_gives_a_hyperparameter_shape_1_is_unsound(op, x):
    """Reshape(x, [1]) before the op: StackBroadcast broadcast a [1] as a
    scalar, so the rewrite was `no-counterexample`; TensorFlow's kernel fails on it ("x
    is not a scalar: [1]"), so no variable changes.  Now `unsound`, the
    rewritten outcome keeping the variables' values."""
    from tfsem.checking.check import check_rewrite
    from tfsem.graphdef.importer import import_graph
    _, inputs = OPS[op]
    shapes = {f"p_{i}": ([2] if i in ("grad", "delta") else []) for i in inputs}
    original = import_graph(_reshaped(op, x, False), [], ["step"], shapes=shapes).program
    rewritten = import_graph(_reshaped(op, x, True), [], ["step"], shapes=shapes).program
    v = check_rewrite(original, rewritten, "atomic", "outputs+state", timeout=60)
    assert v.verdict == "unsound", (v.verdict, v.reason)
    ce = v.counterexample
    state = dict(ce.outcome.state)
    assert set(state) == set(OPS[op][0])
    assert all(state[w] == ce.init[w] for w in state), (state, ce.init)
    # TensorFlow's side: its shape inference sees the [1] here and refuses
    # the rewritten graph (the same [1] computed where inference cannot see
    # it fails the kernel at run time: the comparison above)
    tf = tensorflow()
    from google.protobuf import json_format
    g = _reshaped(op, x, True)
    for n in g["node"]:
        if "shared_name" in n["attr"]:
            n["attr"]["shared_name"] = {"s": base64.b64encode(n["name"].encode()).decode()}
    with tf.Graph().as_default(), pytest.raises(ValueError, match="must be rank 0 but is rank 1"):
        tf.compat.v1.import_graph_def(json_format.ParseDict(g, tf.compat.v1.GraphDef()), name="")


@pytest.mark.parametrize("op", ["ResourceApplyMomentum", "ResourceApplyAdam",
                                "ResourceApplyAdamWithAmsgrad"])
def test_an_uninitialized_variable_fails_the_whole_update(op):
    """var uninitialized, its slots not: the kernel fails before it touches
    any of them (its variable does not exist yet), so the slots keep
    their values.  The float32 Momentum and Adam models updated their slots
    (ScaleAdd, StepToward read no var) before the variable's Assign failed;
    their check reads every variable now."""
    from tfsem.graphdef.importer import import_graph
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    tf = tensorflow()
    variables, inputs = OPS[op]
    ins = {x: ((2,) if x == "grad" else ()) for x in inputs}
    p = import_graph(graph(op, {"var": (2,)}), [], ["step"],
                     shapes={f"p_{x}": list(sh) for x, sh in ins.items()}).program
    feeds = {f"p_{x}": Tensor(_value(x, sh)) for x, sh in ins.items()}
    init = {v: Tensor(_init((2,), k)) for k, v in enumerate(variables) if v != "var"}
    for mode in ("atomic", "decomposed"):
        (o,) = outcome_set(p, feeds, init, mode, "outputs+state").as_dict(2)
        state_after = dict(o.state)
        assert all(state_after[v] == init[v] for v in init), (mode, state_after)
    # TensorFlow's side
    from google.protobuf import json_format
    g = graph(op, {"var": (2,)})
    for n in g["node"]:
        if "shared_name" in n["attr"]:
            n["attr"]["shared_name"] = {"s": base64.b64encode(n["name"].encode()).decode()}
    with tf.Graph().as_default() as tg:
        tf.compat.v1.import_graph_def(json_format.ParseDict(g, tf.compat.v1.GraphDef()), name="")
        handles = {v: tg.get_tensor_by_name(f"{v}:0") for v in init}
        with tf.compat.v1.Session(graph=tg) as s:
            s.run([tf.raw_ops.AssignVariableOp(resource=h, value=init[v].array)
                   for v, h in handles.items()])
            with pytest.raises(tf.errors.OpError):   # (var does not exist)
                s.run("step", {f"p_{x}:0": _value(x, sh) for x, sh in ins.items()})
            for v, h in handles.items():
                after = s.run(tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32))
                assert after.tobytes() == init[v].array.tobytes(), v
