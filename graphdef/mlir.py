"""TensorFlow MLIR (`tf_executor`, `tf_device`, `func`, `tf` dialects) as a
tfsem program.  Needs no TensorFlow.

`load_mlir(path)` / `program_of_mlir(text)` read the generic form and the
pretty form that `tf.mlir.experimental.run_pass_pipeline` prints, for this
subset:

* `tf_executor.{graph, island, yield, fetch}` and control tokens;
* `tf_device.{cluster, launch, return}`;
* `func.{func, call, return}`, `tf.StatefulPartitionedCall` / `PartitionedCall`
  (inlined);
* every `tf.X` op whose GraphDef op X tfsem's op table (graphdef/ops.py)
  models, or knows to be pure (an uninterpreted function).  Other ops are
  refused by name, with their line and column.

The translation is into a GraphDef (dict form of graphdef.proto), which the
GraphDef importer (graphdef/importer.py) then reads: `tf.X` becomes exactly
the tfsem nodes the importer makes of a NodeDef with op X, with the
attributes MLIR derives from types (`T`, `dtype`, `SrcT`, ...) put back.
The order MLIR adds to a graph becomes control edges (docs/mlir.md argues
each rule):

* the ops of a block that runs in program order (an island, a function in
  functional form, the region of a `tf_device.cluster` or `launch`, an
  inlined callee) are chained: each op gets a control edge from the one
  before it;
* an island's control token is a NoOp joining every op of the island; an
  island's control operands are control edges into its first op (and so,
  through the chain, before all of them);
* a call's results are available when the whole callee is done (as
  graphdef/functions.py inlines a GraphDef call), and the ops after the
  call in program order wait for all of it.

A malformed or unreadable text raises :class:`MlirError` (a ProgramError)
naming the file, the line and the column.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfsem.oracle.opdefs import control as control_ops
from tfsem.oracle.program import Program, ProgramError, Violation

MLIR_SUFFIXES = (".mlir",)
MAX_TEXT = 16 << 20
MAX_DEPTH = 64           # regions, attributes and types nested
MAX_OPS = 200_000
MAX_INLINE_DEPTH = 16
#: What runs of an imported V1 graph (docs/mlir.md, "Which ops run").
GRAPH_RUNS = ("fetched", "all")


class MlirError(ProgramError):
    """MLIR text tfsem cannot read, at a line and column."""

    def __init__(self, where: str, message: str, rule: str = "mlir"):
        super().__init__([Violation(where, rule, message)])


def is_mlir_path(path: str | Path) -> bool:
    return Path(path).suffix.lower() in MLIR_SUFFIXES


# ---------------------------------------------------------------------------
# The syntax tree


@dataclass
class Block:
    args: list[tuple[str, str, dict]]      # (ssa name, type, attrs)
    ops: list["Op"]


@dataclass
class Op:
    name: str                              # "tf.AddV2", "tf_executor.island", ...
    results: list[str]                     # one SSA name per result
    operands: list[str]
    attrs: dict[str, Any]
    regions: list[list[Block]]
    operand_types: list[str]
    result_types: list[str]
    line: int
    col: int
    callee: str | None = None              # func.call's @symbol
    func_args: list[tuple[str, str, dict]] | None = None   # func.func
    func_results: list[tuple[str, dict]] | None = None


@dataclass
class Opaque:
    """An attribute value tfsem keeps as text (`#dialect<...>`, affine maps...)."""
    text: str


@dataclass
class Dense:
    payload: Any            # nested lists of literals, or bytes (a hex blob)
    type: str | None


@dataclass
class Sym:
    name: str


@dataclass
class TypeAttr:
    type: str


_ID = re.compile(r"[A-Za-z_][\w$.\-]*")
_SSA = re.compile(r"%[\w$.\-]+")
_NUM = re.compile(r"[-+]?(0x[0-9A-Fa-f]+|(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?)")
_BB = re.compile(r"\^[\w$.\-]+")
#: float type -> its width in bits (a hex float literal is that many bits)
_FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _narrow_types() -> dict:
    import ml_dtypes  # noqa: PLC0415  (numpy's companion for bfloat16)
    return {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16),
            "bf16": (ml_dtypes.bfloat16, np.uint16)}


_NARROW = ("f32", "f16", "bf16")


def _narrowed(text: str, wide: float, t: str) -> float:
    """The float of type `t` (f32, f16, bf16) nearest to the decimal
    `text` (ties to the even one), as a Python float; `wide` is `text` read
    as a float64.  Rounded from the exact decimal, not from `wide`, whose
    own rounding could move a value at a halfway point of `t`."""
    from fractions import Fraction  # noqa: PLC0415
    dtype, word = _narrow_types()[t]
    with np.errstate(over="ignore"):
        near = np.array([wide], dtype=dtype)
    if not np.isfinite(near[0]) or not np.isfinite(wide):
        return float(near[0])          # (past the type's largest: its infinity)
    try:
        exact = Fraction(text.replace("+", "", 1) if text.startswith("+") else text)
    except (ValueError, ZeroDivisionError):
        return float(near[0])
    bits = int(near.view(word)[0])
    best = None
    for b in (bits - 1, bits, bits + 1):
        if b < 0 or b >= 1 << (8 * np.dtype(word).itemsize):
            continue
        cand = np.array([b], dtype=word).view(dtype)[0]
        if not np.isfinite(cand):
            continue
        c = float(cand)
        key = (abs(Fraction(c) - exact), b & 1)
        if best is None or key < best[0]:
            best = (key, c)
    return best[1] if best is not None else float(near[0])


def _float_of_bits(bits: int, t: str) -> float | None:
    """The float whose bits of type `t` (f16, bf16, f32, f64) are `bits`, as
    the Python float holding it exactly (a NaN's sign and payload too, moved
    by hand: a hardware conversion quiets a signalling NaN); None where
    `bits` does not fit `t`."""
    if not 0 <= bits < 1 << _FLOAT_BITS[t]:
        return None
    if t == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if t == "bf16":
        bits, t = bits << 16, "f32"
    exp_bits, man_bits = (8, 23) if t == "f32" else (5, 10)
    sign, exp, man = bits >> (exp_bits + man_bits), bits >> man_bits & ((1 << exp_bits) - 1), \
        bits & ((1 << man_bits) - 1)
    if exp == (1 << exp_bits) - 1:    # NaN or an infinity: the same in float64
        word = sign << 63 | 0x7FF << 52 | man << (52 - man_bits)
        return struct.unpack("<d", struct.pack("<Q", word))[0]
    if t == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return float(np.array(bits, np.uint16).view(np.float16))
_SYM = re.compile(r"@([\w$.\-]+|\"(?:[^\"\\]|\\.)*\")")


class Parser:
    def __init__(self, text: str, path: str):
        self.s = text
        self.path = path
        self.i = 0
        self.n = len(text)
        self.depth = 0
        self.count = 0
        self.lines = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.default_dialect: list[str] = ["func"]

    # -- positions and errors ------------------------------------------------

    def lc(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.i if pos is None else pos
        k = bisect.bisect_right(self.lines, pos) - 1
        return k + 1, pos - self.lines[k] + 1

    def err(self, message: str, pos: int | None = None, rule: str = "mlir-syntax"):
        line, col = self.lc(pos)
        raise MlirError(f"{self.path}:{line}:{col}", message, rule)

    def ws(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif s.startswith("//", self.i):
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            else:
                break

    def peek(self, tok: str) -> bool:
        self.ws()
        return self.s.startswith(tok, self.i)

    def accept(self, tok: str) -> bool:
        if self.peek(tok):
            if _ID.fullmatch(tok) and self.i + len(tok) < self.n and \
                    re.match(r"[\w$.\-]", self.s[self.i + len(tok)]):
                return False   # a longer identifier
            self.i += len(tok)
            return True
        return False

    def expect(self, tok: str, what: str | None = None) -> None:
        if not self.accept(tok):
            self.err(f"expected {what or repr(tok)}, found {self.here()}")

    def here(self) -> str:
        self.ws()
        if self.i >= self.n:
            return "the end of the text"
        return repr(self.s[self.i:self.i + 12])

    def match(self, rx: re.Pattern) -> str | None:
        self.ws()
        m = rx.match(self.s, self.i)
        if not m:
            return None
        self.i = m.end()
        return m.group(0)

    def nest(self):
        parser = self

        class _Nest:
            def __enter__(self_):
                parser.depth += 1
                if parser.depth > MAX_DEPTH:
                    parser.err(f"nested more than {MAX_DEPTH} levels deep", rule="too-deep")

            def __exit__(self_, *exc):
                parser.depth -= 1
                return False
        return _Nest()

    # -- lexical pieces ------------------------------------------------------

    def string(self) -> str:
        self.ws()
        if not self.s.startswith('"', self.i):
            self.err(f"expected a string, found {self.here()}")
        start = self.i
        self.i += 1
        out: list[str] = []
        while True:
            if self.i >= self.n:
                self.err("the string is not closed", start)
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                break
            if c == "\n":
                self.err("a newline inside a string", start)
            if c == "\\":
                nxt = self.s[self.i + 1:self.i + 2]
                if nxt in ('"', "\\"):
                    out.append(nxt)
                    self.i += 2
                elif nxt == "n":
                    out.append("\n")
                    self.i += 2
                elif nxt == "t":
                    out.append("\t")
                    self.i += 2
                elif re.fullmatch(r"[0-9A-Fa-f]{2}", self.s[self.i + 1:self.i + 3]):
                    out.append(chr(int(self.s[self.i + 1:self.i + 3], 16)))
                    self.i += 3
                else:
                    self.err("a bad escape in a string")
            else:
                out.append(c)
                self.i += 1
        return "".join(out)

    def balanced(self, open_: str, close: str) -> str:
        """The text from `open_` (at the cursor) to its matching `close`."""
        self.ws()
        start = self.i
        if not self.s.startswith(open_, self.i):
            self.err(f"expected {open_!r}, found {self.here()}")
        depth = 0
        pairs = {"<": ">", "(": ")", "[": "]", "{": "}"}
        stack: list[str] = []
        while self.i < self.n:
            c = self.s[self.i]
            if c == '"':
                self.string()
                continue
            if c == "-" and self.s.startswith("->", self.i):
                self.i += 2
                continue
            if c in pairs:
                stack.append(pairs[c])
                depth += 1
                if depth > MAX_DEPTH:
                    self.err(f"nested more than {MAX_DEPTH} levels deep", rule="too-deep")
            elif c in ">)]}":
                if not stack or stack[-1] != c:
                    self.err(f"unbalanced {c!r}")
                stack.pop()
                depth -= 1
                if not stack:
                    self.i += 1
                    return self.s[start:self.i]
            self.i += 1
        self.err(f"{open_!r} is not closed", start)

    # -- types ---------------------------------------------------------------

    def type(self) -> str:
        self.ws()
        start = self.i
        with self.nest():
            if self.peek("("):
                self.i += 1
                if not self.accept(")"):
                    while True:
                        self.type()
                        if self.accept(")"):
                            break
                        self.expect(",", "',' or ')' in a type list")
                if self.accept("->"):
                    self.result_types()
                return self.s[start:self.i].strip()
            if self.peek("!"):
                self.i += 1
            name = self.match(_ID)
            if name is None:
                self.err(f"expected a type, found {self.here()}")
            if self.s.startswith("<", self.i):
                self.balanced("<", ">")
        return re.sub(r"\s+", " ", self.s[start:self.i].strip())

    def result_types(self) -> list[str]:
        """`type` or `(type {attrs}?, ...)` after `->`."""
        if self.peek("("):
            self.i += 1
            out: list[str] = []
            if self.accept(")"):
                return out
            while True:
                out.append(self.type())
                if self.peek("{"):
                    self.attr_dict()
                self.loc()
                if self.accept(")"):
                    return out
                self.expect(",", "',' or ')' in the result types")
        return [self.type()]

    def function_type(self) -> tuple[list[str], list[str]]:
        self.ws()
        if not self.peek("("):
            self.err(f"expected a function type '(...) -> ...', found {self.here()}")
        self.i += 1
        ins: list[str] = []
        if not self.accept(")"):
            while True:
                ins.append(self.type())
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')' in the operand types")
        self.expect("->", "'->' in a function type")
        return ins, self.result_types()

    # -- attributes ----------------------------------------------------------

    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        out: dict[str, Any] = {}
        with self.nest():
            if self.accept("}"):
                return out
            while True:
                self.ws()
                if self.peek('"'):
                    key = self.string()
                else:
                    key = self.match(_ID)
                    if key is None:
                        self.err(f"expected an attribute name, found {self.here()}")
                out[key] = self.attr_value() if self.accept("=") else True
                if self.accept("}"):
                    return out
                self.expect(",", "',' or '}' in an attribute dictionary")

    def attr_value(self) -> Any:
        self.ws()
        with self.nest():
            s, i = self.s, self.i
            if s.startswith('"', i):
                v = self.string()
                if self.accept(":"):
                    self.type()
                return v
            if s.startswith("[", i):
                self.i += 1
                out = []
                if self.accept("]"):
                    return out
                while True:
                    out.append(self.attr_value())
                    if self.accept("]"):
                        return out
                    self.expect(",", "',' or ']' in a list")
            if s.startswith("{", i):
                return self.attr_dict()
            if s.startswith("@", i):
                m = self.match(_SYM)
                if m is None:
                    self.err("a bad symbol reference")
                name = m[1:]
                if name.startswith('"'):
                    name = name[1:-1]
                while self.accept("::"):
                    if self.match(_SYM) is None:
                        self.err("a bad nested symbol reference")
                return Sym(name)
            if s.startswith("#", i):
                start = i
                self.i += 1
                if self.match(_ID) is None:
                    self.err("a bad attribute alias or dialect attribute")
                if self.s.startswith("<", self.i):
                    self.balanced("<", ">")
                return Opaque(self.s[start:self.i])
            if s.startswith("dense<", i):
                self.i += len("dense")
                payload = self.dense_payload()
                typ = self.type() if self.accept(":") else None
                return Dense(payload, typ)
            if s.startswith("dense_resource<", i) or s.startswith("sparse<", i) or \
                    s.startswith("dense_array<", i) or s.startswith("affine_map<", i) or \
                    s.startswith("affine_set<", i) or s.startswith("array<", i) or \
                    s.startswith("loc(", i) or s.startswith("distinct[", i):
                start = i
                self.match(_ID)
                self.ws()
                if self.s.startswith("(", self.i):
                    self.balanced("(", ")")
                elif self.s.startswith("[", self.i):
                    self.balanced("[", "]")
                    self.balanced("<", ">")
                else:
                    self.balanced("<", ">")
                return Opaque(self.s[start:self.i])
            for word, val in (("true", True), ("false", False), ("unit", True)):
                if self.accept(word):
                    return val
            m = _NUM.match(s, i)
            if m:
                self.i = m.end()
                text = m.group(0)
                v: Any
                if "x" in text.lower() and text.lower().lstrip("+-").startswith("0x"):
                    v = int(text, 16)
                elif re.search(r"[.eE]", text):
                    v = float(text)
                else:
                    v = int(text)
                if self.accept(":"):
                    t = self.type()
                    if isinstance(v, int) and t in _FLOAT_BITS:
                        if "0x" in text.lower():
                            # a hex float literal is the value's bits (how MLIR
                            # prints NaN and the infinities: 0xFFC00000 : f32)
                            v = _float_of_bits(v, t)
                            if v is None:
                                self.err(f"{text} is not the bits of an {t}")
                        else:
                            v = float(v)
                    if isinstance(v, float) and t in _NARROW and "0x" not in text.lower():
                        # (a decimal literal of a narrower float type is the
                        # float of that type nearest to it, as MLIR reads it:
                        # 2.000000e-01 : f32 is float32's 0.2, which is how
                        # TensorFlow prints a float32 attribute)
                        v = _narrowed(text, v, t)
                return v
            return TypeAttr(self.type())

    def dense_payload(self) -> Any:
        """`<...>` of a dense attribute: nested lists of literals, or a hex blob."""
        self.expect("<")
        if self.accept(">"):
            return []
        v = self.dense_elem()
        self.expect(">", "'>' closing dense<...>")
        return v

    def dense_elem(self) -> Any:
        self.ws()
        with self.nest():
            if self.accept("["):
                out = []
                if self.accept("]"):
                    return out
                while True:
                    out.append(self.dense_elem())
                    if self.accept("]"):
                        return out
                    self.expect(",", "',' or ']' in a dense list")
            if self.peek('"'):
                text = self.string()
                if re.fullmatch(r"0x[0-9A-Fa-f]*", text) and len(text) % 2 == 0:
                    return bytes.fromhex(text[2:])
                return text.encode("utf-8")
            if self.accept("("):          # a complex literal
                self.err("complex constants are not read", rule="unsupported")
            for word, val in (("true", True), ("false", False)):
                if self.accept(word):
                    return val
            m = _NUM.match(self.s, self.i)
            if not m:
                self.err(f"expected a dense literal, found {self.here()}")
            self.i = m.end()
            text = m.group(0)
            if text.lower().lstrip("+-").startswith("0x"):
                return ("hex", int(text, 16))
            return float(text) if re.search(r"[.eE]", text) else int(text)

    def loc(self) -> None:
        if self.peek("loc("):
            self.i += 3
            self.balanced("(", ")")

    # -- operations ----------------------------------------------------------

    def results(self) -> list[str]:
        out: list[str] = []
        if not self.peek("%"):
            return out
        while True:
            name = self.match(_SSA)
            if name is None:
                self.err(f"expected a result name, found {self.here()}")
            count = 1
            if self.accept(":"):
                m = self.match(re.compile(r"\d+"))
                if m is None:
                    self.err("expected a result count after ':'")
                count = int(m)
                if count > 100_000:
                    self.err("too many results", rule="too-large")
            out.extend([name] if count == 1 else [f"{name}#{k}" for k in range(count)])
            if self.accept("="):
                return out
            self.expect(",", "',' or '=' after a result name")

    def operand(self) -> str:
        name = self.match(_SSA)
        if name is None:
            self.err(f"expected an operand (%name), found {self.here()}")
        if self.s.startswith("#", self.i):
            m = re.compile(r"#\d+").match(self.s, self.i)
            if m:
                self.i = m.end()
                name += m.group(0)
        return name

    def operand_list(self, close: str | None) -> list[str]:
        out: list[str] = []
        if close is not None and self.accept(close):
            return out
        if close is None and not self.peek("%"):
            return out
        while True:
            out.append(self.operand())
            if close is not None and self.accept(close):
                return out
            if not self.accept(","):
                if close is not None:
                    self.expect(close)
                return out

    def region(self) -> list[Block]:
        self.expect("{", "'{' opening a region")
        blocks: list[Block] = []
        with self.nest():
            args: list[tuple[str, str, dict]] = []
            if self.peek("^"):
                args = self.block_label()
            ops: list[Op] = []
            while True:
                if self.accept("}"):
                    blocks.append(Block(args, ops))
                    return blocks
                if self.peek("^"):
                    blocks.append(Block(args, ops))
                    args, ops = self.block_label(), []
                    continue
                if self.i >= self.n:
                    self.err("the region is not closed")
                ops.append(self.op())

    def block_label(self) -> list[tuple[str, str, dict]]:
        if self.match(_BB) is None:
            self.err("a bad block label")
        args = []
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    name = self.match(_SSA)
                    if name is None:
                        self.err("expected a block argument")
                    self.expect(":")
                    args.append((name, self.type(), {}))
                    self.loc()
                    if self.accept(")"):
                        break
                    self.expect(",")
        self.expect(":", "':' after a block label")
        return args

    def op(self) -> Op:
        self.ws()
        self.count += 1
        if self.count > MAX_OPS:
            self.err(f"more than {MAX_OPS} operations", rule="too-large")
        start = self.i
        results = self.results()
        self.ws()
        line, col = self.lc()
        if self.peek('"'):
            op = self.generic_op(results, line, col)
        else:
            name = self.match(_ID)
            if name is None:
                self.err(f"expected an operation, found {self.here()}")
            op = self.pretty_op(name, results, line, col, start)
        self.loc()
        return op

    def generic_op(self, results: list[str], line: int, col: int) -> Op:
        name = self.string()
        self.expect("(", "'(' opening the operands")
        operands = self.operand_list(")")
        if self.peek("["):
            self.err(f"{name}: successors (branches between blocks) are not read",
                     rule="unsupported")
        attrs: dict[str, Any] = {}
        if self.peek("<{"):
            self.i += 1
            attrs.update(self.attr_dict())
            self.expect(">")
        regions: list[list[Block]] = []
        if self.peek("({") or self.peek("( {"):
            self.expect("(")
            while True:
                regions.append(self.region())
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')' between regions")
        if self.peek("{"):
            attrs.update(self.attr_dict())
        self.expect(":", "':' and the operation's type")
        ins, outs = self.function_type()
        return Op(name, results, operands, attrs, regions, ins, outs, line, col)

    def _opt_types(self) -> list[str]:
        if not self.accept(":"):
            return []
        out = [self.type()]
        while self.accept(","):
            out.append(self.type())
        return out

    def pretty_op(self, name: str, results: list[str], line: int, col: int, start: int) -> Op:
        full = name
        if "." not in name:
            full = f"{self.default_dialect[-1]}.{name}" if name not in ("module",) else \
                "builtin.module"
        if full == "builtin.module":
            self.match(_SYM)
            attrs = self.attr_dict() if self.accept("attributes") else {}
            return Op(full, results, [], attrs, [self.region()], [], [], line, col)
        if full == "func.func":
            return self.pretty_func(results, line, col)
        if full in ("func.return", "tf_executor.yield", "tf_executor.fetch", "tf_device.return"):
            operands = self.operand_list(None)
            attrs = self.attr_dict() if self.peek("{") else {}
            return Op(full, results, operands, attrs, [], self._opt_types(), [], line, col)
        if full == "func.call":
            sym = self.match(_SYM)
            if sym is None:
                self.err("expected the callee '@name'")
            self.expect("(")
            operands = self.operand_list(")")
            attrs = self.attr_dict() if self.peek("{") else {}
            self.expect(":")
            ins, outs = self.function_type()
            return Op(full, results, operands, attrs, [], ins, outs, line, col,
                      callee=sym[1:].strip('"'))
        if full == "tf_executor.graph":
            self.default_dialect.append("tf_executor")
            try:
                region = self.region()
            finally:
                self.default_dialect.pop()
            attrs = self.attr_dict() if self.peek("{") else {}
            outs = [self.type()] if self.accept(":") else []
            return Op(full, results, [], attrs, [region], [], outs, line, col)
        if full == "tf_executor.island":
            operands: list[str] = []
            if self.accept("("):
                operands = self.operand_list(")")
            attrs = {}
            if self.accept("wraps"):
                inner = self.op()
                inner_results = [f"%__wrapped_{line}_{col}#{k}"
                                 for k in range(len(inner.result_types))]
                inner.results = inner_results
                yield_op = Op("tf_executor.yield", [], list(inner_results), {}, [],
                              list(inner.result_types), [], line, col)
                region = [Block([], [inner, yield_op])]
                return Op(full, results, operands, attrs, [region], [], [], line, col)
            self.default_dialect.append("tf_executor")
            try:
                region = self.region()
            finally:
                self.default_dialect.pop()
            if self.peek("{"):
                attrs = self.attr_dict()
            self._opt_types()
            return Op(full, results, operands, attrs, [region], [], [], line, col)
        if full in ("tf_device.cluster", "tf_device.launch"):
            attrs = {}
            region = self.region()
            if self.peek("{"):
                attrs = self.attr_dict()
            outs = self._opt_types()
            return Op(full, results, [], attrs, [region], [], outs, line, col)
        self.err(f"operation {full} in custom (pretty) form is not read by tfsem; print the "
                 "module in generic form (print-op-generic) or see docs/mlir.md for the subset",
                 rule="unsupported-op")

    def pretty_func(self, results: list[str], line: int, col: int) -> Op:
        for vis in ("private", "public", "nested"):
            if self.accept(vis):
                break
        sym = self.match(_SYM)
        if sym is None:
            self.err("expected the function's name '@name'")
        self.expect("(")
        args: list[tuple[str, str, dict]] = []
        if not self.accept(")"):
            while True:
                self.ws()
                name = self.match(_SSA)
                if name is None:          # a declaration: types only
                    name = f"%__arg{len(args)}"
                else:
                    self.expect(":")
                typ = self.type()
                attrs = self.attr_dict() if self.peek("{") else {}
                self.loc()
                args.append((name, typ, attrs))
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')' in the arguments")
        fres: list[tuple[str, dict]] = []
        if self.accept("->"):
            if self.peek("("):
                self.i += 1
                if not self.accept(")"):
                    while True:
                        t = self.type()
                        a = self.attr_dict() if self.peek("{") else {}
                        fres.append((t, a))
                        if self.accept(")"):
                            break
                        self.expect(",")
            else:
                fres.append((self.type(), {}))   # no attributes without parentheses
        attrs = self.attr_dict() if self.accept("attributes") else {}
        attrs["sym_name"] = sym[1:].strip('"')
        regions = []
        if self.peek("{"):
            self.default_dialect.append("func")
            try:
                regions = [self.region()]
            finally:
                self.default_dialect.pop()
            if regions[0]:
                regions[0][0].args = args
        return Op("func.func", results, [], attrs, regions, [], [], line, col,
                  func_args=args, func_results=fres)

    def module(self) -> list[Op]:
        """The top level: a module, or bare operations; aliases skipped."""
        ops: list[Op] = []
        while True:
            self.ws()
            if self.i >= self.n:
                return ops
            if self.s.startswith("#", self.i) or self.s.startswith("!", self.i):
                self.i += 1
                if self.match(_ID) is None:
                    self.err("a bad alias definition")
                self.expect("=")
                self.attr_value()
                continue
            if self.s.startswith("{-#", self.i):
                j = self.s.find("#-}", self.i)
                if j < 0:
                    self.err("'{-#' is not closed")
                self.i = j + 3
                continue
            ops.append(self.op())


def parse(text: str, path: str = "<mlir>") -> list[Op]:
    """The top-level operations of MLIR text (see the module docstring)."""
    if len(text) > MAX_TEXT:
        raise MlirError(path, f"{len(text)} characters; at most {MAX_TEXT}", "too-large")
    p = Parser(text, path)
    try:
        return p.module()
    except RecursionError:
        p.err("nested too deeply to read", rule="too-deep")
    except MlirError:
        raise
    except (ValueError, OverflowError, IndexError, KeyError, TypeError) as exc:
        p.err(f"unreadable: {type(exc).__name__}: {exc}")
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------
# Types


#: MLIR element type -> TensorFlow DataType.
ELEMENT_TYPES = {
    "f32": "DT_FLOAT", "f64": "DT_DOUBLE", "f16": "DT_HALF", "bf16": "DT_BFLOAT16",
    "i1": "DT_BOOL", "i8": "DT_INT8", "i16": "DT_INT16", "i32": "DT_INT32", "i64": "DT_INT64",
    "ui8": "DT_UINT8", "ui16": "DT_UINT16", "ui32": "DT_UINT32", "ui64": "DT_UINT64",
    "!tf_type.string": "DT_STRING", "!tf_type.resource": "DT_RESOURCE",
    "!tf_type.variant": "DT_VARIANT", "complex<f32>": "DT_COMPLEX64",
    "complex<f64>": "DT_COMPLEX128",
}


@dataclass
class TensorT:
    element: str                       # "f32", "!tf_type.resource", ...
    shape: list[int] | None            # None: unranked; -1: a dynamic dimension
    subtype: "TensorT | None" = None   # a resource's value type

    @property
    def dtype(self) -> str | None:
        return ELEMENT_TYPES.get(self.element)


def tensor_type(t: str) -> TensorT | None:
    """A `tensor<...>` type, or None for anything else (control tokens...)."""
    t = t.strip()
    if not (t.startswith("tensor<") and t.endswith(">")):
        return None
    body = t[len("tensor<"):-1].strip()
    shape: list[int] | None = []
    if body.startswith("*x"):
        shape, body = None, body[2:]
    else:
        while True:
            m = re.match(r"(\d+|\?)x", body)
            if not m:
                break
            shape.append(-1 if m.group(1) == "?" else int(m.group(1)))
            body = body[m.end():]
    sub = None
    elem = body
    m = re.match(r"(!tf_type\.resource|!tf_type\.variant)<(.*)>$", body)
    if m:
        elem = m.group(1)
        sub = tensor_type(m.group(2).strip())
    return TensorT(elem, shape, sub)


def _shape_proto(shape: list[int] | None) -> dict:
    if shape is None:
        return {"unknown_rank": True}
    return {"dim": [{"size": d} for d in shape]}


# ---------------------------------------------------------------------------
# Lowering to a GraphDef dict


_NUMPY = {"DT_FLOAT": np.float32, "DT_DOUBLE": np.float64, "DT_INT32": np.int32,
          "DT_INT64": np.int64, "DT_INT16": np.int16, "DT_INT8": np.int8, "DT_UINT8": np.uint8,
          "DT_UINT16": np.uint16, "DT_UINT32": np.uint32, "DT_UINT64": np.uint64,
          "DT_BOOL": np.bool_, "DT_HALF": np.float16}
_BITS = {"DT_FLOAT": np.uint32, "DT_DOUBLE": np.uint64, "DT_HALF": np.uint16}

#: Attributes TensorFlow's importer adds that mean nothing to tfsem.
_DROPPED_ATTRS = {"device", "allowed_devices", "debug_name", "_class"}

#: tf ops with regions or control flow, refused by name, and the calls
#: inlined: the control family's (oracle/opdefs/control.py).
_CONTROL_FLOW = control_ops.mlir_control_flow()
_CALLS = control_ops.mlir_calls()


def control_flow_ops() -> frozenset[str]:
    """The tf dialect ops refused as control flow."""
    return _CONTROL_FLOW


def call_ops() -> frozenset[str]:
    """The tf dialect calls inlined (with func.call and func.call_indirect)."""
    return _CALLS


@dataclass
class Lowered:
    """What MLIR became: the GraphDef dict, the fetches and their names, and
    where each node came from (for messages)."""
    graph: dict
    fetches: list[str]
    output_names: list[str]
    origin: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    function: str = ""
    #: The nodes to run: None for every node; for an imported V1 graph (an
    #: executor graph in a function with `tf.entry_function`) the fetches
    #: and the fetched control tokens (its targets): Session.run's pruning.
    targets: list[str] | None = None


class _Lowerer:
    def __init__(self, path: str, funcs: dict[str, Op]):
        self.path = path
        self.funcs = funcs
        self.nodes: list[dict] = []
        self.names: set[str] = set()
        self.origin: dict[str, tuple[int, int, str]] = {}
        self.call_stack: list[str] = []
        self.control_fetches: list[str] = []

    def err(self, op: Op, message: str, rule: str = "mlir") -> MlirError:
        return MlirError(f"{self.path}:{op.line}:{op.col}", f"{op.name}: {message}", rule)

    def fresh(self, base: str) -> str:
        base = re.sub(r"[^\w./\-]", "_", base) or "node"
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def add(self, op: Op | None, name: str, tf_op: str, inputs: list[str], controls: list[str],
            attr: dict) -> str:
        ins = list(inputs) + [f"^{c}" for c in dict.fromkeys(controls)]
        self.nodes.append({"name": name, "op": tf_op, "input": ins, "attr": attr})
        if op is not None:
            self.origin[name] = (op.line, op.col, op.name)
        return name

    def join(self, op: Op, base: str, members: list[str]) -> str:
        members = list(dict.fromkeys(members))
        if len(members) == 1:
            return members[0]     # one op: its own completion
        name = self.fresh(base)
        return self.add(op, name, "NoOp", [], members, {})

    # -- values --------------------------------------------------------------

    @staticmethod
    def look(env: dict[str, Any], op: Op, ssa: str, lowerer: "_Lowerer") -> Any:
        v = env.get(ssa)
        if v is None and "#" not in ssa:
            v = env.get(ssa + "#0")
        if v is None and ssa.endswith("#0"):
            v = env.get(ssa[:-2])          # `%x#0` of a single value `%x`
        if v is None:
            raise lowerer.err(op, f"the value {ssa} is not defined before its use",
                              "undefined-value")
        return v

    def data(self, env, op, ssa) -> str:
        v = self.look(env, op, ssa, self)
        if isinstance(v, tuple) and v[0] == "ctl":
            raise self.err(op, f"{ssa} is a control token where a value is expected",
                           "edge-kind")
        return v

    # -- blocks --------------------------------------------------------------

    def block(self, ops: list[Op], env: dict, pred: list[str], prefix: str,
              sequential: bool, terminators: tuple[str, ...]) -> tuple[list[str], Op | None]:
        """Lower a block's ops; returns (every completion node, the terminator)."""
        done_all: list[str] = []
        term = None
        for k, op in enumerate(ops):
            if op.name in terminators:
                if k != len(ops) - 1:
                    raise self.err(op, "a terminator before the end of its block")
                term = op
                break
            done = self.operation(op, env, pred, prefix)
            done_all.extend(done)
            if sequential and done:
                pred = list(done)
        return done_all, term

    def operation(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        """Lower one op whose control predecessors are `pred`; binds its
        results in env; returns the node(s) that mark its completion."""
        name = op.name
        if name == "tf_executor.graph":
            return self.graph(op, env, pred, prefix)
        if name == "tf_executor.island":
            return self.island(op, env, pred, prefix)
        if name in ("tf_device.cluster", "tf_device.launch"):
            return self.cluster(op, env, pred, prefix)
        if name in ("func.call", "func.call_indirect") or name in _CALLS:
            return self.call(op, env, pred, prefix)
        if name in _CONTROL_FLOW:
            raise self.err(op, "control flow is not modelled (see docs/mlir.md)",
                           "control-flow")
        if name.startswith("tf_executor."):
            raise self.err(op, "this executor op (v1 control flow, NextIteration, "
                           "ControlTrigger...) is not modelled", "control-flow")
        if name.startswith("tf_device."):
            raise self.err(op, "this device op is not read (tf_device.cluster, launch and "
                           "return are)", "unsupported-op")
        if not name.startswith("tf.") or name.startswith("tf._"):
            raise self.err(op, "not a TensorFlow op tfsem reads (the subset: docs/mlir.md)",
                           "unsupported-op")
        if op.regions:
            raise self.err(op, "an op with regions tfsem does not read", "unsupported-op")
        return self.tf_op(op, env, pred, prefix)

    def tf_op(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        tf_name = op.name[3:]
        node = self.fresh(f"{prefix}{tf_name}_{op.line}_{op.col}")
        inputs = [self.data(env, op, o) for o in op.operands]
        attr = self.attrs(op, tf_name)
        self.add(op, node, tf_name, inputs, pred, attr)
        for k, r in enumerate(op.results):
            env[r] = f"{node}:{k}" if k else node
        return [node]

    def attrs(self, op: Op, tf_name: str) -> dict:
        out: dict[str, Any] = {}
        for k, v in op.attrs.items():
            if k in _DROPPED_ATTRS or k.startswith("_") or k.startswith("tf."):
                continue
            a = self.attr_proto(op, k, v)
            if a is not None:
                out[k] = a
        ins = [tensor_type(t) for t in op.operand_types]
        outs = [tensor_type(t) for t in op.result_types]

        def dt(t: TensorT | None) -> str | None:
            return t.dtype if t is not None else None

        # the attributes TensorFlow's OpDef derives from the operands' and
        # results' types (graphdef/signatures.py), then the guesses below
        # for an op the table does not hold
        from .signatures import derive_attrs
        for k, v in derive_attrs(tf_name, [dt(t) for t in ins if t is not None],
                                 [dt(t) for t in outs if t is not None]).items():
            out.setdefault(k, v)
        data_in = [t for t in ins if t is not None and t.element != "!tf_type.resource"]
        if "T" not in out:
            # T is the result's element type when an operand has it too (Fill's
            # value, Select's branches), else the first operand's (Shape, Less)
            res = dt(outs[0]) if outs else None
            if res is not None and res in {dt(t) for t in data_in}:
                t = res
            else:
                t = dt(data_in[0]) if data_in else res
            if t is not None:
                out["T"] = {"type": t}
        if tf_name == "VarHandleOp" and outs and outs[0] is not None:
            sub = outs[0].subtype
            if sub is not None:
                out.setdefault("dtype", {"type": sub.dtype or "DT_INVALID"})
                out.setdefault("shape", {"shape": _shape_proto(sub.shape)})
        elif tf_name == "ReadVariableOp" and outs and outs[0] is not None:
            out.setdefault("dtype", {"type": outs[0].dtype or "DT_INVALID"})
        elif tf_name.startswith("Assign") and tf_name.endswith("VariableOp") and len(ins) > 1 \
                and ins[1] is not None:
            out.setdefault("dtype", {"type": ins[1].dtype or "DT_INVALID"})
        elif tf_name == "Cast" and ins and outs and ins[0] is not None and outs[0] is not None:
            out.setdefault("SrcT", {"type": ins[0].dtype or "DT_INVALID"})
            out.setdefault("DstT", {"type": outs[0].dtype or "DT_INVALID"})
        elif tf_name == "Shape" and outs and outs[0] is not None:
            out.setdefault("out_type", {"type": outs[0].dtype or "DT_INVALID"})
        elif tf_name == "Placeholder" and outs and outs[0] is not None:
            out.setdefault("dtype", {"type": outs[0].dtype or "DT_INVALID"})
            out.setdefault("shape", {"shape": _shape_proto(outs[0].shape)})
        elif tf_name == "Split":
            out.setdefault("num_split", {"i": len(op.results)})
        out.setdefault("N", {"i": len(op.operands)})
        return out

    def attr_proto(self, op: Op, key: str, v: Any) -> dict | None:
        if isinstance(v, bool):
            return {"b": v}
        if isinstance(v, int):
            return {"i": v}
        if isinstance(v, float):
            return {"f": v}
        if isinstance(v, str):
            m = re.fullmatch(r"tfdtype\$(DT_[A-Z0-9_]+)", v)
            if m:   # a type written as a string, as older TensorFlow printed it
                return {"type": m.group(1)}
            return {"s": v.encode("utf-8")}
        if isinstance(v, Dense):
            return {"tensor": self.tensor_proto(op, key, v)}
        if isinstance(v, TypeAttr):
            t = tensor_type(f"tensor<{v.type}>")
            if t is not None and t.dtype:
                return {"type": t.dtype}
            return None
        if isinstance(v, Opaque):
            m = re.fullmatch(r"#tf_type\.shape<(.*)>", v.text.strip(), re.S)
            if m:
                t = tensor_type(f"tensor<{m.group(1).strip()}xf32>") if m.group(1).strip() \
                    else TensorT("f32", [])
                return {"shape": _shape_proto(t.shape if t else None)}
            return None
        if isinstance(v, list):
            if all(isinstance(x, bool) for x in v) and v:
                return {"list": {"b": v}}
            if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                return {"list": {"i": v}}
            if all(isinstance(x, float) for x in v):
                return {"list": {"f": v}}
            if all(isinstance(x, str) for x in v):
                return {"list": {"s": [x.encode("utf-8") for x in v]}}
            return None
        if isinstance(v, Sym):
            return {"func": {"name": v.name}}
        return None

    def tensor_proto(self, op: Op, key: str, d: Dense) -> dict:
        t = tensor_type(d.type or "")
        if t is None or t.shape is None or any(x < 0 for x in t.shape):
            raise self.err(op, f"attribute {key}: a dense constant needs a static tensor type "
                           f"(has {d.type})", "bad-constant")
        dt = t.dtype
        if dt not in _NUMPY:
            return {"dtype": dt or "DT_INVALID", "tensor_shape": _shape_proto(t.shape)}
        npd = np.dtype(_NUMPY[dt])
        size = int(np.prod(t.shape, dtype=np.int64)) if t.shape else 1
        if size > (1 << 24):
            raise self.err(op, f"attribute {key}: a constant of {size} elements", "too-large")
        payload = d.payload
        try:
            if isinstance(payload, bytes):
                if len(payload) == size * npd.itemsize:
                    arr = np.frombuffer(payload, dtype=npd.newbyteorder("<")).astype(npd)
                elif len(payload) == npd.itemsize:
                    arr = np.full(size, np.frombuffer(payload, dtype=npd.newbyteorder("<"))[0])
                else:
                    raise ValueError(f"{len(payload)} bytes for {size} elements of {dt}")
            else:
                flat = list(_flatten(payload))
                vals = [self._literal(x, dt, npd) for x in flat]
                if len(vals) == 1:
                    arr = np.full(size, vals[0], dtype=npd)
                elif len(vals) == size:
                    arr = np.array(vals, dtype=npd)
                else:
                    raise ValueError(f"{len(vals)} values for the shape {t.shape}")
        except (ValueError, OverflowError, TypeError) as exc:
            raise self.err(op, f"attribute {key}: a bad dense constant: {exc}",
                           "bad-constant") from None
        arr = arr.reshape(t.shape)
        return {"dtype": dt, "tensor_shape": _shape_proto(t.shape),
                "tensor_content": arr.astype(npd.newbyteorder("<")).tobytes()}

    @staticmethod
    def _literal(x: Any, dt: str, npd: np.dtype) -> Any:
        if isinstance(x, tuple) and x[0] == "hex":
            if dt in _BITS:
                bits = np.array(x[1], dtype=_BITS[dt])
                return bits.view(npd)[()]
            return x[1]
        if isinstance(x, bytes):
            raise ValueError("a string element in a numeric constant")
        if npd.kind in "iu":
            if isinstance(x, float):
                raise ValueError(f"{x} in an integer constant")
            info = np.iinfo(npd)
            if not info.min <= int(x) <= info.max:
                raise ValueError(f"{x} out of range for {dt}")
        if npd.kind == "f":
            with np.errstate(over="ignore"):
                return npd.type(x)
        return x

    # -- structure -----------------------------------------------------------

    def graph(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        blocks = op.regions[0] if op.regions else []
        if len(blocks) != 1:
            raise self.err(op, "a graph has one block")
        done, term = self.block(blocks[0].ops, env, pred, prefix, sequential=False,
                                terminators=("tf_executor.fetch",))
        if term is None:
            raise self.err(op, "the graph has no tf_executor.fetch")
        vals = []
        for o in term.operands:
            v = self.look(env, term, o, self)
            if isinstance(v, tuple) and v[0] == "ctl":
                self.control_fetches.append(v[1])   # a target (partial execution)
                continue
            vals.append(v)
        data_results = [r for r in op.results]
        if len(data_results) != len(vals):
            raise self.err(op, f"{len(data_results)} results but the fetch gives {len(vals)} "
                           "values")
        for r, v in zip(data_results, vals):
            env[r] = v
        return done

    def island(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        controls = list(pred)
        for o in op.operands:
            v = self.look(env, op, o, self)
            if not (isinstance(v, tuple) and v[0] == "ctl"):
                raise self.err(op, f"the island's operand {o} is not a control token",
                               "edge-kind")
            controls.append(v[1])
        blocks = op.regions[0] if op.regions else []
        if len(blocks) != 1:
            raise self.err(op, "an island has one block")
        done, term = self.block(blocks[0].ops, env, controls, prefix, sequential=True,
                                terminators=("tf_executor.yield",))
        if term is None:
            raise self.err(op, "the island has no tf_executor.yield")
        vals = [self.data(env, term, o) for o in term.operands]
        if len(op.results) != len(vals) + 1:
            raise self.err(op, f"{len(op.results)} results for {len(vals)} yielded values and "
                           "a control token")
        for r, v in zip(op.results, vals):
            env[r] = v
        join = self.join(op, f"{prefix}island_{op.line}_{op.col}", done or controls)
        env[op.results[-1]] = ("ctl", join)
        return [join]

    def cluster(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        blocks = op.regions[0] if op.regions else []
        if len(blocks) != 1:
            raise self.err(op, "a cluster or launch has one block")
        inner = dict(env)
        done, term = self.block(blocks[0].ops, inner, pred, prefix, sequential=True,
                                terminators=("tf_device.return",))
        if term is None:
            raise self.err(op, "the region has no tf_device.return")
        vals = [self.data(inner, term, o) for o in term.operands]
        if len(op.results) != len(vals):
            raise self.err(op, f"{len(op.results)} results but tf_device.return gives "
                           f"{len(vals)} values")
        for r, v in zip(op.results, vals):
            env[r] = v
        kind = op.name.split(".")[1]
        return [self.join(op, f"{prefix}{kind}_{op.line}_{op.col}", done or pred)]

    def call(self, op: Op, env: dict, pred: list[str], prefix: str) -> list[str]:
        callee = op.callee
        if callee is None:
            f = op.attrs.get("f")
            callee = f.name if isinstance(f, Sym) else None
        if callee is None:
            raise self.err(op, "a call without a callee symbol", "unsupported-op")
        fn = self.funcs.get(callee)
        if fn is None or not fn.regions or not fn.regions[0]:
            raise self.err(op, f"calls @{callee}, which is not defined in the module",
                           "unknown-function")
        if callee in self.call_stack or len(self.call_stack) >= MAX_INLINE_DEPTH:
            raise self.err(op, f"recursive or too deep calls through @{callee}", "recursion")
        args = [self.look(env, op, o, self) for o in op.operands]
        # the body starts when every input of the call is ready (a call is one kernel)
        entry = self.join(op, f"{prefix}call_{callee}_{op.line}_{op.col}/_entry",
                          list(pred) + [a.split(":")[0] for a in args if isinstance(a, str)])
        self.call_stack.append(callee)
        try:
            sub_prefix = f"{prefix}{callee}_{op.line}_{op.col}/"
            rets, done = self.function_body(fn, args, [entry], sub_prefix)
        finally:
            self.call_stack.pop()
        join = self.join(op, f"{prefix}call_{callee}_{op.line}_{op.col}", done + [entry])
        if len(rets) != len(op.results):
            raise self.err(op, f"@{callee} returns {len(rets)} values, the call has "
                           f"{len(op.results)} results")
        for k, (r, v) in enumerate(zip(op.results, rets)):
            rt = tensor_type(op.result_types[k]) if k < len(op.result_types) else None
            if rt is not None and rt.element == "!tf_type.resource":
                env[r] = v          # a resource passes through as the variable itself
                continue
            out = self.fresh(f"{prefix}call_{callee}_{op.line}_{op.col}/out_{k}")
            dt = rt.dtype if rt is not None else None
            self.add(op, out, "Identity", [v], [join], {"T": {"type": dt or "DT_INVALID"}})
            env[r] = out
        return [join]

    def function_body(self, fn: Op, args: list[Any], pred: list[str],
                      prefix: str) -> tuple[list[str], list[str]]:
        block = fn.regions[0][0]
        if len(fn.regions[0]) != 1:
            raise self.err(fn, "a function of several blocks (branches) is not read",
                           "unsupported")
        if len(block.args) != len(args):
            raise self.err(fn, f"takes {len(block.args)} arguments, is given {len(args)}")
        env = {name: a for (name, _, _), a in zip(block.args, args)}
        done, term = self.block(block.ops, env, pred, prefix, sequential=True,
                                terminators=("func.return",))
        if term is None:
            raise self.err(fn, "the function has no return")
        rets = [self.data(env, term, o) for o in term.operands]
        return rets, done


def _flatten(x):
    if isinstance(x, list):
        for y in x:
            yield from _flatten(y)
    else:
        yield x


def _functions(ops: list[Op]) -> list[Op]:
    out = []
    for op in ops:
        if op.name == "builtin.module":
            for blk in op.regions[0] if op.regions else []:
                out.extend(_functions(blk.ops))
        elif op.name == "func.func":
            out.append(op)
    return out


def _generic_func_args(fn: Op) -> None:
    """Fill a generic `"func.func"`'s arguments and name from its properties."""
    if fn.func_args is not None:
        return
    name = fn.attrs.get("sym_name")
    fn.attrs["sym_name"] = name if isinstance(name, str) else ""
    block = fn.regions[0][0] if fn.regions and fn.regions[0] else None
    arg_attrs = fn.attrs.get("arg_attrs")
    args = []
    for k, (n, t, _) in enumerate(block.args if block else []):
        a = arg_attrs[k] if isinstance(arg_attrs, list) and k < len(arg_attrs) and \
            isinstance(arg_attrs[k], dict) else {}
        args.append((n, t, a))
    if block is not None:
        block.args = args
    fn.func_args = args


def lower(ops: list[Op], path: str = "<mlir>", function: str | None = None,
          graph_runs: str = "all") -> Lowered:
    """The GraphDef (dict) of the entry function of a parsed module."""
    funcs = _functions(ops)
    for f in funcs:
        _generic_func_args(f)
    by_name: dict[str, Op] = {}
    for f in funcs:
        by_name.setdefault(f.attrs["sym_name"], f)
    if function is None:
        defined = [f for f in funcs if f.regions and f.regions[0]]
        public = [f for f in defined if f.attrs.get("sym_visibility") != "private"]
        if "main" in by_name:
            function = "main"
        elif len(public) == 1:
            function = public[0].attrs["sym_name"]
        elif len(defined) == 1:
            function = defined[0].attrs["sym_name"]
        else:
            names = ", ".join(f"@{f.attrs['sym_name']}" for f in defined) or "none"
            raise MlirError(path, f"which function is the program? (there is no @main; "
                            f"defined: {names}); name it with --function", "usage")
    fn = by_name.get(function)
    if fn is None or not fn.regions or not fn.regions[0]:
        raise MlirError(path, f"no function @{function} with a body in the module", "usage")
    low = _Lowerer(path, by_name)
    entry = fn.attrs.get("tf.entry_function")
    entry = entry if isinstance(entry, dict) else {}
    in_names = _names(entry.get("inputs"), len(fn.func_args or []))
    args = []
    for k, (ssa, typ, attrs) in enumerate(fn.func_args or []):
        t = tensor_type(typ)
        if t is None:
            raise low.err(fn, f"argument {ssa} of type {typ} is not a tensor", "unsupported")
        if t.element == "!tf_type.resource":
            var = attrs.get("tf.resource_name") if isinstance(attrs.get("tf.resource_name"),
                                                              str) else None
            var = var or (in_names[k] if in_names else ssa.lstrip("%"))
            node = low.fresh(f"var_{var}")
            sub = t.subtype
            if sub is None:
                raise low.err(fn, f"resource argument {ssa} has no value type "
                              "(!tf_type.resource<tensor<...>>)", "unsupported")
            low.add(fn, node, "VarHandleOp", [], [], {
                "shared_name": {"s": var.encode("utf-8")},
                "dtype": {"type": sub.dtype or "DT_INVALID"},
                "shape": {"shape": _shape_proto(sub.shape)}})
            args.append(node)
        else:
            feed = in_names[k] if in_names else ssa.lstrip("%")
            if feed in low.names:
                raise low.err(fn, f"two arguments are called {feed!r}")
            low.names.add(feed)
            low.add(fn, feed, "Placeholder", [], [], {
                "dtype": {"type": t.dtype or "DT_INVALID"},
                "shape": {"shape": _shape_proto(t.shape)}})
            args.append(feed)
    rets, _ = low.function_body(fn, args, [], "")
    out_names = _names(entry.get("outputs"), len(rets)) or \
        [f"output_{k}" for k in range(len(rets))]
    if len(set(out_names)) != len(out_names):
        out_names = [f"output_{k}" for k in range(len(rets))]
    body = [op for op in fn.regions[0][0].ops if op.name != "func.return"]
    targets = None
    if graph_runs not in GRAPH_RUNS:
        raise MlirError(path, f"graph_runs is one of {GRAPH_RUNS}, not {graph_runs!r}", "usage")
    if graph_runs == "fetched" and "tf.entry_function" in fn.attrs and body and \
            body[0].name == "tf_executor.graph":
        # every variable stays declared (a VarHandleOp has no effect): the
        # interface does not change when a pass drops a variable's last use
        handles = [n["name"] for n in low.nodes if n["op"] == "VarHandleOp"]
        targets = list(dict.fromkeys(low.control_fetches + handles))
    return Lowered({"node": low.nodes}, rets, out_names, low.origin, function, targets)


def _names(text: Any, n: int) -> list[str]:
    if not isinstance(text, str) or not text:
        return []
    names = [x.strip() for x in text.split(",")]
    return names if len(names) == n and all(names) else []


def program_of_mlir(text: str, path: str = "<mlir>", function: str | None = None,
                    graph_runs: str = "all") -> Program:
    """The tfsem program of MLIR text (see the module docstring).
    `graph_runs`: what runs of an executor graph in a function with
    `tf.entry_function` (an imported V1 graph): "all" (the default), every
    op, as the dialect's passes other than graph pruning assume; "fetched",
    what its fetches and fetched control tokens need, as Session.run (and
    tf-executor-graph-pruning) does.  Other functions always run every op."""
    from .importer import GraphImportError, import_graph
    low = lower(parse(text, path), path, function, graph_runs)
    targets = low.targets if low.targets is not None else [n["name"] for n in low.graph["node"]]
    try:
        return import_graph(low.graph, low.fetches, targets, output_names=low.output_names).program
    except GraphImportError as exc:
        raise ProgramError([_locate(v, low, path) for v in exc.violations]) from None
    except ProgramError as exc:
        raise ProgramError([_locate(v, low, path) for v in exc.violations]) from None


def _locate(v: Violation, low: Lowered, path: str) -> Violation:
    for m in re.finditer(r"node '([^']+)'|^([^\s:]+)", v.where):
        name = m.group(1) or m.group(2)
        base = name.split("/")[0] if name not in low.origin else name
        for cand in (name, base, name.rsplit("/", 1)[0]):
            if cand in low.origin:
                line, col, opname = low.origin[cand]
                return Violation(f"{path}:{line}:{col}: {opname} ({v.where})", v.rule, v.message)
    return Violation(f"{path}: {v.where}", v.rule, v.message)


def load_mlir(path: str | Path, function: str | None = None,
              graph_runs: str = "all") -> Program:
    """The tfsem program of an .mlir file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise MlirError(str(path), exc.strerror or str(exc), "unreadable") from None
    if len(data) > MAX_TEXT:
        raise MlirError(str(path), f"{len(data)} bytes; at most {MAX_TEXT}", "too-large")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise MlirError(f"{path}:{line}:{col}", "not UTF-8 text (MLIR bytecode is not read; "
                        "print the module as text)", "unreadable") from None
    if "\x00" in text:
        k = text.index("\x00")
        line = text.count("\n", 0, k) + 1
        raise MlirError(f"{path}:{line}:{k - text.rfind(chr(10), 0, k)}", "a NUL character "
                        "(MLIR bytecode is not read; print the module as text)", "unreadable")
    return program_of_mlir(text, str(path), function, graph_runs)
