"""Adversarial review (issue 23, canonical operand order of Add/Mul): while
measuring the commutativity of TensorFlow's Add/AddV2/Mul kernels on every
dtype, TensorFlow's v1 `Add` refused uint16, uint32 and uint64 (its OpDef's
T excludes them in TensorFlow 2.21; AddV2 takes them).  tfsem imported such a
node as its Add, so a rewrite of AddV2 into Add on uint32 was `sound`
although TensorFlow cannot import or run the rewritten graph.  It is refused
at import now, naming the node and the dtype."""

from __future__ import annotations

import pytest

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.graphdef.proto import parse_text


def graph(op: str, dt: str) -> str:
    ph = ('node {{ name: "{n}" op: "Placeholder" attr {{ key: "dtype" value {{ type: {dt} }} }} '
          'attr {{ key: "shape" value {{ shape {{ dim {{ size: 2 }} }} }} }} }}')
    return (ph.format(n="a", dt=dt) + ph.format(n="b", dt=dt)
            + f'node {{ name: "e" op: "{op}" input: "a" input: "b" '
              f'attr {{ key: "T" value {{ type: {dt} }} }} }}')


@pytest.mark.parametrize("dt", ["DT_UINT16", "DT_UINT32", "DT_UINT64"])
def test_v1_add_on_wide_unsigned_integers_is_refused(dt):
    with pytest.raises(GraphImportError) as exc:
        import_graph(parse_text("GraphDef", graph("Add", dt)), ["e"])
    assert exc.value.violations[0].rule == "dtype"
    assert "'e'" in str(exc.value) and dt[3:].lower() in str(exc.value)
    # AddV2 takes them
    p = import_graph(parse_text("GraphDef", graph("AddV2", dt)), ["e"]).program
    assert any(n.op in ("Add", "Add.ftz") for n in p.nodes)


@pytest.mark.parametrize("dt", ["DT_UINT8", "DT_INT16", "DT_INT64", "DT_FLOAT", "DT_HALF"])
def test_v1_add_on_its_dtypes_is_imported(dt):
    p = import_graph(parse_text("GraphDef", graph("Add", dt)), ["e"]).program
    assert any(n.op in ("Add", "Add.ftz") for n in p.nodes)
