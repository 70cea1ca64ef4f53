"""The element bound checked before a function runs (oracle/functions.py
`check_size`): a TensorFlow kernel applied to shapes that do not broadcast
(a convolution's input and filter) is bounded by its arguments' sizes, not
by a "broadcast shape" of them, which is no size of anything (issue 23:
every σ of the real-graphs corpus's MobileNetV2 step was refused at its
DepthwiseConv2dNative, 8x48x48x240 elements "producing" 22 million, so that
its checks compared no σ at all).  Everything else keeps its bound."""

from __future__ import annotations

import pytest

from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import MAX_TENSOR_ELEMENTS, check_size

INPUT, FILTER = (8, 48, 48, 240), (3, 3, 240, 1)


def test_a_kernel_on_shapes_that_do_not_broadcast_is_bounded_by_its_arguments():
    # the old bound: 8 * 48 * 240 * 240 elements
    assert 8 * 48 * 240 * 240 > MAX_TENSOR_ELEMENTS
    check_size("tf.DepthwiseConv2dNative/2/1", [INPUT, FILTER])


def test_every_other_bound_stays():
    # tfsem's own functions: the broadcast bound, whatever the shapes
    with pytest.raises(BudgetExceeded):
        check_size("Mul", [INPUT, FILTER])
    # a kernel on shapes that broadcast: their broadcast shape
    with pytest.raises(BudgetExceeded):
        check_size("tf.AddV2/2/1", [(4096, 1), (1, 8192)])
    # arguments that are too large by themselves
    with pytest.raises(BudgetExceeded):
        check_size("tf.DepthwiseConv2dNative/2/1", [(MAX_TENSOR_ELEMENTS + 1,), (1,)])
