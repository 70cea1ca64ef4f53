"""The symmetry engine (oracle/symmetry.py) and `auto` through it,
held to the brute force of the step semantics and to the reference engine.

Hand-made programs aim at what detection or the orbit Mapping could get
wrong: threads that differ only in a signed zero (distinct values) or in a
NaN's payload (equal values: one class), a Var naming another variable, a
^$feed control input or a control edge from a shared source on one copy,
outputs fetched from a shared source and two outputs on one port, internal
automorphisms, error values (uninitialized variables, dtype and shape
mismatches), vectors with decomposed Assign-Add/Sub/Concat, and several
classes beside a thread of no class in one component.  Every one is compared
with the brute force (`semantics.reference_outcomes`) in all four cells:
the same set, the same `len`, no duplicate when iterated, every member `in`
with a witness that replays, non-members (values shuffled between outputs)
answered as the brute force answers them.  Then generated symmetric
programs (a random program replicated over shared variables, with a second
replicated or lone program beside it in the same component, then perturbed
by one of fifteen changes) against the reference engine.  Budgets raise.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from hypothesis import settings

from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded, components
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import ControlIn, DataIn, FeedControlIn, FeedIn, Program, ProgramError, TensorType
from tfsem.oracle.semantics import reference_outcomes
from tfsem.oracle.symmetry import SymmetricOutcomes, _SymComponent, detect
from tfsem.oracle.values import Tensor

from test_oracle_symmetry import _replay  # noqa: E402  (tests/ is on sys.path under pytest)

CELLS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs", "outputs+state")]
NIGHTLY = settings.get_current_profile_name() == "nightly"


def f32(x):
    return Tensor(np.array(x, dtype=np.float32))


def f32_bits(bits: int) -> Tensor:
    return Tensor(np.array([bits], dtype=np.uint32).view(np.float32).reshape(()))


def _classes(p):
    out = []
    for names, _vars, outputs in components(p):
        out += [sorted(sorted(t) for t in cls) for cls in detect(p, names, outputs).classes]
    return sorted(out)


def _threads(k, make, shared=(), outputs=None, variables=("x",), feeds=None):
    nodes, outs = list(shared), dict(outputs or {})
    for i in range(k):
        n, o = make(i)
        nodes += n
        outs.update(o)
    return P.program(nodes, outs, variables, feeds)


def _membership(sym, truth: set, rng: random.Random, tries: int = 12):
    """Outcomes built by shuffling output values between outputs (and
    mixing two outcomes): `in` answers as the true set does."""
    members = sorted(truth, key=repr)
    for _ in range(tries):
        o = rng.choice(members)
        vals = [v for _, v in o.outputs]
        rng.shuffle(vals)
        if rng.random() < 0.4:
            o2 = rng.choice(members)
            vals = [a if rng.random() < 0.5 else b for a, b in zip(vals, (v for _, v in o2.outputs))]
        state = o.state if rng.random() < 0.7 else rng.choice(members).state
        cand = Outcome(tuple((k, v) for (k, _), v in zip(o.outputs, vals)), state)
        assert (cand in sym) == (cand in truth), cand
        if len(sym.components) == 1 and isinstance(sym.components[0], SymmetricOutcomes):
            assert (cand in sym.components[0]) == (cand in truth)   # the Mapping itself


def _check(p, feeds, init, semantics, observe, truth: set, engine: str, rng: random.Random,
           replay: int | None = None, max_states: int = 80_000):
    """The engine's set equals `truth`, with everything the Mapping promises."""
    got = outcome_set(p, feeds, init, semantics, observe, engine=engine, max_states=max_states,
                      max_seconds=30)
    listed = list(got)
    assert len(listed) == len(set(listed)) == got.count == len(truth)
    assert set(listed) == truth
    for comp in got.components:
        if isinstance(comp, SymmetricOutcomes):
            parts = list(comp)
            assert len(parts) == len(set(parts)) == len(comp)
            for o in parts:
                assert o in comp
    items = list(got.items())
    assert [o for o, _w in items] == listed
    sample = items if replay is None or len(items) <= replay else rng.sample(items, replay)
    for o, w in sample:
        assert _replay(p, feeds, init, w, semantics, observe) == o
        w2 = got.witness(o)
        assert w2 is not None and _replay(p, feeds, init, w2, semantics, observe) == o
    _membership(got, truth, rng)
    return got.engines


# ---------------------------------------------------------------------------
# Hand-made programs, each against the brute force


def nan_payload_threads():
    """Three threads Read x -> Max(r, c_i) -> Write x, c_i a float32 NaN
    with payloads 0x7fc00000, 0x7fc00001, 0xffc00000 (equal values under
    SPEC section 2, but constants keyed by their bytes, as a Bitcast could
    tell them apart: no class); the Read and the Max fetched."""
    bits = [0x7FC00000, 0x7FC00001, 0xFFC00000]

    def make(i):
        return ([P.var(f"v{i}", "x"), P.read(f"r{i}", f"v{i}"),
                 P.const(f"c{i}", f32_bits(bits[i])), P.apply(f"m{i}", "Max", f"r{i}", f"c{i}"),
                 P.var(f"w{i}v", "x"), P.write(f"w{i}", f"w{i}v", f"m{i}")],
                {f"r{i}": f"r{i}", f"m{i}": f"m{i}"})
    p = _threads(3, make, variables={"x": TensorType("float32")})
    return p, {}, {"x": f32(1.0)}, []


def signed_zero_threads():
    """Three threads Write x := c_i; Read x; RealDiv(1, r), c = 0.0, -0.0,
    0.0: the threads with 0.0 are one class, the -0.0 one stays out (1/r
    tells the zeros apart)."""
    zeros = [0.0, -0.0, 0.0]

    def make(i):
        return ([P.const(f"c{i}", zeros[i], dtype="float32"), P.var(f"v{i}", "x"),
                 P.write(f"w{i}", f"v{i}", f"c{i}"), P.var(f"u{i}", "x"), P.read(f"r{i}", f"u{i}", f"^w{i}"),
                 P.apply(f"d{i}", "RealDiv", "one", f"r{i}")],
                {f"d{i}": f"d{i}"})
    p = _threads(3, make, shared=[P.const("one", 1.0, dtype="float32")],
                 variables={"x": TensorType("float32")})
    return p, {}, {"x": f32(2.0)}, [2]


def other_variable_copy():
    """Three lost-update threads; the third's Write names y (same type): only
    the first two are a class."""
    def make(i):
        w = "y" if i == 2 else "x"
        return ([P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}"), P.apply(f"a{i}", "Add", f"r{i}", "one"),
                 P.var(f"vw{i}", w), P.write(f"w{i}", f"vw{i}", f"a{i}")], {f"o{i}": f"r{i}"})
    p = _threads(3, make, shared=[P.const("one", 1), P.var("vy", "y"), P.read("ry", "vy")],
                 outputs={"oy": "ry"}, variables=("x", "y"))
    return p, {}, {"x": Tensor(0), "y": Tensor(10)}, [2]


def feed_control_and_shared_control():
    """Four threads Read x -> Neg -> AssignAdd x, every one with ^$go on its
    Read and a control edge from the shared Const; thread 2 also has ^$stop
    on its AssignAdd and thread 3 a control edge from the shared Var node:
    a class of two, the other two out."""
    def make(i):
        extra_w = ("^$stop",) if i == 2 else ("^vs",) if i == 3 else ()
        return ([P.var(f"v{i}", "x"), P.read(f"r{i}", f"v{i}", "^$go", "^k"),
                 P.apply(f"n{i}", "Neg", f"r{i}"), P.var(f"u{i}", "x"),
                 P.assign(f"w{i}", "Add", f"u{i}", f"n{i}", *extra_w)], {f"o{i}": f"n{i}"})
    p = _threads(4, make, shared=[P.const("k", 3), P.var("vs", "x")])
    return p, {}, {"x": Tensor(1)}, [2]


def shared_fetches():
    """A shared Const fetched and consumed by three threads; each thread's
    Read fetched twice on one port and its Sub once; the shared Var node of
    every Write."""
    def make(i):
        return ([P.var(f"v{i}", "x"), P.read(f"r{i}", f"v{i}"), P.apply(f"s{i}", "Sub", f"r{i}", "k"),
                 P.write(f"w{i}", "vw", f"s{i}")],
                {f"a{i}": f"r{i}", f"b{i}": f"r{i}", f"s{i}": f"s{i}"})
    p = _threads(3, make, shared=[P.const("k", 2), P.var("vw", "x")], outputs={"k": "k"})
    return p, {}, {"x": Tensor(7)}, [3]


def internal_automorphism():
    """Two threads, each with two Identity nodes of one Read, both fetched
    (an internal automorphism): ambiguous, no class; plus two plain reader
    threads, a class."""
    nodes, outs = [], {}
    for i in range(2):
        nodes += [P.var(f"v{i}", "x"), P.read(f"r{i}", f"v{i}"),
                  P.apply(f"p{i}", "Identity", f"r{i}"), P.apply(f"q{i}", "Identity", f"r{i}"),
                  P.var(f"u{i}", "x"), P.assign(f"w{i}", "Mul", f"u{i}", f"r{i}")]
        outs.update({f"p{i}": f"p{i}", f"q{i}": f"q{i}"})
        nodes += [P.var(f"rv{i}", "x"), P.read(f"rr{i}", f"rv{i}")]
        outs[f"rr{i}"] = f"rr{i}"
    p = P.program(nodes, outs, ["x"])
    return p, {}, {"x": Tensor(2)}, [2]


def error_threads():
    """x uninitialized, y an int64 vector of 2: each of two threads reads x,
    adds a float32 Const to the Read of x (an error either way: x is
    uninitialized, or int64 beside float32), reads y after that and adds a
    3-vector (shape mismatch), writes both back (a Write of an error value
    changes nothing); a loner writes 5 to x."""
    def make(i):
        return ([P.var(f"vx{i}", "x"), P.read(f"rx{i}", f"vx{i}"),
                 P.apply(f"ax{i}", "Add", f"rx{i}", "cf"), P.var(f"wx{i}", "x"),
                 P.write(f"w{i}", f"wx{i}", f"ax{i}"),
                 P.var(f"vy{i}", "y"), P.read(f"ry{i}", f"vy{i}", f"^rx{i}"),
                 P.apply(f"ay{i}", "Add", f"ry{i}", "c3"),
                 P.var(f"wy{i}", "y"), P.write(f"u{i}", f"wy{i}", f"ay{i}")],
                {f"ax{i}": f"ax{i}", f"rx{i}": f"rx{i}", f"ay{i}": f"ay{i}"})
    p = _threads(2, make, shared=[P.const("cf", 1.0, dtype="float32"), P.const("c3", [1, 2, 3]),
                                  P.const("five", 5), P.var("wz", "x"), P.write("z", "wz", "five")],
                 variables={"x": TensorType(), "y": TensorType("int64", (2,))})
    return p, {}, {"y": Tensor([1, 1])}, [2]


def decomposed_assigns_on_vectors():
    """Two threads on a vector x: AssignAdd x [1, 2], then AssignSub x
    [1, 1] and a fetched Read; a loner AssignConcat (changes x's shape: the
    Reads and the Assigns after it see it, a shape mismatch for the Add and
    Sub) and a loner Read fetched."""
    def make(i):
        return ([P.var(f"a{i}v", "x"), P.assign(f"a{i}", "Add", f"a{i}v", "c12"),
                 P.var(f"s{i}v", "x"), P.assign(f"s{i}", "Sub", f"s{i}v", "c11", f"^a{i}"),
                 P.var(f"r{i}v", "x"), P.read(f"r{i}", f"r{i}v", f"^a{i}")],
                {f"r{i}": f"r{i}"})
    p = _threads(2, make, shared=[P.const("c12", [1, 2]), P.const("c11", [1, 1]), P.const("c0", [0]),
                                  P.var("cv", "x"), P.assign("cat", "Concat", "cv", "c0"),
                                  P.var("fv", "x"), P.read("fr", "fv")],
                 outputs={"fr": "fr"}, variables={"x": TensorType("int64", (2,))})
    return p, {}, {"x": Tensor([0, 0])}, [2]


def two_classes_and_a_loner():
    """One component: two lost-update threads on x (a class), two readers of
    x then y (a class), a loner that writes y from a Read of x."""
    nodes, outs = [P.const("one", 1)], {}
    for i in range(2):
        nodes += [P.var(f"vr{i}", "x"), P.read(f"r{i}", f"vr{i}"), P.apply(f"a{i}", "Add", f"r{i}", "one"),
                  P.var(f"vw{i}", "x"), P.write(f"w{i}", f"vw{i}", f"a{i}")]
        outs[f"o{i}"] = f"r{i}"
        nodes += [P.var(f"qx{i}", "x"), P.read(f"qa{i}", f"qx{i}"),
                  P.var(f"qy{i}", "y"), P.read(f"qb{i}", f"qy{i}", f"^qa{i}")]
        outs.update({f"qa{i}": f"qa{i}", f"qb{i}": f"qb{i}"})
    nodes += [P.var("lx", "x"), P.read("lr", "lx"), P.var("ly", "y"), P.write("lw", "ly", "lr")]
    p = P.program(nodes, outs, ["x", "y"])
    return p, {}, {"x": Tensor(0), "y": Tensor(9)}, [2, 2]


CASES = {f.__name__: f for f in (nan_payload_threads, signed_zero_threads, other_variable_copy,
                                 feed_control_and_shared_control, shared_fetches, internal_automorphism,
                                 error_threads, decomposed_assigns_on_vectors, two_classes_and_a_loner)}


@functools.lru_cache(maxsize=None)
def _case(name):
    return CASES[name]()


#: cases whose brute force takes well under a second per cell on the shared
#: machine; the others (1-40 s a cell, up to 1.5 million states) run against
#: the brute force under the nightly profile and against the reference
#: engine (itself held to the brute force in test_oracle_engine_shortcuts and
#: test_oracle_properties) by default
CHEAP = {"shared_fetches"}


@functools.lru_cache(maxsize=None)
def _truth(name, semantics, observe):
    """The brute force's set where it is run (and finishes), else the
    reference engine's."""
    p, feeds, init, _sizes = _case(name)
    if NIGHTLY or name in CHEAP:
        try:
            return frozenset(reference_outcomes(p, feeds, init, semantics, observe, max_states=1_500_000))
        except BudgetExceeded:
            pass
    return frozenset(outcome_set(p, feeds, init, semantics, observe, engine="reference"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_detection_of_the_hand_made_cases(name):
    p, _feeds, _init, sizes = _case(name)
    assert sorted(len(c) for c in _classes(p)) == sorted(sizes)


@pytest.mark.parametrize("engine", ["symmetry", "auto"])
@pytest.mark.parametrize("cell", CELLS, ids=lambda c: "/".join(c))
@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_made_cases_equal_the_brute_force_or_reference(name, cell, engine):
    p, feeds, init, _sizes = _case(name)
    truth = set(_truth(name, *cell))
    used = _check(p, feeds, init, *cell, truth, engine, random.Random(name), replay=25)
    if engine == "symmetry" and _sizes:
        assert "symmetry" in used


def test_nan_payloads_are_no_class_and_zeros_are_not_one():
    # the engine's claim rests on attribute equality implying value
    # equality: NaNs of different payloads are equal values (SPEC section
    # 2) but not equal attributes (a Bitcast of the constant tells them
    # apart: docs/semantics.md, "NaN payloads"), so such threads are no
    # class, which costs speed, never an outcome; 0.0 and -0.0 not equal
    assert f32_bits(0x7FC00001) == f32_bits(0xFFC00000)
    assert f32(0.0) != f32(-0.0)
    p, feeds, init, _ = nan_payload_threads()
    assert _classes(p) == []
    p, feeds, init, _ = signed_zero_threads()
    (cls,) = _classes(p)
    assert all("c1" not in t for t in cls)
    ds = {dict(o.outputs)["d1"] for o in _truth("signed_zero_threads", "atomic", "outputs")}
    assert f32(-np.inf) in ds and f32(np.inf) in ds       # the zeros are told apart


def test_membership_wants_the_components_output_order():
    # Outcome equality is tuple equality: the pairs in another order are not
    # a key of the component's Mapping (the reference engine's dict says the
    # same); OutcomeSet.witness looks outputs up by name and finds both
    p, feeds, init, _ = shared_fetches()
    sym = outcome_set(p, feeds, init, "atomic", "outputs+state", engine="symmetry")
    ref = outcome_set(p, feeds, init, "atomic", "outputs+state", engine="reference")
    (comp,), (rcomp,) = sym.components, ref.components
    for o in list(rcomp)[:20]:
        rev = Outcome(tuple(reversed(o.outputs)), o.state)
        assert o in comp and rev not in rcomp and rev not in comp
        with pytest.raises(KeyError):
            comp[rev]
        assert rev in sym and rev in ref
    assert Outcome((("k", [1]),), None) not in comp      # unhashable value, wrong shape: no error


# ---------------------------------------------------------------------------
# Budgets: a verdict, never a partial set


@pytest.mark.parametrize("engine", ["symmetry", "auto"])
def test_budgets_raise(engine):
    from tfsem.generators import families as F
    p, feeds, init = F.lost_update_used(7)
    with pytest.raises(BudgetExceeded) as e:
        outcome_set(p, feeds, init, max_states=40, engine=engine)
    assert e.value.which == "states"
    with pytest.raises(BudgetExceeded) as e:
        outcome_set(p, feeds, init, max_states=10**9, max_seconds=1e-9, engine=engine)
    assert e.value.which == "seconds"
    # the same component with enough budget: the full set (not a prefix)
    r = outcome_set(p, feeds, init, "atomic", "outputs+state", engine=engine)
    assert r.count == 100_136


# ---------------------------------------------------------------------------
# Generated symmetric programs, perturbed


def _sources(p: Program) -> list[str]:
    return [n.name for n in p.nodes if not any(isinstance(i, (DataIn, ControlIn)) for i in n.inputs)]


def _replicate(parts, rng):
    """Each (program, k) of `parts` replicated k times, prefixed by its
    index; all copies share the variables (so the parts share a component
    where they access one variable) and feeds; some sources shared by all
    copies of a part.  Returns (nodes, outputs, variables, feeds, copies),
    a copy being (part, shared names, its own node names), or None."""
    nodes, outputs, variables, feeds, copies = [], {}, {}, {}, []
    for pi, (p, k) in enumerate(parts):
        for x, t in p.variables.items():
            if variables.setdefault(x, t) != t:
                return None
        feeds.update(p.feeds)
        shared = {s for s in _sources(p) if rng.random() < 0.35}

        def rn(name, j, shared=shared, pre=f"p{pi}"):
            return pre + (name if name in shared else f"{name}_c{j}")
        for j in range(k):
            mine = []
            for n in p.nodes:
                if n.name in shared and j > 0:
                    continue
                ins = tuple(DataIn(rn(i.node, j), i.port) if isinstance(i, DataIn)
                            else ControlIn(rn(i.node, j)) if isinstance(i, ControlIn) else i
                            for i in n.inputs)
                nodes.append(n.replace(name=rn(n.name, j), inputs=ins))
                if n.name not in shared:
                    mine.append(rn(n.name, j))
            for o, port in p.outputs.items():
                outputs[f"p{pi}{o}_c{j}"] = DataIn(rn(port.node, j), port.port)
            copies.append((pi, {f"p{pi}{s}" for s in shared}, mine))
    return nodes, outputs, variables, feeds, copies


PERTURBATIONS = ("const", "swap", "assignfn", "fetch", "fetch_all", "control_shared",
                 "control_shared_all", "feed_control", "output_shared", "var", "feed",
                 "drop_output", "internal_control", "automorphism", "join")


def _perturb(nodes, outputs, variables, feeds, copies, rng, kind):
    """Change one copy (or, for *_all and automorphism, every copy of one
    part) by `kind`; the change made, or None where it does not apply."""
    idx = {n.name: i for i, n in enumerate(nodes)}
    pi, _shared, mine = rng.choice(copies)
    mine = list(mine)
    rng.shuffle(mine)
    shared_names = sorted({s for c in copies for s in c[1]})
    part_copies = [c[2] for c in copies if c[0] == pi and c[2]]
    if not mine:
        return None
    node = lambda a: nodes[idx[a]]                      # noqa: E731

    def put(a, n):
        nodes[idx[a]] = n
    if kind == "const":
        for a in mine:
            n = node(a)
            if n.op == "Const" and n.attrs["value"].array.size:
                v = n.attrs["value"]
                flat = np.array(v.array).reshape(-1).copy()
                if v.dtype == "float32":
                    how = rng.choice(["negzero", "nan", "plus"])
                    if how == "negzero":
                        flat[0] = -flat[0]                   # 0.0 <-> -0.0 among others
                    elif how == "nan":
                        flat.view(np.uint32)[0] = rng.choice([0x7FC00001, 0xFFC00000, 0x7F800001])
                    else:
                        flat[0] += 1
                else:
                    flat[0] += 1
                put(a, n.replace(attrs={**n.attrs, "value": Tensor(flat.reshape(v.array.shape), v.dtype)}))
                return kind
        return None
    if kind == "swap":
        for a in mine:
            n = node(a)
            if n.op not in ("Read", "Assign", "Var") and len(n.inputs) >= 2 and n.inputs[0] != n.inputs[1]:
                put(a, n.replace(inputs=(n.inputs[1], n.inputs[0], *n.inputs[2:])))
                return kind
        return None
    if kind == "assignfn":
        for a in mine:
            n = node(a)
            if n.op == "Assign":
                put(a, n.replace(attrs={**n.attrs, "fn": rng.choice(
                    [f for f in fns.assign_functions() if f != n.attrs["fn"]])}))
                return kind
        return None
    if kind in ("fetch", "fetch_all"):
        pos = rng.randrange(1000)
        for own in ([mine] if kind == "fetch" else part_copies):
            a = sorted(own)[pos % len(own)]
            n = node(a)
            if n.op == "Var":
                return None
            n_out = 1 if n.op in ("Read", "Assign", "Const") else fns.get(n.op).n_out
            outputs[f"extra{rng.randrange(10**6)}_{a}"] = DataIn(a, pos % n_out)
        return kind
    if kind in ("control_shared", "control_shared_all"):
        if not shared_names:
            return None
        s = rng.choice(shared_names)
        pos = rng.randrange(1000)
        for own in ([mine] if kind == "control_shared" else part_copies):
            a = sorted(own)[pos % len(own)]
            put(a, node(a).replace(inputs=(*node(a).inputs, ControlIn(s))))
        return kind
    if kind == "feed_control":
        put(mine[0], node(mine[0]).replace(inputs=(*node(mine[0]).inputs, FeedControlIn(rng.choice("gh")))))
        return kind
    if kind == "output_shared":
        cands = [s for s in shared_names if node(s).op != "Var"]
        if not cands:
            return None
        outputs[f"sh{rng.randrange(10**6)}"] = DataIn(rng.choice(cands), 0)
        return kind
    if kind == "var":
        for a in mine:
            n = node(a)
            if n.op == "Var":
                t = variables[n.var]
                other = [x for x, tt in variables.items() if tt == t and x != n.var]
                if not other:
                    other = [f"y{len(variables)}"]
                    variables[other[0]] = t
                put(a, n.replace(attrs={**n.attrs, "var": rng.choice(other)}))
                return kind
        return None
    if kind == "feed":
        for a in mine:
            n = node(a)
            old = next((i.name for i in n.inputs if isinstance(i, FeedIn)), None)
            if old is not None:
                feeds[old + "_alt"] = feeds.get(old, TensorType())
                put(a, n.replace(inputs=tuple(FeedIn(old + "_alt") if isinstance(i, FeedIn) else i
                                              for i in n.inputs)))
                return kind
        return None
    if kind == "drop_output":
        own = set(mine)
        cands = [o for o, port in outputs.items() if port.node in own]
        if not cands:
            return None
        del outputs[rng.choice(cands)]
        return kind
    if kind == "internal_control":
        order = [n.name for n in nodes if n.name in set(mine)]
        if len(order) < 2:
            return None
        a, b = sorted(rng.sample(range(len(order)), 2))
        put(order[b], node(order[b]).replace(inputs=(*node(order[b]).inputs, ControlIn(order[a]))))
        return kind
    if kind == "automorphism":                       # two equal fetched nodes of one node, every copy
        pos = rng.randrange(1000)
        op = rng.choice(["Identity", "Neg"])
        for own in part_copies:
            a = sorted(own)[pos % len(own)]
            if node(a).op in ("Var", "Assign"):
                return None
            for q in range(2):
                nodes.append(P.apply(f"am{q}_{a}", op, a))
                outputs[f"o_am{q}_{a}"] = DataIn(f"am{q}_{a}", 0)
        return kind
    if kind == "join":                               # one node joining two copies
        others = [c[2] for c in copies if c[2] and c[2] is not copies and set(c[2]) != set(mine)]
        if not others:
            return None
        b = rng.choice(rng.choice(others))
        a = mine[0]
        if node(a).op == "Var" or node(b).op == "Var":
            return None
        nodes.append(P.apply(f"join_{a}", "Identity", a, f"^{b}"))
        outputs[f"o_join_{a}"] = DataIn(f"join_{a}", 0)
        return kind
    raise ValueError(kind)


RESTRICTED_OPS = ["Read", "Write", "Assign", "Add", "Sub", "Mul", "Neg", "Max", "Const", "Concat", "Identity"]


def _generated_program(seed: int):
    """(program, perturbations done, its rng, the program before the
    perturbations or None) or None where the draw is not a valid program."""
    rng = random.Random(f"review4:{seed}")
    parts = []
    for q in range(rng.choice([1, 1, 1, 2])):
        opts = {"max_nodes": rng.choice([3, 4, 5, 6, 7]), "dtype": rng.choice(["int64", "float32"]),
                "n_variables": rng.choice([1, 1, 2])}
        if rng.random() < 0.35:
            opts["ops"] = RESTRICTED_OPS
        p = random_programs(1, seed * 10 + q, **opts)[0]
        parts.append((p, rng.choice([2, 2, 2, 3, 3, 4] if q == 0 else [1, 2, 2, 3])))
    built = _replicate(parts, rng)
    if built is None:
        return None
    nodes, outputs, variables, feeds, copies = built
    try:
        base = Program(dict(variables), tuple(nodes), dict(outputs), dict(feeds)).validated()
    except ProgramError:
        base = None
    done = []
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        d = _perturb(nodes, outputs, variables, feeds, copies, rng, rng.choice(PERTURBATIONS))
        if d:
            done.append(d)
    try:
        return Program(variables, tuple(nodes), outputs, feeds).validated(), done, rng, base
    except ProgramError:
        return None


def _scale() -> int:
    return 10 if NIGHTLY else 1


@pytest.mark.parametrize("block", range(2 if NIGHTLY else 1))   # ~14 s a block
def test_generated_perturbed_symmetric_programs_agree_with_the_reference(monkeypatch, block):
    # incremental keys are recomputed from scratch and compared at every state
    monkeypatch.setattr(_SymComponent, "CHECK_INCREMENTAL", True)
    count = 60 * _scale()
    compared = symmetric = crossed = 0
    per_cell = {c: 0 for c in CELLS}
    kinds = set()
    for s in range(count):
        seed = 1000 + block * 100_000 + s
        g = _generated_program(seed)
        if g is None:
            continue
        p, done, rng, base = g
        kinds.update(done)
        feeds, init = random_inputs(p, seed, uninitialized_p=0.15, edge_p=0.3)
        cells = CELLS if NIGHTLY else [CELLS[s % 4]]
        for cell in cells:
            try:
                ref = outcome_set(p, feeds, init, *cell, engine="reference", max_states=20_000,
                                  max_seconds=10)
            except BudgetExceeded:
                continue
            engine = "auto" if s % 3 == 0 else "symmetry"
            used = _check(p, feeds, init, *cell, set(ref), engine, rng, replay=4)
            compared += 1
            per_cell[cell] += 1
            symmetric += "symmetry" in used
            if base is not None and done and set(base.outputs) == set(p.outputs):
                crossed += _cross_membership(base, p, ref, feeds, init, cell, engine)
    assert compared >= 0.6 * count * (4 if NIGHTLY else 1)
    assert all(v > 0 for v in per_cell.values())
    assert symmetric >= 0.3 * compared                     # the engine is really exercised
    assert len(kinds) >= (len(PERTURBATIONS) - 3 if NIGHTLY else 8)
    assert crossed >= 0.1 * compared


def _cross_membership(base, p, ref_p, feeds, init, cell, engine) -> int:
    """The perturbed program's outcomes asked of the unperturbed program's
    set (near misses, as the checker asks a rewritten program's outcomes of
    the original's): the engine answers as the reference engine does, as an
    OutcomeSet and, with one component, as the component's Mapping."""
    try:
        ref = outcome_set(base, feeds, init, *cell, engine="reference", max_states=20_000, max_seconds=10)
    except BudgetExceeded:
        return 0
    got = outcome_set(base, feeds, init, *cell, engine=engine, max_states=80_000, max_seconds=20)
    one = len(got.components) == 1 and isinstance(got.components[0], SymmetricOutcomes)
    for o in ref_p:
        assert (o in got) == (o in ref), o
        if one:
            assert (o in got.components[0]) == (o in ref.components[0]), o
    return 1
