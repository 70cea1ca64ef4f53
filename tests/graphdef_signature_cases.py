"""Graphs for the signature check's tests (graphdef/signatures.py):
`VALID`, graphs TensorFlow loads, and `REFUSED`, most of them one of
those changed in one attribute or input, so that TensorFlow refuses it
(tests/test_graphdef_signatures.py: tfsem refuses each too, naming node
and attribute; tests/test_graphdef_signatures_tensorflow.py: TensorFlow's
import_graph_def agrees on every one)."""

from __future__ import annotations


def placeholder(name: str, dtype: str, dims: tuple[int, ...]) -> str:
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    return (f'node {{ name: "{name}" op: "Placeholder" attr {{ key: "dtype" value {{ type: '
            f'{dtype} }} }} attr {{ key: "shape" value {{ shape {{ {shape} }} }} }} }}\n')


def const(name: str, dtype: str, values: list[int], dims: tuple[int, ...] | None = None,
          declared: bool = True) -> str:
    field = {"DT_INT32": "int_val", "DT_INT64": "int64_val", "DT_FLOAT": "float_val"}[dtype]
    dims = (len(values),) if dims is None else dims
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    vals = " ".join(f"{field}: {v}" for v in values)
    dt = f'attr {{ key: "dtype" value {{ type: {dtype} }} }} ' if declared else ""
    return (f'node {{ name: "{name}" op: "Const" {dt}attr {{ key: "value" value {{ tensor {{ '
            f'dtype: {dtype} tensor_shape {{ {shape} }} {vals} }} }} }} }}\n')


def node(name: str, op: str, inputs: list[str], **attrs: str) -> str:
    ins = " ".join(f'input: "{i}"' for i in inputs)
    at = " ".join(f'attr {{ key: "{k}" value {{ {v} }} }}' for k, v in attrs.items())
    return f'node {{ name: "{name}" op: "{op}" {ins} {at} }}\n'


X = placeholder("x", "DT_INT32", (4,))
XF = placeholder("f", "DT_FLOAT", (4,))
X2 = placeholder("m", "DT_INT32", (2, 1))
I32, I64, F32 = "type: DT_INT32", "type: DT_INT64", "type: DT_FLOAT"
BIG = 1 << 62


def strided_slice(**masks: int) -> str:
    extra = {k: f"i: {v}" for k, v in masks.items()}
    return (X + const("b", "DT_INT32", [0]) + const("e", "DT_INT32", [2])
            + const("s", "DT_INT32", [1])
            + node("out", "StridedSlice", ["x", "b", "e", "s"], T=I32, Index=I32, **extra))


def strided_slice_grad(**masks: int) -> str:
    extra = {k: f"i: {v}" for k, v in masks.items()}
    return (X + const("sh", "DT_INT32", [6]) + const("b", "DT_INT32", [0])
            + const("e", "DT_INT32", [4]) + const("s", "DT_INT32", [1])
            + node("out", "StridedSliceGrad", ["sh", "b", "e", "s", "x"], T=I32, Index=I32,
                   **extra))


def strided_slice_assign(**masks: int) -> str:
    extra = {k: f"i: {v}" for k, v in masks.items()}
    return (node("v", "VarHandleOp", [], dtype=I32, shape="shape { dim { size: 6 } }",
                 shared_name='s: "v"')
            + X + const("b", "DT_INT32", [0]) + const("e", "DT_INT32", [4])
            + const("s", "DT_INT32", [1])
            + node("out", "ResourceStridedSliceAssign", ["v", "b", "e", "s", "x"], T=I32,
                   Index=I32, **extra))


def one_hot(ti: str | None = None, axis: int = -1, indices: str = "x") -> str:
    extra = {"TI": ti} if ti else {}
    return (X + placeholder("x64", "DT_INT64", (4,)) + const("d", "DT_INT32", [3], ())
            + const("on", "DT_FLOAT", [1], ()) + const("off", "DT_FLOAT", [0], ())
            + node("out", "OneHot", [indices, "d", "on", "off"], T=F32, axis=f"i: {axis}",
                   **extra))


def pack(axis: int = 0) -> str:
    return X + node("out", "Pack", ["x", "x"], T=I32, N="i: 2", axis=f"i: {axis}")


def unpack(axis: int = 0) -> str:
    return X + node("out", "Unpack", ["x"], T=I32, num="i: 4", axis=f"i: {axis}")


def squeeze(dims: list[int]) -> str:
    return X2 + node("out", "Squeeze", ["m"], T=I32,
                     squeeze_dims="list { " + " ".join(f"i: {d}" for d in dims) + " }")


def add_n(n: int, k: int = 2) -> str:
    return X + node("out", "AddN", ["x"] * k, T=I32, N=f"i: {n}")


def concat(n: int, k: int = 2) -> str:
    return (X + const("ax", "DT_INT32", [0], ())
            + node("out", "ConcatV2", ["x"] * k + ["ax"], T=I32, N=f"i: {n}", Tidx=I32))


def identity_n(types: list[str]) -> str:
    return (X + XF + node("out", "IdentityN", ["x", "f"],
                          T="list { " + " ".join(f"type: {t}" for t in types) + " }"))


def cast(src: str) -> str:
    return X + node("out", "Cast", ["x"], SrcT=f"type: {src}", DstT=I64)


def sum_(tidx: str | None, axes: str = "DT_INT32") -> str:
    extra = {"Tidx": f"type: {tidx}"} if tidx else {}
    return (X + const("ax", axes, [0]) + node("out", "Sum", ["x", "ax"], T=I32, **extra))


def split(n: int) -> str:
    return (const("ax", "DT_INT32", [0], ()) + X
            + node("out", "Split", ["ax", "x"], T=I32, num_split=f"i: {n}"))


U8 = placeholder("u", "DT_UINT8", (4,))
U32 = placeholder("u", "DT_UINT32", (4,))
BOOL = placeholder("p", "DT_BOOL", (4,))

#: name -> (graph text, fetch or ^target): graphs TensorFlow loads (defaults left out
#: where the OpDef gives them: OneHot's TI int64 on int64 indices, Sum's
#: Tidx int32 on int32 axes, StridedSlice's masks 0)
VALID = {
    "strided_slice": (strided_slice(begin_mask=1, end_mask=1, shrink_axis_mask=0), "out"),
    "strided_slice_grad": (strided_slice_grad(begin_mask=1), "out"),
    "strided_slice_assign": (strided_slice_assign(end_mask=1), "^out"),
    "one_hot_default_ti": (one_hot(indices="x64"), "out"),
    "one_hot_ti_int32": (one_hot(ti=I32), "out"),
    "pack": (pack(1), "out"),
    "unpack": (unpack(0), "out:3"),
    "squeeze": (squeeze([1]), "out"),
    "add_n": (add_n(2), "out"),
    "concat": (concat(2), "out"),
    "identity_n": (identity_n(["DT_INT32", "DT_FLOAT"]), "out:1"),
    "cast": (cast("DT_INT32"), "out"),
    "sum_default_tidx": (sum_(None), "out"),
    "split": (split(2), "out:1"),
    "const": (const("out", "DT_INT32", [7]), "out"),
    "mul_uint32": (U32 + node("out", "Mul", ["u", "u"], T="type: DT_UINT32"), "out"),
    "neg_int8": (placeholder("u", "DT_INT8", (4,)) + node("out", "Neg", ["u"],
                                                           T="type: DT_INT8"), "out"),
}

#: name -> (graph text, fetch, the attribute tfsem's refusal names)
REFUSED = {
    **{f"strided_slice_{m}": (strided_slice(**{m: BIG}), "out", m)
       for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                 "shrink_axis_mask")},
    "strided_slice_grad_mask": (strided_slice_grad(end_mask=1 << 40), "out", "end_mask"),
    "strided_slice_assign_mask": (strided_slice_assign(new_axis_mask=-(1 << 33)), "^out",
                                  "new_axis_mask"),
    "one_hot_default_ti_on_int32": (one_hot(), "out", "TI"),
    "one_hot_axis": (one_hot(ti=I32, axis=1 << 32), "out", "axis"),
    "pack_axis": (pack(1 << 32), "out", "axis"),
    "unpack_axis": (unpack(-(1 << 40)), "out:3", "axis"),
    "squeeze_dims": (squeeze([1, 1 << 33]), "out", "squeeze_dims"),
    "add_n_one_more": (add_n(3), "out", "N"),
    "add_n_one_fewer": (add_n(1), "out", "N"),
    "concat_one_more": (concat(3), "out", "N"),
    "concat_below_minimum": (concat(1, 1), "out", "N"),
    "identity_n_types": (identity_n(["DT_INT32", "DT_INT32"]), "out:1", "T"),
    "identity_n_count": (identity_n(["DT_INT32"]), "out", "T"),
    "cast_src": (cast("DT_FLOAT"), "out", "SrcT"),
    "sum_default_tidx_on_int64": (sum_(None, "DT_INT64"), "out", "Tidx"),
    "split_count": (split(1 << 32), "out", "num_split"),
    "const_without_dtype": (const("out", "DT_INT32", [7], declared=False), "out", "dtype"),
    "add_without_t": (X + node("out", "AddV2", ["x", "x"]), "out", "T"),
    # a type the OpDef does not allow (each imported before: tfsem's models
    # have them)
    "neg_uint8": (U8 + node("out", "Neg", ["u"], T="type: DT_UINT8"), "out", "T"),
    "add_bool": (BOOL + node("out", "AddV2", ["p", "p"], T="type: DT_BOOL"), "out", "T"),
    "sqrt_int32": (X + node("out", "Sqrt", ["x"], T="type: DT_INT32"), "out", "T"),
    "maximum_bool": (BOOL + node("out", "Maximum", ["p", "p"], T="type: DT_BOOL"), "out", "T"),
}


def function_call(src: str) -> str:
    """`call`, a StatefulPartitionedCall of f(a) = Cast[SrcT=src](a) on the
    int32 x, and `other` = Identity(x), which needs no call."""
    lib = ('library { function { signature { name: "f" input_arg { name: "a" type: DT_INT32 } '
           'output_arg { name: "out" type: DT_INT64 } } node_def { name: "c" op: "Cast" '
           f'input: "a" attr {{ key: "SrcT" value {{ type: {src} }} }} attr {{ key: "DstT" '
           'value { type: DT_INT64 } } } ret { key: "out" value: "c:y:0" } } }\n')
    return (X + node("call", "StatefulPartitionedCall", ["x"], Tin="list { type: DT_INT32 }",
                     Tout="list { type: DT_INT64 }", f='func { name: "f" }')
            + node("other", "Identity", ["x"], T="type: DT_INT32") + lib)
