"""`graph_of` kept on the program object (oracle/graph.py): the kept graph
is the one a fresh build gives, for every program and after a program is
rebuilt with other nodes."""

from __future__ import annotations

from tfsem.generators.strategies import random_programs
from tfsem.oracle import graph as G
from tfsem.rewrites import builtin_passes


def test_the_kept_graph_is_a_fresh_build_of_the_same_program():
    passes = list(builtin_passes().values())
    checked = 0
    for i, p in enumerate(random_programs(80, 11, max_nodes=12)):
        for q in (p, passes[i % len(passes)].function(p)):
            first = G.graph_of(q)
            assert G.graph_of(q) is first            # (kept: not built again)
            assert first == G._graph_of(q)           # (what a fresh build gives)
            checked += 1
    assert checked >= 100, checked


def test_a_program_rebuilt_with_other_nodes_gets_its_own_graph():
    rebuilt = 0
    for p in random_programs(30, 12, max_nodes=10):
        g = G.graph_of(p)
        if len(p.nodes) < 2 or p.outputs == {}:
            continue
        # (the last node dropped, with the outputs and inputs that named it)
        last = p.nodes[-1].name
        if any(port.node == last for port in p.outputs.values()) or \
                any(getattr(inp, "node", None) == last for n in p.nodes for inp in n.inputs):
            continue
        q = p.replace(nodes=tuple(p.nodes[:-1]))
        assert G.graph_of(q) == G._graph_of(q) != g
        assert G.graph_of(p) is g
        rebuilt += 1
    assert rebuilt >= 5, rebuilt
