"""Review attack (target 3): the outcome of a program with no node and no
variable.  oracle/outcomes.combine([]) gave it the state () whatever was
observed, so under `outputs` it differed from every other program's outcome
(state None): deleting a program's only node compared as a difference in the
oracle, the reads-from engine and the refuter's random runs (campaigns had a
workaround of their own in campaigns/checks.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking.refute import sample_outcomes
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

INT = {"dtype": "int64", "shape": []}


def program(nodes, outputs, variables=()):
    return program_from_json({"format": "tfsem.program/1", "variables": list(variables),
                              "feeds": {"f": INT}, "nodes": nodes, "outputs": outputs})


ONE_NODE = program([{"name": "s", "op": "Sub", "inputs": ["$f", "$f"]}], {})
EMPTY = program([], {})
SIGMA = ({"f": Tensor(4, "int64")}, {})


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
@pytest.mark.parametrize("observe", ["outputs", "outputs+state"])
def test_the_empty_program_has_the_outcome_of_a_program_that_does_nothing(engine, mode, observe):
    empty = set(outcome_set(EMPTY, *SIGMA, mode, observe, engine=engine))
    assert empty == set(outcome_set(ONE_NODE, *SIGMA, mode, observe, engine=engine))
    (o,) = empty
    assert (o.state is None) == (observe == "outputs")


@pytest.mark.parametrize("observe", ["outputs", "outputs+state"])
def test_the_refuters_random_runs_of_the_empty_program(observe):
    rng = np.random.default_rng(0)
    found = sample_outcomes(EMPTY, *SIGMA, "atomic", observe, rng, 2, float("inf"))
    assert set(found) == set(outcome_set(ONE_NODE, *SIGMA, "atomic", observe))
