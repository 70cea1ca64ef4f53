"""A control-flow replay's kernel evaluations asked for ahead
(oracle/controlflow.py `_prefetch_ahead`, REPLAY_PREFETCH): where a step's
function needs TensorFlow's kernel, the evaluations of the function steps
planned next whose inputs are there go in the same message.  What the
replay computes must not change (the same outcomes, bit for bit, at the
checker's σ: zeros, drawn, the float σ with NaN, infinities and the largest
float), and it takes fewer turns to the kernels' child.

Needs TensorFlow (the corpus's loop graphs compute float MatMul on its
kernels); skipped without it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tfsem.oracle import controlflow as cf
from tfsem.oracle import kernels
from tfsem.oracle.values import exact

from controlflow_support import corpus_loop_program


def _turns(monkeypatch):
    count = [0]
    real = kernels._Client._call

    def counted(self, request, op):
        count[0] += 1
        return real(self, request, op)
    monkeypatch.setattr(kernels._Client, "_call", counted)
    return count


def _bits(found):
    return sorted(repr((tuple((k, exact(v)) for k, v in o.outputs),
                        tuple((k, exact(v)) for k, v in (o.state or ()))))
                  for o in found)


def _fresh():
    """Nothing remembered that would answer a replay's steps: outcomes,
    applications, the kernels' cache."""
    cf._APPLIED.clear()
    if hasattr(cf, "_ARG_KEYS"):
        cf._ARG_KEYS.clear()
    kernels._cache.clear()


@pytest.mark.parametrize("graph", ["keras_gru_loop"])
def test_a_replay_that_asks_ahead_computes_the_same_outcomes_in_fewer_turns(graph, monkeypatch):
    from tfsem.checking import check as chk
    p = corpus_loop_program(graph, monkeypatch)
    rng = np.random.default_rng(5)
    sigmas = list(itertools.islice(chk._generated_sigmas(p, rng), 2))
    sigmas += [s for _, s in chk._float_sigmas(p)]
    monkeypatch.setattr(cf, "remember_outcomes", False)
    # (the first run explores and records the path; those after it replay)
    cf.outcomes(p, *sigmas[0], max_iterations=cf.DEFAULT_MAX_ITERATIONS)
    got = {}
    for ahead in (False, True, False):
        monkeypatch.setattr(cf, "REPLAY_PREFETCH", ahead)
        _fresh()
        turns = _turns(monkeypatch)
        answers = []
        for feeds, init in sigmas:
            try:
                found, _ = cf.outcomes(p, feeds, init, max_iterations=cf.DEFAULT_MAX_ITERATIONS)
                answers.append(_bits(found))
            except cf.LoopBoundExceeded as exc:
                answers.append(("bound", str(exc)))
        got.setdefault(ahead, []).append((answers, turns[0]))
        monkeypatch.setattr(kernels._Client, "_call", kernels._Client.__dict__["_call"])
    (off1, t_off1), (off2, t_off2) = got[False]
    ((on, t_on),) = got[True]
    assert on == off1 == off2
    # (the loop's independent MatMuls and their gradients go together)
    assert t_on < min(t_off1, t_off2), (t_on, t_off1, t_off2)


def test_a_step_whose_inputs_change_after_it_was_asked_for_computes_its_own(monkeypatch):
    """`_prefetch_ahead` asks for a later step at the inputs there now; where
    they are replaced before it fires (the next iteration), the step's own
    evaluation is made then, and the result is the one without asking
    ahead.  Driven directly: a plan whose later step reads a key that is
    rewritten before it fires."""
    pytest.importorskip("tensorflow", reason="TensorFlow's kernels")
    monkeypatch.setenv("TFSEM_TF_KERNELS", "1")
    from tfsem.oracle import functions as fns
    from tfsem.oracle.values import Tensor
    kernels.prestart()
    exp = fns.get("tf.Exp/1/1") if fns.get("tf.Exp/1/1") is not None else None
    if exp is None:
        pytest.skip("no kernel-evaluated Exp registered")

    class _Node:
        def __init__(self, name, op, attrs):
            self.name, self.op, self.attrs = name, op, attrs

    class _M:
        _fn: dict = {}

    attrs = {"tf_attrs": {"T": "DT_FLOAT"}}
    first = _Node("e0", "tf.Exp/1/1", attrs)
    later = _Node("e1", "tf.Exp/1/1", attrs)
    plan = [(cf._PLAN_FUNCTION, first, None, (("a", False, False),), {}, ()),
            (cf._PLAN_FUNCTION, later, None, (("b", False, False),), {}, ())]
    tokens = {"a": Tensor(np.float32([1.0, -0.0])), "b": Tensor(np.float32([2.0, np.nan]))}
    _fresh()
    turns = _turns(monkeypatch)
    cf._prefetch_ahead(_M(), plan, 0, first, [tokens["a"]], tokens.get, set())
    assert turns[0] == 1                       # both in one message
    # (b replaced before e1 fires: its own evaluation, not the one asked for)
    replaced = Tensor(np.float32([3.0, np.inf]))
    (r,) = exp.apply([replaced], attrs)
    assert turns[0] == 2
    want = np.exp(np.float32([3.0, np.inf]))
    assert exact(r) == exact(Tensor(want))
