"""What a confirmation leaves alive, inside a check that froze the process's
objects (backends/execute.py `collector_paused`, `freeze_in_check`): frozen
with the check's objects when the replay ends, thawed into the oldest
generation when the check's scope ends; never frozen where the process
froze objects of its own, nor outside a check; and the answers, the
verdicts and the counterexamples are those with the switch off."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from tfsem.backends import confirm as BC
from tfsem.backends import execute as EX
from tfsem.backends import reuse
from tfsem.checking import check_case
from tfsem.oracle import applications
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import case_from_json, read_json_file, program_from_json
from tfsem.oracle.values import Tensor

CASES = Path(__file__).resolve().parent / "cases"


def _racy(values):
    nodes = [{"name": "v", "op": "Var", "var": "x"}]
    for k, c in enumerate(values):
        nodes += [{"name": f"c{k}", "op": "Const", "value": c},
                  {"name": f"a{k}", "op": "Assign", "fn": "Snd", "inputs": ["v", f"c{k}"]}]
    return program_from_json({"variables": ["x"], "nodes": nodes, "outputs": {}})


def _answers(p, q, init):
    reuse.clear()
    return [(c.backend, c.confirmed, c.reason) for c in BC.confirm_details(
        p, q, {}, init, ["v", "c0", "a0"], backends=["numpy"])]


def _in_young_generations(obj) -> bool:
    return any(x is obj for x in gc.get_objects(generation=0)) or \
        any(x is obj for x in gc.get_objects(generation=1))


def _in_oldest_generation(obj) -> bool:
    return any(x is obj for x in gc.get_objects(generation=2))


@pytest.fixture
def collector_on():
    """The collector on for the test; what was frozen when it began (the
    process may hold frozen objects of its own: a frozen object dropped is
    freed all the same, so the tests compare with `<=`, never more)."""
    was = gc.isenabled()
    own = gc.get_freeze_count()
    gc.enable()
    try:
        yield own
    finally:
        (gc.enable if was else gc.disable)()
        reuse.clear()


def test_frozen_with_the_check_and_thawed_when_it_ends(collector_on):
    if collector_on:
        pytest.skip("the process froze objects of its own: no check scope freezes then")
    p, q = _racy([1, 2]), _racy([3])
    init = {"x": Tensor(np.int64(0))}
    off = None
    for on in (False, True):
        EX.freeze_in_check = on
        try:
            with applications.scope():
                frozen_before = gc.get_freeze_count()
                assert frozen_before > 0     # (the check's scope froze the process)
                answers = _answers(p, q, init)
                session = reuse._current["numpy"]
                assert gc.isenabled()
                if on:
                    # (the session and what it holds frozen too: in no generation)
                    assert gc.get_freeze_count() > frozen_before
                    assert not _in_young_generations(session)
                    assert not _in_oldest_generation(session)
                else:
                    # (a frozen object dropped is freed all the same: fewer, never more)
                    assert gc.get_freeze_count() <= frozen_before
                    assert _in_young_generations(session) or _in_oldest_generation(session)
            # (the scope's end thawed everything into the oldest generation)
            assert gc.get_freeze_count() == 0
            if on:
                assert _in_oldest_generation(session)
        finally:
            EX.freeze_in_check = True
        if off is None:
            off = answers
        else:
            assert answers == off
    assert off[0][1], off


def test_nothing_more_is_frozen_outside_a_check_or_where_the_process_froze(collector_on):
    p, q = _racy([1, 2]), _racy([3])
    init = {"x": Tensor(np.int64(0))}
    # outside a check's scope: `gc_paused`, nothing frozen or left frozen
    answers = _answers(p, q, init)
    assert gc.get_freeze_count() <= collector_on
    # a process that froze objects of its own (`tfsem serve`): its scope
    # freezes nothing, and the confirmation adds nothing to what is frozen
    mine = [object()]
    gc.freeze()
    try:
        own = gc.get_freeze_count()
        with applications.scope():
            assert _answers(p, q, init) == answers
            # (what the process froze, less what was freed since: never more,
            # and the replay's session in the collector's generations)
            assert gc.get_freeze_count() <= own
            session = reuse._current["numpy"]
            assert _in_young_generations(session) or _in_oldest_generation(session)
        assert 0 < gc.get_freeze_count() <= own
        assert not any(x is mine for x in gc.get_objects())
    finally:
        gc.unfreeze()
    # the collector off when the replay begins: off after it, nothing frozen
    gc.disable()
    with applications.scope():
        assert _answers(p, q, init) == answers and not gc.isenabled()
    assert gc.get_freeze_count() <= collector_on


UNSOUND = ["alg_float_reassociate", "err_assign_error_is_noop", "pass_cse_stateful_atomic",
           "pass_hoist_reads_decomposed", "seed000_figure1_concat_forward_store",
           "seed002_two_increments_split_atomic", "state_add_write_back"]
#: cases whose counterexample the checker's time-cut minimization may vary
TIMED = {"alg_float_reassociate"}


@pytest.mark.parametrize("name", UNSOUND)
def test_checks_give_the_same_verdicts_with_the_switch_on_and_off(name, collector_on):
    """The corpus's unsound cases checked (with their numpy confirmation)
    with the replay's objects frozen and not: the same verdict, the same
    counterexample, confirmed on the same backends."""
    got = []
    for on in (True, False):
        EX.freeze_in_check = on
        try:
            reuse.clear()
            case = case_from_json(read_json_file(str(CASES / f"{name}.json")), where=name)
            v = check_case(case, timeout=10.0)
        finally:
            EX.freeze_in_check = True
        cx = v.counterexample
        # (alg_float_reassociate's counterexample varies from one check to
        # the next with the switch held either way: its minimization is cut
        # by time; it is compared by enumeration, as every case's is)
        if cx is not None:
            p, q = case.original, case.rewritten()
            assert cx.outcome in outcome_set(q, cx.feeds, cx.init or {}, case.semantics,
                                             case.observe)
            assert cx.outcome not in outcome_set(p, cx.feeds, cx.init or {}, case.semantics,
                                                 case.observe)
        got.append((v.verdict, list(v.confirmed),
                    None if cx is None or name in TIMED else
                    (cx.feeds, cx.init, tuple(cx.schedule), cx.outcome), cx is not None))
        assert gc.get_freeze_count() <= collector_on
    assert got[0] == got[1]
    assert got[0][0] == "unsound" and got[0][3] and "numpy" in got[0][1]
