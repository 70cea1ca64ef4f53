"""The protobuf text format (.pbtxt), parsed and printed from `schema`.

`format_text` writes what ``tf.io.write_graph(..., as_text=True)`` writes
(Python protobuf's ``text_format.MessageToString``): two-space indentation,
fields in field-number order (protobuf's ``ListFields`` order), map entries sorted by key as
``attr { key: "T" value { ... } }``, every string and bytes value in double
quotes with C escapes (octal for bytes outside printable ASCII, so UTF-8 text
is written as octal bytes too), float fields in the shortest form that reads
back as the same 32-bit float, double fields as Python's ``repr``.

`parse_text` accepts the text format as protobuf's parsers do: ``#``
comments, ``field { }``, ``field: { }`` and ``field < >``, optional ``,`` or
``;`` after a field, repeated fields as ``[a, b]`` lists, enums by name or
number, strings in single or double quotes with C escapes (``\\n \\t \\\\ \\"
\\' \\ooo \\xHH \\uXXXX``) and adjacent-literal concatenation, ``inf``,
``-inf``, ``nan``, ``infinity`` (any case) and an ``f`` suffix for floats,
decimal, hex (``0x``) and octal (leading ``0``) integers. A field name the
schema does not know is an error; a field the schema marks ``skip`` has its
block skipped (it never appears in the dict, as in binary decoding). A
singular field given twice, or two members of one oneof, is an error (as in
protobuf's text parser).
"""

from __future__ import annotations

import bisect
import math
import re
import struct

from . import MAX_DEPTH, MAX_SIZE, ProtoError
from .schema import ENUM_NUMBERS, ENUMS, MESSAGES, Field, Message, lookup
from .wire import _RANGES, _default, _key_repr, check_dict, check_scalar

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f\v]+)
  | (?P<comment>\#[^\n]*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(?:0[xX][0-9a-fA-F]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)[fF]?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<symbol>[{}<>\[\]:,;\-])
  | (?P<bad>.)
""", re.VERBOSE | re.DOTALL)

_EOF = ("eof", "", -1)


class _Tokens:
    def __init__(self, text: str, root: str, deadline: float | None = None):
        self.text = text
        self.root = root
        self.deadline = deadline
        self.fields = 0
        self._newlines = None  # offsets of every "\n", computed on the first error
        tokens = []
        append = tokens.append
        n = len(text)
        for m in _TOKEN.finditer(text):  # every character is matched: "bad" catches the rest
            if deadline is not None and not len(tokens) & 0xFFFF:
                _check_deadline(deadline)
            kind = m.lastgroup
            if kind == "ws" or kind == "comment":
                continue
            if kind == "bad":
                pos = m.start()
                c = text[pos]
                if c in "\"'":
                    raise ProtoError(f"unterminated string at {self.where(pos)} in {root} text")
                raise ProtoError(f"unexpected character {c!r} at {self.where(pos)} in {root} text")
            append((kind, m.group(), m.start()))
        tokens.append(("eof", "", n))
        self.tokens = tokens
        self.i = 0

    def where(self, pos: int) -> str:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        newlines = self._newlines
        line = bisect.bisect_left(newlines, pos)
        start = newlines[line - 1] + 1 if line else 0
        return f"line {line + 1}:{pos - start + 1}"

    def peek(self):
        return self.tokens[self.i]

    def next(self):
        tok = self.tokens[self.i]
        if tok[0] != "eof":
            self.i += 1
        return tok

    def describe(self, tok) -> str:
        return "end of input" if tok[0] == "eof" else repr(tok[1])

    def error(self, message: str, tok=None) -> ProtoError:
        tok = tok or self.peek()
        return ProtoError(f"{message} at {self.where(tok[2])}")

    def accept(self, symbol: str) -> bool:
        tok = self.tokens[self.i]
        if tok[0] == "symbol" and tok[1] == symbol:
            self.i += 1
            return True
        return False


def _check_deadline(deadline: float) -> None:
    import time
    if time.monotonic() > deadline:
        from tfsem.graphdef.functions import ImportTimeout  # noqa: PLC0415
        raise ImportTimeout("parsing the graph's text")


def parse_text(message: str, text, deadline: float | None = None) -> dict:
    """Parse protobuf text format `text` as the message called `message`
    (past `deadline`, a time.monotonic() value, graphdef.ImportTimeout)."""
    msg = lookup(message)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtoError(f"{msg.name} text is not UTF-8 (byte {e.start})") from None
    if not isinstance(text, str):
        raise ProtoError(f"{msg.name}: expected text to parse, got {type(text).__name__}")
    if len(text) > MAX_SIZE:
        raise ProtoError(f"{msg.name}: {len(text)} characters is more than the 2 GiB limit")
    toks = _Tokens(text, msg.name, deadline)
    return _parse_message(toks, msg, msg.name, 0, None)


def _parse_message(toks: _Tokens, msg: Message, path: str, depth: int, closer) -> dict:
    if depth > MAX_DEPTH:
        raise toks.error(f"nested too deep (more than {MAX_DEPTH} levels) in {path}")
    out: dict = {}
    while True:
        tok = toks.peek()
        if tok[0] == "eof":
            if closer is None:
                return out
            raise toks.error(f"expected {closer!r} to close {path}, found end of input")
        if tok[0] == "symbol" and closer is not None and tok[1] == closer:
            toks.next()
            return out
        if tok[0] != "ident":
            raise toks.error(f"expected a field name in {path}, found {toks.describe(tok)}")
        toks.next()
        if toks.deadline is not None:
            toks.fields += 1
            if not toks.fields & 0x3FFF:
                _check_deadline(toks.deadline)
        name = tok[1]
        field = msg.by_name.get(name)
        if field is None:
            raise toks.error(f"unknown field {name!r} in {path} (message {msg.name})", tok)
        if field.kind == "skip":
            _skip_field(toks, path + "." + name, depth + 1)
        else:
            if not field.repeated:
                if name in out:
                    raise toks.error(f"field {name!r} of {path} given twice (it is not repeated)", tok)
                if field.oneof:
                    for other in msg.oneofs[field.oneof]:
                        if other in out:
                            raise toks.error(f"field {name!r} of {path}: {other!r} of the same oneof "
                                             f"{field.oneof!r} is already set", tok)
            _parse_field(toks, msg, field, out, path, depth)
        if not toks.accept(","):
            toks.accept(";")


def _open(toks: _Tokens, where: str):
    """Consume '{' or '<'; return the closing symbol."""
    tok = toks.next()
    if tok[0] == "symbol" and tok[1] == "{":
        return "}"
    if tok[0] == "symbol" and tok[1] == "<":
        return ">"
    raise toks.error(f"expected '{{' or '<' to open {where}, found {toks.describe(tok)}", tok)


def _parse_field(toks: _Tokens, msg: Message, field: Field, out: dict, path: str, depth: int) -> None:
    name = field.name
    if msg.is_map_entry:  # path is the map's: speak of the entry by its key
        fpath = f"{path}[{_key_repr(out['key'])}]" if name == "value" and "key" in out else f"{path}[{name}]"
    else:
        fpath = f"{path}.{name}"
    kind = field.kind
    if kind == "message" or kind == "map":
        toks.accept(":")
        if toks.peek()[0] == "symbol" and toks.peek()[1] == "[":
            if not field.repeated:
                raise toks.error(f"{fpath} is not repeated: a [...] list is not allowed")
            toks.next()
            if toks.accept("]"):  # an empty list: the field stays absent, as in protobuf
                return
            while True:
                _parse_one_message(toks, field, out, fpath, depth)
                if toks.accept("]"):
                    return
                if not toks.accept(","):
                    raise toks.error(f"expected ',' or ']' in the list of {fpath}, found "
                                     f"{toks.describe(toks.peek())}")
        _parse_one_message(toks, field, out, fpath, depth)
        return
    if not toks.accept(":"):
        raise toks.error(f"expected ':' after scalar field {fpath}, found {toks.describe(toks.peek())}")
    if toks.peek()[0] == "symbol" and toks.peek()[1] == "[":
        if not field.repeated:
            raise toks.error(f"{fpath} is not repeated: a [...] list is not allowed")
        toks.next()
        if toks.accept("]"):  # an empty list: the field stays absent, as in protobuf
            return
        items = out.setdefault(name, [])
        while True:
            items.append(_parse_scalar(toks, kind, field, f"{fpath}[{len(items)}]"))
            if toks.accept("]"):
                return
            if not toks.accept(","):
                raise toks.error(f"expected ',' or ']' in the list of {fpath}, found {toks.describe(toks.peek())}")
    if field.repeated:
        items = out.setdefault(name, [])
        items.append(_parse_scalar(toks, kind, field, f"{fpath}[{len(items)}]"))
    else:
        out[name] = _parse_scalar(toks, kind, field, fpath)


def _parse_one_message(toks: _Tokens, field: Field, out: dict, fpath: str, depth: int) -> None:
    closer = _open(toks, fpath)
    if field.kind == "map":
        entries = out.setdefault(field.name, {})
        entry = _parse_message(toks, field.entry, fpath, depth + 1, closer)
        key = entry.get("key", _default(field.key_kind, None))
        value = entry.get("value")
        if value is None:
            value = _default(field.value_kind, field.type_name)
        entries[key] = value
        return
    sub = MESSAGES[field.type_name]
    if field.repeated:
        items = out.setdefault(field.name, [])
        items.append(_parse_message(toks, sub, f"{fpath}[{len(items)}]", depth + 1, closer))
    else:
        out[field.name] = _parse_message(toks, sub, fpath, depth + 1, closer)


def _skip_field(toks: _Tokens, path: str, depth: int) -> None:
    """Skip the value of a field tfsem does not model (any well-formed text value)."""
    if depth > MAX_DEPTH:
        raise toks.error(f"nested too deep (more than {MAX_DEPTH} levels) in {path}")
    colon = toks.accept(":")
    tok = toks.peek()
    if tok[0] == "symbol" and tok[1] in "{<":
        closer = _open(toks, path)
        while not toks.accept(closer):
            tok = toks.next()
            if tok[0] != "ident":
                raise toks.error(f"expected a field name in {path}, found {toks.describe(tok)}", tok)
            _skip_field(toks, path + "." + tok[1], depth + 1)
            if not toks.accept(","):
                toks.accept(";")
        return
    if not colon:
        raise toks.error(f"expected ':' or '{{' after {path}, found {toks.describe(tok)}")
    if tok[0] == "symbol" and tok[1] == "[":
        toks.next()
        if toks.accept("]"):
            return
        while True:
            if toks.peek()[0] == "symbol" and toks.peek()[1] in "{<":
                closer = _open(toks, path)
                while not toks.accept(closer):
                    t = toks.next()
                    if t[0] != "ident":
                        raise toks.error(f"expected a field name in {path}, found {toks.describe(t)}", t)
                    _skip_field(toks, path + "." + t[1], depth + 1)
                    if not toks.accept(","):
                        toks.accept(";")
            else:
                _skip_scalar(toks, path)
            if toks.accept("]"):
                return
            if not toks.accept(","):
                raise toks.error(f"expected ',' or ']' in {path}, found {toks.describe(toks.peek())}")
    _skip_scalar(toks, path)


def _skip_scalar(toks: _Tokens, path: str) -> None:
    toks.accept("-")
    tok = toks.next()
    if tok[0] == "string":
        while toks.peek()[0] == "string":
            toks.next()
        return
    if tok[0] not in ("ident", "number"):
        raise toks.error(f"expected a value for {path}, found {toks.describe(tok)}", tok)


_INT_KINDS = frozenset(_RANGES) - {"enum"}
_FLOAT_WORDS = {"inf": math.inf, "inff": math.inf, "infinity": math.inf, "infinityf": math.inf,
                "nan": math.nan, "nanf": math.nan}


def _parse_int_literal(text: str):
    """The int a number token spells, or None when it is not an integer literal."""
    hexadecimal = text[:2] in ("0x", "0X")
    if not hexadecimal and not text.isdigit():
        return None
    if len((text[2:] if hexadecimal else text).lstrip("0")) > 40:
        return 1 << 200  # out of range of every integer kind (and never handed to int(): no quadratic work)
    if hexadecimal:
        return int(text[2:], 16)
    if len(text) > 1 and text[0] == "0":
        if any(c in "89" for c in text):
            return None
        return int(text, 8)
    return int(text)


def _literal(tok, negative: bool) -> str:
    text = ("-" if negative else "") + tok[1]
    return text if len(text) <= 30 else text[:27] + "..."


def _parse_scalar(toks: _Tokens, kind: str, field: Field, fpath: str):
    tok = toks.peek()
    if kind == "string" or kind == "bytes":
        if tok[0] != "string":
            raise toks.error(f"expected a quoted string for {fpath}, found {toks.describe(tok)}")
        parts = []
        while toks.peek()[0] == "string":
            t = toks.next()
            parts.append(_unescape(t[1], toks, t, fpath))
        data = b"".join(parts)
        if kind == "bytes":
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise toks.error(f"string field {fpath} is not valid UTF-8", tok) from None
    negative = False
    if tok[0] == "symbol" and tok[1] == "-":
        toks.next()
        negative = True
        minus, tok = tok, toks.peek()
        if tok[2] != minus[2] + 1:
            # protobuf's tokenizer reads "-1" as one token: "- 1" (a space, a
            # line break or a comment after the sign) is no number there
            raise toks.error(f"expected a number right after '-' for {fpath}", minus)
    toks.next()
    if kind == "bool":
        if not negative:
            if tok[0] == "ident" and tok[1] in ("true", "True", "t"):
                return True
            if tok[0] == "ident" and tok[1] in ("false", "False", "f"):
                return False
            if tok[0] == "number" and tok[1] in ("0", "1"):
                return tok[1] == "1"
        raise toks.error(f"expected true or false for {fpath}, found {toks.describe(tok)}", tok)
    if kind in ("float", "double"):
        if tok[0] == "ident" and tok[1].lower() in _FLOAT_WORDS:
            value = _FLOAT_WORDS[tok[1].lower()]
        elif tok[0] == "number":
            text = tok[1]
            if text[-1] in "fF" and not text[:2] in ("0x", "0X"):
                text = text[:-1]
            if text[:2] in ("0x", "0X"):
                raise toks.error(f"expected a decimal number for {fpath}, found {tok[1]!r}", tok)
            if len(text) > 1 and text[0] == "0" and text[1].isdigit():
                # (protobuf's ParseFloat: "Invalid octal float" -- 010 is not 10.0)
                raise toks.error(f"a float with a leading 0 ({tok[1]!r}) reads as octal: "
                                 f"not a number for {fpath}", tok)
            value = float(text)
        else:
            raise toks.error(f"expected a number for {fpath}, found {toks.describe(tok)}", tok)
        value = -value if negative else value
        if kind == "float" and math.isfinite(value):
            try:
                value = struct.unpack("<f", struct.pack("<f", value))[0]
            except OverflowError:
                value = math.copysign(math.inf, value)  # as protobuf: out-of-range float literals are inf
        return value
    if kind == "enum":
        if tok[0] == "ident" and not negative:
            if tok[1] not in ENUM_NUMBERS[field.type_name]:
                raise toks.error(f"unknown {field.type_name} value {tok[1]!r} for {fpath}", tok)
            return tok[1]
        number = _parse_int_literal(tok[1]) if tok[0] == "number" else None
        if number is not None and tok[1][:1] == "0" and tok[1][1:2].isdigit() and tok[1].strip("0"):
            # protobuf reads an enum's number with Python's int(text, 0), which
            # has no octal 01 (00 is 0): "no value named 01"
            number = None
        if number is None:
            raise toks.error(f"expected a {field.type_name} name or number for {fpath}, found "
                             f"{toks.describe(tok)}", tok)
        number = -number if negative else number
        lo, hi = _RANGES["enum"]
        if not lo <= number <= hi:
            raise toks.error(f"{_literal(tok, negative)} is out of range for enum {fpath}", tok)
        return ENUMS[field.type_name].get(number, number)
    # integer kinds
    number = _parse_int_literal(tok[1]) if tok[0] == "number" else None
    if number is None:
        raise toks.error(f"expected an integer for {kind} field {fpath}, found {toks.describe(tok)}", tok)
    number = -number if negative else number
    lo, hi = _RANGES[kind]
    if not lo <= number <= hi:
        raise toks.error(f"{_literal(tok, negative)} is out of range for {kind} field {fpath} [{lo}, {hi}]", tok)
    return number


# (not "\\?" nor "\\X": Python's protobuf keeps them as written, the backslash
# too, where C++'s reads one character: refused below, as no escape at all)
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8, "f": 12,
                   "v": 11}
_HEX = "0123456789abcdefABCDEF"


def _unescape(literal: str, toks: _Tokens, tok, fpath: str) -> bytes:
    body = literal[1:-1]
    if "\\" not in body:
        return body.encode("utf-8")
    out = bytearray()
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            j = body.find("\\", i)
            if j < 0:
                j = n
            out += body[i:j].encode("utf-8", "surrogatepass")
            i = j
            continue
        i += 1
        c = body[i]  # the tokenizer guarantees a character after a backslash
        if c in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[c])
            i += 1
        elif c in "01234567":
            j = i
            while j < n and j < i + 3 and body[j] in "01234567":
                j += 1
            value = int(body[i:j], 8)
            if value > 255:
                raise ProtoError(f"octal escape \\{body[i:j]} is above \\377 in {fpath} at {toks.where(tok[2])}")
            out.append(value)
            i = j
        elif c == "x":
            j = i + 1
            while j < n and j < i + 3 and body[j] in _HEX:
                j += 1
            if j == i + 1:
                raise ProtoError(f"\\x escape without hex digits in {fpath} at {toks.where(tok[2])}")
            out.append(int(body[i + 1:j], 16))
            i = j
        elif c in "uU":
            width = 4 if c == "u" else 8
            digits = body[i + 1:i + 1 + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                raise ProtoError(f"\\{c} escape needs {width} hex digits in {fpath} at {toks.where(tok[2])}")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ProtoError(f"\\{c}{digits} is not a Unicode scalar value in {fpath} at {toks.where(tok[2])}")
            out += chr(code).encode("utf-8")
            i += 1 + width
        elif c in "?X":
            raise ProtoError(f"escape \\{c} in {fpath} at {toks.where(tok[2])}: protobuf's "
                             "Python and C++ text parsers read it differently (write \\? as ?, "
                             "\\X as \\x)")
        else:
            raise ProtoError(f"unknown escape \\{c} in {fpath} at {toks.where(tok[2])}")
    return bytes(out)


# ---------------------------------------------------------------- printing

_BYTE_ESCAPES = [chr(i) if 32 <= i < 127 else f"\\{i:03o}" for i in range(256)]
_BYTE_ESCAPES[ord("\n")] = "\\n"
_BYTE_ESCAPES[ord("\r")] = "\\r"
_BYTE_ESCAPES[ord("\t")] = "\\t"
_BYTE_ESCAPES[ord('"')] = '\\"'
_BYTE_ESCAPES[ord("'")] = "\\'"
_BYTE_ESCAPES[ord("\\")] = "\\\\"


def _c_escape(data: bytes) -> str:
    return "".join([_BYTE_ESCAPES[b] for b in data])


def _shortest_float32(value: float) -> str:
    """Python protobuf's ToShortestFloat: fewest digits (6 to 9) that read back as the same float32."""
    for precision in range(6, 10):
        rounded = float(f"{value:.{precision}g}")
        try:
            if struct.unpack("<f", struct.pack("<f", rounded))[0] == value:
                return str(rounded)
        except OverflowError:
            pass
    return str(value)


def format_text(message: str, value: dict) -> str:
    """The text format of `value` as `message`, as tf.io.write_graph(as_text=True) writes it."""
    msg = lookup(message)
    lines: list[str] = []
    _format_message(msg, value, msg.name, 0, lines)
    return "".join(lines)


def _format_message(msg: Message, value, path: str, depth: int, lines: list) -> None:
    check_dict(msg, value, path, depth)
    indent = "  " * depth
    for field in msg.fields_by_number:
        if field.name not in value:
            continue
        item = value[field.name]
        name = field.name
        fpath = f"{path}.{name}"
        if field.kind == "map":
            if not isinstance(item, dict):
                raise ProtoError(f"{fpath}: expected a dict for map field, got {type(item).__name__}")
            try:
                keys = sorted(item)
            except TypeError:
                raise ProtoError(f"{fpath}: map keys of mixed types") from None
            entry = field.entry
            for key in keys:
                kpath = f"{fpath}[{_key_repr(key)}]"
                lines.append(f"{indent}{name} {{\n")
                # an entry's scalar key or value equal to its default is not printed (no presence)
                text = _format_scalar(field.key_kind, key, entry.by_name["key"], kpath)
                if not _is_default(field.key_kind, key):
                    lines.append(f"{indent}  key: {text}\n")
                if field.value_kind == "message":
                    lines.append(f"{indent}  value {{\n")
                    _format_message(MESSAGES[field.type_name], item[key], kpath, depth + 2, lines)
                    lines.append(f"{indent}  }}\n")
                else:
                    text = _format_scalar(field.value_kind, item[key], entry.by_name["value"], kpath)
                    if not _is_default(field.value_kind, item[key], field.type_name):
                        lines.append(f"{indent}  value: {text}\n")
                lines.append(f"{indent}}}\n")
            continue
        if field.repeated:
            if not isinstance(item, (list, tuple)):
                raise ProtoError(f"{fpath}: expected a list for repeated field, got {type(item).__name__}")
            elements = list(enumerate(item))
        else:
            elements = [(None, item)]
        for i, element in elements:
            epath = fpath if i is None else f"{fpath}[{i}]"
            if field.kind == "message":
                lines.append(f"{indent}{name} {{\n")
                _format_message(MESSAGES[field.type_name], element, epath, depth + 1, lines)
                lines.append(f"{indent}}}\n")
            else:
                lines.append(f"{indent}{name}: {_format_scalar(field.kind, element, field, epath)}\n")


def _is_default(kind: str, value, type_name=None) -> bool:
    """Whether a map entry's key or value is proto3's default (then it is not printed)."""
    if kind in ("float", "double"):
        return value == 0 and math.copysign(1.0, value) > 0
    if kind == "enum":
        return value == 0 or value == ENUMS[type_name].get(0)
    if kind == "bool":
        return value is False
    if kind == "string":
        return value == ""
    if kind == "bytes":
        return value == b""
    return value == 0


def _format_scalar(kind: str, value, field: Field, path: str) -> str:
    checked = check_scalar(kind, value, field, path)
    if kind == "string" or kind == "bytes":
        return '"' + _c_escape(checked) + '"'
    if kind == "bool":
        return "true" if value else "false"
    if kind == "enum":
        if isinstance(value, str):
            return value
        return ENUMS[field.type_name].get(value, str(value))
    if kind == "float" or kind == "double":
        if math.isnan(checked):
            # its sign kept: protobuf's Python text_format.Parse (into
            # TensorFlow's GraphDef) and parse_text read "-nan" as the NaN
            # with the sign bit set, where protobuf's printers write every
            # NaN "nan" (docs/graphdef-format.md).  A payload has no text form.
            return "-nan" if math.copysign(1.0, checked) < 0 else "nan"
        if math.isinf(checked):
            return "inf" if checked > 0 else "-inf"
        if kind == "float":
            return _shortest_float32(checked)
        return str(checked)
    return str(checked)
