"""The random family's import models: stateful random ops with the
generator's state in σ, stateless random ops as uninterpreted functions.

* Stateful random ops: the generator's state is part of σ: two feeds,
  `NODE/key` and `NODE/counter` (uint64), and the values are TensorFlow's
  stateless op of that state (what the stateful kernel computes from its
  Philox state, checked against TensorFlow 2.21).
* tf.random.Generator's ops are refused by name, with the reason.

(The state family -- resource variables, gathers, scatters, optimizer
updates -- is defined in the op registry, oracle/opdefs/state.py.)
"""

from __future__ import annotations

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import DataIn
from tfsem.oracle.values import Tensor

from .importer import attrs_json
from .ops import op


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


for _op in GENERATOR_OPS:
    _refuse(_op, _GENERATOR_REASON, "random-generator")
for _op in OTHER_RANDOM_OPS:
    _refuse(_op, f"the stateful random op {_op} is not modelled (only RandomUniform, "
            "RandomUniformInt, RandomStandardNormal and TruncatedNormal are: their values "
            "as the stateless op of a Philox state in σ)", "unmodelled-op")
