"""examples/mlir/lit/: the cases of TensorFlow's lit tests in tfsem's corpus
(docs/mlir.md, "TensorFlow's lit tests as a corpus").  Without TensorFlow:
each case's input is read, or refused for the reason the docs' table gives;
the verdicts themselves come from benchmarks/mlir_lit_corpus.py, which runs
the pipelines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfsem.graphdef.mlir import program_of_mlir
from tfsem.oracle.program import ProgramError

LIT = Path(__file__).resolve().parent.parent / "examples" / "mlir" / "lit"

#: function -> None (read) or the rule of the refusal, as in the docs' table
EXPECTED = {
    "non_aliasing_reads_writes": None,       # breakup_islands, update_control_dependencies
    "decomposition_outside_cluster": None,
    "decompose_use_subtype": None,
    "decompose_assign_add_variable_op": None,
    "decompose_assign_sub_variable_op": None,
    # (its alpha is a Const of shape [1] typed tensor<f32>: TensorFlow's
    # kernel fails on an alpha that is not a scalar)
    "decompose_resource_apply_gradient_descent": "shape-mismatch",
    "decompose_resource_apply_momentum_non_nesterov": "aliased-variables",
    "decompose_resource_apply_momentum_nesterov": "aliased-variables",
    "only_resource_load": "unknown-shape",
    "same_resource_load_and_store": "unknown-shape",
    "internal_resource": "unknown-shape",
}


def _cases():
    for f in sorted(LIT.glob("*.mlir")):
        text = f.read_text()
        assert "Apache License 2.0" in text and "tensorflow/compiler/mlir/tensorflow/tests/" in text
        assert re.search(r"(?m)^// RUN: tf-opt ", text)
        for part in re.split(r"(?m)^// -----.*$", text):
            for name in re.findall(r"(?m)^func\.func @(\w+)", part):
                yield f.name, name, part


CASES = list(_cases())


def test_the_corpus_has_the_twelve_cases_of_the_table():
    assert len(CASES) == 12
    assert {n for _, n, _ in CASES} == set(EXPECTED)


@pytest.mark.parametrize("fname,name,text", CASES, ids=[f"{f}:{n}" for f, n, _ in CASES])
def test_each_case_is_read_or_refused_by_name(fname, name, text):
    rule = EXPECTED[name]
    if rule is None:
        p = program_of_mlir(text, fname, name)
        assert p.variables, "every case of the corpus is about resource variables"
    else:
        with pytest.raises(ProgramError) as exc:
            program_of_mlir(text, fname, name)
        assert exc.value.violations[0].rule == rule
        assert re.match(rf"{re.escape(fname)}:\d+:\d+: ", exc.value.violations[0].where)
