"""The structural rule's second-round extensions held to the truth.

checking/structural.py concludes `sound` without exploring states through
five extensions: atomic splits (X), racing splits under `outputs` (X'),
moved Reads (H'), unobserved Reads left out of the matching (U), and Reads
merged by their data inputs (cse-ignore-control).  Here each is attacked at
the weakest step of its proof with hand-written pairs whose truth is known
(brute force: both programs' complete outcome sets at concrete σ, by the
reference engine), and on generated pairs: every pair the rule proves must
have, at every σ tried, no outcome of P' outside P's.

The generated pairs come from random programs through the built-in passes
and chains of them, and from random edits of P and of those rewrites: a
Read's control inputs replaced by random ones, two Reads of one variable
merged (uses of one redirected to the other), control edges dropped or
added, every Read detached and then ordered (in a random direction) with
each Assign of its variable it is not ordered with, so that (H'2) holds and
(H'3) decides.  The default run compares a few hundred proofs (about 20 s);
`TFSEM_HYPOTHESIS_PROFILE=nightly` ten times as many, larger programs.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from test_structural import NIGHTLY, SETTINGS, mutations, replace_node
from test_structural_moves import extension_used, moved_reads
from tfsem.checking import check_rewrite
from tfsem.checking.structural import structural_refinement
from tfsem.generators import families as F
from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import ControlIn, DataIn, Program
from tfsem.rewrites import builtin_passes


def extra_outcome(p: Program, q: Program, semantics: str, observe: str, seed: int,
                  sigmas: int = 4):
    """An outcome of q that p lacks at some generated σ (brute force), or None
    when none was found (σ whose enumeration runs out of budget are skipped)."""
    for j in range(sigmas):
        feeds, init = random_inputs(p, seed * 7 + j, uninitialized_p=0.3 if j else 0.0,
                                    edge_p=0.3)
        try:
            a = set(outcome_set(p, feeds, init, semantics, observe, engine="reference",
                                max_states=40_000, max_seconds=3))
            b = set(outcome_set(q, feeds, init, semantics, observe, engine="reference",
                                max_states=40_000, max_seconds=3))
        except BudgetExceeded:
            continue
        if not b <= a:
            return feeds, init, sorted(map(str, b - a))
    return None


def refused_and_unsound(p, q, cells=SETTINGS):
    """In each cell: the rule concludes nothing, and the truth is `unsound`."""
    for semantics, observe in cells:
        r = structural_refinement(p, q, semantics, observe)
        assert not r.proved, (semantics, observe, r.reason)
        assert extra_outcome(p, q, semantics, observe, 1) is not None, (semantics, observe)


# ---------------------------------------------------------------------------
# Hand-written pairs: each at the weak step of one proof


def test_moved_read_after_an_assign_f_not_a_write():
    # (H'3) with an AssignAdd: P orders a before r, P' drops the edge (on the
    # Read, or on its Var node), or hoist-reads puts r before a
    p = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                   P.var("vx2", "x"), P.read("r", "vx2", "^a")], {"o": "r"}, ["x"])
    refused_and_unsound(p, replace_node(p, "r", inputs=(DataIn("vx2"),)))
    refused_and_unsound(p, builtin_passes()["hoist-reads"].function(p))
    through_var = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                             P.var("vx2", "x", "^a"), P.read("r", "vx2")], {"o": "r"}, ["x"])
    refused_and_unsound(through_var, replace_node(through_var, "vx2", inputs=()))


def test_unobserved_read_that_gates_a_racing_read_keeps_the_order_it_gave():
    # seed 002's load/store with an unobserved Read in the middle: wx -> r
    # (unobserved) -> ry (fetched); wy -> rx (fetched).  P' detaches r from
    # wx: (U) takes r out of its group, but ry still inherits "after wx"
    # through r, which P' no longer gives: (ry, rx) = (0, 0) is new.
    nodes = [P.var("vx", "x"), P.write("wx", "vx", "$B"), P.read("r", "vx", "^wx"),
             P.var("vy", "y"), P.read("ry", "vy", "^r"),
             P.write("wy", "vy", "$C"), P.read("rx", "vx", "^wy")]
    p = P.program(nodes, {"a": "ry", "b": "rx"}, ["x", "y"])
    refused_and_unsound(p, replace_node(p, "r", inputs=(DataIn("vx"),)))


def test_unobserved_read_waiting_for_a_deleted_assign():
    # under outputs, d (y := C) is deleted; r waits for it but is unobserved:
    # (U) leaves it out.  ry, which waits for r, waits for d too: refused
    # when ry is fetched and reads y (it would see C in P, y0 in P')
    nodes = [P.var("vy", "y"), P.write("d", "vy", "$C"), P.read("r", "vy", "^d"),
             P.apply("n", "Neg", "r")]
    p = P.program(nodes, {}, ["y"])
    q = P.program([P.var("vy", "y"), P.read("r", "vy"), P.apply("n", "Neg", "r")], {}, ["y"])
    for semantics in ("atomic", "decomposed"):
        r = structural_refinement(p, q, semantics, "outputs")
        assert r.proved and r.stats["unobserved_reads_unmatched"] == 1, r.reason
        assert extra_outcome(p, q, semantics, "outputs", 1) is None
        assert not structural_refinement(p, q, semantics, "outputs+state").proved
    fetched = P.program(nodes + [P.read("ry", "vy", "^r")], {"o": "ry"}, ["y"])
    q2 = fetched.replace(nodes=tuple(m.replace(inputs=m.data_inputs) if m.name == "r" else m
                                     for m in fetched.nodes if m.name != "d")).validated()
    refused_and_unsound(fetched, q2, [("atomic", "outputs"), ("decomposed", "outputs")])


def test_racing_split_whose_variable_reaches_an_assign_of_another_variable():
    # (X'): a1, a2 add to x unordered after the only fetched Read; r2 reads x
    # after both and its value is stored into y.  Under outputs y is not
    # observed either, so the truth is sound; the rule refuses anyway (r2 is
    # a used Read after the split).  Fetch y's value and it is unsound.
    base = [P.var("vx", "x"), P.read("r", "vx"),
            P.assign("a1", "Add", "vx", "$d", "^r"), P.assign("a2", "Add", "vx", "$e", "^r"),
            P.read("r2", "vx", "^a1", "^a2"), P.apply("n", "Neg", "r2"),
            P.var("vy", "y"), P.write("wy", "vy", "n")]
    p = P.program(base, {"o": "r"}, ["x", "y"])
    q = builtin_passes()["split-assign"].function(p)
    r = structural_refinement(p, q, "atomic", "outputs")
    assert not r.proved and "(X')" in r.reason and "'r2'" in r.reason, r.reason
    assert extra_outcome(p, q, "atomic", "outputs", 1) is None
    refused_and_unsound(p, q, [("atomic", "outputs+state")])
    seen = P.program(base + [P.read("r3", "vy", "^wy")], {"o": "r", "o3": "r3"}, ["x", "y"])
    refused_and_unsound(seen, builtin_passes()["split-assign"].function(seen),
                        [("atomic", "outputs"), ("atomic", "outputs+state")])


def test_split_read_fetched_instead_of_the_original_read():
    # P' fetches the split Read rr in place of r: equal values at some
    # schedules, but read(rr) is no term of P (V)
    p = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                   P.var("vx2", "x"), P.read("r", "vx2")], {"o": "r"}, ["x"])
    q = builtin_passes()["split-assign"].function(p)
    rr = next(n.name for n in q.nodes if n.op == "Read" and n.name != "r")
    q2 = q.replace(outputs={"o": DataIn(rr)}).validated()
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q2, semantics, observe)
        assert not r.proved and "(V)" in r.reason, r.reason


def test_chain_of_moved_reads_and_the_race_each_decides():
    # wy -> r1 -> r2 (Reads of x, control edges); wx (x := B) unordered with
    # all.  P': r1, r2 detached, each ordered before wx.  r1's race with wx
    # is decided "r1 first" only if wy (before r1 in P) is before wx in P'.
    base = [P.var("vy", "y"), P.write("wy", "vy", "$C"),
            P.var("vx", "x"), P.read("r1", "vx", "^wy"), P.read("r2", "vx", "^r1"),
            P.var("vy2", "y"), P.read("ry", "vy2")]
    OUTS = {"a": "r1", "b": "r2", "c": "ry"}
    p = P.program(base + [P.write("wx", "vx", "$B")], OUTS, ["x", "y"])
    detached = [m.replace(inputs=m.data_inputs) if m.name in ("r1", "r2") else m
                for m in base]
    q = P.program(detached + [P.write("wx", "vx", "$B", "^r1", "^r2")], OUTS,
                  ["x", "y"])
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q, semantics, observe)
        assert not r.proved and "unordered in the original" in r.reason, r.reason
    # the truth here: sound (r1, r2 read x0 in both); the rule is cautious
    q2 = P.program(detached + [P.write("wx", "vx", "$B", "^r1", "^r2", "^wy")],
                   OUTS, ["x", "y"])
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q2, semantics, observe)
        assert r.proved and r.stats["relaxed_reads"] == 2, r.reason
        assert extra_outcome(p, q2, semantics, observe, 2) is None
    # wx between r1 and r2 in P' as in P's run r1, wx, r2: a proof (r1 moved)
    q3 = P.program([m.replace(inputs=m.inputs + (ControlIn("wx"),)) if m.name == "r2" else m
                    for m in detached] + [P.write("wx", "vx", "$B", "^r1", "^wy")],
                   OUTS, ["x", "y"])
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q3, semantics, observe)
        assert r.proved and r.stats["relaxed_reads"] == 1, r.reason
        assert extra_outcome(p, q3, semantics, observe, 2) is None
    # P' puts r2 before wx and r1 after it (r1 = B, r2 = x0), which P's
    # r1 -> r2 forbids: r2's race is decided before r1, matched and not
    # moved, is: refused
    q4 = P.program([m.replace(inputs=m.inputs + (ControlIn("wx"),)) if m.name == "r1" else m
                    for m in detached] + [P.write("wx", "vx", "$B", "^r2", "^wy")],
                   OUTS, ["x", "y"])
    refused_and_unsound(p, q4)


def test_reads_of_two_var_nodes_merged_across_a_write():
    # two Var nodes of x; r2 reads through one that waits for w.
    # cse-ignore-control merges Reads whatever the Var nodes' control inputs
    # (their data keys are equal): the merged Read must not lose "after w".
    p = P.program([P.var("vx", "x"), P.read("r1", "vx"), P.write("w", "vx", "$B", "^r1"),
                   P.var("vx2", "x", "^w"), P.read("r2", "vx2")],
                  {"a": "r1", "b": "r2"}, ["x"])
    q = builtin_passes()["cse-ignore-control"].function(p)
    assert "r2" not in q.node and q.outputs["b"] == q.outputs["a"]
    refused_and_unsound(p, q)


def test_atomic_split_interleaved_with_a_fused_write():
    # a1: x += d split; w: x := Read(x) * e fused into AssignMul in P'
    # (written by hand), unordered with a1 in both: (X) refuses the split
    p = P.program([P.var("vx", "x"), P.assign("a1", "Add", "vx", "$d"),
                   P.read("r0", "vx"), P.apply("m", "Mul", "r0", "$e"),
                   P.write("w", "vx", "m")], {}, ["x"])
    split = builtin_passes()["split-assign"].function(p)
    q = split.replace(nodes=tuple(
        P.assign("w", "Mul", "vx", "$e") if m.name == "w" else m
        for m in split.nodes if m.name not in ("r0", "m"))).validated()
    for semantics, observe in SETTINGS:
        r = structural_refinement(p, q, semantics, observe)
        if r.proved:
            assert extra_outcome(p, q, semantics, observe, 3) is None, (semantics, observe)
    r = structural_refinement(p, q, "atomic", "outputs+state")
    assert not r.proved and r.reason.startswith("(X)"), r.reason


# ---------------------------------------------------------------------------
# Generated pairs


def _ancestors(p: Program) -> dict[str, set[str]]:
    anc: dict[str, set[str]] = {}
    for n in p.topological_order:
        s: set[str] = set()
        for q in p.predecessors(n):
            s |= anc[q] | {q}
        anc[n] = s
    return anc


def _attempt(p: Program, nodes, outputs=None) -> Program | None:
    try:
        return p.replace(nodes=tuple(nodes),
                         outputs=p.outputs if outputs is None else outputs).validated()
    except Exception:  # noqa: BLE001 - an edit that makes no valid program is skipped
        return None


def read_edits(p: Program, rng: random.Random) -> list[Program]:
    """A Read's control inputs replaced by random ones; two Reads of one
    variable merged (every use of one redirected to the other); a control
    edge added or all of a node's dropped."""
    out = []
    nodes = list(p.nodes)
    names = [n.name for n in nodes]
    reads = [n for n in nodes if n.op == "Read"]
    for n in reads[:3]:
        others = [m for m in names if m != n.name]
        ctrl = tuple(ControlIn(c) for c in rng.sample(others, min(rng.randint(0, 2), len(others))))
        out.append(_attempt(p, [m.replace(inputs=m.data_inputs + ctrl) if m is n else m
                                for m in nodes]))
    for a in reads:
        for b in reads:
            if a is b or p.accessed_variable(a.name) != p.accessed_variable(b.name) \
                    or rng.random() < 0.5:
                continue

            def sub(i, a=a, b=b):
                if isinstance(i, DataIn) and i.node == b.name:
                    return DataIn(a.name, i.port)
                return ControlIn(a.name) if isinstance(i, ControlIn) and i.node == b.name else i
            outs = {o: DataIn(a.name, port.port) if port.node == b.name else port
                    for o, port in p.outputs.items()}
            out.append(_attempt(p, [m.replace(inputs=tuple(sub(i) for i in m.inputs))
                                    for m in nodes if m is not b], outs))
    if len(nodes) >= 2:
        u, v = rng.sample(names, 2)
        out.append(_attempt(p, [m.replace(inputs=m.inputs + (ControlIn(u),)) if m.name == v
                                else m for m in nodes]))
    controlled = [n for n in nodes if n.control_inputs]
    if controlled:
        c = rng.choice(controlled)
        out.append(_attempt(p, [m.replace(inputs=m.data_inputs) if m is c else m for m in nodes]))
    return [q for q in out if q is not None]


def ordered_reads(p: Program, rng: random.Random, detach: float) -> Program | None:
    """Some Reads detached (control inputs dropped), then every Read ordered,
    in a random direction, with each Assign of its variable it is unordered
    with: (H'2) holds, and (H'3) decides."""
    q = _attempt(p, [n.replace(inputs=n.data_inputs)
                     if n.op == "Read" and rng.random() < detach else n for n in p.nodes])
    if q is None:
        return None
    for r in [n.name for n in q.nodes if n.op == "Read"]:
        x = q.accessed_variable(r)
        for w in [n.name for n in q.nodes
                  if n.op == "Assign" and q.accessed_variable(n.name) == x]:
            anc = _ancestors(q)
            if w in anc[r] or r in anc[w]:
                continue
            a, b = (r, w) if rng.random() < 0.5 else (w, r)
            q = _attempt(q, [m.replace(inputs=m.inputs + (ControlIn(a),)) if m.name == b else m
                             for m in q.nodes]) or q
    return q


def gate_reads(p: Program, rng: random.Random) -> Program | None:
    """p with control edges into two of its Reads from random Assigns and
    Reads (the random programs seldom order a Read after anything but its
    Var node, and a moved Read needs something to be moved from)."""
    stateful = [n.name for n in p.nodes if n.op in ("Assign", "Read")]
    q = p
    for r in rng.sample([n.name for n in p.nodes if n.op == "Read"],
                        min(2, sum(n.op == "Read" for n in p.nodes))):
        src = rng.choice(stateful)
        if src != r:
            q = _attempt(q, [m.replace(inputs=m.inputs + (ControlIn(src),)) if m.name == r else m
                             for m in q.nodes]) or q
    return q


def generated_pairs(count: int, seed: int, max_nodes: int):
    rng = random.Random(seed)
    passes = builtin_passes()
    chains = [("split-assign", "hoist-reads"), ("hoist-reads", "cse-ignore-control"),
              ("split-assign", "cse-ignore-control"), ("fuse-assign", "hoist-reads")]
    programs = [F.first_example(True)[0], F.load_store()[0], F.writes_reads()[0],
                F.assign_adds(2)[0], F.increments(2)[0], F.lost_update(2)[0]]
    for p in random_programs(count, seed, max_nodes=max_nodes):
        programs.append(p)
        gated = gate_reads(p, rng)
        if gated is not None and gated != p:
            programs.append(gated)
    for p in programs:
        bases = [p]
        for name in ("hoist-reads", "hoist-reads-safe", "split-assign", "cse-ignore-control",
                     "fuse-assign"):
            q = passes[name].function(p)
            if q != p:
                bases.append(q)
                yield name, p, q
        for a, b in chains:
            q = passes[b].function(passes[a].function(p))
            if q != p:
                yield f"{a}+{b}", p, q
        for base in bases:
            for q in read_edits(base, rng) + moved_reads(base, rng) + mutations(base, rng):
                yield "edit", p, q
            for detach in (0.3, 1.0):
                q = ordered_reads(base, rng, detach)
                if q is not None:
                    yield "ordered", p, q
                    for q2 in read_edits(q, rng)[:2]:
                        yield "ordered+edit", p, q2


def differential(count: int, seed: int, max_nodes: int) -> Counter:
    stats: Counter = Counter()
    for k, (label, p, q) in enumerate(generated_pairs(count, seed, max_nodes)):
        for semantics, observe in SETTINGS:
            stats["pairs"] += 1
            r = structural_refinement(p, q, semantics, observe)
            if not r.proved:
                continue
            used = extension_used(r, semantics)
            if used is None:
                continue
            stats[used] += 1
            stats["compared"] += 1
            bad = extra_outcome(p, q, semantics, observe, k, sigmas=3)
            assert bad is None, (f"FALSE SOUND through {used} ({label}, {semantics}, "
                                 f"{observe}): {r.reason}\nP = {p}\nP' = {q}\n{bad}")
    return stats


@pytest.mark.parametrize("seed", [5, 23] if NIGHTLY else [5])
def test_every_proof_through_an_extension_agrees_with_the_brute_force(seed):
    count = 300 if NIGHTLY else 12
    stats = differential(count, seed, max_nodes=16 if NIGHTLY else 12)
    print(dict(stats))
    # the generators reach every extension
    for used in ("moved", "unobserved", "atomic-split", "data-merge"):
        assert stats[used] >= 3, (used, dict(stats))
    assert stats["compared"] >= 50, dict(stats)


def test_the_enumerating_checker_agrees_on_the_hand_written_pairs():
    # the engine (rule off) refuses what the brute force refutes above
    p = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                   P.var("vx2", "x"), P.read("r", "vx2", "^a")], {"o": "r"}, ["x"])
    q = replace_node(p, "r", inputs=(DataIn("vx2"),))
    for semantics, observe in SETTINGS:
        v = check_rewrite(p, q, semantics, observe, structural=False, backends=False, timeout=5)
        assert v.verdict == "unsound", v.reason
