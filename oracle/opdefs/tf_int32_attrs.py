"""Int attributes TensorFlow reads as an int32 (`GetAttr` into an int32),
for the ops tfsem models or passes to kernels: graphdef/signatures.py
refuses a node whose value is outside int32, as TensorFlow does ("Attr
begin_mask has value 4611686018427387904 out of range for an int32").
Each entry was found, and is kept, compared with TensorFlow
(tests/test_graphdef_signatures_tensorflow.py).  A list(int) attribute's
every element."""

from __future__ import annotations

#: op -> its int attributes whose value TensorFlow's shape function reads
#: as an int32: a value outside int32 and TensorFlow refuses the graph.
INT32_ATTRS: dict[str, tuple[str, ...]] = {
    "StridedSlice": ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                     "shrink_axis_mask"),
    "Pack": ("axis",),
    "Unpack": ("axis",),
    "OneHot": ("axis",),
    "Squeeze": ("squeeze_dims",),
    "GatherV2": ("batch_dims",),
    # (uninterpreted, passed to TensorFlow's kernels)
    "MaxPool": ("ksize", "strides"),
    "AvgPool": ("ksize", "strides"),
    "Conv2D": ("strides", "dilations"),
    "DepthwiseConv2dNative": ("strides",),
}

#: op -> its int attributes that only the kernel reads as an int32: the
#: graph loads, and every run that reaches the node fails ("Create kernel
#: failed: ... out of range for an int32"), so a node that a fetch or
#: target reaches is refused (one nothing reaches is never created).
INT32_KERNEL_ATTRS: dict[str, tuple[str, ...]] = {
    op: ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    for op in ("StridedSliceGrad", "ResourceStridedSliceAssign")}
