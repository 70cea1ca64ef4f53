"""The built-in passes on generated programs.

For every pass: it produces a valid program with the original's interface,
never mutates its input, and is deterministic.  For every cell it claims
`sound`: the oracle finds no σ at which the rewrite has an outcome that the
original lacks (SPEC section 3).

Programs come from the project's generator (`tfsem.generators.strategies`)
when it is there, and always also from the motif generator below, which
builds the shapes the passes look for (Read -> f -> Write increments,
duplicated nodes, constant chains, control edges) far more often than a
uniform generator does.  Default runs are small; the `nightly` Hypothesis
profile (registered in conftest.py) runs many more examples.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.program import ASSIGN, Node, Program, TensorType, validate
from tfsem.oracle.values import Tensor
from tfsem.rewrites import BUILTINS, SOUND

try:  # the project's generator (issue "generators"), once it exists
    from tfsem.generators import strategies as _project
except ImportError:  # pragma: no cover - depends on the state of the repository
    _project = None

VARIABLES = ("x", "y")
FEEDS = ("a", "b")
ASSIGN_FNS = ("Snd", "Add", "Sub", "Max")
BINARY = ("Add", "Sub", "Mul", "Max")
UNARY = ("Neg", "Identity")
SMALL = st.integers(-2, 3)


# ---------------------------------------------------------------------------
# The motif generator: nodes are drawn one at a time, each choosing its inputs
# among the nodes already drawn, so every program is acyclic and valid.


@st.composite
def motif_programs(draw, max_steps: int = 6) -> Program:
    nodes: list[Node] = []
    tensors: list[str] = []            # "n" / "n:k" tensor ports
    var_nodes: dict[str, list[str]] = {x: [] for x in VARIABLES}
    counter = [0]

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def controls(k: int = 1) -> list[str]:
        if not nodes or not draw(st.booleans()):
            return []
        picks = draw(st.lists(st.sampled_from([n.name for n in nodes]), min_size=1, max_size=k,
                              unique=True))
        return [f"^{p}" for p in picks]

    def handle(x: str) -> str:
        if var_nodes[x] and draw(st.booleans()):
            return draw(st.sampled_from(var_nodes[x]))
        v = name("v")
        nodes.append(P.var(v, x, *controls()))
        var_nodes[x].append(v)
        return v

    def tensor() -> str:
        options = ["feed", "const"] + (["port"] * 2 if tensors else [])
        kind = draw(st.sampled_from(options))
        if kind == "feed":
            return "$" + draw(st.sampled_from(FEEDS))
        if kind == "const":
            c = name("c")
            nodes.append(P.const(c, draw(SMALL), *controls()))
            tensors.append(c)
            return c
        return draw(st.sampled_from(tensors))

    def add(node: Node, ports: int = 1) -> None:
        nodes.append(node)
        tensors.extend([node.name] + [f"{node.name}:{k}" for k in range(1, ports)])

    steps = draw(st.integers(1, max_steps))
    for _ in range(steps):
        motif = draw(st.sampled_from(["read", "assign", "binary", "unary", "copy", "const",
                                      "increment", "increment", "duplicate", "duplicate",
                                      "folding"]))
        x = draw(st.sampled_from(VARIABLES))
        if motif == "read":
            h = handle(x)
            add(P.read(name("r"), h, *controls(2)))
        elif motif == "assign":
            h = handle(x)
            v = tensor()
            nodes.append(P.assign(name("a"), draw(st.sampled_from(ASSIGN_FNS)), h, v, *controls(2)))
        elif motif == "binary":
            add(P.apply(name("f"), draw(st.sampled_from(BINARY)), tensor(), tensor(), *controls()))
        elif motif == "unary":
            add(P.apply(name("g"), draw(st.sampled_from(UNARY)), tensor(), *controls()))
        elif motif == "copy":
            add(P.apply(name("cp"), "Copy", tensor(), *controls()), ports=2)
        elif motif == "const":
            c = name("c")
            add(P.const(c, draw(SMALL), *controls()))
        elif motif == "folding":
            # a function of constants (what const-fold evaluates)
            c1, c2 = name("c"), name("c")
            nodes += [P.const(c1, draw(SMALL), *controls()), P.const(c2, draw(SMALL))]
            add(P.apply(name("k"), draw(st.sampled_from(BINARY)), c1, c2, *controls()))
        elif motif == "increment":
            # Read -> f -> Write of one variable (what fuse-assign fuses)
            r = name("r")
            nodes.append(P.read(r, handle(x), *controls()))
            f = name("f")
            nodes.append(P.apply(f, draw(st.sampled_from(("Add", "Sub", "Max"))), r, tensor()))
            nodes.append(P.write(name("w"), handle(x), f, *controls()))
            if not draw(st.integers(0, 3)):
                tensors.append(r)     # sometimes the read is used elsewhere too
        elif motif == "duplicate" and nodes:
            # a copy of an earlier node (what the CSE passes merge)
            src = draw(st.sampled_from(nodes))
            dup = Node(name("d"), src.op, src.inputs, dict(src.attrs))
            if src.op not in (ASSIGN, "Var") and draw(st.booleans()):
                dup = dup.replace(inputs=src.inputs + tuple(P.parse_input(c) for c in controls()))
            nodes.append(dup)
            if dup.op not in (ASSIGN, "Var"):
                tensors.extend([dup.name] + [f"{dup.name}:{k}" for k in range(1, dup.n_outputs())])
    outputs = {}
    if tensors:
        for i, port in enumerate(draw(st.lists(st.sampled_from(tensors), max_size=2, unique=True))):
            outputs[f"o{i}"] = port
    return P.program(nodes, outputs, list(VARIABLES))


@st.composite
def motif_inputs(draw, p: Program):
    feeds = {f: Tensor(draw(SMALL)) for f in p.feed_names}
    init = {}
    for x in p.variables:
        if draw(st.integers(0, 4)):          # mostly initialized
            init[x] = Tensor(draw(SMALL))
    return feeds, init


if _project is not None:
    PROGRAMS = st.one_of(motif_programs(), motif_programs(), _project.programs(max_nodes=9),
                         _project.programs(max_nodes=9, dtype="float32"))
else:  # pragma: no cover
    PROGRAMS = motif_programs()


@st.composite
def program_and_inputs(draw):
    p = draw(PROGRAMS)
    scalar_ints = all(p.feed_type(f) == TensorType() for f in p.feed_names) and \
        all(t == TensorType() for t in p.variables.values())
    if _project is not None and (not scalar_ints or draw(st.booleans())):
        feeds, init = draw(_project.inputs_for(p))
    else:
        feeds, init = draw(motif_inputs(p))
    return p, feeds, init


def examples(base: int) -> int:
    """`base` examples under the default profile (100 examples), scaled up
    with the active profile's max_examples (the `nightly` profile)."""
    return max(base, base * settings.default.max_examples // 100)


COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])
PASS_NAMES = list(BUILTINS)


# ---------------------------------------------------------------------------
# Well-formedness, purity and determinism


@pytest.mark.parametrize("name", PASS_NAMES)
@settings(max_examples=examples(25), **COMMON)
@given(p=PROGRAMS)
def test_pass_output_is_valid_with_same_interface(name, p):
    before = program_to_json(p)
    q = BUILTINS[name](p)
    assert validate(q) == [], f"{name} produced an invalid program"
    assert dict(q.variables) == dict(p.variables)
    assert set(q.outputs) == set(p.outputs)
    assert set(q.feed_names) == set(p.feed_names)
    assert program_to_json(p) == before, f"{name} mutated its input"
    again = BUILTINS[name](p)
    assert program_to_json(again) == program_to_json(q), f"{name} is not deterministic"


# ---------------------------------------------------------------------------
# Sound claims: no outcome of the rewrite outside the original's


def _new_outcomes(p, q, feeds, init, semantics, observe):
    try:
        original = outcome_set(p, feeds, init, semantics, observe, max_states=20_000, max_seconds=5)
        rewritten = outcome_set(q, feeds, init, semantics, observe, max_states=20_000, max_seconds=5)
    except BudgetExceeded:
        return None
    return [(o, w) for o, w in rewritten.items() if o not in original]


def check_sound_cells(name, p, feeds, init):
    rewrite = BUILTINS[name]
    q = rewrite(p)
    for semantics, observe in rewrite.cells(SOUND):
        new = _new_outcomes(p, q, feeds, init, semantics, observe)
        assert not new, (
            f"{name} claims sound for ({semantics}, {observe}) but the rewrite has outcome "
            f"{new[0][0].describe()} (schedule {' '.join(new[0][1])}) that the original lacks\n"
            f"feeds={feeds} init={init}\noriginal={program_to_json(p)}\nrewritten={program_to_json(q)}")


SOUND_SOMEWHERE = [n for n in PASS_NAMES if BUILTINS[n].cells(SOUND)]


@pytest.mark.parametrize("name", SOUND_SOMEWHERE)
@settings(max_examples=examples(30), **COMMON)
@given(case=program_and_inputs())
def test_sound_claims_hold_on_generated_programs(name, case):
    check_sound_cells(name, *case)
