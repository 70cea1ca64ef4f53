"""tf.data iterators and Optionals (graphdef/dataset_ops.py): the graph
`model.make_train_function()` writes reads an iterator argument with
IteratorGetNext and returns an Optional.  The next element is part of σ
(feeds ITERATOR/next_K); the refusals are by name.  The corpus graph
itself is held by tests/test_corpus_graphs.py; here hand-written graphs of
the same shape, and one against TensorFlow."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.graphdef import import_path
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.values import Tensor

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"


def _shape(dims):
    return {"shape": {"dim": [{"size": d} for d in dims]} if dims is not None
            else {"unknown_rank": True}}


def iterator(name="iterator"):
    return {"name": name, "op": "Placeholder",
            "attr": {"dtype": {"type": "DT_RESOURCE"}, "shape": _shape([]),
                     "_user_specified_name": {"s": b"iterator"}}}


def get_next(name="IteratorGetNext", it="iterator", types=("DT_INT64", "DT_FLOAT"),
             shapes=((2,), ()), op="IteratorGetNext"):
    return {"name": name, "op": op, "input": [it],
            "attr": {"output_types": {"list": {"type": list(types)}},
                     "output_shapes": {"list": {"shape": [_shape(s)["shape"] for s in shapes]}}}}


def handle(name="v", dtype="DT_INT64", dims=(2,)):
    return {"name": name, "op": "VarHandleOp",
            "attr": {"dtype": {"type": dtype}, "shape": _shape(dims), "shared_name": {"s": name}}}


def node(name, op, inputs, **attr):
    return {"name": name, "op": op, "input": list(inputs), "attr": attr}


def train_function(extra=()):
    """v += the element's first component; the result an Optional of the
    second component times two, fetched through an Identity after the step
    (model.make_train_function()'s graph, small)."""
    return {"node": [
        iterator(), get_next(), handle(),
        node("update", "AssignAddVariableOp", ["v", "IteratorGetNext"], dtype={"type": "DT_INT64"}),
        node("two", "Const", [], dtype={"type": "DT_FLOAT"},
             value={"tensor": {"dtype": "DT_FLOAT", "tensor_shape": {}, "float_val": [2.0]}}),
        node("loss", "Mul", ["IteratorGetNext:1", "two"], T={"type": "DT_FLOAT"}),
        node("optional", "OptionalFromValue", ["loss"],
             Toutput_types={"list": {"type": ["DT_FLOAT"]}}),
        node("NoOp", "NoOp", ["^IteratorGetNext", "^update"]),
        node("Identity", "Identity", ["optional", "^NoOp"], T={"type": "DT_VARIANT"}),
        *extra]}


def test_the_next_element_is_a_feed_per_component_and_the_optional_its_value():
    p = import_graph(train_function(), ["Identity"]).program
    assert {k: (t.dtype, t.shape) for k, t in p.feeds.items()} == {
        "iterator/next_0": ("int64", (2,)), "iterator/next_1": ("float32", ())}
    # the iterator's position is state: an int64 scalar the draw advances by 1
    assert set(p.variables) == {"v", "iterator/position"}
    assert (p.variables["iterator/position"].dtype,
            p.variables["iterator/position"].shape) == ("int64", ())
    feeds = {"iterator/next_0": Tensor(np.array([5, -7], dtype=np.int64)),
             "iterator/next_1": Tensor(np.array(1.5, dtype=np.float32))}
    init = {"v": Tensor(np.array([1, 2], dtype=np.int64)),
            "iterator/position": Tensor(np.array(41, dtype=np.int64))}
    for mode in ("atomic", "decomposed"):
        (o,) = [x.to_json() for x in outcome_set(p, feeds, init, mode, "outputs+state").as_dict(5)]
        assert o["outputs"]["Identity"] == {"dtype": "float32", "value": 3.0}
        assert o["state"]["v"] == [6, -5]
        assert o["state"]["iterator/position"] == 42


def test_a_self_check_is_sound_and_a_rewrite_that_ignores_the_element_is_not():
    g = train_function()
    p = import_graph(g, ["Identity"]).program
    assert check_rewrite(p, program_to_json(p), "atomic", "outputs+state", 30.0).verdict == "sound"
    # the rewrite adds a constant element: the step no longer reads the iterator's
    bad = train_function()
    for n in bad["node"]:
        if n["name"] == "update":
            n["input"][1] = "k"
    bad["node"].append(node("k", "Const", [], dtype={"type": "DT_INT64"},
                            value={"tensor": {"dtype": "DT_INT64", "tensor_shape": {"dim": [
                                {"size": 2}]}, "int64_val": ["1"]}}))
    q = import_graph(bad, ["Identity"]).program
    v = check_rewrite(p, program_to_json(q), "atomic", "outputs+state", 30.0)
    assert v.verdict == "unsound", v


def test_the_export_writes_the_position_as_a_variable_and_imports_back_the_same():
    """tfsem export: the draw's advance is an AssignAddVariableOp of an int64
    variable named ITERATOR/position; the element's feeds are Placeholders.
    Imported back, it is the same variables and feeds, and each program is a
    sound rewrite of the other."""
    from tfsem.graphdef.exporter import export_graph
    p = import_graph(train_function(), ["Identity"]).program
    g = export_graph(p)
    ops = {n["name"]: n["op"] for n in g["node"]}
    assert ops["IteratorGetNext/advance"] == "AssignAddVariableOp"
    assert ops["IteratorGetNext/position"] == "VarHandleOp"
    assert ops["iterator/next_0"] == ops["iterator/next_1"] == "Placeholder"
    q = import_graph(g, list(p.outputs)).program
    assert q.variables == p.variables and q.feeds == p.feeds
    for a, b in ((p, q), (q, p)):
        assert check_rewrite(a, program_to_json(b), "atomic", "outputs+state", 30.0).verdict \
            == "sound"


def _refused(graph, fetches=("Identity",), **kw) -> tuple[str, str, str]:
    with pytest.raises(GraphImportError) as info:
        import_graph(graph, list(fetches), **kw)
    v = info.value.violations[0]
    return v.where, v.rule, v.message


def test_two_draws_from_one_iterator_are_refused():
    g = train_function([get_next("second"), node("out2", "Identity", ["second"],
                                                 T={"type": "DT_INT64"})])
    where, rule, msg = _refused(g, ["Identity", "out2"])
    assert rule == "iterator-draws" and "(IteratorGetNext)" in where
    assert "drawn from twice" in msg and "schedule" in msg
    # two iterators, one draw each: fine, each its own feeds
    g = train_function([iterator("it2"), get_next("second", "it2"),
                        node("out2", "Identity", ["second"], T={"type": "DT_INT64"})])
    p = import_graph(g, ["Identity", "out2"]).program
    assert {"it2/next_0", "it2/next_1", "iterator/next_0"} <= set(p.feeds)


@pytest.mark.parametrize("op, rule", [("OptionalNone", "optional"),
                                      ("IteratorGetNextAsOptional", "iterator")])
def test_the_ops_of_exhaustion_are_refused_by_name(op, rule):
    extra = node("x", op, ["iterator"] if op != "OptionalNone" else [])
    where, r, msg = _refused({"node": [iterator(), extra]}, ["x"])
    assert r == rule and f"({op})" in where
    assert "steps_per_execution" in msg or "exhausted" in msg


def test_an_iterator_made_in_the_graph_is_refused_at_its_maker():
    g = {"node": [node("it", "IteratorV2", [], shared_name={"s": b""}),
                  get_next(it="it"), node("out", "Identity", ["IteratorGetNext:1"],
                                          T={"type": "DT_FLOAT"})]}
    where, rule, msg = _refused(g, ["out"])
    assert rule == "iterator" and "(IteratorV2)" in where and "make_train_function" in msg


def test_an_element_of_unknown_shape_is_refused_with_advice():
    g = train_function()
    g["node"][1] = get_next(shapes=((-1,), ()))
    where, rule, msg = _refused(g)
    assert rule == "unknown-shape" and "drop_remainder=True" in msg


def test_a_draw_in_a_session_is_refused():
    where, rule, msg = _refused(train_function(), session=True)
    assert rule == "iterator" and "session" in msg
    # an iterator argument nothing draws from: no position in a session's
    # program (outside one, the position of an iterator no draw advances)
    g = {"node": [iterator(), node("k", "Const", [], dtype={"type": "DT_FLOAT"}, value={
        "tensor": {"dtype": "DT_FLOAT", "tensor_shape": {}, "float_val": [2.0]}})]}
    assert not import_graph(g, ["k"], session=True).program.variables
    assert set(import_graph(g, ["k"]).program.variables) == {"iterator/position"}


def test_a_resource_placeholder_no_iterator_op_reads_is_refused_as_before():
    g = {"node": [iterator("h"), node("r", "ReadVariableOp", ["h"], dtype={"type": "DT_FLOAT"})]}
    where, rule, msg = _refused(g, ["r"])
    assert rule == "uncaptured-resource" and "--captures" in msg


def test_the_corpus_train_function_has_the_batch_as_its_feeds():
    e = {x["name"]: x for x in json.loads((CORPUS / "manifest.json").read_text())["graphs"]}
    fit, step = e["keras_fit_train_function"], e["keras_fit_one_step_on_data"]
    p = import_path(CORPUS / fit["file"], fit["fetches"], captures=CORPUS / fit["captures"]).program
    assert {k: (t.dtype, list(t.shape)) for k, t in p.feeds.items()} == {
        "iterator/next_0": ("float32", step["feeds"]["data"]["shape"]),
        "iterator/next_1": ("int32", step["feeds"]["data_1"]["shape"])}
    assert set(p.variables) == set(step["variables"]) | {"iterator/position"}
    assert set(p.variables) == set(fit["variables"])


def test_against_tensorflow_one_call_of_a_function_of_an_iterator():
    """A tf.function of an iterator (as model.fit's): one call on TensorFlow
    gives the outcome tfsem gives with the dataset's first element in σ."""
    tf = pytest.importorskip("tensorflow")
    ds = tf.data.Dataset.from_tensor_slices(
        (np.array([[3, -4], [9, 9]], dtype=np.int64), np.array([0.25, 8.0], dtype=np.float32)))
    v = tf.Variable(np.array([10, 20], dtype=np.int64), name="v")

    @tf.function
    def step(it):
        a, b = it.get_next()
        v.assign_add(a)
        return tf.experimental.Optional.from_value(b * 2.0 + tf.cast(v.read_value()[0], tf.float32))

    it = iter(ds)
    cf = step.get_concrete_function(it)
    caps = {i.op.name: {"variable": "v", "dtype": "int64", "shape": [2]}
            for e, i in cf.graph.captures if e is v.handle}
    graph = cf.graph.as_graph_def()
    got = step(it).get_value().numpy()
    from tfsem.graphdef.proto import decode
    gd = decode("GraphDef", graph.SerializeToString())
    p = import_graph(gd, [t.name for t in cf.outputs], captures=caps).program
    feeds = {k: Tensor(x) for k, x in (("it/next_0", np.array([3, -4], dtype=np.int64)),
                                        ("it/next_1", np.array(0.25, dtype=np.float32)))}
    it_name = next(f.rsplit("/", 1)[0] for f in p.feeds)
    feeds = {f"{it_name}/{k.split('/')[1]}": x for k, x in feeds.items()}
    # σ: the dataset's element 0, and the iterator at position 0
    (o,) = [x.to_json() for x in outcome_set(
        p, feeds, {"v": Tensor(np.array([10, 20], dtype=np.int64)),
                   f"{it_name}/position": Tensor(np.array(0, dtype=np.int64))}, "atomic",
        "outputs+state").as_dict(5)]
    (out,) = o["outputs"].values()
    assert out == {"dtype": "float32", "value": float(got)} and float(got) == 13.5
    assert o["state"]["v"] == v.numpy().tolist() == [13, 16]
    # the call advanced TensorFlow's iterator by one element, tfsem's position by one
    assert o["state"][f"{it_name}/position"] == 1
    assert it.get_next()[0].numpy().tolist() == [9, 9]


def test_get_value_and_has_value_of_an_optional_that_holds_one():
    g = train_function([
        node("has", "OptionalHasValue", ["optional"]),
        node("get", "OptionalGetValue", ["Identity"], output_types={"list": {"type": ["DT_FLOAT"]}},
             output_shapes={"list": {"shape": [{}]}})])
    p = import_graph(g, ["has", "get"]).program
    feeds = {"iterator/next_0": Tensor(np.array([0, 0], dtype=np.int64)),
             "iterator/next_1": Tensor(np.array(-0.0, dtype=np.float32))}
    (o,) = [x.to_json() for x in outcome_set(p, feeds, {}, "atomic", "outputs").as_dict(5)]
    assert o["outputs"] == {"has": {"dtype": "bool", "value": True},
                            "get": {"dtype": "float32", "value": -0.0}}
    # an Optional from anything else is refused by name
    g = train_function([node("has", "OptionalHasValue", ["IteratorGetNext:1"])])
    where, rule, msg = _refused(g, ["has"])
    assert rule == "optional" and "(OptionalHasValue)" in where
    g = train_function()
    g["node"][6]["input"].append("IteratorGetNext:1")
    where, rule, msg = _refused(g)
    assert rule == "optional" and "2 components" in msg
