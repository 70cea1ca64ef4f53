"""Malformed function bodies that no fetch reaches, as TensorFlow loads them.

`bad_fn`'s body holds a Cast whose SrcT (float) is not its input's dtype
(int32): TensorFlow refuses the node when it instantiates the function.
Measured on TensorFlow 2.21 (the TensorFlow tests below): `import_graph_def`
instantiates the function of every call node of the graph, fetched or not,
so a graph with a PartitionedCall or StatefulPartitionedCall of `bad_fn`
does not load; a graph whose library holds `bad_fn` but no node calls it
loads and runs.  tfsem matches both: the first is refused naming the body's
node and the function (exit 2, no traceback), the second imports."""

from __future__ import annotations

import pytest

from tfsem.cli import main

_BASE = '''
node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 3 } } } }
node { name: "y" op: "Identity" input: "x" attr { key: "T" value { type: DT_INT32 } } }
%s
library {
  function {
    signature { name: "bad_fn" input_arg { name: "a" type: DT_INT32 }
                output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "c" op: "Cast" input: "a" attr { key: "SrcT" value { type: DT_FLOAT } }
               attr { key: "DstT" value { type: DT_FLOAT } } }
    ret { key: "out" value: "c:y:0" }
  }
}
versions { producer: 1500 }
'''


def _call(op: str) -> str:
    return (f'node {{ name: "call" op: "{op}" input: "x" '
            'attr { key: "Tin" value { list { type: DT_INT32 } } } '
            'attr { key: "Tout" value { list { type: DT_FLOAT } } } '
            'attr { key: "f" value { func { name: "bad_fn" } } } }')


GRAPHS = {"no caller": _BASE % "",
          "PartitionedCall": _BASE % _call("PartitionedCall"),
          "StatefulPartitionedCall": _BASE % _call("StatefulPartitionedCall")}


def _import(tmp_path, case: str, capsys) -> tuple[int, str]:
    path = tmp_path / "g.pbtxt"
    path.write_text(GRAPHS[case])
    rc = main(["import", str(path), "--fetch", "y", "-o", str(tmp_path / "p.json")])
    return rc, capsys.readouterr().err


def test_a_function_no_node_calls_is_not_checked(tmp_path, capsys):
    rc, err = _import(tmp_path, "no caller", capsys)
    assert rc == 0, err


@pytest.mark.parametrize("op", ["PartitionedCall", "StatefulPartitionedCall"])
def test_an_unreached_call_of_a_malformed_function_is_refused(op, tmp_path, capsys):
    """Fetching y only (the call is not needed): refused all the same,
    naming the body's node, the function and its caller."""
    rc, err = _import(tmp_path, op, capsys)
    assert rc == 2
    assert "node 'call/c' (Cast, in function 'bad_fn' called by 'call')" in err
    assert "[signature]" in err and "Traceback" not in err


@pytest.mark.parametrize("op", ["PartitionedCall", "StatefulPartitionedCall"])
def test_a_wellformed_unreached_call_still_imports(op, tmp_path, capsys):
    """The same graph with the Cast's SrcT right: imported (the check
    refuses only what TensorFlow refuses)."""
    GRAPHS[f"good {op}"] = GRAPHS[op].replace(
        'attr { key: "SrcT" value { type: DT_FLOAT } }',
        'attr { key: "SrcT" value { type: DT_INT32 } }')
    rc, err = _import(tmp_path, f"good {op}", capsys)
    assert rc == 0, err


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_tensorflow_loads_the_graph_exactly_where_tfsem_imports_it(case, tmp_path, capsys):
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's import_graph_def: needs "
                             "tfsem[tensorflow]")
    from google.protobuf import text_format
    gd = text_format.Parse(GRAPHS[case], tf.compat.v1.GraphDef())
    rc, _ = _import(tmp_path, case, capsys)
    with tf.Graph().as_default():
        if rc == 2:
            with pytest.raises(ValueError, match="expected type float != int32"):
                tf.compat.v1.import_graph_def(gd, name="")
        else:
            tf.compat.v1.import_graph_def(gd, name="")
            with tf.compat.v1.Session() as s:
                assert s.run("y:0") == 3
