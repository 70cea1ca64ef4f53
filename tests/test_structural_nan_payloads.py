"""The structural rule's commutative operands in one order ((E3) of
checking/structural.py) and NaN payloads: Add(NaN1, NaN2) has NaN1's bits
and Add(NaN2, NaN1) NaN2's (x86, numpy, TensorFlow), so where a program has
a function that shows a NaN's bits (Bitcast), swapping the operands of an
Add whose value reaches an Assign changes the outcome.  Found by review10:
the rule proved such a swap `sound`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking.structural import structural_refinement
from tfsem.oracle.jsonio import program_from_json

NIGHTLY = settings.get_current_profile_name() == "nightly"
NAN1, NAN2 = 0x7FC00001, 0x7FC00002


def program(args, observer: str | None, into_output: bool = False):
    """x := observer(Add(args)) (observer None: x := Add(args) itself);
    `into_output`: fetched instead."""
    nodes = [{"name": "hx", "op": "Var", "var": "x"},
             {"name": "s", "op": "Add", "inputs": args}]
    value, dtype = "s", "float32"
    if observer == "Bitcast":
        nodes.append({"name": "c", "op": "tf.Bitcast/1/1", "inputs": ["s"],
                      "tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}})
        value, dtype = "c", "int32"
    elif observer == "Unknown":
        nodes.append({"name": "c", "op": "tf.Mystery/1/1", "inputs": ["s"], "tf_attrs": {}})
        value = "c"
    elif observer == "Exp":
        nodes.append({"name": "c", "op": "tf.Exp/1/1", "inputs": ["s"], "tf_attrs": {}})
        value = "c"
    if not into_output:
        nodes.append({"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["hx", value]})
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": dtype, "shape": [1]}},
        "feeds": {"a": {"dtype": "float32", "shape": [1]}, "b": {"dtype": "float32", "shape": [1]}},
        "nodes": nodes, "outputs": {"o": value} if into_output else {}})


def test_the_two_orders_of_an_add_of_two_nans_differ_in_payload():
    a = np.array([NAN1], np.int32).view(np.float32)
    b = np.array([NAN2], np.int32).view(np.float32)
    assert (a + b).view(np.int32)[0] == NAN1 and (b + a).view(np.int32)[0] == NAN2


@pytest.mark.parametrize("observer", ["Bitcast", "Unknown"])
def test_a_swap_whose_nan_reaches_a_payload_observer_is_not_proved(observer):
    p, q = program(["$a", "$b"], observer), program(["$b", "$a"], observer)
    r = structural_refinement(p, q)
    assert not r.proved, r.reason


@pytest.mark.parametrize("observer", [None, "Exp"])
def test_a_swap_in_a_program_blind_to_payloads_is_still_proved(observer):
    p, q = program(["$a", "$b"], observer), program(["$b", "$a"], observer)
    r = structural_refinement(p, q)
    assert r.proved and r.stats["assigns_up_to_error"] == 1, r.reason


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
def test_the_oracle_tells_the_bitcast_swap_apart():
    """The false `sound` was false: with TensorFlow's Bitcast the two
    programs write different ints at a = NaN1, b = NaN2."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    p, q = program(["$a", "$b"], "Bitcast"), program(["$b", "$a"], "Bitcast")
    feeds = {"a": Tensor(np.array([NAN1], np.int32).view(np.float32)),
             "b": Tensor(np.array([NAN2], np.int32).view(np.float32))}
    init = {"x": Tensor(np.array([0], np.int32))}
    with kernels.use(True):
        ours = outcome_set(p, feeds, init, "atomic", "outputs+state")
        theirs = outcome_set(q, feeds, init, "atomic", "outputs+state")
    assert [o for o, _ in theirs.items() if o not in ours]


@pytest.mark.parametrize("into_output", [False, True])
def test_the_checker_proves_no_swap_whose_nan_bits_are_shown(into_output):
    """The whole checker: the structural rule refuses the Assign case, and
    the symbolic proof (Z3 has one NaN, so Add(a, b) = Add(b, a) there and
    Bitcast of both is one term) is not taken as `sound` where a Bitcast
    shows a NaN's bits (checking/check.py NAN_PAYLOAD_OBSERVERS): false
    `sound` for both, found by review10."""
    from tfsem.checking import check_rewrite
    from tfsem.oracle import kernels
    p = program(["$a", "$b"], "Bitcast", into_output)
    q = program(["$b", "$a"], "Bitcast", into_output)
    with kernels.use(False):
        v = check_rewrite(p, q, timeout=10)
    assert v.verdict != "sound", v.describe()
    assert "NaN's bits" in v.reason or "(V)" in v.reason
