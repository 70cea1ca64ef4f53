"""Binary decoding with the `protobuf` package (its C implementation, upb),
from descriptors built here out of `schema` -- tfsem's own, not TensorFlow's
generated modules.

`schema.MESSAGES` is turned into one FileDescriptorProto (package
``tensorflow``, proto3, nested types where the name has a dot, maps as
``map_entry`` messages, every singular scalar ``optional`` so that a field
present on the wire with its zero value stays present, as in the dict form);
fields the schema marks ``skip`` are declared as ``bytes`` so that they are
known and stay opaque.  The messages live in a private DescriptorPool, so
they never clash with TensorFlow's own when both are loaded.

    parse(message, data) -> protobuf message      (upb; fast)
    to_dict(msg) -> dict                          (the dict form of graphdef.proto)
    decode(message, data) -> dict                 to_dict(parse(message, data))

`parse` is strict where tfsem's hand-written decoder is: when protobuf's
parser refuses the bytes, or accepts them only by setting fields aside as
unknown (a known field with the wrong wire type, groups, a field number
newer than the schema), the bytes are decoded again by `wire.decode`, which
names the field path and the byte offset of what is wrong (or accepts
them, when the unknown fields are merely unknown).  The common case -- a
graph TensorFlow wrote -- never leaves C.  Above STRICT_BYTES (8 MiB) the
second reading is skipped: protobuf's semantics and message hold.
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from . import MAX_DEPTH, MAX_SIZE, ProtoError
from .schema import ENUMS, MESSAGES, lookup

_FD = descriptor_pb2.FieldDescriptorProto
_TYPES = {
    "double": _FD.TYPE_DOUBLE, "float": _FD.TYPE_FLOAT, "int64": _FD.TYPE_INT64,
    "uint64": _FD.TYPE_UINT64, "int32": _FD.TYPE_INT32, "fixed64": _FD.TYPE_FIXED64,
    "fixed32": _FD.TYPE_FIXED32, "bool": _FD.TYPE_BOOL, "string": _FD.TYPE_STRING,
    "bytes": _FD.TYPE_BYTES, "uint32": _FD.TYPE_UINT32, "sfixed32": _FD.TYPE_SFIXED32,
    "sfixed64": _FD.TYPE_SFIXED64, "sint32": _FD.TYPE_SINT32, "sint64": _FD.TYPE_SINT64,
    "enum": _FD.TYPE_ENUM, "message": _FD.TYPE_MESSAGE, "skip": _FD.TYPE_BYTES,
}


def _full(name: str) -> str:
    """The fully qualified protobuf name of a schema message or enum."""
    return "." + name if name.startswith("google.") else ".tensorflow." + name


def _entry_name(field_name: str) -> str:
    # protoc's rule: foo_bar -> FooBarEntry
    return "".join(p[:1].upper() + p[1:] for p in field_name.split("_")) + "Entry"


def _scalar(fp, kind: str, type_name: str | None) -> None:
    fp.type = _TYPES[kind]
    if kind == "enum":
        fp.type_name = _full(type_name)
    elif kind == "message":
        fp.type_name = _full(type_name)


def _fill(dp, msg) -> None:
    """DescriptorProto `dp` of schema message `msg` (nested types added by the caller)."""
    oneofs: list[str] = []
    synthetic: list[tuple] = []
    for f in msg.fields:
        fp = dp.field.add(name=f.name, number=f.number, json_name=f.name)
        if f.kind == "map":
            entry = dp.nested_type.add(name=_entry_name(f.name))
            entry.options.map_entry = True
            k = entry.field.add(name="key", number=1, label=_FD.LABEL_OPTIONAL, json_name="key")
            _scalar(k, f.key_kind, None)
            v = entry.field.add(name="value", number=2, label=_FD.LABEL_OPTIONAL, json_name="value")
            _scalar(v, f.value_kind, f.type_name)
            fp.label = _FD.LABEL_REPEATED
            fp.type = _FD.TYPE_MESSAGE
            fp.type_name = f"{_full(msg.name)}.{entry.name}"
            continue
        _scalar(fp, f.kind, f.type_name)
        if f.repeated:
            fp.label = _FD.LABEL_REPEATED
            continue
        fp.label = _FD.LABEL_OPTIONAL
        if f.oneof:
            if f.oneof not in oneofs:
                oneofs.append(f.oneof)
            fp.oneof_index = oneofs.index(f.oneof)
        elif f.kind not in ("message",):
            # explicit presence: a zero written on the wire stays in the dict
            fp.proto3_optional = True
            synthetic.append((fp, "_" + f.name))
    for name in oneofs:
        dp.oneof_decl.add(name=name)
    for fp, name in synthetic:  # synthetic oneofs come after the real ones
        fp.oneof_index = len(dp.oneof_decl)
        dp.oneof_decl.add(name=name)


def file_descriptors() -> list[descriptor_pb2.FileDescriptorProto]:
    """FileDescriptorProtos of every schema message and enum (google.protobuf.Any
    in a file of its own, the rest in package tensorflow)."""
    tf = descriptor_pb2.FileDescriptorProto(name="tfsem/graphdef/tensorflow.proto",
                                            package="tensorflow", syntax="proto3")
    anyf = descriptor_pb2.FileDescriptorProto(name="google/protobuf/any.proto",
                                              package="google.protobuf", syntax="proto3")
    tf.dependency.append(anyf.name)
    protos: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name in sorted(MESSAGES, key=lambda n: (n.count("."), n)):
        if name.startswith("google.protobuf."):
            dp = anyf.message_type.add(name=name.rsplit(".", 1)[1])
        elif "." in name:
            parent, _, short = name.rpartition(".")
            dp = protos[parent].nested_type.add(name=short)
        else:
            dp = tf.message_type.add(name=name)
        protos[name] = dp
    for name, dp in protos.items():
        _fill(dp, MESSAGES[name])
    for enum, values in ENUMS.items():
        if "." in enum:
            parent, _, short = enum.rpartition(".")
            ep = protos[parent].enum_type.add(name=short)
        else:
            ep = tf.enum_type.add(name=enum)
        for number, vname in sorted(values.items()):
            ep.value.add(name=vname, number=number)
    return [anyf, tf]


_POOL = descriptor_pool.DescriptorPool()
for _fdp in file_descriptors():
    _POOL.Add(_fdp)
del _fdp

#: schema name -> generated message class (in the private pool)
CLASSES: dict[str, type] = {
    name: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(_full(name)[1:]))
    for name in MESSAGES
}


def message_class(message: str) -> type:
    return CLASSES[lookup(message).name]


def parse(message: str, data) -> object:
    """The protobuf message (tfsem's descriptors) of the binary `data`.

    Raises ProtoError naming the field path and byte offset when the bytes
    are not a valid `message` (see the module's doc for how)."""
    msg = lookup(message)
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise ProtoError(f"{msg.name}: expected bytes to decode, got {type(data).__name__}")
    if len(data) > MAX_SIZE:
        raise ProtoError(f"{msg.name}: {len(data)} bytes is more than protobuf's 2 GiB limit")
    out = CLASSES[msg.name]()
    try:
        out.ParseFromString(data)
    except DecodeError as exc:
        _diagnose(msg.name, data, exc)
    except RecursionError:  # pragma: no cover - upb bounds its own depth
        _diagnose(msg.name, data, None)
    out.DiscardUnknownFields()
    if out.ByteSize() != len(data) and len(data) <= STRICT_BYTES:
        # not every byte is a known field written the canonical way: fields
        # set aside as unknown, or a non-canonical encoding (unpacked
        # numbers, a field given twice, long varints).  The hand-written
        # decoder says whether that is corruption (a known field of the
        # wrong wire type, a group, a map entry with a third field) or
        # merely unknown or unusual (then accepted, as protobuf does).
        from .wire import decode
        decode(msg.name, data)
    return out


#: Up to this size, bytes that protobuf's parser refuses, or accepts only by
#: setting some aside, are read again by the hand-written decoder (about
#: 4 MB a second) for a precise message or a precise refusal.  Larger input
#: keeps protobuf's own semantics and message, so that reading it stays at
#: the C parser's speed.
STRICT_BYTES = 8 << 20


def _diagnose(name: str, data: bytes, exc) -> None:
    """Raise the precise ProtoError of bytes protobuf's parser refused."""
    if len(data) > STRICT_BYTES:
        raise ProtoError(f"{name}: protobuf's parser refuses these {len(data)} bytes ({exc or 'nested too deep'}); "
                         f"for input over {STRICT_BYTES >> 20} MiB the field and byte offset are not located")
    from .wire import decode
    decode(name, data)  # raises ProtoError with the field path and offset
    # protobuf refused what the hand-written decoder accepts (a limit of its own)
    raise ProtoError(f"{name}: protobuf's parser refuses these bytes ({exc or 'nested too deep'}); "
                     f"the message may be nested more than {MAX_DEPTH} levels deep")


def decode(message: str, data) -> dict:
    """The dict form of the binary `data` as the message called `message`
    (protobuf's parser, then `to_dict`)."""
    return to_dict(parse(message, data))


# ---------------------------------------------------------------- to dict

def to_dict(m) -> dict:
    """The dict form (see graphdef.proto) of a parsed message: the same dict
    `wire.decode` gives for the same bytes."""
    out = {}
    for fd, value in m.ListFields():
        conv = _CONVERT.get(fd)
        if conv is None:
            conv = _CONVERT[fd] = _converter(fd)
        if conv is _FLOAT:
            out[fd.name] = value if value == value else _exact_floats(m, fd, 1)[0]
        elif conv is _FLOATS:
            out[fd.name] = list(value) if all(x == x for x in value) \
                else _exact_floats(m, fd, len(value))
        elif conv is not _SKIP:
            out[fd.name] = conv(value)
    return out


def _exact_floats(m, fd, n: int) -> list[float]:
    """The n float32s of float field `fd` of message `m`, each widened
    exactly (oracle/float_attrs.float32_value): protobuf's Python values are
    the float32s widened by the CPU, which quiets a signalling NaN
    (0x7f800001 reads 0x7fc00001), where TensorFlow keeps the bits.  So the
    field alone is serialized (protobuf's own copy of the float32s: packed,
    or one fixed32) and its last 4n bytes read.  Only where a value is a NaN."""
    from tfsem.oracle.float_attrs import float32_value
    data = _field_bytes(m, fd.name, 4 * n)
    return [float32_value(int.from_bytes(data[4 * k:4 * k + 4], "little")) for k in range(n)]


def _field_bytes(m, name: str, size: int) -> bytes:
    """The last `size` bytes of message `m` serialized with field `name`
    alone: a float field's float32s as protobuf holds them (packed, or one
    fixed32), its payload last.  (Unknown fields are written after the
    known ones: they are discarded, so that none follows the field.)"""
    alone = type(m)()
    alone.CopyFrom(m)   # (a copy of the message in C: the float32s themselves)
    alone.DiscardUnknownFields()
    for other, _ in alone.ListFields():
        if other.name != name:
            alone.ClearField(other.name)
    data = alone.SerializeToString()
    return data[len(data) - size:]


def _tensor_dict(t) -> dict:
    """to_dict of a TensorProto message, with its float_val bit for bit, as
    numpy float32 scalars (for the importer: the dict form keeps Python
    floats).  protobuf's Python values of a float field are C doubles
    widened from the float32s it holds, and widening quiets a signalling NaN
    (x86's cvtss2sd sets the quiet bit), where TensorFlow's Const kernel
    copies the float32s themselves.  So the field alone is serialized
    (protobuf's own copy of the bits) and its packed payload, the last 4n
    bytes, read.  Only where a value is a NaN: every other float32 comes
    back from its double unchanged.  (Measured side by side on the corpus'
    591 constants with float_val, medians of 7: to_dict 1.8 us each, this
    2.1 us; reading the bytes of every one, 4.7 us.)"""
    out = to_dict(t)
    values = out.get("float_val")
    if values and any(x != x for x in values):
        import numpy as np
        data = _field_bytes(t, "float_val", 4 * len(values))
        out["float_val"] = list(np.frombuffer(data, dtype="<f4").astype(np.float32))
    return out


def library_dict(lib) -> dict:
    """to_dict of a FunctionDefLibrary message for the importer: each
    function body's Const value with float_val bit for bit (_tensor_dict),
    as a graph node's is read (attr_dict; a Const's `value` is the only
    tensor attribute the importer reads)."""
    out = to_dict(lib)
    for fm, fd in zip(lib.function, out.get("function", [])):
        for nm, nd in zip(fm.node_def, fd.get("node_def", [])):
            if nm.op == "Const":
                a = nm.attr.get("value")
                if a is not None and a.WhichOneof("value") == "tensor" and len(a.tensor.float_val):
                    nd["attr"]["value"] = {"tensor": _tensor_dict(a.tensor)}
    return out


_ENUM_NAMES = {_full(k)[1:]: v for k, v in ENUMS.items()}
_SKIP = object()
_FLOAT = object()    # a float field (to_dict: a NaN read bit for bit)
_FLOATS = object()   # a repeated float field
_CONVERT: dict = {}


def _schema_message(desc):
    name = desc.full_name
    return MESSAGES[name[len("tensorflow."):] if name.startswith("tensorflow.") else name]


def _converter(fd):
    """A function from a field's protobuf value to its dict form."""
    if _schema_message(fd.containing_type).by_name[fd.name].kind == "skip":
        return _SKIP
    mt = fd.message_type
    if mt is not None and mt.GetOptions().map_entry:
        vfd = mt.fields_by_name["value"]
        if vfd.message_type is not None:
            return lambda v: {k: to_dict(x) for k, x in v.items()}
        if vfd.enum_type is not None:
            names = _ENUM_NAMES[vfd.enum_type.full_name]
            return lambda v: {k: names.get(x, x) for k, x in v.items()}
        return dict
    if fd.type == _FD.TYPE_FLOAT:
        return _FLOATS if _is_repeated(fd) else _FLOAT
    if _is_repeated(fd):
        if mt is not None:
            return lambda v: [to_dict(x) for x in v]
        if fd.enum_type is not None:
            names = _ENUM_NAMES[fd.enum_type.full_name]
            return lambda v: [names.get(x, x) for x in v]
        return list
    if mt is not None:
        return to_dict
    if fd.enum_type is not None:
        names = _ENUM_NAMES[fd.enum_type.full_name]
        return lambda x: names.get(x, x)
    return _same


def _same(x):
    return x


def _is_repeated(fd) -> bool:
    rep = getattr(fd, "is_repeated", None)  # protobuf >= 6; `label` before
    return rep if rep is not None else fd.label == _FD.LABEL_REPEATED


def attr_dict(a) -> dict:
    """to_dict of an AttrValue message, without the generic walk over its
    fields for the kinds most attributes are (a dtype, a string, a number,
    a bool): every field of AttrValue is in its oneof `value`, so the dict
    holds the one set, if any."""
    which = a.WhichOneof("value")
    if which == "type":
        t = a.type
        return {"type": _DATA_TYPES.get(t, t)}
    if which in _PLAIN_ATTR_FIELDS:
        v = getattr(a, which)
        return {which: _exact_f(a) if v != v else v}
    if which == "tensor":
        return {"tensor": _tensor_dict(a.tensor)}
    return to_dict(a) if which is not None else {}


def _exact_f(a) -> float:
    """AttrValue `a`'s float `f`, a NaN bit for bit (_exact_floats)."""
    return _exact_floats(a, a.DESCRIPTOR.fields_by_name["f"], 1)[0]


#: AttrValue fields whose dict form is the protobuf value itself.
_PLAIN_ATTR_FIELDS = frozenset(("s", "i", "f", "b", "placeholder"))
_DATA_TYPES = _ENUM_NAMES["tensorflow.DataType"]


class LazyAttrs(Mapping):
    """A NodeDef message's `attr` map as the dict form, converted one value
    at a time when first read: the importer reads a few attributes of the
    nodes it builds and none of the others."""

    __slots__ = ("_node", "_map", "_cache")

    def __init__(self, node):
        self._node = node
        self._map = None
        self._cache: dict = {}

    def _m(self):
        m = self._map
        if m is None:
            m = self._map = self._node.attr
        return m

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key, default=None):
        value = self._cache.get(key)
        if value is None:
            m = self._map
            if m is None:
                m = self._map = self._node.attr
            # (the map's get looks up without inserting, as m[key] would)
            a = m.get(key) if isinstance(key, str) else None
            if a is None:
                return default
            value = self._cache[key] = attr_dict(a)
        return value

    def scalar(self, key):
        """(field, value) of attribute `key` where it is a dtype (its DT_
        name), a string (bytes), an int, a float, a bool or a placeholder --
        the one entry of its dict form -- read without building that dict;
        None where the attribute is absent or of another kind."""
        value = self._cache.get(key)
        if value is not None:
            if len(value) == 1:
                (which, v), = value.items()
                if which == "type" or which in _PLAIN_ATTR_FIELDS:
                    return which, v
            return None
        m = self._map
        if m is None:
            m = self._map = self._node.attr
        a = m.get(key) if isinstance(key, str) else None
        if a is None:
            return None
        which = a.WhichOneof("value")
        if which == "type":
            t = a.type
            return which, _DATA_TYPES.get(t, t)
        if which in _PLAIN_ATTR_FIELDS:
            v = getattr(a, which)
            return which, (_exact_f(a) if v != v else v)
        return None

    def kind(self, key):
        """(the AttrValue field set, the lengths of its list's nonempty
        fields as ((field, length), ...) or None) of attribute `key`, read
        from the message; None where the attribute is absent or unset."""
        a = self._m().get(key) if isinstance(key, str) else None
        if a is None:
            return None
        which = a.WhichOneof("value")
        if which != "list":
            return None if which is None else (which, None)
        return which, tuple((f.name, len(v)) for f, v in a.list.ListFields())

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key in self._m()

    def __iter__(self):
        return iter(sorted(self._m()))

    def __len__(self) -> int:
        return len(self._m())

    def __repr__(self) -> str:
        return f"LazyAttrs({dict(self)!r})"
