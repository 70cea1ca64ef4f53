"""Generation aimed at the pass: learn, while a loop runs, which programs the
pass changes and how, and steer generation toward them.

A wrong pass is wrong only on the programs it changes, and most passes
change few of the programs a general generator draws (2 to 10% for a pass
that drops one kind of control edge).  So the loop tells :class:`Steering`
what the pass did to each program judged (:meth:`Steering.observe`), and
each program comes from one of two sources:

* **fresh** (half of the draws, all of them until something changed): the
  builder (generators/builder.py) under one of several *arms*, each a
  generator configuration (swarm testing per batch: control-edge density,
  how many variables, all operations or mostly variable accesses, and
  program size).  An arm is picked with weight (changed + 1) / (tried + 2),
  the smoothed rate at which the pass changed its programs; the larger sizes
  (1.5 and 2 times `max_nodes`) are opened only while the pass changes fewer
  than a quarter of the programs (after 40).
* **mutated** (the other half, once the pass changed something): a program
  the pass changed, taken from the corpus, with 1 to 4 mutations
  (generators/mutate.py: control edges between accesses, new Reads, Writes
  and Assign-f, duplicated accesses).  The corpus keeps up to 4 programs per
  *change shape*, and a shape is picked uniformly (rare shapes as often as
  common ones), shapes that touch variable accesses three times as often.
* **cores**: the first program the pass changes in a given shape is also
  cut down, by the reducer's edits (reduce.py), to a smallest program the
  pass still changes in that same shape (the loop does it: only the pass
  runs, no check; :func:`change_core`).  Half of the mutations of that
  shape start from its core.  A changed program is often a 12-to-20-node
  mutant whose check takes seconds (two or three updates of one variable
  make the symbolic checker slow), while the core of the change is 3 to 5
  nodes: its mutants are checked in milliseconds, and the mutation that
  shows the bug (a Read that waits for the first of two combined
  AssignAdds) is one step away from it instead of being one among twenty
  nodes' worth of places.  Cost: one pass run per reducer edit tried, at
  most CORE_SECONDS per shape (a pass run in the sandbox is about a
  millisecond), and all cores at most CORE_SHARE of the time (past it,
  new shapes get no core until the share allows one again).

The **change shape** (:func:`change_shape`) says how the pass changed a
program, in terms of node kinds (R Read, W Write, A Assign-f, V Var, F
function): nodes removed and added, control edges removed and added
(between accesses of the same variable `=` or of different variables `/`),
data inputs and outputs redirected.  The number of distinct shapes and of
changed programs are the evidence a campaign reports (a weak campaign:
campaigns/evidence.py).

Choices and shrinking.  Hypothesis gives each program one choice, a 64-bit
seed, and the program is drawn from a `random.Random` of that seed
(RandomDraw): a program costs a few milliseconds to draw instead of the
hundred or so that as many Hypothesis choices (one per node, input, edge,
value) cost, so a campaign judges several times more programs in the same
time.  The price: Hypothesis cannot shrink such a program (it can only
shrink the seed, which gives another program), so the loop skips its
shrinking phase and the structural reducer (reduce.py) shrinks every
finding, fresh or mutated, on the program itself.  The same seed draws the
same program while the steering is the same; while a round shrinks (after
its first failure) the steering is frozen, so that Hypothesis replays draw
the same programs.

Cost: one structural diff per changed program (microseconds beside the
check) and a corpus of at most 4 programs per shape.  Larger programs are
slower to check; they are drawn only while the change rate is low.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable

from hypothesis import strategies as st

from tfsem.generators.builder import Config, build_inputs, build_program
from tfsem.generators.draw import Draw, RandomDraw, choice
from tfsem.generators.mutate import mutate
from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, Node, Program

from .reduce import edits, is_smaller, is_valid

#: Operations of the "mostly accesses" arms.
ACCESS_OPS = frozenset({"Read", "Write", "Assign", "Var", "Const", "Add", "Identity"})
#: Corpus programs kept per change shape.
PER_SHAPE = 4
#: The change rate under which larger programs are drawn, and after how many.
GROW_BELOW, GROW_AFTER = 0.25, 30
#: Seconds a program is taken to cost before it is judged (drawing, the
#: pass, the check), so that an arm tried a few times is not judged on them.
PRIOR_COST = 0.02
#: Time and pass runs one core (the smallest program the pass changes in a
#: shape) may take to cut down.
CORE_SECONDS, CORE_RUNS = 0.3, 150
#: ... and all cores together at most this share of the steering's time
#: (a pass with many shapes, dce or cse, showed 100 in 30 s: 40% of it)
CORE_SHARE = 0.1
#: A program whose judging took longer than this many seconds is no parent:
#: its mutants would be as slow (a check near its timeout says nothing).
SLOW = 2.0


def _kind(n: Node | None) -> str:
    if n is None:
        return "?"
    if n.op == READ:
        return "R"
    if n.op == ASSIGN:
        return "W" if n.attrs.get("fn") == "Snd" else "A"
    if n.op == VAR:
        return "V"
    return "F"


def _edge_tag(p: Program, u: str, v: str) -> str:
    a, b = p.accessed_variable(u), p.accessed_variable(v)
    rel = "" if a is None or b is None else ("=" if a == b else "/")
    return f"{_kind(p.node.get(u))}{rel}{_kind(p.node.get(v))}"


def change_shape(p: Program, q: Program) -> tuple[str, ...]:
    """How `q` (the rewrite) differs from `p`, as sorted tags (see the module
    docstring); () when they are equal."""
    tags: set[str] = set()
    pn, qn = p.node, q.node
    for name in pn.keys() - qn.keys():
        tags.add(f"-node {_kind(pn[name])}")
    for name in qn.keys() - pn.keys():
        tags.add(f"+node {_kind(qn[name])}")
    for name in pn.keys() & qn.keys():
        a, b = pn[name], qn[name]
        if a.op != b.op or a.attrs != b.attrs:
            tags.add(f"~op {_kind(a)}>{_kind(b)}")
        ca = {i.node for i in a.inputs if isinstance(i, ControlIn)}
        cb = {i.node for i in b.inputs if isinstance(i, ControlIn)}
        for u in ca - cb:
            tags.add(f"-ctl {_edge_tag(p, u, name)}")
        for u in cb - ca:
            tags.add(f"+ctl {_edge_tag(q, u, name)}")
        if a.data_inputs != b.data_inputs:
            tags.add(f"~data {_kind(b)}")
    if any(p.outputs[k] != q.outputs.get(k) for k in p.outputs):
        tags.add("~out")
    return tuple(sorted(tags))


def change_site(p: Program, q: Program) -> frozenset[str]:
    """The nodes of `p` the rewrite `q` touched: nodes removed or changed
    (operation, attributes, inputs), both ends of a control edge removed or
    added, the old source of a data input or output redirected, and the
    inputs of nodes the rewrite added.  Mutations aim here (mutate.py's
    `focus`): a wrong rewrite is wrong about what it touched, so an edge, an
    update or a Read next to the site is likelier to show it than one
    anywhere."""
    site: set[str] = set()
    pn, qn = p.node, q.node
    site.update(pn.keys() - qn.keys())
    for name in pn.keys() & qn.keys():
        a, b = pn[name], qn[name]
        if a == b:
            continue
        if a.op != b.op or a.attrs != b.attrs:
            site.add(name)
        ca = {i.node for i in a.inputs if isinstance(i, ControlIn)}
        cb = {i.node for i in b.inputs if isinstance(i, ControlIn)}
        if ca != cb:
            site.add(name)
            site.update(ca ^ cb)
        if a.data_inputs != b.data_inputs:
            site.add(name)
            site.update(i.node for i in a.data_inputs
                        if isinstance(i, DataIn) and i not in b.data_inputs)
    for k, v in p.outputs.items():
        if q.outputs.get(k) != v:
            site.add(v.node)
    for name in qn.keys() - pn.keys():
        site.update(i.node for i in qn[name].inputs if isinstance(i, (DataIn, ControlIn)))
    return frozenset(n for n in site if n in pn)


def change_core(program: Program, shape: tuple[str, ...],
                rewrite: Callable[[Program], "Program | None"],
                seconds: float = CORE_SECONDS, runs: int = CORE_RUNS) -> Program:
    """`program` cut down by the reducer's edits (reduce.py) to a smallest
    variant that `rewrite` (the pass; None when it fails) still changes in
    `shape`: what the pass matched on, without the rest.  Each edit is kept
    when it applies; sweeps until none does, `seconds` pass or `runs` pass
    runs are spent."""
    best = program
    deadline = time.monotonic() + seconds
    improved = True
    while improved and runs > 0 and time.monotonic() < deadline:
        improved = False
        for edit in edits(best):
            if runs <= 0 or time.monotonic() >= deadline:
                break
            try:
                cand = edit(best)
            except Exception:  # noqa: BLE001 - an edit that does not apply
                continue
            if cand is None or not is_smaller(cand, best) or not is_valid(cand):
                continue
            runs -= 1
            out = rewrite(cand)
            if out is not None and out != cand and change_shape(cand, out) == shape:
                best = cand
                improved = True
    return best


def _cheap(d: Draw, kept: list[list]) -> list:
    """A corpus entry, each with weight 1 / its cost (the cheap to judge
    more often: their mutants are cheap too)."""
    weights = [1.0 / ((e[2] if e[2] is not None else PRIOR_COST) + PRIOR_COST) for e in kept]
    x = d.index(256) / 256 * sum(weights)
    for e, w in zip(kept, weights):
        if x < w:
            return e
        x -= w
    return kept[-1]


def touches_access(shape: tuple[str, ...]) -> bool:
    return any(c in tag for tag in shape for c in "RWAV")


@dataclass
class Arm:
    config: Config
    size: float          # times max_nodes
    tried: int = 0
    changed: int = 0
    #: seconds spent on its programs (drawing, the pass, the check)
    seconds: float = 0.0

    def value(self) -> float:
        """Programs the pass changed per second spent, smoothed: the
        change rate (changed + 1) / (tried + 2) over the mean cost."""
        rate = (self.changed + 1) / (self.tried + 2)
        cost = (self.seconds + 2 * PRIOR_COST) / (self.tried + 2)
        return rate / cost

    def label(self) -> str:
        c = self.config
        return (f"{c.max_nodes} nodes, control {c.control_density:g}, "
                f"{c.n_variables or 'any'} var, {'accesses' if c.ops else 'all ops'}")


class Steering:
    """The steered generator of one loop (see the module docstring)."""

    def __init__(self, max_nodes: int, observe: str):
        self.max_nodes = max_nodes
        state = observe != "outputs"
        self.arms: list[Arm] = []
        for size in (1.0, 1.5, 2.0):
            for density in (0.3, 0.7):
                for nvars in (None, 1, 2):
                    for ops in (None, ACCESS_OPS):
                        cfg = Config(max_nodes=max(1, round(max_nodes * size)), n_variables=nvars,
                                     ops=ops, control_density=density, observe_state=state)
                        self.arms.append(Arm(cfg, size))
        #: change shape -> [program, change site, seconds judging it took (None:
        #: not yet known)] of programs the pass changed that way
        self.corpus: dict[tuple[str, ...], list[list]] = {}
        #: change shape -> [core program, its change site]: the smallest program
        #: found that the pass changes that way (add_core)
        self.cores: dict[tuple[str, ...], list] = {}
        #: seconds the cores took, and since when (CORE_SHARE)
        self.core_seconds = 0.0
        self.born = time.monotonic()
        self.shapes: dict[tuple[str, ...], int] = {}
        self.programs = 0
        self.changed = 0
        self.mutated_changed = 0
        self.frozen = False
        self._last: Arm | None = None
        self._turn = 0
        #: what the last observe() counted, for judged(): (arm, corpus entry, shape)
        self._pending: tuple[Arm | None, list | None, tuple[str, ...] | None] | None = None
        self._drawn_at = 0.0

    def for_cell(self, observe: str) -> "Steering":
        """A steering for the next cell of the same pass (`tfsem verify`
        fuzzes the cells one after the other): what was learnt carries over
        (the corpus, the shapes, each arm's counts); the arms draw programs
        for this cell's observe setting."""
        other = Steering(self.max_nodes, observe)
        other.corpus, other.shapes, other.cores = self.corpus, self.shapes, self.cores
        other.core_seconds, other.born = self.core_seconds, self.born
        other.programs, other.changed = self.programs, self.changed
        for mine, theirs in zip(other.arms, self.arms):
            mine.tried, mine.changed, mine.seconds = theirs.tried, theirs.changed, theirs.seconds
        return other

    # -- learning ---------------------------------------------------------------

    @property
    def growing(self) -> bool:
        return self.programs >= GROW_AFTER and self.changed < GROW_BELOW * self.programs

    def observe(self, program: Program, shape: tuple[str, ...] | None,
                site: frozenset[str] = frozenset()) -> None:
        """What the pass did to the program last drawn: `shape` None when it
        left it unchanged; `site` the nodes it touched (change_site)."""
        arm, self._last = self._last, None
        self._pending = None
        if self.frozen:
            return
        self.programs += 1
        if arm is not None:
            arm.tried += 1
        if not shape:
            self._pending = (arm, None, None)
            return
        self.changed += 1
        if arm is not None:
            arm.changed += 1
        else:
            self.mutated_changed += 1
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        kept = self.corpus.setdefault(shape, [])
        entry = [program, site, None]
        if len(kept) < PER_SHAPE:
            kept.append(entry)
        else:
            # the largest gives way to one no larger (mutants only grow, and
            # larger programs are slower to check); else in turn, so that the
            # corpus follows the campaign
            largest = max(range(len(kept)), key=lambda i: len(kept[i][0].nodes))
            if len(program.nodes) <= len(kept[largest][0].nodes):
                kept[largest] = entry
            else:
                self._turn += 1
                kept[self._turn % PER_SHAPE] = entry
        self._pending = (arm, entry, shape)

    def wants_core(self, shape: tuple[str, ...]) -> bool:
        """Whether the program just observed, changed in `shape`, should be
        cut down to a core: the first of each shape, while not frozen and
        while the cores have taken at most CORE_SHARE of the time."""
        return (bool(shape) and not self.frozen and shape not in self.cores
                and self.core_seconds <= CORE_SHARE * (time.monotonic() - self.born) + CORE_SECONDS)

    def add_core(self, shape: tuple[str, ...], core: Program, site: frozenset[str],
                 seconds: float = 0.0) -> None:
        """The smallest program found that the pass changes in `shape`;
        `seconds` it took are not the cost of the program being judged (a
        new shape must not make its arm look slow)."""
        self.core_seconds += seconds
        if not self.frozen:
            self.cores[shape] = [core, site]
            self._drawn_at += seconds

    def judged(self) -> None:
        """The program last observed has been judged: what it cost (since
        it was drawn) goes to its arm and its corpus entry; a program slower
        than SLOW leaves the corpus."""
        pending, self._pending = self._pending, None
        if pending is None or self.frozen:
            return
        seconds = max(0.0, time.monotonic() - self._drawn_at)
        arm, entry, shape = pending
        if arm is not None:
            arm.seconds += seconds
        if entry is not None:
            entry[2] = seconds
            kept = self.corpus.get(shape, [])
            if seconds > SLOW and entry in kept:
                kept.remove(entry)
                if not kept:
                    del self.corpus[shape]

    def begin_round(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        self.frozen = True

    # -- drawing ----------------------------------------------------------------

    def _weights(self) -> list[float]:
        grow = self.growing
        return [0.0 if a.size > 1 and not grow else a.value() for a in self.arms]

    def _pick_arm(self, d: Draw) -> Arm:
        weights = self._weights()
        total = sum(weights)
        x = d.index(256) / 256 * total
        for arm, w in zip(self.arms, weights):
            if x < w:
                return arm
            x -= w
        return self.arms[0]

    def draw(self, d: Draw) -> tuple[Program, dict, dict]:
        """(program, feeds, init) from the choices of `d`: a fresh program
        (first choice 0), a fresh program mutated (1), or a mutated corpus
        program (2 and 3; a fresh one mutated while the corpus is empty)."""
        program: Program
        self._drawn_at = time.monotonic()
        self._pending = None
        mode = d.index(4)
        limit = int(self.max_nodes * (2 if self.growing else 1.5))
        if mode >= 2 and self.corpus:
            shapes = list(self.corpus)
            favoured = [s for s in shapes if touches_access(s)]
            pool = favoured * 3 + shapes
            shape = choice(d, pool)
            kept = self.corpus[shape]
            core = self.cores.get(shape)
            if core is not None and d.index(2):
                parent, site = core
            else:
                parent, site, _ = _cheap(d, kept)
            program = mutate(d, parent, limit, focus=site)
            self._last = None
        else:
            arm = self._pick_arm(d)
            program = build_program(d, arm.config)
            if mode:
                program = mutate(d, program, max(limit, arm.config.max_nodes))
            self._last = arm
        feeds, init = build_inputs(d, program)
        return program, feeds, init

    def strategy(self) -> st.SearchStrategy:
        seeds = st.integers(0, 2 ** 64 - 1)

        @st.composite
        def steered(draw):
            return self.draw(RandomDraw(random.Random(draw(seeds))))
        return steered()

    def summary(self) -> dict:
        return {"programs": self.programs, "changed": self.changed, "shapes": len(self.shapes),
                "cores": len(self.cores),
                "mutated_changed": self.mutated_changed,
                "arms": [{"arm": a.label(), "tried": a.tried, "changed": a.changed,
                          "seconds": round(a.seconds, 3)} for a in self.arms if a.tried]}
