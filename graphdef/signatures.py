"""Nodes checked against their ops' signatures, as TensorFlow checks a
graph it loads.

TensorFlow refuses a GraphDef (`import_graph_def`, a Session, a
SavedModel's loader) whose node disagrees with its op's OpDef:

* an input whose dtype is not the one the op's attributes give it
  (`Cast`'s `SrcT` DT_FLOAT on an int32 input: "Input 0 of node c was
  passed int32 from x:0 incompatible with expected float"), a type
  attribute left out counting as its OpDef default (`OneHot`'s `TI`,
  int64 by default);
* a number of inputs that is not what its count attributes and list(type)
  attributes say (`AddN`'s `N` one off: "NodeDef expected inputs 'int32,
  int32, int32' do not match 2 inputs specified"), or a count below the
  OpDef's minimum (`ConcatV2`'s `N` of 1) or past int32;
* a type attribute the signature needs and neither the node nor the OpDef
  gives ("NodeDef missing attr"): a `Const` without `dtype` among them;
* an int attribute outside int32 that the op's shape function reads as an
  int32 (`StridedSlice`'s `begin_mask = 2**62`: INT32_ATTRS);
* an attribute of another kind than its OpDef's (`MatMul`'s bool
  `transpose_a` given as an int, `IdentityN`'s list(type) `T` as a type:
  "AttrValue had value with type 'int' when 'bool' expected"), a list
  shorter than its OpDef minimum (`MaxPool`'s `ksize` of 2), a string
  outside its allowed values (`MaxPool`'s `padding` "FOO");
* a control input listed before a data input (a NodeDef rule, checked for
  a node of any op).

tfsem refuses each such graph too, naming the node, the attribute and what
was expected: it never gives a verdict on a graph TensorFlow will not load.

The OpDefs are TensorFlow's, written once into oracle/opdefs/tf_signatures.py for
the ops tfsem models or passes to kernels (`generate_table`, run where
TensorFlow is installed; tests/test_graphdef_signatures_tensorflow.py
checks the table against TensorFlow's registry).  Reading a graph needs no
TensorFlow.  An op the table does not hold (an entry point's, an unknown
one) is not checked, and neither is an input whose source's dtype the
table cannot say: the check only refuses what it can show wrong.

The graph's own nodes are checked (what `import_graph_def` checks), and
the nodes of the function bodies a fetch or target reaches, once inlined
(TensorFlow checks a body when it instantiates the function: a
StatefulPartitionedCall's already at import), and those of a
PartitionedCall's or StatefulPartitionedCall's body that nothing reaches
(`import_graph_def` instantiates every call node's function:
graphdef/importer.py `_check_unreached_calls`).  A function no node calls
is not checked: TensorFlow never instantiates it and loads the graph.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from tfsem.oracle.opdefs import tf_signatures as _table
# INT32_ATTRS: op -> its int attributes TensorFlow's shape function reads
# as an int32 (a value outside int32 and TensorFlow refuses the graph);
# INT32_KERNEL_ATTRS: those only the kernel reads so (every run reaching
# the node fails).  Facts of the ops, kept in the op registry's folder.
from tfsem.oracle.opdefs.tf_int32_attrs import INT32_ATTRS, INT32_KERNEL_ATTRS


class _Table(Mapping):
    """{op: (input args, output args, attributes)}: the table of
    oracle/opdefs/tf_signatures.py, each op's entry decoded from its text
    when first asked for (a graph uses a few dozen of the ops: loading the
    module takes 3 ms, where the whole table as Python values took 20 ms,
    medians of 5 fresh processes)."""

    def __init__(self, entries: dict[str, str], allowed: list):
        self.entries = entries
        self.decoded: dict[str, tuple] = {}
        self._names = {"_ALLOWED": allowed, "__builtins__": {}}

    def __getitem__(self, op: str) -> tuple:
        d = self.decoded.get(op)
        if d is None:
            # (the generated module's own text: Python literals and
            # _ALLOWED[k], nothing else)
            d = self.decoded[op] = eval(self.entries[op], self._names)  # noqa: S307
        return d

    def __contains__(self, op) -> bool:
        return op in self.entries

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


OPS = _Table(_table.ENTRIES, _table._ALLOWED)

INT32_MAX = (1 << 31) - 1
INT32_MIN = -(1 << 31)


class SignatureError(ValueError):
    """A node that disagrees with its op's signature: `what` says how."""

    def __init__(self, node, attribute: str, message: str):
        super().__init__(message)
        self.node, self.attribute, self.message = node, attribute, message


def type_default(op: str, attr: str) -> str:
    """The default of type attribute `attr` in `op`'s OpDef (a DT_ name; "":
    the OpDef gives none, or the table lacks the op or the attribute): what
    TensorFlow fills in for a node that leaves the attribute out."""
    if op not in OPS.entries:
        return ""
    spec = OPS[op][2].get(attr)
    if spec is None or spec[0] != "type" or type(spec[1]) is not str:
        return ""
    return spec[1]


def _type_of(a) -> str | None:
    """A type attribute's DT_ name; None where the AttrValue holds another kind."""
    if isinstance(a, Mapping) and len(a) == 1 and "type" in a:
        t = a["type"]
        return t if isinstance(t, str) else f"DataType {t}"
    return None


def _int_of(a) -> int | None:
    if isinstance(a, Mapping) and len(a) == 1 and "i" in a and type(a["i"]) is int:
        return a["i"]
    return None


def _list_field(a, field: str) -> list | None:
    """The values of a list AttrValue (dict form) that holds `field` alone
    (or nothing); None where it is not such a list."""
    if isinstance(a, Mapping) and len(a) == 1 and isinstance(a.get("list"), Mapping):
        lst = a["list"]
        return None if set(lst) - {field} else list(lst.get(field, []))
    return None


def _type_list_of(a) -> list[str] | None:
    vals = _list_field(a, "type")
    return None if vals is None else [t if isinstance(t, str) else f"DataType {t}" for t in vals]


def _int_list_of(a) -> list[int] | None:
    vals = _list_field(a, "i")
    return vals if vals is not None and all(type(v) is int for v in vals) else None


_MISSING = object()   # an attribute the node lacks and the OpDef gives no default
_OTHER = object()     # an attribute of another kind than the OpDef's (not judged here)


def _attr(node, name: str, spec) -> Any:
    """The node's attribute `name` as the OpDef's kind says (`spec`:
    (kind, default, minimum, allowed)), its default where the node has none."""
    kind, default = spec[0], spec[1]
    attrs = node.attr
    if type(attrs) is not dict and (kind == "type" or kind == "int"):
        # a decoded NodeDef (graphdef.proto.runtime.LazyAttrs): a type or an
        # int read from the AttrValue without building its dict form
        scalar = getattr(attrs, "scalar", None)
        fv = scalar(name) if scalar is not None else None
        if fv is not None:
            which, v = fv
            if kind == "type":
                if which != "type":
                    return _OTHER
                return v if type(v) is str else f"DataType {v}"
            return v if which == "i" and type(v) is int else _OTHER
    a = attrs.get(name)
    if a is None or (isinstance(a, Mapping) and not a):
        return _MISSING if default is None else default
    v = (_type_of(a) if kind == "type" else _int_of(a) if kind == "int"
         else _type_list_of(a) if kind == "list(type)" else _int_list_of(a))
    return _OTHER if v is None else v


def _short(text: str, keep: int = 200) -> str:
    return text if len(text) <= keep else f"{text[:keep // 2]}...{text[-keep // 2:]}"


def _types_text(ts: Sequence[str]) -> str:
    return ", ".join(_name(t) for t in ts) or "none"


def _name(t: str) -> str:
    """DT_FLOAT -> float, DT_INT32_REF -> int32_ref (TensorFlow's own words)."""
    return t[3:].lower() if t.startswith("DT_") else t


class _TooMany(Exception):
    """More args than the caller's cap (a count attribute of 2**31: never
    made as a list)."""


def arg_types(node, args, attrs: dict, values: dict, cap: int = 1 << 16) -> list[str] | None:
    """The dtypes of a node's input or output args in order (as the OpDef's
    args and the node's attributes give them), or None where an attribute
    they need is of another kind (not judged here).  Raises SignatureError
    where an attribute they need is missing or a count is negative, _TooMany
    where there would be more than `cap`."""
    out: list[str] = []
    for name, typ, number, type_list, is_ref in args:
        if type_list:
            ts = values.get(type_list, _MISSING)
            if ts is _MISSING:
                raise SignatureError(node, type_list, f"has no attribute {type_list!r}, which "
                                     f"gives the types of its {name!r} (TensorFlow refuses the "
                                     "node: \"NodeDef missing attr\")")
            if ts is _OTHER:
                return None
            out.extend(t + "_REF" if is_ref else t for t in ts)
            if len(out) > cap:
                raise _TooMany
            continue
        if typ.startswith("DT_"):
            t = typ
        else:
            t = values.get(typ, _MISSING)
            if t is _MISSING:
                raise SignatureError(node, typ, f"has no attribute {typ!r}, the type of its "
                                     f"{name!r} (TensorFlow refuses the node: \"NodeDef missing "
                                     "attr\")")
            if t is _OTHER:
                return None
        t = t + "_REF" if is_ref else t
        if number:
            n = values.get(number, _MISSING)
            if n is _MISSING:
                raise SignatureError(node, number, f"has no attribute {number!r}, the number of "
                                     f"its {name!r} (TensorFlow refuses the node: \"NodeDef "
                                     "missing attr\")")
            if n is _OTHER:
                return None
            if n < 0:
                raise SignatureError(node, number, f"attribute {number!r} is {n}, a negative "
                                     f"number of its {name!r} (TensorFlow refuses the node)")
            if len(out) + n > cap:
                raise _TooMany
            out.extend([t] * n)
        else:
            out.append(t)
    return out


_COMPILED: dict[str, tuple] = {}


def _compiled(op: str) -> tuple:
    """(the input args as (type or attribute, is a DT_ type, is_ref) where
    none is counted or listed, else None; the count attributes; the
    attributes the output args read; the int attributes with a minimum or
    that count args; the output args as the input args; (type attribute,
    the types its OpDef allows, whether a list(type)) for each type
    attribute with allowed values; (attribute, kind, a list's minimum
    length, a string's allowed values) of each attribute, for
    _check_kinds) of an op of the table, worked out once."""
    c = _COMPILED.get(op)
    if c is None:
        inputs, outputs, attrs = OPS[op]
        plain = None if any(a[2] or a[3] for a in inputs) else \
            tuple((a[1], a[1].startswith("DT_"), a[4]) for a in inputs)
        counts = tuple(sorted({a[2] for a in inputs + outputs if a[2]}))
        out_attrs = tuple(sorted({x for a in outputs for x in (
            "" if a[1].startswith("DT_") else a[1], a[2], a[3]) if x}))
        ints = tuple(name for name, (kind, _, minimum, _) in attrs.items()
                     if kind == "int" and (minimum is not None or name in counts))
        plain_out = None if any(a[2] or a[3] for a in outputs) else \
            tuple((a[1], a[1].startswith("DT_"), a[4]) for a in outputs)
        allowed = tuple((name, frozenset(spec[3]), spec[0] == "list(type)")
                        for name, spec in attrs.items()
                        if spec[3] is not None and spec[0] in ("type", "list(type)"))
        kinds = tuple((name, spec[0], spec[2] if spec[0][:5] == "list(" else None,
                       frozenset(spec[3]) if spec[0] == "string" and spec[3] is not None
                       else None)
                      for name, spec in attrs.items() if spec[0] != "any")
        c = _COMPILED[op] = (plain, counts, out_attrs, ints, plain_out, allowed, kinds)
    return c


#: An AttrValue's field -> the OpDef kind of a value held in it (a list's
#: field: list(that kind)).
_FIELD_KINDS = {"s": "string", "i": "int", "f": "float", "b": "bool", "type": "type",
                "shape": "shape", "tensor": "tensor", "func": "func"}


def _kind_of(attrs, name: str):
    """(the AttrValue field set, ((list field, length), ...) of a list's
    nonempty fields, else None) of the node's attribute `name` (`attrs`, a
    dict form); None where it is absent, unset, or not an AttrValue's dict
    form."""
    a = attrs.get(name)
    if not isinstance(a, Mapping) or len(a) != 1:
        return None
    (which, v), = a.items()
    if which != "list":
        return which, None
    if not isinstance(v, Mapping):
        return None
    return which, tuple((f, len(x)) for f, x in v.items()
                        if isinstance(x, (list, tuple)) and x)


def _check_kinds(node, kinds: tuple) -> None:
    """Refuse an attribute the OpDef names that holds a value of another
    kind than the OpDef's (a bool given as an int: "AttrValue had value with
    type 'int' when 'bool' expected"), a list shorter than its OpDef minimum
    ("Length for attr 'T' of 0 must be at least minimum 1"), or a string
    outside the values its OpDef allows ("Value for attr 'padding' of
    \"FOO\" is not in the list of allowed values"): TensorFlow's
    ValidateAttrValue refuses each when it loads the graph.  An attribute
    absent, unset or a function's placeholder is not judged here."""
    attrs = node.attr
    # (a decoded NodeDef's attributes, graphdef.proto.runtime.LazyAttrs, are
    # read from the message; a dict form, by _kind_of)
    kind_of = getattr(attrs, "kind", None) if type(attrs) is not dict else None
    for name, want, minimum, strings in kinds:
        if name not in attrs:
            continue
        k = kind_of(name) if kind_of is not None else _kind_of(attrs, name)
        if k is None or k[0] == "placeholder":
            continue
        which, fields = k
        if fields is None:
            got = _FIELD_KINDS.get(which)
            if got is None:
                continue   # (a field this reader does not know: not judged)
        else:
            got = f"list({_FIELD_KINDS.get(fields[0][0], fields[0][0])})" if fields else "list"
            if len(fields) > 1:
                got = "list(" + ", ".join(_FIELD_KINDS.get(f, f) for f, _ in fields) + ")"
        if got != want and not (got == "list" and want[:5] == "list("):
            said = "an empty list" if got == "list" else f"a value of kind {got}"
            raise SignatureError(node, name, f"attribute {name!r} holds {said}, and "
                                 f"{node.op}'s OpDef says {want}: TensorFlow refuses the node "
                                 f"(\"AttrValue had value with type '{got}' when '{want}' "
                                 "expected\")")
        if minimum is not None:
            n = fields[0][1] if fields else 0
            if n < minimum:
                raise SignatureError(node, name, f"attribute {name!r} is a list of {n}, below "
                                     f"the minimum length {minimum} of {node.op}'s OpDef: "
                                     "TensorFlow refuses the node (\"Length for attr "
                                     f"'{name}' of {n} must be at least minimum {minimum}\")")
        if strings is not None:
            sc = getattr(attrs, "scalar", None) if type(attrs) is not dict else None
            v = sc(name)[1] if sc is not None else attrs[name].get("s")
            text = v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v
            if isinstance(text, str) and text not in strings:
                raise SignatureError(node, name, f"attribute {name!r} is {_short(text)!r}, "
                                     f"which {node.op}'s OpDef does not allow (it allows "
                                     f"{', '.join(sorted(strings))}): TensorFlow refuses the "
                                     "node (\"not in the list of allowed values\")")


_NEEDED: dict[str, tuple] = {}


def _check_allowed(node, values: dict) -> None:
    """Refuse a type attribute whose value (each of a list(type)) is not one
    its OpDef allows (TensorFlow: "Value for attr 'T' of bool is not in the
    list of allowed values")."""
    for name, allowed, is_list in _compiled(node.op)[5]:
        v = values.get(name)
        for t in (v if is_list and isinstance(v, list) else [v] if type(v) is str else ()):
            # (a DataType number tfsem has no name for is let be: a newer
            # TensorFlow's type, which its OpDef may allow)
            if t not in allowed and t[:3] == "DT_":
                raise SignatureError(node, name, f"attribute {name!r} is {_name(t)}, which "
                                     f"{node.op}'s OpDef does not allow (it allows "
                                     f"{_types_text(sorted(allowed))}): TensorFlow refuses the "
                                     "node (\"not in the list of allowed values\")")


def _values(node, attrs: dict) -> dict:
    """The node's attributes the signature reads (those its args name, and
    its int attributes with a minimum), read as their kinds say."""
    needed = _NEEDED.get(node.op)
    if needed is None:
        inputs, outputs, _ = OPS[node.op]
        names = {x for a in inputs + outputs for x in (
            "" if a[1].startswith("DT_") else a[1], a[2], a[3]) if x}
        names |= set(_compiled(node.op)[3]) | {a[0] for a in _compiled(node.op)[5]}
        needed = _NEEDED[node.op] = tuple((n, attrs[n]) for n in sorted(names) if n in attrs)
    return {name: _attr(node, name, spec) for name, spec in needed}


def _checked_values(node, attrs: dict, reached: bool = True,
                    values: dict | None = None) -> dict:
    """The node's attributes the signature reads (defaults filled: `values`
    where already read), each count checked against its OpDef minimum, each
    attribute of INT32_ATTRS (and of INT32_KERNEL_ATTRS, where the node is
    `reached`) against int32."""
    if values is None:
        values = _values(node, attrs)
    _check_allowed(node, values)
    for name in _compiled(node.op)[3]:
        v = values[name]
        if type(v) is not int:
            continue
        minimum = attrs[name][2]
        if minimum is not None and v < minimum:
            raise SignatureError(node, name, f"attribute {name!r} is {v}, below the minimum "
                                 f"{minimum} of {node.op}'s OpDef (TensorFlow refuses the node)")
    for table, why in ((INT32_ATTRS, "TensorFlow refuses the graph"),
                       (INT32_KERNEL_ATTRS if reached else {}, "TensorFlow cannot create its "
                        "kernel, and every run that reaches the node fails")):
        for name in table.get(node.op, ()):
            v = values.get(name)
            if v is None or v is _MISSING or v is _OTHER:
                a = node.attr.get(name)
                v = _int_of(a)
                if v is None:
                    v = _int_list_of(a)
            for x in ([v] if type(v) is int else v if isinstance(v, list) else []):
                if not INT32_MIN <= x <= INT32_MAX:
                    raise SignatureError(node, name, f"attribute {name!r} holds {x}, outside "
                                         f"int32, which {node.op} reads as an int32 ({why}: "
                                         "\"out of range for an int32\")")
    return values


def output_types(node, values: dict | None = None) -> list[str] | None:
    """The dtypes of a node's outputs (its OpDef's output args, typed by its
    attributes: `values`, _values of the node, where known), or None where
    the table cannot say."""
    d = OPS.get(node.op)
    if d is None:
        return None
    _, outputs, attrs = d
    if values is None:
        values = _values(node, attrs)
    plain = _compiled(node.op)[4]
    if plain is not None:
        # (the common case: no count or list(type) attribute among the outputs)
        types = []
        for typ, literal, is_ref in plain:
            t = typ if literal else values[typ]
            if t is _MISSING or t is _OTHER:
                return None
            types.append(t + "_REF" if is_ref else t)
        return types
    try:
        types = arg_types(node, outputs, attrs, values)
    except (SignatureError, _TooMany):
        return None     # (the node itself is refused where it is checked)
    if types is not None and any(t is _MISSING or t is _OTHER for t in types):
        return None
    return types


def check_node(node, source_type, reached: bool = True, values: dict | None = None) -> None:
    """Refuse `node` where it disagrees with its op's OpDef (the module's
    doc says how).  `source_type(ref)`: the dtype of data input `ref` (its
    source's output), None where unknown.  `reached`: whether a fetch or
    target needs the node (INT32_KERNEL_ATTRS).  `values`: _values of the
    node, where already read."""
    d = OPS.get(node.op)
    if d is None:
        return
    inputs, outputs, attrs = d
    plain, counts, out_attrs, _, _, _, kinds = _compiled(node.op)
    _check_kinds(node, kinds)
    values = _checked_values(node, attrs, reached, values)
    for name in counts:
        v = values[name]
        if type(v) is int and not INT32_MIN <= v <= INT32_MAX:
            raise SignatureError(node, name, f"attribute {name!r} is {v}, a count outside "
                                 "int32 (TensorFlow refuses the node)")
    data = [i for i in node.inputs if i[:1] != "^"]
    expected: Any = None
    if plain is not None:
        # (the common case: no count or list(type) attribute among the inputs)
        expected = []
        for typ, literal, is_ref in plain:
            t = typ if literal else values[typ]
            if t is _MISSING:
                expected = None   # refused below, by arg_types
                break
            if t is _OTHER:
                return
            expected.append(t + "_REF" if is_ref else t)
    if expected is None:
        try:
            expected = arg_types(node, inputs, attrs, values, cap=len(data) + 1024)
        except _TooMany:
            expected = _TooMany
    for a in out_attrs:
        if values[a] is _MISSING:
            # the outputs' attributes must be there too (Const's `dtype`)
            try:
                arg_types(node, outputs, attrs, values, cap=0)
            except _TooMany:
                pass
    if expected is None:
        return
    if expected is _TooMany or len(data) != len(expected):
        counted = sorted({a for _, _, number, type_list, _ in inputs
                          for a in (number, type_list) if a})
        which = f" (attribute{'s' if len(counted) > 1 else ''} " \
            f"{', '.join(repr(c) for c in counted)})" if counted else ""
        said = "more" if expected is _TooMany else f"{len(expected)}: {_types_text(expected)}"
        raise SignatureError(node, counted[0] if counted else "", f"has {len(data)} data "
                             f"input(s), and its attributes{which} say {said} (TensorFlow "
                             "refuses the node: \"NodeDef expected inputs ... do not match\")")
    for k, (ref, want) in enumerate(zip(data, expected)):
        got = source_type(ref)
        if got is None or got == want:
            continue
        # TensorFlow passes a reference where a value is expected (the ref is
        # read), never a value where a reference is expected
        if not want.endswith("_REF") and got.endswith("_REF") and got[:-4] == want:
            continue
        attr = _attribute_of_input(inputs, k, values)
        raise SignatureError(node, attr, f"input {k} ({_short(ref)}) is {_name(got)}, and the "
                             f"node's attributes say {_name(want)}"
                             f"{f' (attribute {attr!r})' if attr else ''}: TensorFlow refuses "
                             "the node (\"incompatible with expected\")")


def _attribute_of_input(inputs, k: int, values: dict) -> str:
    """The attribute that types data input k (for messages)."""
    for name, typ, number, type_list, _ in inputs:
        if type_list:
            n = len(values.get(type_list) or [])
            if k < n:
                return type_list
            k -= n
            continue
        n = values.get(number, 1) if number else 1
        n = n if type(n) is int else 1
        if k < n:
            return "" if typ.startswith("DT_") else typ
        k -= n
    return ""


def check_graph(nodes: Mapping[str, Any], reached: Any = None, only: Any = None) -> None:
    """Check every node of `nodes` ({name: GNode}, the graph's own nodes)
    against its op's signature; raises SignatureError for the first that
    disagrees.  `reached`: the names of the nodes a fetch or target needs
    (None: every node).  `only`: check just the nodes of these names (the
    others are the sources of their inputs)."""
    ops = OPS
    known = OPS.entries
    # each node's attributes are read once: as a node checked, and as the
    # source of its consumers' inputs (its output types)
    read: dict[str, dict] = {}
    memo: dict[str, list[str] | None] = {}

    def values_of(g) -> dict:
        v = read.get(g.name)
        if v is None:
            v = read[g.name] = _values(g, ops[g.op][2])
        return v

    def source_type(ref: str) -> str | None:
        src, port = ref, "0"
        if ":" in ref:
            s, _, p = ref.rpartition(":")
            if p.isdigit() and p.isascii():
                src, port = s, p
        types = memo.get(src, _MISSING)
        if types is _MISSING:
            g = nodes.get(src)
            types = memo[src] = output_types(g, values_of(g)) \
                if g is not None and g.op in known else None
        if types is None:
            return None
        p = int(port)
        return types[p] if p < len(types) else None

    fast_ops: dict[str, tuple | None] = {}
    for n in (nodes.values() if only is None else (nodes[k] for k in only if k in nodes)):
        _check_input_order(n)
        op = n.op
        if op not in known:
            continue
        fast = fast_ops.get(op, _MISSING)
        if fast is _MISSING:
            plain, counts, out_attrs, ints, _, allowed, kinds = _compiled(op)
            fast = fast_ops[op] = (plain, out_attrs, bool(allowed), kinds) \
                if plain is not None and not counts and not ints and op not in INT32_ATTRS \
                and op not in INT32_KERNEL_ATTRS else None
        values = values_of(n)
        if fast is not None and _fast_ok(n, fast, values, source_type):
            _check_kinds(n, fast[3])
            if fast[2]:
                _check_allowed(n, values)
            continue
        check_node(n, source_type, reached is None or n.name in reached, values)


def _check_input_order(n) -> None:
    """Refuse a node (of any op) with a control input before a data input
    (the function bodies' too: inlining keeps their inputs' order):
    a NodeDef rule TensorFlow's graph constructor applies to every node it
    loads ("Control dependencies must come after regular dependencies")."""
    control = ""
    for k, ref in enumerate(n.inputs):
        if ref[:1] == "^":
            control = control or ref
        elif control:
            raise SignatureError(n, "", f"data input {k} ({_short(ref)}) comes after the "
                                 f"control input {_short(control)}: TensorFlow refuses the "
                                 "node (\"Control dependencies must come after regular "
                                 "dependencies\")")


def _fast_ok(n, fast: tuple, values: dict, source_type) -> bool:
    """Whether node n, of an op with neither count, list(type) nor checked
    int attributes, agrees with its signature: the common case, decided
    here without check_node's work; False where check_node must look (it
    refuses, or finds an attribute of another kind and lets the node be)."""
    plain, out_attrs, _, _ = fast
    for a in out_attrs:
        if values[a] is _MISSING:
            return False
    inputs = n.inputs
    if len(inputs) < len(plain):
        return False
    k = 0
    for typ, literal, is_ref in plain:
        ref = inputs[k]
        if ref[:1] == "^":
            return False
        k += 1
        want = typ if literal else values[typ]
        if type(want) is not str:
            return False
        got = source_type(ref)
        if got is None or got == (want + "_REF" if is_ref else want):
            continue
        return False
    # any inputs left must be control inputs
    for ref in inputs[k:]:
        if ref[:1] != "^":
            return False
    return True


def check_counts(nodes: Mapping[str, Any]) -> None:
    """Refuse a node whose count attribute (`N`, `num_split`, ...) is
    negative, below its OpDef minimum or outside int32: checked before
    tfsem's op models read the graph (Split's model would make `num_split`
    outputs: 2**32 of them never end; TensorFlow refuses such a node, or
    dies trying to load it)."""
    ops, known = OPS, OPS.entries
    for n in nodes.values():
        if n.op not in known:
            continue
        counts = _compiled(n.op)[1]
        if not counts:
            continue
        attrs = ops[n.op][2]
        for name in counts:
            v = _attr(n, name, attrs[name])
            if type(v) is not int:
                continue
            minimum = attrs[name][2]
            if not INT32_MIN <= v <= INT32_MAX or v < 0:
                raise SignatureError(n, name, f"attribute {name!r} is {v}, a count outside "
                                     "0 to 2**31-1 (TensorFlow refuses the node)")
            if minimum is not None and v < minimum:
                raise SignatureError(n, name, f"attribute {name!r} is {v}, below the minimum "
                                     f"{minimum} of {n.op}'s OpDef (TensorFlow refuses the "
                                     "node)")


# -- the table, from TensorFlow ------------------------------------------------

#: The attribute kinds whose defaults the table keeps (what a signature
#: reads); of the others it keeps the kind, the minimum length of a list and
#: a string's allowed values.
TABLE_KINDS = ("type", "int", "list(type)", "list(int)")


def table_entry(op_def) -> tuple:
    """The table's entry of a TensorFlow OpDef message: (input args, output
    args, attributes), an arg (name, DT_ name or its type attribute, number
    attribute, list(type) attribute, is_ref), an attribute {name: (kind,
    default or None, minimum or None, the types (or, of a string, the
    values) it allows or None)}, every attribute of the OpDef (a default
    kept for the kinds of TABLE_KINDS, else None)."""
    from tensorflow.core.framework import types_pb2

    def arg(a):
        typ = a.type_attr or (types_pb2.DataType.Name(a.type) if a.type else "")
        return (a.name, typ, a.number_attr, a.type_list_attr, bool(a.is_ref))

    attrs = {}
    for a in op_def.attr:
        if a.type not in TABLE_KINDS:
            allowed = None
            if a.type in ("string", "list(string)") and a.HasField("allowed_values"):
                allowed = tuple(sorted(v.decode("utf-8", "backslashreplace")
                                       for v in a.allowed_values.list.s))
            attrs[a.name] = (a.type, None, int(a.minimum) if a.has_minimum else None, allowed)
            continue
        default = None
        if a.HasField("default_value"):
            dv = a.default_value
            if a.type == "type":
                default = types_pb2.DataType.Name(dv.type)
            elif a.type == "int":
                default = int(dv.i)
            elif a.type == "list(type)":
                default = tuple(types_pb2.DataType.Name(t) for t in dv.list.type)
            else:
                default = tuple(int(i) for i in dv.list.i)
        allowed = None
        if a.type in ("type", "list(type)") and a.HasField("allowed_values"):
            allowed = tuple(sorted(types_pb2.DataType.Name(t)
                                   for t in a.allowed_values.list.type))
        attrs[a.name] = (a.type, default, int(a.minimum) if a.has_minimum else None, allowed)
    return (tuple(arg(a) for a in op_def.input_arg), tuple(arg(a) for a in op_def.output_arg),
            attrs)


def tfsem_ops() -> list[str]:
    """The ops whose OpDefs the table holds: every op tfsem's op table models
    (without entry points') or knows as uninterpreted, and Placeholder."""
    from tfsem.oracle import opdefs
    return sorted(set(opdefs.table()) | set(opdefs.uninterpreted()) | {"Placeholder"})


def generate_table() -> dict[str, tuple]:
    """{op: table_entry} from TensorFlow's op registry, for tfsem_ops() that
    TensorFlow knows (needs TensorFlow)."""
    import tensorflow as tf  # noqa: F401  (registers the ops)
    from tensorflow.python.framework import op_def_registry
    out = {}
    for op in tfsem_ops():
        od = op_def_registry.get(op)
        if od is not None:
            out[op] = table_entry(od)
    return out


class _Named:
    """A value the table's text writes by a name (a list of allowed types
    many attributes share, written once)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def write_table(path) -> None:
    """Write oracle/opdefs/tf_signatures.py from TensorFlow (`python -m
    tfsem.graphdef.signatures`).  Each list of allowed types is written once,
    as `_ALLOWED[k]`, and each op's entry as text (OPS decodes it when
    first used)."""
    import pprint
    import tensorflow as tf
    table = generate_table()
    lists = sorted({spec[3] for _, _, attrs in table.values() for spec in attrs.values()
                    if spec[3] is not None})
    index = {t: k for k, t in enumerate(lists)}
    named = {op: (ins, outs, {a: spec[:3] + (_Named(f"_ALLOWED[{index[spec[3]]}]")
                                             if spec[3] is not None else None,)
                              for a, spec in attrs.items()})
             for op, (ins, outs, attrs) in table.items()}
    entries = {op: repr(named[op]) for op in sorted(named)}
    text = ('"""TensorFlow\'s OpDef signatures of the ops tfsem models or passes to kernels\n'
            '(graphdef/signatures.py reads them).  Written by `python -m\n'
            f'tfsem.graphdef.signatures` from TensorFlow {tf.__version__}; do not edit.\n\n'
            'ENTRIES: {op: the text of (input args, output args, attributes)}, decoded\n'
            'when first used (graphdef/signatures.py OPS): an arg is (name, its DT_\n'
            'type or type attribute, number attribute, list(type) attribute, is_ref);\n'
            'an attribute {name: (kind, default or None, minimum or None, the types it\n'
            'allows or None)}, the allowed types `_ALLOWED[k]`."""\n\n'
            f'TENSORFLOW_VERSION = {tf.__version__!r}\n\n'
            f'_ALLOWED = {pprint.pformat(lists, width=99)}\n\n'
            f'ENTRIES = {pprint.pformat(entries, width=99, sort_dicts=True)}\n')
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def derive_attrs(op: str, in_types: Sequence[str | None],
                 out_types: Sequence[str | None]) -> dict[str, dict]:
    """The type, count and list(type) attributes of an `op` node whose
    operands and results have these dtypes (DT_ names, None unknown), as
    AttrValue dicts: what TensorFlow's MLIR exporter derives (the dialect
    prints no derived attribute).  Where the args cannot be matched to the
    operands (two variadic args, a count that does not fit), only what can
    be told; nothing for an op the table does not hold."""
    d = OPS.get(op)
    if d is None:
        return {}
    inputs, outputs, attrs = d
    out: dict[str, dict] = {}
    for args, types in ((inputs, list(in_types)), (outputs, list(out_types))):
        variadic = [a for a in args if a[2] or a[3]]
        if len(variadic) > 1:
            continue
        rest = len(args) - len(variadic)
        if rest > len(types):
            continue
        k = 0
        for name, typ, number, type_list, _ in args:
            n = len(types) - rest if number or type_list else 1
            got = types[k:k + n]
            k += n
            if type_list:
                if all(t is not None for t in got):
                    out.setdefault(type_list, {"list": {"type": list(got)}})
                continue
            if number:
                out.setdefault(number, {"i": n})
            if not typ.startswith("DT_") and got and got[0] is not None \
                    and all(t == got[0] for t in got):
                out.setdefault(typ, {"type": got[0]})
    return {k: v for k, v in out.items() if k in attrs}


if __name__ == "__main__":   # pragma: no cover
    from pathlib import Path
    write_table(Path(__file__).resolve().parent.parent / "oracle" / "opdefs" / "tf_signatures.py")
