"""Export of the state family (graphdef/exporter.py `_state_roles`): an
imported ResourceScatter*, ResourceStridedSliceAssign, ResourceApply*,
VarIsInitializedOp, ResourceGather(Nd) is written back as the TensorFlow
op(s) it came from; re-imported, it has the same outcome sets in both modes;
what has no TensorFlow op is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from test_graphdef_ops import const, node, placeholder, var
from tfsem.graphdef.exporter import ExportError, export_graph
from tfsem.graphdef.functions import split_ref
from tfsem.graphdef.importer import import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

MODES = ("atomic", "decomposed")
F32 = (lambda v: np.asarray(v, dtype=np.float32))


def i32(name, value):
    return const(name, value, "DT_INT32")


def sinks(g, outputs):
    consumed = {split_ref(i)[0] for n in g["node"] for i in n.get("input", [])}
    return [n["name"] for n in g["node"] if n["name"] not in consumed and n["name"] not in outputs]


def outcomes(p, init, feeds=None):
    return {m: sorted(map(repr, outcome_set(p, feeds or {}, init, m, "outputs+state").as_dict(50)))
            for m in MODES}


def round_trip(nodes, fetch, init, feeds=None):
    """Import `nodes`, export, import again: both programs' outcome sets,
    and the exported graph's ops."""
    g0 = {"node": nodes}
    p = import_graph(g0, fetch, sinks(g0, fetch)).program
    g = export_graph(p)
    q = import_graph(g, list(p.outputs), sinks(g, p.outputs)).program
    a, b = outcomes(p, init, feeds), outcomes(q, init, feeds)
    assert a == b
    return {n["op"] for n in g["node"]}, a


SCATTER_ATTRS = {"dtype": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"}}
EMB = {"emb": Tensor(F32([[1, 2], [3, 4], [5, 6]]))}


@pytest.mark.parametrize("op", ["ResourceScatterAdd", "ResourceScatterUpdate",
                                "ResourceScatterMax", "ResourceScatterNdSub"])
def test_a_scatter_is_written_back_as_its_op(op):
    nd = "Nd" in op
    ids = i32("ids", [[2], [0]] if nd else [2, 0])
    attrs = {"T": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"}} if nd else SCATTER_ATTRS
    nodes = [var("emb", (3, 2)), ids, const("u", [[1.5, -1.0], [7.0, 0.5]]),
             {"name": "s", "op": op, "input": ["emb", "ids", "u"], "attr": attrs},
             {"name": "r", "op": "ReadVariableOp", "input": ["emb", "^s"],
              "attr": {"dtype": {"type": "DT_FLOAT"}}}]
    ops, got = round_trip(nodes, ["r"], EMB)
    assert op in ops and "PackScatter" not in ops
    assert len(got["atomic"]) == 1


def test_a_scatter_racing_with_a_read_keeps_both_outcomes():
    nodes = [var("emb", (3, 2)), i32("ids", [1]), const("u", [[1.0, 1.0]]),
             {"name": "s", "op": "ResourceScatterSub", "input": ["emb", "ids", "u"],
              "attr": SCATTER_ATTRS},
             {"name": "r", "op": "ReadVariableOp", "input": ["emb"],
              "attr": {"dtype": {"type": "DT_FLOAT"}}}]
    _, got = round_trip(nodes, ["r"], EMB)
    assert len(got["atomic"]) == 2


def test_strided_slice_assign_gathers_and_is_initialized_are_written_back():
    nodes = [var("emb", (3, 2)), var("v", (2,)), i32("b", [0, 1]), i32("e", [3, 2]),
             i32("st", [2, 1]), const("x", [[9.0], [8.0]]), i32("ids", [2, 2]),
             i32("nd", [[1, 0]]),
             {"name": "ssa", "op": "ResourceStridedSliceAssign",
              "input": ["emb", "b", "e", "st", "x"],
              "attr": {"T": {"type": "DT_FLOAT"}, "Index": {"type": "DT_INT32"}}},
             {"name": "g", "op": "ResourceGather", "input": ["emb", "ids", "^ssa"],
              "attr": {"dtype": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"}}},
             {"name": "gnd", "op": "ResourceGatherNd", "input": ["emb", "nd", "^ssa"],
              "attr": {"dtype": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"}}},
             {"name": "init", "op": "VarIsInitializedOp", "input": ["v"]},
             {"name": "init_emb", "op": "VarIsInitializedOp", "input": ["emb"]}]
    ops, got = round_trip(nodes, ["g", "gnd", "init", "init_emb"], EMB)
    assert {"ResourceStridedSliceAssign", "VarIsInitializedOp", "GatherNd"} <= ops
    (o,) = got["atomic"]   # the slice [0:3:2, 1:2] set, then gathered; v uninitialized
    assert "('init', false), ('init_emb', true)" in o and "('gnd', f32 [3.0])" in o
    assert "[[5.0, 8.0],\n [5.0, 8.0]]" in o


RMS = ["lr", "rho", "m", "eps", "g"]


def rmsprop(extra=()):
    return [var("w", (2,)), var("ms", (2,)), var("mom", (2,)),
            const("lr", 0.1), const("rho", 0.9), const("m", 0.5), const("eps", 1e-7),
            const("g", [1.0, 2.0]),
            node("up", "ResourceApplyRMSProp", ["w", "ms", "mom"] + RMS), *extra]


W = {"w": Tensor(F32([1, -2])), "ms": Tensor(F32([0.5, 0.25])), "mom": Tensor(F32([0, 1]))}


def test_an_optimizer_update_is_written_back_as_its_op():
    after = {"name": "after", "op": "ReadVariableOp", "input": ["w", "^up"],
             "attr": {"dtype": {"type": "DT_FLOAT"}}}
    ops, got = round_trip(rmsprop([after]), ["after"], W)
    assert "ResourceApplyRMSProp" in ops and "ApplyRMSProp" not in ops
    assert len(got["atomic"]) == 1 and got["atomic"] == got["decomposed"]


def f64(name, value):
    arr = np.asarray(value, dtype=np.float64)
    return {"name": name, "op": "Const", "attr": {"dtype": {"type": "DT_DOUBLE"}, "value": {
        "tensor": {"dtype": "DT_DOUBLE", "tensor_content": arr.tobytes(),
                   "tensor_shape": {"dim": [{"size": d} for d in arr.shape]}}}}}


def test_a_float64_momentum_and_a_sparse_update_are_written_back():
    nodes = [var("w", (3, 2), "DT_DOUBLE"), var("acc", (3, 2), "DT_DOUBLE"), f64("lr", 0.5),
             f64("m", 0.9), f64("g", np.arange(6.0).reshape(3, 2) - 2),
             {"name": "dense", "op": "ResourceApplyMomentum",
              "input": ["w", "acc", "lr", "g", "m"],
              "attr": {"T": {"type": "DT_DOUBLE"}, "use_nesterov": {"b": True}}}]
    init = {"w": Tensor(np.arange(6.0).reshape(3, 2)), "acc": Tensor(np.ones((3, 2)))}
    ops, got = round_trip(nodes, [], init)
    assert "ResourceApplyMomentum" in ops and len(got["atomic"]) == 1
    # a sparse update (TensorFlow's kernel computes it: compared as graphs
    # here, run on TensorFlow in test_graphdef_export_state_tensorflow.py):
    # export and import give the same program up to names and NoOps
    nodes = [var("w", (3, 2)), var("acc", (3, 2)), const("lr", 0.5), const("m", 0.9),
             const("gd", [[1.0, 2.0], [3.0, 4.0]]), i32("idx", [2, 0]),
             {"name": "sp", "op": "ResourceSparseApplyMomentum",
              "input": ["w", "acc", "lr", "gd", "idx", "m"],
              "attr": {"T": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"},
                       "use_nesterov": {"b": True}}}]
    p = import_graph({"node": nodes}, [], ["sp"]).program
    g = export_graph(p)
    (sp,) = [n for n in g["node"] if n["op"] == "ResourceSparseApplyMomentum"]
    assert sp["attr"]["Tindices"] == {"type": "DT_INT32"} and sp["attr"]["use_nesterov"]["b"]
    q = import_graph(g, [], sinks(g, {})).program
    ops = (lambda prog: sorted((n.op, n.attrs.get("fn", ""), n.attrs.get("use_nesterov", ""))
                               for n in prog.nodes if n.op != "NoOp"))
    assert ops(q) == ops(p) and ("SparseApplyMomentum", "", True) in ops(p)


def test_what_has_no_tensorflow_op_is_refused_by_name():
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    p = import_graph({"node": rmsprop()}, [], ["up"]).program
    data = program_to_json(p)
    # the update's new value also fetched: ResourceApplyRMSProp has no output
    q = program_from_json(dict(data, outputs={"new": "up/update"}, updates=[]))
    with pytest.raises(ExportError) as info:
        export_graph(q)
    assert "ResourceApplyRMSProp" in info.value.violations[0].message
    # a write of another variable beside the update, unordered: it races
    poke = [{"name": "pv", "op": "Var", "var": "w"},
            {"name": "poke", "op": "Write", "inputs": ["pv", "$x"]}]
    q = program_from_json(dict(data, nodes=data["nodes"] + poke, updates=[],
                               feeds={"x": {"dtype": "float32", "shape": [2]}}))
    with pytest.raises(ExportError) as info:
        export_graph(q)
    assert "unordered" in info.value.violations[0].message
    # PackScatter used as a value
    g = {"node": [var("emb", (3, 2)), i32("ids", [1]), const("u", [[1.0, 1.0]]),
                  {"name": "s", "op": "ResourceScatterAdd", "input": ["emb", "ids", "u"],
                   "attr": SCATTER_ATTRS}]}
    data = program_to_json(import_graph(g, [], ["s"]).program)
    pack = next(n["name"] for n in data["nodes"] if n["op"] == "PackScatter")
    with pytest.raises(ExportError) as info:
        export_graph(program_from_json(dict(data, outputs={"bytes": pack})))
    assert "PackScatter" in info.value.violations[0].message


def adam_and_momentum():
    """A float32 ResourceApplyAdam then ResourceApplyMomentum (no Nesterov):
    the importer's earlier Assign-f models (graphdef/ops.py)."""
    return [var("aw", (3,)), var("am", (3,)), var("av", (3,)), const("b1p", 0.9),
            const("b2p", 0.999), const("alr", 0.01), const("b1", 0.9), const("b2", 0.999),
            const("aeps", 1e-7), const("ag", [1.0, -2.0, 1e-39]),
            {"name": "adam", "op": "ResourceApplyAdam",
             "input": ["aw", "am", "av", "b1p", "b2p", "alr", "b1", "b2", "aeps", "ag"],
             "attr": {"T": {"type": "DT_FLOAT"}}},
            var("macc", (3,)), const("mlr", 0.5), const("mmom", 0.9),
            {"name": "momentum", "op": "ResourceApplyMomentum",
             "input": ["aw", "macc", "mlr", "ag", "mmom", "^adam"],
             "attr": {"T": {"type": "DT_FLOAT"}}}]


ADAM_INIT = {"aw": Tensor(F32([1, 2, -0.0])), "am": Tensor(F32([0.5, 0, 1])),
             "av": Tensor(F32([1, 4, 0])), "macc": Tensor(F32([0, 1, 2]))}


def test_float32_adam_and_momentum_assign_f_models_are_written_back_as_their_ops():
    after = {"name": "after", "op": "ReadVariableOp", "input": ["aw", "^momentum"],
             "attr": {"dtype": {"type": "DT_FLOAT"}}}
    ops, got = round_trip(adam_and_momentum() + [after], ["after"], ADAM_INIT)
    assert {"ResourceApplyAdam", "ResourceApplyMomentum"} <= ops
    assert "StackBroadcast" not in ops and len(got["atomic"]) == 1
    # changed by a rewrite (the Adam's step no longer what the op computes):
    # no longer the op's model, refused by name
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    data = program_to_json(import_graph({"node": adam_and_momentum()}, [], ["momentum"]).program)
    for n in data["nodes"]:
        if n["name"] == "adam/alpha":
            n["op"] = "Mul.ftz"
    with pytest.raises(ExportError) as info:
        export_graph(program_from_json(dict(data, updates=[])))
    assert "ResourceApplyAdam the importer builds" in info.value.violations[0].message


def test_an_adam_model_an_earlier_import_wrote_is_refused_by_name():
    """tests/grappler/tf1_mlp_adam.json holds the step as an earlier tfsem
    imported it (the variable's update Mul, Add, RealDiv, then Assign-Sub):
    not the importer's model now, whose NaN bits are the op's; refused,
    saying to import the graph again."""
    import json
    from pathlib import Path
    from tfsem.oracle.jsonio import program_from_json
    data = json.loads((Path(__file__).parent / "grappler" / "tf1_mlp_adam.json").read_text())
    p = program_from_json(data["original"])
    assert any(n.op == "Assign" and n.attrs["fn"] == "Sub.ftz" for n in p.nodes)
    with pytest.raises(ExportError) as info:
        export_graph(p)
    assert "import the graph again" in info.value.violations[0].message


def test_a_float32_gradient_descent_is_written_back_as_its_op():
    """ResourceApplyGradientDescent imports as Assign-GradientStep of
    StackBroadcast(delta, alpha): written back as the op (alpha, delta in
    its order, use_locking: one step, as the Assign), the same outcomes
    re-imported; the StackBroadcast used by anything else is refused."""
    nodes = [var("w", (3,)), const("alpha", 0.5), const("delta", [1.0, -2.0, 1e-39]),
             {"name": "gd", "op": "ResourceApplyGradientDescent",
              "input": ["w", "alpha", "delta"], "attr": {"T": {"type": "DT_FLOAT"}}},
             {"name": "after", "op": "ReadVariableOp", "input": ["w", "^gd"],
              "attr": {"dtype": {"type": "DT_FLOAT"}}}]
    init = {"w": Tensor(F32([1, 2, -0.0]))}
    ops, got = round_trip(nodes, ["after"], init)
    assert "ResourceApplyGradientDescent" in ops and "StackBroadcast" not in ops
    assert "AssignSubVariableOp" not in ops and len(got["atomic"]) == 1
    p = import_graph({"node": nodes}, ["after"], ["gd"]).program
    (gd,) = [n for n in export_graph(p)["node"] if n["op"] == "ResourceApplyGradientDescent"]
    assert [split_ref(i)[0] for i in gd["input"][:3]] == ["w", "alpha", "delta"]
    assert gd["attr"]["use_locking"] == {"b": True}
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    data = program_to_json(p)
    with pytest.raises(ExportError) as info:
        export_graph(program_from_json(dict(data, outputs={"packed": "gd/packed"})))
    assert "Assign-GradientStep" in info.value.violations[0].message


def test_a_tf1_adam_training_step_exports_with_its_four_updates():
    """examples/tensorflow/v1_mlp_adam.pbtxt (tf.compat.v1.train.AdamOptimizer
    on a two-layer MLP): each ResourceApplyAdam written back, none of its
    Assign-f model left; imported again, the same number of Adam models."""
    from pathlib import Path
    from tfsem.graphdef import import_path
    path = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "v1_mlp_adam.pbtxt"
    p = import_path(path).program
    g = export_graph(p)
    ops = [n["op"] for n in g["node"]]
    assert ops.count("ResourceApplyAdam") == 4 and "StackBroadcast" not in ops
    q = import_graph(g, list(p.outputs), sinks(g, p.outputs)).program
    steps = (lambda prog: sorted(prog.accessed_variable(n.name) for n in prog.nodes
                                 if n.op == "Assign" and n.attrs["fn"] == "StepToward"))
    assert steps(q) == steps(p) and len(steps(p)) == 8
