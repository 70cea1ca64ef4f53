"""The signature check (graphdef/signatures.py) against TensorFlow itself:
its OpDef table (oracle/opdefs/tf_signatures.py) is TensorFlow's registry's
for the ops tfsem knows, TensorFlow loads each graph of
tests/graphdef_signature_cases.py's VALID, and refuses each of REFUSED
(`import_graph_def`; for an attribute only the kernel reads as int32,
INT32_KERNEL_ATTRS, the graph loads and a run of the node fails), as tfsem
refuses them (tests/test_graphdef_signatures.py).

Needs TensorFlow (skipped without it, as the other *_tensorflow tests).
"""

from __future__ import annotations

import numpy as np
import pytest

from graphdef_signature_cases import REFUSED, VALID, function_call
from tfsem.graphdef.signatures import (INT32_ATTRS, INT32_KERNEL_ATTRS, OPS, generate_table,
                                       tfsem_ops)

tf = pytest.importorskip("tensorflow", reason="compares tfsem's OpDef table and refusals with "
                         "TensorFlow's: needs the extra tfsem[tensorflow]")
from google.protobuf import text_format  # noqa: E402  (TensorFlow's protobuf)
from tensorflow.core.framework import graph_pb2  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

#: REFUSED graphs TensorFlow cannot be asked about: loading a Split of 2**32
#: outputs, TensorFlow 2.21 allocates until the process is killed
NOT_ASKED = {"split_count": "TensorFlow is killed loading it (out of memory)"}


def _graph(text: str):
    return text_format.Parse(text, graph_pb2.GraphDef())


def _load(text: str):
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(_graph(text), name="")
    return g


def test_the_table_is_tensorflows_opdefs():
    assert generate_table() == OPS
    # the ops tfsem knows that the table lacks are not TensorFlow's
    missing = [op for op in tfsem_ops() if op not in OPS]
    assert all(op_def_registry.get(op) is None for op in missing), missing
    for table in (INT32_ATTRS, INT32_KERNEL_ATTRS):
        assert all(op in OPS for op in table)


@pytest.mark.parametrize("name", sorted(VALID))
def test_tensorflow_loads_each_graph_tfsem_imports(name):
    text, _ = VALID[name]
    _load(text)


def _kernel_only(name: str) -> bool:
    text = REFUSED[name][0]
    return any(f'op: "{op}"' in text for op in INT32_KERNEL_ATTRS)


@pytest.mark.parametrize("name", sorted(n for n in REFUSED if not _kernel_only(n)))
def test_tensorflow_refuses_each_graph_tfsem_refuses(name):
    if name in NOT_ASKED:
        pytest.skip(NOT_ASKED[name])
    text, _, attribute = REFUSED[name]
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)) as info:
        _load(text)
    # TensorFlow's words for each kind of refusal: an input's dtype, the
    # inputs' count, or the attribute by name
    said = str(info.value)
    assert any(words in said for words in (
        "incompatible with expected", "do not match", f"attr '{attribute}'",
        f"Attr {attribute} ")), said[:300]


@pytest.mark.parametrize("name", sorted(n for n in REFUSED if _kernel_only(n)))
def test_an_attribute_only_the_kernel_reads_fails_each_run_of_the_node(name):
    text, fetch, attribute = REFUSED[name]
    g = _load(text)     # (the graph loads)
    with g.as_default(), tf.compat.v1.Session(graph=g) as s:
        feeds = {"x:0": np.arange(4, dtype=np.int32)}
        if "v" in [op.name for op in g.get_operations()]:
            s.run(tf.raw_ops.AssignVariableOp(resource=g.get_tensor_by_name("v:0"),
                                              value=tf.zeros([6], tf.int32)))
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"{attribute}.*int32"):
            s.run(g.get_operation_by_name(fetch.lstrip("^").partition(":")[0]), feeds)


def test_tensorflow_refuses_a_function_body_tfsem_refuses_and_loads_the_valid_one():
    _load(function_call("DT_INT32"))
    with pytest.raises(ValueError, match="expected type float != int32"):
        _load(function_call("DT_FLOAT"))


def _x():
    return tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 2], name="x")


#: (op, attribute) of INT32_ATTRS -> a node `out` of that op, built by
#: TensorFlow (the ones tests/graphdef_signature_cases.py writes are there)
BUILT = {
    ("GatherV2", "batch_dims"): lambda: tf.raw_ops.GatherV2(
        params=tf.zeros([3, 4]), indices=tf.constant([[0]]), axis=tf.constant(1), batch_dims=0,
        name="out"),
    **{("MaxPool", a): lambda: tf.raw_ops.MaxPool(
        input=_x(), ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID", name="out")
       for a in ("ksize", "strides")},
    **{("AvgPool", a): lambda: tf.raw_ops.AvgPool(
        value=_x(), ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID", name="out")
       for a in ("ksize", "strides")},
    **{("Conv2D", a): lambda: tf.raw_ops.Conv2D(
        input=_x(), filter=tf.zeros([2, 2, 2, 3]), strides=[1, 1, 1, 1], padding="VALID",
        name="out") for a in ("strides", "dilations")},
    ("DepthwiseConv2dNative", "strides"): lambda: tf.raw_ops.DepthwiseConv2dNative(
        input=_x(), filter=tf.zeros([2, 2, 2, 1]), strides=[1, 1, 1, 1], padding="VALID",
        name="out"),
}


def test_every_int32_attribute_is_one_tensorflow_refuses_out_of_range():
    written = {(op, a) for op, names in INT32_ATTRS.items() for a in names
               if any(f'op: "{op}"' in text and a in text for text, _, _ in REFUSED.values())}
    assert {(op, a) for op, names in INT32_ATTRS.items() for a in names} == written | set(BUILT)


@pytest.mark.parametrize("key", sorted(BUILT), ids=lambda k: f"{k[0]}.{k[1]}")
def test_an_int32_attribute_out_of_range_is_refused_by_both(key):
    from tfsem.graphdef.importer import GraphImportError, import_graph
    from tfsem.graphdef.proto import parse
    op, attr = key
    g = tf.Graph()
    with g.as_default():
        BUILT[key]()
    gd = g.as_graph_def()
    out = next(n for n in gd.node if n.name == "out")
    assert out.op == op
    a = out.attr[attr]
    if a.HasField("list"):
        vals = list(a.list.i)
        vals[1] = 1 << 40
        del a.list.i[:]
        a.list.i.extend(vals)
    else:
        a.i = 1 << 40
    with pytest.raises(ValueError, match=f"Attr {attr} has value 1099511627776 out of range"):
        with tf.Graph().as_default():
            tf.compat.v1.import_graph_def(gd, name="")
    with pytest.raises(GraphImportError) as info:
        import_graph(parse("GraphDef", gd.SerializeToString()), ["out"])
    (v,) = info.value.violations
    assert v.rule == "signature" and repr(attr) in v.message and "int32" in v.message


# -- attributes of every kind, against TensorFlow -----------------------------------

from graphdef_signature_cases import F32 as _F32, I32 as _I32, XF as _XF  # noqa: E402
from graphdef_signature_cases import node as _node, placeholder as _placeholder  # noqa: E402

_ONES4 = "list { i: 1 i: 1 i: 1 i: 1 }"
#: name -> (the graph's other nodes, op, inputs, attributes): each a node
#: TensorFlow loads, whose one attribute the test below gives values of
#: every kind
_KIND_BASES = {
    "MatMul.transpose_a": (_placeholder("a", "DT_FLOAT", (2, 2)), "MatMul", ["a", "a"],
                           {"T": _F32, "transpose_a": "b: false"}),
    "MaxPool.ksize": (_placeholder("im", "DT_FLOAT", (1, 2, 2, 1)), "MaxPool", ["im"],
                      {"T": _F32, "ksize": _ONES4, "strides": _ONES4, "padding": 's: "VALID"'}),
    "MaxPool.padding": (_placeholder("im", "DT_FLOAT", (1, 2, 2, 1)), "MaxPool", ["im"],
                        {"T": _F32, "ksize": _ONES4, "strides": _ONES4,
                         "padding": 's: "VALID"'}),
    "AddN.N": (_XF, "AddN", ["f", "f"], {"T": _F32, "N": "i: 2"}),
    "IdentityN.T": (_XF, "IdentityN", ["f"], {"T": "list { type: DT_FLOAT }"}),
    "Cast.Truncate": (_XF, "Cast", ["f"], {"SrcT": _F32, "DstT": _I32,
                                           "Truncate": "b: false"}),
    "Neg.T": (_XF, "Neg", ["f"], {"T": _F32}),
}

_KIND_VALUES = ["i: 1", "b: true", "f: 1.0", 's: "SAME"', "type: DT_FLOAT", "list { i: 1 }",
                "list { i: 1 i: 1 i: 1 i: 1 }", "list { type: DT_FLOAT }", "list { }",
                "shape { }"]


@pytest.mark.parametrize("base", sorted(_KIND_BASES))
def test_an_attribute_of_every_kind_is_refused_where_tensorflow_refuses_it(base):
    # the kind check (graphdef/signatures.py _check_kinds), a differential
    # test: tfsem refuses the node exactly where TensorFlow's import_graph_def
    # does, for each kind of value in the attribute
    from tfsem.graphdef.importer import GraphImportError, import_graph
    from tfsem.graphdef.proto import parse_text
    others, op, inputs, attrs = _KIND_BASES[base]
    name = base.split(".")[1]
    disagree, seen = [], set()
    for value in [attrs[name]] + _KIND_VALUES:   # (its own value first: loaded)
        text = others + _node("out", op, inputs, **{**attrs, name: value})
        try:
            _load(text)
            tf_refuses = False
        except (ValueError, TypeError, tf.errors.InvalidArgumentError):
            tf_refuses = True
        try:
            import_graph(parse_text("GraphDef", text), ["out"])
            tfsem_refuses = False
        except GraphImportError as exc:
            if {v.rule for v in exc.violations} <= {"unmodelled-op", "unsupported-dtype"}:
                continue   # (a node tfsem does not model, whether TensorFlow loads it or not)
            tfsem_refuses = True
        seen.add(tf_refuses)
        if tf_refuses != tfsem_refuses:
            disagree.append((value, tf_refuses, tfsem_refuses))
    assert not disagree, disagree
    assert seen == {True, False}   # (some values loaded, some refused)
