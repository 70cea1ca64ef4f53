"""A structural fold that runs TensorFlow's kernel keeps the rule's deadline
(checking/structural.py, oracle/kernels.py `request_deadline`,
docs/budgets.md).  Before, a MatMul of two float constants folded by the
rule waited for the kernels' child to start (up to 180 s): 8.7 s at a
0.5 s budget.  Here the child is a stand-in (no TensorFlow needed) that
never starts, or starts and never answers: the rule gives up the fold at
its deadline and proves nothing; the check goes on and never says `sound`
of an unsound rewrite."""

from __future__ import annotations

import collections
import subprocess
import sys
import time

import pytest

from tfsem.checking import check_rewrite
from tfsem.checking.structural import NO_PROOF_BUDGET, structural_refinement
from tfsem.oracle import kernels
from tfsem.oracle.jsonio import program_from_json

#: a child that never says it is ready (TensorFlow's import, forever)
NEVER_READY = "import time; time.sleep(120)"
#: a child that is ready at once and then never answers a request
NEVER_ANSWERS = r"""
import pickle, sys, time
msg = pickle.dumps(("ready", "0.0-test", {"intra_op_threads": 1}))
sys.stdout.buffer.write(len(msg).to_bytes(8, "little") + msg)
sys.stdout.buffer.flush()
while sys.stdin.buffer.read(1 << 16):
    time.sleep(120)
"""


def program(swap: bool = False, identity: bool = False):
    """out = MatMul(a, b) of two float32 constants (b, a with `swap`: an
    unsound rewrite), through an Identity with `identity` (a sound one)."""
    nodes = [{"name": "a", "op": "Const",
              "value": {"dtype": "float32", "value": [[1.5, 2.0], [3.0, -0.0]]}},
             {"name": "b", "op": "Const",
              "value": {"dtype": "float32", "value": [[1.0, 1e-40], [2.0, 4.0]]}},
             {"name": "m", "op": "MatMul", "inputs": ["b", "a"] if swap else ["a", "b"],
              "transpose_a": False, "transpose_b": False}]
    out = "m"
    if identity:
        nodes.append({"name": "i", "op": "Identity", "inputs": ["m"]})
        out = "i"
    return program_from_json({"format": "tfsem.program/1", "variables": {}, "feeds": {},
                              "nodes": nodes, "outputs": {"out": out}})


@pytest.fixture(params=["never-ready", "never-answers"])
def slow_child(request, monkeypatch):
    """The kernels' child replaced by a stand-in; kernels on (this thread),
    with no child started and nothing cached yet."""
    yield from _stand_in(request.param, monkeypatch)


@pytest.fixture
def never_ready(monkeypatch):
    yield from _stand_in("never-ready", monkeypatch)


def _stand_in(kind, monkeypatch):
    code = NEVER_READY if kind == "never-ready" else NEVER_ANSWERS
    real = subprocess.Popen
    started = []

    def popen(cmd, *args, **kwargs):
        if isinstance(cmd, list) and "tfsem.oracle.kernel_worker" in cmd:
            cmd = [sys.executable, "-c", code]
        proc = real(cmd, *args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(kernels.subprocess, "Popen", popen)
    monkeypatch.setattr(kernels, "_client", None)
    monkeypatch.setattr(kernels, "_cache", collections.OrderedDict())
    with kernels.use(True):
        yield kind
    for proc in started:
        proc.kill()
        proc.wait()


def test_the_rule_gives_up_a_fold_at_its_deadline(slow_child):
    p, p2 = program(), program(identity=True)
    t = time.monotonic()
    result = structural_refinement(p, p2, deadline=time.monotonic() + 0.3)
    seconds = time.monotonic() - t
    assert seconds < 0.3 + 0.5, f"{slow_child}: {seconds:.2f} s at a 0.3 s deadline"
    assert not result.proved and result.reason == NO_PROOF_BUDGET
    # the same rewrite with the fold's kernel off is proved (the deadline is
    # what took the proof away)
    with kernels.use(False):
        assert structural_refinement(p, p2, deadline=time.monotonic() + 30).proved


def test_a_check_whose_fold_cannot_finish_never_says_sound_of_an_unsound_rewrite(never_ready):
    # (a child that never starts: once one is up, a check's concrete stages
    # let a started call finish, oracle/kernels.py; the rule must not wait)
    t = time.monotonic()
    verdict = check_rewrite(program(), program(swap=True), "atomic", "outputs+state",
                            timeout=0.3)
    assert time.monotonic() - t < 0.3 + 1.0
    assert verdict.verdict == "unknown", (verdict.verdict, verdict.reason)
    assert "MatMul" in verdict.reason or "budget" in verdict.reason, verdict.reason
