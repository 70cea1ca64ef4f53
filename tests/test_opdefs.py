"""The op registry (oracle/opdefs) is the single source of the ops it defines.

* Every op of the registry's families is complete: its import model is the
  one graph import uses, every function it produces is registered with value
  semantics, declares an encoding or none (uninterpreted), and has an
  export; the old tables (graphdef/ops.py, the exporter's name lists, the
  generic checker's EXTRA) hold none of them.
* The encoding facet agrees with the value semantics facet (the fold the
  checker uses on constants is the implementation, bit for bit, on edge
  values).
* A contributor registers a new op in one place (one `define`) and it
  imports, evaluates, encodes (a proof and a refutation through it) and
  exports.
"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.checking.symbolic import MAX_ELEMENTS
from tfsem.graphdef import ops as opt
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import opdefs
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.opdefs import registry
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import DTYPES, Tensor, edge_values

#: the language's own functions, which the exporter writes itself (a Const's
#: TensorProto) and the checker encodes itself
EXPORTER_OWN = {"Const"}


def test_the_registry_has_the_math_and_array_families_and_no_dangling_names():
    fams = opdefs.families()
    assert {"math", "nn", "array", "list"} <= set(fams)
    assert {"Relu", "ReluGrad", "BiasAdd", "BiasAddGrad"} == set(fams["nn"])
    for op in ("AddV2", "Cast", "MatMul", "Sum", "Less", "LogicalNot", "SquaredDifference"):
        assert op in fams["math"], op
    for op in ("Reshape", "ConcatV2", "StridedSlice", "GatherV2", "Shape", "Transpose", "Pack"):
        assert op in fams["array"], op
    assert opdefs.problems() == []


@pytest.mark.parametrize("family", ["math", "nn", "array", "list"])
def test_every_op_of_a_migrated_family_is_defined_in_one_place_with_every_facet(family):
    for name in opdefs.families()[family]:
        d = opdefs.lookup(name)
        model = opt.lookup(name)
        # import: the importer's model is the registry's own build
        assert model is not None and model.build is d.build and model.doc == d.doc, name
        assert model.static == d.static and model.stateful == (d.stateful is not None)
        assert name not in opt.STATELESS_UNMODELLED
        assert d.functions, name
        for fname in d.function_names():
            fn = fns.lookup(fname)
            # value semantics
            assert fn is not None and callable(fn.impl), (name, fname)
            # an encoding or uninterpreted, declared
            assert fn.encoding is None or fn.encoding is opdefs.FOLDS_ON_CONSTANTS \
                or isinstance(fn.encoding, opdefs.Elementwise), fname
            # export (the .ftz variants are written as their base function)
            base = fname.removesuffix(fns.FTZ_SUFFIX)
            assert opdefs.export_of(base) is not None or base in EXPORTER_OWN, (name, fname)


def test_every_op_the_importer_accepts_is_the_registrys():
    """Every family is the registry's now, control flow, queues and tf.data's
    iterators included (tests/test_opdefs_families.py): graphdef/ops.py has
    no op model of its own."""
    for name, model in opt.table().items():
        if model.origin != "builtin":
            continue
        d = opdefs.lookup(name)
        assert d is not None and model.build is d.build, name


def test_the_old_tables_hold_none_of_the_registrys_ops():
    import tfsem.graphdef.exporter as ex
    for old in ("_SAME_NAME", "_RENAMED", "_REDUCTIONS", "_COMPARISONS"):
        assert not hasattr(ex, old), old
    # the exporter has no table of functions of its own left
    assert not hasattr(ex, "_SHAPE_OPS")
    # the generic checker's element ops are exactly the registry's encodings
    assert gen.EXTRA == {n: f.encoding.key for n, f in fns.registered(None).items()
                         if opdefs.elementwise_of(f) is not None}
    assert set(gen.EXTRA) == {"RealDiv", "Sqrt", "Abs", "Square", "SquaredDifference",
                              "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
                              "NotEqual", "Select", "SelectV2"}


def test_the_checker_folds_the_run_time_shape_functions_the_registry_marks():
    folds = {n for n, f in fns.registered(None).items() if opdefs.folds_on_constants(f)}
    assert folds == {"Shape", "Size", "Rank", "Range", "StridedSlice", "StridedSliceGrad",
                     "Slice", "GatherV2", "UnpackPart", "FillDims", "BroadcastToShape",
                     "Transpose", "BroadcastGradientArgs", "ReshapeTo", "TileBy",
                     "ExpandDimsAt", "SumAlong", "MeanAlong", "ReduceMaxAlong",
                     "ReduceMinAlong"}
    assert all(fns.get(n).family == "tensorflow" for n in folds)


@pytest.mark.parametrize("name", sorted(gen.EXTRA))
def test_an_encodings_fold_is_its_functions_value_semantics(name):
    fn = fns.get(name)
    fold = fn.encoding.fold
    for dtype in DTYPES:
        x = edge_values(dtype)
        args = [x] if fn.n_in == 1 else [np.repeat(x, len(x)), np.tile(x, len(x))]
        if fn.n_in == 3:    # Select: a bool condition, then x and y
            args = [np.arange(len(args[0])) % 3 == 0] + args
        (want,) = fn.apply([Tensor(a) for a in args])
        if not isinstance(want, Tensor):
            continue   # an error value (no kernel for the dtype): never folded
        with np.errstate(all="ignore"):
            got = np.asarray(fold(*args), dtype=want.array.dtype)   # (a comparison's: bool)
        assert _same(got, want.array), (name, dtype)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """SPEC equality: bit for bit, any NaN equal to any NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "iub":
        return bool(np.array_equal(a, b))
    bits = a.view(f"u{a.dtype.itemsize}") == b.view(f"u{b.dtype.itemsize}")
    nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return bool(np.all(bits | nan))


# -- a contributor's op, defined in one place ------------------------------------


@pytest.fixture
def scratch_registry(monkeypatch):
    """Whatever the test defines is gone afterwards."""
    for mod, names in ((registry, ("_OPS", "_ENCODINGS", "_SOURCES", "_EXPORTS")),
                       (fns, ("_REGISTRY",)), (opt, ("_TABLE", "_mirrored"))):
        for n in names:
            monkeypatch.setattr(mod, n, dict(getattr(mod, n)))
    monkeypatch.setattr(registry, "_generation", registry._generation)
    yield


def _define_twice():
    """What a contributor writes in oracle/opdefs/math.py: TensorFlow's
    (made-up) op `TwiceX`, x + x, with every facet."""
    def z3_twice(z3, dtype, xs):
        if dtype in ("float32", "float64"):
            return z3.fpAdd(z3.RNE(), xs[0], xs[0])
        if dtype in ("int32", "int64"):
            return xs[0] + xs[0]
        raise ValueError(f"no encoding for twice on {dtype}")

    @opdefs.function("Twice", 1, 1, batched=True,
                     encoding=opdefs.Elementwise("twice", lambda a: np.add(a, a), z3_twice),
                     export=lambda e: [{"name": e.name, "op": "AddV2",
                                        "input": [e.data[0], e.data[0]] + e.ctrl,
                                        "attr": {"T": e.T()}}])
    def twice(xp, args, attrs):
        """x + x (integers wrap)."""
        return (xp.add(args[0], args[0]),)

    return opdefs.define(opdefs.OpDef("TwiceX", "the function Twice", opdefs.one_function("Twice"),
                                      "math", functions=(twice,)))


def _graph(op):
    return {"node": [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"},
                                                     "shape": {"shape": {"dim": [{"size": 3}]}}}},
        {"name": "y", "op": op, "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}}}]}


def test_a_new_op_defined_in_one_place_imports_evaluates_encodes_and_exports(scratch_registry):
    assert opt.lookup("TwiceX") is None
    _define_twice()
    assert opdefs.problems() == []
    # import
    p = import_graph(_graph("TwiceX"), ["y"]).program
    assert [n.op for n in p.nodes if n.op == "Twice"] == ["Twice"]
    # value semantics
    x = np.array([1.5, -3.0, 3e38], np.float32)
    (o,) = outcome_set(p, {"x": Tensor(x)}, {}, "atomic", "outputs").as_dict(10)
    (out,) = dict(o.outputs).values()
    assert out.array.tobytes() == np.array([3.0, -6.0, np.inf], np.float32).tobytes()
    # export: the op's own facet
    nodes = export_graph(p)["node"]
    assert any(nd["op"] == "AddV2" and nd["input"][:2] == [nd["input"][0]] * 2 for nd in nodes)
    # encoding: on tensors past the element-wise engine, the generic checker
    # proves Twice(a) = a + a and refutes Twice(a) = a * a through it
    big = (MAX_ELEMENTS + 1,)
    f = {"a": TensorType("float32", big)}
    twice = P.program([P.apply("r", "Twice", "$a")], {"out": "r"}, (), f)
    add = P.program([P.apply("r", "Add", "$a", "$a")], {"out": "r"}, (), f)
    mul = P.program([P.apply("r", "Mul", "$a", "$a")], {"out": "r"}, (), f)
    assert check_rewrite(twice, add, timeout=30).verdict == "sound"
    assert check_rewrite(twice, mul, timeout=10).verdict == "unsound"


def test_without_its_encoding_the_same_op_is_uninterpreted(scratch_registry):
    d = _define_twice()
    (fn,) = d.functions
    registry.define(opdefs.OpDef("TwiceX", d.doc, d.build, "math",
                                 functions=(fns.Function("Twice", 1, 1, fn.impl,
                                                         family=fns.TENSORFLOW,
                                                         export=fn.export),)),
                    replace=True)
    big = (MAX_ELEMENTS + 1,)
    f = {"a": TensorType("float32", big)}
    twice = P.program([P.apply("r", "Twice", "$a")], {"out": "r"}, (), f)
    add = P.program([P.apply("r", "Add", "$a", "$a")], {"out": "r"}, (), f)
    assert check_rewrite(twice, add, timeout=2).verdict != "sound"


def test_an_entry_point_may_give_opdefs(scratch_registry, monkeypatch):
    class EP:
        name, value, dist = "mine", "pkg:OPS", None

        def load(self):
            return [_define_twice()]

    monkeypatch.setattr(opt.metadata, "entry_points", lambda group: [EP()])
    monkeypatch.setattr(opt, "_loaded", False)
    assert opt.lookup("TwiceX").origin == "entry point pkg:OPS"
    assert opt.load_errors() == []


def test_an_encoding_may_not_take_one_of_the_checkers_own_term_names(scratch_registry):
    f = opdefs.function("Twice2", 1, 1, encoding=opdefs.Elementwise(
        "add", lambda a: a + a, lambda z3, dtype, xs: xs[0] + xs[0]))(lambda xp, args, attrs: (args[0],))
    with pytest.raises(ValueError, match="checker's own terms"):
        opdefs.define(opdefs.OpDef("Twice2X", "", opdefs.one_function("Twice2"), "math",
                                   functions=(f,)))
    assert fns.lookup("Twice2") is None and opdefs.lookup("Twice2X") is None   # nothing half done
    g = opdefs.function("Add", 2, 1)(lambda xp, args, attrs: (args[0],))
    with pytest.raises(ValueError, match="already registered"):
        opdefs.define(opdefs.OpDef("Add2X", "", opdefs.one_function("Add"), "math",
                                   functions=(g,)))
    assert fns.get("Add").family == "core"



# -- the state family (oracle/opdefs/state.py) -------------------------------------


def _state_exports() -> set[str]:
    """The functions the exporter writes back as part of a state op's group
    of nodes (graphdef/exporter.py `_state_roles`), from the state family's
    own tables, and the language's Snd and Const, which it writes itself."""
    from tfsem.graphdef import exporter as ex
    from tfsem.oracle.opdefs import state
    packs = {pack for _, pack, _ in state.PACKED_ASSIGNS.values()}
    return (set(state.ASSIGN_OPS) | set(state.PACKED_ASSIGNS) | packs | set(ex._UPDATES)
            | set(state.FLOAT32_MODEL_ANCHORS) | set(state.FLOAT32_MODEL_UPDATES.values())
            | set(state.STACKED_ASSIGNS) | set(state.STACKED_CHECKS.values())
            | set(state.MODEL_CHECKS.values()) | {"StackBroadcast", "IsInitialized", "Snd"}
            | EXPORTER_OWN)


def test_every_state_op_is_defined_in_one_place_with_its_effect_and_export():
    from tfsem.oracle.opdefs import state
    ops = opdefs.families()["state"]
    for op in ("VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
               "VarIsInitializedOp", "ResourceGather", "ResourceGatherNd", "GatherNd",
               "ResourceScatterAdd", "ResourceScatterNdUpdate", "ResourceStridedSliceAssign",
               "ResourceApplyGradientDescent", "ResourceApplyAdam", "ResourceSparseApplyFtrl",
               "VariableV2", "ApplyAdam"):
        assert op in ops, op
    exported = _state_exports()
    for name in ops:
        d = opdefs.lookup(name)
        model = opt.lookup(name)
        # import: the importer's model is the registry's own build
        assert model.build is d.build and model.doc == d.doc, name
        assert model.resources == d.resources and model.output_args == d.output_args
        # its family's own (a refusal: the registry's `refuse`, called there)
        assert d.build.__module__ == ("tfsem.oracle.opdefs.registry" if d.doc.startswith(
            "refused") else "tfsem.oracle.opdefs.state"), name
        assert name not in opt.STATELESS_UNMODELLED, name
        # effect: every op but the pure GatherNd says how it touches state
        assert (d.stateful is None) == (name == "GatherNd"), name
        assert model.stateful == (d.stateful is not None)
        if d.doc.startswith("refused"):
            assert not d.functions, name
            continue
        for fname in d.function_names():
            fn = fns.lookup(fname)
            # value semantics; uninterpreted in proofs (no encoding of its own)
            assert fn is not None and callable(fn.impl), (name, fname)
            base = fname.removesuffix(fns.FTZ_SUFFIX)
            assert opdefs.export_of(base) is not None or base in exported, (name, fname)
    for spec in state.OPTIMIZERS.values():
        assert spec.fn in opdefs.lookup(spec.op).function_names()
    for fn, (tf_op, pack, _) in state.PACKED_ASSIGNS.items():
        assert {fn, pack} <= set(opdefs.lookup(tf_op).function_names()), tf_op
    for fn, tf_op in state.ASSIGN_OPS.items():
        assert fn in opdefs.lookup(tf_op).function_names(), tf_op


def test_the_state_familys_functions_are_registered_from_its_module_and_uninterpreted():
    from tfsem.oracle.opdefs import state
    names = opdefs.function_names([opdefs.lookup(n) for n in opdefs.families()["state"]])
    own = {n for n in names if fns.get(n).impl.__module__ == state.__name__}
    assert {"GatherNd", "PackScatter", "ScatterAdd", "ScatterNdUpdate", "PackSlice",
            "StridedSliceAssign", "IsInitialized", "SndSameShape", "ApplyAdam",
            "SparseApplyFtrl", "StackBroadcast", "StepToward", "ScaleAdd", "GradientStep",
            "MomentumStep", "AdamStep", "CheckApplyGradientDescent", "CheckApplyMomentum",
            "CheckApplyAdam"} <= own
    for n in own:
        assert fns.get(n).encoding is None, n   # uninterpreted in proofs
        assert fns.get(n).family == fns.TENSORFLOW, n


def test_the_old_tables_read_the_state_family():
    """graphdef/ops.py and the exporter define no state op (graphdef/state_ops.py
    is gone); the exporter's tables are the state module's own objects, and
    oracle/state_ops.py only re-exports its names."""
    import importlib.util
    import tfsem.graphdef.exporter as ex
    from tfsem.oracle import state_ops as so
    from tfsem.oracle.opdefs import state
    assert ex._ASSIGN_OPS is state.ASSIGN_OPS and ex._PACKED_ASSIGNS is state.PACKED_ASSIGNS
    assert ex._TEMPLATE_ANCHORS is state.FLOAT32_MODEL_ANCHORS
    assert ex._TEMPLATE_FINALS is state.FLOAT32_MODEL_UPDATES
    assert ex._STACKED_ASSIGNS is state.STACKED_ASSIGNS
    assert so.OPTIMIZERS is state.OPTIMIZERS
    for name in opdefs.families()["state"]:
        assert opt.lookup(name).build is opdefs.lookup(name).build, name
        assert opt.lookup(name).build.__module__ in (state.__name__, registry.__name__), name
    assert importlib.util.find_spec("tfsem.graphdef.state_ops") is None


def test_a_new_scatter_defined_in_one_place_imports_and_exports(scratch_registry):
    """One call of the family's helper (what a contributor writes in
    oracle/opdefs/state.py) defines a scatter's import, and the exporter
    writes it back from the same definition."""
    from tfsem.oracle.opdefs import state
    saved = dict(state.PACKED_ASSIGNS)
    try:
        # a made-up op with ResourceScatterUpdate's semantics under another name
        state._scatter_op("ResourceScatterOverwrite", "ScatterUpdate", "dtype", "kept")
        f32 = {"type": "DT_FLOAT"}
        g = {"node": [
            {"name": "v", "op": "VarHandleOp", "attr": {
                "dtype": f32, "shape": {"shape": {"dim": [{"size": 3}]}},
                "shared_name": {"s": b"v"}}},
            {"name": "i", "op": "Placeholder", "attr": {
                "dtype": {"type": "DT_INT32"}, "shape": {"shape": {"dim": [{"size": 1}]}}}},
            {"name": "u", "op": "Placeholder", "attr": {
                "dtype": f32, "shape": {"shape": {"dim": [{"size": 1}]}}}},
            {"name": "s", "op": "ResourceScatterOverwrite", "input": ["v", "i", "u"],
             "attr": {"dtype": f32, "Tindices": {"type": "DT_INT32"}}}]}
        p = import_graph(g, [], ["s"]).program
        assert any(n.op == "Assign" and n.fn == "ScatterUpdate" for n in p.nodes)
        ops_out = [nd["op"] for nd in export_graph(p)["node"]]
        assert "ResourceScatterOverwrite" in ops_out
    finally:
        state.PACKED_ASSIGNS.clear()
        state.PACKED_ASSIGNS.update(saved)


# -- the random family (oracle/opdefs/random.py) ------------------------------------


def test_every_random_op_is_defined_in_one_place_with_its_effect():
    from tfsem.oracle.opdefs import random
    ops = opdefs.families()["random"]
    assert set(random.RANDOM) | set(random.STATELESS_RANDOM) | set(random.GENERATOR_OPS) \
        | set(random.OTHER_RANDOM_OPS) == set(ops)
    for name in ops:
        d = opdefs.lookup(name)
        model = opt.lookup(name)
        assert model.build is d.build and model.doc == d.doc, name
        assert model.output_args == d.output_args and not d.resources and not d.static
        assert d.build.__module__ == (registry.__name__ if d.doc.startswith("refused")
                                      else random.__name__), name
        assert name not in opt.STATELESS_UNMODELLED, name
        # effect: a stateful op draws (its state in σ) or is refused; stateless ones are pure
        assert (d.stateful is None) == (name in random.STATELESS_RANDOM), name
        assert model.stateful == (d.stateful is not None)
    for name, stateless in random.RANDOM.items():
        d = opdefs.lookup(name)
        (draw,) = [f for f in d.function_names() if f.startswith("tf.")]
        assert draw.startswith(f"tf.{stateless}/")
        fn = fns.lookup(draw)     # uninterpreted, exported as the stateless op
        assert fn is not None and fn.encoding is None and fn.family == fns.TENSORFLOW
        assert opdefs.problems() == []
    # the stateless ones graph import makes uninterpreted by name are the family's list
    assert random.UNINTERPRETED <= opt.STATELESS_UNMODELLED
    assert not {n for n in opt.STATELESS_UNMODELLED if "Random" in n} - random.UNINTERPRETED


def test_a_stateful_random_op_exports_as_its_stateless_op_and_imports_back():
    f32 = {"type": "DT_FLOAT"}
    g = {"node": [
        {"name": "shape", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}, "value": {
            "tensor": {"dtype": "DT_INT32", "tensor_shape": {"dim": [{"size": 1}]},
                       "int_val": [3]}}}},
        {"name": "r", "op": "RandomUniform", "input": ["shape"],
         "attr": {"T": {"type": "DT_INT32"}, "dtype": f32, "seed": {"i": 0}, "seed2": {"i": 0}}}]}
    p = import_graph(g, [], ["r"]).program
    assert set(p.feed_names) == {"r/key", "r/counter"}
    (node,) = [n for n in export_graph(p)["node"] if n["name"] == "r"]
    assert node["op"] == "StatelessRandomUniformV2" and node["input"][1:3] == ["r/key", "r/counter"]
    assert node["attr"]["dtype"] == f32
    q = import_graph(export_graph(p), [], ["r"]).program
    assert [n.op for n in q.nodes if n.op.startswith("tf.")] == ["tf.StatelessRandomUniformV2/4/1"]
