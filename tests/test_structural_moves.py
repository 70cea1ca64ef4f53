"""The structural rule's second-round extensions (checking/structural.py,
"Three extensions"): atomic splits under (X), moved Reads under (H'), and
unobserved Reads taken out of their group (U).  Unit cases, and a
differential test against the enumerating checker (rule disabled) and the
concrete oracle on generated pairs where one of them is used.

Whenever the rule says `sound` through an extension, the enumerating
checker must not say `unsound` or `invalid`, and on generated σ every
outcome of the rewrite must be an outcome of the original.  The default run
generates about 4,000 (pair, cell) combinations and compares the few hundred
the extensions prove (about 15 s); `TFSEM_HYPOTHESIS_PROFILE=nightly` ten
times as many, larger ones.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from test_structural import NIGHTLY, SETTINGS, mutations, oracle_agrees, replace_node
from tfsem.checking import check_rewrite
from tfsem.checking.structural import structural_refinement
from tfsem.generators import families as F
from tfsem.generators.strategies import random_programs
from tfsem.oracle import program as P
from tfsem.oracle.program import ControlIn, DataIn, Program, ProgramError
from tfsem.rewrites import builtin_passes


def extension_used(r, semantics: str) -> str | None:
    """Which extension a proof used (None: the first-round rule alone)."""
    if r.stats.get("relaxed_reads"):
        return "moved"
    if r.stats.get("unobserved_reads_unmatched"):
        return "unobserved"
    if r.stats.get("dead_splits"):
        return "dead-split"
    if semantics == "atomic" and r.stats.get("assigns_split"):
        return "atomic-split"
    if r.stats.get("reads_merged_by") == "data inputs":
        return "data-merge"
    return None


# ---------------------------------------------------------------------------
# Unit cases


@pytest.mark.parametrize("semantics, observe", SETTINGS)
def test_hoisted_read_between_the_same_writes_is_moved(semantics, observe):
    # r2 waits for r1 (a control edge between two Reads); the only write of x
    # comes after r2 in P.  hoist-reads drops r2's control input: r2 still
    # reads x before w in every run.
    p = P.program([P.var("vx", "x"), P.read("r1", "vx"),
                   P.var("vx2", "x"), P.read("r2", "vx2", "^r1"),
                   P.write("w", "vx", "$B", "^r2")],
                  {"o1": "r1", "o2": "r2"}, ["x"])
    q = builtin_passes()["hoist-reads"].function(p)
    assert q != p
    r = structural_refinement(p, q, semantics, observe)
    assert r.proved and r.stats["relaxed_reads"] == 1, r.reason
    assert "Reads moved" in r.reason
    assert check_rewrite(p, q, semantics, observe, structural=False).verdict == "sound"


def test_hoisted_read_that_a_write_preceded_is_refused():
    # seed 000's first example: P orders w before r, P' r before w (H'3)
    p, _, _ = F.first_example(True)
    q = builtin_passes()["hoist-reads"].function(p)
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q, semantics, observe)
        assert not r.proved and "(H')" in r.reason, r.reason
    assert check_rewrite(p, q).verdict == "unsound"


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_moved_read_racing_with_an_unordered_write_is_refused(semantics):
    # seed 002's load/store example: r0 moved, and the write of Y it reads is
    # not ordered with it in P' (H'2)
    p, _, _ = F.load_store()
    q = replace_node(p, "r0", inputs=(DataIn("vy"),))
    r = structural_refinement(p, q, semantics, "outputs+state")
    assert not r.proved and r.reason.startswith("(H)") and "(H')" in r.reason, r.reason
    assert check_rewrite(p, q, semantics, "outputs+state").verdict == "unsound"


def test_race_decided_only_if_everything_before_the_read_is_before_the_write():
    # P: y := 1 -> r (Read x); w (x := B) unordered with both.  P': r has no
    # input edge, and r -> w.  The race (r, w) is decided "r first", but
    # y := 1, before r in P, is not before w in P': (H'3) refuses.  With
    # y := 1 -> w added as well, it holds.
    base = [P.var("vy", "y"), P.write("wy", "vy", "$C"),
            P.var("vx", "x"), P.read("r", "vx", "^wy"),
            P.var("vx2", "x")]
    p = P.program(base + [P.write("w", "vx2", "$B")], {"o": "r"}, ["x", "y"])
    q = replace_node(p.replace(nodes=tuple(n.replace(inputs=n.inputs + (ControlIn("r"),))
                                           if n.name == "w" else n for n in p.nodes)).validated(),
                     "r", inputs=(DataIn("vx"),))
    r = structural_refinement(p, q, "atomic", "outputs+state")
    assert not r.proved and "unordered in the original" in r.reason, r.reason
    q2 = q.replace(nodes=tuple(n.replace(inputs=n.inputs + (ControlIn("wy"),))
                               if n.name == "w" else n for n in q.nodes)).validated()
    r2 = structural_refinement(p, q2, "atomic", "outputs+state")
    assert r2.proved and r2.stats["relaxed_reads"] == 1, r2.reason
    for semantics, observe in SETTINGS:
        assert check_rewrite(p, q2, semantics, observe, structural=False).verdict == "sound"
        assert check_rewrite(p, q, semantics, observe, structural=False).verdict == "sound"


def test_atomic_split_without_a_concurrent_write_is_proved():
    # one AssignAdd of x, a Read of x unordered with it: splitting it cannot
    # lose an update (X)
    p = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                   P.var("vx2", "x"), P.read("r", "vx2")],
                  {"o": "r"}, ["x"])
    q = builtin_passes()["split-assign"].function(p)
    for observe in ("outputs+state", "outputs"):
        r = structural_refinement(p, q, "atomic", observe)
        assert r.proved and r.stats["assigns_split"] == 1, r.reason
        assert check_rewrite(p, q, "atomic", observe, structural=False).verdict == "sound"


def test_atomic_split_with_an_unordered_write_is_refused():
    # two unordered AssignAdds: split, one may write between the other's
    # Read and Write (the lost update, seed 000, Figure 4): (X)
    p, _, _ = F.assign_adds(2)
    q = builtin_passes()["split-assign"].function(p)
    assert q != p
    r = structural_refinement(p, q, "atomic", "outputs+state")
    assert not r.proved and r.reason.startswith("(X)"), r.reason
    assert check_rewrite(p, q, "atomic", "outputs+state").verdict == "unsound"


def test_atomic_split_racing_on_a_variable_nobody_reads_after():
    # a1 and a2 add to x, unordered, after the only Read of x: split, one
    # update may be lost, which only the final state shows (X')
    p = P.program([P.var("vx", "x"), P.read("r", "vx"),
                   P.assign("a1", "Add", "vx", "$d", "^r"),
                   P.assign("a2", "Add", "vx", "$e", "^r")], {"o": "r"}, ["x"])
    q = builtin_passes()["split-assign"].function(p)
    r = structural_refinement(p, q, "atomic", "outputs")
    assert r.proved and r.stats["dead_splits"] == 2, r.reason
    assert check_rewrite(p, q, "atomic", "outputs", structural=False).verdict == "sound"
    r = structural_refinement(p, q, "atomic", "outputs+state")
    assert not r.proved and "(X')" in r.reason, r.reason
    assert check_rewrite(p, q, "atomic", "outputs+state").verdict == "unsound"
    # a Read of x after both: the lost update shows in an output
    p2 = P.program(list(p.nodes) + [P.var("vx3", "x"), P.read("r2", "vx3", "^a1", "^a2")],
                   {"o": "r", "o2": "r2"}, ["x"])
    q2 = builtin_passes()["split-assign"].function(p2)
    r = structural_refinement(p2, q2, "atomic", "outputs")
    assert not r.proved and "(X')" in r.reason, r.reason
    assert check_rewrite(p2, q2, "atomic", "outputs").verdict == "unsound"


def test_unobserved_read_may_be_reordered_but_an_observed_one_not():
    # w -> r in P; P' drops the edge.  r's value reaches nothing compared
    # (only a Neg nobody fetches): (U) takes it out of its group.  Fetched,
    # it is the first example, unsound.
    nodes = [P.var("vx", "x"), P.write("w", "vx", "$B"),
             P.var("vx2", "x"), P.read("r", "vx2", "^w"), P.apply("n", "Neg", "r")]
    p = P.program(nodes, {}, ["x"])
    q = replace_node(p, "r", inputs=(DataIn("vx2"),))
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q, semantics, observe)
        assert r.proved and r.stats["unobserved_reads_unmatched"] == 1, r.reason
    fetched = P.program(nodes, {"o": "n"}, ["x"])
    q2 = replace_node(fetched, "r", inputs=(DataIn("vx2"),))
    assert not structural_refinement(fetched, q2).proved
    assert check_rewrite(fetched, q2).verdict == "unsound"
    # nor may its value feed an Assign
    stored = P.program(nodes + [P.var("vy", "y"), P.write("wy", "vy", "n")], {}, ["x", "y"])
    q3 = replace_node(stored, "r", inputs=(DataIn("vx2"),))
    assert not structural_refinement(stored, q3).proved
    assert check_rewrite(stored, q3).verdict == "unsound"


# ---------------------------------------------------------------------------
# Differential


def moved_reads(p: Program, rng: random.Random) -> list[Program]:
    """Reads moved: one control input dropped, or every input but the handle
    (with the handle's own waits kept), or a control edge added into a Read."""
    out: list[Program] = []

    def attempt(nodes):
        try:
            out.append(p.replace(nodes=tuple(nodes)).validated())
        except (ProgramError, ValueError, KeyError):
            pass

    reads = [n for n in p.nodes if n.op == "Read"]
    rng.shuffle(reads)
    for n in reads[:2]:
        if n.control_inputs:
            drop = rng.choice(n.control_inputs)
            attempt([m.replace(inputs=tuple(i for i in m.inputs if i != drop)) if m is n else m
                     for m in p.nodes])
            attempt([m.replace(inputs=m.data_inputs) if m is n else m for m in p.nodes])
        other = rng.choice([m.name for m in p.nodes if m.name != n.name])
        attempt([m.replace(inputs=m.inputs + (ControlIn(other),)) if m is n else m
                 for m in p.nodes])
    return out


def generated_pairs(count: int, seed: int, max_nodes: int):
    rng = random.Random(seed)
    passes = builtin_passes()
    families = [F.lost_update(2)[0], F.first_example(True)[0], F.load_store()[0],
                F.writes_reads()[0], F.assign_adds(2)[0], F.increments(2)[0]]
    for p in families + random_programs(count, seed, max_nodes=max_nodes):
        for name in ("hoist-reads", "hoist-reads-safe", "split-assign", "cse-ignore-control"):
            q = passes[name].function(p)
            if q != p:
                yield name, p, q
        for q in moved_reads(p, rng):
            yield "moved", p, q
        hoisted = passes["hoist-reads"].function(p)
        for q in moved_reads(hoisted, rng) + mutations(hoisted, rng):
            yield "hoist+mutation", p, q
        split = passes["split-assign"].function(p)
        for q in mutations(split, rng):
            yield "split+mutation", p, q


def differential(count: int, seed: int, max_nodes: int, timeout: float) -> Counter:
    stats: Counter = Counter()
    for label, p, q in generated_pairs(count, seed, max_nodes):
        for semantics, observe in SETTINGS:
            r = structural_refinement(p, q, semantics, observe)
            stats["pairs"] += 1
            if not r.proved:
                continue
            used = extension_used(r, semantics)
            if used is None:
                continue
            stats["compared"] += 1
            stats[f"{used}:{label}"] += 1
            stats[used] += 1
            v = check_rewrite(p, q, semantics, observe, timeout=timeout, structural=False,
                              minimize=False, backends=False)
            stats[f"engine:{v.verdict}"] += 1
            assert v.verdict not in ("unsound", "invalid"), (
                f"structural rule ({used}) says sound, engine says {v.verdict} ({label}, "
                f"{semantics}, {observe}): {v.describe()}\nP = {p}\nP' = {q}")
            agrees = oracle_agrees(p, q, semantics, observe, sigmas=2)
            stats[f"oracle:{agrees}"] += 1
            assert agrees is not False, f"oracle finds an outcome of P' not in P's ({label})"
    return stats


def test_differential_extensions_against_the_enumerating_checker():
    count = 1500 if NIGHTLY else 80
    stats = differential(count, seed=171, max_nodes=18, timeout=2.0)
    print(dict(stats))
    assert stats["pairs"] >= 25 * count
    assert stats["engine:unsound"] == 0 and stats["engine:invalid"] == 0
    # each extension is exercised, and the engine decides most of them
    for used in ("moved", "unobserved", "atomic-split", "data-merge"):
        assert stats[used] >= 20, (used, dict(stats))
    assert stats["dead-split"] >= 1, dict(stats)
    assert stats["engine:sound"] >= 0.9 * stats["compared"]


def test_reads_merged_whatever_their_control_inputs_keep_their_order():
    # cse-ignore-control merges r2 into r1; both come after w in P (r2
    # through n), so r1 in P' still orders r2's ancestors: proved.  Its own
    # witness (r1 not after w, r2 after w) is refused.
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.apply("n", "Neg", "$B", "^w"),
                   P.var("vx2", "x"), P.read("r1", "vx2", "^w"), P.read("r2", "vx2", "^n")],
                  {"a": "r1", "b": "r2"}, ["x"])
    q = builtin_passes()["cse-ignore-control"].function(p)
    assert "r2" not in q.node
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q, semantics, observe)
        assert r.proved and r.stats["reads_merged_by"] == "data inputs", r.reason
        assert check_rewrite(p, q, semantics, observe, structural=False).verdict == "sound"
    witness = P.program([P.var("vx", "x"), P.read("r1", "vx"), P.write("w", "vx", "$B"),
                         P.read("r2", "vx", "^w")], {"a": "r1", "b": "r2"}, ["x"])
    q2 = builtin_passes()["cse-ignore-control"].function(witness)
    assert "r2" not in q2.node
    for semantics, observe in SETTINGS:
        assert not structural_refinement(witness, q2, semantics, observe).proved
    assert check_rewrite(witness, q2).verdict == "unsound"


def test_extensions_off_is_the_first_round_rule(monkeypatch):
    from tfsem.checking import structural
    p = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                   P.var("vx2", "x"), P.read("r", "vx2")], {"o": "r"}, ["x"])
    q = builtin_passes()["split-assign"].function(p)
    assert structural_refinement(p, q, "atomic").proved
    monkeypatch.setattr(structural, "EXTENSIONS", False)
    r = structural_refinement(p, q, "atomic")
    assert not r.proved and r.reason.startswith("(K)"), r.reason
    assert structural_refinement(p, q, "decomposed").proved
