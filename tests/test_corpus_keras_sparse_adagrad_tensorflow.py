"""The corpus's Keras Embedding + Adagrad step (keras_embedding_adagrad, a
sparse update through IndexedSlices and two nested conds) on tfsem's oracle
against TensorFlow's executor, at the σ that take each branch of the update
(docs/grappler-findings.md section 1.2).

Where a row of `Sqrt(accumulator + eps)` is 0 or NaN, Keras's `adagrad/cond`
merges the ids with those rows, numbering the ids by a `ScatterNd` of
`range(1, 641)`: a repeated id sums its numbers past the 641 rows and
TensorFlow's `GatherV2` fails the step; tfsem computes the same index and its
error value is dropped by the `ResourceScatterSub` (SPEC section 1: an
Assign with an error input changes nothing).  Nightly profile: TensorFlow's
import and the 200-node graph's run take tens of seconds.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

pytestmark = pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                                reason="nightly profile: runs TensorFlow on a corpus graph")

tf = pytest.importorskip("tensorflow", reason="runs TensorFlow's executor")

from tfsem.graphdef import grappler as g  # noqa: E402
from tfsem.graphdef import read_captures  # noqa: E402
from tfsem.oracle import kernels  # noqa: E402
from tfsem.oracle.dispatch import outcome_set  # noqa: E402
from tfsem.oracle.values import DTYPES, Error, Tensor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "replay_real_findings", ROOT / "tests" / "cases" / "tensorflow" / "replay_real_findings.py")
replay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay)

EMB_ACC = "adagrad/sequential_embedding_embeddings_accumulator"


def run_ours(p, feeds, init):
    """tfsem's one outcome (TensorFlow's kernels on: the graph's float
    MatMul has no numpy model that is TensorFlow's bits)."""
    with kernels.use(True):
        (o,) = list(outcome_set(p, feeds, init, max_seconds=120))
    return o


@pytest.fixture(scope="module")
def graph():
    e = {x["name"]: x for x in json.loads((replay.CORPUS / "manifest.json").read_text())
         ["graphs"]}["keras_embedding_adagrad"]
    caps = read_captures(replay.CORPUS / e["captures"])
    gd = g.as_graph_def(replay.CORPUS / e["file"])
    return gd, caps, replay._import(gd, e, caps)


def sigma(p, ids: np.ndarray, accumulator: float):
    feeds = {"x": Tensor(ids.reshape(32, 20).astype(np.int32), "int32"),
             "y": Tensor(np.ones((32, 1), np.float32), "float32")}
    init = {v: Tensor((np.ones(t.shape) * (accumulator if v == EMB_ACC else 1))
                      .astype(DTYPES[t.dtype]), t.dtype) for v, t in p.variables.items()}
    return feeds, init


@pytest.mark.parametrize("ids,accumulator", [
    (np.arange(640), 1.0),         # no zero denominator: the plain branch
    (np.arange(640) % 8, 1.0),     # repeated ids, the plain branch
    (np.arange(640), -1.0),        # NaN denominators, distinct ids: the union branch
], ids=["distinct-positive", "repeated-positive", "distinct-negative"])
def test_step_is_tensorflows_bit_for_bit(graph, ids, accumulator):
    gd, caps, p = graph
    feeds, init = sigma(p, ids, accumulator)
    ours = run_ours(p, feeds, init)
    theirs = replay.run_graph_on_tensorflow(gd, caps, p, feeds, init)
    assert theirs == ours, replay.differing(theirs, ours)


def test_repeated_ids_with_nan_denominator_fail_tensorflows_step(graph):
    """TensorFlow fails the step (the position 0 + 1 + ... + 640 of 640
    equal ids); tfsem's outcome carries no error: the embeddings keep their
    value, the one difference of tfsem's semantics from TensorFlow's here."""
    gd, caps, p = graph
    feeds, init = sigma(p, np.zeros(640), -1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"205120 is not in \[0, 641\)"):
        replay.run_graph_on_tensorflow(gd, caps, p, feeds, init)
    ours = run_ours(p, feeds, init)
    state = dict(ours.state)
    assert not any(isinstance(v, Error) for v in state.values())
    assert state["sequential/embedding/embeddings"] == init["sequential/embedding/embeddings"]
