"""backends/reuse.py: what the confirmations at one σ share on a backend.

σ is told by its exact bits (tests/test_values_sigma_key.py); a
confirmation at the σ of the last one reuses its session (σ uploaded
once, the memo, the original's witness outcomes) and gives the
confirmations a cold start gives, on the corpus's unsound cases; a witness
outcome is reused only for the same program object and the same schedule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfsem.backends import arraymodule as am
from tfsem.backends import confirm as BC
from tfsem.backends import reuse
from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.checking import check_case
from tfsem.oracle.jsonio import case_from_json, read_json_file
from tfsem.oracle.values import Error, Tensor

CASES = Path(__file__).resolve().parent / "cases"
UNSOUND = ["alg_float_reassociate", "err_assign_error_is_noop", "pass_cse_stateful_atomic",
           "pass_hoist_reads_decomposed", "pass_hoist_reads_safe_store_buffer",
           "seed000_figure1_concat_forward_store", "seed002_load_store_hoist_reads_decomposed",
           "seed002_two_increments_split_atomic", "state_add_write_back"]


def _t(a):
    return Tensor(np.asarray(a))


def test_one_session_per_sigma_and_array_module():
    reuse.clear()
    b = get_backend("numpy")
    s1 = reuse.session(b, {"a": _t(np.float32(1.0))}, {})
    assert reuse.session(get_backend("numpy"), {"a": _t(np.float32(1.0))}, {}) is s1
    s2 = reuse.session(b, {"a": _t(np.float32(2.0))}, {})
    assert s2 is not s1 and reuse.session(b, {"a": _t(np.float32(1.0))}, {}) is not s1
    # (the cupy stand-in is another array module: its own session)
    s3 = reuse.session(numpy_as_cupy(), {"a": _t(np.float32(1.0))}, {})
    assert s3.xp is not np
    reuse.clear()


def _counterexample(name):
    case = case_from_json(read_json_file(str(CASES / f"{name}.json")), where=name)
    verdict = check_case(case, timeout=10.0)
    assert verdict.verdict == "unsound", name
    return case, verdict.counterexample


def _confirm(case, cx, p=None, backends=None):
    return [(c.backend, c.confirmed, c.reason) for c in BC.confirm_details(
        p or case.original, case.rewritten(), cx.feeds, cx.init, cx.schedule,
        case.semantics, case.observe, outcome=cx.outcome,
        witnesses=[(o, w) for o, w in cx.original_outcomes], backends=backends)]


#: the backends a confirmation runs on: those of this machine, and numpy
#: beside the cupy code path (cupy itself on a GPU, else its numpy stand-in:
#: one object for the whole test, so that its sessions can be reused), as a
#: machine with a GPU confirms: each backend keeps its own session
BACKEND_SETS = ["available", "numpy+cupy"]


def _backends(which):
    if which == "available":
        return None
    return [get_backend("numpy"), get_backend("cupy") if am.cuda_available() else numpy_as_cupy()]


@pytest.mark.parametrize("which", BACKEND_SETS)
@pytest.mark.parametrize("name", UNSOUND)
def test_a_warm_session_confirms_as_a_cold_start(name, which, monkeypatch):
    case, cx = _counterexample(name)
    chosen = _backends(which)
    n = len(chosen) if chosen is not None else len(am.available_backends())
    reuse.clear()
    cold = _confirm(case, cx, backends=chosen)
    assert all(ok for _, ok, _ in cold), cold
    runs = []
    real = BC.run_schedule
    monkeypatch.setattr(BC, "run_schedule", lambda m, *a, **k: runs.append(m.program) or
                        real(m, *a, **k))
    warm = _confirm(case, cx, backends=chosen)
    assert warm == cold
    # (the original's witnesses were replayed by the cold start: only the
    # rewritten program runs again, once on each backend)
    assert len(runs) == n and all(r is not case.original for r in runs)
    # an equal program that is another object replays its witnesses
    other = case_from_json(read_json_file(str(CASES / f"{name}.json")), where=name).original
    runs.clear()
    assert _confirm(case, cx, other, backends=chosen) == cold
    assert sum(p is other for p in runs) == n * len(cx.original_outcomes)
    reuse.clear()


def test_a_witness_that_differs_is_not_taken_from_the_session():
    case, cx = _counterexample("seed002_load_store_hoist_reads")
    reuse.clear()
    assert all(ok for _, ok, _ in _confirm(case, cx))     # (every witness remembered)
    (o, w), (o2, w2), *rest = cx.original_outcomes
    # the witnesses swapped between their outcomes: replayed, and refused
    swapped = [(c.confirmed, c.reason) for c in BC.confirm_details(
        case.original, case.rewritten(), cx.feeds, cx.init, cx.schedule, case.semantics,
        case.observe, outcome=cx.outcome, witnesses=[(o, w2), (o2, w)] + rest)]
    assert not swapped[0][0] and "shown" in swapped[0][1]
    reuse.clear()


def test_a_control_flow_confirmation_reuses_the_originals_witnesses(monkeypatch):
    """The loop with TensorLists of tests/test_check_control_flow_confirm.py:
    a second confirmation at the same σ replays only the rewritten
    schedule, and confirms as the first did."""
    from tfsem.backends import controlflow as bcf
    from tfsem.checking.check import check_rewrite
    from tfsem.oracle.dispatch import outcome_set
    from test_check_control_flow_confirm import _dropped, _loop

    p = _loop()
    q = _dropped(p)
    v = check_rewrite(p, q, timeout=10, backends=False, minimize=False)
    cx = v.counterexample
    original = outcome_set(p, cx.feeds, cx.init)
    fired = []
    real = bcf._fire
    monkeypatch.setattr(bcf, "_fire", lambda m, *a: fired.append(m.p) or real(m, *a))

    def confirm(orig):
        return [(c.confirmed, c.reason) for c in bcf.confirm_control_flow(
            orig, q, cx.feeds, cx.init, cx.schedule, cx.outcome, original, backends=["numpy"])]
    reuse.clear()
    cold = confirm(p)
    assert cold[0][0], cold
    assert sum(m is p for m in fired) == original.count
    fired.clear()
    assert confirm(p) == cold
    assert fired == [q]
    fired.clear()
    other = _loop()           # (an equal program, another object: replayed)
    assert confirm(other) == cold
    assert sum(m is other for m in fired) == original.count
    reuse.clear()


def test_sigma_goes_to_the_device_once_per_session():
    """On the cupy stand-in (one backend object, one array module): the
    second confirmation at σ uploads nothing; at another σ, σ again."""
    case, cx = _counterexample("seed000_figure1_concat_forward_store")
    reuse.clear()
    sb = numpy_as_cupy()

    def confirm(init):
        return [c.confirmed for c in BC.confirm_details(
            case.original, case.rewritten(), cx.feeds, init, cx.schedule, case.semantics,
            case.observe, backends=[sb])]
    assert confirm(cx.init) == [True]
    first = sb.transfers.to_device
    assert first == len(cx.feeds) + len(cx.init)
    assert confirm(cx.init) == [True] and sb.transfers.to_device == first
    other = dict(cx.init)
    name = sorted(other)[0]
    other[name] = Error("uninitialized")
    confirm(other)
    assert sb.transfers.to_device == first + len(cx.feeds) + len(cx.init) - 1
    reuse.clear()
