"""Static shapes of a program's ports: what the structural rule's reshape
rules (checking/static_shapes.py) and graph import's folding of a
variable's `Shape` (graphdef/importer.py `_unfold_unsure_shapes`, through
`shape_keeping_variables` below) rest on.

The claim, for a port u with `shape[u] = S`: at every σ (feeds of their
declared types, variables of their declared types or uninitialized, SPEC
section 2) and in every run, the value u holds is an error or a tensor of
shape S.  A port with no entry is claimed nothing of.

Why it holds.  By induction along a run, with the hypothesis (H) that every
Read returns an error or a tensor of its variable's declared shape:
 - a feed holds its declared type; a Const its value; a Read, by (H);
 - a function node computes from its arguments' values: where they are
   errors or tensors of the shapes claimed, each rule below gives the shape
   of its result whenever that result is a tensor (`_RULES`; a function
   without a rule, or with arguments of unknown shape, gets no claim).
(H) holds at the first Read (σ).  It is kept by every Assign that can
store: `_assigned` (oracle/graph.py) stores f(w, v) only when v and f(w, v)
are tensors, and :func:`static_shapes` checks, for every Assign of the
program, that f(w, v) has the declared shape of its variable whenever w is
an error or a tensor of that shape and v one of its claimed shape (Snd and
SndSameShape store v: v's claimed shape must be the declared one; the
elementwise update functions store the broadcast of w and v: it must be
w's; StepToward, ScaleAdd, GradientStep and MomentumStep, an optimizer's,
take v = StackBroadcast(g, c) of shape (2,) + w's, AdamStep a StackBroadcast
of two of shape (2, 2) + w's, refuse any other (`_operands`), and store a
value of w's shape).  v mentions only Reads before the Assign, so by induction every
stored value, hence every later Read, keeps (H).  Where an Assign fails the
check, or its value has no claimed shape, no Read gets a shape.

The rules (each the shape of the result *when it is a tensor*; an error
result needs no claim):
 - Identity, and the elementwise functions of one argument in
   `ELEMENTWISE_1`: the argument's shape (numpy's ufuncs and TensorFlow's
   cwise kernels map an array to an array of its shape);
 - the broadcasting functions of two arguments in `BROADCASTING_2`: the
   broadcast of both shapes (numpy's rule, which is TensorFlow's BCast for
   shapes that broadcast; shapes that do not give an error, no claim);
 - MatMul (transpose attributes): [m, k] x [k, n] -> [m, n] on two rank-2
   arguments, else no claim;
 - BiasAdd, TensorFlow's ReverseV2 and Cumsum: the first argument's shape;
 - the optimizer imports' checks (CheckApplyMomentum, ...): each result
   the shape of the argument it gives back (`_INPUT_CHECKS`);
 - StackBroadcast(a, b): (2,) + the broadcast of both (xp.stack of the
   broadcast arrays);
 - TensorFlow's UnsortedSegmentSum(data, ids, n) with n a constant scalar
   and ids' shape a prefix of data's: (n,) + the rest of data's shape;
 - Reshape (attribute `shape`) and ReshapeTo (a constant int32/int64 vector
   operand): the target shape, a -1 resolved from the argument's element
   count (no claim when that count is unknown or does not divide);
 - Tile (attribute `multiples`): each dimension times its multiple (rank
   equal, else the function fails);
 - Sum and Mean (attributes `axes`, `keep_dims`): a scalar stays a scalar
   (`_reduce` returns it), else the reduced axes removed or kept as 1;
 - TensorFlow's SoftmaxCrossEntropyWithLogits on two rank-2 arguments of
   one shape [b, c]: ([b], [b, c]);
 - BiasAddGrad (NHWC) of a rank >= 2 argument: its last dimension;
 - the functions that only move elements (`MOVES_ELEMENTS`: StridedSlice,
   Slice, Squeeze, Transpose, ConcatAxis): whether they fail and their
   result's shape depend on the shapes of the operands they move and on
   their index operands' values (begin, end, strides, size, perm), never on
   a moved element's value; with every index operand a constant, the shape
   they give int32 zeros of the claimed shapes (with the same constant
   operands) is the claim, and with a fed or computed index operand there
   is none (`_MOVED_OPERANDS`).
tests/test_static_shapes.py compares each claim with the shape computed by
the implementation (numpy and TensorFlow's kernels) at random and edge σ.

Per variable (`shape_keeping_variables`, for graph import).  (H) need not
hold for every variable at once: for a set G of variables, (H_G) says
every Read of a variable of G returns an error or a tensor of its declared
shape; the shapes computed with (H_G) (Reads of other variables claimed
nothing) are claims under (H_G), and where every Assign to a variable of G
passes the check above with them, (H_G) holds by the same induction (an
Assign to a variable outside G touches no Read of G).  The largest such G
is found by removing, until none is left, the variables with an Assign
that fails the check (each removal only removes claims, so a variable
removed stays removed).  Graph import's folded `Shape` constants of Reads
(`unsure`: node -> variable) count as constants only for variables of G:
a variable outside G gets TensorFlow's run-time `Shape` instead, whose
value is claimed nothing.  So the shapes of the last pass are those of the
program the import makes (a Const for a variable of G, a Shape claimed
nothing otherwise), and (H_G) holds of that program.  That pass folds no
function that may run TensorFlow's kernel (`kernels=False`: an import
starts no TensorFlow), which only claims less.
"""

from __future__ import annotations

import math
import weakref
from typing import Mapping

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ASSIGN, READ, VAR, DataIn, FeedIn, Program, ProgramError
from tfsem.oracle.values import Tensor

Shape = tuple[int, ...]

#: elementwise functions of one argument (the result has the argument's shape);
#: tfsem's function names (a name with no built-in function, which a user's
#: function could take, is not here)
ELEMENTWISE_1 = frozenset({
    "Identity", "Neg", "Relu", "Cast", "Abs", "Sqrt", "Sqrt.ftz", "Square",
    "Square.ftz", "LogicalNot", "IsNan", "IsInf", "IsFinite", "Floor", "Floor.ftz", "Ceil",
    "Ceil.ftz", "Round", "Round.ftz", "Rint", "Rint.ftz",
    "tf.Sigmoid/1/1", "tf.Tanh/1/1", "tf.Exp/1/1", "tf.Log/1/1", "tf.Log1p/1/1",
    "tf.Rsqrt/1/1", "tf.Reciprocal/1/1", "tf.Ceil/1/1", "tf.Floor/1/1", "tf.IsFinite/1/1",
    "tf.IsNan/1/1", "tf.Sqrt/1/1", "tf.Softplus/1/1", "tf.Elu/1/1", "tf.Relu6/1/1",
    "tf.LogSoftmax/1/1", "tf.Softmax/1/1"})
#: broadcasting functions of two arguments
BROADCASTING_2 = frozenset({
    "Add", "Add.ftz", "Sub", "Sub.ftz", "Mul", "Mul.ftz", "RealDiv", "RealDiv.ftz",
    "Max", "Max.ftz", "Min", "Min.ftz", "SquaredDifference",
    "SquaredDifference.ftz", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
    "NotEqual", "LogicalAnd", "LogicalOr", "ReluGrad", "DivNoNan", "DivNoNan.ftz",
    "tf.DivNoNan/2/1", "tf.Pow/2/1",
    "tf.SigmoidGrad/2/1", "tf.TanhGrad/2/1", "tf.RsqrtGrad/2/1", "tf.SqrtGrad/2/1"})
#: functions whose result has their first argument's shape (the others: a
#: bias along the last axis, an axis to reverse or to scan along)
_BIAS_ADD = frozenset({"BiasAdd", "BiasAdd.ftz", "ReverseV2", "tf.ReverseV2/2/1",
                       "tf.Cumsum/2/1"})
_SEGMENT_SUM = "tf.UnsortedSegmentSum/3/1"
_REDUCTIONS = frozenset({"Sum", "Mean"})
_REDUCTIONS_ALONG = frozenset({"SumAlong", "MeanAlong"})
_SCE = "tf.SoftmaxCrossEntropyWithLogits/2/2"
#: Assign functions that store their value v
_STORES_VALUE = frozenset({"Snd", "SndSameShape"})
#: Assign functions of an optimizer's update (oracle/opdefs/state.py) -> the
#: depth of their packed operands: StackBroadcast(g, c), of shape (2,) + the
#: variable's, or (AdamStep) a StackBroadcast of two, (2, 2) + the
#: variable's (`_operands` refuses any other); they store a value of w's shape
_PACKED_UPDATES = {"StepToward": 1, "ScaleAdd": 1, "GradientStep": 1, "MomentumStep": 1,
                   "AdamStep": 2}
#: the optimizer imports' checks (oracle/opdefs/state.py `_check_inputs`) ->
#: how many results: the last that many arguments given back unchanged
#: (or an error for each), so each result has its argument's shape
_INPUT_CHECKS = {"CheckApplyGradientDescent": 2, "CheckApplyMomentum": 3, "CheckApplyAdam": 7}

#: every function a rule names, captured at import: a function re-registered
#: under one of these names gets no claim
_KNOWN = {name: fns.lookup(name) for name in (
    *ELEMENTWISE_1, *BROADCASTING_2, *_BIAS_ADD, *_REDUCTIONS, *_REDUCTIONS_ALONG, _SCE,
    "MatMul", "Reshape", "ReshapeTo", "Tile", "Fill", "ExpandDims", "Select", "SelectV2",
    "StackBroadcast", _SEGMENT_SUM, *_PACKED_UPDATES, *_INPUT_CHECKS, "BiasAddGrad",
    "StridedSlice", "Slice", "Squeeze", "Transpose", "ConcatAxis")}


def _known(op: str) -> bool:
    f = _KNOWN.get(op)
    return f is not None and fns.lookup(op) is f


def _resolve(target, size: int | None) -> Shape | None:
    """The shape Reshape gives an argument of `size` elements, or None."""
    target = [int(d) for d in target]
    if any(d < -1 for d in target) or sum(d == -1 for d in target) > 1:
        return None
    if -1 not in target:
        return tuple(target)
    rest = math.prod(d for d in target if d != -1)
    if size is None or rest == 0 or size % rest:
        return None
    return tuple(size // rest if d == -1 else d for d in target)


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _int_vector(v) -> list[int] | None:
    if (isinstance(v, Tensor) and v.dtype in ("int32", "int64") and v.array.ndim == 1):
        return [int(d) for d in v.array]
    return None


def result_shapes(op: str, attrs: Mapping, shapes: list[Shape | None],
                  values: list) -> tuple[Shape | None, ...] | None:
    """The shapes of `op`'s results when they are tensors, from its
    arguments' claimed shapes (None: unknown) and constant values (None:
    not constant); None for a function without a rule."""
    if not _known(op):
        return None
    if op in ELEMENTWISE_1 and len(shapes) == 1:
        return (shapes[0],)
    if op in BROADCASTING_2 and len(shapes) == 2:
        if shapes[0] is None or shapes[1] is None:
            return (None,)
        return (_broadcast(shapes[0], shapes[1]),)
    if op in _BIAS_ADD and len(shapes) == 2:
        return (shapes[0],)
    if op == "StackBroadcast" and len(shapes) == 2:
        if shapes[0] is None or shapes[1] is None:
            return (None,)
        b = _broadcast(shapes[0], shapes[1])
        return (None if b is None else (2,) + b,)
    if op in _INPUT_CHECKS and len(shapes) >= _INPUT_CHECKS[op]:
        return tuple(shapes[-_INPUT_CHECKS[op]:])
    if op == _SEGMENT_SUM and len(shapes) == 3:
        # (num_segments,) + data.shape[rank(segment_ids):] (TensorFlow's kernel)
        data, ids, num = shapes[0], shapes[1], values[2]
        if (data is None or ids is None or not isinstance(num, Tensor)
                or num.dtype not in ("int32", "int64") or num.array.ndim != 0
                or data[:len(ids)] != ids):
            return (None,)
        return ((int(num.array),) + data[len(ids):],)
    if op == "MatMul" and len(shapes) == 2:
        a, b = shapes
        if a is None or b is None or len(a) != 2 or len(b) != 2:
            return (None,)
        m = a[1] if attrs.get("transpose_a") else a[0]
        n = b[0] if attrs.get("transpose_b") else b[1]
        return ((m, n),)
    if op == "Reshape" and len(shapes) == 1:
        size = None if shapes[0] is None else math.prod(shapes[0])
        return (_resolve(attrs.get("shape", ()), size),)
    if op == "ReshapeTo" and len(shapes) == 2:
        target = _int_vector(values[1])
        if target is None:
            return (None,)
        size = None if shapes[0] is None else math.prod(shapes[0])
        return (_resolve(target, size),)
    if op == "Tile" and len(shapes) == 1:
        m = [int(x) for x in attrs.get("multiples", ())]
        a = shapes[0]
        if a is None or len(m) != len(a) or any(x < 0 for x in m):
            return (None,)
        return (tuple(d * x for d, x in zip(a, m)),)
    if op == "Fill" and len(shapes) == 1:
        dims = [int(d) for d in attrs.get("dims", ())]
        return (tuple(dims) if all(d >= 0 for d in dims) else None,)
    if op == "ExpandDims" and len(shapes) == 1:
        a, ax = shapes[0], int(attrs.get("axis", 0))
        if a is None or not -len(a) - 1 <= ax <= len(a):
            return (None,)
        ax = ax if ax >= 0 else len(a) + 1 + ax
        return (a[:ax] + (1,) + a[ax:],)
    if op == "Select" and len(shapes) == 3:
        return (shapes[1],)     # (x's shape: `_select` refuses y of another)
    if op == "SelectV2" and len(shapes) == 3:
        if any(s is None for s in shapes):
            return (None,)
        ab = _broadcast(shapes[0], shapes[1])
        return (None if ab is None else _broadcast(ab, shapes[2]),)
    if op in _REDUCTIONS_ALONG and len(shapes) == 2:
        v = values[1]
        if not (isinstance(v, Tensor) and v.dtype in ("int32", "int64") and v.array.ndim <= 1):
            return (None,)
        attrs = {**attrs, "axes": [int(x) for x in v.array.ravel()]}
        return result_shapes(op[:-len("Along")], attrs, shapes[:1], values[:1])
    if op in _REDUCTIONS and len(shapes) == 1:
        a = shapes[0]
        if a is None:
            return (None,)
        if len(a) == 0:
            return ((),)
        axes = attrs.get("axes")
        if not isinstance(axes, (list, tuple)) or any(not -len(a) <= int(x) < len(a)
                                                      for x in axes):
            return (None,)
        axes = {int(x) % len(a) for x in axes}
        keep = bool(attrs.get("keep_dims", False))
        return (tuple(1 if i in axes else d for i, d in enumerate(a) if keep or i not in axes),)
    if op == "BiasAddGrad" and len(shapes) == 1:
        a = shapes[0]     # (the sum over every axis but the last: NHWC, the default)
        if a is None or len(a) < 2 or attrs.get("data_format", "NHWC") != "NHWC":
            return (None,)
        return ((a[-1],),)
    if op in MOVES_ELEMENTS:
        return _shape_by_stand_in(op, attrs, shapes, values)
    if op == _SCE and len(shapes) == 2:
        a, b = shapes
        if a is None or a != b or len(a) != 2:
            return (None, None)
        return ((a[0],), a)
    return None


#: functions that only move elements (slices, squeezes, transposes,
#: concatenations): whether they fail, and their result's shape, depend on
#: their arguments' shapes and their constant operands alone, never on an
#: element's value; so the result's shape is the one they give int32 zeros
#: of the claimed shapes with the same constant operands (`_shape_by_stand_in`)
#: -- where every index operand is a constant
MOVES_ELEMENTS = frozenset({"StridedSlice", "Slice", "Squeeze", "Transpose", "ConcatAxis"})
_STAND_IN_ELEMENTS = 1 << 20
#: the operands whose elements are moved (the others -- begin, end, strides,
#: size, perm -- are indices: the result's shape depends on their values, so
#: they must be constants; a stand-in of zeros for a fed begin claimed
#: Slice(x, $b, [-1]) of x's shape: tests/test_static_shapes_attacks.py)
_MOVED_OPERANDS = {"StridedSlice": {0}, "Slice": {0}, "Squeeze": {0}, "Transpose": {0},
                   "ConcatAxis": {0, 1}}


def _shape_by_stand_in(op: str, attrs: Mapping, shapes: list, values: list):
    f = fns.lookup(op)
    if f is None or type(f).apply is not fns.Function.apply:
        return None
    args = []
    moved = _MOVED_OPERANDS.get(op, set())
    for k, (sh, v) in enumerate(zip(shapes, values)):
        if isinstance(v, Tensor):
            args.append(v)
        elif k not in moved or sh is None or math.prod(sh) > _STAND_IN_ELEMENTS:
            return tuple(None for _ in range(f.n_out))
        else:
            args.append(Tensor(np.zeros(sh, dtype=np.int32), "int32"))
    try:
        results = f.apply(args, attrs)
    except Exception:   # (cannot run on the stand-in: no claim)
        return tuple(None for _ in range(f.n_out))
    return tuple(tuple(r.array.shape) if isinstance(r, Tensor) else None for r in results)


def _static(shape) -> Shape | None:
    """A declared shape as a claim: every dimension a known non-negative int."""
    try:
        dims = tuple(shape)
    except TypeError:
        return None
    if all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
           for d in dims):
        return tuple(int(d) for d in dims)
    return None


#: id(program) -> (a weak reference to it, node name -> its data inputs):
#: `Node.data_inputs` is computed at each call; the passes over a program
#: (here, and the structural rule's) take it from here, once per program
#: (programs are immutable).  By id: a Program's own hash walks all of it
_DATA_INPUTS: dict[int, tuple[weakref.ref, dict]] = {}


def data_inputs(p: Program) -> dict[str, tuple]:
    """Each node's data inputs (`Node.data_inputs`), computed once for `p`."""
    entry = _DATA_INPUTS.get(id(p))
    if entry is not None and entry[0]() is p:
        return entry[1]
    got = {n.name: n.data_inputs for n in p.nodes}

    def gone(ref, key=id(p)) -> None:
        if _DATA_INPUTS.get(key, (None,))[0] is ref:
            _DATA_INPUTS.pop(key, None)
    _DATA_INPUTS[id(p)] = (weakref.ref(p, gone), got)
    return got


def _value_shapes(p: Program, read_shapes: bool | frozenset,
                  unsure: Mapping[str, str] | None = None,
                  kernels: bool = True, tick=None) -> dict[tuple[str, int], Shape]:
    """The claimed shapes, with (H) for every variable (`read_shapes` True),
    none (False) or the variables of a set (H_G); a Const of `unsure` is
    claimed nothing unless its variable is in that set.  `kernels` False:
    no function that may run TensorFlow's kernel is folded (graph import
    does not start TensorFlow).  `tick`, if given, is called every 64
    nodes (a deadline's check: it raises to stop)."""
    out: dict[tuple[str, int], Shape] = {}
    consts: dict[tuple[str, int], Tensor] = {}

    # (the arguments' shapes and constants gathered in one loop, the
    # program's tables' lookups bound once: this runs for each node of both
    # programs of a structural check, and its calls and lists were most of
    # it; the same claims as taking each argument's (shape, constant) pair)
    inputs = data_inputs(p)
    node = p.node
    shape_of, const_of = out.get, consts.get
    for k, name in enumerate(p.topological_order):
        if tick is not None and not k & 63:
            tick()
        n = node[name]
        op = n.op
        if op == VAR or op == ASSIGN:
            continue
        ins = inputs[name]
        if op == READ:
            if read_shapes:
                var = node[ins[0].node].attrs.get("var") \
                    if isinstance(ins[0], DataIn) else None
                if read_shapes is not True and var not in read_shapes:
                    continue
                sh = _static(p.variables[var].shape) if var in p.variables else None
                if sh is not None:
                    out[(name, 0)] = sh
            continue
        if op == "Const":
            if unsure and name in unsure and (read_shapes is not True and (
                    not read_shapes or unsure[name] not in read_shapes)):
                continue
            v = n.attrs.get("value")
            if isinstance(v, Tensor):
                out[(name, 0)] = tuple(v.array.shape)
                consts[(name, 0)] = v
            continue
        shapes: list = []
        values: list = []
        for i in ins:
            if isinstance(i, FeedIn):
                shapes.append(_static(p.feed_type(i.name).shape))
                values.append(None)
            else:
                port = (i.node, i.port)
                shapes.append(shape_of(port))
                values.append(const_of(port))
        # (`_fold` folds constant arguments only: a port without one is none)
        folded = _fold(op, n.attrs, list(values), kernels) \
            if values and all(v is not None for v in values) else None
        if folded is not None:
            for k, v in enumerate(folded):
                out[(name, k)] = tuple(v.array.shape)
                consts[(name, k)] = v
            continue
        res = result_shapes(op, n.attrs, shapes, values)
        for k, s in enumerate(res or ()):
            if s is not None:
                out[(name, k)] = s
    return out


#: constant integer and bool arguments folded (shape arithmetic: Rank - 1,
#: Slice of a constant shape, ConcatAxis), at most this many elements
FOLD_MAX_ELEMENTS = 1024
_FOLDED_DTYPES = frozenset({"int32", "int64", "bool"})
#: folds that raised (a kernel refused or its child gone, or the function's
#: own error), counted so that a caller remembering a pass's shapes can tell
#: a pass that may have claimed fewer shapes than a later one would
#: (checking/structural.py `_shape_passes`)
fold_failures = 0


def _fold(op: str, attrs: Mapping, values: list,
          kernels: bool = True) -> tuple[Tensor, ...] | None:
    """The results of a function applied to constant integer or bool
    tensors: deterministic functions give the same value at every σ, so a
    tensor result's shape is its shape at every σ (an error result, or a
    function that cannot run, gives nothing)."""
    if not values or any(not isinstance(v, Tensor) or v.dtype not in _FOLDED_DTYPES
                         for v in values):
        return None
    if sum(v.array.size for v in values) > FOLD_MAX_ELEMENTS:
        return None
    f = fns.lookup(op)
    if f is None or type(f).apply is not fns.Function.apply:
        return None
    if not kernels and (f.tf_kernel is not None or f.family == fns.TENSORFLOW):
        return None
    try:
        results = f.apply(values, attrs)
    except Exception:   # (cannot run here: no claim)
        global fold_failures
        fold_failures += 1
        return None
    if not all(isinstance(r, Tensor) for r in results):
        return None
    return tuple(results)


def _assigned_variable(p: Program, n) -> str | None:
    """The variable an Assign's edge comes from (a Var node), or None."""
    var_in = n.data_inputs[0]
    var = p.node[var_in.node].attrs.get("var") if isinstance(var_in, DataIn) else None
    return var if var in p.variables else None


def _assign_keeps_shape(p: Program, n, shapes: Mapping[tuple[str, int], Shape]) -> bool:
    """Whether Assign n stores only values of its variable's declared shape,
    given the shapes computed with (H) (module docstring)."""
    var = _assigned_variable(p, n)
    if var is None:
        return False
    value_in = n.data_inputs[1]
    declared = _static(p.variables[var].shape)
    if declared is None:
        return False
    if isinstance(value_in, FeedIn):
        v = _static(p.feed_type(value_in.name).shape)
    else:
        v = shapes.get((value_in.node, value_in.port))
    if v is None:
        return False
    fn = n.attrs.get("fn")
    if fn in _STORES_VALUE and fns.lookup(fn) is _STORE_FUNCTIONS.get(fn):
        return v == declared
    if fn in _PACKED_UPDATES and _known(fn):
        return v == (2,) * _PACKED_UPDATES[fn] + declared
    if fn in BROADCASTING_2 and _known(fn):
        return _broadcast(declared, v) == declared
    return False


def _keeps_variable_shapes(p: Program, shapes: Mapping[tuple[str, int], Shape]) -> bool:
    """Whether every Assign of p stores only values of its variable's
    declared shape, given the shapes computed with (H) (module docstring)."""
    return all(_assign_keeps_shape(p, n, shapes) for n in p.nodes if n.op == ASSIGN)


def shape_keeping_variables(p: Program, unsure: Mapping[str, str] | None = None,
                            each_round=None, of=None) -> frozenset[str]:
    """The largest set G of p's variables for which (H_G) holds (module
    docstring, "Per variable"): every Read of a variable of G returns an
    error or a tensor of its declared shape, at every σ and in every run.
    `unsure`: Const node -> the variable whose declared shape it is (graph
    import's folded `Shape` of a Read), claimed only for variables of G.
    Empty where an Assign's variable is not known statically (a handle
    through control flow) or the program has a cycle.  `each_round`, if
    given, is called before each pass over the program (a deadline's check:
    each pass but the last removes a variable).  `of`: the variables asked
    about (default all); G ∩ `of` is returned, and the passes stop once it
    is empty (G only shrinks)."""
    assigns = [n for n in p.nodes if n.op == ASSIGN]
    g = frozenset(p.variables)
    of = g if of is None else frozenset(of)
    if any(_assigned_variable(p, n) is None for n in assigns):
        return frozenset()
    while g & of:
        if each_round is not None:
            each_round()
        try:
            shapes = _value_shapes(p, g, unsure, kernels=False)
        except ProgramError:   # (a cycle: p.topological_order)
            return frozenset()
        bad = {_assigned_variable(p, n) for n in assigns
               if _assigned_variable(p, n) in g and not _assign_keeps_shape(p, n, shapes)}
        if not bad:
            break
        g = g - bad
    return g & of


_STORE_FUNCTIONS = {name: fns.lookup(name) for name in _STORES_VALUE}


def static_shapes(p: Program, p2: Program | None = None, tick=None, passes=None
                  ) -> tuple[dict[tuple[str, int], Shape], ...]:
    """The claimed shapes of the ports of p (and of p2): with the Reads'
    declared shapes where every Assign of *both* programs keeps them (a
    Read leaf of the structural rule is shared by the two programs' terms,
    and its value comes from the run of either), without them otherwise.
    `tick`, if given, is called every 64 nodes (a deadline's check).
    `passes`, if given, is called (q, read_shapes, tick) for one program's
    pass in place of the pass itself: it must return what that pass
    returns (the structural rule's memo of the original's passes)."""
    programs = [p] if p2 is None else [p, p2]
    if passes is None:
        def passes(q, read_shapes, tick):
            return _value_shapes(q, read_shapes, tick=tick)
    with_reads = []
    for q in programs:        # (the second program's pass only where the first keeps them)
        shapes = passes(q, True, tick)
        if not _keeps_variable_shapes(q, shapes):
            return tuple(passes(q, False, tick) for q in programs)
        with_reads.append(shapes)
    return tuple(with_reads)


__all__ = ["ELEMENTWISE_1", "BROADCASTING_2", "MOVES_ELEMENTS", "result_shapes",
           "shape_keeping_variables", "static_shapes"]
