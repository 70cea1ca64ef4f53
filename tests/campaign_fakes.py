"""Test doubles for the campaign tests: tiny passes with known faults, a small
program strategy, and stub checkers.

The passes are given to campaigns as `campaign_fakes:NAME` (this folder is on
sys.path under pytest; subprocesses get it through PYTHONPATH), exactly as a
user gives `module:attribute`.
"""

from __future__ import annotations

import os
import time

from hypothesis import strategies as st

from tfsem.oracle import program as P
from tfsem.oracle.program import ASSIGN, READ, ControlIn, DataIn, Program
from tfsem.oracle.values import Tensor
from tfsem.rewrites import Pass


# ---------------------------------------------------------------------------
# Passes


def FakePass(name, fn, claims=None):
    """A pass of the pass API with the given claims."""
    doc = fn.__doc__ or name
    return Pass(name=name, description=doc.strip().splitlines()[0], claims=claims or {}, doc=doc,
                function=fn, origin="tests/campaign_fakes.py")


def _identity(p: Program) -> Program:
    """Returns its input unchanged."""
    return p


def _drop_assigns(p: Program) -> Program:
    """Deletes every Assign (and the control edges from it): unsound whenever
    a write changes the observed state, sound when only outputs are observed
    and no Read depends on a write."""
    gone = {n.name for n in p.nodes if n.op == ASSIGN}
    nodes = [n.replace(inputs=tuple(i for i in n.inputs
                                    if not (isinstance(i, ControlIn) and i.node in gone)))
             for n in p.nodes if n.name not in gone]
    return p.replace(nodes=tuple(nodes))


def _crash_on_add(p: Program) -> Program:
    """Raises ZeroDivisionError on any program with an Add node."""
    if any(n.op == "Add" for n in p.nodes):
        return 1 // 0  # type: ignore[return-value]
    return p


def _hang_on_assign(p: Program) -> Program:
    """Never returns on a program with an Assign."""
    if any(n.op == ASSIGN for n in p.nodes):
        while True:
            time.sleep(0.05)
    return p


def _die_on_read(p: Program) -> Program:
    """Kills its own process on a program with a Read."""
    if any(n.op == READ for n in p.nodes):
        os._exit(7)
    return p


def _dangling_on_read(p: Program) -> Program:
    """Returns a malformed program (an input from a missing node) when there
    is a Read."""
    if not any(n.op == READ for n in p.nodes):
        return p
    first = next(n for n in p.nodes if n.op == READ)
    broken = first.replace(inputs=(DataIn("no-such-node"),))
    return p.replace(nodes=tuple(broken if n.name == first.name else n for n in p.nodes))


def _chatty_identity(p: Program) -> Program:
    """Prints to stdout and stderr, then returns its input."""
    print("hello from the pass", flush=True)
    print("and to stderr", file=__import__("sys").stderr, flush=True)
    return p


def _toggled(p: Program) -> Program:
    """drop_assigns, unless TFSEM_FAKE_FIXED is set (then the identity): a
    pass whose bug gets fixed between two campaigns."""
    return p if os.environ.get("TFSEM_FAKE_FIXED") else _drop_assigns(p)


def _not_a_program(p: Program):
    """Returns a dict instead of a program."""
    return {"nodes": []}


identity = FakePass("fake-identity", _identity,
                    {(s, o): "sound" for s in ("atomic", "decomposed")
                     for o in ("outputs+state", "outputs")})
drop_assigns = FakePass("fake-drop-assigns", _drop_assigns,
                        {("atomic", "outputs+state"): "unsound",
                         ("decomposed", "outputs+state"): "unsound",
                         ("atomic", "outputs"): "unsound",
                         ("decomposed", "outputs"): "unsound"})
#: Claims sound everywhere, which is false where state is observed.
drop_assigns_claims_sound = FakePass("fake-drop-assigns-claims-sound", _drop_assigns,
                                     {(s, o): "sound" for s in ("atomic", "decomposed")
                                      for o in ("outputs+state", "outputs")})
crash_on_add = FakePass("fake-crash-on-add", _crash_on_add)
hang_on_assign = FakePass("fake-hang-on-assign", _hang_on_assign)
die_on_read = FakePass("fake-die-on-read", _die_on_read)
dangling_on_read = FakePass("fake-dangling-on-read", _dangling_on_read)
#: Claims unsound everywhere, which no fuzzing can confirm.
identity_claims_unsound = FakePass("fake-identity-claims-unsound", _identity,
                                   {(s, o): "unsound" for s in ("atomic", "decomposed")
                                    for o in ("outputs+state", "outputs")})
chatty_identity = FakePass("fake-chatty", _chatty_identity)
toggled = FakePass("fake-toggled", _toggled)
not_a_program = _not_a_program
plain_function = _drop_assigns  # a bare function: no name, no claims


# ---------------------------------------------------------------------------
# Programs: a small strategy in the generators' shape ((program, feeds, init))


@st.composite
def small_programs_and_inputs(draw, max_nodes: int = 8):
    """Small valid programs over one or two variables: Consts, feeds, Reads,
    Writes, AssignAdds and Adds, with optional control edges; plus σ.

    Built bottom-up so that deleting a step shrinks cleanly."""
    n_vars = draw(st.integers(1, 2))
    variables = [f"v{i}" for i in range(n_vars)]
    nodes: list = []
    tensors: list[str] = []
    names = iter(f"k{i}" for i in range(1000))
    outputs: dict[str, str] = {}
    feeds: set[str] = set()
    steps = draw(st.lists(st.sampled_from(["const", "feed", "read", "write", "addassign", "add"]),
                          min_size=1, max_size=max(1, max_nodes // 2)))
    for step in steps:
        if len(nodes) >= max_nodes:
            break
        ctl = ()
        if nodes and draw(st.booleans()):
            ctl = ("^" + draw(st.sampled_from([n.name for n in nodes])),)
        if step == "const":
            name = next(names)
            nodes.append(P.const(name, draw(st.integers(-2, 3)), *ctl))
            tensors.append(name)
        elif step == "feed":
            tensors.append("$" + draw(st.sampled_from(["a", "b"])))
            feeds.add(tensors[-1][1:])
        elif step == "read":
            x = draw(st.sampled_from(variables))
            h, r = next(names), next(names)
            nodes += [P.var(h, x), P.read(r, h, *ctl)]
            tensors.append(r)
            outputs[f"out{len(outputs)}"] = r
        elif step in ("write", "addassign") and tensors:
            x = draw(st.sampled_from(variables))
            value = draw(st.sampled_from(tensors))
            h, w = next(names), next(names)
            nodes.append(P.var(h, x))
            if step == "write":
                nodes.append(P.write(w, h, value, *ctl))
            else:
                nodes.append(P.assign(w, "Add", h, value, *ctl))
        elif step == "add" and tensors:
            a, b = draw(st.sampled_from(tensors)), draw(st.sampled_from(tensors))
            name = next(names)
            nodes.append(P.apply(name, "Add", a, b, *ctl))
            tensors.append(name)
    if not nodes:
        nodes.append(P.const("k0", 0))
    program = P.program(nodes, outputs, variables)
    small = st.integers(-3, 3).map(Tensor)
    feed_values = {f: draw(small) for f in sorted(feeds)}
    init = {x: draw(small) for x in variables if draw(st.booleans())}
    return program, feed_values, init


def small_generator(max_nodes: int = 8, observe: str = "outputs+state"):
    """The `--generator` form: (max_nodes, observe) -> strategy of (program, feeds, init)."""
    return small_programs_and_inputs(max_nodes=max_nodes)


# ---------------------------------------------------------------------------
# Checkers


def stub_checker_by_size(original, rewritten, semantics, observe, timeout):
    """Says unsound (on the first variable) when the rewrite has fewer nodes,
    sound otherwise; a stand-in that needs no oracle."""
    if len(rewritten.nodes) < len(original.nodes):
        x = sorted(original.variables)[0] if original.variables else None
        return {"verdict": "unsound", "differs": {"variable": x} if x else {"output": "?"},
                "counterexample": {"feeds": {}, "init": {}, "schedule": [], "outcome": {},
                                   "original_outcomes": []}}
    return {"verdict": "sound"}


def stub_checker_unknown(original, rewritten, semantics, observe, timeout):
    return {"verdict": "unknown", "reason": "stub"}


class ReturnsProgram:
    """A pass runner (the sandbox's interface: rewrite, close) whose rewrite
    of any program is the one program given (a JSON program), for judging a
    fixed pair through a campaign's loop."""

    def __init__(self, program):
        self.program = program

    def rewrite(self, program_json):
        from tfsem.campaigns.sandbox import OK, RewriteResult
        return RewriteResult(OK, program=self.program)

    def close(self):
        pass
