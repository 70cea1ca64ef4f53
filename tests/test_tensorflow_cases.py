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


#: a case whose ops only TensorFlow's kernels evaluate says so in its note
#: (the remapper's fused ops): it runs with the kernels on, in the nightly
#: profile where TensorFlow is installed (the kernel child's start is 10-60 s)
NEEDS_KERNELS = "Needs TensorFlow's kernels"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_keeps_its_verdict(path):
    case = load_case(path)
    assert "TensorFlow" in case.note
    if NEEDS_KERNELS in case.note:
        from hypothesis import settings
        from tfsem.oracle import kernels
        if settings.get_current_profile_name() != "nightly":
            pytest.skip("evaluated by TensorFlow's kernels: nightly profile")
        pytest.importorskip("tensorflow", reason="evaluated by TensorFlow's kernels")
        with kernels.use(True):
            verdict = check_case(case, timeout=60)
    else:
        verdict = check_case(case, timeout=60)
    assert verdict.verdict == case.expect, verdict.describe()
    if case.expect == "unsound":
        assert "oracle" in verdict.confirmed
