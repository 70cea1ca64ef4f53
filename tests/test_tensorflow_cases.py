"""The cases of tests/cases/tensorflow/ (real TensorFlow graphs: Grappler's own
outputs, and hand-broken graphs with the shape of an optimizer bug) keep their
expected verdicts.  Needs no TensorFlow: the programs are stored as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfsem.checking import check_case
from tfsem.oracle.jsonio import load_case

CASES = sorted((Path(__file__).parent / "cases" / "tensorflow").glob("*.json"))


def test_there_are_cases_of_both_kinds():
    expects = {json.loads(p.read_text())["expect"] for p in CASES}
    assert expects == {"sound", "unsound"}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_keeps_its_verdict(path):
    case = load_case(path)
    assert "TensorFlow" in case.note
    verdict = check_case(case, timeout=60)
    assert verdict.verdict == case.expect, verdict.describe()
    if case.expect == "unsound":
        assert "oracle" in verdict.confirmed
