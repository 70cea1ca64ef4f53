"""graphdef/mlir_cluster.py: a hand-built `tf_device.cluster` around a run of
the islands TensorFlow's importer wrote (`--target mlir-cluster:PIPELINE`).
No TensorFlow: the input is a module TensorFlow 2.21 imported, saved in
examples/mlir/imported_pretty.mlir."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from tfsem.graphdef.mlir import program_of_mlir
from tfsem.graphdef.mlir_cluster import choose, islands, wrap_cluster
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "mlir"
#: Const, VarHandleOp x, AssignAdd x, Read x (after it), AddV2(read, p), AssignAdd x
IMPORTED = (EXAMPLES / "imported_pretty.mlir").read_text()
SPANS = [(a, b) for a in range(3) for b in range(a, 3)]


def _sigma():
    return ({"p": Tensor(np.array(2.0, dtype=np.float32))},
            {"x": Tensor(np.array(0.5, dtype=np.float32))})


def test_the_imported_module_has_three_resource_accesses():
    ops = [i.op_name for i in islands(IMPORTED)]
    assert ops == ["tf.Const", "tf.VarHandleOp", "tf.AssignAddVariableOp", "tf.ReadVariableOp",
                   "tf.AddV2", "tf.AssignAddVariableOp"]


@pytest.mark.parametrize("span", SPANS)
def test_a_cluster_keeps_the_interface_and_only_removes_interleavings(span):
    """Every span: the result is read, has the original's interface, holds
    exactly the span's ops in one cluster, and each of its outcomes (both
    modes) is one of the imported module's."""
    text = wrap_cluster(IMPORTED, span)
    assert text.count('"tf_device.cluster"') == 1
    body = text[text.index('"tf_device.cluster"'):text.index("tf_device.return")]
    inside = re.findall(r'"(tf\.\w+)"', body)
    expect = ["tf.AssignAddVariableOp", "tf.ReadVariableOp", "tf.AddV2",
              "tf.AssignAddVariableOp"]
    first = {0: 0, 1: 1, 2: 3}[span[0]]
    last = {0: 0, 1: 1, 2: 3}[span[1]]
    assert inside == expect[first:last + 1]
    before = program_of_mlir(IMPORTED, "imported")
    after = program_of_mlir(text, "clustered")
    assert list(after.outputs) == list(before.outputs)
    assert sorted(after.variables) == sorted(before.variables)
    feeds, init = _sigma()
    for mode in ("atomic", "decomposed"):
        a = set(outcome_set(before, feeds, init, mode))
        b = set(outcome_set(after, feeds, init, mode))
        assert b and b <= a, (span, mode)


def test_a_cluster_of_the_whole_run_forbids_the_other_orders():
    """Span (0, 2) runs AssignAdd, read, AssignAdd in program order.  In the
    imported module the second AssignAdd is unordered with the read, which
    sees x = 1.5 or 2.5 (two outcomes); in the cluster only 1.5."""
    feeds, init = _sigma()
    before = set(outcome_set(program_of_mlir(IMPORTED, "i"), feeds, init, "atomic"))
    after = set(outcome_set(program_of_mlir(wrap_cluster(IMPORTED, (0, 2)), "c"), feeds, init,
                            "atomic"))
    assert len(after) == 1 and len(before) == 2


def test_the_hash_chooses_a_valid_span_the_same_every_time():
    for n in range(1, 6):
        for k in range(20):
            s = choose(f"text {k}", n)
            assert 0 <= s[0] <= s[1] < n
            assert s == choose(f"text {k}", n)
    assert wrap_cluster(IMPORTED) == wrap_cluster(IMPORTED)
    assert wrap_cluster(IMPORTED) is not None


def test_too_few_accesses_or_another_form_gives_none():
    one = "\n".join(ln for ln in IMPORTED.splitlines()
                    if "AssignAddVariableOp" not in ln)
    assert wrap_cluster(one) is None        # a single access (the read)
    clustered = (EXAMPLES / "cluster_store_load.mlir").read_text()
    assert wrap_cluster(clustered) is None  # islands with regions: not the importer's form
    assert wrap_cluster("module {}") is None


def test_a_span_outside_the_accesses_is_refused():
    with pytest.raises(ValueError, match="outside"):
        wrap_cluster(IMPORTED, (1, 3))


def test_uses_after_the_cluster_are_renamed_and_controls_not_repeated():
    text = wrap_cluster(IMPORTED, (0, 1))
    # the read (%outputs_3) is used by the AddV2 after the cluster: renamed
    assert "%outputs_3" not in text
    assert re.search(r'wraps "tf.AddV2"\(%tfsem_cluster, %arg0\)', text)
    for line in text.splitlines():
        m = re.search(r"tf_executor\.island\(([^)]*)\)", line)
        if m:
            ctl = [c.strip() for c in m.group(1).split(",")]
            assert len(ctl) == len(set(ctl))
    for span in itertools.product(range(3), repeat=2):
        if span[0] <= span[1]:
            program_of_mlir(wrap_cluster(IMPORTED, span), "c")
