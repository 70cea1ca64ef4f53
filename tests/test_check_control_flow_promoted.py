"""The control-flow refutation compares first the σ at the place of its order
where an earlier check of the same original found a difference
(checking/control_flow.py PROMOTE_FOUND, `refute_order`; the place kept by
checking/sigma_memo.py `remember_found`).

Differential, the switch on against off, each sequence of checks run from
empty memories: the same verdict for every check; where no σ shows a
difference, the same σ compared (the same tags, as a set, and the same
count); where one does, a counterexample of the reference engine (the
rewrite's outcome at it is not among the original's).  Over a hand-made
loop program whose difference shows only at the huge float σ, over
generated control-flow programs and their rewrites by the control-flow
passes and dropped control edges, and (nightly, TensorFlow's kernels) over
the real corpus's loop graphs under Grappler's optimizers.  The place is
kept per program object and registry epoch: another program, or the same
after a registration, gets none."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.checking import control_flow, sigma_memo
from tfsem.checking.check import check_rewrite
from tfsem.generators.control_flow import control_flow_programs
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import ProgramError
from tfsem.rewrites.registry import get_pass
from controlflow_support import registry_restored
from test_check_control_flow_float_sigmas import loop_then_scale

NIGHTLY = settings.get_current_profile_name() == "nightly"
FEW = settings(max_examples=60 if NIGHTLY else 6, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))
CORPUS = Path(__file__).parent / "grappler" / "keras_recurrent_loops.json.gz"


def tags(v) -> list[str]:
    return [e["sigma"] for e in v.stats.get("refute_sigmas", [])]


def swapped(p):
    """p with the two products' operands swapped: the same values (IEEE
    products commute), a program the refutation compares in full where
    the structural rule is off."""
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] in ("t", "prod"):
            n["inputs"] = n["inputs"][::-1]
    return program_from_json(raw)


def run_sequence(p, rewrites, promote: bool, monkeypatch, **kw):
    """Each rewrite of `rewrites` checked against `p` in turn, from empty
    memories, with PROMOTE_FOUND `promote`."""
    monkeypatch.setattr(control_flow, "PROMOTE_FOUND", promote)
    sigma_memo.clear()
    cf._OUTCOMES.clear()
    return [check_rewrite(p, q, **kw) for q in rewrites]


def assert_same_outcomes(p, rewrites, on, off):
    for q, a, b in zip(rewrites, on, off):
        assert a.verdict == b.verdict, (a.reason, b.reason)
        if a.verdict == "no-counterexample" and "refute_sigmas" in b.stats:
            # (no σ showed a difference: the same σ compared)
            assert sorted(tags(a)) == sorted(tags(b))
            assert a.tried == b.tried
        if a.verdict == "unsound":
            cx = a.counterexample
            mine = set(outcome_set(q, cx.feeds, cx.init, a.semantics, a.observe))
            assert cx.outcome in mine
            assert cx.outcome not in set(outcome_set(p, cx.feeds, cx.init, a.semantics,
                                                     a.observe))


def test_a_later_check_compares_first_where_an_earlier_check_found(monkeypatch):
    p = loop_then_scale(0.25, 2.0)
    rewrites = [loop_then_scale(0.25, 2.0, fold=True), swapped(p),
                loop_then_scale(0.25, 2.0, fold=True)]
    kw = dict(timeout=10, structural=False, backends=False)
    on = run_sequence(p, rewrites, True, monkeypatch, **kw)
    off = run_sequence(p, rewrites, False, monkeypatch, **kw)
    assert_same_outcomes(p, rewrites, on, off)
    assert [v.verdict for v in on] == ["unsound", "no-counterexample", "unsound"]
    found = on[0].stats["found_at"]
    assert found in ("plain huge", "largest float") and tags(on[0])[-1] == found
    # (switched on: the later checks compare it first; off: in its place)
    assert tags(on[1])[0] == found and on[1].stats["promoted"] == found
    assert tags(on[2]) == [found] and on[2].stats["found_at"] == found
    assert tags(off[1])[0] == "drawn 0" and "promoted" not in off[1].stats
    assert tags(off[2]) == tags(off[0])
    # (the order's first σ keeps its place after it; the rest as drawn)
    rest = [t for t in tags(off[1]) if t != found]
    assert tags(on[1])[1:] == rest


def test_the_environment_switch_turns_it_off(monkeypatch):
    p = loop_then_scale(0.25, 2.0)
    monkeypatch.setenv(control_flow.PROMOTE_ENV, "0")
    rewrites = [loop_then_scale(0.25, 2.0, fold=True)] * 2
    on = run_sequence(p, rewrites, True, monkeypatch, timeout=10, backends=False)
    assert tags(on[1]) == tags(on[0]) and "promoted" not in on[1].stats


def test_the_place_is_kept_per_program_object_and_registry_epoch():
    sigma_memo.clear()
    p, other = loop_then_scale(0.25, 2.0), loop_then_scale(0.25, 2.0)
    sigma_memo.remember_found(p, "atomic", "outputs+state", 3, "largest float")
    assert sigma_memo.recall_found(p, "atomic", "outputs+state") == (3, "largest float")
    assert sigma_memo.recall_found(other, "atomic", "outputs+state") is None
    assert sigma_memo.recall_found(p, "decomposed", "outputs+state") is None
    saved = sigma_memo.snapshot()
    sigma_memo.clear()
    assert sigma_memo.recall_found(p, "atomic", "outputs+state") is None
    sigma_memo.restore(saved)
    assert sigma_memo.recall_found(p, "atomic", "outputs+state") == (3, "largest float")
    with registry_restored():
        fns.register(fns.lookup("Mul"), replace=True)
        assert sigma_memo.recall_found(p, "atomic", "outputs+state") is None
    sigma_memo.clear()


def _rewrites(p):
    """Rewrites of p: the control-flow passes, and each control edge dropped."""
    out = []
    for name in ("dead-branch", "licm", "licm-reads", "xla-lift"):
        q = get_pass(name)(p)
        if q != p:
            out.append(q)
    raw = program_to_json(p)
    for k, node in enumerate(raw["nodes"]):
        for j, inp in enumerate(node.get("inputs", [])):
            if inp.startswith("^"):
                copy = json.loads(json.dumps(raw))
                del copy["nodes"][k]["inputs"][j]
                try:
                    out.append(program_from_json(copy))
                except ProgramError:
                    pass
    return out


@FEW
@given(control_flow_programs(max_blocks=2), st.sampled_from(("atomic", "decomposed")))
def test_generated_programs_same_verdicts_on_and_off(p, mode):
    rewrites = _rewrites(p)[:4]
    if not rewrites:
        return
    rewrites = rewrites + rewrites     # (each again: the place its first check found)
    kw = dict(semantics=mode, timeout=2, backends=False, classify=False, structural=False)
    with pytest.MonkeyPatch.context() as mp:
        on = run_sequence(p, rewrites, True, mp, **kw)
        off = run_sequence(p, rewrites, False, mp, **kw)
    assert_same_outcomes(p, rewrites, on, off)


@pytest.mark.skipif(not NIGHTLY, reason="TensorFlow's kernels (a TensorFlow child): nightly")
@pytest.mark.parametrize("graph", ["keras_gru_loop", "keras_lstm_loop"])
def test_the_corpus_loop_graphs_same_verdicts_on_and_off(graph, monkeypatch):
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    monkeypatch.setenv(kernels.ENV, "1")
    with gzip.open(CORPUS, "rt") as f:
        d = json.load(f)[graph]
    p = program_from_json(d["original"])
    rewrites = [program_from_json(r) for r in d["rewritten"].values()]
    on = run_sequence(p, rewrites, True, monkeypatch, timeout=60, backends=False)
    off = run_sequence(p, rewrites, False, monkeypatch, timeout=60, backends=False)
    assert_same_outcomes(p, rewrites, on, off)
    assert any("promoted" in v.stats for v in on)
