"""Nodes checked against their ops' OpDef signatures at import
(graphdef/signatures.py), as TensorFlow checks a graph it loads: a type
attribute (its default included) that disagrees with its input's dtype or
holds a type the OpDef does not allow, a count or list(type) attribute that
is not the inputs, an int attribute outside int32 that the op reads as
int32, a missing type attribute (a Const without dtype).  Each graph of tests/graphdef_signature_cases.py's
REFUSED is refused, naming the node and the attribute; each of VALID, and
every graph of the real-models corpus and the examples, imports (no false
refusal).  tests/test_graphdef_signatures_tensorflow.py checks the same
graphs, and the table, against TensorFlow.  No TensorFlow needed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphdef_signature_cases import (BIG, REFUSED, VALID, XF, function_call, node,
                                      strided_slice_grad)
from tfsem.cli import main
from tfsem.graphdef import functions as fns
from tfsem.graphdef import read_graph
from tfsem.graphdef.functions import GNode
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import parse_text
from tfsem.graphdef.signatures import (INT32_ATTRS, INT32_KERNEL_ATTRS, OPS, SignatureError,
                                       check_graph, derive_attrs, output_types)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "tensorflow"


def _import(text: str, fetch: str):
    """`fetch`: a tensor to fetch, or `^node` a target."""
    if fetch.startswith("^"):
        return import_graph(parse_text("GraphDef", text), [], [fetch[1:]])
    return import_graph(parse_text("GraphDef", text), [fetch])


@pytest.mark.parametrize("name", sorted(VALID))
def test_a_graph_tensorflow_loads_imports(name):
    text, fetch = VALID[name]
    p = _import(text, fetch).program
    assert p.outputs or fetch.startswith("^")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_graph_tensorflow_refuses_is_refused_naming_node_and_attribute(name):
    text, fetch, attribute = REFUSED[name]
    with pytest.raises(GraphImportError) as info:
        _import(text, fetch)
    (v,) = info.value.violations
    assert v.rule in ("signature", "missing-attribute"), v
    assert "node 'out'" in v.where, v
    assert repr(attribute) in v.message, v
    assert "TensorFlow" in v.message, v


def test_the_refusal_says_what_was_expected():
    def message(name):
        with pytest.raises(GraphImportError) as info:
            _import(*REFUSED[name][:2])
        return info.value.violations[0].message
    assert "input 0 (x) is int32" in message("cast_src") and "say float" in message("cast_src")
    assert "say int64" in message("one_hot_default_ti_on_int32")
    assert "has 2 data input(s)" in message("add_n_one_more") and "say 3" in \
        message("add_n_one_more")
    assert "below the minimum 2" in message("concat_below_minimum")
    assert str(BIG) in message("strided_slice_begin_mask") and "int32" in \
        message("strided_slice_begin_mask")
    assert "'T' is uint8" in message("neg_uint8") and "allows" in message("neg_uint8")


def test_the_command_line_exits_2_naming_the_node_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "g.pbtxt"
    path.write_text(REFUSED["cast_src"][0])
    rc = main(["import", str(path), "--fetch", "out"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "node 'out' (Cast)" in err and "'SrcT'" in err and "Traceback" not in err


def test_an_int_attribute_only_the_kernel_reads_is_refused_only_where_reached():
    """StridedSliceGrad's masks: TensorFlow loads the graph, and a run
    reaching the node fails (INT32_KERNEL_ATTRS); a run not reaching it
    does not."""
    text = strided_slice_grad(end_mask=1 << 40) + \
        'node { name: "other" op: "Identity" input: "x" attr { key: "T" value { type: DT_INT32 } } }\n'
    assert _import(text, "other").program.outputs
    with pytest.raises(GraphImportError, match="end_mask"):
        _import(text, "out")


def test_a_function_body_a_fetch_reaches_is_checked_too():
    """The body of a call the fetch reaches, inlined, is checked as the
    graph's own nodes are (TensorFlow checks it when it instantiates the
    function: here already at import).  So is one nothing reaches:
    TensorFlow's import_graph_def instantiates every call node's function
    and refuses the graph (measured on TensorFlow 2.21;
    tests/test_graphdef_unreached_functions.py)."""
    assert _import(function_call("DT_INT32"), "call").program.outputs
    assert _import(function_call("DT_INT32"), "other").program.outputs
    for fetch in ("call", "other"):
        with pytest.raises(GraphImportError) as info:
            _import(function_call("DT_FLOAT"), fetch)
        (v,) = info.value.violations
        assert v.rule == "signature" and "'call/c' (Cast, in function 'f'" in v.where
        assert "'SrcT'" in v.message and "is int32" in v.message and "say float" in v.message


def test_the_int32_tables_name_int_attributes_of_the_table():
    for table in (INT32_ATTRS, INT32_KERNEL_ATTRS):
        for op, names in table.items():
            for name in names:
                assert OPS[op][2][name][0] in ("int", "list(int)"), (op, name)


def test_the_op_registrys_type_defaults_are_the_opdefs():
    # a stripped type attribute is read as the registry's default, else the
    # OpDef's (graphdef/importer.py dtype): the two must never disagree
    from tfsem.graphdef.signatures import type_default
    from tfsem.oracle import opdefs
    pairs = [(op, attr, dt) for op, d in opdefs.table().items()
             for attr, dt in getattr(d, "type_defaults", {}).items() if op in OPS]
    assert pairs
    for op, attr, dt in pairs:
        assert type_default(op, attr) == dt, (op, attr)


def test_a_type_attribute_without_an_opdef_default_is_missing():
    from tfsem.graphdef.signatures import type_default
    assert type_default("Range", "Tidx") == "DT_INT32"
    assert type_default("Neg", "T") == ""            # no default: "NodeDef missing attr"
    assert type_default("NoSuchOp", "T") == ""
    assert type_default("MaxPool", "ksize") == ""    # not a type attribute
    with pytest.raises(GraphImportError) as info:
        _import(XF + node("out", "Neg", ["f"]), "out")
    assert [v.rule for v in info.value.violations] == ["missing-attribute"]
    assert "'T'" in info.value.violations[0].message


def _node(name, op, inputs, **attrs):
    return GNode(name, op, inputs, {k: v for k, v in attrs.items()})


def test_a_reference_is_passed_where_a_value_is_expected_and_not_the_other_way():
    v = _node("v", "VariableV2", [], dtype={"type": "DT_FLOAT"},
              shape={"shape": {"dim": [{"size": 2}]}})
    x = _node("x", "Placeholder", [], dtype={"type": "DT_FLOAT"})
    assert output_types(v) == ["DT_FLOAT_REF"]
    # (TensorFlow reads the reference: accepted)
    check_graph({"v": v, "i": _node("i", "Identity", ["v"], T={"type": "DT_FLOAT"})})
    with pytest.raises(SignatureError, match="input 0 .*float.*float_ref"):
        check_graph({"x": x, "a": _node("a", "Assign", ["x", "x"], T={"type": "DT_FLOAT"})})


def test_what_the_table_cannot_type_is_not_judged():
    x = _node("x", "MyOwnOp", [])
    # an unknown op's output, an attribute of another kind (a function
    # body's placeholder), an op outside the table: let be
    check_graph({"x": x, "c": _node("c", "Cast", ["x"], SrcT={"type": "DT_FLOAT"},
                                    DstT={"type": "DT_INT32"})})
    check_graph({"p": _node("p", "Placeholder", [], dtype={"type": "DT_INT32"}),
                 "c": _node("c", "Cast", ["p"], SrcT={"placeholder": "T"},
                            DstT={"type": "DT_INT32"})})
    check_graph({"z": _node("z", "MyOwnOp", ["q", "r"], T={"type": "DT_BOOL"})})


def test_a_huge_count_is_refused_before_any_list_of_it_is_made():
    x = _node("x", "Placeholder", [], dtype={"type": "DT_INT32"})
    for n in (1 << 31, 1 << 40, -1):
        with pytest.raises(SignatureError, match="num_split"):
            check_graph({"x": x, "s": _node("s", "Split", ["x", "x"], T={"type": "DT_INT32"},
                                            num_split={"i": n})})
    # within int32, a count the inputs cannot match is told without a list of it
    with pytest.raises(SignatureError, match="say more"):
        check_graph({"x": x, "a": _node("a", "AddN", ["x"], T={"type": "DT_INT32"},
                                        N={"i": (1 << 31) - 1})})


def _corpus_and_examples():
    manifest = json.loads((EXAMPLES / "corpus" / "manifest.json").read_text())["graphs"]
    paths = [EXAMPLES / "corpus" / e["file"] for e in manifest]
    paths += sorted(p for p in EXAMPLES.glob("*.pbtxt"))
    return paths


@pytest.mark.parametrize("path", _corpus_and_examples(), ids=lambda p: p.name)
def test_every_real_graph_passes_and_its_edges_are_typed(path):
    """No false refusal on the real-models corpus and the examples (the
    large graphs included: the check alone is fast), and the check is not
    vacuous there: most data edges between nodes of the table are typed."""
    graph, _ = read_graph(path)
    top: dict = {}
    fns.flatten(graph, None, top)
    check_graph(top)
    typed = edges = 0
    types = {name: output_types(n) for name, n in top.items()}
    for n in top.values():
        if n.op not in OPS:
            continue
        for ref in n.inputs:
            if ref.startswith("^"):
                continue
            src, _, port = ref.partition(":")
            if src in top and top[src].op in OPS:
                edges += 1
                t = types.get(src)
                typed += t is not None and int(port or 0) < len(t)
    assert edges == 0 or typed >= 0.8 * edges, (typed, edges)


def test_a_real_graph_with_one_type_attribute_changed_is_refused():
    """(the check is live on real graphs) keras_mlp_adam with one node's T
    changed to another dtype: refused, naming that node."""
    graph, _ = read_graph(EXAMPLES / "keras_mlp_adam.pbtxt")
    nodes = graph["node"]
    k = next(i for i, n in enumerate(nodes) if n.get("op") == "AddV2")
    nodes[k]["attr"]["T"] = {"type": "DT_DOUBLE"}
    top: dict = {}
    fns.flatten(graph, None, top)
    with pytest.raises(SignatureError) as info:
        check_graph(top)
    assert info.value.node.name == nodes[k]["name"] and info.value.attribute == "T"


def test_the_mlir_reader_derives_attributes_as_tensorflows_exporter_does():
    i32, i64, f32 = "DT_INT32", "DT_INT64", "DT_FLOAT"
    assert derive_attrs("ConcatV2", [f32, f32, f32, i32], [f32]) == {
        "N": {"i": 3}, "T": {"type": f32}, "Tidx": {"type": i32}}
    assert derive_attrs("OneHot", [i32, i32, f32, f32], [f32]) == {
        "TI": {"type": i32}, "T": {"type": f32}}
    assert derive_attrs("IdentityN", [i32, f32], [i32, f32]) == {
        "T": {"list": {"type": [i32, f32]}}}
    assert derive_attrs("Const", [], [i64]) == {"dtype": {"type": i64}}
    assert derive_attrs("NotAnOp", [i32], [i32]) == {}


def _dead_body_graph(dead_t: str, fetch_call: bool = True) -> str:
    """out = PartitionedCall d(f), d's body with a node `bad` no result
    needs (Neg of T=dead_t on the argument); `other` = Neg(f)."""
    fn = ('function { signature { name: "d" input_arg { name: "a" type: DT_FLOAT } '
          'output_arg { name: "o" type: DT_FLOAT } } node_def { name: "n" op: "Neg" input: "a" '
          'attr { key: "T" value { type: DT_FLOAT } } } node_def { name: "bad" op: "Neg" '
          f'input: "n:y:0" attr {{ key: "T" value {{ type: {dead_t} }} }} }} '
          'ret { key: "o" value: "n:y:0" } }')
    return (XF + node("out", "PartitionedCall", ["f"], Tin="list { type: DT_FLOAT }",
                      Tout="list { type: DT_FLOAT }", f='func { name: "d" }')
            + node("other", "Neg", ["f"], T="type: DT_FLOAT") + "library { " + fn + " }\n")


def test_a_calls_dead_body_nodes_are_checked_reached_or_not():
    # the dead node's input is the body's own node (its type read from it);
    # an unreached call's too: TensorFlow's import_graph_def instantiates
    # every call node's function, dead nodes included, and refuses the
    # graph (measured on TensorFlow 2.21)
    assert _import(_dead_body_graph("DT_FLOAT"), "out").program.outputs
    assert _import(_dead_body_graph("DT_FLOAT"), "other").program.outputs
    for fetch in ("out", "other"):
        with pytest.raises(GraphImportError) as info:
            _import(_dead_body_graph("DT_INT32"), fetch)
        (v,) = info.value.violations
        assert v.rule == "signature" and "'out/bad'" in v.where and "'T'" in v.message
