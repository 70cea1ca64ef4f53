"""Programs compiled once and reused at every σ (oracle/explore.py
`compiled`, `components`): a run of a component compiled at one σ and fed
another gives, bit for bit and step for step, what a component compiled at
that σ gives; a registration in the function registry compiles again; each
caller gets its own lists of the components."""

from __future__ import annotations

import numpy as np
from tfsem.checking import check as check_module
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle import explore
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import Program
from tfsem.oracle.values import Tensor, exact


def _fresh(p: Program) -> Program:
    """The same program as another object (nothing compiled for it yet)."""
    return Program(p.variables, p.nodes, p.outputs, p.feeds)


def _bits(outcome):
    return tuple((k, exact(v)) for k, v in outcome.outputs), \
        tuple((k, exact(v)) for k, v in (outcome.state or ()))


def test_a_component_compiled_at_one_sigma_runs_another_as_if_compiled_there():
    programs = [p for p in random_programs(60, seed=23, max_nodes=14) if p.feed_names] + \
        random_programs(20, seed=24, max_nodes=14)
    assert len(programs) >= 30
    reused = 0
    for n, p in enumerate(programs):
        gen = check_module._refute_sigmas(p, np.random.default_rng(n))
        sigmas = [next(gen) for _ in range(3)]
        for semantics in ("atomic", "decomposed"):
            for observe in ("outputs+state", "outputs"):
                for feeds, init in sigmas:
                    o, sched = ref.canonical_outcome(p, feeds, init, semantics, observe)
                    o2, sched2 = ref.canonical_outcome(_fresh(p), feeds, init, semantics, observe)
                    assert _bits(o) == _bits(o2) and sched == sched2
        per = explore._COMPILED.get(p)
        assert per, "compiled once per program"
        reused += 1
    assert reused == len(programs)


def _feed_program() -> Program:
    return program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [2]}},
        "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "s", "op": "Add", "inputs": ["r", "$f"]},
                  {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["v", "s"]}],
        "outputs": {"out": "s"}})


def test_the_feeds_of_each_sigma_are_used_and_the_structure_is_shared():
    p = _feed_program()
    names, variables, outputs = explore.components(p)[0]
    init = {"x": Tensor(np.array([1.0, 2.0], np.float32))}
    outs = []
    comps = []
    for k in range(3):
        feeds = {"f": Tensor(np.array([k, -0.0], np.float32))}
        c = explore.compiled(p, names, "atomic", "outputs+state", feeds, variables, outputs)
        comps.append(c)
        o, _ = ref._run_by_priority([c.cache_functions()], init, lambda comp, u: u)
        outs.append(dict(o[0].outputs)["out"])
    assert [o.array.tolist() for o in outs] == [[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]]
    assert comps[0].succ is comps[1].succ is comps[2].succ      # compiled once
    assert comps[0].fn is not comps[1].fn                        # functions cached per copy


def test_a_registration_compiles_again():
    p = _feed_program()
    names, variables, outputs = explore.components(p)[0]
    feeds = {"f": Tensor(np.array([1.0, 1.0], np.float32))}
    a = explore.compiled(p, names, "atomic", "outputs", feeds, variables, outputs)
    fns.lookup("tf.ProbeCompiledNewOp/1/1")          # a new name: nothing compiled changes
    assert explore.compiled(p, names, "atomic", "outputs", feeds, variables, outputs).succ is a.succ
    fns.register(fns.get("Add"), replace=True)      # (the same function: only the count moves)
    b = explore.compiled(p, names, "atomic", "outputs", feeds, variables, outputs)
    assert a.succ is not b.succ


def test_each_caller_gets_its_own_component_lists():
    p = _feed_program()
    first = explore.components(p)
    first[0][0].append("junk")
    first[0][1].clear()
    again = explore.components(p)
    assert "junk" not in again[0][0] and again[0][1] == ["x"]
    assert again == explore._components(p)


def _user_program() -> Program:
    return program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [2]}},
        "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "u", "op": "Review21Stale", "inputs": ["$f"]}],
        "outputs": {"out": "u"}})


def test_a_function_put_in_the_registry_by_hand_compiles_again(monkeypatch):
    """A registry entry changed without `register` (a test's
    monkeypatch.setitem, a fixture undoing it) leaves functions.version as
    it is: the compiled program must still run the function now registered,
    not the one its template looked up."""
    def plus(k):
        return lambda xp, args, attrs: (args[0] + xp.float32(k),)
    monkeypatch.setitem(fns._REGISTRY, "Review21Stale", fns.Function("Review21Stale", 1, 1, plus(1)))
    p = _user_program()
    feeds = {"f": Tensor(np.array([1.0, 2.0], np.float32))}
    o, _ = ref.canonical_outcome(p, feeds, {}, "atomic", "outputs")
    assert dict(o.outputs)["out"].array.tolist() == [2.0, 3.0]
    monkeypatch.setitem(fns._REGISTRY, "Review21Stale", fns.Function("Review21Stale", 1, 1, plus(10)))
    o, _ = ref.canonical_outcome(p, feeds, {}, "atomic", "outputs")
    assert dict(o.outputs)["out"].array.tolist() == [11.0, 12.0]


def test_conflicts_are_worked_out_when_a_search_asks_and_as_defined():
    # (a concrete run by priority never reads them; the search's stubborn
    # sets find them as the definition gives them, shared by the copies fed
    # other σ)
    programs = random_programs(40, seed=31, max_nodes=14)
    compared = 0
    for p in programs:
        for semantics in ("atomic", "decomposed"):
            for observe in ("outputs+state", "outputs"):
                for names, variables, outputs in explore.components(p):
                    feeds = {f: None for f in p.feed_names}
                    built = explore._Component(p, names, semantics, observe, feeds, variables,
                                               outputs)
                    assert "conflicts" not in built.__dict__.get("_shared", {})
                    comp = explore.compiled(p, names, semantics, observe, feeds, variables,
                                            outputs)
                    n = comp.n
                    expected = {u: [w for w in steps if w % n != u % n
                                    and (comp.is_write(u) or comp.is_write(w))]
                                for steps in comp.access_steps.values() for u in steps}
                    assert comp.conflicts == expected and built.conflicts == expected
                    again = explore.compiled(p, names, semantics, observe, feeds, variables,
                                             outputs)
                    assert again is not comp and again.conflicts is comp.conflicts
                    compared += sum(map(len, expected.values()))
    assert compared > 100


def _components_by_names(p: Program) -> list:
    """The components as first written (union-find over "n:NAME" and
    "v:NAME" keys): the reference `explore._components` is compared with."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for n in p.nodes:
        find("n:" + n.name)
        for pred in p.predecessors(n.name):
            union("n:" + n.name, "n:" + pred)
        if n.op == "Var":
            union("n:" + n.name, "v:" + n.var)
        elif n.op in ("Read", "Assign"):
            x = p.accessed_variable(n.name)
            if x is not None:
                union("n:" + n.name, "v:" + x)
    for x in p.variables:
        find("v:" + x)
    groups: dict = {}
    for name in p.topological_order:
        groups.setdefault(find("n:" + name), ([], [], []))[0].append(name)
    for x in sorted(p.variables):
        groups.setdefault(find("v:" + x), ([], [], []))[1].append(x)
    for o in sorted(p.outputs):
        groups[find("n:" + p.outputs[o].node)][2].append(o)
    return list(groups.values())


def test_components_are_the_reference_partition_in_its_order():
    from pathlib import Path
    from tfsem.graphdef import import_path
    programs = random_programs(200, seed=37, max_nodes=16)
    several = 0
    for p in programs:
        got = explore._components(p)
        assert got == _components_by_names(p)
        several += len(got) > 1
    assert several > 20
    # a variable no node accesses is a component of its own
    doc = {"format": "tfsem.program/1", "variables": ["x", "y"],
           "nodes": [{"name": "v", "op": "Var", "var": "x"},
                     {"name": "r", "op": "Read", "inputs": ["v"]}],
           "outputs": {"out": "r"}}
    p = program_from_json(doc)
    assert explore._components(p) == _components_by_names(p) == [
        (["v", "r"], ["x"], ["out"]), ([], ["y"], [])]
    # real graphs of the corpus (MobileNetV2: one component of 5,894 nodes
    # and 424 variables; a training step with several)
    import json
    corpus = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
    manifest = json.loads((corpus / "manifest.json").read_text())
    seen = 0
    for e in manifest["graphs"]:
        if e["file"].split(".")[0] not in ("keras_mobilenetv2_32", "keras_mlp_adam",
                                           "tf1_mlp_sgd", "keras_gru_loop"):
            continue
        caps = str(corpus / e["captures"]) if e.get("captures") else None
        q = import_path(corpus / e["file"], e["fetches"], [], e["targets"],
                        captures=caps).program
        assert explore._components(q) == _components_by_names(q), e["file"]
        seen += 1
    assert seen == 4
