"""The structural rule (checking/structural.py): unit cases, and differential
tests against the enumerating checker (rule disabled) and the concrete oracle.

Whenever the rule says `sound`, the enumerating checker must not say
`unsound` or `invalid`, and on generated σ every outcome of the rewrite must be
an outcome of the original.  The default run checks about 1,600 generated
pairs (built-in passes and random mutations; 10 to 40 s); `TFSEM_HYPOTHESIS_PROFILE=nightly`
checks twenty times as many, larger ones.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking.structural import structural_refinement
from tfsem.generators import families as F
from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import ControlIn, DataIn, Program, ProgramError
from tfsem.oracle.values import Tensor
from tfsem.rewrites import builtin_passes

SETTINGS = [("atomic", "outputs+state"), ("atomic", "outputs"),
            ("decomposed", "outputs+state"), ("decomposed", "outputs")]
NIGHTLY = settings.get_current_profile_name() == "nightly"


def proved(p, q, semantics="atomic", observe="outputs+state") -> bool:
    return structural_refinement(p, q, semantics, observe).proved


def replace_node(p: Program, name: str, **changes) -> Program:
    return p.replace(nodes=tuple(n.replace(**changes) if n.name == name else n
                                 for n in p.nodes)).validated()


# ---------------------------------------------------------------------------
# Unit cases


@pytest.mark.parametrize("semantics, observe", SETTINGS)
def test_dce_is_proved_structurally(semantics, observe):
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x"), P.read("r", "vx2", "^w"),
                   P.read("dead", "vx2"), P.apply("d2", "Neg", "dead"),
                   P.apply("d3", "Add", "r", "$B"),
                   P.apply("n", "Neg", "r", "^d2")],
                  {"out": "n"}, ["x"])
    q = builtin_passes()["dce"].function(p)
    assert q != p and "dead" not in q.node
    v = check_rewrite(p, q, semantics, observe)
    assert v.verdict == "sound" and v.stats["path"] == "structural", v.reason
    assert v.reason.startswith("structural: access skeleton preserved")
    assert v.stats["structural"]["deleted_reads"] == 1


@pytest.mark.parametrize("semantics, observe", SETTINGS)
def test_reduce_control_is_proved_structurally(semantics, observe):
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.apply("m", "Neg", "$B", "^w"),
                   P.var("vx2", "x"), P.read("r", "vx2", "^m", "^w")],
                  {"out": "r"}, ["x"])
    q = builtin_passes()["reduce-control"].function(p)
    assert q != p
    v = check_rewrite(p, q, semantics, observe)
    assert v.verdict == "sound" and v.stats["path"] == "structural"


def test_cse_merges_reads_and_pure_nodes_and_is_proved():
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("v1", "x", "^w"), P.read("r1", "v1"),
                   P.var("v2", "x", "^w"), P.read("r2", "v2"),
                   P.apply("a1", "Add", "r1", "$B"), P.apply("a2", "Add", "r2", "$B"),
                   P.var("vy", "y"), P.write("wy", "vy", "a2")],
                  {"o1": "a1", "o2": "a2"}, ["x", "y"])
    q = builtin_passes()["cse"].function(p)
    assert "r2" not in q.node and "a2" not in q.node
    r = structural_refinement(p, q)
    assert r.proved, r.reason
    assert r.stats["merged_reads"] == 1


def test_const_fold_is_proved():
    p = P.program([P.const("c1", 1), P.const("c2", 2), P.apply("s", "Add", "c1", "c2"),
                   P.var("vx", "x"), P.assign("a", "Add", "vx", "s")], {"o": "s"}, ["x"])
    q = builtin_passes()["const-fold"].function(p)
    assert q.node["s"].op == "Const"
    assert proved(p, q)
    # a different constant is a different term
    q2 = replace_node(q, "s", attrs={"value": Tensor(4)})
    assert not proved(p, q2)
    assert check_rewrite(p, q2).verdict == "unsound"


@pytest.mark.parametrize("semantics, observe", SETTINGS)
def test_dropped_write_before_read_edge_falls_through_and_is_unsound(semantics, observe):
    p, _, _ = F.first_example(True)
    q, _, _ = F.first_example(False)
    r = structural_refinement(p, q, semantics, observe)
    assert not r.proved and r.reason.startswith("(H)")
    v = check_rewrite(p, q, semantics, observe)
    assert v.verdict == "unsound" and "structural" in v.stats


def test_hoist_reads_is_not_concluded():
    p, _, _ = F.first_example(True)
    q = builtin_passes()["hoist-reads"].function(p)
    assert not proved(p, q)
    assert check_rewrite(p, q).verdict == "unsound"


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_load_store_hoist_falls_through(semantics):
    # seed 002: no conflicting pair is ordered in P, so inclusion of the order
    # between *conflicting* accesses holds trivially; the rewrite (r0 no longer
    # waits for *X = 1) is still unsound, and (H) must refuse it
    p, _, _ = F.load_store()
    q = replace_node(p, "r0", inputs=(DataIn("vy"),))
    r = structural_refinement(p, q, semantics, "outputs+state")
    assert not r.proved and r.reason.startswith("(H)")
    assert check_rewrite(p, q, semantics, "outputs+state").verdict == "unsound"


def test_split_assign_is_proved_in_decomposed_mode_only():
    p, _, _ = F.assign_adds(2)
    q = builtin_passes()["split-assign"].function(p)
    for observe in ("outputs+state", "outputs"):
        r = structural_refinement(p, q, "decomposed", observe)
        assert r.proved and r.stats["assigns_split"] == 2, r.reason
        v = check_rewrite(p, q, "decomposed", observe, structural=False)
        assert v.verdict == "sound"
    # atomic: the other AssignAdd may write between a split Read and its
    # Write (the lost update): (X) refuses it
    r = structural_refinement(p, q, "atomic", "outputs+state")
    assert not r.proved and r.reason.startswith("(X)")
    assert check_rewrite(p, q, "atomic", "outputs+state").verdict == "unsound"


def test_split_needs_a_function_strict_in_the_value(monkeypatch):
    # Assign-Keep x := v with Keep(w, v) = w for an error v too: the split
    # Write would store Keep(w0, error) = w0 where the Assign stores nothing
    monkeypatch.setitem(fns._REGISTRY, "TestStructKeep",
                        fns.Function("TestStructKeep", 2, 1, lambda xp, a, k: (a[0],),
                                     strict_args=(0,)))
    p = P.program([P.var("v", "x"), P.assign("a", "TestStructKeep", "v", "$d")], {}, ["x"])
    q = P.program([P.var("v", "x"), P.read("a/read", "v"),
                   P.apply("a/f", "TestStructKeep", "a/read", "$d"),
                   P.write("a", "v", "a/f")], {}, ["x"])
    assert not proved(p, q, "decomposed")


def test_cse_stateful_merge_is_proved_in_decomposed_mode_only():
    p, _, _ = F.increments(2)
    p = P.program([P.var("v", "x"), P.const("one", 1), P.assign("i1", "Add", "v", "one"),
                   P.assign("i2", "Add", "v", "one"), P.var("v2", "x"),
                   P.read("r", "v2", "^i1", "^i2")], {"out": "r"}, ["x"])
    q = builtin_passes()["cse-stateful"].function(p)
    assert "i2" not in q.node
    for observe in ("outputs+state", "outputs"):
        r = structural_refinement(p, q, "decomposed", observe)
        assert r.proved and r.stats["assigns_merged"] == 1, r.reason
        assert check_rewrite(p, q, "decomposed", observe, structural=False).verdict == "sound"
        assert not proved(p, q, "atomic", observe)
        assert check_rewrite(p, q, "atomic", observe).verdict == "unsound"


def test_merged_assigns_that_were_ordered_are_refused():
    # i1 before i2 in P: merging them would need i1's write before i2's read
    p = P.program([P.var("v", "x"), P.const("one", 1), P.assign("i1", "Add", "v", "one"),
                   P.assign("i2", "Add", "v", "one", "^i1")], {}, ["x"])
    q = P.program([P.var("v", "x"), P.const("one", 1), P.assign("i1", "Add", "v", "one")],
                  {}, ["x"])
    r = structural_refinement(p, q, "decomposed", "outputs+state")
    assert not r.proved
    assert check_rewrite(p, q, "decomposed", "outputs+state").verdict == "unsound"


@pytest.mark.parametrize("semantics, observe", SETTINGS)
def test_fuse_assign_is_proved(semantics, observe):
    p, _, _ = F.lost_update(2)
    q = builtin_passes()["fuse-assign"].function(p)
    assert q != p and not any(n.op == "Read" for n in q.nodes)
    r = structural_refinement(p, q, semantics, observe)
    assert r.proved and r.stats["assigns_fused"] == 2, r.reason
    assert check_rewrite(p, q, semantics, observe, structural=False).verdict == "sound"
    # the other way round (split in atomic mode) is the lost update, which
    # only the final state shows here (the program has no output): (X')
    # concludes it under `outputs` only
    assert proved(q, p, "atomic", observe) == (observe == "outputs")
    if observe == "outputs+state":
        assert check_rewrite(q, p, "atomic", observe).verdict == "unsound"


def test_fuse_with_the_read_used_elsewhere_is_refused():
    p = P.program([P.var("v", "x"), P.read("r", "v"), P.const("one", 1),
                   P.apply("f", "Add", "r", "one"), P.write("w", "v", "f")],
                  {"seen": "r"}, ["x"])
    q = P.program([P.var("v", "x"), P.const("one", 1), P.assign("w", "Add", "v", "one"),
                   P.var("v2", "x"), P.read("r", "v2")], {"seen": "r"}, ["x"])
    # r is matched as a Read of P', so it cannot also be the fused Read
    assert not proved(p, q)


def test_decomposed_reordering_of_assigns_is_refused():
    # two Writes ordered in P, unordered in P': (H) fails in both modes
    p = P.program([P.var("v1", "x"), P.write("w1", "v1", "$a"),
                   P.var("v2", "x"), P.write("w2", "v2", "$b", "^w1")], {}, ["x"])
    q = replace_node(p, "w2", inputs=(DataIn("v2"), P.parse_input("$b")))
    for semantics in ("atomic", "decomposed"):
        assert not proved(p, q, semantics)
        assert check_rewrite(p, q, semantics).verdict == "unsound"


def test_prune_deletes_assigns_only_when_state_is_not_observed():
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x"), P.read("r", "vx2")], {"out": "r"}, ["x"])
    q = builtin_passes()["prune"].function(p)
    assert "w" not in q.node
    assert proved(p, q, "atomic", "outputs") and proved(p, q, "decomposed", "outputs")
    assert not proved(p, q, "atomic", "outputs+state")
    assert check_rewrite(p, q, "atomic", "outputs+state").verdict == "unsound"


def test_deleted_assign_that_a_read_waits_for_is_refused():
    p, _, _ = F.first_example(True)
    # the Write is gone, the Read no longer waits: r now always reads x0,
    # which the original never outputs
    q = P.program([P.var("vx2", "x"), P.read("r", "vx2")], {"out": "r"}, ["x"])
    r = structural_refinement(p, q, "atomic", "outputs")
    assert not r.proved and r.reason.startswith("(A)")
    assert check_rewrite(p, q, "atomic", "outputs").verdict == "unsound"


def test_swapped_assign_inputs_are_refused():
    p = P.program([P.var("v1", "x"), P.write("w1", "v1", "$a"),
                   P.var("v2", "y"), P.write("w2", "v2", "$b")], {}, ["x", "y"])
    q = replace_node(replace_node(p, "w1", inputs=(DataIn("v1"), P.parse_input("$b"))),
                     "w2", inputs=(DataIn("v2"), P.parse_input("$a")))
    r = structural_refinement(p, q)
    assert not r.proved and r.reason.startswith("(V)")
    assert check_rewrite(p, q).verdict == "unsound"


def test_unknown_functions_are_uninterpreted(monkeypatch):
    def impl(xp, args, attrs):
        return (args[0] * attrs["k"],)

    monkeypatch.setitem(fns._REGISTRY, "TestStructScale",
                        fns.Function("TestStructScale", 1, 1, impl, attrs={"k": lambda v, w: int(v)}))
    p = P.program([P.apply("s", "TestStructScale", "$a", k=2), P.var("vx", "x"),
                   P.write("w", "vx", "s")], {}, ["x"])
    same = P.program([P.apply("t", "TestStructScale", "$a", k=2), P.var("vx", "x"),
                      P.write("w", "vx", "t")], {}, ["x"])
    other = P.program([P.apply("s", "TestStructScale", "$a", k=3), P.var("vx", "x"),
                       P.write("w", "vx", "s")], {}, ["x"])
    assert proved(p, same)
    assert not proved(p, other)


def test_identity_and_copy_are_transparent_but_other_functions_are_not():
    base = [P.var("vx", "x")]
    p = P.program(base + [P.write("w", "vx", "$a")], {}, ["x"])
    q = P.program(base + [P.apply("c", "Copy", "$a"), P.apply("i", "Identity", "c:1"),
                          P.write("w", "vx", "i")], {}, ["x"])
    assert proved(p, q)
    q2 = P.program(base + [P.apply("n", "Neg", "$a"), P.apply("m", "Neg", "n"),
                           P.write("w", "vx", "m")], {}, ["x"])
    assert not proved(p, q2)     # -(-a) = a, but the rule does not do algebra


def test_extra_unused_read_is_allowed_a_used_one_is_not():
    p, _, _ = F.first_example(True)
    q = P.program(list(p.nodes) + [P.read("extra", "vx2")], {"out": "r"}, ["x"])
    assert proved(p, q)
    q2 = P.program(list(p.nodes) + [P.read("extra", "vx2")], {"out": "extra"}, ["x"])
    assert not proved(p, q2)
    assert check_rewrite(p, q2).verdict == "unsound"


def test_interface_change_is_invalid_before_the_rule():
    p, _, _ = F.first_example(True)
    q = P.program(list(p.nodes), {"other": "r"}, ["x"])
    assert not proved(p, q)
    assert check_rewrite(p, q).verdict == "invalid"


def test_identical_programs_keep_the_engines_shortcut():
    p, _, _ = F.first_example(True)
    assert check_rewrite(p, p).stats.get("identical")
    assert proved(p, p)


# ---------------------------------------------------------------------------
# Differential tests


def mutations(p: Program, rng: random.Random) -> list[Program]:
    """A few random edits of p (each valid, or skipped): drop a control edge,
    add one, swap two Assigns' values, point a Read at another variable's
    handle, reshape a constant, swap a binary function's arguments, fetch an
    output from another port."""
    out: list[Program] = []
    nodes = list(p.nodes)
    names = [n.name for n in nodes]

    def attempt(new_nodes, outputs=None):
        try:
            out.append(p.replace(nodes=tuple(new_nodes),
                                 outputs=p.outputs if outputs is None else outputs).validated())
        except (ProgramError, ValueError, KeyError):
            pass

    with_control = [n for n in nodes if any(isinstance(i, ControlIn) for i in n.inputs)]
    if with_control:
        n = rng.choice(with_control)
        ctrl = [i for i in n.inputs if isinstance(i, ControlIn)]
        drop = rng.choice(ctrl)
        attempt([m.replace(inputs=tuple(i for i in m.inputs if i != drop)) if m is n else m
                 for m in nodes])
    if len(nodes) >= 2:
        u, v = rng.sample(names, 2)
        attempt([m.replace(inputs=m.inputs + (ControlIn(u),)) if m.name == v else m
                 for m in nodes])
    assigns = [n for n in nodes if n.op == "Assign"]
    if len(assigns) >= 2:
        a, b = rng.sample(assigns, 2)
        va, vb = a.data_inputs[1], b.data_inputs[1]

        def swap(m):
            if m is a or m is b:
                new = vb if m is a else va
                return m.replace(inputs=(m.inputs[0], new) + m.inputs[2:])
            return m
        attempt([swap(m) for m in nodes])
    reads = [n for n in nodes if n.op == "Read"]
    handles = [n.name for n in nodes if n.op == "Var"]
    if reads and len(handles) >= 2:
        r = rng.choice(reads)
        h = rng.choice(handles)
        attempt([m.replace(inputs=(DataIn(h),) + m.inputs[1:]) if m is r else m for m in nodes])
    consts = [n for n in nodes if n.op == "Const"]
    if consts:
        # the same elements in another shape (a scalar and a 1-element vector)
        c = rng.choice(consts)
        arr = c.attrs["value"].array
        other = arr.reshape(-1)[:1].reshape(()) if arr.ndim else arr.reshape(1)
        attempt([m.replace(attrs={"value": Tensor(other)}) if m is c else m for m in nodes])
    binary = [n for n in nodes if len(n.data_inputs) == 2 and n.op not in ("Assign",)
              and n.data_inputs[0] != n.data_inputs[1]]
    if binary:
        f = rng.choice(binary)
        d0, d1 = f.data_inputs
        swapped = tuple(d1 if i == d0 else d0 if i == d1 else i for i in f.inputs)
        attempt([m.replace(inputs=swapped) if m is f else m for m in nodes])
    ports = [DataIn(n.name, k) for n in nodes if n.op != "Var" for k in range(n.n_outputs())]
    if p.outputs and ports:
        o = rng.choice(sorted(p.outputs))
        outs = dict(p.outputs)
        outs[o] = rng.choice(ports)
        attempt(nodes, outs)
    return out


FAMILY_PROGRAMS = [F.lost_update(2)[0], F.lost_update(3)[0], F.increments(2)[0],
                   F.assign_adds(2)[0], F.figure1(2, "Add")[0], F.writes_reads()[0],
                   F.load_store()[0], F.first_example(True)[0], F.blind_writers(2)[0]]


def generated_pairs(count: int, seed: int, max_nodes: int):
    """(label, P, P') over generated programs and the seeds' families: every
    built-in pass, two passes in a row, and random mutations (of P, and of
    a pass's output, so that fused, split and merged Assigns meet mutations)."""
    rng = random.Random(seed)
    passes = builtin_passes()
    names = sorted(passes)
    programs = FAMILY_PROGRAMS + random_programs(count, seed, max_nodes=max_nodes)
    for p in programs:
        for name, ps in passes.items():
            q = ps.function(p)
            if q != p:
                yield name, p, q
        first, second = rng.choice(names), rng.choice(names)
        q = passes[second].function(passes[first].function(p))
        if q != p:
            yield "two passes", p, q
        for q in mutations(p, rng):
            yield "mutation", p, q
        base = passes[rng.choice(["split-assign", "fuse-assign", "cse-stateful", "prune"])].function(p)
        for q in mutations(base, rng):
            yield "pass+mutation", p, q


def oracle_agrees(p, q, semantics, observe, sigmas=3) -> bool | None:
    """Outcomes(P', σ) ⊆ Outcomes(P, σ) on a few generated σ (None: budget)."""
    for k in range(sigmas):
        feeds, init = random_inputs(p, k)
        try:
            ours = outcome_set(p, feeds, init, semantics, observe, max_seconds=2.0)
            theirs = outcome_set(q, feeds, init, semantics, observe, max_seconds=2.0)
        except BudgetExceeded:
            return None
        if any(o not in ours for o, _ in theirs.items()):
            return False
    return True


def differential(count: int, seed: int, max_nodes: int, timeout: float) -> Counter:
    stats: Counter = Counter()
    for i, (label, p, q) in enumerate(generated_pairs(count, seed, max_nodes)):
        semantics, observe = SETTINGS[i % 4]
        r = structural_refinement(p, q, semantics, observe)
        stats["pairs"] += 1
        stats[f"{label}:pairs"] += 1
        if not r.proved:
            continue
        stats["proved"] += 1
        stats[f"{label}:proved"] += 1
        v = check_rewrite(p, q, semantics, observe, timeout=timeout, structural=False,
                          minimize=False, backends=False)
        stats[f"engine:{v.verdict}"] += 1
        assert v.verdict not in ("unsound", "invalid"), (
            f"structural rule says sound, engine says {v.verdict} ({label}, {semantics}, "
            f"{observe}): {v.describe()}\nP = {p}\nP' = {q}")
        agrees = oracle_agrees(p, q, semantics, observe)
        stats[f"oracle:{agrees}"] += 1
        assert agrees is not False, f"oracle finds an outcome of P' not in P's ({label})"
    return stats


def test_differential_against_the_enumerating_checker():
    count = 3000 if NIGHTLY else 70
    stats = differential(count, seed=17, max_nodes=12, timeout=2.0)
    print(dict(stats))
    assert stats["pairs"] >= 10 * count and stats["proved"] >= 6 * count
    assert stats["engine:unsound"] == 0 and stats["engine:invalid"] == 0
    # the rule fires on the passes that keep the skeleton
    for name in ("dce", "reduce-control", "cse", "prune-keep-state"):
        if stats[f"{name}:pairs"]:
            assert stats[f"{name}:proved"] == stats[f"{name}:pairs"], name


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly)")
def test_differential_larger_programs_nightly():
    stats = differential(300, seed=1700, max_nodes=20, timeout=5.0)
    print(dict(stats))
    assert stats["engine:unsound"] == 0 and stats["engine:invalid"] == 0


def test_node_names_that_look_like_steps_are_refused():
    # a Read called "a@read" beside the decomposed Assign "a" would be one of
    # a's steps in a schedule: such names are refused when a program is built
    with pytest.raises(ProgramError) as err:
        P.program([P.var("v", "x"), P.assign("a", "Add", "v", "$d"),
                   P.var("v2", "x"), P.read("a@read", "v2", "^a")], {"o": "a@read"}, ["x"])
    assert any(v.rule == "bad-name" and "a@read" in v.where for v in err.value.violations)


def test_snd_function_is_its_second_argument():
    # fuse-assign with F = Snd: Write(Snd(Read x, $f)) becomes Write($f)
    p = P.program([P.var("v", "x"), P.read("r", "v"), P.apply("s", "Snd", "r", "$f"),
                   P.write("w", "v", "s")], {}, ["x"])
    q = builtin_passes()["fuse-assign"].function(p)
    assert "r" not in q.node
    for semantics, observe in SETTINGS:
        assert proved(p, q, semantics, observe)


def test_merge_finds_the_survivor_among_twins():
    # three Writes of one value; cse-stateful merges w2 into w1 only (w3 waits
    # for something), and the first twin by value is w3
    p = P.program([P.var("v", "x"), P.const("c", 1), P.write("w3", "v", "c", "^r"),
                   P.var("v0", "x"), P.read("r", "v0"),
                   P.write("w1", "v", "c"), P.write("w2", "v", "c")], {"o": "r"}, ["x"])
    q = builtin_passes()["cse-stateful"].function(p)
    assert "w2" not in q.node and "w3" in q.node
    r = structural_refinement(p, q, "decomposed", "outputs+state")
    assert r.proved and r.stats["assigns_merged"] == 1, r.reason


def test_pruned_write_with_a_twin_is_deleted_not_merged():
    # prune drops w_dead (nothing fetched waits for it); a surviving Write of
    # the same value must not be taken for its merge partner
    p = P.program([P.var("v", "x"), P.const("c", 1), P.write("w_live", "v", "c"),
                   P.var("v2", "x"), P.read("r", "v2", "^w_live"),
                   P.write("w_dead", "v", "c", "^r")], {"o": "r"}, ["x"])
    q = builtin_passes()["prune"].function(p)
    assert "w_dead" not in q.node
    for semantics in ("atomic", "decomposed"):
        r = structural_refinement(p, q, semantics, "outputs")
        assert r.proved and r.stats["deleted_assigns"] == 1, r.reason
        assert not proved(p, q, semantics, "outputs+state")


def test_a_scalar_constant_is_not_a_one_element_vector():
    # found by the differential test: constants are compared with their shape
    p = P.program([P.const("c0", 4)], {"o": "c0"})
    q = P.program([P.const("c5", Tensor([4]))], {"o": "c5"})
    assert not proved(p, q)
    assert check_rewrite(p, q).verdict == "unsound"
    assert proved(p, P.program([P.const("c5", Tensor(4))], {"o": "c5"}))
    f32 = P.program([P.const("c5", Tensor(4, "float32"))], {"o": "c5"})
    assert not proved(p, f32)


def test_empty_constants_of_different_shapes_are_different_terms():
    # found by soundness review 2: the JSON attribute key writes every empty
    # tensor as [], so the terms compare constants by dtype, shape and bytes
    import numpy as np
    p = P.program([P.const("c", Tensor(np.zeros((0, 2), np.float32))),
                   P.apply("o", "Identity", "c")], {"o": "o"})
    q = P.program([P.const("c", Tensor(np.zeros((0,), np.float32))),
                   P.apply("o", "Identity", "c"), P.apply("d", "Neg", "c")], {"o": "o"})
    assert not proved(p, q)
    same = P.program([P.const("k", Tensor(np.zeros((0, 2), np.float32))),
                      P.apply("o", "Identity", "k")], {"o": "o"})
    assert proved(p, same)
