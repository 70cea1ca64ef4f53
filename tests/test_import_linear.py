"""GraphDef import grows linearly with the graph (issue 30, item 6), and the
faster paths behind that compute what the plain ones did.

The growth tests compare CPU times of one graph and of one four times as
large (the smallest of three imports each): linear work makes the ratio
about 4, quadratic work about 16; the bound, 8, leaves room for a loaded
machine.  The speed itself is measured in benchmarks/graphdef.py
--synthetic, not here.
"""

from __future__ import annotations

import random
import time

import pytest

from tfsem.generators.graphdefs import chain_graphdef, optimizer_graphdef
from tfsem.generators.strategies import random_programs
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import encode, parse
from tfsem.graphdef.proto.runtime import LazyAttrs, attr_dict, to_dict
from tfsem.oracle import state_ops
from tfsem.oracle.program import ControlIn, Node, Program

GROWTH_BOUND = 8.0


def _import_cpu_s(graph: dict, fetches, targets) -> tuple[float, int]:
    data = encode("GraphDef", graph)
    best, n = float("inf"), 0
    for _ in range(3):
        message = parse("GraphDef", data)
        t = time.process_time()
        imported = import_graph(message, fetches, targets)
        best = min(best, time.process_time() - t)
        n = len(imported.program.nodes)
    return best, n


def test_importing_a_chain_four_times_as_long_takes_about_four_times_as_long():
    small, n_small = _import_cpu_s(chain_graphdef(2000), ["out"], [])
    large, n_large = _import_cpu_s(chain_graphdef(8000), ["out"], [])
    assert 3.5 < n_large / n_small < 4.5
    assert large / small < GROWTH_BOUND, (small, large)


def test_importing_four_times_as_many_optimizer_updates_takes_about_four_times_as_long():
    # each ResourceApplyAdam is checked for racing accesses (oracle/state_ops.
    # racing_access): that check once scanned the program per update
    small, n_small = _import_cpu_s(optimizer_graphdef(100), [], ["train"])
    large, n_large = _import_cpu_s(optimizer_graphdef(400), [], ["train"])
    assert 3.5 < n_large / n_small < 4.5
    assert large / small < GROWTH_BOUND, (small, large)


def _racing_access_by_definition(p, updates):
    """racing_access as first written: ancestors of every node as bit sets
    over the whole program, the other accesses found by a scan per update."""
    if not updates:
        return None
    order = p.topological_order
    index = {n: i for i, n in enumerate(order)}
    anc: dict[str, int] = {}
    for n in order:
        bits = 0
        for q in p.predecessors(n):
            bits |= anc[q] | (1 << index[q])
        anc[n] = bits
    for where, group, variables in updates:
        members = [m for m in group if m in p.node and p.accessed_variable(m) is not None]
        writes = [m for m in members if p.node[m].op == "Assign"]
        others = [n.name for n in p.nodes if n.name not in group
                  and p.accessed_variable(n.name) in variables]
        for o in others:
            against = writes if p.node[o].op == "Read" else members
            before_all = all(anc[m] >> index[o] & 1 for m in against)
            after_all = all(anc[o] >> index[m] & 1 for m in against)
            if not (before_all or after_all):
                return where, (f"node {o!r} accesses variable {p.accessed_variable(o)!r} "
                               "unordered with this update: tfsem models the update as several "
                               "Reads and Assigns, TensorFlow as one kernel, and they differ "
                               "under this race")
    return None


def test_racing_access_finds_what_the_definition_finds_on_random_programs():
    rng = random.Random(30)
    found = {True: 0, False: 0}
    programs = random_programs(150, seed=30, max_nodes=16) + \
        random_programs(40, seed=32, max_nodes=60)
    for p in programs:
        names = [n.name for n in p.nodes]
        for _ in range(3):
            q = p
            if rng.random() < 0.5 and len(names) > 2:   # an extra ordering, maybe
                i, j = sorted(rng.sample(range(len(names)), 2))
                n = q.nodes[j]
                nodes = list(q.nodes)
                nodes[j] = Node(n.name, n.op, n.inputs + (ControlIn(names[i]),), dict(n.attrs))
                q = Program(q.variables, tuple(nodes), q.outputs, q.feeds)
            if rng.random() < 0.3:   # declared out of order: Kahn's order is used
                q = Program(q.variables, tuple(reversed(q.nodes)), q.outputs, q.feeds)
            updates = [(f"u{k}", set(rng.sample(names, min(len(names), rng.randrange(1, 8)))),
                        set(rng.sample(sorted(q.variables),
                                       min(len(q.variables), rng.randrange(1, 3)))))
                       for k in range(rng.randrange(1, 4))]
            want = _racing_access_by_definition(q, updates)
            assert state_ops.racing_access(q, updates) == want
            found[want is not None] += 1
    assert found[True] > 20 and found[False] > 20, found


def test_attr_values_convert_as_the_generic_walk_does():
    from pathlib import Path
    corpus = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
    graphs = [corpus / "keras_gru_unrolled.pb", corpus / "saved_model_keras_export/saved_model.pb"]
    graphs = [g for g in graphs if g.exists()]
    if not graphs:
        pytest.skip("the corpus' binary graphs are not here")
    kinds = set()
    for path in graphs:
        data = path.read_bytes()
        if path.name == "saved_model.pb":
            msg = parse("SavedModel", data).meta_graphs[0].graph_def
        else:
            msg = parse("GraphDef", data)
        nodes = list(msg.node) + [n for f in msg.library.function for n in f.node_def]
        for nd in nodes:
            lazy = LazyAttrs(nd)
            for key, value in nd.attr.items():
                want = to_dict(value)
                assert attr_dict(value) == want, (nd.name, key)
                kinds.add(value.WhichOneof("value"))
                scalar = lazy.scalar(key)
                if scalar is None:
                    assert next(iter(want), None) not in ("type", "s", "i", "f", "b"), want
                else:
                    assert {scalar[0]: scalar[1]} == want == lazy[key], (nd.name, key)
                    assert lazy.scalar(key) == scalar   # (now from the cache)
            assert lazy.scalar("no such attribute") is None
    empty = parse("AttrValue", b"")
    assert attr_dict(empty) == to_dict(empty) == {}
    assert {"type", "list", "shape", "b"} <= kinds, kinds


def _declared_in_order_by_definition(p) -> bool:
    position = {n.name: k for k, n in enumerate(p.nodes)}
    return all(position[q] < position[n.name] for n in p.nodes for q in p.predecessors(n.name))


def test_validation_says_whether_the_nodes_are_declared_in_a_topological_order():
    seen = set()
    for p in random_programs(60, seed=31, max_nodes=12):
        for nodes in (p.nodes, tuple(reversed(p.nodes))):
            fresh = Program(p.variables, nodes, p.outputs, p.feeds)
            want = _declared_in_order_by_definition(fresh)
            assert fresh.declared_in_order == want
            validated = Program(p.variables, nodes, p.outputs, p.feeds).validated()
            assert validated.declared_in_order == want
            seen.add(want)
    assert seen == {True, False}


def test_the_importer_loads_protobuf_only_for_a_binary_graph():
    # LazyAttrs (graphdef/proto/runtime.py) is what a decoded NodeDef's
    # attributes are; the importer reads them without importing it
    import subprocess
    import sys
    code = ("import sys, tfsem.graphdef, tfsem.graphdef.importer; "
            "print('google.protobuf' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_an_import_leaves_the_collector_as_it_found_it():
    # gc_paused (graphdef/importer.py) moves what an import made to the
    # oldest generation (gc.freeze, then gc.unfreeze) -- but never where the
    # process froze objects of its own (`tfsem serve` does), which unfreezing
    # would thaw; and the collector is on again after, off if it was off
    import gc
    from tfsem.graphdef.importer import gc_paused
    data = encode("GraphDef", chain_graphdef(200))
    assert gc.isenabled() and gc.get_freeze_count() == 0
    import_graph(parse("GraphDef", data), ["out"], [])
    assert gc.isenabled() and gc.get_freeze_count() == 0
    made = []
    with gc_paused():
        assert not gc.isenabled()
        made.append(import_graph(parse("GraphDef", data), ["out"], []))
    young = gc.get_objects(generation=0)
    assert not any(x is made[0] for x in young)   # promoted, not left young
    assert any(x is made[0] for x in gc.get_objects(generation=2))
    mine = [object()]   # an object of the process's own, frozen
    gc.freeze()
    try:
        assert not any(x is mine for x in gc.get_objects())
        with gc_paused():
            import_graph(parse("GraphDef", data), ["out"], [])
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert not any(x is mine for x in gc.get_objects())   # still frozen
    finally:
        gc.unfreeze()
    assert any(x is mine for x in gc.get_objects())
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
