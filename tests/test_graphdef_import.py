"""GraphDef import: the corpus of real TensorFlow graphs (examples/tensorflow/),
the semantics of what is imported, and bad input (exit 2, no traceback)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.cli import main
from tfsem.graphdef import import_path, load_program_or_graph
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import encode, parse_text
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.program import ProgramError
from tfsem.oracle.values import Tensor

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["graphs"]
BY_FILE = {g["file"]: g for g in MANIFEST}


def imported(name: str, **kw):
    g = BY_FILE[name]
    return import_path(CORPUS / name, kw.get("fetch", g["fetches"]), list(g["feeds"]),
                       g["targets"]).program


def ints(p, **values):
    return {x: Tensor(np.array(values.get(x, 0), dtype=np.int64)) for x in p.variables}


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda g: g["file"])
def test_corpus_graph_imports_with_its_variables_feeds_and_fetches(entry):
    p = imported(entry["file"])
    assert sorted(p.variables) == sorted(entry["variables"])
    assert sorted(p.outputs) == sorted(entry["fetches"])
    assert {f: [t.dtype, list(t.shape)] for f, t in p.feeds.items()} == \
        {f: [t["dtype"], t["shape"]] for f, t in entry["feeds"].items()}
    # nothing of the variables' initializers is kept: no fetch or target needs it
    assert not any(n.name.endswith("/Assign") and n.name.count("/") == 1 for n in p.nodes)


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda g: g["file"])
def test_default_fetches_are_the_manifests(entry):
    """With no --fetch, every node nothing consumes is fetched or run, less
    the tf.Variable initializer idiom: the corpus' own fetches (the v1
    graphs' gradient code leaves dangling tensors, which are fetched too)."""
    p = import_path(CORPUS / entry["file"]).program
    if entry["file"].startswith("v1_"):
        assert set(entry["fetches"]) < set(p.outputs)
        assert sorted(p.variables) == sorted(entry["variables"])
    else:
        assert sorted(p.outputs) == sorted(entry["fetches"])
        assert p == imported(entry["file"])


def test_counter_is_initial_plus_one():
    p = imported("counter.pbtxt")
    r = outcome_set(p, {}, ints(p, counter=41), "atomic", "outputs+state")
    assert r.count == 1
    (o,) = r.as_dict(1)
    assert int(dict(o.outputs)["value"].array) == 42 and int(dict(o.state)["counter"].array) == 42


def test_counter_function_inlines_the_body_and_its_control_outputs():
    p = imported("counter_function.pbtxt")
    names = {n.name for n in p.nodes}
    assert "StatefulPartitionedCall/AssignAddVariableOp" in names
    assert p.node["StatefulPartitionedCall/AssignAddVariableOp"].attrs["fn"] == "Add"
    feeds = {"delta": Tensor(np.array(5, dtype=np.int64))}
    for semantics in ("atomic", "decomposed"):
        r = outcome_set(p, feeds, ints(p, counter=1), semantics, "outputs+state")
        assert [(int(dict(o.outputs)["value"].array), int(dict(o.state)["counter"].array))
                for o in r.as_dict(5)] == [(6, 6)]


def test_seed002_load_store_forbids_x1_with_r0_0():
    p = imported("seed002_load_store.pbtxt")
    r = outcome_set(p, {}, ints(p), "atomic", "outputs+state")
    got = {(int(dict(o.outputs)["r0"].array), int(dict(o.state)["X"].array)) for o in r.as_dict(10)}
    assert (0, 1) not in got and (5, 1) in got and (0, 2) in got


def test_seed002_writes_reads_forbids_2_0():
    p = imported("seed002_writes_reads.pbtxt")
    r = outcome_set(p, {}, ints(p), "atomic", "outputs+state")
    got = {(int(dict(o.outputs)["r0"].array), int(dict(o.outputs)["r1"].array)) for o in r.as_dict(10)}
    assert (2, 0) not in got and got == {(0, 0), (0, 1), (2, 1)}


def test_group_fanin_total():
    p = imported("group_fanin.pbtxt")
    r = outcome_set(p, {}, ints(p, a=10, b=0, c=100), "atomic", "outputs+state")
    assert [int(dict(o.outputs)["total"].array) for o in r.as_dict(5)] == [10 + 1 + 7 + 100 - 2]


def test_v1_optimizers_become_assigns():
    sgd = imported("v1_mlp_sgd.pbtxt")
    updates = [n for n in sgd.nodes if n.op == "Assign"]
    assert len(updates) == 4 and {n.attrs["fn"] for n in updates} == {"GradientStep"}
    adam = imported("v1_mlp_adam.pbtxt")
    fns = sorted(n.attrs["fn"] for n in adam.nodes if n.op == "Assign")
    # per variable: m, v (StepToward) and var (AdamStep); beta powers: Snd (Assign)
    assert fns.count("StepToward") == 8 and fns.count("AdamStep") == 4


def test_float_reductions_cannot_run_concretely_but_are_named(monkeypatch):
    # what a user without TensorFlow sees (with it: docs/kernels.md)
    monkeypatch.setenv("TFSEM_TF_KERNELS", "0")
    p = imported("v1_mlp_sgd.pbtxt")
    feeds = {"x": Tensor(np.ones((2, 4), np.float32)), "y": Tensor(np.ones((2, 2), np.float32))}
    init = {x: Tensor(np.ones(t.shape, np.float32)) for x, t in p.variables.items()}
    with pytest.raises(CannotRun, match="MatMul|Mean|BiasAddGrad"):
        outcome_set(p, feeds, init, "atomic", "outputs+state")


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda g: g["file"])
def test_check_graph_against_itself_is_sound(entry, capsys):
    path = str(CORPUS / entry["file"])
    args = ["check", path, path, "--json"]
    for f in entry["fetches"]:
        args += ["--fetch", f]
    for t in entry["targets"]:
        args += ["--target", t]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "sound"


def test_removing_a_control_dependency_is_a_confirmed_unsound(tmp_path, capsys):
    """The shape of a dependency-optimizer bug: `read` loses ^increment."""
    text = (CORPUS / "counter.pbtxt").read_text()
    assert text.count('input: "^increment"') == 1
    broken = tmp_path / "counter_broken.pbtxt"
    broken.write_text(text.replace('  input: "^increment"\n', ""))
    assert main(["check", str(CORPUS / "counter.pbtxt"), str(broken), "--json"]) == 1
    v = json.loads(capsys.readouterr().out)
    assert v["verdict"] == "unsound" and v["differs"] == {"output": "value"}
    assert "oracle" in v["confirmed"]


def test_outcomes_names_the_nodes_it_cannot_run(capsys, monkeypatch):
    # what a user without TensorFlow sees (with it: docs/kernels.md)
    monkeypatch.setenv("TFSEM_TF_KERNELS", "0")
    x = '{"dtype": "float32", "value": [[1, 2, 3], [4, 5, 6]]}'
    assert main(["outcomes", str(CORPUS / "batchnorm.pbtxt"), "--feed", f"x={x}"]) == 2
    err = capsys.readouterr().err
    assert "cannot run TensorFlow op Mean" in err
    assert "StatefulPartitionedCall/bn_1/moments/mean" in err and "Traceback" not in err


def test_outcomes_command_on_a_graph(capsys):
    assert main(["outcomes", str(CORPUS / "counter.pbtxt"), "--init", "counter=3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == 1 and out["outcomes"][0]["outputs"] == {"value": 4}


def test_import_command_writes_a_program_that_loads(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["import", str(CORPUS / "counter_function.pbtxt"), "-o", str(out)]) == 0
    p = load_program_or_graph(out)
    assert p == imported("counter_function.pbtxt")


def test_fetch_port_and_feed_node(capsys):
    g = parse_text("GraphDef", """
        node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "shape" value { shape { dim { size: 4 } } } } }
        node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
               attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
        node { name: "s" op: "Split" input: "axis" input: "a"
               attr { key: "T" value { type: DT_INT64 } } attr { key: "num_split" value { i: 2 } } }
        node { name: "sum" op: "AddV2" input: "s" input: "s:1" attr { key: "T" value { type: DT_INT64 } } }
    """)
    p = import_graph(g, ["s:1", "sum"]).program
    assert sorted(p.outputs) == ["s:1", "sum"]
    r = outcome_set(p, {"a": Tensor(np.array([1, 2, 3, 4]))}, {}, "atomic", "outputs")
    (o,) = r.as_dict(1)
    assert dict(o.outputs)["s:1"].array.tolist() == [3, 4] and dict(o.outputs)["sum"].array.tolist() == [4, 6]
    # --feed turns the AddV2 into a feed of its own name
    with pytest.raises(GraphImportError, match="static shape"):
        import_graph(g, ["sum"], feeds=["sum"])  # AddV2 has no shape attribute
    g["node"][-1]["attr"]["_output_shapes"] = {"list": {"shape": [{"dim": [{"size": 2}]}]}}
    p2 = import_graph(g, ["sum"], feeds=["sum"]).program
    assert {k: (t.dtype, t.shape) for k, t in p2.feeds.items()} == {"sum": ("int64", (2,))}
    assert not any(n.op == "SplitPart" for n in p2.nodes)   # pruned: nothing needs them


def _graph(body: str) -> dict:
    return parse_text("GraphDef", body)


CONST_I64 = """node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
  attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 3 } } int64_val: 7 } } } }
"""


def test_splat_constant_fills_the_shape():
    p = import_graph(_graph(CONST_I64), ["c"]).program
    (o,) = outcome_set(p, {}, {}, "atomic", "outputs").as_dict(1)
    assert dict(o.outputs)["c"].array.tolist() == [7, 7, 7]


def test_tensor_content_constant():
    data = np.array([[1.5, -2.0], [0.25, 3.0]], np.float32).tobytes()
    g = {"node": [{"name": "c", "op": "Const", "attr": {
        "dtype": {"type": "DT_FLOAT"},
        "value": {"tensor": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": 2}, {"size": 2}]},
                             "tensor_content": data}}}}]}
    p = import_graph(g, ["c"]).program
    (o,) = outcome_set(p, {}, {}, "atomic", "outputs").as_dict(1)
    assert dict(o.outputs)["c"].array.tolist() == [[1.5, -2.0], [0.25, 3.0]]
    g["node"][0]["attr"]["value"]["tensor"]["tensor_content"] = data[:-1]
    with pytest.raises(GraphImportError, match="tensor_content has 15 bytes"):
        import_graph(g, ["c"])


@pytest.mark.parametrize("op,rule", [("RefSwitch", "control-flow"), ("ControlTrigger", "control-flow"),
                                     ("RandomShuffle", "unmodelled-op"),
                                     ("QueueDequeueV2", "unmodelled-op")])
def test_unmodelled_stateful_ops_and_control_flow_are_refused_by_name(op, rule):
    g = _graph(CONST_I64 + f'node {{ name: "bad" op: "{op}" input: "c" }}')
    with pytest.raises(GraphImportError) as exc:
        import_graph(g, ["bad"])
    (v,) = exc.value.violations
    assert v.rule == rule and "'bad'" in v.where and op in str(v)


def test_unmodelled_pure_op_is_uninterpreted_and_cannot_run(monkeypatch):
    # what a user without TensorFlow sees (with it: docs/kernels.md)
    monkeypatch.setenv("TFSEM_TF_KERNELS", "0")
    g = _graph(CONST_I64.replace("DT_INT64", "DT_FLOAT").replace("int64_val", "float_val")
               + 'node { name: "e" op: "Exp" input: "c" attr { key: "T" value { type: DT_FLOAT } } }')
    p = import_graph(g, ["e"]).program
    assert p.node["e"].op == "tf.Exp/1/1"
    with pytest.raises(CannotRun, match="Exp"):
        outcome_set(p, {}, {}, "atomic", "outputs")


def test_unsupported_dtype_is_refused_with_node_and_dtype():
    g = _graph(CONST_I64.replace("DT_INT64", "DT_STRING").replace("int64_val: 7", 'string_val: "a"')
               + 'node { name: "n" op: "Identity" input: "c" attr { key: "T" value { type: DT_STRING } } }')
    with pytest.raises(GraphImportError) as exc:
        import_graph(g, ["n"])
    assert "DT_STRING" in str(exc.value) and "'n'" in str(exc.value)
    assert "string, variant, resource" in str(exc.value)


def test_every_numeric_dtype_imports_and_exports():
    """int32, bool, float16, bfloat16, ... constants and placeholders import
    as tfsem values of their dtype, and export back to the same TensorProto."""
    from tfsem.graphdef.exporter import tensor_proto
    from tfsem.graphdef.importer import TFSEM_DTYPES, tensor_from_proto
    from tfsem.oracle.values import edge_values
    for tf_name, name in TFSEM_DTYPES.items():
        t = Tensor(edge_values(name), name)
        proto = tensor_proto(t)
        assert proto["dtype"] == tf_name
        assert Tensor(tensor_from_proto(proto, "c"), name) == t
    g = _graph('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }'
               ' attr { key: "shape" value { shape { dim { size: 2 } } } } }'
               'node { name: "n" op: "Neg" input: "x" attr { key: "T" value { type: DT_INT32 } } }'
               'node { name: "b" op: "Cast" input: "n" attr { key: "SrcT" value { type: DT_INT32 } }'
               ' attr { key: "DstT" value { type: DT_BOOL } } }')
    p = import_graph(g, ["b"]).program
    assert p.feed_type("x").dtype == "int32"
    assert check_rewrite(p, p).verdict == "sound"


def test_racing_adam_update_is_refused():
    """A read of the variable unordered with ResourceApplyAdam: TensorFlow's
    kernel is locked, tfsem's model is several Assigns: refused."""
    text = (CORPUS / "v1_mlp_adam.pbtxt").read_text()
    g = parse_text("GraphDef", text)
    g["node"].append({"name": "racy_read", "op": "ReadVariableOp", "input": ["w1"],
                      "attr": {"dtype": {"type": "DT_FLOAT"}}})
    with pytest.raises(GraphImportError, match="racy_read") as exc:
        import_graph(g, ["loss", "racy_read"], ["train"])
    assert exc.value.violations[0].rule == "racing-update"


def test_unknown_fetch_and_missing_function_are_named():
    with pytest.raises(GraphImportError, match="no node named 'nope'"):
        import_graph(_graph(CONST_I64), ["nope"])
    g = _graph(CONST_I64 + 'node { name: "call" op: "PartitionedCall" input: "c" '
                           'attr { key: "f" value { func { name: "missing_fn" } } } }')
    with pytest.raises(GraphImportError, match="missing_fn"):
        import_graph(g, ["call"])


# -- malformed files: exit 2, a message, no traceback ------------------------


def _run_import(path, capsys) -> tuple[int, str]:
    rc = main(["import", str(path)])
    err = capsys.readouterr().err
    return rc, err


def test_truncated_and_flipped_text_graphs_exit_2(tmp_path, capsys):
    data = (CORPUS / "counter.pbtxt").read_bytes()
    rng = random.Random(14)
    cuts = sorted(rng.sample(range(1, len(data) - 1), 25))
    bad = 0
    for i, cut in enumerate(cuts):
        f = tmp_path / f"t{i}.pbtxt"
        f.write_bytes(data[:cut])
        rc, err = _run_import(f, capsys)
        assert rc in (0, 2)
        if rc == 2:
            bad += 1
            assert "tfsem import:" in err and "Traceback" not in err
    assert bad >= 20   # almost every cut leaves an unterminated block
    for i in range(25):
        b = bytearray(data)
        pos = rng.randrange(len(b))
        b[pos] = rng.choice(b"{}\":#\x00\xff")
        f = tmp_path / f"f{i}.pbtxt"
        f.write_bytes(bytes(b))
        rc, err = _run_import(f, capsys)
        assert rc in (0, 2) and "Traceback" not in err
        if rc == 2:
            assert err.strip()


def test_truncated_and_flipped_binary_graphs_exit_2(tmp_path, capsys):
    g = parse_text("GraphDef", (CORPUS / "counter.pbtxt").read_text())
    data = encode("GraphDef", g)
    ok = tmp_path / "ok.pb"
    ok.write_bytes(data)
    assert load_program_or_graph(ok) == imported("counter.pbtxt")
    rng = random.Random(2)
    for i, cut in enumerate(sorted(rng.sample(range(1, len(data)), 25))):
        f = tmp_path / f"t{i}.pb"
        f.write_bytes(data[:cut])
        rc, err = _run_import(f, capsys)
        assert rc in (0, 2) and "Traceback" not in err
        if rc == 2:
            assert "tfsem import:" in err
    for i in range(40):
        b = bytearray(data)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        f = tmp_path / f"f{i}.pb"
        f.write_bytes(bytes(b))
        rc, err = _run_import(f, capsys)
        assert rc in (0, 2) and "Traceback" not in err


def test_wrong_message_and_wrong_file_kind_exit_2(tmp_path, capsys):
    j = tmp_path / "prog.pb"
    j.write_text('{"format": "tfsem.program/1", "nodes": []}')
    rc, err = _run_import(j, capsys)
    assert rc == 2 and "GraphDef" in err
    txt = tmp_path / "binary.pbtxt"
    txt.write_bytes(b"\x0a\x05\x12\x03abc\xff\xfe")
    rc, err = _run_import(txt, capsys)
    assert rc == 2 and "UTF-8" in err
    d = tmp_path / "emptydir"
    d.mkdir()
    rc, err = _run_import(d, capsys)
    assert rc == 2 and "saved_model.pb" in err
    rc = main(["outcomes", str(CORPUS / "counter.pbtxt"), "--fetch", "nope"])
    assert rc == 2 and "no node named 'nope'" in capsys.readouterr().err


def test_meta_graph_and_saved_model_with_signature(tmp_path):
    g = parse_text("GraphDef", (CORPUS / "counter.pbtxt").read_text())
    sig = {"outputs": {"result": {"name": "value:0", "dtype": "DT_INT64"}}}
    meta = {"graph_def": g, "signature_def": {"serving_default": sig}}
    (tmp_path / "m.meta").write_bytes(encode("MetaGraphDef", meta))
    p = load_program_or_graph(tmp_path / "m.meta")
    assert list(p.outputs) == ["result"]
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(encode("SavedModel", {"meta_graphs": [meta]}))
    assert load_program_or_graph(sm) == p
    with pytest.raises(ProgramError, match="no signature 'other'"):
        load_program_or_graph(sm, signature="other")


def test_service_requests_take_a_graph_where_a_program_goes():
    from tfsem.service.limits import Limits
    from tfsem.service.requests import check_request, outcomes_request
    text = (CORPUS / "counter.pbtxt").read_text()
    req = outcomes_request({"program": {"graph": text, "fetch": ["value"]},
                            "init": {"counter": 1}}, Limits())
    assert req.program["outputs"] == {"value": "value"}
    broken = text.replace('  input: "^increment"\n', "")
    c = check_request({"original": {"graph": text}, "rewritten": {"graph": broken}}, Limits())
    assert c.case["original"]["format"] == "tfsem.program/1"
    with pytest.raises(ProgramError, match="request.original.graph"):
        check_request({"original": {"graph": text[:200]}, "rewritten": {"graph": text}}, Limits())
    with pytest.raises(ProgramError, match="unknown field"):
        outcomes_request({"program": {"graph": text, "fetches": ["value"]}}, Limits())


_BAD_ATTRS = [{"s": b"x"}, {"i": -1}, {"i": 10 ** 12}, {"list": {}}, {"type": "DT_STRING"},
              {"f": float("nan")}, {"b": True}, {}, {"shape": {"unknown_rank": True}},
              {"shape": {"dim": [{"size": -1}]}}, {"tensor": {"dtype": "DT_INT32"}},
              {"list": {"i": [1, 2]}}]


def test_mutated_graph_dicts_import_or_are_refused_by_name():
    """Bounded structural fuzzing of the corpus' decoded graphs (attributes
    deleted or of the wrong kind, inputs dropped or dangling, ops swapped,
    function returns broken): import succeeds or raises ProgramError; never
    another exception (a traceback)."""
    import copy
    from tfsem.graphdef import ops as opt
    graphs = [(g, parse_text("GraphDef", (CORPUS / g["file"]).read_text())) for g in MANIFEST]
    ops = sorted(opt.table()) + ["Switch", "Foo"]
    rng = random.Random(141)
    refused = 0
    for _ in range(150):
        g, d = rng.choice(graphs)
        d = copy.deepcopy(d)
        fdefs = d.get("library", {}).get("function", [])
        pool = list(d["node"]) + [n for f in fdefs for n in f.get("node_def", [])]
        for _ in range(rng.randint(1, 3)):
            n = rng.choice(pool)
            k = rng.randrange(6)
            if k == 0 and n.get("attr"):
                del n["attr"][rng.choice(sorted(n["attr"]))]
            elif k == 1 and n.get("attr"):
                n["attr"][rng.choice(sorted(n["attr"]))] = copy.deepcopy(rng.choice(_BAD_ATTRS))
            elif k == 2 and n.get("input"):
                n["input"].pop(rng.randrange(len(n["input"])))
            elif k == 3:
                n.setdefault("input", []).append(rng.choice(
                    ["nope", "nope:3", "^nope", n["name"] + ":7", "x:y:z", "", "a:b", n["name"]]))
            elif k == 4:
                n["op"] = rng.choice(ops)
            elif fdefs:
                f = rng.choice(fdefs)
                if f.get("ret"):
                    f["ret"][rng.choice(sorted(f["ret"]))] = rng.choice(
                        ["nope:output:0", "x", "Const:output:9", ""])
        try:
            import_graph(d, g["fetches"], g["targets"], list(g["feeds"]))
        except ProgramError as exc:
            refused += 1
            assert exc.violations and all(v.message for v in exc.violations)
    assert refused > 50
