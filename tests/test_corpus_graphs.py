"""The corpus of real models (examples/tensorflow/corpus/, issue 30): every
graph either imports and self-checks `sound`, or is refused with a message
naming the node and its op (or dtype) -- asserted per graph from the
manifest.  A graph the manifest expects to import must import; a graph
expected to be refused may start to import (progress elsewhere), and then
it must self-check `sound` too.  Also the capture maps of concrete-function
graphs (`--captures`).

The graphs above LARGE nodes run in the nightly profile only
(TFSEM_HYPOTHESIS_PROFILE=nightly), to keep the default suite short.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tfsem.checking import check_rewrite
from tfsem.cli import main
from tfsem.graphdef import import_path
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.program import ProgramError

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
GRAPHS = MANIFEST["graphs"]
LARGE = 3000
NIGHTLY = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"


def _import(entry: dict, captures: bool = True):
    path = CORPUS / entry["file"]
    caps = str(CORPUS / entry["captures"]) if captures and entry.get("captures") else None
    if entry["kind"] == "saved_model":
        return import_path(path, captures=caps, shapes=entry.get("shapes"))
    return import_path(path, entry["fetches"], [], entry["targets"], captures=caps)


def _graph_ops(entry: dict) -> dict[str, str]:
    """node name -> op of the graph (top level), read with tfsem's own reader."""
    from tfsem.graphdef import read_graph
    graph, _ = read_graph(CORPUS / entry["file"])
    nodes = graph["node"] if isinstance(graph, dict) else graph.node
    out = {}
    for n in nodes:
        if isinstance(n, dict):
            out[n["name"]] = n.get("op", "")
        else:
            out[n.name] = n.op
    return out


def test_manifest_describes_a_corpus_of_real_models():
    assert len(GRAPHS) >= 20
    kinds = {e["kind"] for e in GRAPHS}
    assert kinds == {"concrete", "graph", "saved_model"}
    assert sum(e["kind"] == "saved_model" for e in GRAPHS) >= 2
    names = [e["name"] for e in GRAPHS]
    assert len(set(names)) == len(names)
    total = 0
    for e in GRAPHS:
        path = CORPUS / e["file"]
        assert path.exists(), e["file"]
        total += sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() \
            else path.stat().st_size
        assert e["expect"] in ("imports", "refused"), e["name"]
        assert e["what"] and e["variables"], e["name"]
        if e["kind"] == "concrete":
            assert (CORPUS / e["captures"]).exists(), e["name"]
    assert total < 15 << 20


@pytest.mark.parametrize("entry", GRAPHS, ids=[e["name"] for e in GRAPHS])
def test_corpus_graph_imports_and_self_checks_or_is_refused_by_name(entry):
    if entry["nodes"] + entry["function_nodes"] > LARGE and not NIGHTLY:
        pytest.skip(f"{entry['nodes']} nodes: nightly profile only")
    try:
        imported = _import(entry)
    except ProgramError as exc:
        assert entry["expect"] == "refused", (
            f"{entry['name']} imported before and is refused now: {exc}")
        v = exc.violations[0]
        m = re.search(r"node '(.+)' \((\w+)\)$", v.where)
        assert m, f"the refusal names no node: {v.where}: {v.message}"
        node, op = m.groups()
        ops = _graph_ops(entry)
        if node in ops:   # (a node inside a function is named by its call path)
            assert ops[node] == op
        assert v.message and v.rule, v
        if v.rule == "unmodelled-op":
            assert f"op {op}" in v.message
        if v.rule == "unsupported-dtype":
            assert "DT_" in v.message or "dtype" in v.message
        return
    p = imported.program
    if entry["expect"] == "imports":
        assert set(p.variables) == set(entry["variables"]), entry["name"]
    else:   # newly imported: pruning to the fetches may leave a variable out
        assert set(p.variables) <= set(entry["variables"]), entry["name"]
    again = _import(entry).program
    verdict = check_rewrite(p, program_to_json(again), "atomic", "outputs+state", 60.0)
    assert verdict.verdict == "sound", (entry["name"], verdict)


CONCRETE = [e for e in GRAPHS if e["kind"] == "concrete"
            and e["nodes"] + e["function_nodes"] <= LARGE]


@pytest.mark.parametrize("entry", CONCRETE, ids=[e["name"] for e in CONCRETE])
def test_concrete_function_graph_without_its_capture_map_is_refused_naming_a_placeholder(entry):
    with pytest.raises(ProgramError) as info:
        _import(entry, captures=False)
    v = info.value.violations[0]
    assert v.rule == "uncaptured-resource"
    assert "(Placeholder)" in v.where and "--captures" in v.message


def _counter():
    return next(e for e in GRAPHS if e["name"] == "tf_module_counter")


def test_captured_variables_are_named_by_the_variables_names():
    e = _counter()
    caps = json.loads((CORPUS / e["captures"]).read_text())
    p = _import(e).program
    assert set(p.variables) == {c["variable"] for c in caps.values()} == {"count", "total"}
    assert p.variables["count"].dtype == "int64" and p.variables["total"].dtype == "float32"
    assert not any(f in caps for f in p.feeds)   # the captures are no feeds


@pytest.mark.parametrize("change, rule", [
    (lambda c: c.__setitem__(next(iter(c)), {"variable": "v", "dtype": "string", "shape": []}),
     "unsupported-dtype"),
    (lambda c: c.__setitem__(next(iter(c)), {"variable": "v", "dtype": "float32",
                                              "shape": [-1]}), "unknown-shape"),
    (lambda c: c.__setitem__("x", {"variable": "v", "dtype": "float32", "shape": [4]}),
     "bad-captures"),
    (lambda c: c.__setitem__("no_such_node", {"variable": "v", "dtype": "float32",
                                              "shape": []}), "unknown-node"),
    (lambda c: c.__setitem__(next(iter(c)), "count"), "bad-captures"),
])
def test_a_bad_capture_map_is_refused_by_name(tmp_path, change, rule):
    e = _counter()
    caps = json.loads((CORPUS / e["captures"]).read_text())
    change(caps)
    with pytest.raises(ProgramError) as info:
        import_path(CORPUS / e["file"], e["fetches"], captures=caps)
    assert info.value.violations[0].rule == rule


def test_cli_check_of_a_concrete_function_graph_with_its_capture_map(capsys):
    e = _counter()
    g, caps = str(CORPUS / e["file"]), str(CORPUS / e["captures"])
    rc = main(["check", g, g, "--captures", caps, "--fetch", e["fetches"][0]])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("sound")
    rc = main(["import", g, "--fetch", e["fetches"][0]])
    err = capsys.readouterr().err
    assert rc == 2 and "uncaptured-resource" in err and "Traceback" not in err


def test_saved_model_variables_are_named_through_the_object_graph():
    e = next(x for x in GRAPHS if x["name"] == "saved_model_keras_export_batch8")
    from tfsem.graphdef import read_graph
    graph, _ = read_graph(CORPUS / e["file"])
    shared = {n.attr["shared_name"].s for n in graph.node if n.op == "VarHandleOp"}
    assert b"sequential/conv2d/kernel_1" in shared      # the exported graph's unique name
    p = _import(e).program
    assert "sequential/conv2d/kernel" in p.variables   # the variable's own name
    assert set(p.variables) == set(e["variables"]) and len(p.variables) == 8


def test_a_saved_model_name_that_is_another_handles_shared_name_is_not_taken():
    from tfsem.graphdef.importer import import_graph

    def handle(name, shared):
        return {"name": name, "op": "VarHandleOp",
                "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {}},
                         "shared_name": {"s": shared}}}

    def read(name, h):
        return {"name": name, "op": "ReadVariableOp", "input": [h],
                "attr": {"dtype": {"type": "DT_FLOAT"}}}

    graph = {"node": [handle("a", "x"), handle("b", "y"), read("ra", "a"), read("rb", "b")]}
    # b's object is called "x", but "x" is a's shared_name: two variables stay two
    p = import_graph(graph, ["ra", "rb"], variable_names={"b": "x"}).program
    assert set(p.variables) == {"x", "y"}
    p = import_graph(graph, ["rb"], variable_names={"b": "x"}).program
    assert set(p.variables) == {"x"}


def test_saved_model_in_text_form_names_its_variables_the_same(tmp_path):
    from tfsem.graphdef.proto import format_text, parse, to_dict
    e = next(x for x in GRAPHS if x["name"] == "saved_model_keras_export_batch8")
    sm = parse("SavedModel", (CORPUS / e["file"] / "saved_model.pb").read_bytes())
    (tmp_path / "saved_model.pbtxt").write_text(format_text("SavedModel", to_dict(sm)))
    p = import_path(tmp_path).program
    assert set(p.variables) == set(e["variables"])


SNIPPET = r'''
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf

class Counter(tf.Module):
    def __init__(self):
        self.count = tf.Variable(tf.constant(0, tf.int64), name="count")

    @tf.function
    def __call__(self, d):
        self.count.assign_add(d)
        return self.count.read_value()

m = Counter()
cf = m.__call__.get_concrete_function(tf.TensorSpec([], tf.int64))
# the two lines of docs/tensorflow-graphs.md
tf.io.write_graph(cf.graph.as_graph_def(), ".", "step.pb", as_text=False)
json.dump({i.op.name: {"variable": v.name.split(":")[0], "dtype": v.dtype.name, "shape": v.shape.as_list()}
           for e, i in cf.graph.captures for v in cf.graph.variables if e is v.handle}, open("step.captures.json", "w"))
print(cf.outputs[0].name.split(":")[0])
'''


@pytest.mark.skipif(not NIGHTLY, reason="runs TensorFlow (slow to import): nightly profile only")
def test_the_docs_two_lines_for_a_tf_function_on_tensorflow(tmp_path, capsys):
    pytest.importorskip("tensorflow")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", SNIPPET], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, check=True).stdout.split()[-1]
    g, caps = str(tmp_path / "step.pb"), str(tmp_path / "step.captures.json")
    assert json.loads(Path(caps).read_text()) != {}
    rc = main(["check", g, g, "--captures", caps, "--fetch", out])
    assert rc == 0 and capsys.readouterr().out.startswith("sound")
    p = import_path(g, [out], captures=caps).program
    assert set(p.variables) == {"count"}


FIT_SNIPPET = '''
import json
import numpy as np
import tensorflow as tf
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
model.compile(optimizer="sgd", loss="mse")
dataset = tf.data.Dataset.from_tensor_slices(
    (np.zeros((16, 4), "float32"), np.zeros((16, 3), "float32"))).batch(8, drop_remainder=True)
model.make_train_function()
# the lines of docs/tensorflow-graphs.md for model.fit's train function
fn = next(c.cell_contents for c in model.train_function.__closure__ if hasattr(c.cell_contents, "get_concrete_function"))
cf = fn.get_concrete_function(iter(dataset))
tf.io.write_graph(cf.graph.as_graph_def(), ".", "fit.pb", as_text=False)
json.dump({i.op.name: {"variable": v.name.split(":")[0], "dtype": v.dtype.name, "shape": v.shape.as_list()}
           for e, i in cf.graph.captures for v in cf.graph.variables if e is v.handle}, open("fit.captures.json", "w"))
print(cf.outputs[0].name.split(":")[0])
'''


@pytest.mark.skipif(not NIGHTLY, reason="runs TensorFlow (slow to import): nightly profile only")
def test_the_docs_lines_for_model_fits_train_function_on_tensorflow(tmp_path, capsys):
    pytest.importorskip("keras")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", FIT_SNIPPET], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, check=True).stdout.split()[-1]
    g, caps = str(tmp_path / "fit.pb"), str(tmp_path / "fit.captures.json")
    rc = main(["check", g, g, "--captures", caps, "--fetch", out])
    assert rc == 0 and capsys.readouterr().out.startswith("sound")
    p = import_path(g, [out], captures=caps).program
    assert {k: t.shape for k, t in p.feeds.items()} == {"iterator/next_0": (8, 4),
                                                        "iterator/next_1": (8, 3)}
    assert "sequential/dense/kernel" in p.variables


def test_a_saved_model_with_a_none_batch_is_refused_with_advice_that_works(capsys):
    """model.export writes the batch dimension unknown: the refusal names
    the feed and says to give `--shape NAME=N,...`; that advice, with N = 8,
    gives a program of that batch that self-checks sound, and the manifest's
    `shapes` (by signature key) gives the same program."""
    e = next(x for x in GRAPHS if x["name"] == "saved_model_keras_export")
    sm = str(CORPUS / e["file"])
    rc = main(["import", sm])
    err = capsys.readouterr().err
    assert rc == 2 and "[unknown-shape]" in err and "Traceback" not in err
    advice = re.search(r"give it with (--shape (\S+)=(\S+))", err)
    assert advice, err
    option = advice.group(1).replace("N", "8")
    assert option == "--shape serving_default_keras_tensor=8,28,28,1"
    rc = main(["check", sm, sm, *option.split(" ", 1)])
    assert rc == 0 and capsys.readouterr().out.startswith("sound")
    by_node = import_path(sm, shapes=[option.split(" ", 1)[1]]).program
    by_key = _import(e).program
    assert by_node == by_key
    assert by_key.feeds["serving_default_keras_tensor"].shape == (8, 28, 28, 1)
    # a shape that contradicts the graph's known dimensions is refused
    rc = main(["check", sm, sm, "--shape", "keras_tensor=8,28,28,3"])
    err = capsys.readouterr().err
    assert rc == 2 and "[bad-shape]" in err and "[-1, 28, 28, 1]" in err
    rc = main(["import", sm, "--shape", "nosuch=1"])
    assert rc == 2 and "[unknown-node]" in capsys.readouterr().err
    rc = main(["import", sm, "--shape", "keras_tensor"])
    assert rc == 2 and "NAME=DIMS" in capsys.readouterr().err


def test_the_fit_train_function_imports_with_the_batch_as_iterator_feeds():
    e = next(x for x in GRAPHS if x["name"] == "keras_fit_train_function")
    p = _import(e).program
    assert {k: {"dtype": t.dtype, "shape": list(t.shape)} for k, t in p.feeds.items()} \
        == e["feeds"]
