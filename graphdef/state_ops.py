"""The state family's import models: TensorFlow's stateful training ops as
tfsem nodes (the values they compute are defined in oracle/state_ops.py,
whose tables these models read; docs/stateful-ops.md argues each model).

* `ResourceGather`, `ResourceGatherNd`: Read, then GatherV2 / GatherNd
  (`GatherNd` itself imports as that function: tfsem export writes a
  ResourceGatherNd back as ReadVariableOp and GatherNd).
* `ResourceScatter*`, `ResourceScatterNd*`: PackScatter(indices, updates),
  then one Assign-Scatter* (atomic in atomic mode; read, compute, write in
  decomposed mode, as any Assign-f).
* `ResourceApply*`, `ResourceSparseApply*` (oracle/state_ops.OPTIMIZERS):
  a Read of each variable, the update's function, a Write of each new value,
  joined by a NoOp; refused when another node may access one of its
  variables while it runs (importer._check_exclusive).
* `AssignVariableOp` with validate_shape=true: Assign-SndSameShape (a
  Write that fails where an initialized variable's shape is not the value's).
* `VarIsInitializedOp`: Read, then IsInitialized.
* Stateful random ops: the generator's state is part of σ: two feeds,
  `NODE/key` and `NODE/counter` (uint64), and the values are TensorFlow's
  stateless op of that state (what the stateful kernel computes from its
  Philox state, checked against TensorFlow 2.21).
* Ref variables (`VariableV2`, `Assign`, `Apply*`, ...) and tf.random.Generator's
  ops are refused by name, with the reason.
"""

from __future__ import annotations

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle import state_ops as so
from tfsem.oracle.program import DataIn
from tfsem.oracle.values import Tensor

from .importer import attrs_json
from . import ops as opt
from .ops import _index_dtype, _optimizer_dtype, op

# -- slices of a variable ------------------------------------------------------


@op("ResourceGather", "Read, then GatherV2 along axis batch_dims (a Read of slices)",
    resources=(0,), stateful=True)
def _resource_gather(b):
    b.dtype("dtype")
    _index_dtype(b, "Tindices")
    bd = int(b.attr("batch_dims", 0))
    value = b.add("Read", [b.var(0)], part="read")
    axis = b.add("Const", [], {"value": Tensor(np.array(bd, dtype=np.int32), "int32")},
                 part="axis")
    return [b.add("GatherV2", [value, b.input(1), axis], {"batch_dims": bd})]


@op("ResourceGatherNd", "Read, then GatherNd (a Read of slices)", resources=(0,),
    stateful=True)
def _resource_gather_nd(b):
    b.dtype("dtype")
    _index_dtype(b, "Tindices")
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("GatherNd", [value, b.input(1)])]


@op("GatherNd", "params[indices[..., :K]] (the function ResourceGatherNd's model uses; an "
    "index out of range fails, as TensorFlow's CPU kernel)")
def _gather_nd(b):
    b.dtype("Tparams")
    _index_dtype(b, "Tindices")
    return [b.add("GatherNd", [b.input(0), b.input(1)])]


def _scatter_model(tf_op: str, fn: str, dtype_attr: str, bad_index: str):
    @op(tf_op, f"Assign-{fn} of PackScatter(indices, updates): the rows applied in index "
        f"order, as the CPU kernel (an index out of range: {bad_index})",
        resources=(0,), stateful=True)
    def build(b):
        b.dtype(dtype_attr)
        _index_dtype(b, "Tindices")
        packed = b.add("PackScatter", [b.input(1), b.input(2)], part="packed")
        b.add("Assign", [b.var(0), packed], {"fn": fn})
        return []


for _kind in so.SCATTER_KINDS:
    _scatter_model(f"ResourceScatter{_kind}", f"Scatter{_kind}", "dtype",
                   "the rows before it stay applied")
for _kind in so.SCATTER_ND_KINDS:
    _scatter_model(f"ResourceScatterNd{_kind}", f"ScatterNd{_kind}", "T",
                   "every other row is applied")


@op("ResourceStridedSliceAssign", "Assign-StridedSliceAssign of PackSlice(begin, end, strides, "
    "value) with the five masks: the slice replaced by the value, broadcast (an Assign-f on a "
    "slice)", resources=(0,), stateful=True)
def _resource_strided_slice_assign(b):
    b.dtype("T")
    _index_dtype(b, "Index")
    masks = {m: int(b.attr(m, 0)) for m in so.SLICE_MASKS}
    packed = b.add("PackSlice", [b.input(i) for i in range(1, 5)], masks, part="packed")
    b.add("Assign", [b.var(0), packed], {"fn": "StridedSliceAssign"})
    return []


@op("AssignVariableOp", "Assign-Snd (Write); with validate_shape=true Assign-SndSameShape "
    "(fails, changing nothing, when an initialized variable's shape is not the value's)",
    resources=(0,), stateful=True)
def _assign_variable(b):
    """(Registered after graphdef/ops.py's plain Write, which it replaces.)
    TensorFlow's AssignVariableOp kernel with validate_shape=true compares the
    variable's run-time shape with the value's: another shape fails the op
    and an initialized variable keeps its value; an uninitialized variable
    takes the value whatever its shape (oracle/state_ops.py, SndSameShape;
    tests/test_state_ops.py runs both against TensorFlow 2.21)."""
    b.dtype("dtype")
    fn = "SndSameShape" if b.attr("validate_shape", False) else "Snd"
    b.add("Assign", [b.var(0), b.input(1)], {"fn": fn})
    return []


@op("VarIsInitializedOp", "Read, then IsInitialized (bool)", resources=(0,), stateful=True)
def _var_is_initialized(b):
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("IsInitialized", [value])]


# -- optimizer updates -------------------------------------------------------


def _refuse_aliased_slots(b, spec: so.Optimizer) -> None:
    """Two variable slots given one variable (two handles of one shared
    name): TensorFlow's kernel updates the one buffer in place, slot after
    slot, so one slot's new value feeds the next slot's computation; the
    model's reads all come first.  Refused by name rather than approximated
    (an MLIR lit case, `decompose_resource_apply_momentum_nesterov`, passes
    one variable as both `var` and `accum`)."""
    seen: dict[str, str] = {}
    for k, slot in enumerate(spec.variables):
        x = b.imp.var_of.get(b._ref(k)[0])
        if x is None:
            continue
        if x in seen:
            b.reject(f"variable {x!r} is given as both {seen[x]!r} and {slot!r}: TensorFlow's "
                     "kernel updates one buffer in place, slot after slot, which the model "
                     "(every read before every write) does not describe", "aliased-variables")
        seen[x] = slot


def _optimizer_model(spec: so.Optimizer):
    """Read each variable, apply spec.fn, Write each new value (exclusive)."""
    how = ("tfsem's numpy model, bit for bit" if spec.exact
           else "TensorFlow's kernel evaluates it; uninterpreted in proofs")
    previous = None
    if spec.op in ("ResourceApplyMomentum", "ResourceApplyAdam"):
        previous = opt.lookup(spec.op).build   # the Assign-f models (no nesterov)

    @op(spec.op, f"{spec.doc}: a Read of each variable, {spec.fn} ({how}), a Write of "
        "each new value; refused when another node races on its variables",
        resources=tuple(range(len(spec.variables))), stateful=True)
    def build(b):
        _refuse_aliased_slots(b, spec)
        t = b.dtype("T")
        if spec.exact and t not in so.OPTIMIZER_DTYPES:
            b.reject(f"{spec.op} on {t} is not modelled (its model is tested against "
                     f"TensorFlow's kernel on {' and '.join(so.OPTIMIZER_DTYPES)})")
        if previous is not None and not b.attr("use_nesterov", False) and t == "float32":
            return previous(b)   # the earlier Assign-f model (float32 only)
        if not spec.exact:
            _optimizer_dtype(b)   # TensorFlow's kernel is compared on float32
        nv = len(spec.variables)
        if b.n_inputs != spec.n_in:
            b.reject(f"{spec.op} takes {spec.n_in} inputs, has {b.n_inputs}", "arity")
        reads = [b.add("Read", [b.var(k)], part=f"read_{name}")
                 for k, name in enumerate(spec.variables)]
        attrs = {a: bool(b.attr(a, a == "update_slots")) for a in spec.attrs}
        new = b.add(spec.fn, reads + [b.input(k) for k in range(nv, spec.n_in)], attrs,
                    part="update")
        for k, name in enumerate(spec.variables):
            b.add("Assign", [b.var(k), DataIn(new.node, k)], {"fn": "Snd"}, part=f"write_{name}")
        b.add("NoOp", [])   # the join: the builder puts the writes under it
        b.exclusive()
        return []


for _spec in so.OPTIMIZERS.values():
    _optimizer_model(_spec)


# -- random ops: the generator's state in σ ------------------------------------

#: Stateful random op -> the stateless op computing the same values from a
#: Philox key and counter (measured equal on TensorFlow 2.21 for the first
#: run of an op seeded (seed, seed2): key [seed], counter [0, seed2]).
RANDOM = {"RandomUniform": "StatelessRandomUniformV2",
          "RandomStandardNormal": "StatelessRandomNormalV2",
          "TruncatedNormal": "StatelessTruncatedNormalV2",
          "RandomUniformInt": "StatelessRandomUniformIntV2"}
_PHILOX = 1


def _random_model(tf_op: str, stateless: str):
    @op(tf_op, f"{stateless} of the generator's state, which is part of σ: feeds NODE/key "
        "(uint64[1]) and NODE/counter (uint64[2]) (seeded: key [seed] and counter "
        "[NODE/counter_low, seed2])", stateful=True)
    def build(b):
        if b.imp.has_loops():
            b.reject(f"{tf_op} in a graph with loops is not modelled (a node in a loop fires "
                     "once per iteration, and each firing would need its own state in σ)",
                     "random-in-loop")
        seed, seed2 = int(b.attr("seed", 0)), int(b.attr("seed2", 0))
        name = b.node.name
        u64 = (lambda v, part: b.add("Const", [], {"value": Tensor(np.array(v, dtype=np.uint64),
                                                                    "uint64")}, part=part))
        if seed == 0 and seed2 == 0:
            key = b.feed(f"{name}/key", "uint64", (1,))
            counter = b.feed(f"{name}/counter", "uint64", (2,))
        else:
            # GuardedPhiloxRandom: key = seed, the counter's high word = seed2;
            # the low word advances with each run
            key = u64([seed % 2 ** 64], "key")
            low = b.feed(f"{name}/counter_low", "uint64", (1,))
            counter = b.add("ConcatAxis", [low, u64([seed2 % 2 ** 64], "seed2")],
                            {"axis": 0}, part="counter")
        alg = b.add("Const", [], {"value": Tensor(np.array(_PHILOX, dtype=np.int32), "int32")},
                    part="alg")
        ins = [b.input(0), key, counter, alg]
        tf_attrs = {"Tshape": b.attr("T"), "dtype": b.attr("dtype")}
        if tf_op == "RandomUniformInt":   # minval, maxval after alg
            ins += [b.input(1), b.input(2)]
            tf_attrs = {"Tshape": b.attr("T"), "dtype": b.attr("Tout")}
        return [b.add(fns.opaque_name(stateless, len(ins), 1), ins, {"tf_attrs": tf_attrs})]


for _op, _stateless in RANDOM.items():
    _random_model(_op, _stateless)


#: Stateless random ops: pure functions of their inputs (shape, seed or key
#: and counter, algorithm), so uninterpreted functions `tf.OP/N_IN/N_OUT` like
#: any pure op tfsem does not compute itself (graphdef/ops.py's
#: STATELESS_UNMODELLED lists the first ones; these are the rest): in proofs a
#: deterministic function, concretely TensorFlow's kernel where one evaluates
#: them.  Op -> its output args.
STATELESS_RANDOM = {
    "StatelessRandomUniformIntV2": ("output",), "StatelessRandomUniformFullIntV2": ("output",),
    "StatelessRandomUniformInt": ("output",), "StatelessRandomUniformFullInt": ("output",),
    "StatelessRandomGetAlg": ("alg",), "StatelessRandomGetKeyCounterAlg": ("key", "counter", "alg"),
    "StatelessMultinomial": ("output",), "StatelessRandomBinomial": ("output",),
    "StatelessRandomPoisson": ("output",), "StatelessRandomGammaV2": ("output",),
    "StatelessRandomGammaV3": ("output",), "StatelessParameterizedTruncatedNormal": ("output",),
    "StatelessShuffle": ("output",)}


def _stateless_random_model(tf_op: str, outputs: tuple[str, ...]):
    @op(tf_op, "uninterpreted pure function (a stateless random op: a function of its seed)",
        output_args=outputs if len(outputs) > 1 else ())
    def build(b):
        ins = [b.input(i) for i in range(b.n_inputs)]
        ref = b.add(fns.opaque_name(tf_op, len(ins), len(outputs)), ins,
                    {"tf_attrs": attrs_json(b.node.attr)})
        return [DataIn(ref.node, k) for k in range(len(outputs))]


for _op, _outs in STATELESS_RANDOM.items():
    _stateless_random_model(_op, _outs)


# -- refused by name -----------------------------------------------------------

REF_VARIABLE_OPS = ("VariableV2", "Variable", "TemporaryVariable", "DestroyTemporaryVariable",
                    "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "RefIdentity",
                    "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin",
                    "ScatterMax", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
                    "ScatterNdUpdate", "CountUpTo") + tuple(
    s.op.removeprefix("Resource") for s in so.OPTIMIZERS.values())

_REF_REASON = ("a reference variable (TF1's VariableV2 and the ops on its ref tensor) is not "
               "modelled: its consumers receive a reference to the variable's buffer, not a "
               "snapshot, so what a 'read' sees depends on writes that run after it (an "
               "Identity copies, a ref input does not), and its updates lock only with "
               "use_locking; build the graph with resource variables instead "
               "(tf.compat.v1.enable_resource_variables(), or use_resource=True)")

GENERATOR_OPS = ("RngReadAndSkip", "RngSkip", "StatefulUniform", "StatefulUniformInt",
                 "StatefulUniformFullInt", "StatefulStandardNormal", "StatefulStandardNormalV2",
                 "StatefulTruncatedNormal", "StatefulRandomBinomial", "NonDeterministicInts")

_GENERATOR_REASON = ("tf.random.Generator's ops are not modelled: their state is a variable "
                     "whose counter they advance by an amount TensorFlow does not specify; use "
                     "stateless random ops with an explicit seed (as Keras 3's SeedGenerator "
                     "does: a plain variable and stateless ops, which tfsem imports)")

OTHER_RANDOM_OPS = ("RandomShuffle", "Multinomial", "RandomGamma", "RandomGammaGrad",
                    "RandomPoisson", "RandomPoissonV2", "ParameterizedTruncatedNormal",
                    "RandomCrop")


def _refuse(tf_op: str, reason: str, rule: str):
    @op(tf_op, f"refused: {reason.split(':')[0]}", stateful=True)
    def build(b):
        b.reject(reason, rule)


for _op in REF_VARIABLE_OPS:
    _refuse(_op, _REF_REASON, "ref-variable")
for _op in GENERATOR_OPS:
    _refuse(_op, _GENERATOR_REASON, "random-generator")
for _op in OTHER_RANDOM_OPS:
    _refuse(_op, f"the stateful random op {_op} is not modelled (only RandomUniform, "
            "RandomUniformInt, RandomStandardNormal and TruncatedNormal are: their values "
            "as the stateless op of a Philox state in σ)", "unmodelled-op")
