"""The symmetry engine (oracle/symmetry.py): detection of identical threads,
the quotient search, and the lazy orbit Mapping, checked against the
reference engine on the families and on generated symmetric programs (and
near-symmetric ones, where detection must not claim a symmetry that is not
there)."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import settings

from tfsem.generators import families as F
from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle import program as P
from tfsem.oracle.counts import lost_update_used_counts
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded, _Component, components
from tfsem.oracle.outcomes import Outcome, make_outcome
from tfsem.oracle.program import ControlIn, DataIn, FeedIn, Program, ProgramError
from tfsem.oracle.semantics import graph_of, run_schedule
from tfsem.oracle.symmetry import SymmetricOutcomes, _multiset_permutations, _SymComponent, detect
from tfsem.oracle.values import Tensor

MODES = [(sem, obs) for sem in ("atomic", "decomposed") for obs in ("outputs", "outputs+state")]
NIGHTLY = settings.get_current_profile_name() == "nightly"


def _replay(p, feeds, init, schedule, semantics, observe) -> Outcome:
    g = graph_of(p)
    s = run_schedule(p, feeds, init, list(schedule), semantics)
    outputs = {name: s.in_transit[e.id] for name, e in g.output_edges.items()}
    return make_outcome(outputs, s.var_value, observe)


def _classes(p):
    """detect() on every component: the classes as sets of frozensets of names."""
    out = []
    for names, _vars, outputs in components(p):
        sym = detect(p, names, outputs)
        out += [{frozenset(t) for t in cls} for cls in sym.classes]
    return out


def _agree(p, feeds, init, semantics, observe, replay: int | None = None, max_states=20_000,
           engine="symmetry"):
    """Symmetry engine == reference engine (set, len, no duplicate when
    iterated, membership, witnesses replay); None when the reference runs out
    of budget; else the engines the symmetry run used."""
    try:
        ref = outcome_set(p, feeds, init, semantics, observe, max_states=max_states, max_seconds=10,
                          engine="reference")
    except BudgetExceeded:
        return None
    sym = outcome_set(p, feeds, init, semantics, observe, max_states=max_states, max_seconds=10,
                      engine=engine)
    listed = list(sym)
    assert len(listed) == len(set(listed)) == sym.count == ref.count
    assert set(listed) == set(ref)
    for comp in sym.components:
        if isinstance(comp, SymmetricOutcomes):
            parts = list(comp)
            assert len(parts) == len(set(parts)) == len(comp)
            assert comp.representatives <= len(comp)
    items = list(sym.items())
    assert [o for o, _ in items] == listed
    rng = random.Random(len(listed))
    sample = items if replay is None or len(items) <= replay else rng.sample(items, replay)
    for outcome, schedule in sample:
        assert _replay(p, feeds, init, schedule, semantics, observe) == outcome
        w = sym.witness(outcome)                 # through __contains__ / __getitem__
        assert w is not None
        assert _replay(p, feeds, init, w, semantics, observe) == outcome
    return sym.engines


# ---------------------------------------------------------------------------
# Detection


def test_detects_identical_threads_of_the_families():
    p, _, _ = F.lost_update_used(3)
    (cls,) = _classes(p)
    assert cls == {frozenset({f"vr{i}", f"r{i}", f"one{i}", f"add{i}", f"vw{i}", f"w{i}"})
                   for i in range(3)}
    p, _, _ = F.iriw(6)                          # readers 0, 2 (x then y) and 1, 3 (y then x)
    got = sorted(sorted(sorted(t) for t in c) for c in _classes(p))
    assert got == [[["a0", "b0", "va0", "vb0"], ["a2", "b2", "va2", "vb2"]],
                   [["a1", "b1", "va1", "vb1"], ["a3", "b3", "va3", "vb3"]]]
    p, _, _ = F.lost_update(4)                   # no outputs, x observed: still symmetric
    assert [len(c) for c in _classes(p)] == [4]


@pytest.mark.parametrize("family,params", [
    ("writer_reader_pairs", (3,)),               # different constants
    ("store_buffering", (3,)),                   # different variables
    ("blind_writers", (4,)),                     # different feeds
    ("figure1", (3, "Add")),                     # one connected graph
    ("racy_pairs", (3,)),                        # different variables, separate components
])
def test_no_symmetry_where_threads_differ(family, params):
    p, _, _ = F.FAMILIES[family](*params)
    assert _classes(p) == []


def _lu_thread(i, *, value=1, op="Add", swap=False, fetch=True, control=False, shared_one=False,
               fn="Snd"):
    one = "one" if shared_one else f"one{i}"
    ins = (one, f"r{i}") if swap else (f"r{i}", one)
    nodes = [P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}"),
             P.apply(f"add{i}", op, *ins), P.var(f"vw{i}", "x"),
             P.assign(f"w{i}", fn, f"vw{i}", f"add{i}", *((f"^r{i}",) if control else ()))]
    if not shared_one:
        nodes.append(P.const(one, value))
    return nodes, ({f"o{i}": f"r{i}"} if fetch else {})


def _lu(variants: dict[int, dict], k: int = 3, shared_one=False) -> Program:
    nodes, outputs = [], {}
    if shared_one:
        nodes.append(P.const("one", 1))
    for i in range(k):
        n, o = _lu_thread(i, shared_one=shared_one, **variants.get(i, {}))
        nodes += n
        outputs.update(o)
    return P.program(nodes, outputs, ["x"])


def test_a_shared_constant_keeps_the_symmetry():
    p = _lu({}, 3, shared_one=True)
    (cls,) = _classes(p)
    assert len(cls) == 3 and all("one" not in t for t in cls)
    assert _agree(p, {}, {"x": Tensor(0)}, "atomic", "outputs+state") == ["symmetry"]


@pytest.mark.parametrize("change", [
    {"value": 2}, {"op": "Sub"}, {"swap": True}, {"fetch": False}, {"control": True},
    {"fn": "Add"},
])
def test_near_symmetric_copy_is_left_out(change):
    p = _lu({2: change}, 3)
    (cls,) = _classes(p)
    assert cls == {frozenset({f"vr{i}", f"r{i}", f"one{i}", f"add{i}", f"vw{i}", f"w{i}"})
                   for i in (0, 1)}
    for semantics, observe in MODES:
        assert _agree(p, {}, {"x": Tensor(5)}, semantics, observe) == ["symmetry"]


def test_swapped_inputs_of_a_commutative_op_with_different_sources_are_not_identified():
    # Sub(r, one) and Sub(one, r): the same nodes, other port order
    p = _lu({0: {"op": "Sub"}, 1: {"op": "Sub", "swap": True}}, 2)
    assert _classes(p) == []
    for semantics, observe in MODES:
        _agree(p, {}, {"x": Tensor(5)}, semantics, observe)


def test_ambiguous_threads_claim_nothing():
    # each thread has an internal automorphism (two Neg nodes of one Read,
    # both fetched): no canonical order, so no symmetry is claimed
    nodes, outputs = [], {}
    for i in range(2):
        nodes += [P.var(f"v{i}", "x"), P.read(f"r{i}", f"v{i}"),
                  P.apply(f"n{i}", "Neg", f"r{i}"), P.apply(f"m{i}", "Neg", f"r{i}"),
                  P.var(f"vw{i}", "x"), P.write(f"w{i}", f"vw{i}", "$b", f"^r{i}")]
        outputs.update({f"a{i}": f"n{i}", f"b{i}": f"m{i}"})
    p = P.program(nodes, outputs, ["x"])
    assert _classes(p) == []
    assert _agree(p, {"b": Tensor(3)}, {"x": Tensor(1)}, "atomic", "outputs+state") == ["reference"]


def test_threads_joined_by_a_node_are_one_thread():
    # a final Read after every thread (control edges) joins them: no symmetry
    nodes, outputs = [], {}
    for i in range(3):
        n, o = _lu_thread(i)
        nodes += n
        outputs.update(o)
    nodes += [P.var("vf", "x"), P.read("rf", "vf", *(f"^w{i}" for i in range(3)))]
    p = P.program(nodes, {**outputs, "final": "rf"}, ["x"])
    assert _classes(p) == []


# ---------------------------------------------------------------------------
# The lazy Mapping


def test_multiset_permutations_are_distinct_and_complete():
    for items in ([], [1], [1, 1], [2, 1, 1], [3, 1, 2, 1, 3], [0, 0, 0, 1]):
        got = list(_multiset_permutations(items))
        assert len(got) == len(set(got)) == len(set(itertools.permutations(items)))
        assert set(got) == set(itertools.permutations(items))


@pytest.mark.parametrize("semantics,observe", MODES)
def test_mapping_len_contains_getitem_iteration(semantics, observe):
    p, feeds, init = F.lost_update_used(4)
    ref = outcome_set(p, feeds, init, semantics, observe, engine="reference")
    sym = outcome_set(p, feeds, init, semantics, observe, engine="symmetry")
    (comp,) = sym.components
    assert isinstance(comp, SymmetricOutcomes)
    assert comp.representatives < len(comp) == ref.count
    listed = list(comp)
    assert len(listed) == len(set(listed)) == len(comp)
    for o in ref:
        assert o in comp
        assert _replay(p, feeds, init, comp[o], semantics, observe) == o
    # not members: a value no run reads, a missing output, another type
    o = next(iter(ref))
    outs = dict(o.outputs)
    bad = Outcome(tuple((k, Tensor(99) if k == "o0" else v) for k, v in o.outputs), o.state)
    assert bad not in comp and bad not in sym
    with pytest.raises(KeyError):
        comp[bad]
    fewer = Outcome(tuple((k, v) for k, v in o.outputs if k != "o0"), o.state)
    assert fewer not in comp
    assert "o0" not in comp and 3 not in comp
    other_obs = Outcome(o.outputs, None if o.state is not None else (("x", Tensor(0)),))
    assert other_obs not in comp
    # a permuted outcome is in, with a witness that is renamed, not the same
    vals = [outs[f"o{i}"] for i in range(4)]
    if len(set(vals)) > 1:
        perm = Outcome(tuple((f"o{i}", vals[(i + 1) % 4]) for i in range(4)), o.state)
        assert perm in comp
        assert _replay(p, feeds, init, comp[perm], semantics, observe) == perm


def test_product_with_a_plain_component():
    # a symmetric component beside a plain one: OutcomeSet's product, its
    # witness() and items() over a lazy Mapping
    lu, _, _ = F.lost_update_used(3)
    nodes = list(lu.nodes) + [P.var("vy", "y"), P.write("wy", "vy", "$b"),
                              P.var("vy2", "y"), P.read("ry", "vy2")]
    p = P.program(nodes, {**{o: str(d) for o, d in lu.outputs.items()}, "oy": "ry"}, ["x", "y"])
    feeds, init = {"b": Tensor(7)}, {"x": Tensor(0), "y": Tensor(1)}
    for semantics, observe in MODES:
        used = _agree(p, feeds, init, semantics, observe)
        assert sorted(used) == ["reference", "symmetry"]


@pytest.mark.parametrize("k", range(2, 8))
def test_lost_update_counts_match(k):
    with_state, outputs = lost_update_used_counts(k)
    p, feeds, init = F.lost_update_used(k)
    r = outcome_set(p, feeds, init, "atomic", "outputs+state", engine="symmetry")
    assert r.count == with_state and r.engines == ["symmetry"]
    r = outcome_set(p, feeds, init, "decomposed", "outputs", engine="symmetry")
    assert r.count == outputs
    assert k < 4 or r.states < r.count


@pytest.mark.parametrize("semantics,observe", MODES)
def test_incremental_keys_equal_recomputed_ones(monkeypatch, semantics, observe):
    monkeypatch.setattr(_SymComponent, "CHECK_INCREMENTAL", True)
    for p, feeds, init in (F.lost_update_used(5), F.iriw(7), F.increments(4)):
        r = outcome_set(p, feeds, init, semantics, observe, engine="symmetry")
        assert r.engines == ["symmetry"]


def test_auto_uses_symmetry_and_states_are_quotient_states():
    p, feeds, init = F.lost_update_used(6)
    r = outcome_set(p, feeds, init, engine="auto")
    assert r.engines == ["symmetry"] and r.count == 8879
    assert r.states < 1000                       # the reference needs 84,268 (issue 17)


def _blind_writers_and_readers(n: int, readers: int = 2):
    nodes, feeds = [], {}
    for j in range(readers):                     # identical readers
        nodes += [P.var(f"vr{j}", "x"), P.read(f"r{j}", f"vr{j}")]
    for i in range(n):                           # different writers
        nodes += [P.var(f"v{i}", "x"), P.write(f"w{i}", f"v{i}", f"$b{i}")]
        feeds[f"b{i}"] = Tensor(i + 1)
    return (P.program(nodes, {f"out{j}": f"r{j}" for j in range(readers)}, ["x"]), feeds,
            {"x": Tensor(0)})


def test_auto_prefers_reads_from_where_the_symmetry_is_small():
    # two identical readers among 8 different writers: the quotient halves
    # the reference's 40,676 states; the reads-from engine has 648 classes.
    # auto gives the symmetry engine the reference's first try (2 x the
    # bound on classes), then the reads-from engine
    p, feeds, init = _blind_writers_and_readers(8)
    assert len(_classes(p)) == 1
    auto = outcome_set(p, feeds, init, engine="auto")
    assert auto.engines == ["readsfrom"]
    sym = outcome_set(p, feeds, init, engine="symmetry")
    assert sym.engines == ["symmetry"] and sym.states > 10 * auto.classes
    assert set(auto) == set(sym) and auto.count == sym.count == 648
    # small: the symmetry engine's first try finishes
    p, feeds, init = _blind_writers_and_readers(2, 3)
    auto = outcome_set(p, feeds, init, engine="auto")
    assert auto.engines == ["symmetry"]
    for semantics, observe in MODES:
        _agree(p, feeds, init, semantics, observe, engine="auto")


def test_budget_is_a_verdict():
    p, feeds, init = F.lost_update_used(8)
    with pytest.raises(BudgetExceeded):
        outcome_set(p, feeds, init, max_states=100, engine="symmetry")


# ---------------------------------------------------------------------------
# Differential: families


FAMILY_CASES = {
    "lost_update_used3": F.lost_update_used(3), "lost_update4": F.lost_update(4),
    "increments3": F.increments(3), "iriw6": F.iriw(6), "iriw5": F.iriw(5),
    "writer_reader_pairs3": F.writer_reader_pairs(3), "store_buffering3": F.store_buffering(3),
    "figure1_3": F.figure1(3, "Concat"),
}


@pytest.mark.parametrize("name", sorted(FAMILY_CASES))
@pytest.mark.parametrize("semantics,observe", MODES)
def test_families_agree_with_reference(name, semantics, observe):
    p, feeds, init = FAMILY_CASES[name]
    _agree(p, feeds, init, semantics, observe, replay=60)


# ---------------------------------------------------------------------------
# Differential: generated symmetric and near-symmetric programs


def _rename(name: str, j: int, shared: set[str]) -> str:
    return name if name in shared else f"{name}_c{j}"


def _sources(p: Program) -> list[str]:
    return [n.name for n in p.nodes if not any(isinstance(i, (DataIn, ControlIn)) for i in n.inputs)]


def _replicate(p: Program, k: int, rng: random.Random, mutate: str | None = None,
               extra: Program | None = None) -> tuple[Program, str | None]:
    """k copies of p over the same variables and feeds (some sources shared
    by all copies), the last copy changed by `mutate`, plus `extra`'s nodes
    once (prefixed): (program, what was mutated or None)."""
    shared = {s for s in _sources(p) if rng.random() < 0.3}
    nodes, outputs = [], {}
    for j in range(k):
        for n in p.nodes:
            if n.name in shared and j > 0:
                continue
            ins = []
            for i in n.inputs:
                if isinstance(i, DataIn):
                    i = DataIn(_rename(i.node, j, shared), i.port)
                elif isinstance(i, ControlIn):
                    i = ControlIn(_rename(i.node, j, shared))
                ins.append(i)
            nodes.append(n.replace(name=_rename(n.name, j, shared), inputs=tuple(ins)))
        for o, port in p.outputs.items():
            outputs[f"{o}_c{j}"] = DataIn(_rename(port.node, j, shared), port.port)
    done = None
    kinds = [mutate] + [m for m in MUTATIONS if m != mutate] if mutate is not None else []
    for mutate in kinds:
        if done is not None:
            break
        last = [i for i, n in enumerate(nodes) if n.name.endswith(f"_c{k - 1}")]
        rng.shuffle(last)
        for idx in last:
            n = nodes[idx]
            if mutate == "const" and n.op == "Const":
                v = n.attrs["value"]
                nodes[idx] = n.replace(attrs={**n.attrs, "value": Tensor(v.array + 1, v.dtype)})
            elif mutate == "swap" and n.op not in ("Read", "Assign", "Var") and len(n.data_inputs) >= 2 \
                    and n.inputs[0] != n.inputs[1]:
                nodes[idx] = n.replace(inputs=(n.inputs[1], n.inputs[0], *n.inputs[2:]))
            elif mutate == "control":
                later = [m for m in last if m > idx and nodes[m].name != n.name]
                if not later:
                    continue
                m = later[0]
                nodes[m] = nodes[m].replace(inputs=(*nodes[m].inputs, ControlIn(n.name)))
            elif mutate == "feed" and any(isinstance(i, FeedIn) for i in n.inputs):
                nodes[idx] = n.replace(inputs=tuple(FeedIn("other_feed") if isinstance(i, FeedIn) else i
                                                    for i in n.inputs))
            elif mutate == "output":
                mine = [o for o in outputs if o.endswith(f"_c{k - 1}")]
                if not mine:
                    break
                del outputs[mine[0]]
            else:
                continue
            done = mutate
            break
    variables = dict(p.variables)
    if extra is not None:
        for x, t in extra.variables.items():
            if variables.setdefault(x, t) != t:
                extra = None
                break
    if extra is not None:
        for n in extra.nodes:
            ins = tuple(DataIn("z_" + i.node, i.port) if isinstance(i, DataIn)
                        else ControlIn("z_" + i.node) if isinstance(i, ControlIn) else i
                        for i in n.inputs)
            nodes.append(n.replace(name="z_" + n.name, inputs=ins))
        for o, port in extra.outputs.items():
            outputs["z_" + o] = DataIn("z_" + port.node, port.port)
        feeds = {**p.feeds, **extra.feeds}
    else:
        feeds = dict(p.feeds)
    return Program(variables, tuple(nodes), outputs, feeds).validated(), done


MUTATIONS = ("const", "swap", "control", "output", "feed")


def _generated(count: int, seed: int, mutate_share: float):
    base = random_programs(count, seed, max_nodes=7)
    extras = random_programs(count, seed + 1, max_nodes=5)
    rng = random.Random(seed)
    for j, p in enumerate(base):
        k = rng.choice((2, 2, 3, 3, 4))
        mutate = rng.choice(MUTATIONS) if rng.random() < mutate_share else None
        extra = extras[j] if rng.random() < 0.25 else None
        try:
            q, done = _replicate(p, k, rng, mutate, extra)
        except ProgramError:
            continue
        yield j, k, q, done


def test_generated_symmetric_programs_agree_with_reference(monkeypatch):
    # every incremental key is also recomputed from scratch and compared
    monkeypatch.setattr(_SymComponent, "CHECK_INCREMENTAL", True)
    # 50 programs by default, 2000 nightly (test_oracle_symmetry_near_misses::
    # test_generated_perturbed_symmetric_programs_agree_with_the_reference
    # compares the symmetry engine with the reference on generated programs too)
    count = 2000 if NIGHTLY else 50
    compared = symmetric = mutated = left_out = 0
    for j, k, q, done in _generated(count, 41, 0.4):
        feeds, init = random_inputs(q, j)
        cells = MODES if NIGHTLY else [MODES[j % 4]]      # every cell, a quarter of the programs each
        for semantics, observe in cells:
            used = _agree(q, feeds, init, semantics, observe, replay=4,
                          engine="auto" if j % 5 == 0 else "symmetry")
            if used is None:
                continue
            compared += 1
            symmetric += "symmetry" in used
        if done is not None:
            mutated += 1
            # the mutated copy's nodes are in no class with an unmutated copy
            # unless the mutation left it isomorphic (then the sets agreed anyway)
            name = lambda n: n.endswith(f"_c{k - 1}")          # noqa: E731
            classes = _classes(q)
            if not any(any(all(name(a) for a in t) for t in c) for c in classes):
                left_out += 1
    assert compared >= 0.8 * count * (4 if NIGHTLY else 1)
    assert symmetric >= 0.3 * compared            # the engine is really exercised
    assert mutated >= 0.25 * count and left_out >= 0.5 * mutated


# ---------------------------------------------------------------------------
# CLI


def test_cli_engine_symmetry(tmp_path, capsys):
    """`tfsem outcomes --engine symmetry`, by tfsem.cli.main in this process
    (test_cli_outcomes runs `tfsem outcomes` as a process)."""
    from test_campaigns_fuzz import tfsem_here
    from tfsem.oracle.jsonio import save_program
    p, _feeds, _init = F.lost_update_used(4)
    path = tmp_path / "lu.json"
    save_program(p, path)
    got = {}
    for engine in ("reference", "symmetry"):
        r = tfsem_here(capsys, "outcomes", str(path), "--init", "x=0", "--engine", engine, "--json")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["count"] == 109
        got[engine] = {json.dumps({k: v for k, v in o.items() if k != "schedule"}, sort_keys=True)
                       for o in d["outcomes"]}
    assert got["reference"] == got["symmetry"] and len(got["symmetry"]) == 109
    assert d["stats"]["components_by_engine"] == {"symmetry": 1}
