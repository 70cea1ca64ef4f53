"""The random family: TensorFlow's random ops, stateful and stateless.

Every facet of each op is defined here, in one place
(docs/writing-an-op-model.md; docs/stateful-ops.md argues the models):

* **Stateful random ops** (`RandomUniform`, `RandomUniformInt`,
  `RandomStandardNormal`, `TruncatedNormal`): the generator's state is part
  of σ: two feeds, `NODE/key` (uint64[1]) and `NODE/counter` (uint64[2])
  (seeded: the key is the seed, the counter's high word seed2, and only its
  low word `NODE/counter_low` is a feed), and the values are TensorFlow's
  stateless op of that state (what the stateful kernel computes from its
  Philox state, checked against TensorFlow 2.21: tests/test_state_ops.py).
  The stateless op is an uninterpreted function `tf.OP/N_IN/1` (in proofs
  a deterministic function, concretely TensorFlow's kernel where one
  evaluates it), exported back as that stateless op.
* **Stateless random ops**: pure functions of their inputs (shape, seed or
  key and counter, algorithm), so uninterpreted functions `tf.OP/N_IN/N_OUT`
  like any pure op tfsem does not compute itself: those with a model here
  (:data:`STATELESS_RANDOM`, which names their output args), and those graph
  import makes uninterpreted by their name alone (:data:`UNINTERPRETED`:
  their number of results is the number their consumers use).
* tf.random.Generator's ops and the other stateful random ops are refused by
  name, with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as fns
from ..program import DataIn
from ..values import Tensor
from .registry import OpDef, define, kernels_are_functions, known, refuse

FAMILY = "random"

_DRAWS = "draws from its generator, whose state is part of σ"


def _define(name: str, doc: str, stateful: str | None, **kw: Any):
    """Decorator: `build` is the import of TensorFlow's `name`, an OpDef of
    this family with the keywords given."""
    def deco(build):
        define(OpDef(name, doc, build, FAMILY, stateful=stateful, **kw))
        return build
    return deco


# -- stateful random ops: the generator's state in σ ------------------------------

#: Stateful random op -> the stateless op computing the same values from a
#: Philox key and counter (measured equal on TensorFlow 2.21 for the first
#: run of an op seeded (seed, seed2): key [seed], counter [0, seed2]).
RANDOM = {"RandomUniform": "StatelessRandomUniformV2",
          "RandomStandardNormal": "StatelessRandomNormalV2",
          "TruncatedNormal": "StatelessTruncatedNormalV2",
          "RandomUniformInt": "StatelessRandomUniformIntV2"}
_PHILOX = 1


def _random_op(tf_op: str, stateless: str) -> None:
    n_in = 6 if tf_op == "RandomUniformInt" else 4   # minval, maxval after alg

    @_define(tf_op, f"{stateless} of the generator's state, which is part of σ: feeds NODE/key "
             "(uint64[1]) and NODE/counter (uint64[2]) (seeded: key [seed] and counter "
             "[NODE/counter_low, seed2])", _DRAWS,
             functions=("Const", "ConcatAxis", fns.opaque_name(stateless, n_in, 1)))
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
    _random_op(_op, _stateless)


# -- stateless random ops: pure, uninterpreted ------------------------------------

#: Stateless random ops with a model: pure functions of their inputs (shape,
#: seed or key and counter, algorithm), uninterpreted functions
#: `tf.OP/N_IN/N_OUT` (in proofs a deterministic function, concretely
#: TensorFlow's kernel where one evaluates them).  Op -> its output args.
STATELESS_RANDOM = {
    "StatelessRandomUniformIntV2": ("output",), "StatelessRandomUniformFullIntV2": ("output",),
    "StatelessRandomUniformInt": ("output",), "StatelessRandomUniformFullInt": ("output",),
    "StatelessRandomGetAlg": ("alg",), "StatelessRandomGetKeyCounterAlg": ("key", "counter", "alg"),
    "StatelessMultinomial": ("output",), "StatelessRandomBinomial": ("output",),
    "StatelessRandomPoisson": ("output",), "StatelessRandomGammaV2": ("output",),
    "StatelessRandomGammaV3": ("output",), "StatelessParameterizedTruncatedNormal": ("output",),
    "StatelessShuffle": ("output",)}


def _stateless_random_op(tf_op: str, outputs: tuple[str, ...]) -> None:
    @_define(tf_op, "uninterpreted pure function (a stateless random op: a function of its seed)",
             None, output_args=outputs if len(outputs) > 1 else ())
    def build(b):
        ins = [b.input(i) for i in range(b.n_inputs)]
        ref = b.add(fns.opaque_name(tf_op, len(ins), len(outputs)), ins,
                    {"tf_attrs": b.tf_attrs()})
        return [DataIn(ref.node, k) for k in range(len(outputs))]


for _op, _outs in STATELESS_RANDOM.items():
    _stateless_random_op(_op, _outs)

#: Stateless random ops graph import makes uninterpreted functions by name
#: alone (the registry's `known(..., uninterpreted=True)`, which graphdef/ops.py
#: STATELESS_UNMODELLED reads): their number of results is the number their
#: consumers use.
UNINTERPRETED = frozenset("""
    StatelessRandomUniformV2 StatelessRandomNormalV2 StatelessTruncatedNormalV2
    StatelessRandomGetKeyCounter StatelessRandomUniform StatelessRandomNormal
    StatelessTruncatedNormal
""".split())

#: A stateless random op's kernel is a function of its inputs by definition
#: (its seed, or its key and counter, and its algorithm): TensorFlow's kernel
#: runs it (oracle/kernels.py) where a check needs its values.
STATELESS_KERNEL = ("a stateless random op: a function of its seed (or key and counter) by "
                    "definition")

for _op in sorted(UNINTERPRETED):
    known(_op, FAMILY, uninterpreted=True, kernel=STATELESS_KERNEL,
          output_args=("key", "counter") if _op == "StatelessRandomGetKeyCounter" else ())
kernels_are_functions("StatelessRandomUniformInt StatelessRandomUniformIntV2", STATELESS_KERNEL)


# -- refused by name -----------------------------------------------------------

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

for _op in GENERATOR_OPS:
    refuse(_op, _GENERATOR_REASON, "random-generator", FAMILY)
for _op in OTHER_RANDOM_OPS:
    refuse(_op, f"the stateful random op {_op} is not modelled (only RandomUniform, "
           "RandomUniformInt, RandomStandardNormal and TruncatedNormal are: their values "
           "as the stateless op of a Philox state in σ)", "unmodelled-op", FAMILY)
