"""How node attributes become what tfsem's models and kernels read, without
TensorFlow (tests/test_graphdef_attr_decoding_tensorflow.py compares them
with TensorFlow's runtime where it is installed)."""

from __future__ import annotations

import pytest

from tfsem.cli import main
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import encode, parse, parse_text

TWO_VARIABLES = '''
node { name: "h1" op: "VarHandleOp" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "NAME1" } } }
node { name: "h2" op: "VarHandleOp" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "NAME2" } } }
node { name: "r1" op: "ReadVariableOp" input: "h1" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "r2" op: "ReadVariableOp" input: "h2" attr { key: "dtype" value { type: DT_INT32 } } }
'''


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_shared_names_that_are_not_utf8_are_refused_not_merged(binary):
    """b"v\\xff" and b"v\\xfe" name two variables in TensorFlow; decoded with
    replacement characters they were one name, one variable in tfsem."""
    graph = parse_text("GraphDef", TWO_VARIABLES.replace("NAME1", r"v\377")
                       .replace("NAME2", r"v\376"))
    if binary:
        graph = parse("GraphDef", encode("GraphDef", graph))
    with pytest.raises(GraphImportError, match=r"'h1'.*shared_name.*not UTF-8") as exc:
        import_graph(graph, ["r1", "r2"])
    assert exc.value.violations[0].rule == "bad-attribute"
    ok = parse_text("GraphDef", TWO_VARIABLES.replace("NAME1", "v\\303\\251")
                    .replace("NAME2", "v\\303\\250"))
    assert sorted(import_graph(ok, ["r1", "r2"]).program.variables) == ["vè", "vé"]


def test_a_kernel_attribute_that_is_not_utf8_is_refused_by_name():
    text = ('node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }'
            ' attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }'
            'node { name: "y" op: "Erf" input: "x" attr { key: "T" value { type: DT_FLOAT } }'
            ' attr { key: "note" value { list { s: ["a", "\\377"] } } } }')
    with pytest.raises(GraphImportError, match=r"'y'.*not UTF-8") as exc:
        import_graph(parse_text("GraphDef", text), ["y"])
    assert exc.value.violations[0].rule == "bad-attribute"


def test_tfsem_import_of_a_non_utf8_shared_name_exits_2(tmp_path, capsys):
    f = tmp_path / "g.pbtxt"
    f.write_text(TWO_VARIABLES.replace("NAME1", r"v\377").replace("NAME2", "w"))
    rc = main(["import", str(f), "--fetch", "r1"])
    err = capsys.readouterr().err
    assert rc == 2 and "'h1'" in err and "UTF-8" in err and "Traceback" not in err
