"""A TensorFlow graph as a tfsem program.

`import_graph(graph_dict, fetches, targets, feeds)` takes a GraphDef in the
dict form of `graphdef.proto` and returns a validated `Program`:

* function calls are inlined first (graphdef/functions.py);
* the nodes kept are those the fetches and targets need (data and control
  inputs, transitively): TensorFlow's own pruning for `Session.run`;
* each kept node becomes tfsem nodes through its model in the op table
  (graphdef/ops.py); inputs that a model reads at import time (axes, shapes)
  must be constants;
* variables are named by their VarHandleOp's `shared_name` (the node name if
  it is empty; `container/shared_name` in a non-default container) and typed
  by its `dtype` and `shape`;
* a Placeholder, or any node named by `--feed`, is a feed of its own name,
  read through an Identity node of that name;
* outputs are named by the fetches exactly as given (`loss`, `split:1`);
* every node of the graph is checked against its op's OpDef signature, as
  TensorFlow checks a graph it loads (graphdef/signatures.py): a graph
  TensorFlow would refuse is refused, naming the node and the attribute.

Tensors of every numeric and boolean dtype are imported (SPEC section 8:
TFSEM_DTYPES); string, variant and resource tensors (and complex, quantized
and float8 ones) are refused with the node and the dtype named, except where
a model reads them at import time.  Whatever cannot be imported raises
`GraphImportError`, a ProgramError naming the node and the reason.
"""

from __future__ import annotations

import bisect
import math
from collections import ChainMap
from operator import attrgetter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from tfsem.oracle.program import (ControlIn, DataIn, FeedIn, Node, Program, ProgramError,
                                  TensorType, Violation)
from tfsem.oracle.values import BITS_DTYPES, DTYPES, Tensor

from tfsem.oracle import opdefs
from tfsem.oracle.collector import gc_paused   # (used here, and by graphdef/__init__.py)
from tfsem.oracle.opdefs import control as control_ops
from tfsem.oracle.opdefs import data as data_ops

from . import ops as opt
from .functions import (GNode, GraphFormatError, ImportTimeout, _short, check_deadline,
                        check_signatures, flatten, split_ref)


class GraphImportError(ProgramError):
    """A graph tfsem cannot import: names the node and the reason."""

    def __init__(self, where: str, message: str, rule: str = "graph"):
        super().__init__([Violation(where, rule, message)])


#: TensorFlow DataType -> numpy dtype (for constants read at import time).
NUMPY_DTYPES = {
    "DT_FLOAT": np.float32, "DT_DOUBLE": np.float64, "DT_INT32": np.int32,
    "DT_INT64": np.int64, "DT_INT16": np.int16, "DT_INT8": np.int8, "DT_UINT8": np.uint8,
    "DT_UINT16": np.uint16, "DT_UINT32": np.uint32, "DT_UINT64": np.uint64,
    "DT_BOOL": np.bool_, "DT_HALF": np.float16, "DT_BFLOAT16": DTYPES["bfloat16"],
}
#: TensorFlow DataType -> tfsem dtype (the dtypes a tfsem value may have).
TFSEM_DTYPES = {"DT_BOOL": "bool", "DT_INT8": "int8", "DT_INT16": "int16", "DT_INT32": "int32",
                "DT_INT64": "int64", "DT_UINT8": "uint8", "DT_UINT16": "uint16",
                "DT_UINT32": "uint32", "DT_UINT64": "uint64", "DT_HALF": "float16",
                "DT_BFLOAT16": "bfloat16", "DT_FLOAT": "float32", "DT_DOUBLE": "float64"}
TF_DTYPES = {v: k for k, v in TFSEM_DTYPES.items()}
#: What the refusal of another dtype says.
NOT_MODELLED = ("tfsem models bool, int8/16/32/64, uint8/16/32/64, float16, bfloat16, float32 "
                "and float64 tensors; string, variant, resource, complex and quantized tensors "
                "are not modelled")

_VAL_FIELDS = {
    "DT_FLOAT": "float_val", "DT_DOUBLE": "double_val", "DT_INT32": "int_val",
    "DT_INT16": "int_val", "DT_INT8": "int_val", "DT_UINT8": "int_val", "DT_UINT16": "int_val",
    "DT_INT64": "int64_val", "DT_UINT32": "uint32_val", "DT_UINT64": "uint64_val",
    "DT_BOOL": "bool_val", "DT_HALF": "half_val", "DT_BFLOAT16": "half_val",
}

MAX_CONST_ELEMENTS = 1 << 24

#: The ops that forward a stack's handle unchanged (the loop primitives of
#: the control family, oracle/opdefs/control.py, and Identity).
_HANDLE_FORWARDERS = (control_ops.ENTER, control_ops.EXIT, control_ops.SWITCH,
                      control_ops.MERGE, control_ops.NEXT_ITERATION, "Identity")

#: Ops that read a tf.data iterator (the data family's, oracle/opdefs/data.py,
#: which models the first two): a DT_RESOURCE Placeholder one of them reads is
#: an iterator; `iterator_position(it)`: the variable of its position.
ITERATOR_READERS = data_ops.READERS
iterator_position = data_ops.iterator_position


def dtype_name(dt: Any) -> str:
    return dt if isinstance(dt, str) else f"DataType {dt}"


def shape_of(shape: dict | None, where: str) -> tuple[int, ...]:
    """A TensorShapeProto dict as a static shape (unknown dims refused)."""
    shape = shape or {}
    if shape.get("unknown_rank"):
        raise GraphImportError(where, "the shape has unknown rank; tfsem needs static shapes",
                               "unknown-shape")
    dims = tuple(int(d.get("size", 0)) for d in shape.get("dim", []))
    if any(d < 0 for d in dims):
        raise GraphImportError(where, f"the shape {list(dims)} has an unknown dimension; tfsem "
                               "needs static shapes", "unknown-shape")
    return dims


def tensor_from_proto(t: dict, where: str) -> np.ndarray:
    """A TensorProto dict as a numpy array, as TensorFlow's runtime reads it
    (`Tensor::FromProto`, tensorflow/core/framework/tensor.cc; each rule
    below compared with the Const kernel's output in
    tests/test_graphdef_tensor_decoding_tensorflow.py):

    * the shape is the TensorShapeProto's dims, unknown_rank ignored (with
      no dims: a scalar); an unknown dimension is refused;
    * a shape of no elements is an empty array: tensor_content and the
      typed fields are not read at all;
    * a non-empty tensor_content is the little-endian bytes of exactly the
      shape's elements (any other length: TensorFlow's kernel fails, refused
      here; so is a DT_BOOL byte other than 0 and 1, as TensorFlow does),
      and the typed `*_val` fields are then ignored;
    * otherwise the dtype's typed field: no values is zeros; fewer values
      than elements repeat the last one; more values than elements are cut
      to the first ones;
    * each value becomes the element as C++ converts it: `int_val` of an
      int8/int16/uint8/uint16 tensor keeps the low bits (two's complement,
      300 is 44 in int8, -1 is 255 in uint8), `half_val` (float16 and
      bfloat16 bit patterns in int32s) keeps the low 16 bits."""
    dt = t.get("dtype", "DT_INVALID")
    if dt not in NUMPY_DTYPES:
        raise GraphImportError(where, f"a constant of dtype {dtype_name(dt)} is not modelled "
                               f"({NOT_MODELLED})", "unsupported-dtype")
    npd = np.dtype(NUMPY_DTYPES[dt])
    # a tensor's shape is its dims: TensorFlow's (fully defined) TensorShape
    # ignores unknown_rank (TensorShapeBase::IsValid checks it only for a
    # PartialTensorShape), so unknown_rank and no dims is a scalar
    shape = shape_of({"dim": (t.get("tensor_shape") or {}).get("dim", [])}, where)
    size = math.prod(shape)
    if size >= 1 << 63:   # (what numpy's int64 product gives: it wraps)
        size = int(np.prod(shape, dtype=np.int64))
    if size > MAX_CONST_ELEMENTS:
        raise GraphImportError(where, f"a constant of {size} elements (at most "
                               f"{MAX_CONST_ELEMENTS})", "too-large")
    if len(shape) > 64:
        raise GraphImportError(where, f"a constant of rank {len(shape)} (numpy holds at most 64 "
                               "dimensions)", "too-large")
    if size == 0:
        try:
            return np.zeros(shape, dtype=npd)
        except ValueError:   # (numpy refuses such a shape: [2**62, 0] is "too big")
            raise GraphImportError(where, f"a constant of shape {list(shape)}: numpy cannot "
                                   "hold a shape with dimensions this large", "too-large") from None
    content = t.get("tensor_content")
    if content:
        if len(content) != size * npd.itemsize:
            raise GraphImportError(where, f"tensor_content has {len(content)} bytes, the "
                                   f"shape {list(shape)} of {dt} needs {size * npd.itemsize}",
                                   "bad-tensor")
        if dt == "DT_BOOL" and content.translate(None, b"\x00\x01"):
            # (TensorFlow's kernel fails on such bytes: "Cannot parse tensor
            # from proto"; numpy would make a bool holding 2)
            raise GraphImportError(where, "tensor_content of a DT_BOOL tensor holds a byte "
                                   "other than 0 and 1", "bad-tensor")
        bits = BITS_DTYPES.get(TFSEM_DTYPES.get(dt, ""), npd)   # bfloat16 has no byte order
        return np.frombuffer(content, dtype=bits.newbyteorder("<")).astype(bits).view(npd).reshape(shape)
    vals = t.get(_VAL_FIELDS[dt], [])
    if len(vals) > size:
        vals = vals[:size]
    if not len(vals):
        return np.zeros(shape, dtype=npd)
    if dt in ("DT_HALF", "DT_BFLOAT16"):   # half_val holds the 16-bit patterns (int32s)
        arr = (np.array(vals, dtype=np.int64) & 0xFFFF).astype(np.uint16).view(npd)
    elif _VAL_FIELDS[dt] == "int_val" and dt != "DT_INT32":
        # (int32s: int64 holds them all; astype keeps the low bits, as C++'s
        # conversion to the narrower type does)
        arr = np.array(vals, dtype=np.int64).astype(npd)
    else:
        try:
            with np.errstate(over="raise"):
                arr = np.array(vals, dtype=npd)
        except (OverflowError, FloatingPointError, ValueError) as exc:
            raise GraphImportError(where, f"a value out of range for {dt}: {exc}",
                                   "bad-tensor") from None
    if len(arr) < size:
        arr = np.concatenate([arr, np.full(size - len(arr), arr[-1], dtype=npd)])
    return arr.reshape(shape)


def check_const_dtype(node, t: dict) -> None:
    """Refuses a Const whose `dtype` attribute is not its tensor's dtype:
    TensorFlow's Const kernel fails ("Type mismatch between value (DT_FLOAT)
    and dtype (DT_INT32)"), and the tensor alone would be a value of another
    type than the one the graph's consumers were typed for.  A Const with no
    `dtype` attribute is refused too: TensorFlow refuses the node ("NodeDef
    missing attr 'dtype'"), in the graph and in a function body alike (the
    graph's own nodes are refused first by graphdef/signatures.py; the MLIR
    reader derives `dtype` from the result's type)."""
    declared = node.attr.get("dtype")
    if not declared:
        raise GraphImportError(node.describe(), "has no attribute 'dtype' (the type of its "
                               f"value, here {dtype_name(t.get('dtype', 'DT_INVALID'))}): "
                               "TensorFlow refuses such a Const (\"NodeDef missing attr\")",
                               "missing-attribute")
    if "type" in declared and declared["type"] != t.get("dtype"):
        raise GraphImportError(node.describe(), f"the value is a "
                               f"{dtype_name(t.get('dtype', 'DT_INVALID'))} tensor and the dtype "
                               f"attribute says {dtype_name(declared['type'])}", "bad-tensor")


def _text(val, strict: bool):
    if not isinstance(val, bytes):
        return val
    if strict:
        try:
            return val.decode("utf-8")
        except UnicodeDecodeError:
            # (decoded with replacement, b"v\xff" and b"v\xfe" were one
            # string: two variables' shared_names, one variable in tfsem)
            raise _NotText.with_value(val) from None
    return val.decode("utf-8", "replace")


class _NotText(ValueError):
    """A string attribute that is not UTF-8 text (see _text)."""

    @classmethod
    def with_value(cls, val: bytes) -> "_NotText":
        return cls(f"a string attribute is not UTF-8 text: {val[:60]!r}")


def _opdef_type_default(op: str, attr: str) -> str:
    """The default TensorFlow's OpDef gives type attribute `attr` of `op`
    (graphdef/signatures.py's table; "": none, or an op the table lacks)."""
    from .signatures import type_default
    return type_default(op, attr)


def attr_value(a: dict, strict: bool = False) -> Any:
    """An AttrValue dict as a plain Python value (types as DT_ names, shapes
    as lists, strings decoded).  `strict`: a string that is not UTF-8 text
    raises ValueError (where the string is a name or a value a model or a
    kernel reads: two byte strings must not become one); otherwise it is
    decoded with replacement characters."""
    if not isinstance(a, dict) or not a:
        return None
    key, val = next(iter(a.items()))
    if key == "s":
        return _text(val, strict)
    if key in ("i", "f", "b", "type", "placeholder"):
        return val
    if key == "shape":
        if val.get("unknown_rank"):
            return None
        return [int(d.get("size", 0)) for d in val.get("dim", [])]
    if key == "list":
        for k, items in val.items():
            return [attr_value({k[:-1] if k.endswith("s") and k != "s" else k: x}, strict)
                    if k != "s" else _text(x, strict)
                    for x in items]
        return []
    if key == "func":
        return val.get("name")
    if key == "tensor":
        return "<tensor>"
    return None


def attrs_json(attr: dict) -> dict:
    """A node's attributes as JSON values (for uninterpreted functions'
    `tf_attrs`): the attributes TensorFlow sets itself (`_...`) are left out.

    A float attribute stays the float the GraphDef holds, bit for bit (its
    float32 widened: -NaN, a NaN's payload, the infinities, -0.0 and
    subnormals kept; a signalling NaN is read quieted, as protobuf widens an
    attribute's float32 to a double: no TensorFlow op was found that shows
    the difference), also a non-finite one: the program format writes it
    exactly (oracle/float_attrs.py), TensorFlow's kernel gets its bits
    (oracle/kernel_worker.py `_convert`) and export writes them back.  It was
    written as text once, `str(v)`, which is "nan" for every NaN: a LeakyRelu
    with alpha -NaN ran with NaN, and two graphs differing only there
    imported as one program."""
    out = {}
    for k in sorted(attr):
        if k.startswith("_"):
            continue
        out[k] = attr_value(attr[k], strict=True)
    return out


@dataclass
class Imported:
    program: Program
    #: TensorFlow node -> the tfsem node standing for it (its completion).
    node_map: dict[str, str] = field(default_factory=dict)
    #: critical sections and queue ops (oracle.blocking.Blocking), imported
    #: only for a session (import_graph's `session`); oracle/opdefs/queues.py
    blocking: Any = None
    #: MutexLock stand-in -> its ConsumeMutexLock stand-in
    releases: dict[str, str] = field(default_factory=dict)


class _Importer:
    def __init__(self, nodes: dict[str, GNode], feeds: Iterable[str],
                 captures: dict[str, dict] | None = None,
                 variable_names: dict[str, str] | None = None,
                 shapes: dict[str, list[int]] | None = None):
        self.g = nodes
        #: feed -> the shape `--shape` gives it (where the graph's has unknown dims)
        self.shapes = dict(shapes or {})
        #: VarHandleOp node -> the variable's name, where a SavedModel's
        #: object graph names it (graphdef.saved_variable_names)
        self.variable_names = variable_names or {}
        self.feeds = set(feeds)
        self.captures = parse_captures(captures or {}, nodes)
        self.out_nodes: list[Node] = []
        self.names: set[str] = set()
        self.refs: dict[str, list[DataIn]] = {}
        self.done: dict[str, str] = {}          # TF node -> completion tfsem node
        self.variables: dict[str, TensorType] = {}
        self.var_of: dict[str, str] = {}         # VarHandleOp node -> variable
        self.handle_aliases: set[str] = set()     # DT_RESOURCE Identity nodes (_handle_alias)
        #: iterator Placeholder -> the node that draws from it (opdefs/data.py)
        self.iterators: dict[str, str | None] = {}
        #: the iterators' position variables (iterator_position) declared so far
        self.positions: set[str] = set()
        self.feed_types: dict[str, TensorType] = {}
        self.exclusive: list[tuple[str, set[str], set[str]]] = []
        self.unusable: dict[str, GraphImportError] = {}
        self.fetch_refs: list[str] = []
        self._refs_by_node: dict[str, list[str]] | None = None
        self.back_edges: list[str] = []          # NextIteration nodes a Merge waits for
        #: a Const folded from `Shape` of a variable's read -> (the variable,
        #: the read's ref, out_type): kept only where no Assign of the
        #: program can change that variable's shape (_unfold_unsure_shapes)
        self.read_shapes: dict[str, tuple[str, DataIn, str]] = {}
        self._has_loops: bool | None = None
        #: op -> its model (opt.lookup), looked up once per op of the graph
        self._models: dict[str, opt.OpModel | None] = {}
        #: op -> whether `deps` of its nodes is every input's node, in order
        self._plain: dict[str, bool] = {}
        #: the ops of the graph's nodes (which passes over every node are needed)
        self.ops = set(map(_OP, nodes.values()))
        for f in self.feeds:
            if f not in self.g:
                raise GraphImportError(f"--feed {f}", f"no node named {f!r} in the graph",
                                       "unknown-node")
        for f in self.shapes:
            if f not in self.g:
                raise GraphImportError(f"--shape {f}", f"no node named {f!r} in the graph (nor "
                                       "a signature input)", "unknown-node")

    def has_loops(self) -> bool:
        """Whether the graph has a while loop (an Enter node)."""
        if self._has_loops is None:
            self._has_loops = any(op in self.ops for op in control_ops.LOOP_ENTRIES)
        return self._has_loops

    # -- the order: what the roots need ------------------------------------

    def model(self, op: str) -> opt.OpModel | None:
        """opt.lookup(op), once per op of the graph."""
        try:
            return self._models[op]
        except KeyError:
            m = self._models[op] = opt.lookup(op)
            return m

    def deps(self, n: GNode) -> list[str]:
        if n.op == "Placeholder" or n.name in self.feeds:
            return []
        model = self.model(n.op)
        if n.op == "Merge":
            # a loop's back edge (NextIteration into Merge) is built after the
            # Merge (order() adds its source as a root)
            return [i[1:] if i[:1] == "^" else _node_of(i) for i in n.inputs
                    if not self._back_edge(i)]
        if model is None or not model.static:
            # the common case: every input's node, in order
            return [i[1:] if i[:1] == "^" else (_node_of(i) if ":" in i else i)
                    for i in n.inputs]
        data = [i for i in n.inputs if not i.startswith("^")]
        static = {s % len(data) if data else s for s in model.static}
        out = []
        k = 0
        for i in n.inputs:
            src, port, control = split_ref(i)
            if not control:
                if k in static and self.is_constant(src, port):
                    # read at import: not built, but what the constant waits
                    # for in TensorFlow (its control inputs) comes first
                    out.extend(self.static_controls(src, port))
                    k += 1
                    continue
                k += 1
            out.append(src)
        return out

    #: Ops a constant read at import time may pass through.
    PASS_THROUGH = ("Identity", "StopGradient", "Snapshot")

    def static_chain(self, src: str, port: int) -> list[GNode]:
        """The nodes from a static input back to its Const (through Identity)."""
        chain: list[GNode] = []
        while len(chain) < 1000:
            g = self.g.get(src)
            if g is None:
                break
            chain.append(g)
            if g.op not in self.PASS_THROUGH or port != 0:
                break
            data = [x for x in g.inputs if not x.startswith("^")]
            if not data:
                break
            src, port, _ = split_ref(data[0])
        return chain

    def is_constant(self, src: str, port: int) -> bool:
        """Whether an input is a Const (possibly through Identity nodes), which
        a `static` input of an op model is read from at import; any other
        input is computed at run time, and models that accept a computed
        operand (Reshape, Sum, ... : ops.OpModel.static) take it as a tensor."""
        chain = self.static_chain(src, port)
        return bool(chain) and chain[-1].op == "Const" and (len(chain) > 1 or port == 0)

    def static_controls(self, src: str, port: int) -> list[str]:
        """The control inputs of a static input's chain: in TensorFlow its
        consumer runs after them, so in tfsem it gets control edges from them."""
        return [split_ref(c)[0] for g in self.static_chain(src, port)
                for c in g.inputs if c.startswith("^")]

    def _back_edge(self, ref: str) -> bool:
        if ref[:1] == "^":
            return False
        g = self.g.get(_node_of(ref))
        return g is not None and g.op == "NextIteration"

    def order(self, roots: Sequence[str], deadline: float | None = None) -> list[str]:
        """The nodes the roots need, each after its inputs (iterative DFS); a
        loop's NextIteration after the Merge it feeds."""
        state: dict[str, int] = {}
        order: list[str] = []
        self._order(list(roots), state, order, deadline)
        while "Merge" in self.ops:
            more = [_node_of(i) for name in order if self.g[name].op == "Merge"
                    for i in self.g[name].inputs if self._back_edge(i)
                    and not state.get(_node_of(i))]
            if not more:
                return order
            self._order(more, state, order, deadline)
        return order

    def _is_plain(self, op: str) -> bool:
        """Whether `deps` of a node of `op` (not a feed) is the node of each
        of its inputs, in order: its common case."""
        p = self._plain.get(op)
        if p is None:
            model = self.model(op)
            p = self._plain[op] = op != "Placeholder" and op != "Merge" and \
                (model is None or not model.static)
        return p

    def _order(self, roots, state, order, deadline) -> None:
        steps = 0
        g, deps, feeds, plain = self.g, self.deps, self.feeds, self._plain
        for root in roots:
            if state.get(root):
                continue
            stack = [(root, iter(self._deps_checked(root, None)))]
            state[root] = 1
            while stack:
                steps += 1
                if not steps & 1023:
                    check_deadline(deadline, "ordering the graph's nodes")
                name, it = stack[-1]
                for d in it:
                    s = state.get(d)
                    if s == 1:
                        raise GraphImportError(f"node {d!r}", "the graph has a cycle through "
                                               f"{d!r} and {name!r} that does not pass through "
                                               "a NextIteration into a Merge", "cycle")
                    if not s:
                        state[d] = 1
                        n = g.get(d)
                        if n is None:
                            ds = self._deps_checked(d, name)
                        elif d not in feeds and (plain.get(n.op) or self._is_plain(n.op)):
                            # deps(n)'s common case, without the call
                            ds = [i[1:] if i[:1] == "^" else (_node_of(i) if ":" in i else i)
                                  for i in n.inputs]
                        else:
                            ds = deps(n)
                        stack.append((d, iter(ds)))
                        break
                else:
                    stack.pop()
                    state[name] = 2
                    order.append(name)

    def _deps_checked(self, name: str, consumer: str | None) -> list[str]:
        n = self.g.get(name)
        if n is None:
            where = f"node {consumer!r}" if consumer else f"fetch {name!r}"
            raise GraphImportError(where, f"no node named {name!r}", "unknown-node")
        return self.deps(n)

    # -- building ----------------------------------------------------------

    def fresh(self, name: str) -> str:
        base, k = name, 0
        while name in self.names:
            k += 1
            name = f"{base}~{k}"
        self.names.add(name)
        return name

    def build(self, name: str) -> None:
        self.build_all([name])

    def build_all(self, order: Sequence[str], deadline: float | None = None) -> None:
        """Build the nodes of `order`, in order (checking `deadline` every 256)."""
        build = self._build
        name = ""
        try:
            for k, name in enumerate(order):
                if not k & 255:
                    check_deadline(deadline, f"importing the graph ({k} of {len(order)} nodes "
                                   "built)")
                build(name)
        except (GraphImportError, GraphFormatError):
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            # a malformed attribute or input the model did not expect
            raise GraphImportError(self.g[name].describe(), "malformed node (an attribute or "
                                   f"input of the wrong kind): {type(exc).__name__}: {exc}",
                                   "malformed-node") from None

    def _build(self, name: str) -> None:
        n = self.g[name]
        if name in self.captures:
            self._capture(n)
            return
        if n.op == "Placeholder" or name in self.feeds:
            self._feed(n)
            return
        if n.op == "Identity" and self._handle_alias(n):
            return
        model = self.model(n.op)
        if model is None:
            if n.op in opt.STATELESS_UNMODELLED:
                self._opaque(n)
                return
            raise GraphImportError(n.describe(), f"op {n.op} has no model in tfsem and is not "
                                   "known to be free of effects: it is refused (add a model "
                                   "through the entry-point group tfsem.ops)", "unmodelled-op")
        b = _Builder(self, n, model)
        try:
            outs = model.build(b)
        except GraphImportError as exc:
            if n.op != "Const" or exc.violations[0].rule != "unsupported-dtype":
                raise
            # a constant of a dtype tfsem has no values of (int32 ...): fine
            # as long as only import-time reads (axes, a Cast) use it
            # (a NoOp stands for it, so that control edges from it keep
            # their meaning)
            self.unusable[n.name] = exc
            b = _Builder(self, n, None)
            b.add("NoOp", [])
            b.finish([])
            return
        b.finish(list(outs))

    def _stack_handle(self, name: str) -> bool:
        """Whether TensorFlow node `name` outputs a stack's handle: a StackV2,
        or one through the control-flow primitives and Identity nodes."""
        seen: set[str] = set()
        while name not in seen:
            seen.add(name)
            g = self.g.get(name)
            if g is None:
                return False
            if g.op == "StackV2":
                return True
            data = [i for i in g.inputs if not i.startswith("^")]
            if g.op not in _HANDLE_FORWARDERS or not data:
                return False
            name = split_ref(data[0])[0]
        return False

    def _handle_alias(self, n: GNode) -> bool:
        """An Identity of DT_RESOURCE with one data input, a variable's handle
        (a VarHandleOp, or a handle through control-flow primitives), and
        any control inputs: the same handle under another name.  Grappler's
        dead-branch removal leaves this of a Switch of a handle on a constant
        predicate: `Identity(handle, ^pred)`.  TensorFlow's Identity forwards
        the handle, and is dead where its input or a control input is.  With
        control inputs only from Consts without inputs (never dead, no
        effect: waiting for them changes no outcome) its consumers read the
        handle it was given, at the same port, and wait for the same node: no
        node of its own -- unless that input is a Switch's port, which may be
        dead while the Switch is not.  Otherwise it becomes `Switch(handle, live):1` with
        `live` a `true` Const that waits for those control inputs: the handle,
        dead when any of them is (semantics.md, dead values).  Any other
        DT_RESOURCE Identity is refused as before (the Identity model's dtype
        check)."""
        if n.op != "Identity" or not n.inputs or n.inputs[0].startswith("^"):
            return False
        if attr_value(n.attr.get("T", {})) != "DT_RESOURCE":
            return False
        if not all(c.startswith("^") for c in n.inputs[1:]):
            return False
        src, port, _ = split_ref(n.inputs[0])
        refs = self.refs.get(src)
        if src not in self.var_of and refs and port < len(refs) and self._stack_handle(src):
            # a stack's handle (oracle/opdefs/stacks.py; Grappler writes this
            # Identity to wait for one port of a Switch of it): the handle
            # through a Switch on a live `true` that waits for the control
            # inputs, dead exactly when the port or one of them is, as
            # TensorFlow's Identity is (the variable case below argues it)
            b = _Builder(self, n, None)
            pred = b.add("Const", [], {"value": Tensor(np.array(True), "bool")}, part="live")
            sw = b.add("Switch", [b.input(0), pred])
            b.finish([DataIn(sw.node, 1)])
            return True
        if src not in self.var_of or not refs or port >= len(refs):
            return False
        waits = [c for c in n.inputs[1:]
                 if not ((g := self.g.get(c[1:])) is not None and g.op == "Const" and not g.inputs)]
        # (an output of a Switch may be dead while the Switch is live: a
        # control edge from the Identity is then dead, one from the Switch is
        # not.  Its alias would make `^identity` the Switch's own completion,
        # and a node waiting only on it would fire live, with its effect,
        # where TensorFlow's fires dead.  So through a Switch the Identity
        # keeps a node of its own: the Switch on a live `true` below, dead
        # exactly when the port it reads is.  tests/test_check_control_flow_attacks.py)
        g_src = self.g.get(src)
        if waits or (g_src is not None and g_src.op in control_ops.SWITCHES):
            # it waits for nodes that may be dead: the handle through a
            # Switch on a live `true` that waits for them, dead when one is
            b = _Builder(self, n, None)
            pred = b.add("Const", [], {"value": Tensor(np.array(True), "bool")}, part="live")
            sw = b.add("Switch", [b.flow_input(0), pred])
            b.finish([DataIn(sw.node, 1)])
        else:
            self.var_of[n.name] = self.var_of[src]
            self.refs[n.name] = [refs[port]]
            self.done[n.name] = self.done[src]
        self.handle_aliases.add(n.name)
        return True

    def _capture(self, n: GNode) -> None:
        """A DT_RESOURCE Placeholder of a concrete function's graph that
        captures a variable: that variable (named by the capture map)."""
        var, typ = self.captures[n.name]
        if var in self.positions:
            raise GraphImportError(n.describe(), f"captures variable {var!r}, the name of a "
                                   "tf.data iterator's position (the state its draws advance)",
                                   "name-clash")
        old = self.variables.get(var)
        if old is not None and old != typ:
            raise GraphImportError(n.describe(), f"captures variable {var!r} as {typ.dtype}"
                                   f"{list(typ.shape)}, declared {old.dtype}{list(old.shape)} "
                                   "elsewhere", "variable-type")
        self.variables[var] = typ
        self.var_of[n.name] = var
        b = _Builder(self, n, None)
        b.finish([b.add("Var", [], {"var": var})])

    def _feed(self, n: GNode) -> None:
        where = n.describe()
        dt = attr_value(n.attr.get("dtype", {})) or attr_value(n.attr.get("T", {}))
        if dt == "DT_RESOURCE" and self._iterator(n):
            return
        if dt == "DT_RESOURCE":
            user = attr_value(n.attr.get("_user_specified_name", {}))
            what = ("in a tf.function's concrete-function graph it captures a variable, and "
                    "the GraphDef does not say which" if user in (None, "resource") else
                    f"the function's argument {user!r}, a resource handle")
            raise GraphImportError(where, f"a DT_RESOURCE Placeholder ({what}): if it holds a "
                                   "variable, name the variable in the capture map (--captures "
                                   "FILE, written from concrete_function.graph.captures: see "
                                   "docs/tensorflow-graphs.md); a tf.data iterator is modelled "
                                   "where IteratorGetNext reads it, other resources (tables, "
                                   "...) are not", "uncaptured-resource")
        if not isinstance(dt, str) or dt not in TFSEM_DTYPES:
            raise GraphImportError(where, f"feed of dtype {dtype_name(dt)} is not modelled "
                                   f"({NOT_MODELLED})", "unsupported-dtype")
        shape = attr_value(n.attr.get("shape", {}))
        if shape is None and "_output_shapes" in n.attr:
            shapes = attr_value(n.attr["_output_shapes"]) or []
            shape = shapes[0] if shapes else None
        if n.name in self.shapes:
            shape = self._given_shape(n, shape)
        if shape is None or any(d < 0 for d in shape):
            dims = ",".join("N" if d < 0 else str(d) for d in shape) if shape is not None \
                else "DIMS"
            raise GraphImportError(where, f"the feed has no static shape ({shape}); tfsem needs "
                                   f"one: give it with --shape {n.name}={dims} (N the batch size "
                                   "to check: a verdict holds for that shape)", "unknown-shape")
        self.feed_types[n.name] = TensorType(TFSEM_DTYPES[dt], tuple(shape))
        self.names.add(n.name)
        self.out_nodes.append(Node(n.name, "Identity", (FeedIn(n.name),), {}))
        self.refs[n.name] = [DataIn(n.name)]
        self.done[n.name] = n.name

    def _given_shape(self, n: GNode, shape: list[int] | None) -> list[int]:
        """The shape --shape gives feed n, which must agree with the graph's
        known dimensions (TensorFlow would refuse another feed)."""
        given = self.shapes[n.name]
        if shape is not None and (len(given) != len(shape) or any(
                d >= 0 and d != g for d, g in zip(shape, given))):
            raise GraphImportError(f"--shape {n.name}", f"{given} does not fit the graph's shape "
                                   f"{shape} of {n.describe()} (-1: any size)", "bad-shape")
        return list(given)

    def _iterator(self, n: GNode) -> bool:
        """A DT_RESOURCE Placeholder that an iterator op reads (model.fit's
        `iterator` argument) is a tf.data iterator: a NoOp of its name, whose
        reads the data family models (oracle/opdefs/data.py: the next
        element in σ)."""
        if not any(g.op in ITERATOR_READERS and any(
                   not i.startswith("^") and split_ref(i)[0] == n.name for i in g.inputs)
                   for g in self.g.values()):
            return False
        self.iterators[n.name] = None
        self.names.add(n.name)
        self.out_nodes.append(Node(n.name, "NoOp", (), {}))
        self.refs[n.name] = []
        self.done[n.name] = n.name
        return True

    def _opaque(self, n: GNode) -> None:
        data = [i for i in n.inputs if not i.startswith("^")]
        ports = [p for src, p, c in map(split_ref, self._consumer_refs(n.name)) if not c]
        n_out = max(ports, default=0) + 1
        from tfsem.oracle import functions as fns
        fname = fns.opaque_name(n.op, len(data), n_out)
        b = _Builder(self, n, None)
        ref = b.add(fname, [b.input(i) for i in range(len(data))], {"tf_attrs": b.tf_attrs()})
        b.finish([DataIn(ref.node, k) for k in range(n_out)])

    def _consumer_refs(self, name: str) -> list[str]:
        """Every reference to `name` (inputs and fetches): how many outputs an
        op tfsem knows nothing about has."""
        if self._refs_by_node is None:
            self._refs_by_node = by_node = {}
            for g in self.g.values():
                for i in g.inputs:
                    # split_ref(i)[0], its call saved where there is no port
                    key = i[1:] if i[:1] == "^" else (i if ":" not in i else split_ref(i)[0])
                    refs = by_node.get(key)
                    if refs is None:
                        by_node[key] = [i]
                    else:
                        refs.append(i)
            for r in self.fetch_refs:
                self._refs_by_node.setdefault(split_ref(r)[0], []).append(r)
        return self._refs_by_node.get(name, [])


_OP = attrgetter("op")


def _node_of(ref: str) -> str:
    """The node of a data input `n` or `n:k` (split_ref's first part)."""
    node, sep, port = ref.rpartition(":")
    return node if sep and port.isdigit() and port.isascii() else ref


class _Builder:
    """What an op model sees of the importer for one TensorFlow node."""

    # (one per node built: slots make it and its attributes cheaper)
    __slots__ = ("imp", "node", "model", "data", "controls", "parts", "main", "pending",
                 "static_controls", "_exclusive")

    def __init__(self, imp: _Importer, node: GNode, model: opt.OpModel | None):
        self.imp, self.node, self.model = imp, node, model
        inputs = node.inputs
        self.data = data = [i for i in inputs if i[:1] != "^"]
        self.controls = [i[1:] for i in inputs if i[:1] == "^"] if len(data) < len(inputs) \
            else []
        self.parts: list[str] = []
        self.main: str | None = None
        #: (name, op, attributes, inputs) of each tfsem node the model added
        self.pending: list[tuple[str, str, dict, list]] = []
        self.static_controls: list[str] = []
        self._exclusive = False

    @property
    def n_inputs(self) -> int:
        return len(self.data)

    def reject(self, reason: str, rule: str = "unmodelled-op"):
        raise GraphImportError(self.node.describe(), reason, rule)

    def _ref(self, i: int) -> tuple[str, int]:
        if not 0 <= i < len(self.data):
            self.reject(f"needs data input {i}, has {len(self.data)}", "arity")
        ref = self.data[i]
        if ":" not in ref:
            return ref, 0
        src, port, _ = split_ref(ref)
        return src, port

    def input(self, i: int) -> DataIn:
        src, port = self._ref(i)
        if src in self.imp.var_of:
            self.reject(f"input {i} is the resource {src!r} where a tensor is expected",
                        "edge-kind")
        if src in self.imp.unusable:
            raise self.imp.unusable[src]
        refs = self.imp.refs.get(src)
        if refs is None:
            self.reject(f"input {i} ({self.data[i]}) comes from a node that was not imported")
        if port >= len(refs):
            if src in self.imp.iterators:
                self.reject(f"input {i} is the tf.data iterator {src!r} where a tensor is "
                            "expected (only IteratorGetNext reads an iterator)", "edge-kind")
            self.reject(f"input {i} is {self.data[i]}, but {src!r} has {len(refs)} output(s)",
                        "bad-port")
        return refs[port]

    def source(self, i: int) -> tuple[str, int, GNode | None]:
        """The node and port data input i reads, and that node of the graph
        (None where the graph has no node of that name)."""
        src, port = self._ref(i)
        return src, port, self.imp.g.get(src)

    def chain(self, i: int, through: Sequence[str]) -> list[GNode]:
        """The graph nodes from data input i's node back through nodes of
        the ops `through` (each followed by its first data input), the last
        one the first that is not of those ops (at most 1000 nodes)."""
        src, _ = self._ref(i)
        out: list[GNode] = []
        for _ in range(1000):
            g = self.imp.g.get(src)
            if g is None:
                break
            out.append(g)
            if g.op not in through:
                break
            data = [x for x in g.inputs if not x.startswith("^")]
            if not data:
                break
            src = split_ref(data[0])[0]
        return out

    def data_consumers(self) -> list[GNode]:
        """The graph nodes that read an output of this node, once per data
        edge (a node reading two of its outputs is listed twice)."""
        me = self.node.name
        return [g for g in self.imp.g.values()
                for i in g.inputs if not i.startswith("^") and split_ref(i)[0] == me]

    def modelled_dtype(self, dt: Any, message: str = "dtype {dtype} is not modelled") -> str:
        """TensorFlow DataType `dt` (a DT_ name) as a tfsem dtype; else the
        node is refused with `message` (`{dtype}`: the DataType's name) and
        what tfsem models."""
        if not isinstance(dt, str) or dt not in TFSEM_DTYPES:
            self.reject(f"{message.format(dtype=dtype_name(dt))}: {NOT_MODELLED}",
                        "unsupported-dtype")
        return TFSEM_DTYPES[dt]

    def flow_input(self, i: int) -> DataIn:
        """Data input i of a control-flow primitive: a tensor or a resource
        handle (which the primitive forwards: the node then stands for the
        variable, so that ReadVariableOp and the assignments accept it), or a
        loop's back edge from a NextIteration not built yet (patched once it is)."""
        src, port = self._ref(i)
        g = self.imp.g.get(src)
        if src not in self.imp.refs and g is not None and g.op == "NextIteration" \
                and self.node.op == "Merge":
            ref = DataIn(f"\0next:{src}", port)
            self.imp.back_edges.append(src)
            return ref
        if src in self.imp.var_of:
            x, before = self.imp.var_of[src], self.imp.var_of.get(self.node.name)
            if before is not None and before != x:
                # (a Merge of the handles of two variables: which one it
                # forwards depends on the run, but every static use of the
                # handle -- the aliased-slot refusal, the exclusive variables
                # of an optimizer update, a variable's shape -- takes it as
                # one variable.  Refused rather than taken as the last one:
                # tests/test_check_control_flow_attacks.py)
                self.reject(f"data input {i} is a handle of variable {x!r}, another is one of "
                            f"{before!r}: a {self.node.op} of the handles of two variables "
                            "is not modelled", "merged-handles")
            self.imp.var_of[self.node.name] = x
            refs = self.imp.refs.get(src)
            return refs[port] if refs and port < len(refs) else DataIn(self.imp.done[src])
        return self.input(i)

    def handle(self, i: int) -> DataIn | None:
        """Data input i's handle where it is a resource (a VarHandleOp, or a
        handle through control-flow primitives), else None."""
        src, port = self._ref(i)
        if src not in self.imp.var_of:
            return None
        refs = self.imp.refs.get(src)
        return refs[port] if refs and port < len(refs) else DataIn(self.imp.done[src])

    def var(self, i: int) -> DataIn:
        src, port = self._ref(i)
        g = self.imp.g.get(src)
        if src in self.imp.var_of and g is not None and (g.op in opt.CONTROL_FLOW_PRIMITIVES
                                                         or src in self.imp.handle_aliases):
            return self.imp.refs[src][port]   # a handle through Switch, Enter, Merge, ...
        if src not in self.imp.var_of:
            g = self.imp.g.get(src)
            self.reject(f"resource input {i} comes from {src!r} ({g.op if g else '?'}), not from "
                        "a VarHandleOp", "edge-kind")
        return DataIn(self.imp.done[src])

    def static(self, i: int) -> np.ndarray:
        """Input i as a numpy array, read when the graph is imported: a Const,
        possibly through Identity nodes.  The nodes it waits for in TensorFlow
        (the chain's control inputs) become control inputs of this node."""
        if i < 0:
            i += len(self.data)
        src, port = self._ref(i)
        chain = self.imp.static_chain(src, port)
        if not chain:
            self.reject(f"input {i} names no node {src!r}", "unknown-node")
        g = chain[-1]
        if g.op != "Const" or (len(chain) == 1 and port != 0):
            self.reject(f"input {i} must be a constant (tfsem reads it when the graph is "
                        f"imported), but it is computed by {g.name!r} ({g.op})", "not-constant")
        self.static_controls.extend(self.imp.static_controls(src, port))
        t = (g.attr.get("value") or {}).get("tensor", {})
        check_const_dtype(g, t)
        return tensor_from_proto(t, g.describe())

    def is_static(self, i: int) -> bool:
        """Whether input i is a constant that `static(i)` can read at import."""
        if i < 0:
            i += len(self.data)
        return self.imp.is_constant(*self._ref(i))

    def static_shape(self, i: int) -> tuple[int, ...]:
        shape = self.declared_shape(i)
        if shape is None:
            self.reject(f"the shape of input {i} is not known statically")
        return shape

    def read_variable(self, i: int) -> str | None:
        """The variable input i reads, where it is a ReadVariableOp's output
        (whose declared shape `declared_shape` gives), else None."""
        src, _ = self._ref(i)
        g = self.imp.g.get(src)
        if g is not None and g.op == "ReadVariableOp" and src not in self.imp.feeds:
            h, _, _ = split_ref([x for x in g.inputs if not x.startswith("^")][0])
            return self.imp.var_of.get(h)
        return None

    def shape_const(self, i: int, shape: tuple[int, ...], out_type: str,
                    part: str | None = None) -> DataIn:
        """A Const of input i's declared shape (`Shape` folded at import),
        after input i's node, as TensorFlow's Shape runs after its input.
        Where input i is a variable's read, the Const stands only if no
        Assign of the program can give the variable another shape
        (_unfold_unsure_shapes makes it the function Shape otherwise)."""
        ref = self.input(i)
        c = self.add("Const", [ControlIn(ref.node)],
                     {"value": Tensor(np.array(shape, dtype=out_type), out_type)}, part=part)
        var = self.read_variable(i)
        if var is not None:
            self.imp.read_shapes[c.node] = (var, ref, out_type)
        return c

    def declared_shape(self, i: int) -> tuple[int, ...] | None:
        """Input i's shape where the graph declares it (a feed, a Const, a
        variable's read), else None.  A variable's read has it where no
        write gives the variable another shape (an AssignVariableOp with
        validate_shape=false stores a value of any shape): a model that
        folds it into a constant goes through `shape_const`."""
        src, port = self._ref(i)
        g = self.imp.g.get(src)
        if g is not None and (g.op == "Placeholder" or src in self.imp.feeds):
            return self.imp.feed_types[src].shape
        if g is not None and g.op == "Const":
            return tuple(self.static(i).shape)
        if g is not None and g.op == "ReadVariableOp":
            h, _, _ = split_ref([x for x in g.inputs if not x.startswith("^")][0])
            if h in self.imp.var_of:
                return self.imp.variables[self.imp.var_of[h]].shape
        return None

    def attr(self, name: str, default: Any = None) -> Any:
        attrs = self.node.attr
        if type(attrs) is not dict and hasattr(attrs, "scalar"):
            # a decoded NodeDef (graphdef.proto.runtime.LazyAttrs, not imported
            # here: reading a text graph needs no protobuf): a scalar is read
            # from the AttrValue directly
            field_value = attrs.scalar(name)
            if field_value is not None:
                which, v = field_value
                try:
                    return _text(v, True) if which == "s" else v
                except _NotText as exc:
                    self._not_text(name, exc)
        a = attrs.get(name)
        if a is None:
            if default is None:
                self.reject(f"has no attribute {name!r}", "missing-attribute")
            return default
        try:
            return attr_value(a, strict=True)
        except _NotText as exc:
            self._not_text(name, exc)

    def _not_text(self, name: str, exc: "_NotText") -> None:
        self.reject(f"attribute {name!r}: {exc} (two such byte strings would read as one)",
                    "bad-attribute")

    def dtype(self, name: str) -> str:
        attrs = self.node.attr
        if type(attrs) is not dict and hasattr(attrs, "scalar"):
            # attr()'s first case, a DataType tfsem models, read at once
            field_value = attrs.scalar(name)
            if field_value is not None and field_value[0] == "type":
                t = TFSEM_DTYPES.get(field_value[1]) if type(field_value[1]) is str else None
                if t is not None:
                    return t
        # (a type attribute with a default in TensorFlow's op registry, which
        # a SavedModel strips, as meta_graph.strip_graph_default_valued_attrs
        # does: the op's entry says it, OpDef.type_defaults, else TensorFlow's
        # OpDef in the signature table; TensorFlow fills that default in when
        # it loads the graph, so only a type attribute without one is missing)
        dt = self.attr(name, "") or opdefs.type_default(self.node.op, name) \
            or _opdef_type_default(self.node.op, name)
        if not dt:
            # (TensorFlow refuses the node: "NodeDef missing attr")
            self.reject(f"has no attribute {name!r} (a type), and {self.node.op} gives it no "
                        "default: TensorFlow refuses such a node", "missing-attribute")
        if not isinstance(dt, str) or dt not in TFSEM_DTYPES:
            self.reject(f"dtype {dtype_name(dt) if dt else '(missing)'} (attribute {name!r}) is "
                        f"not modelled: {NOT_MODELLED}", "unsupported-dtype")
        return TFSEM_DTYPES[dt]

    def tensor_attr(self, name: str) -> Tensor:
        t = (self.node.attr.get(name) or {}).get("tensor")
        if t is None:
            self.reject(f"has no tensor attribute {name!r}", "missing-attribute")
        arr = tensor_from_proto(t, self.node.describe())
        dt = t.get("dtype")
        if self.node.op == "Const":
            check_const_dtype(self.node, t)
        if dt not in TFSEM_DTYPES:
            self.reject(f"a constant of dtype {dtype_name(dt)} used as a tensor is not modelled: "
                        f"{NOT_MODELLED}", "unsupported-dtype")
        return Tensor(arr, TFSEM_DTYPES[dt])

    def scalar(self, x: float) -> Tensor:
        return Tensor(np.array(x), self.dtype("T"))

    def tf_attrs(self) -> dict:
        """The node's attributes as JSON (an uninterpreted function's `tf_attrs`)."""
        try:
            return attrs_json(self.node.attr)
        except _NotText as exc:
            self.reject(f"{exc}: TensorFlow's kernel would get other bytes", "bad-attribute")

    def var_node(self) -> DataIn:
        n = self.node
        shared = self.imp.variable_names.get(n.name) or self.attr("shared_name", "") or n.name
        container = self.attr("container", "")
        var = f"{container}/{shared}" if container else shared
        dt = self.dtype("dtype")
        shape = self.attr("shape", None)
        if shape is None:
            self.reject("the variable has no static shape", "unknown-shape")
        if any(d < 0 for d in shape):
            self.reject(f"the variable's shape {shape} has an unknown dimension", "unknown-shape")
        typ = TensorType(dt, tuple(shape))
        if var in self.imp.positions:
            self.reject(f"variable {var!r} has the name of a tf.data iterator's position (the "
                        "state its draws advance)", "name-clash")
        old = self.imp.variables.get(var)
        if old is not None and old != typ:
            self.reject(f"variable {var!r} is declared {old.dtype}{list(old.shape)} elsewhere and "
                        f"{dt}{list(shape)} here", "variable-type")
        self.imp.variables[var] = typ
        self.imp.var_of[n.name] = var
        return self.add("Var", [], {"var": var})

    def exclusive(self) -> None:
        self._exclusive = True

    def feed(self, name: str, dtype: str, shape: tuple[int, ...]) -> FeedIn:
        """A feed of the program made by the model (a stateful random op's
        generator state, part of σ): `$name`, of this type."""
        if name in self.imp.g or name in self.imp.feed_types:
            self.reject(f"the feed {name!r} this op's model makes is already the name of a "
                        "node or feed of the graph", "name-clash")
        self.imp.feed_types[name] = TensorType(dtype, tuple(shape))
        return FeedIn(name)

    def add(self, op: str, inputs: Sequence, attrs: dict | None = None,
            part: str | None = None) -> DataIn:
        if part is None:
            if self.main is not None:
                raise RuntimeError(f"model of {self.node.op} adds two nodes without a part name")
            name = self.node.name
            names = self.imp.names
            if name in names:
                name = self.imp.fresh(name)
            else:
                names.add(name)   # (fresh's common case, without the call)
            self.main = name
        else:
            name = self.imp.fresh(f"{self.node.name}/{part}")
        self.parts.append(name)
        self.pending.append((name, op, attrs or {}, list(inputs)))
        return DataIn(name)

    def finish(self, outs: list[DataIn]) -> None:
        imp = self.imp
        if self.main is None:
            if len(self.parts) == 1:
                self.main = self.parts[0]
            else:
                raise RuntimeError(f"model of {self.node.op} made no node named after it")
        controls = []
        if self.controls or self.static_controls:
            for c in (dict.fromkeys(self.controls + self.static_controls) if self.static_controls
                      or len(self.controls) > 1 else self.controls):
                if c not in imp.done:
                    self.reject(f"control input ^{c} comes from a node that was not imported")
                controls.append(ControlIn(imp.done[c]))
        if len(self.pending) == 1:
            # the common case, one tfsem node: no inputs among its own parts
            name, op, attrs, ins = self.pending[0]
            data = tuple([x for x in ins if type(x) is DataIn or type(x) is FeedIn])
            if len(data) < len(ins) or controls:
                ctrl = [x for x in ins if type(x) is ControlIn] + controls
                inputs = data + tuple(dict.fromkeys(ctrl))
            else:
                inputs = data
            imp.out_nodes.append(Node(name, op, inputs, attrs))
            imp.refs[self.node.name] = outs
            imp.done[self.node.name] = self.main
            if self._exclusive:
                variables = {imp.var_of[split_ref(self.data[i])[0]] for i in self.model.resources}
                imp.exclusive.append((self.node.describe(), {name}, variables))
            return
        mine = set(self.parts)
        used = {x.node for _, _, _, ins in self.pending for x in ins
                if isinstance(x, (DataIn, ControlIn)) and x.node in mine}
        for name, op, attrs, ins in self.pending:
            data = [x for x in ins if isinstance(x, (DataIn, FeedIn))]
            ctrl = [x for x in ins if isinstance(x, ControlIn)]
            if not any(isinstance(x, (DataIn, ControlIn)) and x.node in mine for x in ins):
                ctrl = ctrl + controls
            if name == self.main and len(self.parts) > 1:
                ctrl = ctrl + [ControlIn(p) for p in self.parts
                               if p != name and p not in used]
            imp.out_nodes.append(Node(name, op, tuple(data) + tuple(dict.fromkeys(ctrl)), attrs))
        imp.refs[self.node.name] = outs
        imp.done[self.node.name] = self.main
        if self._exclusive:
            variables = {imp.var_of[split_ref(self.data[i])[0]] for i in self.model.resources}
            imp.exclusive.append((self.node.describe(), mine, variables))


def default_roots(nodes: dict[str, GNode]) -> list[str]:
    """The nodes nothing consumes, less the idiom of tf.Variable's own
    initialization (`V/Assign`, `V/IsInitialized/VarIsInitializedOp`,
    `V/Read/ReadVariableOp` of a VarHandleOp `V`), which TensorFlow runs only
    through the variables' initializer."""
    consumed = {split_ref(i)[0] for g in nodes.values() for i in g.inputs}
    handles = {n for n, g in nodes.items() if g.op == "VarHandleOp"}
    roots = []
    for name, g in nodes.items():
        if name in consumed or g.op in ("Const", "VarHandleOp", "Placeholder"):
            continue
        if "_tfsem_consumed" in g.attr:   # a lowered If/While/Case that had consumers
            continue
        if g.op == "Identity" and attr_value(g.attr.get("T", {})) == "DT_RESOURCE":
            continue   # a handle passed on to nobody (a While's resource output): no effect
        base, _, last = name.rpartition("/")
        if (g.op == "AssignVariableOp" and last == "Assign" and base in handles) or \
           (g.op == "VarIsInitializedOp" and name.endswith("/IsInitialized/VarIsInitializedOp")
            and name[:-len("/IsInitialized/VarIsInitializedOp")] in handles) or \
           (g.op == "ReadVariableOp" and name.endswith("/Read/ReadVariableOp")
            and name[:-len("/Read/ReadVariableOp")] in handles):
            continue
        roots.append(name)
    return roots


def parse_captures(captures: dict, nodes: dict[str, GNode] | None = None,
                   where: str = "capture map") -> dict[str, tuple[str, TensorType]]:
    """The capture map of a concrete function's graph, {placeholder:
    {"variable": NAME, "dtype": "float32", "shape": [784, 128]}} (as written
    from `concrete_function.graph.captures`, docs/tensorflow-graphs.md), as
    {placeholder: (variable, TensorType)}.  With `nodes`, each placeholder
    must be a DT_RESOURCE Placeholder of the graph."""
    if not isinstance(captures, dict):
        raise GraphImportError(where, "must be a JSON object {placeholder: {\"variable\", "
                               "\"dtype\", \"shape\"}}", "bad-captures")
    out = {}
    for ph, spec in captures.items():
        at = f"{where}: {ph!r}"
        if not isinstance(spec, dict) or not isinstance(spec.get("variable"), str) \
                or not spec["variable"]:
            raise GraphImportError(at, "needs {\"variable\": NAME, \"dtype\": DTYPE, "
                                   "\"shape\": [DIMS]}", "bad-captures")
        dt, shape = spec.get("dtype"), spec.get("shape")
        if dt not in DTYPES:
            raise GraphImportError(at, f"dtype {dt!r} of variable {spec['variable']!r} is not "
                                   f"modelled ({NOT_MODELLED})", "unsupported-dtype")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise GraphImportError(at, f"variable {spec['variable']!r} needs a static shape "
                                   f"(a list of sizes), not {shape!r}", "unknown-shape")
        if nodes is not None:
            g = nodes.get(ph)
            if g is None:
                raise GraphImportError(at, "no node of that name in the graph", "unknown-node")
            if g.op != "Placeholder" or attr_value(g.attr.get("dtype", {})) != "DT_RESOURCE":
                raise GraphImportError(at, f"the node is a {g.op}, not a DT_RESOURCE "
                                       "Placeholder", "bad-captures")
        out[ph] = (spec["variable"], TensorType(dt, tuple(shape)))
    return out


def import_graph(graph, fetches: Sequence[str] = (), targets: Sequence[str] = (),
                 feeds: Sequence[str] = (), output_names: Sequence[str] | None = None,
                 deadline: float | None = None, captures: dict | None = None,
                 variable_names: dict[str, str] | None = None,
                 session: bool = False, shapes: dict[str, list[int]] | None = None) -> Imported:
    """The program of `graph` (a GraphDef dict, or a GraphDef message from
    graphdef.proto.parse) for these fetches and targets (default: every node
    nothing consumes, initializers excepted: those with outputs fetched, the
    others targets).  Past `deadline` (a time.monotonic() value), raises
    ImportTimeout.  `captures` maps the DT_RESOURCE Placeholders of a
    concrete function's graph to the variables they capture (parse_captures);
    `variable_names` renames variables by VarHandleOp node (a SavedModel's
    object graph: graphdef.saved_variable_names).  `session`: the graph is a
    session's, whose critical sections and queues are imported
    (the queue family, oracle/opdefs/queues.py); otherwise a graph holding
    them is refused.
    `shapes`: feed -> the shape to give it where the graph's shape has
    unknown dimensions (`--shape`)."""
    with gc_paused():
        try:
            return _import_graph(graph, fetches, targets, feeds, output_names, deadline,
                                 captures, variable_names, session, shapes)
        except GraphFormatError as exc:  # a malformed name (a port of 5,000 digits ...)
            raise GraphImportError(exc.where, exc.message, exc.rule) from None


def _import_graph(graph, fetches, targets, feeds, output_names, deadline,
                  captures=None, variable_names=None, session=False, shapes=None) -> Imported:
    top: dict[str, GNode] = {}
    try:
        nodes = flatten(graph, deadline, top)
    except (GraphFormatError, ImportTimeout):
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise GraphImportError("graph", f"malformed graph or function library: "
                               f"{type(exc).__name__}: {exc}", "malformed-graph") from None
    imp = _Importer(nodes, feeds, captures, variable_names, shapes)
    fetches, targets = list(fetches), list(targets)
    default = not fetches and not targets
    if default:
        roots = default_roots(nodes)
    else:
        roots = [split_ref(f)[0] for f in fetches] + list(targets)
    for r in roots:
        if r not in nodes:
            raise GraphImportError(f"fetch {_short(r)!r}", f"no node named {_short(r)!r} in "
                                   "the graph", "unknown-node")
    imp.fetch_refs = list(fetches)
    check_deadline(deadline, "importing the graph")
    order = imp.order(roots, deadline)
    if imp.variable_names:
        _keep_distinct_variables(imp, order)
    _check_unreached_cycles(nodes, set(order), deadline)
    # the nodes of the function bodies a fetch or target reaches: TensorFlow
    # checks them when it instantiates the function, and every run of the
    # call fails where one disagrees with its op's OpDef
    inlined = len(nodes) > len(top)    # (a call inlined or control flow lowered)
    bodies = [n for n in order if nodes[n].body] if inlined else []
    check_signatures(top, counts_only=True)
    if bodies:
        check_signatures(nodes, counts_only=True, only=bodies)
    imp.build_all(order, deadline)
    # every node of the graph against its op's OpDef, as TensorFlow checks a
    # graph it loads (graphdef/signatures.py): after the nodes are built, so
    # that a node tfsem refuses anyway is refused for its own reason first
    reached = set(order)
    check_signatures(top, reached)
    if bodies:
        check_signatures(nodes, reached, only=bodies)
    # the nodes of a reached PartitionedCall's or StatefulPartitionedCall's
    # body that no result needs, not inlined: TensorFlow checks every node of
    # a body when it instantiates it (never run here: not `reached`)
    if inlined:
        for n in order:
            if nodes[n].refusal:
                raise GraphImportError(*nodes[n].refusal, "signature")
    dead = [nodes[n].dead for n in order if nodes[n].dead] if inlined else []
    if dead:
        check_signatures(ChainMap(*dead, nodes), set(), only=[k for d in dead for k in d])
    if inlined:
        _check_unreached_calls(top, nodes, reached, deadline)
    if imp.back_edges:
        _patch_back_edges(imp)
    if imp.read_shapes:
        _unfold_unsure_shapes(imp, deadline)
    check_deadline(deadline, "importing the graph")
    outputs: dict[str, DataIn] = {}
    if default:
        fetches = [r for r in roots if imp.refs.get(r)]
    names = list(output_names) if output_names is not None else list(fetches)
    for out_name, f in zip(names, fetches):
        src, port, control = split_ref(f)
        if control:
            raise GraphImportError(f"fetch {_short(f)!r}", "a fetch is a tensor (n or n:k), "
                                   "not ^n")
        refs = imp.refs.get(src, [])
        if port >= len(refs) and src in imp.unusable:
            # a fetched constant of a dtype tfsem has no values of: its refusal
            # names the dtype (not "has 0 tensor outputs")
            raise imp.unusable[src]
        if port >= len(refs):
            raise GraphImportError(f"fetch {_short(f)!r}", f"node {_short(src)!r} "
                                   f"({nodes[src].op}) has {len(refs)} tensor output(s)",
                                   "bad-port")
        outputs[out_name] = refs[port]
    if not session:
        _declare_undrawn_iterators(imp)
    program = Program(imp.variables, tuple(imp.out_nodes), outputs, imp.feed_types)
    program = program.validated()
    _check_exclusive(program, imp.exclusive)
    if session and any(imp.iterators.values()):
        it = next(k for k, v in imp.iterators.items() if v)
        raise GraphImportError(f"node {_short(imp.iterators[it])!r} ({nodes[imp.iterators[it]].op})",
                               "a draw from a tf.data iterator is not modelled in a session "
                               "(concurrent runs draw in an order the schedule decides): "
                               "import the graph alone, one run's draw in σ", "iterator")
    st = getattr(imp, "blocking_state", None)   # the queue family's record (opdefs/queues.py)
    blocking, releases = st.finish(program) if st is not None else (None, {})
    if not session and st is not None:
        ops = sorted({nodes[n].op for n in order} & set(st.OPS))
        raise GraphImportError("graph", f"{', '.join(ops)}: critical sections and blocking "
                               "queues are modelled only in a session (a tfsem.session/1 file "
                               "with {\"program\": {\"graph\": PATH}} and its runs: "
                               "docs/sessions.md)", "unmodelled-session-op")
    return Imported(program, dict(imp.done), blocking, releases)


def _declare_undrawn_iterators(imp: _Importer) -> None:
    """Every iterator of the graph has its position in the state, drawn from
    in this import or not (oracle/opdefs/data.py): a DT_RESOURCE
    Placeholder that no capture names and that an iterator op reads, or
    that nothing reads at all (the function's `iterator` argument once a
    rewrite dropped its draw).  So a rewrite that drops the only draw, or
    leaves it where no fetch reaches it, keeps the interface, and its final
    state (the position not advanced) is a counterexample; a resource
    argument nothing reads that is no iterator is a variable nothing
    changes."""
    if "Placeholder" not in imp.ops:
        return
    drawn = {split_ref(i)[0] for r in imp.g.values() if r.op in ITERATOR_READERS
             for i in r.inputs if not i.startswith("^")}
    for name, g in imp.g.items():
        if g.op != "Placeholder" or name in imp.captures or name in imp.feeds \
                or attr_value(g.attr.get("dtype", {})) != "DT_RESOURCE":
            continue
        if name not in drawn and imp._consumer_refs(name):
            continue
        var = iterator_position(name)
        if var in imp.positions:
            continue
        if var in imp.variables:
            raise GraphImportError(g.describe(), f"the position of this tf.data iterator, "
                                   f"variable {var!r}, is already the name of a variable of "
                                   "the graph", "name-clash")
        imp.positions.add(var)
        imp.variables[var] = TensorType("int64", ())


def _keep_distinct_variables(imp: _Importer, order: list[str]) -> None:
    """A VarHandleOp renamed by its SavedModel object keeps its shared_name
    where the new name is another reached handle's shared_name: two handles
    of different shared_names are two variables, and stay two."""
    shared = {}
    for name in order:
        g = imp.g[name]
        if g.op == "VarHandleOp" and name not in imp.variable_names:
            sh = attr_value(g.attr["shared_name"]) if "shared_name" in g.attr else ""
            shared[sh or name] = name
    imp.variable_names = {h: v for h, v in imp.variable_names.items() if v not in shared}


def _unfold_unsure_shapes(imp: _Importer, deadline: float | None = None) -> None:
    """A `Shape` of a variable's read was folded into a Const of the
    variable's declared shape (`_Builder.shape_const`).  SPEC's σ gives the
    variable that shape, but an Assign of the same run may store a value of
    another (an AssignVariableOp with validate_shape=false is Assign-Snd,
    which stores any shape; TensorFlow 2.21's Shape of a later read gives
    the new one).  The Const stands where the variable is one of
    `shape_keeping_variables` (oracle/static_shapes.py: every Assign of the
    program provably stores a value of the declared shape, the folded
    Consts of other variables claimed nothing); elsewhere it becomes the
    function Shape of the read, which the run computes."""
    from tfsem.oracle.static_shapes import shape_keeping_variables
    unsure = {name: var for name, (var, _, _) in imp.read_shapes.items()}
    draft = Program(imp.variables, tuple(imp.out_nodes), {}, imp.feed_types)
    keep = shape_keeping_variables(draft, unsure, lambda: check_deadline(
        deadline, "importing the graph (which variables keep their declared shapes)"),
        of=set(unsure.values()))
    if all(var in keep for var in unsure.values()):
        return
    nodes = []
    for n in imp.out_nodes:
        fold = imp.read_shapes.get(n.name)
        if fold is not None and fold[0] not in keep:
            var, ref, out_type = fold
            rest = tuple(dict.fromkeys(x for x in n.inputs if x != ControlIn(ref.node)))
            n = Node(n.name, "Shape", (ref,) + rest, {"out_type": out_type})
        nodes.append(n)
    imp.out_nodes = nodes


def _patch_back_edges(imp: _Importer) -> None:
    """A Merge built before the NextIteration that feeds it held a
    placeholder input: now the NextIteration is built, name its node."""
    def fixed(i):
        if isinstance(i, DataIn) and i.node.startswith("\0next:"):
            src = i.node[len("\0next:"):]
            refs = imp.refs.get(src)
            if not refs:
                raise GraphImportError(f"node {_short(src)!r}", "a loop's NextIteration was not "
                                       "imported", "control-flow")
            return refs[i.port]
        return i
    imp.out_nodes = [n.replace(inputs=tuple(fixed(i) for i in n.inputs))
                     if any(isinstance(i, DataIn) and i.node.startswith("\0next:") for i in n.inputs)
                     else n for n in imp.out_nodes]


#: Ops whose output may close a cycle: the back edge of a TensorFlow loop
#: (the control family's, oracle/opdefs/control.py).
LOOP_BACK_EDGE_OPS = control_ops.BACK_EDGES


#: what lowering functional control flow makes: a call body holding one
#: came (also) from an If's or While's branch, which TensorFlow checks only
#: where it runs
_LOWERED_OPS = frozenset({control_ops.SWITCH, control_ops.MERGE, control_ops.ENTER,
                          control_ops.EXIT, control_ops.NEXT_ITERATION, control_ops.LOOP_COND})


#: body nodes checked between two looks at the import's deadline
_UNREACHED_CHUNK = 4096


def _check_unreached_calls(top: dict[str, GNode], nodes: dict[str, GNode],
                           reached: set[str], deadline: float | None = None) -> None:
    """The bodies of the graph's own calls that no fetch or target reaches,
    checked against their OpDefs: TensorFlow instantiates the function of
    every call node of a graph it loads (`import_graph_def` refuses a graph
    with a call of a malformed function, reached or not, nested calls
    included, and the body's nodes no result needs: measured on
    TensorFlow 2.21), so tfsem refuses such a graph too, naming the body's
    node and the function.  A function no node
    calls, TensorFlow never instantiates, and neither is it checked here
    (it loads such a graph and runs it).  A call whose body holds
    functional control flow is left unchecked: TensorFlow checks an If's or
    While's branches only where it runs them, and the lowered nodes do not
    say which came from a branch (no false refusal).  The import's
    `deadline` is looked at before each call and every `_UNREACHED_CHUNK`
    body nodes: these bodies are work the import did not do before (20
    unreached calls of a 2,000-node function doubled its time), and a
    check that looked only at the end overran its budget by the whole
    check.  Checking a body in chunks refuses what checking it at once
    does, the same node first: each node is checked by itself, against
    the types of its inputs' sources (`check_graph`), and the count check
    still runs over the whole body before the full one."""
    calls = [n for n, g in top.items() if n not in reached and "_tfsem_call" in nodes[n].attr]
    if not calls:
        return
    names = sorted(k for k, g in nodes.items() if g.body or k.endswith("/_entry"))
    for c in calls:
        check_deadline(deadline, "checking the bodies of the calls no fetch reaches")
        prefix = c + "/"
        i = bisect.bisect_left(names, prefix)
        j = bisect.bisect_left(names, c + "0")     # ('0' follows '/')
        under = names[i:j]
        if any(nodes[k].op in _LOWERED_OPS or "_tfsem_call" in nodes[k].attr
               and nodes[k].op != "IdentityN" for k in under):
            continue
        # (a call whose Tin or Tout is not its function's signature is not
        # refused here: TensorFlow loads such a graph, and only a run that
        # reaches the call fails, tests/test_review_signatures_round17.py)
        entries = [nodes[k] for k in under if k.endswith("/_entry")]
        body = [k for k in under if nodes[k].body]
        chunks = [body[k:k + _UNREACHED_CHUNK] for k in range(0, len(body), _UNREACHED_CHUNK)]
        for counts_only in (True, False):
            for chunk in chunks:
                if counts_only:
                    check_signatures(nodes, counts_only=True, only=chunk)
                else:
                    check_signatures(nodes, reached, only=chunk)
                check_deadline(deadline, "checking the bodies of the calls no fetch reaches")
        dead = [e.dead for e in entries if e.dead]
        if dead:
            check_signatures(ChainMap(*dead, nodes), set(),
                             only=[k for d in dead for k in d])


def _check_unreached_cycles(nodes: dict[str, GNode], reached: set[str],
                            deadline: float | None) -> None:
    """Refuse a cycle among the nodes no fetch or target needs, as
    TensorFlow refuses any graph with a cycle that does not pass through a
    NextIteration node ("N nodes in a cycle"): TensorFlow would not load the
    graph, so tfsem does not import it as if the cycle were not there.
    (A cycle among the nodes that are needed is found by the importer's own
    order.)  A node of those reached cannot lie on a cycle of the others: each
    of its inputs was reached too."""
    if len(reached) == len(nodes):   # (reached: nodes of the graph, each once)
        return
    rest = [n for n in nodes if n not in reached]
    if not rest:
        return
    rest_set = set(rest)
    succ: dict[str, list[str]] = {n: [] for n in rest}
    indeg = dict.fromkeys(rest, 0)
    for name in rest:
        for i in nodes[name].inputs:
            src = i[1:] if i[:1] == "^" else _node_of(i)
            if src in rest_set and nodes[src].op not in LOOP_BACK_EDGE_OPS:
                succ[src].append(name)
                indeg[name] += 1
    check_deadline(deadline, "checking the graph for cycles")
    ready = [n for n in rest if not indeg[n]]
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        for s in succ[n]:
            indeg[s] -= 1
            if not indeg[s]:
                ready.append(s)
    if done < len(rest):
        left = [n for n in rest if indeg[n]]
        shown = ", ".join(repr(_short(n)) for n in left[:5]) + (", ..." if len(left) > 5 else "")
        raise GraphImportError(f"node {_short(left[0])!r}", f"{len(left)} node(s) are in a "
                               f"cycle or after one ({shown}); nothing fetches them, but "
                               "TensorFlow refuses a graph with a cycle that does not pass "
                               "through a NextIteration node", "cycle")


def _check_exclusive(p: Program, groups: list[tuple[str, set[str], set[str]]]) -> None:
    """A multi-variable update (ResourceApplyAdam, ...) is several Reads and
    Assigns in tfsem, one kernel in TensorFlow: refuse the graph where another
    node could see or change it half done (oracle/state_ops.racing_access
    says when), and remember the updates for sessions of the program."""
    from tfsem.oracle import state_ops
    race = state_ops.racing_access(p, groups)
    if race is not None:
        raise GraphImportError(race[0], race[1], "racing-update")
    state_ops.record_updates(p, groups)
