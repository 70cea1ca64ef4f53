"""The protobuf binary wire format, decoded and encoded from `schema`.

Decoding walks one immutable `bytes` buffer with integer offsets: no slice is
taken except for the leaf values returned (a string, a bytes field, a packed
run through `struct.unpack_from`), so a GraphDef of N nodes decodes in O(size).
Every length is checked against the bytes left in the enclosing message before
it is used; nesting deeper than MAX_DEPTH is refused.

Semantics follow protobuf's (proto3):
- an unknown field number, or a field the schema marks `skip`, is skipped;
- a known field with the wrong wire type is an error (protobuf would skip it;
  for tfsem it means "this is not the message you think it is");
- a repeated numeric field accepts packed and unpacked elements, mixed;
- a singular scalar seen twice keeps the last value; a singular message seen
  twice is merged; setting one member of a oneof clears the others;
- a map entry without key or value gets the default (""/0, or an empty
  message); a repeated key keeps the last entry.
Group wire types (3, 4) are refused: no TensorFlow message uses groups.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import struct

from . import MAX_DEPTH, MAX_SIZE, ProtoError
from .schema import (ENUM_NUMBERS, ENUMS, FIXED32_KINDS, FIXED64_KINDS, MESSAGES, WIRE_FIXED32,
                     WIRE_FIXED64, WIRE_LENGTH, WIRE_NAMES, WIRE_VARINT, Field, Message, lookup)

_M32 = (1 << 32) - 1
_M64 = (1 << 64) - 1
_FIXED_FORMAT = {"double": "d", "fixed64": "Q", "sfixed64": "q", "float": "f", "fixed32": "I",
                 "sfixed32": "i"}
_RANGES = {
    "int32": (-(1 << 31), (1 << 31) - 1), "sint32": (-(1 << 31), (1 << 31) - 1),
    "sfixed32": (-(1 << 31), (1 << 31) - 1), "enum": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, _M32), "fixed32": (0, _M32),
    "int64": (-(1 << 63), (1 << 63) - 1), "sint64": (-(1 << 63), (1 << 63) - 1),
    "sfixed64": (-(1 << 63), (1 << 63) - 1),
    "uint64": (0, _M64), "fixed64": (0, _M64),
}


def _field_path(path: str, message: Message, field: Field, out: dict) -> str:
    """The path of `field` inside `message` at `path` (map entries speak in keys)."""
    if message.is_map_entry:
        if field.name == "value":
            if "key" in out:
                return f"{path}[{_key_repr(out['key'])}]"
            return f"{path}[?]"
        return f"{path}[key]"
    return f"{path}.{field.name}"


def _key_repr(key) -> str:
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    return str(key)


# ---------------------------------------------------------------- decoding

def decode(message: str, data) -> dict:
    """Decode the binary protobuf `data` as the message called `message`."""
    msg = lookup(message)
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise ProtoError(f"{msg.name}: expected bytes to decode, got {type(data).__name__}")
    if len(data) > MAX_SIZE:
        raise ProtoError(f"{msg.name}: {len(data)} bytes is more than protobuf's 2 GiB limit")
    return _decode(msg, data, 0, len(data), msg.name, 0)


def _varint(data: bytes, pos: int, end: int, what):
    """(value, new position) of the varint at `pos`; `what()` names it for errors."""
    if pos < end:
        b = data[pos]
        if b < 0x80:
            return b, pos + 1
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtoError(f"truncated varint at byte {start} in {what()}")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _M64, pos
        shift += 7
        if shift >= 70:
            raise ProtoError(f"malformed varint (more than 10 bytes) at byte {start} in {what()}")


def _convert_varint(kind: str, raw: int, field: Field):
    if kind == "int64":
        return raw - (1 << 64) if raw >> 63 else raw
    if kind == "int32" or kind == "enum":
        raw &= _M32
        value = raw - (1 << 32) if raw >> 31 else raw
        if kind == "enum":
            return ENUMS[field.type_name].get(value, value)
        return value
    if kind == "bool":
        return raw != 0
    if kind == "uint64":
        return raw
    if kind == "uint32":
        return raw & _M32
    if kind == "sint64":
        return (raw >> 1) ^ -(raw & 1)
    if kind == "sint32":
        raw &= _M32
        return (raw >> 1) ^ -(raw & 1)
    raise AssertionError(kind)


def _skip(data: bytes, pos: int, end: int, wire_type: int, tag_pos: int, number: int, path: str) -> int:
    """Skip one unknown field's value; returns the position after it."""
    def what():
        return f"{path} (unknown field {number})"

    if wire_type == WIRE_VARINT:
        return _varint(data, pos, end, what)[1]
    if wire_type == WIRE_FIXED64:
        size = 8
    elif wire_type == WIRE_FIXED32:
        size = 4
    elif wire_type == WIRE_LENGTH:
        length_pos = pos
        size, pos = _varint(data, pos, end, what)
        if size > end - pos:
            raise ProtoError(f"length {size} at byte {length_pos} runs past the end of {path} "
                             f"({end - pos} bytes left) in {what()}")
    else:
        raise AssertionError(wire_type)
    if size > end - pos:
        raise ProtoError(f"truncated {WIRE_NAMES[wire_type]} value at byte {pos} in {what()}")
    return pos + size


def _clear_oneof(msg: Message, field: Field, out: dict) -> None:
    for other in msg.oneofs[field.oneof]:
        if other != field.name:
            out.pop(other, None)


def _decode(msg: Message, data: bytes, pos: int, end: int, path: str, depth: int) -> dict:
    if depth > MAX_DEPTH:
        raise ProtoError(f"nested too deep (more than {MAX_DEPTH} levels) at byte {pos} in {path}")
    out: dict = {}
    by_number = msg.by_number
    while pos < end:
        tag_pos = pos
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _varint(data, pos, end, lambda: f"{path} (field tag)")
        number = tag >> 3
        wire_type = tag & 7
        if wire_type > 5:
            raise ProtoError(f"invalid wire type {wire_type} (field {number}) at byte {tag_pos} in {path}: "
                             f"not a {_root(path)}?")
        if number == 0 or number >= 1 << 29:
            raise ProtoError(f"invalid field number {number} at byte {tag_pos} in {path} (field numbers are "
                             f"1 to 2^29-1): not a {_root(path)}?")
        if wire_type == 3 or wire_type == 4:
            raise ProtoError(f"{WIRE_NAMES[wire_type]} wire type (field {number}) at byte {tag_pos} in {path}: "
                             f"TensorFlow messages use no groups; not a {_root(path)}?")
        field = by_number.get(number)
        if field is None and msg.is_map_entry:
            # a map entry has exactly fields 1 (key) and 2 (value); anything else is corruption
            # (protobuf's upb parser silently drops such an entry from the map)
            raise ProtoError(f"field {number} in a map entry at byte {tag_pos} in {path}: a map entry has only "
                             f"key (1) and value (2); not a {_root(path)}?")
        if field is None or field.kind == "skip":
            pos = _skip(data, pos, end, wire_type, tag_pos, number, path)
            continue
        kind = field.kind
        name = field.name
        if wire_type == WIRE_LENGTH and (kind == "message" or kind == "map" or kind == "string"
                                         or kind == "bytes" or field.packable):
            length_pos = pos
            b = data[pos] if pos < end else 0x80
            if b < 0x80:
                length = b
                pos += 1
            else:
                length, pos = _varint(data, pos, end, lambda: _field_path(path, msg, field, out))
            if length > end - pos:
                raise ProtoError(f"length {length} at byte {length_pos} runs past the end of {path} "
                                 f"({end - pos} bytes left) in {_field_path(path, msg, field, out)}")
            sub_end = pos + length
            if kind == "message":
                sub = MESSAGES[field.type_name]
                if field.repeated:
                    items = out.get(name)
                    if items is None:
                        items = out[name] = []
                    items.append(_decode(sub, data, pos, sub_end, f"{path}.{name}[{len(items)}]", depth + 1))
                else:
                    value = _decode(sub, data, pos, sub_end, _field_path(path, msg, field, out), depth + 1)
                    if field.oneof:
                        _clear_oneof(msg, field, out)
                    if name in out:
                        _merge(sub, out[name], value)
                    else:
                        out[name] = value
            elif kind == "map":
                entries = out.get(name)
                if entries is None:
                    entries = out[name] = {}
                entry = _decode(field.entry, data, pos, sub_end, f"{path}.{name}", depth + 1)
                key = entry.get("key")
                if key is None:
                    key = _default(field.key_kind, None)
                value = entry.get("value")
                if value is None:
                    value = _default(field.value_kind, field.type_name)
                entries[key] = value
            elif kind == "string":
                try:
                    value = data[pos:sub_end].decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ProtoError(f"invalid UTF-8 at byte {pos + e.start} in string field "
                                     f"{_field_path(path, msg, field, out)}") from None
                _store(msg, field, out, value)
            elif kind == "bytes":
                _store(msg, field, out, data[pos:sub_end])
            elif length:  # a packed run of numbers (an empty run leaves the field as it was)
                items = out.get(name)
                if items is None:
                    items = out[name] = []
                if kind in FIXED64_KINDS or kind in FIXED32_KINDS:
                    size = 8 if kind in FIXED64_KINDS else 4
                    if length % size:
                        raise ProtoError(f"packed {kind} run of {length} bytes at byte {length_pos} is not "
                                         f"a multiple of {size} in {_field_path(path, msg, field, out)}")
                    vals = struct.unpack_from(f"<{length // size}{_FIXED_FORMAT[kind]}", data, pos)
                    if kind == "float" and any(x != x for x in vals):
                        vals = _exact_floats(data, pos, length // size)
                    items.extend(vals)
                else:
                    p = pos
                    what = lambda: _field_path(path, msg, field, out)  # noqa: E731
                    raws = []
                    raw_append = raws.append
                    while p < sub_end:
                        b = data[p]
                        if b < 0x80:
                            raw_append(b)
                            p += 1
                        else:
                            raw, p = _varint(data, p, sub_end, what)
                            raw_append(raw)
                    if kind == "int64":
                        items.extend([r - (1 << 64) if r >> 63 else r for r in raws])
                    elif kind == "uint64":
                        items.extend(raws)
                    else:
                        items.extend([_convert_varint(kind, r, field) for r in raws])
            pos = sub_end
        elif wire_type == field.wire_type and kind != "message" and kind != "map":
            if wire_type == WIRE_VARINT:
                b = data[pos] if pos < end else 0x80
                if b < 0x80:
                    raw = b
                    pos += 1
                else:
                    raw, pos = _varint(data, pos, end, lambda: _field_path(path, msg, field, out))
                value = _convert_varint(kind, raw, field)
            else:
                size = 8 if wire_type == WIRE_FIXED64 else 4
                if size > end - pos:
                    raise ProtoError(f"truncated {WIRE_NAMES[wire_type]} value at byte {pos} in "
                                     f"{_field_path(path, msg, field, out)}")
                value = struct.unpack_from("<" + _FIXED_FORMAT[kind], data, pos)[0]
                if kind == "float" and value != value:
                    value = _exact_floats(data, pos, 1)[0]
                pos += size
            _store(msg, field, out, value)
        else:
            expected = field.wire_type
            raise ProtoError(
                f"field {number} of {msg.name} ({name}) has wire type {wire_type} at byte {tag_pos}, expected "
                f"{expected} ({WIRE_NAMES[expected]}) in {path}: not a {_root(path)}?")
    return out


def _root(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def _store(msg: Message, field: Field, out: dict, value) -> None:
    if field.repeated:
        items = out.get(field.name)
        if items is None:
            out[field.name] = [value]
        else:
            items.append(value)
    else:
        if field.oneof:
            _clear_oneof(msg, field, out)
        out[field.name] = value


def _default(kind: str, type_name):
    if kind == "message":
        return {}
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    if kind == "bool":
        return False
    if kind in ("float", "double"):
        return 0.0
    if kind == "enum":
        return ENUMS[type_name].get(0, 0)
    return 0


def _merge(msg: Message, dst: dict, src: dict) -> None:
    """Protobuf's merge of `src` into `dst` (a singular message seen twice on the wire)."""
    for name, value in src.items():
        field = msg.by_name[name]
        if field.kind == "map":
            dst.setdefault(name, {}).update(value)
        elif field.repeated:
            dst.setdefault(name, []).extend(value)
        else:
            if field.oneof:
                _clear_oneof(msg, field, dst)
            if field.kind == "message" and name in dst:
                _merge(MESSAGES[field.type_name], dst[name], value)
            else:
                dst[name] = value


# ---------------------------------------------------------------- encoding

def encode(message: str, value: dict) -> bytes:
    """Encode the dict `value` as the binary protobuf message called `message`.

    Fields are written in field-number order; repeated numbers packed (proto3);
    every field present in the dict is written, zero values included.
    """
    msg = lookup(message)
    out = bytearray()
    _encode(msg, value, msg.name, 0, out)
    if len(out) > MAX_SIZE:
        raise ProtoError(f"{msg.name}: encoded size {len(out)} is more than protobuf's 2 GiB limit")
    return bytes(out)


def _put_varint(out: bytearray, value: int) -> None:
    value &= _M64
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def check_dict(msg: Message, value, path: str, depth: int) -> None:
    """Raise ProtoError unless `value` is a dict of known fields of `msg` (one oneof member at most)."""
    if depth > MAX_DEPTH:
        raise ProtoError(f"nested too deep (more than {MAX_DEPTH} levels) in {path}")
    if not isinstance(value, dict):
        raise ProtoError(f"{path}: expected a dict for message {msg.name}, got {type(value).__name__}")
    for key in value:
        field = msg.by_name.get(key)
        if field is None:
            raise ProtoError(f"unknown field {key!r} in {path} (message {msg.name})")
        if field.kind == "skip":
            raise ProtoError(f"field {key!r} in {path} is not modelled by tfsem (it is skipped on reading)")
    for oneof, members in msg.oneofs.items():
        present = [m for m in members if m in value]
        if len(present) > 1:
            raise ProtoError(f"{path}: fields {', '.join(present)} are members of oneof {oneof!r}; "
                             f"at most one may be set")


def check_scalar(kind: str, value, field: Field, path: str):
    """Validate one scalar element for encoding; returns the value to write."""
    if kind in _RANGES:
        if kind == "enum":
            if isinstance(value, str):
                number = ENUM_NUMBERS[field.type_name].get(value)
                if number is None:
                    raise ProtoError(f"{path}: unknown {field.type_name} value {value!r}")
                return number
        if isinstance(value, (bool, float)):
            raise ProtoError(f"{path}: expected an integer for {kind} field, got {value!r}")
        try:
            value = operator.index(value)  # int, or a numpy integer
        except TypeError:
            raise ProtoError(f"{path}: expected an integer for {kind} field, got {value!r}") from None
        lo, hi = _RANGES[kind]
        if not lo <= value <= hi:
            raise ProtoError(f"{path}: {value} is out of range for {kind} [{lo}, {hi}]")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProtoError(f"{path}: expected a bool, got {value!r}")
        return value
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy floats are Real
            raise ProtoError(f"{path}: expected a number for {kind} field, got {value!r}")
        value = float(value)
        if kind == "float" and math.isfinite(value):
            try:
                struct.pack("<f", value)
            except OverflowError:
                raise ProtoError(f"{path}: {value!r} is out of range for a 32-bit float") from None
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ProtoError(f"{path}: expected a str for string field, got {type(value).__name__}")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise ProtoError(f"{path}: string is not valid Unicode (lone surrogate)") from None
    if kind == "bytes":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ProtoError(f"{path}: expected bytes for bytes field, got {type(value).__name__}")
        return bytes(value)
    raise AssertionError(kind)


def _exact_floats(data, pos: int, n: int) -> list[float]:
    """The n float32s at `pos`, each widened exactly (a signalling NaN kept:
    struct's '<f' widens through the CPU, which quiets it)."""
    from tfsem.oracle.float_attrs import float32_value
    return [float32_value(w) for w in struct.unpack_from(f"<{n}I", data, pos)]


def _float32_word(x: float) -> int:
    from tfsem.oracle.float_attrs import float32_word
    return float32_word(x)


def _put_scalar(out: bytearray, kind: str, value) -> None:
    """Write one checked scalar (no tag)."""
    if kind == "sint32" or kind == "sint64":
        _put_varint(out, (value << 1) ^ (value >> 63))
    elif kind in _RANGES and kind not in _FIXED_FORMAT or kind == "bool":
        _put_varint(out, int(value))
    elif kind == "float" and value != value:
        # a NaN's float32 bits as the float holds them: struct's '<f'
        # narrows through the CPU, which quiets a signalling NaN
        out += struct.pack("<I", _float32_word(value))
    elif kind in _FIXED_FORMAT:
        out += struct.pack("<" + _FIXED_FORMAT[kind], value)
    else:  # string, bytes (already bytes)
        _put_varint(out, len(value))
        out += value


def _encode(msg: Message, value, path: str, depth: int, out: bytearray) -> None:
    check_dict(msg, value, path, depth)
    for field in sorted((msg.by_name[k] for k in value), key=lambda f: f.number):
        _encode_field(msg, field, value[field.name], path, depth, out)


def _encode_field(msg: Message, field: Field, value, path: str, depth: int, out: bytearray) -> None:
    kind = field.kind
    name = field.name
    fpath = _field_path(path, msg, field, {})
    if kind == "map":
        if not isinstance(value, dict):
            raise ProtoError(f"{fpath}: expected a dict for map field, got {type(value).__name__}")
        entry = field.entry
        for key, item in value.items():
            key_bytes = check_scalar(field.key_kind, key, entry.by_name["key"], f"{fpath} key {key!r}")
            body = bytearray()
            _put_varint(body, 1 << 3 | entry.by_name["key"].wire_type)
            _put_scalar(body, field.key_kind, key_bytes)
            item_path = f"{fpath}[{_key_repr(key)}]"
            vfield = entry.by_name["value"]
            if field.value_kind == "message":
                sub = bytearray()
                _encode(MESSAGES[field.type_name], item, item_path, depth + 1, sub)
                _put_varint(body, 2 << 3 | WIRE_LENGTH)
                _put_varint(body, len(sub))
                body += sub
            else:
                checked = check_scalar(field.value_kind, item, vfield, item_path)
                _put_varint(body, 2 << 3 | vfield.wire_type)
                _put_scalar(body, field.value_kind, checked)
            _put_varint(out, field.number << 3 | WIRE_LENGTH)
            _put_varint(out, len(body))
            out += body
        return
    if field.repeated:
        if not isinstance(value, (list, tuple)):
            raise ProtoError(f"{fpath}: expected a list for repeated field, got {type(value).__name__}")
        if kind == "message":
            sub_msg = MESSAGES[field.type_name]
            for i, item in enumerate(value):
                sub = bytearray()
                _encode(sub_msg, item, f"{fpath}[{i}]", depth + 1, sub)
                _put_varint(out, field.number << 3 | WIRE_LENGTH)
                _put_varint(out, len(sub))
                out += sub
        elif field.packable:
            if not value:
                return
            body = bytearray()
            for i, item in enumerate(value):
                _put_scalar(body, kind, check_scalar(kind, item, field, f"{fpath}[{i}]"))
            _put_varint(out, field.number << 3 | WIRE_LENGTH)
            _put_varint(out, len(body))
            out += body
        else:  # repeated string / bytes
            for i, item in enumerate(value):
                checked = check_scalar(kind, item, field, f"{fpath}[{i}]")
                _put_varint(out, field.number << 3 | WIRE_LENGTH)
                _put_scalar(out, kind, checked)
        return
    if kind == "message":
        sub = bytearray()
        _encode(MESSAGES[field.type_name], value, fpath, depth + 1, sub)
        _put_varint(out, field.number << 3 | WIRE_LENGTH)
        _put_varint(out, len(sub))
        out += sub
        return
    checked = check_scalar(kind, value, field, fpath)
    _put_varint(out, field.number << 3 | field.wire_type)
    _put_scalar(out, kind, checked)
