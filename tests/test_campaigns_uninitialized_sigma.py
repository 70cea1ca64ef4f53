"""A σ that leaves a variable out starts it uninitialized: a counterexample
at such a σ is not one against a target that claims initialized σ only.

Found triaging the 30-minute campaign of `mlir-cluster:tf-resource-op-lifting`
(docs/mlir-campaigns.md): six stored "unsound" findings (5 of 40 in that
campaign, 1 of 36 with in-cluster decomposition first) had a counterexample σ
that simply did not list one variable.  The concrete check at the drawn σ
lists only the variables the σ sets, so the campaign's test for "needs an
uninitialized variable" (an error value in `init`) missed them: with every
variable initialized, each of the six rewrites has no counterexample.
The same fix reached main from a Grappler campaign (its test is in
tests/test_tensorflow_fuzz_target.py); these tests pin the MLIR finding.
No TensorFlow is needed here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tfsem.campaigns.checks import concrete_check
from tfsem.campaigns.loop import FuzzLoop, LoopConfig, _initialized, _needs_uninitialized
from tfsem.campaigns.targets import Target
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

from campaign_fakes import ReturnsProgram

#: finding 31 of that campaign, as the reader read the modules: the cluster
#: reads x0, writes it to x1 and reads x1 back; lifting forwards the read of x0.
#: From an uninitialized x0, tfsem's original writes nothing (an Assign with an
#: error input changes nothing) and returns x1, the output returns the error
#: value; TensorFlow fails both runs.  With x0 initialized they agree.
ORIGINAL = {"format": "tfsem.program/1", "nodes": [
    {"name": "h1", "op": "Var", "var": "x1"}, {"name": "h0", "op": "Var", "var": "x0"},
    {"inputs": ["h0"], "name": "r0", "op": "Read"},
    {"inputs": ["h1", "r0", "^r0"], "name": "w1", "op": "Write"},
    {"inputs": ["h1", "^w1"], "name": "r1", "op": "Read"},
    {"inputs": ["r1"], "name": "out", "op": "Identity"},
    {"inputs": ["^r0", "^w1", "^r1"], "name": "cluster", "op": "NoOp"}],
    "outputs": {"out0": "out"},
    "variables": {"x0": {"dtype": "int64", "shape": [2]}, "x1": {"dtype": "int64", "shape": [2]}}}
LIFTED = {"format": "tfsem.program/1", "nodes": [
    {"name": "h0", "op": "Var", "var": "x0"}, {"inputs": ["h0"], "name": "r0", "op": "Read"},
    {"inputs": ["r0"], "name": "out", "op": "Identity"}, {"name": "h1", "op": "Var", "var": "x1"},
    {"inputs": ["h1", "r0", "^r0"], "name": "w1", "op": "Write"},
    {"inputs": ["^r0", "^w1"], "name": "island", "op": "NoOp"}],
    "outputs": {"out0": "out"},
    "variables": {"x0": {"dtype": "int64", "shape": [2]}, "x1": {"dtype": "int64", "shape": [2]}}}

X1 = {"x1": Tensor(np.array([-3, 2], dtype=np.int64))}     # x0 left out: uninitialized


def test_a_variable_left_out_of_the_counterexample_is_uninitialized():
    original, lifted = program_from_json(ORIGINAL), program_from_json(LIFTED)
    verdict = concrete_check(original, lifted, {}, X1, "atomic", "outputs+state")
    assert verdict["verdict"] == "unsound"
    assert "x0" not in verdict["counterexample"]["init"]       # left out, not an error value
    assert _needs_uninitialized(verdict, original)
    # what the campaign asked before: an explicit error value in σ (there is none)
    assert not any(isinstance(v, dict) and "error" in v
                   for v in verdict["counterexample"]["init"].values())
    # with every variable initialized the two programs agree at that σ
    again = concrete_check(original, lifted, {}, _initialized(original, X1), "atomic",
                           "outputs+state")
    assert again["verdict"] == "no-counterexample"


def _generator(max_nodes, observe):
    from hypothesis import strategies as st
    return st.just((program_from_json(ORIGINAL), {}, dict(X1)))


def test_the_loop_does_not_record_it_against_an_initialized_only_target():
    target = Target("fake", "fake", "a target that returns the lifted program",
                    {("atomic", "outputs+state"): "sound"}, fn=lambda p: p)
    for initialized_only in (True, False):
        t = dataclasses.replace(target, initialized_only=initialized_only)
        loop = FuzzLoop(LoopConfig("fake", "atomic", "outputs+state"), target=t,
                        runner=ReturnsProgram(LIFTED), generator=_generator)
        record = loop.evaluate(program_from_json(ORIGINAL), {}, dict(X1))
        if initialized_only:
            assert record is None
        else:    # tfsem's own claim, every σ: unsound from an uninitialized x0
            assert record is not None and record.kind == "unsound"
            assert "x0" not in record.init
