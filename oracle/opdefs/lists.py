"""The TensorList family: TensorFlow's TensorList values and the ops that
loops use on them (SPEC section 9: "TensorList ops that loops use ... as
values"), one OpDef per op (its import, value semantics, export;
oracle/opdefs).

tf.TensorArray in TensorFlow 2 (and so Keras' RNN layers, `tf.while_loop`
accumulators, `tf.map_fn`) is a TensorList: a DT_VARIANT scalar holding a
list of tensors, an element dtype and a partial element shape.  The ops are
pure: each returns a new list (TensorFlow's kernels copy on write), so a list
is a value like a tensor, and tfsem models it as one, :class:`TensorList`:

* ``element_dtype``: a tfsem dtype;
* ``element_shape``: None (unknown rank) or a tuple of dims, -1 unknown;
* ``items``: a tuple of tensors, None where an element is not set
  (TensorListReserve makes such elements; reading one gives zeros of the
  element shape when that shape is known, else fails).

Each op is TensorFlow's kernel (tensorflow/core/kernels/list_kernels.{h,cc},
TensorFlow 2.21), error for error: where TensorFlow fails the op with
InvalidArgument, the node's value is the error value `invalid-argument`
(errors are values, SPEC section 2), and the tests
(tests/test_tensor_lists.py) compare every op with TensorFlow's kernel,
the failures included.  The functions run in the reference semantics and
the fast oracle on values, and in the array back ends' replay of programs
with control flow (backends/controlflow.py, numpy and cupy) on
:class:`ArrayList`, a list whose elements are the back end's own arrays:
each op is written once, against a holder of values (`_Values`,
`_Arrays`), so both run the same lines (tests/test_tensor_lists.py runs
every case on each against TensorFlow's kernels).  The array back ends'
runs of programs without control flow (and the batched back end) refuse
them by name ("cannot run"), and the checker treats them as uninterpreted
functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .. import functions as fns
from ..functions import TENSORFLOW, CannotRun, Function, _bool_attr, _dtype_attr, _int_attr
from ..program import DataIn, TensorType
from ..values import DTYPES, Error, Tensor, dtype_name, format_value
from .registry import OpDef, define

INVALID = "invalid-argument"


@dataclass(frozen=True, slots=True)
class TensorList:
    """A TensorList value (see the module docstring)."""

    element_dtype: str
    element_shape: tuple[int, ...] | None
    items: tuple[Tensor | None, ...]
    #: EmptyTensorList's max_num_elements (-1: no limit): PushBack past it fails
    max_elements: int = -1

    #: what code that asks any value for its type sees
    dtype = "variant"
    shape: tuple[int, ...] = ()

    def describe(self) -> str:
        shape = "?" if self.element_shape is None else \
            "[" + ", ".join("?" if d < 0 else str(d) for d in self.element_shape) + "]"
        body = ", ".join("unset" if t is None else format_value(t) for t in self.items)
        return f"list<{self.element_dtype}{shape}>[{body}]"

    def __repr__(self) -> str:
        return self.describe()

    @property
    def exact(self) -> object:
        """This list as a key equal only to a list of the same bits
        (values.exact): itself unless an item holds a NaN other than numpy's."""
        keys = tuple(None if t is None else t.exact for t in self.items)
        if all(k is t for k, t in zip(keys, self.items)):
            return self
        return ("list", self.element_dtype, self.element_shape, keys, self.max_elements)


class ListOpError(fns.OpError):
    def __init__(self, message: str):
        super().__init__(INVALID, message)


# -- partial shapes (TensorFlow's PartialTensorShape) ------------------------

def partial_from_tensor(t: Tensor) -> tuple[int, ...] | None:
    """An element_shape operand as TensorFlow reads it (TensorShapeFromTensor):
    a scalar -1 is an unknown rank, a vector lists dims (-1 unknown)."""
    return _partial(t.array, t.dtype)


def _partial(a: np.ndarray, dtype: str) -> tuple[int, ...] | None:
    """partial_from_tensor of a host array of dtype `dtype` (every holder's)."""
    if dtype not in ("int32", "int64"):
        raise ListOpError(f"element_shape must be int32 or int64, not {dtype}")
    if a.ndim == 0:
        if int(a) != -1:
            raise ListOpError(f"the only scalar element_shape is -1 (unknown rank), not {int(a)}")
        return None
    if a.ndim != 1:
        raise ListOpError("element_shape must be a scalar or a vector")
    dims = tuple(int(x) for x in a)
    if any(d < -1 for d in dims):
        raise ListOpError(f"element_shape {list(dims)} has a dimension below -1")
    return dims


def merge(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """PartialTensorShape::MergeWith: the most specific shape compatible
    with both; incompatible shapes fail."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ListOpError(f"incompatible shapes {list(a)} and {list(b)}")
    out = []
    for x, y in zip(a, b):
        if x >= 0 and y >= 0 and x != y:
            raise ListOpError(f"incompatible shapes {list(a)} and {list(b)}")
        out.append(x if x >= 0 else y)
    return tuple(out)


def compatible(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    try:
        merge(a, b)
        return True
    except ListOpError:
        return False


def _defined(s: tuple[int, ...] | None) -> bool:
    return s is not None and all(d >= 0 for d in s)


# -- the functions -----------------------------------------------------------
#
# Each op is written once (`_reserve` ... `_pop_back` below) against a
# *holder* `h`: how the engine running it holds tensors and lists.  The
# reference semantics and the fast oracle hold Tensors and TensorLists of
# Tensors (:data:`VALUES`); an array back end holds its own arrays and
# :class:`ArrayList` of them (:func:`array_values`, numpy or cupy: the
# elements stay where the back end keeps its arrays).  The ops' operands
# that TensorFlow's kernels read on the host (an index, an element_shape, a
# count) are read on the host by both.


@dataclass(frozen=True, eq=False, slots=True)
class ArrayList:
    """A TensorList as an array back end holds it (backends/controlflow.py):
    the fields of :class:`TensorList`, with each element an array of the
    back end's module (a cupy array on a GPU), or None where unset.  Not a
    value of outcomes: the back end converts it to a TensorList at the end
    of a run (backends/controlflow.py `list_to_host`)."""

    element_dtype: str
    element_shape: tuple[int, ...] | None
    items: tuple[Any, ...]
    max_elements: int = -1

    dtype = "variant"
    shape: tuple[int, ...] = ()


class _Values:
    """The oracle's holder: Tensors, and TensorLists of Tensors."""

    list_type: type = TensorList

    def is_tensor(self, v: Any) -> bool:
        return isinstance(v, Tensor)

    def operand(self, t: Any) -> tuple[np.ndarray, str]:
        """A tensor operand on the host, with its dtype's name."""
        return t.array, t.dtype

    def dtype(self, t: Any) -> str:
        return t.dtype

    def shape(self, t: Any) -> tuple[int, ...]:
        return t.shape

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        return Tensor(np.zeros(shape, dtype=DTYPES[dtype]))

    def rows(self, t: Any) -> tuple:
        return tuple(Tensor(np.array(x)) for x in t.array)

    def stack(self, items: Sequence[Any], shape: tuple[int, ...], dtype: str) -> Any:
        dt = DTYPES[dtype]
        parts = [np.zeros(shape, dtype=dt) if t is None else t.array for t in items]
        return Tensor(np.stack(parts) if parts else np.zeros((0,) + tuple(shape), dtype=dt))

    def from_host(self, array: np.ndarray) -> Any:
        return Tensor(array)

    def new(self, dtype: str, shape, items: tuple, max_elements: int = -1) -> Any:
        return TensorList(dtype, shape, items, max_elements)


class _Arrays:
    """An array back end's holder: arrays of the module `xp`, and
    ArrayLists of them."""

    list_type = ArrayList

    def __init__(self, xp: Any):
        self.xp = xp

    def is_tensor(self, v: Any) -> bool:
        return isinstance(v, self.xp.ndarray)

    def operand(self, t: Any) -> tuple[np.ndarray, str]:
        # (cupy's arrays come to the host with .get(): TensorFlow's list
        # kernels read these operands in host memory too)
        host = t if isinstance(t, np.ndarray) else t.get()
        name = dtype_name(host.dtype)
        if name is None:
            raise ListOpError(f"an operand of dtype {host.dtype} (not one of tfsem's)")
        return host, name

    def dtype(self, t: Any) -> str:
        return dtype_name(t.dtype)

    def shape(self, t: Any) -> tuple[int, ...]:
        return tuple(t.shape)

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        return self.xp.zeros(shape, dtype=DTYPES[dtype])

    def rows(self, t: Any) -> tuple:
        return tuple(t[i].copy() for i in range(t.shape[0]))

    def stack(self, items: Sequence[Any], shape: tuple[int, ...], dtype: str) -> Any:
        xp, dt = self.xp, DTYPES[dtype]
        parts = [xp.zeros(shape, dtype=dt) if t is None else t for t in items]
        return xp.stack(parts) if parts else xp.zeros((0,) + tuple(shape), dtype=dt)

    def from_host(self, array: np.ndarray) -> Any:
        return self.xp.asarray(array)

    def new(self, dtype: str, shape, items: tuple, max_elements: int = -1) -> Any:
        return ArrayList(dtype, shape, items, max_elements)


#: the reference semantics' holder
VALUES = _Values()
_ARRAYS: dict[int, _Arrays] = {}


def array_values(xp: Any) -> _Arrays:
    """The holder of the array module `xp` (numpy, cupy, numpy standing in
    for cupy)."""
    h = _ARRAYS.get(id(xp))
    if h is None or h.xp is not xp:
        h = _ARRAYS[id(xp)] = _Arrays(xp)
    return h


class ListFunction(Function):
    """A registry function whose arguments and results may be TensorLists:
    `apply` takes values (the error discipline of Function.apply: an error
    in an argument is the result).  `array_impl(xp, args, attrs)` is the
    same op on an array back end's arrays and ArrayLists (errors raised as
    OpError, as `impl`'s are), which the control-flow replay runs
    (backends/controlflow.py); `impl`, the array back ends' runs of
    programs without control flow, refuses it by name."""

    def apply(self, args: Sequence[Any], attrs: Mapping[str, Any] | None = None,
              xp: Any = np) -> tuple[Any, ...]:
        for i in self.strict():
            if isinstance(args[i], Error):
                return (args[i],) * self.n_out
        try:
            return tuple(self.values_impl(list(args), attrs or {}))
        except fns.OpError as exc:
            return (Error(exc.reason),) * self.n_out


def _no_arrays(name: str):
    def impl(xp, args, attrs):
        raise CannotRun(f"{name} makes or reads a TensorList: the reference semantics, the "
                        "outcome-set oracle and the array back ends' replay of programs with "
                        "control flow run it, the array back ends' runs of programs without "
                        "control flow (and the batched back end) do not")
    return impl


def _list_function(name: str, n_in: int, n_out: int = 1, **attrs: Any):
    def deco(op):
        def values_impl(args, attrs):
            return op(VALUES, args, attrs)

        def array_impl(xp, args, attrs):
            return op(array_values(xp), list(args), attrs)

        fn = ListFunction(name, n_in, n_out, _no_arrays(name), doc=(op.__doc__ or "").strip(),
                          attrs=attrs, pure=False, family=TENSORFLOW, casts=True,
                          mixed_dtypes=True, export=_export_list(name))
        object.__setattr__(fn, "values_impl", values_impl)
        object.__setattr__(fn, "array_impl", array_impl)
        object.__setattr__(fn, "result_types", _RESULT_TYPES[name])
        fns.register(fn)
        return op
    return deco


# -- export: each function as its TensorFlow op (the import model in reverse) ---

#: A TensorList's type: a DT_VARIANT scalar (tfsem's dtype name "variant").
LIST_TYPE = TensorType("variant", ())

#: Each function's result types from its attributes (export infers the
#: types of a program's values with them: a list's elements are not arrays).
_RESULT_TYPES = {
    "EmptyTensorList": lambda a: [LIST_TYPE], "TensorListReserve": lambda a: [LIST_TYPE],
    "TensorListFromTensor": lambda a: [LIST_TYPE], "TensorListSetItem": lambda a: [LIST_TYPE],
    "TensorListPushBack": lambda a: [LIST_TYPE],
    "TensorListLength": lambda a: [TensorType("int32", ())],
    "TensorListElementShape": lambda a: [TensorType(a["shape_type"], None)],
    "TensorListGetItem": lambda a: [TensorType(a["element_dtype"], None)],
    "TensorListStack": lambda a: [TensorType(a["element_dtype"], None)],
    "TensorListPopBack": lambda a: [LIST_TYPE, TensorType(a["element_dtype"], None)],
}


def _export_list(op: str):
    """element_dtype, and shape_type where the op takes an element_shape
    operand (its dtype)."""
    def export(e) -> list:
        attrs = e.attrs
        a: dict[str, Any] = {}
        if "element_dtype" in attrs:
            a["element_dtype"] = {"type": e.tf_dtype(attrs["element_dtype"])}
        if op in ("EmptyTensorList", "TensorListReserve"):
            a["shape_type"] = e.T(0)
        elif op == "TensorListFromTensor":
            a["shape_type"] = e.T(1)
        elif op == "TensorListElementShape":
            a["shape_type"] = {"type": e.tf_dtype(attrs["shape_type"])}
        if op == "TensorListSetItem":
            a["resize_if_index_out_of_bounds"] = {"b": bool(attrs["resize_if_index_out_of_bounds"])}
        if op == "TensorListStack":
            a["num_elements"] = {"i": int(attrs["num_elements"])}
        return [{"name": e.name, "op": op, "input": e.data + e.ctrl, "attr": a}]
    return export


def _list(h: _Values, v: Any, what: str = "input_handle") -> Any:
    if not isinstance(v, h.list_type):
        raise ListOpError(f"{what} is not a TensorList")
    return v


def _tensor(h: _Values, v: Any, what: str) -> Any:
    if not h.is_tensor(v):
        raise ListOpError(f"{what} is not a tensor")
    return v


def _scalar_int(h: _Values, v: Any, what: str, dtypes=("int32",)) -> int:
    a, dtype = h.operand(_tensor(h, v, what))
    if dtype not in dtypes or a.ndim != 0:
        raise ListOpError(f"{what} must be a scalar of {' or '.join(dtypes)}")
    return int(a)


def _shape_operand(h: _Values, v: Any, what: str = "element_shape") -> tuple[int, ...] | None:
    a, dtype = h.operand(_tensor(h, v, what))
    return _partial(a, dtype)


def _check_dtype(lst: Any, dtype: str) -> None:
    if lst.element_dtype != dtype:
        raise ListOpError(f"Invalid data types; op elements {dtype} but list elements "
                          f"{lst.element_dtype}")


def _zeros(h: _Values, shape: tuple[int, ...] | None, dtype: str, what: str) -> Any:
    if not _defined(shape):
        raise ListOpError(f"{what}: the element shape is not fully defined")
    return h.zeros(shape, dtype)


def _read_shape(h: _Values, lst: Any, requested: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The shape of an unset element read with `requested` (GetItem,
    PopBack, Stack): the list's and the request's, merged, and merged with
    the set elements' when that is not fully defined yet."""
    shape = merge(lst.element_shape, requested)
    if not _defined(shape):
        for t in lst.items:
            if t is not None:
                shape = merge(shape, h.shape(t))
    return shape


_ELEMENT_DTYPE = {"element_dtype": _dtype_attr}


@_list_function("TensorListReserve", 2, **_ELEMENT_DTYPE)
def _reserve(h, args, attrs):
    """TensorListReserve(element_shape, num_elements): a list of
    num_elements unset elements."""
    shape = _shape_operand(h, args[0])
    n = _scalar_int(h, args[1], "num_elements")
    if n < 0:
        raise ListOpError(f"The num_elements to reserve must be a non negative number, but "
                          f"got {n}")
    if n > fns.MAX_TENSOR_ELEMENTS:
        raise fns.too_large("TensorListReserve", n)
    return (h.new(attrs["element_dtype"], shape, (None,) * n),)


@_list_function("EmptyTensorList", 2, **_ELEMENT_DTYPE)
def _empty(h, args, attrs):
    """EmptyTensorList(element_shape, max_num_elements): a list of no
    elements that PushBack may grow to max_num_elements (-1: no limit)."""
    shape = _shape_operand(h, args[0])
    n = _scalar_int(h, args[1], "max_num_elements")   # (TensorFlow accepts any value)
    return (h.new(attrs["element_dtype"], shape, (), n),)


@_list_function("TensorListFromTensor", 2, **_ELEMENT_DTYPE)
def _from_tensor(h, args, attrs):
    """TensorListFromTensor(tensor, element_shape): the list of
    tensor[0], tensor[1], ...; its element shape is the operand's."""
    t = _tensor(h, args[0], "tensor")
    shape = _shape_operand(h, args[1])
    dtype, t_shape = h.dtype(t), h.shape(t)
    if dtype != attrs["element_dtype"]:
        raise ListOpError(f"tensor is {dtype}, element_dtype {attrs['element_dtype']}")
    if len(t_shape) < 1:
        raise ListOpError("Tensor must be at least a vector")
    if not compatible(shape, t_shape[1:]):
        raise ListOpError(f"Specified a list with shape {shape} from a tensor with shape "
                          f"{list(t_shape)}")
    return (h.new(dtype, shape, h.rows(t)),)


@_list_function("TensorListLength", 1)
def _length(h, args, attrs):
    """TensorListLength(input_handle): the number of elements, int32."""
    return (h.from_host(np.array(len(_list(h, args[0]).items), dtype=np.int32)),)


@_list_function("TensorListElementShape", 1, shape_type=_dtype_attr)
def _element_shape(h, args, attrs):
    """TensorListElementShape(input_handle): the list's element shape as a
    tensor of shape_type (-1 for an unknown rank, -1 dims unknown)."""
    lst = _list(h, args[0])
    dt = DTYPES[attrs["shape_type"]]
    if lst.element_shape is None:
        return (h.from_host(np.array(-1, dtype=dt)),)
    return (h.from_host(np.array(lst.element_shape, dtype=dt).reshape(len(lst.element_shape))),)


@_list_function("TensorListSetItem", 3, resize_if_index_out_of_bounds=_bool_attr,
                **_ELEMENT_DTYPE)
def _set_item(h, args, attrs):
    """TensorListSetItem(input_handle, index, item): a copy with element
    `index` set (grown to index + 1 first where resize_if_index_out_of_bounds)."""
    lst = _list(h, args[0])
    i = _scalar_int(h, args[1], "index")
    item = _tensor(h, args[2], "item")
    _check_dtype(lst, attrs["element_dtype"])
    dtype = h.dtype(item)
    if dtype != lst.element_dtype:
        raise ListOpError(f"Invalid data types; op elements {dtype} but list elements "
                          f"{lst.element_dtype}")
    items = list(lst.items)
    if attrs.get("resize_if_index_out_of_bounds") and i >= len(items):
        items += [None] * (i + 1 - len(items))
    if not 0 <= i < len(items):
        raise ListOpError(f"Trying to modify element {i} in a list with {len(items)} elements.")
    if not compatible(lst.element_shape, h.shape(item)):
        raise ListOpError(f"Tried to set a tensor with incompatible shape at a list index. "
                          f"Item element shape: {list(h.shape(item))} list shape: "
                          f"{lst.element_shape}")
    items[i] = item
    return (h.new(lst.element_dtype, lst.element_shape, tuple(items), lst.max_elements),)


@_list_function("TensorListGetItem", 3, **_ELEMENT_DTYPE)
def _get_item(h, args, attrs):
    """TensorListGetItem(input_handle, index, element_shape): element
    `index`; an unset one is zeros of the element shape (the list's, the
    operand's and the set elements' merged), which must be fully defined."""
    lst = _list(h, args[0])
    i = _scalar_int(h, args[1], "index")
    requested = _shape_operand(h, args[2])
    _check_dtype(lst, attrs["element_dtype"])
    if not 0 <= i < len(lst.items):
        raise ListOpError(f"Trying to access element {i} in a list with {len(lst.items)} "
                          "elements.")
    if lst.items[i] is not None:
        return (lst.items[i],)
    return (_zeros(h, _read_shape(h, lst, requested), lst.element_dtype,
                   "Trying to read an uninitialized tensor"),)


@_list_function("TensorListStack", 2, num_elements=_int_attr, **_ELEMENT_DTYPE)
def _stack(h, args, attrs):
    """TensorListStack(input_handle, element_shape): the elements stacked
    on a new first axis (unset ones as zeros of the element shape)."""
    lst = _list(h, args[0])
    requested = _shape_operand(h, args[1])
    _check_dtype(lst, attrs["element_dtype"])
    n = attrs.get("num_elements", -1)
    if n != -1 and n != len(lst.items):
        raise ListOpError(f"Operation expected a list with {n} elements but got a list with "
                          f"{len(lst.items)} elements.")
    shape = merge(lst.element_shape, requested)
    if not _defined(shape) and not lst.items:
        raise ListOpError("Tried to stack elements of an empty list with non-fully-defined "
                          "element_shape")
    shape = _read_shape(h, lst, requested)
    if not _defined(shape):
        raise ListOpError("Tried to stack list which only contains uninitialized tensors and "
                          "has a non-fully-defined element_shape")
    for t in lst.items:
        if t is not None and h.shape(t) != shape:
            raise ListOpError(f"Incompatible shapes in a stacked list: {list(h.shape(t))} and "
                              f"{list(shape)}")
    return (h.stack(lst.items, shape, lst.element_dtype),)


@_list_function("TensorListPushBack", 2, **_ELEMENT_DTYPE)
def _push_back(h, args, attrs):
    """TensorListPushBack(input_handle, tensor): a copy with `tensor` appended."""
    lst = _list(h, args[0])
    t = _tensor(h, args[1], "tensor")
    _check_dtype(lst, attrs["element_dtype"])
    dtype = h.dtype(t)
    if dtype != lst.element_dtype:
        raise ListOpError(f"Invalid data types; op elements {dtype} but list elements "
                          f"{lst.element_dtype}")
    if not compatible(lst.element_shape, h.shape(t)):
        raise ListOpError("Tried to append a tensor with incompatible shape to a list.")
    if lst.max_elements != -1 and len(lst.items) >= lst.max_elements:
        raise ListOpError(f"Tried to push item into a full list; list size: {len(lst.items)}, "
                          f"max_num_elements: {lst.max_elements}")
    return (h.new(lst.element_dtype, lst.element_shape, lst.items + (t,), lst.max_elements),)


@_list_function("TensorListPopBack", 2, 2, **_ELEMENT_DTYPE)
def _pop_back(h, args, attrs):
    """TensorListPopBack(input_handle, element_shape): (the list without its
    last element, that element; an unset one as zeros, as GetItem)."""
    lst = _list(h, args[0])
    requested = _shape_operand(h, args[1])
    _check_dtype(lst, attrs["element_dtype"])
    if not lst.items:
        raise ListOpError("Trying to pop from an empty list.")
    last = lst.items[-1]
    rest = h.new(lst.element_dtype, lst.element_shape, lst.items[:-1], lst.max_elements)
    if last is None:
        last = _zeros(h, _read_shape(h, lst, requested), lst.element_dtype,
                      "Trying to read an uninitialized tensor")
    return (rest, last)


#: The TensorList functions, by TensorFlow op (graphdef/ops.py imports them).
LIST_OPS = ("EmptyTensorList", "TensorListReserve", "TensorListFromTensor", "TensorListLength",
            "TensorListElementShape", "TensorListSetItem", "TensorListGetItem",
            "TensorListStack", "TensorListPushBack", "TensorListPopBack")


# -- the ops: import --------------------------------------------------------------

FAMILY = "list"

#: the attributes each op's import reads (None: no element_dtype)
_LIST_ATTRS = {
    "EmptyTensorList": (), "TensorListReserve": (), "TensorListFromTensor": (), "TensorListGetItem": (),
    "TensorListPushBack": (), "TensorListPopBack": (), "TensorListLength": None,
    "TensorListElementShape": None, "TensorListSetItem": ("resize_if_index_out_of_bounds",),
    "TensorListStack": ("num_elements",)}


def _define_list_op(name: str, n_in: int, n_out: int) -> None:
    def build(b):
        attrs: dict[str, Any] = {}
        extra = _LIST_ATTRS[name]
        if extra is not None:
            attrs["element_dtype"] = b.dtype("element_dtype")
            for key in extra:
                default = False if key.startswith("resize") else -1
                v = b.attr(key, default)
                attrs[key] = bool(v) if key.startswith("resize") else int(v)
        if name == "TensorListElementShape":
            attrs["shape_type"] = b.dtype("shape_type")
        ref = b.add(name, [b.input(i) for i in range(n_in)], attrs)
        return [DataIn(ref.node, k) for k in range(n_out)]
    define(OpDef(name, f"the TensorList function {name} (a list is a value: "
                 "oracle/opdefs/lists.py)", build, FAMILY, functions=(name,),
                 output_args=("output_handle", "tensor") if n_out == 2 else ()))


for _name, _n_in, _n_out in (("EmptyTensorList", 2, 1), ("TensorListReserve", 2, 1),
                             ("TensorListFromTensor", 2, 1), ("TensorListLength", 1, 1),
                             ("TensorListElementShape", 1, 1), ("TensorListSetItem", 3, 1),
                             ("TensorListGetItem", 3, 1), ("TensorListStack", 2, 1),
                             ("TensorListPushBack", 2, 1), ("TensorListPopBack", 2, 2)):
    _define_list_op(_name, _n_in, _n_out)
