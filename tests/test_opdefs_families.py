"""The op registry (oracle/opdefs) is the only name table of the ops graph
import knows: the control family (Switch, Merge, ...; If, While, Case and
calls, lowered when a graph is read), the queue family (a session's FIFO
queues and critical sections) and the data family (tf.data iterators and
Optionals) included.

* every op the importer's table holds is a registry entry (its build is the
  registry's), and the modules that held the old tables are gone;
* each op of these families names every facet: its semantics (one
  reference), its Z3 facet, its effect, its export (`node_exports`) or its
  lowering;
* the importer, the lowering of functional control flow, the exporter and
  the session exporter dispatch through the registry: an entry replaced in
  the registry changes what they do;
* no module outside the registry holds a collection of these families' op
  names, except the few listed with the reason (and those agree with it).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
from pathlib import Path

import pytest

from tfsem.graphdef import functions as gfn
from tfsem.graphdef import ops as opt
from tfsem.graphdef.blocking_export import real_queue_ops
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import blocking as blk
from tfsem.oracle import opdefs
from tfsem.oracle.opdefs import control, data, queues
from tfsem.oracle.program import CONTROL_FLOW_OPS

from opdefs_support import modules_outside_the_registry, syntax_nodes

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("control", "queue", "data")


def _family_ops() -> set[str]:
    fams = opdefs.families()
    return {op for f in FAMILIES for op in fams[f]}


@pytest.fixture
def replaced():
    """define(replace=True) an OpDef for the test, then put the old one back."""
    old: list[opdefs.OpDef] = []

    def put(d: opdefs.OpDef) -> None:
        old.append(opdefs.lookup(d.op))
        opdefs.define(d, replace=True)
    yield put
    for d in reversed(old):
        opdefs.define(d, replace=True)


def test_every_op_the_importer_accepts_is_a_registry_entry():
    for name, model in opt.table().items():
        if model.origin != "builtin":
            continue
        d = opdefs.lookup(name)
        assert d is not None, f"{name}: an op model outside the registry"
        assert model.build is d.build and model.doc == d.doc, name
        assert model.stateful == (d.stateful is not None), name
    # the modules that held the queue and iterator tables are gone
    for gone in ("tfsem.graphdef.blocking_ops", "tfsem.graphdef.dataset_ops"):
        assert importlib.util.find_spec(gone) is None, gone
    assert opdefs.problems() == []


def test_the_three_families_hold_the_ops_that_were_spread_out():
    fams = opdefs.families()
    assert set(CONTROL_FLOW_OPS) <= set(fams["control"])
    assert {"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
            "PartitionedCall", "StatefulPartitionedCall", "RefSwitch", "ControlTrigger"} \
        <= set(fams["control"])
    assert {"FIFOQueueV2", "QueueEnqueueV2", "QueueDequeueV2", "QueueSizeV2",
            "QueueEnqueueManyV2", "QueueDequeueManyV2", "QueueCloseV2", "MutexV2",
            "MutexLock", "ConsumeMutexLock"} == set(fams["queue"])
    assert {"IteratorGetNext", "IteratorGetNextSync", "OptionalFromValue", "OptionalGetValue",
            "OptionalHasValue", "OptionalNone", "MakeIterator"} <= set(fams["data"])
    # the tables the other layers read are the registry's
    assert opt.CONTROL_FLOW_PRIMITIVES == CONTROL_FLOW_OPS
    assert opt.CALLS == {"PartitionedCall", "StatefulPartitionedCall"}
    assert set(gfn.FUNCTIONAL_OPS) == {"If", "StatelessIf", "While", "StatelessWhile", "Case",
                                       "StatelessCase"}
    assert gfn.FUNCTION_ATTRS["While"] == ("cond", "body")
    # the output arg names of the ops without a model: none of the registry's
    assert not set(opt.OUTPUT_ARGS) & set(opdefs.table())
    # ... whose own output args name the ports inside a function body
    assert gfn._port("BroadcastGradientArgs", "n", "r1", 0, {}) == 1
    assert gfn._port("Merge", "n", "value_index", 0, {}) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_every_op_of_the_family_names_every_facet(family):
    for name in opdefs.families()[family]:
        d = opdefs.lookup(name)
        assert d.doc and callable(d.build), name
        # value semantics: the functions it makes, or one reference
        assert d.functions or d.semantics, name
        # Z3: how the checker treats it, or "not encoded"
        assert d.z3, name
        refused = d.semantics.startswith("none: refused")
        if d.lowering is not None:   # lowered or inlined when the graph is read
            assert d.lowering in ("if", "while", "case", "call") and d.function_attrs, name
            assert d.stateful, name   # its functions may have any effect
        elif family == "queue":      # a session's: it changes a queue or a section
            assert d.stateful, name
        if name in CONTROL_FLOW_OPS:  # the language's node of the same name
            assert set(d.node_exports) == {name} and d.stateful is None, name
        if family == "queue" and name.startswith("Queue"):
            (kind,) = d.node_exports
            assert kind in blk.QUEUE_OPS, name
        if refused:
            assert d.stateful and not d.node_exports, name


def test_the_refused_ops_of_the_families_are_refused_by_name():
    for op, rule in (("RefSwitch", "control-flow"), ("ControlTrigger", "control-flow"),
                     ("OptionalNone", "optional"), ("MakeIterator", "iterator")):
        g = {"node": [{"name": "x", "op": op, "input": [], "attr": {}}]}
        with pytest.raises(GraphImportError) as exc:
            import_graph(g, targets=["x"])
        v = exc.value.violations[0]
        assert v.rule == rule and "'x'" in v.where, (op, v)
    # an If TensorFlow would not lower (no _lower_using_switch_merge) is refused
    # by the lowering the registry's `lowering` names
    g = {"node": [{"name": "p", "op": "Placeholder",
                   "attr": {"dtype": {"type": "DT_BOOL"}, "shape": {"shape": {}}}},
                  {"name": "x", "op": "StatelessIf", "input": ["p"], "attr": {
                      "then_branch": {"func": {"name": "t"}},
                      "else_branch": {"func": {"name": "e"}}}}]}
    with pytest.raises(GraphImportError) as exc:
        import_graph(g, targets=["x"])
    assert exc.value.violations[0].rule == "control-flow"
    assert "_lower_using_switch_merge" in exc.value.violations[0].message


def _loop_program():
    from tfsem.graphdef import import_path
    cases = Path(__file__).parent / "cases" / "controlflow"
    return import_path(cases / "tf1_while_loop.pbtxt", fetch=["out"]).program


def test_the_exporter_writes_control_flow_through_the_registry(replaced):
    p = _loop_program()
    plain = export_graph(p)
    merges = [n for n in plain["node"] if n["op"] == "Merge"]
    assert merges and all(n["attr"]["N"]["i"] == len([i for i in n["input"]
                                                      if not i.startswith("^")])
                          for n in merges)
    d = opdefs.lookup("Merge")
    own = d.node_exports["Merge"]

    def tagged(e):
        node = own(e)
        node["attr"]["_tagged"] = {"b": True}
        return node
    replaced(dataclasses.replace(d, node_exports={"Merge": tagged}))
    again = export_graph(p)
    assert all(n["attr"].get("_tagged") for n in again["node"] if n["op"] == "Merge")
    assert not any("_tagged" in n.get("attr", {}) for n in again["node"] if n["op"] != "Merge")


def test_the_session_exporter_writes_queue_ops_through_the_registry(replaced):
    b = blk.Blocking({"q": blk.Queue(2, "int64", ())}, {"s": (blk.SIZE, "q"),
                                                      "d": (blk.DEQUEUE_MANY, "q")},
                     {}, {"d": 2})

    def run():
        graph = {"node": [{"name": "s", "op": "Const", "input": ["^x"]},
                          {"name": "d", "op": "Const"}]}
        taken = {"s", "d"}

        def fresh(base):
            while base in taken:
                base += "_"
            taken.add(base)
            return base
        handles = real_queue_ops(graph, {n["name"]: n for n in graph["node"]}, {}, b, fresh)
        return graph, handles
    graph, handles = run()
    by = {n["name"]: n for n in graph["node"]}
    assert by[handles["q"]]["op"] == "FIFOQueueV2"
    assert by["s"]["op"] == "Cast" and by["s/size"]["op"] == "QueueSizeV2"
    assert by["s/size"]["input"] == [handles["q"], "^x"]
    assert by["d"]["op"] == "QueueDequeueManyV2" and by["d/n"]["attr"]["value"]["tensor"][
        "int_val"] == [2]
    d = opdefs.lookup("QueueSizeV2")
    replaced(dataclasses.replace(d, node_exports={blk.SIZE: lambda e: e.node.update(
        op="QueueSizeV2", input=[e.handle, *e.ctrl])}))
    graph, handles = run()
    by = {n["name"]: n for n in graph["node"]}
    assert by["s"]["op"] == "QueueSizeV2" and "s/size" not in by


def test_the_importer_reads_an_iterator_op_from_the_registry(replaced):
    """A data-family op replaced in the registry is what graph import runs."""
    g = {"node": [{"name": "v", "op": "Const", "attr": {
        "dtype": {"type": "DT_INT64"},
        "value": {"tensor": {"dtype": "DT_INT64", "tensor_shape": {}, "int64_val": [7]}}}},
        {"name": "o", "op": "OptionalFromValue", "input": ["v"],
         "attr": {"Toutput_types": {"list": {"type": ["DT_INT64"]}}}},
        {"name": "has", "op": "OptionalHasValue", "input": ["o"]}]}
    p = import_graph(g, ["has"]).program
    assert p.outputs and any(n.op == "Const" and n.attrs["value"].dtype == "bool"
                             for n in p.nodes)
    d = opdefs.lookup("OptionalHasValue")

    def refuse(b):
        b.reject("replaced", "optional")
    replaced(dataclasses.replace(d, build=refuse))
    with pytest.raises(GraphImportError, match="replaced"):
        import_graph(g, ["has"])


def test_the_program_formats_queue_names_agree_with_the_registry():
    """oracle/blocking.py, below the registry, accepts TensorFlow's queue op
    names in a session's JSON program (TF_QUEUE_OPS) and refuses the others
    by name (UNMODELLED): the same names the queue family defines."""
    assert blk.TF_QUEUE_OPS == queues.kinds()
    assert {"FIFOQueueV2", "MutexV2", "MutexLock", "ConsumeMutexLock"} <= blk.UNMODELLED
    assert set(data.READERS[:2]) == {d for d in opdefs.families()["data"]
                                     if opdefs.lookup(d).stateful
                                     and not opdefs.lookup(d).semantics.startswith("none")}


#: Modules allowed to hold a collection of these families' op names, and why.
ALLOWED = {
    # the language's own node kinds (SPEC section 9), which the control
    # family's primitives become: the language, below the registry
    "oracle/program.py": "the language's node kinds",
    # a session's JSON program accepts TensorFlow's queue op names
    # (test_the_program_formats_queue_names_agree_with_the_registry)
    "oracle/blocking.py": "the session program format's names",
    # a generator that writes TensorFlow graphs (If and While nodes) of its own
    "generators/functional.py": "a generator of graphs",
}


def _name_collections(path: Path, names: set[str]) -> list[tuple[int, list[str]]]:
    out = []
    for node in syntax_nodes(path):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None]
        else:
            continue
        hit = sorted({e.value for e in elts if isinstance(e, ast.Constant)
                      and isinstance(e.value, str) and e.value in names})
        if len(hit) >= 2:
            out.append((node.lineno, hit))
    return out


def test_no_other_module_holds_a_table_of_these_families_op_names():
    names = _family_ops()
    found = {}
    for rel, path in modules_outside_the_registry():
        hits = _name_collections(path, names)
        if hits and rel not in ALLOWED:
            found[rel] = hits
    assert not found, ("op-name tables outside the registry (read them from "
                       f"oracle/opdefs instead): {found}")
    # the scan finds what it should: the registry's own family modules hold them
    assert _name_collections(ROOT / "oracle/opdefs/control.py", names)
    assert _name_collections(ROOT / "oracle/opdefs/data.py", names)


def test_the_queue_models_still_import_a_session_graph():
    """The migrated queue models import a session's graph as before (one
    FIFOQueueV2, its enqueue and size), and refuse it outside a session."""
    q = {"name": "q", "op": "FIFOQueueV2", "attr": {
        "component_types": {"list": {"type": ["DT_INT64"]}},
        "shapes": {"list": {"shape": [{}]}}, "capacity": {"i": 2}}}
    g = {"node": [q, {"name": "v", "op": "Const", "attr": {
        "dtype": {"type": "DT_INT64"},
        "value": {"tensor": {"dtype": "DT_INT64", "tensor_shape": {}, "int64_val": [1]}}}},
        {"name": "e", "op": "QueueEnqueueV2", "input": ["q", "v"],
         "attr": {"Tcomponents": {"list": {"type": ["DT_INT64"]}}, "timeout_ms": {"i": -1}}},
        {"name": "n", "op": "QueueSizeV2", "input": ["q", "^e"]}]}
    imp = import_graph(g, ["n"], session=True)
    assert dict(imp.blocking.queues) == {"q": blk.Queue(2, "int64", ())}
    assert sorted(k for k, _ in imp.blocking.queue_ops.values()) == [blk.ENQUEUE, blk.SIZE]
    with pytest.raises(GraphImportError, match="only in a session"):
        import_graph(g, ["n"])
    bad = dict(g, node=[dict(q, attr=dict(q["attr"], component_types={
        "list": {"type": ["DT_STRING"]}}))] + g["node"][1:])
    with pytest.raises(GraphImportError, match="queue component dtype DT_STRING is not "
                       "modelled: tfsem models"):
        import_graph(bad, ["n"], session=True)
