"""The control-flow engine's Identity steps (oracle/controlflow.py
`Machine.apply_function`: the registry's own Identity gives its argument
without being keyed and looked up), each answer against the engine with
that shortcut off (every Identity applied as any function is): the same
outcomes, witness schedules and count of states, or the same exception.

- generated programs with conditionals and loops (an Identity in every
  loop body and branch), both modes, several σ in a row;
- an Identity of an error value (a Read of an uninitialized variable), of
  a TensorList (the body of a loop with a TensorArray), and of a tensor
  past the element limit (the long way, which fails as before);
- a registry Identity replaced by another function is applied, not
  short-cut.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.control_flow import control_flow_programs
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
SOME = settings(max_examples=200 if NIGHTLY else 15, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
BOUND = 6


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Nothing remembered (no outcome set, no function result, no Machine);
    a count of the Identity steps the shortcut answered."""
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    cf._APPLIED.clear()
    counts = {"short": 0}
    real = cf.Machine.apply_function

    def counted(self, n, data):
        if cf._IDENTITY_IMPL is not None and n.op == "Identity":
            counts["short"] += 1
        return real(self, n, data)
    monkeypatch.setattr(cf.Machine, "apply_function", counted)
    yield counts
    cf._APPLIED.clear()


def _answer(p, feeds, init, mode, short: bool):
    old = cf._IDENTITY_IMPL
    if not short:
        cf._IDENTITY_IMPL = None     # (no function's implementation: never taken)
    cf._machines.cache = {}
    cf._APPLIED.clear()
    try:
        return cf.outcomes(p, feeds, init, mode, "outputs+state", 20_000, None, BOUND)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame)
    except (BudgetExceeded, fns.CannotRun) as exc:
        return (type(exc).__name__, str(exc))
    finally:
        cf._IDENTITY_IMPL = old


def _same(p, feeds, init, mode="atomic"):
    got = _answer(p, feeds, init, mode, True)
    assert got == _answer(p, feeds, init, mode, False)
    return got


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_identity_steps_answer_as_applied_on_generated_programs(p, mode, data):
    for _ in range(3):
        feeds, init = data.draw(inputs_for(p))
        _same(p, feeds, init, mode)


def _identities(value_node: dict, **feeds) -> object:
    return program_from_json({
        "format": "tfsem.program/1", "variables": ["x"], "feeds": feeds,
        "nodes": [{"name": "vx", "op": "Var", "var": "x"}, value_node,
                  {"name": "i1", "op": "Identity", "inputs": ["v"]},
                  {"name": "i2", "op": "Identity", "inputs": ["i1"]}],
        "outputs": {"o": "i2"}})


def test_an_identity_of_an_error_is_that_error(fresh):
    p = _identities({"name": "v", "op": "Read", "inputs": ["vx"]})
    found, _ = _same(p, {}, {})        # (x uninitialized: the Read's error)
    (out,) = found
    assert isinstance(dict(out.outputs)["o"], Error) and fresh["short"] == 2
    found, _ = _same(p, {}, {"x": Tensor(np.array([1.5, -0.0], np.float32))})
    (out,) = found
    assert dict(out.outputs)["o"] == Tensor(np.array([1.5, -0.0], np.float32))


def test_an_identity_of_a_tensor_list_forwards_it(fresh):
    from test_controlflow_backend_paths import _list_loop
    p = _list_loop(10)
    found, _ = _same(p, {"v": Tensor(np.array([1, -2, 3]), "int64")}, {})
    (out,) = found
    assert dict(out.outputs)["out"].array.tolist() == [10, -20, 30] and fresh["short"] > 0


def test_a_tensor_past_the_element_limit_goes_the_long_way(fresh, monkeypatch):
    monkeypatch.setattr(fns, "MAX_TENSOR_ELEMENTS", 3)
    p = _identities({"name": "v", "op": "Identity", "inputs": ["$a"]},
                    a={"dtype": "int32", "shape": [4]})
    got = _same(p, {"a": Tensor(np.arange(4, dtype=np.int32))}, {})
    assert got[0] == "BudgetExceeded" and "tensor size limit" in got[1], got


def test_a_replaced_identity_is_applied(fresh):
    old = fns.get("Identity")
    fns.register(fns.Function("Identity", 1, 1, lambda xp, a, at: (a[0] + 1,)), replace=True)
    try:
        p = _identities({"name": "v", "op": "Identity", "inputs": ["$a"]},
                        a={"dtype": "int32", "shape": []})
        found, _ = _same(p, {"a": Tensor(np.int32(5))}, {})
        (out,) = found
        assert dict(out.outputs)["o"] == Tensor(np.int32(8))
    finally:
        fns.register(old, replace=True)
