"""The control-flow engine's function steps (oracle/controlflow.py
`Machine.apply_function`): each node's function, Identity flag and
attribute key found once and kept from run to run while the registry gives
the same functions (`_node_function`, `initial`), the inputs' key made
inline.  Against the transcription (`Machine._applied_key`, the key the
engine used before) and against the function itself:

- on every application of generated programs with conditionals and loops,
  both modes, several σ in a row on one Machine (so that later σ find
  remembered applications): the answer is the function's own, bit for bit;
  a remembered answer is the entry under the transcription's key; a new
  one is stored under that key;
- the outcomes of those programs, with remembered applications and
  without any (`remember_functions` off): the same;
- a function registered again between two runs, or put in the registry
  by hand (no version moves), is applied, not answered by its
  predecessor's entry; with nothing changed the node's entry is kept.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.control_flow import control_flow_programs
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

from controlflow_support import registry_restored

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
SOME = settings(max_examples=200 if NIGHTLY else 15, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
BOUND = 6


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Nothing remembered between tests (no outcome set, no function
    result, no Machine)."""
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    # (a function a test registers, ReviewApplicationsBump, leaves with it:
    # a campaign's sandboxed pass in a later test met a program of it)
    cf._APPLIED.clear()
    with registry_restored():
        yield
    cf._APPLIED.clear()


def _bits(v):
    return (v.dtype, v.array.shape, v.array.tobytes()) if type(v) is Tensor else v


def _run(p, feeds, init, mode):
    try:
        return cf.outcomes(p, feeds, init, mode, "outputs+state", 20_000, None, BOUND)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame)
    except (BudgetExceeded, fns.CannotRun) as exc:
        return (type(exc).__name__, str(exc))


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_every_application_is_the_functions_and_keyed_as_the_transcription(p, mode, data):
    cf._machines.cache = {}
    cf._APPLIED.clear()
    real = cf.Machine.apply_function
    counts = {"remembered": 0, "stored": 0}

    def checked(self, n, args):
        fn = fns.get(n.op)
        key = self._applied_key(n, fn, list(args))   # (the transcription's key)
        before = cf._APPLIED.get(key) if key is not None else None
        got = real(self, n, args)
        want = fn._apply(list(args), n.attrs, fns.np)
        assert [_bits(v) for v in got] == [_bits(v) for v in want], n.name
        if n.op == "Identity":
            return got
        if before is not None and before[0] is fn:
            counts["remembered"] += 1
            assert all(a is b for a, b in zip(got, before[1]))
        elif key is not None:
            # (a new application is stored under the transcription's key:
            # the generated programs' tensors are far below the entry's
            # limit of bytes, and their entries below the memo's count)
            after = cf._APPLIED.get(key)
            assert after is not None and after[0] is fn, n.name
            counts["stored"] += 1
            assert all(a is b for a, b in zip(got, after[1]))
        return got

    cf.Machine.apply_function = checked
    try:
        for _ in range(4):
            feeds, init = data.draw(inputs_for(p))
            _run(p, feeds, init, mode)
            _run(p, feeds, init, mode)     # (the same σ again: remembered applications)
    finally:
        cf.Machine.apply_function = real
    # (not vacuous: the second run at each σ finds what the first stored)
    assert counts["stored"] == 0 or counts["remembered"] > 0


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_outcomes_with_remembered_applications_are_those_without(p, mode, data):
    sigmas = [data.draw(inputs_for(p)) for _ in range(3)]
    cf._machines.cache = {}
    cf._APPLIED.clear()
    remembered = [_run(p, f, i, mode) for f, i in sigmas + sigmas]
    cf._machines.cache = {}
    m = cf.machine_for(p, mode, BOUND)
    m.remember_functions = False
    try:
        applied = [_run(p, f, i, mode) for f, i in sigmas + sigmas]
    finally:
        m.remember_functions = True
    assert remembered == applied


def test_a_function_registered_again_between_runs_is_applied():
    """The table of node functions is made again in each run: on the same
    Machine, with the old function's entry still remembered, the new
    function's answer."""
    def bump(k):
        return fns.Function("ReviewApplicationsBump", 1, 1, lambda xp, args, attrs: (args[0] + k,))
    fns.register(bump(1), replace=True)
    p = program_from_json({"format": "tfsem.program/1", "variables": [],
                           "feeds": {"a": {"dtype": "int32", "shape": []},
                                     "t": {"dtype": "bool", "shape": []}},
                           "nodes": [{"name": "sw", "op": "Switch", "inputs": ["$a", "$t"]},
                                     {"name": "f", "op": "ReviewApplicationsBump",
                                      "inputs": ["sw:1"]}],
                           "outputs": {"f": "f"}})
    sigma = {"a": Tensor(1, "int32"), "t": Tensor(True, "bool")}
    m = cf.machine_for(p, "atomic", BOUND)
    for k in (1, 2, 5):
        if k > 1:
            fns.register(bump(k), replace=True)
        got = _run(p, sigma, {}, "atomic")
        assert cf.machine_for(p, "atomic", BOUND) is m
        assert [dict(o.outputs)["f"] for o in got[0]] == [Tensor(1 + k, "int32")]


def _bump_program():
    return program_from_json({"format": "tfsem.program/1", "variables": [],
                              "feeds": {"a": {"dtype": "int32", "shape": []},
                                        "t": {"dtype": "bool", "shape": []}},
                              "nodes": [{"name": "sw", "op": "Switch", "inputs": ["$a", "$t"]},
                                        {"name": "f", "op": "ReviewApplicationsBump",
                                         "inputs": ["sw:1"]}],
                              "outputs": {"f": "f"}})


def test_a_function_put_in_the_registry_by_hand_between_runs_is_applied():
    """The table of node functions is kept from run to run on one Machine
    (`initial`) only while the registry gives every op the very function
    it gave: an entry replaced by hand, which moves no registry version,
    and a σ whose applications were remembered under the old function,
    give the new function's answer; the outcomes and every application
    as with no table kept (remember_outcomes off, fresh Machines)."""
    def bump(k):
        return fns.Function("ReviewApplicationsBump", 1, 1, lambda xp, args, attrs: (args[0] + k,))
    fns.register(bump(1), replace=True)
    p = _bump_program()
    sigma = {"a": Tensor(1, "int32"), "t": Tensor(True, "bool")}
    m = cf.machine_for(p, "atomic", BOUND)
    version = fns.version
    for k in (1, 2, 7):
        if k > 1:
            fns._REGISTRY["ReviewApplicationsBump"] = bump(k)   # (no version moves)
        got = _run(p, sigma, {}, "atomic")
        assert cf.machine_for(p, "atomic", BOUND) is m
        assert fns.version == version
        assert [dict(o.outputs)["f"] for o in got[0]] == [Tensor(1 + k, "int32")]
        assert m._fn["f"][0] is fns.get("ReviewApplicationsBump")


def test_the_node_table_is_kept_between_runs_while_nothing_changed():
    """Not vacuous: with the registry unchanged, a second run on the same
    Machine finds the node's entry of the first run (the very tuple), and
    turning `remember_functions` off on the Machine makes it again (its
    attributes' key is then None)."""
    p = _bump_program() if "ReviewApplicationsBump" in fns._REGISTRY else None
    if p is None:
        fns.register(fns.Function("ReviewApplicationsBump", 1, 1,
                                  lambda xp, args, attrs: (args[0] + 1,)))
        p = _bump_program()
    sigma = {"a": Tensor(3, "int32"), "t": Tensor(True, "bool")}
    m = cf.machine_for(p, "atomic", BOUND)
    _run(p, sigma, {}, "atomic")
    first = m._fn["f"]
    _run(p, {"a": Tensor(4, "int32"), "t": Tensor(True, "bool")}, {}, "atomic")
    assert m._fn["f"] is first
    m.remember_functions = False
    try:
        got = _run(p, sigma, {}, "atomic")
        assert m._fn["f"] is not first and m._fn["f"][2] is None
        assert [dict(o.outputs)["f"] for o in got[0]] == [Tensor(4, "int32")]
    finally:
        m.remember_functions = True


def test_node_keys_are_equal_exactly_when_op_function_and_attributes_are():
    """`_node_key` (the node's part of an application's key, a frozenset
    that keeps its hash) equates exactly the (op, function, attributes)
    the key named before: other attribute bits, another op or another
    function object make another key; equal ones made apart are equal."""
    import numpy as np
    add, mul = fns.get("Add"), fns.get("Mul")
    attrs = [cf._exact_key(a) for a in (
        {}, {"T": "float32"}, {"T": "float64"}, {"value": np.float32(0.0)},
        {"value": np.float32(-0.0)}, {"value": np.array([1, 2], np.int32)},
        {"value": np.array([[1, 2]], np.int32)}, {"value": np.array([1, 2], np.int64)},
        {"x": 1.0}, {"x": 1}, {"x": True})]
    parts = [(op, fn, a) for op in ("Add", "Mul") for fn in (add, mul) for a in attrs]
    for x in parts:
        for y in parts:
            same = x[0] == y[0] and x[1] is y[1] and x[2] == y[2]
            kx, ky = cf._node_key(*x), cf._node_key(*y)
            assert (kx == ky) == same and (hash(kx) == hash(ky) or not same)
            assert ({kx: 1}.get(ky) == 1) == same


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.data())
def test_kept_argument_keys_are_the_tensors_bits(p, data):
    """`_ARG_KEYS`: each kept key is its tensor's key by its bits, each
    tensor a result of an entry of `_APPLIED` where it is kept with it, and
    the arguments a run finds there are keyed as `_applied_key` keys them
    (the first test); emptied with `_APPLIED` when that is full."""
    cf._machines.cache = {}
    cf._APPLIED.clear()
    cf._ARG_KEYS.clear()
    for _ in range(3):
        feeds, init = data.draw(inputs_for(p))
        _run(p, feeds, init, "atomic")
    results = {id(r) for entry in cf._APPLIED.values() for r in entry[1]}
    for ident, (t, key, size) in cf._ARG_KEYS.items():
        assert ident == id(t) and ident in results
        assert key == cf._arg_key(*cf._value_key(t)) and size == t.array.nbytes


def test_argument_keys_are_emptied_with_the_applications(monkeypatch):
    """A full `_APPLIED` is emptied with `_ARG_KEYS` (whose tensors its
    entries keep), and `_ARG_KEYS` alone full empties both."""
    monkeypatch.setattr(cf, "_APPLIED_MAX", 3)
    cf._APPLIED.clear()
    cf._ARG_KEYS.clear()
    p = program_from_json({"format": "tfsem.program/1", "variables": [],
                           "feeds": {"a": {"dtype": "int32", "shape": []},
                                     "t": {"dtype": "bool", "shape": []}},
                           "nodes": [{"name": "sw", "op": "Switch", "inputs": ["$a", "$t"]},
                                     {"name": "f", "op": "Neg", "inputs": ["sw:1"]},
                                     {"name": "g", "op": "Neg", "inputs": ["f"]}],
                           "outputs": {"g": "g"}})
    sizes = []
    for a in range(6):
        _run(p, {"a": Tensor(a, "int32"), "t": Tensor(True, "bool")}, {}, "atomic")
        sizes.append((len(cf._APPLIED), len(cf._ARG_KEYS)))
        assert len(cf._APPLIED) <= 3 and len(cf._ARG_KEYS) <= 3
    assert any(n < m for (n, _), (m, _) in zip(sizes[1:], sizes))   # (emptied, not vacuous)
