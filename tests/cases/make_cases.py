"""Build the annotated case corpus, tests/cases/*.json (format tfsem.case/1).

Each case is an original program, a rewrite of it, the semantics mode and
observe setting it is judged under, the verdict it must get and a note saying
why.  The programs are written here with the builders of
`tfsem.oracle.program`, so that they are valid by construction and easy to
read; the rewritten program of an `invalid` case is JSON edited by hand.

    python tests/cases/make_cases.py           # (re)write every case file
    python tests/cases/make_cases.py --check   # exit 1 if a file differs

Every expectation is checked against the concrete oracle by
tests/test_corpus_truth.py (a counterexample σ for each `unsound` case, a grid
of σ for each `sound` case), independently of the Z3 checker.  The files are
the source of truth for other tools; this script only has to reproduce them.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from tfsem.oracle import program as P
from tfsem.oracle.jsonio import CASE_FORMAT, dumps, program_to_json
from tfsem.oracle.program import Node, Program, TensorType

HERE = Path(__file__).resolve().parent

I64 = TensorType("int64", ())
F32 = TensorType("float32", ())

CASES: dict[str, dict[str, Any]] = {}


def case(name: str, original: Program, rewritten: Program | dict, expect: str, note: str,
         semantics: str = "atomic", observe: str = "outputs+state") -> None:
    if name in CASES:
        raise ValueError(f"case {name!r} defined twice")
    CASES[name] = {
        "format": CASE_FORMAT,
        "original": program_to_json(original),
        "rewritten": rewritten if isinstance(rewritten, dict) else program_to_json(rewritten),
        "semantics": semantics,
        "observe": observe,
        "expect": expect,
        "note": " ".join(note.split()),
    }


def without(nodes: Iterable[Node], *names: str) -> list[Node]:
    gone = set(names)
    return [n for n in nodes if n.name not in gone]


def replaced(nodes: Iterable[Node], *new: Node) -> list[Node]:
    """Nodes with those of the same names as `new` replaced (in place)."""
    by_name = {n.name: n for n in new}
    return [by_name.get(n.name, n) for n in nodes]


# ---------------------------------------------------------------------------
# Seed 000: the first example, footnote 7, Figure 1 and Figure 4


def first_example(control: bool) -> Program:
    return P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                      P.var("vx2", "x"), P.read("r", "vx2", *(["^w"] if control else []))],
                     {"out": "r"}, ["x"])


def seed000() -> None:
    with_edge, no_edge = first_example(True), first_example(False)
    case("seed000_first_example_drop_control", with_edge, no_edge, "unsound", """
        Seed 000, section 3.1.2: Write B to x, then (control edge w -> r) Read x.
        The original always outputs B.  Dropping the control edge lets the Read
        fire first and output x's initial value A (section 3.2.2), an outcome the
        original lacks.""")
    case("seed000_first_example_add_control", no_edge, with_edge, "sound", """
        The reverse of seed000_first_example_drop_control: adding the control
        edge w -> r only removes the runs where the Read fires before the Write,
        so every outcome of the rewrite (out = B, x = B) is one of the original's.""")

    pruned = P.program([P.var("vx2", "x"), P.read("r", "vx2")], {"out": "r"}, ["x"])
    case("seed000_footnote7_prune_outputs_state", no_edge, pruned, "unsound", """
        Seed 000, footnote 7: without the control edge, TensorFlow's pruning keeps
        only what the fetched output depends on, so the Write subgraph goes
        (pass `prune`).  With state observed this is unsound: the pruned program
        leaves x at its initial value A, while every run of the original ends
        with x = B.""")
    case("seed000_footnote7_prune_outputs", no_edge, pruned, "sound", """
        Footnote 7's pruning with only outputs observed: the pruned program
        outputs A, which the original also outputs when the Read fires before the
        Write (and an uninitialized x gives the same error in both).  "The final
        output is definitely A" is a loss of behaviour, which is allowed.""",
        observe="outputs")

    seed000_figure1()


def figure1_base(fn: str, dtype: str = "int64") -> list[Node]:
    """Figure 1 with two replicas: x := B; C is split in two and each replica
    applies Assign-fn to x with its part (Identity stands for the unimportant
    Project); the Read after both assigns is fetched."""
    return [P.var("vx", "x"), P.write("w", "vx", "$B"),
            P.apply("split", "Split", "$C"),
            P.apply("project0", "Identity", "split:0"), P.var("vx0", "x"),
            P.assign("assign0", fn, "vx0", "project0", "^w"),
            P.apply("project1", "Identity", "split:1"), P.var("vx1", "x"),
            P.assign("assign1", fn, "vx1", "project1", "^w"),
            P.var("vxr", "x"), P.read("r", "vxr", "^assign0", "^assign1")]


def figure1_program(nodes: list[Node], dtype: str = "int64", outputs: dict | None = None) -> Program:
    return P.program(nodes, outputs or {"out": "r"}, {"x": TensorType(dtype, (1,))},
                     {"B": TensorType(dtype, (1,)), "C": TensorType(dtype, (2,))})


def seed000_figure1() -> None:
    for fn in ("Add", "Concat"):
        orig = figure1_program(figure1_base(fn))
        fixed = figure1_program(replaced(figure1_base(fn),
                                         P.assign("assign1", fn, "vx1", "project1", "^w", "^assign0")))
        case(f"seed000_figure1_{fn.lower()}_fix_order", orig, fixed, "sound", f"""
            Seed 000, Figure 1 with Assign-{fn}: the two replicas update x in either
            order.  The rewrite adds a control edge assign0 -> assign1, fixing one
            order.  That only removes runs, so it is sound whether or not the
            orders agree ({'with int64 Add they do: one outcome' if fn == 'Add' else
            'with Concat they do not: the original has two outcomes, the rewrite one of them'}).""")

    # Store-to-load forwarding: fetch the value the program "should" have
    # computed instead of reading x back.
    for fn, expect in (("Add", "sound"), ("Concat", "unsound")):
        fwd = without(figure1_base(fn), "vxr", "r") + [
            P.apply("fwd0", fn, "$B", "project0"), P.apply("fwd", fn, "fwd0", "project1")]
        orig = figure1_program(figure1_base(fn))
        rew = figure1_program(fwd, outputs={"out": "fwd"})
        why = ("int64 Add is commutative and associative (with wraparound), so every "
               "order of the replicas ends with x = B+D+E, which is what the rewrite outputs"
               if fn == "Add" else
               "with Concat the replicas' order matters: the rewrite may output B|D|E while "
               "x ends as B|E|D, a pair that no run of the original produces (it outputs x's "
               "final value)")
        case(f"seed000_figure1_{fn.lower()}_forward_store", orig, rew, expect, f"""
            Figure 1 with Assign-{fn}, rewritten by store-to-load forwarding: instead of
            reading x after both assigns, output {fn}({fn}(B, D), E) computed from the
            inputs, while the assigns still update x.  {expect.capitalize()}: {why}.""")
        if fn == "Concat":
            case("seed000_figure1_concat_forward_store_outputs", orig, rew, "sound", """
                The same forwarding as seed000_figure1_concat_forward_store with only
                outputs observed: B|D|E is one of the original's two outputs, so
                nothing new is observable.  (With state observed it is unsound.)""",
                observe="outputs")

    # Merge the two replicas into one update with the sum of the parts.
    for dtype, expect in (("int64", "sound"), ("float32", "unsound")):
        merged = without(figure1_base("Add"), "vx1", "assign1") + [
            P.apply("parts", "Add", "project0", "project1")]
        merged = replaced(merged, P.assign("assign0", "Add", "vx0", "parts", "^w"),
                          P.read("r", "vxr", "^assign0"))
        orig = figure1_program(figure1_base("Add"), dtype)
        rew = figure1_program(merged, dtype)
        why = ("int64 addition wraps around and is associative and commutative, so "
               "B+(D+E) equals both orders' results"
               if dtype == "int64" else
               "float32 addition is not associative: with B = 1, D = 1e8, E = -1e8 both "
               "orders of the original give 0 and the merged update gives 1")
        case(f"seed000_figure1_{'int' if dtype == 'int64' else 'float'}_merge_replicas",
             orig, rew, expect, f"""
            Figure 1 with {dtype} Assign-Add, the two replicas' updates merged into one
            Assign-Add of D+E (a rewrite an optimizer might do to save an update).
            {expect.capitalize()}: {why}.""")

    # Figure 4: each Assign-Add replaced by Read, Add, Write.
    split = without(figure1_base("Add"), "vx0", "assign0", "vx1", "assign1")
    for i in range(2):
        split += [P.var(f"vread{i}", "x"), P.read(f"read{i}", f"vread{i}", "^w"),
                  P.apply(f"sum{i}", "Add", f"read{i}", f"project{i}"),
                  P.var(f"vx{i}", "x"), P.write(f"assign{i}", f"vx{i}", f"sum{i}")]
    orig = figure1_program(figure1_base("Add"))
    rew = figure1_program(split)
    case("seed000_figure4_split_atomic", orig, rew, "unsound", """
        Seed 000, Figure 4: each Assign-Add of Figure 1 replaced by separate Read,
        Add and Write nodes (pass `split-assign`).  Under the atomic semantics the
        original always ends with x = B+D+E, but the rewrite can read x in both
        replicas before either writes, and the second Write overwrites the first:
        the lost update, x = B+D or B+E.""")
    case("seed000_figure4_split_decomposed", orig, rew, "sound", """
        Figure 4's decomposition judged under the decomposed semantics (seed 002):
        there an Assign-Add already is a read step and a later write step that
        other nodes may interleave with, so the lost update is already among the
        original's outcomes and the Read/Add/Write graph adds nothing.  The Read
        keeps the Assign's control input (^w), and an error in the value leaves x
        unchanged in both (Add propagates it, Write of an error is a no-op).""",
        semantics="decomposed")


# ---------------------------------------------------------------------------
# Seed 002: writes/reads, two increments, load/store reordering


def writes_reads(*, store_edge: bool = True, load_edge: bool = True, serial: bool = False) -> Program:
    return P.program([
        P.var("vx", "X"), P.const("one", 1), P.write("wx", "vx", "one"),
        P.var("vy", "Y"), P.const("two", 2), P.write("wy", "vy", "two", *(["^wx"] if store_edge else [])),
        P.var("vy2", "Y"), P.read("r0", "vy2", *(["^wy"] if serial else [])),
        P.var("vx2", "X"), P.read("r1", "vx2", *(["^r0"] if load_edge else []))],
        {"r0": "r0", "r1": "r1"}, ["X", "Y"])


def increments_atomic() -> Program:
    return P.program([P.var("v0", "x"), P.const("one0", 1), P.assign("inc0", "Add", "v0", "one0"),
                      P.var("v1", "x"), P.const("one1", 1), P.assign("inc1", "Add", "v1", "one1")],
                     {}, ["x"])


def increments_split() -> Program:
    nodes = []
    for i in range(2):
        nodes += [P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}"),
                  P.const(f"one{i}", 1), P.apply(f"add{i}", "Add", f"r{i}", f"one{i}"),
                  P.var(f"v{i}", "x"), P.write(f"inc{i}", f"v{i}", f"add{i}")]
    return P.program(nodes, {}, ["x"])


def load_store_nodes() -> list[Node]:
    return [P.var("vx1", "X"), P.const("one", 1), P.write("wx1", "vx1", "one"),
            P.var("vy", "Y"), P.read("r0", "vy", "^wx1"),
            P.var("vy5", "Y"), P.const("five", 5), P.write("wy", "vy5", "five"),
            P.var("vx2", "X"), P.const("two", 2), P.write("wx2", "vx2", "two", "^wy")]


def seed002() -> None:
    orig = writes_reads()
    case("seed002_writes_reads_unorder_stores", orig, writes_reads(store_edge=False), "unsound", """
        Seed 002, "simplest non-trivial example": *X = 1 then (control) *Y = 2,
        beside r0 = *Y then (control) r1 = *X.  The original never gives
        r0 == 2 && r1 == 0.  Dropping the edge between the two stores lets *Y = 2
        happen before *X = 1, and then r0 = 2, r1 = 0 is possible: "stores
        ordered via control dependencies cannot be reordered".""")
    case("seed002_writes_reads_unorder_loads", orig, writes_reads(load_edge=False), "unsound", """
        The same example with the edge between the two loads dropped instead: r1
        may now read X before *X = 1 while r0 reads Y after *Y = 2, giving the
        forbidden r0 = 2, r1 = 0.  Loads ordered by control edges cannot be
        reordered either.""")
    case("seed002_writes_reads_serialize", orig, writes_reads(serial=True), "sound", """
        The same example with an added control edge *Y = 2 -> r0: the rewrite runs
        the two stores before both loads, always giving r0 = 2, r1 = 1, which is
        one of the original's outcomes.  Adding ordering only removes runs.""")

    case("seed002_two_increments_split_atomic", increments_atomic(), increments_split(), "unsound", """
        Seed 002, "resource update operations": two unordered *X += 1.  As atomic
        Assign-Add nodes they always give x = x0 + 2 (the graph executor's
        locking).  Decomposed into Read, Add, Write (pass `split-assign`) both
        reads can come before both writes: x = x0 + 1, which the atomic original
        never produces.""")
    case("seed002_two_increments_split_decomposed", increments_atomic(), increments_split(), "sound", """
        The two increments under seed 002's own semantics (decomposed): an
        Assign-Add is a read, compute, write sequence that does not execute
        atomically, so the original already has the lost update x = x0 + 1, and
        the Read/Add/Write rewrite has exactly the original's outcomes.""",
        semantics="decomposed")

    hoisted = P.program(replaced(
        load_store_nodes(),
        P.read("r0", "vy"),
        P.write("wx1", "vx1", "one", "^r0"),
        P.write("wy", "vy5", "five", "^r0"),
        P.write("wx2", "vx2", "two", "^wy", "^r0")), {"r0": "r0"}, ["X", "Y"])
    orig = P.program(load_store_nodes(), {"r0": "r0"}, ["X", "Y"])
    case("seed002_load_store_hoist_reads", orig, hoisted, "unsound", """
        Seed 002, "load/store reordering": *X = 1 then (control) r0 = *Y, beside
        *Y = 5 then (control) *X = 2.  In the original, if X ends as 1 then r0 is
        5.  An XLA cluster (pass `hoist-reads`) hoists the read r0 = *Y to the
        start and sinks every write to the end, dropping the edge *X = 1 -> r0:
        then r0 = 0 with X = 1 (order r0, *Y = 5, *X = 2, *X = 1) is possible.""")
    case("seed002_load_store_hoist_reads_decomposed", orig, hoisted, "unsound", """
        seed002_load_store_hoist_reads judged under the decomposed semantics: the
        Writes' read and write steps change nothing here, and r0 = 0 with X = 1 is
        still an outcome only of the hoisted program.""", semantics="decomposed")


# ---------------------------------------------------------------------------
# The twelve built-in passes (issue 4), each on a program that shows its truth


def prune_program() -> list[Node]:
    return [P.var("vx", "x"), P.read("r", "vx"),
            P.var("vy", "y"), P.write("wy", "vy", "$b"),
            P.apply("dead", "Neg", "$a"),
            P.var("vy2", "y"), P.read("ry", "vy2")]


def passes() -> None:
    orig = P.program(prune_program(), {"out": "r"}, ["x", "y"])
    pruned = P.program([P.var("vx", "x"), P.read("r", "vx")], {"out": "r"}, ["x", "y"])
    case("pass_prune_outputs_state", orig, pruned, "unsound", """
        Models pass `prune` (TensorFlow's partial execution, whitepaper 4.2): keep
        only the nodes the fetched output depends on.  The Write of b to y, an
        unfetched Read and an unused Neg go.  With state observed this is
        unsound: y keeps its initial value instead of ending as b.""")
    case("pass_prune_outputs", orig, pruned, "sound", """
        Pass `prune` on the same program with only outputs observed: the fetched
        Read of x does not depend on anything that was removed (y is another
        variable), so the output is the same.""", observe="outputs")
    kept = P.program(without(prune_program(), "dead", "vy2", "ry"), {"out": "r"}, ["x", "y"])
    case("pass_prune_keep_state", orig, kept, "sound", """
        Models pass `prune-keep-state`: like `prune`, but every Assign is kept with
        what it needs (here the Write of b to y).  Only the unused Neg and the
        unfetched Read of y are removed; they have no effect on state and no
        observed value, so the outcomes are the same.""")

    cse_orig = P.program([
        P.var("vw", "x"), P.write("w", "vw", "$b"),
        P.var("v1", "x"), P.read("r1", "v1"), P.var("v2", "x"), P.read("r2", "v2"),
        P.apply("n1", "Neg", "$a"), P.apply("n2", "Neg", "$a")],
        {"o1": "r1", "o2": "r2", "m1": "n1", "m2": "n2"}, ["x"])
    cse_rew = P.program([
        P.var("vw", "x"), P.write("w", "vw", "$b"), P.read("r1", "vw"), P.apply("n1", "Neg", "$a")],
        {"o1": "r1", "o2": "r1", "m1": "n1", "m2": "n1"}, ["x"])
    case("pass_cse", cse_orig, cse_rew, "sound", """
        Models pass `cse` (Click's common subexpression elimination, whitepaper
        5.1): nodes with the same operation, attributes, data inputs and control
        inputs are merged: the three Var(x) nodes, then the two Reads of x, then
        the two Neg(a).  The original's two Reads may see different values (one
        before the concurrent Write, one after); the merged Read sees one value,
        which is the run where both Reads fire together.  Sound.""")
    case("pass_cse_decomposed", cse_orig, cse_rew, "sound", """
        pass_cse under the decomposed semantics (the Write is a read step and a
        write step): the merged Read still sees one value, either x's initial
        value or b, and the original has the run where both Reads see it.""",
        semantics="decomposed")

    ic_orig = P.program([P.var("vx", "x"), P.read("r1", "vx"),
                         P.write("w", "vx", "$b", "^r1"), P.read("r2", "vx", "^w")],
                        {"o1": "r1", "o2": "r2"}, ["x"])
    ic_rew = P.program([P.var("vx", "x"), P.read("r1", "vx"), P.write("w", "vx", "$b", "^r1")],
                       {"o1": "r1", "o2": "r1"}, ["x"])
    case("pass_cse_ignore_control", ic_orig, ic_rew, "unsound", """
        Models pass `cse-ignore-control`: merging nodes that have the same data
        inputs, ignoring control inputs (the bug of a real converter that merged
        two reads of a variable with a write between them).  r1 reads x, then w
        writes b, then r2 reads x: the original outputs (x0, b).  Merged, r2's
        consumers take r1's value: (x0, x0).""")

    def stateful(merged: bool) -> Program:
        nodes = [P.var("vx", "x"), P.const("one", 1), P.assign("a1", "Add", "vx", "one"),
                 P.assign("a2", "Add", "vx", "one"), P.read("r", "vx", "^a1", "^a2")]
        if merged:
            nodes = replaced(without(nodes, "a2"), P.read("r", "vx", "^a1"))
        return P.program(nodes, {"out": "r"}, ["x"])
    case("pass_cse_stateful_atomic", stateful(False), stateful(True), "unsound", """
        Models pass `cse-stateful`: CSE that also merges identical Assigns.  Two
        Assign-Add(x, 1) with the same inputs are one increment after merging:
        x ends as x0 + 1 instead of x0 + 2 under the atomic semantics.""")
    case("pass_cse_stateful_decomposed", stateful(False), stateful(True), "sound", """
        pass_cse_stateful_atomic's rewrite under the decomposed semantics: it is
        sound there.  Two identical Assigns (same variable, same value, same
        control inputs) can always run as read, read, write, write, which writes
        f(x0, v) twice: exactly the merged Assign's effect, and the Read after
        them sees it.  So `cse-stateful`'s unsoundness needs the atomic
        semantics (a program showing it under decomposed would need Assigns
        that are not both enabled at once, which CSE never merges).""",
        semantics="decomposed")

    hr_orig = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                         P.read("r", "vx", "^a")], {"out": "r"}, ["x"])
    hr_rew = P.program([P.var("vx", "x"), P.read("r", "vx"),
                        P.assign("a", "Add", "vx", "$d", "^r")], {"out": "r"}, ["x"])
    for sem in ("atomic", "decomposed"):
        case(f"pass_hoist_reads_{sem}", hr_orig, hr_rew, "unsound", f"""
            Models pass `hoist-reads` (XLA clustering): every Read moves to the start
            and every Assign to the end, dropping the edge that ordered x += d before
            the Read.  The original outputs x0 + d, the rewrite x0 (seed 002: a load
            and a store ordered by control edges cannot be reordered).  Unsound under
            the {sem} semantics.""", semantics=sem)

    safe_orig = P.program([
        P.var("vx", "x"), P.write("wx", "vx", "$b"),
        P.var("vy", "y"), P.read("ry", "vy", "^wx"),
        P.var("vx2", "x"), P.read("rx", "vx2", "^wx")], {"oy": "ry", "ox": "rx"}, ["x", "y"])
    safe_rew = P.program([
        P.var("vy", "y"), P.read("ry", "vy"),
        P.var("vx", "x"), P.write("wx", "vx", "$b", "^ry"),
        P.var("vx2", "x"), P.read("rx", "vx2", "^wx")], {"oy": "ry", "ox": "rx"}, ["x", "y"])
    case("pass_hoist_reads_safe", safe_orig, safe_rew, "sound", """
        Models pass `hoist-reads-safe`: only Reads that no Assign to the same
        variable is ordered before are hoisted.  The Read of y waited for a Write
        to x; hoisted to the start (before every Assign), it still sees y's
        initial value, the only value y ever has.  The Read of x stays after the
        Write to x.  Sound.""")
    case("pass_hoist_reads_safe_decomposed", safe_orig, safe_rew, "sound", """
        pass_hoist_reads_safe under the decomposed semantics: the Write to x is
        a read step and a write step, but the hoisted Read is of y, which
        nothing writes, and the Read of x still waits for the Write's write
        step.  Sound.""", semantics="decomposed")

    sb_orig = P.program([
        P.var("vx", "x"), P.const("one", 1), P.write("wx", "vx", "one"),
        P.var("vy", "y"), P.read("ry", "vy", "^wx"),
        P.var("vy2", "y"), P.const("two", 2), P.write("wy", "vy2", "two"),
        P.var("vx2", "x"), P.read("rx", "vx2", "^wy")], {"ox": "rx", "oy": "ry"}, ["x", "y"])
    sb_rew = P.program([
        P.var("vy", "y"), P.read("ry", "vy"), P.var("vx2", "x"), P.read("rx", "vx2"),
        P.var("vx", "x"), P.const("one", 1), P.write("wx", "vx", "one", "^ry", "^rx"),
        P.var("vy2", "y"), P.const("two", 2), P.write("wy", "vy2", "two", "^ry", "^rx")],
        {"ox": "rx", "oy": "ry"}, ["x", "y"])
    case("pass_hoist_reads_safe_store_buffer", sb_orig, sb_rew, "unsound", """
        A limit of `hoist-reads-safe`'s rule as issue 4 states it: the
        store-buffering litmus test.  x := 1 then (control) read y, beside
        y := 2 then (control) read x.  No Assign to y is ordered before the Read
        of y, and none to x before the Read of x, so the rule hoists both to the
        start, where both see the initial values: (rx, ry) = (x0, y0).  In the
        original, rx = x0 needs rx before x := 1, hence y := 2 before rx before
        x := 1 before ry, so ry = 2.  Unsound: a pass must also respect Assigns to *other*
        variables ordered before a Read, and Reads ordered before it (the
        built-in pass hoists only Reads that nothing touching a variable is
        ordered before, and leaves this program alone).""")

    sp_orig = P.program([P.var("vx", "x"), P.assign("a", "Add", "vx", "$d"),
                         P.var("vx2", "x"), P.write("w", "vx2", "$b")], {}, ["x"])
    sp_rew = P.program([P.var("vr", "x"), P.read("a_read", "vr"),
                        P.apply("a_f", "Add", "a_read", "$d"),
                        P.var("vx", "x"), P.write("a", "vx", "a_f"),
                        P.var("vx2", "x"), P.write("w", "vx2", "$b")], {}, ["x"])
    case("pass_split_assign_atomic", sp_orig, sp_rew, "unsound", """
        Models pass `split-assign`: Assign-f becomes Read, f, Write.  Beside an
        unordered Write of b, the atomic x += d ends with x = b or b + d; split,
        the Read can see x0, the Write of b fire, and then x0 + d overwrite it:
        x = x0 + d, a lost update the atomic original never has.""")
    case("pass_split_assign_decomposed", sp_orig, sp_rew, "sound", """
        pass_split_assign_atomic's rewrite under the decomposed semantics, where
        Assign-Add already is a read step and a later write step: Read, Add,
        Write has the same interleavings, and the same error behaviour (an error
        makes Add's result an error, and a Write of an error changes nothing, as
        an Assign-Add with an error does).  Sound.""", semantics="decomposed")

    fused = P.program([P.var("v0", "x"), P.const("one0", 1), P.assign("inc0", "Add", "v0", "one0"),
                       P.var("v1", "x"), P.const("one1", 1), P.assign("inc1", "Add", "v1", "one1")],
                      {}, ["x"])
    for sem in ("atomic", "decomposed"):
        case(f"pass_fuse_assign_{sem}", increments_split(), fused, "sound", f"""
            Models pass `fuse-assign`: a Read -> f -> Write of one variable, whose
            read nothing else uses, becomes Assign-f.  Two unordered Read/Add/Write
            increments become two Assign-Adds.  Under the {sem} semantics the
            fused program's runs are runs of the original ({'the atomic Assign is the Read and Write with nothing between: no lost update, but x0 + 2 is an original outcome too' if sem == 'atomic' else 'the decomposed Assign is exactly a read step and a write step'}),
            and an uninitialized x stays uninitialized in both.  Sound.""", semantics=sem)

    rc_orig = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.var("vx2", "x"), P.read("r1", "vx2", "^w1"), P.apply("n", "Neg", "r1"),
        P.var("vy", "y"), P.write("w2", "vy", "n", "^w1"),
        P.var("vy2", "y"), P.read("r2", "vy2", "^w2", "^w1")], {"out": "r2"}, ["x", "y"])
    rc_rew = P.program(replaced(list(rc_orig.nodes), P.write("w2", "vy", "n"),
                                P.read("r2", "vy2", "^w2")), {"out": "r2"}, ["x", "y"])
    case("pass_reduce_control", rc_orig, rc_rew, "sound", """
        Models pass `reduce-control`: drop control edges implied by other paths.
        w1 -> w2 is implied by w1 -> r1 -> n -> w2 (control, then data edges), and
        w1 -> r2 by w1 -> ... -> w2 -> r2.  The order of the nodes is the same
        partial order, so the runs, and the outcomes, are the same.""")

    folded = np.float32(1.1) + np.float32(2.2)
    cf_orig = P.program([
        P.const("two", 2), P.const("three", 3), P.apply("five", "Add", "two", "three"),
        P.apply("out", "Mul", "five", "$a"),
        P.const("f1", 1.1, dtype="float32"), P.const("f2", 2.2, dtype="float32"),
        P.apply("fsum", "Add", "f1", "f2")], {"out": "out", "fout": "fsum"})
    cf_rew = P.program([
        P.const("five", 5), P.apply("out", "Mul", "five", "$a"),
        P.const("fsum", folded, dtype="float32")], {"out": "out", "fout": "fsum"})
    case("pass_const_fold", cf_orig, cf_rew, "sound", """
        Models pass `const-fold`: a function whose inputs are all constants is
        replaced by a Const of its result, computed exactly as the oracle does:
        2 + 3 becomes 5, and float32 1.1 + 2.2 becomes the float32 sum
        3.3000001907 (not the float32 nearest 3.3, 3.2999999523: a folder that
        computes in float64 and rounds once would be wrong).  Sound.""")
    cfc_orig = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.const("two", 2, "^w1"), P.const("three", 3), P.apply("five", "Add", "two", "three"),
        P.var("vx2", "x"), P.write("w2", "vx2", "five")], {}, ["x"])
    cfc_bad = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.const("five", 5), P.var("vx2", "x"), P.write("w2", "vx2", "five")], {}, ["x"])
    cfc_good = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.const("five", 5, "^w1"), P.var("vx2", "x"), P.write("w2", "vx2", "five")], {}, ["x"])
    case("pass_const_fold_drops_control", cfc_orig, cfc_bad, "unsound", """
        A const-fold bug class: the Const 2 waits for w1 (control edge), so the
        folded Add, and the Write of its result, come after w1: x always ends
        as 5.  Folding to a Const 5 without that control input lets w2 fire
        before w1, and x can end as a.  A correct `const-fold` keeps the folded
        nodes' control inputs (pass_const_fold_keeps_control).""")
    case("pass_const_fold_keeps_control", cfc_orig, cfc_good, "sound", """
        `const-fold` done right on pass_const_fold_drops_control's program: the
        Const 5 keeps the control input ^w1 of the Const it replaces, so w2 still
        comes after w1 and x always ends as 5.""")

    dce_orig = P.program([
        P.var("vx", "x"), P.write("w", "vx", "$b"),
        P.apply("n", "Neg", "$b"), P.apply("m", "Mul", "n", "n"),
        P.var("vx2", "x"), P.read("r", "vx2", "^w")], {"out": "r"}, ["x"])
    dce_rew = P.program([
        P.var("vx", "x"), P.write("w", "vx", "$b"),
        P.var("vx2", "x"), P.read("r", "vx2", "^w")], {"out": "r"}, ["x"])
    case("pass_dce", dce_orig, dce_rew, "sound", """
        Models pass `dce`: pure nodes whose results nobody uses are removed (m,
        then n, which only m used).  Functions have no effect on state and their
        results were not observed, so the outcomes are the same.""")
    dcc_orig = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.apply("n", "Identity", "$b", "^w1"),
        P.var("vx2", "x"), P.write("w2", "vx2", "$b", "^n")], {}, ["x"])
    dcc_rew = P.program([
        P.var("vx", "x"), P.write("w1", "vx", "$a"),
        P.var("vx2", "x"), P.write("w2", "vx2", "$b")], {}, ["x"])
    case("pass_dce_drops_control", dcc_orig, dcc_rew, "unsound", """
        A dce bug class: n's result is unused, but n carries the ordering
        w1 -> n -> w2 through control edges.  Removing n without passing the
        ordering on lets w2 fire before w1: x can end as a instead of b.  A
        correct `dce` treats an outgoing control edge as a use (or reconnects
        the edge).""")


# ---------------------------------------------------------------------------
# Integer and float algebra on pure programs


def unary(dtype: str, *nodes: Node, out: str) -> Program:
    t = TensorType(dtype, ())
    return P.program(list(nodes), {"out": out}, feeds={"a": t})


def binary(dtype: str, *nodes: Node, out: str, names: str = "ab") -> Program:
    t = TensorType(dtype, ())
    return P.program(list(nodes), {"out": out}, feeds={n: t for n in names})


def algebra() -> None:
    def c(name: str, value: Any, dtype: str) -> Node:
        return P.const(name, value, dtype=dtype)

    for dt, short in (("int64", "int"), ("float32", "float")):
        two = 2 if dt == "int64" else 2.0
        case(f"alg_{short}_add_self_vs_mul2",
             unary(dt, P.apply("s", "Add", "$a", "$a"), out="s"),
             unary(dt, c("two", two, dt), P.apply("s", "Mul", "$a", "two"), out="s"), "sound",
             "a + a rewritten as a * 2. " + (
                 "int64 arithmetic wraps around modulo 2**64 and both sides are 2a mod 2**64."
                 if dt == "int64" else
                 "In float32 a + a and a * 2 are both the correctly rounded 2a: equal for every "
                 "finite a, both inf on overflow, inf for inf, NaN for NaN, and -0.0 + -0.0 = "
                 "-0.0 * 2 = -0.0."))

    case("alg_float_add_self_vs_mul_int2",
         unary("float32", P.apply("s", "Add", "$a", "$a"), out="s"),
         unary("float32", c("two", 2, "int64"), P.apply("s", "Mul", "$a", "two"), out="s"),
         "unsound", """
         a + a in float32 rewritten as a * 2 with an int64 Const 2: mixing dtypes is
         an error (dtype-mismatch) in this semantics, not an implicit cast, so the
         rewrite outputs an error where the original outputs 2a.""")

    case("alg_int_sub_self_vs_zero",
         unary("int64", P.apply("s", "Sub", "$a", "$a"), out="s"),
         unary("int64", c("zero", 0, "int64"), out="zero"), "sound", """
         a - a rewritten as Const 0 for an int64 feed a: a - a = 0 for every int64
         (wraparound included), and a feed is always a tensor.""")
    case("alg_float_sub_self_vs_zero",
         unary("float32", P.apply("s", "Sub", "$a", "$a"), out="s"),
         unary("float32", c("zero", 0.0, "float32"), out="zero"), "unsound", """
         a - a rewritten as 0.0 in float32: inf - inf and NaN - NaN are NaN, not 0.0.""")

    for dt, short, expect, why in (
            ("int64", "int", "sound", "int64 addition modulo 2**64 is associative."),
            ("float32", "float", "unsound",
             "float32 addition rounds after each step: a = 1, b = 1e8, c = -1e8 give "
             "(1 + 1e8) - 1e8 = 0 but 1 + (1e8 - 1e8) = 1.")):
        case(f"alg_{short}_reassociate",
             binary(dt, P.apply("ab", "Add", "$a", "$b"), P.apply("s", "Add", "ab", "$c"),
                    out="s", names="abc"),
             binary(dt, P.apply("bc", "Add", "$b", "$c"), P.apply("s", "Add", "$a", "bc"),
                    out="s", names="abc"),
             expect, f"(a + b) + c rewritten as a + (b + c). {expect.capitalize()}: {why}")

    for dt, short, why in (
            ("int64", "int", "-(-a) = a modulo 2**64, including a = INT64_MIN, whose negation "
                             "wraps to itself."),
            ("float32", "float", "negation flips the sign bit, so -(-a) = a bit for bit "
                                 "(-0.0, infinities, and NaN, where all NaNs are equal).")):
        case(f"alg_{short}_neg_neg",
             unary(dt, P.apply("n1", "Neg", "$a"), P.apply("n2", "Neg", "n1"), out="n2"),
             unary(dt, P.apply("n2", "Identity", "$a"), out="n2"), "sound",
             f"Neg(Neg(a)) rewritten as a. Sound: {why}")
        case(f"alg_{short}_max_self",
             unary(dt, P.apply("m", "Max", "$a", "$a"), out="m"),
             unary(dt, P.apply("m", "Identity", "$a"), out="m"), "sound",
             "Max(a, a) rewritten as a. Sound: the maximum of a value with itself is that "
             "value" + ("." if dt == "int64" else
                        ", NaN for NaN, and -0.0 for -0.0 (the two arguments are the same bits)."))
        case(f"alg_{short}_sub_vs_add_neg",
             binary(dt, P.apply("s", "Sub", "$a", "$b"), out="s"),
             binary(dt, P.apply("nb", "Neg", "$b"), P.apply("s", "Add", "$a", "nb"), out="s"),
             "sound", "a - b rewritten as a + Neg(b). Sound: " + (
                 "both are a - b modulo 2**64 (Neg(INT64_MIN) = INT64_MIN is consistent)."
                 if dt == "int64" else
                 "IEEE subtraction is defined as addition of the negation, so the results agree "
                 "bit for bit, signed zeros included (0.0 - 0.0 = 0.0 + -0.0 = 0.0)."))

    case("alg_int_mul_zero",
         unary("int64", c("zero", 0, "int64"), P.apply("m", "Mul", "$a", "zero"), out="m"),
         unary("int64", c("zero", 0, "int64"), out="zero"), "sound",
         "a * 0 rewritten as 0 for an int64 feed: always 0, and a feed is never an error.")
    case("alg_float_mul_zero",
         unary("float32", c("zero", 0.0, "float32"), P.apply("m", "Mul", "$a", "zero"), out="m"),
         unary("float32", c("zero", 0.0, "float32"), out="zero"), "unsound", """
         a * 0.0 rewritten as 0.0 in float32: -1 * 0.0 = -0.0, which differs from 0.0
         bit for bit (and inf * 0.0 is NaN).""")
    case("alg_float_add_zero",
         unary("float32", c("zero", 0.0, "float32"), P.apply("s", "Add", "$a", "zero"), out="s"),
         unary("float32", P.apply("s", "Identity", "$a"), out="s"), "unsound", """
         a + 0.0 rewritten as a in float32: for a = -0.0, -0.0 + 0.0 = +0.0, which is
         not -0.0 bit for bit.""")
    case("alg_float_add_negzero",
         unary("float32", c("nzero", -0.0, "float32"), P.apply("s", "Add", "$a", "nzero"), out="s"),
         unary("float32", P.apply("s", "Identity", "$a"), out="s"), "sound", """
         a + (-0.0) rewritten as a in float32: -0.0 is the true additive identity
         (0.0 + -0.0 = 0.0, -0.0 + -0.0 = -0.0, inf and NaN unchanged).  Compare
         alg_float_add_zero.""")
    case("alg_float_sub_antisymmetry",
         binary("float32", P.apply("s", "Sub", "$a", "$b"), out="s"),
         binary("float32", P.apply("d", "Sub", "$b", "$a"), P.apply("s", "Neg", "d"), out="s"),
         "unsound", """
         a - b rewritten as -(b - a) in float32: for a = b = 1, a - b = 0.0 but
         -(b - a) = -0.0.  (For int64 it would be sound.)""")
    case("alg_int_sub_antisymmetry",
         binary("int64", P.apply("s", "Sub", "$a", "$b"), out="s"),
         binary("int64", P.apply("d", "Sub", "$b", "$a"), P.apply("s", "Neg", "d"), out="s"),
         "sound", "a - b rewritten as -(b - a) for int64: equal modulo 2**64.")


# ---------------------------------------------------------------------------
# Uninitialized variables, errors and state


def state_and_errors() -> None:
    orig = P.program([P.var("vx", "x"), P.read("r", "vx"), P.apply("s", "Sub", "r", "r")],
                     {"out": "s"}, ["x"])
    rew = P.program([P.const("s", 0)], {"out": "s"}, ["x"])
    case("err_uninit_sub_self", orig, rew, "unsound", """
        x - x rewritten as 0 where x is read from an int64 variable: for an
        initialized x it is 0, but an uninitialized x reads as the error
        `uninitialized`, which Sub propagates (seed footnotes 4 and 5).  The
        rewrite outputs 0 where the original outputs the error.  Compare
        alg_int_sub_self_vs_zero, where a feed is never an error.""")

    orig = P.program([P.var("vy", "y"), P.read("ry", "vy"), P.const("zero", 0),
                      P.apply("m", "Mul", "ry", "zero"), P.var("vx", "x"), P.write("w", "vx", "m")],
                     {}, ["x", "y"])
    rew = P.program([P.const("zero", 0), P.var("vx", "x"), P.write("w", "vx", "zero")], {}, ["x", "y"])
    case("err_assign_error_is_noop", orig, rew, "unsound", """
        x := y * 0 rewritten as x := 0.  When y is uninitialized, y * 0 is an
        error, and a Write of an error changes nothing (footnote 5): the original
        leaves x as it was, the rewrite sets it to 0.""")

    orig = P.program([P.var("vx", "x"), P.write("w", "vx", "$b"),
                      P.var("vx2", "x"), P.assign("a", "Add", "vx2", "$d", "^w")], {}, ["x"])
    dropped = P.program([P.var("vx2", "x"), P.assign("a", "Add", "vx2", "$d")], {}, ["x"])
    folded = P.program([P.apply("s", "Add", "$b", "$d"), P.var("vx", "x"), P.write("w", "vx", "s")],
                       {}, ["x"])
    case("err_drop_initializing_write", orig, dropped, "unsound", """
        x := b; x += d with the initializing Write dropped.  The original always
        ends with x = b + d; the rewrite adds d to x's initial value, and when x
        is uninitialized Add gives an error, so x stays uninitialized.""")
    case("err_fold_initializing_write", orig, folded, "sound", """
        x := b; x += d rewritten as x := b + d.  The Write initializes x before
        the Assign-Add, so the original ends with x = b + d whatever x held,
        uninitialized included; the rewrite computes the same value.""")

    def write_back(with_it: bool) -> Program:
        nodes = [P.var("vx2", "x"), P.write("w", "vx2", "$b")]
        if with_it:
            nodes = [P.var("vx", "x"), P.read("r", "vx"), P.var("vx1", "x"),
                     P.write("wb", "vx1", "r")] + nodes
        return P.program(nodes, {}, ["x"])
    case("state_drop_write_back", write_back(True), write_back(False), "sound", """
        x := x (a Read of x written back) removed, beside an unordered Write of b.
        The original ends with x = b or, when the write-back's Read comes before
        the Write of b and its Write after it, with x's initial value; the rewrite
        always ends with b, one of those.  An uninitialized x reads as an error
        and the write-back of an error is a no-op, so it ends with b as well.""")
    case("state_add_write_back", write_back(False), write_back(True), "unsound", """
        The reverse of state_drop_write_back: adding x := x beside an unordered
        Write of b.  The write-back can read x0 before the Write of b and store it
        after, so x may end as x0, while the original always ends with b.""")

    for dt, short, expect, why in (
            ("int64", "int", "sound",
             "x + 0 = x for every int64, and for an uninitialized x the Add is an error, "
             "so the Assign leaves x unchanged"),
            ("float32", "float", "unsound",
             "for x = -0.0, x + 0.0 = +0.0, so the Assign changes x's bits")):
        zero = 0 if dt == "int64" else 0.0
        var_t = {"x": TensorType(dt, ())}
        orig = P.program([P.var("vx", "x"), P.const("zero", zero, dtype=dt),
                          P.assign("a", "Add", "vx", "zero"), P.var("vx2", "x"),
                          P.read("r", "vx2", "^a")], {"out": "r"}, var_t)
        rew = P.program([P.var("vx2", "x"), P.read("r", "vx2")], {"out": "r"}, var_t)
        case(f"state_{short}_drop_add_zero", orig, rew, expect, f"""
            x += 0 ({dt}) removed as a no-op. {expect.capitalize()}: {why}.""")


# ---------------------------------------------------------------------------
# Invalid rewrites: malformed programs, or a different interface


def invalid() -> None:
    base = P.program([P.var("vx", "x"), P.read("r", "vx"), P.apply("n", "Neg", "r")],
                     {"out": "n"}, ["x"])

    def edit(**changes: Any) -> dict:
        d = copy.deepcopy(program_to_json(base))
        d.update(changes)
        return d

    def nodes_with(*edits: tuple[int, dict]) -> list[dict]:
        nodes = copy.deepcopy(program_to_json(base)["nodes"])
        for i, new in edits:
            nodes[i] = new
        return nodes

    intro = "The original reads x and outputs its negation."
    case("invalid_unknown_op", base,
         edit(nodes=nodes_with((2, {"name": "n", "op": "Negate", "inputs": ["r"]}))), "invalid",
         f"{intro} The rewrite uses the operation Negate, which is not in the registry.")
    case("invalid_cycle", base,
         edit(nodes=nodes_with((1, {"name": "r", "op": "Read", "inputs": ["vx", "^n"]}))), "invalid",
         f"{intro} The rewrite adds a control edge n -> r while r -> n is a data edge: "
         "a cycle, and a program is a DAG.")
    case("invalid_missing_output", base, edit(outputs={"result": "n"}), "invalid",
         f"{intro} The rewrite renames the output out to result: the output names differ.")
    case("invalid_extra_output", base, edit(outputs={"out": "n", "raw": "r"}), "invalid",
         f"{intro} The rewrite also fetches the Read as a new output raw: the output "
         "names differ.")
    case("invalid_extra_variable", base, edit(variables=["x", "y"]), "invalid",
         f"{intro} The rewrite declares a second variable y: the variables differ.")
    case("invalid_missing_variable", base,
         edit(variables=[], nodes=[{"name": "n", "op": "Neg", "inputs": ["$a"]}]), "invalid",
         f"{intro} The rewrite drops x and negates a feed a instead: the variables differ, "
         "and the feed a is one the original lacks.")
    case("invalid_new_feed", base,
         edit(nodes=nodes_with((2, {"name": "n", "op": "Add", "inputs": ["r", "$k"]}))), "invalid",
         f"{intro} The rewrite adds a feed k that the original lacks.")
    case("invalid_arity", base,
         edit(nodes=nodes_with((2, {"name": "n", "op": "Add", "inputs": ["r"]}))), "invalid",
         f"{intro} The rewrite gives Add one data input; it takes two.")
    case("invalid_edge_kind", base,
         edit(nodes=nodes_with((2, {"name": "n", "op": "Neg", "inputs": ["vx"]}))), "invalid",
         f"{intro} The rewrite feeds the Var node's variable edge to Neg, which takes a "
         "tensor edge.")
    case("invalid_unknown_node", base,
         edit(nodes=nodes_with((2, {"name": "n", "op": "Neg", "inputs": ["read"]}))), "invalid",
         f"{intro} The rewrite's Neg names an input node read that does not exist.")
    case("invalid_duplicate_name", base,
         edit(nodes=nodes_with((2, {"name": "r", "op": "Neg", "inputs": ["r"]})), outputs={"out": "r"}),
         "invalid", f"{intro} The rewrite has two nodes named r.")


# ---------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every case file's name and exact text."""
    CASES.clear()
    seed000()
    seed002()
    passes()
    algebra()
    state_and_errors()
    invalid()
    return {f"{name}.json": dumps(data) + "\n" for name, data in sorted(CASES.items())}


def main(argv: list[str]) -> int:
    files = build()
    if "--check" in argv:
        stale = [n for n, text in files.items()
                 if not (HERE / n).exists() or (HERE / n).read_text() != text]
        extra = sorted(p.name for p in HERE.glob("*.json") if p.name not in files)
        for n in stale:
            print(f"differs: {n}")
        for n in extra:
            print(f"not built by this script: {n}")
        return 1 if stale or extra else 0
    for name, text in files.items():
        (HERE / name).write_text(text)
    print(f"wrote {len(files)} cases to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
