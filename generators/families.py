"""Parametrised program families: the seeds' examples and the benchmark
families of the oracle issue.  Each returns (program, feeds, init) so that a
benchmark, a test or a fuzzer can run it at once; values are small ints."""

from __future__ import annotations

from tfsem.oracle import program as P
from tfsem.oracle.program import Program
from tfsem.oracle.values import Tensor, Value

Inputs = tuple[Program, dict[str, Value], dict[str, Value]]


def first_example(control_edge: bool = True) -> Inputs:
    """Seed 000, section 3.1.2: Write B to x, then Read x.  With the control
    edge the output is always B; without it, it may be x's initial value A."""
    ctrl = ("^w",) if control_edge else ()
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x"), P.read("r", "vx2", *ctrl)],
                  {"out": "r"}, ["x"])
    return p, {"B": Tensor(2)}, {"x": Tensor(1)}


def racy_pairs(k: int) -> Inputs:
    """k independent unordered Write/Read pairs on k variables: 2**k outcomes."""
    nodes, outputs, feeds, init = [], {}, {}, {}
    for i in range(k):
        nodes += [P.var(f"vw{i}", f"x{i}"), P.write(f"w{i}", f"vw{i}", f"$b{i}"),
                  P.var(f"vr{i}", f"x{i}"), P.read(f"r{i}", f"vr{i}")]
        outputs[f"out{i}"] = f"r{i}"
        feeds[f"b{i}"] = Tensor(i + 100)
        init[f"x{i}"] = Tensor(i)
    return P.program(nodes, outputs, [f"x{i}" for i in range(k)]), feeds, init


def blind_writers(n: int) -> Inputs:
    """n unordered Writes of distinct values to x and one fetched Read of x."""
    nodes = [P.var("vr", "x"), P.read("r", "vr")]
    feeds = {}
    for i in range(n):
        nodes += [P.var(f"v{i}", "x"), P.write(f"w{i}", f"v{i}", f"$b{i}")]
        feeds[f"b{i}"] = Tensor(i + 1)
    return P.program(nodes, {"out": "r"}, ["x"]), feeds, {"x": Tensor(0)}


def assign_adds(n: int) -> Inputs:
    """n unordered AssignAdds of distinct powers of two to x (state observed):
    one outcome, but every subset of the adds is a reachable state."""
    nodes, feeds = [], {}
    for i in range(n):
        nodes += [P.var(f"v{i}", "x"), P.assign(f"a{i}", "Add", f"v{i}", f"$d{i}")]
        feeds[f"d{i}"] = Tensor(2 ** i)
    return P.program(nodes, {}, ["x"]), feeds, {"x": Tensor(0)}


def lost_update(k: int) -> Inputs:
    """k unordered Read -> Add 1 -> Write increments of x: x may end anywhere
    from x0 + 1 to x0 + k (seed 000, Figure 4's lost update)."""
    nodes = []
    for i in range(k):
        nodes += [P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}"),
                  P.const(f"one{i}", 1), P.apply(f"add{i}", "Add", f"r{i}", f"one{i}"),
                  P.var(f"vw{i}", "x"), P.write(f"w{i}", f"vw{i}", f"add{i}")]
    return P.program(nodes, {}, ["x"]), {}, {"x": Tensor(0)}


def increments(k: int, atomic: bool = True) -> Inputs:
    """Seed 002's "two increments": k unordered *X += 1, as AssignAdd nodes
    (atomic=True) or as Read/Add/Write (the lost update)."""
    if not atomic:
        return lost_update(k)
    nodes = []
    for i in range(k):
        nodes += [P.var(f"v{i}", "x"), P.const(f"one{i}", 1),
                  P.assign(f"inc{i}", "Add", f"v{i}", f"one{i}")]
    return P.program(nodes, {}, ["x"]), {}, {"x": Tensor(0)}


def figure1(r: int = 2, fn: str = "Add") -> Inputs:
    """Seed 000, Figure 1 with r replicas: x is first written with B; C is
    split into one-element parts by a balanced tree of Splits; replica i
    projects part i (Identity stands for the unimportant Project) and applies
    Assign-fn to x; after all of them x is read and fetched.  With Add on
    integers there is one outcome; with Concat, one per order of the replicas
    (r! of them)."""
    if r < 1:
        raise ValueError("at least one replica")
    depth = max(0, (r - 1).bit_length())
    nodes = [P.var("vx", "x"), P.write("w", "vx", "$B")]
    level = ["$C"]
    for d in range(depth):
        nxt = []
        for j, src in enumerate(level):
            nodes.append(P.apply(f"split{d}_{j}", "Split", src))
            nxt += [f"split{d}_{j}:0", f"split{d}_{j}:1"]
        level = nxt
    for i, part in enumerate(level[:r]):
        nodes += [P.apply(f"project{i}", "Identity", part), P.var(f"vx{i}", "x"),
                  P.assign(f"assign{i}", fn, f"vx{i}", f"project{i}", "^w")]
    nodes += [P.var("vxr", "x"), P.read("r", "vxr", *(f"^assign{i}" for i in range(r)))]
    feeds = {"B": Tensor([100]), "C": Tensor([10 ** i for i in range(2 ** depth)])}
    return P.program(nodes, {"out": "r"}, ["x"]), feeds, {}


def writes_reads() -> Inputs:
    """Seed 002, "Simplest non-trivial example": *X = 1 then (control) *Y = 2;
    r0 = *Y then (control) r1 = *X.  With X = Y = 0 initially,
    r0 == 2 && r1 == 0 never happens."""
    nodes = [P.var("vx", "X"), P.const("one", 1), P.write("wx", "vx", "one"),
             P.var("vy", "Y"), P.const("two", 2), P.write("wy", "vy", "two", "^wx"),
             P.var("vy2", "Y"), P.read("r0", "vy2"),
             P.var("vx2", "X"), P.read("r1", "vx2", "^r0")]
    return (P.program(nodes, {"r0": "r0", "r1": "r1"}, ["X", "Y"]), {},
            {"X": Tensor(0), "Y": Tensor(0)})


def load_store() -> Inputs:
    """Seed 002, "Load/Store Reordering": *X = 1 then (control) r0 = *Y, beside
    *Y = 5 then (control) *X = 2.  If X ends as 1, *X = 2 came first, hence
    *Y = 5 too, so r0 is 5: (r0 = 0, X = 1) never happens."""
    nodes = [P.var("vx1", "X"), P.const("one", 1), P.write("wx1", "vx1", "one"),
             P.var("vy", "Y"), P.read("r0", "vy", "^wx1"),
             P.var("vy5", "Y"), P.const("five", 5), P.write("wy", "vy5", "five"),
             P.var("vx2", "X"), P.const("two", 2), P.write("wx2", "vx2", "two", "^wy")]
    return (P.program(nodes, {"r0": "r0"}, ["X", "Y"]), {},
            {"X": Tensor(0), "Y": Tensor(0)})


def chain(n: int) -> Inputs:
    """n pure nodes in a line (Neg after Neg after ...) from one feed."""
    nodes = [P.apply("n0", "Neg", "$a")]
    for i in range(1, n):
        nodes.append(P.apply(f"n{i}", "Neg", f"n{i - 1}"))
    return P.program(nodes, {"out": f"n{n - 1}"}), {"a": Tensor(7)}, {}


FAMILIES = {
    "racy_pairs": racy_pairs, "blind_writers": blind_writers, "assign_adds": assign_adds,
    "lost_update": lost_update, "figure1": figure1, "chain": chain,
}


# Families of the reads-from benchmark (benchmarks/oracle_rf.py, issue 17).

def lost_update_used(k: int) -> Inputs:
    """lost_update(k) with the values read fetched (output ``o{i}`` is Read
    ``r{i}``): every interleaving's reads show, not only x's final value."""
    p, feeds, init = lost_update(k)
    outputs = {f"o{i}": f"r{i}" for i in range(k)}
    return P.program(p.nodes, outputs, ["x"]), feeds, init


def writer_reader_pairs(n: int) -> Inputs:
    """n pairs on one variable x: pair i writes i + 1 to x, then (control
    edge) reads x and fetches it as ``o{i}``."""
    nodes: list = []
    for i in range(n):
        nodes += [P.var(f"vw{i}", "x"), P.const(f"c{i}", i + 1), P.write(f"w{i}", f"vw{i}", f"c{i}"),
                  P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}", f"^w{i}")]
    return (P.program(nodes, {f"o{i}": f"r{i}" for i in range(n)}, ["x"]), {},
            {"x": Tensor(0)})


def store_buffering(k: int) -> Inputs:
    """k threads; thread i writes 1 to x{i}, then (control edge) reads
    x{(i + 1) % k} and fetches it as ``o{i}``.  Under interleaving semantics
    not every read sees 0: 2**k - 1 output vectors."""
    nodes: list = []
    for i in range(k):
        nodes += [P.var(f"vw{i}", f"x{i}"), P.const(f"one{i}", 1),
                  P.write(f"w{i}", f"vw{i}", f"one{i}"),
                  P.var(f"vr{i}", f"x{(i + 1) % k}"), P.read(f"r{i}", f"vr{i}", f"^w{i}")]
    variables = [f"x{i}" for i in range(k)]
    return (P.program(nodes, {f"o{i}": f"r{i}" for i in range(k)}, variables), {},
            {x: Tensor(0) for x in variables})


def iriw(k: int) -> Inputs:
    """Independent reads of independent writes with k threads (k >= 3): two
    writers (x := 1, y := 1) and k - 2 readers; reader j reads x then
    (control edge) y when j is even, y then x when j is odd, fetching both."""
    if k < 3:
        raise ValueError("iriw needs at least 3 threads")
    nodes: list = [P.var("vx", "x"), P.const("one_x", 1), P.write("wx", "vx", "one_x"),
                   P.var("vy", "y"), P.const("one_y", 1), P.write("wy", "vy", "one_y")]
    outputs = {}
    for j in range(k - 2):
        first, second = ("x", "y") if j % 2 == 0 else ("y", "x")
        nodes += [P.var(f"va{j}", first), P.read(f"a{j}", f"va{j}"),
                  P.var(f"vb{j}", second), P.read(f"b{j}", f"vb{j}", f"^a{j}")]
        outputs[f"a{j}"] = f"a{j}"
        outputs[f"b{j}"] = f"b{j}"
    return P.program(nodes, outputs, ["x", "y"]), {}, {"x": Tensor(0), "y": Tensor(0)}


FAMILIES.update({
    "lost_update_used": lost_update_used, "writer_reader_pairs": writer_reader_pairs,
    "store_buffering": store_buffering, "iriw": iriw,
})
