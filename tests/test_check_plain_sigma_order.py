"""Where the plain σ comes among the one-outcome comparisons
(checking/check.py `_Checker.one_outcome_sigmas`; issue 23).

With TensorFlow's kernels the concrete stages draw at most KERNEL_SIGMAS
(32) σ.  The one-outcome comparisons tried zeros, ones, one σ per variable
left uninitialized, one per edge value, and only then the plain σ (every
variable initialized with ordinary floats): on a training step of a dozen
variables the bound was reached first.  Grappler's arithmetic optimizer
rewrote Adagrad's `g / Sqrt(a + eps)` as `g * Rsqrt(a + eps)` on the real
corpus (keras_mlp_adagrad), which rounds differently for 41% of ordinary
values, and the check ended `no-counterexample` after 28 σ; the plain σ,
third now, shows it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"


def many_variables(n: int):
    nodes = [{"name": f"v{i}", "op": "Var", "var": f"x{i}"} for i in range(n)]
    nodes += [{"name": f"r{i}", "op": "Read", "inputs": [f"v{i}"]} for i in range(n)]
    prev = "r0"
    for i in range(1, n):
        nodes.append({"name": f"s{i}", "op": "Add.ftz", "inputs": [prev, f"r{i}"]})
        prev = f"s{i}"
    nodes.append({"name": "w", "op": "Write", "inputs": ["v0", prev, "^r0"]})
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {f"x{i}": {"dtype": "float32", "shape": [3]} for i in range(n)},
        "nodes": nodes, "outputs": {"out": prev}})


def test_the_plain_sigma_is_third_whatever_the_number_of_variables():
    p = many_variables(16)
    c = C._Checker(p, p, "atomic", "outputs+state", time.monotonic(), 10.0, False, 0, False)
    c.flagged = sorted(p.variables)
    drawn = [s for s, _ in zip(c.one_outcome_sigmas(), range(C.KERNEL_SIGMAS))]
    tags = [tag for tag, _ in drawn]
    assert tags[:4] == ["zeros", "ones", "plain", "plain huge"]
    assert tags[4].startswith("uninitialized") and "edge 0" in tags
    feeds, init = drawn[2][1]
    assert all(isinstance(v, Tensor) for v in init.values())      # all initialized
    assert len({float(v.array[0]) for v in init.values()}) > 1    # ordinary, drawn values


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
def test_adagrads_rsqrt_rewrite_is_unsound_at_the_plain_sigma():
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    data = json.loads((Path(__file__).parent / "grappler" / "keras_mlp_adagrad.json").read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["arithmetic"])
    with kernels.use(True):
        v = check_rewrite(p, q, timeout=30, minimize=False)
    assert v.verdict == "unsound", v.reason
    assert "variable" in v.differs
