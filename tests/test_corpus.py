"""The case corpus (tests/cases/*.json, issue 5 item 7) through the checker.

Every case must get the verdict it expects, and every program in the corpus
(each original, and each rewrite that loads) must be a sound rewrite of
itself, like Alive2's identity check.  An `unsound` verdict must come with a
counterexample that the concrete oracle reproduces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tfsem.checking import check_case, check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import ControlIn, DataIn, Program, ProgramError
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import value_from_json

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))
#: generous: a verdict that needs longer than this is a finding of its own
TIMEOUT = 20.0

pytestmark = pytest.mark.skipif(not CASES, reason="tests/cases/ holds no case yet")


def _ids(paths):
    return [p.stem for p in paths]


@pytest.mark.parametrize("path", CASES, ids=_ids(CASES))
def test_case_gets_its_expected_verdict(path):
    case = load_case(path)
    assert case.expect in ("sound", "unsound", "invalid"), f"{path.name} has no expectation"
    verdict = check_case(case, timeout=TIMEOUT)
    assert "internal_error" not in verdict.stats, verdict.stats["internal_error"]
    assert verdict.verdict == case.expect, f"{path.name}: {case.note}\n{verdict.describe()}"
    if verdict.verdict == "unsound":
        rewritten = case.rewritten()
        cex = verdict.to_json()["counterexample"]
        p = case.original
        feeds = {k: value_from_json(v, dtype=p.feed_type(k).dtype) for k, v in cex["feeds"].items()}
        init = {k: value_from_json(v, dtype=p.variables[k].dtype) for k, v in cex["init"].items()}
        state = run_schedule(rewritten, feeds, init, cex["schedule"], case.semantics)
        outcome = outcome_of(rewritten, graph_of(rewritten), state, case.observe)
        assert outcome not in outcome_set(p, feeds, init, case.semantics, case.observe)
        assert verdict.differs


@pytest.mark.parametrize("path", CASES, ids=_ids(CASES))
def test_every_corpus_program_is_a_sound_rewrite_of_itself(path):
    case = load_case(path)
    programs = [case.original]
    try:
        programs.append(case.rewritten())
    except ProgramError:
        pass  # an invalid rewrite on purpose
    for p in programs:
        # renamed, so that the checker cannot take the shortcut for identical
        # programs: the proof goes through the symbolic oracle
        verdict = check_rewrite(p, renamed(p), case.semantics, case.observe, timeout=TIMEOUT)
        assert verdict.verdict == "sound", f"{path.name}: {verdict.describe()}"
        assert not verdict.stats.get("identical")


def renamed(p: Program) -> Program:
    """p with every node renamed (the same program up to node names)."""
    def ref(i):
        if isinstance(i, DataIn):
            return DataIn(i.node + "_r", i.port)
        if isinstance(i, ControlIn):
            return ControlIn(i.node + "_r")
        return i
    nodes = tuple(n.replace(name=n.name + "_r", inputs=tuple(ref(i) for i in n.inputs))
                  for n in p.nodes)
    return p.replace(nodes=nodes, outputs={k: ref(v) for k, v in p.outputs.items()}).validated()
