"""The nn family: Relu, ReluGrad, BiasAdd and BiasAddGrad (TensorFlow's
nn_ops.cc), one OpDef per op: its import, its functions' value semantics and
exports (oracle/opdefs).  No encoding: uninterpreted in proofs.
"""

from __future__ import annotations

import math

from .. import functions as fns
from ..functions import (_REDUCTION_ORDER, NUMERIC, ShapeError, _is_float, _kernel,
                         _no_float, dtype_name, ftz)
from .math import BLOCKED_KERNEL, ELEMENTWISE_KERNEL   # (the kernels' arguments are math's)
from .registry import (OpDef, define, export_as, flushed, function, kernels_are_functions,
                       known, one_function)

FAMILY = "nn"


#: Eigen's packet size of TensorFlow 2.21's pip wheel (built for AVX: 256-bit
#: packets) for the float dtypes whose Relu depends on the element's position
#: in the flattened tensor; float16's Relu does not (its results are the same
#: everywhere), integers neither.
_RELU_PACKET = {"float32": 8, "float64": 4, "bfloat16": 8}


def _relu_on(xp, a, lead):
    """Relu of `a`, whose axes after the first `lead` (0, or 1 for a batch
    axis) are one tensor; see :func:`_relu`."""
    dt = dtype_name(a.dtype)
    af = ftz(xp, a)
    if not _is_float(a):
        return xp.where(a > 0, a, xp.zeros_like(a))
    zero = xp.zeros_like(a)
    if dt not in _RELU_PACKET:                       # float16: no flush, -0.0 kept
        return xp.where(xp.isnan(a) | (a > 0) | (a == 0), a, zero)
    shape = a.shape[lead:]
    n = math.prod(shape)
    p = _RELU_PACKET[dt]
    m = (n // p) * p                                 # elements [0, m): whole packets
    idx = xp.arange(n).reshape(shape)
    tail = idx >= m
    if dt == "bfloat16":
        # packets: -0.0 kept, a subnormal flushed to the zero of its sign; the
        # tail keeps subnormals; a negative normal is +0, NaN stays NaN
        return xp.where(af < 0, zero, xp.where(tail, a, af))
    # float32, float64: packets: NaN and x > 0 kept, every other element +0
    # (-0.0 and subnormals too); the tail's pairs: the same, but a zero
    # after flushing keeps its sign (-0.0 and a negative subnormal give
    # -0.0); the tail's first element when the tail is odd: x kept unless x
    # is negative and normal (a subnormal and -0.0 kept as they are)
    scalar = idx == m if (n - m) % 2 == 1 else xp.zeros(shape, dtype=bool)
    vec = xp.where(xp.isnan(a) | (af > 0), a, xp.where(tail & (af == 0), af, zero))
    return xp.where(scalar, xp.where(af < 0, zero, a), vec)


def _relu_batched(xp, args, attrs):
    _kernel("Relu", NUMERIC, *args)
    return (_relu_on(xp, args[0], 1),)


@function("Relu", 1, 1, batched=_relu_batched, export=export_as("Relu"))
def _relu(xp, args, attrs):
    """x > 0 ? x : 0, as TensorFlow 2.21's CPU kernel (Eigen's
    `cwiseMax(0)`, pip wheel built for AVX) computes it: bit for bit on
    -0.0 and subnormals only by the element's position in the flattened
    tensor.  Eigen's TensorExecutor evaluates whole packets (8 float32 or
    bfloat16, 4 float64) with `vmaxps`/`vmaxpd` under the runtime's
    flush-to-zero and denormals-are-zero: -0.0 and every subnormal become
    +0.0 there (float32/float64; bfloat16 keeps -0.0 and flushes a
    subnormal to the zero of its sign).  The elements past the last whole
    packet (all of a tensor with fewer elements than a packet) are Eigen's
    scalar loop `numext::maxi(x, 0)` = `x < 0 ? 0 : x`, as the compiler
    built it: on float32/float64 it takes the first element alone when the
    tail is odd (keeps -0.0 and a subnormal of either sign as they are) and
    the rest in pairs (SSE max under DAZ: -0.0 kept, a subnormal becomes
    the zero of its sign); on bfloat16 the tail keeps subnormals.  NaN stays
    NaN (its bits), a negative normal is +0.0, float16 keeps -0.0 and has
    no flush.  Threads do not move the tail: Eigen's parallelFor aligns its
    blocks to whole packets, so the tail is only at the end of the tensor.
    Measured in eager mode and inside a tf.function (Grappler and oneDNN
    on) at every size 1..40, shapes [3,5], [4,8], [5,7] and 100,003
    elements with 1, 2 and 16 intra-op threads
    (tests/test_relu_signed_zero.py compares this model with the kernel)."""
    _kernel("Relu", NUMERIC, *args)
    return (_relu_on(xp, args[0], 0),)


def _relu_grad_on(xp, g, f, lead=0):
    _kernel("ReluGrad", NUMERIC, g, f)
    g, f = ftz(xp, g), ftz(xp, f)
    if g.shape != f.shape:
        raise ShapeError("ReluGrad needs equal shapes")
    return (ftz(xp, fns.nan_bits(xp, xp.multiply(g, (f > 0).astype(g.dtype)), g, lead=lead)),)


def _relu_grad_batched(xp, args, attrs):
    return _relu_grad_on(xp, *args, lead=1)


@function("ReluGrad", 2, 1, batched=_relu_grad_batched, export=export_as("ReluGrad"))
def _relu_grad(xp, args, attrs):
    """gradients * (features > 0), the product taken in the tensor's dtype;
    subnormals flushed (TensorFlow's CPU runtime); a NaN's bits as
    TensorFlow's (functions.nan_bits)."""
    return _relu_grad_on(xp, *args)


@function("BiasAdd", 2, 1, batched=False, export=export_as("BiasAdd"))
def _bias_add(xp, args, attrs):
    """value + bias along the last axis (data_format NHWC)."""
    v, b = args
    _kernel("BiasAdd", NUMERIC, v, b)
    # (TensorFlow's kernel: "Input tensor must be at least 2D", bias_op.cc)
    if b.ndim != 1 or v.ndim < 2 or v.shape[-1] != b.shape[0]:
        raise ShapeError("BiasAdd needs a value of rank >= 2 and a 1-D bias as long as its "
                         "last axis")
    return (fns.nan_bits(xp, xp.add(v, b), v, b),)


@function("BiasAddGrad", 1, 1, batched=False,
          tf_kernel=lambda a, attrs: ("BiasAddGrad", list(a), {"data_format": "NHWC"}),
          export=export_as("BiasAddGrad"))
def _bias_add_grad(xp, args, attrs):
    """The sum over every axis but the last (integers only: float sums are not modelled)."""
    (v,) = args
    _kernel("BiasAddGrad", NUMERIC, v)
    _no_float("BiasAddGrad", v, why=_REDUCTION_ORDER)
    if v.ndim < 2:   # (TensorFlow's kernel: "Input tensor must be at least 2D")
        raise ShapeError("BiasAddGrad needs rank >= 2")
    rows = math.prod(v.shape[:-1])   # (not -1: a last axis of 0 leaves it undetermined)
    return (xp.sum(v.reshape(rows, v.shape[-1]), axis=0, dtype=v.dtype),)


#: BiasAdd on the dtypes TensorFlow's CPU runtime flushes (oracle/functions.py ftz)
_BIAS_ADD_FTZ = fns.flushed_variant(_bias_add)


for _f in (_relu, _relu_grad, _bias_add_grad):
    define(OpDef(_f.name, f"the function {_f.name}", one_function(_f.name), FAMILY,
                 functions=(_f,)))


def _bias_add_build(b):
    t = b.dtype("T")
    fmt = b.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "N...C"):
        b.reject(f"data_format {fmt!r} is not modelled (NHWC only)")
    return [b.add(flushed("BiasAdd", t), [b.input(0), b.input(1)])]


define(OpDef("BiasAdd", "the function BiasAdd (data_format NHWC only)", _bias_add_build, FAMILY,
             functions=(_bias_add, _BIAS_ADD_FTZ)))


# -- TensorFlow's kernels as functions, and the pure ops tfsem does not compute
# (math.py says how an entry's `kernel` and `known(..., uninterpreted=True)`
# are read) --------------------------------------------------------------------

#: Convolutions and their gradients, pooling, batch normalization, Softmax
#: and the losses: Eigen's and oneDNN's blocking is fixed by the shapes and
#: the thread count (1), as for math's reductions.
NN_KERNEL = BLOCKED_KERNEL

kernels_are_functions("BiasAdd ReluGrad", ELEMENTWISE_KERNEL)
kernels_are_functions("BiasAddGrad", NN_KERNEL)

known("""
    Softplus Softsign Elu Selu Relu6 LeakyRelu Relu6Grad LeakyReluGrad EluGrad SeluGrad
    SoftplusGrad SoftsignGrad
""", FAMILY, uninterpreted=True, kernel=ELEMENTWISE_KERNEL)
known("""
    Softmax LogSoftmax Conv2D Conv2DBackpropInput Conv2DBackpropFilter DepthwiseConv2dNative
    DepthwiseConv2dNativeBackpropInput DepthwiseConv2dNativeBackpropFilter MaxPool AvgPool
    MaxPoolGrad AvgPoolGrad MaxPoolV2 MaxPoolGradV2 FusedBatchNormV2 FusedBatchNormGrad
    FusedBatchNormGradV2
""", FAMILY, uninterpreted=True, kernel=NN_KERNEL)
for _op in ("SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"):
    known(_op, FAMILY, uninterpreted=True, kernel=NN_KERNEL, output_args=("loss", "backprop"))
known("FusedBatchNorm", FAMILY, uninterpreted=True, kernel=NN_KERNEL,
      output_args=("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"))
known("FusedBatchNormV3", FAMILY, uninterpreted=True, kernel=NN_KERNEL,
      output_args=("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                   "reserve_space_3"))
known("FusedBatchNormGradV3", FAMILY, uninterpreted=True, kernel=NN_KERNEL,
      output_args=("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_4",
                   "reserve_space_5"))
#: the activations the remapper fuses into _FusedMatMul and _FusedConv2D on a
#: CPU with oneDNN (remapper.cc IsSupportedActivation), Relu first; the
#: first four also into _FusedBatchNormEx and Conv2D + FusedBatchNorm
FUSED_ACTIVATIONS = ("Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid")
#: The remapper's fused ops (Grappler writes them on a CPU; remapper.cc):
#: MatMul or Conv2D with BiasAdd or FusedBatchNorm and an activation
#: (`fused_ops`, `num_args`, `epsilon`, `leakyrelu_alpha`), and
#: FusedBatchNorm with an activation.  Uninterpreted in proofs (a fused op
#: is another function than its unfused pattern, so a rewrite into one is
#: decided concretely); TensorFlow's CPU kernel is run with the node's
#: attributes (tests/test_remap_fused_ops.py compares it with TensorFlow's
#: runtime).
known("_FusedMatMul _FusedConv2D", FAMILY, uninterpreted=True, kernel=NN_KERNEL)
known("_FusedBatchNormEx", FAMILY, uninterpreted=True, kernel=NN_KERNEL,
      output_args=("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                   "reserve_space_3"))
#: Gelu: uninterpreted, but its kernel is not among those run (not argued
#: deterministic: a concrete run through it stops naming it).
known("Gelu", FAMILY, uninterpreted=True)
