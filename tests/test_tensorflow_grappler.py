"""TensorFlow's real Grappler (graphdef/grappler.py) and `tfsem grappler`.

Needs TensorFlow (the extra tfsem[tensorflow]); skipped, saying so, where it
cannot be imported.  TensorFlow is imported once for the whole module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.backends.tensorflow import GraphRunner  # noqa: E402
from tfsem.graphdef import grappler  # noqa: E402
from tfsem.oracle.values import Tensor  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"


def test_dependency_optimizer_changes_the_fanin_graph_and_keeps_its_fetch():
    res = grappler.run_grappler(CORPUS / "group_fanin.pbtxt", ["total"], "dependency")
    assert res.changed and res.nodes_after < res.nodes_before
    assert set(res.graph.removed) <= {n.name for n in grappler.as_graph_def(
        CORPUS / "group_fanin.pbtxt").node}
    assert "total" in {n.name for n in res.graph_def.node}
    # the optimized graph still runs on TensorFlow, with the original's outcome
    init = {v: Tensor(np.int64(k)) for k, v in enumerate("abc")}
    with GraphRunner(res.graph_def, {"total": "total"}) as opt, \
            GraphRunner(CORPUS / "group_fanin.pbtxt", {"total": "total"}) as orig:
        assert opt.run_once({}, init) == orig.run_once({}, init)


def test_an_optimizer_that_does_nothing_reports_no_change():
    res = grappler.run_grappler(CORPUS / "counter.pbtxt", ["value"], "loop")
    assert not res.changed and res.nodes_after == res.nodes_before
    assert res.summary().startswith("nodes 9 -> 9")


def test_unknown_optimizer_and_missing_fetch_are_errors():
    with pytest.raises(ValueError, match="unknown Grappler optimizer 'nope'"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", ["value"], "nope")
    with pytest.raises(ValueError, match="'absent' is not a node"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", ["absent:0"], "dependency")
    with pytest.raises(ValueError, match="at least one fetch"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", [], "dependency")
